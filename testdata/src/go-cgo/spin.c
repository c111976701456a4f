// The C half of the chain (see main.go): two C frames between the Go caller and the Go
// callback, neither inlined nor a tail call (each adds to the callee's result).
#include <stdint.h>
#include "_cgo_export.h"

__attribute__((noinline)) int64_t c_inner(int64_t n) { return goSpin(n) + 1; }

__attribute__((noinline)) int64_t c_outer(int64_t n) { return c_inner(n * 3) + 1; }
