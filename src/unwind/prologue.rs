//! The stack height in the short prologue or epilogue of x86_64 code without CFI: glibc's
//! `_init` and `_fini` (crti.o's `sub $8, %rsp` ... `add $8, %rsp; ret`, no FDE in any
//! distribution's build), hand-written entry points. The unwinder asks here before it falls
//! back to the frame pointer, which in such code still belongs to the caller and so skips
//! it (tests/perf_system_wide.rs caught it at libgmp's and libzstd's `_fini`, called by
//! the loader's `_dl_fini`).
//!
//! Exact or nothing: the bytes from the code's start to the address are decoded
//! instruction by instruction, and only a small set is known (below); anything else, an
//! address inside an instruction, or more than [`MAX_PROLOGUE`] bytes, gives `None`.

/// How far from the code's start an address is decoded.
pub(crate) const MAX_PROLOGUE: usize = 64;

/// How many bytes the code from `code[0]` has pushed below its caller's stack pointer (the
/// return address then at `rsp + height`) when it reaches `code[offset]`, by straight-line
/// decoding; `None` where an instruction on the way is not one this knows, or `offset`
/// falls inside one, or it is past [`MAX_PROLOGUE`] or a `ret`.
///
/// Known: `endbr64`; `push`/`pop` of a register; `sub`/`add` of an immediate to `%rsp`;
/// `mov %rsp, %rbp`; `mov disp32(%rip), %rax`; `test %rax, %rax`; `je`/`jne` (short);
/// `call rel32` and `call *%rax` (the callee returns: the height is unchanged); `nop`.
/// A conditional jump forward is decoded through: in the code this is for (`_init`'s
/// `je` over `call *%rax`) both paths reach the same height.
pub(crate) fn x86_64_stack_height(code: &[u8], offset: usize) -> Option<u32> {
    if offset > MAX_PROLOGUE || offset > code.len() {
        return None;
    }
    let (mut at, mut height) = (0usize, 0i64);
    while at < offset {
        let rest = code.get(at..)?;
        let (len, change): (usize, i64) = match *rest {
            [0xf3, 0x0f, 0x1e, 0xfa, ..] => (4, 0), // endbr64
            [0x90, ..] => (1, 0),                   // nop
            // push/pop of a register (not `pop %rsp`, which loads it).
            [0x50..=0x57, ..] => (1, 8),
            [0x41, 0x50..=0x57, ..] => (2, 8),
            [0x58..=0x5b | 0x5d..=0x5f, ..] => (1, -8),
            [0x41, 0x58..=0x5f, ..] => (2, -8),
            [0x48, 0x83, 0xec, imm, ..] => (4, i64::from(imm as i8)), // sub $imm8, %rsp
            [0x48, 0x83, 0xc4, imm, ..] => (4, -i64::from(imm as i8)), // add $imm8, %rsp
            [0x48, 0x81, 0xec, a, b, c, d, ..] => (7, i64::from(i32::from_le_bytes([a, b, c, d]))),
            [0x48, 0x81, 0xc4, a, b, c, d, ..] => (7, -i64::from(i32::from_le_bytes([a, b, c, d]))),
            [0x48, 0x89, 0xe5, ..] => (3, 0), // mov %rsp, %rbp
            [0x48, 0x8b, 0x05, _, _, _, _, ..] => (7, 0), // mov disp32(%rip), %rax
            [0x48, 0x85, 0xc0, ..] => (3, 0), // test %rax, %rax
            [0x74 | 0x75, _, ..] => (2, 0),   // je/jne rel8
            [0xe8, _, _, _, _, ..] => (5, 0), // call rel32
            [0xff, 0xd0, ..] => (2, 0),       // call *%rax
            _ => return None,
        };
        at += len;
        height += change;
        if height < 0 {
            return None;
        }
    }
    (at == offset).then(|| u32::try_from(height).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// glibc's `_fini` of a library (crti.o), as libgmp and libzstd have it.
    const FINI: [u8; 9] = [0x48, 0x83, 0xec, 0x08, 0x48, 0x83, 0xc4, 0x08, 0xc3];
    /// glibc's `_init` with CET: endbr64; sub $8,%rsp; mov disp(%rip),%rax; test; je +2;
    /// call *%rax; add $8,%rsp; ret.
    const INIT: [u8; 28] = [
        0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0x48, 0x8b, 0x05, 0x11, 0x22, 0x33, 0x00,
        0x48, 0x85, 0xc0, 0x74, 0x02, 0xff, 0xd0, 0x48, 0x83, 0xc4, 0x08, 0xc3, 0x00,
    ];

    #[test]
    fn heights_along_fini_and_init() {
        let fini: Vec<_> = (0..=9).map(|at| x86_64_stack_height(&FINI, at)).collect();
        assert_eq!(
            fini,
            [
                Some(0),
                None,
                None,
                None,
                Some(8),
                None,
                None,
                None,
                Some(0),
                None // past the ret
            ]
        );
        let init: Vec<_> = [0, 4, 8, 15, 18, 20, 22, 26]
            .iter()
            .map(|&at| x86_64_stack_height(&INIT, at))
            .collect();
        assert_eq!(
            init,
            [
                Some(0),
                Some(0),
                Some(8),
                Some(8),
                Some(8),
                Some(8),
                Some(8),
                Some(0)
            ]
        );
    }

    #[test]
    fn unknown_code_and_hostile_bytes_give_nothing() {
        // push %rbp; mov %rsp,%rbp; then an instruction not in the set (mov %rdi,%rax).
        let code = [0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x5d, 0xc3];
        assert_eq!(x86_64_stack_height(&code, 1), Some(8));
        assert_eq!(x86_64_stack_height(&code, 4), Some(8));
        assert_eq!(x86_64_stack_height(&code, 8), None);
        // More popped than pushed; truncated instructions; an offset past the bytes.
        assert_eq!(x86_64_stack_height(&[0x5d, 0x5d], 1), None);
        assert_eq!(x86_64_stack_height(&[0x48, 0x83], 2), None);
        assert_eq!(x86_64_stack_height(&[0x90], 5), None);
        assert_eq!(x86_64_stack_height(&[0x90; 100], 65), None);
    }
}
