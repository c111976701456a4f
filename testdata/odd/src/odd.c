/* Test source for testdata/build-odd.sh: functions, assembler labels, and a
 * symbol in a section that is not loaded. See build-odd.sh. */

/* A link warning as glibc writes them (libc's __evoke_link_warning_sigstack):
 * an object in .gnu.warning.NAME, a section without SHF_ALLOC, at offset 0. */
__asm__(".section .gnu.warning.odd_fn\n\t.previous");
static const char __evoke_link_warning_odd_fn[]
    __attribute__((used, section(".gnu.warning.odd_fn\n#APP\n\t#"))) =
        "odd_fn is odd";

int odd_counter;

__attribute__((noinline)) int odd_fn(int x)
{
    odd_counter += x;
    return odd_counter * 3;
}

__attribute__((noinline)) int odd_other(int x)
{
    return odd_fn(x + 1) + 7;
}

/* Hand-written code: NOTYPE labels, like ld.so's _start and _dl_start_user.
 * odd_entry and odd_entry_user are labels of their own; odd_sized is a sized
 * function with a label (odd_inner) inside it, which must not split it. */
__asm__(
    ".text\n"
    ".globl odd_entry\n"
    ".p2align 4\n"
    "odd_entry:\n"
    "  nop\n nop\n nop\n nop\n"
    "odd_entry_user:\n"
    "  nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n"
    "  ret\n"
    ".p2align 4\n"
    ".globl odd_sized\n"
    ".type odd_sized, @function\n"
    "odd_sized:\n"
    "  nop\n nop\n nop\n nop\n"
    "odd_inner:\n"
    "  nop\n nop\n nop\n nop\n"
    "  ret\n"
    ".size odd_sized, .-odd_sized\n");
