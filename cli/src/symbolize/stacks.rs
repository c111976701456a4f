//! Stack-dump input (`--stacks`, or detected): bpftrace map output with raw stacks,
//!
//! ```text
//! @[
//!     0xffffffff81234567
//!     0x7f12345678
//! ]: 42
//! ```
//!
//! printed back with the same layout and each address replaced by `name+OFFSET` (decimal
//! offset, as bpftrace prints symbolized frames), or, with `--folded`, as folded stacks
//! `outer;...;inner COUNT` (the dump lists the innermost frame first).

use std::collections::HashMap;
use std::io::{self, Write};

use stacksym::Symbolizer;

use crate::symbolize::live::{is_kernel, Live, Resolved};
use crate::symbolize::output::{Answer, Origin};
use crate::symbolize::stack_parse::{count_of, first_field, parse, parse_addr, Piece};

/// The frame as the block output shows it: `name+OFFSET` (` [module]` for a kernel module).
fn block_name(answer: &Answer) -> String {
    match &answer.origin {
        Origin::KernelModule(m) => format!("{}+{} [{m}]", answer.name, answer.offset),
        Origin::Elf | Origin::KernelImage => format!("{}+{}", answer.name, answer.offset),
    }
}

/// A frame of a folded stack: the function alone (`;` would split it, so it becomes `:`).
fn folded_name(name: &str) -> String {
    name.replace(';', ":")
}

/// A frame line kept as it was, for a folded stack: its first field without `+OFFSET`.
fn folded_text(text: &[u8]) -> String {
    let field = String::from_utf8_lossy(first_field(text)).into_owned();
    if parse_addr(first_field(text)).is_some() {
        return field;
    }
    let name = match field.rsplit_once('+') {
        Some((name, off))
            if !name.is_empty()
                && (off.parse::<u64>().is_ok()
                    || off
                        .strip_prefix("0x")
                        .is_some_and(|h| u64::from_str_radix(h, 16).is_ok())) =>
        {
            name.to_string()
        }
        _ => field,
    };
    folded_name(&name)
}

/// Symbolizes a stack dump and prints it. Returns `false` when something was reported on
/// stderr that should make the exit code 1 (the `--pid` process could not be inspected).
pub fn run(
    input: &[u8],
    live: &Live,
    symbolizer: &Symbolizer,
    folded: bool,
    out: &mut impl Write,
) -> io::Result<bool> {
    let pieces = parse(input);
    let frames = || {
        pieces.iter().flat_map(|p| match p {
            Piece::Block { frames, .. } => frames.as_slice(),
            Piece::Text(_) => &[],
        })
    };

    // Answers for every address: kernel ones from kallsyms, user ones with one process call.
    let mut answers: HashMap<u64, Answer> = HashMap::new();
    let mut user: Vec<u64> = Vec::new();
    let mut kernel_skipped = false;
    for addr in frames().filter_map(|f| f.addr) {
        if answers.contains_key(&addr) {
            continue;
        }
        if is_kernel(addr) {
            match live.kallsyms {
                Some(_) => {
                    if let Resolved::Found(answer, _) = live.kernel(symbolizer, addr, true) {
                        answers.insert(addr, answer);
                    }
                }
                None => kernel_skipped = true,
            }
        } else if live.process.is_some() {
            user.push(addr);
        }
    }
    let mut ok = true;
    if kernel_skipped {
        eprintln!(
            "symbolize: kernel addresses are kept as they are: give --kernel (or --kallsyms FILE) \
             to symbolize them"
        );
    }
    user.sort_unstable();
    user.dedup();
    if !user.is_empty() {
        match live.process(symbolizer, &user, true) {
            Ok(results) => {
                for (addr, resolved) in user.iter().zip(results) {
                    match resolved {
                        Resolved::Found(answer, _) => {
                            answers.insert(*addr, answer);
                        }
                        Resolved::NotFound(_) => {}
                        Resolved::Error(_, message) => {
                            eprintln!("symbolize: error reading file: {message}");
                        }
                    }
                }
            }
            Err(err) => {
                eprintln!("symbolize: {err}");
                ok = false;
            }
        }
    }

    if folded {
        write_folded(&pieces, &answers, out)?;
    } else {
        for piece in &pieces {
            match piece {
                Piece::Text(line) => {
                    out.write_all(line)?;
                    out.write_all(b"\n")?;
                }
                Piece::Block {
                    opener,
                    frames,
                    closer,
                } => {
                    out.write_all(opener)?;
                    out.write_all(b"\n")?;
                    for frame in frames {
                        out.write_all(frame.indent)?;
                        match frame.addr.and_then(|a| answers.get(&a)) {
                            Some(answer) => out.write_all(block_name(answer).as_bytes())?,
                            None => out.write_all(frame.text)?,
                        }
                        out.write_all(b"\n")?;
                    }
                    if let Some(closer) = closer {
                        out.write_all(closer)?;
                        out.write_all(b"\n")?;
                    }
                }
            }
        }
    }
    out.flush()?;
    Ok(ok)
}

/// One line per distinct stack, outermost frame first, counts of identical stacks summed,
/// in the order stacks first appear. Blocks without a count are left out (noted on stderr).
fn write_folded(
    pieces: &[Piece<'_>],
    answers: &HashMap<u64, Answer>,
    out: &mut impl Write,
) -> io::Result<()> {
    let mut order: Vec<String> = Vec::new();
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut uncounted = 0;
    for piece in pieces {
        let Piece::Block { frames, closer, .. } = piece else {
            continue;
        };
        let Some(count) = closer.and_then(count_of) else {
            uncounted += 1;
            continue;
        };
        let names: Vec<String> = frames
            .iter()
            .rev()
            // `,` alone separates the parts of a key such as `@[kstack(raw), ustack(raw)]`.
            .filter(|f| !f.text.is_empty() && f.text != b",")
            .map(|f| match f.addr.and_then(|a| answers.get(&a)) {
                Some(answer) => folded_name(&answer.name),
                None => folded_text(f.text),
            })
            .collect();
        let stack = names.join(";");
        match counts.get_mut(&stack) {
            Some(total) => *total += count,
            None => {
                counts.insert(stack.clone(), count);
                order.push(stack);
            }
        }
    }
    if uncounted > 0 {
        eprintln!("symbolize: {uncounted} stack block(s) without a `]: COUNT` line left out");
    }
    for stack in order {
        writeln!(out, "{stack} {}", counts[&stack])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::stack_parse::{is_closer, is_opener};

    #[test]
    fn openers_closers_addresses() {
        assert!(is_opener(b"@["));
        assert!(is_opener(b"@stacks["));
        assert!(is_opener(b"@[python3, "));
        assert!(!is_opener(b"@x[1]: 3"));
        assert!(!is_opener(b"0xffff"));
        assert!(is_closer(b"]: 42"));
        assert!(is_closer(b", python3]: 7"));
        assert_eq!(count_of(b", python3]: 7"), Some(7));
        assert_eq!(parse_addr(b"0xffffffff81000104"), Some(0xffffffff81000104));
        assert_eq!(parse_addr(b"ffffffff81000104"), Some(0xffffffff81000104));
        assert_eq!(parse_addr(b"do_work+5"), None);
        assert_eq!(parse_addr(b"cafe"), None);
        assert_eq!(folded_text(b"do_work+5"), "do_work");
        assert_eq!(folded_text(b"main+0x1a"), "main");
        assert_eq!(folded_text(b"a+b"), "a+b");
    }
}
