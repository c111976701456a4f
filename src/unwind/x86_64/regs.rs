//! x86_64's registers: DWARF numbering, perf's `perf_regs` order and sample mask, and the
//! `user_regs_struct` layout ptrace and cores give.

use crate::unwind::regs::{set_bits, Arch, Registers};

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
