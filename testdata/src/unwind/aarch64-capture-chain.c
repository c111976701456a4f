/* The call chain of aarch64-capture.c, compiled twice into the one program:
 * -DVARIANT=plain -DINDEX=0, and -DVARIANT=pac -DINDEX=1 -mbranch-protection=pac-ret (every
 * function that saves the link register signs it: paciasp, DW_CFA_AARCH64_negate_ra_state).
 *
 *   chain_fp_a -> chain_nofp_b -> chain_vla_c -> chain_nofp_d -> chain_fp_e -> capture_leaf
 *
 * (each name suffixed _plain or _pac). chain_fp_* keep a frame record (x29), chain_nofp_*
 * have none (-fomit-frame-pointer for that function), chain_vla_c allocates a VLA (its CFA
 * follows x29), and capture_leaf is a leaf that saves nothing: its return address is only in
 * the link register. Each records its return address (__builtin_return_address, the
 * authentication code stripped); capture_leaf reads pc, sp, x29 and x30 and copies the stack
 * from sp up to stack_top with plain loads, calling nothing. The functions are global so
 * that gcc compiles each as written (no constant propagated into it). */
#include "aarch64-capture.h"

#define NOINLINE __attribute__((noinline, noclone))
#define WITH_FP __attribute__((optimize("no-omit-frame-pointer")))
#define WITHOUT_FP __attribute__((optimize("omit-frame-pointer")))
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define F(name) CAT(name, VARIANT)

#define ADDR_MASK ((1ULL << 48) - 1)

void F(capture_leaf)(void);
uint64_t F(chain_fp_e)(uint64_t x);
uint64_t F(chain_nofp_d)(uint64_t x);
uint64_t F(chain_vla_c)(uint64_t x);
uint64_t F(chain_nofp_b)(uint64_t x);

static inline uint64_t strip(void *addr) {
    return (uint64_t)__builtin_extract_return_addr(addr) & ADDR_MASK;
}

NOINLINE void F(capture_leaf)(void) {
    struct capture *c = &captures[INDEX];
    uint64_t pc, sp, fp, lr;
    __asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29\n\tmov %3, x30"
                     : "=r"(pc), "=r"(sp), "=r"(fp), "=r"(lr));
    c->pc = pc;
    c->sp = sp;
    c->x29 = fp;
    c->x30 = lr;
    c->returns[0] = lr & ADDR_MASK;
    uint64_t n = (stack_top - sp) / 8;
    if (n > MAX_STACK / 8)
        n = MAX_STACK / 8;
    const volatile uint64_t *from = (const volatile uint64_t *)sp;
    for (uint64_t i = 0; i < n; i++)
        c->stack[i] = from[i];
    c->stack_len = n * 8;
}

WITH_FP NOINLINE uint64_t F(chain_fp_e)(uint64_t x) {
    captures[INDEX].returns[1] = strip(__builtin_return_address(0));
    F(capture_leaf)();
    sink += x;
    return x + 1;
}

WITHOUT_FP NOINLINE uint64_t F(chain_nofp_d)(uint64_t x) {
    captures[INDEX].returns[2] = strip(__builtin_return_address(0));
    uint64_t r = F(chain_fp_e)(x * 3);
    sink += r;
    return r + 2;
}

WITH_FP NOINLINE uint64_t F(chain_vla_c)(uint64_t x) {
    captures[INDEX].returns[3] = strip(__builtin_return_address(0));
    volatile char buf[16 + (sink & 7) + (x & 7)];
    buf[0] = (char)x;
    uint64_t r = F(chain_nofp_d)(x + buf[0]);
    sink += r + buf[0];
    return r + 3;
}

WITHOUT_FP NOINLINE uint64_t F(chain_nofp_b)(uint64_t x) {
    captures[INDEX].returns[4] = strip(__builtin_return_address(0));
    uint64_t r = F(chain_vla_c)(x ^ 5);
    sink += r;
    return r + 4;
}

WITH_FP NOINLINE uint64_t F(chain_fp_a)(uint64_t x) {
    captures[INDEX].returns[5] = strip(__builtin_return_address(0));
    uint64_t r = F(chain_nofp_b)(x + 7);
    sink += r;
    return r + 5;
}
