//! Source lines and inlined frames of one ELF file, from its DWARF (versions 2 to 5).
//!
//! [`DwarfSections::load`] reads the `.debug_*` sections of an [`crate::elf::ElfFile`]
//! (borrowed from the mapping, or decompressed from `SHF_COMPRESSED` and `.zdebug_*`
//! sections); [`DwarfInfo::new`] hands them to the `addr2line` crate's I/O-free core
//! (`addr2line::Context` over `gimli`).
//! [`DwarfInfo::frames`] answers "which source lines does this virtual address belong to":
//! the inlined functions, innermost first, then the function that contains them, each with
//! its name, file, line and column. As in llvm-symbolizer, an outer frame's location is the
//! call site of the frame inside it; the innermost frame carries its line-table row's
//! discriminator and, for a row of line 0, its column (`rows.rs`: the addr2line crate drops
//! both), an outer frame the inlined call's `DW_AT_GNU_discriminator`.
//!
//! Where the DWARF comes from is the caller's business: the [`crate::elf::ElfFile`] may be
//! the binary itself or its separate debug file (found by `debuginfo/`); both are read the
//! same way, and a dwz supplementary file (`.gnu_debugaltlink`, also found by `debuginfo/`)
//! is joined with [`DwarfInfo::with_supplementary`]. Split DWARF is followed here, since its
//! files are named by the DWARF itself: the `<file>.dwp` package, else the `.dwo` a skeleton
//! unit names, looked for in the file's own directory only (see `DwarfInfo::frames`).
//! Bounded work on any input: inlined calls nested deeper than [`MAX_INLINED_DEPTH`] refuse
//! the DWARF (the addr2line crate would recurse once per level; checked before the first
//! lookup, for split units too); reference chains (`DW_AT_abstract_origin`,
//! `DW_AT_specification`) are followed a few hops at most; line rows at one address collapse
//! into one. Not handled: relocatable objects (`ET_REL`, whose DWARF needs relocations applied).
//! Falling back to the symbol table where DWARF does not cover an address is the caller's
//! job: [`DwarfInfo::frames`] returns `Ok(None)`.

mod info;
/// The owned, zero-copy byte type gimli reads through.
mod reader;
/// Line-table discriminators and line-0 columns, which the addr2line crate drops.
mod rows;
pub(crate) use reader::SectionBytes;

pub use info::{DwarfInfo, DwarfSections, Frame, FunctionName, MAX_INLINED_DEPTH};
