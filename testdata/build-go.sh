#!/usr/bin/env bash
# Rebuilds the Go test binaries in testdata/bin/ from testdata/src/go/ (see
# testdata/README.md, "Go binaries"). Reference toolchain: Debian 12's golang-go (Go 1.19).
#
#   go-demo                    default build (inlining on, non-PIE), with .symtab and DWARF:
#                              the twin whose DWARF the stripped files are checked against
#   go-demo.stripped           the same build with -ldflags='-s -w' (no .symtab, no DWARF)
#   go-demo-noinline.stripped  -gcflags=-l (no inlining: the chain as real frames), -s -w
#   go-demo-pie.stripped       -buildmode=pie, -s -w
#   go-demo-386.stripped       GOARCH=386, -s -w: a 32-bit table (4-byte pointers, quantum 1)
#   go-demo-arm64.stripped     GOARCH=arm64, -s -w: quantum 4
#   go-demo-s390x.stripped     GOARCH=s390x, -s -w: a big-endian table (quantum 2)
#   go-cgo                     src/go-cgo/ (cgo: Go -> C -> Go, spinning in the Go callback),
#                              CGO_ENABLED=1 with the host's gcc, with .symtab and DWARF
#   go-cgo.stripped            the same build with -ldflags='-s -w'
#
# The build is reproducible (-trimpath, no VCS stamp, a fixed build id): paths in the tables
# read "example.com/demo/main.go" and "runtime/proc.go".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
command -v go >/dev/null || { echo "go is missing: apt-get install golang-go" >&2; exit 1; }
OUT="$PWD/bin"
cd src/go
export CGO_ENABLED=0 GOFLAGS=-trimpath GOCACHE="${GOCACHE:-/tmp/stacksym-go-cache}"
build() { # build OUTPUT [go build flags...] (in the current directory's package)
    local out=$1
    shift
    go build -buildvcs=false -o "$OUT/$out" "$@" .
    echo "$out: $(stat -c %s "$OUT/$out") bytes"
}
build go-demo -ldflags='-buildid=stacksym-go-demo'
build go-demo.stripped -ldflags='-s -w -buildid=stacksym-go-demo'
build go-demo-noinline.stripped -gcflags=-l -ldflags='-s -w -buildid=stacksym-go-demo'
build go-demo-pie.stripped -buildmode=pie -ldflags='-s -w -buildid=stacksym-go-demo'
# Other layouts of the same table: Go cross-compiles without a C toolchain (CGO_ENABLED=0).
for arch in 386 arm64 s390x; do
    GOARCH=$arch build go-demo-$arch.stripped -ldflags='-s -w -buildid=stacksym-go-demo'
done
# The stripped build must keep the twin's code at the same addresses: the tests compare
# them one by one. (Comparing disassemblies would not do: the stripped one has no function
# headers.)
text() { objcopy -O binary --only-section=.text "$1" /dev/stdout | sha256sum; }
[[ $(readelf -SW "$OUT/go-demo" | grep ' \.text ') == "$(readelf -SW "$OUT/go-demo.stripped" | grep ' \.text ')" ]] &&
    [[ $(text "$OUT/go-demo") == "$(text "$OUT/go-demo.stripped")" ]] ||
    { echo "go-demo and go-demo.stripped differ in code" >&2; exit 1; }
# The cgo program: Go's gcc step (the C half and cgo's glue), linked by the host linker.
cd ../go-cgo
CGO_ENABLED=1 build go-cgo -ldflags='-buildid=stacksym-go-cgo'
CGO_ENABLED=1 build go-cgo.stripped -ldflags='-s -w -buildid=stacksym-go-cgo'
[[ $(readelf -SW "$OUT/go-cgo" | grep ' \.text ') == "$(readelf -SW "$OUT/go-cgo.stripped" | grep ' \.text ')" ]] &&
    [[ $(text "$OUT/go-cgo") == "$(text "$OUT/go-cgo.stripped")" ]] ||
    { echo "go-cgo and go-cgo.stripped differ in code" >&2; exit 1; }
