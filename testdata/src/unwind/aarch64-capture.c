/* aarch64: a program that captures its own registers and stack deep in a call chain, twice
 * (without and with pointer authentication: aarch64-capture-chain.c), for the unwinder's
 * offline test (tests/unwind_aarch64.rs), run under qemu-aarch64. Static, -O2, frame
 * pointers on except where a function turns them off; built by testdata/build-unwind.sh.
 *
 * Writes to argv[1], per capture (little-endian u64 words after the magic):
 *
 *   "A64STACK" | variant (0 plain, 1 pac-ret) | pc sp x29 x30 | n | n return addresses
 *   | stack length | the stack bytes from sp */
#include <stdio.h>

#include "aarch64-capture.h"

extern char **environ;

struct capture captures[2];
uint64_t stack_top;
volatile uint64_t sink;

static int put(FILE *out, uint64_t word) {
    return fwrite(&word, 8, 1, out) == 1 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT\n", argv[0]);
        return 2;
    }
    stack_top = (uint64_t)(uintptr_t)environ;
    sink += chain_fp_a_plain((uint64_t)argc);
    sink += chain_fp_a_pac((uint64_t)argc);
    FILE *out = fopen(argv[1], "wb");
    if (!out)
        return 1;
    int err = 0;
    for (uint64_t v = 0; v < 2; v++) {
        const struct capture *c = &captures[v];
        err |= fwrite("A64STACK", 8, 1, out) != 1;
        err |= put(out, v) | put(out, c->pc) | put(out, c->sp) | put(out, c->x29) |
               put(out, c->x30) | put(out, DEPTH);
        for (int i = 0; i < DEPTH; i++)
            err |= put(out, c->returns[i]);
        err |= put(out, c->stack_len);
        err |= fwrite(c->stack, 1, c->stack_len, out) != c->stack_len;
    }
    err |= fclose(out) != 0;
    return err ? 1 : 0;
}
