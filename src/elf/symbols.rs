//! The compact, address-sorted index of a file's symbols, and lookups in it.
//!
//! The index stores no strings: each entry is the symbol's start address (searched, so kept in
//! its own array for cache locality), its size and a 32-bit reference to its name in a string
//! table of the mapped file. That is 16 bytes per symbol; names are borrowed from the mapping
//! when a lookup needs them.
//!
//! # Which name wins when several symbols share an address
//! Only one symbol per address is kept, chosen by these rules in order (the first that
//! differs decides):
//! 1. a symbol with a size over one without (`st_size == 0`);
//! 2. binding: `GLOBAL` (and `GNU_UNIQUE`) over `WEAK` over `LOCAL`;
//! 3. type: `FUNC` over `GNU_IFUNC` (for data: `OBJECT` only);
//! 4. default visibility over the others;
//! 5. `.symtab` over `.dynsym` (the same symbol usually appears in both);
//! 6. the lower index in its table.
//!
//! The rule never compares names, so it is cheap and gives the same answer every run.
//!
//! # Symbols without a size
//! A symbol with `st_size == 0` (hand-written assembly, linker-defined labels) is taken to
//! extend to the next indexed symbol or the end of its section, whichever comes first, as perf
//! and llvm-symbolizer do. [`ElfSymbol::size`] still reports the size the file states.

use crate::addr::VirtAddr;

/// Bits of a [`NameRef`] that select the string table.
const TABLE_SHIFT: u32 = 30;
/// Largest string-table offset a [`NameRef`] can hold (1 GiB); larger string tables are
/// refused with [`crate::Error::Unsupported`] when the index is built.
pub(crate) const MAX_NAME_OFFSET: u64 = (1 << TABLE_SHIFT) - 1;
/// Bit of [`Entry::size`] that marks a size inferred for a symbol with `st_size == 0`.
const INFERRED_SIZE: u32 = 1 << 31;
/// Largest size an entry stores; larger symbols are clamped (sizes of 2 GiB do not occur in
/// practice, and a clamped size only shortens the range the symbol covers).
pub(crate) const MAX_SIZE: u64 = (INFERRED_SIZE - 1) as u64;

/// Which string table a name lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameTable {
    /// The string table of `.symtab` (usually `.strtab`).
    Symtab = 0,
    /// The string table of `.dynsym` (usually `.dynstr`).
    Dynsym = 1,
    /// Names made up by this crate, like `puts@plt`.
    Synthetic = 2,
}

/// A 32-bit reference to a name: 2 bits of [`NameTable`], 30 bits of offset into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct NameRef(u32);

impl NameRef {
    /// `offset` must be at most [`MAX_NAME_OFFSET`]; the builder checks that first.
    pub(crate) fn new(table: NameTable, offset: u64) -> Self {
        debug_assert!(offset <= MAX_NAME_OFFSET);
        NameRef(((table as u32) << TABLE_SHIFT) | (offset as u32 & MAX_NAME_OFFSET as u32))
    }

    pub(crate) fn table(self) -> NameTable {
        match self.0 >> TABLE_SHIFT {
            0 => NameTable::Symtab,
            1 => NameTable::Dynsym,
            _ => NameTable::Synthetic,
        }
    }

    pub(crate) fn offset(self) -> usize {
        (self.0 & MAX_NAME_OFFSET as u32) as usize
    }
}

/// Everything but the address of one indexed symbol.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// The size in bytes; with [`INFERRED_SIZE`] set it was inferred, the file said 0.
    pub(crate) size: u32,
    pub(crate) name: NameRef,
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

/// One kind of symbols (code or data), sorted by address, one per address.
#[derive(Debug, Default)]
pub(crate) struct AddrIndex {
    addrs: Vec<u64>,
    entries: Vec<Entry>,
}

impl AddrIndex {
    /// Builds the index from `(addr, entry)` pairs that are already sorted by address and
    /// deduplicated, with sizes of unsized symbols already inferred.
    pub(crate) fn from_sorted(addrs: Vec<u64>, entries: Vec<Entry>) -> Self {
        debug_assert_eq!(addrs.len(), entries.len());
        debug_assert!(addrs.windows(2).all(|w| w[0] < w[1]));
        AddrIndex { addrs, entries }
    }

    pub(crate) fn len(&self) -> usize {
        self.addrs.len()
    }

    /// The entry covering `addr`: the one with the greatest start at or below it, if `addr` is
    /// inside its (possibly inferred) size.
    pub(crate) fn find(&self, addr: u64) -> Option<u32> {
        let after = self.addrs.partition_point(|&start| start <= addr);
        let index = after.checked_sub(1)?;
        let start = self.addrs[index];
        let size = u64::from(self.entries[index].size & !INFERRED_SIZE);
        // An inferred size of 0 happens only for a symbol at the very end of its section; it
        // still covers its own address.
        if addr - start < size.max(1) {
            u32::try_from(index).ok()
        } else {
            None
        }
    }

    pub(crate) fn addr(&self, index: u32) -> u64 {
        self.addrs[index as usize]
    }

    pub(crate) fn entry(&self, index: u32) -> Entry {
        self.entries[index as usize]
    }
}

impl Entry {
    /// The size the file states: 0 for a symbol whose size was inferred.
    pub(crate) fn stated_size(self) -> u64 {
        if self.size & INFERRED_SIZE != 0 {
            0
        } else {
            u64::from(self.size)
        }
    }

    pub(crate) fn with_inferred_size(name: NameRef, size: u64) -> Self {
        Entry {
            size: INFERRED_SIZE | size.min(MAX_SIZE) as u32,
            name,
        }
    }

    pub(crate) fn with_size(name: NameRef, size: u64) -> Self {
        Entry {
            size: size.min(MAX_SIZE) as u32,
            name,
        }
    }
}

/// One symbol found by a lookup, with its name borrowed from the file.
#[derive(Debug, Clone, Copy)]
pub struct ElfSymbol<'a> {
    /// The name as the file spells it (mangled), without a `@VERSION` suffix. Not always
    /// UTF-8: ELF names are bytes.
    pub name: &'a [u8],
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
    /// Which indexed symbol this is, stable for the life of the opened file.
    pub id: SymbolId,
}

/// Splits `name@VER` / `name@@VER` into the name, the version and whether it is hidden.
/// Names made up by this crate (`target@plt`) are not passed here.
pub(crate) fn split_version(name: &[u8]) -> (&[u8], Option<&[u8]>, bool) {
    match name.iter().position(|&b| b == b'@') {
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

    #[test]
    fn an_entry_is_eight_bytes_beside_its_address() {
        // The index promises 16 bytes per symbol: 8 of address plus this.
        assert_eq!(std::mem::size_of::<Entry>(), 8);
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
        let name = NameRef::new(NameTable::Symtab, 1);
        let index = AddrIndex::from_sorted(
            vec![0x100, 0x200, 0x300],
            vec![
                Entry::with_size(name, 0x10),
                Entry::with_inferred_size(name, 0x100),
                Entry::with_size(name, 0x8),
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
        assert_eq!(index.entry(1).stated_size(), 0);
    }

    #[test]
    fn name_refs_round_trip() {
        let r = NameRef::new(NameTable::Dynsym, MAX_NAME_OFFSET);
        assert_eq!(r.table(), NameTable::Dynsym);
        assert_eq!(r.offset() as u64, MAX_NAME_OFFSET);
        assert_eq!(
            NameRef::new(NameTable::Synthetic, 7).table(),
            NameTable::Synthetic
        );
    }
}
