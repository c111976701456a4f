#!/usr/bin/env bash
# Records testdata/recordings/perf-fp.data.zst, the committed `--call-graph fp` recording of
# tests/perf_script_layout.rs (perf_unwind_prints_perf_scripts_bytes_for_fp_callchains):
# unwind/unwind-demo-fp (with libunwind-demo-fp.so; frame pointers, leaf ones too) working
# for 150 ms under
#   perf record -e cpu-clock --call-graph fp
# (about 600 samples of both threads, no registers or stack copies: the chains are the ones
# the kernel walked by frame pointers), compressed with zstd -19 (a few KB). Like
# record-unwind.sh, the program runs from /tmp/stacksym-unwind-bench/, where the test puts
# the two files back. Rerun after build-unwind.sh changed them (perf would then name nothing
# in them: the recorded build-ids would differ). Needs perf, zstd and permission to profile
# (root, or kernel.perf_event_paranoid <= 1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
for tool in perf zstd; do
    command -v "$tool" >/dev/null || { echo "record-callchain-fp.sh: $tool missing" >&2; exit 1; }
done
RUN_DIR=/tmp/stacksym-unwind-bench
mkdir -p "$RUN_DIR"
cp unwind/unwind-demo-fp unwind/libunwind-demo-fp.so "$RUN_DIR/"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
perf record -q --no-buildid-cache -e cpu-clock --call-graph fp -o "$tmp/perf.data" \
    "$RUN_DIR/unwind-demo-fp" 150
mkdir -p recordings
zstd -q -19 -f "$tmp/perf.data" -o recordings/perf-fp.data.zst
chmod 644 recordings/perf-fp.data.zst
perf report -i "$tmp/perf.data" --stats 2>/dev/null | grep -m1 'SAMPLE events' || true
ls -l recordings/perf-fp.data.zst
