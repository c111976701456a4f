//! Every defined function and data symbol of a file, by name: what a probe needs (names →
//! addresses), where the address index (`symbols.rs`) keeps one name per address. Aliases,
//! versions and both tables are kept; nothing is sorted or interned. Read on demand (a linear
//! walk of `.symtab` then `.dynsym`), since name lookups are rare next to address lookups.

use object::read::elf::{FileHeader, Sym, SymbolTable};
use object::read::SymbolIndex;
use object::{elf, Endianness};

use crate::addr::VirtAddr;
use crate::elf::index_builder::section_table;
use crate::elf::relocatable::section_addr;
use crate::elf::{ElfFile, SymbolKind, SymbolOrigin};
use crate::error::{Error, Result};

/// One defined symbol of a file, as its table states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedSymbol<'a> {
    /// The name as the table spells it, without a `@VERSION` (`.symtab` spells versions in
    /// the name; `.dynsym` in the version table): mangled, as bytes.
    pub name: &'a [u8],
    /// The symbol version, if any (`GLIBC_2.2.5`).
    pub version: Option<&'a [u8]>,
    /// Whether the version is hidden (`name@VER`, not the default `name@@VER`).
    pub version_hidden: bool,
    /// `st_value`: the symbol's ELF virtual address (a relocatable file's: its layout
    /// address, see [`crate::elf::ElfFile::relocatable_sections`]).
    pub addr: VirtAddr,
    /// `st_size`.
    pub size: u64,
    /// Function (`STT_FUNC`, `STT_GNU_IFUNC`) or data (`STT_OBJECT`).
    pub kind: SymbolKind,
    /// Global, weak or local.
    pub binding: Binding,
    /// `.symtab` or `.dynsym`.
    pub table: SymbolOrigin,
}

/// A symbol's binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binding {
    /// `STB_GLOBAL` (and `STB_GNU_UNIQUE`).
    Global,
    /// `STB_WEAK`.
    Weak,
    /// `STB_LOCAL`: a static function, visible only in `.symtab`.
    Local,
}

impl ElfFile {
    /// Every defined function and data symbol of `.symtab`, then of `.dynsym`, in table
    /// order, aliases and duplicates across the two tables included. Unnamed symbols, ARM
    /// mapping symbols (`$x`), and symbols without a section (undefined, absolute, common)
    /// are left out. A table that cannot be read is skipped with a `log::debug!` while the
    /// other is usable; when every table present is broken, the error names the file.
    pub fn named_symbols(&self) -> Result<Vec<NamedSymbol<'_>>> {
        let data = self.data();
        if self.header().is_64 {
            named_symbols::<elf::FileHeader64<Endianness>>(self, data)
        } else {
            named_symbols::<elf::FileHeader32<Endianness>>(self, data)
        }
    }
}

fn named_symbols<'d, Elf: FileHeader<Endian = Endianness>>(
    file: &ElfFile,
    data: &'d [u8],
) -> Result<Vec<NamedSymbol<'d>>> {
    let path = file.path();
    let malformed = |what: String| Error::MalformedElf {
        path: path.to_path_buf(),
        what,
    };
    let (_, endian, sections) = section_table::<Elf>(path, data)?;
    let versions = sections.versions(endian, data).unwrap_or_else(|e| {
        log::debug!(
            "{}: ignoring unreadable symbol versions: {e}",
            path.display()
        );
        None
    });
    let layout = file.relocatable_sections();
    let layout = (!layout.is_empty()).then_some(layout);
    let mut out = Vec::new();
    let mut broken = Vec::new();
    for (sh_type, table) in [
        (elf::SHT_SYMTAB, SymbolOrigin::Symtab),
        (elf::SHT_DYNSYM, SymbolOrigin::Dynsym),
    ] {
        let symbols = match sections.symbols(endian, data, sh_type) {
            Ok(symbols) => symbols,
            Err(e) => {
                log::debug!(
                    "{}: ignoring unreadable {table:?} table: {e}",
                    path.display()
                );
                broken.push(format!("{table:?}: {e}"));
                continue;
            }
        };
        let version_of = |index: SymbolIndex| {
            let versions = versions
                .as_ref()
                .filter(|_| table == SymbolOrigin::Dynsym)?;
            let versym = versions.version_index(endian, index);
            let version = versions.version(versym.index()).ok()??;
            Some((version.name(), versym.is_hidden()))
        };
        collect(&symbols, endian, table, layout, &version_of, &mut out);
    }
    if broken.len() == 2 {
        return Err(malformed(format!(
            "no readable symbol table: {}",
            broken.join("; ")
        )));
    }
    Ok(out)
}

fn collect<'d, Elf: FileHeader<Endian = Endianness>>(
    symbols: &SymbolTable<'d, Elf>,
    endian: Endianness,
    table: SymbolOrigin,
    layout: Option<&[crate::elf::RelocatableSection]>,
    version_of: &dyn Fn(SymbolIndex) -> Option<(&'d [u8], bool)>,
    out: &mut Vec<NamedSymbol<'d>>,
) {
    let strings = symbols.strings();
    for (i, sym) in symbols.symbols().iter().enumerate().skip(1) {
        let kind = match sym.st_type() {
            elf::STT_FUNC | elf::STT_GNU_IFUNC => SymbolKind::Function,
            elf::STT_OBJECT => SymbolKind::Data,
            _ => continue,
        };
        let Ok(Some(section)) = symbols.symbol_section(endian, sym, SymbolIndex(i)) else {
            continue; // undefined, absolute, common, or a broken section index
        };
        let Ok(name) = sym.name(endian, strings) else {
            continue;
        };
        if name.is_empty() || name.starts_with(b"$") {
            continue;
        }
        let (name, mut version, mut version_hidden) = match table {
            // `.symtab` spells a version in the name: `name@@VER` (default), `name@VER`.
            SymbolOrigin::Symtab => match name.iter().position(|&b| b == b'@') {
                Some(at) if at > 0 => {
                    let rest = &name[at + 1..];
                    let (hidden, version) = match rest.strip_prefix(b"@") {
                        Some(version) => (false, version),
                        None => (true, rest),
                    };
                    (&name[..at], Some(version), hidden)
                }
                _ => (name, None, false),
            },
            _ => (name, None, false),
        };
        if let Some((v, hidden)) = version_of(SymbolIndex(i)) {
            version = Some(v);
            version_hidden = hidden;
        }
        let value: u64 = sym.st_value(endian).into();
        let addr = match layout {
            None => value,
            Some(layout) => match section_addr(layout, section.0) {
                Some(base) => base.wrapping_add(value),
                None => continue, // a section that is not loaded holds no code or data
            },
        };
        out.push(NamedSymbol {
            name,
            version,
            version_hidden,
            addr: VirtAddr(addr),
            size: sym.st_size(endian).into(),
            kind,
            binding: match sym.st_bind() {
                elf::STB_GLOBAL | elf::STB_GNU_UNIQUE => Binding::Global,
                elf::STB_WEAK => Binding::Weak,
                _ => Binding::Local,
            },
            table,
        });
    }
}
