//! A file as the symbolizer keeps it in its cache: the ELF file plus the names demangled so
//! far, so each distinct name is demangled once per file, not once per address.

use std::sync::OnceLock;

use crate::demangle::demangle;
use crate::elf::{ElfFile, ElfSymbol, SymbolId, SymbolKind};
use crate::error::Result;

/// One slot per indexed symbol: unset until first needed, then `None` when demangling leaves
/// the name as it is (plain C names), or the name to show.
type NameSlots = Box<[OnceLock<Option<Box<str>>>]>;

pub(crate) struct LoadedElf {
    pub(crate) elf: ElfFile,
    /// Shown names of code and data symbols, by symbol index; allocated on first use, since a
    /// symbolizer without demangling never needs them.
    shown_names: OnceLock<(NameSlots, NameSlots)>,
}

impl LoadedElf {
    pub(crate) fn new(elf: ElfFile) -> Self {
        LoadedElf {
            elf,
            shown_names: OnceLock::new(),
        }
    }

    fn slots(&self) -> Result<&(NameSlots, NameSlots)> {
        if let Some(slots) = self.shown_names.get() {
            return Ok(slots);
        }
        let (code, data) = self.elf.symbol_count()?;
        let empty = |n: usize| (0..n).map(|_| OnceLock::new()).collect::<NameSlots>();
        Ok(self.shown_names.get_or_init(|| (empty(code), empty(data))))
    }

    /// Computes, on first use, the demangled (or, for a name that is not UTF-8, the lossily
    /// converted) name of the symbol `id`; [`LoadedElf::computed_name`] then returns it.
    pub(crate) fn compute_shown_name(&self, id: SymbolId) -> Result<()> {
        let slot = self.slot(id)?;
        if slot.get().is_some() {
            return Ok(());
        }
        let Some(symbol) = self.elf.symbol_by_id(id)? else {
            return Ok(());
        };
        slot.get_or_init(|| shown_name(&symbol));
        Ok(())
    }

    /// The name computed earlier by [`LoadedElf::shown_name`], if any.
    pub(crate) fn computed_name(&self, id: SymbolId) -> Option<&str> {
        self.slot(id).ok()?.get()?.as_deref()
    }

    fn slot(&self, id: SymbolId) -> Result<&OnceLock<Option<Box<str>>>> {
        let (code, data) = self.slots()?;
        let slots = match id.kind() {
            SymbolKind::Function => code,
            SymbolKind::Data => data,
        };
        // Ids come from this file's own index, whose counts sized the slots; an id from
        // another file is a caller bug that the empty fallback turns into "no name".
        Ok(slots.get(id.index() as usize).unwrap_or(&EMPTY_SLOT))
    }
}

fn shown_name(symbol: &ElfSymbol<'_>) -> Option<Box<str>> {
    let name = match symbol.name_str {
        Some(name) => std::borrow::Cow::Borrowed(name),
        None => String::from_utf8_lossy(symbol.name),
    };
    match demangle(&name) {
        std::borrow::Cow::Owned(demangled) => Some(demangled.into_boxed_str()),
        std::borrow::Cow::Borrowed(_) if symbol.name_str.is_none() => Some(name.into()),
        std::borrow::Cow::Borrowed(_) => None,
    }
}

static EMPTY_SLOT: OnceLock<Option<Box<str>>> = OnceLock::new();
