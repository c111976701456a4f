//! A file as the symbolizer keeps it in its cache: the ELF file, the names demangled so far
//! (each distinct name is demangled once per file, not once per address), and, found on first
//! need, its debug companion and DWARF.

use std::sync::{Arc, Mutex, OnceLock};

use crate::confine::ConfinedRoot;
use crate::debuginfo::{mini_debuginfo, DebugFinder, FoundBy};
use crate::demangle::demangle;
use crate::dwarf::{DwarfInfo, DwarfSections};
use crate::elf::{ElfFile, ElfSymbol, SymbolId, SymbolKind};
use crate::error::{Error, Result};
use crate::gopclntab::GoTable;

/// One slot per indexed symbol: unset until first needed, then `None` when demangling leaves
/// the name as it is (plain C names), or the name to show.
type NameSlots = Box<[OnceLock<Option<Box<str>>>]>;

/// What the symbolizer reads besides symbol tables (set on its builder).
#[derive(Debug, Clone)]
pub(crate) struct DebugOptions {
    /// Where to look for separate debug files; `None`: do not look.
    pub(crate) finder: Option<DebugFinder>,
    /// Read DWARF for source lines and inlined frames.
    pub(crate) source_lines: bool,
    /// Threads a batch may use ([`crate::SymbolizerBuilder::threads`]); with two or more,
    /// a debug file's sections are decompressed on two.
    pub(crate) threads: usize,
}

impl DebugOptions {
    /// The options for a file of a process whose root directory is `root` (a container's,
    /// seen from the host as `/proc/PID/root`): each debug dir inside that root first, then
    /// the host's, so a container's own debug files win for its own binaries. Candidates
    /// inside the root are opened confined to it.
    pub(crate) fn inside(&self, root: &ConfinedRoot) -> DebugOptions {
        let finder = self.finder.as_ref().map(|finder| {
            let inside = finder.debug_dirs().iter().map(|dir| root.host_path(dir));
            let dirs = inside.chain(finder.debug_dirs().iter().cloned()).collect();
            finder.with_debug_dirs(dirs).confined_to(root.clone())
        });
        DebugOptions {
            finder,
            source_lines: self.source_lines,
            threads: self.threads,
        }
    }
}

pub(crate) struct LoadedElf {
    pub(crate) elf: Arc<ElfFile>,
    /// Shown names of code and data symbols, by symbol index; allocated on first use, since a
    /// symbolizer without demangling never needs them.
    shown_names: OnceLock<(NameSlots, NameSlots)>,
    /// Found on the first batch that needs it.
    debug: OnceLock<DebugState>,
    /// How many pages of shrunk mapped files the `SIGBUS` handler had replaced when this was
    /// made ([`crate::elf::shrinks`]); see [`LoadedElf::opened_before_a_shrink`].
    shrinks_seen: u64,
}

/// A file's debug information, as found once.
pub(crate) struct DebugState {
    /// The separate debug file, when one was looked for and found.
    pub(crate) companion: Option<Arc<LoadedElf>>,
    /// How the companion was found.
    pub(crate) found_by: Option<FoundBy>,
    /// Whether symbols are looked up in the companion: it has a `.symtab` and the file has
    /// none (a stripped binary whose `.dynsym` holds only exported names).
    pub(crate) symbols_from_companion: bool,
    /// The file's MiniDebugInfo (`.gnu_debugdata`), read when the file has no `.symtab` and
    /// no companion gives one: its `.symtab` holds the functions `.dynsym` lacks, so both
    /// are searched (see `Symbolizer::symbolize_elf`).
    pub(crate) mini: Option<Arc<LoadedElf>>,
    /// Why a debug source other than DWARF (MiniDebugInfo) could not be used.
    pub(crate) error: Option<Error>,
    /// The DWARF (of the file, or else of its companion), `None` when neither has any or
    /// source lines are off; the error when it could not be read. An error does not fail a
    /// batch: its addresses get symbol-table answers and the batch reports the error.
    pub(crate) dwarf: std::result::Result<Option<Mutex<DwarfInfo>>, Error>,
    /// The Go table (`.gopclntab`) of a Go binary that lacks a `.symtab` (for names) or
    /// DWARF (for lines); `None` for other files.
    pub(crate) go: Option<Arc<GoTable>>,
    /// What to subtract from the file's addresses to look them up in `dwarf`: not 0 only
    /// for the DWARF of a companion split off before the file was prelinked.
    pub(crate) dwarf_bias: u64,
}

/// `companion` (the debug file found for `elf`), answering at `elf`'s addresses when they
/// differ from its own (a prelinked binary: see [`ElfFile::prelink_bias`]). Moving an
/// `ElfFile` needs it unshared; a shared one (held by a cache too) is opened again.
fn rebased_companion(elf: &ElfFile, companion: Arc<ElfFile>) -> Arc<ElfFile> {
    let Some(bias) = companion.prelink_bias(elf).filter(|&bias| bias != 0) else {
        return companion;
    };
    log::debug!(
        "{}: its debug file {} has addresses {bias:#x} lower (prelinked): rebased",
        elf.path().display(),
        companion.path().display()
    );
    let owned = match Arc::try_unwrap(companion) {
        Ok(owned) => owned,
        Err(shared) => match ElfFile::open_under(shared.root(), shared.path()) {
            Ok(reopened) => reopened,
            Err(e) => {
                log::debug!("{e}: its debug file is used at its own addresses");
                return shared;
            }
        },
    };
    Arc::new(owned.with_address_bias(bias))
}

impl LoadedElf {
    pub(crate) fn new(elf: ElfFile) -> Self {
        LoadedElf {
            elf: Arc::new(elf),
            shown_names: OnceLock::new(),
            debug: OnceLock::new(),
            shrinks_seen: crate::elf::shrinks(),
        }
    }

    /// Like [`LoadedElf::new`], for a file already shared (a core's matched file).
    pub(crate) fn from_arc(elf: Arc<ElfFile>) -> Self {
        LoadedElf {
            elf,
            shown_names: OnceLock::new(),
            debug: OnceLock::new(),
            shrinks_seen: crate::elf::shrinks(),
        }
    }

    /// Whether a mapped file shrank since this was made, so that this file, its companion,
    /// its dwz supplementary file or its `.dwp` may now read zeros where the old file had
    /// bytes (`elf/sigbus.rs`). Which one shrank is not tracked (the DWARF's files are held
    /// inside gimli's readers): any shrink in the process makes every cached file be opened
    /// again once, a cost paid only when a file really shrank under its mapping.
    pub(crate) fn opened_before_a_shrink(&self) -> bool {
        crate::elf::shrinks() != self.shrinks_seen || self.elf.shrunk()
    }

    /// Bytes of the file and of its debug companion and MiniDebugInfo, if any is open.
    pub(crate) fn mapped_len(&self) -> usize {
        let extra = self.debug.get().map_or(0, |d| {
            d.companion.as_ref().map_or(0, |c| c.elf.mapped_len())
                + d.mini.as_ref().map_or(0, |m| m.elf.mapped_len())
        });
        self.elf.mapped_len() + extra
    }

    /// The file's debug information, found (and its DWARF unit headers read) on first call;
    /// the options of that first call decide (one symbolizer passes the same ones, but for
    /// a process's file the debug dirs inside its root come first). `options` is called only
    /// then, so building them costs nothing on the batches after.
    pub(crate) fn debug_state(&self, options: impl FnOnce() -> DebugOptions) -> &DebugState {
        self.debug
            .get_or_init(|| DebugState::find(&self.elf, &options()))
    }

    /// The file whose symbol table answers lookups: this one, or its debug companion.
    pub(crate) fn symbol_file<'s>(self: &'s Arc<Self>, debug: &'s DebugState) -> &'s Arc<Self> {
        match &debug.companion {
            Some(companion) if debug.symbols_from_companion => companion,
            _ => self,
        }
    }

    fn slots(&self) -> Result<&(NameSlots, NameSlots)> {
        if let Some(slots) = self.shown_names.get() {
            return Ok(slots);
        }
        let (code, data) = self.elf.symbol_count()?;
        let empty = |n: usize| (0..n).map(|_| OnceLock::new()).collect::<NameSlots>();
        Ok(self.shown_names.get_or_init(|| (empty(code), empty(data))))
    }

    /// Computes, on first use, the demangled (or, for a name that is not UTF-8, the lossily
    /// converted) name of the symbol `id`; [`LoadedElf::computed_name`] then returns it.
    pub(crate) fn compute_shown_name(&self, id: SymbolId) -> Result<()> {
        let slot = self.slot(id)?;
        if slot.get().is_some() {
            return Ok(());
        }
        let Some(symbol) = self.elf.symbol_by_id(id)? else {
            return Ok(());
        };
        slot.get_or_init(|| shown_name(&symbol));
        Ok(())
    }

    /// The name computed earlier by [`LoadedElf::compute_shown_name`], if any. Inlined into
    /// the read-back of every answer of a batch: a few loads, no error path.
    #[inline]
    pub(crate) fn computed_name(&self, id: SymbolId) -> Option<&str> {
        let (code, data) = self.shown_names.get()?;
        let slots = match id.kind() {
            SymbolKind::Function => code,
            SymbolKind::Data => data,
        };
        slots.get(id.index() as usize)?.get()?.as_deref()
    }

    fn slot(&self, id: SymbolId) -> Result<&OnceLock<Option<Box<str>>>> {
        let (code, data) = self.slots()?;
        let slots = match id.kind() {
            SymbolKind::Function => code,
            SymbolKind::Data => data,
        };
        // Ids come from this file's own index, whose counts sized the slots; an id from
        // another file is a caller bug that the empty fallback turns into "no name".
        Ok(slots.get(id.index() as usize).unwrap_or(&EMPTY_SLOT))
    }
}

impl DebugState {
    fn find(elf: &Arc<ElfFile>, options: &DebugOptions) -> DebugState {
        let has_dwarf = has_bytes(elf, ".debug_info");
        let has_symtab = has_bytes(elf, ".symtab");
        let mut state = DebugState {
            companion: None,
            found_by: None,
            symbols_from_companion: false,
            mini: None,
            error: None,
            dwarf: Ok(None),
            go: None,
            dwarf_bias: 0,
        };
        // As gdb: a file with its own DWARF and symbols needs no companion.
        let wants_companion = !has_symtab || (options.source_lines && !has_dwarf);
        if let (Some(finder), true) = (&options.finder, wants_companion) {
            match finder.find(elf) {
                Ok(Some(found)) => {
                    state.symbols_from_companion = !has_symtab && has_bytes(&found.elf, ".symtab");
                    state.found_by = Some(found.found_by);
                    let companion = rebased_companion(elf, found.elf);
                    state.dwarf_bias = companion.address_bias();
                    state.companion = Some(Arc::new(LoadedElf::from_arc(companion)));
                }
                Ok(None) => {}
                Err(e) => state.dwarf = Err(e),
            }
        }
        if !has_symtab && !state.symbols_from_companion {
            match mini_debuginfo(elf) {
                Ok(Some(mini)) => {
                    state.mini = Some(Arc::new(LoadedElf::new(mini)));
                }
                Ok(None) => {}
                Err(e) => {
                    log::debug!("{e}; .dynsym only");
                    state.error = Some(e);
                }
            }
        }
        // A Go binary names and places its functions itself: read where symbols or lines
        // would be missing (for a file that is not Go, this is a look at its section names).
        if !has_symtab || (options.source_lines && !has_dwarf) {
            match GoTable::find(elf) {
                Ok(go) => state.go = go.map(Arc::new),
                Err(e) => {
                    log::debug!("{e}; no Go table");
                    state.error.get_or_insert(e);
                }
            }
        }
        if !options.source_lines || state.dwarf.is_err() {
            return state;
        }
        let dwarf_file = match &state.companion {
            Some(companion) if !has_dwarf => &companion.elf,
            _ => {
                state.dwarf_bias = 0;
                elf
            }
        };
        state.dwarf = load_dwarf(dwarf_file, options).map(|d| d.map(Mutex::new));
        if let Err(e) = &state.dwarf {
            log::debug!("{e}; symbols only");
        }
        state
    }
}

/// The DWARF of `file`, with its dwz supplementary file when it names one and `finder` finds
/// it. A missing supplementary file is not an error: lookups that need it fail one by one,
/// and the rest work.
fn load_dwarf(file: &Arc<ElfFile>, options: &DebugOptions) -> Result<Option<DwarfInfo>> {
    let finder = options.finder.as_ref();
    let Some(sections) = DwarfSections::load_with_threads(file, options.threads)? else {
        return Ok(None);
    };
    let supplementary = match (finder, file.debugaltlink()) {
        (Some(finder), Some(_)) => finder.find_supplementary(file)?,
        _ => None,
    };
    let info = match supplementary {
        Some(sup) => match DwarfSections::load_with_threads(&sup.elf, options.threads)? {
            Some(sup_sections) => DwarfInfo::with_supplementary(&sections, &sup_sections)?,
            None => DwarfInfo::new(&sections)?,
        },
        None => {
            if file.debugaltlink().is_some() {
                log::debug!(
                    "{}: its dwz supplementary file (.gnu_debugaltlink) was not found; names \
                     and lines that live there are missing",
                    file.path().display()
                );
            }
            DwarfInfo::new(&sections)?
        }
    };
    Ok(Some(info))
}

/// Whether `elf` has a section `name` with bytes (see [`ElfFile::has_section_bytes`]); a
/// malformed section table reads as "no" (symbol lookups report it).
fn has_bytes(elf: &ElfFile, name: &str) -> bool {
    elf.has_section_bytes(name).unwrap_or_else(|e| {
        log::debug!("{e}");
        false
    })
}

fn shown_name(symbol: &ElfSymbol<'_>) -> Option<Box<str>> {
    let name = match symbol.name_str {
        Some(name) => std::borrow::Cow::Borrowed(name),
        None => String::from_utf8_lossy(symbol.name),
    };
    match demangle(&name) {
        std::borrow::Cow::Owned(demangled) => Some(demangled.into_boxed_str()),
        std::borrow::Cow::Borrowed(_) if symbol.name_str.is_none() => Some(name.into()),
        std::borrow::Cow::Borrowed(_) => None,
    }
}

static EMPTY_SLOT: OnceLock<Option<Box<str>>> = OnceLock::new();
