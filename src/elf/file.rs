//! [`ElfFile`]: one opened ELF file, its headers, and lookups in its symbol tables.

use std::borrow::Cow;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::{elf, Endianness};

use crate::addr::{FileOffset, VirtAddr};
use crate::confine::ConfinedRoot;
use crate::elf::bytes::{c_str_in, FileBytes};
use crate::elf::compressed::{self, Compression};
use crate::elf::index_builder::{build_symbol_tables, SymbolTables};
use crate::elf::partial::{self, Deferred};
use crate::elf::relocatable::{self, RelocatableSection};
use crate::elf::segments::{LoadSegment, Segments};
use crate::elf::symbols::{
    split_version, ElfSymbol, FoundSpan, NameSpan, NameTable, SymbolId, SymbolKind, SymbolOrigin,
    SymbolSpans, VersionSuffix,
};
use crate::error::{Error, Result};

/// Facts from the ELF header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElfHeaderInfo {
    /// `ELFCLASS64` (true) or `ELFCLASS32`.
    pub is_64: bool,
    /// Big-endian (true) or little-endian.
    pub big_endian: bool,
    /// `e_machine`, e.g. 62 for x86_64, 183 for aarch64, 3 for i386.
    pub machine: u16,
    /// `e_type`, e.g. 2 (`ET_EXEC`) or 3 (`ET_DYN`: a shared library or a PIE).
    pub file_type: u16,
}

/// What [`ElfFile::find_symbol_span`] found: the symbol covering an address (its id and
/// start), if any, and the addresses around it for which the lookup answers the same.
#[derive(Debug, Clone)]
pub(crate) struct SymbolSpan {
    pub(crate) symbol: Option<(SymbolId, VirtAddr)>,
    pub(crate) span: Range<u64>,
    /// Where the search for a higher address starts, in the code and in the data index
    /// ([`FoundSpan::below`]; `None`: from the top).
    from: (Option<u32>, Option<u32>),
}

/// Symbol lookups of a batch walked in address order: each reuses the last answer while
/// the addresses stay in its span, so a run of addresses inside one function (or one gap)
/// costs one search of the index.
pub(crate) struct SymbolRuns<'a> {
    elf: &'a ElfFile,
    last: Option<SymbolSpan>,
}

impl<'a> SymbolRuns<'a> {
    pub(crate) fn new(elf: &'a ElfFile) -> Self {
        SymbolRuns { elf, last: None }
    }

    /// [`ElfFile::find_symbol_id`] of `addr`. Right in any order; fast in address order.
    pub(crate) fn find(&mut self, addr: VirtAddr) -> Result<Option<(SymbolId, VirtAddr)>> {
        match &self.last {
            Some(last) if last.span.contains(&addr.0) => Ok(last.symbol),
            _ => {
                // In address order, the next symbol is searched forward from the last one.
                let from = match &self.last {
                    Some(last) if last.span.end <= addr.0 => last.from,
                    _ => (None, None),
                };
                let found = self.elf.find_symbol_span_from(addr, from)?;
                let symbol = found.symbol;
                self.last = Some(found);
                Ok(symbol)
            }
        }
    }
}

/// One ELF file (ELF32 or ELF64, either endianness), opened by path or from bytes.
///
/// Opening reads the ELF header, the program headers and the build-id note; the symbol index
/// is built on the first symbol lookup and kept for the life of the value. The value is
/// `Send + Sync`: share it between threads behind an `Arc`.
pub struct ElfFile {
    path: PathBuf,
    /// The root the file was opened in (see [`ElfFile::root`]).
    root: Option<ConfinedRoot>,
    /// (device, inode) of the file opened, for files opened from disk.
    file_id: Option<(u64, u64)>,
    bytes: FileBytes,
    /// For a file read in part (`partial.rs`), the ranges left out of `bytes` and the open
    /// file to read them from; `None` for a file whose bytes are all in `bytes`.
    deferred: Option<Deferred>,
    header: ElfHeaderInfo,
    segments: Segments,
    /// The layout of an `ET_REL` file's allocated sections; empty for other files.
    relocatable: Vec<RelocatableSection>,
    build_id: Option<Range<usize>>,
    links: DebugLinks,
    symbols: OnceLock<Result<SymbolTables, Error>>,
    /// Added to the addresses of the symbol index (see [`ElfFile::with_address_bias`]).
    address_bias: u64,
}

impl std::fmt::Debug for ElfFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElfFile")
            .field("path", &self.path)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// Where the bytes of a section are (see [`ElfFile::section_contents`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionContents {
    /// A range of the file's bytes (read them with [`ElfFile::bytes_in`]); empty for
    /// `SHT_NOBITS`.
    InFile(Range<usize>),
    /// Bytes that differ from the file's: decompressed from an `SHF_COMPRESSED` or
    /// `.zdebug_*` section, and/or relocated (a relocatable file's section that relocations
    /// target, e.g. a kernel module's `.debug_info`; see [`ElfFile::relocatable_sections`]).
    Owned(Vec<u8>),
}

impl ElfFile {
    /// Opens and memory-maps the file at `path`, a path the caller trusts (see
    /// [`ElfFile::open_in_root`] for one that came from another process). A file compressed
    /// whole with xz, zstd or gzip (recognized by its magic bytes: kernel modules ship as
    /// `.ko.xz`, `.ko.zst`, `.ko.gz`) is decompressed into memory instead, up to 1 GiB and 64
    /// times its size (xz needs the `minidebuginfo` feature, on by default).
    ///
    /// Fails with an error naming `path` if it cannot be read, is not a regular file, is not
    /// ELF (a linker script, say), does not decompress, or has headers that do not fit in
    /// the file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (bytes, id) = FileBytes::map(path)?;
        let mut elf = Self::from_file_bytes(path.to_path_buf(), decompressed(path, bytes)?)?;
        elf.file_id = Some(id);
        Ok(elf)
    }

    /// Reads an ELF file from an open `file` into memory (not mapped: the file may be one
    /// another process can truncate at any time, see ARCHITECTURE.md, "Trust"), at most
    /// [`MAX_READ_FILE_BYTES`]; `path` names it in errors and results. Compressed files are
    /// decompressed as by [`ElfFile::open`].
    ///
    /// A file of at least 1 MiB with at least 1 MiB of DWARF, code and data is read in part:
    /// all but the bodies of its `.debug_*` sections and of its `.text`, `.rodata` and
    /// `.data` (but in a Go file) now, each of those when [`ElfFile::section_contents`] is
    /// first asked for it, from a duplicate of `file`'s descriptor, which the value keeps
    /// open ([`ElfFile::bytes_in`] is for the ranges `section_contents` returns). A file that changed since this call (its
    /// size, modification time or inode) is then an error naming it, as it is here.
    pub fn from_file(file: &File, path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let metadata = file.metadata().map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        if let Some((bytes, deferred)) = partial::read_partial(file, &path, MAX_READ_FILE_BYTES)? {
            let mut elf = Self::from_file_bytes(path, bytes)?;
            elf.file_id = Some((metadata.dev(), metadata.ino()));
            elf.deferred = Some(deferred);
            return Ok(elf);
        }
        let bytes = FileBytes::read(file, &path, MAX_READ_FILE_BYTES)?;
        let mut elf = Self::from_file_bytes(path.clone(), decompressed(&path, bytes)?)?;
        elf.file_id = Some((metadata.dev(), metadata.ino()));
        Ok(elf)
    }

    /// Opens the file at `inside`, a path that came from a process (its maps, a debug link,
    /// the DWARF), confined to that process's `root` (`ConfinedRoot::open`: no symbolic
    /// link leads out of it) and read into memory as by [`ElfFile::from_file`]. The file is
    /// named by its host path (`<root>/<inside>`) and remembers `root`, so that the files it
    /// names in turn (its debug file, split DWARF) are looked for in the same root.
    pub fn open_in_root(root: &ConfinedRoot, inside: &Path) -> Result<Self> {
        let file = root.open(inside)?;
        Ok(Self::from_file(&file, root.host_path(inside))?.in_root(root.clone()))
    }

    /// Opens `path` (a host path) as [`ElfFile::open_in_root`] does when it lies under
    /// `root`'s directory, else as [`ElfFile::open`] does: the one choice between trusted and
    /// untrusted for paths built from a file's own path or from debug dirs.
    pub fn open_under(root: Option<&ConfinedRoot>, path: &Path) -> Result<Self> {
        match root.and_then(|root| Some((root, root.inside(path)?))) {
            Some((root, inside)) => Self::open_in_root(root, &inside),
            None => Self::open(path),
        }
    }

    /// The same file, marked as lying in `root` (for a file opened by other means, such as a
    /// process's `map_files` entry, whose path is inside that root).
    pub fn in_root(mut self, root: ConfinedRoot) -> Self {
        self.root = Some(root);
        self
    }

    /// Reads an ELF file that is already in memory. `name` is used in errors and results in
    /// place of a path.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: impl Into<Box<[u8]>>) -> Result<Self> {
        Self::from_file_bytes(name.into(), FileBytes::Owned(bytes.into()))
    }

    fn from_file_bytes(path: PathBuf, bytes: FileBytes) -> Result<Self> {
        let data = bytes.as_slice();
        check_magic(&path, data)?;
        let (header, segments, relocatable, build_id) = match data.get(EI_CLASS) {
            Some(&1) => read_headers::<elf::FileHeader32<Endianness>>(&path, data)?,
            Some(&2) => read_headers::<elf::FileHeader64<Endianness>>(&path, data)?,
            Some(&class) => {
                return Err(Error::NotElf {
                    path,
                    reason: format!("unknown ELF class byte {class} (1 is 32-bit, 2 is 64-bit)"),
                })
            }
            None => {
                return Err(Error::MalformedElf {
                    path,
                    what: format!(
                        "truncated: the file is only {} bytes, inside the ELF identification",
                        data.len()
                    ),
                })
            }
        };
        let links = if header.is_64 {
            read_debug_links::<elf::FileHeader64<Endianness>>(&path, data)
        } else {
            read_debug_links::<elf::FileHeader32<Endianness>>(&path, data)
        };
        Ok(ElfFile {
            path,
            root: None,
            file_id: None,
            bytes,
            deferred: None,
            header,
            segments,
            relocatable,
            build_id,
            links,
            symbols: OnceLock::new(),
            address_bias: 0,
        })
    }

    /// The path the file was opened from (or the name given to [`ElfFile::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root of the process the file came from, when it was opened inside one
    /// ([`ElfFile::open_in_root`], [`ElfFile::in_root`]): the files it names are looked for
    /// there, confined. `None` for a file the caller named.
    pub fn root(&self) -> Option<&ConfinedRoot> {
        self.root.as_ref()
    }

    /// The (device, inode) of the file opened; `None` for one given as bytes.
    pub fn file_id(&self) -> Option<(u64, u64)> {
        self.file_id
    }

    /// Facts from the ELF header.
    pub fn header(&self) -> ElfHeaderInfo {
        self.header
    }

    /// The GNU build-id (`NT_GNU_BUILD_ID` note), if the file has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.clone().and_then(|r| self.data().get(r))
    }

    /// The `.gnu_debuglink` section: the debug file's name (no directory, as written) and the
    /// CRC32 of that whole file. `None` without the section or when it is malformed.
    pub fn debuglink(&self) -> Option<(&[u8], u32)> {
        let (name, crc) = self.links.debuglink.clone()?;
        Some((self.data().get(name)?, crc))
    }

    /// The `.gnu_debugaltlink` section (a dwz supplementary file): its path as written and
    /// its build-id. `None` without the section or when it is malformed.
    pub fn debugaltlink(&self) -> Option<(&[u8], &[u8])> {
        let (name, build_id) = self.links.debugaltlink.clone()?;
        Some((self.data().get(name)?, self.data().get(build_id)?))
    }

    /// The loadable segments, which convert between file offsets and virtual addresses.
    pub fn segments(&self) -> &Segments {
        &self.segments
    }

    /// For a relocatable file (`ET_REL`: an object file or a kernel module), its allocated
    /// sections and the addresses this crate lays them out at; empty for executables and shared libraries. Symbols,
    /// [`ElfFile::segments`] and DWARF (relocated by [`ElfFile::section_contents`]) of such a
    /// file are all at these addresses.
    pub fn relocatable_sections(&self) -> &[RelocatableSection] {
        &self.relocatable
    }

    /// The same file, its symbols answering `bias` higher (wrapping) than the file states
    /// them: a debug file made before its binary was prelinked to another base (see
    /// [`ElfFile::prelink_bias`]) then answers at the binary's addresses. Only the address
    /// lookups ([`ElfFile::find_symbol`] and the others by address, [`ElfSymbol::addr`]) are
    /// moved; sections, segments and lookups by name keep the file's own addresses.
    pub(crate) fn with_address_bias(mut self, bias: u64) -> Self {
        self.address_bias = bias;
        self
    }

    /// The bias set by [`ElfFile::with_address_bias`] (0 without one).
    pub(crate) fn address_bias(&self) -> u64 {
        self.address_bias
    }

    /// How far `binary`'s addresses are from this file's, its debug file's: the difference
    /// of the addresses of the sections both have (matched by name), which is not 0 for a
    /// binary prelinked (or otherwise moved) after its debug file was split off; the debug
    /// file is then rebased by it, as elfutils does. The executable sections decide where
    /// there are any: prelink may grow a section before them and so move the rest a little
    /// further than the first ones (elfutils' testfile52-32.prelink.so: `.rel.dyn` became
    /// `RELA`, `.init` and everything after it moved 0x20 more than `.dynsym`), and
    /// addresses looked up are code. `None` when no section matches, or when the deciding
    /// sections disagree on the difference (not one file moved whole: nothing is rebased).
    pub(crate) fn prelink_bias(&self, binary: &ElfFile) -> Option<u64> {
        use object::{Object, ObjectSection, SectionFlags};
        let ours = self.object_file().ok()?;
        let theirs = binary.object_file().ok()?;
        let flags = |section: &object::Section<'_, '_>| match section.flags() {
            SectionFlags::Elf { sh_flags, .. } => sh_flags.0,
            _ => 0,
        };
        let allocated = |section: &object::Section<'_, '_>| flags(section) & elf::SHF_ALLOC.0 != 0;
        // (bias of the executable sections, of all allocated ones); `Err` once they disagree.
        let mut code: Option<std::result::Result<u64, ()>> = None;
        let mut all: Option<std::result::Result<u64, ()>> = None;
        let agree = |seen: &mut Option<std::result::Result<u64, ()>>, difference: u64| {
            *seen = match *seen {
                None => Some(Ok(difference)),
                Some(Ok(agreed)) if agreed == difference => Some(Ok(agreed)),
                _ => Some(Err(())),
            }
        };
        for section in theirs.sections().filter(allocated) {
            let Ok(name) = section.name() else { continue };
            let Some(own) = ours.section_by_name(name).filter(allocated) else {
                continue;
            };
            let difference = section.address().wrapping_sub(own.address());
            agree(&mut all, difference);
            if flags(&section) & elf::SHF_EXECINSTR.0 != 0 {
                agree(&mut code, difference);
            }
        }
        match code.or(all) {
            Some(agreed) => agreed.ok(),
            // No section to match (a binary without section headers, elfutils'
            // testfile52-32.noshdrs.so): the first executable segments of both.
            None => {
                let first_code = |elf: &ElfFile| {
                    let loads = elf.segments().loads();
                    loads.iter().find(|s| s.executable).map(|s| s.virt_addr.0)
                };
                Some(first_code(binary)?.wrapping_sub(first_code(self)?))
            }
        }
    }

    /// Bytes of this file mapped into memory (0 when it was given as bytes).
    pub fn mapped_len(&self) -> usize {
        self.bytes.mapped_len()
    }

    /// Whether this file's mapping lost pages because the file shrank (see `elf/sigbus.rs`).
    pub(crate) fn shrunk(&self) -> bool {
        self.bytes.shrunk()
    }

    #[inline]
    pub(crate) fn data(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The contents of the section named `name` (e.g. `.debug_info`), decompressed if it is
    /// `SHF_COMPRESSED` (zlib or zstd) or a legacy `.zdebug_*` section (asking for
    /// `.debug_info` finds `.zdebug_info` too). `Ok(None)` when the file has no such section;
    /// a `SHT_NOBITS` section (as in a stripped debug file) reads as empty.
    ///
    /// Decompressed sizes are capped at 1 GiB and at 64 times the compressed size, checked
    /// before anything is allocated: a larger stated size is an error naming the file and
    /// the section ("decompression bomb").
    pub fn section_data(&self, name: &str) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self.section_contents(name)?.map(|contents| match contents {
            // The range was checked against the file's length by `section_contents`.
            SectionContents::InFile(range) => {
                Cow::Borrowed(self.data().get(range).unwrap_or_default())
            }
            SectionContents::Owned(bytes) => Cow::Owned(bytes),
        }))
    }

    /// Like [`ElfFile::section_data`], but says where the bytes are instead of borrowing
    /// them, so that a reader can keep the file (in an `Arc`) and a range of it.
    ///
    /// In a relocatable file (see [`ElfFile::relocatable_sections`]) the relocations that
    /// target the section are applied (to a copy): DWARF there is only complete once they
    /// are. An unsupported or broken relocation is an error naming the section.
    pub fn section_contents(&self, name: &str) -> Result<Option<SectionContents>> {
        use object::ObjectSection;
        let file = self.object_file()?;
        let Some(section) = section_or_zdebug_twin(&file, name) else {
            return Ok(None);
        };
        let contents = self.unrelocated_contents(name, &section)?;
        if self.header.file_type != elf::ET_REL.0 || section.relocations().next().is_none() {
            return Ok(Some(contents));
        }
        let mut bytes = match contents {
            SectionContents::InFile(range) => self.bytes_in(range).to_vec(),
            SectionContents::Owned(bytes) => bytes,
        };
        relocatable::apply_relocations(
            &file,
            &self.relocatable,
            &section,
            &mut bytes,
            self.header.big_endian,
        )
        .map_err(|problem| Error::MalformedElf {
            path: self.path.clone(),
            what: format!("section {name}: {problem}"),
        })?;
        Ok(Some(SectionContents::Owned(bytes)))
    }

    /// The section's bytes as the file holds them, decompressed.
    fn unrelocated_contents(
        &self,
        name: &str,
        section: &object::Section<'_, '_>,
    ) -> Result<SectionContents> {
        use object::{CompressionFormat, ObjectSection};
        let malformed = |what: String| Error::MalformedElf {
            path: self.path.clone(),
            what,
        };
        let in_file = |offset: u64, size: u64| {
            usize::try_from(offset)
                .ok()
                .zip(usize::try_from(size).ok())
                .and_then(|(start, len)| Some(start..start.checked_add(len)?))
                .filter(|range| range.end <= self.data().len())
                .ok_or_else(|| {
                    malformed(format!(
                        "section {name}: {size} bytes at offset {offset:#x} are past the end \
                         of the file ({} bytes)",
                        self.data().len()
                    ))
                })
        };
        // Where the (compressed) bytes are: a compression header is read from the file's
        // bytes, which hold it even for a section read in part (`partial.rs`, `HEAD`).
        let compressed = section
            .compressed_file_range()
            .map_err(|e| malformed(format!("section {name}: {e}")))?;
        if compressed.format == CompressionFormat::None {
            // `SHT_NOBITS` (a stripped debug file's sections) has no bytes in the file.
            let Some((offset, size)) = section.file_range() else {
                return Ok(SectionContents::InFile(0..0));
            };
            let range = in_file(offset, size)?;
            return Ok(match &self.deferred {
                Some(deferred) if deferred.overlaps(&range) => {
                    SectionContents::Owned(deferred.read(&self.path, range)?)
                }
                _ => SectionContents::InFile(range),
            });
        }
        let range = in_file(compressed.offset, compressed.compressed_size)?;
        let data = match &self.deferred {
            Some(deferred) if deferred.overlaps(&range) => {
                Cow::Owned(deferred.read(&self.path, range)?)
            }
            _ => Cow::Borrowed(self.bytes_in(range)),
        };
        let limit = decompression_cap(data.len());
        if compressed.uncompressed_size > limit {
            return Err(malformed(format!(
                "section {name}: decompression bomb: {} compressed bytes claim to expand \
                 to {} bytes, above the limit of {limit} (at most {} bytes and {}x)",
                data.len(),
                compressed.uncompressed_size,
                MAX_DECOMPRESSED_SECTION,
                MAX_DECOMPRESSION_RATIO,
            )));
        }
        // Within the cap just checked, which is below usize::MAX.
        let size = usize::try_from(compressed.uncompressed_size).unwrap_or(usize::MAX);
        compressed::decompress_section(compressed.format, &data, size)
            .map(SectionContents::Owned)
            .map_err(|source| Error::Decompress {
                path: self.path.clone(),
                section: Some(name.to_string()),
                source,
            })
    }

    /// The file range of the section `name` when its bytes were left out of a file read in
    /// part (`partial.rs`) and are not compressed, so that a reader can read pieces of it
    /// with [`ElfFile::read_range`]; `None` otherwise (read it with
    /// [`ElfFile::section_contents`]).
    pub(crate) fn section_left_out(&self, name: &str) -> Option<Range<usize>> {
        use object::{Object, ObjectSection};
        let deferred = self.deferred.as_ref()?;
        let file = self.object_file().ok()?;
        let section = file.section_by_name(name)?;
        let compressed = section.compressed_file_range().ok()?;
        if compressed.format != object::CompressionFormat::None {
            return None;
        }
        let (offset, size) = section.file_range()?;
        let start = usize::try_from(offset).ok()?;
        let range = start..start.checked_add(usize::try_from(size).ok()?)?;
        (range.end <= self.data().len() && deferred.overlaps(&range)).then_some(range)
    }

    /// A copy of `range` of the file (which must lie inside it), read from the file where a
    /// file read in part left it out.
    pub(crate) fn read_range(&self, range: Range<usize>) -> Result<Vec<u8>> {
        match &self.deferred {
            Some(deferred) if deferred.overlaps(&range) => deferred.read(&self.path, range),
            _ => Ok(self.bytes_in(range).to_vec()),
        }
    }

    /// The ranges left out of a file read in part (`partial.rs`); `None` for a file read
    /// or mapped whole.
    #[cfg(test)]
    pub(crate) fn deferred(&self) -> Option<&Deferred> {
        self.deferred.as_ref()
    }

    /// The CRC32 of the whole file (as `.gnu_debuglink` states it of a debug file), parts
    /// read in part included (read again from the file, and not kept).
    pub(crate) fn whole_file_crc32(&self) -> Result<u32> {
        let data = self.data();
        let Some(deferred) = &self.deferred else {
            return Ok(zlib_rs::crc32::crc32(0, data));
        };
        let mut crc = 0;
        let mut at = 0;
        let mut chunk = vec![0; 1 << 20];
        for range in deferred.ranges() {
            crc = zlib_rs::crc32::crc32(crc, data.get(at..range.start).unwrap_or_default());
            let mut offset = range.start;
            while offset < range.end {
                let len = chunk.len().min(range.end - offset);
                // `len` is at most the chunk's length.
                let part = &mut chunk[..len];
                deferred.read_into(&self.path, offset as u64, part)?;
                crc = zlib_rs::crc32::crc32(crc, part);
                offset += len;
            }
            at = range.end;
        }
        Ok(zlib_rs::crc32::crc32(
            crc,
            data.get(at..).unwrap_or_default(),
        ))
    }

    /// The virtual address (`sh_addr`) of the section named `name`: CFI's pointer encodings
    /// are relative to the addresses of `.eh_frame`, `.eh_frame_hdr` and `.text`.
    /// `Ok(None)` when the file has no such section.
    pub fn section_address(&self, name: &str) -> Result<Option<VirtAddr>> {
        use object::ObjectSection;
        Ok(section_or_zdebug_twin(&self.object_file()?, name)
            .map(|section| VirtAddr(section.address())))
    }

    /// Whether the file has a section `name` (or its `.zdebug_*` twin) with bytes in the file:
    /// `false` for a missing section and for an `SHT_NOBITS` one (a stripped debug file keeps
    /// such headers). Nothing is decompressed.
    pub fn has_section_bytes(&self, name: &str) -> Result<bool> {
        use object::ObjectSection;
        Ok(section_or_zdebug_twin(&self.object_file()?, name)
            .and_then(|section| section.file_range())
            .is_some_and(|(_, size)| size > 0))
    }

    /// The file as the object crate's format-independent reader sees it (ELF32 or ELF64,
    /// either byte order), for sections and symbols by name; its section headers are
    /// checked on every call (they are few, and these lookups are rare).
    fn object_file(&self) -> Result<object::File<'_>> {
        object::File::parse(self.data()).map_err(|e| Error::MalformedElf {
            path: self.path.clone(),
            what: format!("section headers: {e}"),
        })
    }

    /// The bytes of `range`, a range [`ElfFile::section_contents`] returned (empty if it is
    /// not inside the file).
    pub fn bytes_in(&self, range: Range<usize>) -> &[u8] {
        self.data().get(range).unwrap_or_default()
    }

    /// Builds the symbol index on first use; later calls return the same index or error.
    fn symbol_tables(&self) -> Result<&SymbolTables> {
        let built = self.symbols.get_or_init(|| {
            let data = self.data();
            let layout = (self.header.file_type == elf::ET_REL.0).then_some(&self.relocatable[..]);
            if self.header.is_64 {
                build_symbol_tables::<elf::FileHeader64<Endianness>>(&self.path, data, layout)
            } else {
                build_symbol_tables::<elf::FileHeader32<Endianness>>(&self.path, data, layout)
            }
        });
        built.as_ref().map_err(Error::clone_for_cache)
    }

    /// Builds the symbol index now, if it has not been built yet, and reports whether that
    /// worked. Lookups do this themselves; call it to pay the cost at a time of your choosing.
    pub fn index_symbols(&self) -> Result<()> {
        self.symbol_tables().map(|_| ())
    }

    /// How many code and data symbols the index holds (after merging aliases).
    pub fn symbol_count(&self) -> Result<(usize, usize)> {
        let tables = self.symbol_tables()?;
        Ok((tables.code.len(), tables.data.len()))
    }

    /// Heap bytes of the symbol index (beside the mapping), building it if needed.
    pub fn index_heap_bytes(&self) -> Result<usize> {
        let tables = self.symbol_tables()?;
        Ok(tables.heap_bytes())
    }

    /// The symbol covering `addr`: a function if one covers it, else a data object.
    /// `Ok(None)` when no symbol covers it; `Err` only when the symbol tables are malformed.
    pub fn find_symbol(&self, addr: VirtAddr) -> Result<Option<ElfSymbol<'_>>> {
        let tables = self.symbol_tables()?;
        Ok(self
            .find_symbol_id(addr)?
            .map(|(id, _)| self.symbol_at(tables, id.kind, id.index)))
    }

    /// Like [`ElfFile::find_symbol`], but only the symbol's id and start: the cheapest lookup,
    /// touching no name. Resolve the id later with [`ElfFile::symbol_by_id`].
    pub fn find_symbol_id(&self, addr: VirtAddr) -> Result<Option<(SymbolId, VirtAddr)>> {
        Ok(self.find_symbol_span(addr)?.symbol)
    }

    /// [`ElfFile::find_symbol_id`]'s answer for `addr` and the addresses around it that get
    /// the same answer: a batch walked in address order looks up once per such run.
    pub(crate) fn find_symbol_span(&self, addr: VirtAddr) -> Result<SymbolSpan> {
        self.find_symbol_span_from(addr, (None, None))
    }

    /// [`ElfFile::find_symbol_span`], searching the code and data indexes forward from
    /// `from` ([`SymbolSpan::from`] of a lower address).
    fn find_symbol_span_from(
        &self,
        addr: VirtAddr,
        from: (Option<u32>, Option<u32>),
    ) -> Result<SymbolSpan> {
        if self.address_bias != 0 {
            return self.find_symbol_span_biased(addr, from);
        }
        self.find_symbol_span_unbiased(addr, from)
    }

    /// [`ElfFile::find_symbol_span_from`] of a file with an address bias: looked up at the
    /// file's own address, answered at the biased one (`from` is a place in the index, the
    /// same either way).
    fn find_symbol_span_biased(
        &self,
        addr: VirtAddr,
        from: (Option<u32>, Option<u32>),
    ) -> Result<SymbolSpan> {
        let bias = self.address_bias;
        let found = self.find_symbol_span_unbiased(VirtAddr(addr.0.wrapping_sub(bias)), from)?;
        let (start, end) = (
            found.span.start.wrapping_add(bias),
            found.span.end.wrapping_add(bias),
        );
        // A span moved across the top of the address space holds just the address asked.
        let span = if start <= addr.0 && addr.0 < end {
            start..end
        } else {
            addr.0..addr.0.saturating_add(1)
        };
        Ok(SymbolSpan {
            symbol: found
                .symbol
                .map(|(id, start)| (id, VirtAddr(start.0.wrapping_add(bias)))),
            span,
            from: found.from,
        })
    }

    fn find_symbol_span_unbiased(
        &self,
        addr: VirtAddr,
        from: (Option<u32>, Option<u32>),
    ) -> Result<SymbolSpan> {
        let tables = self.symbol_tables()?;
        let code = tables.code.find_span_from(addr.0, from.0);
        let code_below = code.below;
        let mut data_below = from.1;
        let (kind, table, found) = match code.index {
            Some(_) => (SymbolKind::Function, &tables.code, code),
            None => {
                // No function covers `addr`: a data object may, within the functions' gap.
                let data = tables.data.find_span_from(addr.0, from.1);
                data_below = data.below;
                let span = code.span.start.max(data.span.start)..code.span.end.min(data.span.end);
                let found = FoundSpan { span, ..data };
                (SymbolKind::Data, &tables.data, found)
            }
        };
        Ok(SymbolSpan {
            from: (code_below, data_below),
            symbol: found
                .index
                .map(|index| (SymbolId { kind, index }, VirtAddr(table.addr(index)))),
            span: found.span,
        })
    }

    /// Like [`ElfFile::find_symbol`] for the byte at `offset` in the file. `Ok(None)` also
    /// when no loadable segment holds that byte.
    pub fn find_symbol_at_file_offset(&self, offset: FileOffset) -> Result<Option<ElfSymbol<'_>>> {
        match self.segments.file_offset_to_virt(offset) {
            Some(addr) => self.find_symbol(VirtAddr(addr.0.wrapping_add(self.address_bias))),
            None => Ok(None),
        }
    }

    /// The value of the first symbol named `name` in `.symtab`, else in `.dynsym`, of any
    /// type: also the `NOTYPE` symbols linker scripts define (`_stext`, `_text`), which the
    /// address index leaves out. `Ok(None)` if no symbol has that name. A linear scan of
    /// the tables, for the few lookups by name there are (a kernel's KASLR anchor).
    pub fn symbol_value_by_name(&self, name: &str) -> Result<Option<VirtAddr>> {
        use object::{Object, ObjectSymbol};
        let file = self.object_file()?;
        let found = file
            .symbols()
            .chain(file.dynamic_symbols())
            .find(|symbol| symbol.name() == Ok(name) && !symbol.is_undefined())
            .map(|symbol| VirtAddr(symbol.address()));
        Ok(found)
    }

    /// Where the code holding `addr` starts, as far as the file says: the start of the code
    /// symbol covering it, else the nearest start of `.init`, `.fini` or `.text` at or below
    /// it (a stripped file's `_fini` has no symbol left). For the unwinder, which reads the
    /// short prologue of code without CFI from there (`unwind/prologue.rs`).
    pub(crate) fn code_start(&self, addr: VirtAddr) -> Option<VirtAddr> {
        if let Ok(Some(symbol)) = self.find_symbol(addr) {
            if symbol.kind == SymbolKind::Function {
                return Some(symbol.addr);
            }
        }
        [".init", ".fini", ".text"]
            .iter()
            .filter_map(|name| self.section_address(name).ok().flatten())
            .filter(|start| start.0 <= addr.0)
            .max()
    }

    /// Up to `len` bytes of the file from virtual address `addr` (fewer where the file
    /// ends; none outside every segment, nor when a part left out of a file read in part
    /// cannot be read again: logged).
    pub(crate) fn code_at(&self, addr: VirtAddr, len: usize) -> Cow<'_, [u8]> {
        let data = self.data();
        let Some(range) = self
            .segments()
            .virt_to_file_offset(addr)
            .and_then(|offset| usize::try_from(offset.0).ok())
            .filter(|&offset| offset <= data.len())
            .map(|offset| offset..offset.saturating_add(len).min(data.len()))
        else {
            return Cow::Borrowed(&[]);
        };
        match &self.deferred {
            Some(deferred) if deferred.overlaps(&range) => match deferred.read(&self.path, range) {
                Ok(bytes) => Cow::Owned(bytes),
                Err(e) => {
                    log::debug!("{e}");
                    Cow::Borrowed(&[])
                }
            },
            _ => Cow::Borrowed(self.bytes_in(range)),
        }
    }

    /// Fills the start of `buf` from `offset` of the file, reading what a file read in part
    /// left out: the number of bytes copied (fewer where the file ends), `None` when
    /// `offset` is past the end or a part left out cannot be read again (logged).
    pub(crate) fn copy_at(&self, offset: usize, buf: &mut [u8]) -> Option<usize> {
        let data = self.data();
        let n = buf.len().min(data.len().checked_sub(offset)?);
        let range = offset..offset + n;
        let part = buf.get_mut(..n)?;
        match &self.deferred {
            Some(deferred) if deferred.overlaps(&range) => {
                if let Err(e) = deferred.read_into(&self.path, offset as u64, part) {
                    log::debug!("{e}");
                    return None;
                }
            }
            _ => part.copy_from_slice(data.get(range)?),
        }
        Some(n)
    }

    /// The symbol an id from an earlier lookup refers to.
    pub fn symbol_by_id(&self, id: SymbolId) -> Result<Option<ElfSymbol<'_>>> {
        Ok(self
            .symbol_spans(id)?
            .map(|spans| self.symbol_of_spans(&spans)))
    }

    /// Where the symbol with this id keeps its name and version, without reading either
    /// (except to measure a name too long for the index, or a `.symtab` version): what a
    /// batch keeps per distinct symbol, to hand out names later with
    /// [`ElfFile::name_bytes`] and [`ElfFile::name_str`]. `Ok(None)` for an id that is not
    /// this file's.
    pub(crate) fn symbol_spans(&self, id: SymbolId) -> Result<Option<SymbolSpans>> {
        let tables = self.symbol_tables()?;
        let len = match id.kind {
            SymbolKind::Function => tables.code.len(),
            SymbolKind::Data => tables.data.len(),
        };
        if (id.index as usize) < len {
            Ok(Some(self.spans_at(tables, id.kind, id.index)))
        } else {
            Ok(None)
        }
    }

    /// The bytes a [`NameSpan`] of this file's symbols covers (empty for a span of another
    /// file that does not fit this one).
    #[inline]
    pub(crate) fn name_bytes(&self, span: NameSpan) -> &[u8] {
        let bytes = if span.synthetic {
            match self.symbols.get() {
                Some(Ok(tables)) => tables.synthetic_names.as_slice(),
                _ => &[],
            }
        } else {
            self.data()
        };
        bytes
            .get(span.start..span.start.saturating_add(span.len as usize))
            .unwrap_or_default()
    }

    /// [`ElfFile::name_bytes`] as text, if the index builder found the name to be UTF-8.
    #[inline]
    pub(crate) fn name_str(&self, span: NameSpan) -> Option<&str> {
        if !span.utf8 {
            return None;
        }
        let bytes = self.name_bytes(span);
        if self.bytes.shrunk() {
            // The file shrank under its mapping: zeros may have cut a character (sigbus.rs).
            std::str::from_utf8(bytes).ok()
        } else {
            Some(utf8_checked_at_index_time(bytes))
        }
    }

    fn spans_at(&self, tables: &SymbolTables, kind: SymbolKind, index: u32) -> SymbolSpans {
        let addr_index = match kind {
            SymbolKind::Function => &tables.code,
            SymbolKind::Data => &tables.data,
        };
        let entry = addr_index.entry(index);
        let data = self.data();
        let (table, synthetic) = match entry.table() {
            NameTable::Symtab => (tables.symtab_strings.clone(), false),
            NameTable::Dynsym => (tables.dynsym_strings.clone(), false),
            NameTable::Synthetic => (0..tables.synthetic_names.len(), true),
        };
        let table_bytes = if synthetic {
            Some(tables.synthetic_names.as_slice())
        } else {
            data.get(table.clone())
        };
        // The builder checked that the name starts inside its table and is NUL-terminated
        // there, and measured it; the empty fallbacks are never taken for an indexed file.
        let table_bytes = table_bytes.unwrap_or_default();
        let start = entry.name_offset();
        let len = match entry.name_len() {
            Some(len) => len,
            None => c_str_in(table_bytes, start).map_or(0, |full| split_version(full).0.len()),
        };
        // Names and versions lie in a string table of at most 4 GiB (checked by the builder).
        let span_of = |start_in_table: usize, len: usize, utf8: bool| NameSpan {
            start: table.start + start_in_table,
            len: u32::try_from(len).unwrap_or(0),
            synthetic,
            utf8,
        };
        // The whole name was validated; the part before '@' (ASCII) is valid too.
        let name = span_of(start, len, entry.name_is_utf8());
        let (version, version_hidden) = match entry.table() {
            NameTable::Symtab => {
                // The version follows the name after '@' or '@@'.
                let skip = match entry.version_suffix() {
                    VersionSuffix::None => None,
                    VersionSuffix::Hidden => Some(1),
                    VersionSuffix::Default => Some(2),
                };
                match skip {
                    Some(skip) => {
                        let at = start + len + skip;
                        let version = c_str_in(table_bytes, at)
                            .map(|v| span_of(at, v.len(), std::str::from_utf8(v).is_ok()));
                        (version, skip == 1)
                    }
                    None => (None, false),
                }
            }
            NameTable::Dynsym => match tables.dynsym_version(kind, index, entry) {
                Some((range, hidden)) => {
                    let version = data.get(range.clone()).map(|v| NameSpan {
                        start: range.start,
                        len: u32::try_from(v.len()).unwrap_or(0),
                        synthetic: false,
                        utf8: std::str::from_utf8(v).is_ok(),
                    });
                    (version, hidden)
                }
                None => (None, false),
            },
            NameTable::Synthetic => (None, false),
        };
        SymbolSpans {
            name,
            version,
            version_hidden,
            addr: VirtAddr(addr_index.addr(index).wrapping_add(self.address_bias)),
            size: entry.stated_size(),
            kind,
            origin: match entry.table() {
                NameTable::Symtab => SymbolOrigin::Symtab,
                NameTable::Dynsym => SymbolOrigin::Dynsym,
                NameTable::Synthetic => SymbolOrigin::Plt,
            },
            id: SymbolId { kind, index },
        }
    }

    fn symbol_at<'a>(
        &'a self,
        tables: &'a SymbolTables,
        kind: SymbolKind,
        index: u32,
    ) -> ElfSymbol<'a> {
        self.symbol_of_spans(&self.spans_at(tables, kind, index))
    }

    /// The symbol whose name and version `spans` locate in this file.
    pub(crate) fn symbol_of_spans(&self, spans: &SymbolSpans) -> ElfSymbol<'_> {
        ElfSymbol {
            name: self.name_bytes(spans.name),
            name_str: self.name_str(spans.name),
            version: spans.version.map(|v| self.name_bytes(v)),
            version_hidden: spans.version_hidden,
            addr: spans.addr,
            size: spans.size,
            kind: spans.kind,
            origin: spans.origin,
            id: spans.id,
        }
    }
}

/// `bytes` as `&str`, without checking again: the index builder ran `str::from_utf8` on
/// exactly these bytes (and set the entry's UTF-8 flag only if it passed). Owned bytes are
/// immutable, and a mapping is read-only and private; what can still change a mapping's
/// bytes is its file shrinking (the `SIGBUS` handler then maps zeros, and marks the
/// mapping, whose names the caller checks again) or being rewritten in place (the residual
/// ARCHITECTURE.md states under "SIGBUS").
fn utf8_checked_at_index_time(bytes: &[u8]) -> &str {
    // SAFETY: see above; validated by `std::str::from_utf8` when the index was built.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

/// `bytes` of `path`, decompressed if the file is compressed whole (see [`ElfFile::open`]).
fn decompressed(path: &Path, bytes: FileBytes) -> Result<FileBytes> {
    let Some(format) = Compression::of(bytes.as_slice()) else {
        return Ok(bytes);
    };
    let data = bytes.as_slice();
    let whole =
        compressed::decompress(format, data, decompression_cap(data.len())).map_err(|source| {
            Error::Decompress {
                path: path.to_path_buf(),
                section: None,
                source,
            }
        })?;
    Ok(FileBytes::Owned(whole.into_boxed_slice()))
}

/// The largest file [`ElfFile::from_file`] reads into memory (1 GiB, the cap on decompressed
/// sections too).
pub const MAX_READ_FILE_BYTES: u64 = 1 << 30;

/// The largest size a compressed section may decompress to (1 GiB).
pub(crate) const MAX_DECOMPRESSED_SECTION: u64 = 1 << 30;

/// The largest ratio of decompressed to compressed size accepted. DWARF compresses about
/// 3-10x with zlib; the cap leaves room for very repetitive sections.
pub(crate) const MAX_DECOMPRESSION_RATIO: u64 = 64;

/// The most bytes `compressed_len` compressed bytes may expand to: a section or a whole
/// file ([`MAX_DECOMPRESSED_SECTION`], [`MAX_DECOMPRESSION_RATIO`]).
/// The section `name`, or for a `.debug_*` name its legacy GNU-compressed twin `.zdebug_*`
/// (object finds the twin only with its `compression` feature, which we leave off: it would
/// build flate2's default inflater beside the zlib-rs one `compressed.rs` uses).
fn section_or_zdebug_twin<'data, 'file>(
    file: &'file object::File<'data>,
    name: &str,
) -> Option<object::Section<'data, 'file>> {
    use object::Object;
    file.section_by_name(name).or_else(|| {
        let rest = name.strip_prefix(".debug_")?;
        file.section_by_name(&format!(".zdebug_{rest}"))
    })
}

fn decompression_cap(compressed_len: usize) -> u64 {
    MAX_DECOMPRESSED_SECTION.min((compressed_len as u64).saturating_mul(MAX_DECOMPRESSION_RATIO))
}

/// Offset of the class byte in `e_ident`.
const EI_CLASS: usize = 4;
// Class byte values: 1 is ELFCLASS32, 2 is ELFCLASS64.

/// Refuses a file that does not start with the ELF magic, saying why in words that quote
/// nothing of the file: its bytes may be anything (a file a container planted, a secret), and
/// errors end up in logs. A linker script is recognized by its own markers.
fn check_magic(path: &Path, data: &[u8]) -> Result<()> {
    if data.starts_with(ELF_MAGIC) {
        return Ok(());
    }
    let reason = if data.is_empty() {
        "the file is empty".to_string()
    } else if data.len() < ELF_MAGIC.len() {
        format!(
            "the file is only {} bytes long, shorter than the ELF magic",
            data.len()
        )
    } else if let Some(marker) = linker_script_marker(data) {
        format!("a linker script: it starts with {marker}")
    } else {
        "no ELF magic at its start".to_string()
    };
    Err(Error::NotElf {
        path: path.to_path_buf(),
        reason,
    })
}

/// The four bytes every ELF file starts with.
const ELF_MAGIC: &[u8] = b"\x7fELF";

/// What shows that `data` is a GNU ld linker script (`libc.so` on glibc systems, the
/// `libLLVM-N.so` of Rust toolchains), if it is one: after blank space, the `/* GNU ld script`
/// comment, or an `INPUT(` or `GROUP(` command (blank space allowed before the parenthesis).
/// The answer is a description of ours, never bytes of the file.
fn linker_script_marker(data: &[u8]) -> Option<&'static str> {
    let head = &data[..data.len().min(LINKER_SCRIPT_PROBE)];
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let head = &head[start..];
    if head.starts_with(b"/* GNU ld script") {
        return Some("the comment \"GNU ld script\"");
    }
    let command = |name: &str| {
        head.strip_prefix(name.as_bytes()).is_some_and(|rest| {
            rest.iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|&b| b == b'(')
        })
    };
    if command("INPUT") {
        Some("an INPUT command")
    } else if command("GROUP") {
        Some("a GROUP command")
    } else {
        None
    }
}

/// How many leading bytes [`linker_script_marker`] looks at.
const LINKER_SCRIPT_PROBE: usize = 256;

type Headers = (
    ElfHeaderInfo,
    Segments,
    Vec<RelocatableSection>,
    Option<Range<usize>>,
);

fn read_headers<Elf: FileHeader<Endian = Endianness>>(path: &Path, data: &[u8]) -> Result<Headers> {
    let malformed = |what: &str, e: object::Error| Error::MalformedElf {
        path: path.to_path_buf(),
        what: format!("{what}: {e}"),
    };
    let raw = Elf::parse(data).map_err(|e| malformed("ELF header", e))?;
    let endian = raw.endian().map_err(|e| malformed("ELF header", e))?;
    let header = ElfHeaderInfo {
        is_64: raw.is_class_64(),
        big_endian: endian == Endianness::Big,
        machine: raw.e_machine(endian).0,
        file_type: raw.e_type(endian).0,
    };
    let program_headers = raw
        .program_headers(endian, data)
        .map_err(|e| malformed("program headers", e))?;
    if header.file_type == elf::ET_REL.0 {
        // No program headers: the section layout stands in for them.
        let sections = raw
            .sections(endian, data)
            .map_err(|e| malformed("section headers", e))?;
        let placed = relocatable::layout(endian, data, &sections);
        let loads = placed
            .iter()
            .map(|section| LoadSegment {
                file_offset: FileOffset(section.file_range.map_or(0, |(offset, _)| offset)),
                file_size: section.file_range.map_or(0, |(_, len)| len),
                virt_addr: section.addr,
                mem_size: section.size,
                executable: section.executable,
            })
            .collect();
        let build_id = build_id_range(path, raw, endian, data, program_headers);
        return Ok((header, Segments::new(loads), placed, build_id));
    }
    let loads = program_headers
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .map(|ph| LoadSegment {
            file_offset: FileOffset(ph.p_offset(endian).into()),
            file_size: ph.p_filesz(endian).into(),
            virt_addr: VirtAddr(ph.p_vaddr(endian).into()),
            mem_size: ph.p_memsz(endian).into(),
            executable: ph.p_flags(endian).0 & elf::PF_X.0 != 0,
        })
        .collect();
    let build_id = build_id_range(path, raw, endian, data, program_headers);
    Ok((header, Segments::new(loads), Vec::new(), build_id))
}

/// Where the build-id is in `data`; `None` without one or when the note is unreadable.
fn build_id_range<Elf: FileHeader<Endian = Endianness>>(
    path: &Path,
    raw: &Elf,
    endian: Endianness,
    data: &[u8],
    program_headers: &[Elf::ProgramHeader],
) -> Option<Range<usize>> {
    match find_build_id(raw, endian, data, program_headers) {
        Ok(id) => id.map(|id| range_of(data, id)),
        Err(e) => {
            // A broken note does not make the symbols unusable; say why the id is missing.
            log::debug!("{}: ignoring unreadable build-id note: {e}", path.display());
            None
        }
    }
}

/// The `NT_GNU_BUILD_ID` note's descriptor, from the note sections, or from `PT_NOTE`
/// segments when the file has no section headers (as in a core dump or a stripped vDSO).
fn find_build_id<'data, Elf: FileHeader<Endian = Endianness>>(
    raw: &Elf,
    endian: Endianness,
    data: &'data [u8],
    program_headers: &'data [Elf::ProgramHeader],
) -> object::Result<Option<&'data [u8]>> {
    let sections = raw.sections(endian, data)?;
    let mut note_iters = Vec::new();
    if sections.is_empty() {
        for ph in program_headers {
            note_iters.extend(ph.notes(endian, data)?);
        }
    } else {
        for section in sections.iter() {
            note_iters.extend(section.notes(endian, data)?);
        }
    }
    for mut notes in note_iters {
        while let Some(note) = notes.next()? {
            if note.name() == elf::ELF_NOTE_GNU && note.n_type(endian) == elf::NT_GNU_BUILD_ID {
                return Ok(Some(note.desc()));
            }
        }
    }
    Ok(None)
}

/// Where `part` (a slice borrowed from `data`) lies inside `data`.
pub(crate) fn range_of(data: &[u8], part: &[u8]) -> Range<usize> {
    let start = (part.as_ptr() as usize).saturating_sub(data.as_ptr() as usize);
    start..start + part.len()
}

/// Where the `.gnu_debuglink` and `.gnu_debugaltlink` contents lie in the file.
#[derive(Default)]
struct DebugLinks {
    /// File name and CRC32.
    debuglink: Option<(Range<usize>, u32)>,
    /// Path and build-id.
    debugaltlink: Option<(Range<usize>, Range<usize>)>,
}

/// Reads `.gnu_debuglink` (NUL-terminated name, padding to 4, CRC32 in the file's byte order)
/// and `.gnu_debugaltlink` (NUL-terminated path, then the build-id). A malformed section is
/// ignored with a `log::debug!`: it only means no debug file is found through it.
fn read_debug_links<Elf: FileHeader<Endian = Endianness>>(path: &Path, data: &[u8]) -> DebugLinks {
    let mut links = DebugLinks::default();
    let Ok(raw) = Elf::parse(data) else {
        return links;
    };
    let Ok(endian) = raw.endian() else {
        return links;
    };
    let sections = match raw.sections(endian, data) {
        Ok(sections) => sections,
        Err(e) => {
            log::debug!("{}: no debug links: section headers: {e}", path.display());
            return links;
        }
    };
    let section = |name: &[u8]| -> Option<&[u8]> {
        let (_, shdr) = sections.section_by_name(endian, name)?;
        match shdr.data(endian, data) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                log::debug!(
                    "{}: ignoring unreadable {}: {e}",
                    path.display(),
                    String::from_utf8_lossy(name)
                );
                None
            }
        }
    };
    if let Some(bytes) = section(b".gnu_debuglink") {
        let name = c_str_in(bytes, 0).filter(|name| !name.is_empty());
        let crc_at = name.map(|name| (name.len() + 1).next_multiple_of(4));
        let crc = crc_at
            .and_then(|at| bytes.get(at..at.checked_add(4)?))
            .and_then(|b| <[u8; 4]>::try_from(b).ok());
        match (name, crc) {
            (Some(name), Some(crc)) => {
                let crc = match endian {
                    Endianness::Little => u32::from_le_bytes(crc),
                    Endianness::Big => u32::from_be_bytes(crc),
                };
                links.debuglink = Some((range_of(data, name), crc));
            }
            _ => log::debug!(
                "{}: ignoring malformed .gnu_debuglink ({} bytes: no name, or no CRC after it)",
                path.display(),
                bytes.len()
            ),
        }
    }
    if let Some(bytes) = section(b".gnu_debugaltlink") {
        match c_str_in(bytes, 0).filter(|name| !name.is_empty()) {
            Some(name) if bytes.len() > name.len() + 1 => {
                let build_id = &bytes[name.len() + 1..];
                links.debugaltlink = Some((range_of(data, name), range_of(data, build_id)));
            }
            _ => log::debug!(
                "{}: ignoring malformed .gnu_debugaltlink ({} bytes: no path, or no build-id after it)",
                path.display(),
                bytes.len()
            ),
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(data: &[u8]) -> String {
        match check_magic(Path::new("f"), data) {
            Err(Error::NotElf { reason, .. }) => reason,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn not_elf_says_why_without_quoting_the_file() {
        assert_eq!(reason(b""), "the file is empty");
        assert!(reason(b"\x7fEL").contains("only 3 bytes"));
        let secret = b"root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n";
        let said = reason(secret);
        assert_eq!(said, "no ELF magic at its start");
        for script in [
            &b"/* GNU ld script\n   Use the shared library */\nGROUP ( /lib/libc.so.6 )\n"[..],
            b"INPUT(libLLVM.so.22.1-rust-1.95.0-stable)\n",
            b"\n  GROUP ( a.so )",
            b"INPUT (x)",
        ] {
            assert!(reason(script).starts_with("a linker script"), "{script:?}");
        }
        // Words that merely start like a command are not a script.
        assert_eq!(reason(b"INPUTS(x)"), "no ELF magic at its start");
        assert_eq!(reason(b"GROUP x"), "no ELF magic at its start");
        assert!(check_magic(Path::new("f"), b"\x7fELF\x02").is_ok());
    }
}
