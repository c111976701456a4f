//! Builds a file's [`SymbolTables`] from `.symtab`, `.dynsym`, the GNU version tables and the
//! PLT relocations. Generic over ELF32/ELF64 here only; the result is not generic.

use std::ops::Range;
use std::path::Path;

use object::read::elf::{
    FileHeader, Rel, Rela, SectionHeader, SectionTable, Sym, SymbolTable, VersionTable,
};
use object::read::ReadRef;
use object::read::{SectionIndex, SymbolIndex};
use object::{elf, Endianness};

use crate::elf::bytes::c_str_in;
use crate::elf::dynamic::{dynamic_tables, load_segment_of};
use crate::elf::file::range_of;
use crate::elf::relocatable::{section_addr, RelocatableSection};
use crate::elf::symbols::{AddrIndex, Entry, NameInfo, NameTable, SymbolKind, VersionSuffix};
use crate::error::{Error, Result};
use crate::radix::sorted_by_key;

/// The symbol index of one file, with the string-table locations its names refer to.
#[derive(Debug, Default)]
pub(crate) struct SymbolTables {
    pub(crate) code: AddrIndex,
    pub(crate) data: AddrIndex,
    /// File range of the string table of `.symtab`.
    pub(crate) symtab_strings: Range<usize>,
    /// File range of the string table of `.dynsym`.
    pub(crate) dynsym_strings: Range<usize>,
    /// NUL-separated names made up here (`puts@plt`).
    pub(crate) synthetic_names: Vec<u8>,
    /// File range of each version's name, by version index; `None` for special indexes.
    version_names: Vec<Option<Range<usize>>>,
    /// `(entry index, versym)` of the code entries that came from `.dynsym` with a version
    /// index too large to keep in the entry itself, sorted by entry index. Empty for almost
    /// every file.
    code_versions: Vec<(u32, u16)>,
    data_versions: Vec<(u32, u16)>,
}

impl SymbolTables {
    /// Heap bytes of the index and its side tables.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.code.heap_bytes()
            + self.data.heap_bytes()
            + self.synthetic_names.capacity()
            + self.version_names.capacity() * std::mem::size_of::<Option<Range<usize>>>()
            + (self.code_versions.capacity() + self.data_versions.capacity()) * 8
    }

    /// The version name's file range and whether it is hidden, for a `.dynsym` entry.
    pub(crate) fn dynsym_version(
        &self,
        kind: SymbolKind,
        index: u32,
        entry: Entry,
    ) -> Option<(Range<usize>, bool)> {
        if let Some((version, hidden)) = entry.dynsym_version() {
            let name = self.version_names.get(usize::from(version))?.clone()?;
            return Some((name, hidden));
        }
        let versions = match kind {
            SymbolKind::Function => &self.code_versions,
            SymbolKind::Data => &self.data_versions,
        };
        let at = versions.binary_search_by_key(&index, |&(i, _)| i).ok()?;
        let versym = versions[at].1;
        let name = self
            .version_names
            .get(usize::from(versym & elf::VERSYM_VERSION))?
            .clone()?;
        Some((name, versym & elf::VERSYM_HIDDEN.0 != 0))
    }
}

/// A symbol that may enter the index, before aliases are merged.
struct Candidate {
    addr: u64,
    size: u64,
    /// The rule's bits (see [`crate::elf::symbols`]); lower is better. Ties are broken by
    /// the position in the candidate list, which follows the table order.
    rank: u32,
    /// An `STT_NOTYPE` label: it gives way to a sized symbol that covers it.
    label: bool,
    name: NameInfo,
    /// End address of the symbol's section, bounding an inferred size.
    section_end: u64,
    /// The raw versym of a `.dynsym` symbol with a version, else 0.
    versym: u16,
}

/// What was skipped, reported once per file through `log::debug!`.
#[derive(Default)]
struct Skipped {
    bad_name: usize,
    bad_section: usize,
}

/// The file's header, byte order and section table, or an error naming the file: what both
/// symbol walks (the address index here, `names.rs`' walk by name) start from.
pub(crate) fn section_table<'d, Elf: FileHeader<Endian = Endianness>>(
    path: &Path,
    data: &'d [u8],
) -> Result<(&'d Elf, Endianness, SectionTable<'d, Elf>)> {
    let malformed = |what: String| Error::MalformedElf {
        path: path.to_path_buf(),
        what,
    };
    let raw = Elf::parse(data).map_err(|e| malformed(format!("ELF header: {e}")))?;
    let endian = raw
        .endian()
        .map_err(|e| malformed(format!("ELF header: {e}")))?;
    let sections = raw
        .sections(endian, data)
        .map_err(|e| malformed(format!("section headers: {e}")))?;
    Ok((raw, endian, sections))
}

pub(crate) fn build_symbol_tables<Elf: FileHeader<Endian = Endianness>>(
    path: &Path,
    data: &[u8],
    layout: Option<&[RelocatableSection]>,
) -> Result<SymbolTables> {
    let malformed = |what: String| Error::MalformedElf {
        path: path.to_path_buf(),
        what,
    };
    let (raw, endian, sections) = section_table::<Elf>(path, data)?;
    if sections.is_empty() {
        return dynamic_symbol_tables::<Elf>(path, data, raw, endian);
    }
    let sections = &sections;
    // Each table is read on its own: a broken .symtab leaves .dynsym usable (and says so in
    // the log); only when every table present is broken is the file an error.
    let mut broken_tables = Vec::new();
    let mut read_table = |sh_type, label: &str| match sections.symbols(endian, data, sh_type) {
        Ok(table) => table,
        Err(e) => {
            log::debug!("{}: ignoring unreadable {label}: {e}", path.display());
            broken_tables.push(format!("{label}: {e}"));
            SymbolTable::default()
        }
    };
    let symtab = read_table(elf::SHT_SYMTAB, ".symtab");
    let dynsym = read_table(elf::SHT_DYNSYM, ".dynsym");
    let mut tables = SymbolTables::default();
    // Most symbols of a large file are functions: room for all at once spares the copies of
    // a growing vector (a tenth of librustc_driver's cold batch went to page faults, most of
    // them from such copies); pages never written are never touched.
    let mut code = Vec::with_capacity(symtab.len() + dynsym.len());
    let mut objects = Vec::new();
    let mut skipped = Skipped::default();

    let versions = match sections.versions(endian, data) {
        Ok(v) => v,
        Err(e) => {
            log::debug!(
                "{}: ignoring unreadable symbol versions: {e}",
                path.display()
            );
            None
        }
    };
    if let Some(versions) = &versions {
        tables.version_names = version_names(versions, data);
    }

    for (table, symbols) in [(NameTable::Symtab, &symtab), (NameTable::Dynsym, &dynsym)] {
        if symbols.is_empty() {
            continue;
        }
        let strings =
            match string_table_range(path, sections, endian, data, symbols.string_section()) {
                Ok(strings) => strings,
                Err(e) => {
                    log::debug!("{e}; ignoring its symbol table");
                    broken_tables.push(e.to_string());
                    continue;
                }
            };
        let versyms = match (table, &versions) {
            (NameTable::Dynsym, Some(v)) => Some(v),
            _ => None,
        };
        collect_symbols(
            &mut Collector {
                data,
                endian,
                sections,
                symbols,
                table,
                strings: &strings,
                skipped: &mut skipped,
                layout,
            },
            |index| versyms.map(|v| v.version_index(endian, index).0),
            &mut code,
            &mut objects,
        );
        match table {
            NameTable::Symtab => tables.symtab_strings = strings,
            _ => tables.dynsym_strings = strings,
        }
    }

    if !broken_tables.is_empty() && code.is_empty() && objects.is_empty() {
        return Err(malformed(broken_tables.join("; ")));
    }
    let machine = raw.e_machine(endian);
    let plt = plt_entries::<Elf>(
        sections,
        endian,
        data,
        machine,
        &dynsym,
        &tables.dynsym_strings,
    );
    add_plt_candidates(plt, &mut tables.synthetic_names, &mut code);

    if skipped.bad_name + skipped.bad_section > 0 {
        log::debug!(
            "{}: skipped {} symbols with a name outside their string table and {} with a bad section index",
            path.display(),
            skipped.bad_name,
            skipped.bad_section
        );
    }
    let (code_index, code_versions) = merge_aliases(code);
    let (data_index, data_versions) = merge_aliases(objects);
    tables.code = code_index;
    tables.data = data_index;
    tables.code_versions = code_versions;
    tables.data_versions = data_versions;
    Ok(tables)
}

/// The names of a file's symbol versions by version index (`.gnu.version_d` and
/// `.gnu.version_r`), as ranges of the file's bytes. Indexes are small (one per version a
/// library defines or needs): read until the first index the table does not hold.
fn version_names<Elf: FileHeader<Endian = Endianness>>(
    versions: &VersionTable<'_, Elf>,
    data: &[u8],
) -> Vec<Option<Range<usize>>> {
    let mut names = Vec::new();
    for index in 0..=u16::MAX {
        match versions.version(elf::VersionIndex(index)) {
            Ok(Some(v)) => {
                let slot = usize::from(index);
                names.resize(slot + 1, None);
                names[slot] = Some(range_of(data, v.name()));
            }
            Ok(None) => {}
            Err(_) => break,
        }
    }
    names
}

/// PLT entries as code candidates named `target@plt`: the names made up into
/// `synthetic_names` (the one table of names the file does not hold).
fn add_plt_candidates<'d>(
    plt: impl IntoIterator<Item = (u64, u64, &'d [u8])>,
    synthetic_names: &mut Vec<u8>,
    code: &mut Vec<Candidate>,
) {
    for (addr, size, target) in plt {
        let Ok(offset) = u32::try_from(synthetic_names.len()) else {
            break;
        };
        synthetic_names.extend_from_slice(target);
        synthetic_names.extend_from_slice(b"@plt\0");
        let Some(name) = measure_name(NameTable::Synthetic, synthetic_names, offset) else {
            continue;
        };
        code.push(Candidate {
            addr,
            size,
            // PLT entries have no symbol of their own to compete with; rank them last.
            rank: u32::MAX,
            label: false,
            name,
            section_end: addr.saturating_add(size),
            versym: 0,
        });
    }
}

/// The index of a file without section headers: its dynamic symbols, found through
/// `PT_DYNAMIC` (see [`crate::elf::dynamic`]). Code and data symbols as `collect_symbols`
/// takes them, bounded by their `PT_LOAD` segment instead of a section; no labels (without
/// sections there is no telling a label from a marker), no versions, no PLT names.
fn dynamic_symbol_tables<Elf: FileHeader<Endian = Endianness>>(
    path: &Path,
    data: &[u8],
    raw: &Elf,
    endian: Endianness,
) -> Result<SymbolTables> {
    let malformed = |what: String| Error::MalformedElf {
        path: path.to_path_buf(),
        what,
    };
    let program_headers = raw
        .program_headers(endian, data)
        .map_err(|e| malformed(format!("program headers: {e}")))?;
    let mut tables = SymbolTables::default();
    let Some(dynamic) = dynamic_tables::<Elf>(path, endian, data, program_headers)? else {
        return Ok(tables);
    };
    let symbols: &[Elf::Sym] = data
        .read_slice_at(dynamic.symbols.start as u64, dynamic.count)
        .map_err(|()| malformed("dynamic symbol table: outside the file".to_string()))?;
    let strings = data.get(dynamic.strings.clone()).unwrap_or_default();
    let (mut code, mut objects) = (Vec::new(), Vec::new());
    for sym in symbols.iter().skip(1) {
        let kind = match sym.st_type() {
            elf::STT_FUNC | elf::STT_GNU_IFUNC => SymbolKind::Function,
            elf::STT_OBJECT => SymbolKind::Data,
            _ => continue,
        };
        // UNDEF, ABS and COMMON symbols name no address of this file.
        if sym.st_shndx(endian).is_special() {
            continue;
        }
        let name_offset = sym.st_name(endian);
        if matches!(strings.get(name_offset as usize), None | Some(0)) {
            continue;
        }
        let Some(name) = measure_name(NameTable::Dynsym, strings, name_offset) else {
            continue;
        };
        let addr: u64 = sym.st_value(endian).into();
        let Some((segment_end, executable)) = load_segment_of::<Elf>(endian, program_headers, addr)
        else {
            continue;
        };
        if kind == SymbolKind::Function && !executable {
            continue;
        }
        let size: u64 = sym.st_size(endian).into();
        let candidate = Candidate {
            addr,
            size,
            rank: alias_rank::<Elf>(sym, size, false),
            label: false,
            name,
            section_end: segment_end,
            versym: 0,
        };
        match kind {
            SymbolKind::Function => code.push(candidate),
            SymbolKind::Data => objects.push(candidate),
        }
    }
    tables.dynsym_strings = dynamic.strings;
    let (code_index, _) = merge_aliases(code);
    let (data_index, _) = merge_aliases(objects);
    tables.code = code_index;
    tables.data = data_index;
    Ok(tables)
}

/// The file range of the string table at `index`, refused when it lies outside the file or
/// is too large for the 32-bit name offsets of the index.
fn string_table_range<'data, Elf: FileHeader<Endian = Endianness>>(
    path: &Path,
    sections: &SectionTable<'data, Elf, &'data [u8]>,
    endian: Endianness,
    data: &'data [u8],
    index: SectionIndex,
) -> Result<Range<usize>> {
    let malformed = |what: String| Error::MalformedElf {
        path: path.to_path_buf(),
        what,
    };
    let header = sections
        .section(index)
        .map_err(|e| malformed(format!("string table section {}: {e}", index.0)))?;
    let bytes = header
        .data(endian, data)
        .map_err(|e| malformed(format!("string table section {}: {e}", index.0)))?;
    if u32::try_from(bytes.len()).is_err() {
        return Err(Error::Unsupported {
            path: path.to_path_buf(),
            what: format!(
                "string table section {} is {} bytes; at most 4 GiB are supported",
                index.0,
                bytes.len(),
            ),
        });
    }
    Ok(range_of(data, bytes))
}

struct Collector<'c, 'data, Elf: FileHeader<Endian = Endianness>> {
    data: &'data [u8],
    endian: Endianness,
    sections: &'c SectionTable<'data, Elf, &'data [u8]>,
    symbols: &'c SymbolTable<'data, Elf, &'data [u8]>,
    table: NameTable,
    strings: &'c Range<usize>,
    skipped: &'c mut Skipped,
    /// An `ET_REL` file's section layout (symbols are offsets into their section there);
    /// `None` for other files, whose symbols hold addresses.
    layout: Option<&'c [RelocatableSection]>,
}

fn collect_symbols<Elf: FileHeader<Endian = Endianness>>(
    c: &mut Collector<'_, '_, Elf>,
    versym_of: impl Fn(SymbolIndex) -> Option<u16>,
    code: &mut Vec<Candidate>,
    objects: &mut Vec<Candidate>,
) {
    let endian = c.endian;
    let strings = c.data.get(c.strings.clone()).unwrap_or_default();
    for (i, sym) in c.symbols.symbols().iter().enumerate().skip(1) {
        let label = sym.st_type() == elf::STT_NOTYPE;
        let mut kind = match sym.st_type() {
            elf::STT_FUNC | elf::STT_GNU_IFUNC => SymbolKind::Function,
            elf::STT_OBJECT => SymbolKind::Data,
            // Assembler labels (`_start`); which ones answer is decided below, once the
            // section is known (see `crate::elf::symbols`, "Labels").
            elf::STT_NOTYPE => SymbolKind::Function,
            _ => continue,
        };
        let section = match c.symbols.symbol_section(endian, sym, SymbolIndex(i)) {
            // UNDEF, ABS and COMMON symbols have no section and name no address of this file.
            Ok(None) => continue,
            Ok(Some(index)) => index,
            Err(_) => {
                c.skipped.bad_section += 1;
                continue;
            }
        };
        let section_index = section;
        let Ok(section) = c.sections.section(section) else {
            c.skipped.bad_section += 1;
            continue;
        };
        // A label of a data section names data (see `crate::elf::symbols`, "Labels"); the
        // markers among them (`__bss_start`, `_edata`) are left out below by name and place.
        if label && section.sh_flags(endian).0 & elf::SHF_EXECINSTR.0 == 0 {
            kind = SymbolKind::Data;
        }
        let name_offset = sym.st_name(endian);
        match strings.get(name_offset as usize) {
            // Unnamed symbols name nothing; `$x`/`$d` are ARM mapping symbols, not functions.
            Some(0) | Some(b'$') => continue,
            Some(_) => {}
            None => {
                c.skipped.bad_name += 1;
                continue;
            }
        }
        // Names are measured here, in table order, which is (nearly) the string table's
        // order: a streaming read, where measuring in address order would miss the cache on
        // every name of a large file.
        let Some(name) = measure_name(c.table, strings, name_offset) else {
            c.skipped.bad_name += 1;
            continue;
        };
        let value: u64 = sym.st_value(endian).into();
        if label {
            let full = strings
                .get(name_offset as usize..)
                .and_then(|tail| tail.get(..name.len))
                .unwrap_or_default();
            // The section's own start for a relocatable file's offsets, else its address.
            let section_start: u64 = match c.layout {
                Some(_) => 0,
                None => section.sh_addr(endian).into(),
            };
            let section_size: u64 = section.sh_size(endian).into();
            if !is_code_label(full, value.wrapping_sub(section_start), section_size) {
                continue;
            }
        }
        let (addr, section_start) = match c.layout {
            // A section the loader does not map (`.gnu.warning.sigstack` in libc's debug file,
            // debug info, notes) holds nothing at an address: its symbols would name
            // addresses of other sections (libc's `0x1` as `__evoke_link_warning_sigstack`,
            // where llvm-symbolizer and binutils say `??`).
            None if section.sh_flags(endian).0 & elf::SHF_ALLOC.0 == 0 => continue,
            None => (value, section.sh_addr(endian).into()),
            Some(layout) => match section_addr(layout, section_index.0) {
                Some(base) => (base.wrapping_add(value), base),
                // A section that is not loaded (debug info, notes) holds no code or data.
                None => continue,
            },
        };
        let size: u64 = sym.st_size(endian).into();
        let section_size: u64 = section.sh_size(endian).into();
        let rank = alias_rank::<Elf>(sym, size, label);
        let versym = versym_of(SymbolIndex(i)).unwrap_or(0);
        let versym = if versym & elf::VERSYM_VERSION > 1 {
            versym
        } else {
            0
        };
        let candidate = Candidate {
            addr,
            size,
            rank,
            label,
            name,
            section_end: section_start.saturating_add(section_size),
            versym,
        };
        match kind {
            SymbolKind::Function => code.push(candidate),
            SymbolKind::Data => objects.push(candidate),
        }
    }
}

/// Whether an `STT_NOTYPE` symbol named `name`, `offset` bytes into its executable section
/// of `section_size` bytes, is a code label that answers lookups (the rule is in
/// [`crate::elf::symbols`]'s docs, "Labels"): strictly inside the section (a label at its
/// end marks where the code stops: `_etext`, `__stop_SEC`), not an assembler-local `.L`
/// label, and not a name linkers and linker scripts give to boundaries.
fn is_code_label(name: &[u8], offset: u64, section_size: u64) -> bool {
    if offset >= section_size || name.starts_with(b".L") {
        return false;
    }
    const MARKERS: &[&[u8]] = &[
        b"_etext",
        b"etext",
        b"__etext",
        b"_edata",
        b"edata",
        b"_end",
        b"end",
        b"_text",
        b"_stext",
        b"__executable_start",
        b"__ehdr_start",
        b"_GLOBAL_OFFSET_TABLE_",
        b"_DYNAMIC",
        b"_PROCEDURE_LINKAGE_TABLE_",
        b"__GNU_EH_FRAME_HDR",
        b"__dso_handle",
    ];
    let boundary = name.starts_with(b"__start_")
        || name.starts_with(b"__stop_")
        || (name.starts_with(b"__") && (name.ends_with(b"_start") || name.ends_with(b"_end")));
    !boundary && !MARKERS.contains(&name)
}

/// The alias rule's bits of a symbol (see [`crate::elf::symbols`]); lower is better:
/// sized, not a label, binding (`GLOBAL`/`GNU_UNIQUE`, `WEAK`, `LOCAL`), not an IFUNC, default
/// visibility. The table (bit 0, set by [`alias_key`]) and the index come last in the rule;
/// the candidate's position, which follows (table, index), breaks the remaining ties when
/// the candidates are sorted.
fn alias_rank<Elf: FileHeader<Endian = Endianness>>(sym: &Elf::Sym, size: u64, label: bool) -> u32 {
    let binding = match sym.st_bind() {
        elf::STB_GLOBAL | elf::STB_GNU_UNIQUE => 0u32,
        elf::STB_WEAK => 1,
        _ => 2,
    };
    let is_ifunc = u32::from(sym.st_type() == elf::STT_GNU_IFUNC);
    let hidden = u32::from(sym.st_visibility() != elf::STV_DEFAULT);
    (if size == 0 { RANK_SIZELESS } else { 0 })
        | (u32::from(label) << 7)
        | (binding << 4)
        | (is_ifunc << 2)
        | (hidden << 1)
}

/// Measures the name at `offset` of `strings`: its length up to a version `@` (`.symtab`
/// only) and whether it is UTF-8. `None` when it runs off the end of the table.
///
/// ASCII names (nearly all) are measured in one pass, eight bytes at a time, stopping at
/// the NUL, an `@` or a non-ASCII byte; the rest take the general path.
fn measure_name(table: NameTable, strings: &[u8], offset: u32) -> Option<NameInfo> {
    let tail = strings.get(offset as usize..)?;
    let split_at_version = table == NameTable::Symtab;
    let stop = find_name_stop(tail, split_at_version);
    match tail.get(stop) {
        Some(0) => Some(NameInfo {
            table,
            offset,
            len: stop,
            utf8: true,
            version: VersionSuffix::None,
        }),
        Some(b'@') if stop > 0 && is_ascii_before_nul(&tail[stop + 1..]) => Some(NameInfo {
            table,
            offset,
            len: stop,
            utf8: true,
            version: if tail.get(stop + 1) == Some(&b'@') {
                VersionSuffix::Default
            } else {
                VersionSuffix::Hidden
            },
        }),
        None => None,
        Some(_) => Some(NameInfo::measure(table, offset, c_str_in(tail, 0)?)),
    }
}

/// The position of the first byte of `name` that is NUL, non-ASCII, or (with `at`) `@`;
/// `name.len()` when there is none.
fn find_name_stop(name: &[u8], at: bool) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let at_pattern = if at { ONES * u64::from(b'@') } else { 0 };
    let mut chunks = name.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let zero = w.wrapping_sub(ONES) & !w;
        let x = w ^ at_pattern;
        let at_hit = if at { x.wrapping_sub(ONES) & !x } else { 0 };
        if (zero | at_hit | w) & HIGHS != 0 {
            break;
        }
        offset += 8;
    }
    name[offset..]
        .iter()
        .position(|&b| b == 0 || b >= 0x80 || (at && b == b'@'))
        .map_or(name.len(), |i| offset + i)
}

/// Whether the bytes up to the first NUL are all ASCII (and a NUL exists).
fn is_ascii_before_nul(bytes: &[u8]) -> bool {
    let end = find_name_stop(bytes, false);
    bytes.get(end) == Some(&0)
}

/// Bit of a candidate's rank that says it has no size (see [`alias_rank`]).
const RANK_SIZELESS: u32 = 1 << 8;

/// The sort key of the candidate at `position`: its rank (with the table, `.symtab` first,
/// as the lowest bit), then its position, which follows the table order. Among symbols
/// without a size the later one wins (the lower bits hold the position reversed): at
/// elfutils' testfile64's address 4 (`g0global1`, then `g0global2`, both global and
/// sizeless), eu-addr2line and llvm-symbolizer both name `g0global2`.
fn alias_key(c: &Candidate, position: usize) -> u64 {
    let rank = c.rank | u32::from(c.name.table == NameTable::Dynsym);
    // Positions fit in 32 bits (see `merge_aliases`).
    let position = position as u32;
    let tie = if rank & RANK_SIZELESS != 0 {
        u32::MAX - position
    } else {
        position
    };
    (u64::from(rank) << 32) | u64::from(tie)
}

/// The position [`alias_key`] was made from.
fn position_of(key: u64) -> usize {
    let tie = key as u32;
    if (key >> 32) as u32 & RANK_SIZELESS != 0 {
        (u32::MAX - tie) as usize
    } else {
        tie as usize
    }
}

/// Sorts candidates, keeps the best per address, and infers sizes for unsized symbols.
fn merge_aliases(candidates: Vec<Candidate>) -> (AddrIndex, Vec<(u32, u16)>) {
    // Sort small keys, not the candidates: (address, rank << 32 | position). Positions fit
    // in 32 bits, since they count symbols of tables with 32-bit indexes. A radix sort by
    // address, then the lowest (rank, position) of each address's run: what a tuple sort
    // and keeping each address's first would give (the comparison sort was a third of the
    // index's build time for librustc_driver's 153,000 symbols).
    let by_address = sorted_by_key(
        candidates
            .iter()
            .enumerate()
            .map(|(position, c)| (c.addr, alias_key(c, position)))
            .collect(),
    );
    let mut keys: Vec<(u64, u64)> = Vec::with_capacity(by_address.len());
    for (addr, rank) in by_address {
        match keys.last_mut() {
            Some(last) if last.0 == addr => last.1 = last.1.min(rank),
            _ => keys.push((addr, rank)),
        }
    }
    // A label inside a sized symbol (a loop head, a second entry point of hand-written
    // assembly) does not split it: the symbol answers for its whole size.
    let mut covered_to = 0u64;
    keys.retain(|&(addr, rank)| {
        let c = &candidates[position_of(rank)];
        if c.label && addr < covered_to {
            return false;
        }
        if c.size > 0 && !c.label {
            covered_to = covered_to.max(addr.saturating_add(c.size));
        }
        true
    });
    let mut addrs = Vec::with_capacity(keys.len());
    let mut entries = Vec::with_capacity(keys.len());
    let mut versions = Vec::new();
    for (i, &(addr, rank)) in keys.iter().enumerate() {
        let c = &candidates[position_of(rank)];
        let entry = if c.size > 0 {
            Entry::new(c.name, c.size, false)
        } else {
            let next = keys.get(i + 1).map_or(u64::MAX, |n| n.0);
            let end = next.min(c.section_end).max(addr);
            Entry::new(c.name, end - addr, true)
        };
        let entry = match (c.versym, entry.with_dynsym_version(c.versym)) {
            (0, _) => entry,
            (_, Some(versioned)) => versioned,
            (versym, None) => {
                // Indexes fit in u32: the count comes from symbol tables with u32 indexes.
                versions.push((i as u32, versym));
                entry
            }
        };
        addrs.push(addr);
        entries.push(entry);
    }
    (AddrIndex::from_sorted(addrs, entries), versions)
}

/// `(address, size, target name)` of each PLT entry that a jump-slot relocation names.
///
/// Entries are matched to relocations by position, as perf does: `.plt.sec` (present with
/// IBT) has one 16-byte entry per `.rela.plt` relocation; otherwise `.plt` has a header
/// (PLT0) and then one entry per relocation. Other layouts (`.plt.got`, machines other than
/// x86_64, i386 and aarch64) get no PLT names.
fn plt_entries<'data, Elf: FileHeader<Endian = Endianness>>(
    sections: &SectionTable<'data, Elf, &'data [u8]>,
    endian: Endianness,
    data: &'data [u8],
    machine: elf::Machine,
    dynsym: &SymbolTable<'data, Elf, &'data [u8]>,
    dynstr: &Range<usize>,
) -> Vec<(u64, u64, &'data [u8])> {
    let (header_size, entry_size) = match machine {
        elf::EM_X86_64 | elf::EM_386 => (16, 16),
        elf::EM_AARCH64 => (32, 16),
        _ => return Vec::new(),
    };
    let (plt, header_size) = match sections.section_by_name(endian, b".plt.sec") {
        Some((_, sec)) => (sec, 0),
        None => match sections.section_by_name(endian, b".plt") {
            Some((_, plt)) => (plt, header_size),
            None => return Vec::new(),
        },
    };
    let plt_start: u64 = plt.sh_addr(endian).into();
    let plt_end = plt_start.saturating_add(plt.sh_size(endian).into());
    let mut targets: Vec<u32> = Vec::new();
    for name in [&b".rela.plt"[..], b".rel.plt"] {
        let Some((_, relocs)) = sections.section_by_name(endian, name) else {
            continue;
        };
        if let Ok(Some((rela, _))) = relocs.rela(endian, data) {
            targets.extend(rela.iter().map(|r| r.r_sym(endian, false)));
        } else if let Ok(Some((rel, _))) = relocs.rel(endian, data) {
            targets.extend(rel.iter().map(|r| r.r_sym(endian)));
        }
    }
    let strings = data.get(dynstr.clone()).unwrap_or_default();
    let mut entries = Vec::new();
    for (i, sym_index) in targets.into_iter().enumerate() {
        let addr = plt_start
            .saturating_add(header_size)
            .saturating_add((i as u64).saturating_mul(entry_size));
        if addr.saturating_add(entry_size) > plt_end {
            break;
        }
        // r_sym 0 (IRELATIVE) names no symbol; that entry stays unnamed.
        let Ok(sym) = dynsym.symbol(SymbolIndex(sym_index as usize)) else {
            continue;
        };
        match c_str_in(strings, sym.st_name(endian) as usize) {
            Some(name) if !name.is_empty() && sym_index != 0 => {
                entries.push((addr, entry_size, name))
            }
            _ => {}
        }
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measuring_names_agrees_with_the_general_path() {
        let table: &[u8] = b"\0main\0memcpy@@GLIBC_2.14\0memcpy@GLIBC_2.2.5\0caf\xc3\xa9\0bad\xff\0@odd\0_ZN4core3fmt5write17h0123456789abcdefE\0x@\xc3\xa9\0unterminated";
        let mut offset = 0;
        while offset < table.len() {
            for t in [NameTable::Symtab, NameTable::Dynsym] {
                let fast = measure_name(t, table, offset as u32);
                let slow =
                    c_str_in(table, offset).map(|name| NameInfo::measure(t, offset as u32, name));
                assert_eq!(
                    fast.map(|n| (n.len, n.utf8, n.version)),
                    slow.map(|n| (n.len, n.utf8, n.version)),
                    "offset {offset} table {t:?}"
                );
            }
            offset += 1;
        }
    }

    /// The label rule's name and place checks (src/elf/symbols.rs, "Labels"); which labels
    /// answer on real files is checked against binutils and llvm-symbolizer in
    /// tests/odd_elf.rs (ld.so's `_start`, `libodd.so`'s labels).
    #[test]
    fn code_labels_exclude_markers() {
        for name in [
            &b"_start"[..],
            b"_dl_start_user",
            b"odd_entry",
            b"__restore_rt",
        ] {
            assert!(
                is_code_label(name, 0, 16),
                "{}",
                String::from_utf8_lossy(name)
            );
        }
        let markers = [
            &b"_etext"[..],
            b"__stop_set",
            b"__start_set",
            b"__entry_text_start",
            b"__init_array_end",
            b".L123",
            b"_GLOBAL_OFFSET_TABLE_",
        ];
        for name in markers {
            assert!(
                !is_code_label(name, 0, 16),
                "{}",
                String::from_utf8_lossy(name)
            );
        }
        // At the section's end (or past it) a label marks where the code stops.
        assert!(!is_code_label(b"_start", 16, 16));
    }
}
