/* Shared by aarch64-capture.c and aarch64-capture-chain.c (see aarch64-capture.c). */
#include <stdint.h>

#define MAX_STACK (64 * 1024)
/* Functions from the leaf up to the one main calls. */
#define DEPTH 6

struct capture {
    uint64_t pc, sp, x29, x30;
    /* returns[i]: the return address of the i-th function from the leaf (0: the leaf). */
    uint64_t returns[DEPTH];
    uint64_t stack_len;
    uint64_t stack[MAX_STACK / 8];
};

/* [0]: the chain built without pointer authentication, [1]: with pac-ret. */
extern struct capture captures[2];
/* Where the stack copy ends: the environment block, above every frame. */
extern uint64_t stack_top;
extern volatile uint64_t sink;

uint64_t chain_fp_a_plain(uint64_t x);
uint64_t chain_fp_a_pac(uint64_t x);
