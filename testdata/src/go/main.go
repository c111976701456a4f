// The Go program of stacksym's Go-table tests (testdata/build-go.sh builds it): a call
// chain that the compiler inlines (or not, with -gcflags=-l), methods on pointer
// receivers, a generic function, closures and a goroutine. With the argument "spin" it
// spins forever in a known chain (main.main -> main.spinOuter -> main.spinMiddle ->
// main.spinInner), for unwinding tests.
package main

// Only os is imported (no fmt, no strings): the committed binaries stay under 1 MB each.
import "os"

type Server struct {
	name  string
	count int
}

//go:noinline
func (s *Server) Handle(req string) string {
	s.count++
	return s.prefix() + upper(req)
}

// prefix is small: inlined into Handle unless -gcflags=-l.
func (s *Server) prefix() string {
	return s.name + ":"
}

type Number interface {
	~int | ~int64 | ~float64
}

//go:noinline
func Sum[T Number](values []T) T {
	var total T
	for _, v := range values {
		total += v
	}
	return total
}

// upper is what strings.ToUpper does for ASCII, without the strings package.
func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

func leaf(n int) int {
	return n*3 + 1
}

func middle(n int) int {
	return leaf(n) + leaf(n+1)
}

//go:noinline
func outer(n int) int {
	return middle(n) * 2
}

//go:noinline
func spinInner(n int) int {
	for {
		n = n*1103515245 + 12345
		if n == 42 {
			return n
		}
	}
}

//go:noinline
func spinMiddle(n int) int {
	return spinInner(n) + 1
}

//go:noinline
func spinOuter(n int) int {
	return spinMiddle(n) + 1
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "spin" {
		println(spinOuter(len(os.Args)))
		return
	}
	s := &Server{name: "demo"}
	println(s.Handle("hello"))
	println(Sum([]int{1, 2, 3}), Sum([]float64{1.5, 2.5}))
	println(outer(len(os.Args)))
	add := func(a int) func(int) int {
		return func(b int) int { return a + b + len(os.Args) }
	}
	println(add(1)(2))
	done := make(chan int)
	go func() {
		done <- outer(7)
	}()
	println(<-done)
}
