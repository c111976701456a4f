//! Where a file's Go table is, and the few pointers of the loaded program the table needs
//! (`moduledata.gofunc` for 1.18+ funcdata, a PIE's relocated words).

use std::sync::Arc;

use object::{Object, ObjectSection, RelocationFlags};

use super::header::{uint_at, version_of, Header};
use super::{GoTable, GoTableFoundBy, GoTableVersion};
use crate::addr::{FileOffset, VirtAddr};
use crate::elf::{ElfFile, SectionContents};
use crate::error::Result;

/// Finds the table: the `.gopclntab` (`.data.rel.ro.gopclntab` in a PIE) section, else the `runtime.pclntab` /
/// `runtime.firstmoduledata` symbols, else (a file without section headers) a scan of its
/// loadable segments.
pub(super) fn find(elf: &Arc<ElfFile>) -> Result<Option<GoTable>> {
    let sections = match object::File::parse(elf.data()) {
        Ok(file) => Some(
            file.sections()
                .filter(|s| s.size() > 0 && !s.name().unwrap_or_default().is_empty())
                .count(),
        ),
        Err(e) => {
            log::debug!(
                "{}: section headers: {e}; scanning for a Go table",
                elf.path().display()
            );
            None
        }
    };
    if sections.is_some_and(|n| n > 0) {
        // A PIE's table holds words the dynamic loader relocates: Go's linker names its
        // section `.data.rel.ro.gopclntab` there.
        for name in [".gopclntab", ".data.rel.ro.gopclntab"] {
            if let Some(SectionContents::InFile(range)) = elf.section_contents(name)? {
                let addr = elf.section_address(name)?.unwrap_or(VirtAddr(0));
                // A relocatable object or a debug file's NOBITS section has no table bytes.
                if !range.is_empty() {
                    return GoTable::new(elf, range, addr, GoTableFoundBy::Section).map(Some);
                }
            }
        }
        if elf.has_section_bytes(".symtab")? {
            return by_symbols(elf);
        }
        // Section headers without `.gopclntab`: not a Go binary (Go's linker always names
        // the section), and a scan of every stripped library would cost for nothing.
        return Ok(None);
    }
    Ok(scan(elf))
}

/// The table through `runtime.pclntab` (to `runtime.epclntab`), or the header pointer at
/// the start of `runtime.firstmoduledata`.
fn by_symbols(elf: &Arc<ElfFile>) -> Result<Option<GoTable>> {
    let start = match elf.symbol_value_by_name("runtime.pclntab")? {
        Some(start) => Some(start),
        None => match elf.symbol_value_by_name("runtime.firstmoduledata")? {
            Some(moduledata) => {
                let ptr = if elf.header().is_64 { 8 } else { 4 };
                bytes_at(elf, moduledata.0, ptr)
                    .and_then(|b| uint_at(b, 0, ptr as u8, elf.header().big_endian))
                    .map(VirtAddr)
            }
            None => None,
        },
    };
    let Some(start) = start else {
        return Ok(None);
    };
    let end = elf.symbol_value_by_name("runtime.epclntab")?;
    let Some(range) = file_range(elf, start, end) else {
        return Ok(None);
    };
    GoTable::new(elf, range, start, GoTableFoundBy::Symbol).map(Some)
}

/// The file range from virtual address `start` to `end` (or its segment's end).
fn file_range(
    elf: &ElfFile,
    start: VirtAddr,
    end: Option<VirtAddr>,
) -> Option<std::ops::Range<usize>> {
    let segments = elf.segments();
    let from = segments.virt_to_file_offset(start)?;
    let segment = segments
        .loads()
        .iter()
        .find(|s| from.0 >= s.file_offset.0 && from.0 - s.file_offset.0 < s.file_size)?;
    let segment_end = segment.file_offset.0.saturating_add(segment.file_size);
    let to = match end.and_then(|end| segments.virt_to_file_offset(VirtAddr(end.0.checked_sub(1)?)))
    {
        Some(FileOffset(last)) if last >= from.0 => (last + 1).min(segment_end),
        _ => segment_end,
    };
    let range = usize::try_from(from.0).ok()?..usize::try_from(to).ok()?;
    (range.end <= elf.data().len()).then_some(range)
}

/// Scans every loadable segment for a header that checks out (magic, pad, quantum, the
/// file's pointer size, offsets and function table inside the segment, the first function's
/// name readable); the first one found wins.
fn scan(elf: &Arc<ElfFile>) -> Option<GoTable> {
    let big_endian = elf.header().big_endian;
    let ptr_size = if elf.header().is_64 { 8 } else { 4 };
    for segment in elf.segments().loads() {
        let (Ok(start), Ok(len)) = (
            usize::try_from(segment.file_offset.0),
            usize::try_from(segment.file_size),
        ) else {
            continue;
        };
        let Some(bytes) = start
            .checked_add(len)
            .and_then(|end| elf.data().get(start..end))
        else {
            continue;
        };
        for at in (0..bytes.len().saturating_sub(8)).step_by(4) {
            let Some(magic) = uint_at(bytes, at, 4, big_endian) else {
                break;
            };
            if version_of(magic as u32).is_none() {
                continue;
            }
            let candidate = &bytes[at..];
            let Ok(header) = Header::parse(candidate, big_endian) else {
                continue;
            };
            if header.ptr_size != ptr_size {
                continue;
            }
            let range = start + at..start + len;
            let addr = VirtAddr(segment.virt_addr.0.wrapping_add(at as u64));
            let Ok(table) = GoTable::new(elf, range, addr, GoTableFoundBy::Scan) else {
                continue;
            };
            if plausible(&table) {
                return Some(table);
            }
        }
    }
    None
}

/// Whether a scanned candidate reads like a real table: its first functions have names and
/// ascending entries inside an executable segment.
fn plausible(table: &GoTable) -> bool {
    let n = table.function_count().min(16);
    let mut last = 0;
    for i in 0..n {
        let Ok(function) = table.function(i) else {
            return false;
        };
        if function.name.is_empty() || function.entry.0 < last || function.end < function.entry {
            return false;
        }
        last = function.entry.0;
    }
    let first = table.entry(0).unwrap_or(0);
    table
        .elf
        .segments()
        .loads()
        .iter()
        .any(|s| s.executable && first >= s.virt_addr.0 && first - s.virt_addr.0 < s.mem_size)
}

/// `len` bytes of the file at virtual address `addr`, if a segment holds them in the file.
pub(super) fn bytes_at(elf: &ElfFile, addr: u64, len: usize) -> Option<&[u8]> {
    let offset = usize::try_from(elf.segments().virt_to_file_offset(VirtAddr(addr))?.0).ok()?;
    elf.data().get(offset..offset.checked_add(len)?)
}

/// `R_*_RELATIVE` relocation types (with an explicit addend) per `e_machine`.
fn relative_type(machine: u16) -> Option<u32> {
    use object::elf;
    let relative = match elf::Machine(machine) {
        elf::EM_X86_64 => elf::R_X86_64_RELATIVE,
        elf::EM_AARCH64 => elf::R_AARCH64_RELATIVE,
        elf::EM_PPC64 => elf::R_PPC64_RELATIVE,
        elf::EM_S390 => elf::R_390_RELATIVE,
        elf::EM_RISCV => elf::R_RISCV_RELATIVE,
        elf::EM_LOONGARCH => elf::R_LARCH_RELATIVE,
        elf::EM_386 => elf::R_386_RELATIVE,
        elf::EM_ARM => elf::R_ARM_RELATIVE,
        _ => return None,
    };
    Some(relative.0)
}

/// The file's relative relocations with explicit addends, (offset, addend), sorted. Empty
/// for a non-PIE file (nothing to relocate) and for `REL` tables, whose addends are the
/// file's words themselves.
fn relocations(elf: &ElfFile) -> Vec<(u64, u64)> {
    if elf.header().file_type != object::elf::ET_DYN.0 {
        return Vec::new();
    }
    let Some(relative) = relative_type(elf.header().machine) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(elf.data()) else {
        return Vec::new();
    };
    let Some(relocations) = file.dynamic_relocations() else {
        return Vec::new();
    };
    let mut found: Vec<(u64, u64)> = relocations
        .filter(|(_, r)| {
            !r.has_implicit_addend()
                && matches!(r.flags(), RelocationFlags::Elf { r_type } if r_type.0 == relative)
        })
        .map(|(offset, r)| (offset, r.addend() as u64))
        .collect();
    found.sort_unstable();
    found
}

/// The addend a relative relocation puts at virtual address `addr`, if one does.
pub(super) fn relocated(table: &GoTable, addr: u64) -> Option<u64> {
    let relocations = table.relocations.get_or_init(|| relocations(&table.elf));
    let i = relocations
        .binary_search_by_key(&addr, |&(at, _)| at)
        .ok()?;
    relocations.get(i).map(|&(_, addend)| addend)
}

/// `moduledata.gofunc` (the base of 1.18+ funcdata offsets): the `go:func.*` (1.20+) or
/// `go.func.*` symbol, else read from the module data ([`moduledata`]). `None` when neither
/// is found (no inline frames then).
pub(super) fn gofunc(table: &GoTable) -> Option<u64> {
    let elf = &table.elf;
    if elf.has_section_bytes(".symtab").unwrap_or(false) {
        for name in ["go:func.*", "go.func.*"] {
            if let Ok(Some(addr)) = elf.symbol_value_by_name(name) {
                return Some(addr.0);
            }
        }
    }
    // moduledata: pcHeader, 6 slices (3 words each), findfunctab, minpc, maxpc, text,
    // etext, noptrdata, enoptrdata, data, edata, bss, ebss, noptrbss, enoptrbss, (1.20+:
    // covctrs, ecovctrs), end, gcdata, gcbss, types, etypes, rodata, gofunc.
    let gofunc_word = match table.header.version {
        GoTableVersion::Go1_20 => 40,
        _ => 38,
    };
    let gofunc = table.moduledata().and_then(|moduledata| {
        let word = |i: u64| {
            table.pointer_at(moduledata.wrapping_add(i * u64::from(table.header.ptr_size)))
        };
        let gofunc = word(gofunc_word)?;
        let rodata = word(gofunc_word - 1)?;
        (rodata <= gofunc && bytes_at(elf, gofunc, 1).is_some()).then_some(gofunc)
    });
    if gofunc.is_none() {
        log::debug!(
            "{}: Go module data (gofunc) not found: no inlined frames from the Go table",
            elf.path().display()
        );
    }
    gofunc
}

/// `moduledata.text` (1.18+: word 22, after the header pointer, six slices, findfunctab,
/// minpc and maxpc): the base of function entries, where the header's textStart is 0 (Go
/// 1.26's linker writes 0 there; the runtime reads the module data's word).
pub(super) fn moduledata_text(table: &GoTable) -> Option<u64> {
    let moduledata = table.moduledata()?;
    table.pointer_at(moduledata.wrapping_add(22 * u64::from(table.header.ptr_size)))
}

/// The virtual address of the table's `runtime.moduledata` (1.16+: its first word points at
/// the table, its second at the table's funcnametab): the `runtime.firstmoduledata` symbol,
/// else found as those two words, in a PIE among the relocations' addends, else in the
/// file's non-executable segments. `None` when not found.
pub(super) fn moduledata(table: &GoTable) -> Option<u64> {
    let elf = &table.elf;
    let ptr = u64::from(table.header.ptr_size);
    let names = table.addr.0.wrapping_add(table.header.funcnames as u64);
    let check = |moduledata: u64| -> bool {
        let word = |i: u64| table.pointer_at(moduledata.wrapping_add(i * ptr));
        word(0) == Some(table.addr.0) && word(1) == Some(names)
    };
    if elf.has_section_bytes(".symtab").unwrap_or(false) {
        if let Ok(Some(addr)) = elf.symbol_value_by_name("runtime.firstmoduledata") {
            if check(addr.0) {
                return Some(addr.0);
            }
        }
    }
    // A PIE: the words are relocations' addends.
    let relocations = table.relocations.get_or_init(|| relocations(elf));
    for &(at, addend) in relocations {
        if addend == table.addr.0 && check(at) {
            return Some(at);
        }
    }
    // Else the words are in the file: scan the data for the table's address.
    let be = table.header.big_endian;
    for segment in elf.segments().loads().iter().filter(|s| !s.executable) {
        let Some(bytes) = usize::try_from(segment.file_offset.0)
            .ok()
            .and_then(|start| {
                elf.data()
                    .get(start..start.checked_add(usize::try_from(segment.file_size).ok()?)?)
            })
        else {
            continue;
        };
        for at in (0..bytes.len()).step_by(ptr as usize) {
            if uint_at(bytes, at, ptr as u8, be) == Some(table.addr.0) {
                let addr = segment.virt_addr.0.wrapping_add(at as u64);
                if check(addr) {
                    return Some(addr);
                }
            }
        }
    }
    log::debug!(
        "{}: Go module data not found (no word points at the table at {:#x})",
        elf.path().display(),
        table.addr.0
    );
    None
}
