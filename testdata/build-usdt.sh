#!/usr/bin/env bash
# Rebuilds the USDT test binaries of tests/usdt.rs from src/usdt.c and src/usdt-guarded.c:
#
#   bin/usdt-x86_64    gcc -O2                      (run by the tests: uprobes fire in it)
#   bin/usdt-aarch64   aarch64-linux-gnu-gcc -O2    (only read)
#
# Probes: stacksym_demo:{plain,widths,global,noargs} without semaphores (usdt.c) and
# stacksym_demo:{guarded,guarded2} with semaphores (usdt-guarded.c is compiled with
# _SDT_HAS_SEMAPHORES); arguments in registers of 8 to 64 bits, in memory (a volatile local,
# a global: `demo_global(%rip)` on x86_64, resolved through .symtab, which is why the files
# are not stripped; aarch64 addresses it with an `adrp` relocation the note cannot express)
# and constants. No -g: the notes are what the tests read (about 16 KB and 70 KB).
#
# Needs sys/sdt.h (apt-get install systemtap-sdt-dev) and, for aarch64, apt-get install
# gcc-aarch64-linux-gnu; the aarch64 compiler does not search the x86_64 multiarch include
# dir where Debian puts sys/sdt.h, so the header is copied for it into a temporary dir.
# Reference toolchain (Debian 12 "bookworm"): gcc 12.2, binutils 2.40, systemtap-sdt-dev 4.8.
#
# Usage: testdata/build-usdt.sh   (from any directory)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
export LC_ALL=C
export SOURCE_DATE_EPOCH=0

sdt=""
for dir in /usr/include /usr/include/x86_64-linux-gnu; do
    [[ -f "$dir/sys/sdt.h" ]] && sdt="$dir/sys"
done
[[ -n "$sdt" ]] || {
    echo "sys/sdt.h not found: apt-get install systemtap-sdt-dev" >&2
    exit 1
}
command -v aarch64-linux-gnu-gcc >/dev/null || {
    echo "aarch64-linux-gnu-gcc not found: apt-get install gcc-aarch64-linux-gnu" >&2
    exit 1
}
include=$(mktemp -d)
trap 'rm -rf "$include"' EXIT
mkdir "$include/sys"
cp "$sdt/sdt.h" "$sdt/sdt-config.h" "$include/sys/"

FLAGS=(-O2 -Wall -Wextra -I "$include" -ffile-prefix-map="$PWD"=.)
gcc "${FLAGS[@]}" src/usdt.c src/usdt-guarded.c -o bin/usdt-x86_64
aarch64-linux-gnu-gcc "${FLAGS[@]}" src/usdt.c src/usdt-guarded.c -o bin/usdt-aarch64
ls -l bin/usdt-x86_64 bin/usdt-aarch64
