// lines.h - inline helpers for lines.cpp (stacksym's DWARF source-line tests).
//
// Everything here is inlined into functions of lines.cpp, so their code
// carries line-table rows for THIS file while the enclosing function is in
// lines.cpp: inlined frames that cross a file boundary.
#ifndef STACKSYM_LINES_H
#define STACKSYM_LINES_H

namespace stacksym_lines {

// Innermost level: always inlined.
static inline __attribute__((always_inline)) int clamp_add(int acc, int v)
{
    int s = acc + v;
    if (s > 1000000)
        s -= 999983;
    return s;
}

// A class template whose member is inlined into its callers.
template <typename T>
struct Acc {
    T total{};
    inline __attribute__((always_inline)) void add(T v)
    {
        total = clamp_add(total, v * 3 - 1);
    }
};

// A function template taking a callable (a lambda at every call site).
template <typename T, typename F>
inline __attribute__((always_inline)) T fold(const T *v, unsigned n, T init, F f)
{
    for (unsigned i = 0; i < n; i++)
        init = f(init, v[i]);
    return init;
}

} // namespace stacksym_lines

#endif
