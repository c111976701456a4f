//! The address space an unwinder walks: which file is mapped where. A [`Module`] is one
//! mapping (an absolute address range, the file offset it starts at, the ELF file); every
//! mapping of one file shares that file's [`ModuleCfi`]. Fill [`Modules`] from a process's
//! maps ([`Modules::from_process_maps`]) or from perf's MMAP/MMAP2 records ([`Modules::add`]).

use std::ops::Range;
use std::sync::Arc;

use crate::addr::{AbsAddr, FileOffset, VirtAddr};
use crate::debuginfo::DebugFinder;
use crate::elf::ElfFile;
use crate::process::{file_offset_in, Mapping, ProcessMaps};

use super::cfi::ModuleCfi;
use super::jit::{jit_elf, TEXT_OFFSET};
use crate::process::JitCode;

/// One mapping of an ELF file.
#[derive(Debug, Clone)]
pub struct Module {
    /// The absolute addresses mapped.
    pub range: Range<AbsAddr>,
    /// The file offset mapped at `range.start`.
    pub file_offset: FileOffset,
    /// Index of the file's CFI in [`Modules`] (shared by the file's mappings).
    cfi: u32,
    /// Generated code with its jitdump's tables ([`Modules::add_jit_code`]), not a file.
    jit: bool,
}

impl Module {
    /// The ELF virtual address of the absolute address `addr` (in this mapping), through
    /// its file offset and the file's segments (`None` where no `PT_LOAD` segment holds
    /// that byte). Through the file offset, not a bias taken at the mapping's start: a
    /// mapping starts at a page boundary, which may be in the previous segment's bytes.
    pub fn virt_addr(&self, elf: &ElfFile, addr: AbsAddr) -> Option<VirtAddr> {
        elf.segments()
            .file_offset_to_virt(self.file_offset_of(addr)?)
    }

    /// The file offset of the absolute address `addr` (`None` outside this mapping), as perf
    /// and `/proc/PID/maps` compute it ([`crate::process::file_offset_in`]).
    pub fn file_offset_of(&self, addr: AbsAddr) -> Option<FileOffset> {
        file_offset_in(&self.range, self.file_offset, addr)
    }
}

/// The CFI of one ELF file (`.eh_frame`, `.debug_frame`, its Go table), parsed lazily
/// and with its compiled rules cached, to share between several [`Modules`]
/// ([`Modules::add_shared`]). Cloning shares it.
#[derive(Debug, Clone)]
pub struct FileCfi(Arc<ModuleCfi>);

impl FileCfi {
    /// The CFI of `elf`; `finder` finds its debug companion for `.debug_frame` when the file
    /// has none (`None`: do not look).
    pub fn new(elf: Arc<ElfFile>, finder: Option<DebugFinder>) -> FileCfi {
        FileCfi(Arc::new(ModuleCfi::new(elf, finder)))
    }

    /// The file.
    pub fn elf(&self) -> &Arc<ElfFile> {
        self.0.elf()
    }
}

/// The mapped files of one address space, sorted by address. Cloning is cheap (the files'
/// parsed CFI is shared): a forked process starts with its parent's.
#[derive(Debug, Default, Clone)]
pub struct Modules {
    modules: Vec<Module>,
    cfis: Vec<Arc<ModuleCfi>>,
    finder: Option<DebugFinder>,
}

impl Modules {
    /// No modules; `.debug_frame` is read from the files themselves only.
    pub fn new() -> Modules {
        Modules::default()
    }

    /// No modules; files without `.debug_frame` (and with addresses `.eh_frame` does not
    /// cover) get it from their debug companion, found by `finder`.
    pub fn with_debug_finder(finder: DebugFinder) -> Modules {
        Modules {
            finder: Some(finder),
            ..Modules::default()
        }
    }

    /// Adds a mapping of `elf` at `range` from `file_offset`. A mapping that overlaps an
    /// earlier one replaces it where they overlap (as a later `mmap` does). Mappings of the
    /// same `Arc<ElfFile>` share its parsed CFI.
    pub fn add(&mut self, range: Range<AbsAddr>, file_offset: FileOffset, elf: Arc<ElfFile>) {
        if range.start >= range.end {
            return;
        }
        let cfi = match self.cfis.iter().position(|c| Arc::ptr_eq(c.elf(), &elf)) {
            Some(i) => i,
            None => {
                self.cfis.push(Arc::new(ModuleCfi::new(
                    Arc::clone(&elf),
                    self.finder.clone(),
                )));
                self.cfis.len() - 1
            }
        };
        self.insert(range, file_offset, cfi);
    }

    /// Adds a mapping of `cfi`'s file at `range` from `file_offset`, as [`Modules::add`]
    /// does, with the file's CFI made once by the caller and shared: every `Modules` given
    /// the same [`FileCfi`] (the processes of a system-wide recording mapping one libc)
    /// shares its parsed tables and compiled rules, where `add` makes them anew for each
    /// `Modules` (shared only by its clones). The `FileCfi`'s debug finder is used for it,
    /// not this `Modules`' own.
    pub fn add_shared(&mut self, range: Range<AbsAddr>, file_offset: FileOffset, cfi: &FileCfi) {
        if range.start >= range.end {
            return;
        }
        let index = match self.cfis.iter().position(|c| Arc::ptr_eq(c, &cfi.0)) {
            Some(i) => i,
            None => {
                self.cfis.push(Arc::clone(&cfi.0));
                self.cfis.len() - 1
            }
        };
        self.insert(range, file_offset, index);
    }

    /// Adds the generated code `code` of a jitdump with the unwind tables its JIT wrote for
    /// it (`JIT_CODE_UNWINDING_INFO`), made into the file `perf inject --jit` would write
    /// (see `jit.rs`) and mapped over the code's range, replacing the code added so over
    /// those addresses before (addresses are reused as code is collected: add a dump's loads
    /// in its order, [`crate::process::JitDump::nth`], up to the time being unwound). Code
    /// the JIT wrote no tables for removes that earlier code's and adds nothing: its frames
    /// follow the frame pointer. Code over a mapped file (V8 names its builtins in the
    /// binary's text) leaves the file's CFI alone. Returns whether the code's tables were
    /// added.
    pub fn add_jit_code(&mut self, code: &JitCode<'_>) -> bool {
        let Some(end) = code
            .start
            .checked_add(code.size)
            .filter(|&e| e > code.start)
        else {
            return false;
        };
        let range = code.start..end;
        let overlaps = |m: &Module| m.range.start < range.end && range.start < m.range.end;
        if self.modules.iter().any(|m| !m.jit && overlaps(m)) {
            return false;
        }
        // The code that was here before is gone.
        self.modules.retain(|m| !overlaps(m));
        let elf = match jit_elf(code) {
            None => return false,
            Some(Ok(elf)) => Arc::new(elf),
            Some(Err(e)) => {
                log::debug!("{e}; its frames follow the frame pointer");
                return false;
            }
        };
        self.cfis.push(Arc::new(ModuleCfi::new(elf, None)));
        self.insert(range, FileOffset(TEXT_OFFSET), self.cfis.len() - 1);
        if let Some(module) = self.find_mut(code.start) {
            module.jit = true;
        }
        true
    }

    fn find_mut(&mut self, addr: AbsAddr) -> Option<&mut Module> {
        let after = self.modules.partition_point(|m| m.range.start <= addr);
        self.modules.get_mut(after.checked_sub(1)?)
    }

    /// Maps `range` (not empty) to the CFI at `cfi`, replacing what it overlaps.
    fn insert(&mut self, range: Range<AbsAddr>, file_offset: FileOffset, cfi: usize) {
        self.modules
            .retain(|m| m.range.end <= range.start || m.range.start >= range.end);
        let at = self
            .modules
            .partition_point(|m| m.range.start < range.start);
        self.modules.insert(
            at,
            Module {
                range,
                file_offset,
                cfi: u32::try_from(cfi).unwrap_or(u32::MAX),
                jit: false,
            },
        );
    }

    /// The modules of a process from its maps: each file mapping for which `open` gives the
    /// ELF file. With a [`crate::Symbolizer`], give it the symbolizer's maps
    /// ([`crate::Symbolizer::process_maps`]) and files ([`crate::Symbolizer::process_file`]:
    /// opened confined to the process's root, and shared with its batches of the process).
    pub fn from_process_maps(
        maps: &ProcessMaps,
        finder: Option<DebugFinder>,
        mut open: impl FnMut(&Mapping) -> Option<Arc<ElfFile>>,
    ) -> Modules {
        let mut modules = Modules {
            finder,
            ..Modules::default()
        };
        for mapping in maps.mappings() {
            if !mapping.is_file() {
                continue;
            }
            if let Some(elf) = open(mapping) {
                modules.add(mapping.range.clone(), mapping.file_offset, elf);
            }
        }
        modules
    }

    /// The modules of a core's process, in one call: each mapping whose file was matched
    /// ([`crate::core::CoreFile::files`]: by path, by build-id, or unverified where the core
    /// did not record the build-id), and the vDSO image read from the core's memory.
    /// Mappings of unmatched files (another build, missing) are left out: frames there
    /// follow the frame pointer, never another file's CFI.
    pub fn from_core(core: &crate::core::CoreFile, finder: Option<DebugFinder>) -> Modules {
        let mut modules = Modules {
            finder,
            ..Modules::default()
        };
        for mapping in core.mappings() {
            let Some(Ok((elf, _))) = core.file_of(mapping).map(|f| &f.file) else {
                continue;
            };
            modules.add(mapping.range.clone(), mapping.file_offset, Arc::clone(elf));
        }
        if let Some((range, elf)) = core.vdso() {
            modules.add(range.clone(), FileOffset(0), Arc::clone(elf));
        }
        modules
    }

    /// The module mapped at the absolute address `addr`.
    pub fn find(&self, addr: AbsAddr) -> Option<&Module> {
        let after = self.modules.partition_point(|m| m.range.start <= addr);
        let module = self.modules.get(after.checked_sub(1)?)?;
        (addr < module.range.end).then_some(module)
    }

    /// The ELF file of a module.
    pub fn elf(&self, module: &Module) -> Option<&Arc<ElfFile>> {
        self.cfi(module).map(|cfi| cfi.elf())
    }

    /// Every module, by address.
    pub fn iter(&self) -> impl Iterator<Item = &Module> {
        self.modules.iter()
    }

    pub(crate) fn cfi(&self, module: &Module) -> Option<&Arc<ModuleCfi>> {
        self.cfis.get(module.cfi as usize)
    }

    /// How many distinct files are mapped.
    pub fn file_count(&self) -> usize {
        self.cfis.len()
    }
}

impl Module {
    /// Whether the absolute address `addr` is in this mapping.
    pub fn contains(&self, addr: AbsAddr) -> bool {
        self.range.contains(&addr)
    }
}
