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

/// What the unwinder needs of a register set; implemented by [`RegsX86_64`] and
/// [`RegsAarch64`]. Register numbers are DWARF's.
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

/// x86_64 registers by DWARF number: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp,
/// 8–15 r8–r15; the instruction pointer (`rip`, DWARF's return-address column 16) apart.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct RegsX86_64 {
    values: [u64; 16],
    known: u16,
    ip: u64,
}

impl RegsX86_64 {
    /// DWARF number of `rax`.
    pub const RAX: u16 = 0;
    /// DWARF number of `rdx`.
    pub const RDX: u16 = 1;
    /// DWARF number of `rcx`.
    pub const RCX: u16 = 2;
    /// DWARF number of `rbx`.
    pub const RBX: u16 = 3;
    /// DWARF number of `rsi`.
    pub const RSI: u16 = 4;
    /// DWARF number of `rdi`.
    pub const RDI: u16 = 5;
    /// DWARF number of `rbp`.
    pub const RBP: u16 = 6;
    /// DWARF number of `rsp`.
    pub const RSP: u16 = 7;
    /// DWARF number of `r8`.
    pub const R8: u16 = 8;
    /// DWARF number of `r9`.
    pub const R9: u16 = 9;
    /// DWARF number of `r10`.
    pub const R10: u16 = 10;
    /// DWARF number of `r11`.
    pub const R11: u16 = 11;
    /// DWARF number of `r12`.
    pub const R12: u16 = 12;
    /// DWARF number of `r13`.
    pub const R13: u16 = 13;
    /// DWARF number of `r14`.
    pub const R14: u16 = 14;
    /// DWARF number of `r15`.
    pub const R15: u16 = 15;
    /// DWARF number of the return address column (`rip`).
    pub const RIP: u16 = 16;
    /// The register names, by DWARF number.
    pub const NAMES: [&'static str; 16] = [
        "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15",
    ];

    /// Registers with only the instruction and stack pointers known (the frame pointer
    /// unknown: CFI does not need it; a frame without CFI then stops the walk).
    pub fn from_ip_sp(ip: u64, sp: u64) -> RegsX86_64 {
        let mut regs = RegsX86_64 {
            ip,
            ..RegsX86_64::default()
        };
        regs.set_reg(Self::RSP, sp);
        regs
    }

    /// Every register from the kernel's `struct user_regs_struct` as 27 words, in its order
    /// (what `PTRACE_GETREGS` fills and a core file's `NT_PRSTATUS` holds): r15 r14 r13 r12
    /// rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base
    /// ds es fs gs. Given as words so that a core from another machine is read the same way.
    pub fn from_user_regs(words: &[u64; 27]) -> RegsX86_64 {
        // user_regs_struct index → DWARF number.
        const ORDER: [(usize, u16); 16] = [
            (0, 15),
            (1, 14),
            (2, 13),
            (3, 12),
            (4, 6),
            (5, 3),
            (6, 11),
            (7, 10),
            (8, 9),
            (9, 8),
            (10, 0),
            (11, 2),
            (12, 1),
            (13, 4),
            (14, 5),
            (19, 7),
        ];
        let mut regs = RegsX86_64 {
            ip: words[16],
            ..RegsX86_64::default()
        };
        for (index, reg) in ORDER {
            regs.set_reg(reg, words[index]);
        }
        regs
    }

    /// A register by DWARF number (the constants above); `None` when unknown. The same as
    /// [`Registers::get`], without importing the trait.
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
    pub fn with(mut self, reg: u16, value: u64) -> RegsX86_64 {
        self.set_reg(reg, value);
        self
    }
    /// perf's mask of the user registers `perf record --call-graph dwarf` samples on x86_64
    /// (`PERF_REG_X86_AX` … `PERF_REG_X86_SS`, `R8` … `R15`; 0xff0fff).
    pub const PERF_SAMPLE_MASK: u64 = 0xff0fff;

    /// Registers with only the instruction, stack and frame pointers known (what a frame
    /// pointer walker or an eBPF program usually has).
    pub fn new(ip: u64, sp: u64, bp: u64) -> RegsX86_64 {
        let mut regs = RegsX86_64 {
            ip,
            ..RegsX86_64::default()
        };
        regs.set(Self::RSP, sp);
        regs.set(Self::RBP, bp);
        regs
    }

    /// The DWARF number of perf's x86_64 register `perf_reg` (`enum perf_event_x86_regs`),
    /// `Some(16)` for the instruction pointer; `None` for flags and segment registers.
    pub fn dwarf_of_perf_reg(perf_reg: u32) -> Option<u16> {
        // perf: AX BX CX DX SI DI BP SP IP FLAGS CS SS DS ES FS GS R8..R15
        const TO_DWARF: [u16; 8] = [0, 3, 2, 1, 4, 5, 6, 7];
        match perf_reg {
            0..=7 => Some(TO_DWARF[perf_reg as usize]),
            8 => Some(Self::RIP),
            16..=23 => Some(perf_reg as u16 - 8),
            _ => None,
        }
    }

    /// Registers from a perf sample's `regs_user`: `values` hold one register per bit set in
    /// `mask`, in increasing bit order (as `PERF_SAMPLE_REGS_USER` records them). Values
    /// beyond the mask's count are ignored; registers missing from it stay unknown.
    pub fn from_perf(mask: u64, values: &[u64]) -> RegsX86_64 {
        let mut regs = RegsX86_64::default();
        for (bit, &value) in set_bits(mask).zip(values) {
            match Self::dwarf_of_perf_reg(bit) {
                Some(Self::RIP) => regs.ip = value,
                Some(reg) => regs.set(reg, value),
                None => {}
            }
        }
        regs
    }

    /// The registers of a core's thread (`NT_PRSTATUS`'s `user_regs_struct`), all 16 and
    /// `rip`; `None` for another architecture's.
    pub fn from_core(regs: &crate::core::CoreRegisters) -> Option<RegsX86_64> {
        let (values, ip) = regs.x86_64_dwarf()?;
        let mut out = RegsX86_64 {
            ip,
            ..RegsX86_64::default()
        };
        for (reg, value) in (0u16..).zip(values) {
            out.set(reg, value);
        }
        Some(out)
    }
}

impl Registers for RegsX86_64 {
    const ARCH: Arch = Arch::X86_64;
    const SP: u16 = 7;
    const FP: u16 = 6;
    const RA: u16 = 16;

    fn ip(&self) -> u64 {
        self.ip
    }
    fn set_ip(&mut self, ip: u64) {
        self.ip = ip;
    }
    fn get(&self, reg: u16) -> Option<u64> {
        if reg == Self::RIP {
            return Some(self.ip);
        }
        let i = usize::from(reg);
        (i < 16 && self.known & (1 << i) != 0).then(|| self.values[i])
    }
    fn set(&mut self, reg: u16, value: u64) {
        if reg == Self::RIP {
            self.ip = value;
        } else if let Some(slot) = self.values.get_mut(usize::from(reg)) {
            *slot = value;
            self.known |= 1 << reg;
        }
    }
    fn forget(&mut self, reg: u16) {
        if reg < 16 {
            self.known &= !(1 << reg);
        }
    }
}

impl std::fmt::Debug for RegsX86_64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("RegsX86_64");
        s.field("rip", &format_args!("{:#x}", self.ip));
        for (reg, name) in Self::NAMES.iter().enumerate() {
            if let Some(value) = self.get(reg as u16) {
                s.field(name, &format_args!("{value:#x}"));
            }
        }
        s.finish()
    }
}

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

    /// Registers from a perf sample's `regs_user` (see [`RegsX86_64::from_perf`]); perf's
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

/// The set bits of `mask`, lowest first.
fn set_bits(mask: u64) -> impl Iterator<Item = u32> {
    (0..64).filter(move |bit| mask & (1 << bit) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

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
