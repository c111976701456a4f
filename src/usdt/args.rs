//! A probe's argument string (`-4@%edi 8@-16(%rbp) 8@$5`, aarch64 `8@[sp, 16] -4@w1`) turned
//! into operands a tracer can read: each argument is `[-]SIZE@OPERAND` (a negative size is a
//! signed value), the operand in the assembler's syntax of the file's architecture, as GCC
//! prints an `"nor"` asm operand (`sys/sdt.h`'s `STAP_PROBE` macros).
//!
//! Supported: x86_64 in AT&T syntax (64-, 32-, 16- and 8-bit general registers, `%rip`,
//! `disp(%reg)` with a numeric or symbolic displacement, `$imm`) and aarch64 (`xN`, `wN`, `sp`, `[reg]`,
//! `[reg, off]`, immediates with or without `#`). Anything else (indexed addressing,
//! aarch64's `#:lo12:` relocations, vector registers, another architecture) is an [`ArgError`] naming the
//! argument; the probe itself stays listed with its raw string.

use std::fmt;

/// At most this many arguments are parsed (`sys/sdt.h` defines macros for up to 12).
pub const MAX_ARGS: usize = 32;

/// A general-purpose register, as a probe argument names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Register {
    /// Its DWARF register number (x86_64: rax 0, rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6,
    /// rsp 7, r8-r15 8-15, rip 16; aarch64: xN N, sp 31), the numbering `perf_regs`-style
    /// register sets and unwinders use.
    pub dwarf: u16,
    /// Its name as the argument spells it, without `%` (`edi`, `al`, `x1`, `w0`, `sp`).
    pub name: &'static str,
    /// x86's `%ah`, `%bh`, `%ch`, `%dh`: bits 8-15 of the DWARF register, not its low byte.
    pub high_byte: bool,
}

/// Where an argument's value is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Operand {
    /// In a register (its low `size` bytes, or bits 8-15 for a high-byte register).
    Register(Register),
    /// In memory at `base + offset` (`-16(%rbp)`, `[sp, 16]`). With `%rip` as the base the
    /// address is that of the next instruction plus `offset`, as the CPU computes it.
    Memory {
        /// The base register.
        base: Register,
        /// The displacement added to it.
        offset: i64,
    },
    /// In memory at a symbol's address plus `offset`, addressed relative to `base`: x86_64's
    /// `demo_global(%rip)`, `table+8(%rip)` (GCC names a global so; the CPU's `%rip`-relative
    /// address is the symbol's).
    Symbol {
        /// The base register the instruction would use (`%rip`).
        base: Register,
        /// The symbol's name.
        name: String,
        /// The offset added to the symbol's address.
        offset: i64,
        /// The symbol's virtual address, where the file's symbol tables name it (filled in by
        /// [`crate::usdt::read_probes`]; the parser alone leaves it `None`). A process
        /// reads the value at this address plus the load bias.
        addr: Option<crate::addr::VirtAddr>,
    },
    /// A constant (`$5`, aarch64 `5`): the value itself.
    Constant(i64),
}

/// One parsed argument.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Arg {
    /// Its size in bytes (1, 2, 4 or 8). An argument written without `SIZE@` (old
    /// `sys/sdt.h` versions) gets the file's address size, unsigned.
    pub size: u8,
    /// Whether the value is signed (a negative size in the note: `-4@`).
    pub signed: bool,
    /// Where it is.
    pub operand: Operand,
}

/// Why an argument string could not be parsed: which argument, its text, and what was wrong
/// with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    /// The argument's index, from 0 (the count when there are too many).
    pub index: usize,
    /// The argument's text (empty when the error is not about one argument).
    pub token: String,
    /// What was wrong.
    pub problem: ArgProblem,
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.token.as_str() {
            "" => write!(f, "argument {}: {}", self.index, self.problem),
            token => write!(f, "argument {}: {token:?}: {}", self.index, self.problem),
        }
    }
}

impl std::error::Error for ArgError {}

/// What was wrong with a USDT argument: [`ArgProblem::is_unsupported`] tells what this crate
/// does not read (a valid argument a newer version may) from what is not an argument.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArgProblem {
    /// More arguments than a probe can have (the limit).
    TooMany(usize),
    /// A floating-point argument (`8f@...`).
    FloatingPoint,
    /// A size prefix other than 1, 2, 4 or 8 (the prefix).
    BadSize(String),
    /// `SIZE@` with nothing after it.
    NoOperand,
    /// An x86_64 register operand without its `%` (the text).
    NotARegister(String),
    /// A register this crate does not know (its name): vector registers, another
    /// architecture's.
    UnknownRegister(String),
    /// An immediate that is not a number, e.g. a symbol's address (the text).
    NotANumber(String),
    /// Neither a register, a constant nor a memory operand.
    NotAnOperand,
    /// A memory operand without its closing bracket (`)` or `]`).
    Unclosed(char),
    /// An indexed memory operand (`(%rax,%rbx,8)`).
    IndexedMemory,
    /// A displacement that is neither a number nor `symbol+number` (the text).
    BadDisplacement(String),
    /// An aarch64 offset that is a relocation (`#:lo12:sym`): the address depends on an
    /// earlier `adrp` (the text).
    Relocation(String),
    /// An aarch64 offset that is not a number (a register offset; the text).
    RegisterOffset(String),
    /// The file's ELF machine, whose argument syntax is not parsed (only x86_64 and
    /// aarch64).
    UnsupportedMachine(u16),
}

impl ArgProblem {
    /// Whether the argument is valid but not read by this crate (floating point, vector or
    /// unknown registers, indexed memory, relocations, register offsets, another
    /// architecture), rather than malformed.
    pub fn is_unsupported(&self) -> bool {
        matches!(
            self,
            ArgProblem::FloatingPoint
                | ArgProblem::UnknownRegister(_)
                | ArgProblem::IndexedMemory
                | ArgProblem::Relocation(_)
                | ArgProblem::RegisterOffset(_)
                | ArgProblem::UnsupportedMachine(_)
        )
    }
}

impl fmt::Display for ArgProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgProblem::TooMany(max) => write!(f, "more than {max} arguments"),
            ArgProblem::FloatingPoint => f.write_str("floating-point arguments are not supported"),
            ArgProblem::BadSize(prefix) => write!(f, "size {prefix:?} is not 1, 2, 4 or 8"),
            ArgProblem::NoOperand => f.write_str("no operand after the size"),
            ArgProblem::NotARegister(text) => write!(f, "{text:?} is not a register (no '%')"),
            ArgProblem::UnknownRegister(name) => write!(f, "unknown register {name:?}"),
            ArgProblem::NotANumber(text) => {
                write!(f, "{text:?} is not a number (a symbol's address?)")
            }
            ArgProblem::NotAnOperand => {
                f.write_str("neither a register, a constant nor a memory operand")
            }
            ArgProblem::Unclosed(bracket) => {
                write!(f, "a memory operand without its closing '{bracket}'")
            }
            ArgProblem::IndexedMemory => f.write_str("indexed memory operands are not supported"),
            ArgProblem::BadDisplacement(text) => write!(
                f,
                "displacement {text:?} is neither a number nor symbol+number"
            ),
            ArgProblem::Relocation(text) => write!(
                f,
                "offset {text:?} is a relocation, not a number (the address depends on an \
                 earlier adrp)"
            ),
            ArgProblem::RegisterOffset(text) => write!(
                f,
                "offset {text:?} is not a number (register offsets are not supported)"
            ),
            ArgProblem::UnsupportedMachine(machine) => write!(
                f,
                "arguments of ELF machine {machine} are not parsed (only x86_64 and aarch64)"
            ),
        }
    }
}

/// The instruction set whose syntax arguments are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgSyntax {
    /// x86_64, AT&T syntax.
    X86_64,
    /// aarch64.
    Aarch64,
}

impl ArgSyntax {
    /// The syntax of files of ELF machine `machine` (`e_machine`), if supported.
    pub fn of_machine(machine: u16) -> Option<ArgSyntax> {
        match machine {
            62 => Some(ArgSyntax::X86_64),
            183 => Some(ArgSyntax::Aarch64),
            _ => None,
        }
    }
}

/// Parses a whole argument string (arguments separated by white space; aarch64's
/// `[sp, 16]` holds a space inside its brackets). `address_size` (4 or 8) is the size given
/// to an argument without `SIZE@`.
pub fn parse_args(text: &str, syntax: ArgSyntax, address_size: u8) -> Result<Vec<Arg>, ArgError> {
    let mut args = Vec::new();
    for (index, token) in split_args(text).enumerate() {
        if index >= MAX_ARGS {
            return Err(ArgError {
                index,
                token: String::new(),
                problem: ArgProblem::TooMany(MAX_ARGS),
            });
        }
        let arg = parse_arg(token, syntax, address_size).map_err(|problem| ArgError {
            index,
            token: token.to_string(),
            problem,
        })?;
        args.push(arg);
    }
    Ok(args)
}

/// The argument tokens of `text`: runs separated by white space outside brackets.
fn split_args(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if pos == bytes.len() {
            return None;
        }
        let start = pos;
        let mut depth = 0usize;
        while pos < bytes.len() {
            match bytes[pos] {
                b'[' | b'(' => depth += 1,
                b']' | b')' => depth = depth.saturating_sub(1),
                c if c.is_ascii_whitespace() && depth == 0 => break,
                _ => {}
            }
            pos += 1;
        }
        // Splits happen at ASCII bytes only, so both ends are char boundaries.
        text.get(start..pos)
    })
}

fn parse_arg(token: &str, syntax: ArgSyntax, address_size: u8) -> Result<Arg, ArgProblem> {
    let (size, signed, operand) = match split_size(token)? {
        Some((size, signed, rest)) => (size, signed, rest),
        None => (address_size, false, token),
    };
    let operand = match syntax {
        ArgSyntax::X86_64 => parse_x86_operand(operand)?,
        ArgSyntax::Aarch64 => parse_aarch64_operand(operand)?,
    };
    Ok(Arg {
        size,
        signed,
        operand,
    })
}

/// `-4@rest` → (4, signed, rest); `None` when the token has no `SIZE@` prefix.
fn split_size(token: &str) -> Result<Option<(u8, bool, &str)>, ArgProblem> {
    let Some((prefix, rest)) = token.split_once('@') else {
        return Ok(None);
    };
    let (signed, digits) = match prefix.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, prefix),
    };
    if digits.ends_with('f') {
        return Err(ArgProblem::FloatingPoint);
    }
    let size = match digits {
        "1" => 1,
        "2" => 2,
        "4" => 4,
        "8" => 8,
        _ => return Err(ArgProblem::BadSize(prefix.to_string())),
    };
    if rest.is_empty() {
        return Err(ArgProblem::NoOperand);
    }
    Ok(Some((size, signed, rest)))
}

/// A decimal or `0x` hexadecimal integer with an optional sign; a value above `i64::MAX`
/// (an unsigned constant) keeps its bits.
fn parse_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let magnitude = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u64::from_str_radix(hex, 16).ok()?
        }
        Some(_) => return None,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse::<u64>().ok()?
        }
        None => return None,
    };
    // Two's complement, as the assembler reads `$-1` and `$18446744073709551615` alike.
    let value = magnitude as i64;
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// x86_64 general registers by AT&T name: (name, DWARF number, high byte).
#[rustfmt::skip]
const X86_64_REGISTERS: &[(&str, u16, bool)] = &[
    ("rax", 0, false), ("eax", 0, false), ("ax", 0, false), ("al", 0, false), ("ah", 0, true),
    ("rdx", 1, false), ("edx", 1, false), ("dx", 1, false), ("dl", 1, false), ("dh", 1, true),
    ("rcx", 2, false), ("ecx", 2, false), ("cx", 2, false), ("cl", 2, false), ("ch", 2, true),
    ("rbx", 3, false), ("ebx", 3, false), ("bx", 3, false), ("bl", 3, false), ("bh", 3, true),
    ("rsi", 4, false), ("esi", 4, false), ("si", 4, false), ("sil", 4, false),
    ("rdi", 5, false), ("edi", 5, false), ("di", 5, false), ("dil", 5, false),
    ("rbp", 6, false), ("ebp", 6, false), ("bp", 6, false), ("bpl", 6, false),
    ("rsp", 7, false), ("esp", 7, false), ("sp", 7, false), ("spl", 7, false),
    ("r8", 8, false), ("r8d", 8, false), ("r8w", 8, false), ("r8b", 8, false),
    ("r9", 9, false), ("r9d", 9, false), ("r9w", 9, false), ("r9b", 9, false),
    ("r10", 10, false), ("r10d", 10, false), ("r10w", 10, false), ("r10b", 10, false),
    ("r11", 11, false), ("r11d", 11, false), ("r11w", 11, false), ("r11b", 11, false),
    ("r12", 12, false), ("r12d", 12, false), ("r12w", 12, false), ("r12b", 12, false),
    ("r13", 13, false), ("r13d", 13, false), ("r13w", 13, false), ("r13b", 13, false),
    ("r14", 14, false), ("r14d", 14, false), ("r14w", 14, false), ("r14b", 14, false),
    ("r15", 15, false), ("r15d", 15, false), ("r15w", 15, false), ("r15b", 15, false),
    ("rip", 16, false), ("eip", 16, false),
];

/// aarch64 general registers: `xN`/`wN` are DWARF N, `sp` 31.
#[rustfmt::skip]
const AARCH64_REGISTERS: &[(&str, u16)] = &[
    ("x0", 0), ("x1", 1), ("x2", 2), ("x3", 3), ("x4", 4), ("x5", 5), ("x6", 6), ("x7", 7),
    ("x8", 8), ("x9", 9), ("x10", 10), ("x11", 11), ("x12", 12), ("x13", 13), ("x14", 14),
    ("x15", 15), ("x16", 16), ("x17", 17), ("x18", 18), ("x19", 19), ("x20", 20),
    ("x21", 21), ("x22", 22), ("x23", 23), ("x24", 24), ("x25", 25), ("x26", 26),
    ("x27", 27), ("x28", 28), ("x29", 29), ("x30", 30),
    ("w0", 0), ("w1", 1), ("w2", 2), ("w3", 3), ("w4", 4), ("w5", 5), ("w6", 6), ("w7", 7),
    ("w8", 8), ("w9", 9), ("w10", 10), ("w11", 11), ("w12", 12), ("w13", 13), ("w14", 14),
    ("w15", 15), ("w16", 16), ("w17", 17), ("w18", 18), ("w19", 19), ("w20", 20),
    ("w21", 21), ("w22", 22), ("w23", 23), ("w24", 24), ("w25", 25), ("w26", 26),
    ("w27", 27), ("w28", 28), ("w29", 29), ("w30", 30),
    ("sp", 31), ("wsp", 31),
];

fn x86_register(text: &str) -> Result<Register, ArgProblem> {
    let Some(name) = text.strip_prefix('%') else {
        return Err(ArgProblem::NotARegister(text.to_string()));
    };
    X86_64_REGISTERS
        .iter()
        .find(|(known, _, _)| *known == name)
        .map(|&(name, dwarf, high_byte)| Register {
            dwarf,
            name,
            high_byte,
        })
        .ok_or_else(|| ArgProblem::UnknownRegister(format!("%{name}")))
}

fn aarch64_register(text: &str) -> Result<Register, ArgProblem> {
    AARCH64_REGISTERS
        .iter()
        .find(|(known, _)| *known == text)
        .map(|&(name, dwarf)| Register {
            dwarf,
            name,
            high_byte: false,
        })
        .ok_or_else(|| ArgProblem::UnknownRegister(text.to_string()))
}

fn parse_x86_operand(text: &str) -> Result<Operand, ArgProblem> {
    if let Some(imm) = text.strip_prefix('$') {
        return parse_int(imm)
            .map(Operand::Constant)
            .ok_or_else(|| ArgProblem::NotANumber(imm.to_string()));
    }
    if text.starts_with('%') {
        return x86_register(text).map(Operand::Register);
    }
    let Some(open) = text.find('(') else {
        return Err(ArgProblem::NotAnOperand);
    };
    let Some(inner) = text[open + 1..].strip_suffix(')') else {
        return Err(ArgProblem::Unclosed(')'));
    };
    if inner.contains(',') {
        return Err(ArgProblem::IndexedMemory);
    }
    let base = x86_register(inner)?;
    let displacement = &text[..open];
    if displacement.is_empty() {
        return Ok(Operand::Memory { base, offset: 0 });
    }
    if let Some(offset) = parse_int(displacement) {
        return Ok(Operand::Memory { base, offset });
    }
    // `symbol`, `symbol+8`, `symbol-8`, `8+symbol` (GCC writes a field of a global so).
    let (name, offset) = symbol_and_offset(displacement)?;
    Ok(Operand::Symbol {
        base,
        name: name.to_string(),
        offset,
        addr: None,
    })
}

/// A displacement of terms joined by `+`/`-`: one symbol and numbers.
fn symbol_and_offset(displacement: &str) -> Result<(&str, i64), ArgProblem> {
    let invalid = || ArgProblem::BadDisplacement(displacement.to_string());
    let is_symbol_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '@');
    let mut symbol = None;
    let mut offset = 0i64;
    let mut rest = displacement;
    let mut negative = false;
    loop {
        let end = rest.find(['+', '-']).unwrap_or(rest.len());
        let term = &rest[..end];
        if let Some(value) = parse_int(term) {
            offset = offset.wrapping_add(if negative {
                value.wrapping_neg()
            } else {
                value
            });
        } else if !term.is_empty()
            && !negative
            && symbol.is_none()
            && term.chars().all(is_symbol_char)
        {
            symbol = Some(term);
        } else {
            return Err(invalid());
        }
        let Some(sign) = rest[end..].chars().next() else {
            break;
        };
        negative = sign == '-';
        rest = &rest[end + 1..];
    }
    symbol.map(|name| (name, offset)).ok_or_else(invalid)
}

fn parse_aarch64_operand(text: &str) -> Result<Operand, ArgProblem> {
    if let Some(inner) = text.strip_prefix('[') {
        let Some(inner) = inner.strip_suffix(']') else {
            return Err(ArgProblem::Unclosed(']'));
        };
        let (base, offset) = match inner.split_once(',') {
            Some((base, offset)) => {
                let offset = offset.trim();
                let offset = offset.strip_prefix('#').unwrap_or(offset);
                if offset.starts_with(':') {
                    // `[x3, #:lo12:sym]`: the low 12 bits of an address whose page an earlier
                    // `adrp` put in the register; the note cannot say which address.
                    return Err(ArgProblem::Relocation(offset.to_string()));
                }
                let value = parse_int(offset)
                    .ok_or_else(|| ArgProblem::RegisterOffset(offset.to_string()))?;
                (base.trim(), value)
            }
            None => (inner.trim(), 0),
        };
        let base = aarch64_register(base)?;
        return Ok(Operand::Memory { base, offset });
    }
    let immediate = text.strip_prefix('#').unwrap_or(text);
    if let Some(value) = parse_int(immediate) {
        return Ok(Operand::Constant(value));
    }
    aarch64_register(text).map(Operand::Register)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(dwarf: u16, name: &'static str) -> Register {
        Register {
            dwarf,
            name,
            high_byte: false,
        }
    }

    fn arg(size: u8, signed: bool, operand: Operand) -> Arg {
        Arg {
            size,
            signed,
            operand,
        }
    }

    fn x86(text: &str) -> Result<Vec<Arg>, ArgError> {
        parse_args(text, ArgSyntax::X86_64, 8)
    }

    fn arm(text: &str) -> Result<Vec<Arg>, ArgError> {
        parse_args(text, ArgSyntax::Aarch64, 8)
    }

    #[test]
    fn x86_registers_of_every_width() {
        assert_eq!(
            x86("-4@%edi 8@%rax 2@%ax 1@%al -1@%sil 8@%r12 4@%r9d 2@%r10w 1@%r15b").unwrap(),
            vec![
                arg(4, true, Operand::Register(reg(5, "edi"))),
                arg(8, false, Operand::Register(reg(0, "rax"))),
                arg(2, false, Operand::Register(reg(0, "ax"))),
                arg(1, false, Operand::Register(reg(0, "al"))),
                arg(1, true, Operand::Register(reg(4, "sil"))),
                arg(8, false, Operand::Register(reg(12, "r12"))),
                arg(4, false, Operand::Register(reg(9, "r9d"))),
                arg(2, false, Operand::Register(reg(10, "r10w"))),
                arg(1, false, Operand::Register(reg(15, "r15b"))),
            ]
        );
        let ah = x86("1@%ah").unwrap();
        assert_eq!(
            ah[0].operand,
            Operand::Register(Register {
                dwarf: 0,
                name: "ah",
                high_byte: true
            })
        );
    }

    #[test]
    fn x86_memory_and_constants() {
        assert_eq!(
            x86("8@-16(%rbp) -4@8(%rsp) 8@(%rax) 4@0x10(%rip) 4@$5 -4@$-1 8@$0x20").unwrap(),
            vec![
                arg(
                    8,
                    false,
                    Operand::Memory {
                        base: reg(6, "rbp"),
                        offset: -16
                    }
                ),
                arg(
                    4,
                    true,
                    Operand::Memory {
                        base: reg(7, "rsp"),
                        offset: 8
                    }
                ),
                arg(
                    8,
                    false,
                    Operand::Memory {
                        base: reg(0, "rax"),
                        offset: 0
                    }
                ),
                arg(
                    4,
                    false,
                    Operand::Memory {
                        base: reg(16, "rip"),
                        offset: 16
                    }
                ),
                arg(4, false, Operand::Constant(5)),
                arg(4, true, Operand::Constant(-1)),
                arg(8, false, Operand::Constant(0x20)),
            ]
        );
        assert_eq!(
            x86("8@$18446744073709551615").unwrap()[0].operand,
            Operand::Constant(-1)
        );
    }

    #[test]
    fn x86_symbols() {
        let symbol = |name: &str, offset| Operand::Symbol {
            base: reg(16, "rip"),
            name: name.to_string(),
            offset,
            addr: None,
        };
        let args =
            x86("-8@demo_global(%rip) 4@table+8(%rip) 4@x.1-4(%rip) 8@8+CheckpointStats(%rip)")
                .unwrap();
        let operands: Vec<Operand> = args.into_iter().map(|a| a.operand).collect();
        assert_eq!(
            operands,
            vec![
                symbol("demo_global", 0),
                symbol("table", 8),
                symbol("x.1", -4),
                symbol("CheckpointStats", 8)
            ]
        );
    }

    #[test]
    fn aarch64_operands() {
        assert_eq!(
            arm("8@[sp, 16] -4@x1 4@w0 8@sp 8@[x1] -8@[x29, -8] 4@5 -4@#-3 8@[x2,#24]").unwrap(),
            vec![
                arg(
                    8,
                    false,
                    Operand::Memory {
                        base: reg(31, "sp"),
                        offset: 16
                    }
                ),
                arg(4, true, Operand::Register(reg(1, "x1"))),
                arg(4, false, Operand::Register(reg(0, "w0"))),
                arg(8, false, Operand::Register(reg(31, "sp"))),
                arg(
                    8,
                    false,
                    Operand::Memory {
                        base: reg(1, "x1"),
                        offset: 0
                    }
                ),
                arg(
                    8,
                    true,
                    Operand::Memory {
                        base: reg(29, "x29"),
                        offset: -8
                    }
                ),
                arg(4, false, Operand::Constant(5)),
                arg(4, true, Operand::Constant(-3)),
                arg(
                    8,
                    false,
                    Operand::Memory {
                        base: reg(2, "x2"),
                        offset: 24
                    }
                ),
            ]
        );
    }

    #[test]
    fn empty_and_sizeless() {
        assert_eq!(x86("").unwrap(), vec![]);
        assert_eq!(x86("   ").unwrap(), vec![]);
        assert_eq!(
            parse_args("%eax", ArgSyntax::X86_64, 4).unwrap(),
            vec![arg(4, false, Operand::Register(reg(0, "eax")))]
        );
    }

    #[test]
    fn errors_name_the_argument() {
        let err = x86("8@%rax 8@(%rax,%rbx,8)").unwrap_err();
        assert_eq!(err.index, 1);
        assert!(err.to_string().contains("indexed"), "{err}");
        assert_eq!(err.token, "8@(%rax,%rbx,8)");
        assert_eq!(err.problem, ArgProblem::IndexedMemory);
        assert!(err.problem.is_unsupported());
        assert_eq!(
            err.to_string(),
            "argument 1: \"8@(%rax,%rbx,8)\": indexed memory operands are not supported"
        );
        let malformed = x86("8@-16(%rbp").unwrap_err();
        assert_eq!(malformed.problem, ArgProblem::Unclosed(')'));
        assert!(!malformed.problem.is_unsupported());
        assert!(x86("3@%rax")
            .unwrap_err()
            .to_string()
            .contains("not 1, 2, 4 or 8"));
        assert!(x86("8@%xmm0")
            .unwrap_err()
            .to_string()
            .contains("unknown register"));
        assert!(x86("8@sym+(%rip)")
            .unwrap_err()
            .to_string()
            .contains("symbol+number"));
        assert!(x86("8@a*b(%rip)")
            .unwrap_err()
            .to_string()
            .contains("neither"));
        assert!(x86("8@a+b(%rip)")
            .unwrap_err()
            .to_string()
            .contains("neither"));
        assert!(x86("8@-a(%rip)")
            .unwrap_err()
            .to_string()
            .contains("neither"));
        assert!(arm("-8@[x3, #:lo12:.LANCHOR0]")
            .unwrap_err()
            .to_string()
            .contains("adrp"));
        assert!(x86("8@$sym")
            .unwrap_err()
            .to_string()
            .contains("not a number"));
        assert!(x86("8@-16(%rbp")
            .unwrap_err()
            .to_string()
            .contains("closing"));
        assert!(x86("8f@%xmm0")
            .unwrap_err()
            .to_string()
            .contains("floating"));
        assert!(x86("8@").unwrap_err().to_string().contains("no operand"));
        assert!(arm("8@[sp, 16")
            .unwrap_err()
            .to_string()
            .contains("closing"));
        assert!(arm("8@[x1, x2]")
            .unwrap_err()
            .to_string()
            .contains("register offsets"));
        assert!(arm("8@q0")
            .unwrap_err()
            .to_string()
            .contains("unknown register"));
        let many = "8@%rax ".repeat(MAX_ARGS + 1);
        assert_eq!(x86(&many).unwrap_err().index, MAX_ARGS);
    }

    #[test]
    fn hostile_text_does_not_panic() {
        for text in [
            "@",
            "-@",
            "--4@%rax",
            "8@%",
            "8@()",
            "8@(",
            "8@)",
            "[[[[",
            "]]]",
            "8@[]",
            "8@[,]",
            "8@0x",
            "8@$",
            "8@$-",
            "é@%rax",
            "8@%rax\u{0}",
            "4@99999999999999999999999",
        ] {
            let _ = x86(text);
            let _ = arm(text);
        }
    }
}
