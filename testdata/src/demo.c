/*
 * demo.c - C test program for stacksym's ELF symbolizer.
 *
 * Built several ways by ../build.sh (see ../README.md for the table).  Each
 * construct below exists to put a particular kind of symbol into the ELF
 * symbol tables; keep the names stable, tests and ../dumps/demo.txt refer to
 * them.
 *
 *   demo_global_counter, demo_global_table  global data objects (STT_OBJECT, GLOBAL)
 *   demo_local_table                        static data object  (STT_OBJECT, LOCAL)
 *   mix, leaf_hash                          static (LOCAL) functions
 *   checksum, process_value, run_all        global functions that call each other
 *   die_bad_value                           __attribute__((cold)) function (.text.unlikely)
 *   process_value.cold                      gcc -O2 splits the path calling
 *                                           die_bad_value() into .text.unlikely as a
 *                                           separate LOCAL FUNC symbol
 *   demo_impl / demo_alias / demo_weak      three names, one address:
 *                                           GLOBAL, GLOBAL (alias), WEAK (alias)
 *   zero_size_fn                            FUNC symbol with st_size == 0 (top-level asm)
 *   vfunc, vfunc_old, vhelper               calls into libversioned.so (.plt entries,
 *                                           versioned undefined dynsyms); puts,
 *                                           strlen, printf, abort: libc via .plt
 *
 * Define DEMO_NO_LIB to build without libversioned.so (aarch64 / i386 builds):
 * local stand-ins are used instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))

/* ---------------------------------------------------------------- data */

/* Global data objects: .data, STT_OBJECT, STB_GLOBAL. */
int demo_global_counter = 1;
int demo_global_table[32] = {
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53,
    59, 61, 67, 71, 73, 79, 83, 89, 97, 101, 103, 107, 109, 113, 127, 131,
};

/* Static data object: .data, STT_OBJECT, STB_LOCAL (written at run time so
 * the compiler has to keep it). */
static int demo_local_table[16] = {
    1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987,
};

/* ------------------------------------------------------- shared library */

#ifndef DEMO_NO_LIB
/* libversioned.so: vfunc binds to the default version vfunc@@VERS_2. */
extern int vfunc(int x);
/* Explicitly bind to the old, non-default version vfunc@VERS_1. */
extern int vfunc_old(int x);
__asm__(".symver vfunc_old,vfunc@VERS_1");
/* Unversioned helper (version index 1 / global). */
extern int vhelper(int x);
#else
static NOINLINE int vfunc(int x) { return x * 2 + 1; }
static NOINLINE int vfunc_old(int x) { return x + 1; }
static NOINLINE int vhelper(int x) { return x ^ 0x5a; }
#endif

/* ----------------------------------------------------- zero-size symbol */

/* A function symbol with no .size directive: st_size == 0.  It is a single
 * `ret`, so calling it directly is harmless on x86, x86-64 and AArch64. */
/* The return instruction: `ret` on x86 and aarch64, `br %r14` on s390x. */
#if defined(__s390x__)
#define DEMO_RET "\tbr %r14\n"
#else
#define DEMO_RET "\tret\n"
#endif
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl zero_size_fn\n"
        ".type zero_size_fn, @function\n"
        "zero_size_fn:\n"
        DEMO_RET
        ".popsection\n");
extern void zero_size_fn(void);

/* ------------------------------------------------------------ functions */

/* Always inlined into checksum(): shows up only in DWARF inline info. */
static inline __attribute__((always_inline)) unsigned scale(unsigned v)
{
    return (v << 3) ^ (v >> 5);
}

static NOINLINE unsigned leaf_hash(unsigned h, unsigned char c)
{
    h ^= c;
    h *= 16777619u;
    return h;
}

static NOINLINE int mix(int a, int b)
{
    demo_local_table[(unsigned)a & 15] += b;
    return (int)leaf_hash((unsigned)a, (unsigned char)b) +
           demo_local_table[(unsigned)b & 15];
}

NOINLINE int checksum(const char *s)
{
    size_t n = strlen(s);
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = scale(leaf_hash(h, (unsigned char)s[i]));
    return mix((int)(h & 0x7fff), (int)n);
}

/* A cold function: gcc puts it in .text.unlikely, and any block that
 * calls it is predicted never executed. */
static __attribute__((cold, noreturn, noinline)) void die_bad_value(int v, int t)
{
    fprintf(stderr, "process_value: bad value %d (table %d)\n", v, t);
    abort();
}

/* Cold path: the block calling die_bad_value() is predicted never executed
 * (the cold call must come first in its block, nothing that may not return
 * before it), so gcc -O2 (-freorder-blocks-and-partition, on by default for
 * x86) moves it to .text.unlikely under the separate LOCAL FUNC symbol
 * `process_value.cold`. */
NOINLINE int process_value(int v)
{
    if (v < 0 || v > 100000)
        die_bad_value(v, demo_global_table[(unsigned)v & 31]);
    int acc = 0;
    for (int i = 0; i < v % 32 + 1; i++)
        acc += demo_global_table[i] * (v - i);
    return acc;
}

/* Three names at one address: strong definition, strong alias, weak alias. */
NOINLINE int demo_impl(int x)
{
    return x * 3 + demo_global_counter;
}
int demo_alias(int x) __attribute__((alias("demo_impl")));
int demo_weak(int x) __attribute__((weak, alias("demo_impl")));

NOINLINE int run_all(int argc, const char *word)
{
    int acc = 0;
    acc += checksum(word);
    acc += process_value(argc * 7);
    acc += demo_weak(argc) + demo_alias(argc);
    zero_size_fn();
    acc += vfunc(argc) + vfunc_old(argc) + vhelper(argc);
    return acc;
}

int main(int argc, char **argv)
{
    int acc = run_all(argc, argc > 1 ? argv[1] : "stacksym");
    demo_global_counter = acc;
    printf("demo: %d\n", acc & 0xff);
    puts("demo: done");
    return 0;
}
