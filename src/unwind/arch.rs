//! What the architectures' steps share; each architecture's own is in `unwind/x86_64/` and
//! `unwind/aarch64/` (its registers and its rules).
//!
//! Per architecture: a compiled rule type (small and `Copy`, what the unwind cache holds),
//! how a CFI row compiles into it, how a rule moves the registers one frame up, the frame
//! pointer step, and signal frames found by their code (`rt_sigreturn` trampolines without
//! CFI) with the registers the kernel saved in the ucontext.
//!
//! Compiled rules cover what almost every row says: the CFA as the stack or frame pointer
//! plus an offset, the return address and the frame pointer (and on aarch64 the link
//! register) saved at CFA-relative slots or left alone, and x86_64's PLT expression. Any
//! other row (expressions, registers saved in registers, a signal trampoline's row that
//! restores every register) compiles to `Full`: the row is then found again and evaluated
//! in full, every register rule applied ([`apply_row`], here). The fast path restores only
//! the stack pointer, the frame pointer and the return address (and the link register);
//! other registers keep their values, as a callee that saved nothing leaves them. A
//! compiled rule also says which other callee-saved registers (x86_64's rbx, r12–r15;
//! aarch64's x19–x28, all or none) its row restores from the stack: the fast path marks
//! those unknown instead of keeping the callee's values, and
//! [`UnwindArch::restores_others`] tells the unwinder which rules to evaluate in full when
//! a later frame needs one of them (glibc's lazy-binding trampoline
//! `_dl_runtime_resolve_xsavec`, whose CFA is `rbx + 32`, above `_dl_fixup`, which saved
//! `rbx`).

use super::cfi::Row;
use super::expr::{evaluate, ExprError};
use super::memory::Memory;
use super::regs::Registers;
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
/// Implemented for [`RegsX86_64`](super::RegsX86_64) and [`RegsAarch64`](super::RegsAarch64)
/// only (in `unwind/x86_64/` and `unwind/aarch64/`): its methods take types of this module
/// that are not exported (a CFI row, `Applied`), so an embedder names it as a bound
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

    /// One step out of `runtime.morestack`/`morestack_noctxt` stopped before it left for
    /// g0's stack, where the architecture keeps the caller's return address in a register
    /// (`true` when the registers now are the caller's). amd64 needs none: the caller's
    /// return address is on the stack, where the SP delta finds it.
    fn morestack_step(&mut self) -> bool {
        false
    }
}

pub(super) fn read<M: Memory + ?Sized>(memory: &M, addr: u64) -> Result<u64, StopReason> {
    memory
        .read_u64(AbsAddr(addr))
        .ok_or(StopReason::MemoryUnreadable {
            addr: AbsAddr(addr),
        })
}

pub(super) fn offset_of(value: i64) -> Option<i32> {
    i32::try_from(value).ok()
}

/// A CFA-relative slot offset small enough for a compiled rule, 0 for "not saved".
pub(super) fn slot_of(rule: &RegisterRule<usize>) -> Option<i16> {
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
pub(super) fn restore_or_forget<A: Registers, M: Memory + ?Sized>(
    regs: &mut A,
    reg: u16,
    memory: &M,
    cfa: u64,
    offset: i16,
) {
    match memory.read_u64(AbsAddr(cfa.wrapping_add(offset as i64 as u64))) {
        Some(value) => regs.set(reg, value),
        None => regs.forget(reg),
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
                match memory.read_u64(AbsAddr(slot)) {
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
