/* Work for the unwinder's perf comparison (tests/perf_unwind.rs): every kind of frame a
 * DWARF unwinder meets in C programs, busy for about as long as argv[1] milliseconds:
 * a deep call chain, recursion, calls into a shared library (through the PLT) and back,
 * a libc callback (qsort), a function with a VLA, a signal handler interrupting work
 * (SIGUSR1, raised in the loop), a second thread, and syscalls and the vDSO (clock_gettime). Built with and
 * without frame pointers by testdata/build.sh. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unwind-lib.h"

static volatile unsigned long sink;
static volatile int stop;

__attribute__((noinline)) static void spin(int n) {
    for (int i = 0; i < n; i++)
        sink += (unsigned long)i * 7;
}

__attribute__((noinline)) static void chain4(int n) { spin(n); sink++; }
__attribute__((noinline)) static void chain3(int n) { chain4(n); sink++; }
__attribute__((noinline)) static void chain2(int n) { chain3(n); sink++; }
__attribute__((noinline)) static void chain1(int n) { chain2(n); sink++; }

__attribute__((noinline)) static unsigned long recurse(int depth, int n) {
    if (depth == 0) {
        spin(n);
        return sink;
    }
    return recurse(depth - 1, n) + 1;
}

static int compare(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    spin(20);
    return (x > y) - (x < y);
}

__attribute__((noinline)) static void sort_some(void) {
    int values[512];
    for (int i = 0; i < 512; i++)
        values[i] = (i * 7919) % 512;
    qsort(values, 512, sizeof values[0], compare);
}

__attribute__((noinline)) static void with_vla(int n) {
    char buffer[n];
    memset(buffer, 1, n);
    spin(buffer[n / 2] * 2000);
    sink += buffer[0];
}

static void on_signal(int sig) {
    spin(100000);
    sink += (unsigned long)sig;
}

__attribute__((noinline)) static void clocks(void) {
    struct timespec ts;
    for (int i = 0; i < 200; i++)
        clock_gettime(CLOCK_MONOTONIC, &ts);
    sink += (unsigned long)ts.tv_nsec;
    getppid();
}

/* Called back from the shared library. */
void compare_back(int n) {
    spin(n);
}

static void *second_thread(void *arg) {
    (void)arg;
    while (!stop) {
        chain1(5000);
        lib_work(3000);
    }
    return NULL;
}

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 500;
    pthread_t thread;
    pthread_create(&thread, NULL, second_thread, NULL);
    signal(SIGUSR1, on_signal);
    long end = now_ms() + ms;
    while (now_ms() < end) {
        chain1(20000);
        recurse(12, 5000);
        lib_callback(compare_back, 4000);
        sort_some();
        with_vla(64 + (int)(sink & 63));
        clocks();
        raise(SIGUSR1); /* the handler runs on the way out of the kill syscall */
    }
    stop = 1;
    pthread_join(thread, NULL);
    return 0;
}
