//! Per architecture: the compiled rule type (small and `Copy`, what the unwind cache holds),
//! how a CFI row compiles into it, how a rule moves the registers one frame up, the frame
//! pointer step, and signal frames found by their code (`rt_sigreturn` trampolines without
//! CFI) with the registers the kernel saved in the ucontext.
//!
//! Compiled rules cover what almost every row says: the CFA as the stack or frame pointer
//! plus an offset, the return address and the frame pointer (and on aarch64 the link
//! register) saved at CFA-relative slots or left alone, and x86_64's PLT expression. Any
//! other row (expressions, registers saved in registers, a signal trampoline's row that
//! restores every register) compiles to `Full`: the row is then found again and evaluated
//! in full, every register rule applied ([`apply_row`]). The fast path restores only the
//! stack pointer, the frame pointer and the return address (and the link register); other
//! registers keep their values, as a callee that saved nothing leaves them. A compiled rule
//! also says which other callee-saved registers (x86_64's rbx, r12–r15; aarch64's x19–x28,
//! all or none) its row restores from the stack: the fast path marks those unknown instead of keeping the
//! callee's values, and [`UnwindArch::restores_others`] tells the unwinder which rules to
//! evaluate in full when a later frame needs one of them (glibc's lazy-binding trampoline
//! `_dl_runtime_resolve_xsavec`, whose CFA is `rbx + 32`, above `_dl_fixup`, which saved
//! `rbx`).

use super::cfi::Row;
use super::expr::{evaluate, ExprError};
use super::memory::Memory;
use super::regs::{Registers, RegsAarch64, RegsX86_64};
use super::{Recovery, StopReason};
use crate::addr::AbsAddr;
use gimli::{CfaRule, RegisterRule};

/// What applying a rule did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The registers are now the caller's; the frame was recovered so, and its code was a
    /// signal trampoline (`signal`) or not.
    Caller {
        /// How the caller's address was found.
        recovery: Recovery,
        /// The frame just left was a signal trampoline: the caller's address is where the
        /// signal interrupted it, not a return address.
        signal: bool,
    },
    /// The CFI says there is no caller (the return address is undefined).
    Root,
    /// The rule is `Full`: evaluate the row itself.
    Full,
}

/// An architecture the unwinder walks: its registers and its compiled rule.
///
/// Implemented for [`RegsX86_64`] and [`RegsAarch64`] only: its methods take types of this
/// module that are not exported (a CFI row, `Applied`), so an embedder names it as a bound
/// (`Unwinder::unwind::<A>`) and never implements it. Steps by other tables than CFI are in
/// a crate-internal supertrait (`GoStep`, the Go table's step).
pub trait UnwindArch: Registers + GoStep {
    /// The compiled CFI rule.
    type Rule: Copy + std::fmt::Debug + PartialEq + Send + Sync + 'static;

    /// Compiles a CFI row.
    fn compile(row: &Row<'_>) -> Self::Rule;

    /// Whether `rule`'s row restores registers its fast path only marks unknown (see the
    /// module's comment): such a rule must be evaluated in full where a frame above needs
    /// them.
    fn restores_others(rule: &Self::Rule) -> bool {
        let _ = rule;
        false
    }

    /// Moves the registers to the caller's by `rule`; `Err` when memory the rule needs
    /// cannot be read or a register it needs is unknown.
    fn apply<M: Memory + ?Sized>(
        &mut self,
        rule: Self::Rule,
        memory: &M,
    ) -> Result<Applied, StopReason>;

    /// One step along the frame-pointer chain.
    fn frame_pointer_step<M: Memory + ?Sized>(&mut self, memory: &M) -> Result<(), StopReason>;

    /// Whether `code` (the bytes at the instruction pointer) is the kernel's signal return
    /// trampoline (`rt_sigreturn`).
    fn is_sigreturn(code: &[u8]) -> bool;

    /// Restores the registers the kernel saved when it delivered the signal, from the
    /// ucontext on the stack at the trampoline's stack pointer.
    fn restore_signal_context<M: Memory + ?Sized>(&mut self, memory: &M) -> Result<(), StopReason>;

    /// A return address as code uses it: aarch64 strips a pointer-authentication code
    /// (by the mask these registers carry).
    fn strip_return_address(&self, addr: u64) -> u64 {
        addr
    }
}

/// The Go table's step, crate-internal: `pub` in this private module, so that it can be a
/// supertrait of [`UnwindArch`] without being part of the public API (a "sealed" trait).
/// Kept out of the public surface because an embedder gets it through [`super::Unwinder`]
/// (frames `Recovery::GoTable`). x86_64 and aarch64 implement the step; cgo's stack
/// switches (`GO_G_REGISTER`) are x86_64's only.
pub trait GoStep: Registers {
    /// The register Go code keeps the current goroutine (`g`) in, where the unwinder reads
    /// it (cgo's stack switches, `go.rs`): amd64's `R14` (Go 1.17+, the register ABI).
    const GO_G_REGISTER: Option<u16> = None;

    /// One step by a Go function's stack-pointer delta at the PC (its `pcsp` table, from
    /// `GoTable::sp_delta`): `Ok(true)` when the registers now are the caller's, `Ok(false)`
    /// where the architecture has no such rule here (the caller then tries frame pointers).
    fn go_step<M: Memory + ?Sized>(&mut self, delta: i32, memory: &M) -> Result<bool, StopReason> {
        let _ = (delta, memory);
        Ok(false)
    }
}

impl GoStep for RegsAarch64 {
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
                match memory.read_u64(fp_slot) {
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

fn read<M: Memory + ?Sized>(memory: &M, addr: u64) -> Result<u64, StopReason> {
    memory.read_u64(addr).ok_or(StopReason::MemoryUnreadable {
        addr: AbsAddr(addr),
    })
}

fn offset_of(value: i64) -> Option<i32> {
    i32::try_from(value).ok()
}

/// A CFA-relative slot offset small enough for a compiled rule, 0 for "not saved".
fn slot_of(rule: &RegisterRule<usize>) -> Option<i16> {
    match rule {
        RegisterRule::SameValue => Some(0),
        RegisterRule::Offset(offset) => i16::try_from(*offset).ok().filter(|&o| o != 0),
        _ => None,
    }
}

/// Restores `reg` from its slot at CFA + `offset`; an unreadable slot leaves it unknown
/// rather than ending the walk: only a later frame that needs it fails. (gcc keeps the
/// "saved at CFA − 16" rule for rbp after the epilogue's `pop`, so a sample at the `ret`
/// points below the stack pointer, outside a stack copy.)
fn restore_or_forget<A: Registers, M: Memory + ?Sized>(
    regs: &mut A,
    reg: u16,
    memory: &M,
    cfa: u64,
    offset: i16,
) {
    match memory.read_u64(cfa.wrapping_add(offset as i64 as u64)) {
        Some(value) => regs.set(reg, value),
        None => regs.forget(reg),
    }
}

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
            match memory.read_u64(slot.wrapping_sub(8)) {
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

/// What was wrong with the unwind information of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnwindProblem {
    /// A rule needs a register the frame's registers do not have.
    UnknownRegister(u16),
    /// An expression could not be evaluated.
    Expression(ExprError),
    /// The CFI of the file is malformed (the error is logged with the file's name). Only
    /// without [`UnwindOptions::frame_pointer_fallback`](super::UnwindOptions): with it, such
    /// a frame is walked by its frame pointer, as a frame without CFI is.
    MalformedCfi,
    /// A register rule this unwinder does not apply (`DW_CFA_val_expression` on the CFA…).
    UnsupportedRule,
}

/// Applies a whole CFI row to the registers (every register rule): for rows no compiled
/// rule covers. Returns whether the return address was undefined (the root).
pub fn apply_row<A: UnwindArch, M: Memory + ?Sized>(
    regs: &mut A,
    row: &Row<'_>,
    memory: &M,
) -> Result<Applied, StopReason> {
    let ip = AbsAddr(regs.ip());
    let problem = |what| StopReason::InvalidUnwindInfo { addr: ip, what };
    let eval = |expr, initial| {
        evaluate(row.expression(expr), regs, memory, initial).map_err(|e| match e {
            ExprError::Unreadable(addr) => StopReason::MemoryUnreadable {
                addr: AbsAddr(addr),
            },
            e => problem(UnwindProblem::Expression(e)),
        })
    };
    let cfa = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => regs
            .get(register.0)
            .ok_or(problem(UnwindProblem::UnknownRegister(register.0)))?
            .wrapping_add(*offset as u64),
        CfaRule::Expression(expr) => eval(*expr, None)?,
    };
    if matches!(row.register(A::RA), RegisterRule::Undefined) {
        return Ok(Applied::Root);
    }
    let mut caller = regs.clone();
    caller.set(A::SP, cfa);
    for (reg, rule) in row.row.registers() {
        let value = match rule {
            RegisterRule::Undefined => {
                caller.forget(reg.0);
                continue;
            }
            RegisterRule::SameValue | RegisterRule::Architectural | RegisterRule::Constant(_) => {
                continue
            }
            RegisterRule::Offset(offset) => {
                let slot = cfa.wrapping_add(*offset as u64);
                match memory.read_u64(slot) {
                    Some(value) => value,
                    // Only the return address must be read; see `restore_or_forget`.
                    None if reg.0 != A::RA => {
                        caller.forget(reg.0);
                        continue;
                    }
                    None => {
                        return Err(StopReason::MemoryUnreadable {
                            addr: AbsAddr(slot),
                        })
                    }
                }
            }
            RegisterRule::ValOffset(offset) => cfa.wrapping_add(*offset as u64),
            RegisterRule::Register(from) => regs
                .get(from.0)
                .ok_or(problem(UnwindProblem::UnknownRegister(from.0)))?,
            RegisterRule::Expression(expr) => read(memory, eval(*expr, Some(cfa))?)?,
            RegisterRule::ValExpression(expr) => eval(*expr, Some(cfa))?,
        };
        caller.set(reg.0, value);
    }
    let ra = match caller.get(A::RA) {
        Some(ra) if A::RA != A::SP => caller.strip_return_address(ra),
        _ => return Err(problem(UnwindProblem::UnknownRegister(A::RA))),
    };
    caller.set_ip(ra);
    *regs = caller;
    Ok(Applied::Caller {
        recovery: Recovery::Cfi,
        signal: row.signal,
    })
}
