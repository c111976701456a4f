//! What a symbolization returns: [`Symbols`], one optional [`Sym`] per input address.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::addr::VirtAddr;
use crate::elf::{SymbolId, SymbolKind, SymbolOrigin};
use crate::symbolize::loaded::LoadedElf;

/// One symbol an address resolved to. Names are borrowed from the [`Symbols`] it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sym<'a> {
    /// The name to show: demangled when demangling is on (the default), else as in the file.
    /// With demangling off, a name that is not UTF-8 is shown up to its first invalid byte
    /// (`raw_name` has all of it); with demangling on, invalid bytes become U+FFFD.
    /// A `@VERSION` suffix is never part of it (see [`Sym::version`]). PLT entries are named
    /// `target@plt`, as perf names them.
    pub name: &'a str,
    /// The name exactly as the file spells it (mangled, without a version), as bytes.
    pub raw_name: &'a [u8],
    /// The symbol version (`GLIBC_2.2.5`), if the symbol has one.
    pub version: Option<&'a str>,
    /// Whether the version is hidden (`name@VER`) rather than the default (`name@@VER`).
    pub version_hidden: bool,
    /// Which table the name comes from (`.symtab`, `.dynsym`, or a PLT entry).
    pub origin: SymbolOrigin,
    /// The start of the symbol, as an ELF virtual address.
    pub addr: VirtAddr,
    /// The size the file states; 0 for a symbol without a size (which is then taken to reach
    /// the next symbol or its section's end).
    pub size: u64,
    /// How far into the symbol the address is.
    pub offset: u64,
    /// Function or data object.
    pub kind: SymbolKind,
    /// The file the symbol is from.
    pub module: &'a Path,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    pub(crate) id: SymbolId,
    pub(crate) offset: u64,
}

/// The results of one batch: one entry per input address, in input order. Holds the file it
/// came from open, so names are borrowed without copies.
pub struct Symbols {
    pub(crate) file: Arc<LoadedElf>,
    /// The path the caller gave (the file may have been opened through another link).
    pub(crate) module: PathBuf,
    pub(crate) found: Vec<Option<Found>>,
    pub(crate) demangle: bool,
}

impl std::fmt::Debug for Symbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Symbols {
    /// How many addresses were given (found or not).
    pub fn len(&self) -> usize {
        self.found.len()
    }

    /// Whether the batch was empty.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The file these symbols are from.
    pub fn module(&self) -> &Path {
        &self.module
    }

    /// The symbol of the `index`-th input address; `None` if no symbol covers it (or `index`
    /// is out of range).
    pub fn get(&self, index: usize) -> Option<Sym<'_>> {
        let found = self.found.get(index)?.as_ref()?;
        // The id came from this file's own index, so the lookup succeeds; an error or `None`
        // here would mean the index changed under us, which it cannot (it is built once).
        let symbol = self.file.elf.symbol_by_id(found.id).ok()??;
        let computed = if self.demangle {
            self.file.computed_name(found.id)
        } else {
            None
        };
        let name = computed
            .or(symbol.name_str)
            .unwrap_or_else(|| valid_prefix(symbol.name));
        Some(Sym {
            name,
            raw_name: symbol.name,
            version: symbol.version.and_then(|v| std::str::from_utf8(v).ok()),
            version_hidden: symbol.version_hidden,
            origin: symbol.origin,
            addr: symbol.addr,
            size: symbol.size,
            offset: found.offset,
            kind: symbol.kind,
            module: &self.module,
        })
    }

    /// The results in input order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Option<Sym<'_>>> + '_ {
        (0..self.found.len()).map(|i| self.get(i))
    }
}

/// The longest UTF-8 prefix of `bytes` (all of it for a valid name).
fn valid_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(name) => name,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}
