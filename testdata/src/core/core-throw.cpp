// An uncaught C++ exception: std::terminate -> abort() -> SIGABRT, 3 calls deep in
// throw_chain (tests/core.rs). -O2 -g, built by testdata/build-core.sh.
#include <stdexcept>

static volatile int sink;

__attribute__((noinline)) static void thrower(int depth) {
    if (depth == 0)
        throw std::runtime_error("uncaught");
    thrower(depth - 1);
    sink++;
}

__attribute__((noinline)) void throw_chain() {
    thrower(3);
    sink++;
}

int main() {
    throw_chain();
    return sink;
}
