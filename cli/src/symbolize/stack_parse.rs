//! The stack-dump parser of `--stacks`: bpftrace map output with raw stacks, split into
//! plain lines and blocks (`@[` ... `]: COUNT`) of frame lines. Pure (no I/O, no stacksym), so
//! `fuzz/fuzz_targets/stack_dump.rs` includes this file as it is.

/// One frame line of a block.
pub struct Frame<'a> {
    /// The leading blanks (kept in the block output).
    pub indent: &'a [u8],
    /// The line without its indent.
    pub text: &'a [u8],
    /// The address, when the line's first field is one.
    pub addr: Option<u64>,
}

/// A piece of the dump: a line outside any stack, or a stack block.
pub enum Piece<'a> {
    Text(&'a [u8]),
    Block {
        opener: &'a [u8],
        frames: Vec<Frame<'a>>,
        /// `]: COUNT` (or `, KEY]: COUNT`); `None` when the input ended inside the block.
        closer: Option<&'a [u8]>,
    },
}

fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

/// A block opener: `@[`, `@name[`, or `@[KEY, ` (a map keyed by more than the stack), with
/// no `]:` on the line.
pub fn is_opener(line: &[u8]) -> bool {
    let line = trim(line);
    let Some(rest) = line.strip_prefix(b"@") else {
        return false;
    };
    let ident = rest
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_')
        .count();
    rest.get(ident) == Some(&b'[') && !line.windows(2).any(|w| w == b"]:")
}

/// A block closer: `]: COUNT` or `, KEY]: COUNT` (also a bare `]`).
pub fn is_closer(line: &[u8]) -> bool {
    let line = trim(line);
    (line.starts_with(b"]") || line.starts_with(b",")) && line.contains(&b']')
}

/// The count after the last `]:` of a closer.
pub fn count_of(closer: &[u8]) -> Option<u64> {
    let at = closer.windows(2).rposition(|w| w == b"]:")?;
    std::str::from_utf8(trim(&closer[at + 2..]))
        .ok()?
        .parse()
        .ok()
}

/// An address field: `0x` hex, or bare hex of at least 8 digits (as `kstack(raw)` may
/// print them); names like `do_work+5` are not addresses.
pub fn parse_addr(token: &[u8]) -> Option<u64> {
    let digits = match token
        .strip_prefix(b"0x")
        .or_else(|| token.strip_prefix(b"0X"))
    {
        Some(d) => d,
        None if token.len() >= 8 => token,
        None => return None,
    };
    if digits.is_empty() || digits.len() > 16 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

pub fn first_field(text: &[u8]) -> &[u8] {
    let end = text
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .unwrap_or(text.len());
    &text[..end]
}

pub fn parse(input: &[u8]) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut block: Option<(&[u8], Vec<Frame<'_>>)> = None;
    for line in input.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match block.take() {
            None if is_opener(line) => block = Some((line, Vec::new())),
            None => pieces.push(Piece::Text(line)),
            Some((opener, frames)) if is_closer(line) => pieces.push(Piece::Block {
                opener,
                frames,
                closer: Some(line),
            }),
            Some((opener, mut frames)) => {
                let indent_len = line.iter().take_while(|b| b.is_ascii_whitespace()).count();
                let (indent, text) = line.split_at(indent_len);
                let text = text.trim_ascii_end();
                frames.push(Frame {
                    indent,
                    text,
                    addr: parse_addr(first_field(text)),
                });
                block = Some((opener, frames));
            }
        }
    }
    if let Some((opener, frames)) = block {
        pieces.push(Piece::Block {
            opener,
            frames,
            closer: None,
        });
    }
    // `split` yields an empty last piece after a final newline: not a line of the input.
    if input.ends_with(b"\n") {
        if let Some(Piece::Text(b"")) = pieces.last() {
            pieces.pop();
        }
    }
    pieces
}
