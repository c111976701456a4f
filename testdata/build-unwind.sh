#!/usr/bin/env bash
# Builds the unwinder's test programs (testdata/unwind/) from testdata/src/unwind/:
# unwind-demo with its shared library (perf comparison) and pstack-threads (the pstack
# example's comparison with gdb: -g, for source lines and inlined frames), each with frame pointers
# (-fno-omit-frame-pointer) and without (-fomit-frame-pointer), at -O2 with CFI
# (.eh_frame, as every distribution builds); jit-perfmap (x86-64 code in anonymous memory,
# named in /tmp/perf-PID.map); plt-stubs (libc called through the PLT, tests/perf_plt.rs);
# cpp-templates (g++ -O2 -g, template-heavy C++: tests/perf_cpp.rs); and aarch64-capture
# (static aarch64, its chain once without and once with -mbranch-protection=pac-ret;
# tests/unwind_aarch64.rs runs it under qemu-aarch64). Called by testdata/build.sh; runnable alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
TD="$PWD"
command -v gcc >/dev/null || { echo "build-unwind.sh: gcc missing (apt-get install gcc)" >&2; exit 1; }
command -v aarch64-linux-gnu-gcc >/dev/null || {
    echo "build-unwind.sh: aarch64-linux-gnu-gcc missing (apt-get install gcc-aarch64-linux-gnu)" >&2
    exit 1
}
rm -rf unwind
mkdir -p unwind
cd src/unwind
for fp in fp nofp; do
    case $fp in
    fp) flags=(-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer) ;;
    nofp) flags=(-fomit-frame-pointer) ;;
    esac
    # The library's file name is what the executable's DT_NEEDED says; $ORIGIN finds it.
    gcc -O2 -g0 "${flags[@]}" -ffile-prefix-map="$TD"=. -shared -fPIC \
        -Wl,-soname,libunwind-demo-$fp.so -o "$TD/unwind/libunwind-demo-$fp.so" unwind-lib.c
    gcc -O2 -g0 "${flags[@]}" -ffile-prefix-map="$TD"=. -pthread \
        -o "$TD/unwind/unwind-demo-$fp" unwind-demo.c \
        -L"$TD/unwind" -lunwind-demo-$fp -Wl,-rpath,'$ORIGIN'
    gcc -O2 -g "${flags[@]}" -ffile-prefix-map="$TD"=. -pthread \
        -o "$TD/unwind/pstack-threads-$fp" pstack-threads.c
done
# A tiny JIT that names its code in /tmp/perf-PID.map (tests/perf_jit_map.rs).
gcc -O2 -g0 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -ffile-prefix-map="$TD"=. \
    -o "$TD/unwind/jit-perfmap" jit-perfmap.c
# Samples in PLT entries (tests/perf_plt.rs): calls to libc in a loop, through the PLT
# (-fno-builtin keeps abs, labs and ffs calls).
gcc -O2 -g0 -fno-builtin -ffile-prefix-map="$TD"=. -o "$TD/unwind/plt-stubs" plt-stubs.c
# Template-heavy C++ (tests/perf_cpp.rs): std::sort with a lambda, a vector of structs,
# constructors; -g for the inlined frames perf script prints.
g++ -O2 -g -ffile-prefix-map="$TD"=. -o "$TD/unwind/cpp-templates" cpp-templates.cpp
# One static program, the chain compiled twice (aarch64-capture-chain.c): plain, and pac-ret.
A64=(aarch64-linux-gnu-gcc -O2 -g0 -fno-omit-frame-pointer -ffile-prefix-map="$TD"=.)
obj=$(mktemp -d)
"${A64[@]}" -c -DVARIANT=plain -DINDEX=0 -o "$obj/plain.o" aarch64-capture-chain.c
"${A64[@]}" -c -DVARIANT=pac -DINDEX=1 -mbranch-protection=pac-ret -o "$obj/pac.o" \
    aarch64-capture-chain.c
"${A64[@]}" -static -o "$TD/unwind/aarch64-capture" aarch64-capture.c "$obj/plain.o" "$obj/pac.o"
rm -rf "$obj"
ls -l "$TD/unwind"
