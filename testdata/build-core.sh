#!/usr/bin/env bash
# Builds the core-file tests' programs (testdata/core/) from testdata/src/core/:
# core-demo (threads waiting, a SIGSEGV in a deep chain, many threads; -O2 -g, no frame
# pointers), core-throw (an uncaught C++ exception: abort), core-tiny (static, no libc) and
# core-tiny's committed core, tiny.core.zst: core-tiny crashed with coredump_filter 0x11
# (private anonymous memory and ELF headers only) and compressed with zstd -19; core-a64 and
# core-a64-pac (static aarch64, no libc; the second with -mbranch-protection=pac-ret),
# crashed under qemu-aarch64 by tests/core.rs.
# Making the core sets /proc/sys/kernel/core_pattern (global) for a moment and restores it
# on every exit; needs root. Called by testdata/build.sh; runnable alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
TD="$PWD"
for tool in gcc g++ zstd aarch64-linux-gnu-gcc; do
    command -v $tool >/dev/null || { echo "build-core.sh: $tool missing" >&2; exit 1; }
done
mkdir -p core
cd src/core
gcc -O2 -g -fomit-frame-pointer -ffile-prefix-map="$TD"=. -pthread -o "$TD/core/core-demo" core-demo.c
g++ -O2 -g -ffile-prefix-map="$TD"=. -o "$TD/core/core-throw" core-throw.cpp
gcc -O1 -g -static -nostdlib -fno-pie -no-pie -fno-stack-protector -Wl,--build-id \
    -ffile-prefix-map="$TD"=. -o "$TD/core/core-tiny" core-tiny.c
A64=(aarch64-linux-gnu-gcc -O1 -g -static -nostdlib -fno-pie -no-pie -fno-stack-protector
    -Wl,--build-id -ffile-prefix-map="$TD"=.)
"${A64[@]}" -o "$TD/core/core-a64" core-a64.c
"${A64[@]}" -mbranch-protection=pac-ret -o "$TD/core/core-a64-pac" core-a64.c

# The tiny core.
dir=$(mktemp -d)
old_pattern=$(cat /proc/sys/kernel/core_pattern)
restore() { echo "$old_pattern" > /proc/sys/kernel/core_pattern; rm -rf "$dir"; }
trap restore EXIT
echo "$dir/core.%p" > /proc/sys/kernel/core_pattern
(
    ulimit -c unlimited
    echo 0x11 > /proc/self/coredump_filter
    exec "$TD/core/core-tiny"
) || true
core=$(ls "$dir"/core.* | head -1)
zstd -q -19 -f -o "$TD/core/tiny.core.zst" "$core"
chmod 644 "$TD/core/tiny.core.zst"
ls -l "$TD/core"
