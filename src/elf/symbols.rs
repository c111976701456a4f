//! The compact, address-sorted index of a file's symbols, and lookups in it.
//!
//! The index stores no strings. Per symbol it keeps 16 bytes: the start address as a 32-bit
//! delta from the lowest address (searched, so kept in its own dense array), and a 12-byte
//! [`Entry`] with the size and where the name is in the mapped file, with its length and
//! whether it is valid UTF-8, both checked once when the index is built. A lookup therefore
//! touches no name bytes; names are borrowed from the mapping. A file whose symbols span more
//! than 4 GiB falls back to 64-bit addresses (24 bytes per symbol).
//!
//! # Which name wins when several symbols share an address
//! Only one symbol per address is kept, chosen by these rules in order (the first that
//! differs decides):
//! 1. a symbol with a size over one without (`st_size == 0`);
//! 2. a typed symbol (`FUNC`, `GNU_IFUNC`, `OBJECT`) over a label (`NOTYPE`);
//! 3. binding: `GLOBAL` (and `GNU_UNIQUE`) over `WEAK` over `LOCAL`;
//! 4. type: `FUNC` over `GNU_IFUNC` (for data: `OBJECT` only);
//! 5. default visibility over the others;
//! 6. `.symtab` over `.dynsym` (the same symbol usually appears in both);
//! 7. the lower index in its table for sized symbols, the higher for symbols without a size
//!    (eu-addr2line and llvm-symbolizer name the last of several sizeless symbols at one
//!    address; binutils and llvm-symbolizer the first of several sized ones).
//!
//! The rule never compares names, so it is cheap and gives the same answer every run.
//!
//! # Which symbols are indexed
//! `FUNC`, `GNU_IFUNC` (code) and `OBJECT` (data) symbols defined in a section that is
//! loaded (`SHF_ALLOC`): a symbol of any other section (glibc's `.gnu.warning.*` sections
//! hold `__evoke_link_warning_*` objects at 0, notes, debug sections) has an offset into
//! that section for a value, not an address, and never answers (as in binutils and
//! llvm-symbolizer).
//!
//! # Labels
//! `NOTYPE` symbols are assembler labels (ld.so's `_start`, the outermost frame of every
//! process's loader), labels of hand-written data, or boundary markers that linkers and
//! linker scripts define. A `NOTYPE` symbol is indexed, as code in an executable section and
//! as data in another, when all of these hold:
//! - its section is loaded (`SHF_ALLOC`); a data label answers like an object, where no
//!   function covers the address (elfutils' testfile34 `data1`: binutils, eu-addr2line and
//!   llvm-symbolizer all name it);
//! - its value is inside the section, not at its end (`_etext`, `__stop_SEC` mark where
//!   the code stops: llvm-symbolizer names the byte after `.text` `_etext`, binutils does
//!   not, and neither do we);
//! - it is not an assembler-local `.L` label, nor a marker by name: `__start_*`,
//!   `__stop_*`, `__*_start`, `__*_end` (the kernel's `__entry_text_start`, glibc's
//!   `__init_array_end`), `_text`, `_stext`, `_etext`, `etext`, `__etext`, `_edata`,
//!   `edata`, `_end`, `end`, `__executable_start`, `__ehdr_start`,
//!   `_GLOBAL_OFFSET_TABLE_`, `_DYNAMIC`, `_PROCEDURE_LINKAGE_TABLE_`,
//!   `__GNU_EH_FRAME_HDR`, `__dso_handle`;
//! - no sized symbol covers it (a label inside a function, such as a loop head or a second
//!   entry of hand-written assembly, does not split the function; llvm-symbolizer and
//!   binutils name the label there).
//!
//! A label has no size: it extends like any unsized symbol (below).
//!
//! # Nested symbols
//! An address inside a sized symbol is never left unnamed: where a symbol nested in a sized
//! one (a local label with a size of its own, hand-written assembly's inner entry) has ended
//! and the outer one goes on, the outer one answers again, with its own start (elfutils'
//! rule: `global_outer+0x6` in its testfile49). llvm-symbolizer says `??` there, binutils
//! names the ended inner symbol.
//!
//! # Symbols without a size
//! A symbol with `st_size == 0` (hand-written assembly, linker-defined labels) is taken to
//! extend to the next indexed symbol or the end of its section, whichever comes first, as perf
//! and llvm-symbolizer do. [`ElfSymbol::size`] still reports the size the file states.

use std::ops::Range;

use crate::addr::VirtAddr;

/// How many addresses one summary slot stands for: the summary (one address per block) is
/// small enough to stay in cache, and a block of 32-bit deltas spans four cache lines.
const BLOCK: usize = 64;

/// Which string table a name lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameTable {
    /// The string table of `.symtab` (usually `.strtab`).
    Symtab,
    /// The string table of `.dynsym` (usually `.dynstr`).
    Dynsym,
    /// Names made up by this crate, like `puts@plt`.
    Synthetic,
}

/// Bits of [`Entry::flags`].
const FLAG_INFERRED_SIZE: u16 = 1;
const FLAG_UTF8: u16 = 1 << 1;
const FLAG_LONG_NAME: u16 = 1 << 2;
/// The name in the file goes on with `@VERSION` (hidden) after the indexed length.
const FLAG_VERSION_HIDDEN: u16 = 1 << 3;
/// The name in the file goes on with `@@VERSION` (default) after the indexed length.
const FLAG_VERSION_DEFAULT: u16 = 1 << 4;
/// Bits 5-6: the [`NameTable`].
const TABLE_SHIFT: u16 = 5;
/// Bits 7-15: a `.dynsym` symbol's version index, when it is below [`MAX_INLINE_VERSION`]
/// (with [`FLAG_VERSION_HIDDEN`] for a hidden one); 0 for none. Larger indexes (libraries
/// with hundreds of versions) go to a side table of the index builder.
const VERSION_SHIFT: u16 = 7;
const MAX_INLINE_VERSION: u16 = (1 << (16 - VERSION_SHIFT)) - 1;

/// Everything but the address of one indexed symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Offset of the name in its string table.
    name_offset: u32,
    /// The size in bytes (clamped to `u32::MAX`; see [`Entry::new`]).
    size: u32,
    /// The name's length, when it fits (else [`FLAG_LONG_NAME`] and the name is scanned).
    name_len: u16,
    flags: u16,
}

/// Facts about one symbol's name, checked by the index builder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NameInfo {
    pub(crate) table: NameTable,
    pub(crate) offset: u32,
    /// Length of the name without a `@VERSION` suffix.
    pub(crate) len: usize,
    pub(crate) utf8: bool,
    pub(crate) version: VersionSuffix,
}

/// Whether a `.symtab` name carries a version after an `@` (`name@VER`, `name@@VER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VersionSuffix {
    None,
    Hidden,
    Default,
}

impl NameInfo {
    /// Measures the NUL-terminated `full_name` (as found at `offset` of `table`) and splits a
    /// version suffix off `.symtab` names.
    pub(crate) fn measure(table: NameTable, offset: u32, full_name: &[u8]) -> Self {
        let (len, version) = match table {
            NameTable::Symtab => match split_version(full_name) {
                (name, Some(_), true) => (name.len(), VersionSuffix::Hidden),
                (name, Some(_), false) => (name.len(), VersionSuffix::Default),
                (name, None, _) => (name.len(), VersionSuffix::None),
            },
            _ => (full_name.len(), VersionSuffix::None),
        };
        NameInfo {
            table,
            offset,
            len,
            utf8: std::str::from_utf8(full_name).is_ok(),
            version,
        }
    }
}

impl Entry {
    /// `size` above `u32::MAX` is clamped: no real symbol is 4 GiB long, and a clamped size
    /// only shortens the range the symbol covers. `inferred` marks a size computed for a
    /// symbol with `st_size == 0`.
    pub(crate) fn new(name: NameInfo, size: u64, inferred: bool) -> Self {
        let long = name.len >= usize::from(u16::MAX);
        let mut flags = (name.table as u16) << TABLE_SHIFT;
        if inferred {
            flags |= FLAG_INFERRED_SIZE;
        }
        if name.utf8 {
            flags |= FLAG_UTF8;
        }
        if long {
            flags |= FLAG_LONG_NAME;
        }
        flags |= match name.version {
            VersionSuffix::None => 0,
            VersionSuffix::Hidden => FLAG_VERSION_HIDDEN,
            VersionSuffix::Default => FLAG_VERSION_DEFAULT,
        };
        Entry {
            name_offset: name.offset,
            size: u32::try_from(size).unwrap_or(u32::MAX),
            name_len: if long { 0 } else { name.len as u16 },
            flags,
        }
    }

    pub(crate) fn table(self) -> NameTable {
        match (self.flags >> TABLE_SHIFT) & 0b11 {
            0 => NameTable::Symtab,
            1 => NameTable::Dynsym,
            _ => NameTable::Synthetic,
        }
    }

    pub(crate) fn name_offset(self) -> usize {
        self.name_offset as usize
    }

    /// The name's length, or `None` when it is too long to store and must be scanned for.
    pub(crate) fn name_len(self) -> Option<usize> {
        (self.flags & FLAG_LONG_NAME == 0).then_some(usize::from(self.name_len))
    }

    /// This entry with a `.dynsym` version (a raw versym: index plus hidden bit) stored in it,
    /// or `None` when the index is too large to store here.
    pub(crate) fn with_dynsym_version(self, versym: u16) -> Option<Entry> {
        let index = versym & object::elf::VERSYM_VERSION;
        if index == 0 || index > MAX_INLINE_VERSION {
            return None;
        }
        let mut flags = self.flags | (index << VERSION_SHIFT);
        if versym & object::elf::VERSYM_HIDDEN.0 != 0 {
            flags |= FLAG_VERSION_HIDDEN;
        }
        Some(Entry { flags, ..self })
    }

    /// The `.dynsym` version stored by [`Entry::with_dynsym_version`]: (index, hidden).
    pub(crate) fn dynsym_version(self) -> Option<(u16, bool)> {
        let index = self.flags >> VERSION_SHIFT;
        (index != 0).then_some((index, self.flags & FLAG_VERSION_HIDDEN != 0))
    }

    /// The version suffix that follows the indexed name in the file.
    pub(crate) fn version_suffix(self) -> VersionSuffix {
        if self.flags & FLAG_VERSION_HIDDEN != 0 {
            VersionSuffix::Hidden
        } else if self.flags & FLAG_VERSION_DEFAULT != 0 {
            VersionSuffix::Default
        } else {
            VersionSuffix::None
        }
    }

    /// Whether the name was checked to be valid UTF-8 when the index was built.
    pub(crate) fn name_is_utf8(self) -> bool {
        self.flags & FLAG_UTF8 != 0
    }

    /// The extent used for lookups (inferred for unsized symbols).
    fn covered_size(self) -> u64 {
        u64::from(self.size)
    }

    /// The size the file states: 0 for a symbol whose size was inferred.
    pub(crate) fn stated_size(self) -> u64 {
        if self.flags & FLAG_INFERRED_SIZE != 0 {
            0
        } else {
            u64::from(self.size)
        }
    }
}

/// Start addresses, as 32-bit deltas from the lowest when they fit, with the start of every
/// [`BLOCK`]-th symbol in a summary searched first.
#[derive(Debug)]
enum Starts {
    Narrow {
        base: u64,
        deltas: Vec<u32>,
        summary: Vec<u32>,
    },
    Wide {
        addrs: Vec<u64>,
        summary: Vec<u64>,
    },
}

impl Default for Starts {
    fn default() -> Self {
        Starts::Wide {
            addrs: Vec::new(),
            summary: Vec::new(),
        }
    }
}

/// What [`AddrIndex::find_span`] found: the entry covering the address asked about (`None`:
/// no entry covers it) and the addresses, the asked one among them, for which
/// [`AddrIndex::find`] gives that same answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundSpan {
    pub(crate) index: Option<u32>,
    pub(crate) span: Range<u64>,
    /// The last entry starting at or below the address (also when it does not cover it):
    /// where [`AddrIndex::find_span_from`] starts for the next, higher address.
    pub(crate) below: Option<u32>,
}

/// One kind of symbols (code or data), sorted by address, one per address.
#[derive(Debug, Default)]
pub(crate) struct AddrIndex {
    starts: Starts,
    entries: Vec<Entry>,
    /// Where a sized symbol answers again after a symbol nested in it ended (see
    /// [`enclosing_resumes`]); sorted and disjoint, empty for nearly every file.
    resumes: Vec<Resume>,
}

/// Addresses `start..end`, after the entry at or below them ended, that lie inside the
/// stated size of the entry `index`, which started earlier: that entry answers there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Resume {
    start: u64,
    end: u64,
    index: u32,
}

/// The places where an enclosing sized symbol answers again once a symbol nested in it has
/// ended (see the module docs, "Nested symbols"): for each entry's gap (from where it stops
/// covering to the next start), the innermost still-open sized entry that started before it.
/// A stack of open entries, each pushed once and popped once: linear in the entry count, and
/// only entries that reach past the next start are ever pushed.
fn enclosing_resumes(addrs: &[u64], entries: &[Entry]) -> Vec<Resume> {
    // Only an entry whose stated size reaches past the next start encloses anything: find
    // the first in one tight pass (there is none in nearly every file).
    let encloses = |i: usize, next: u64| {
        entries[i].flags & FLAG_INFERRED_SIZE == 0
            && addrs[i].saturating_add(u64::from(entries[i].size)) > next
    };
    let Some(first) = (1..addrs.len())
        .find(|&i| encloses(i - 1, addrs[i]))
        .map(|i| i - 1)
    else {
        return Vec::new();
    };
    if u32::try_from(entries.len()).is_err() {
        return Vec::new();
    }
    let mut open: Vec<(u64, u32)> = Vec::new();
    let mut resumes = Vec::new();
    for i in first..addrs.len() {
        let (start, entry) = (addrs[i], entries[i]);
        let next = addrs.get(i + 1).copied().unwrap_or(u64::MAX);
        let end = start.saturating_add(entry.covered_size().max(1));
        // Fits: the entry count was checked above.
        let index = i as u32;
        if entry.flags & FLAG_INFERRED_SIZE == 0 && end > next {
            open.push((end, index));
        }
        let mut at = end.min(next);
        while at < next {
            while open.last().is_some_and(|&(open_end, _)| open_end <= at) {
                open.pop();
            }
            let Some(&(open_end, outer)) = open.last() else {
                break;
            };
            let piece_end = open_end.min(next);
            resumes.push(Resume {
                start: at,
                end: piece_end,
                index: outer,
            });
            at = piece_end;
        }
    }
    resumes
}

impl AddrIndex {
    /// Builds the index from addresses that are sorted and distinct, with their entries.
    pub(crate) fn from_sorted(addrs: Vec<u64>, entries: Vec<Entry>) -> Self {
        debug_assert_eq!(addrs.len(), entries.len());
        debug_assert!(addrs.windows(2).all(|w| w[0] < w[1]));
        let resumes = enclosing_resumes(&addrs, &entries);
        let base = addrs.first().copied().unwrap_or(0);
        let span = addrs.last().map_or(0, |last| last - base);
        let starts = if span <= u64::from(u32::MAX) {
            // Every delta fits in u32: it is at most `span`.
            let deltas: Vec<u32> = addrs.iter().map(|&a| (a - base) as u32).collect();
            let summary = deltas.iter().step_by(BLOCK).copied().collect();
            Starts::Narrow {
                base,
                deltas,
                summary,
            }
        } else {
            let summary = addrs.iter().step_by(BLOCK).copied().collect();
            Starts::Wide { addrs, summary }
        };
        AddrIndex {
            starts,
            entries,
            resumes,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry covering `addr`: the one with the greatest start at or below it, if `addr` is
    /// inside its (possibly inferred) size. The definition [`AddrIndex::find_span`] (which
    /// lookups use) is tested against.
    #[cfg(test)]
    pub(crate) fn find(&self, addr: u64) -> Option<u32> {
        let index = self.last_start_at_or_below(addr)?;
        let start = self.addr_at(index);
        if addr - start < self.covered_len(index) {
            u32::try_from(index).ok()
        } else {
            self.resumes
                .iter()
                .find(|r| r.start <= addr && addr < r.end)
                .map(|r| r.index)
        }
    }

    /// The entry covering `addr` (the one with the greatest start at or below it, if `addr` is
    /// inside its possibly inferred size) together with the addresses around it that get the
    /// same answer, so that a caller walking addresses in order (a sorted batch)
    /// searches once per run of addresses instead of once per address.
    #[cfg(test)]
    pub(crate) fn find_span(&self, addr: u64) -> FoundSpan {
        self.span_at(addr, self.last_start_at_or_below(addr))
    }

    /// [`AddrIndex::find_span`], searching forward from `from` (the [`FoundSpan::below`] of
    /// a lower address): a sorted batch's next symbol is usually a few entries on, so a
    /// gallop over the neighbouring starts (which share cache lines) replaces a search of
    /// the whole index. Right for any `from`; a `from` past `addr` searches the whole index.
    pub(crate) fn find_span_from(&self, addr: u64, from: Option<u32>) -> FoundSpan {
        let below = match from {
            Some(from) if (from as usize) < self.entries.len() => {
                self.last_start_at_or_below_from(addr, from as usize)
            }
            _ => self.last_start_at_or_below(addr),
        };
        self.span_at(addr, below)
    }

    /// The span of `addr`, given `below`: the last entry starting at or below it.
    fn span_at(&self, addr: u64, below: Option<usize>) -> FoundSpan {
        let Some(index) = below else {
            // Below every start (or an empty index): nothing up to the first start.
            let end = if self.entries.is_empty() {
                u64::MAX
            } else {
                self.addr_at(0)
            };
            return FoundSpan {
                index: None,
                span: 0..end,
                below: None,
            };
        };
        let start = self.addr_at(index);
        // The next start ends the span: from there on `find` looks at another entry. Starts
        // are distinct, so it is above `start`.
        let next_start = if index + 1 < self.entries.len() {
            self.addr_at(index + 1)
        } else {
            u64::MAX
        };
        let covered_end = start
            .saturating_add(self.covered_len(index))
            .min(next_start);
        // Indexes fit in u32: a symbol takes 16 or 24 bytes of a file mapped in memory.
        let below = u32::try_from(index).ok();
        if addr < covered_end {
            return FoundSpan {
                index: below,
                span: start..covered_end,
                below,
            };
        }
        if !self.resumes.is_empty() {
            return self.resumed_span(addr, covered_end, next_start, below);
        }
        FoundSpan {
            index: None,
            span: covered_end..next_start,
            below,
        }
    }

    /// The span of `addr` in the gap `covered_end..next_start` after the entry `below`, in an
    /// index with resumes (rare: kept off the common path). The gap's resumes start at
    /// `covered_end` and follow each other: `addr` is in one, or in what is left of the gap
    /// after the last.
    #[cold]
    #[inline(never)]
    fn resumed_span(
        &self,
        addr: u64,
        covered_end: u64,
        next_start: u64,
        below: Option<u32>,
    ) -> FoundSpan {
        let at = self.resumes.partition_point(|r| r.start <= addr);
        match at.checked_sub(1).map(|i| self.resumes[i]) {
            Some(r) if r.start >= covered_end && addr < r.end => FoundSpan {
                index: Some(r.index),
                span: r.start..r.end,
                below,
            },
            Some(r) if r.start >= covered_end => FoundSpan {
                index: None,
                span: r.end..next_start,
                below,
            },
            _ => FoundSpan {
                index: None,
                span: covered_end..next_start,
                below,
            },
        }
    }

    /// [`AddrIndex::last_start_at_or_below`] for an `addr` whose answer is probably at or a
    /// little after `from` (`from` < the entry count): doubling steps forward while the
    /// starts stay at or below `addr`, then a binary search of the last step.
    fn last_start_at_or_below_from(&self, addr: u64, from: usize) -> Option<usize> {
        if self.addr_at(from) > addr {
            return self.last_start_at_or_below(addr);
        }
        let len = self.entries.len();
        // Invariant: the start at `low` is at or below `addr`; every start at or past `high`
        // is above it (or `high` is `len`).
        let mut low = from;
        let mut step = 1;
        let high = loop {
            let probe = low + step;
            if probe >= len {
                break len;
            }
            if self.addr_at(probe) > addr {
                break probe;
            }
            low = probe;
            step *= 2;
        };
        let found = match &self.starts {
            Starts::Narrow { base, deltas, .. } => {
                // `addr` is at or above the start at `low`, so at or above `base`.
                let delta = u32::try_from(addr - base).unwrap_or(u32::MAX);
                deltas
                    .get(low + 1..high)
                    .map_or(0, |d| d.partition_point(|&d| d <= delta))
            }
            Starts::Wide { addrs, .. } => addrs
                .get(low + 1..high)
                .map_or(0, |a| a.partition_point(|&a| a <= addr)),
        };
        Some(low + found)
    }

    /// The index of the last entry starting at or below `addr`: first its block in the
    /// summary, then its place in the block. `None` when every start is above `addr`.
    fn last_start_at_or_below(&self, addr: u64) -> Option<usize> {
        let index = match &self.starts {
            Starts::Narrow {
                base,
                deltas,
                summary,
            } => {
                let delta = addr.checked_sub(*base)?;
                // An address more than 4 GiB past the base is past every delta.
                let delta = u32::try_from(delta).unwrap_or(u32::MAX);
                let block = summary.partition_point(|&d| d <= delta).checked_sub(1)?;
                let first = block * BLOCK;
                let last = (first + BLOCK).min(deltas.len());
                first
                    + deltas[first..last]
                        .partition_point(|&d| d <= delta)
                        .checked_sub(1)?
            }
            Starts::Wide { addrs, summary } => {
                let block = summary.partition_point(|&a| a <= addr).checked_sub(1)?;
                let first = block * BLOCK;
                let last = (first + BLOCK).min(addrs.len());
                first
                    + addrs[first..last]
                        .partition_point(|&a| a <= addr)
                        .checked_sub(1)?
            }
        };
        Some(index)
    }

    /// How many bytes from its start the entry at `index` covers: its size, at least 1 (an
    /// inferred size of 0 happens only for a symbol at the very end of its section; it still
    /// covers its own address).
    fn covered_len(&self, index: usize) -> u64 {
        self.entries[index].covered_size().max(1)
    }

    fn addr_at(&self, index: usize) -> u64 {
        match &self.starts {
            Starts::Narrow { base, deltas, .. } => base + u64::from(deltas[index]),
            Starts::Wide { addrs, .. } => addrs[index],
        }
    }

    pub(crate) fn addr(&self, index: u32) -> u64 {
        self.addr_at(index as usize)
    }

    pub(crate) fn entry(&self, index: u32) -> Entry {
        self.entries[index as usize]
    }

    /// Heap bytes this index uses.
    pub(crate) fn heap_bytes(&self) -> usize {
        let starts = match &self.starts {
            Starts::Narrow {
                deltas, summary, ..
            } => (deltas.capacity() + summary.capacity()) * 4,
            Starts::Wide { addrs, summary } => (addrs.capacity() + summary.capacity()) * 8,
        };
        starts
            + self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.resumes.capacity() * std::mem::size_of::<Resume>()
    }
}

/// Where a symbol's name comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolOrigin {
    /// `.symtab` (full symbol table; absent from stripped files).
    Symtab,
    /// `.dynsym` (the dynamic symbol table, kept by `strip`).
    Dynsym,
    /// A PLT entry, named `target@plt` by this crate after its jump-slot relocation.
    Plt,
}

/// Whether a symbol names code or data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// `STT_FUNC` or `STT_GNU_IFUNC`, or a PLT entry.
    Function,
    /// `STT_OBJECT`.
    Data,
}

/// Identifies one indexed symbol of one file, e.g. to cache its demangled name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SymbolId {
    pub(crate) kind: SymbolKind,
    pub(crate) index: u32,
}

impl SymbolId {
    /// Code or data.
    pub fn kind(self) -> SymbolKind {
        self.kind
    }

    /// The position in the file's index of that kind: dense, from 0 to the count
    /// [`crate::elf::ElfFile::symbol_count`] gives.
    pub fn index(self) -> u32 {
        self.index
    }
}

/// One symbol found by a lookup, with its name borrowed from the file.
#[derive(Debug, Clone, Copy)]
pub struct ElfSymbol<'a> {
    /// The name as the file spells it (mangled), without a `@VERSION` suffix. Not always
    /// UTF-8: ELF names are bytes; see [`ElfSymbol::name_str`].
    pub name: &'a [u8],
    /// The name, when it is valid UTF-8 (checked once, when the index was built).
    pub name_str: Option<&'a str>,
    /// The symbol version, from `name@VER` / `name@@VER` in `.symtab` or from the GNU version
    /// tables for `.dynsym`.
    pub version: Option<&'a [u8]>,
    /// Whether the version is hidden (`name@VER`, not the default `name@@VER`).
    pub version_hidden: bool,
    /// The symbol's start.
    pub addr: VirtAddr,
    /// The size the file states (`st_size`); 0 for symbols without a size.
    pub size: u64,
    /// Code or data.
    pub kind: SymbolKind,
    /// Which table the name comes from.
    pub origin: SymbolOrigin,
    /// Which indexed symbol this is, stable for the life of the opened file.
    pub id: SymbolId,
}

/// Where one name (or version) of a file's symbols is, without borrowing the file: a batch
/// keeps these per distinct symbol and reads the bytes back with
/// [`crate::elf::ElfFile::name_bytes`] only when a caller asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NameSpan {
    /// Offset in the file, or in the names this crate made up (`synthetic`).
    pub(crate) start: usize,
    pub(crate) len: u32,
    pub(crate) synthetic: bool,
    /// Checked to be UTF-8 (when the index was built, or when the span was made).
    pub(crate) utf8: bool,
}

/// An [`ElfSymbol`] with its name and version as [`NameSpan`]s, so that it can be kept
/// beside the file it describes (in a batch that holds the file) instead of borrowing it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SymbolSpans {
    pub(crate) name: NameSpan,
    pub(crate) version: Option<NameSpan>,
    pub(crate) version_hidden: bool,
    pub(crate) addr: VirtAddr,
    pub(crate) size: u64,
    pub(crate) kind: SymbolKind,
    pub(crate) origin: SymbolOrigin,
    pub(crate) id: SymbolId,
}

/// Splits `name@VER` / `name@@VER` into the name, the version and whether it is hidden.
/// Names made up by this crate (`target@plt`) are not passed here.
pub(crate) fn split_version(name: &[u8]) -> (&[u8], Option<&[u8]>, bool) {
    match crate::elf::bytes::find_byte(name, b'@') {
        // A leading '@' is part of a strange name, not a version separator.
        Some(0) | None => (name, None, false),
        Some(at) => {
            let rest = &name[at + 1..];
            match rest.strip_prefix(b"@") {
                Some(default) => (&name[..at], Some(default), false),
                None => (&name[..at], Some(rest), true),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> NameInfo {
        NameInfo {
            table: NameTable::Symtab,
            offset: 1,
            len: 3,
            utf8: true,
            version: VersionSuffix::None,
        }
    }

    #[test]
    fn an_entry_is_twelve_bytes_beside_its_address() {
        // The index promises 16 bytes per symbol: a 4-byte address delta plus this.
        assert_eq!(std::mem::size_of::<Entry>(), 12);
    }

    #[test]
    fn entries_round_trip() {
        let e = Entry::new(
            NameInfo {
                table: NameTable::Dynsym,
                offset: u32::MAX,
                len: 70_000,
                utf8: false,
                version: VersionSuffix::Hidden,
            },
            1 << 40,
            true,
        );
        assert_eq!(e.version_suffix(), VersionSuffix::Hidden);
        let v = Entry::new(name(), 4, false)
            .with_dynsym_version(0x8000 | 511)
            .unwrap();
        assert_eq!(
            (v.dynsym_version(), v.table(), v.stated_size()),
            (Some((511, true)), NameTable::Symtab, 4)
        );
        assert_eq!(Entry::new(name(), 4, false).with_dynsym_version(512), None);
        assert_eq!(Entry::new(name(), 4, false).dynsym_version(), None);
        assert_eq!(e.table(), NameTable::Dynsym);
        assert_eq!(e.name_offset(), u32::MAX as usize);
        assert_eq!(e.name_len(), None);
        assert!(!e.name_is_utf8());
        assert_eq!(e.stated_size(), 0);
        assert_eq!(e.covered_size(), u64::from(u32::MAX));
        let e = Entry::new(name(), 8, false);
        assert_eq!(
            (e.table(), e.name_len(), e.name_is_utf8(), e.stated_size()),
            (NameTable::Symtab, Some(3), true, 8)
        );
    }

    #[test]
    fn measures_names_with_versions() {
        let m = NameInfo::measure(NameTable::Symtab, 0, b"memcpy@@GLIBC_2.14");
        assert_eq!(
            (m.len, m.version, m.utf8),
            (6, VersionSuffix::Default, true)
        );
        let m = NameInfo::measure(NameTable::Dynsym, 0, b"odd@name");
        assert_eq!(
            (m.len, m.version),
            (8, VersionSuffix::None),
            ".dynsym versions come from tables"
        );
        let m = NameInfo::measure(NameTable::Symtab, 0, b"bad\xff@V");
        assert_eq!(
            (m.len, m.version, m.utf8),
            (4, VersionSuffix::Hidden, false)
        );
    }

    #[test]
    fn splits_versions() {
        assert_eq!(
            split_version(b"memcpy@@GLIBC_2.14"),
            (&b"memcpy"[..], Some(&b"GLIBC_2.14"[..]), false)
        );
        assert_eq!(
            split_version(b"memcpy@GLIBC_2.2.5"),
            (&b"memcpy"[..], Some(&b"GLIBC_2.2.5"[..]), true)
        );
        assert_eq!(split_version(b"plain"), (&b"plain"[..], None, false));
        assert_eq!(split_version(b"@odd"), (&b"@odd"[..], None, false));
    }

    #[test]
    fn find_respects_sizes_and_inferred_sizes() {
        let index = AddrIndex::from_sorted(
            vec![0x100, 0x200, 0x300],
            vec![
                Entry::new(name(), 0x10, false),
                Entry::new(name(), 0x100, true),
                Entry::new(name(), 0x8, false),
            ],
        );
        assert_eq!(index.find(0x0ff), None);
        assert_eq!(index.find(0x100), Some(0));
        assert_eq!(index.find(0x10f), Some(0));
        assert_eq!(
            index.find(0x110),
            None,
            "past a sized symbol is not inside it"
        );
        assert_eq!(index.find(0x2ff), Some(1));
        assert_eq!(index.find(0x307), Some(2));
        assert_eq!(index.find(0x308), None);
        assert_eq!(index.find(u64::MAX), None);
        assert_eq!(index.entry(1).stated_size(), 0);
        // Spans: a sized symbol's extent, the gap after it, an inferred size up to the next
        // start, and everything past the last symbol.
        let span = |addr| {
            let found = index.find_span(addr);
            (found.index, found.span)
        };
        assert_eq!(span(0x104), (Some(0), 0x100..0x110));
        assert_eq!(span(0x150), (None, 0x110..0x200));
        assert_eq!(span(0x2ff), (Some(1), 0x200..0x300));
        assert_eq!(span(0x400), (None, 0x308..u64::MAX));
        let empty = AddrIndex::from_sorted(Vec::new(), Vec::new());
        let found = empty.find_span(7);
        assert_eq!(
            (found.index, found.span, found.below),
            (None, 0..u64::MAX, None)
        );
    }

    /// Nested symbols (module docs, "Nested symbols"), laid out as elfutils' testfile49:
    /// `global_outer` 0x101..0x10b holds `global_in_global` 0x103..0x105 and
    /// `local_in_global` 0x105..0x107; past the nested ones the outer one answers again
    /// (eu-addr2line: `global_outer+0x6` at 0x107), and past its end nothing does. Two levels
    /// and a sizeless symbol inside are checked against the definition too, span by span.
    #[test]
    fn an_enclosing_symbol_answers_again_after_a_nested_one_ends() {
        let layout: [(u64, u64, bool); 7] = [
            (0x101, 0xa, false),
            (0x103, 0x2, false),
            (0x105, 0x2, false),
            (0x200, 0x40, false),
            (0x208, 0x20, false),
            (0x210, 0x4, false),
            (0x220, 0x4, true),
        ];
        let addrs: Vec<u64> = layout.iter().map(|l| l.0).collect();
        let entries = layout
            .iter()
            .map(|&(_, size, inferred)| Entry::new(name(), size, inferred))
            .collect();
        let index = AddrIndex::from_sorted(addrs, entries);
        // The definition: the last start at or below covers it, else the innermost (latest
        // started) symbol whose stated size covers it.
        let expected = |addr: u64| {
            let below = layout.iter().rposition(|l| l.0 <= addr)?;
            if addr - layout[below].0 < layout[below].1 {
                return Some(below as u32);
            }
            layout[..below]
                .iter()
                .rposition(|l| !l.2 && l.0 <= addr && addr - l.0 < l.1)
                .map(|i| i as u32)
        };
        assert_eq!(index.find(0x107), Some(0), "global_outer+0x6");
        assert_eq!(index.find(0x10a), Some(0));
        assert_eq!(index.find(0x10b), None, "past global_outer");
        assert_eq!(index.find(0x214), Some(4), "the inner level first");
        assert_eq!(index.find(0x228), Some(3), "then the outer one");
        for probe in 0xf0..0x260u64 {
            assert_eq!(index.find(probe), expected(probe), "probe {probe:#x}");
            let found = index.find_span(probe);
            assert_eq!(found.index, expected(probe), "span at {probe:#x}");
            assert!(
                found.span.contains(&probe),
                "{:x?} lacks {probe:#x}",
                found.span
            );
            for inside in found.span.start..found.span.end.min(0x300) {
                assert_eq!(
                    expected(inside),
                    found.index,
                    "{:x?} at {inside:#x}",
                    found.span
                );
            }
            let again = index.find_span_from(probe, Some(0));
            assert_eq!((again.index, &again.span), (found.index, &found.span));
        }
    }

    #[test]
    fn find_agrees_with_a_linear_search_across_blocks_and_wide_spans() {
        for spread in [1u64, 1 << 30] {
            // Sizes above u32::MAX are clamped by the index (documented on `Entry::new`).
            let size = |i: usize| {
                if i.is_multiple_of(3) {
                    0x10
                } else {
                    (0x40 * spread).min(u64::from(u32::MAX))
                }
            };
            let addrs: Vec<u64> = (0..1000u64).map(|i| 0x1000 + i * 0x40 * spread).collect();
            let entries = (0..1000)
                .map(|i| Entry::new(name(), size(i), false))
                .collect();
            let index = AddrIndex::from_sorted(addrs.clone(), entries);
            for probe in (0..1100u64).map(|i| 0x1000 + i * 0x3b * spread / 2) {
                let expected = addrs
                    .iter()
                    .rposition(|&a| a <= probe)
                    .filter(|&i| probe - addrs[i] < size(i));
                assert_eq!(
                    index.find(probe).map(|i| i as usize),
                    expected,
                    "probe {probe:#x}"
                );
                // The span holds the probe, `find` answers alike across it and differently
                // just outside it: a sorted walk may reuse the answer for exactly that span.
                let FoundSpan {
                    index: found,
                    span,
                    below,
                } = index.find_span(probe);
                // Searching forward from any lower place finds the same.
                for from in [None, Some(0), below, below.map(|b| b.saturating_sub(7))] {
                    let again = index.find_span_from(probe, from);
                    assert_eq!((again.index, &again.span), (found, &span), "from {from:?}");
                }
                // From a place past the answer, too (the whole index is searched then).
                let past = index.find_span_from(probe, Some(999));
                assert_eq!((past.index, &past.span), (found, &span), "from 999");
                assert_eq!(found.map(|i| i as usize), expected, "span at {probe:#x}");
                assert!(span.contains(&probe), "{span:x?} lacks {probe:#x}");
                assert_eq!(index.find(span.start), found, "{span:x?} start");
                assert_eq!(index.find(span.end - 1), found, "{span:x?} end");
                if span.end < u64::MAX {
                    assert_ne!(index.find(span.end), found, "{span:x?} could be longer");
                }
                if span.start > 0 {
                    assert_ne!(
                        index.find(span.start - 1),
                        found,
                        "{span:x?} could start lower"
                    );
                }
            }
            assert_eq!(index.find(0xfff), None);
            let below = index.find_span(0xfff);
            assert_eq!((below.index, below.span), (None, 0..0x1000));
        }
    }
}
