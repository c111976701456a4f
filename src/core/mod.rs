//! ELF core files (`ET_CORE`): the kernel's `core`, `systemd-coredump`'s zstd-compressed
//! `.zst` (or xz), `gcore`'s snapshot of a live process. [`CoreFile`] gives:
//!
//! - the threads ([`CoreThread`]: tid, general registers from `NT_PRSTATUS`, aarch64's
//!   `NT_ARM_PAC_MASK`), the crashing thread first as the kernel writes it;
//! - the process ([`CoreProcess`]: `NT_PRPSINFO`), the signal that ended it ([`CoreSignal`]:
//!   `NT_SIGINFO`, with the fault address), the auxiliary vector (`NT_AUXV`: entry point,
//!   vDSO base);
//! - the file mappings ([`CoreMapping`]: `NT_FILE`), each file matched to one on this machine
//!   by its build-id ([`MappedFile`]: under a sysroot if given; by build-id in the debug dirs
//!   when the file at the path is another build; else a mismatch error, never the wrong file);
//! - the memory ([`CoreFile::read`]): the `PT_LOAD` contents; pages the kernel did not dump
//!   (file-backed and unmodified) from the mapped file, once its build-id was checked;
//!   anything else is not in the core ([`CoreFile::why_unreadable`] says why).
//!
//! The unwinder takes a core's memory and modules in one call
//! ([`crate::unwind::Modules::from_core`]; `CoreFile` is a [`crate::unwind::Memory`]); the
//! symbolizer takes its addresses through [`crate::Source::Core`].
//!
//! A core is a file the caller names: mapped as such (see ARCHITECTURE.md, "Trust"), but
//! parsed as hostile: every count, size and offset is checked (`notes.rs`), a truncated core
//! keeps what it holds and says what it lost ([`CoreFile::problems`]).

mod files;
mod notes;

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::read::elf::{FileHeader, ProgramHeader};
use object::{elf, Endianness};

pub use files::{MappedFile, Matched};
pub use notes::{signal_name, CoreProcess, CoreRegisters, CoreSignal, CoreThread};

use crate::addr::{AbsAddr, FileOffset};
use crate::debuginfo::DebugFinder;
use crate::elf::compressed::{self, Compression};
use crate::elf::{ElfFile, FileBytes};
use crate::error::{Error, Result};
use crate::process::file_offset_in;
use files::{build_id_in_first_page, Lookup};
use notes::{Notes, EM_AARCH64, EM_X86_64};

/// `AT_PHDR`: where the program's program headers are in memory.
const AT_PHDR: u64 = 3;
/// `AT_ENTRY`: the program's entry point.
const AT_ENTRY: u64 = 9;
/// `AT_EXECFN`: where the path the program was started by is in memory (a C string).
const AT_EXECFN: u64 = 31;
/// `AT_SYSINFO_EHDR`: the vDSO's ELF header.
const AT_SYSINFO_EHDR: u64 = 33;

/// The largest vDSO image read from a core (they are 8 KiB on x86_64 and aarch64).
const MAX_VDSO_BYTES: u64 = 1 << 20;

/// How a core is opened.
#[derive(Debug, Clone)]
pub struct CoreOptions {
    /// The root the core's paths are under (a core from another machine, or of a process
    /// in a container: its root directory); files are opened confined to it. `None`: the
    /// host's `/`.
    pub sysroot: Option<PathBuf>,
    /// The main executable, when it is not at the path the core names (gdb's and
    /// eu-stack's `-e`); still checked against the core's build-id.
    pub exe: Option<PathBuf>,
    /// Where a file whose build-id differs from the core's is looked for by build-id
    /// ([`DebugFinder::find_by_build_id`]: `<dir>/.build-id/xx/rest`, debuginfod
    /// `executable` when configured). Default: `/usr/lib/debug`.
    pub finder: Option<DebugFinder>,
    /// Match the mapped files at all (default: on). Off, [`CoreFile::files`] is empty and
    /// memory is the core's own bytes only.
    pub open_files: bool,
    /// The most bytes a compressed core may decompress to (default 4 GiB): a larger one is
    /// refused, saying so.
    pub max_decompressed: u64,
}

impl Default for CoreOptions {
    fn default() -> Self {
        CoreOptions {
            sysroot: None,
            exe: None,
            finder: Some(DebugFinder::new(vec![PathBuf::from(
                crate::debuginfo::DEFAULT_DEBUG_DIR,
            )])),
            open_files: true,
            max_decompressed: 4 << 30,
        }
    }
}

/// One file mapping of the core's process (`NT_FILE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreMapping {
    /// The absolute addresses mapped: `start..end`, end exclusive.
    pub range: Range<AbsAddr>,
    /// The file offset mapped at `range.start`.
    pub file_offset: FileOffset,
    /// The path as the process named it.
    pub path: PathBuf,
    /// Index of its file in [`CoreFile::files`] (`None` when files are not opened).
    pub file: Option<usize>,
}

impl CoreMapping {
    /// Whether `addr` lies in this mapping.
    pub fn contains(&self, addr: AbsAddr) -> bool {
        self.range.start <= addr && addr < self.range.end
    }

    /// The offset in the mapped file of the absolute address `addr` (`None` outside the
    /// mapping): [`crate::process::file_offset_in`], as for a live process's mapping.
    pub fn file_offset(&self, addr: AbsAddr) -> Option<FileOffset> {
        file_offset_in(&self.range, self.file_offset, addr)
    }

    /// `range` as raw numbers.
    fn raw_range(&self) -> Range<u64> {
        self.range.start.0..self.range.end.0
    }
}

/// One `PT_LOAD` segment: memory of the process, as much as the core holds.
#[derive(Debug, Clone)]
struct Load {
    /// The addresses the segment covers (`p_vaddr`, `p_memsz`).
    range: Range<u64>,
    /// Where its bytes start in the core.
    offset: usize,
    /// How many bytes from `range.start` the segment says are dumped (`p_filesz`).
    stated: u64,
    /// How many of them the core holds (fewer when the core is truncated).
    held: u64,
}

/// Why an address cannot be read from a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// No segment of the core covers it: it was not mapped.
    Unmapped,
    /// Mapped, but the kernel did not dump it (file-backed, or excluded by
    /// `coredump_filter`), and no verified file supplies it.
    NotDumped,
    /// Dumped, but the core ends before it: the core is truncated.
    Truncated,
}

/// Why an executable does not fit a core's auxiliary vector ([`exe_mappings`]); reported
/// among the core's [`CoreFile::problems`].
#[derive(Debug, thiserror::Error)]
enum ExeMisfit {
    /// Its ELF header or program headers cannot be read.
    #[error("{what}: {source}")]
    Elf {
        what: &'static str,
        source: object::Error,
    },
    #[error("no segment maps its program headers")]
    NoPhdrSegment,
    #[error(
        "loaded with its program headers at {at_phdr:#x}, its entry point would be \
         {its_entry:#x}, not AT_ENTRY {entry:#x}"
    )]
    EntryDiffers {
        at_phdr: u64,
        its_entry: u64,
        entry: u64,
    },
    #[error("a segment at {addr:#x} that cannot be mapped")]
    Unmappable { addr: u64 },
}

/// The mappings of an executable (`data`) loaded so that its program headers are at
/// `at_phdr`: (addresses, file offset) of each `PT_LOAD`'s file contents, page-aligned as
/// the loader maps them. Fails, saying why, when its entry point would not be `entry`.
fn exe_mappings(
    data: &[u8],
    at_phdr: u64,
    entry: u64,
) -> std::result::Result<Vec<(Range<u64>, u64)>, ExeMisfit> {
    const PAGE: u64 = 4096;
    let endian = Endianness::Little;
    let header = elf::FileHeader64::<Endianness>::parse(data).map_err(|source| ExeMisfit::Elf {
        what: "ELF header",
        source,
    })?;
    let headers = header
        .program_headers(endian, data)
        .map_err(|source| ExeMisfit::Elf {
            what: "program headers",
            source,
        })?;
    let phoff = header.e_phoff.get(endian);
    // The program headers' address: PT_PHDR's, else where the segment holding them maps
    // them (static executables have no PT_PHDR).
    let phdr_vaddr = headers
        .iter()
        .find(|ph| ph.p_type(endian) == elf::PT_PHDR)
        .map(|ph| ph.p_vaddr(endian))
        .or_else(|| {
            headers.iter().find_map(|ph| {
                let (offset, filesz) = (ph.p_offset(endian), ph.p_filesz(endian));
                (ph.p_type(endian) == elf::PT_LOAD && offset <= phoff && phoff - offset < filesz)
                    .then(|| ph.p_vaddr(endian).wrapping_add(phoff - offset))
            })
        })
        .ok_or(ExeMisfit::NoPhdrSegment)?;
    let bias = at_phdr.wrapping_sub(phdr_vaddr);
    let its_entry = header.e_entry.get(endian).wrapping_add(bias);
    if its_entry != entry {
        return Err(ExeMisfit::EntryDiffers {
            at_phdr,
            its_entry,
            entry,
        });
    }
    let mut out = Vec::new();
    for ph in headers {
        let (offset, filesz) = (ph.p_offset(endian), ph.p_filesz(endian));
        if ph.p_type(endian) != elf::PT_LOAD || filesz == 0 {
            continue;
        }
        let addr = ph.p_vaddr(endian).wrapping_add(bias);
        let start = addr & !(PAGE - 1);
        let into_page = addr - start;
        let (Some(file_offset), Some(end)) = (
            offset.checked_sub(into_page),
            addr.checked_add(filesz)
                .and_then(|end| end.checked_next_multiple_of(PAGE)),
        ) else {
            return Err(ExeMisfit::Unmappable { addr });
        };
        out.push((start..end, file_offset));
    }
    Ok(out)
}

/// An ELF core file, parsed: see the [module docs](self).
pub struct CoreFile {
    path: PathBuf,
    bytes: FileBytes,
    machine: u16,
    loads: Vec<Load>,
    notes: Notes,
    mappings: Vec<CoreMapping>,
    files: Vec<MappedFile>,
    vdso: Option<(Range<u64>, Arc<ElfFile>)>,
    problems: Vec<String>,
}

impl std::fmt::Debug for CoreFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreFile")
            .field("path", &self.path)
            .field("machine", &self.machine)
            .field("threads", &self.notes.threads.len())
            .field("mappings", &self.mappings.len())
            .finish_non_exhaustive()
    }
}

impl CoreFile {
    /// Opens the core at `path` with the default options ([`CoreOptions`]).
    pub fn open(path: impl AsRef<Path>) -> Result<CoreFile> {
        CoreFile::open_with(path, &CoreOptions::default())
    }

    /// Opens the core at `path`: mapped, or read and decompressed when it is compressed
    /// whole (zstd, xz, gzip; recognized by its magic bytes), at most
    /// [`CoreOptions::max_decompressed`] bytes. Fails naming `path` when it is not a 64-bit
    /// little-endian ELF core of x86_64 or aarch64, or its program headers do not fit.
    pub fn open_with(path: impl AsRef<Path>, options: &CoreOptions) -> Result<CoreFile> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut magic = [0u8; 6];
        let got = File::open(path)
            .and_then(|mut file| file.read(&mut magic))
            .map_err(io)?;
        let bytes = match Compression::of(&magic[..got]) {
            Some(format) => {
                let (mapped, _) = FileBytes::map(path)?;
                let whole =
                    compressed::decompress(format, mapped.as_slice(), options.max_decompressed)
                        .map_err(|source| Error::Decompress {
                            path: path.to_path_buf(),
                            section: None,
                            source,
                        })?;
                FileBytes::Owned(whole.into_boxed_slice())
            }
            None => FileBytes::map(path)?.0,
        };
        CoreFile::from_file_bytes(path.to_path_buf(), bytes, options)
    }

    /// A core already in memory (not compressed); `name` stands for its path in errors.
    pub fn from_bytes(
        name: impl Into<PathBuf>,
        bytes: impl Into<Box<[u8]>>,
        options: &CoreOptions,
    ) -> Result<CoreFile> {
        CoreFile::from_file_bytes(name.into(), FileBytes::Owned(bytes.into()), options)
    }

    fn from_file_bytes(path: PathBuf, bytes: FileBytes, options: &CoreOptions) -> Result<Self> {
        let data = bytes.as_slice();
        let (header, machine) = core_header(&path, data)?;
        let program_headers = header
            .program_headers(Endianness::Little, data)
            .map_err(|e| Error::MalformedElf {
                path: path.clone(),
                what: format!("program headers: {e}"),
            })?;
        let mut problems = Vec::new();
        let (note_segments, loads) = core_segments(data, program_headers, &mut problems);
        let kept = first_of_overlaps(loads, &mut problems);
        let notes = Notes::read(&note_segments, machine);
        problems.extend(notes.problems.iter().cloned());
        let mut core = CoreFile {
            path,
            bytes,
            machine,
            loads: kept,
            mappings: Vec::new(),
            files: Vec::new(),
            vdso: None,
            problems,
            notes,
        };
        core.mappings = core
            .notes
            .files
            .iter()
            .map(|entry| CoreMapping {
                range: AbsAddr(entry.range.start)..AbsAddr(entry.range.end),
                file_offset: FileOffset(entry.file_offset),
                path: entry.path.clone(),
                file: None,
            })
            .collect();
        if options.open_files {
            core.add_exe_mappings(options);
            core.open_files(options);
        }
        core.vdso = core.read_vdso();
        Ok(core)
    }

    /// A core without `NT_FILE` (qemu-user writes none) says what memory there was, not
    /// which file is behind it: the executable's mappings are then made from its program
    /// headers, placed where `AT_PHDR` says the process had them (as gdb and eu-stack place
    /// the `-e` file), named by `AT_EXECFN` (the path the process was started by) or the
    /// exe given. Its entry point must land on `AT_ENTRY`, else it is not the program's
    /// layout and nothing is added. Shared libraries stay unknown (their list is in the
    /// dynamic linker's memory, not read here).
    fn add_exe_mappings(&mut self, options: &CoreOptions) {
        let Some(entry) = self.auxv_value(AT_ENTRY) else {
            return;
        };
        if self.mapping_at(AbsAddr(entry)).is_some() {
            return;
        }
        let problem = |what: String| {
            format!(
                "no file mapping holds the entry point {entry:#x} (no NT_FILE note: qemu-user \
                 writes none): {what}"
            )
        };
        let execfn = self
            .auxv_value(AT_EXECFN)
            .and_then(|addr| self.c_string_at(addr))
            .map(|name| PathBuf::from(std::ffi::OsStr::from_bytes(&name)));
        let Some(path) = execfn.or_else(|| options.exe.clone()) else {
            self.problems.push(problem(
                "the executable is unknown (no AT_EXECFN, no exe given)".to_string(),
            ));
            return;
        };
        let lookup = Lookup {
            sysroot: options.sysroot.clone(),
            exe: options.exe.clone(),
            finder: None,
        };
        let elf = match lookup.open(&path, true) {
            Ok(elf) => elf,
            Err(e) => {
                self.problems
                    .push(problem(format!("the executable {}: {e}", path.display())));
                return;
            }
        };
        let Some(at_phdr) = self.auxv_value(AT_PHDR) else {
            self.problems.push(problem("no AT_PHDR".to_string()));
            return;
        };
        match exe_mappings(elf.data(), at_phdr, entry) {
            Ok(mapped) => {
                log::debug!(
                    "{}: {} placed by AT_PHDR {at_phdr:#x}: {mapped:x?}",
                    self.path.display(),
                    elf.path().display()
                );
                self.problems.push(problem(format!(
                    "{} is placed by its program headers at AT_PHDR {at_phdr:#x}; shared \
                     libraries are unknown",
                    path.display()
                )));
                for (range, file_offset) in mapped {
                    self.mappings.push(CoreMapping {
                        range: AbsAddr(range.start)..AbsAddr(range.end),
                        file_offset: FileOffset(file_offset),
                        path: path.clone(),
                        file: None,
                    });
                }
                self.mappings.sort_by_key(|m| m.range.start);
            }
            Err(what) => self.problems.push(problem(format!(
                "{} does not fit the core: {what}",
                elf.path().display()
            ))),
        }
    }

    /// The C string at `addr` in the core's own bytes (at most 4 KiB, `PATH_MAX`).
    fn c_string_at(&self, addr: u64) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        for i in 0..4096 {
            match self.core_bytes(addr.checked_add(i)?, 1)?[0] {
                0 => return Some(out),
                byte => out.push(byte),
            }
        }
        None
    }

    /// Matches each distinct mapped path to a file (see [`MappedFile`]).
    fn open_files(&mut self, options: &CoreOptions) {
        let lookup = Lookup {
            sysroot: options.sysroot.clone(),
            exe: options.exe.clone(),
            finder: options.finder.clone(),
        };
        let entry = self.auxv_value(AT_ENTRY);
        let exe_path = entry
            .and_then(|entry| self.mapping_at(AbsAddr(entry)))
            .map(|m| m.path.clone());
        let mut files: Vec<MappedFile> = Vec::new();
        let mut file_of_mapping = Vec::with_capacity(self.mappings.len());
        for mapping in &self.mappings {
            if let Some(i) = files.iter().position(|f| f.path == mapping.path) {
                file_of_mapping.push(i);
                continue;
            }
            let build_id = self.recorded_build_id(&mapping.path);
            let is_exe = exe_path.as_ref() == Some(&mapping.path);
            let file = lookup.resolve(&mapping.path, build_id.as_deref(), is_exe);
            if let Err(e) = &file {
                log::debug!("{}: {e}", self.path.display());
            }
            files.push(MappedFile {
                path: mapping.path.clone(),
                build_id,
                file,
            });
            file_of_mapping.push(files.len() - 1);
        }
        for (mapping, file) in self.mappings.iter_mut().zip(file_of_mapping) {
            mapping.file = Some(file);
        }
        self.files = files;
    }

    /// The build-id of the file at `path` as the core recorded it: from the first page of
    /// its mapping at file offset 0, when that page was dumped.
    fn recorded_build_id(&self, path: &Path) -> Option<Vec<u8>> {
        let first = self
            .mappings
            .iter()
            .find(|m| m.path == path && m.file_offset == FileOffset(0))?;
        // gdb's `gcore` states a page size of 1 (its offsets are in bytes); the kernel dumps
        // whole pages, and the headers a build-id note is found by lie in the first 4 KiB.
        let page = self.notes.page_size.unwrap_or(4096).clamp(4096, 1 << 16);
        let range = first.raw_range();
        let len = (range.end - range.start).min(page);
        let bytes = self.core_bytes(range.start, usize::try_from(len).ok()?)?;
        build_id_in_first_page(bytes)
    }

    /// The vDSO (at `AT_SYSINFO_EHDR`), read from the core's memory: its segment, whole.
    fn read_vdso(&self) -> Option<(Range<u64>, Arc<ElfFile>)> {
        let base = self.auxv_value(AT_SYSINFO_EHDR)?;
        let load = self.load_at(base)?;
        let len = (load.range.end - base).min(MAX_VDSO_BYTES);
        let bytes = self.core_bytes(base, usize::try_from(len).ok()?)?;
        match ElfFile::from_bytes("[vdso]", bytes.to_vec()) {
            Ok(elf) => Some((base..base + len, Arc::new(elf))),
            Err(e) => {
                log::debug!("{}: the vDSO: {e}", self.path.display());
                None
            }
        }
    }

    /// The core's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `e_machine`: 62 (x86_64) or 183 (aarch64).
    pub fn machine(&self) -> u16 {
        self.machine
    }

    /// The threads, in the core's order: the kernel writes the thread that took the fatal
    /// signal first.
    pub fn threads(&self) -> &[CoreThread] {
        &self.notes.threads
    }

    /// The process's pid, command and arguments (`NT_PRPSINFO`).
    pub fn process(&self) -> Option<&CoreProcess> {
        self.notes.process.as_ref()
    }

    /// The signal that ended the process (`NT_SIGINFO`); `gcore` records none, or the
    /// last one a thread took. A core without `NT_SIGINFO` (qemu-user's) gives the signal
    /// its first thread was taking (`NT_PRSTATUS`), without a fault address.
    pub fn signal(&self) -> Option<&CoreSignal> {
        self.notes.signal.as_ref()
    }

    /// The auxiliary vector's (key, value) pairs.
    pub fn auxv(&self) -> &[(u64, u64)] {
        &self.notes.auxv
    }

    /// The value of auxiliary vector key `key` (`AT_ENTRY` is 9, `AT_SYSINFO_EHDR` 33).
    pub fn auxv_value(&self, key: u64) -> Option<u64> {
        self.notes
            .auxv
            .iter()
            .find(|&&(k, _)| k == key)
            .map(|&(_, v)| v)
    }

    /// The program's entry point (`AT_ENTRY`).
    pub fn entry(&self) -> Option<AbsAddr> {
        self.auxv_value(AT_ENTRY).map(AbsAddr)
    }

    /// The file mappings, by address.
    pub fn mappings(&self) -> &[CoreMapping] {
        &self.mappings
    }

    /// The mapping that holds `addr`.
    pub fn mapping_at(&self, addr: AbsAddr) -> Option<&CoreMapping> {
        let after = self.mappings.partition_point(|m| m.range.start <= addr);
        let mapping = self.mappings.get(after.checked_sub(1)?)?;
        mapping.contains(addr).then_some(mapping)
    }

    /// The mapped files, each matched (or not) to a file here.
    pub fn files(&self) -> &[MappedFile] {
        &self.files
    }

    /// The file of `mapping`, if it was matched.
    pub fn file_of(&self, mapping: &CoreMapping) -> Option<&MappedFile> {
        self.files.get(mapping.file?)
    }

    /// The vDSO's range and its image, read from the core's memory.
    pub fn vdso(&self) -> Option<(Range<AbsAddr>, &Arc<ElfFile>)> {
        self.vdso
            .as_ref()
            .map(|(range, elf)| (AbsAddr(range.start)..AbsAddr(range.end), elf))
    }

    /// What was wrong with the core, in words: truncation (memory and notes it lists but
    /// does not hold), notes that do not fit, absurd counts. Empty for a whole core.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Whether `addr` was mapped in the process: in a memory segment of the core (dumped
    /// or not) or a file mapping.
    pub fn is_mapped(&self, addr: AbsAddr) -> bool {
        self.load_at(addr.0).is_some() || self.mapping_at(addr).is_some()
    }

    fn load_at(&self, addr: u64) -> Option<&Load> {
        let after = self.loads.partition_point(|l| l.range.start <= addr);
        let load = self.loads.get(after.checked_sub(1)?)?;
        load.range.contains(&addr).then_some(load)
    }

    /// `len` bytes at `addr` from the core's own bytes, all in one segment.
    fn core_bytes(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let load = self.load_at(addr)?;
        let at = addr - load.range.start;
        let end = at.checked_add(len as u64)?;
        if end > load.held {
            return None;
        }
        let start = load.offset.checked_add(usize::try_from(at).ok()?)?;
        self.bytes.as_slice().get(start..start.checked_add(len)?)
    }

    /// Reads `buf.len()` bytes at `addr`: from the core, or for pages it did not dump, from
    /// the mapped file once its build-id was checked ([`Matched::ByPath`],
    /// [`Matched::ByBuildId`]); `false` if any byte is in neither.
    pub fn read(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        let addr = addr.0;
        let mut done = 0;
        while done < buf.len() {
            let Some(at) = addr.checked_add(done as u64) else {
                return false;
            };
            let Some(n) = self.read_some(at, &mut buf[done..]) else {
                return false;
            };
            done += n;
        }
        true
    }

    /// Reads what one segment (or one mapped file) gives at `addr` (at least one byte), or
    /// `None`. gdb's `gcore` leaves the pages it does not dump out of the segments
    /// altogether; the kernel lists them with fewer bytes in the file than in memory: both
    /// are read from a verified file.
    fn read_some(&self, addr: u64, buf: &mut [u8]) -> Option<usize> {
        // How far the bytes from the file may go: to the end of this segment, or to the
        // next segment when no segment lists `addr`.
        let limit = match self.load_at(addr) {
            Some(load) => {
                let at = addr - load.range.start;
                if at < load.held {
                    let n = (load.held - at).min(buf.len() as u64) as usize;
                    let bytes = self.core_bytes(addr, n)?;
                    buf[..n].copy_from_slice(bytes);
                    return Some(n);
                }
                if at < load.stated {
                    return None; // dumped, but past the end of a truncated core
                }
                load.range.end
            }
            None => {
                let next = self.loads.partition_point(|l| l.range.start <= addr);
                self.loads.get(next).map_or(u64::MAX, |l| l.range.start)
            }
        };
        let mapping = self.mapping_at(AbsAddr(addr))?;
        let file = self.file_of(mapping)?;
        let Ok((elf, Matched::ByPath | Matched::ByBuildId)) = &file.file else {
            return None;
        };
        let offset = usize::try_from(mapping.file_offset(AbsAddr(addr))?.0).ok()?;
        let n = (limit - addr)
            .min(mapping.range.end.0 - addr)
            .min(buf.len() as u64)
            .min(elf.data().len().saturating_sub(offset) as u64) as usize;
        if n == 0 {
            return None;
        }
        // Through `copy_at`: a file opened in the core's root is read in part, its code and
        // data read from the file when asked for (`elf/partial.rs`).
        elf.copy_at(offset, buf.get_mut(..n)?)
    }

    /// The 8-byte little-endian word at `addr` ([`CoreFile::read`]).
    pub fn read_u64(&self, addr: AbsAddr) -> Option<u64> {
        let mut word = [0u8; 8];
        self.read(addr, &mut word).then(|| u64::from_le_bytes(word))
    }

    /// Why the byte at `addr` cannot be read; `None` when it can.
    pub fn why_unreadable(&self, addr: AbsAddr) -> Option<Unreadable> {
        if self.read(addr, &mut [0u8]) {
            return None;
        }
        match self.load_at(addr.0) {
            Some(load) if addr.0 - load.range.start < load.stated => Some(Unreadable::Truncated),
            Some(_) => Some(Unreadable::NotDumped),
            None if self.mapping_at(addr).is_some() => Some(Unreadable::NotDumped),
            None => Some(Unreadable::Unmapped),
        }
    }
}

/// The checks of a core's ELF header: the magic, 64-bit little-endian, `ET_CORE`, x86_64 or
/// aarch64. Returns the header and the machine.
fn core_header<'d>(
    path: &Path,
    data: &'d [u8],
) -> Result<(&'d elf::FileHeader64<Endianness>, u16)> {
    if !data.starts_with(b"\x7fELF") {
        return Err(Error::NotElf {
            path: path.to_path_buf(),
            reason: "no ELF magic at its start".to_string(),
        });
    }
    let unsupported = |what: String| Error::Unsupported {
        path: path.to_path_buf(),
        what,
    };
    if data.get(4) != Some(&2) || data.get(5) != Some(&1) {
        return Err(unsupported(
            "a core that is not 64-bit little-endian (x86_64 and aarch64 cores are)".to_string(),
        ));
    }
    let header = elf::FileHeader64::<Endianness>::parse(data).map_err(|e| Error::MalformedElf {
        path: path.to_path_buf(),
        what: format!("ELF header: {e}"),
    })?;
    let endian = Endianness::Little;
    let file_type = header.e_type.get(endian);
    if file_type != elf::ET_CORE {
        return Err(unsupported(format!(
            "not a core file (e_type {file_type}, ET_CORE is 4)"
        )));
    }
    let machine = header.e_machine.get(endian).0;
    if machine != EM_X86_64 && machine != EM_AARCH64 {
        return Err(unsupported(format!(
            "a core of machine {machine} (x86_64 is 62, aarch64 183)"
        )));
    }
    Ok((header, machine))
}

/// The bytes of a core's note segments and its memory segments (`PT_LOAD`), each cut to
/// what the core holds; what is cut short, and a segment that wraps around, is said in
/// `problems`.
fn core_segments<'d>(
    data: &'d [u8],
    program_headers: &[elf::ProgramHeader64<Endianness>],
    problems: &mut Vec<String>,
) -> (Vec<&'d [u8]>, Vec<Load>) {
    let endian = Endianness::Little;
    let mut note_segments: Vec<&[u8]> = Vec::new();
    let mut loads = Vec::new();
    let mut missing: u64 = 0;
    for ph in program_headers {
        let offset = ph.p_offset(endian);
        let filesz = ph.p_filesz(endian);
        // What of [offset, offset + filesz) the core holds.
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let end = offset.saturating_add(filesz);
        let end = usize::try_from(end).unwrap_or(usize::MAX).min(data.len());
        let held = (end - start) as u64;
        match ph.p_type(endian) {
            elf::PT_NOTE => {
                if held < filesz {
                    problems.push(format!(
                        "the notes are truncated: {held} of {filesz} bytes in the core"
                    ));
                }
                note_segments.push(&data[start..end]);
            }
            elf::PT_LOAD => {
                let vaddr = ph.p_vaddr(endian);
                let memsz = ph.p_memsz(endian).max(filesz);
                let Some(vend) = vaddr.checked_add(memsz) else {
                    problems.push(format!("a segment at {vaddr:#x} wraps around"));
                    continue;
                };
                missing = missing.saturating_add(filesz - held);
                if memsz > 0 {
                    loads.push(Load {
                        range: vaddr..vend,
                        offset: start,
                        stated: filesz,
                        held,
                    });
                }
            }
            _ => {}
        }
    }
    if missing > 0 {
        problems.push(format!(
            "the core is truncated: {missing} bytes of memory it lists are past its end \
             ({} bytes)",
            data.len()
        ));
    }
    (note_segments, loads)
}

/// The memory segments by address, the first of each overlap kept (overlapping segments are
/// not what Linux writes), so that a lookup by address has one answer; how many were
/// dropped is said in `problems`.
fn first_of_overlaps(mut loads: Vec<Load>, problems: &mut Vec<String>) -> Vec<Load> {
    loads.sort_by_key(|load| load.range.start);
    let before = loads.len();
    let mut kept: Vec<Load> = Vec::with_capacity(loads.len());
    for load in loads {
        if kept
            .last()
            .is_none_or(|last| last.range.end <= load.range.start)
        {
            kept.push(load);
        }
    }
    if kept.len() < before {
        problems.push(format!(
            "{} overlapping segments ignored",
            before - kept.len()
        ));
    }
    kept
}
