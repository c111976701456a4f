//! What a symbolization returns: [`Symbols`], one optional [`Sym`] per input address.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::addr::VirtAddr;
use crate::dwarf::Frame;
use crate::elf::{SymbolId, SymbolKind, SymbolOrigin};
use crate::error::Error;
use crate::symbolize::loaded::LoadedElf;

/// Where a [`Sym`]'s name comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NameOrigin {
    /// A symbol table (of the file, or of its debug companion: see [`Sym::symbol_file`]).
    Table(SymbolOrigin),
    /// DWARF alone: no symbol covers the address, but a DWARF function does (its name is
    /// the outermost frame's). The function's start is not known then: [`Sym::addr`] is the
    /// address itself and [`Sym::offset`] is 0.
    Dwarf,
}

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
    /// Where the name comes from: a symbol table (`.symtab`, `.dynsym`, a PLT entry) or DWARF.
    pub origin: NameOrigin,
    /// The start of the symbol, as an ELF virtual address.
    pub addr: VirtAddr,
    /// The size the file states; 0 for a symbol without a size (which is then taken to reach
    /// the next symbol or its section's end).
    pub size: u64,
    /// How far into the symbol the address is.
    pub offset: u64,
    /// Function or data object.
    pub kind: SymbolKind,
    /// The file the address is in, as the caller named it.
    pub module: &'a Path,
    /// The file whose symbol table named the symbol: `module`'s real file, or its separate
    /// debug file when `module` is stripped to `.dynsym` and the debug file has a `.symtab`.
    pub symbol_file: &'a Path,
    /// Source lines from DWARF, innermost first: the inlined functions at the address, then
    /// the function that contains them (whose machine code this is). An outer frame's
    /// location is the call site of the frame inside it, as in llvm-symbolizer. Empty when
    /// DWARF does not cover the address (or source lines are off); then only the symbol
    /// table answered.
    pub frames: &'a [Frame],
}

#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The symbol and the address's offset into it; `None` when only DWARF covers it.
    pub(crate) symbol: Option<(SymbolId, u64)>,
    /// Whether the symbol is from [`Symbols::mini`] rather than [`Symbols::file`].
    pub(crate) in_mini: bool,
    /// The address (for answers from DWARF alone).
    pub(crate) addr: VirtAddr,
}

/// The results of one batch: one entry per input address, in input order. Holds the file it
/// came from open, so names are borrowed without copies.
pub struct Symbols {
    /// The file whose symbol table answered (the file itself or its debug companion).
    pub(crate) file: Arc<LoadedElf>,
    /// The file's MiniDebugInfo, searched beside `file`'s `.dynsym`.
    pub(crate) mini: Option<Arc<LoadedElf>>,
    /// The path the caller gave (the file may have been opened through another link).
    pub(crate) module: PathBuf,
    pub(crate) found: Vec<Option<Found>>,
    /// The frames of every address, back to back.
    pub(crate) frames: Vec<Frame>,
    /// Each input address's range of `frames` (also where no symbol or function names it).
    pub(crate) ranges: Vec<Range<usize>>,
    pub(crate) demangle: bool,
    pub(crate) debug_file: Option<PathBuf>,
    pub(crate) debug_error: Option<Error>,
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

    /// The separate debug file that was read for this file (its DWARF or its `.symtab`), if
    /// one was found.
    pub fn debug_file(&self) -> Option<&Path> {
        self.debug_file.as_deref()
    }

    /// Why debug information could not be used, if it could not: DWARF or MiniDebugInfo
    /// was malformed or unreadable, for the whole file or for some addresses (the first
    /// such error). Those addresses were answered from the symbol tables that could be read.
    pub fn debug_error(&self) -> Option<&Error> {
        self.debug_error.as_ref()
    }

    /// The source lines of the `index`-th input address, as [`Sym::frames`], and also where
    /// [`Symbols::get`] has no answer: a line-table row that no symbol and no DWARF function
    /// covers (the padding after a function, code the compiler made) still has a file and
    /// line, as llvm-symbolizer prints them under `??`. Empty without DWARF.
    pub fn lines(&self, index: usize) -> &[Frame] {
        self.ranges
            .get(index)
            .and_then(|range| self.frames.get(range.clone()))
            .unwrap_or_default()
    }

    /// The symbol of the `index`-th input address; `None` if neither a symbol nor DWARF
    /// covers it (or `index` is out of range).
    pub fn get(&self, index: usize) -> Option<Sym<'_>> {
        let found = self.found.get(index)?.as_ref()?;
        let frames = self.lines(index);
        let file = match (&self.mini, found.in_mini) {
            (Some(mini), true) => mini,
            _ => &self.file,
        };
        let symbol_file = file.elf.path();
        let Some((id, offset)) = found.symbol else {
            // Only DWARF covers the address; `found` is pushed only with frames.
            let function = frames.last()?.function.as_ref()?;
            return Some(Sym {
                name: if self.demangle {
                    &function.demangled
                } else {
                    &function.raw
                },
                raw_name: function.raw.as_bytes(),
                version: None,
                version_hidden: false,
                origin: NameOrigin::Dwarf,
                addr: found.addr,
                size: 0,
                offset: 0,
                kind: SymbolKind::Function,
                module: &self.module,
                symbol_file,
                frames,
            });
        };
        // The id came from this file's own index, so the lookup succeeds; an error or `None`
        // here would mean the index changed under us, which it cannot (it is built once).
        let symbol = file.elf.symbol_by_id(id).ok()??;
        let computed = if self.demangle {
            file.computed_name(id)
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
            origin: NameOrigin::Table(symbol.origin),
            addr: symbol.addr,
            size: symbol.size,
            offset,
            kind: symbol.kind,
            module: &self.module,
            symbol_file,
            frames,
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
