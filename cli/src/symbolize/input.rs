//! Parsing of one input line (or one positional argument) into a query.
//!
//! The grammar is llvm-symbolizer's (`parseCommand` in llvm-symbolizer.cpp), plus two
//! extensions: sanitizer frames and comment/blank lines.
//!
//! ```text
//! line    := [ "CODE " | "DATA " ] [ MODULE ] ADDRESS [ anything ]
//! MODULE  := only without --obj: "quoted path" | 'quoted path' | path-without-blanks
//! ADDRESS := 0x1a2b | 0X1A2B | 0b1101 | 0o17 | 017 (octal) | 1234 (decimal)
//! ```
//!
//! Extensions:
//! - a line holding `(PATH+0xOFFSET)`, as AddressSanitizer and friends print frames
//!   (`#3 0x4f1a2b in foo (/usr/bin/app+0x1a2b)`), is a query for OFFSET in PATH, whether
//!   or not `--obj` is given;
//! - blank lines and `#` comment lines (a `#` not followed by a digit, so that `#3 ...`
//!   frames are not comments) are skipped;
//! - a `#3 ...` frame line without `(PATH+0xOFFSET)` is invalid (llvm-symbolizer would try
//!   to open a module named `#3`).

use std::path::PathBuf;

/// What the address is looked up as; changes only how the answer is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// llvm-symbolizer's default: function name and source location.
    Code,
    /// `DATA ` prefix: name, then start and size.
    Data,
}

/// One parsed line; a module path is borrowed from the line (the caller looks each
/// distinct path up once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// Blank or comment: print nothing.
    Skip,
    /// Look `addr` up in `module` (`None`: the `--obj` file).
    Query {
        kind: Kind,
        module: Option<&'a [u8]>,
        addr: u64,
    },
    /// Not understood: echoed back (as llvm-symbolizer does), explained on stderr.
    Invalid {
        module: Option<&'a [u8]>,
        reason: String,
    },
}

/// Field separators. llvm-symbolizer uses `" \n\r"`; a tab is accepted too (a deliberate
/// extension: llvm-symbolizer would echo such a line back unanswered).
fn is_delim(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_delims(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_delim(b)).count();
    &s[n..]
}

fn split_token(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|&&b| !is_delim(b)).count();
    s.split_at(n)
}

pub fn bytes_to_path(bytes: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// Parses one line (without its line terminator). `have_obj`: `--obj` was given, so lines
/// hold no module path (except sanitizer frames, which always name theirs).
pub fn parse_line(line: &[u8], have_obj: bool) -> Parsed<'_> {
    // The common line: `0x` and hex digits alone, one per address (what profilers and the
    // benches write). The grammar below reads it the same way, at three times the cost.
    if have_obj {
        if let Some(digits) = line.strip_prefix(b"0x") {
            if !digits.is_empty() && digits.iter().all(u8::is_ascii_hexdigit) {
                if let Some(addr) = parse_number(line) {
                    return Parsed::Query {
                        kind: Kind::Code,
                        module: None,
                        addr,
                    };
                }
            }
        }
    }
    if let Some((module, addr)) = sanitizer_frame(line) {
        return Parsed::Query {
            kind: Kind::Code,
            module: Some(module),
            addr,
        };
    }
    let trimmed = skip_delims(line);
    match trimmed {
        [] => return Parsed::Skip,
        [b'#', next, ..] if !next.is_ascii_digit() => return Parsed::Skip,
        [b'#'] => return Parsed::Skip,
        // `#3 0x7f... in foo (<unknown module>)`: a frame, but without a module offset.
        [b'#', ..] => {
            return Parsed::Invalid {
                module: None,
                reason: "a stack frame without a (MODULE+0xOFFSET) part".to_string(),
            }
        }
        _ => {}
    }

    // Like llvm-symbolizer: the prefix must open the line, with exactly one space.
    let (kind, rest) = if let Some(rest) = line.strip_prefix(b"CODE ") {
        (Kind::Code, rest)
    } else if let Some(rest) = line.strip_prefix(b"DATA ") {
        (Kind::Data, rest)
    } else {
        (Kind::Code, line)
    };

    let mut rest = skip_delims(rest);
    let module = if have_obj {
        None
    } else {
        match rest.first() {
            Some(&quote @ (b'"' | b'\'')) => {
                let inner = &rest[1..];
                let Some(end) = inner.iter().position(|&b| b == quote) else {
                    return Parsed::Invalid {
                        module: None,
                        reason: format!("unterminated {} quote", quote as char),
                    };
                };
                rest = &inner[end + 1..];
                Some(&inner[..end])
            }
            _ => {
                let (name, after) = split_token(rest);
                rest = after;
                Some(name)
            }
        }
    };

    let (token, _ignored) = split_token(skip_delims(rest));
    if token.is_empty() {
        let reason = match &module {
            Some(m) => format!(
                "no address after the module path `{}` (without --obj a line is `PATH ADDRESS`)",
                String::from_utf8_lossy(m)
            ),
            None => "no address".to_string(),
        };
        return Parsed::Invalid { module, reason };
    }
    match parse_number(token) {
        Some(addr) => Parsed::Query { kind, module, addr },
        None => Parsed::Invalid {
            module,
            reason: format!(
                "`{}` is not an address (0x-prefixed hex, 0-prefixed octal, 0b binary, or decimal)",
                String::from_utf8_lossy(token)
            ),
        },
    }
}

/// A number as llvm's `StringRef::getAsInteger(0, ..)` reads it: `0x`/`0X` hex, `0b`/`0B`
/// binary, `0o` or a leading `0` octal, else decimal. So `401300` is DECIMAL, as in
/// llvm-symbolizer (GNU addr2line would read it as hex). No sign, no overflow.
pub fn parse_number(token: &[u8]) -> Option<u64> {
    let (radix, digits) = if let Some(d) = token
        .strip_prefix(b"0x")
        .or_else(|| token.strip_prefix(b"0X"))
    {
        (16, d)
    } else if let Some(d) = token
        .strip_prefix(b"0b")
        .or_else(|| token.strip_prefix(b"0B"))
    {
        (2, d)
    } else if let Some(d) = token.strip_prefix(b"0o") {
        (8, d)
    } else if token.len() > 1 && token[0] == b'0' && token[1].is_ascii_digit() {
        (8, &token[1..])
    } else {
        (10, token)
    };
    if digits.is_empty() {
        return None;
    }
    // By hand rather than `u64::from_str_radix`: this runs once per input line, and the
    // std path (UTF-8 check, then generic parsing) cost ~600 instructions per address.
    digits.iter().try_fold(0u64, |value, &b| {
        let digit = (b as char).to_digit(radix)?;
        value
            .checked_mul(u64::from(radix))?
            .checked_add(u64::from(digit))
    })
}

/// The `(PATH+0xOFFSET)` part of a sanitizer frame, if the line has one (the first one).
///
/// The offset is the pc minus the module's load base. It is looked up as an ELF virtual
/// address (`Input::VirtAddrs`), not as a file offset: for a PIE or a shared library whose
/// first PT_LOAD has p_vaddr 0 (what ld emits), pc - base is exactly the ELF virtual
/// address. For a non-PIE executable the sanitizers print base 0, so the "offset" is the
/// absolute address, which is again the ELF virtual address. A file offset would differ from
/// both as soon as a segment's p_offset differs from its p_vaddr (every data segment).
pub fn sanitizer_frame(line: &[u8]) -> Option<(&[u8], u64)> {
    let mut from = 0;
    while let Some(open) = line[from..].iter().position(|&b| b == b'(') {
        let start = from + open + 1;
        let close = line[start..].iter().position(|&b| b == b')')?;
        let inner = &line[start..start + close];
        if let Some(plus) = inner.windows(3).rposition(|w| w == b"+0x") {
            let (path, hex) = (&inner[..plus], &inner[plus + 3..]);
            if !path.is_empty() && !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit) {
                if let Some(offset) = std::str::from_utf8(hex)
                    .ok()
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                {
                    return Some((path, offset));
                }
            }
        }
        from = start;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_hex_line_reads_as_the_grammar_reads_it() {
        let query = |addr| Parsed::Query {
            kind: Kind::Code,
            module: None,
            addr,
        };
        assert_eq!(parse_line(b"0x401265", true), query(0x401265));
        assert_eq!(parse_line(b" 0x401265", true), query(0x401265));
        assert_eq!(parse_line(b"0x401265 trailing", true), query(0x401265));
        // Overflow is explained by the grammar's path, not answered.
        assert!(matches!(
            parse_line(b"0x10000000000000000", true),
            Parsed::Invalid { .. }
        ));
        // Without --obj the first token is the module.
        assert!(matches!(
            parse_line(b"0x401265", false),
            Parsed::Invalid { .. }
        ));
    }

    #[test]
    fn numbers_as_llvm_reads_them() {
        assert_eq!(parse_number(b"0x401265"), Some(0x401265));
        assert_eq!(parse_number(b"0X40126F"), Some(0x40126f));
        assert_eq!(parse_number(b"0xffffffffffffffff"), Some(u64::MAX));
        assert_eq!(parse_number(b"0x10000000000000000"), None, "overflow");
        assert_eq!(parse_number(b"4199013"), Some(4199013));
        assert_eq!(parse_number(b"18446744073709551616"), None, "overflow");
        assert_eq!(parse_number(b"017"), Some(0o17));
        assert_eq!(parse_number(b"0o17"), Some(0o17));
        assert_eq!(parse_number(b"0b101"), Some(5));
        assert_eq!(parse_number(b"0"), Some(0));
        for bad in [&b""[..], b"0x", b"0xg", b"08", b"0b2", b"-1", b"+1", b"12a"] {
            assert_eq!(parse_number(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
