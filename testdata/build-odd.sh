#!/usr/bin/env bash
# Rebuilds testdata/odd/: small ELF files of the kinds a host holds that are
# not plain executables and libraries (issue 26), for tests/odd_elf.rs.
#
# Usage: testdata/build-odd.sh        (from any directory)
#
#   odd/libodd.so           gcc -O2 -g -shared: a symbol in a section that is
#                           not loaded (.gnu.warning.odd_fn, as glibc's
#                           link warnings), NOTYPE assembler labels (odd_entry,
#                           odd_entry_user) and a label inside a sized function
#                           (odd_inner in odd_sized).
#   odd/odd.o               gcc -O2 -g -c of the same source: a relocatable
#                           object (ET_REL), DWARF with relocations.
#   odd/libodd-noshdr.so    libodd.so stripped to .dynsym (strip --strip-all),
#                           then its section headers removed: e_shoff, e_shnum
#                           and e_shstrndx zeroed (what sstrip leaves).
#   odd/odd-labels          as + ld of src/labels.s: symbol shapes of elfutils'
#                           addr2line tests (sized symbols nested in a sized
#                           one, sizeless symbols sharing an address, data
#                           labels), at fixed addresses (-Ttext, -Tdata).
#   odd/libodd-prelinked-noshdr.so  libodd-prelinked.so without section
#                           headers (so without .gnu_debuglink), and beside it
#                           libodd-prelinked-noshdr.so.debug, its debug file under
#                           the name elfutils looks for then (elfutils'
#                           testfile52-32.noshdrs.so has this shape).
#   odd/libodd-prelinked-grown.so  like libodd-prelinked.so, but the moved
#                           link also has a .hash section (--hash-style=both):
#                           the sections after it moved 0x40000000 plus its
#                           size, those before it 0x40000000 only, as when
#                           prelink grows a section (elfutils' testfile52-32:
#                           .rel.dyn turned RELA). Its debug file is the base
#                           link's (build-id ...0003).
#   odd/libodd-prelinked.so the same object linked at base 0x40000000
#                           (-Wl,-Ttext-segment) and stripped to .dynsym: a
#                           prelinked library; odd/debug/.build-id/xx/rest.debug
#                           is the --only-keep-debug file of the base-0 link,
#                           both linked with one fixed --build-id (prelink keeps
#                           the build-id of the library it moves).
#
# Deterministic like build.sh (relative sources, -ffile-prefix-map, fixed
# build-ids). Reference toolchain: Debian 12, gcc 12.2, binutils 2.40.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/odd"
export LC_ALL=C
export SOURCE_DATE_EPOCH=0
OD="$PWD"
for tool in gcc as ld strip objcopy python3; do
    command -v "$tool" >/dev/null || { echo "build-odd.sh: $tool missing" >&2; exit 1; }
done

rm -rf debug libodd.so odd.o libodd-noshdr.so libodd-prelinked.so odd-labels \
    libodd-prelinked-grown.so libodd-prelinked-noshdr.so libodd-prelinked-noshdr.so.debug
DET=(-ffile-prefix-map="$OD"=.)
CFLAGS=(-O2 -g -fPIC "${DET[@]}")

gcc "${CFLAGS[@]}" -c src/odd.c -o odd.o
gcc "${CFLAGS[@]}" -shared -Wl,--build-id=0x0dd1000000000000000000000000000000000001 \
    odd.o -o libodd.so

# No section headers: a copy of the stripped library with them cut off.
cut_section_headers() {
python3 - "$1" <<'EOF'
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, 'rb').read())
assert data[:4] == b'\x7fELF' and data[4] == 2 and data[5] == 1, "ELF64 LE expected"
shoff = struct.unpack_from('<Q', data, 0x28)[0]
struct.pack_into('<Q', data, 0x28, 0)        # e_shoff
struct.pack_into('<HHH', data, 0x3a, 0, 0, 0)  # e_shentsize, e_shnum, e_shstrndx
del data[shoff:]                             # the headers themselves (last in the file)
open(path, 'wb').write(data)
EOF
}
strip --strip-all libodd.so -o libodd-noshdr.so
cut_section_headers libodd-noshdr.so

# Prelinked: the same object at another base; the debug file from the base-0
# link (same fixed build-id), found through the build-id dir. A link at another
# base moves every address of the file (segments, sections, symbols, dynamic
# entries) by one constant, as prelink does; Debian 12 has no prelink.
PRE_ID=0dd1000000000000000000000000000000000002
gcc "${CFLAGS[@]}" -shared -Wl,--build-id=0x$PRE_ID -Wl,-Ttext-segment=0x40000000 \
    odd.o -o libodd-prelinked.so
gcc "${CFLAGS[@]}" -shared -Wl,--build-id=0x$PRE_ID odd.o -o prelink-base.so
mkdir -p "debug/.build-id/${PRE_ID:0:2}"
objcopy --only-keep-debug prelink-base.so "debug/.build-id/${PRE_ID:0:2}/${PRE_ID:2}.debug"
rm prelink-base.so
strip --strip-all libodd-prelinked.so

# The prelinked library without section headers, its debug file beside it under
# its own name plus .debug (see above).
cp libodd-prelinked.so libodd-prelinked-noshdr.so
cut_section_headers libodd-prelinked-noshdr.so
cp "debug/.build-id/${PRE_ID:0:2}/${PRE_ID:2}.debug" libodd-prelinked-noshdr.so.debug

# The prelinked library again, its early sections grown (see above).
GROWN_ID=0dd1000000000000000000000000000000000003
gcc "${CFLAGS[@]}" -shared -Wl,--build-id=0x$GROWN_ID -Wl,-Ttext-segment=0x40000000 \
    -Wl,--hash-style=both odd.o -o libodd-prelinked-grown.so
gcc "${CFLAGS[@]}" -shared -Wl,--build-id=0x$GROWN_ID -Wl,--hash-style=gnu odd.o \
    -o grown-base.so
objcopy --only-keep-debug grown-base.so "debug/.build-id/${GROWN_ID:0:2}/${GROWN_ID:2}.debug"
rm grown-base.so
strip --strip-all libodd-prelinked-grown.so

as src/labels.s -o labels.o
ld --build-id=none -e lab_start -Ttext=0x401000 -Tdata=0x402000 labels.o -o odd-labels
rm labels.o

ls -l libodd.so odd.o libodd-noshdr.so libodd-prelinked.so libodd-prelinked-grown.so odd-labels \
    libodd-prelinked-noshdr.so libodd-prelinked-noshdr.so.debug \
    "debug/.build-id/${PRE_ID:0:2}/${PRE_ID:2}.debug" \
    "debug/.build-id/${GROWN_ID:0:2}/${GROWN_ID:2}.debug"
