#!/usr/bin/env bash
# Records testdata/unwind/perf-nofp.data.zst, the committed perf recording benches/unwind.rs
# reads: unwind/unwind-demo-nofp (with libunwind-demo-nofp.so) working for 300 ms under
#   perf record -e cpu-clock --call-graph dwarf,16384
# (about 1,400 samples of both threads), compressed with zstd -19 (about 50 KB; the stack
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
zstd -q -19 -f "$tmp/perf.data" -o unwind/perf-nofp.data.zst
perf report -i "$tmp/perf.data" --stats 2>/dev/null | grep -m1 'SAMPLE events' || true
ls -l unwind/perf-nofp.data.zst
