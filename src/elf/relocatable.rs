//! Relocatable ELF files (`ET_REL`): `.o` objects and Linux kernel modules (`.ko`).
//!
//! In such a file every section starts at address 0 and nothing is resolved: symbols hold
//! offsets into their section, and the DWARF holds offsets that relocations (`.rela.debug_info`,
//! ...) must still add section addresses to. To give each byte of code one address, this
//! module lays the allocated (`SHF_ALLOC`) sections out one after another, in section-header
//! order, each at its alignment, from [`LAYOUT_BASE`] on: the file's *layout addresses*.
//! Symbols ([`crate::elf::ElfFile::find_symbol`]), segments and relocated DWARF all use them.
//!
//! The layout depends only on the section headers' order, flags, sizes and alignments, which
//! `objcopy --only-keep-debug` keeps: a module's separate debug file gets the same layout as
//! the module, so addresses of one are addresses of the other. Where the kernel really loaded
//! a section is another matter (`/sys/module/NAME/sections/`): `crate::kernel` maps those
//! addresses to layout addresses through [`RelocatableSection`]s.

use object::read::elf::{FileHeader, SectionHeader, SectionTable};
use object::{elf, Endianness};

use crate::addr::VirtAddr;

/// Where the first allocated section is laid out. Not 0: DWARF readers (the addr2line crate
/// among them) take a range starting at 0 for code the linker dropped, and skip it.
pub const LAYOUT_BASE: u64 = 0x10000;

/// One allocated section of a relocatable file and where the layout puts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelocatableSection {
    /// The section's name, e.g. `.text`, `.init.text` (lossily decoded if not UTF-8).
    pub name: String,
    /// Its index in the section header table (what symbols' `st_shndx` name).
    pub index: usize,
    /// Its layout address.
    pub addr: VirtAddr,
    /// `sh_size`.
    pub size: u64,
    /// Where its bytes are in the file, as `(offset, length)`; `None` for `SHT_NOBITS`
    /// (`.bss`, or any section of a debug file that `objcopy --only-keep-debug` emptied).
    pub file_range: Option<(u64, u64)>,
    /// Whether it holds code (`SHF_EXECINSTR`).
    pub executable: bool,
}

/// The layout of a relocatable file's allocated sections (see the module docs), in section
/// order. A section whose end would pass `u64::MAX` ends the layout: it and the sections
/// after it get no address.
pub(crate) fn layout<Elf: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    data: &[u8],
    sections: &SectionTable<'_, Elf>,
) -> Vec<RelocatableSection> {
    let mut placed = Vec::new();
    let mut next = LAYOUT_BASE;
    for (index, section) in sections.iter().enumerate() {
        let flags: u64 = section.sh_flags(endian).0;
        if flags & elf::SHF_ALLOC.0 == 0 {
            continue;
        }
        let size: u64 = section.sh_size(endian).into();
        let align: u64 = section.sh_addralign(endian).into();
        let Some(addr) = next
            .checked_next_multiple_of(align.max(1))
            .filter(|addr| addr.checked_add(size).is_some())
        else {
            break;
        };
        next = addr + size; // Checked just above.
        let name = sections
            .section_name(endian, section)
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .unwrap_or_default();
        let file_range = section.file_range(endian).filter(|&(offset, len)| {
            offset
                .checked_add(len)
                .is_some_and(|end| end <= data.len() as u64)
        });
        placed.push(RelocatableSection {
            name,
            index,
            addr: VirtAddr(addr),
            size,
            file_range,
            executable: flags & elf::SHF_EXECINSTR.0 != 0,
        });
    }
    placed
}

/// The layout address of section `index`, if it is allocated and placed.
pub(crate) fn section_addr(layout: &[RelocatableSection], index: usize) -> Option<u64> {
    // Sorted by index (built in section order): a binary search.
    layout
        .binary_search_by_key(&index, |section| section.index)
        .ok()
        .and_then(|at| layout.get(at))
        .map(|section| section.addr.0)
}

/// What went wrong applying a relocation (the caller names the file and section).
pub(crate) type RelocationProblem = String;

/// Applies the relocations that target `section` (found through the `.rela`/`.rel` sections
/// whose `sh_info` names it) to `bytes`, that section's contents (decompressed if it was
/// compressed), with symbols at their layout addresses (symbols of sections that are not
/// allocated, such as `.debug_str`, at their plain value: offsets into that section). Returns
/// how many were applied.
///
/// Absolute (`S + A`) and PC-relative (`S + A - P`) relocations of 8 to 64 bits are applied;
/// any other kind (GOT, PLT, TLS: not found in DWARF) is an error, as is one whose place lies
/// outside `bytes`: a half-relocated section would give wrong answers silently.
pub(crate) fn apply_relocations(
    file: &object::File<'_>,
    layout: &[RelocatableSection],
    section: &object::Section<'_, '_>,
    bytes: &mut [u8],
    big_endian: bool,
) -> Result<usize, RelocationProblem> {
    use object::{Object, ObjectSection, ObjectSymbol, RelocationKind, RelocationTarget};
    let place_base = section_addr(layout, section.index().0).unwrap_or(0);
    let mut applied = 0;
    for (offset, reloc) in section.relocations() {
        let symbol_value = match reloc.target() {
            RelocationTarget::Symbol(index) => {
                let symbol = file
                    .symbol_by_index(index)
                    .map_err(|e| format!("relocation at {offset:#x}: symbol {}: {e}", index.0))?;
                let base = symbol
                    .section_index()
                    .and_then(|section| section_addr(layout, section.0))
                    .unwrap_or(0);
                base.wrapping_add(symbol.address())
            }
            RelocationTarget::Section(index) => section_addr(layout, index.0).unwrap_or(0),
            RelocationTarget::Absolute => 0,
            _ => return Err(format!("relocation at {offset:#x}: unknown target")),
        };
        let bits = u32::from(reloc.size());
        let width = match bits {
            8 | 16 | 32 | 64 => (bits / 8) as usize,
            _ => {
                return Err(format!(
                    "relocation at {offset:#x}: {bits}-bit relocations are not supported ({:?})",
                    reloc.flags()
                ))
            }
        };
        let place = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(width)?))
            .filter(|range| range.end <= bytes.len())
            .ok_or_else(|| {
                format!(
                    "relocation at {offset:#x} ({width} bytes) is outside the section ({} bytes)",
                    bytes.len()
                )
            })?;
        let slot = &mut bytes[place]; // In bounds: checked just above.
        let implicit = if reloc.has_implicit_addend() {
            read_uint(slot, big_endian)
        } else {
            0
        };
        let addend = (reloc.addend() as u64).wrapping_add(implicit);
        let value = match reloc.kind() {
            RelocationKind::None => continue,
            RelocationKind::Absolute => symbol_value.wrapping_add(addend),
            RelocationKind::Relative => symbol_value
                .wrapping_add(addend)
                .wrapping_sub(place_base.wrapping_add(offset)),
            other => {
                return Err(format!(
                    "relocation at {offset:#x}: {other:?} relocations are not supported ({:?})",
                    reloc.flags()
                ))
            }
        };
        write_uint(slot, value, big_endian);
        applied += 1;
    }
    Ok(applied)
}

/// The unsigned integer in `slot` (1 to 8 bytes).
fn read_uint(slot: &[u8], big_endian: bool) -> u64 {
    let fold = |acc: u64, &b: &u8| (acc << 8) | u64::from(b);
    if big_endian {
        slot.iter().fold(0, fold)
    } else {
        slot.iter().rev().fold(0, fold)
    }
}

/// Writes the low `slot.len()` bytes of `value` into `slot`.
fn write_uint(slot: &mut [u8], value: u64, big_endian: bool) {
    let width = slot.len();
    for (i, byte) in slot.iter_mut().enumerate() {
        let shift = if big_endian { width - 1 - i } else { i } * 8;
        *byte = (value >> shift) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_read_and_written_in_either_byte_order() {
        let mut slot = [0u8; 4];
        write_uint(&mut slot, 0x1122_3344_5566, false);
        assert_eq!(slot, [0x66, 0x55, 0x44, 0x33]);
        assert_eq!(read_uint(&slot, false), 0x3344_5566);
        write_uint(&mut slot, 0x0102_0304, true);
        assert_eq!(slot, [1, 2, 3, 4]);
        assert_eq!(read_uint(&slot, true), 0x0102_0304);
    }
}
