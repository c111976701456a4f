//! The [`Symbolizer`] façade: one object, shared by threads, that turns addresses of a source
//! (today: an ELF file) into symbols, keeping opened files in a bounded cache.
//!
//! Sources are an enum ([`Source`]) so that DWARF line info, the kernel and processes join as
//! new variants and new loaders behind the same call, not as a new API.

mod cache;
mod core_source;
mod elf_batch;
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
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use cache::{CacheStats, FileId};
pub use finder::{FindOptions, FoundIn, NamePattern, SymbolMatch};
pub use kallsyms_cache::KALLSYMS_MIN_AGE;
pub use kernel::KernelSource;
pub use output::{NameOrigin, NotFound, OwnedSym, Sym, Symbols};
pub use process_unwinder::ProcessUnwinder;
pub use python::{MergedThread, NativeFrame};
pub use usdt::UsdtMatch;

use crate::addr::{AbsAddr, FileOffset, VirtAddr};
use crate::confine::ConfinedRoot;
use crate::debuginfo::{DebugFinder, DEFAULT_DEBUG_DIR};
use crate::elf::{hex, ElfFile};
use crate::error::{Error, Result};
use crate::process::{Process, ProcessMaps};
use cache::SharedLru;
use loaded::{DebugOptions, LoadedElf};

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
    /// ([`AbsAddr::is_kernel`](crate::AbsAddr::is_kernel)) go to the kernel (`kernel`; without it they are
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
