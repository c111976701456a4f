//! aarch64's registers: DWARF numbering, perf's `perf_regs` order and sample mask, the
//! `user_pt_regs` layout ptrace and cores give, and the pointer-authentication mask.

use crate::unwind::regs::{set_bits, Arch, Registers};

/// aarch64 registers by DWARF number: 0–30 `x0`–`x30` (29 the frame pointer, 30 the link
/// register), 31 `sp`; the program counter apart.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct RegsAarch64 {
    values: [u64; 32],
    known: u32,
    pc: u64,
    /// The bits of a return address that hold its pointer-authentication code, as the
    /// kernel states them (`NT_ARM_PAC_MASK`); `None`: every bit above a 48-bit address.
    pac_mask: Option<u64>,
}

impl RegsAarch64 {
    /// DWARF number of the frame pointer `x29`.
    pub const X29: u16 = 29;
    /// DWARF number of the link register `x30`.
    pub const X30: u16 = 30;
    /// DWARF number of `sp`.
    pub const SP_REG: u16 = 31;
    /// perf's mask of every aarch64 user register (`X0` … `X30`, `SP`, `PC`; what
    /// `perf record --call-graph dwarf` samples there).
    pub const PERF_SAMPLE_MASK: u64 = (1 << 33) - 1;

    /// DWARF number of `xN` (0–30), by name: `RegsAarch64::x(19)`; `None` beyond 30.
    pub fn x(n: u16) -> Option<u16> {
        (n <= 30).then_some(n)
    }

    /// Registers with only the program counter and stack pointer known.
    pub fn from_pc_sp(pc: u64, sp: u64) -> RegsAarch64 {
        let mut regs = RegsAarch64 {
            pc,
            ..RegsAarch64::default()
        };
        regs.set_reg(Self::SP_REG, sp);
        regs
    }

    /// Every register from the kernel's `struct user_pt_regs` as 34 words, in its order
    /// (what `PTRACE_GETREGSET NT_PRSTATUS` fills and a core file's `NT_PRSTATUS` holds):
    /// x0–x30, sp, pc, pstate.
    pub fn from_user_regs(words: &[u64; 34]) -> RegsAarch64 {
        let mut regs = RegsAarch64 {
            pc: words[32],
            ..RegsAarch64::default()
        };
        for (reg, &value) in (0u16..).zip(&words[..32]) {
            regs.set_reg(reg, value);
        }
        regs
    }

    /// A register by DWARF number; `None` when unknown ([`Registers::get`] without
    /// importing the trait).
    pub fn reg(&self, reg: u16) -> Option<u64> {
        <Self as Registers>::get(self, reg)
    }

    /// Sets a register by DWARF number ([`Registers::set`] without importing the trait).
    pub fn set_reg(&mut self, reg: u16, value: u64) {
        <Self as Registers>::set(self, reg, value);
    }

    /// Marks a register unknown ([`Registers::forget`] without importing the trait).
    pub fn forget_reg(&mut self, reg: u16) {
        <Self as Registers>::forget(self, reg);
    }

    /// The same registers with `reg` set (for building a set in one expression).
    pub fn with(mut self, reg: u16, value: u64) -> RegsAarch64 {
        self.set_reg(reg, value);
        self
    }

    /// Registers with only the program counter, stack pointer, frame pointer and link
    /// register known.
    pub fn new(pc: u64, sp: u64, fp: u64, lr: u64) -> RegsAarch64 {
        let mut regs = RegsAarch64 {
            pc,
            ..RegsAarch64::default()
        };
        regs.set(Self::SP_REG, sp);
        regs.set(Self::X29, fp);
        regs.set(Self::X30, lr);
        regs
    }

    /// The DWARF number of perf's aarch64 register `perf_reg` (`X0`…`X30` are 0–30, `SP`
    /// 31: the same numbers); `None` for `PC` (32), which has no DWARF number, and beyond.
    pub fn dwarf_of_perf_reg(perf_reg: u32) -> Option<u16> {
        (perf_reg <= 31).then_some(perf_reg as u16)
    }

    /// Registers from a perf sample's `regs_user` (see [`RegsX86_64::from_perf`](crate::unwind::RegsX86_64::from_perf)); perf's
    /// register 32 is the program counter.
    pub fn from_perf(mask: u64, values: &[u64]) -> RegsAarch64 {
        let mut regs = RegsAarch64::default();
        for (bit, &value) in set_bits(mask).zip(values) {
            match bit {
                32 => regs.pc = value,
                _ => {
                    if let Some(reg) = Self::dwarf_of_perf_reg(bit) {
                        regs.set(reg, value);
                    }
                }
            }
        }
        regs
    }

    /// The registers of a core's thread (`NT_PRSTATUS`); `None` for another
    /// architecture's.
    pub fn from_core(regs: &crate::core::CoreRegisters) -> Option<RegsAarch64> {
        let crate::core::CoreRegisters::Aarch64 { regs, sp, pc, .. } = regs else {
            return None;
        };
        let mut out = RegsAarch64::new(*pc, *sp, regs[29], regs[30]);
        for (reg, &value) in (0u16..).zip(regs.iter()) {
            out.set(reg, value);
        }
        Some(out)
    }

    /// The registers of a core's thread with its pointer-authentication mask
    /// (`NT_ARM_PAC_MASK`, when the core has one: the kernel writes it on CPUs with
    /// pointer authentication; qemu-user writes none); `None` for another architecture's.
    pub fn from_core_thread(thread: &crate::core::CoreThread) -> Option<RegsAarch64> {
        let regs = RegsAarch64::from_core(&thread.registers)?;
        Some(match thread.pac_mask {
            Some(mask) => regs.with_pac_mask(mask),
            None => regs,
        })
    }

    /// The same registers, with return addresses stripped of the pointer-authentication
    /// code bits `mask` (the instruction mask of `NT_ARM_PAC_MASK` or
    /// `PTRACE_GETREGSET NT_ARM_PAC_MASK`) and of the top byte (Linux's address tag),
    /// instead of every bit above 48: right also for a 52-bit (or 39-bit) address space.
    pub fn with_pac_mask(mut self, mask: u64) -> RegsAarch64 {
        self.pac_mask = Some(mask);
        self
    }

    /// The pointer-authentication mask given ([`RegsAarch64::with_pac_mask`]).
    pub fn pac_mask(&self) -> Option<u64> {
        self.pac_mask
    }

    /// The link register, if known.
    pub fn lr(&self) -> Option<u64> {
        self.get(Self::X30)
    }
}

impl Registers for RegsAarch64 {
    const ARCH: Arch = Arch::Aarch64;
    const SP: u16 = 31;
    const FP: u16 = 29;
    const RA: u16 = 30;

    fn ip(&self) -> u64 {
        self.pc
    }
    fn set_ip(&mut self, ip: u64) {
        self.pc = ip;
    }
    fn get(&self, reg: u16) -> Option<u64> {
        let i = usize::from(reg);
        (i < 32 && self.known & (1 << i) != 0).then(|| self.values[i])
    }
    fn set(&mut self, reg: u16, value: u64) {
        if let Some(slot) = self.values.get_mut(usize::from(reg)) {
            *slot = value;
            self.known |= 1 << reg;
        }
    }
    fn forget(&mut self, reg: u16) {
        if reg < 32 {
            self.known &= !(1 << reg);
        }
    }
}

impl std::fmt::Debug for RegsAarch64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("RegsAarch64");
        s.field("pc", &format_args!("{:#x}", self.pc));
        for reg in 0..32u16 {
            if let Some(value) = self.get(reg) {
                let name = match reg {
                    31 => "sp".to_string(),
                    _ => format!("x{reg}"),
                };
                s.field(&name, &format_args!("{value:#x}"));
            }
        }
        s.finish()
    }
}
