//! A bounded evaluator of the DWARF expressions CFI uses (`DW_CFA_def_cfa_expression`,
//! `DW_CFA_expression`, `DW_CFA_val_expression`): the stack operations, arithmetic,
//! comparisons and branches, register values (`DW_OP_breg*`, `DW_OP_bregx`) and memory reads
//! (`DW_OP_deref`, `DW_OP_deref_size`) through a [`Memory`].
//!
//! Work is bounded whatever the bytes say: at most [`MAX_STEPS`] operations run (a branch
//! back to itself ends there) and the stack holds at most [`MAX_STACK`] values. Location
//! operations (`DW_OP_reg*`, pieces) and those that need a DIE or a frame base have no
//! meaning in CFI and are refused.

use super::memory::Memory;
use super::regs::Registers;
use crate::addr::AbsAddr;

/// Most operations one evaluation runs.
pub const MAX_STEPS: usize = 1000;
/// Most values on the evaluation stack.
pub const MAX_STACK: usize = 64;

/// Why an expression has no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExprError {
    /// The expression ends inside an operation's operands.
    Truncated,
    /// An operation this evaluator does not run (its opcode).
    Unsupported(u8),
    /// More than [`MAX_STEPS`] operations (a loop).
    TooManySteps,
    /// More than [`MAX_STACK`] values.
    StackOverflow,
    /// An operation needed more values than the stack held (or the expression left none).
    StackUnderflow,
    /// A register the expression reads is not known in this frame.
    UnknownRegister(u16),
    /// Memory at this address could not be read.
    Unreadable(u64),
    /// Division or modulo by zero.
    DivisionByZero,
    /// A branch outside the expression.
    BadBranch,
}

/// Evaluates `expr` with the registers and memory of the frame being unwound. `initial` is
/// pushed first (the CFA, for register rules), as DWARF specifies.
pub fn evaluate<R: Registers, M: Memory + ?Sized>(
    expr: &[u8],
    regs: &R,
    memory: &M,
    initial: Option<u64>,
) -> Result<u64, ExprError> {
    let mut stack: Vec<u64> = Vec::with_capacity(8);
    stack.extend(initial);
    let mut pc = 0usize;
    let mut steps = 0usize;
    while pc < expr.len() {
        steps += 1;
        if steps > MAX_STEPS {
            return Err(ExprError::TooManySteps);
        }
        let op = expr[pc];
        pc += 1;
        let mut ops = Operands { expr, pc: &mut pc };
        match op {
            0x03 | 0x08..=0x11 | 0x30..=0x4f => push(&mut stack, literal(op, &mut ops)?)?,
            0x12..=0x17 => stack_operation(op, &mut ops, &mut stack)?,
            0x19..=0x27 | 0x29..=0x2e => arithmetic(op, &mut ops, &mut stack)?,
            0x06 | 0x94 => {
                let size = if op == 0x94 { ops.fixed(1)? } else { 8 };
                let addr = pop(&mut stack)?;
                let word = memory
                    .read_u64(AbsAddr(addr))
                    .ok_or(ExprError::Unreadable(addr))?;
                let value = match size {
                    1..=7 => word & ((1u64 << (size * 8)) - 1),
                    8 => word,
                    _ => return Err(ExprError::Unsupported(op)),
                };
                push(&mut stack, value)?;
            }
            0x2f | 0x28 => {
                let delta = ops.fixed(2)? as u16 as i16;
                let taken = op == 0x2f || pop(&mut stack)? != 0;
                if taken {
                    let target = pc as i64 + i64::from(delta);
                    if target < 0 || target > expr.len() as i64 {
                        return Err(ExprError::BadBranch);
                    }
                    pc = target as usize;
                }
            }
            0x70..=0x8f | 0x92 => {
                let reg = match op {
                    0x92 => u16::try_from(ops.uleb()?).unwrap_or(u16::MAX),
                    _ => u16::from(op - 0x70),
                };
                let offset = ops.sleb()?;
                let value = regs.get(reg).ok_or(ExprError::UnknownRegister(reg))?;
                push(&mut stack, value.wrapping_add(offset as u64))?;
            }
            0x96 => {} // nop
            _ => return Err(ExprError::Unsupported(op)),
        }
    }
    stack.pop().ok_or(ExprError::StackUnderflow)
}

/// The value a literal operation pushes (`DW_OP_addr`, `DW_OP_const*`, `DW_OP_lit*`).
fn literal(op: u8, ops: &mut Operands<'_, '_>) -> Result<u64, ExprError> {
    Ok(match op {
        0x03 | 0x0e | 0x0f => ops.fixed(8)?, // addr, const8u, const8s
        0x08 => ops.fixed(1)?,
        0x09 => ops.fixed(1)? as u8 as i8 as i64 as u64,
        0x0a => ops.fixed(2)?,
        0x0b => ops.fixed(2)? as u16 as i16 as i64 as u64,
        0x0c => ops.fixed(4)?,
        0x0d => ops.fixed(4)? as u32 as i32 as i64 as u64,
        0x10 => ops.uleb()?,
        0x11 => ops.sleb()? as u64,
        0x30..=0x4f => u64::from(op - 0x30),
        _ => return Err(ExprError::Unsupported(op)),
    })
}

/// The operations that rearrange the stack: dup, drop, over, pick, swap, rot.
fn stack_operation(
    op: u8,
    ops: &mut Operands<'_, '_>,
    stack: &mut Vec<u64>,
) -> Result<(), ExprError> {
    match op {
        0x12 => {
            let top = peek(stack, 0)?;
            push(stack, top)?; // dup
        }
        0x13 => {
            pop(stack)?;
        }
        0x14 => {
            let second = peek(stack, 1)?;
            push(stack, second)?; // over
        }
        0x15 => {
            let index = ops.fixed(1)? as usize;
            let picked = peek(stack, index)?;
            push(stack, picked)?;
        }
        0x16 => {
            // swap
            let a = pop(stack)?;
            let b = pop(stack)?;
            push(stack, a)?;
            push(stack, b)?;
        }
        0x17 => {
            // rot: the top three, (a b c) with c on top, become (c a b)
            let c = pop(stack)?;
            let b = pop(stack)?;
            let a = pop(stack)?;
            push(stack, c)?;
            push(stack, a)?;
            push(stack, b)?;
        }
        _ => return Err(ExprError::Unsupported(op)),
    }
    Ok(())
}

/// The arithmetic, logic and comparison operations, on the top one or two values.
fn arithmetic(op: u8, ops: &mut Operands<'_, '_>, stack: &mut Vec<u64>) -> Result<(), ExprError> {
    match op {
        0x19 => unary(stack, |a| (a as i64).unsigned_abs()),
        0x1a => binary(stack, |a, b| Ok(a & b)),
        0x1b => binary(stack, |a, b| {
            if b == 0 {
                return Err(ExprError::DivisionByZero);
            }
            Ok((a as i64).wrapping_div(b as i64) as u64)
        }),
        0x1c => binary(stack, |a, b| Ok(a.wrapping_sub(b))),
        0x1d => binary(stack, |a, b| {
            a.checked_rem(b).ok_or(ExprError::DivisionByZero)
        }),
        0x1e => binary(stack, |a, b| Ok(a.wrapping_mul(b))),
        0x1f => unary(stack, |a| (a as i64).wrapping_neg() as u64),
        0x20 => unary(stack, |a| !a),
        0x21 => binary(stack, |a, b| Ok(a | b)),
        0x22 => binary(stack, |a, b| Ok(a.wrapping_add(b))),
        0x23 => {
            let addend = ops.uleb()?;
            unary(stack, |a| a.wrapping_add(addend))
        }
        0x24 => binary(stack, |a, b| Ok(if b >= 64 { 0 } else { a << b })),
        0x25 => binary(stack, |a, b| Ok(if b >= 64 { 0 } else { a >> b })),
        0x26 => binary(stack, |a, b| Ok(((a as i64) >> b.min(63)) as u64)),
        0x27 => binary(stack, |a, b| Ok(a ^ b)),
        0x29..=0x2e => binary(stack, |a, b| {
            let (a, b) = (a as i64, b as i64);
            Ok(u64::from(match op {
                0x29 => a == b,
                0x2a => a >= b,
                0x2b => a > b,
                0x2c => a <= b,
                0x2d => a < b,
                _ => a != b,
            }))
        }),
        _ => Err(ExprError::Unsupported(op)),
    }
}

/// Reads an operation's operands and moves the program counter past them.
struct Operands<'a, 'p> {
    expr: &'a [u8],
    pc: &'p mut usize,
}

impl Operands<'_, '_> {
    fn fixed(&mut self, size: usize) -> Result<u64, ExprError> {
        let end = self.pc.checked_add(size).ok_or(ExprError::Truncated)?;
        let bytes = self.expr.get(*self.pc..end).ok_or(ExprError::Truncated)?;
        *self.pc = end;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn uleb(&mut self) -> Result<u64, ExprError> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = *self.expr.get(*self.pc).ok_or(ExprError::Truncated)?;
            *self.pc += 1;
            if shift < 64 {
                value |= u64::from(byte & 0x7f) << shift;
            }
            shift = shift.saturating_add(7);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
    }

    fn sleb(&mut self) -> Result<i64, ExprError> {
        let mut value = 0i64;
        let mut shift = 0u32;
        loop {
            let byte = *self.expr.get(*self.pc).ok_or(ExprError::Truncated)?;
            *self.pc += 1;
            if shift < 64 {
                value |= i64::from(byte & 0x7f) << shift;
            }
            shift = shift.saturating_add(7);
            if byte & 0x80 == 0 {
                if shift < 64 && byte & 0x40 != 0 {
                    value |= -1i64 << shift;
                }
                return Ok(value);
            }
        }
    }
}

fn push(stack: &mut Vec<u64>, value: u64) -> Result<(), ExprError> {
    if stack.len() >= MAX_STACK {
        return Err(ExprError::StackOverflow);
    }
    stack.push(value);
    Ok(())
}

fn pop(stack: &mut Vec<u64>) -> Result<u64, ExprError> {
    stack.pop().ok_or(ExprError::StackUnderflow)
}

fn peek(stack: &[u64], depth: usize) -> Result<u64, ExprError> {
    stack
        .len()
        .checked_sub(depth + 1)
        .and_then(|i| stack.get(i).copied())
        .ok_or(ExprError::StackUnderflow)
}

fn unary(stack: &mut Vec<u64>, f: impl FnOnce(u64) -> u64) -> Result<(), ExprError> {
    let a = pop(stack)?;
    push(stack, f(a))
}

fn binary(
    stack: &mut Vec<u64>,
    f: impl FnOnce(u64, u64) -> Result<u64, ExprError>,
) -> Result<(), ExprError> {
    let b = pop(stack)?;
    let a = pop(stack)?;
    push(stack, f(a, b)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unwind::memory::StackCopy;
    use crate::unwind::RegsX86_64;

    fn eval(expr: &[u8], regs: &RegsX86_64, stack: &StackCopy<'_>) -> Result<u64, ExprError> {
        evaluate(expr, regs, stack, None)
    }

    #[test]
    fn glibc_signal_trampoline_cfa_reads_the_saved_rsp() {
        // __restore_rt: DW_OP_breg7 (rsp) 160; DW_OP_deref
        let mut bytes = vec![0u8; 176];
        bytes[160..168].copy_from_slice(&0x7fff_0000_1000u64.to_le_bytes());
        let stack = StackCopy::new(AbsAddr(0x7fff_0000_0000), &bytes);
        let regs = RegsX86_64::new(0x1000, 0x7fff_0000_0000, 0);
        assert_eq!(
            eval(&[0x77, 0xa0, 0x01, 0x06], &regs, &stack),
            Ok(0x7fff_0000_1000)
        );
    }

    #[test]
    fn plt_expression_adds_eight_in_the_second_half_of_an_entry() {
        // DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_lit11; DW_OP_ge;
        // DW_OP_lit3; DW_OP_shl; DW_OP_plus
        let expr = [0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22];
        let stack = StackCopy::new(AbsAddr(0), &[]);
        let early = RegsX86_64::new(0x1024, 0x1000, 0);
        let late = RegsX86_64::new(0x102b, 0x1000, 0);
        assert_eq!(eval(&expr, &early, &stack), Ok(0x1008));
        assert_eq!(eval(&expr, &late, &stack), Ok(0x1010));
    }

    #[test]
    fn loops_stacks_and_garbage_end_with_errors() {
        let stack = StackCopy::new(AbsAddr(0), &[]);
        let regs = RegsX86_64::new(0, 0, 0);
        // DW_OP_skip -3: jumps to itself forever.
        assert_eq!(
            eval(&[0x2f, 0xfd, 0xff], &regs, &stack),
            Err(ExprError::TooManySteps)
        );
        assert_eq!(
            eval(&[0x30; 100], &regs, &stack),
            Err(ExprError::StackOverflow)
        );
        assert_eq!(eval(&[0x22], &regs, &stack), Err(ExprError::StackUnderflow));
        assert_eq!(
            eval(&[0x0e, 1, 2], &regs, &stack),
            Err(ExprError::Truncated)
        );
        assert_eq!(
            eval(&[0x31, 0x06], &regs, &stack),
            Err(ExprError::Unreadable(1))
        );
        assert_eq!(
            eval(&[0x31, 0x30, 0x1b], &regs, &stack),
            Err(ExprError::DivisionByZero)
        );
        assert_eq!(
            eval(&[0x73, 0], &regs, &stack),
            Err(ExprError::UnknownRegister(3))
        );
        assert_eq!(
            eval(&[0x2f, 0x10, 0], &regs, &stack),
            Err(ExprError::BadBranch)
        );
        assert_eq!(
            eval(&[0x50], &regs, &stack),
            Err(ExprError::Unsupported(0x50))
        );
        assert_eq!(eval(&[], &regs, &stack), Err(ExprError::StackUnderflow));
        // A long LEB128 does not overflow a shift.
        let mut long = vec![0x10];
        long.extend([0xff; 20]);
        long.push(0x01);
        assert!(eval(&long, &regs, &stack).is_ok());
    }

    #[test]
    fn arithmetic_and_stack_operations() {
        let stack = StackCopy::new(AbsAddr(0), &[]);
        let regs = RegsX86_64::new(0, 0x100, 0);
        // lit5 lit3 minus → 2; lit1 lit2 lit3 rot → 3 1 2, drop → 3 1, swap → 1 3, minus → -2
        assert_eq!(eval(&[0x35, 0x33, 0x1c], &regs, &stack), Ok(2));
        assert_eq!(
            eval(&[0x31, 0x32, 0x33, 0x17, 0x13, 0x16, 0x1c], &regs, &stack),
            Ok((-2i64) as u64)
        );
        // const1s -8, bregx 7 0, and → 0x100 & ~7
        assert_eq!(
            eval(&[0x92, 7, 0, 0x09, 0xf8, 0x1a], &regs, &stack),
            Ok(0x100)
        );
        // lit0 bra +1 (not taken) lit7 → 7; lit1 bra +1 (taken, skips lit8) lit9 → 9
        assert_eq!(eval(&[0x30, 0x28, 1, 0, 0x37], &regs, &stack), Ok(7));
        assert_eq!(eval(&[0x31, 0x28, 1, 0, 0x38, 0x39], &regs, &stack), Ok(9));
    }
}
