// The cgo program of stacksym's unwinding tests (testdata/build-go.sh builds it): Go calls C,
// which calls back into Go, which spins forever:
//
//	main.main -> main.callC -> (cgo) c_outer -> c_inner -> (cgo export) main.goSpin -> main.spinInner
//
// so that a stopped or sampled thread shows both stack switches of cgo: Go's goroutine stack to
// the thread's system stack (runtime.asmcgocall) and back (runtime.cgocallback).
package main

// #include <stdint.h>
// int64_t c_outer(int64_t n);
import "C"

import "os"

//go:noinline
func spinInner(n int) int {
	for {
		n = n*1103515245 + 12345
		if n == 42 {
			return n
		}
	}
}

// goSpin is what the C code calls (exported: _cgo_export.h declares it to C).
//
//export goSpin
func goSpin(n C.int64_t) C.int64_t {
	return C.int64_t(spinInner(int(n)) + 1)
}

//go:noinline
func callC(n int) int {
	return int(C.c_outer(C.int64_t(n))) + 1
}

func main() {
	println(callC(len(os.Args)))
}
