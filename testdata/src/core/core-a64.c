/* A tiny static aarch64 program without libc that crashes three calls deep (SIGSEGV,
 * fault address 0x18): tests/core.rs runs it under qemu-aarch64, which writes the guest's
 * core itself, and unwinds that core on the host. Built twice by testdata/build-core.sh:
 * core-a64 plain and core-a64-pac with -mbranch-protection=pac-ret (a64_middle, a64_outer
 * and _start sign the return address they save: paciasp/autiasp). -O1 -g, -static
 * -nostdlib. */
#define NOINLINE __attribute__((noinline))

static volatile long sink;

/* A leaf: its return address stays in the link register. */
NOINLINE void a64_crash(volatile long *where) {
    *where = 1;
    sink++;
}

NOINLINE void a64_middle(long n) {
    a64_crash((volatile long *)n);
    sink++;
}

NOINLINE void a64_outer(long n) {
    a64_middle(n + 8);
    sink++;
}

/* The outermost frame: the return address is undefined (the link register is 0 at the
 * entry point), as glibc's _start marks its own. */
void _start(void) {
    __asm__ volatile(".cfi_undefined x30");
    a64_outer(0x10);
    for (;;) {
    }
}
