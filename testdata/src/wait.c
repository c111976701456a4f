/*
 * wait.c - a process for stacksym's live-process tests (tests/process.rs).
 *
 * Built by ../build.sh into bin/c-wait (PIE, linked with libversioned.so).
 * Prints one "NAME 0xADDR" line per address below, then "ready", flushes,
 * and blocks reading stdin until EOF, so the test can symbolize its
 * addresses through /proc/PID while it runs:
 *
 *   pid           its pid (decimal, not an address)
 *   wait_target   a function of its own (global, noinline)
 *   wait_local    a static function of its own
 *   vhelper       a function in libversioned.so
 *   puts          puts in libc (a PIE takes the address through the GOT, so
 *                 this is libc's own address, not a PLT entry)
 */
#include <stdio.h>
#include <unistd.h>

int vhelper(int x); /* in libversioned.so */

#define NOINLINE __attribute__((noinline, noclone))

NOINLINE int wait_target(int x)
{
    return x * 3 + 1;
}

static NOINLINE int wait_local(int x)
{
    return wait_target(x) ^ 0x55;
}

int main(void)
{
    printf("pid %ld\n", (long)getpid());
    printf("wait_target %p\n", (void *)&wait_target);
    printf("wait_local %p\n", (void *)&wait_local);
    printf("vhelper %p\n", (void *)&vhelper);
    printf("puts %p\n", (void *)&puts);
    puts("ready");
    fflush(stdout);
    int sum = wait_local(1) + vhelper(2);
    while (getchar() != EOF) {
    }
    return sum == 12345;
}
