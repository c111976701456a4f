//! What a symbolization returns, for every [`crate::Source`]: [`Symbols`], one answer per
//! input address, in input order — a [`Sym`] borrowed from the batch, or the reason there is
//! none ([`NotFound`]).
//!
//! One lifetime story: a batch holds the files that answered (`Arc`s of the symbolizer's cached
//! files, kallsyms, perf maps, vDSO images), and a [`Sym`] borrows its names and frames from
//! the batch, so the hot path copies no string. [`Sym::to_owned`] copies one answer out when it
//! must outlive the batch. (Measured: the symtab bench reads every name of 100,000 answers;
//! an owned `String` per answer would add an allocation to each.)

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::addr::{AbsAddr, FileOffset, SymAddr, VirtAddr};
use crate::dwarf::InlineFrame;
use crate::elf::{ElfFile, Segments, SymbolKind, SymbolOrigin, SymbolSpans};
use crate::error::Error;
use crate::gopclntab::GoTable;
use crate::kernel::Kallsyms;
use crate::process::{JitDump, MappingKind, PerfMap};
use crate::symbolize::loaded::LoadedElf;

/// Where a [`Sym`]'s name comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NameOrigin {
    /// A symbol table (of the file, of its debug companion or of its MiniDebugInfo: see
    /// [`Sym::symbol_file`]).
    Table(SymbolOrigin),
    /// DWARF alone: no symbol covers the address, but a DWARF function does (its name is
    /// the outermost frame's). The function's start is not known then: [`Sym::addr`] is the
    /// address itself and [`Sym::offset`] is 0.
    Dwarf,
    /// A kallsyms file (`/proc/kallsyms` or a copy): the kernel's own list, without sizes
    /// (see [`Kallsyms`] for where such a symbol is taken to end).
    Kallsyms,
    /// A perf JIT map (`/tmp/perf-PID.map`) of the process.
    PerfMap,
    /// A jitdump file (`jit-PID.dump`) the process maps: the last code its JIT loaded at the
    /// address; its source line, where the JIT wrote one, in [`Sym::frames`].
    JitDump,
    /// A Go binary's own table (`.gopclntab`, [`crate::gopclntab`]): no symbol table covers
    /// the address (a stripped Go binary), or only a farther `.dynsym` symbol does. The name
    /// is as Go prints it; the size reaches the next function's entry.
    GoTable,
}

/// One symbol an address resolved to, borrowed from the [`Symbols`] batch it came from (see
/// [`Sym::to_owned`] for a copy that outlives it). The same type answers for every source:
/// an ELF file, a process, the kernel, a mixed stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sym<'a> {
    /// The name to show: demangled when demangling is on (the default), else as in the file.
    /// With demangling off, a name that is not UTF-8 is shown up to its first invalid byte
    /// (`raw_name` has all of it); with demangling on, invalid bytes become U+FFFD.
    /// A `@VERSION` suffix is never part of it (see [`Sym::version`]). PLT entries are named
    /// `target@plt`, as perf names them.
    pub name: &'a str,
    /// The name exactly as the file spells it (mangled, without a version), as bytes.
    pub raw_name: &'a [u8],
    /// The symbol version (`GLIBC_2.2.5`), if the symbol has one.
    pub version: Option<&'a str>,
    /// Whether the version is hidden (`name@VER`) rather than the default (`name@@VER`).
    pub version_hidden: bool,
    /// Where the name comes from: a symbol table, DWARF, kallsyms, a perf map.
    pub origin: NameOrigin,
    /// The start of the symbol as its source states it: an ELF virtual address of the file
    /// (`st_value`; also for vmlinux and a `.ko`, at its layout address), or, for kallsyms,
    /// perf maps and jitdumps, the absolute address they list.
    pub addr: SymAddr,
    /// The size the source states; 0 for an ELF symbol without a size (which is then taken
    /// to reach the next symbol or its section's end); kallsyms' bound for kernel symbols.
    pub size: u64,
    /// How far into the symbol the address is.
    pub offset: u64,
    /// Function or data object.
    pub kind: SymbolKind,
    /// The file the address is in, as the caller, the process or the kernel names it: the
    /// path given for an ELF source; the path in the process's maps (inside its root; a memfd
    /// is `/memfd:NAME`), `[vdso]` for the vDSO, the perf map's path for JIT code; for the
    /// kernel `[kernel.kallsyms]` for the image and `[NAME]` for a module, as perf names them.
    pub module: &'a Path,
    /// The path the file was opened through, where it differs from `module` (a process's
    /// file is opened through `/proc/PID/root/...` or `/proc/PID/map_files/...`; a kernel
    /// address through vmlinux or the module's `.ko`).
    pub opened_as: Option<&'a Path>,
    /// The file whose symbol table named the symbol: the real file, its separate debug file
    /// (when the file is stripped to `.dynsym` and the debug file has a `.symtab`), the
    /// kallsyms file, or the perf map.
    pub symbol_file: &'a Path,
    /// The address's offset in `module` ([`Sym::file_offset`]), derived only when asked.
    pub(crate) file_offset_at: FileOffsetAt<'a>,
    /// The GNU build-id of `module`'s file, where it has one.
    pub build_id: Option<&'a [u8]>,
    /// For a kernel address in a module, the module's name (`ext4`, without brackets).
    pub kernel_module: Option<&'a str>,
    /// Source lines from DWARF, innermost first: the inlined functions at the address, then
    /// the function that contains them (whose machine code this is). An outer frame's
    /// location is the call site of the frame inside it, as in llvm-symbolizer. Empty when
    /// DWARF does not cover the address (or source lines are off); then only the symbol
    /// table answered. A Go binary without DWARF gives them from its Go table (function,
    /// file and line; no columns).
    pub frames: &'a [InlineFrame],
}

/// Where a [`Sym`]'s file offset comes from: known, or derived from the file's segments
/// when asked (most callers never ask; deriving it for every address of a batch cost 7 % of
/// a warm symbols-only batch in the symtab bench).
#[derive(Debug, Clone, Copy)]
pub(crate) enum FileOffsetAt<'a> {
    Known(Option<FileOffset>),
    InSegments(&'a Segments, VirtAddr),
}

impl FileOffsetAt<'_> {
    fn get(self) -> Option<FileOffset> {
        match self {
            FileOffsetAt::Known(offset) => offset,
            FileOffsetAt::InSegments(segments, addr) => segments.virt_to_file_offset(addr),
        }
    }
}

impl PartialEq for FileOffsetAt<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for FileOffsetAt<'_> {}

impl<'a> Sym<'a> {
    /// The address's offset in [`Sym::module`], where the address is in a file (`None` for
    /// the kernel, and for a virtual address no segment of the file holds).
    pub fn file_offset(&self) -> Option<FileOffset> {
        self.file_offset_at.get()
    }

    /// The name to show for `frame`, one of [`Sym::frames`], as llvm-symbolizer shows it: an
    /// inlined frame by its DWARF function's (demangled) name; the outermost frame, the
    /// function whose machine code this is, by the symbol table's name ([`Sym::name`]: libc's
    /// `__libc_malloc`, where DWARF says `__GI___libc_malloc`); `??` where neither names it.
    pub fn frame_name(&self, frame: &'a InlineFrame) -> &'a str {
        match &frame.function {
            Some(function) if frame.inlined => function.demangled.as_str(),
            _ if !self.name.is_empty() => self.name,
            Some(function) => function.demangled.as_str(),
            None => "??",
        }
    }

    /// A copy that owns its strings and frames, to keep past the batch.
    #[allow(clippy::wrong_self_convention, clippy::should_implement_trait)]
    pub fn to_owned(&self) -> OwnedSym {
        OwnedSym {
            name: self.name.to_string(),
            raw_name: self.raw_name.to_vec(),
            version: self.version.map(str::to_string),
            version_hidden: self.version_hidden,
            origin: self.origin,
            addr: self.addr,
            size: self.size,
            offset: self.offset,
            kind: self.kind,
            module: self.module.to_path_buf(),
            opened_as: self.opened_as.map(Path::to_path_buf),
            symbol_file: self.symbol_file.to_path_buf(),
            file_offset: self.file_offset(),
            build_id: self.build_id.map(<[u8]>::to_vec),
            kernel_module: self.kernel_module.map(str::to_string),
            frames: self.frames.to_vec(),
        }
    }
}

/// A [`Sym`] that owns its data (from [`Sym::to_owned`]); the fields mean the same.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct OwnedSym {
    pub name: String,
    pub raw_name: Vec<u8>,
    pub version: Option<String>,
    pub version_hidden: bool,
    pub origin: NameOrigin,
    pub addr: SymAddr,
    pub size: u64,
    pub offset: u64,
    pub kind: SymbolKind,
    pub module: PathBuf,
    pub opened_as: Option<PathBuf>,
    pub symbol_file: PathBuf,
    pub file_offset: Option<FileOffset>,
    pub build_id: Option<Vec<u8>>,
    pub kernel_module: Option<String>,
    pub frames: Vec<InlineFrame>,
}

/// Why an address has no [`Sym`].
#[derive(Debug)]
#[non_exhaustive]
pub enum NotFound {
    /// The address is in a file (or the kernel), but no symbol and no DWARF function of it
    /// covers the address (or a file offset lies in no segment of the file).
    NoSymbol,
    /// No mapping of the process contains the address.
    Unmapped,
    /// The address is mapped, but not from a file: heap, stack, anonymous memory (JIT code
    /// that no perf map names), the vDSO where its image has no symbol there, ...
    NotInFile(MappingKind),
    /// The file mapped at the address (or the kernel's kallsyms, vmlinux, a perf map) could
    /// not be read: the error names the path and the problem. The batch's other addresses
    /// are unaffected.
    FileError(Error),
    /// A kernel address, and the kernel hides its addresses (`kernel.kptr_restrict`, or no
    /// `CAP_SYSLOG`): kallsyms lists them all as 0. The error says how to fix it.
    KernelAddrsHidden(Error),
    /// A kernel address in a [`crate::Source::Stack`] given no kernel source.
    NoKernelSource,
}

/// What the batch answered at one index, without borrowing.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A symbol of an ELF part: the index of its [`FoundSym`] in [`Symbols::found`] and the
    /// address looked up.
    Elf { found: u32, addr: VirtAddr },
    /// No symbol, but a DWARF function of the ELF part's file covers `addr`.
    DwarfOnly { part: u32, addr: VirtAddr },
    /// A function of the ELF part's Go table covers `addr` (looked up again, as for
    /// kallsyms). Not its index: with it this variant would make every `Answer` 24 bytes
    /// instead of 16, which cost 3 % more instructions on `.symtab` batches (.ci/icount).
    Go { part: u32, addr: VirtAddr },
    /// A kallsyms part's text symbol covers `addr` (looked up again by [`Symbols::get`]: the
    /// lookup is deterministic on the immutable index, and keeping the borrowed answer would
    /// make the batch self-referential).
    Kallsyms { part: u32, addr: AbsAddr },
    /// A perf map part's line covers `addr` (looked up again, as for kallsyms).
    PerfMap { part: u32, addr: AbsAddr },
    /// A jitdump part's load covers `addr` (looked up again, as for kallsyms).
    JitDump { part: u32, addr: AbsAddr },
    /// A vDSO part's symbol covers the image offset (looked up again, as for kallsyms).
    Vdso { part: u32, offset: FileOffset },
    /// Nothing covers it: [`NotFound::NoSymbol`], the common case, kept without a box.
    NoSymbol,
    /// Nothing covers it, for another reason.
    NotFound(Box<NotFound>),
}

/// One distinct ELF symbol the batch's addresses hit, resolved when the batch was made: every
/// address in it reads its answer back from here (a few loads) instead of from the file's
/// index. The names stay in the file ([`SymbolSpans`]), held open by the part.
#[derive(Debug)]
pub(crate) struct FoundSym {
    /// The [`Part::Elf`] whose file (or MiniDebugInfo, `in_mini`) has the symbol.
    pub(crate) part: u32,
    pub(crate) in_mini: bool,
    pub(crate) spans: SymbolSpans,
    /// Whether the shown name is the file's computed (demangled) one, where it has one.
    pub(crate) demangled: bool,
}

/// A source that answered some of the batch's addresses, held open by the batch.
pub(crate) enum Part {
    Elf(ElfPart),
    Kallsyms(Arc<Kallsyms>),
    PerfMap(Arc<PerfMap>),
    JitDump(Arc<JitDump>),
    Vdso(Arc<ElfFile>),
}

/// An ELF file's answers: the file whose table answered, its MiniDebugInfo, its debug state.
pub(crate) struct ElfPart {
    /// The file whose symbol table answered (the file itself or its debug companion).
    pub(crate) file: Arc<LoadedElf>,
    /// The file's MiniDebugInfo, searched beside `file`'s `.dynsym`.
    pub(crate) mini: Option<Arc<LoadedElf>>,
    /// The file's Go table, where it is a Go binary whose symbols or DWARF are missing.
    pub(crate) go: Option<Arc<GoTable>>,
    /// The build-id of the file itself (not of its companion).
    pub(crate) build_id: Option<Box<[u8]>>,
    pub(crate) debug_file: Option<PathBuf>,
    pub(crate) debug_error: Option<Error>,
    /// The loadable segments of the file itself (not of its companion, whose program
    /// headers may not match its contents): the file offsets of found addresses are
    /// derived from them when read ([`Entry::file_offset`]).
    pub(crate) segments: Segments,
}

/// How one module is named (see [`Sym::module`]).
#[derive(Debug, Clone)]
pub(crate) struct ModuleName {
    pub(crate) shown: PathBuf,
    pub(crate) opened_as: Option<PathBuf>,
    pub(crate) kernel_module: Option<String>,
}

/// One input address's answer, with where it is and its frames.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) answer: Answer,
    /// Index into [`Symbols::modules`]; [`NO_MODULE`] where the address is in none.
    pub(crate) module: u32,
    /// The address's file offset, as given or computed; `None` also where an
    /// [`Answer::Elf`] or [`Answer::DwarfOnly`] address's offset is derived when read from
    /// its part's segments when asked ([`Sym::file_offset`]).
    pub(crate) file_offset: Option<FileOffset>,
    /// The address's range of [`Symbols::frames`] (also where nothing names it).
    pub(crate) frames: Range<u32>,
}

/// [`Entry::module`] of an address in no module.
pub(crate) const NO_MODULE: u32 = u32::MAX;

impl Entry {
    /// An address nothing names ([`NotFound::NoSymbol`]), made without a `NotFound` value:
    /// the hot case, and dropping even a `NoSymbol` runs `NotFound`'s drop glue out of line
    /// (40,000 calls, 1.2 % of the warm symtab batch of `.ci/icount` once `Error` grew a
    /// variant).
    pub(crate) const fn no_symbol() -> Entry {
        Entry {
            answer: Answer::NoSymbol,
            module: NO_MODULE,
            file_offset: None,
            frames: 0..0,
        }
    }

    pub(crate) fn not_found(reason: NotFound) -> Entry {
        Entry {
            answer: match reason {
                NotFound::NoSymbol => Answer::NoSymbol,
                reason => Answer::NotFound(Box::new(reason)),
            },
            module: NO_MODULE,
            file_offset: None,
            frames: 0..0,
        }
    }
}

/// The results of one batch: one answer per input address, in input order, for every kind
/// of [`crate::Source`]. Holds the files that answered open, so names are borrowed without
/// copies.
///
/// - [`Symbols::get`]: the [`Sym`] at an index, or `None`; [`Symbols::not_found`] says why.
/// - [`Symbols::result`] / [`Symbols::results`]: both at once.
/// - [`Symbols::lines`]: source lines, also where no symbol names the address.
/// - [`Symbols::module`] / [`Symbols::file_offset`]: where the address is, found or not.
pub struct Symbols {
    pub(crate) entries: Vec<Entry>,
    pub(crate) parts: Vec<Part>,
    /// The distinct ELF symbols that [`Answer::Elf`] answers point to.
    pub(crate) found: Vec<FoundSym>,
    pub(crate) modules: Vec<ModuleName>,
    /// The frames of every address, back to back.
    pub(crate) frames: Vec<InlineFrame>,
    pub(crate) demangle: bool,
}

impl std::fmt::Debug for Symbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.results()).finish()
    }
}

/// The reason behind [`Answer::NoSymbol`], borrowable for as long as any batch.
static NO_SYMBOL: NotFound = NotFound::NoSymbol;

impl Symbols {
    /// An empty batch that will hold `len` answers.
    pub(crate) fn with_capacity(len: usize, demangle: bool) -> Symbols {
        Symbols {
            entries: Vec::with_capacity(len),
            parts: Vec::new(),
            found: Vec::new(),
            modules: Vec::new(),
            frames: Vec::new(),
            demangle,
        }
    }

    /// Adds a module name and returns its index.
    pub(crate) fn add_module(&mut self, module: ModuleName) -> u32 {
        self.modules.push(module);
        // A batch has at most one module per input address, and inputs are slices: more than
        // u32::MAX would be 64 GiB of answers. Saturating keeps the invariant checkable.
        u32::try_from(self.modules.len() - 1).unwrap_or(NO_MODULE)
    }

    /// Adds a found symbol and returns its index.
    pub(crate) fn add_found(&mut self, found: FoundSym) -> u32 {
        self.found.push(found);
        // At most one per input address (see `add_module`).
        u32::try_from(self.found.len() - 1).unwrap_or(u32::MAX)
    }

    /// Adds a part and returns its index.
    pub(crate) fn add_part(&mut self, part: Part) -> u32 {
        self.parts.push(part);
        u32::try_from(self.parts.len() - 1).unwrap_or(u32::MAX)
    }

    /// Moves answers of `other` (a batch of some of this batch's addresses, e.g. one file's)
    /// into this batch: `other`'s `k`-th answer replaces this batch's answer at
    /// `target(k)`, and is dropped where that is `None`. Parts, modules and frames are
    /// appended and re-indexed.
    pub(crate) fn merge_into(&mut self, other: Symbols, target: impl Fn(usize) -> Option<usize>) {
        let part_base = u32::try_from(self.parts.len()).unwrap_or(u32::MAX);
        let module_base = u32::try_from(self.modules.len()).unwrap_or(u32::MAX);
        let frame_base = u32::try_from(self.frames.len()).unwrap_or(u32::MAX);
        let found_base = u32::try_from(self.found.len()).unwrap_or(u32::MAX);
        self.parts.extend(other.parts);
        self.found
            .extend(other.found.into_iter().map(|found| FoundSym {
                part: found.part.saturating_add(part_base),
                ..found
            }));
        self.modules.extend(other.modules);
        self.frames.extend(other.frames);
        for (k, mut entry) in other.entries.into_iter().enumerate() {
            let Some(slot) = target(k).and_then(|index| self.entries.get_mut(index)) else {
                continue;
            };
            match &mut entry.answer {
                Answer::Elf { found, .. } => *found = found.saturating_add(found_base),
                Answer::DwarfOnly { part, .. }
                | Answer::Go { part, .. }
                | Answer::Kallsyms { part, .. }
                | Answer::PerfMap { part, .. }
                | Answer::JitDump { part, .. }
                | Answer::Vdso { part, .. } => *part = part.saturating_add(part_base),
                Answer::NoSymbol | Answer::NotFound(_) => {}
            }
            if entry.module != NO_MODULE {
                entry.module = entry.module.saturating_add(module_base);
            }
            entry.frames = entry.frames.start.saturating_add(frame_base)
                ..entry.frames.end.saturating_add(frame_base);
            *slot = entry;
        }
    }

    /// Names every answer's module `module` (a file symbolized for the process or the kernel
    /// is shown as they name it, not by the path it was opened through).
    pub(crate) fn rename_modules(&mut self, module: ModuleName) {
        self.modules.clear();
        let index = self.add_module(module);
        for entry in &mut self.entries {
            entry.module = index;
        }
    }

    /// How many addresses were given (found or not).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the batch was empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The separate debug file that was read for the batch's (first) ELF file (its DWARF or
    /// its `.symtab`), if one was found. See [`Symbols::debug_files`] for every file's.
    pub fn debug_file(&self) -> Option<&Path> {
        self.debug_files().next()
    }

    /// The separate debug files read for the batch's ELF files, in the order the files were
    /// first met.
    pub fn debug_files(&self) -> impl Iterator<Item = &Path> + '_ {
        self.elf_parts()
            .filter_map(|part| part.debug_file.as_deref())
    }

    /// Why debug information could not be used, if it could not, for the batch's first file
    /// that had a problem: DWARF or MiniDebugInfo was malformed or unreadable, for the whole
    /// file or for some addresses. Those addresses were answered from the symbol tables that
    /// could be read. See [`Symbols::debug_errors`] for every file's.
    pub fn debug_error(&self) -> Option<&Error> {
        self.debug_errors().next()
    }

    /// Every file's debug-information problem (see [`Symbols::debug_error`]).
    pub fn debug_errors(&self) -> impl Iterator<Item = &Error> + '_ {
        self.elf_parts()
            .filter_map(|part| part.debug_error.as_ref())
    }

    fn elf_parts(&self) -> impl Iterator<Item = &ElfPart> + '_ {
        self.parts.iter().filter_map(|part| match part {
            Part::Elf(elf) => Some(elf),
            _ => None,
        })
    }

    /// The source lines of the `index`-th input address, as [`Sym::frames`], and also where
    /// [`Symbols::get`] has no answer: a line-table row that no symbol and no DWARF function
    /// covers (the padding after a function, code the compiler made) still has a file and
    /// line, as llvm-symbolizer prints them under `??`. Empty without DWARF.
    pub fn lines(&self, index: usize) -> &[InlineFrame] {
        self.entries
            .get(index)
            .map(|entry| self.entry_frames(entry))
            .unwrap_or_default()
    }

    fn entry_frames(&self, entry: &Entry) -> &[InlineFrame] {
        let range = entry.frames.start as usize..entry.frames.end as usize;
        self.frames.get(range).unwrap_or_default()
    }

    /// The file the `index`-th address is in, as [`Sym::module`] names it, found or not;
    /// `None` where it is in no file (unmapped, anonymous memory, ...).
    pub fn module(&self, index: usize) -> Option<&Path> {
        let entry = self.entries.get(index)?;
        Some(&self.modules.get(entry.module as usize)?.shown)
    }

    /// The `index`-th address's offset in its file ([`Sym::file_offset`]), found or not.
    pub fn file_offset(&self, index: usize) -> Option<FileOffset> {
        self.entry_file_offset(self.entries.get(index)?).get()
    }

    /// `entry`'s file offset: stored, or to be derived from its ELF part's segments.
    fn entry_file_offset(&self, entry: &Entry) -> FileOffsetAt<'_> {
        if entry.file_offset.is_some() {
            return FileOffsetAt::Known(entry.file_offset);
        }
        let part = match &entry.answer {
            Answer::Elf { found, .. } => self.found.get(*found as usize).map(|f| f.part),
            Answer::DwarfOnly { part, .. } | Answer::Go { part, .. } => Some(*part),
            _ => None,
        };
        match (&entry.answer, part) {
            (
                Answer::Elf { addr, .. } | Answer::DwarfOnly { addr, .. } | Answer::Go { addr, .. },
                Some(part),
            ) => match self.parts.get(part as usize) {
                Some(Part::Elf(elf)) => FileOffsetAt::InSegments(&elf.segments, *addr),
                _ => FileOffsetAt::Known(None),
            },
            _ => FileOffsetAt::Known(None),
        }
    }

    /// Why the `index`-th address has no symbol; `None` where it has one (or `index` is out
    /// of range).
    pub fn not_found(&self, index: usize) -> Option<&NotFound> {
        self.result(index).err()
    }

    /// The `index`-th answer: its symbol, or why there is none. An `index` out of range is
    /// [`NotFound::NoSymbol`].
    pub fn result(&self, index: usize) -> Result<Sym<'_>, &NotFound> {
        let Some(entry) = self.entries.get(index) else {
            return Err(&NO_SYMBOL);
        };
        match &entry.answer {
            Answer::NotFound(reason) => Err(reason),
            Answer::NoSymbol => Err(&NO_SYMBOL),
            _ => self.get_entry(entry).ok_or(&NO_SYMBOL),
        }
    }

    /// Every answer in input order, as [`Symbols::result`].
    /// Like [`Symbols::iter`], it asks for the names ahead.
    pub fn results(&self) -> impl ExactSizeIterator<Item = Result<Sym<'_>, &NotFound>> + '_ {
        (0..self.entries.len()).map(|i| {
            self.prefetch_ahead_of(i);
            self.result(i)
        })
    }

    /// The symbol of the `index`-th input address; `None` if nothing covers it (see
    /// [`Symbols::not_found`] for why) or `index` is out of range.
    pub fn get(&self, index: usize) -> Option<Sym<'_>> {
        self.get_entry(self.entries.get(index)?)
    }

    /// The symbols in input order, `None` where nothing covers an address.
    ///
    /// Faster than [`Symbols::get`] for each index in turn: it asks the memory for the names
    /// of the answers a few places ahead while the caller reads this one, so that a batch of
    /// scattered addresses waits for its names' cache misses together instead of one by one.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Option<Sym<'_>>> + '_ {
        self.entries.iter().enumerate().map(|(i, entry)| {
            self.prefetch_ahead_of(i);
            self.get_entry(entry)
        })
    }

    /// Asks for the names of the answers ahead of the `i`-th (see [`Symbols::iter`]).
    #[inline]
    fn prefetch_ahead_of(&self, i: usize) {
        if let Some(ahead) = self.entries.get(i + 2 * PREFETCH_DISTANCE) {
            self.prefetch_found(ahead);
        }
        if let Some(ahead) = self.entries.get(i + PREFETCH_DISTANCE) {
            self.prefetch_name(ahead);
        }
    }

    /// Starts loading the [`FoundSym`] of `entry` (if it has one) into the cache.
    #[inline]
    fn prefetch_found(&self, entry: &Entry) {
        if let Answer::Elf { found, .. } = entry.answer {
            if let Some(found) = self.found.get(found as usize) {
                prefetch(std::ptr::from_ref(found).cast());
            }
        }
    }

    /// Starts loading the first and last bytes of `entry`'s name (if it has an ELF symbol)
    /// into the cache; its [`FoundSym`] was asked for [`PREFETCH_DISTANCE`] answers ago.
    #[inline]
    fn prefetch_name(&self, entry: &Entry) {
        let Answer::Elf { found, .. } = entry.answer else {
            return;
        };
        let Some((found, _, file)) = self.found_in(found) else {
            return;
        };
        let name = file.elf.name_bytes(found.spans.name);
        if let (Some(first), Some(last)) = (name.first(), name.last()) {
            prefetch(first);
            prefetch(last);
        }
    }

    #[inline]
    fn get_entry(&self, entry: &Entry) -> Option<Sym<'_>> {
        match &entry.answer {
            Answer::Elf { found, addr } => self.elf_sym(entry, *found, *addr),
            Answer::NoSymbol | Answer::NotFound(_) => None,
            _ => self.other_sym(entry),
        }
    }

    /// The [`Sym`] of an [`Answer::Elf`]: the common answer, kept small enough to inline into
    /// a caller's loop (which then loads only the fields it reads).
    #[inline]
    fn elf_sym(&self, entry: &Entry, found: u32, addr: VirtAddr) -> Option<Sym<'_>> {
        let (found, elf, file) = self.found_in(found)?;
        let spans = &found.spans;
        let raw_name = file.elf.name_bytes(spans.name);
        let computed = if found.demangled {
            file.computed_name(spans.id)
        } else {
            None
        };
        let name = match computed {
            Some(name) => name,
            None => match file.elf.name_str(spans.name) {
                Some(name) => name,
                None => valid_prefix(raw_name),
            },
        };
        let version = match spans.version {
            Some(version) => file.elf.name_str(version),
            None => None,
        };
        let module = self.modules.get(entry.module as usize);
        Some(Sym {
            name,
            raw_name,
            version,
            version_hidden: spans.version_hidden,
            origin: NameOrigin::Table(spans.origin),
            addr: SymAddr::Virt(spans.addr),
            size: spans.size,
            offset: addr.0.wrapping_sub(spans.addr.0),
            kind: spans.kind,
            module: module.map_or(Path::new(""), |m| m.shown.as_path()),
            opened_as: module.and_then(|m| m.opened_as.as_deref()),
            symbol_file: file.elf.path(),
            file_offset_at: match entry.file_offset {
                Some(_) => FileOffsetAt::Known(entry.file_offset),
                None => FileOffsetAt::InSegments(&elf.segments, addr),
            },
            build_id: elf.build_id.as_deref(),
            kernel_module: module.and_then(|m| m.kernel_module.as_deref()),
            frames: self.entry_frames(entry),
        })
    }

    /// The found symbol at `index`, its part and the file whose table has it (the part's file
    /// or its MiniDebugInfo).
    #[inline]
    fn found_in(&self, index: u32) -> Option<(&FoundSym, &ElfPart, &LoadedElf)> {
        let found = self.found.get(index as usize)?;
        let Some(Part::Elf(elf)) = self.parts.get(found.part as usize) else {
            return None;
        };
        let file = match (&elf.mini, found.in_mini) {
            (Some(mini), true) => mini,
            _ => &elf.file,
        };
        Some((found, elf, file))
    }

    /// The [`Sym`] of every answer but [`Answer::Elf`], out of the callers' loops.
    #[inline(never)]
    fn other_sym(&self, entry: &Entry) -> Option<Sym<'_>> {
        let from_entry = self.entry_sym(entry);
        let part = |part: &u32| self.parts.get(*part as usize);
        match (
            &entry.answer,
            entry_part(&entry.answer).and_then(|p| part(&p)),
        ) {
            (Answer::DwarfOnly { addr, .. }, Some(Part::Elf(elf))) => {
                // Pushed only with frames whose outermost has a function.
                let function = from_entry.frames.last()?.function.as_ref()?;
                Some(Sym {
                    name: if self.demangle {
                        &function.demangled
                    } else {
                        &function.raw
                    },
                    raw_name: function.raw.as_bytes(),
                    origin: NameOrigin::Dwarf,
                    addr: SymAddr::Virt(*addr),
                    symbol_file: elf.file.elf.path(),
                    build_id: elf.build_id.as_deref(),
                    ..from_entry
                })
            }
            (Answer::Go { addr, .. }, Some(Part::Elf(elf))) => {
                let go = elf.go.as_ref()?;
                // Found when the batch was made; the table does not change.
                let function = go.find_function(*addr).ok()??;
                Some(Sym {
                    name: function.name,
                    raw_name: function.name.as_bytes(),
                    origin: NameOrigin::GoTable,
                    addr: SymAddr::Virt(function.entry),
                    size: function.end.0.saturating_sub(function.entry.0),
                    offset: addr.0.wrapping_sub(function.entry.0),
                    symbol_file: go.elf().path(),
                    build_id: elf.build_id.as_deref(),
                    ..from_entry
                })
            }
            (Answer::Kallsyms { addr, .. }, Some(Part::Kallsyms(kallsyms))) => {
                let sym = kallsyms.find_symbol(*addr).ok()??;
                Some(Sym {
                    name: sym.name,
                    raw_name: sym.name.as_bytes(),
                    origin: NameOrigin::Kallsyms,
                    addr: SymAddr::Abs(sym.addr),
                    size: sym.size,
                    offset: sym.offset,
                    symbol_file: kallsyms.path(),
                    file_offset_at: FileOffsetAt::Known(None),
                    kernel_module: sym.module,
                    ..from_entry
                })
            }
            (Answer::PerfMap { addr, .. }, Some(Part::PerfMap(map))) => {
                let sym = map.find(*addr)?;
                Some(Sym {
                    name: sym.name,
                    raw_name: sym.name.as_bytes(),
                    origin: NameOrigin::PerfMap,
                    addr: SymAddr::Abs(sym.start),
                    size: sym.size,
                    offset: sym.offset,
                    symbol_file: map.path(),
                    ..from_entry
                })
            }
            (Answer::JitDump { addr, .. }, Some(Part::JitDump(dump))) => {
                let code = dump.find(*addr)?;
                Some(Sym {
                    name: code.name,
                    raw_name: code.name.as_bytes(),
                    origin: NameOrigin::JitDump,
                    addr: SymAddr::Abs(code.start),
                    size: code.size,
                    offset: code.offset,
                    symbol_file: dump.path(),
                    ..from_entry
                })
            }
            (Answer::Vdso { offset, .. }, Some(Part::Vdso(elf))) => {
                let sym = elf.find_symbol_at_file_offset(*offset).ok()??;
                let virt = elf
                    .segments()
                    .file_offset_to_virt(*offset)
                    .unwrap_or(sym.addr);
                Some(Sym {
                    name: sym.name_str.unwrap_or_else(|| valid_prefix(sym.name)),
                    raw_name: sym.name,
                    version: sym.version.and_then(|v| std::str::from_utf8(v).ok()),
                    version_hidden: sym.version_hidden,
                    origin: NameOrigin::Table(sym.origin),
                    addr: SymAddr::Virt(sym.addr),
                    size: sym.size,
                    offset: virt.0.wrapping_sub(sym.addr.0),
                    kind: sym.kind,
                    symbol_file: from_entry.module,
                    build_id: elf.build_id(),
                    ..from_entry
                })
            }
            _ => None,
        }
    }

    /// What a [`Sym`] of `entry` takes from the entry itself (its module, frames and file
    /// offset), with the rest as for a function of no size found at its start: each answer
    /// of [`Symbols::other_sym`] states its name, origin, address and file over it.
    fn entry_sym(&self, entry: &Entry) -> Sym<'_> {
        let module = self.modules.get(entry.module as usize);
        let (module, opened_as, kernel_module) = match module {
            Some(m) => (
                m.shown.as_path(),
                m.opened_as.as_deref(),
                m.kernel_module.as_deref(),
            ),
            None => (Path::new(""), None, None),
        };
        Sym {
            name: "",
            raw_name: &[],
            version: None,
            version_hidden: false,
            origin: NameOrigin::Dwarf,
            addr: SymAddr::Virt(VirtAddr(0)),
            size: 0,
            offset: 0,
            kind: SymbolKind::Function,
            module,
            opened_as,
            symbol_file: module,
            file_offset_at: self.entry_file_offset(entry),
            build_id: None,
            kernel_module,
            frames: self.entry_frames(entry),
        }
    }
}

/// The part an answer other than [`Answer::Elf`] was found in.
fn entry_part(answer: &Answer) -> Option<u32> {
    match answer {
        Answer::DwarfOnly { part, .. }
        | Answer::Go { part, .. }
        | Answer::Kallsyms { part, .. }
        | Answer::PerfMap { part, .. }
        | Answer::JitDump { part, .. }
        | Answer::Vdso { part, .. } => Some(*part),
        Answer::Elf { .. } | Answer::NoSymbol | Answer::NotFound(_) => None,
    }
}

/// How many answers ahead [`Symbols::iter`] asks for a name (and twice as far for the found
/// symbol that locates it): far enough for a miss to memory to complete while the caller
/// handles the answers in between, near enough for the lines to stay in the cache.
const PREFETCH_DISTANCE: usize = 8;

/// Asks the CPU to start loading the cache line at `at`; no effect on the program's
/// results (a hint, never a fault), and nothing on targets without a stable way to ask.
#[inline(always)]
fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of every x86_64 target, and a prefetch reads nothing the program
    // sees and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// The longest UTF-8 prefix of `bytes` (all of it for a valid name).
fn valid_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(name) => name,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

#[cfg(test)]
mod layout_tests {
    /// Every answer of a batch is one `Answer`: a variant that outgrows 16 bytes makes all of
    /// them larger (an index added to `Answer::Go` cost 3 % more instructions on `.symtab`
    /// batches in .ci/icount).
    #[test]
    fn an_answer_is_16_bytes() {
        assert_eq!(std::mem::size_of::<super::Answer>(), 16);
    }
}
