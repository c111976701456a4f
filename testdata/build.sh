#!/usr/bin/env bash
# Rebuilds every test binary in testdata/bin/ from testdata/src/, then
# regenerates testdata/dumps/demo.txt from the new binaries' symbol tables.
#
# Usage: testdata/build.sh        (from any directory)
#
# See testdata/README.md for what each binary is for.  The build is meant to be
# deterministic: sources are passed as relative paths, the build directory is
# mapped to "." in debug info (-ffile-prefix-map / --remap-path-prefix), and
# nothing embeds a timestamp; running it twice gives byte-identical output
# with the same toolchain.  Reference toolchain (Debian 12 "bookworm"):
# gcc/g++ 12.2, binutils 2.40, aarch64-linux-gnu-gcc 12.2, rustc 1.95.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
export LC_ALL=C
export SOURCE_DATE_EPOCH=0
TD="$PWD"

# ------------------------------------------------------------------ tools
missing=()
need() { # need COMMAND "how to install"
    command -v "$1" >/dev/null 2>&1 || missing+=("$1: $2")
}
need gcc "apt-get install gcc"
need g++ "apt-get install g++"
need aarch64-linux-gnu-gcc "apt-get install gcc-aarch64-linux-gnu"
need s390x-linux-gnu-gcc "apt-get install gcc-s390x-linux-gnu"
need rustc "install Rust (rustup, or apt-get install rustc)"
need strip "apt-get install binutils"
need nm "apt-get install binutils"
need objdump "apt-get install binutils"
need readelf "apt-get install binutils"
need objcopy "apt-get install binutils"
need clang "apt-get install clang"
need clang++ "apt-get install clang"
need dwz "apt-get install dwz"
need llvm-dwp "apt-get install llvm"
need xz "apt-get install xz-utils"
if command -v gcc >/dev/null 2>&1; then
    # gcc -m32 needs the 32-bit libc/libgcc development files.
    if ! echo 'int main(void){return 0;}' |
        gcc -m32 -x c - -o /dev/null >/dev/null 2>&1; then
        missing+=("gcc -m32: apt-get install gcc-multilib (on Debian 12 gcc-multilib conflicts with gcc-aarch64-linux-gnu; install libc6-dev-i386 lib32gcc-12-dev instead, which is enough)")
    fi
fi
if ((${#missing[@]})); then
    echo "build.sh: missing tools:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi

die() { echo "build.sh: $*" >&2; exit 1; }

rm -rf bin
mkdir -p bin dumps

# Flags shared by every C/C++ build: map the build dir to "." in DWARF and
# __FILE__, so the output does not depend on where the repo is checked out.
DET=(-ffile-prefix-map="$TD"=.)
# Link a program against bin/libversioned.so and find it next to itself at
# run time.
LIB=(-Lbin -lversioned "-Wl,-rpath,\$ORIGIN")

# ------------------------------------------------------------ libversioned.so
# gcc -O2 -g -shared -fPIC -Wl,--version-script=src/libversioned.map
#     -Wl,-soname,libversioned.so
# Symbol versioning: exports vfunc@VERS_1 (old), vfunc@@VERS_2 (default) and
# the unversioned vhelper.
gcc -O2 -g -shared -fPIC "${DET[@]}" \
    -Wl,--version-script=src/libversioned.map -Wl,-soname,libversioned.so \
    src/libversioned.c -o bin/libversioned.so

# ------------------------------------------------------------------ c-pie-g
# gcc -O2 -g -fPIE -pie -fno-omit-frame-pointer, linked with libversioned.so
# (-Lbin -lversioned -Wl,-rpath,$ORIGIN).
# PIE (ET_DYN) with full .symtab and DWARF; .plt entries for libc and the lib.
gcc -O2 -g -fPIE -pie -fno-omit-frame-pointer "${DET[@]}" \
    src/demo.c "${LIB[@]}" -o bin/c-pie-g

# ------------------------------------------------------------------ c-nopie
# gcc -O2 -fno-pie -no-pie -fomit-frame-pointer, linked with libversioned.so,
# no -g.  Non-PIE (ET_EXEC, loaded at 0x400000), .symtab only, no DWARF.
# (-fno-pie is needed as well as -no-pie: Debian's gcc compiles PIE code by
# default and -no-pie alone only changes the link.)
gcc -O2 -fno-pie -no-pie -fomit-frame-pointer "${DET[@]}" \
    src/demo.c "${LIB[@]}" -o bin/c-nopie

# -------------------------------------------------------- c-stripped-dynsym
# gcc -O2 -rdynamic, linked with libversioned.so, then strip --strip-all.
# No .symtab and no DWARF: only .dynsym, which (thanks to -rdynamic) also
# holds the program's own global functions and data objects.
gcc -O2 -rdynamic "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-stripped-dynsym
strip --strip-all bin/c-stripped-dynsym

# -------------------------------------------------------------------- c-ibt
# gcc -O2 -fcf-protection=full -Wl,-z,ibt, linked with libversioned.so.
# Intel CET/IBT: ld emits the two-part PLT, .plt (endbr64 + push + bnd jmp)
# plus .plt.sec (the entries the code actually calls).  On Debian 12 the
# -Wl,-z,ibt is required: -fcf-protection alone does not give .plt.sec
# because Debian's crt*.o are not IBT-marked, so the IBT property is dropped.
gcc -O2 -fcf-protection=full -Wl,-z,ibt "${DET[@]}" \
    src/demo.c "${LIB[@]}" -o bin/c-ibt

# ---------------------------------------------------------------- cpp-O2-g
# g++ -O2 -g.  C++ demangling: namespaces, overloads, templates, lambda,
# operator overload, vtables, "[clone .cold]".
g++ -O2 -g "${DET[@]}" src/demo.cpp -o bin/cpp-O2-g

# ------------------------------------------------------------- rust-legacy
# rustc -O -C debuginfo=0 -C strip=debuginfo -C panic=abort
#       -C codegen-units=1 --crate-name demo
# Stable rustc rejects -C symbol-mangling-version=legacy ("requires
# -Z unstable-options"), so this uses the default, which on stable is legacy
# (_ZN...17h<hash>E) for this crate.  The precompiled std in it is v0-mangled.
RUSTFLAGS_COMMON=(-O -C debuginfo=0 -C strip=debuginfo -C panic=abort
    -C codegen-units=1 --crate-name demo --remap-path-prefix="$TD"=.)
rustc "${RUSTFLAGS_COMMON[@]}" src/demo.rs -o bin/rust-legacy

# ----------------------------------------------------------------- rust-v0
# rustc -O -C debuginfo=0 -C strip=debuginfo -C panic=abort
#       -C codegen-units=1 --crate-name demo -C symbol-mangling-version=v0
# v0 mangling (_R...) throughout.
rustc "${RUSTFLAGS_COMMON[@]}" -C symbol-mangling-version=v0 \
    src/demo.rs -o bin/rust-v0

# --------------------------------------------------------------- c-aarch64
# aarch64-linux-gnu-gcc -O2 -g -freorder-blocks-and-partition -DDEMO_NO_LIB
# AArch64 (EM_AARCH64) PIE; never run, only read.  Built without
# libversioned.so (-DDEMO_NO_LIB uses local stand-ins).  gcc does not split
# cold code by default on aarch64, -freorder-blocks-and-partition turns it on
# so that process_value.cold exists here too.
aarch64-linux-gnu-gcc -O2 -g -freorder-blocks-and-partition -DDEMO_NO_LIB \
    "${DET[@]}" src/demo.c -o bin/c-aarch64

# --------------------------------------------------------------- c-s390x
# s390x-linux-gnu-gcc -O2 -g -DDEMO_NO_LIB
# Big-endian ELF64 (EM_S390); never run, only read.  The one big-endian file:
# it checks that every header, symbol and note is read in the file's byte order.
s390x-linux-gnu-gcc -O2 -g -DDEMO_NO_LIB "${DET[@]}" src/demo.c -o bin/c-s390x

# ------------------------------------------------------------------ c-i386
# gcc -m32 -O2 -g -DDEMO_NO_LIB
# ELF32 (EM_386) PIE, built without libversioned.so.
gcc -m32 -O2 -g -DDEMO_NO_LIB "${DET[@]}" src/demo.c -o bin/c-i386

# ------------------------------------------------------------------- c-wait
# gcc -O2 -g, PIE (the default), linked with libversioned.so.
# The live-process tests' subject (tests/process.rs): prints its pid and the
# addresses of its own functions, of vhelper in libversioned.so and of puts in
# libc, then blocks reading stdin.
gcc -O2 -g "${DET[@]}" src/wait.c "${LIB[@]}" -o bin/c-wait

# ------------------------------------------------------------ sanity checks
# Fail loudly if a toolchain change drops something the tests rely on.
# (grep >/dev/null, not grep -q: with pipefail, grep -q exiting early can
# kill the producer with SIGPIPE and fail the pipeline.)
has_sym() { # has_sym BIN NAME  (defined symbol, mangled name, any table)
    { nm --defined-only "$1" 2>/dev/null; nm -D --defined-only "$1" 2>/dev/null; } |
        awk -v n="$2" '{ sub(/^[^ ]* [^ ]* /, "") } $0 == n { f = 1 } END { exit !f }'
}
for b in c-pie-g c-nopie c-ibt c-i386 c-aarch64; do
    has_sym "bin/$b" process_value.cold || die "$b: no process_value.cold"
    has_sym "bin/$b" zero_size_fn || die "$b: no zero_size_fn"
    has_sym "bin/$b" demo_weak || die "$b: no demo_weak"
done
has_sym bin/c-stripped-dynsym demo_alias || die "c-stripped-dynsym: demo_alias not in .dynsym"
readelf -S -W bin/c-ibt | grep '\.plt\.sec' >/dev/null || die "c-ibt: no .plt.sec"
readelf -S -W bin/c-pie-g | grep '\.plt\.sec' >/dev/null && die "c-pie-g: unexpected .plt.sec"
readelf -S -W bin/c-stripped-dynsym | grep '\.symtab' >/dev/null && die "c-stripped-dynsym: still has .symtab"
readelf --dyn-syms -W bin/libversioned.so | grep 'vfunc@VERS_1$' >/dev/null || die "libversioned.so: no vfunc@VERS_1"
readelf --dyn-syms -W bin/libversioned.so | grep 'vfunc@@VERS_2$' >/dev/null || die "libversioned.so: no vfunc@@VERS_2"
nm bin/rust-legacy | grep ' _ZN4demo4main17h' >/dev/null || die "rust-legacy: crate is not legacy-mangled"
nm bin/rust-v0 | grep ' _RNvCs[0-9a-zA-Z_]*_4demo4main$' >/dev/null || die "rust-v0: crate is not v0-mangled"
has_sym bin/c-wait wait_target || die "c-wait: no wait_target"
has_sym bin/c-wait wait_local || die "c-wait: no wait_local"
readelf -h bin/c-wait | grep 'DYN' >/dev/null || die "c-wait: not PIE"
readelf -n bin/c-wait | grep 'Build ID' >/dev/null || die "c-wait: no build-id"
nm -C bin/cpp-O2-g | grep 'checked_div(int, int) \[clone \.cold\]' >/dev/null || die "cpp-O2-g: no [clone .cold]"

# ------------------------------------------------------------- dumps/demo.txt
# addr BIN 'SYMBOL' OFFSET: address of SYMBOL (exact name, demangled by nm -C)
# plus OFFSET, checked to lie inside the symbol when it has a size.
addr() {
    local out a s
    out=$(nm -C -S --defined-only "bin/$1" | awk -v n="$2" '
        {
            line = $0
            if ($2 ~ /^[0-9a-f]+$/ && length($2) == length($1)) {
                a = $1; s = $2; sub(/^[^ ]* [^ ]* [^ ]* /, "", line)
            } else {
                a = $1; s = "0"; sub(/^[^ ]* [^ ]* /, "", line)
            }
            if (line == n) { cnt++; fa = a; fs = s }
        }
        END {
            if (cnt != 1) { print "found " cnt + 0 " times"; exit 1 }
            print fa, fs
        }') || die "dumps: $1: symbol '$2': $out"
    read -r a s <<<"$out"
    if ((16#$s != 0 && $3 >= 16#$s)); then
        die "dumps: $1: offset $3 is past the end of '$2' (size 0x$s)"
    fi
    printf '0x%x\n' $((16#$a + $3))
}
# plt BIN FUNC OFFSET: address of FUNC's PLT entry (as objdump names it) + OFFSET.
plt() {
    local a
    a=$(objdump -d -j .plt "bin/$1" | awk -v n="<$2@plt>:" '$2 == n { print $1; exit }')
    [[ -n $a ]] || die "dumps: $1: no PLT entry for $2"
    printf '0x%x\n' $((16#$a + $3))
}

entries=(
    "cpp-O2-g|$(addr cpp-O2-g 'int stacksym_demo::sum_all<int>(int const*, unsigned int)' 4)|int stacksym_demo::sum_all<int>(int const*, unsigned int)"
    "cpp-O2-g|$(addr cpp-O2-g 'double stacksym_demo::sum_all<double>(double const*, unsigned int)' 4)|double stacksym_demo::sum_all<double>(double const*, unsigned int)"
    "cpp-O2-g|$(addr cpp-O2-g 'stacksym_demo::geom::Shape::scale(int) const' 2)|stacksym_demo::geom::Shape::scale(int) const"
    "cpp-O2-g|$(addr cpp-O2-g 'stacksym_demo::geom::Shape::scale(long, char const*)' 4)|stacksym_demo::geom::Shape::scale(long, char const*)"
    "cpp-O2-g|$(addr cpp-O2-g 'stacksym_demo::run_lambda(int)::{lambda(int)#1}::operator()(int) const' 2)|stacksym_demo::run_lambda(int)::{lambda(int)#1}::operator()(int) const"
    "cpp-O2-g|$(addr cpp-O2-g 'stacksym_demo::geom::operator+(stacksym_demo::geom::Vec2 const&, stacksym_demo::geom::Vec2 const&)' 4)|stacksym_demo::geom::operator+(stacksym_demo::geom::Vec2 const&, stacksym_demo::geom::Vec2 const&)"
    "c-pie-g|$(addr c-pie-g checksum 8)|checksum"
    "c-pie-g|$(addr c-pie-g process_value.cold 4)|process_value.cold (cold fragment in .text.unlikely)"
    "c-pie-g|$(plt c-pie-g puts 4)|puts@plt (inside the .plt entry; no symbol covers it)"
    "c-pie-g|$(addr c-pie-g demo_global_table 8)|demo_global_table (data object, .data)"
    "rust-v0|$(addr rust-v0 'demo::largest::<i32>' 4)|demo::largest::<i32>"
    "rust-v0|$(addr rust-v0 '<demo::Circle as demo::Shape>::area' 4)|<demo::Circle as demo::Shape>::area"
    "rust-v0|$(addr rust-v0 'demo::main::{closure#0}' 2)|demo::main::{closure#0}"
)

{
    echo "# Default input of \`stacksym symbolize\` with no arguments."
    echo "# GENERATED by testdata/build.sh from the symbol tables of testdata/bin/*;"
    echo "# do not edit by hand (a rebuild rewrites it so the addresses stay valid)."
    echo "#"
    echo "# One query per line, llvm-symbolizer's stdin form: PATH 0xADDR, with PATH"
    echo "# relative to the repository root and ADDR an ELF virtual address (st_value"
    echo "# space; the PIE binaries are linked at base 0).  Lines starting with '#'"
    echo "# are comments.  Expected function/object for each query, in order:"
    for e in "${entries[@]}"; do
        IFS='|' read -r bin a what <<<"$e"
        printf '#   %-9s %-8s %s\n' "$bin" "$a" "$what"
    done
    for e in "${entries[@]}"; do
        IFS='|' read -r bin a what <<<"$e"
        echo "testdata/bin/$bin $a"
    done
} >dumps/demo.txt

echo "build.sh: built $(ls bin | wc -l) files in testdata/bin/, wrote testdata/dumps/demo.txt"

# ============================================================ debug companions
# Separate debug files for src/debuginfo/ (tests/debuginfo.rs).  Both binaries
# are gcc -O2 -g builds of demo.c (lib), split the way distributions do it:
#   objcopy --only-keep-debug BIN BIN.debug; strip --strip-debug BIN
# c-debuglink: then objcopy --add-gnu-debuglink=c-debuglink.debug, and the
#   debug file sits next to it as bin/c-debuglink.debug (found through
#   .gnu_debuglink, checked by CRC32).
# c-buildid: also -fno-omit-frame-pointer (so its build-id differs from
#   c-debuglink's), no debuglink; its debug file is
#   testdata/debug/.build-id/xx/rest.debug (testdata/debug is a debug dir, like
#   /usr/lib/debug).
# Bad CRC, self-naming debuglinks, decoys and the build-id-vs-debuglink order
# are built by the test itself in temporary directories from these files.
rm -rf debug
split_debug() { # split_debug BIN: leaves bin/BIN stripped and bin/BIN.debug
    objcopy --only-keep-debug "bin/$1" "bin/$1.debug"
    strip --strip-debug "bin/$1"
}
gcc -O2 -g "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-debuglink
split_debug c-debuglink
(cd bin && objcopy --add-gnu-debuglink=c-debuglink.debug c-debuglink)

gcc -O2 -g -fno-omit-frame-pointer "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-buildid
split_debug c-buildid
id=$(readelf -n bin/c-buildid | awk '/Build ID:/ { print $3 }')
[[ ${#id} -gt 2 ]] || die "c-buildid: no build-id"
mkdir -p "debug/.build-id/${id:0:2}"
mv bin/c-buildid.debug "debug/.build-id/${id:0:2}/${id:2}.debug"

# altlink/c-altlink.debug: bin/c-debuglink.debug plus a .gnu_debugaltlink (as
# dwz writes it) that names "../.dwz/stacksym/common.debug" and c-buildid's
# build-id, so c-buildid's debug file plays the dwz supplementary file.  Only
# the section is real dwz output's shape; the DWARF does not refer to it.  The
# tests place the supplementary file in temporary directories.
rm -rf altlink
mkdir -p altlink
{ printf '../.dwz/stacksym/common.debug\0'; printf "$(sed 's/../\\x&/g' <<<"$id")"; } >altlink/section
objcopy --add-section .gnu_debugaltlink=altlink/section \
    bin/c-debuglink.debug altlink/c-altlink.debug
rm altlink/section
readelf -p .gnu_debugaltlink altlink/c-altlink.debug 2>/dev/null | grep 'stacksym/common.debug' >/dev/null ||
    die "c-altlink.debug: no .gnu_debugaltlink"

readelf -S -W bin/c-debuglink | grep '\.gnu_debuglink' >/dev/null || die "c-debuglink: no .gnu_debuglink"
readelf -S -W bin/c-debuglink | grep '\.debug_info' >/dev/null && die "c-debuglink: still has .debug_info"
readelf -S -W bin/c-buildid | grep '\.gnu_debuglink' >/dev/null && die "c-buildid: unexpected .gnu_debuglink"
readelf -S -W bin/c-buildid | grep '\.debug_info' >/dev/null && die "c-buildid: still has .debug_info"
echo "build.sh: split debug files: bin/c-debuglink.debug, debug/.build-id/${id:0:2}/${id:2}.debug"

# ============================================================ DWARF fixtures
# For the DWARF source-line tests (tests/dwarf.rs) and the debug-file lookup
# (tests/debuginfo.rs): other compilers and DWARF versions, the three shapes a
# debug file comes in, dwz, split DWARF and compressed sections.  README.md,
# "DWARF fixtures", says what each file is and which paths a reader follows.
# Everything here is built after (and independently of) the files above, so
# adding it did not change any of them.

# shapes BASE [symlink]: from bin/BASE (kept, unstripped: shape a) make
#   b) bin/BASE.stripped-debuglink, whose .gnu_debuglink names BASE.debug, and
#      bin/BASE.debug next to it;
#   c) bin/BASE.stripped-buildid, no debuglink; its debug file is
#      debug/.build-id/xx/rest.debug (a copy of bin/BASE.debug, or with
#      "symlink" a relative symlink to it, as Fedora's .build-id trees are).
# Split the way Debian's dh_strip does executables: objcopy --only-keep-debug,
# then strip --remove-section=.comment --remove-section=.note (strip's default,
# --strip-all: .symtab goes too; only the .debug file keeps it).  All three
# shapes come from one link: same code, same build-id, same answers.
shapes() {
    local b=$1 id
    objcopy --only-keep-debug "bin/$b" "bin/$b.debug"
    strip --remove-section=.comment --remove-section=.note \
        "bin/$b" -o "bin/$b.stripped-debuglink"
    (cd bin && objcopy --add-gnu-debuglink="$b.debug" "$b.stripped-debuglink")
    strip --remove-section=.comment --remove-section=.note \
        "bin/$b" -o "bin/$b.stripped-buildid"
    id=$(readelf -n "bin/$b" | awk '/Build ID:/ { print $3 }')
    [[ ${#id} -gt 2 ]] || die "$b: no build-id"
    mkdir -p "debug/.build-id/${id:0:2}"
    if [[ ${2:-} == symlink ]]; then
        ln -s "../../../bin/$b.debug" "debug/.build-id/${id:0:2}/${id:2}.debug"
    else
        cp "bin/$b.debug" "debug/.build-id/${id:0:2}/${id:2}.debug"
    fi
    readelf -S -W "bin/$b.stripped-buildid" | grep -E '\.debug_info|\.symtab' >/dev/null &&
        die "$b.stripped-buildid: still has .debug_info or .symtab"
    readelf -S -W "bin/$b.stripped-debuglink" | grep '\.gnu_debuglink' >/dev/null ||
        die "$b.stripped-debuglink: no .gnu_debuglink"
    return 0
}
# dwarf_version BIN: the version of the first unit in .debug_info.
dwarf_version() {
    readelf --debug-dump=info "$1" 2>/dev/null | awk '/Version:/ && !v { v = $2 } END { print v }'
}

# ----------------------------------------------- c-gcc-O2-g-dwarf4 (3 shapes)
# gcc -O2 -g -gdwarf-4, lib.  demo.c in DWARF 4 (.debug_ranges, .debug_loc,
# DW_FORM_strp; line table v4), next to c-pie-g's DWARF 5.
gcc -O2 -g -gdwarf-4 "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-gcc-O2-g-dwarf4
shapes c-gcc-O2-g-dwarf4

# ------------------------------------------- c-gcc-O2-g-dwarf3, c-gcc-O2-g-dwarf2
# gcc -O2 -g -gdwarf-3 (and -gdwarf-2) -gstrict-dwarf, lib.  demo.c in the oldest
# versions readers still meet: unit headers and line tables v3 and v2, no DWARF 4
# forms (DW_FORM_sec_offset, exprloc, flag_present).
gcc -O2 -g -gdwarf-3 -gstrict-dwarf "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-gcc-O2-g-dwarf3
gcc -O2 -g -gdwarf-2 -gstrict-dwarf "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-gcc-O2-g-dwarf2

# ------------------------------------------------------------- c-clang-O2-g
# clang -O2 -g -gdwarf-5 -Wno-unknown-attributes (noclone), lib.  demo.c by clang: DW_FORM_strx1/addrx,
# .debug_str_offsets, .debug_addr, .debug_line_str, DW_AT_ranges in rnglists.
clang -O2 -g -gdwarf-5 -Wno-unknown-attributes "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-clang-O2-g

# --------------------------------------------------- cpp-clang-O2-g (3 shapes)
# clang++ -O2 -g -gdwarf-5, lines.cpp (+ lines.h): templates, lambdas, deep
# inlining across lines.cpp, lines.h and libstdc++'s <bits/stl_algo.h>.
clang++ -O2 -g -gdwarf-5 "${DET[@]}" src/lines.cpp -o bin/cpp-clang-O2-g
shapes cpp-clang-O2-g

# ------------------------------------------------------- cpp-gcc-O2-g-dwarf4
# g++ -O2 -g -gdwarf-4, lines.cpp: the same program by gcc in DWARF 4.
g++ -O2 -g -gdwarf-4 "${DET[@]}" src/lines.cpp -o bin/cpp-gcc-O2-g-dwarf4

# -------------------------------------------------------- rust-O2-g (3 shapes)
# rustc -C opt-level=2 -C debuginfo=2 -C panic=abort -C codegen-units=1
#       -C lto=fat --crate-name demo
# demo.rs with full DWARF (rustc writes DWARF 4).  The precompiled std brings
# its own DWARF (line tables, linkage names), most of the file: fat LTO keeps
# only the std code the program reaches, 2.1 MB instead of 4.4 MB without it.
# The build-id debug file is a symlink to bin/rust-O2-g.debug (saves ~1.9 MB).
rustc -C opt-level=2 -C debuginfo=2 -C panic=abort -C codegen-units=1 \
    -C lto=fat --crate-name demo --remap-path-prefix="$TD"=. \
    src/demo.rs -o bin/rust-O2-g
shapes rust-O2-g symlink

# ------------------------------------------------------ c-dwz-a, c-dwz-b (dwz)
# gcc -O2 -g, demo.c: c-dwz-a linked with libversioned.so, c-dwz-b with
# -DDEMO_NO_LIB (two programs sharing most types).  c-dwz-a also has
# -fno-ident (no "GCC: ..." in .comment) only so that its build-id differs
# from c-debuglink's, which is otherwise the same link.  Both are split like the
# shapes above (stripped, no debuglink), then their debug files go through
#   dwz -m common.debug -M ../../.dwz/stacksym-c-dwz.debug a.debug b.debug
# which moves the DIEs and strings they share into common.debug (the
# supplementary file) and gives both a .gnu_debugaltlink naming
# "../../.dwz/stacksym-c-dwz.debug" plus common.debug's build-id.  Placed as
#   debug/.build-id/xx/rest.debug          (each binary's build-id)
#   debug/.dwz/stacksym-c-dwz.debug        (the altlink path, relative to the
#                                           directory of the debug file)
#   debug/.build-id/yy/rest.debug          (the same file, by its own build-id)
gcc -O2 -g -fno-ident "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-dwz-a
gcc -O2 -g -DDEMO_NO_LIB "${DET[@]}" src/demo.c -o bin/c-dwz-b
dwz_tmp=$(mktemp -d)
for b in c-dwz-a c-dwz-b; do
    objcopy --only-keep-debug "bin/$b" "$dwz_tmp/$b.debug"
    strip --remove-section=.comment --remove-section=.note "bin/$b"
done
(cd "$dwz_tmp" && dwz -m common.debug -M ../../.dwz/stacksym-c-dwz.debug \
    c-dwz-a.debug c-dwz-b.debug)
place_by_build_id() { # place_by_build_id FILE: mv FILE to debug/.build-id/
    local id
    id=$(readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3 }')
    [[ ${#id} -gt 2 ]] || die "$1: no build-id"
    mkdir -p "debug/.build-id/${id:0:2}"
    mv "$1" "debug/.build-id/${id:0:2}/${id:2}.debug"
}
mkdir -p debug/.dwz
cp "$dwz_tmp/common.debug" debug/.dwz/stacksym-c-dwz.debug
for f in c-dwz-a.debug c-dwz-b.debug; do
    # dwz really moved DIEs and strings: references into common.debug.
    readelf --debug-dump=abbrev "$dwz_tmp/$f" 2>/dev/null |
        grep -E 'DW_FORM_GNU_(ref|strp)_alt' >/dev/null || die "dwz: $f refers to nothing in common.debug"
    place_by_build_id "$dwz_tmp/$f"
done
place_by_build_id "$dwz_tmp/common.debug"
rmdir "$dwz_tmp"
for b in c-dwz-a c-dwz-b; do
    id=$(readelf -n "bin/$b" | awk '/Build ID:/ { print $3 }')
    readelf --string-dump=.gnu_debugaltlink "debug/.build-id/${id:0:2}/${id:2}.debug" 2>/dev/null |
        grep '\.\./\.\./\.dwz/stacksym-c-dwz\.debug' >/dev/null || die "$b: no .gnu_debugaltlink"
done

# ------------------------------------------- c-split-dwarf, c-split-dwp
# clang -O2 -g -gdwarf-5 -gsplit-dwarf, lib; compiled with bin/ as the working
# directory (source ../src/demo.c, -ffile-prefix-map=$TD/bin=.), so the
# skeleton unit (DW_TAG_skeleton_unit) says DW_AT_comp_dir "." and
# DW_AT_dwo_name "c-split-dwarf.dwo": the .dwo is found next to the binary.
# clang, not gcc: gcc 12 writes a different DWO id on every run (the build
# would not be deterministic); clang's is a hash of the unit.
# c-split-dwp: the same, then llvm-dwp -e c-split-dwp -o c-split-dwp.dwp and
# its .dwo deleted, so only the .dwp (next to the binary) holds the DWARF.
for b in c-split-dwarf c-split-dwp; do
    (cd bin && clang -O2 -g -gdwarf-5 -gsplit-dwarf -Wno-unknown-attributes \
        -ffile-prefix-map="$TD/bin"=. -c ../src/demo.c -o "$b.o" &&
        clang "$b.o" -L. -lversioned "-Wl,-rpath,\$ORIGIN" -o "$b" &&
        rm "$b.o")
done
(cd bin && llvm-dwp -e c-split-dwp -o c-split-dwp.dwp && rm c-split-dwp.dwo)
[[ -f bin/c-split-dwarf.dwo && -f bin/c-split-dwp.dwp ]] || die "split DWARF: no .dwo/.dwp"
readelf --debug-dump=info bin/c-split-dwarf 2>/dev/null | grep 'DW_AT_dwo_name.*c-split-dwarf\.dwo' >/dev/null ||
    die "c-split-dwarf: no DW_AT_dwo_name"

# ---------------------------------------- c-compress-zstd, c-compress-zlib-gnu
# gcc -O2 -g, lib (the same code as c-debuglink before its split).
# c-compress-zstd: linked with -Wl,--compress-debug-sections=zstd: SHF_COMPRESSED
#   .debug_* sections, Elf64_Chdr ch_type ELFCOMPRESS_ZSTD (2).
# c-compress-zlib-gnu: objcopy --compress-debug-sections=zlib-gnu: the legacy
#   GNU form, sections renamed .zdebug_*, each "ZLIB" + 8-byte big-endian size.
gcc -O2 -g "${DET[@]}" src/demo.c "${LIB[@]}" \
    -Wl,--compress-debug-sections=zstd -o bin/c-compress-zstd
gcc -O2 -g "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-compress-zlib-gnu
objcopy --compress-debug-sections=zlib-gnu bin/c-compress-zlib-gnu
readelf -t bin/c-compress-zstd | grep ZSTD >/dev/null || die "c-compress-zstd: no ZSTD section"
readelf -S -W bin/c-compress-zlib-gnu | grep '\.zdebug_info' >/dev/null ||
    die "c-compress-zlib-gnu: no .zdebug_info"

for b in c-gcc-O2-g-dwarf2:2 c-gcc-O2-g-dwarf3:3 c-gcc-O2-g-dwarf4:4 cpp-gcc-O2-g-dwarf4:4 c-clang-O2-g:5 cpp-clang-O2-g:5 rust-O2-g:4; do
    v=$(dwarf_version "bin/${b%:*}")
    [[ $v == "${b#*:}" ]] || die "${b%:*}: DWARF version $v, expected ${b#*:}"
done
# Each build-id under debug/ belongs to one build (a binary and its shapes),
# so looking a binary up there never finds another binary's debug file.
for f in debug/.build-id/*/*.debug; do
    id=${f#debug/.build-id/}
    id=${id/\//}
    id=${id%.debug}
    owners=$(for b in bin/*; do
        case $b in *.debug | *.dwo | *.dwp) continue ;; esac
        if [[ $(readelf -n "$b" 2>/dev/null | awk '/Build ID:/ { print $3 }') == "$id" ]]; then
            echo "${b%%.stripped-*}"
        fi
    done | sort -u | wc -l)
    ((owners <= 1)) || die "$f: its build-id is shared by $owners different builds in bin/"
done
echo "build.sh: DWARF fixtures built (README.md, \"DWARF fixtures\")"

# ============================================================ MiniDebugInfo
# c-minidebuginfo: demo.c, gcc -O2 -g -gno-column-info, lib, turned into a
# MiniDebugInfo binary the way the gdb manual ("MiniDebugInfo") and Fedora's
# find-debuginfo.sh do it: a stripped binary (only .dynsym) whose
# .gnu_debugdata section holds an xz-compressed ELF file with a .symtab of the
# function symbols that .dynsym lacks (and no DWARF):
#   nm -D BIN --format=posix --defined-only | awk '{print $1}' | sort >dynsyms
#   nm BIN --format=posix --defined-only | awk '$2=="T"||$2=="t" {print $1}' |
#       sort >funcsyms
#   comm -13 dynsyms funcsyms >keep_symbols
#   objcopy --only-keep-debug BIN debug
#   objcopy -S --remove-section .gdb_index --remove-section .comment \
#       --keep-symbols=keep_symbols debug mini_debuginfo
#   strip --strip-all --remove-section .comment BIN
#   xz mini_debuginfo
#   objcopy --add-section .gnu_debugdata=mini_debuginfo.xz BIN
# xz runs as "xz -6 --check=crc64 -T1" (preset and check are xz's defaults,
# written out; -T1 = single-threaded, whose output does not depend on the
# machine's core count), so the payload is byte-identical on a rerun.
# -gno-column-info changes only the (discarded) DWARF: the code is the same
# as c-debuglink's, the build-id is its own.
# c-minidebuginfo-corrupt: a copy whose .gnu_debugdata has the 16 bytes at the
# middle of the payload inverted (XOR 0xff), inside the LZMA2 data, with the
# xz headers, index and footer intact: decompression fails ("xz -t": corrupt
# data) and a reader must report that and fall back to .dynsym.  Same link, so
# the same build-id as c-minidebuginfo.
gcc -O2 -g -gno-column-info "${DET[@]}" src/demo.c "${LIB[@]}" -o bin/c-minidebuginfo
mdi_tmp=$(mktemp -d)
nm -D bin/c-minidebuginfo --format=posix --defined-only | awk '{ print $1 }' |
    sort >"$mdi_tmp/dynsyms"
nm bin/c-minidebuginfo --format=posix --defined-only |
    awk '{ if ($2 == "T" || $2 == "t") print $1 }' | sort >"$mdi_tmp/funcsyms"
comm -13 "$mdi_tmp/dynsyms" "$mdi_tmp/funcsyms" >"$mdi_tmp/keep_symbols"
objcopy --only-keep-debug bin/c-minidebuginfo "$mdi_tmp/debug"
objcopy -S --remove-section .gdb_index --remove-section .comment \
    --keep-symbols="$mdi_tmp/keep_symbols" "$mdi_tmp/debug" "$mdi_tmp/mini_debuginfo"
strip --strip-all --remove-section .comment bin/c-minidebuginfo
xz -6 --check=crc64 -T1 "$mdi_tmp/mini_debuginfo"
objcopy --add-section .gnu_debugdata="$mdi_tmp/mini_debuginfo.xz" bin/c-minidebuginfo
# The corrupt copy: invert 16 bytes at the middle of the payload.
xzf="$mdi_tmp/mini_debuginfo.xz"
n=$(wc -c <"$xzf")
mid=$((n / 2))
{
    head -c "$mid" "$xzf"
    for b in $(od -An -v -tu1 -j "$mid" -N 16 "$xzf"); do
        printf "\\$(printf %03o $((b ^ 0xff)))"
    done
    tail -c +$((mid + 17)) "$xzf"
} >"$mdi_tmp/corrupt.xz"
[[ $(wc -c <"$mdi_tmp/corrupt.xz") == "$n" ]] || die "c-minidebuginfo-corrupt: payload size changed"
objcopy --update-section .gnu_debugdata="$mdi_tmp/corrupt.xz" \
    bin/c-minidebuginfo bin/c-minidebuginfo-corrupt
# Sanity: the section is there, the binary has no .symtab, the good payload
# decompresses to an ELF file whose .symtab has the static functions, the
# corrupt one does not decompress.
for b in c-minidebuginfo c-minidebuginfo-corrupt; do
    readelf -S -W "bin/$b" | grep '\.gnu_debugdata' >/dev/null || die "$b: no .gnu_debugdata"
    readelf -S -W "bin/$b" | grep -E '\.symtab|\.debug_' >/dev/null && die "$b: still has .symtab or .debug_*"
    objcopy --dump-section .gnu_debugdata="$mdi_tmp/$b.xz" "bin/$b" "$mdi_tmp/scratch"
done
cmp -s "$mdi_tmp/c-minidebuginfo.xz" "$xzf" || die "c-minidebuginfo: .gnu_debugdata is not the payload"
xz -dc "$mdi_tmp/c-minidebuginfo.xz" >"$mdi_tmp/payload" || die "c-minidebuginfo: payload does not decompress"
for f in mix leaf_hash die_bad_value process_value.cold checksum; do
    nm --defined-only "$mdi_tmp/payload" | awk -v n="$f" '$3 == n { f = 1 } END { exit !f }' ||
        die "c-minidebuginfo: no $f in the .gnu_debugdata .symtab"
done
xz -t "$mdi_tmp/c-minidebuginfo-corrupt.xz" 2>/dev/null && die "c-minidebuginfo-corrupt: payload still decompresses"
rm -rf "$mdi_tmp"
echo "build.sh: MiniDebugInfo fixtures built (README.md, \"MiniDebugInfo\")"

# ============================================================ Kernel module
# kmod-demo.ko and friends: the .ko path of issue 4 (README.md, "Kernel
# module").  src/kmod/demo_main.c + demo_util.c (+ kmod_demo.h), no kernel
# headers, compiled the way kbuild compiles a module's objects on x86_64
#   gcc -O2 -g -mcmodel=kernel -fno-pic -fno-pie -mno-red-zone
#       -fno-asynchronous-unwind-tables -ffreestanding -fno-stack-protector
#       -mno-sse -mno-mmx -mno-sse2 -mno-3dnow -mno-avx -fno-common
#       -fno-strict-aliasing -c
# (the -mno-sse family, -fno-common and -fno-strict-aliasing are kbuild's too:
# without them gcc 12 -O2 vectorizes kd_run's loops with SSE, which kernel code
# never contains) and joined the way kbuild's final module link does it,
#   ld -r --build-id=sha1 -o kmod-demo.ko demo_main.o demo_util.o
# An ET_REL file: every section at address 0, symbols section-relative, and
# .rela.* sections for the code (.rela.text, .rela.init.text, ...) and for the
# DWARF (.rela.debug_info, .rela.debug_line, ...) that a reader must apply with
# the addresses the kernel loaded each section at.
#   kmod-demo.ko            DWARF 5 (gcc 12's default), unstripped
#   kmod-demo-dwarf4.ko     the same with -gdwarf-4 (same code and sections)
#   kmod-demo.stripped.ko   strip --strip-debug of kmod-demo.ko (keeps .symtab
#                           and the build-id note, as distributions ship .ko
#                           files); its debug file, objcopy --only-keep-debug
#                           of kmod-demo.ko, is debug/.build-id/xx/rest.debug,
#                           and debug/lib/modules/6.1.0-stacksym/extra/
#                           kmod-demo.ko.debug is a relative symlink to it (the
#                           /usr/lib/debug/lib/modules/<release>/<path>.ko.debug
#                           place)
#   kmod-demo-aarch64.ko    aarch64-linux-gnu-gcc -O2 -g -fno-pic
#                           -mgeneral-regs-only -ffreestanding
#                           -fno-stack-protector -fno-asynchronous-unwind-tables
#                           -fno-unwind-tables, aarch64-linux-gnu-ld -r
#                           --build-id=sha1 (R_AARCH64_* relocations)
# For one "loaded" instance of each architecture, kmod_load (below) writes a
# fake sysfs, kmod/sys/module/kmod_demo/{sections,notes}/ (x86_64) and
# kmod-aarch64/sys/module/kmod_demo/..., and the /proc/kallsyms lines the kernel
# would show, kallsyms/kmod-demo.kallsyms and kallsyms/kmod-demo-aarch64.kallsyms.
KMOD_CFLAGS=(-O2 -g -fno-pic -ffreestanding -fno-stack-protector
    -fno-asynchronous-unwind-tables "${DET[@]}")
KMOD_X86=(-mcmodel=kernel -fno-pie -mno-red-zone -mno-sse -mno-mmx -mno-sse2
    -mno-3dnow -mno-avx -fno-common -fno-strict-aliasing)
KMOD_A64=(-mgeneral-regs-only -fno-unwind-tables)
KMOD_SRC=(demo_main demo_util)
# kmod_build CC LD OUT [FLAGS...]: compile each source to a .o, ld -r them.
kmod_build() {
    local cc=$1 ld=$2 out=$3 tmp s objs=()
    shift 3
    tmp=$(mktemp -d)
    for s in "${KMOD_SRC[@]}"; do
        "$cc" "${KMOD_CFLAGS[@]}" "$@" -c "src/kmod/$s.c" -o "$tmp/$s.o"
        objs+=("$tmp/$s.o")
    done
    "$ld" -r --build-id=sha1 -o "$out" "${objs[@]}"
    rm -rf "$tmp"
    # The shape of a real .ko: a build-id, relocations for code and DWARF,
    # the module sections.
    readelf -n "$out" | grep 'Build ID' >/dev/null || die "$out: no build-id"
    readelf -h "$out" | grep 'REL (Relocatable file)' >/dev/null || die "$out: not ET_REL"
    for sec in .rela.text .rela.debug_info .rela.debug_line .init.text .exit.text \
        .text.unlikely .modinfo .gnu.linkonce.this_module .data .bss .rodata; do
        readelf -SW "$out" | grep -F " $sec " >/dev/null || die "$out: no $sec section"
    done
    readelf --debug-dump=info "$out" 2>/dev/null | grep DW_TAG_inlined_subroutine >/dev/null ||
        die "$out: no inlined subroutines"
    readelf -p .modinfo "$out" | grep 'name=kmod_demo' >/dev/null || die "$out: no name= in .modinfo"
}
kmod_build gcc ld bin/kmod-demo.ko "${KMOD_X86[@]}"
kmod_build gcc ld bin/kmod-demo-dwarf4.ko "${KMOD_X86[@]}" -gdwarf-4
kmod_build aarch64-linux-gnu-gcc aarch64-linux-gnu-ld bin/kmod-demo-aarch64.ko "${KMOD_A64[@]}"
for b in kmod-demo.ko:5 kmod-demo-dwarf4.ko:4 kmod-demo-aarch64.ko:5; do
    v=$(dwarf_version "bin/${b%:*}")
    [[ $v == "${b#*:}" ]] || die "${b%:*}: DWARF version $v, expected ${b#*:}"
done
# kmod-demo-dwarf4.ko shares kmod-demo.ko's fake sysfs: the same allocated
# sections (name, size, flags) and the same code.
kmod_alloc_sections() { # name size flags of each SHF_ALLOC section
    readelf -SW "$1" | awk '{ sub(/^ *\[ *[0-9]+\] */, "") } NF >= 9 && $7 ~ /A/ { print $1, $5, $7 }'
}
[[ $(kmod_alloc_sections bin/kmod-demo.ko) == "$(kmod_alloc_sections bin/kmod-demo-dwarf4.ko)" ]] ||
    die "kmod-demo-dwarf4.ko: allocated sections differ from kmod-demo.ko's"
kmod_tmp=$(mktemp -d)
for b in kmod-demo kmod-demo-dwarf4; do
    objcopy -O binary --only-section=.text "bin/$b.ko" "$kmod_tmp/$b.text"
done
cmp -s "$kmod_tmp/kmod-demo.text" "$kmod_tmp/kmod-demo-dwarf4.text" ||
    die "kmod-demo-dwarf4.ko: .text differs from kmod-demo.ko's"
rm -rf "$kmod_tmp"

# The distribution shape: debug file by build-id (and by module path), module
# stripped of its DWARF only.
objcopy --only-keep-debug bin/kmod-demo.ko bin/kmod-demo.ko.debug
strip --strip-debug bin/kmod-demo.ko -o bin/kmod-demo.stripped.ko
id=$(readelf -n bin/kmod-demo.ko | awk '/Build ID:/ { print $3 }')
[[ ${#id} -gt 2 ]] || die "kmod-demo.ko: no build-id"
[[ $(readelf -n bin/kmod-demo.stripped.ko | awk '/Build ID:/ { print $3 }') == "$id" ]] ||
    die "kmod-demo.stripped.ko: build-id lost"
readelf -SW bin/kmod-demo.stripped.ko | grep '\.debug_' >/dev/null && die "kmod-demo.stripped.ko: still has .debug_*"
readelf -SW bin/kmod-demo.stripped.ko | grep '\.symtab' >/dev/null || die "kmod-demo.stripped.ko: no .symtab"
readelf -SW bin/kmod-demo.ko.debug | grep '\.rela\.debug_info' >/dev/null ||
    die "kmod-demo.ko.debug: no .rela.debug_info"
[[ -e "debug/.build-id/${id:0:2}/${id:2}.debug" ]] && die "kmod-demo.ko: build-id $id already in debug/"
for b in bin/*; do
    case $b in bin/kmod-demo.ko | bin/kmod-demo.stripped.ko | bin/kmod-demo.ko.debug) continue ;; esac
    [[ $(readelf -n "$b" 2>/dev/null | awk '/Build ID:/ { print $3 }') == "$id" ]] &&
        die "kmod-demo.ko: build-id $id shared with $b"
done
mkdir -p "debug/.build-id/${id:0:2}" debug/lib/modules/6.1.0-stacksym/extra
mv bin/kmod-demo.ko.debug "debug/.build-id/${id:0:2}/${id:2}.debug"
ln -s "../../../../.build-id/${id:0:2}/${id:2}.debug" \
    debug/lib/modules/6.1.0-stacksym/extra/kmod-demo.ko.debug

# kmod_load KO SYSDIR KALLSYMS TEXT_BASE INIT_BASE: "load" KO as the module
# kmod_demo.  Places every section the kernel loads (SHF_ALLOC, size > 0;
# not .modinfo, whose SHF_ALLOC the loader clears) at its own page-aligned
# address: first the code (.text, .exit.text, .text.unlikely: the module's text
# allocation), then the read-only sections (.note.gnu.build-id, .rodata...),
# then the writable ones (.data, .gnu.linkonce.this_module, .bss), each at the
# next page boundary after the previous one, from TEXT_BASE; the .init.*
# sections likewise from INIT_BASE (a separate allocation, as in the kernel).
# Writes
#   SYSDIR/sys/module/kmod_demo/sections/<section name>   "0x<address>\n"
#   SYSDIR/sys/module/kmod_demo/notes/.note.gnu.build-id  the raw note
#   KALLSYMS   a few kernel-image lines (kmod_image_syms), then the module's
#              symbols as /proc/kallsyms shows them: in .symtab order (the
#              kernel does not sort a module's symbols), FUNC and OBJECT
#              symbols with a name in a loaded section, address = section
#              address + st_value; type t (code), r (read-only), d (data),
#              b (NOBITS), lower case because the module exports nothing
#              (s_show upper-cases only EXPORT_SYMBOLs); "\t[kmod_demo]".
#              Not listed, as on a live system after the module's init ran
#              (CONFIG_KALLSYMS_ALL=y): the .init.text symbols
#              (kmod_demo_init, init_module) and the .modinfo ones.
kmod_load() {
    local ko=$1 sysdir=$2 kallsyms=$3 text=$4 init=$5
    local dir="$sysdir/sys/module/kmod_demo" name size flags addr next off
    local -A at=()
    rm -rf "$sysdir"
    mkdir -p "$dir/sections" "$dir/notes"
    # "rank name size flags" for each loaded section, in placement order.
    while read -r _ name size flags; do
        if [[ $name == .init* ]]; then
            addr=$init
        else
            addr=$text
        fi
        at[$name]=$addr
        printf '0x%016x\n' "$addr" >"$dir/sections/$name"
        next=$(((addr + 16#$size + 4095) & ~4095))
        ((next == addr)) && next=$((addr + 4096))
        if [[ $name == .init* ]]; then init=$next; else text=$next; fi
    done < <(readelf -SW "$ko" | awk '
        { sub(/^ *\[ *[0-9]+\] */, "") }
        NF >= 9 && $7 ~ /A/ && $1 != ".modinfo" && $5 !~ /^0+$/ {
            rank = ($7 ~ /X/) ? 0 : ($7 ~ /W/) ? 2 : 1
            print rank, NR, $1, $5, $7
        }' | sort -k1,1n -k2,2n | cut -d' ' -f1,3-)
    # The note's bytes, cut out with dd (the host's objcopy does not read the
    # aarch64 file; tail | head -c could die of SIGPIPE under pipefail).
    read -r off size < <(readelf -SW "$ko" | awk '{ sub(/^ *\[ *[0-9]+\] */, "") }
        $1 == ".note.gnu.build-id" { print $4, $5 }')
    dd if="$ko" of="$dir/notes/.note.gnu.build-id" bs=1 skip=$((16#$off)) \
        count=$((16#$size)) status=none
    {
        kmod_image_syms
        # "index name type flags" of each section, then the symbols.
        { readelf -SW "$ko" | awk '
            { line = $0; if (!sub(/^ *\[ *[0-9]+\] */, "", line)) next
              match($0, /\[ *[0-9]+\]/); idx = substr($0, RSTART + 1, RLENGTH - 2) + 0
              n = split(line, f, " ")
              if (n >= 9) print "S", idx, f[1], f[2], (n >= 10 ? f[7] : "-") }'
          readelf -sW "$ko" | awk '$1 ~ /^[0-9]+:$/ && ($4 == "FUNC" || $4 == "OBJECT") &&
              $7 ~ /^[0-9]+$/ && $8 != "" { print "Y", $7, $8, $2 }'
        } | while read -r kind a b c d; do
            if [[ $kind == S ]]; then
                secname[$a]=$b sectype[$a]=$c secflags[$a]=$d
                continue
            fi
            name=${secname[$a]}
            [[ -n ${at[$name]:-} && $name != .init* ]] || continue
            if [[ ${secflags[$a]} == *X* ]]; then t=t
            elif [[ ${sectype[$a]} == NOBITS ]]; then t=b
            elif [[ ${secflags[$a]} == *W* ]]; then t=d
            else t=r
            fi
            printf '%016x %s %s\t[kmod_demo]\n' $((at[$name] + 16#$c)) "$t" "$b"
        done
    } >"$kallsyms"
}
# kmod_image_syms: a few kernel-image lines before the module's, relative to
# KIMAGE (the kernel's _text), sorted as /proc/kallsyms lists the image.
kmod_image_syms() {
    printf '%016x %s %s\n' \
        $((KIMAGE)) T _stext $((KIMAGE)) T _text \
        $((KIMAGE + 0x2000)) T do_one_initcall \
        $((KIMAGE + 0x1a3450)) T load_module \
        $((KIMAGE + 0x1a5c10)) T do_init_module \
        $((KIMAGE + 0xe00000)) T _etext \
        $((KIMAGE + 0x1000000)) D init_task
}
# x86_64: image at 0xffffffff81000000 (no KASLR), modules from
# 0xffffffffc0000000 (MODULES_VADDR).  aarch64 (Linux 6.1, 48-bit VA): modules
# from 0xffff800000000000, the image at 0xffff800008000000 after them.
KIMAGE=0xffffffff81000000 kmod_load bin/kmod-demo.ko kmod kallsyms/kmod-demo.kallsyms \
    0xffffffffc0a01000 0xffffffffc0b01000
KIMAGE=0xffff800008000000 kmod_load bin/kmod-demo-aarch64.ko kmod-aarch64 \
    kallsyms/kmod-demo-aarch64.kallsyms 0xffff800000a01000 0xffff800000b01000
for d in kmod kmod-aarch64; do
    for s in .text .init.text .exit.text .text.unlikely .data .bss .rodata \
        .gnu.linkonce.this_module .note.gnu.build-id; do
        [[ -f $d/sys/module/kmod_demo/sections/$s ]] || die "$d: no sections/$s"
    done
    [[ -f $d/sys/module/kmod_demo/sections/.modinfo ]] && die "$d: sections/.modinfo"
done
for k in kallsyms/kmod-demo.kallsyms kallsyms/kmod-demo-aarch64.kallsyms; do
    for f in kd_run kd_checksum kd_process_one kd_report_error kmod_demo_exit __this_module; do
        grep -P "^[0-9a-f]{16} [tdbr] $f\t\[kmod_demo\]\$" "$k" >/dev/null || die "$k: no $f"
    done
    grep 'kmod_demo_init' "$k" >/dev/null && die "$k: lists the __init kmod_demo_init"
done
echo "build.sh: kernel module fixtures built (README.md, \"Kernel module\")"

# The unwinder's perf-comparison programs (testdata/unwind/).
"$TD/build-unwind.sh"
"$TD/build-core.sh"
