/* A tiny static program without libc that crashes three calls deep: its core, taken with
 * coredump_filter 0x11 (private anonymous memory and ELF headers) and zstd-compressed, is
 * testdata/core/tiny.core.zst (the README's post-mortem example, the core_file fuzz target's
 * seed). -O1 -g, -static -nostdlib, built by testdata/build-core.sh. */
#define NOINLINE __attribute__((noinline))

static volatile long sink;

NOINLINE void tiny_crash(volatile long *where) {
    *where = 1;
    sink++;
}

NOINLINE void tiny_middle(long n) {
    tiny_crash((volatile long *)n);
    sink++;
}

NOINLINE void tiny_outer(void) {
    tiny_middle(0x18);
    sink++;
}

/* The outermost frame, as glibc's _start marks its own: the return address is undefined
 * (at the entry point the stack holds argc, not a return address). */
void _start(void) {
    __asm__ volatile(".cfi_undefined rip");
    tiny_outer();
    for (;;) {
    }
}
