/* USDT probes for tests/usdt.rs, built by testdata/build-usdt.sh (x86_64 and aarch64).
 *
 * Probes of provider stacksym_demo:
 *   plain     no semaphore; a register, a memory and a constant argument
 *   widths    no semaphore; 8-, 16-, 32- and 64-bit values, signed and unsigned
 *   global    no semaphore; a global's value (a %rip-relative operand on x86_64)
 *   noargs    no semaphore, no arguments
 *   guarded   a semaphore: its site runs only while a tracer holds the semaphore
 *   guarded2  a second probe with a semaphore
 *
 * The guarded probes are in usdt-guarded.c, compiled with _SDT_HAS_SEMAPHORES (sys/sdt.h
 * decides per translation unit whether probes have semaphores).
 *
 * Usage: usdt [LOOPS [SLEEP_MS]]   (default 1 loop, no sleep)
 * Each loop fires every probe once (guarded ones only when their semaphore is non-zero) and
 * at the end prints "guarded_runs=N semaphore_max=M": how many times the guarded site ran
 * and the largest semaphore value seen, so that a test sees the kernel's ref_ctr at work.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SDT_USE_VARIADIC
#include <sys/sdt.h>

int guarded_site(int i, const char *what);
extern volatile unsigned short stacksym_demo_guarded_semaphore;

long demo_global = 42;
int demo_counter;

__attribute__((noinline)) long work(long a, int b, const char *s)
{
    volatile long in_memory = a * 3;
    STAP_PROBE3(stacksym_demo, plain, a, in_memory, 7);
    signed char c8 = (signed char)b;
    unsigned short u16 = (unsigned short)(a + b);
    int i32 = -b;
    unsigned long u64 = (unsigned long)a << 3;
    STAP_PROBE4(stacksym_demo, widths, c8, u16, i32, u64);
    STAP_PROBE2(stacksym_demo, global, demo_global, demo_counter);
    STAP_PROBE(stacksym_demo, noargs);
    return a + b + (long)s[0] + in_memory;
}

int main(int argc, char **argv)
{
    long loops = argc > 1 ? atol(argv[1]) : 1;
    long sleep_ms = argc > 2 ? atol(argv[2]) : 0;
    long total = 0, guarded_runs = 0;
    unsigned semaphore_max = 0;
    for (long i = 0; i < loops; i++) {
        demo_counter++;
        total += work(i, (int)(i & 0x7f), argv[0]);
        if (stacksym_demo_guarded_semaphore > semaphore_max)
            semaphore_max = stacksym_demo_guarded_semaphore;
        guarded_runs += guarded_site((int)i, "tick");
        if (sleep_ms > 0)
            usleep((useconds_t)(sleep_ms * 1000));
    }
    printf("guarded_runs=%ld semaphore_max=%u total=%ld\n", guarded_runs, semaphore_max, total);
    return 0;
}
