//! [`DwarfSections`] (the DWARF sections of one file) and [`DwarfInfo`] (lookups in them).
//!
//! Both own what they read, without copying mapped sections: a section is the file (an
//! `Arc<ElfFile>`) plus a range of it, or a buffer of decompressed bytes (`reader.rs`). So a
//! cache can keep a [`DwarfInfo`] next to the file it came from, with no lifetime faked.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use addr2line::gimli;
use gimli::{Reader as _, RunTimeEndian, SectionId};

use addr2line::{LookupContinuation as _, LookupResult};

use crate::addr::VirtAddr;
use crate::confine::ConfinedRoot;
use crate::demangle::demangle;
use crate::dwarf::reader::{Reader, SectionBytes};
use crate::dwarf::rows::{RowExtra, RowExtras};
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
    pub fn load(elf: &Arc<ElfFile>) -> Result<Option<DwarfSections>> {
        Self::load_named(elf, SectionId::name, &SECTIONS)
    }

    /// The `.dwo` sections (`.debug_info.dwo`, ...) of a split-DWARF object or package.
    fn load_dwo(elf: &Arc<ElfFile>) -> Result<Option<DwarfSections>> {
        let ids: Vec<SectionId> = SECTIONS.into_iter().chain(DWO_ONLY).collect();
        Self::load_named(elf, |id| id.dwo_name().unwrap_or_default(), &ids)
    }

    fn load_named(
        elf: &Arc<ElfFile>,
        name: impl Fn(SectionId) -> &'static str,
        ids: &[SectionId],
    ) -> Result<Option<DwarfSections>> {
        let mut sections = Vec::new();
        for &id in ids {
            let name = name(id);
            if name.is_empty() {
                continue;
            }
            let bytes = match elf.section_contents(name)? {
                None => continue,
                Some(SectionContents::InFile(range)) => SectionBytes::InFile {
                    file: Arc::clone(elf),
                    range,
                },
                Some(SectionContents::Owned(bytes)) => SectionBytes::Owned(Arc::from(bytes)),
            };
            sections.push((id, bytes));
        }
        let has = |wanted: SectionId| sections.iter().any(|(id, _)| *id == wanted);
        if !has(SectionId::DebugInfo) && !has(SectionId::DebugLine) {
            return Ok(None);
        }
        let endian = if elf.header().big_endian {
            RunTimeEndian::Big
        } else {
            RunTimeEndian::Little
        };
        Ok(Some(DwarfSections {
            path: elf.path().to_path_buf(),
            root: elf.root().cloned(),
            endian,
            sections,
        }))
    }

    /// Bytes held in memory by decompressed sections (borrowed ones cost nothing).
    pub fn heap_bytes(&self) -> usize {
        self.sections
            .iter()
            .map(|(_, bytes)| match bytes {
                SectionBytes::InFile { .. } => 0,
                SectionBytes::Owned(owned) => owned.len(),
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

    fn dwarf(&self) -> Result<gimli::Dwarf<Reader>> {
        gimli::Dwarf::load(|id| Ok::<_, gimli::Error>(self.section(id)))
            .map_err(|e| malformed_dwarf(&self.path, "sections", e))
    }
}

/// The DWARF of one ELF file, ready for lookups.
///
/// Lookups parse lazily: the first one in a compilation unit reads that unit's line program
/// and functions, and keeps them. The value is `Send` but not `Sync` (the lazily filled
/// caches of `addr2line::Context` are not); share it between threads behind a `Mutex`, or
/// load one per thread.
pub struct DwarfInfo {
    path: PathBuf,
    /// As [`DwarfSections`]'s: `.dwo` files are opened confined to it.
    root: Option<ConfinedRoot>,
    context: addr2line::Context<Reader>,
    /// `<file>.dwp`, the split-DWARF package next to the file, if there is one.
    package: Option<gimli::DwarfPackage<Reader>>,
    /// Function names met so far (as read, and demangled), keyed by where their bytes lie in
    /// the sections (address, length), so each is converted and demangled once.
    names: Interned<(Arc<str>, Arc<str>)>,
    /// Functions met so far, keyed by their name's place and their DIE's offset (see
    /// `function_name`), so each frame of one function shares one `FunctionName`; with the
    /// DIE's call discriminator (`Declaration::call_discriminator`).
    functions: Interned<(Arc<FunctionName>, Option<u32>)>,
    /// File paths met so far, keyed by where `addr2line`'s line tables (which live as long as
    /// `context`) keep them.
    /// With each, the `row_tables` index of its unit's table: the addr2line crate keeps
    /// file names per unit, so an address whose file is known needs no second unit lookup.
    files: Interned<(Arc<str>, Option<usize>)>,
    /// Per unit met so far, the rows of its line program that carry a discriminator or a
    /// line-0 column, which the addr2line crate's tables drop; `row_table_of` finds a
    /// program's table by where the program's bytes lie.
    row_tables: RefCell<Vec<RowExtras>>,
    row_table_of: Interned<usize>,
    /// The sections the `context` reads (shared with it), for what it does not expose.
    dwarf: Arc<gimli::Dwarf<Reader>>,
    /// Skeleton units' line programs by their split unit's id (split DWARF only; see
    /// `skeleton_line_program`).
    skeletons: std::cell::OnceCell<Vec<(gimli::DwoId, gimli::IncompleteLineProgram<Reader>)>>,
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
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// One frame of the inline chain at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
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
    /// [`Frame::file`] is.
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
    /// `DW_AT_GNU_discriminator` of an inlined call: the discriminator of its call site,
    /// the next frame's location (as LLVM writes it and llvm-symbolizer prints it).
    call_discriminator: Option<u32>,
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
        check_inlined_depth(&dwarf).map_err(|e| e.in_file(&sections.path))?;
        if let Some(sup) = sup {
            dwarf.set_sup(sup.dwarf()?);
        }
        let dwarf = Arc::new(dwarf);
        let context = addr2line::Context::from_arc_dwarf(Arc::clone(&dwarf))
            .map_err(|e| malformed_dwarf(&sections.path, "unit headers", e))?;
        Ok(DwarfInfo {
            path: sections.path.clone(),
            root: sections.root.clone(),
            context,
            package: load_package(&sections.path, sections.root.as_ref(), sections.endian),
            names: RefCell::default(),
            functions: RefCell::default(),
            files: RefCell::default(),
            row_tables: RefCell::default(),
            row_table_of: RefCell::default(),
            dwarf,
            skeletons: std::cell::OnceCell::new(),
        })
    }

    /// The frames at `addr` (a virtual address as the file states it), innermost first:
    /// the inlined functions, then the function that contains them. `Ok(None)` when the
    /// DWARF does not cover `addr`; `Err`, naming the file, when the DWARF met on the way is
    /// malformed.
    pub fn frames(&self, addr: VirtAddr) -> Result<Option<Vec<Frame>>> {
        let mut frames = Vec::new();
        Ok(self.append_frames(addr, &mut frames)?.then_some(frames))
    }

    /// Like [`DwarfInfo::frames`], appending the frames to `out` (a batch's frames, back to
    /// back, without a vector per address). `Ok(false)` (nothing appended) when the DWARF
    /// does not cover `addr`; on `Err`, `out` is left as it was.
    pub fn append_frames(&self, addr: VirtAddr, out: &mut Vec<Frame>) -> Result<bool> {
        let start = out.len();
        let appended = self.append_frames_inner(addr, out);
        if appended.is_err() {
            out.truncate(start);
        }
        appended
    }

    fn append_frames_inner(&self, addr: VirtAddr, out: &mut Vec<Frame>) -> Result<bool> {
        let start = out.len();
        if addr.0 == u64::MAX {
            // No half-open DWARF range `[low, high)` can hold the last address; and
            // addr2line 0.27 computes `addr + 1`, which overflows there (found by fuzzing).
            return Ok(false);
        }
        let mut lookup = self.context.find_frames(addr.0);
        let result = loop {
            match lookup {
                LookupResult::Output(result) => break result,
                LookupResult::Load { load, continuation } => {
                    lookup = continuation.resume(self.load_split_unit(&load));
                }
            }
        };
        let mut iter = result
            .map_err(|e| malformed_dwarf(&self.path, &format!("functions at {addr:#x}"), e))?;
        // The innermost frame's is the line-table row's, set below.
        let mut caller_discriminator = None;
        let mut innermost_rows = None;
        while let Some(frame) = iter
            .next()
            .map_err(|e| malformed_dwarf(&self.path, &format!("inlined frames at {addr:#x}"), e))?
        {
            let (function, call_discriminator) = match &frame.function {
                Some(name) => {
                    let (function, call_discriminator) =
                        self.function_name(&name.name, frame.dw_die_offset, addr)?;
                    (Some(function), call_discriminator)
                }
                None => (None, None),
            };
            let location = frame.location.as_ref();
            let file = location
                .and_then(|l| l.file)
                .map(|file| self.file_name(file, addr));
            if out.len() == start {
                innermost_rows = file.as_ref().and_then(|(_, rows)| *rows);
            }
            out.push(Frame {
                function,
                file: file.map(|(name, _)| name),
                line: location.and_then(|l| l.line).filter(|&l| l != 0),
                column: location.and_then(|l| l.column),
                // An outer frame's location is the call site of the inlined call before it.
                discriminator: caller_discriminator,
                inlined: true,
            });
            caller_discriminator = call_discriminator;
        }
        let Some(innermost) = out.get_mut(start) else {
            return Ok(false);
        };
        if innermost.file.is_some() || innermost.line.is_some() {
            // The innermost location is the line-table row's: add what the addr2line
            // crate dropped from it.
            let extra = self.row_extra(addr, innermost_rows);
            innermost.discriminator = (extra.discriminator != 0).then_some(extra.discriminator);
            if innermost.line.is_none() && extra.line0_column != 0 {
                innermost.column = Some(extra.line0_column);
            }
        }
        if let Some(last) = out[start..].last_mut() {
            last.inlined = false;
        }
        Ok(true)
    }

    /// What the line-table row at `addr` adds (`rows.rs`), from the table of the unit
    /// `rows` names (found with the innermost function), else of the unit found at `addr`.
    fn row_extra(&self, addr: VirtAddr, rows: Option<usize>) -> RowExtra {
        let rows = rows.or_else(|| self.unit_at(addr).and_then(|unit| self.row_table(&unit)));
        rows.and_then(|i| self.row_tables.borrow().get(i).map(|t| t.at(addr.0)))
            .unwrap_or_default()
    }

    /// The index in `row_tables` of `unit`'s table, read on the unit's first use. `None`
    /// when the unit has no line program. A program that cannot be run again (the addr2line
    /// crate ran it already, so that is not expected) gives an empty table (`log::debug!`).
    fn row_table(&self, unit: &gimli::UnitRef<'_, Reader>) -> Option<usize> {
        let program = if unit.dwarf.file_type == gimli::DwarfFileType::Dwo {
            // A split unit's rows are in its skeleton's line program, in this file.
            self.skeleton_line_program(unit.dwo_id?)?
        } else {
            unit.line_program.clone()?
        };
        // Keyed by where the program's bytes lie, as the name tables are keyed.
        let bytes = program.header().raw_program_buf();
        let key = (bytes.as_ptr() as usize, bytes.len());
        if let Some(&known) = self.row_table_of.borrow().get(&key) {
            return Some(known);
        }
        let offset = program.header().offset().0;
        let table = RowExtras::read(program).unwrap_or_else(|e| {
            log::debug!(
                "{}: line program at {offset:#x}: {e}; no discriminators from it",
                self.path.display(),
            );
            RowExtras::default()
        });
        let mut tables = self.row_tables.borrow_mut();
        tables.push(table);
        let index = tables.len() - 1;
        self.row_table_of.borrow_mut().insert(key, index);
        Some(index)
    }

    /// The line program of the skeleton unit (in this file) of the split unit `dwo_id`.
    /// The skeletons are found on the first call, by reading every unit's root DIE.
    fn skeleton_line_program(
        &self,
        dwo_id: gimli::DwoId,
    ) -> Option<gimli::IncompleteLineProgram<Reader>> {
        let skeletons = self.skeletons.get_or_init(|| {
            let mut skeletons = Vec::new();
            let mut headers = self.dwarf.units();
            while let Ok(Some(header)) = headers.next() {
                let Ok(unit) = self.dwarf.unit(header) else {
                    continue;
                };
                if let (Some(id), Some(program)) = (unit.dwo_id, unit.line_program) {
                    skeletons.push((id, program));
                }
            }
            skeletons
        });
        skeletons
            .iter()
            .find(|(id, _)| *id == dwo_id)
            .map(|(_, program)| program.clone())
    }

    /// The file the DWARF was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The split-DWARF unit a skeleton unit names: from the `.dwp` package next to the file,
    /// else from the `.dwo` file it names. Only the file's own directory is searched: a
    /// relative `DW_AT_comp_dir` (`.`, as `-fdebug-prefix-map` leaves it) is taken as the
    /// file's directory, and an absolute `.dwo` path elsewhere (the build machine's) is
    /// tried by its file name in that directory. A `.dwo` whose id differs is refused. On
    /// failure the lookup goes on with the skeleton (lines without inlined frames), as
    /// llvm-symbolizer does; `log::debug!` says why.
    fn load_split_unit(
        &self,
        load: &addr2line::SplitDwarfLoad<Reader>,
    ) -> Option<Arc<gimli::Dwarf<Reader>>> {
        if let Some(package) = &self.package {
            match package.find_cu(load.dwo_id, &load.parent) {
                Ok(Some(unit)) => match check_inlined_depth(&unit) {
                    Ok(()) => return Some(Arc::new(unit)),
                    Err(refused) => {
                        log::debug!("{}", refused.in_file(&self.path));
                        return None;
                    }
                },
                Ok(None) => {}
                Err(e) => log::debug!("{}.dwp: {e}", self.path.display()),
            }
        }
        let name = load.path.as_ref()?.to_string_lossy().ok()?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let file_name = Path::new(name.as_ref()).file_name()?;
        let path = dir.join(file_name);
        let loaded = (|| -> Result<Option<Arc<gimli::Dwarf<Reader>>>> {
            let elf = Arc::new(ElfFile::open_under(self.root.as_ref(), &path)?);
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
                .map_err(|e| malformed_dwarf(&path, "split unit", e))?;
            check_inlined_depth(&dwarf).map_err(|e| e.in_file(&path))?;
            if id != Some(load.dwo_id) {
                log::debug!(
                    "{}: split unit id {id:?}, the skeleton wants {:?}; not used",
                    path.display(),
                    load.dwo_id
                );
                return Ok(None);
            }
            dwarf.make_dwo(&load.parent);
            Ok(Some(Arc::new(dwarf)))
        })();
        match loaded {
            Ok(unit) => unit,
            Err(e) => {
                log::debug!("split DWARF of {}: {e}", self.path.display());
                None
            }
        }
    }

    /// The function named `name` whose DIE is at `die` in the unit holding `addr`, interned
    /// by where the name and the DIE lie: a name string shared by functions of several units
    /// (a C `static helper` in two files) gets its declaration per DIE. Two functions whose
    /// name strings and unit-relative DIE offsets both coincide would share one entry; DWARF
    /// producers do not make that in practice. The name is converted and demangled once per
    /// name string (inlined copies of one function have a DIE each, and one name).
    fn function_name(
        &self,
        name: &Reader,
        die: Option<gimli::UnitOffset<usize>>,
        addr: VirtAddr,
    ) -> Result<(Arc<FunctionName>, Option<u32>)> {
        let bytes: &[u8] = name;
        let name_key = (bytes.as_ptr() as usize, bytes.len());
        let key = (
            name_key.0 ^ die.map_or(0, |d| d.0.rotate_left(32)),
            name_key.1,
        );
        if let Some((known, call_discriminator)) = self.functions.borrow().get(&key) {
            return Ok((Arc::clone(known), *call_discriminator));
        }
        let known_name = self.names.borrow().get(&name_key).cloned();
        let (raw, demangled) = match known_name {
            Some(names) => names,
            None => {
                let raw: Arc<str> = name
                    .to_string_lossy()
                    .map_err(|e| malformed_dwarf(&self.path, "function name", e))?
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
        let declared = match die {
            Some(die) => self.declaration(die, addr),
            None => Declaration::default(),
        };
        let interned = Arc::new(FunctionName {
            raw: raw.to_string(),
            demangled: demangled.to_string(),
            short: declared.short,
            decl_file: declared.file.map(Arc::from),
            decl_line: declared.line,
            start: declared.start,
        });
        self.functions
            .borrow_mut()
            .insert(key, (Arc::clone(&interned), declared.call_discriminator));
        Ok((interned, declared.call_discriminator))
    }

    /// `DW_AT_name`, `DW_AT_decl_file` and `DW_AT_decl_line` of the DIE at `die` (in the unit
    /// holding `addr`), or of the DIEs it points to in that unit (`DW_AT_abstract_origin` of
    /// an inlined call, `DW_AT_specification` of a method defined out of its class), up to
    /// a few hops; and the `DW_AT_low_pc` of the DIE itself (the inlined copy's, for an
    /// inlined call). A reference into another unit (`DW_FORM_ref_addr`, as after LTO) is
    /// not followed: those fields stay `None`.
    fn declaration(&self, die: gimli::UnitOffset<usize>, addr: VirtAddr) -> Declaration {
        use gimli::{constants, AttributeValue};
        let mut found = Declaration::default();
        let Some(unit) = self.unit_at(addr) else {
            return found;
        };
        let text = |value| attr_text(&unit, value);
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
                                self.render_file(&unit, index)
                            }
                            _ => None,
                        }
                    }
                    constants::DW_AT_decl_line if found.line.is_none() => {
                        found.line = attr.udata_value().and_then(|l| u32::try_from(l).ok());
                    }
                    constants::DW_AT_GNU_discriminator if hop == 0 => {
                        found.call_discriminator = attr
                            .udata_value()
                            .and_then(|d| u32::try_from(d).ok())
                            .filter(|&d| d != 0);
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

    /// The path of file `index` of `unit`'s line table, joined as llvm-symbolizer, binutils
    /// and elfutils join it: compilation dir, then the file's directory (directory 0 too in
    /// DWARF 5, where it repeats the compilation dir), then its name; an absolute part
    /// replaces what came before.
    fn render_file(&self, unit: &gimli::UnitRef<'_, Reader>, index: u64) -> Option<String> {
        let header = unit.line_program.as_ref()?.header();
        let entry = header.file(index)?;
        let text = |value| attr_text(unit, value);
        let mut path = unit
            .comp_dir
            .as_ref()
            .and_then(|dir| Some(dir.to_string_lossy().ok()?.into_owned()))
            .unwrap_or_default();
        let push = |path: &mut String, part: &str| {
            if part.starts_with('/') {
                *path = part.to_string();
            } else {
                if !path.is_empty() && !path.ends_with('/') {
                    path.push('/');
                }
                path.push_str(part);
            }
        };
        if entry.directory_index() != 0 || header.version() >= 5 {
            if let Some(dir) = entry.directory(header).and_then(text) {
                push(&mut path, &dir);
            }
        }
        push(&mut path, &text(entry.path_name())?);
        Some(path)
    }

    /// The unit holding `addr` (its split unit, for split DWARF).
    fn unit_at(&self, addr: VirtAddr) -> Option<gimli::UnitRef<'_, Reader>> {
        let mut lookup = self.context.find_dwarf_and_unit(addr.0);
        loop {
            match lookup {
                LookupResult::Output(unit) => return unit,
                LookupResult::Load { load, continuation } => {
                    lookup = continuation.resume(self.load_split_unit(&load));
                }
            }
        }
    }

    /// The path of a line-table file as [`Frame::file`] gives it, interned. `file` is the
    /// addr2line crate's rendering, found at `addr` (whose unit holds the file's entry).
    /// With it, the `row_tables` index of the unit's table (`row_table`).
    fn file_name(&self, file: &str, addr: VirtAddr) -> (Arc<str>, Option<usize>) {
        let key = (file.as_ptr() as usize, file.len());
        if let Some((known, rows)) = self.files.borrow().get(&key) {
            return (Arc::clone(known), *rows);
        }
        let unit = self.unit_at(addr);
        let joined = unit.and_then(|unit| self.joined_like_other_tools(&unit, file));
        let shown: Arc<str> = match joined {
            Some(path) => Arc::from(path),
            None => Arc::from(file),
        };
        let rows = unit.and_then(|unit| self.row_table(&unit));
        self.files
            .borrow_mut()
            .insert(key, (Arc::clone(&shown), rows));
        (shown, rows)
    }

    /// A DWARF 5 line table's directory 0 is the compilation directory itself, so the
    /// addr2line crate (like gdb) renders a file of directory 0 as `comp_dir/name`. When that
    /// directory is stored relative (`./malloc`, as glibc's and clang's builds leave it),
    /// llvm-symbolizer, binutils' addr2line and elfutils' eu-addr2line (and perf, through
    /// them) join the compilation directory and directory 0 both: `./malloc/./malloc/malloc.c`.
    /// We print what they print. `None`: `file` stays as rendered.
    fn joined_like_other_tools(
        &self,
        unit: &gimli::UnitRef<'_, Reader>,
        file: &str,
    ) -> Option<String> {
        let header = unit.line_program.as_ref()?.header();
        if header.version() < 5 {
            return None;
        }
        let dir0 = attr_text(unit, header.include_directories().first()?.clone())?;
        if dir0.is_empty() || dir0.starts_with('/') {
            return None;
        }
        let comp_dir = unit.comp_dir.as_ref()?.to_string_lossy().ok()?;
        let name = file
            .strip_prefix(comp_dir.as_ref())?
            .trim_start_matches('/');
        // DWARF 5 numbers files from 0: the entry's position is its index.
        let index = header.file_names().iter().position(|entry| {
            entry.directory_index() == 0
                && attr_text(unit, entry.path_name()).as_deref() == Some(name)
        })?;
        self.render_file(unit, u64::try_from(index).ok()?)
    }
}

/// The deepest nesting of `DW_TAG_inlined_subroutine` DIEs accepted (see
/// [`check_inlined_depth`]). Real code nests inlined calls a few dozen deep (the deepest in
/// testdata: 10, libstdc++'s `std::sort`); 256 leaves room, and costs the addr2line crate's
/// recursive parser about 80 KiB of stack in a release build (600 KiB in a debug build, where
/// a 2 MiB thread overflows at about 850 levels).
pub const MAX_INLINED_DEPTH: usize = 256;

/// Why DWARF was refused before any lookup, with no path yet (the caller adds it).
struct Refused(String);

impl Refused {
    fn in_file(self, path: &Path) -> Error {
        Error::MalformedElf {
            path: path.to_path_buf(),
            what: format!("DWARF {}", self.0),
        }
    }
}

/// Refuses DWARF in which `DW_TAG_inlined_subroutine` DIEs nest deeper than
/// [`MAX_INLINED_DEPTH`]: the addr2line crate parses each level with a recursive call, so a
/// crafted unit (100,000 levels are a few hundred KiB of DWARF) would overflow the stack,
/// which kills the process. Every unit's DIE tree is walked once, without recursion (depth
/// from gimli's raw entry reader, attributes skipped), before the first lookup: about the
/// cost of one more pass of the one addr2line makes over a unit's DIEs for its functions.
fn check_inlined_depth(dwarf: &gimli::Dwarf<Reader>) -> std::result::Result<(), Refused> {
    let fail = |what: &str, e: gimli::Error| Refused(format!("{what}: {e}"));
    let mut headers = dwarf.units();
    // Per depth of the DIE tree: how many inlined subroutines enclose that level.
    let mut inlined_at: Vec<usize> = Vec::new();
    while let Some(header) = headers.next().map_err(|e| fail("unit headers", e))? {
        let at = header.offset();
        let unit = match dwarf.unit(header) {
            Ok(unit) => unit,
            // addr2line skips a unit it cannot read; so does this check.
            Err(_) => continue,
        };
        let mut entries = match unit.entries_raw(None) {
            Ok(entries) => entries,
            Err(_) => continue,
        };
        inlined_at.clear();
        while !entries.is_empty() {
            let depth = usize::try_from(entries.next_depth()).unwrap_or(0);
            let abbrev = match entries.read_abbreviation() {
                Ok(Some(abbrev)) => abbrev,
                Ok(None) => continue,
                // The rest of this unit cannot be read: addr2line cannot parse it either.
                Err(_) => break,
            };
            inlined_at.truncate(depth);
            let enclosing = depth
                .checked_sub(1)
                .and_then(|parent| inlined_at.get(parent))
                .copied()
                .unwrap_or(0);
            let inlined = enclosing + usize::from(abbrev.tag() == gimli::DW_TAG_inlined_subroutine);
            if inlined > MAX_INLINED_DEPTH {
                return Err(Refused(format!(
                    "unit at {at:?}: inlined subroutines nested more than {MAX_INLINED_DEPTH} \
                     deep; refused (its lookups would recurse that deep)"
                )));
            }
            // Levels skipped by a malformed depth are filled with the enclosing count.
            inlined_at.resize(depth, enclosing);
            inlined_at.push(inlined);
            if entries.skip_attributes(abbrev.attributes()).is_err() {
                break;
            }
        }
    }
    Ok(())
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
            .map_err(|e| malformed_dwarf(&dwp, "package index", e))
    })();
    loaded.unwrap_or_else(|e| {
        log::debug!("{e}");
        None
    })
}

fn malformed_dwarf(path: &Path, what: &str, e: gimli::Error) -> Error {
    Error::MalformedElf {
        path: path.to_path_buf(),
        what: format!("DWARF {what}: {e}"),
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
