/* Samples in PLT entries, for tests/perf_plt.rs: a loop that calls six cheap libc
 * functions through the PLT, busy for about argv[1] milliseconds. perf 6.1 names an
 * address in a PLT entry either TARGET@plt or `_init+OFF` (see cli/src/perf/plt.rs); in this
 * file both happen. Built by testdata/build-unwind.sh. */
#include <stdlib.h>
#include <strings.h>
#include <time.h>

static volatile long sink;

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
    long end = now_ms() + (argc > 1 ? atol(argv[1]) : 300);
    while (now_ms() < end) {
        for (int i = 0; i < 10000; i++) {
            sink += abs((int)sink - i);
            sink += labs(sink - i);
            sink += llabs(sink - i);
            sink += ffs(i);
            sink += ffsl(sink);
            sink += ffsll(sink + i);
        }
    }
    return 0;
}
