//! Which of several symbols at one address perf names, for `stacksym perf` (src/perf/).
//!
//! stacksym picks among aliases by its own rule (global, then weak, then local; the
//! version apart from the name). perf 6.1 keeps one symbol per address by
//! `choose_best_symbol` (util/symbol.c), over the function symbols of the table it read,
//! in table order: a sized symbol over an unsized one, a non-weak over a weak one, a global
//! over a local one, fewer leading underscores, the longer name, else the first. The name
//! keeps what the table spells after it (`cfree@GLIBC_2.2.5`, as glibc's `.symtab` has it).
//! So `__GI___qsort_r` (local, the longest) where stacksym says `qsort_r`, and
//! `cfree@GLIBC_2.2.5` where it says `free`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSymbol, SymbolFlags, SymbolKind};

/// perf's pick per address, by the file whose table named a symbol.
#[derive(Default)]
pub struct PerfNames {
    files: HashMap<PathBuf, Option<Table>>,
    /// perf's answers in PLT sections (src/perf/plt.rs).
    pub plt: super::plt::PerfPlt,
}

/// One file's symbols as perf keeps them.
struct Table {
    /// The file, mapped: the names are read from it where they lie (a `String` per symbol
    /// and two hash maps took a sixth of a system-wide run's naming thread).
    map: memmap2::Mmap,
    /// perf's pick per address, sorted by start: (start, end, its name's offset and
    /// length in `map`); a symbol without a size ends where the next one starts (perf's
    /// `symbols__fixup_end`).
    picks: Vec<(u64, u64, usize, usize)>,
}

impl Table {
    fn name(&self, pick: &(u64, u64, usize, usize)) -> Option<&str> {
        let &(_, _, at, len) = pick;
        std::str::from_utf8(self.map.get(at..at.checked_add(len)?)?).ok()
    }
}

#[derive(Clone, Copy)]
struct Candidate<'a> {
    name: &'a str,
    sized: bool,
    weak: bool,
    global: bool,
}

impl Candidate<'_> {
    /// perf's `choose_best_symbol(self, other)`: true when `self` (the earlier) stays.
    fn beats(&self, other: &Candidate<'_>) -> bool {
        if self.sized != other.sized {
            return self.sized;
        }
        if self.weak != other.weak {
            return !self.weak;
        }
        if self.global != other.global {
            return self.global;
        }
        let underscores = |name: &str| name.bytes().take_while(|&b| b == b'_').count();
        let (a, b) = (underscores(self.name), underscores(other.name));
        if a != b {
            return a < b;
        }
        self.name.len() >= other.name.len()
    }
}

impl PerfNames {
    /// The name perf gives the function symbols at `addr` (an ELF virtual address) of
    /// `file`'s symbol table; `None` when it cannot be read or has no symbol there.
    pub fn at(&mut self, file: &Path, addr: u64) -> Option<&str> {
        let table = self.table(file)?;
        let at = table
            .picks
            .binary_search_by_key(&addr, |pick| pick.0)
            .ok()?;
        table.name(table.picks.get(at)?)
    }

    /// The symbol perf finds `addr` in, and the offset into it, where stacksym found none:
    /// perf also takes `STT_NOTYPE` labels (ld.so's `_start`), and a label or a symbol
    /// without a size reaches to the next symbol.
    pub fn containing(&mut self, file: &Path, addr: u64) -> Option<(&str, u64)> {
        let table = self.table(file)?;
        let at = table.picks.partition_point(|pick| pick.0 <= addr);
        let pick = table.picks.get(at.checked_sub(1)?)?;
        if addr >= pick.1 {
            return None;
        }
        Some((table.name(pick)?, addr - pick.0))
    }

    fn table(&mut self, file: &Path) -> Option<&Table> {
        // Looked up before an owned key is made: a `PathBuf` per name asked took a tenth of
        // this lookup's time.
        if !self.files.contains_key(file) {
            self.files.insert(file.to_path_buf(), read(file));
        }
        self.files.get(file)?.as_ref()
    }
}

fn read(path: &Path) -> Option<Table> {
    let file = std::fs::File::open(path).ok()?;
    // Mapped, not read: only the symbol and string tables' pages are touched (reading a
    // whole debug file or libLLVM took a quarter of a system-wide run's time). SAFETY: the
    // map lives as long as the table built from it, read only; a file truncated meanwhile by
    // another process would fault, a risk this example accepts (the library guards its own
    // maps, see src/elf/sigbus.rs).
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let picks = picks(&map)?;
    Some(Table { map, picks })
}

/// perf's pick per address of the ELF file `bytes` (see [`Table::picks`]).
fn picks(bytes: &[u8]) -> Option<Vec<(u64, u64, usize, usize)>> {
    let elf = object::File::parse(bytes).ok()?;
    let use_dynamic = elf.symbols().next().is_none();
    let symbols: Box<dyn Iterator<Item = object::Symbol<'_, '_>>> = if use_dynamic {
        Box::new(elf.dynamic_symbols())
    } else {
        Box::new(elf.symbols())
    };
    // (address, size, candidate) of every function symbol, in table order.
    let mut all: Vec<(u64, u64, Candidate<'_>)> = Vec::new();
    for sym in symbols {
        if sym.is_undefined() {
            continue;
        }
        // perf's elf_sym__is_label: a defined STT_NOTYPE symbol in a section (not an
        // absolute one), as ld.so's `_start`; mapping symbols (`$x`) aside.
        let label = matches!(sym.kind(), SymbolKind::Unknown)
            && matches!(sym.flags(), SymbolFlags::Elf { st_info, .. }
                if st_info.st_type() == object::elf::STT_NOTYPE)
            && sym.section_index().is_some()
            && !raw_name(&sym).starts_with(b"$");
        if !matches!(sym.kind(), SymbolKind::Text) && !label {
            continue;
        }
        let Ok(name) = std::str::from_utf8(raw_name(&sym)) else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let bind = match sym.flags() {
            SymbolFlags::Elf { st_info, .. } => Some(st_info.st_bind()),
            _ => None,
        };
        let (global, weak) = (
            bind == Some(object::elf::STB_GLOBAL),
            bind == Some(object::elf::STB_WEAK),
        );
        let candidate = Candidate {
            name,
            sized: sym.size() > 0,
            weak,
            global,
        };
        all.push((sym.address(), sym.size(), candidate));
    }
    // The symbols of one address together, in table order (a stable sort), where perf
    // keeps the first unless a later one beats it.
    all.sort_by_key(|&(addr, _, _)| addr);
    let runs: Vec<(u64, u64, Candidate<'_>)> = all
        .chunk_by(|a, b| a.0 == b.0)
        .filter_map(|run| {
            let (&(addr, _, first), rest) = run.split_first()?;
            let best = rest.iter().fold(
                first,
                |best, &(_, _, next)| {
                    if best.beats(&next) {
                        best
                    } else {
                        next
                    }
                },
            );
            let size = run.iter().map(|&(_, size, _)| size).max().unwrap_or(0);
            Some((addr, size, best))
        })
        .collect();
    let base = bytes.as_ptr() as usize;
    let picks = runs
        .iter()
        .enumerate()
        .map(|(i, &(start, size, best))| {
            let end = match size {
                0 => runs.get(i + 1).map_or(start, |next| next.0),
                size => start.saturating_add(size),
            };
            // The name lies in `bytes` (object reads names from the data it parses).
            let at = (best.name.as_ptr() as usize).wrapping_sub(base);
            (start, end, at, best.name.len())
        })
        .collect();
    Some(picks)
}

/// The symbol's name as the table spells it (object gives `.dynsym` names without their
/// version, which is what perf shows for them too).
fn raw_name<'a>(sym: &object::Symbol<'a, '_>) -> &'a [u8] {
    sym.name_bytes().unwrap_or_default()
}

/// perf's pick among kallsyms lines at one address, where it differs from stacksym's.
///
/// perf 6.1 (`dso__load_kallsyms`) gives kallsyms symbols their ends first (each ends where
/// the next starts: `symbols__fixup_end`), then keeps one symbol per address
/// (`symbols__fixup_duplicate`, `choose_best_symbol`): aliases before the last line at an
/// address end where they start, and a sized symbol beats an unsized one, so the last line
/// (in file order) wins. `__x64_sys_rt_sigreturn`, after `__ia32_sys_rt_sigreturn` and
/// `__do_sys_rt_sigreturn`, where stacksym keeps the first global one.
pub struct KernelAliases {
    /// The name perf gives the text symbols at an address, where it is not the one
    /// `Kallsyms::find_symbol` answers.
    last: HashMap<u64, String>,
}

/// The last text line's name at each address that has more than one, from kallsyms' text
/// before it is indexed: what [`KernelAliases::new`] keeps where stacksym's pick differs.
pub struct AliasCandidates(Vec<(u64, String)>);

impl AliasCandidates {
    /// One pass over the text `Kallsyms::from_bytes` is about to index, without a string or
    /// a table entry per symbol (an entry per address, through `Kallsyms::lines`, took
    /// 80 ms on a 122,000-line kallsyms, more than indexing it). Lines are read as the
    /// library reads them (`parse_line` in src/kernel/kallsyms.rs): a line it skips as
    /// malformed, or that is not UTF-8, is skipped here too.
    pub fn new(text: &[u8]) -> AliasCandidates {
        // (address, name) of every text line, in file order; lines found by `str`'s
        // word-at-a-time newline search where the text is UTF-8.
        let utf8 = std::str::from_utf8(text).ok();
        let lines = || -> Box<dyn Iterator<Item = (u64, &str)> + '_> {
            match utf8 {
                Some(text) => Box::new(text.split('\n').filter_map(|l| text_line(l.as_bytes()))),
                None => Box::new(text.split(|&b| b == b'\n').filter_map(text_line)),
            }
        };
        // A running kernel's text lines are in address order (its modules' may not be):
        // then the lines of one address are together, taken as they come.
        let mut candidates = Vec::new();
        let mut run: Option<((u64, &str), usize)> = None;
        for line in lines() {
            run = match run {
                Some(((addr, _), _)) if line.0 < addr => {
                    // Not in order: all of them, sorted (stably: file order within an address).
                    let mut all: Vec<(u64, &str)> = lines().collect();
                    all.sort_by_key(|&(addr, _)| addr);
                    let runs = all.chunk_by(|a, b| a.0 == b.0);
                    let last = runs
                        .filter(|run| run.len() > 1)
                        .filter_map(|run| run.last());
                    let candidates = last.map(|&(addr, name)| (addr, name.to_string()));
                    return AliasCandidates(candidates.collect());
                }
                Some(((addr, _), count)) if line.0 == addr => Some((line, count + 1)),
                Some((last, count)) => {
                    if count > 1 {
                        candidates.push((last.0, last.1.to_string()));
                    }
                    Some((line, 1))
                }
                None => Some((line, 1)),
            };
        }
        if let Some((last, _)) = run.filter(|&(_, count)| count > 1) {
            candidates.push((last.0, last.1.to_string()));
        }
        AliasCandidates(candidates)
    }
}

/// The address and name of a kallsyms line of a text symbol (`t`, `T`, `w`, `W`); `None` for
/// another symbol's, and for a line src/kernel/kallsyms.rs's `parse_line` rejects: longer
/// than 1024 bytes, fewer than 3 or more than 4 fields (split at spaces, tabs and CRs), an
/// address of more than 16 hex digits, a type of more than one byte, a name longer than 511
/// bytes, a fourth field that is not a bracketed module.
fn text_line(line: &[u8]) -> Option<(u64, &str)> {
    const MAX_LINE_LEN: usize = 1024;
    const MAX_NAME_LEN: usize = 511;
    if line.len() > MAX_LINE_LEN {
        return None;
    }
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\r');
    // The kernel's own layout, `%016lx %c %s`: the address and the type at their places, the
    // name to the end (a module's line goes on with a tab: read below).
    if let (Some(digits), Some(&[b' ', kind, b' '])) = (line.get(..16), line.get(16..19)) {
        let addr = digits.iter().try_fold(0u64, |value, &b| {
            Some(value << 4 | u64::from(char::from(b).to_digit(16)?))
        });
        if let (Some(addr), false) = (addr, space(&kind)) {
            if !matches!(kind, b't' | b'T' | b'w' | b'W') {
                return None;
            }
            let name = line.get(19..).unwrap_or_default();
            if !name.is_empty() && name.len() <= MAX_NAME_LEN && !name.iter().any(space) {
                // The line is UTF-8 when its name is (the rest is ASCII).
                return Some((addr, std::str::from_utf8(name).ok()?));
            }
        }
    }
    let mut rest = line;
    let mut fields = std::iter::from_fn(|| {
        let start = rest.iter().position(|b| !space(b))?;
        let field = rest.get(start..)?;
        let len = field.iter().position(space).unwrap_or(field.len());
        let (field, after) = field.split_at(len);
        rest = after;
        Some(field)
    });
    let (addr, kind) = (fields.next()?, fields.next()?);
    // Another symbol's line is rejected here, before its name is looked at.
    if !matches!(kind, b"t" | b"T" | b"w" | b"W") {
        return None;
    }
    let name = fields.next()?;
    if let Some(module) = fields.next() {
        let bracketed = module.len() >= 3 && module.starts_with(b"[") && module.ends_with(b"]");
        if !bracketed || fields.next().is_some() {
            return None;
        }
    }
    if addr.len() > 16
        || name.len() > MAX_NAME_LEN
        || !(line.is_ascii() || std::str::from_utf8(line).is_ok())
    {
        return None;
    }
    let mut value = 0u64;
    for &b in addr {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        value = value << 4 | u64::from(digit);
    }
    Some((value, std::str::from_utf8(name).ok()?))
}

impl KernelAliases {
    /// Keeps the candidates where `kallsyms` (indexed from the same text) answers another
    /// name at the address.
    pub fn new(
        candidates: AliasCandidates,
        kallsyms: &stacksym::kernel::Kallsyms,
    ) -> KernelAliases {
        let last = candidates
            .0
            .into_iter()
            .filter(|(addr, name)| {
                kallsyms
                    .find_symbol(stacksym::AbsAddr(*addr))
                    .ok()
                    .flatten()
                    .is_some_and(|sym| sym.addr.0 == *addr && sym.name != name)
            })
            .collect();
        KernelAliases { last }
    }

    /// perf's name for the symbol starting at `addr` that stacksym names `name`.
    pub fn name<'a>(&'a self, addr: u64, name: &'a str) -> &'a str {
        self.last.get(&addr).map_or(name, String::as_str)
    }
}
