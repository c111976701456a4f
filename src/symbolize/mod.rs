//! The [`Symbolizer`] façade: one object, shared by threads, that turns addresses of a source
//! (today: an ELF file) into symbols, keeping opened files in a bounded cache.
//!
//! Sources are an enum ([`Source`]) so that DWARF line info, the kernel and processes join as
//! new variants and new loaders behind the same call, not as a new API.

mod cache;
mod core_source;
pub mod finder;
mod kallsyms_cache;
mod kernel;
mod loaded;
mod maps_cache;
mod output;
mod process;
mod process_unwinder;
mod python;
mod specials_cache;
mod stack;
mod usdt;

use std::num::NonZeroUsize;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

pub use cache::{CacheStats, FileId};
pub use finder::{FindOptions, FoundIn, NamePattern, SymbolMatch};
pub use kallsyms_cache::KALLSYMS_MIN_AGE;
pub use kernel::KernelSource;
pub use output::{NameOrigin, NotFound, OwnedSym, Sym, Symbols};
pub use process_unwinder::ProcessUnwinder;
pub use python::{MergedThread, NativeFrame};
pub use stack::is_kernel_addr;
pub use usdt::UsdtMatch;

use crate::addr::{AbsAddr, FileOffset, VirtAddr};
use crate::confine::ConfinedRoot;
use crate::debuginfo::{DebugFinder, DEFAULT_DEBUG_DIR};
use crate::dwarf::InlineFrame;
use crate::elf::{hex, ElfFile, SymbolId, SymbolRuns};
use crate::error::{Error, Result};
use crate::process::{Process, ProcessMaps};
use crate::radix::sorted_by_key;
use cache::SharedLru;
use loaded::{DebugOptions, LoadedElf};
use output::{Answer, ElfPart, Entry, FoundSym, ModuleName, Part};

/// Where addresses come from. Every source is symbolized by the one call,
/// [`Symbolizer::symbolize`], and answers with one type, [`Symbols`].
///
/// | source | addresses ([`Input`]) |
/// |---|---|
/// | [`Source::Elf`], [`Source::BuildId`] | [`Input::VirtAddrs`] or [`Input::FileOffsets`] |
/// | [`Source::Process`], [`Source::Kernel`], [`Source::Stack`] | [`Input::AbsAddrs`] |
/// | [`Source::Core`] | [`Input::AbsAddrs`] |
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Source<'a> {
    /// An ELF file on disk (executable, shared library, or a separate debug file).
    Elf {
        /// Its path.
        path: &'a Path,
    },
    /// The file with this GNU build-id, found in the symbolizer's debug dirs: the binary
    /// (`<debug-dir>/.build-id/xx/rest`, as Fedora links it), else its debug file
    /// (`<debug-dir>/.build-id/xx/rest.debug`); see
    /// [`DebugFinder::find_by_build_id`]. This is the second half of remote symbolization:
    /// addresses normalized on the host where they were captured
    /// ([`Symbolizer::normalize`]: build-id and file offset per address) are symbolized here,
    /// perhaps on another machine. A debug file has no file contents for its segments, so
    /// give it virtual addresses ([`crate::process::NormalizedAddr::virt_addr`]): file
    /// offsets need the binary.
    BuildId {
        /// The build-id's bytes.
        build_id: &'a [u8],
    },
    /// A live process, by its host pid ([`Process::new`]); its files are opened through its
    /// root directory (`/proc/PID/root`), so a process in a container gets its own files and
    /// debug files. Its maps are read and cached per process life (pid and start time), read
    /// again when an address falls outside every known mapping; or given in `maps`.
    Process {
        /// The process.
        process: &'a Process,
        /// Maps read before, used instead of the cached ones.
        maps: Option<&'a ProcessMaps>,
    },
    /// The kernel: its text symbols from kallsyms, and where given, a vmlinux's and modules'
    /// files for names, sizes and source lines.
    Kernel(KernelSource<'a>),
    /// A core file's process ([`crate::core::CoreFile`]): its mapped files as the core
    /// matched them by build-id (a file that is another build answers
    /// [`NotFound::FileError`], never with the other build's symbols), its vDSO from the
    /// core's memory.
    Core(&'a crate::core::CoreFile),
    /// A stack that mixes kernel and user addresses of a process, as perf samples and
    /// bpftrace's `kstack`/`ustack` give them: addresses with the top bit set
    /// ([`is_kernel_addr`]) go to the kernel (`kernel`; without it they are
    /// [`NotFound::NoKernelSource`]), the others to the process.
    Stack {
        /// The process of the user addresses.
        process: &'a Process,
        /// Where kernel addresses are looked up.
        kernel: Option<KernelSource<'a>>,
    },
}

impl<'a> Source<'a> {
    /// A live process, with its maps read (and cached) by the symbolizer.
    pub fn process(process: &'a Process) -> Source<'a> {
        Source::Process {
            process,
            maps: None,
        }
    }

    /// What the source is, for messages: the path, the build-id, the pid, the kallsyms file.
    fn describe(&self) -> PathBuf {
        match self {
            Source::Elf { path } => path.to_path_buf(),
            Source::BuildId { build_id } => PathBuf::from(format!("build-id {}", hex(build_id))),
            Source::Process { process, .. } | Source::Stack { process, .. } => process.proc_dir(),
            Source::Kernel(kernel) => kernel.kallsyms_path().to_path_buf(),
            Source::Core(core) => core.path().to_path_buf(),
        }
    }
}

/// A batch of addresses, with their kind explicit (which kinds a source takes: [`Source`]).
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// Virtual addresses as the ELF file states them (`st_value`, `p_vaddr`); for a PIE or a
    /// shared library, an absolute process address minus the load bias. For a relocatable
    /// file (`.o`, `.ko`), whose sections all start at 0: its layout addresses
    /// ([`crate::elf::ElfFile::relocatable_sections`]). llvm-symbolizer and binutils
    /// `addr2line` take an offset into the code instead: add the layout address of the
    /// section meant, as the `symbolize` example does.
    VirtAddrs(&'a [VirtAddr]),
    /// Offsets into the file, as `/proc/PID/maps` and perf compute them
    /// (`addr - map_start + map_offset`).
    FileOffsets(&'a [FileOffset]),
    /// Absolute addresses as a process or the kernel runs them: instruction pointers and
    /// return addresses from a sample, `ustack`/`kstack` frames. A buffer of raw `u64`s is
    /// given its kind without a copy by [`AbsAddr::from_raw_slice`].
    AbsAddrs(&'a [AbsAddr]),
}

impl<'a> Input<'a> {
    /// The addresses as raw numbers (their kind is the variant's).
    fn raw(&self) -> &'a [u64] {
        match *self {
            Input::VirtAddrs(addrs) => VirtAddr::as_raw_slice(addrs),
            Input::FileOffsets(offsets) => FileOffset::as_raw_slice(offsets),
            Input::AbsAddrs(addrs) => AbsAddr::as_raw_slice(addrs),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Input::VirtAddrs(_) => "virtual addresses (Input::VirtAddrs)",
            Input::FileOffsets(_) => "file offsets (Input::FileOffsets)",
            Input::AbsAddrs(_) => "absolute addresses (Input::AbsAddrs)",
        }
    }
}

/// Counters of a [`Symbolizer`], to export as metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SymbolizerStats {
    /// The cache of opened files.
    pub files: CacheStats,
    /// The cache of process maps (see [`Source::Process`]).
    pub process_maps: CacheStats,
    /// The cache of kallsyms files (see [`KernelSource`]).
    pub kallsyms: CacheStats,
    /// Files open now.
    pub open_files: usize,
    /// Bytes of files mapped into memory now.
    pub bytes_mapped: u64,
    /// debuginfod lookups, downloads and bytes (all zero when no server is configured); a
    /// batch fetched something when `downloads` grew, `last_fetch` says how long it took.
    #[cfg(feature = "debuginfod")]
    pub debuginfod: crate::debuginfo::DebuginfodStats,
}

/// Builds a [`Symbolizer`].
#[derive(Debug, Clone)]
pub struct SymbolizerBuilder {
    demangle: bool,
    source_lines: bool,
    debug_files: bool,
    debug_dirs: Vec<PathBuf>,
    /// `None`: no debuginfod (the environment is not read).
    #[cfg(feature = "debuginfod")]
    debuginfod: Option<crate::debuginfo::DebuginfodConfig>,
    max_open_files: NonZeroUsize,
    max_cached_processes: NonZeroUsize,
    max_cached_kallsyms: NonZeroUsize,
    threads: usize,
}

impl Default for SymbolizerBuilder {
    fn default() -> Self {
        SymbolizerBuilder {
            demangle: true,
            source_lines: true,
            debug_files: true,
            debug_dirs: vec![PathBuf::from(DEFAULT_DEBUG_DIR)],
            #[cfg(feature = "debuginfod")]
            debuginfod: None,
            max_open_files: NonZeroUsize::new(64).unwrap_or(NonZeroUsize::MIN),
            max_cached_processes: NonZeroUsize::new(256).unwrap_or(NonZeroUsize::MIN),
            max_cached_kallsyms: NonZeroUsize::new(4).unwrap_or(NonZeroUsize::MIN),
            threads: 1,
        }
    }
}

impl SymbolizerBuilder {
    /// Demangle C++ and Rust names (default: on).
    pub fn demangle(mut self, on: bool) -> Self {
        self.demangle = on;
        self
    }

    /// Read DWARF for source lines and inlined frames ([`Sym::frames`]) (default: on). Off,
    /// only symbol tables are read.
    pub fn source_lines(mut self, on: bool) -> Self {
        self.source_lines = on;
        self
    }

    /// Look for separate debug files (default: on): a file without DWARF or without a
    /// `.symtab` gets its debug companion from the debug dirs, the build-id, or
    /// `.gnu_debuglink` (see [`crate::debuginfo`] for the order and the checks); dwz
    /// supplementary files are followed. Nothing outside the debug dirs and the file's own
    /// directory is read.
    pub fn debug_files(mut self, on: bool) -> Self {
        self.debug_files = on;
        self
    }

    /// The debug dirs, searched in order (default: `/usr/lib/debug`); gdb's
    /// `debug-file-directory`, llvm-symbolizer's `--debug-file-directory`.
    pub fn debug_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.debug_dirs = dirs;
        self
    }

    /// Where and how to fetch missing debug files from debuginfod servers (feature
    /// `debuginfod`). Default: none; nothing touches the network and the environment is not
    /// read. To behave as gdb and elfutils do (`DEBUGINFOD_URLS` and friends), pass
    /// [`DebuginfodConfig::from_env`](crate::debuginfo::DebuginfodConfig::from_env); a
    /// config set here is used as it is.
    /// Fetching is part of the debug-file search, so [`SymbolizerBuilder::debug_files`]
    /// off turns it off too, except for [`Source::BuildId`].
    #[cfg(feature = "debuginfod")]
    pub fn debuginfod(mut self, config: crate::debuginfo::DebuginfodConfig) -> Self {
        self.debuginfod = Some(config);
        self
    }

    /// How many files stay open (mapped, with their index) at most (default: 64). The least
    /// recently used file is closed to make room.
    pub fn max_open_files(mut self, count: NonZeroUsize) -> Self {
        self.max_open_files = count;
        self
    }

    /// How many processes' maps stay cached at most (default: 256); see
    /// [`Source::Process`].
    pub fn max_cached_processes(mut self, count: NonZeroUsize) -> Self {
        self.max_cached_processes = count;
        self
    }

    /// How many kallsyms files stay parsed at most (default: 4; one for the running kernel
    /// is the usual need); see [`KernelSource`].
    pub fn max_cached_kallsyms(mut self, count: NonZeroUsize) -> Self {
        self.max_cached_kallsyms = count;
        self
    }

    /// How many threads one batch may use (default: 1, the calling thread only). With more,
    /// a batch reads the DWARF it needs ahead on that many threads (the caller's among
    /// them, for the batch's duration): the compilation units holding its addresses, their
    /// line tables and function ranges, which a cold batch spends most of its time on.
    /// Answers are the same; a batch whose units are all read already spawns nothing.
    pub fn threads(mut self, count: usize) -> Self {
        self.threads = count.max(1);
        self
    }

    /// The symbolizer.
    pub fn build(self) -> Symbolizer {
        let finder = DebugFinder::new(self.debug_dirs);
        #[cfg(feature = "debuginfod")]
        let finder = {
            let client = self
                .debuginfod
                .and_then(crate::debuginfo::Debuginfod::new)
                .map(Arc::new);
            finder.with_debuginfod(client)
        };
        Symbolizer {
            demangle: self.demangle,
            build_ids: finder.clone(),
            debug: DebugOptions {
                finder: self.debug_files.then_some(finder),
                source_lines: self.source_lines,
                threads: self.threads,
            },
            files: SharedLru::new(self.max_open_files),
            process_maps: SharedLru::new(self.max_cached_processes),
            kallsyms: SharedLru::new(self.max_cached_kallsyms),
            specials: SharedLru::new(self.max_cached_processes),
            threads: self.threads,
        }
    }
}

/// Turns addresses into symbols. `Send + Sync`: build one and share it between threads.
///
/// ```
/// use stacksym::{Input, Source, Symbolizer, VirtAddr};
/// # fn main() -> stacksym::Result<()> {
/// let symbolizer = Symbolizer::builder().build();
/// let path = std::path::Path::new("testdata/bin/c-nopie");
/// # let elf = stacksym::elf::ElfFile::open(path)?;
/// # let (code, _) = elf.symbol_count()?;
/// # assert!(code > 0);
/// let main = 0x401000; // some address in the binary
/// let symbols = symbolizer.symbolize(&Source::Elf { path }, Input::VirtAddrs(&[VirtAddr(main)]))?;
/// for sym in symbols.iter().flatten() {
///     println!("{}+{:#x}", sym.name, sym.offset);
/// }
/// # Ok(())
/// # }
/// ```
pub struct Symbolizer {
    demangle: bool,
    /// Finds files by build-id ([`Source::BuildId`]) in the debug dirs.
    build_ids: DebugFinder,
    debug: DebugOptions,
    files: SharedLru<FileId, LoadedElf>,
    process_maps: SharedLru<maps_cache::ProcessKey, crate::process::ProcessMaps>,
    kallsyms: SharedLru<PathBuf, kallsyms_cache::CachedKallsyms>,
    /// Per process: its vDSO and perf map (`specials_cache.rs`), bounded like `process_maps`.
    specials: SharedLru<maps_cache::ProcessKey, specials_cache::ProcessSpecials>,
    /// Threads a batch may use ([`SymbolizerBuilder::threads`]).
    threads: usize,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("demangle", &self.demangle)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for Symbolizer {
    fn default() -> Self {
        Symbolizer::builder().build()
    }
}

impl Symbolizer {
    /// A builder with the defaults: demangling on, 64 open files.
    pub fn builder() -> SymbolizerBuilder {
        SymbolizerBuilder::default()
    }

    /// Symbolizes a batch of addresses of one source: the one call for every kind of
    /// [`Source`]. The result has one answer per address, in input order: a [`Sym`], or why
    /// there is none ([`NotFound`]). An error means the source itself could not be used (an
    /// ELF file or a kallsyms file unreadable, a process's maps unreadable or the process
    /// gone; it names the file or the pid), or the input's kind does not fit the source (the
    /// error names both). Within a process or the kernel, a file that cannot be read only
    /// costs its own addresses ([`NotFound::FileError`]).
    pub fn symbolize(&self, source: &Source<'_>, input: Input<'_>) -> Result<Symbols> {
        match (source, input) {
            (Source::Elf { path }, Input::VirtAddrs(_) | Input::FileOffsets(_)) => {
                self.symbolize_elf(path, input)
            }
            (Source::BuildId { build_id }, Input::VirtAddrs(_) | Input::FileOffsets(_)) => {
                let found = self.file_with_build_id(source, build_id)?;
                if found.is_debug_file() && matches!(input, Input::FileOffsets(_)) {
                    return Err(Error::InvalidRequest {
                        path: found.path,
                        what: "file offsets need the binary, and only its debug file has \
                               this build-id here: give virtual addresses \
                               (NormalizedAddr::virt_addr)"
                            .to_string(),
                    });
                }
                self.symbolize_elf(&found.path, input)
            }
            (Source::Process { process, maps }, Input::AbsAddrs(addrs)) => {
                let addrs = AbsAddr::as_raw_slice(addrs);
                match maps {
                    Some(maps) => self.symbolize_process_with(process, maps, addrs),
                    None => {
                        let maps = self.cached_maps(process, addrs)?;
                        self.symbolize_process_with(process, &maps, addrs)
                    }
                }
            }
            (Source::Kernel(kernel), Input::AbsAddrs(addrs)) => {
                self.symbolize_kernel(kernel, addrs)
            }
            (Source::Core(core), Input::AbsAddrs(addrs)) => self.symbolize_core(core, addrs),
            (Source::Stack { process, kernel }, Input::AbsAddrs(addrs)) => {
                self.symbolize_stack(process, kernel.as_ref(), AbsAddr::as_raw_slice(addrs))
            }
            (source, input) => Err(Error::InvalidRequest {
                path: source.describe(),
                what: format!(
                    "{} do not fit this source: {}",
                    input.kind(),
                    match source {
                        Source::Elf { .. } | Source::BuildId { .. } => {
                            "an ELF file or build-id takes virtual addresses or file offsets"
                        }
                        _ => "a process, the kernel, a stack or a core takes absolute addresses",
                    }
                ),
            }),
        }
    }

    /// The file `Source::BuildId` names (see [`DebugFinder::find_by_build_id`]), or an error
    /// naming the build-id and the dirs searched.
    fn file_with_build_id(
        &self,
        source: &Source<'_>,
        build_id: &[u8],
    ) -> Result<crate::debuginfo::DebugFile> {
        self.build_ids
            .find_by_build_id(build_id)?
            .ok_or_else(|| Error::NotFound {
                path: source.describe(),
                what: format!(
                    "no file with this build-id in {:?} (.build-id/xx/rest or \
                     .build-id/xx/rest.debug)",
                    self.build_ids.debug_dirs()
                ),
            })
    }

    /// Symbolizes addresses of the ELF file at `path`, a path the caller gave.
    fn symbolize_elf(&self, path: &Path, input: Input<'_>) -> Result<Symbols> {
        let file = self.open_elf(path)?;
        self.symbolize_loaded(&file, path, input, None)
    }

    /// Symbolizes addresses of `file` (shown as `path`); `root`: the root of the process the
    /// file is mapped in, whose debug dirs are searched first, confined to it.
    fn symbolize_loaded(
        &self,
        file: &Arc<LoadedElf>,
        path: &Path,
        input: Input<'_>,
        root: Option<&ConfinedRoot>,
    ) -> Result<Symbols> {
        let debug = file.debug_state(|| match root {
            Some(root) => self.debug.inside(root),
            None => self.debug.clone(),
        });
        let symbol_file = file.symbol_file(debug);
        let mut debug_error = debug
            .dwarf
            .as_ref()
            .err()
            .or(debug.error.as_ref())
            .map(|e| e.clone_for_cache());
        // One lock for the whole batch: the DWARF's lazily parsed units are not `Sync`.
        let dwarf = match &debug.dwarf {
            Ok(Some(dwarf)) => Some(dwarf.lock().unwrap_or_else(PoisonError::into_inner)),
            _ => None,
        };
        let segments = file.elf.segments();
        // Each address as a virtual address; the file offset it was given as is kept. The
        // file offset of a virtual address is derived only where no symbol answers (for found
        // ones `Symbols` derives it when read: see `Entry::file_offset`).
        let (input_addrs, given_as_offsets) = (input.raw(), matches!(input, Input::FileOffsets(_)));
        let given_offset = |raw: u64| given_as_offsets.then_some(FileOffset(raw));
        let to_virt = |raw: u64| match given_offset(raw) {
            Some(offset) => segments.file_offset_to_virt(offset),
            None => Some(VirtAddr(raw)),
        };
        let mini = debug.mini.as_ref();
        let mut symbols = Symbols::with_capacity(input_addrs.len(), self.demangle);
        let module = symbols.add_module(ModuleName {
            shown: path.to_path_buf(),
            opened_as: None,
            kernel_module: None,
        });
        let part = symbols.add_part(Part::Elf(ElfPart {
            file: Arc::clone(symbol_file),
            mini: mini.cloned(),
            go: debug.go.clone(),
            build_id: file.elf.build_id().map(Box::from),
            debug_file: debug.companion.as_ref().map(|c| c.elf.path().to_path_buf()),
            debug_error: None,
            segments: segments.clone(),
        }));
        // (address, index) of the addresses with a virtual address, to answer in address
        // order.
        let mut order: Vec<(u64, usize)> = Vec::with_capacity(input_addrs.len());
        for (i, &raw) in input_addrs.iter().enumerate() {
            if let Some(addr) = to_virt(raw) {
                order.push((addr.0, i));
            }
        }
        // Symbols and frames in address order, each distinct address's frames once: a run of
        // addresses inside one function costs one symbol search, neighbouring addresses share
        // line-table rows and function ranges (which stay in the CPU caches), and a profile's
        // repeated addresses cost one DWARF lookup.
        let order = sorted_by_key(order);
        if let Some(dwarf) = &dwarf {
            symbols.frames.reserve(order.len() + order.len() / 4);
            if self.threads > 1 {
                let bias = debug.dwarf_bias;
                let addrs = order
                    .iter()
                    .map(|&(addr, _)| VirtAddr(addr.wrapping_sub(bias)));
                dwarf.prepare(addrs, self.threads);
            }
        }
        let mut own_symbols = SymbolRuns::new(&symbol_file.elf);
        let mut mini_symbols = mini.map(|mini| SymbolRuns::new(&mini.elf));
        // The last distinct symbol hit and its index in `symbols.found`: in address order,
        // the addresses inside one symbol come one after another and share it.
        let mut last_found: Option<(bool, SymbolId, u32)> = None;
        // With threads, the symbols whose names to compute (each first hit: `(in_mini, id)`),
        // computed after the walk on several threads.
        let mut to_name: Vec<(bool, SymbolId)> = Vec::new();
        let mut previous_frames: Option<(VirtAddr, Range<u32>)> = None;
        // The Go table's function of the previous address: the batch ascends, so the next
        // search starts there.
        let mut go_hint = 0usize;
        // The answers in address order, written one after another; put in input order below.
        let mut in_address_order: Vec<Entry> = Vec::with_capacity(order.len());
        for &(addr, i) in &order {
            let addr = VirtAddr(addr);
            let own = own_symbols.find(addr)?;
            // MiniDebugInfo names what `.dynsym` does not: the nearer symbol wins.
            let from_mini = match &mut mini_symbols {
                Some(runs) => runs.find(addr)?,
                None => None,
            };
            let (file, hit, in_mini) = match (own, from_mini) {
                (Some(own), Some(theirs)) if theirs.1 > own.1 => (mini, Some(theirs), true),
                (None, Some(theirs)) => (mini, Some(theirs), true),
                (own, _) => (Some(symbol_file), own, false),
            };
            // Which answer names `addr`, as plain data: choosing among `Answer`s by assigning
            // them would run `Answer`'s drop glue (its `NotFound` variant holds an `Error`) at
            // every assignment, out of line (the icount guard caught it: 9 instructions an
            // address).
            let mut named = Named::Nothing;
            // A Go binary's own table names what no symbol does, and wins over a farther
            // `.dynsym` symbol (cgo binaries export a few); `.symtab` names the same entries.
            // (index, entry) of the Go function holding `addr`.
            let go_function = match &debug.go {
                Some(go) => go
                    .index_from(addr.0, go_hint)
                    .and_then(|index| match index {
                        Some(index) => Ok(Some((index, go.entry_of(index)?))),
                        None => Ok(None),
                    })
                    .unwrap_or_else(|e| {
                        log::debug!("{e}");
                        debug_error.get_or_insert(e);
                        None
                    }),
                None => None,
            };
            if let Some((index, _)) = go_function {
                go_hint = index;
            }
            let hit = match (hit, go_function) {
                (Some((_, start)), Some((_, entry))) if entry > start => None,
                (hit, _) => hit,
            };
            if let (None, Some(_)) = (hit, go_function) {
                named = Named::Go;
            }
            if let (Some(file), Some((id, _))) = (file, hit) {
                let found = match last_found {
                    Some((was_mini, was, found)) if (was_mini, was) == (in_mini, id) => Some(found),
                    _ => match file.elf.symbol_spans(id)? {
                        Some(spans) => {
                            if self.demangle {
                                // Computes the shown name on the symbol's first hit.
                                if self.threads > 1 {
                                    to_name.push((in_mini, id));
                                } else {
                                    file.compute_shown_name(id)?;
                                }
                            }
                            let found = symbols.add_found(FoundSym {
                                part,
                                in_mini,
                                spans,
                                demangled: self.demangle,
                            });
                            last_found = Some((in_mini, id, found));
                            Some(found)
                        }
                        // The id came from this file's own index (built once).
                        None => None,
                    },
                };
                if let Some(found) = found {
                    named = Named::Elf(found);
                }
            }
            let mut file_offset = input_addrs.get(i).and_then(|&raw| given_offset(raw));
            if matches!(named, Named::Nothing) && file_offset.is_none() {
                file_offset = segments.virt_to_file_offset(addr);
            }
            let mut entry_frames = 0..0;
            if let (None, Some(go), Some((index, _)), true) =
                (&dwarf, &debug.go, go_function, self.debug.source_lines)
            {
                let frames = &mut symbols.frames;
                let first = frames.len();
                if let Err(e) = go.append_frames_of(index, addr, frames) {
                    log::debug!("{e}");
                    frames.truncate(first);
                    debug_error.get_or_insert(e);
                }
                let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                entry_frames = to_u32(first)..to_u32(frames.len());
            }
            if let Some(dwarf) = &dwarf {
                let frames = &mut symbols.frames;
                let range = match &previous_frames {
                    Some((seen, range)) if *seen == addr => range.clone(),
                    _ => {
                        let first = frames.len();
                        let in_dwarf = VirtAddr(addr.0.wrapping_sub(debug.dwarf_bias));
                        if let Err(e) = dwarf.append_frames(in_dwarf, frames) {
                            // Malformed DWARF at this address: answer from symbols alone, and
                            // say so once per batch.
                            log::debug!("{e}");
                            debug_error.get_or_insert(e);
                        }
                        // A batch's frames number fewer than u32::MAX (each is over 40
                        // bytes: more would not fit in memory); saturating keeps it checked.
                        let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                        let range = to_u32(first)..to_u32(frames.len());
                        previous_frames = Some((addr, range.clone()));
                        range
                    }
                };
                // A DWARF function names an address no symbol covers.
                let has_function = frames
                    .get(range.start as usize..range.end as usize)
                    .and_then(<[InlineFrame]>::last)
                    .is_some_and(|frame| frame.function.is_some());
                if has_function && matches!(named, Named::Nothing) {
                    named = Named::DwarfOnly;
                }
                entry_frames = range;
            }
            let answer = match named {
                Named::Nothing => Answer::NoSymbol,
                Named::Go => Answer::Go { part, addr },
                Named::Elf(found) => Answer::Elf { found, addr },
                Named::DwarfOnly => Answer::DwarfOnly { part, addr },
            };
            in_address_order.push(Entry {
                answer,
                module,
                file_offset,
                frames: entry_frames,
            });
        }
        drop(dwarf);
        // Into input order: each address takes its answer from its place in address order.
        // Walking the answers in address order and writing each to its input place would
        // miss the cache on every write of a large random batch, inside the long loop above
        // where few misses overlap; this short loop reads them back with many misses in
        // flight (the symtab bench: ...).
        let mut place = vec![u32::MAX; input_addrs.len()];
        for (k, &(_, i)) in order.iter().enumerate() {
            if let Some(place) = place.get_mut(i) {
                // A batch has fewer than u32::MAX addresses (see `Symbols::add_module`).
                *place = u32::try_from(k).unwrap_or(u32::MAX);
            }
        }
        symbols.entries.reserve(input_addrs.len());
        for (&raw, &k) in input_addrs.iter().zip(&place) {
            let entry = match in_address_order.get_mut(k as usize) {
                Some(entry) => std::mem::replace(entry, Entry::no_symbol()),
                // No virtual address: a file offset in no segment.
                None => Entry {
                    answer: Answer::NoSymbol,
                    module,
                    file_offset: given_offset(raw),
                    frames: 0..0,
                },
            };
            symbols.entries.push(entry);
        }
        compute_names_on_threads(symbol_file, mini, &to_name, self.threads)?;
        if let Some(Part::Elf(elf)) = symbols.parts.get_mut(part as usize) {
            elf.debug_error = debug_error;
        }
        Ok(symbols)
    }

    /// The ELF file at `path` as this symbolizer caches it (opened now on a miss), to share
    /// with other readers of the same file (the unwinder's [`crate::unwind::Modules`]) instead
    /// of opening and mapping it twice.
    pub fn elf_file(&self, path: &Path) -> Result<Arc<ElfFile>> {
        Ok(Arc::clone(&self.open_elf(path)?.elf))
    }

    fn open_elf(&self, path: &Path) -> Result<Arc<LoadedElf>> {
        // Keyed by identity alone: a hard link or a symlink reaches the same opened file,
        // and a replaced file (new inode, size or mtime) is opened anew. Results name the
        // path the caller gave (`Symbols::module`), not the one that opened the file.
        let id = FileId::of_path(path)?;
        let load = || ElfFile::open(path).map(LoadedElf::new);
        let loaded = self.files.get_or_load(&id, load)?;
        self.reopened_if_shrunk(id, loaded, load)
    }

    /// `loaded`, or, when a mapped file shrank since it was opened (its own, or a companion's:
    /// see [`LoadedElf::opened_before_a_shrink`]), the file opened again with `load` and put
    /// in the cache in its place. Batches that hold the old one keep it (pages past a shrunk
    /// file's end read as zeros there).
    fn reopened_if_shrunk(
        &self,
        id: FileId,
        loaded: Arc<LoadedElf>,
        load: impl FnOnce() -> Result<LoadedElf>,
    ) -> Result<Arc<LoadedElf>> {
        if !loaded.opened_before_a_shrink() {
            return Ok(loaded);
        }
        log::debug!(
            "{}: opened again, since a mapped file shrank after it was opened",
            loaded.elf.path().display()
        );
        let fresh = Arc::new(load()?);
        self.files.insert(id, Arc::clone(&fresh));
        Ok(fresh)
    }

    /// Like `open_elf`, for a file of a process, already opened (by [`Process::open_mapped`]:
    /// its `map_files` entry, or its path confined to `root`) and shown as `path`: read into
    /// memory, not mapped, and marked as lying in `root` (see [`ElfFile::from_file`]).
    ///
    /// [`Process::open_mapped`]: crate::process::Process::open_mapped
    fn open_process_file(
        &self,
        file: &std::fs::File,
        path: &Path,
        root: &ConfinedRoot,
    ) -> Result<Arc<LoadedElf>> {
        let id = FileId::of_file(file, path)?;
        // Read into memory, but its host debug files may be mapped: checked as `open_elf` does.
        let load =
            || ElfFile::from_file(file, path).map(|elf| LoadedElf::new(elf.in_root(root.clone())));
        let loaded = self.files.get_or_load(&id, load)?;
        self.reopened_if_shrunk(id, loaded, load)
    }

    /// Counters for hits, misses, evictions and mapped bytes.
    pub fn stats(&self) -> SymbolizerStats {
        let mut bytes_mapped = 0;
        self.files
            .for_each(|f| bytes_mapped += f.mapped_len() as u64);
        SymbolizerStats {
            files: self.files.stats(),
            process_maps: self.process_maps.stats(),
            kallsyms: self.kallsyms.stats(),
            open_files: self.files.len(),
            bytes_mapped,
            #[cfg(feature = "debuginfod")]
            debuginfod: self
                .build_ids
                .debuginfod()
                .map(|client| client.stats())
                .unwrap_or_default(),
        }
    }

    /// Closes every cached file and forgets every cached process map and kallsyms. Results
    /// already returned stay valid (they hold their file).
    pub fn clear(&self) {
        self.files.clear();
        self.process_maps.clear();
        self.kallsyms.clear();
        self.specials.clear();
    }
}

/// Computes the shown (demangled) names of `ids` (`(in_mini, id)`: a symbol of `symbol_file`,
/// or of `mini` when `in_mini`) on up to `threads` threads, the caller's among them; names
/// already computed cost a look. Demangling is most of a symbols-only batch's time on a
/// large Rust or C++ library, and every name is independent of the others.
fn compute_names_on_threads(
    symbol_file: &LoadedElf,
    mini: Option<&Arc<LoadedElf>>,
    ids: &[(bool, SymbolId)],
    threads: usize,
) -> Result<()> {
    /// Fewer names than this per thread are not worth a thread's start.
    const MIN_NAMES_PER_THREAD: usize = 256;
    let compute = |names: &[(bool, SymbolId)]| -> Result<()> {
        for &(in_mini, id) in names {
            match (in_mini, mini) {
                (true, Some(mini)) => mini.compute_shown_name(id)?,
                _ => symbol_file.compute_shown_name(id)?,
            }
        }
        Ok(())
    };
    let threads = threads.min(ids.len() / MIN_NAMES_PER_THREAD).max(1);
    if threads == 1 {
        return compute(ids);
    }
    let chunk = ids.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let mut chunks = ids.chunks(chunk);
        let own = chunks.next().unwrap_or_default();
        let helpers: Vec<_> = chunks
            .map(|names| scope.spawn(move || compute(names)))
            .collect();
        let mut result = compute(own);
        for helper in helpers {
            // A helper that panicked (a bug) left its names uncomputed: they read as no name.
            let helper_result = helper.join().unwrap_or_else(|_| {
                log::error!("a name-computing thread panicked");
                Ok(())
            });
            result = result.and(helper_result);
        }
        result
    })
}

/// Which answer names an address, while `symbolize_loaded` chooses it (see there).
#[derive(Clone, Copy)]
enum Named {
    Nothing,
    Go,
    Elf(u32),
    DwarfOnly,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolizer_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Symbolizer>();
        assert_send_sync::<Symbols>();
    }
}
