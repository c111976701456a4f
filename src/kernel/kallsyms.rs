//! The kallsyms parser and its address index.
//!
//! Input: the text of `/proc/kallsyms` (or a copy), one symbol per line:
//! `ADDR TYPE NAME` or `ADDR TYPE NAME [MODULE]`, fields separated by spaces or tabs (the
//! kernel writes `%px %c %s\t[%s]`). `ADDR` is 1 to 16 hex digits without `0x`, `TYPE` one
//! character as `nm` prints it (`t`/`T` text, `w`/`W` weak, `d`/`D`, `b`/`B`, `r`/`R` data,
//! `a`/`A` absolute, ...; lower case is local), `MODULE` is bracketed (`[ext4]`, and the
//! kernel's pseudo-modules such as `[bpf]` or `[__builtin__ftrace]`).
//!
//! # The index
//! No string is copied: the file's text is kept (as one `String`: lines that are not UTF-8 are
//! blanked first) and each symbol is a 16-byte slot: a 4-byte address delta and a 12-byte
//! entry (name offset, size, name length and type character, module number). Module names
//! are stored once per module, as offsets too.
//!
//! The symbols, by address, are cut into blocks of up to 16 (a new block also starts where an
//! address is 4 GiB or more past its block's first, e.g. from per-CPU symbols at 0 to the
//! kernel image). A block is its first address (in a summary of 8 bytes per block, searched by
//! binary search) and 16 slots whose deltas count from it: 256 bytes, 64-byte aligned, so 4
//! symbols to a cache line; padded with slots of delta `u32::MAX`. In the block, a lookup
//! counts instead of searching: first the lines whose first delta is at or below the
//! looked-up address (one read in each of the 4 lines, all issued at once, where a binary
//! search would wait for one line before reading the next), then the slots of that line. No
//! branch depends on the data, and the entry found is in a line already read, so a lookup
//! waits for memory twice: the block, then the name.
//!
//! The rules for bad lines, duplicate addresses and symbol ends are in [`Kallsyms`]'s docs.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::addr::AbsAddr;
use crate::error::{Error, Result};
use crate::radix::sorted_by_key;

/// Where the running kernel lists its symbols.
pub const PROC_KALLSYMS: &str = "/proc/kallsyms";

/// Longest line accepted (the kernel's longest is about 600 bytes: a 511-byte name, a
/// 16-digit address and a module name); longer lines are skipped as malformed.
pub const MAX_LINE_LEN: usize = 1024;

/// Longest name accepted: the kernel's `KSYM_NAME_LEN` (512) less its terminating NUL.
pub const MAX_NAME_LEN: usize = 511;

/// Symbols per cache line: a [`Slot`] is 16 bytes, a [`Block`] 64-byte aligned.
const PER_LINE: usize = 4;

/// Cache lines per block (measured: 2 and 8 were slower than 4).
const LINES: usize = 4;

/// Symbols per block.
const BLOCK: usize = PER_LINE * LINES;

/// The delta of a padding slot: above every delta kept (those are at most `u32::MAX - 1`).
const PAD: u32 = u32::MAX;

/// The end of a group's last symbol is at most the end of its page of this size.
const PAGE: u64 = 4096;

/// `Entry::len_type`: the name length in the low 9 bits, the type character above them.
const LEN_BITS: u16 = 9;
const LEN_MASK: u16 = (1 << LEN_BITS) - 1;
// MAX_NAME_LEN must fit in the length bits.
const _: () = assert!(MAX_NAME_LEN <= LEN_MASK as usize);

/// One indexed symbol, less its address.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Byte offset of the name in the text.
    name_offset: u32,
    /// Bytes up to where the symbol ends (see [`Kallsyms`]), clamped to `u32::MAX`.
    size: u32,
    /// Name length (9 bits) and the ASCII type character (7 bits).
    len_type: u16,
    /// 0 for the kernel image, else 1 + the index in [`Kallsyms::modules`].
    module: u16,
}

/// One symbol in a block: its address less the block's first address, and its entry.
#[derive(Debug, Clone, Copy)]
struct Slot {
    delta: u32,
    entry: Entry,
}

/// [`BLOCK`] slots by address, [`PER_LINE`] to a cache line; [`Slot::PADDING`] after the last.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Block([Slot; BLOCK]);

impl Slot {
    /// After a block's last symbol: above every address, and an empty name.
    const PADDING: Slot = Slot {
        delta: PAD,
        entry: Entry {
            name_offset: 0,
            size: 0,
            len_type: 0,
            module: 0,
        },
    };
}

impl Entry {
    fn name_len(self) -> usize {
        usize::from(self.len_type & LEN_MASK)
    }

    fn type_byte(self) -> u8 {
        // 7 bits are left after the 9 of the length: an ASCII byte, as parse_line checked.
        (self.len_type >> LEN_BITS) as u8
    }
}

/// A kernel symbol covering an address, borrowed from the [`Kallsyms`] it was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSym<'a> {
    /// The symbol's name as kallsyms lists it, e.g. `do_sys_openat2`.
    pub name: &'a str,
    /// The symbol's start address.
    pub addr: AbsAddr,
    /// How far into the symbol the looked-up address is (`0` in [`Kallsyms::symbols`]).
    pub offset: u64,
    /// The bytes up to where the symbol is taken to end (kallsyms has no sizes: see
    /// [`Kallsyms`] for the rule).
    pub size: u64,
    /// The module the symbol belongs to, without brackets (`ext4`); `None` for the kernel
    /// image (vmlinux) itself.
    pub module: Option<&'a str>,
    /// The type character as kallsyms lists it: `t`/`T` text, `w`/`W` weak, `d`/`D`,
    /// `b`/`B`, `r`/`R` data, `a`/`A` absolute, ...; lower case is local.
    pub type_char: char,
}

impl KernelSym<'_> {
    /// Whether this is a text (code) symbol: type `t`, `T`, `w` or `W`.
    pub fn is_text(&self) -> bool {
        is_text(self.type_char as u8)
    }
}

/// The symbols of a kallsyms file, indexed by address.
///
/// Build it with [`Kallsyms::open`] (a path, e.g. [`PROC_KALLSYMS`]) or
/// [`Kallsyms::from_bytes`]; look addresses up with [`Kallsyms::find_symbol`] (code) or
/// [`Kallsyms::find_any_symbol`] (code or data). It is immutable, `Send` and `Sync`.
///
/// # Bad lines
/// Each line is `ADDR TYPE NAME` or `ADDR TYPE NAME [MODULE]` (see [`crate::kernel`]). A
/// line that is not of that shape (bad hex, a missing or extra field, a `TYPE` of more than
/// one character, a line over 1024 bytes or a name over 511, bytes
/// that are not UTF-8) is skipped and counted ([`Kallsyms::skipped_lines`]); the count and
/// the first such line are logged with `log::debug!`. Blank lines are ignored. When no line
/// at all is a symbol line (an empty file, binary garbage), opening fails with
/// [`Error::Kallsyms`]. When every address is 0 the kernel is hiding them (`kptr_restrict`,
/// no `CAP_SYSLOG`), and opening fails with [`Error::KernelAddrsHidden`], which says so and
/// how to fix it.
///
/// # One symbol per address
/// When several lines share an address, one is kept, chosen by these rules in order (the
/// first that differs decides):
/// 1. a text symbol (`t T w W`) over a data symbol (`d D b B r R v V g G s S u`) over any
///    other type;
/// 2. global (upper-case type) over weak (`w W v V`) over local (lower-case);
/// 3. a name without the `__pfx_` / `__cfi_` prefix (the padding and CFI stubs kernels built
///    with `CONFIG_FUNCTION_PADDING` / kCFI emit 16 bytes before each function) over one with;
/// 4. the earlier line in the file.
///
/// `__pfx_foo` and `foo` have different addresses, so both are kept: an address inside
/// `foo` is named `foo`, one inside its 16 bytes of padding `__pfx_foo`.
///
/// # Where a symbol ends
/// kallsyms has no sizes. A symbol of the kernel image ends at the next symbol of the kernel
/// image; a module's symbol at the next symbol of the same module (module memory is
/// allocated apart, so another module's symbols may lie in between). The last symbol of the
/// image or of a module ends at the next symbol of any module, and at the latest at the end
/// of its 4 KiB page. Sizes are kept as 32 bits: a symbol longer than 4 GiB is cut there.
///
/// A lookup takes the symbol with the highest address at or below the looked-up one, and
/// answers it when the address is before that symbol's end (`Ok(None)` otherwise: it does
/// not look further down, at another module's symbols).
#[derive(Debug)]
pub struct Kallsyms {
    /// The file the symbols came from (or the name given to [`Kallsyms::from_bytes`]).
    path: PathBuf,
    /// The file's text; lines that were not UTF-8 are blanked.
    text: String,
    /// The first address of each block (see the module docs); sorted, unique.
    summary: Vec<u64>,
    /// Per block, its symbols by address; [`PAD`] slots after its last.
    blocks: Vec<Block>,
    /// How many symbols are indexed (slots that are not padding).
    count: usize,
    /// Module names as (offset, length) in `text`, without the brackets.
    modules: Vec<(u32, u16)>,
    /// Lines skipped as malformed.
    skipped: usize,
}

impl Kallsyms {
    /// Reads and indexes a kallsyms file: [`PROC_KALLSYMS`] for the running kernel, or a copy.
    ///
    /// Fails when the file cannot be read, when no line in it is a symbol line, or when every
    /// address in it is 0 (the kernel hides addresses from this reader; the error says how to
    /// change that). Malformed lines are skipped (see [`Kallsyms::skipped_lines`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Kallsyms> {
        let path = path.as_ref();
        let io_error = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io_error)?;
        let meta = file.metadata().map_err(io_error)?;
        if !meta.is_file() {
            // A FIFO would block and a directory cannot be read.
            return Err(Error::NotAFile {
                path: path.to_path_buf(),
                kind: if meta.is_dir() {
                    "a directory"
                } else {
                    "not a regular file"
                },
            });
        }
        // /proc/kallsyms says its size is 0: start with room for a typical one (4-8 MB).
        let hint = usize::try_from(meta.len()).unwrap_or(0);
        let mut bytes = Vec::with_capacity(if hint == 0 { 8 << 20 } else { hint + 1 });
        file.read_to_end(&mut bytes).map_err(io_error)?;
        Kallsyms::from_bytes(path, bytes)
    }

    /// Indexes kallsyms text already in memory. `name` stands for a path in errors.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: impl Into<Vec<u8>>) -> Result<Kallsyms> {
        build(name.into(), bytes.into())
    }

    /// The path given to [`Kallsyms::open`] or the name given to [`Kallsyms::from_bytes`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many symbols are indexed (one per distinct address).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no symbol is indexed (never true for a successfully opened file).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// How many lines were skipped as malformed (blank lines are not counted).
    pub fn skipped_lines(&self) -> usize {
        self.skipped
    }

    /// The names of the modules that have symbols, in the order they first appear.
    pub fn modules(&self) -> impl Iterator<Item = &str> + '_ {
        self.modules
            .iter()
            .filter_map(|&(offset, len)| self.str_at(offset, usize::from(len)))
    }

    /// The address of the kernel image's (not a module's) symbol `name`, from any line that
    /// names it: also a name the index dropped for another at the same address (`_text`,
    /// `_stext` and `startup_64` share one). A linear scan of the text, for the few lookups
    /// by name there are (the KASLR anchor of [`crate::kernel::Vmlinux`]).
    pub fn address_of(&self, name: &str) -> Option<AbsAddr> {
        self.text.lines().find_map(|line| {
            let parsed = parse_line(line.as_bytes()).ok()??;
            let found = line.get(parsed.name.0..parsed.name.1)?;
            (found == name && parsed.module.is_none()).then_some(AbsAddr(parsed.addr))
        })
    }

    /// The text (code) symbol covering `addr`: `Ok(None)` when no symbol covers it or the
    /// symbol covering it is a data symbol.
    ///
    /// The `Result` is for symmetry with the other sources; with the index built when the
    /// file was opened, a lookup does not fail.
    // Inlined into the caller's loop over addresses (measured in benches/kernel.rs).
    #[inline]
    pub fn find_symbol(&self, addr: AbsAddr) -> Result<Option<KernelSym<'_>>> {
        Ok(self
            .find_any_symbol(addr)?
            .filter(|sym| is_text(sym.type_char as u8)))
    }

    /// The symbol of any type (code, data, absolute, ...) covering `addr`.
    #[inline]
    pub fn find_any_symbol(&self, addr: AbsAddr) -> Result<Option<KernelSym<'_>>> {
        let addr = addr.0;
        let Some((start, entry)) = self.at_or_below(addr) else {
            return Ok(None);
        };
        self.covering(addr, start, entry)
    }

    /// The text symbols covering `addrs`, one per address in input order: what
    /// [`Kallsyms::find_symbol`] gives for each, found faster for a large batch (a
    /// profile's samples). The addresses are visited in address order (a radix sort of
    /// the batch), so the index and the names are read front to back instead of at random:
    /// for 100,000 random addresses of a 122,000-symbol kallsyms, about half the time of
    /// 100,000 `find_symbol` calls (`cargo bench --bench kernel`: 59 vs 121 ns an address).
    pub fn find_symbols(&self, addrs: &[AbsAddr]) -> Result<Vec<Option<KernelSym<'_>>>> {
        let mut found = vec![None; addrs.len()];
        let mut block = 0;
        let order = sorted_by_key(addrs.iter().map(|addr| addr.0).zip(0..).collect());
        for (addr, index) in order {
            let Some(slot) = found.get_mut(index) else {
                continue; // An index of `addrs`: in range.
            };
            // The last block starting at or below `addr`: at or after the previous one, as
            // the addresses ascend (searched in what is left, so a sparse batch skips ahead).
            if self
                .summary
                .get(block + 1)
                .is_some_and(|&next| next <= addr)
            {
                let rest = self.summary.get(block + 1..).unwrap_or_default();
                block += rest.partition_point(|&first| first <= addr);
            }
            let Some((start, entry)) = self.at_or_below_in(block, addr) else {
                continue; // Below the first symbol (at_or_below_in checks).
            };
            *slot = self
                .covering(addr, start, entry)?
                .filter(|sym| is_text(sym.type_char as u8));
        }
        Ok(found)
    }

    /// The symbol `start`/`entry` (the last at or below `addr`) if it covers `addr`.
    #[inline]
    fn covering(&self, addr: u64, start: u64, entry: Entry) -> Result<Option<KernelSym<'_>>> {
        let offset = addr - start; // start <= addr: at_or_below's contract.
        if offset >= u64::from(entry.size) {
            return Ok(None);
        }
        let mut sym = self
            .symbol(start, entry)
            .ok_or_else(|| self.internal_error(start))?;
        sym.offset = offset;
        Ok(Some(sym))
    }

    /// Every symbol line of the file, in file order, aliases included (the index keeps one
    /// symbol per address; a name lookup must see them all). `offset` is 0; `size` is the
    /// indexed symbol's bound where the line is the one indexed at its address, else 0.
    /// Lines that do not parse are skipped, as when indexing.
    pub fn lines(&self) -> impl Iterator<Item = KernelSym<'_>> + '_ {
        self.text.split('\n').filter_map(move |line| {
            let parsed = parse_line(line.as_bytes()).ok()??;
            let field = |(start, end): (usize, usize)| line.get(start..end);
            let name = field(parsed.name)?;
            let module = match parsed.module {
                Some(range) => Some(field(range)?),
                None => None,
            };
            let size = match self.find_any_symbol(AbsAddr(parsed.addr)) {
                Ok(Some(sym)) if sym.addr.0 == parsed.addr && sym.name == name => sym.size,
                _ => 0,
            };
            Some(KernelSym {
                name,
                addr: AbsAddr(parsed.addr),
                offset: 0,
                size,
                module,
                type_char: char::from(parsed.type_byte),
            })
        })
    }

    /// Every indexed symbol, by address (`offset` is 0).
    pub fn symbols(&self) -> impl Iterator<Item = KernelSym<'_>> + '_ {
        self.summary
            .iter()
            .zip(&self.blocks)
            .flat_map(|(&base, Block(slots))| {
                slots
                    .iter()
                    .take_while(|slot| slot.delta != PAD)
                    .map(move |slot| (base + u64::from(slot.delta), slot.entry))
            })
            .filter_map(|(addr, entry)| self.symbol(addr, entry))
    }

    /// The start address and entry of the last symbol starting `<= addr`.
    fn at_or_below(&self, addr: u64) -> Option<(u64, Entry)> {
        let block = self
            .summary
            .partition_point(|&a| a <= addr)
            .checked_sub(1)?;
        self.at_or_below_in(block, addr)
    }

    /// [`Kallsyms::at_or_below`] in `block`, the last block whose first address is `<= addr`.
    #[inline]
    fn at_or_below_in(&self, block: usize, addr: u64) -> Option<(u64, Entry)> {
        let (&base, Block(slots)) = (self.summary.get(block)?, self.blocks.get(block)?);
        // None below the block's first address (only block 0 can be: the callers pass the
        // last block starting at or below `addr`); past PAD - 1 every delta kept is below.
        let key = u32::try_from(addr.checked_sub(base)?)
            .unwrap_or(PAD - 1)
            .min(PAD - 1);
        let at_or_below = |i: usize| slots.get(i).map_or(0, |s| usize::from(s.delta <= key));
        // Counts rather than a search: no branch on the data. First the lines (their first
        // slots: one read per line, all at once), then the slots of that line, in cache now.
        // Both counts are >= 1: the block's first delta is 0.
        let lines = (0..LINES).map(|l| at_or_below(l * PER_LINE)).sum::<usize>();
        let line = lines.checked_sub(1)?;
        let first = line * PER_LINE;
        let within = (1..PER_LINE).map(|i| at_or_below(first + i)).sum::<usize>();
        let slot = slots.get(first + within)?;
        Some((base + u64::from(slot.delta), slot.entry))
    }

    fn symbol(&self, addr: u64, entry: Entry) -> Option<KernelSym<'_>> {
        let name = self.str_at(entry.name_offset, entry.name_len())?;
        let module = match entry.module.checked_sub(1) {
            None => None,
            Some(m) => {
                let &(offset, len) = self.modules.get(usize::from(m))?;
                Some(self.str_at(offset, usize::from(len))?)
            }
        };
        Some(KernelSym {
            name,
            addr: AbsAddr(addr),
            offset: 0,
            size: u64::from(entry.size),
            module,
            type_char: char::from(entry.type_byte()),
        })
    }

    fn str_at(&self, offset: u32, len: usize) -> Option<&str> {
        let start = usize::try_from(offset).ok()?;
        self.text.get(start..start.checked_add(len)?)
    }

    /// Names and modules are checked when the index is built; this is for the impossible case.
    fn internal_error(&self, addr: u64) -> Error {
        Error::Kallsyms {
            path: self.path.clone(),
            what: format!("internal error: the symbol at {addr:#x} points outside the text"),
        }
    }
}

fn is_text(t: u8) -> bool {
    matches!(t, b't' | b'T' | b'w' | b'W')
}

/// Rules 1 and 2 of [`Kallsyms`]'s duplicate rule, as a number: lower wins.
fn type_rank(t: u8) -> u64 {
    let class = if is_text(t) {
        0
    } else if b"dDbBrRvVgGsSu".contains(&t) {
        1
    } else {
        2
    };
    let binding = if matches!(t, b'w' | b'W' | b'v' | b'V') {
        1
    } else if t.is_ascii_uppercase() {
        0
    } else {
        2
    };
    class * 4 + binding
}

/// Why the first skipped line was skipped, for the debug log.
struct FirstBad {
    line_no: usize,
    why: &'static str,
}

/// Reads a kallsyms text into the index, in steps: the lines parsed in file order
/// ([`parse_symbols`]), the result checked ([`check_symbols`]: none at all, or every address
/// hidden), the symbols put in address order, one kept per address, sizes inferred, and the
/// blocks of the index cut.
fn build(path: PathBuf, bytes: Vec<u8>) -> Result<Kallsyms> {
    if u32::try_from(bytes.len()).is_err() {
        return Err(Error::Kallsyms {
            path,
            what: format!(
                "{} bytes is too large for a kallsyms file (at most 4 GiB; the kernel's is a few MB)",
                bytes.len()
            ),
        });
    }
    let (text, non_utf8) = into_text(bytes);
    let ParsedSymbols {
        mut addrs,
        mut entries,
        modules,
        skipped,
        first_bad,
        all_zero,
    } = parse_symbols(&text, non_utf8);
    check_symbols(&path, &addrs, skipped, first_bad.as_ref(), all_zero)?;
    sort_by_address(&mut addrs, &mut entries);
    keep_one_per_address(&text, &mut addrs, &mut entries);
    set_sizes(&addrs, &mut entries, modules.len());
    let (summary, blocks) = blocks(&addrs, &entries);
    let count = entries.len();
    drop((addrs, entries));

    Ok(Kallsyms {
        path,
        text,
        summary,
        blocks,
        count,
        modules,
        skipped,
    })
}

/// The symbol lines of a kallsyms text, in file order.
struct ParsedSymbols {
    /// One address per symbol line (parallel to `entries`).
    addrs: Vec<u64>,
    entries: Vec<Entry>,
    /// Each module's name: (offset in the text, length); a symbol's `module` is its index + 1.
    modules: Vec<(u32, u16)>,
    /// Lines that are neither blank nor a symbol (the non-UTF-8 ones included).
    skipped: usize,
    first_bad: Option<FirstBad>,
    /// Every address 0: the kernel hid them from the reader.
    all_zero: bool,
}

/// Parses every line of `text` (lines as the kernel writes them by a fast path, the rest by
/// [`parse_line`]); malformed lines are counted and skipped, the first one remembered.
fn parse_symbols(text: &str, non_utf8: NonUtf8) -> ParsedSymbols {
    let mut parsed_symbols = ParsedSymbols {
        addrs: Vec::with_capacity(text.len() / 40),
        entries: Vec::with_capacity(text.len() / 40),
        modules: Vec::new(),
        skipped: non_utf8.count,
        first_bad: non_utf8.first_line.map(|line_no| FirstBad {
            line_no,
            why: "not UTF-8",
        }),
        all_zero: true,
    };
    let ParsedSymbols {
        addrs,
        entries,
        modules,
        skipped,
        first_bad,
        all_zero,
    } = &mut parsed_symbols;
    let mut module_ids = ModuleIds::default();

    let bytes = text.as_bytes();
    let mut line_start = 0;
    let mut line_no = 0;
    while line_start < bytes.len() {
        line_no += 1;
        let (parsed, line_end) = match parse_canonical(bytes, line_start) {
            Some((parsed, line_end)) => (Ok(Some(parsed)), line_end),
            None => {
                let line_end = bytes
                    .get(line_start..)
                    .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
                    .map_or(bytes.len(), |n| line_start + n);
                let line = bytes.get(line_start..line_end).unwrap_or_default();
                (parse_line(line), line_end)
            }
        };
        let this_start = line_start;
        line_start = line_end + 1;

        let parsed = match parsed {
            Ok(Some(parsed)) => parsed,
            Ok(None) => continue, // blank
            Err(why) => {
                *skipped += 1;
                if first_bad.as_ref().is_none_or(|f| f.line_no > line_no) {
                    *first_bad = Some(FirstBad { line_no, why });
                }
                continue;
            }
        };
        let module = match parsed.module {
            None => 0,
            Some((m_start, m_end)) => {
                match module_ids.id(text, this_start + m_start, this_start + m_end, modules) {
                    Ok(id) => id,
                    Err(why) => {
                        *skipped += 1;
                        if first_bad.is_none() {
                            *first_bad = Some(FirstBad { line_no, why });
                        }
                        continue;
                    }
                }
            }
        };
        *all_zero &= parsed.addr == 0;
        addrs.push(parsed.addr);
        // Fits: the text is under 4 GiB, the name at most MAX_NAME_LEN bytes.
        entries.push(Entry {
            name_offset: (this_start + parsed.name.0) as u32,
            size: 0,
            len_type: (parsed.name.1 - parsed.name.0) as u16
                | u16::from(parsed.type_byte) << LEN_BITS,
            module,
        });
    }
    parsed_symbols
}

/// Module names to their ids while the lines are read: consecutive lines of one module (as
/// the kernel lists them) cost one string compare.
#[derive(Default)]
struct ModuleIds<'t> {
    ids: HashMap<&'t str, u16>,
    last: Option<(&'t str, u16)>,
}

impl<'t> ModuleIds<'t> {
    /// The id of the module named by `text[start..end]`, added to `modules` when new; an
    /// error past 65535 modules (ids are 16 bits).
    #[inline]
    fn id(
        &mut self,
        text: &'t str,
        start: usize,
        end: usize,
        modules: &mut Vec<(u32, u16)>,
    ) -> std::result::Result<u16, &'static str> {
        let name = text.get(start..end).unwrap_or("");
        if let Some((last, id)) = self.last {
            if last == name {
                return Ok(id);
            }
        }
        let id = match self.ids.get(name) {
            Some(&id) => id,
            None => {
                let id = u16::try_from(modules.len() + 1).map_err(|_| "more than 65535 modules")?;
                // Offsets fit: the text is under 4 GiB, lines under 1 KiB.
                modules.push((start as u32, (end - start) as u16));
                self.ids.insert(name, id);
                id
            }
        };
        self.last = Some((name, id));
        Ok(id)
    }
}

/// The errors a parsed text can still be: no symbol line at all, or every address 0 (hidden
/// by `kptr_restrict`). Logs the skipped lines.
fn check_symbols(
    path: &Path,
    addrs: &[u64],
    skipped: usize,
    first_bad: Option<&FirstBad>,
    all_zero: bool,
) -> Result<()> {
    if let Some(bad) = first_bad {
        log::debug!(
            "{}: skipped {skipped} malformed kallsyms line(s); the first is line {}: {}",
            path.display(),
            bad.line_no,
            bad.why
        );
    }
    if addrs.is_empty() {
        let what = match first_bad {
            None => "no symbols: the file is empty (a kallsyms file has lines `ADDR TYPE NAME [MODULE]`)".to_string(),
            Some(bad) => format!(
                "no symbols: none of its {skipped} non-blank line(s) is a kallsyms line `ADDR TYPE NAME [MODULE]` (line {}: {})",
                bad.line_no, bad.why
            ),
        };
        return Err(Error::Kallsyms {
            path: path.to_path_buf(),
            what,
        });
    }
    if all_zero {
        return Err(Error::KernelAddrsHidden {
            path: path.to_path_buf(),
            what: format!(
                "all {} symbol addresses are 0: the kernel hides them from this reader \
                 (kernel.kptr_restrict, or no CAP_SYSLOG). Read it as root (with CAP_SYSLOG) \
                 and `sysctl kernel.kptr_restrict=0` (with kptr_restrict=1 only CAP_SYSLOG \
                 holders see addresses; with 2 nobody does)",
                addrs.len()
            ),
        });
    }
    Ok(())
}

/// Puts the symbols in address order: stable, by address only, so that lines at one address
/// stay in file order (rule 4). A text already in order (the kernel's, mostly) is left as is.
fn sort_by_address(addrs: &mut Vec<u64>, entries: &mut Vec<Entry>) {
    if addrs.is_sorted() {
        return;
    }
    let mut order: Vec<u32> = (0..addrs.len() as u32).collect(); // < 2^32 lines
    order.sort_by_key(|&i| addrs.get(i as usize).copied().unwrap_or(u64::MAX));
    let pick = |i: &u32| usize::try_from(*i).ok();
    *addrs = order
        .iter()
        .filter_map(|i| addrs.get(pick(i)?).copied())
        .collect();
    *entries = order
        .iter()
        .filter_map(|i| entries.get(pick(i)?).copied())
        .collect();
}

/// Cuts the symbols (`addrs` sorted and unique, one entry each) into blocks of up to
/// [`BLOCK`], each less than `u32::MAX` bytes from its first address: (summary, blocks).
fn blocks(addrs: &[u64], entries: &[Entry]) -> (Vec<u64>, Vec<Block>) {
    let capacity = addrs.len() / BLOCK + 2;
    let (mut summary, mut blocks) = (Vec::with_capacity(capacity), Vec::with_capacity(capacity));
    let (mut addrs, mut entries) = (addrs, entries);
    while let Some(&base) = addrs.first() {
        // Sorted: the block ends at its 16th address, or before the first too far from base.
        let head = addrs.get(..BLOCK.min(addrs.len())).unwrap_or_default();
        let n = head.partition_point(|&addr| addr - base < u64::from(PAD));
        let slots = std::array::from_fn(|i| match (head.get(i), entries.get(i)) {
            (Some(&addr), Some(&entry)) if i < n => Slot {
                // Below PAD: the partition point.
                delta: (addr - base) as u32,
                entry,
            },
            _ => Slot::PADDING,
        });
        summary.push(base);
        blocks.push(Block(slots));
        // n >= 1 (the first delta is 0), so this ends.
        addrs = addrs.get(n..).unwrap_or_default();
        entries = entries.get(n..).unwrap_or_default();
    }
    (summary, blocks)
}

/// Keeps the best symbol of each address (the rule in [`Kallsyms`]'s docs); `addrs` is sorted and
/// lines at one address are in file order.
fn keep_one_per_address(text: &str, addrs: &mut Vec<u64>, entries: &mut Vec<Entry>) {
    let rank = |entry: &Entry| {
        let start = entry.name_offset as usize;
        let name = text.as_bytes().get(start..).unwrap_or_default();
        let prefixed = name.starts_with(b"__pfx_") || name.starts_with(b"__cfi_");
        type_rank(entry.type_byte()) * 2 + u64::from(prefixed)
    };
    let mut kept: usize = 0;
    for i in 0..addrs.len().min(entries.len()) {
        let (Some(&addr), Some(&entry)) = (addrs.get(i), entries.get(i)) else {
            break;
        };
        if let (Some(last), Some(last_entry)) = (
            kept.checked_sub(1).and_then(|k| addrs.get(k)),
            kept.checked_sub(1).and_then(|k| entries.get_mut(k)),
        ) {
            if *last == addr {
                // Strictly better only: of equal ranks the earlier line stays.
                if rank(&entry) < rank(last_entry) {
                    *last_entry = entry;
                }
                continue;
            }
        }
        if let (Some(a), Some(e)) = (addrs.get_mut(kept), entries.get_mut(kept)) {
            *a = addr;
            *e = entry;
        }
        kept += 1;
    }
    addrs.truncate(kept);
    entries.truncate(kept);
}

/// Sizes by the rule in [`Kallsyms`]'s docs. `addrs` is sorted and unique.
fn set_sizes(addrs: &[u64], entries: &mut [Entry], module_count: usize) {
    const NONE: usize = usize::MAX;
    let mut last_of: Vec<usize> = vec![NONE; module_count + 1];
    let clamp = |len: u64| u32::try_from(len).unwrap_or(u32::MAX);
    for (i, &addr) in addrs.iter().enumerate() {
        let Some(module) = entries.get(i).map(|e| usize::from(e.module)) else {
            break;
        };
        if let Some(prev) = last_of.get_mut(module) {
            let p = std::mem::replace(prev, i);
            if let (Some(entry), Some(&start)) = (entries.get_mut(p), addrs.get(p)) {
                entry.size = clamp(addr - start);
            }
        }
    }
    for p in last_of.into_iter().filter(|&p| p != NONE) {
        let Some(&start) = addrs.get(p) else { continue };
        let page_end = (start / PAGE).saturating_add(1).saturating_mul(PAGE);
        let end = addrs
            .get(p + 1)
            .map_or(page_end, |&next| next.min(page_end));
        if let Some(entry) = entries.get_mut(p) {
            entry.size = clamp(end.saturating_sub(start));
        }
    }
}

/// Lines that were not UTF-8, blanked by [`into_text`].
struct NonUtf8 {
    count: usize,
    first_line: Option<usize>,
}

/// The bytes as a `String`, with every line that is not UTF-8 overwritten by spaces (then
/// blank, so it is not parsed). No copy when the bytes are UTF-8, the usual case.
fn into_text(bytes: Vec<u8>) -> (String, NonUtf8) {
    let mut report = NonUtf8 {
        count: 0,
        first_line: None,
    };
    let mut bytes = match String::from_utf8(bytes) {
        Ok(text) => return (text, report),
        Err(e) => e.into_bytes(),
    };
    let mut checked = 0;
    while let Some(Err(e)) = bytes.get(checked..).map(std::str::from_utf8) {
        let bad_at = checked + e.valid_up_to();
        let line_start = bytes
            .get(..bad_at)
            .and_then(|b| b.iter().rposition(|&c| c == b'\n'))
            .map_or(0, |n| n + 1);
        let line_end = bytes
            .get(bad_at..)
            .and_then(|b| b.iter().position(|&c| c == b'\n'))
            .map_or(bytes.len(), |n| bad_at + n);
        if report.first_line.is_none() {
            let newlines = bytes.get(..line_start).unwrap_or_default();
            report.first_line = Some(newlines.iter().filter(|&&c| c == b'\n').count() + 1);
        }
        report.count += 1;
        if let Some(line) = bytes.get_mut(line_start..line_end) {
            line.fill(b' ');
        }
        checked = line_end;
    }
    // Every line that held a byte sequence that is not UTF-8 is now spaces.
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    (text, report)
}

/// A parsed line; the ranges are byte offsets in the line.
struct Line {
    addr: u64,
    type_byte: u8,
    name: (usize, usize),
    /// Inside the brackets.
    module: Option<(usize, usize)>,
}

/// The line starting at `bytes[start]` when it is exactly as the kernel writes it
/// (`%px %c %s` or `%px %c %s\t[%s]`, then a newline or the end), with the end of the line;
/// `None` for anything else, which [`parse_line`] then reads (or rejects). One pass over the
/// bytes, for speed; it accepts only lines that [`parse_line`] reads the same way.
fn parse_canonical(bytes: &[u8], start: usize) -> Option<(Line, usize)> {
    let rest = bytes.get(start..)?;
    // The kernel's `%px`: 16 digits, then a space. Eight at a time, else one at a time.
    let sixteen = rest
        .get(..16)
        .zip(rest.get(16))
        .and_then(|(digits, &space)| {
            let (high, low) = digits.split_at(8);
            (space == b' ').then_some(hex8(high)? << 32 | hex8(low)?)
        });
    let (mut i, mut addr) = (0, 0);
    if let Some(value) = sixteen {
        (i, addr) = (16, value);
    } else {
        while let Some(&b) = rest.get(i) {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => break,
            };
            addr = addr << 4 | u64::from(digit);
            i += 1;
        }
    }
    if i == 0 || i > 16 || rest.get(i) != Some(&b' ') || rest.get(i + 2) != Some(&b' ') {
        return None;
    }
    let type_byte = *rest.get(i + 1)?;
    if !type_byte.is_ascii_graphic() {
        return None;
    }
    let name_start = i + 3;
    let mut end = name_end(rest, name_start);
    let name = (name_start, end);
    if end == name_start || end - name_start > MAX_NAME_LEN {
        return None;
    }
    let module = match rest.get(end) {
        None | Some(b'\n') => None,
        Some(b'\t') if rest.get(end + 1) == Some(&b'[') => {
            let module_start = end + 2;
            end = module_start;
            while rest.get(end).is_some_and(|&b| b > b' ' && b != b']') {
                end += 1;
            }
            if end == module_start || rest.get(end) != Some(&b']') {
                return None;
            }
            let module = (module_start, end);
            end += 1;
            if !matches!(rest.get(end), None | Some(b'\n')) {
                return None;
            }
            Some(module)
        }
        _ => return None,
    };
    if end > MAX_LINE_LEN {
        return None;
    }
    let line = Line {
        addr,
        type_byte,
        name,
        module,
    };
    Some((line, start + end))
}

/// The value of 8 hex digits (either case), or `None` when a byte is not one. All 8 at once
/// in a `u64` ("SIMD within a register": each step keeps every byte below 0x100, so no carry
/// crosses into the next byte).
fn hex8(digits: &[u8]) -> Option<u64> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    const CASE: u64 = ONES * 0x20;
    const LOW: u64 = ONES * 0x0f;
    // The first digit in the lowest byte.
    let word = u64::from_le_bytes(<[u8; 8]>::try_from(digits).ok()?);
    if word & HIGH != 0 {
        return None; // not ASCII
    }
    // Per byte b < 0x80: b + (0x80 - n) has its high bit set exactly when b >= n.
    let at_least = |w: u64, n: u8| w + ONES * u64::from(0x80 - n);
    let decimal = at_least(word, b'0') & !at_least(word, b'9' + 1);
    let lower = word | CASE;
    let letter = at_least(lower, b'a') & !at_least(lower, b'f' + 1);
    if (decimal | letter) & HIGH != HIGH {
        return None;
    }
    // '0'..'9' are 0x30..0x39, 'a'..'f' 0x61..0x66, 'A'..'F' 0x41..0x46: the low nibble, plus
    // 9 for letters (bit 6 set).
    let nibbles = (word & LOW) + 9 * ((word >> 6) & ONES);
    // Pack: pairs of nibbles into bytes, pairs of bytes into 16 bits, then into 32 bits.
    let bytes = (nibbles << 4 | nibbles >> 8) & 0x00ff_00ff_00ff_00ff;
    let halves = (bytes << 8 | bytes >> 16) & 0x0000_ffff_0000_ffff;
    Some((halves << 16 | halves >> 32) & 0xffff_ffff)
}

/// The index of the first byte at or after `i` that is a space, a control character or the
/// end: where a name ends. Eight bytes at a time (the "has a byte less than n" bit trick:
/// the lowest flagged byte is exact, a borrow only flags bytes above it).
fn name_end(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
        let below = word.wrapping_sub(ONES * u64::from(b' ' + 1)) & !word & HIGH;
        if below != 0 {
            return i + (below.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while bytes.get(i).is_some_and(|&b| b > b' ') {
        i += 1;
    }
    i
}

/// `Ok(None)` for a blank line, `Err(why)` for a malformed one.
fn parse_line(line: &[u8]) -> Result<Option<Line>, &'static str> {
    if line.len() > MAX_LINE_LEN {
        return Err("line longer than 1024 bytes");
    }
    let mut fields = [(0usize, 0usize); 4];
    let mut count = 0;
    let mut i = 0;
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\r');
    while i < line.len() {
        while line.get(i).is_some_and(|&b| is_space(b)) {
            i += 1;
        }
        if i >= line.len() {
            break;
        }
        let start = i;
        while line.get(i).is_some_and(|&b| !is_space(b)) {
            i += 1;
        }
        let Some(slot) = fields.get_mut(count) else {
            return Err("more than 4 fields (want ADDR TYPE NAME [MODULE])");
        };
        *slot = (start, i);
        count += 1;
    }
    match count {
        0 => return Ok(None),
        1 | 2 => return Err("missing fields (want ADDR TYPE NAME [MODULE])"),
        _ => {}
    }
    let [addr, kind, name, module] = fields;
    let field = |(start, end): (usize, usize)| line.get(start..end).unwrap_or_default();

    let addr_text = field(addr);
    if addr_text.len() > 16 {
        return Err("address longer than 16 hex digits");
    }
    let mut value: u64 = 0;
    for &b in addr_text {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err("address is not hexadecimal"),
        };
        value = value << 4 | u64::from(digit);
    }
    let &[type_byte] = field(kind) else {
        return Err("type is not one character");
    };
    if !type_byte.is_ascii_graphic() {
        return Err("type is not a printable ASCII character");
    }
    if name.1 - name.0 > MAX_NAME_LEN {
        return Err("name longer than 511 bytes");
    }
    let module = if count == 4 {
        let m = field(module);
        if m.len() < 3 || m.first() != Some(&b'[') || m.last() != Some(&b']') {
            return Err("fourth field is not a bracketed [module]");
        }
        Some((module.0 + 1, module.1 - 1))
    } else {
        None
    };
    Ok(Some(Line {
        addr: value,
        type_byte,
        name,
        module,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_is_12_bytes_and_slot_16() {
        assert_eq!(std::mem::size_of::<Entry>(), 12);
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        assert_eq!(std::mem::size_of::<Slot>() * PER_LINE, 64);
        assert_eq!(std::mem::size_of::<Block>(), 64 * LINES);
    }

    #[test]
    fn blocks_split_when_full_and_at_4_gib() {
        let full = BLOCK as u64;
        let mut addrs: Vec<u64> = (0..2 * full + 5).map(|i| i * 16).collect();
        addrs.push(0x10_0000_0000);
        addrs.push(0x10_0000_0010);
        addrs.push(0x10_0000_0000 + u64::from(u32::MAX) - 1);
        addrs.push(0x10_0000_0000 + u64::from(u32::MAX));
        let entries: Vec<Entry> = (0..addrs.len() as u32)
            .map(|i| Entry {
                name_offset: i,
                ..Slot::PADDING.entry
            })
            .collect();
        let (summary, blocks) = blocks(&addrs, &entries);
        let last = addrs.len() - 1;
        assert_eq!(
            summary,
            [0, full * 16, full * 32, 0x10_0000_0000, addrs[last]]
        );
        let deltas = |b: usize| blocks[b].0.map(|slot| slot.delta);
        assert_eq!(deltas(2)[4], 4 * 16);
        assert_eq!(deltas(2)[5], PAD);
        assert_eq!(deltas(3)[..4], [0, 16, u32::MAX - 1, PAD]);
        assert_eq!(deltas(4)[..2], [0, PAD]);
        let back: Vec<(u64, u32)> = summary
            .iter()
            .zip(&blocks)
            .flat_map(|(&s, slots)| {
                slots
                    .0
                    .iter()
                    .take_while(|slot| slot.delta != PAD)
                    .map(move |slot| (s + u64::from(slot.delta), slot.entry.name_offset))
            })
            .collect();
        let want: Vec<(u64, u32)> = addrs.iter().copied().zip(0..).collect();
        assert_eq!(back, want);
    }

    #[test]
    fn lookups_agree_with_a_linear_scan() {
        let mut next = crate::test_support::xorshift64(0x0123_4567_89ab_cdef);
        // Per-CPU symbols at 0, the image, modules above it: gaps of every size, equal
        // addresses, data and text, and blocks cut by both rules.
        let mut text = String::new();
        let mut addr = 0_u64;
        for i in 0..3000 {
            addr += match next() % 100 {
                0 => 0,
                1 => 1 << 50,
                2 => u64::from(u32::MAX) + next() % 3,
                3..=9 => next() % (1 << 24),
                _ => next() % 512,
            };
            let kind = ['t', 'T', 'd', 'A', 'W'][(next() % 5) as usize];
            let module = match next() % 4 {
                0 => "\t[ext4]",
                1 => "\t[kvm]",
                _ => "",
            };
            text.push_str(&format!("{addr:x} {kind} sym{i}{module}\n"));
        }
        let k = Kallsyms::from_bytes("random", text).expect("parses");
        let all: Vec<KernelSym<'_>> = k.symbols().collect();
        assert_eq!(all.len(), k.len());
        assert!(all.windows(2).all(|w| w[0].addr < w[1].addr));
        let expected = |a: u64| {
            let i = all
                .partition_point(|s| s.addr <= AbsAddr(a))
                .checked_sub(1)?;
            let s = all[i];
            let into = AbsAddr(a).offset_from(s.addr)?;
            (into < s.size).then_some((s.name, into))
        };
        let mut probes = vec![0, u64::MAX, u64::MAX - 1];
        for s in &all {
            let start = s.addr.0;
            probes.extend([start, start.wrapping_sub(1), start + s.size.max(1) - 1]);
            probes.extend([start + s.size, start + next() % s.size.max(1)]);
        }
        probes.extend((0..5000).map(|_| next()));
        for a in probes {
            let found = k.find_any_symbol(AbsAddr(a)).ok().flatten();
            assert_eq!(found.map(|s| (s.name, s.offset)), expected(a), "{a:#x}");
            let text = k.find_symbol(AbsAddr(a)).ok().flatten();
            assert_eq!(text, found.filter(|s| s.is_text()), "{a:#x}");
        }
    }

    #[test]
    fn lookups_across_a_4_gib_split() {
        let text = "0 A fixed_percpu_data\n\
                    4000 A cpu_number\n\
                    ffffffff81000000 T _stext\n\
                    ffffffff81000010 T second\n\
                    fffffffff0000000 T far\n\
                    fffffffff0000100 T end\n";
        let k = Kallsyms::from_bytes("split", text).expect("parses");
        let name = |addr| {
            k.find_any_symbol(addr)
                .ok()
                .flatten()
                .map(|s| (s.name, s.offset))
        };
        assert_eq!(name(AbsAddr(0x10)), Some(("fixed_percpu_data", 0x10)));
        assert_eq!(name(AbsAddr(0x4000)), Some(("cpu_number", 0)));
        assert_eq!(name(AbsAddr(0xffff_ffff_8100_0004)), Some(("_stext", 4)));
        assert_eq!(name(AbsAddr(0xffff_ffff_8100_0010)), Some(("second", 0)));
        assert_eq!(
            name(AbsAddr(0xffff_ffff_efff_ffff)),
            Some(("second", 0x6eff_ffef))
        );
        assert_eq!(name(AbsAddr(0xffff_ffff_f000_0001)), Some(("far", 1)));
        assert_eq!(name(AbsAddr(0xffff_ffff_f000_0104)), Some(("end", 4)));
        let all: Vec<AbsAddr> = k.symbols().map(|s| s.addr).collect();
        assert_eq!(all.len(), 6);
        assert!(all.is_sorted());
    }

    #[test]
    fn kallsyms_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Kallsyms>();
    }

    #[test]
    fn parses_lines() {
        let line = parse_line(b"ffffffffc0001000 t ext4_fill_super\t[ext4]")
            .ok()
            .flatten()
            .map(|l| (l.addr, l.type_byte, l.name, l.module));
        assert_eq!(
            line,
            Some((0xffffffffc0001000, b't', (19, 34), Some((36, 40))))
        );
        assert!(matches!(parse_line(b"  \t\r"), Ok(None)));
        for bad in [
            &b"xyz T foo"[..],
            b"1234 T",
            b"12345678901234567 T foo",
            b"1234 TT foo",
            b"1234 T foo ext4",
            b"1234 T foo [ext4] more",
            b"1234 T foo []",
        ] {
            assert!(parse_line(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn canonical_lines_read_as_the_general_parser_reads_them() {
        let key = |l: &Line| (l.addr, l.type_byte, l.name, l.module);
        for line in [
            &b"ffffffffc0001000 t ext4_fill_super\t[ext4]"[..],
            b"ffffffff81000000 T _stext",
            b"0 A x",
            b"ffffffff81000000 T a\x01b",
            b"ffffffff81000000 T a\t[m]x]",
            b"ffffffff81000000 T a\t[]",
            b"ffffffff81000000 T a\t[m] ",
            b"ffffffff81000000 T a ",
            b"ffffffff81000000 T a\r",
            b"ffffffff81000000  T a",
            b"1ffffffff81000000 T a",
        ] {
            let general = parse_line(line).ok().flatten();
            let mut with_newline = line.to_vec();
            with_newline.extend_from_slice(b"\nnext");
            for bytes in [line, &with_newline[..]] {
                if let Some((canonical, end)) = parse_canonical(bytes, 0) {
                    assert_eq!(end, line.len());
                    assert_eq!(Some(key(&canonical)), general.as_ref().map(key));
                }
            }
        }
        assert!(parse_canonical(b"ffffffff81000000 T _stext\n", 0).is_some());
    }

    #[test]
    fn hex8_reads_8_hex_digits_and_nothing_else() {
        let mut next = crate::test_support::xorshift64(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let rng = next();
            let mut digits = format!("{:08x}", rng as u32).into_bytes();
            if rng >> 63 == 1 {
                digits.make_ascii_uppercase();
            }
            if rng >> 60 & 3 == 0 {
                // Any byte at all, somewhere.
                digits[(rng >> 40) as usize % 8] = (rng >> 48) as u8;
            }
            let want = std::str::from_utf8(&digits)
                .ok()
                .filter(|t| t.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|t| u64::from_str_radix(t, 16).ok());
            assert_eq!(hex8(&digits), want, "{digits:?}");
        }
        for bad in [
            *b"0000000/",
            *b"0000000:",
            *b"0000000@",
            *b"0000000G",
            *b"0000000`",
        ] {
            assert_eq!(hex8(&bad), None);
        }
        assert_eq!(hex8(b"fFfFfFfF"), Some(0xffff_ffff));
        assert_eq!(hex8(b"0123abcd"), Some(0x0123_abcd));
    }

    #[test]
    fn name_end_finds_the_first_space_or_control_byte() {
        let plain = |bytes: &[u8], i: usize| {
            (i..bytes.len())
                .find(|&j| bytes[j] <= b' ')
                .unwrap_or(bytes.len().max(i))
        };
        let mut next = crate::test_support::xorshift64(0x1234_5678_9abc_def0);
        for _ in 0..2000 {
            let rng = next();
            let len = (rng % 40) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|k| {
                    let b = (rng >> (k % 8 * 8)) as u8;
                    if (rng >> 60).is_multiple_of(3) {
                        b
                    } else {
                        b | 0x40
                    }
                })
                .collect();
            for i in 0..=len {
                assert_eq!(name_end(&bytes, i), plain(&bytes, i), "{bytes:?} from {i}");
            }
        }
    }

    #[test]
    fn non_utf8_lines_are_blanked() {
        let (text, report) = into_text(b"1 T a\n2 T \xff\xfe\n3 T c\n4 T \xc3".to_vec());
        assert_eq!(text, "1 T a\n      \n3 T c\n     ");
        assert_eq!((report.count, report.first_line), (2, Some(2)));
    }
}
