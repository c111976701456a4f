/* A process whose threads all wait, for the pstack example's comparison with gdb
 * (tests/pstack.rs): each thread blocks at a known depth in a different kind of wait, and
 * one of them inside a signal handler that interrupted it while it was computing.
 *
 *   main      main -> wait_for_stdin -> read(0)            (until stdin closes)
 *   cond      cond_outer -> cond_inner -> pthread_cond_wait
 *   sleep     sleep_outer -> sleep_inner -> nanosleep
 *   pipe      pipe_reader -> read(pipe nobody writes)
 *   signal    signal_thread -> busy_outer -> busy_inner (spinning), interrupted by SIGUSR1:
 *             on_usr1 -> handler_wait -> pause()
 *
 * Prints "ready" once every thread is on its way to its wait (the handler has started), then
 * waits; exits when stdin reaches EOF. -O2 -g, with and without frame pointers, built by
 * testdata/build-unwind.sh. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int started;                /* under mutex */
static volatile sig_atomic_t in_handler;
static volatile int spinning;
static volatile unsigned long sink;
static int never_written[2];

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

NOINLINE static void sleep_inner(void) {
    struct timespec t = {3600, 0};
    for (;;)
        nanosleep(&t, NULL);
}

NOINLINE static void sleep_outer(void) {
    mark_started();
    sleep_inner();
    sink++;
}

static void *sleep_thread(void *arg) {
    (void)arg;
    sleep_outer();
    return NULL;
}

NOINLINE static void pipe_reader(void) {
    char byte;
    mark_started();
    while (read(never_written[0], &byte, 1) != 0) {
    }
    sink++;
}

static void *pipe_thread(void *arg) {
    (void)arg;
    pipe_reader();
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

int main(void) {
    static void *(*const bodies[])(void *) = {cond_thread, sleep_thread, pipe_thread};
    static const char *const names[] = {"cond", "sleep", "pipe"};
    pthread_t threads[3], busy;
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    if (pipe(never_written) != 0)
        return 1;
    for (int i = 0; i < 3; i++) {
        pthread_create(&threads[i], NULL, bodies[i], NULL);
        pthread_setname_np(threads[i], names[i]);
    }
    pthread_create(&busy, NULL, signal_thread, NULL);
    pthread_setname_np(busy, "signal");
    while (!spinning)
        sched_yield();
    pthread_kill(busy, SIGUSR1);
    for (;;) {
        pthread_mutex_lock(&mutex);
        int n = started;
        pthread_mutex_unlock(&mutex);
        if (n == 3 && in_handler)
            break;
        usleep(1000);
    }
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    wait_for_stdin();
    return 0;
}
