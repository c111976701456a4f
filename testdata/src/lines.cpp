// lines.cpp - C++ test program for stacksym's DWARF source lines and inlined
// frames.
//
// Built by ../build.sh as bin/cpp-clang-O2-g (clang++ -O2 -g -gdwarf-5, and
// its stripped shapes) and bin/cpp-gcc-O2-g-dwarf4 (g++ -O2 -g -gdwarf-4).
// Unlike demo.cpp (every function noinline, for demangling), this one is
// built to be inlined heavily: each NOINLINE function below is an outer
// frame with several levels of inlined calls in it, across lines.cpp,
// lines.h and libstdc++'s headers.  Names and nesting (outermost first):
//
//   stacksym_lines::fold_sum(int const*, unsigned int)
//       <- fold<int, lambda> (lines.h) <- lambda (lines.cpp)
//       <- Acc<int>::add (lines.h) <- clamp_add (lines.h)
//   stacksym_lines::sort_desc(int*, unsigned int)
//       <- std::sort with a lambda comparator (libstdc++ <bits/stl_algo.h>)
//   int stacksym_lines::unrolled<3>(int), unrolled<5>(int)
//       template instances, each with step() inlined twice (two call lines)
//   stacksym_lines::run_lambda(int)::{lambda(int)#1}::operator()(int) const
//       a lambda kept out of line (noinline), called through a template
//   stacksym_lines::run_all(int)
//       calls all of the above; main calls run_all
#include <algorithm>
#include <cstdio>

#include "lines.h"

#define NOINLINE __attribute__((noinline))

namespace stacksym_lines {

NOINLINE int fold_sum(const int *v, unsigned n)
{
    Acc<int> acc;
    return fold(v, n, 0, [&acc](int total, int x) {
        acc.add(x);
        return total + acc.total;
    });
}

NOINLINE void sort_desc(int *v, unsigned n)
{
    std::sort(v, v + n, [](int a, int b) { return a > b; });
}

static inline __attribute__((always_inline)) int step(int x, int k)
{
    return x * 31 + k;
}

template <int N>
NOINLINE int unrolled(int x)
{
    int r = step(x, N);
    for (int i = 0; i < N; i++)
        r ^= r >> 3;
    return step(r, -N);
}

template <typename F>
NOINLINE int apply_twice(F f, int x)
{
    return f(f(x));
}

NOINLINE int run_lambda(int k)
{
    auto lam = [k](int v) __attribute__((noinline)) { return v * k + 1; };
    return apply_twice(lam, k + 2);
}

NOINLINE int run_all(int seed)
{
    int v[12];
    for (unsigned i = 0; i < 12; i++)
        v[i] = (seed * 7 + (int)i * 13) % 17;
    sort_desc(v, 12);
    int r = fold_sum(v, 12);
    r += unrolled<3>(seed) + unrolled<5>(seed);
    r += run_lambda(seed);
    return r;
}

} // namespace stacksym_lines

int main(int argc, char **argv)
{
    (void)argv;
    std::printf("lines: %d\n", stacksym_lines::run_all(argc) & 0xff);
    return 0;
}
