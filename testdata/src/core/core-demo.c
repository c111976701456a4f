/* The core-file tests' program (tests/core.rs), one binary with four modes:
 *
 *   core-demo wait    threads that wait, for gcore: main reads stdin; "cond" in
 *                     pthread_cond_wait; "recurse" 40 calls deep in recurse() then pause();
 *                     "signal" in a SIGUSR1 handler (on_usr1 -> handler_wait -> pause) that
 *                     interrupted busy_inner. Prints "ready PID" once all are in place.
 *   core-demo segv    two waiting threads, then a SIGSEGV 30 calls deep in the main thread:
 *                     crash_outer -> crash_chain (x30, recursive) -> crash_write.
 *   core-demo many N  N threads waiting in pthread_cond_wait 3 calls deep (the bench).
 *   core-demo overflow  a thread with a 64 KiB stack recursing in overflow() (about 500
 *                     bytes a frame) until it runs into the guard page: SIGSEGV that the
 *                     kernel cannot deliver on that stack, a core; main waits in
 *                     pthread_join.
 *
 * -O2 -g without frame pointers, built by testdata/build-core.sh. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int started; /* under mutex */
static volatile sig_atomic_t in_handler;
static volatile int spinning;
static volatile unsigned long sink;

static void mark_started(void) {
    pthread_mutex_lock(&mutex);
    started++;
    pthread_mutex_unlock(&mutex);
}

NOINLINE static void cond_inner(void) {
    pthread_mutex_lock(&mutex);
    started++;
    for (;;)
        pthread_cond_wait(&cond, &mutex); /* never signalled */
}

NOINLINE static void cond_outer(void) {
    cond_inner();
    sink++;
}

static void *cond_thread(void *arg) {
    (void)arg;
    cond_outer();
    return NULL;
}

NOINLINE static int recurse(int depth) {
    if (depth == 0) {
        mark_started();
        for (;;)
            pause();
    }
    int r = recurse(depth - 1);
    sink += (unsigned long)r;
    return r + 1;
}

static void *recurse_thread(void *arg) {
    (void)arg;
    sink += (unsigned long)recurse(40);
    return NULL;
}

NOINLINE static void handler_wait(void) {
    in_handler = 1;
    for (;;)
        pause();
}

static void on_usr1(int sig) {
    (void)sig;
    handler_wait();
}

NOINLINE static void busy_inner(void) {
    spinning = 1;
    for (unsigned long i = 0;; i++)
        sink += i * 7;
}

NOINLINE static void busy_outer(void) {
    busy_inner();
    sink++;
}

static void *signal_thread(void *arg) {
    (void)arg;
    busy_outer();
    return NULL;
}

NOINLINE static void wait_for_stdin(void) {
    char buf[64];
    while (read(0, buf, sizeof buf) > 0) {
    }
}

static int wait_mode(void) {
    pthread_t t;
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_create(&t, NULL, cond_thread, NULL);
    pthread_setname_np(t, "cond");
    pthread_create(&t, NULL, recurse_thread, NULL);
    pthread_setname_np(t, "recurse");
    pthread_t busy;
    pthread_create(&busy, NULL, signal_thread, NULL);
    pthread_setname_np(busy, "signal");
    while (!spinning)
        sched_yield();
    pthread_kill(busy, SIGUSR1);
    for (;;) {
        pthread_mutex_lock(&mutex);
        int n = started;
        pthread_mutex_unlock(&mutex);
        if (n == 2 && in_handler)
            break;
        usleep(1000);
    }
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    wait_for_stdin();
    return 0;
}

NOINLINE static void crash_write(volatile int *where) {
    *where = 42; /* where is 0x10: SIGSEGV, fault address 0x10 */
    sink++;
}

NOINLINE static void crash_chain(int depth, volatile int *where) {
    if (depth == 0)
        crash_write(where);
    else
        crash_chain(depth - 1, where);
    sink++;
}

NOINLINE static void crash_outer(void) {
    crash_chain(30, (volatile int *)0x10);
    sink++;
}

static int segv_mode(void) {
    pthread_t t;
    pthread_create(&t, NULL, cond_thread, NULL);
    pthread_setname_np(t, "cond");
    pthread_create(&t, NULL, recurse_thread, NULL);
    pthread_setname_np(t, "recurse");
    for (;;) {
        pthread_mutex_lock(&mutex);
        int n = started;
        pthread_mutex_unlock(&mutex);
        if (n == 2)
            break;
        usleep(1000);
    }
    crash_outer();
    return 0;
}

NOINLINE static int overflow(int depth) {
    volatile char pad[480];
    pad[0] = (char)depth;
    int r = overflow(depth + 1); /* not a tail call: pad is read after it */
    return r + pad[0];
}

static void *overflow_thread(void *arg) {
    (void)arg;
    /* Main is in pthread_join by then (not still returning from clone3). */
    usleep(20000);
    sink += (unsigned long)overflow(0);
    return NULL;
}

static int overflow_mode(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 << 10);
    pthread_t t;
    pthread_create(&t, &attr, overflow_thread, NULL);
    pthread_setname_np(t, "overflow");
    pthread_join(t, NULL);
    return 0;
}

static int many_mode(int n) {
    for (int i = 0; i < n; i++) {
        pthread_t t;
        pthread_create(&t, NULL, cond_thread, NULL);
    }
    for (;;) {
        pthread_mutex_lock(&mutex);
        int k = started;
        pthread_mutex_unlock(&mutex);
        if (k == n)
            break;
        usleep(1000);
    }
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    wait_for_stdin();
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "wait") == 0)
        return wait_mode();
    if (argc >= 2 && strcmp(argv[1], "segv") == 0)
        return segv_mode();
    if (argc >= 2 && strcmp(argv[1], "overflow") == 0)
        return overflow_mode();
    if (argc >= 3 && strcmp(argv[1], "many") == 0)
        return many_mode(atoi(argv[2]));
    fprintf(stderr, "usage: core-demo wait | segv | overflow | many N\n");
    return 2;
}
