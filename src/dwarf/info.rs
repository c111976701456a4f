//! [`DwarfSections`] (the DWARF sections of one file) and [`DwarfInfo`] (lookups in them).
//!
//! Both own what they read, without copying mapped sections: a section is the file (an
//! `Arc<ElfFile>`) plus a range of it, or a buffer of decompressed bytes (`reader.rs`). So a
//! cache can keep a [`DwarfInfo`] next to the file it came from, with no lifetime faked.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gimli::{Reader as _, RunTimeEndian, SectionId};

use crate::addr::VirtAddr;
use crate::confine::ConfinedRoot;
use crate::demangle::demangle;
use crate::dwarf::files::FileTable;
use crate::dwarf::functions::{FunctionDie, FunctionTable, FunctionsError};
use crate::dwarf::lines::Row;
use crate::dwarf::reader::{Reader, SectionBytes};
use crate::dwarf::units::{SplitUnit, UnitEntry, UnitSource, Units};
use crate::elf::{ElfFile, SectionContents};
use crate::error::{Error, Result};

/// The DWARF sections of one ELF file: ranges of its mapping, or decompressed buffers.
/// Cheap to clone.
#[derive(Clone)]
pub struct DwarfSections {
    path: PathBuf,
    /// The process root the file was opened in, where its split-DWARF files are looked for.
    root: Option<ConfinedRoot>,
    endian: RunTimeEndian,
    /// `(section, bytes)` for every section gimli reads that the file has.
    sections: Vec<(SectionId, SectionBytes)>,
    /// `.debug_info` of a file read in part, read unit by unit (not in `sections` then).
    units_in_part: Option<UnitSource>,
}

impl std::fmt::Debug for DwarfSections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DwarfSections")
            .field("path", &self.path)
            .field(
                "sections",
                &self
                    .sections
                    .iter()
                    .map(|(id, bytes)| (id.name(), bytes.len()))
                    .collect::<Vec<_>>(),
            )
            .field(
                ".debug_info read unit by unit",
                &self
                    .units_in_part
                    .as_ref()
                    .map(|source| source.section.len()),
            )
            .finish()
    }
}

/// The sections frames are made of. Not read: location lists (`.debug_loc`,
/// `.debug_loclists`, variables' locations) and macros, which `addr2line` never reads; in
/// optimized code the location lists are a fifth of the DWARF, so not decompressing them
/// matters.
const SECTIONS: [SectionId; 11] = [
    SectionId::DebugAbbrev,
    SectionId::DebugAddr,
    SectionId::DebugAranges,
    SectionId::DebugInfo,
    SectionId::DebugLine,
    SectionId::DebugLineStr,
    SectionId::DebugRanges,
    SectionId::DebugRngLists,
    SectionId::DebugStr,
    SectionId::DebugStrOffsets,
    SectionId::DebugTypes,
];

/// Sections only split DWARF reads: a package's indexes (`.debug_cu_index`,
/// `.debug_tu_index`), and the location lists, which frames do not need but a package's
/// index slices with every unit (missing, its offsets would be out of range).
const DWO_ONLY: [SectionId; 4] = [
    SectionId::DebugCuIndex,
    SectionId::DebugTuIndex,
    SectionId::DebugLoc,
    SectionId::DebugLocLists,
];

impl DwarfSections {
    /// Reads the DWARF sections of `elf` (the binary itself or its separate debug file).
    /// `Ok(None)` when the file has no DWARF (neither `.debug_info` nor `.debug_line`);
    /// `Err`, naming the file, when a section cannot be read or decompressed (a truncated
    /// compressed section, a decompression bomb). Uncompressed sections are not copied:
    /// the result keeps `elf` open.
    ///
    /// A file read in part (see [`ElfFile::from_file`]) keeps its `.debug_info` in the file,
    /// uncompressed: its units are then read one by one, each when a lookup first needs it.
    pub fn load(elf: &Arc<ElfFile>) -> Result<Option<DwarfSections>> {
        Self::load_named(elf, SectionId::name, &SECTIONS, 1)
    }

    /// Like [`DwarfSections::load`], on up to `threads` threads (the caller's among them):
    /// with two or more, a helper thread decompresses `.debug_info`, usually over half the
    /// compressed bytes (libc's debug file: 2.3 of 3.1 MB), while the calling thread
    /// decompresses the rest. The result is the same.
    pub fn load_with_threads(elf: &Arc<ElfFile>, threads: usize) -> Result<Option<DwarfSections>> {
        Self::load_named(elf, SectionId::name, &SECTIONS, threads)
    }

    /// The `.dwo` sections (`.debug_info.dwo`, ...) of a split-DWARF object or package.
    fn load_dwo(elf: &Arc<ElfFile>) -> Result<Option<DwarfSections>> {
        let ids: Vec<SectionId> = SECTIONS.into_iter().chain(DWO_ONLY).collect();
        Self::load_named(elf, |id| id.dwo_name().unwrap_or_default(), &ids, 1)
    }

    fn load_named(
        elf: &Arc<ElfFile>,
        name: impl Fn(SectionId) -> &'static str + Sync,
        ids: &[SectionId],
        threads: usize,
    ) -> Result<Option<DwarfSections>> {
        let read = |id: SectionId| -> Result<Option<(SectionId, SectionBytes)>> {
            let name = name(id);
            if name.is_empty() {
                return Ok(None);
            }
            let bytes = match elf.section_contents(name)? {
                None => return Ok(None),
                Some(SectionContents::InFile(range)) => SectionBytes::InFile {
                    file: Arc::clone(elf),
                    range,
                },
                Some(SectionContents::Owned(bytes)) => SectionBytes::Owned(Arc::new(bytes)),
            };
            Ok(Some((id, bytes)))
        };
        let read_all = |ids: &mut dyn Iterator<Item = SectionId>| -> Result<Vec<_>> {
            ids.filter_map(|id| read(id).transpose()).collect()
        };
        // Only the file's own `.debug_info` (not a `.dwo`'s): read unit by unit when it was
        // left out of a file read in part, and is not compressed.
        let units_in_part = ids
            .contains(&SectionId::DebugAbbrev)
            .then(|| elf.section_left_out(SectionId::DebugInfo.name()))
            .flatten()
            .filter(|_| name(SectionId::DebugInfo) == SectionId::DebugInfo.name())
            .map(|section| UnitSource {
                file: Arc::clone(elf),
                section,
                endian: endian_of(elf),
            });
        let ids: Vec<SectionId> = ids
            .iter()
            .copied()
            .filter(|&id| !(id == SectionId::DebugInfo && units_in_part.is_some()))
            .collect();
        let ids = &ids[..];
        let sections = if threads > 1 && ids.contains(&SectionId::DebugInfo) {
            std::thread::scope(|scope| {
                let info = scope.spawn(|| read(SectionId::DebugInfo));
                let rest =
                    read_all(&mut ids.iter().copied().filter(|&id| id != SectionId::DebugInfo));
                let info = info.join().unwrap_or_else(|_| {
                    // A panic in the helper is a bug; the section is read again here, where
                    // the panic would show again.
                    log::error!("the thread decompressing .debug_info panicked");
                    read(SectionId::DebugInfo)
                });
                let mut sections = rest?;
                sections.extend(info?);
                // In `ids`' order, as one thread reads them (lookups go by id; the order
                // shows in `Debug`).
                sections.sort_by_key(|(id, _)| ids.iter().position(|i| i == id));
                Ok::<_, crate::Error>(sections)
            })?
        } else {
            read_all(&mut ids.iter().copied())?
        };
        let has = |wanted: SectionId| sections.iter().any(|(id, _)| *id == wanted);
        if !has(SectionId::DebugInfo) && !has(SectionId::DebugLine) && units_in_part.is_none() {
            return Ok(None);
        }
        Ok(Some(DwarfSections {
            path: elf.path().to_path_buf(),
            root: elf.root().cloned(),
            endian: endian_of(elf),
            sections,
            units_in_part,
        }))
    }

    /// The same sections, each behind a reference count of its own (for another thread;
    /// see `SectionBytes::Shadow`).
    fn shadow(&self) -> DwarfSections {
        let sections = self
            .sections
            .iter()
            .map(|(id, bytes)| (*id, SectionBytes::Shadow(Arc::new(bytes.clone()))))
            .collect();
        DwarfSections {
            path: self.path.clone(),
            root: self.root.clone(),
            endian: self.endian,
            sections,
            units_in_part: self.units_in_part.clone(),
        }
    }

    /// Bytes held in memory by decompressed sections (borrowed ones cost nothing).
    pub fn heap_bytes(&self) -> usize {
        self.sections
            .iter()
            .map(|(_, bytes)| match bytes {
                SectionBytes::InFile { .. } => 0,
                SectionBytes::Owned(owned) => owned.len(),
                // The bytes are counted where they are owned.
                SectionBytes::Shadow(_) => 0,
            })
            .sum()
    }

    /// The file the sections were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn section(&self, wanted: SectionId) -> Reader {
        let bytes = self
            .sections
            .iter()
            .find(|(id, _)| *id == wanted)
            .map_or_else(SectionBytes::empty, |(_, bytes)| bytes.clone());
        Reader::new(bytes, self.endian)
    }

    pub(crate) fn dwarf(&self) -> Result<gimli::Dwarf<Reader>> {
        gimli::Dwarf::load(|id| Ok::<_, gimli::Error>(self.section(id)))
            .map_err(|e| malformed_dwarf(&self.path, ".debug_*", "sections", e))
    }
}

/// The DWARF of one ELF file, ready for lookups.
///
/// Lookups parse lazily: the first one in a compilation unit runs that unit's line program
/// once and walks its DIE tree once (`lines.rs`, `functions.rs`), and keeps compact tables
/// of both, so later addresses in the unit, in this batch or a later one, are binary
/// searches. The value is `Send` but not `Sync` (its caches fill through shared
/// references); share it between threads behind a `Mutex`, or load one per thread.
pub struct DwarfInfo {
    /// The sections `dwarf` reads (their file's path, and its root, to which `.dwo` files
    /// are confined), kept for threads that read ahead (`prepare`) with their own.
    sections: DwarfSections,
    /// The sections (and the supplementary file's, if any).
    dwarf: Arc<gimli::Dwarf<Reader>>,
    units: Units,
    /// The supplementary file's units, read when a name first refers into them.
    sup_units: OnceCell<Option<Units>>,
    /// `<file>.dwp`, the split-DWARF package next to the file, if there is one.
    package: Option<gimli::DwarfPackage<Reader>>,
    /// Function names met so far (as read, and demangled), keyed by where their bytes lie in
    /// the sections (address, length), so each is converted and demangled once.
    names: Interned<(Arc<str>, Arc<str>)>,
    /// The chain of the address being looked up (a buffer reused across lookups).
    chain: RefCell<Vec<u32>>,
}

/// Which file a unit was read from, for following references out of it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum UnitFile {
    Main,
    Supplementary,
    Split,
}

/// A table of things read from the sections, keyed by where their bytes lie (address,
/// length): see [`PointerHash`].
type Interned<V> = RefCell<HashMap<(usize, usize), V, PointerHash>>;

/// Hashes the `(address, length)` keys of [`DwarfInfo`]'s name tables: addresses are unique
/// and not chosen by an attacker (they are where the sections lie in memory), so a multiply
/// suffices where SipHash cost a tenth of a lookup.
#[derive(Default, Clone, Copy)]
struct PointerHash;

impl std::hash::BuildHasher for PointerHash {
    type Hasher = PointerHasher;

    fn build_hasher(&self) -> PointerHasher {
        PointerHasher(0)
    }
}

struct PointerHasher(u64);

impl std::hash::Hasher for PointerHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl std::fmt::Debug for DwarfInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DwarfInfo")
            .field("path", &self.sections.path)
            .finish_non_exhaustive()
    }
}

/// One frame of the inline chain at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineFrame {
    /// The function, if DWARF names it (a line-table entry outside every function DIE has
    /// a location but no function). Shared: every frame of one function holds the same name.
    pub function: Option<Arc<FunctionName>>,
    /// The source file as DWARF gives it, joined with the compilation directory when it is
    /// relative (as llvm-symbolizer prints it).
    pub file: Option<Arc<str>>,
    /// The line, if known (line 0, "no line", reads as `None`).
    pub line: Option<u32>,
    /// The column, if known. On the innermost frame also for a line-table row of line 0
    /// (code the compiler made), whose column llvm-symbolizer prints (`demo.c:0:5`).
    pub column: Option<u32>,
    /// The innermost frame's line-table discriminator (which of several blocks on one
    /// line the code is), as llvm-symbolizer prints it (` (discriminator 3)`); `None` when
    /// the row has none (0), and on outer frames (llvm-symbolizer takes theirs from
    /// `DW_AT_GNU_discriminator` of the inlined call, which is not read here).
    pub discriminator: Option<u32>,
    /// True when this frame's function was inlined into the next frame's function; false
    /// for the last frame of the chain (the function whose machine code this is).
    pub inlined: bool,
}

/// A function as DWARF describes it: its name (`DW_AT_linkage_name` if the DIE has one, else
/// `DW_AT_name`), its short name and where it is declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionName {
    /// The name as DWARF states it (a mangled linkage name for C++ and Rust).
    pub raw: String,
    /// The name demangled by [`crate::demangle::demangle`] (equal to `raw` when it is not
    /// mangled).
    pub demangled: String,
    /// `DW_AT_name`: the name without scopes or parameters (`push_back`), as
    /// llvm-symbolizer's `--functions=short` prints it; `None` if the DIE (and those it
    /// refers to in its unit: `DW_AT_abstract_origin`, `DW_AT_specification`) has none.
    pub short: Option<String>,
    /// `DW_AT_decl_file`: the file the function is declared in, rendered as
    /// [`InlineFrame::file`] is.
    pub decl_file: Option<Arc<str>>,
    /// `DW_AT_decl_line`: the line it is declared on.
    pub decl_line: Option<u32>,
    /// `DW_AT_low_pc` of this copy of the function: where an inlined copy's code starts,
    /// or the function's own start; `None` for code split by `DW_AT_ranges` (hot and cold
    /// parts), as llvm-symbolizer leaves it.
    pub start: Option<VirtAddr>,
}

/// What [`DwarfInfo::declaration`] reads from a function's DIEs.
#[derive(Default)]
struct Declaration {
    short: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    start: Option<VirtAddr>,
}

impl DwarfInfo {
    /// Prepares lookups in `sections`. `Err`, naming the file, when the unit headers are
    /// malformed (a unit past the end of `.debug_info`, an unknown version).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use stacksym::dwarf::{DwarfInfo, DwarfSections};
    /// use stacksym::elf::ElfFile;
    /// use stacksym::VirtAddr;
    /// # fn main() -> stacksym::Result<()> {
    /// let elf = Arc::new(ElfFile::open("testdata/bin/c-pie-g")?);
    /// let sections = DwarfSections::load(&elf)?.expect("built with -g");
    /// let dwarf = DwarfInfo::new(&sections)?;
    /// // 0x12c4 is inside scale(), inlined into checksum() (testdata/README.md).
    /// let frames = dwarf.frames(VirtAddr(0x12c4))?.expect("covered by DWARF");
    /// let names: Vec<_> = frames
    ///     .iter()
    ///     .map(|f| f.function.as_ref().map(|n| n.demangled.as_str()))
    ///     .collect();
    /// assert_eq!(names, [Some("scale"), Some("checksum")]);
    /// assert!(frames[0].inlined && !frames[1].inlined);
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(sections: &DwarfSections) -> Result<DwarfInfo> {
        Self::build(sections, None)
    }

    /// Like [`DwarfInfo::new`], for a file whose DWARF refers into a dwz supplementary file
    /// (`.gnu_debugaltlink`, found by [`crate::debuginfo::DebugFinder::find_supplementary`]):
    /// names and types moved there are read from `supplementary`.
    pub fn with_supplementary(
        sections: &DwarfSections,
        supplementary: &DwarfSections,
    ) -> Result<DwarfInfo> {
        Self::build(sections, Some(supplementary))
    }

    fn build(sections: &DwarfSections, sup: Option<&DwarfSections>) -> Result<DwarfInfo> {
        let mut dwarf = sections.dwarf()?;
        if let Some(sup) = sup {
            dwarf.set_sup(sup.dwarf()?);
        }
        let units = Units::read(&dwarf, sections.units_in_part.clone(), |e| {
            malformed_dwarf(&sections.path, ".debug_info", "unit headers", e)
        })?;
        Ok(DwarfInfo {
            sections: sections.clone(),
            dwarf: Arc::new(dwarf),
            units,
            sup_units: OnceCell::new(),
            package: load_package(&sections.path, sections.root.as_ref(), sections.endian),
            names: RefCell::default(),
            chain: RefCell::default(),
        })
    }

    /// The frames at `addr` (a virtual address as the file states it), innermost first:
    /// the inlined functions, then the function that contains them. `Ok(None)` when the
    /// DWARF does not cover `addr`; `Err`, naming the file, when the DWARF met on the way is
    /// malformed.
    pub fn frames(&self, addr: VirtAddr) -> Result<Option<Vec<InlineFrame>>> {
        let mut frames = Vec::new();
        Ok(self.append_frames(addr, &mut frames)?.then_some(frames))
    }

    /// Reads ahead, on `threads` threads (the caller's among them), what the first lookup
    /// of each of `addrs` would read: the units holding them, their line tables and their
    /// functions, except where split DWARF puts those in another file. Lookups then answer
    /// exactly as without it (errors included, which stay with the unit and come back from
    /// the lookup); only when the work is done changes. With `threads` ≤ 1 it does nothing;
    /// when every unit is read already it costs a pass over `addrs`.
    pub fn prepare(&self, addrs: impl IntoIterator<Item = VirtAddr>, threads: usize) {
        if threads <= 1 {
            return;
        }
        // Each helper thread reads through sections of its own (see `SectionBytes::Shadow`),
        // the supplementary file's shared (units are parsed without reading it).
        let (sections, sup) = (&self.sections, &self.dwarf.sup);
        let helper_dwarf = || {
            let mut dwarf = sections.shadow().dwarf().ok()?;
            dwarf.sup = sup.clone();
            Some(dwarf)
        };
        let addrs = addrs.into_iter().map(|addr| addr.0);
        self.units
            .prepare(&self.dwarf, &helper_dwarf, addrs, threads);
    }

    /// Like [`DwarfInfo::frames`], appending the frames to `out` (a batch's frames, back to
    /// back, without a vector per address). `Ok(false)` (nothing appended) when the DWARF
    /// does not cover `addr`; on `Err`, `out` is left as it was.
    pub fn append_frames(&self, addr: VirtAddr, out: &mut Vec<InlineFrame>) -> Result<bool> {
        let start = out.len();
        let appended = self.append_frames_inner(addr, out);
        if appended.is_err() {
            out.truncate(start);
        }
        appended
    }

    fn append_frames_inner(&self, addr: VirtAddr, out: &mut Vec<InlineFrame>) -> Result<bool> {
        if addr.0 == u64::MAX {
            // No half-open DWARF range `[low, high)` can hold the last address.
            return Ok(false);
        }
        // Every unit whose ranges hold `addr` is asked in turn, until one has a function or
        // a line there (ranges overlap for weak symbols and for units that state one range
        // around discontiguous code).
        for slot in self.units.find(addr.0) {
            let Some(entry) = self.units.parsed(slot, &self.dwarf)? else {
                continue;
            };
            let split = self.split_unit(entry);
            let functions = self.functions(entry, split, addr)?;
            let lines = entry.lines().map_err(|e| {
                malformed_dwarf(
                    &self.sections.path,
                    ".debug_line",
                    format!("lines at {addr:#x}"),
                    e,
                )
            })?;
            let row = lines.and_then(|lines| lines.row_at(addr.0)).copied();
            let mut chain = self.chain.borrow_mut();
            if !functions.chain_at(addr.0, &mut chain) {
                let Some(row) = row else { continue };
                // A line outside every function DIE: a location without a function.
                out.push(InlineFrame {
                    inlined: false,
                    ..self.innermost(entry, &row, None)
                });
                return Ok(true);
            }
            // `chain`: the subprogram, then its inlined calls, outermost first. Frames go
            // innermost first; each outer frame's location is the call site of the inlined
            // call inside it.
            let unit = self.unit_ref(entry, split);
            let mut call_site: Option<&FunctionDie> = None;
            for &index in chain.iter().rev() {
                let Some(function) = functions.get(index) else {
                    continue;
                };
                let name = self.function_name(entry, unit, index, function.die())?;
                let frame = match call_site {
                    None => match &row {
                        Some(row) => self.innermost(entry, row, name),
                        None => InlineFrame {
                            function: name,
                            file: None,
                            line: None,
                            column: None,
                            discriminator: None,
                            inlined: true,
                        },
                    },
                    Some(inner) => InlineFrame {
                        function: name,
                        file: inner
                            .call_file()
                            .and_then(|index| self.file_name(entry, index)),
                        line: inner.call_line(),
                        column: inner.call_column(),
                        discriminator: inner.call_discriminator(),
                        inlined: true,
                    },
                };
                out.push(frame);
                call_site = Some(function);
            }
            if let Some(last) = out.last_mut() {
                last.inlined = false;
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// The innermost frame at a line-table row: its file, line and column, its
    /// discriminator, and for a row of line 0 its column (as llvm-symbolizer prints them).
    fn innermost(
        &self,
        entry: &UnitEntry,
        row: &Row,
        function: Option<Arc<FunctionName>>,
    ) -> InlineFrame {
        let file = self.file_name(entry, u64::from(row.file));
        let line = (row.line != 0).then_some(row.line);
        let has_location = file.is_some() || line.is_some();
        InlineFrame {
            function,
            file,
            line,
            column: if line.is_some() {
                Some(row.column)
            } else {
                (has_location && row.column != 0).then_some(row.column)
            },
            discriminator: (has_location && row.discriminator != 0).then_some(row.discriminator),
            // The caller clears it on the chain's last frame.
            inlined: true,
        }
    }

    /// `entry`'s functions (its split unit's, when it has one), read on first use; asked for
    /// `addr` (named in the error).
    fn functions<'a>(
        &self,
        entry: &'a UnitEntry,
        split: Option<&'a SplitUnit>,
        addr: VirtAddr,
    ) -> Result<&'a FunctionTable> {
        let table = entry
            .functions
            .get_or_init(|| entry.read_functions(&self.unit_ref(entry, split).0));
        table.as_ref().map_err(|e| {
            // Units here come from `.debug_info` (type units are never asked).
            let offset = entry.unit.header.debug_info_offset().map(|o| o.0 as u64);
            let path = self.sections.path.clone();
            match *e {
                FunctionsError::Dwarf(source) => Error::MalformedDwarf {
                    path,
                    section: ".debug_info",
                    context: format!("the functions of the unit holding {addr:#x}"),
                    offset,
                    source,
                },
                FunctionsError::TooDeep | FunctionsError::TooMany => Error::Unsupported {
                    path,
                    what: format!(
                        "DWARF unit at {:#x} (holding {addr:#x}): {e}",
                        offset.unwrap_or(0)
                    ),
                },
            }
        })
    }

    /// The unit DIEs of `entry`'s functions are read from: its split unit, or itself.
    fn unit_ref<'a>(
        &'a self,
        entry: &'a UnitEntry,
        split: Option<&'a SplitUnit>,
    ) -> (gimli::UnitRef<'a, Reader>, UnitFile) {
        match split {
            Some(split) => (
                gimli::UnitRef::new(&split.dwarf, &split.unit),
                UnitFile::Split,
            ),
            None => (
                gimli::UnitRef::new(&self.dwarf, &entry.unit),
                UnitFile::Main,
            ),
        }
    }

    /// The split unit of a skeleton `entry`, loaded on first use.
    fn split_unit<'a>(&self, entry: &'a UnitEntry) -> Option<&'a SplitUnit> {
        entry
            .split
            .get_or_init(|| {
                let dwo_id = entry.unit.dwo_id?;
                let unit = gimli::UnitRef::new(&self.dwarf, &entry.unit);
                let name = entry
                    .unit
                    .dwo_name()
                    .ok()
                    .flatten()
                    .and_then(|name| unit.attr_string(name).ok());
                let dwarf = self.load_split_dwarf(dwo_id, name.as_ref())?;
                let header = dwarf.units().next().ok()??;
                let mut split = dwarf.unit(header).ok()?;
                split.copy_relocated_attributes(&entry.unit);
                Some(Box::new(SplitUnit::new(dwarf, split)))
            })
            .as_deref()
    }

    /// The function at `index` of `entry`'s table: its name, read and demangled once per
    /// name string, and its declaration once per DIE. `None` when DWARF names no function
    /// there.
    fn function_name(
        &self,
        entry: &UnitEntry,
        (unit, file): (gimli::UnitRef<'_, Reader>, UnitFile),
        index: u32,
        die: gimli::UnitOffset<usize>,
    ) -> Result<Option<Arc<FunctionName>>> {
        if let Some(Some(known)) = entry.names.borrow().get(index as usize) {
            return Ok(Some(Arc::clone(known)));
        }
        let Some(name) = self.name_of(unit, file, die)? else {
            return Ok(None);
        };
        let bytes: &[u8] = &name;
        let name_key = (bytes.as_ptr() as usize, bytes.len());
        let known_name = self.names.borrow().get(&name_key).cloned();
        let (raw, demangled) = match known_name {
            Some(names) => names,
            None => {
                let raw: Arc<str> = name
                    .to_string_lossy()
                    .map_err(|e| {
                        malformed_dwarf(&self.sections.path, ".debug_info", "function name", e)
                    })?
                    .into();
                let demangled: Arc<str> = match demangle(&raw) {
                    std::borrow::Cow::Borrowed(_) => Arc::clone(&raw),
                    std::borrow::Cow::Owned(demangled) => demangled.into(),
                };
                self.names
                    .borrow_mut()
                    .insert(name_key, (Arc::clone(&raw), Arc::clone(&demangled)));
                (raw, demangled)
            }
        };
        // The file table `DW_AT_decl_file` indexes: the one of the unit the DIE is in.
        let table = match file {
            UnitFile::Main => entry.file_table.as_ref(),
            UnitFile::Split => entry
                .split
                .get()
                .and_then(Option::as_deref)
                .and_then(|split| split.file_table.as_ref()),
            // Not passed here: `unit` is `entry`'s own or its split unit.
            UnitFile::Supplementary => None,
        };
        let declared = self.declaration(&unit, table, die);
        let interned = Arc::new(FunctionName {
            raw: raw.to_string(),
            demangled: demangled.to_string(),
            short: declared.short,
            decl_file: declared.file.map(Arc::from),
            decl_line: declared.line,
            start: declared.start,
        });
        if let Some(slot) = entry.names.borrow_mut().get_mut(index as usize) {
            *slot = Some(Arc::clone(&interned));
        }
        Ok(Some(interned))
    }

    /// The name of the function whose DIE is at `die`: `DW_AT_linkage_name` if it has one,
    /// else `DW_AT_name`, else the name of the DIE its `DW_AT_abstract_origin` or
    /// `DW_AT_specification` refers to (in this unit, another unit of the file, or the
    /// supplementary file), at most [`MAX_NAME_HOPS`] references deep. Which attribute wins
    /// follows the addr2line crate (and so llvm-symbolizer): a linkage name always, a
    /// referred-to name only where no name came before it.
    fn name_of(
        &self,
        unit: gimli::UnitRef<'_, Reader>,
        file: UnitFile,
        die: gimli::UnitOffset<usize>,
    ) -> Result<Option<Reader>> {
        let malformed = |e| {
            let context = format!("function at unit offset {:#x}", die.0);
            malformed_dwarf(&self.sections.path, ".debug_info", context, e)
        };
        let mut entries = unit.entries_raw(Some(die)).map_err(malformed)?;
        let Some(abbrev) = entries.read_abbreviation().map_err(malformed)? else {
            return Ok(None);
        };
        let mut name = None;
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec).map_err(malformed)?;
            match attr.name() {
                gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                    if let Ok(value) = unit.attr_string(attr.value()) {
                        name = Some(value);
                    }
                }
                gimli::DW_AT_name if name.is_none() => name = unit.attr_string(attr.value()).ok(),
                gimli::DW_AT_abstract_origin | gimli::DW_AT_specification if name.is_none() => {
                    name = self.referred_name(unit, file, attr.value(), MAX_NAME_HOPS);
                }
                _ => {}
            }
        }
        Ok(name)
    }

    /// The name of the DIE `reference` points to (see [`DwarfInfo::name_of`]), following at
    /// most `hops` references. A reference that leads nowhere gives no name.
    fn referred_name(
        &self,
        unit: gimli::UnitRef<'_, Reader>,
        file: UnitFile,
        reference: gimli::AttributeValue<Reader>,
        hops: usize,
    ) -> Option<Reader> {
        let mut at = (unit, file, reference);
        for _ in 0..hops {
            let (unit, file, reference) = at;
            let (unit, file, die) = match reference {
                gimli::AttributeValue::UnitRef(die) => (unit, file, die),
                gimli::AttributeValue::DebugInfoRef(offset) => {
                    let units = match file {
                        UnitFile::Main => &self.units,
                        UnitFile::Supplementary => self.sup_units()?,
                        UnitFile::Split => return None,
                    };
                    let (slot, die) = units.at_offset(offset)?;
                    let dwarf = match file {
                        UnitFile::Supplementary => self.dwarf.sup()?,
                        _ => &self.dwarf,
                    };
                    (
                        gimli::UnitRef::new(dwarf, &units.parsed(slot, dwarf).ok()??.unit),
                        file,
                        die,
                    )
                }
                gimli::AttributeValue::DebugInfoRefSup(offset) => {
                    let sup_units = self.sup_units()?;
                    let (slot, die) = sup_units.at_offset(offset)?;
                    let sup = self.dwarf.sup()?;
                    (
                        gimli::UnitRef::new(sup, &sup_units.parsed(slot, sup).ok()??.unit),
                        UnitFile::Supplementary,
                        die,
                    )
                }
                _ => return None,
            };
            let mut entries = unit.entries_raw(Some(die)).ok()?;
            let abbrev = entries.read_abbreviation().ok()??;
            let mut name = None;
            let mut next = None;
            for spec in abbrev.attributes() {
                let attr = entries.read_attribute(*spec).ok()?;
                match attr.name() {
                    gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                        if let Ok(value) = unit.attr_string(attr.value()) {
                            return Some(value);
                        }
                    }
                    gimli::DW_AT_name => {
                        if let Ok(value) = unit.attr_string(attr.value()) {
                            name = Some(value);
                        }
                    }
                    gimli::DW_AT_abstract_origin | gimli::DW_AT_specification => {
                        next = Some(attr.value());
                    }
                    _ => {}
                }
            }
            if name.is_some() {
                return name;
            }
            at = (unit, file, next?);
        }
        None
    }

    /// The supplementary file's units, read on first use; `None` without one.
    fn sup_units(&self) -> Option<&Units> {
        self.sup_units
            .get_or_init(|| {
                let sup = self.dwarf.sup()?;
                Units::read(sup, None, |e| {
                    malformed_dwarf(&self.sections.path, ".debug_info", "supplementary units", e)
                })
                .map_err(|e| {
                    log::debug!("{}: supplementary units: {e}", self.sections.path.display())
                })
                .ok()
            })
            .as_ref()
    }

    /// The file the DWARF was read from.
    pub fn path(&self) -> &Path {
        &self.sections.path
    }

    /// The split-DWARF unit a skeleton unit names: from the `.dwp` package next to the file,
    /// else from the `.dwo` file it names. Only the file's own directory is searched: a
    /// relative `DW_AT_comp_dir` (`.`, as `-fdebug-prefix-map` leaves it) is taken as the
    /// file's directory, and an absolute `.dwo` path elsewhere (the build machine's) is
    /// tried by its file name in that directory. A `.dwo` whose id differs is refused. On
    /// failure the lookup goes on with the skeleton (lines without inlined frames), as
    /// llvm-symbolizer does; `log::debug!` says why.
    fn load_split_dwarf(
        &self,
        dwo_id: gimli::DwoId,
        dwo_name: Option<&Reader>,
    ) -> Option<Arc<gimli::Dwarf<Reader>>> {
        if let Some(package) = &self.package {
            match package.find_cu(dwo_id, &self.dwarf) {
                Ok(Some(unit)) => return Some(Arc::new(unit)),
                Ok(None) => {}
                Err(e) => log::debug!("{}.dwp: {e}", self.sections.path.display()),
            }
        }
        let name = dwo_name?.to_string_lossy().ok()?;
        let dir = self.sections.path.parent().unwrap_or(Path::new("."));
        let file_name = Path::new(name.as_ref()).file_name()?;
        let path = dir.join(file_name);
        let loaded = (|| -> Result<Option<Arc<gimli::Dwarf<Reader>>>> {
            let elf = Arc::new(ElfFile::open_under(self.sections.root.as_ref(), &path)?);
            let Some(sections) = DwarfSections::load_dwo(&elf)? else {
                return Ok(None);
            };
            let mut dwarf = sections.dwarf()?;
            let id = dwarf
                .units()
                .next()
                .and_then(|header| match header {
                    Some(header) => Ok(dwarf.unit(header)?.dwo_id),
                    None => Ok(None),
                })
                .map_err(|e| malformed_dwarf(&path, ".debug_info.dwo", "split unit", e))?;
            if id != Some(dwo_id) {
                log::debug!(
                    "{}: split unit id {id:?}, the skeleton wants {dwo_id:?}; not used",
                    path.display(),
                );
                return Ok(None);
            }
            dwarf.make_dwo(&self.dwarf);
            Ok(Some(Arc::new(dwarf)))
        })();
        match loaded {
            Ok(unit) => unit,
            Err(e) => {
                log::debug!("split DWARF of {}: {e}", self.sections.path.display());
                None
            }
        }
    }

    /// `DW_AT_name`, `DW_AT_decl_file` and `DW_AT_decl_line` of the DIE at `die` (in `unit`),
    /// or of the DIEs it points to in that unit (`DW_AT_abstract_origin` of an inlined call,
    /// `DW_AT_specification` of a method defined out of its class), up to a few hops; and
    /// the `DW_AT_low_pc` of the DIE itself (the inlined copy's, for an inlined call). A reference into another unit (`DW_FORM_ref_addr`, as
    /// after LTO) is not followed: those fields stay `None`.
    fn declaration(
        &self,
        unit: &gimli::UnitRef<'_, Reader>,
        table: Option<&FileTable>,
        die: gimli::UnitOffset<usize>,
    ) -> Declaration {
        use gimli::{constants, AttributeValue};
        let mut found = Declaration::default();
        let text = |value| attr_text(unit, value);
        let mut at = Some(die);
        for hop in 0..4 {
            let Some(offset) = at.take() else { break };
            let Ok(entry) = unit.entry(offset) else { break };
            for attr in entry.attrs() {
                match attr.name() {
                    constants::DW_AT_name if found.short.is_none() => {
                        found.short = text(attr.value());
                    }
                    constants::DW_AT_decl_file if found.file.is_none() => {
                        found.file = match attr.value() {
                            AttributeValue::FileIndex(index) | AttributeValue::Udata(index) => {
                                table.and_then(|table| {
                                    file_path(unit, table, index, PathFor::Declaration)
                                })
                            }
                            _ => None,
                        }
                    }
                    constants::DW_AT_decl_line if found.line.is_none() => {
                        found.line = attr.udata_value().and_then(|l| u32::try_from(l).ok());
                    }
                    constants::DW_AT_low_pc if hop == 0 => {
                        found.start = unit.attr_address(attr.value()).ok().flatten().map(VirtAddr);
                    }
                    constants::DW_AT_abstract_origin | constants::DW_AT_specification => {
                        if let AttributeValue::UnitRef(next) = attr.value() {
                            at = Some(next);
                        }
                    }
                    _ => {}
                }
            }
            if found.short.is_some() && found.file.is_some() && found.line.is_some() {
                break;
            }
        }
        found
    }

    /// File `index` of `entry`'s line table as [`InlineFrame::file`] gives it, rendered once.
    fn file_name(&self, entry: &UnitEntry, index: u64) -> Option<Arc<str>> {
        let slot = usize::try_from(index).ok();
        if let Some(Some(known)) = slot.and_then(|i| entry.files.borrow().get(i).cloned()) {
            return known;
        }
        let table = entry.file_table.as_ref()?;
        let unit = gimli::UnitRef::new(&self.dwarf, &entry.unit);
        let shown: Option<Arc<str>> = file_path(&unit, table, index, PathFor::Frame).map(Arc::from);
        // Slots for the table's files only (one more: DWARF 4 numbers them from 1).
        let count = table.len() + 1;
        if let Some(i) = slot.filter(|&i| i < count) {
            let mut files = entry.files.borrow_mut();
            if files.len() < count {
                files.resize(count, None);
            }
            if let Some(cached) = files.get_mut(i) {
                *cached = Some(shown.clone());
            }
        }
        shown
    }
}

/// How many `DW_AT_abstract_origin`/`DW_AT_specification` references a function's name is
/// followed through (as the addr2line crate); a cycle ends there.
const MAX_NAME_HOPS: usize = 16;

/// Whose convention a line-table file path follows (see [`file_path`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum PathFor {
    /// A frame's location (a row's file, an inlined call's `DW_AT_call_file`).
    Frame,
    /// A function's `DW_AT_decl_file`.
    Declaration,
}

/// The path of file `index` of `unit`'s line table: the compilation directory, then the
/// file's directory, then its name; an absolute part replaces what came before. Directory
/// 0 (in DWARF 5 it repeats the compilation directory) differs by use:
/// - [`PathFor::Frame`], as llvm-symbolizer, binutils and elfutils (and perf, through them)
///   join it: skipped, except that where DWARF 5 stores it relative (`./malloc`, as glibc's
///   and clang's builds leave it) those tools join both: `./malloc/./malloc/malloc.c`. A
///   DWARF 4 file index 0 (no such file) is an empty name, as the addr2line crate gives it.
/// - [`PathFor::Declaration`]: joined in DWARF 5 (an absolute one replaces the compilation
///   directory); a missing index has no path.
fn file_path(
    unit: &gimli::UnitRef<'_, Reader>,
    table: &FileTable,
    index: u64,
    use_: PathFor,
) -> Option<String> {
    let Some(entry) = table.file(index) else {
        return (use_ == PathFor::Frame && index == 0).then(String::new);
    };
    // Directory 0 is named only from DWARF 5 on (before, it meant "none"); a frame's path
    // takes it only when it is relative.
    let dir = if entry.directory != 0 || table.version() >= 5 {
        table
            .directory(unit, entry.directory)
            .and_then(|value| unit.attr_string(value).ok())
    } else {
        None
    };
    let dir = dir.as_ref().and_then(|dir| dir.to_string_lossy().ok());
    let dir = match use_ {
        PathFor::Frame if entry.directory == 0 => {
            dir.filter(|d| !d.is_empty() && !d.starts_with('/'))
        }
        _ => dir,
    };
    let file = unit.attr_string(entry.path(unit)?).ok()?;
    let file = file.to_string_lossy().ok()?;
    let comp_dir = unit
        .comp_dir
        .as_ref()
        .and_then(|d| d.to_string_lossy().ok());
    // The parts are borrowed from the sections (unless not UTF-8) and copied once.
    let parts = [comp_dir.as_deref(), dir.as_deref(), Some(&*file)];
    let mut path = String::with_capacity(parts.iter().flatten().map(|p| p.len() + 1).sum());
    for part in parts.into_iter().flatten() {
        push_path(&mut path, part);
    }
    Some(path)
}

/// Appends `part` to `path` with a `/`; an absolute `part` replaces `path`.
fn push_path(path: &mut String, part: &str) {
    if part.starts_with('/') {
        path.clear();
    } else if !path.is_empty() && !path.ends_with('/') {
        path.push('/');
    }
    path.push_str(part);
}

/// An attribute's string (`DW_FORM_strp`, `line_strp`, `strx`, ...), lossily as UTF-8.
fn attr_text(
    unit: &gimli::UnitRef<'_, Reader>,
    value: gimli::AttributeValue<Reader>,
) -> Option<String> {
    let value = unit.attr_string(value).ok()?;
    Some(value.to_string_lossy().ok()?.into_owned())
}

/// The split-DWARF package `<path>.dwp`, if it exists and reads (else `log::debug!`);
/// opened confined to `root` when the file lies in one.
fn load_package(
    path: &Path,
    root: Option<&ConfinedRoot>,
    endian: RunTimeEndian,
) -> Option<gimli::DwarfPackage<Reader>> {
    let mut name = path.as_os_str().to_owned();
    name.push(".dwp");
    let dwp = PathBuf::from(name);
    let loaded = (|| -> Result<Option<gimli::DwarfPackage<Reader>>> {
        let elf = match ElfFile::open_under(root, &dwp) {
            Ok(elf) => Arc::new(elf),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let Some(sections) = DwarfSections::load_dwo(&elf)? else {
            return Ok(None);
        };
        let empty = Reader::new(SectionBytes::empty(), endian);
        gimli::DwarfPackage::load(|id| Ok::<_, gimli::Error>(sections.section(id)), empty)
            .map(Some)
            .map_err(|e| malformed_dwarf(&dwp, ".debug_cu_index", "package index", e))
    })();
    loaded.unwrap_or_else(|e| {
        log::debug!("{e}");
        None
    })
}

/// The byte order of `elf`'s DWARF.
fn endian_of(elf: &ElfFile) -> RunTimeEndian {
    if elf.header().big_endian {
        RunTimeEndian::Big
    } else {
        RunTimeEndian::Little
    }
}

/// gimli's error `e` while reading `context` from `section` of `path`.
fn malformed_dwarf(
    path: &Path,
    section: &'static str,
    context: impl Into<String>,
    e: gimli::Error,
) -> Error {
    Error::MalformedDwarf {
        path: path.to_path_buf(),
        section,
        context: context.into(),
        offset: None,
        source: e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dwarf_info_is_send() {
        fn assert_send<T: Send>() {}
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send::<DwarfInfo>();
        assert_send_sync::<DwarfSections>();
    }

    #[test]
    fn file_without_dwarf_is_none() {
        let elf = Arc::new(
            ElfFile::open(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bin/c-nopie"))
                .expect("committed test binary"),
        );
        if elf.section_data(".debug_info").ok().flatten().is_none() {
            assert!(DwarfSections::load(&elf).expect("reads").is_none());
        }
    }
}
