//! Registers of one thread at one point, per architecture: x86_64 and aarch64, indexed by
//! their DWARF register numbers (what CFI names), with perf's `perf_regs` numbering and
//! sample mask (`sample_regs_user`) to fill them from a perf sample.
//!
//! A register may be unknown (not sampled, or not recoverable in a caller's frame): each type
//! keeps a bit per register, and `get` answers `None` for an unknown one.

/// An architecture the unwinder knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// x86_64 (AMD64), `e_machine` 62.
    X86_64,
    /// aarch64 (ARM64), `e_machine` 183.
    Aarch64,
}

impl Arch {
    /// The architecture of ELF files with this `e_machine`, if the unwinder knows it.
    pub fn of_elf_machine(machine: u16) -> Option<Arch> {
        match machine {
            62 => Some(Arch::X86_64),
            183 => Some(Arch::Aarch64),
            _ => None,
        }
    }
}

/// What the unwinder needs of a register set; implemented by
/// [`RegsX86_64`](crate::unwind::RegsX86_64) and [`RegsAarch64`](crate::unwind::RegsAarch64). Register numbers are DWARF's.
pub trait Registers: Clone + std::fmt::Debug + Send + Sync {
    /// The architecture.
    const ARCH: Arch;
    /// The DWARF number of the stack pointer.
    const SP: u16;
    /// The DWARF number of the frame pointer (`rbp`, `x29`).
    const FP: u16;
    /// The DWARF column CFI uses for the return address (`rip`'s 16, `x30`).
    const RA: u16;
    /// The instruction pointer.
    fn ip(&self) -> u64;
    /// Sets the instruction pointer.
    fn set_ip(&mut self, ip: u64);
    /// A register by DWARF number; `None` when unknown or out of range.
    fn get(&self, reg: u16) -> Option<u64>;
    /// Sets a register by DWARF number (ignored when out of range).
    fn set(&mut self, reg: u16, value: u64);
    /// Marks a register unknown.
    fn forget(&mut self, reg: u16);
    /// The stack pointer, if known.
    fn sp(&self) -> Option<u64> {
        self.get(Self::SP)
    }
    /// The frame pointer, if known.
    fn fp(&self) -> Option<u64> {
        self.get(Self::FP)
    }
}

/// The set bits of `mask`, lowest first.
pub(super) fn set_bits(mask: u64) -> impl Iterator<Item = u32> {
    (0..64).filter(move |bit| mask & (1 << bit) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unwind::{RegsAarch64, RegsX86_64};

    #[test]
    fn x86_64_perf_registers_land_on_their_dwarf_numbers() {
        // perf's order for mask 0xff0fff: AX BX CX DX SI DI BP SP IP FLAGS CS SS R8..R15.
        let values: Vec<u64> = (0..20).map(|i| 0x100 + i).collect();
        let regs = RegsX86_64::from_perf(RegsX86_64::PERF_SAMPLE_MASK, &values);
        assert_eq!(regs.get(0), Some(0x100), "rax");
        assert_eq!(regs.get(3), Some(0x101), "rbx");
        assert_eq!(regs.get(2), Some(0x102), "rcx");
        assert_eq!(regs.get(1), Some(0x103), "rdx");
        assert_eq!(regs.fp(), Some(0x106));
        assert_eq!(regs.sp(), Some(0x107));
        assert_eq!(regs.ip(), 0x108);
        assert_eq!(regs.get(8), Some(0x10c), "r8 follows FLAGS CS SS");
        assert_eq!(regs.get(15), Some(0x113), "r15");
    }

    #[test]
    fn user_regs_struct_lands_on_dwarf_numbers() {
        let words: [u64; 27] = std::array::from_fn(|i| 0x100 + i as u64);
        let regs = RegsX86_64::from_user_regs(&words);
        assert_eq!(regs.reg(RegsX86_64::R15), Some(0x100));
        assert_eq!(regs.reg(RegsX86_64::RBP), Some(0x104));
        assert_eq!(regs.reg(RegsX86_64::RBX), Some(0x105));
        assert_eq!(regs.reg(RegsX86_64::RAX), Some(0x10a));
        assert_eq!(regs.reg(RegsX86_64::RCX), Some(0x10b));
        assert_eq!(regs.reg(RegsX86_64::RDX), Some(0x10c));
        assert_eq!(regs.reg(RegsX86_64::RDI), Some(0x10e));
        assert_eq!(regs.ip(), 0x110, "rip");
        assert_eq!(regs.sp(), Some(0x113), "rsp");
        let mut regs = RegsX86_64::from_ip_sp(1, 2).with(RegsX86_64::R12, 3);
        assert_eq!((regs.fp(), regs.reg(RegsX86_64::R12)), (None, Some(3)));
        regs.forget_reg(RegsX86_64::R12);
        assert_eq!(regs.reg(RegsX86_64::R12), None);

        let words: [u64; 34] = std::array::from_fn(|i| 0x200 + i as u64);
        let regs = RegsAarch64::from_user_regs(&words);
        assert_eq!(regs.reg(RegsAarch64::x(19).unwrap()), Some(0x213));
        assert_eq!(
            (regs.fp(), regs.lr(), regs.sp()),
            (Some(0x21d), Some(0x21e), Some(0x21f))
        );
        assert_eq!(regs.ip(), 0x220);
    }

    #[test]
    fn aarch64_perf_registers_and_short_sample() {
        let values: Vec<u64> = (0..33).map(|i| 0x1000 + i).collect();
        let regs = RegsAarch64::from_perf(RegsAarch64::PERF_SAMPLE_MASK, &values);
        assert_eq!(regs.fp(), Some(0x1000 + 29));
        assert_eq!(regs.lr(), Some(0x1000 + 30));
        assert_eq!(regs.sp(), Some(0x1000 + 31));
        assert_eq!(regs.ip(), 0x1000 + 32);
        // A truncated sample leaves the rest unknown instead of failing.
        let short = RegsAarch64::from_perf(RegsAarch64::PERF_SAMPLE_MASK, &values[..3]);
        assert_eq!(short.get(2), Some(0x1002));
        assert_eq!(short.sp(), None);
        assert_eq!(short.get(1000), None);
    }
}
