/* A tiny "JIT" for perf_unwind's perf-map comparison (tests/perf_jit_map.rs): it writes two
 * functions of x86-64 machine code into anonymous executable memory, names them in
 * /tmp/perf-PID.map as JIT compilers do (perf's jit-interface.txt: `START SIZE NAME`, hex),
 * and calls them for about argv[1] milliseconds, then exits, leaving the map behind (as the
 * JVM's -XX:+DumpPerfMapAtExit and python3 -X perf do). Both functions keep frame pointers,
 * so that `perf record --call-graph fp` walks through them: jit_outer calls jit_inner, which
 * spins. Built by testdata/build-unwind.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static const unsigned char outer[] = {
    0x55,                         /* push %rbp */
    0x48, 0x89, 0xe5,             /* mov %rsp,%rbp */
    0xe8, 0xf7, 0x00, 0x00, 0x00, /* call jit_inner (at 0x100: 0x100 - 9) */
    0x5d,                         /* pop %rbp */
    0xc3,                         /* ret */
};

static const unsigned char inner[] = {
    0x55,                         /* push %rbp */
    0x48, 0x89, 0xe5,             /* mov %rsp,%rbp */
    0xb9, 0x40, 0x42, 0x0f, 0x00, /* mov $1000000,%ecx */
    0xff, 0xc9,                   /* 1: dec %ecx */
    0x75, 0xfc,                   /* jnz 1b */
    0x5d,                         /* pop %rbp */
    0xc3,                         /* ret */
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    int ms = argc > 1 ? atoi(argv[1]) : 200;
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memcpy(code, outer, sizeof outer);
    memcpy(code + 0x100, inner, sizeof inner);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *map = fopen(path, "w");
    if (!map) {
        perror(path);
        return 1;
    }
    /* A name with spaces, as JITs write them (V8's "LazyCompile:~f file.js:1"). */
    fprintf(map, "%lx %zx jit_outer\n%lx %zx jit_inner [tier 1]\n", (unsigned long)code,
            sizeof outer, (unsigned long)(code + 0x100), sizeof inner);
    fclose(map);
    void (*run)(void) = (void (*)(void))code;
    double end = now_ms() + ms;
    while (now_ms() < end)
        run();
    printf("%s\n", path);
    return 0;
}
