//! x86_64's compiled CFI rule and how it moves the registers one frame up; the frame-pointer
//! step, the signal trampoline (`rt_sigreturn`) and its ucontext, PLT entries' expression, and
//! the Go table's step (see [`crate::unwind::arch`] for what is shared).

use crate::addr::AbsAddr;
use crate::unwind::arch::{
    offset_of, read, restore_or_forget, slot_of, Applied, GoStep, UnwindArch,
};
use crate::unwind::cfi::Row;
use crate::unwind::memory::Memory;
use crate::unwind::regs::Registers;
use crate::unwind::x86_64::RegsX86_64;
use crate::unwind::{Recovery, StopReason, UnwindProblem};
use gimli::{CfaRule, RegisterRule};

/// A compiled x86_64 rule; 8 bytes (asserted in a test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleX86_64 {
    /// CFA = `rsp` + `cfa_offset`; the return address at CFA − 8; `rbp` unchanged
    /// (`bp_offset` 0) or saved at CFA + `bp_offset`; the callee-saved registers of
    /// `saved` restored from the stack (which the fast path leaves unknown).
    CfaSp {
        /// Added to `rsp`.
        cfa_offset: i32,
        /// Where `rbp` is saved, relative to the CFA; 0 when it is not.
        bp_offset: i16,
        /// The other callee-saved registers the row restores ([`SavedX86_64`]).
        saved: SavedX86_64,
    },
    /// CFA = `rbp` + `cfa_offset`, otherwise as `CfaSp`.
    CfaBp {
        /// Added to `rbp`.
        cfa_offset: i32,
        /// Where `rbp` is saved, relative to the CFA; 0 when it is not.
        bp_offset: i16,
        /// The other callee-saved registers the row restores ([`SavedX86_64`]).
        saved: SavedX86_64,
    },
    /// The lazy-binding PLT's expression: CFA = `rsp` + `sp_offset`, plus 8 when
    /// `(rip & 15) >= threshold` (past the entry's `push`).
    Plt {
        /// Added to `rsp`.
        sp_offset: u8,
        /// The offset in a 16-byte entry from which the extra 8 applies.
        threshold: u8,
    },
    /// A signal trampoline whose CFI restores every register from the kernel's ucontext at
    /// `rsp` (glibc's `__restore_rt`: CFA = `[rsp + 160]`, each register at its `gregs`
    /// slot): the same as [`UnwindArch::restore_signal_context`].
    SignalContext,
    /// The return address is undefined: the outermost frame.
    Root,
    /// Evaluate the row in full.
    Full,
}

/// A set of x86_64's callee-saved registers other than `rbp` (rbx, r12, r13, r14, r15, one
/// bit each in that order): the ones a compiled rule's row restores from CFA-relative
/// slots. One byte, so that [`RuleX86_64`] stays 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SavedX86_64(u8);

impl SavedX86_64 {
    /// The registers, by DWARF number, in bit order.
    const REGISTERS: [u16; 5] = [3, 12, 13, 14, 15];

    /// None saved.
    pub const NONE: SavedX86_64 = SavedX86_64(0);

    /// The bit of `reg`, if it is one of the set's registers.
    fn bit(reg: u16) -> Option<u8> {
        let i = Self::REGISTERS.iter().position(|&r| r == reg)?;
        Some(1 << i)
    }

    /// The set of the listed registers (DWARF numbers; others are ignored).
    pub fn of(registers: &[u16]) -> SavedX86_64 {
        SavedX86_64(
            registers
                .iter()
                .filter_map(|&r| Self::bit(r))
                .fold(0, |a, b| a | b),
        )
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Marks the set's registers unknown in `regs`.
    fn forget_in(self, regs: &mut RegsX86_64) {
        for (i, &reg) in Self::REGISTERS.iter().enumerate() {
            if self.0 & (1 << i) != 0 {
                regs.forget(reg);
            }
        }
    }
}

/// The callee-saved registers (other than `rbp`) a row restores from CFA-relative slots;
/// `None` when it has a rule the fast path cannot honour by forgetting: a register other
/// than those, or one of them restored otherwise than from a slot.
fn saved_x86_64(row: &Row<'_>) -> Option<SavedX86_64> {
    let mut saved = SavedX86_64::NONE;
    for (reg, rule) in row.row.registers() {
        let reg = reg.0;
        if matches!(reg, RegsX86_64::RIP | RegsX86_64::RBP | RegsX86_64::RSP) {
            continue;
        }
        match (rule, SavedX86_64::bit(reg)) {
            (RegisterRule::SameValue, _) => {}
            (RegisterRule::Offset(_), Some(bit)) => saved.0 |= bit,
            _ => return None,
        }
    }
    Some(saved)
}

/// Where the kernel's x86_64 ucontext keeps each register, relative to `rsp` at the signal
/// trampoline: `uc_mcontext.gregs` starts 40 bytes in, ordered r8..r15, rdi, rsi, rbp, rbx,
/// rdx, rax, rcx, rsp, rip (as DWARF numbers).
const X86_64_GREGS_OFFSET: u64 = 40;
const X86_64_GREGS_TO_DWARF: [u16; 17] = [8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7, 16];

/// `DW_OP_breg7 (rsp) N` (and nothing else), as N.
fn rsp_plus(expr: &[u8]) -> Option<u64> {
    let (&op, rest) = expr.split_first()?;
    if op != 0x77 {
        return None;
    }
    let mut rest = gimli::EndianSlice::new(rest, gimli::LittleEndian);
    let offset = gimli::Reader::read_sleb128(&mut rest).ok()?;
    rest.is_empty()
        .then_some(offset)
        .and_then(|o| u64::try_from(o).ok())
}

/// Whether a signal trampoline's row restores every register from its ucontext slot, and
/// the CFA from the saved `rsp` (the row glibc's `__restore_rt` has).
fn is_ucontext_row(row: &Row<'_>) -> bool {
    let slot = |i: usize| X86_64_GREGS_OFFSET + 8 * i as u64;
    let cfa_ok = match row.cfa() {
        CfaRule::Expression(expr) => match row.expression(*expr) {
            [body @ .., 0x06] => rsp_plus(body) == Some(slot(15)),
            _ => false,
        },
        CfaRule::RegisterAndOffset { .. } => false,
    };
    cfa_ok
        && X86_64_GREGS_TO_DWARF
            .iter()
            .enumerate()
            .all(|(i, &reg)| match row.register(reg) {
                RegisterRule::Expression(expr) => rsp_plus(row.expression(expr)) == Some(slot(i)),
                _ => false,
            })
}

/// The PLT CFA expression gcc and ld emit for `.plt`: `DW_OP_breg7 (rsp) N; DW_OP_breg16
/// (rip) 0; DW_OP_lit15; DW_OP_and; DW_OP_litT; DW_OP_ge; DW_OP_lit3; DW_OP_shl;
/// DW_OP_plus`, as (N, T).
fn plt_expression(expr: &[u8]) -> Option<(u8, u8)> {
    match *expr {
        [0x77, n, 0x80, 0, 0x3f, 0x1a, lit, 0x2a, 0x33, 0x24, 0x22]
            if n < 0x40 && (0x30..0x40).contains(&lit) =>
        {
            Some((n, lit - 0x30))
        }
        _ => None,
    }
}

impl GoStep for RegsX86_64 {
    const GO_G_REGISTER: Option<u16> = Some(RegsX86_64::R14);

    /// Go on amd64: the return address is at SP + delta (delta: what the function has
    /// pushed below it), the caller's SP just above it. Once the prologue has saved the
    /// caller's frame pointer (at SP + delta - 8) and pointed RBP at it, RBP restores from
    /// that slot; before, RBP still is the caller's.
    fn go_step<M: Memory + ?Sized>(&mut self, delta: i32, memory: &M) -> Result<bool, StopReason> {
        let (Some(sp), Ok(delta)) = (self.sp(), u64::try_from(delta)) else {
            return Ok(false);
        };
        let slot = sp.wrapping_add(delta);
        let ra = read(memory, slot)?;
        if delta >= 8 && self.fp() == Some(slot.wrapping_sub(8)) {
            match memory.read_u64(AbsAddr(slot.wrapping_sub(8))) {
                Some(bp) => self.set(RegsX86_64::RBP, bp),
                None => self.forget(RegsX86_64::RBP),
            }
        }
        self.set(RegsX86_64::RSP, slot.wrapping_add(8));
        self.set_ip(ra);
        Ok(true)
    }
}

impl UnwindArch for RegsX86_64 {
    type Rule = RuleX86_64;

    fn compile(row: &Row<'_>) -> RuleX86_64 {
        if row.signal {
            return if is_ucontext_row(row) {
                RuleX86_64::SignalContext
            } else {
                RuleX86_64::Full
            };
        }
        match row.register(RegsX86_64::RIP) {
            RegisterRule::Undefined => return RuleX86_64::Root,
            RegisterRule::Offset(-8) => {}
            _ => return RuleX86_64::Full,
        }
        let Some(bp_offset) = slot_of(&row.register(RegsX86_64::RBP)) else {
            return RuleX86_64::Full;
        };
        let Some(saved) = saved_x86_64(row) else {
            return RuleX86_64::Full;
        };
        match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => {
                match (register.0, offset_of(*offset)) {
                    (RegsX86_64::RSP, Some(cfa_offset)) => RuleX86_64::CfaSp {
                        cfa_offset,
                        bp_offset,
                        saved,
                    },
                    (RegsX86_64::RBP, Some(cfa_offset)) => RuleX86_64::CfaBp {
                        cfa_offset,
                        bp_offset,
                        saved,
                    },
                    _ => RuleX86_64::Full,
                }
            }
            CfaRule::Expression(expr) => match plt_expression(row.expression(*expr)) {
                Some((sp_offset, threshold)) if bp_offset == 0 && saved.is_empty() => {
                    RuleX86_64::Plt {
                        sp_offset,
                        threshold,
                    }
                }
                _ => RuleX86_64::Full,
            },
        }
    }

    fn restores_others(rule: &RuleX86_64) -> bool {
        match rule {
            RuleX86_64::CfaSp { saved, .. } | RuleX86_64::CfaBp { saved, .. } => !saved.is_empty(),
            _ => false,
        }
    }

    fn apply<M: Memory + ?Sized>(
        &mut self,
        rule: RuleX86_64,
        memory: &M,
    ) -> Result<Applied, StopReason> {
        let unknown = |reg| StopReason::InvalidUnwindInfo {
            addr: AbsAddr(self.ip()),
            what: UnwindProblem::UnknownRegister(reg),
        };
        let (cfa, bp_offset, saved) = match rule {
            RuleX86_64::CfaSp {
                cfa_offset,
                bp_offset,
                saved,
            } => {
                let sp = self.sp().ok_or_else(|| unknown(RegsX86_64::RSP))?;
                (sp.wrapping_add(cfa_offset as i64 as u64), bp_offset, saved)
            }
            RuleX86_64::CfaBp {
                cfa_offset,
                bp_offset,
                saved,
            } => {
                let bp = self.fp().ok_or_else(|| unknown(RegsX86_64::RBP))?;
                (bp.wrapping_add(cfa_offset as i64 as u64), bp_offset, saved)
            }
            RuleX86_64::Plt {
                sp_offset,
                threshold,
            } => {
                let sp = self.sp().ok_or_else(|| unknown(RegsX86_64::RSP))?;
                let extra = if self.ip() & 15 >= u64::from(threshold) {
                    8
                } else {
                    0
                };
                (
                    sp.wrapping_add(u64::from(sp_offset) + extra),
                    0,
                    SavedX86_64::NONE,
                )
            }
            RuleX86_64::SignalContext => {
                self.restore_signal_context(memory)?;
                return Ok(Applied::Caller {
                    recovery: Recovery::Cfi,
                    signal: true,
                });
            }
            RuleX86_64::Root => return Ok(Applied::Root),
            RuleX86_64::Full => return Ok(Applied::Full),
        };
        let ra = read(memory, cfa.wrapping_sub(8))?;
        if bp_offset != 0 {
            restore_or_forget(self, RegsX86_64::RBP, memory, cfa, bp_offset);
        }
        // Not restored here (the slots are not in the compiled rule): unknown rather than
        // the callee's values; a frame above that needs one has its walk redone in full.
        saved.forget_in(self);
        self.set(RegsX86_64::RSP, cfa);
        self.set_ip(ra);
        Ok(Applied::Caller {
            recovery: Recovery::Cfi,
            signal: false,
        })
    }

    fn frame_pointer_step<M: Memory + ?Sized>(&mut self, memory: &M) -> Result<(), StopReason> {
        let bp = self.fp().ok_or(StopReason::NoFramePointer)?;
        let sp = self.sp().unwrap_or(0);
        if bp == 0 {
            return Err(StopReason::Root);
        }
        if bp < sp || bp % 8 != 0 {
            return Err(StopReason::NoFramePointer);
        }
        let ra = read(memory, bp.wrapping_add(8))?;
        let caller_bp = read(memory, bp)?;
        self.set(RegsX86_64::RBP, caller_bp);
        self.set(RegsX86_64::RSP, bp.wrapping_add(16));
        self.set_ip(ra);
        Ok(())
    }

    fn is_sigreturn(code: &[u8]) -> bool {
        // mov $15, %rax (rt_sigreturn); syscall
        code.starts_with(&[0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05])
    }

    fn restore_signal_context<M: Memory + ?Sized>(&mut self, memory: &M) -> Result<(), StopReason> {
        // At the trampoline `rsp` points at the ucontext (the handler's `ret` popped
        // `pretcode`).
        let sp = self.sp().ok_or(StopReason::InvalidUnwindInfo {
            addr: AbsAddr(self.ip()),
            what: UnwindProblem::UnknownRegister(RegsX86_64::RSP),
        })?;
        let gregs = sp.wrapping_add(X86_64_GREGS_OFFSET);
        let mut restored = self.clone();
        for (i, &reg) in X86_64_GREGS_TO_DWARF.iter().enumerate() {
            let value = read(memory, gregs.wrapping_add(8 * i as u64))?;
            restored.set(reg, value);
        }
        *self = restored;
        Ok(())
    }
}
