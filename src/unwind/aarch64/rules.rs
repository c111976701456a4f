//! aarch64's compiled CFI rule and how it moves the registers one frame up (the link
//! register, pointer authentication); the frame-pointer step, the signal trampoline and its
//! ucontext, and the Go table's step (see [`crate::unwind::arch`] for what is shared).

use crate::addr::AbsAddr;
use crate::unwind::aarch64::RegsAarch64;
use crate::unwind::arch::{
    offset_of, read, restore_or_forget, slot_of, Applied, GoStep, UnwindArch,
};
use crate::unwind::cfi::Row;
use crate::unwind::memory::Memory;
use crate::unwind::regs::Registers;
use crate::unwind::{Recovery, StopReason, UnwindProblem};
use gimli::{CfaRule, RegisterRule};

impl GoStep for RegsAarch64 {
    /// Go on arm64 calls `runtime.morestack_noctxt` from a function's prologue, before the
    /// function has a frame, after moving its own return address into R3 (`MOVD R30, R3;
    /// BL runtime.morestack_noctxt`): until morestack saves them and leaves for g0, the link
    /// register holds the return into the function and R3 the function's return address,
    /// which its SP delta of 0 expects in the link register.
    fn morestack_step(&mut self) -> bool {
        let (Some(into_caller), Some(callers_return)) = (self.lr(), self.get(3)) else {
            return false;
        };
        self.set_ip(into_caller);
        self.set(RegsAarch64::X30, callers_return);
        true
    }

    /// Go on arm64: a function with a frame stores the return address at its SP + 0 with
    /// the instruction that moves SP down by the frame's size (`MOVD.W R30, -size(RSP)`, or
    /// `STP` then `MOVD R20, RSP` for large frames: the SP delta changes only once it is
    /// stored), then the caller's frame pointer just below, at SP − 8, and points R29 at
    /// it. Before that (delta 0), and in a function without a frame, the return address is
    /// still in the link register. The caller's SP is SP + delta; its link register is not
    /// known (the caller has a frame and keeps its own return address in it).
    fn go_step<M: Memory + ?Sized>(&mut self, delta: i32, memory: &M) -> Result<bool, StopReason> {
        let (Some(sp), Ok(delta)) = (self.sp(), u64::try_from(delta)) else {
            return Ok(false);
        };
        let ra = if delta == 0 {
            match self.lr() {
                Some(lr) => lr,
                None => return Ok(false),
            }
        } else {
            let ra = read(memory, sp)?;
            let fp_slot = sp.wrapping_sub(8);
            if self.fp() == Some(fp_slot) {
                match memory.read_u64(AbsAddr(fp_slot)) {
                    Some(fp) => self.set(RegsAarch64::X29, fp),
                    None => self.forget(RegsAarch64::X29),
                }
            }
            ra
        };
        self.forget(RegsAarch64::X30);
        self.set(RegsAarch64::SP_REG, sp.wrapping_add(delta));
        self.set_ip(ra);
        Ok(true)
    }
}

/// A compiled aarch64 rule; 12 bytes (asserted in a test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleAarch64 {
    /// CFA = (`x29` if `cfa_from_fp`, else `sp`) + `cfa_offset`; `x29` and `x30` unchanged
    /// (offset 0) or saved at CFA + their offset. The return address is the caller's `x30`
    /// (the link register itself when it was not saved: a leaf), stripped of a pointer
    /// authentication code when `ra_signed` (`DW_CFA_AARCH64_negate_ra_state`).
    Cfa {
        /// The CFA is relative to `x29` (else `sp`).
        cfa_from_fp: bool,
        /// The return address is signed.
        ra_signed: bool,
        /// Added to the base register.
        cfa_offset: i32,
        /// Where `x29` is saved, relative to the CFA; 0 when it is not.
        fp_offset: i16,
        /// Where `x30` is saved, relative to the CFA; 0 when it is not.
        lr_offset: i16,
        /// The row restores other callee-saved registers (x19–x28) from the stack, which
        /// the fast path leaves unknown.
        saves_others: bool,
    },
    /// The return address is undefined: the outermost frame.
    Root,
    /// Evaluate the row in full.
    Full,
}

/// User-space addresses on aarch64 have at most 48 bits (the kernel's default VA size);
/// the pointer authentication code sits above them.
const AARCH64_ADDR_MASK: u64 = (1 << 48) - 1;
/// The top byte of an aarch64 address (bits 56–63).
const AARCH64_TOP_BYTE: u64 = 0xff << 56;

/// aarch64's callee-saved registers other than the frame pointer and the link register.
const AARCH64_CALLEE_SAVED: [u16; 10] = [19, 20, 21, 22, 23, 24, 25, 26, 27, 28];

impl UnwindArch for RegsAarch64 {
    type Rule = RuleAarch64;

    fn restores_others(rule: &RuleAarch64) -> bool {
        matches!(
            rule,
            RuleAarch64::Cfa {
                saves_others: true,
                ..
            }
        )
    }

    fn compile(row: &Row<'_>) -> RuleAarch64 {
        if row.signal {
            return RuleAarch64::Full;
        }
        let ra_signed = match row.register(gimli::AArch64::RA_SIGN_STATE.0) {
            RegisterRule::Constant(state) => state & 1 == 1,
            _ => false,
        };
        let lr_rule = row.register(RegsAarch64::X30);
        if lr_rule == RegisterRule::Undefined {
            return RuleAarch64::Root;
        }
        let (Some(fp_offset), Some(lr_offset)) =
            (slot_of(&row.register(RegsAarch64::X29)), slot_of(&lr_rule))
        else {
            return RuleAarch64::Full;
        };
        let mut saves_others = false;
        for (reg, rule) in row.row.registers() {
            if AARCH64_CALLEE_SAVED.contains(&reg.0) {
                match rule {
                    RegisterRule::SameValue => {}
                    RegisterRule::Offset(_) => saves_others = true,
                    _ => return RuleAarch64::Full,
                }
            }
        }
        match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => {
                let cfa_from_fp = match register.0 {
                    RegsAarch64::SP_REG => false,
                    RegsAarch64::X29 => true,
                    _ => return RuleAarch64::Full,
                };
                match offset_of(*offset) {
                    Some(cfa_offset) => RuleAarch64::Cfa {
                        cfa_from_fp,
                        ra_signed,
                        cfa_offset,
                        fp_offset,
                        lr_offset,
                        saves_others,
                    },
                    None => RuleAarch64::Full,
                }
            }
            CfaRule::Expression(_) => RuleAarch64::Full,
        }
    }

    fn apply<M: Memory + ?Sized>(
        &mut self,
        rule: RuleAarch64,
        memory: &M,
    ) -> Result<Applied, StopReason> {
        let RuleAarch64::Cfa {
            cfa_from_fp,
            ra_signed: _,
            cfa_offset,
            fp_offset,
            lr_offset,
            saves_others,
        } = rule
        else {
            return Ok(match rule {
                RuleAarch64::Root => Applied::Root,
                _ => Applied::Full,
            });
        };
        let base_reg = if cfa_from_fp {
            RegsAarch64::X29
        } else {
            RegsAarch64::SP_REG
        };
        let base = self.get(base_reg).ok_or(StopReason::InvalidUnwindInfo {
            addr: AbsAddr(self.ip()),
            what: UnwindProblem::UnknownRegister(base_reg),
        })?;
        let cfa = base.wrapping_add(cfa_offset as i64 as u64);
        let (lr, recovery) = if lr_offset != 0 {
            let lr = read(memory, cfa.wrapping_add(lr_offset as i64 as u64))?;
            (lr, Recovery::Cfi)
        } else {
            let lr = self.lr().ok_or(StopReason::InvalidUnwindInfo {
                addr: AbsAddr(self.ip()),
                what: UnwindProblem::UnknownRegister(RegsAarch64::X30),
            })?;
            (lr, Recovery::LinkRegister)
        };
        if fp_offset != 0 {
            restore_or_forget(self, RegsAarch64::X29, memory, cfa, fp_offset);
        }
        if saves_others {
            // As on x86_64: unknown rather than the callee's values.
            for reg in AARCH64_CALLEE_SAVED {
                self.forget(reg);
            }
        }
        // The pointer authentication code is stripped from every return address (signed
        // or not, the bits above the address are never part of it).
        let ra = self.strip_return_address(lr);
        self.set(RegsAarch64::X30, ra);
        self.set(RegsAarch64::SP_REG, cfa);
        self.set_ip(ra);
        Ok(Applied::Caller {
            recovery,
            signal: false,
        })
    }

    fn frame_pointer_step<M: Memory + ?Sized>(&mut self, memory: &M) -> Result<(), StopReason> {
        // A frame record: [x29] = the caller's x29, [x29 + 8] = the return address.
        let fp = self.fp().ok_or(StopReason::NoFramePointer)?;
        let sp = self.sp().unwrap_or(0);
        if fp == 0 {
            return Err(StopReason::Root);
        }
        if fp < sp || fp % 8 != 0 {
            return Err(StopReason::NoFramePointer);
        }
        let ra = self.strip_return_address(read(memory, fp.wrapping_add(8))?);
        let caller_fp = read(memory, fp)?;
        self.set(RegsAarch64::X29, caller_fp);
        self.set(RegsAarch64::X30, ra);
        self.set(RegsAarch64::SP_REG, fp.wrapping_add(16));
        self.set_ip(ra);
        Ok(())
    }

    fn is_sigreturn(code: &[u8]) -> bool {
        // mov x8, #139 (rt_sigreturn); svc #0
        code.starts_with(&[0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4])
    }

    fn restore_signal_context<M: Memory + ?Sized>(&mut self, memory: &M) -> Result<(), StopReason> {
        // At the trampoline `sp` points at `struct rt_sigframe { siginfo (128 bytes);
        // ucontext }`; the ucontext's `uc_mcontext` (a `struct sigcontext`: fault_address,
        // regs[31], sp, pc) is 176 bytes in.
        let sp = self.sp().ok_or(StopReason::InvalidUnwindInfo {
            addr: AbsAddr(self.ip()),
            what: UnwindProblem::UnknownRegister(RegsAarch64::SP_REG),
        })?;
        let regs = sp.wrapping_add(128 + 176 + 8);
        let mut restored = self.clone();
        for reg in 0..32u16 {
            let value = read(memory, regs.wrapping_add(8 * u64::from(reg)))?;
            restored.set(reg, value);
        }
        let pc = read(memory, regs.wrapping_add(8 * 32))?;
        restored.set_ip(pc);
        *self = restored;
        Ok(())
    }

    fn strip_return_address(&self, addr: u64) -> u64 {
        match self.pac_mask() {
            // The code bits, and the top byte: a tag under Linux's top-byte-ignore, never
            // part of a user address (bit 55 selects the kernel's half).
            Some(mask) => addr & !mask & !AARCH64_TOP_BYTE,
            None => addr & AARCH64_ADDR_MASK,
        }
    }
}
