//! The CFI (call frame information) of one ELF file, parsed with gimli: `.eh_frame` searched
//! through the `.eh_frame_hdr` table, `.eh_frame` alone (its FDEs sorted once, on first use),
//! and `.debug_frame` (the file's, else its separate debug file's, found through
//! [`DebugFinder`] the first time an address has no `.eh_frame` entry).
//!
//! [`ModuleCfi::find_row`] finds the row of the CFI table for an address (an ELF virtual
//! address) and hands it, with whether its CIE marks a signal trampoline (`S`) and the bytes
//! its expressions live in, to the caller, which compiles it into an architecture's small
//! rule type (`arch.rs`) or evaluates it in full. Broken CFI is an error naming the file and
//! the section; the unwinder stops there with a reason.

use std::any::Any;
use std::sync::{Arc, Mutex, OnceLock};

use gimli::{
    BaseAddresses, CfaRule, DebugFrame, EhFrame, EhFrameHdr, EndianSlice, RegisterRule,
    RunTimeEndian, UnwindContext, UnwindExpression, UnwindSection, UnwindTableRow,
};

use super::go::{GoRuntime, GoRuntimeFn};
use super::omitted_lsda::without_omitted_lsda;
use crate::addr::VirtAddr;
use crate::debuginfo::DebugFinder;
use crate::dwarf::SectionBytes;
use crate::elf::{ElfFile, SectionContents};
use crate::error::{Error, Result};
use crate::gopclntab::GoTable;

use super::regs::Arch;
use super::table::RuleTable;

/// gimli's table-evaluation state, reused between lookups (it holds the CIE's initial rules
/// and a stack for `DW_CFA_remember_state`).
pub type CfiContext = UnwindContext<usize>;

/// Most compiled rules a file keeps (by ELF virtual address; shared by every thread and
/// mapping of the file, behind a lock taken only when a caller's `UnwindCache` misses). 16 K
/// rules of 24 bytes (x86_64; 32 on aarch64): at most 384 KiB (512 KiB) per file.
pub const MODULE_RULE_SLOTS: usize = 16 * 1024;

/// Most FDEs read from a section without a search table (`.eh_frame` without
/// `.eh_frame_hdr`, `.debug_frame`): 16 bytes each, so at most 64 MiB for the sorted table.
const MAX_TABLE_FDES: usize = 1 << 22;

/// One row of a CFI table, as [`ModuleCfi::find_row`] hands it out.
#[derive(Debug)]
pub struct Row<'a> {
    /// The row.
    pub row: &'a UnwindTableRow<usize>,
    /// The FDE's CIE has the `S` augmentation: a signal trampoline, whose caller's address
    /// is where a signal interrupted it, not a return address.
    pub signal: bool,
    /// The bytes of the section the row's expressions are offsets into.
    section: &'a [u8],
}

impl<'a> Row<'a> {
    /// The bytes of an expression of this row (empty if it lies outside the section, which
    /// gimli has checked it does not).
    pub fn expression(&self, expr: UnwindExpression<usize>) -> &'a [u8] {
        let end = expr.offset.saturating_add(expr.length);
        self.section.get(expr.offset..end).unwrap_or_default()
    }

    /// The rule of the DWARF register `reg`; a register the row does not name keeps its
    /// value (`SameValue`: callee-saved by convention, or the link register of a leaf).
    pub fn register(&self, reg: u16) -> RegisterRule<usize> {
        self.row
            .register(gimli::Register(reg))
            .unwrap_or(RegisterRule::SameValue)
    }

    /// The CFA rule.
    pub fn cfa(&self) -> &CfaRule<usize> {
        self.row.cfa()
    }
}

/// A section's bytes and its virtual address.
struct CfiSection {
    bytes: SectionBytes,
    addr: u64,
}

/// FDEs of a section without a search table, sorted by start address: (start, end, offset).
type FdeTable = Vec<(u64, u64, usize)>;

/// `.debug_frame` of the file or of its debug companion.
struct DebugFrameCfi {
    bytes: SectionBytes,
    /// The file the section is in (for errors).
    path: std::path::PathBuf,
    table: FdeTable,
}

/// The CFI of one ELF file; shared by every mapping of the file.
pub struct ModuleCfi {
    elf: Arc<ElfFile>,
    endian: RunTimeEndian,
    vendor: gimli::Vendor,
    eh_frame: Option<CfiSection>,
    eh_frame_hdr: Option<CfiSection>,
    bases: BaseAddresses,
    /// `.eh_frame`'s FDEs sorted, when `.eh_frame_hdr` gives no table; `true`: sorted from
    /// the rewritten copy (`eh_frame_copy`).
    eh_frame_table: OnceLock<(FdeTable, bool)>,
    /// `.eh_frame` rewritten where gimli cannot read a CIE (`omitted_lsda.rs`), made the
    /// first time it fails so.
    eh_frame_copy: OnceLock<Option<Vec<u8>>>,
    debug_frame: OnceLock<Option<DebugFrameCfi>>,
    finder: Option<DebugFinder>,
    /// Compiled rules by ELF virtual address: a `Mutex<RuleTable<R>>` for the rule type of
    /// the architecture the file is unwound as (made on first use).
    rules: OnceLock<Box<dyn Any + Send + Sync>>,
    /// The file's Go table, looked for the first time an address of it has no CFI.
    go: OnceLock<Option<GoTable>>,
    /// The Go table's runtime functions where the Go step switches stacks (cgo), found the
    /// first time a Go frame is unwound.
    go_runtime: OnceLock<GoRuntime>,
    /// Whether the file has a Go table section (`.gopclntab`, a PIE's
    /// `.data.rel.ro.gopclntab`): then its CFI (Go's `.debug_frame`) is set aside at cgo's
    /// stack switches. Asked on a rule's first compilation, so only a section lookup: a
    /// file without it is not searched for a Go table.
    go_sections: OnceLock<bool>,
}

impl std::fmt::Debug for ModuleCfi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleCfi")
            .field("path", &self.elf.path())
            .field("eh_frame", &self.eh_frame.is_some())
            .field("eh_frame_hdr", &self.eh_frame_hdr.is_some())
            .finish_non_exhaustive()
    }
}

impl ModuleCfi {
    /// The CFI of `elf`; `finder` finds its debug companion for `.debug_frame` when the file
    /// has none (`None`: do not look). Sections that cannot be read are logged and left out
    /// (the unwinder then falls back to frame pointers in that file).
    pub fn new(elf: Arc<ElfFile>, finder: Option<DebugFinder>) -> ModuleCfi {
        let header = elf.header();
        let endian = if header.big_endian {
            RunTimeEndian::Big
        } else {
            RunTimeEndian::Little
        };
        let vendor = match Arch::of_elf_machine(header.machine) {
            Some(Arch::Aarch64) => gimli::Vendor::AArch64,
            _ => gimli::Vendor::Default,
        };
        let eh_frame = section(&elf, ".eh_frame");
        let eh_frame_hdr = section(&elf, ".eh_frame_hdr");
        let text = match elf.section_address(".text") {
            Ok(addr) => addr.map_or(0, |a| a.0),
            Err(_) => 0,
        };
        let got = match elf.section_address(".got") {
            Ok(addr) => addr.map_or(0, |a| a.0),
            Err(_) => 0,
        };
        let mut bases = BaseAddresses::default().set_text(text).set_got(got);
        if let Some(eh) = &eh_frame {
            bases = bases.set_eh_frame(eh.addr);
        }
        if let Some(hdr) = &eh_frame_hdr {
            bases = bases.set_eh_frame_hdr(hdr.addr);
        }
        ModuleCfi {
            elf,
            endian,
            vendor,
            eh_frame,
            eh_frame_hdr,
            bases,
            eh_frame_table: OnceLock::new(),
            eh_frame_copy: OnceLock::new(),
            debug_frame: OnceLock::new(),
            finder,
            rules: OnceLock::new(),
            go: OnceLock::new(),
            go_runtime: OnceLock::new(),
            go_sections: OnceLock::new(),
        }
    }

    /// The file's Go table (`.gopclntab`), if it is a Go binary: Go code has no CFI, and the
    /// table's SP deltas take its place. A malformed table is logged and not used.
    pub(crate) fn go_table(&self) -> Option<&GoTable> {
        self.go
            .get_or_init(|| {
                GoTable::find(&self.elf).unwrap_or_else(|e| {
                    log::debug!("{e}; unwinding without the Go table");
                    None
                })
            })
            .as_ref()
    }

    /// The Go table's runtime functions where cgo switches stacks (see `go.rs`).
    pub(crate) fn go_runtime(&self) -> Option<&GoRuntime> {
        let table = self.go_table()?;
        Some(self.go_runtime.get_or_init(|| GoRuntime::new(table)))
    }

    /// Whether `virt` is where cgo switches stacks (`runtime.asmcgocall`,
    /// `runtime.cgocallback`) in a Go binary that has CFI for its Go code (Go's
    /// `.debug_frame`, kept unless linked with `-w`): that CFI describes the frame on the
    /// stack the function started on, and only the Go table's step (`go.rs`) crosses to the
    /// other. Such addresses are treated as having no CFI.
    pub(crate) fn is_go_stack_switch(&self, virt: VirtAddr) -> bool {
        let go_sections = *self.go_sections.get_or_init(|| {
            [".gopclntab", ".data.rel.ro.gopclntab"]
                .iter()
                .any(|name| matches!(self.elf.section_address(name), Ok(Some(_))))
        });
        go_sections
            && self
                .go_runtime()
                .and_then(|runtime| runtime.at(virt))
                .is_some_and(|which| {
                    matches!(which, GoRuntimeFn::AsmCgoCall | GoRuntimeFn::CgoCallback)
                })
    }

    /// The file's table of compiled rules of type `R` (`None` if it was made for another
    /// rule type: the file unwound as two architectures, which only a confused caller does).
    fn rule_table<R: Copy + Send + Sync + 'static>(&self) -> Option<&Mutex<RuleTable<R>>> {
        self.rules
            .get_or_init(|| Box::new(Mutex::new(RuleTable::<R>::new(MODULE_RULE_SLOTS))))
            .downcast_ref()
    }

    /// The compiled rule of `addr` (an ELF virtual address), if the file has it cached;
    /// `Some(None)`: no CFI covers `addr`.
    pub fn cached_rule<R: Copy + Send + Sync + 'static>(
        &self,
        addr: VirtAddr,
    ) -> Option<Option<R>> {
        // A poisoned lock (a panic elsewhere while it was held) still holds a valid table.
        let table = self.rule_table::<R>()?;
        let table = table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        table.get(1, addr.0)
    }

    /// Caches the compiled rule of `addr`.
    pub fn cache_rule<R: Copy + Send + Sync + 'static>(&self, addr: VirtAddr, rule: Option<R>) {
        if let Some(table) = self.rule_table::<R>() {
            let mut table = table
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            table.insert(1, addr.0, rule);
        }
    }

    /// The file.
    pub fn elf(&self) -> &Arc<ElfFile> {
        &self.elf
    }

    /// Finds the CFI row for `addr` (an ELF virtual address) and returns what `f` makes of
    /// it; `Ok(None)` when no FDE covers `addr`. `.eh_frame` first, then `.debug_frame`.
    pub fn find_row<T>(
        &self,
        addr: VirtAddr,
        ctx: &mut CfiContext,
        f: impl FnOnce(&Row<'_>) -> T,
    ) -> Result<Option<T>> {
        // gimli's tables speak in raw addresses.
        let addr = addr.0;
        let mut f = Some(f);
        if let Some(eh) = &self.eh_frame {
            if let Some(found) = self.eh_frame_row(eh, addr, ctx, &mut f)? {
                return Ok(Some(found));
            }
        }
        let Some(debug) = self.debug_frame() else {
            return Ok(None);
        };
        let bytes: &[u8] = &debug.bytes;
        let mut section = DebugFrame::new(bytes, self.endian);
        section.set_address_size(8);
        section.set_vendor(self.vendor);
        let bases = BaseAddresses::default();
        let Some(offset) = table_lookup(&debug.table, addr) else {
            return Ok(None);
        };
        let malformed = |e: gimli::Error| Error::MalformedDwarf {
            path: debug.path.clone(),
            section: ".debug_frame",
            context: format!("the FDE for {addr:#x}"),
            offset: Some(offset as u64),
            source: e,
        };
        let fde = section
            .fde_from_offset(&bases, offset.into(), DebugFrame::cie_from_offset)
            .map_err(malformed)?;
        evaluate_fde(&section, &bases, &fde, ctx, addr, bytes, &mut f).map_err(malformed)
    }

    /// The row of `addr` in `.eh_frame`, through `.eh_frame_hdr`'s table, else the sorted
    /// FDEs. Where gimli cannot read a CIE whose LSDA encoding is `DW_EH_PE_omit` (V8's),
    /// the section's rewritten copy answers (`omitted_lsda.rs`).
    fn eh_frame_row<T>(
        &self,
        eh: &CfiSection,
        addr: u64,
        ctx: &mut CfiContext,
        f: &mut Option<impl FnOnce(&Row<'_>) -> T>,
    ) -> Result<Option<T>> {
        let malformed = |e: gimli::Error| malformed(self.elf.path(), ".eh_frame", e);
        let original: &[u8] = &eh.bytes;
        let parsed_hdr = self.eh_frame_hdr.as_ref().and_then(|hdr| {
            match EhFrameHdr::new(&hdr.bytes, self.endian).parse(&self.bases, 8) {
                Ok(parsed) => Some(parsed),
                Err(e) => {
                    log::debug!("{}: .eh_frame_hdr: {e}", self.elf.path().display());
                    None
                }
            }
        });
        if let Some(table) = parsed_hdr.as_ref().and_then(|hdr| hdr.table()) {
            let in_table = |bytes: &[u8], ctx: &mut CfiContext, f: &mut Option<_>| {
                let section = self.eh_frame_section(bytes);
                match table.fde_for_address(&section, &self.bases, addr, EhFrame::cie_from_offset) {
                    Ok(fde) => evaluate_fde(&section, &self.bases, &fde, ctx, addr, bytes, f),
                    Err(gimli::Error::NoUnwindInfoForAddress) => Ok(None),
                    Err(e) => Err(e),
                }
            };
            return match in_table(original, ctx, f) {
                Err(gimli::Error::CannotParseOmitPointerEncoding) => {
                    match self.eh_frame_copy(original) {
                        Some(copy) => in_table(copy, ctx, f).map_err(malformed),
                        None => Err(malformed(gimli::Error::CannotParseOmitPointerEncoding)),
                    }
                }
                other => other.map_err(malformed),
            };
        }
        let (sorted, from_copy) = self.eh_frame_table.get_or_init(|| {
            let mut omitted_lsda = false;
            let section = self.eh_frame_section(original);
            let table = fde_table(&section, &self.bases, self.elf.path(), &mut omitted_lsda);
            if omitted_lsda {
                if let Some(copy) = self.eh_frame_copy(original) {
                    let section = self.eh_frame_section(copy);
                    let path = self.elf.path();
                    return (fde_table(&section, &self.bases, path, &mut false), true);
                }
            }
            (table, false)
        });
        let bytes = match from_copy {
            true => self.eh_frame_copy(original).unwrap_or(original),
            false => original,
        };
        let Some(offset) = table_lookup(sorted, addr) else {
            return Ok(None);
        };
        let section = self.eh_frame_section(bytes);
        let fde = section
            .fde_from_offset(&self.bases, offset.into(), EhFrame::cie_from_offset)
            .map_err(malformed)?;
        evaluate_fde(&section, &self.bases, &fde, ctx, addr, bytes, f).map_err(malformed)
    }

    /// gimli's view of `.eh_frame` bytes (the file's or their rewritten copy).
    fn eh_frame_section<'s>(&self, bytes: &'s [u8]) -> EhFrame<EndianSlice<'s, RunTimeEndian>> {
        let mut section = EhFrame::new(bytes, self.endian);
        section.set_address_size(8);
        section.set_vendor(self.vendor);
        section
    }

    /// `.eh_frame` rewritten so that gimli reads CIEs whose LSDA encoding is omitted
    /// (`omitted_lsda.rs`), made the first time gimli fails on one; `None` when the section
    /// has no such CIE.
    fn eh_frame_copy(&self, original: &[u8]) -> Option<&[u8]> {
        self.eh_frame_copy
            .get_or_init(|| {
                let copy = without_omitted_lsda(original, self.endian == RunTimeEndian::Big);
                if copy.is_some() {
                    log::debug!(
                        "{}: .eh_frame has CIEs with an omitted LSDA encoding; read through a copy",
                        self.elf.path().display()
                    );
                }
                copy
            })
            .as_deref()
    }

    /// `.debug_frame` of the file, else of its debug companion; looked for once.
    fn debug_frame(&self) -> Option<&DebugFrameCfi> {
        self.debug_frame
            .get_or_init(|| {
                let (elf, bytes) = match section(&self.elf, ".debug_frame") {
                    Some(own) => (Arc::clone(&self.elf), own.bytes),
                    None => {
                        let companion = match self.finder.as_ref()?.find(&self.elf) {
                            Ok(found) => found?,
                            Err(e) => {
                                log::debug!("{e}");
                                return None;
                            }
                        };
                        let bytes = section(&companion.elf, ".debug_frame")?.bytes;
                        (companion.elf, bytes)
                    }
                };
                let mut section = DebugFrame::new(&bytes, self.endian);
                section.set_address_size(8);
                section.set_vendor(self.vendor);
                let table = fde_table(&section, &BaseAddresses::default(), elf.path(), &mut false);
                Some(DebugFrameCfi {
                    path: elf.path().to_path_buf(),
                    table,
                    bytes,
                })
            })
            .as_ref()
    }
}

/// Runs `fde`'s instructions up to `addr` and hands the row to `f` (taken from its option,
/// so that a caller that found nothing can still pass it on); `Ok(None)` when the FDE has
/// no row for `addr`.
fn evaluate_fde<'s, S, T>(
    section: &S,
    bases: &BaseAddresses,
    fde: &gimli::FrameDescriptionEntry<EndianSlice<'s, RunTimeEndian>>,
    ctx: &mut CfiContext,
    addr: u64,
    bytes: &'s [u8],
    f: &mut Option<impl FnOnce(&Row<'_>) -> T>,
) -> std::result::Result<Option<T>, gimli::Error>
where
    S: UnwindSection<EndianSlice<'s, RunTimeEndian>>,
{
    let row = match fde.unwind_info_for_address(section, bases, ctx, addr) {
        Ok(row) => row,
        Err(gimli::Error::NoUnwindInfoForAddress) => return Ok(None),
        Err(e) => return Err(e),
    };
    let row = Row {
        row,
        signal: fde.cie().is_signal_trampoline(),
        section: bytes,
    };
    Ok(f.take().map(|f| f(&row)))
}

/// The section `name` of `elf`, if it has one with bytes; errors are logged.
fn section(elf: &Arc<ElfFile>, name: &str) -> Option<CfiSection> {
    let contents = match elf.section_contents(name) {
        Ok(contents) => contents?,
        Err(e) => {
            log::debug!("{e}");
            return None;
        }
    };
    let bytes = match contents {
        SectionContents::InFile(range) if range.is_empty() => return None,
        SectionContents::InFile(range) => SectionBytes::InFile {
            file: Arc::clone(elf),
            range,
        },
        SectionContents::Owned(bytes) => SectionBytes::Owned(Arc::new(bytes)),
    };
    let addr = match elf.section_address(name) {
        Ok(addr) => addr.map_or(0, |a| a.0),
        Err(e) => {
            log::debug!("{e}");
            return None;
        }
    };
    Some(CfiSection { bytes, addr })
}

fn malformed(path: &std::path::Path, section: &str, e: gimli::Error) -> Error {
    Error::MalformedElf {
        path: path.to_path_buf(),
        what: format!("{section}: {e}"),
    }
}

/// Every FDE of `section`, sorted by start address (at most [`MAX_TABLE_FDES`]). Reading
/// stops at the first malformed entry (logged): the FDEs before it still serve. An FDE that
/// gimli could not read because its CIE omits the LSDA encoding sets `omitted_lsda`.
fn fde_table<'s, S>(
    section: &S,
    bases: &BaseAddresses,
    path: &std::path::Path,
    omitted_lsda: &mut bool,
) -> FdeTable
where
    S: UnwindSection<EndianSlice<'s, RunTimeEndian>>,
    S::Offset: gimli::UnwindOffset<usize>,
{
    let mut table = FdeTable::new();
    let mut entries = section.entries(bases);
    loop {
        match entries.next() {
            Ok(Some(gimli::CieOrFde::Fde(partial))) => {
                let offset = partial.offset();
                match partial.parse(S::cie_from_offset) {
                    Ok(fde) => {
                        if fde.len() > 0 {
                            table.push((fde.initial_address(), fde.end_address(), offset));
                        }
                    }
                    Err(e) => {
                        *omitted_lsda |= e == gimli::Error::CannotParseOmitPointerEncoding;
                        log::debug!("{}: FDE at {offset:#x}: {e}", path.display());
                    }
                }
            }
            Ok(Some(gimli::CieOrFde::Cie(_))) => {}
            Ok(None) => break,
            Err(e) => {
                log::debug!("{}: CFI entries: {e}", path.display());
                break;
            }
        }
        if table.len() >= MAX_TABLE_FDES {
            log::debug!(
                "{}: more than {MAX_TABLE_FDES} FDEs; the rest are ignored",
                path.display()
            );
            break;
        }
    }
    table.sort_unstable();
    table
}

/// The offset of the FDE whose range holds `addr`.
fn table_lookup(table: &FdeTable, addr: u64) -> Option<usize> {
    let after = table.partition_point(|&(start, _, _)| start <= addr);
    let &(start, end, offset) = table.get(after.checked_sub(1)?)?;
    (start <= addr && addr < end).then_some(offset)
}
