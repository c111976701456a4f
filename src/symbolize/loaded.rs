//! A file as the symbolizer keeps it in its cache: the ELF file plus the names demangled so
//! far, so each distinct name is demangled once per file, not once per address.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{PoisonError, RwLock};

use crate::demangle::demangle;
use crate::elf::{ElfFile, ElfSymbol, SymbolId};
use crate::symbolize::output::ShownName;

pub(crate) struct LoadedElf {
    pub(crate) elf: ElfFile,
    /// Shown names of the symbols looked up so far, where they differ from the raw name.
    shown_names: RwLock<HashMap<SymbolId, ShownName, BuildHasherDefault<IdHasher>>>,
}

impl LoadedElf {
    pub(crate) fn new(elf: ElfFile) -> Self {
        LoadedElf {
            elf,
            shown_names: RwLock::default(),
        }
    }

    /// The cached shown name of `id`, if it was computed before.
    pub(crate) fn cached_names(
        &self,
    ) -> std::sync::RwLockReadGuard<'_, HashMap<SymbolId, ShownName, BuildHasherDefault<IdHasher>>>
    {
        // Entries are inserted whole; a panic elsewhere cannot leave one half-written.
        self.shown_names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Computes (demangling if asked) and caches the shown names of `symbols`.
    pub(crate) fn compute_names<'a>(
        &self,
        symbols: impl Iterator<Item = ElfSymbol<'a>>,
        demangle_names: bool,
    ) {
        let mut computed = Vec::new();
        for symbol in symbols {
            let name = String::from_utf8_lossy(symbol.name);
            let shown = if demangle_names {
                match demangle(&name) {
                    std::borrow::Cow::Owned(d) => ShownName::Converted(d.into()),
                    std::borrow::Cow::Borrowed(_) => shown_raw(&name),
                }
            } else {
                shown_raw(&name)
            };
            computed.push((symbol.id, shown));
        }
        let mut names = self
            .shown_names
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        names.extend(computed);
    }
}

fn shown_raw(name: &std::borrow::Cow<'_, str>) -> ShownName {
    match name {
        std::borrow::Cow::Borrowed(_) => ShownName::Raw,
        std::borrow::Cow::Owned(lossy) => ShownName::Converted(lossy.as_str().into()),
    }
}

/// A fast hasher for [`SymbolId`]s, which are small integers (the default SipHash is
/// built for untrusted keys; these come from our own index).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}
