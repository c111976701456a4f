#!/usr/bin/env bash
# Makes the JIT fixtures of testdata/jit/ from a real Node run (node 20, perf 6.1):
#   jitted-fib.so      perf inject's ELF file of V8's optimized `fib` (JS:*fib): its
#                      .eh_frame is V8's own (a "zLR" CIE whose LSDA encoding is
#                      DW_EH_PE_omit, which gimli 0.34 cannot read: unwind/omitted_lsda.rs)
#   jitted-builtin.so  one of a builtin: V8 gives builtins no unwind info, so genelf writes
#                      an empty .eh_frame and V8's 20-byte .eh_frame_hdr of 0 entries
#                      (unwound by frame pointer)
#   app.js             the program
# Each run gives other addresses and file numbers; the tests read only what the files say
# (symbols, CFI), not a particular run.
# Usage: testdata/jit/record-node.sh [OUT_DIR]   (default: testdata/jit; as root, or with
# perf_event_paranoid <= 1). The tests' PCs are those of the committed files: after a new
# run, check them (tests in src/unwind/tests.rs say which rows they rely on).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$(realpath "${1:-$here}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$here/app.js" .
# node writes jit-PID.dump into its working directory
perf record -q -k 1 --call-graph dwarf -o perf.data -- \
    node --perf-prof --interpreted-frames-native-stack app.js >/dev/null
perf inject --jit -i perf.data -o perf.jit.data
symbol_of() { readelf -sW "$1" 2>/dev/null | awk '$4 == "FUNC" { $1=$2=$3=$4=$5=$6=$7=""; print substr($0, 8) }'; }
fib='' builtin=''
for f in jitted-*.so; do
    name=$(symbol_of "$f")
    if [[ -z $fib && $name == 'JS:*fib '* ]] && readelf -S "$f" | grep -q '\.eh_frame '; then
        size=$(readelf -SW "$f" | awk '$2 == ".eh_frame" { print $6 }')
        [[ $size != 000000 ]] && fib=$f
    fi
    if [[ -z $builtin && $name == Builtin:* ]]; then
        builtin=$f
    fi
done
[[ -n $fib && -n $builtin ]] || { echo "no optimized fib or no builtin among the jitted files" >&2; exit 1; }
cp "$fib" "$out/jitted-fib.so"
cp "$builtin" "$out/jitted-builtin.so"
echo "jitted-fib.so     <- $fib ($(symbol_of "$fib"))"
echo "jitted-builtin.so <- $builtin ($(symbol_of "$builtin"))"
