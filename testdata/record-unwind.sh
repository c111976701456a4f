#!/usr/bin/env bash
# Records testdata/recordings/perf-nofp.data.zst, the committed perf recording benches/unwind.rs
# reads, and the seeds of the perf_data fuzz target (testdata/fuzz/perf_data/, below).
#
# The bench's recording: unwind/unwind-demo-nofp (with libunwind-demo-nofp.so) working for
# 300 ms under
#   perf record -e cpu-clock --call-graph dwarf,16384
# (about 1,200 samples of both threads), compressed with zstd -19 (about 50 KB; the stack
# copies are mostly alike). The program runs from /tmp/stacksym-unwind-bench/, a path that is
# the same in every checkout, so that the recording's MMAP paths name files the bench can put
# back there (it copies the two files from testdata/unwind/ before it runs). Rerun after
# build-unwind.sh changed the binaries (the bench checks the recorded build-ids). Needs perf,
# zstd, and permission to profile (root, or kernel.perf_event_paranoid <= 1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
for tool in perf zstd; do
    command -v "$tool" >/dev/null || { echo "record-unwind.sh: $tool missing" >&2; exit 1; }
done
RUN_DIR=/tmp/stacksym-unwind-bench
mkdir -p "$RUN_DIR"
cp unwind/unwind-demo-nofp unwind/libunwind-demo-nofp.so "$RUN_DIR/"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
perf record -q --no-buildid-cache -e cpu-clock --call-graph dwarf,16384 -o "$tmp/perf.data" \
    "$RUN_DIR/unwind-demo-nofp" 300
mkdir -p recordings # not in unwind/, which build-unwind.sh makes anew
zstd -q -19 -f "$tmp/perf.data" -o recordings/perf-nofp.data.zst
perf report -i "$tmp/perf.data" --stats 2>/dev/null | grep -m1 'SAMPLE events' || true
ls -l recordings/perf-nofp.data.zst

# Fuzz seeds (libFuzzer inputs should be small): the same program for 20 ms at 500 Hz with
# 1 KiB stack copies (a complete file of a few dozen samples); the first 104 bytes (the
# header alone), 4 KiB and half of it (also with the header's data size fitted to it), and
# the first 64 KiB of the bench's recording
# (truncated: the header names a data section past the end).
SEEDS=fuzz/perf_data
rm -rf "$SEEDS"
mkdir -p "$SEEDS"
perf record -q --no-buildid-cache -e cpu-clock -F 500 --call-graph dwarf,1024 \
    -o "$SEEDS/small.data" "$RUN_DIR/unwind-demo-nofp" 20
# The same compressed (`-z`: PERF_RECORD_COMPRESSED records, one zstd stream).
perf record -q -z --no-buildid-cache -e cpu-clock -F 500 --call-graph dwarf,1024 \
    -o "$SEEDS/small-z.data" "$RUN_DIR/unwind-demo-nofp" 20
head -c 104 "$SEEDS/small.data" >"$SEEDS/small-header-only.data"
head -c 4096 "$SEEDS/small.data" >"$SEEDS/small-4k.data"
head -c $(($(stat -c %s "$SEEDS/small.data") / 2)) "$SEEDS/small.data" >"$SEEDS/small-half.data"
head -c 65536 "$tmp/perf.data" >"$SEEDS/bench-64k.data"
# The half again, its header's data size cut to what is left: the reader then meets a record
# cut short inside the data section.
le64() {
    local value=$1 i
    for i in 0 1 2 3 4 5 6 7; do
        printf "\\x$(printf %02x $(((value >> (8 * i)) & 255)))"
    done
}
cp "$SEEDS/small-half.data" "$SEEDS/small-half-fitted.data"
data_offset=$(od -An -t u8 -j 40 -N 8 "$SEEDS/small-half.data" | tr -d ' ')
le64 $(($(stat -c %s "$SEEDS/small-half.data") - data_offset)) |
    dd of="$SEEDS/small-half-fitted.data" bs=1 seek=48 conv=notrunc status=none
chmod 644 "$SEEDS"/* recordings/perf-nofp.data.zst
ls -l "$SEEDS"
