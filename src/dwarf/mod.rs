//! Source lines and inlined frames of one ELF file, from its DWARF (versions 2 to 5).
//!
//! [`DwarfSections::load`] reads the `.debug_*` sections of an [`crate::elf::ElfFile`]
//! (borrowed from the mapping, or decompressed from `SHF_COMPRESSED` and `.zdebug_*`
//! sections); [`DwarfInfo::new`] reads the unit headers and where each unit's code is
//! (`units.rs`). [`DwarfInfo::frames`] answers "which source lines does this virtual address
//! belong to": the inlined functions, innermost first, then the function that contains them,
//! each with its name, file, line and column. As in llvm-symbolizer, an outer frame's
//! location is the call site of the frame inside it; the innermost frame carries its
//! line-table row's discriminator and, for a row of line 0, its column, an outer frame the
//! inlined call's `DW_AT_GNU_discriminator`.
//!
//! The engine, on `gimli`: the first address asked about in a unit runs that unit's line
//! program once (`lines.rs`) and walks its DIE tree once (`functions.rs`), keeping compact
//! sorted tables of both; every later address in the unit, in the same batch or a later one,
//! is a few binary searches. Names are read and demangled when first shown, once per
//! function. The answers are the addr2line crate's (which the tests hold it to) plus what it
//! drops (discriminators, line-0 columns).
//!
//! Where the DWARF comes from is the caller's business: the [`crate::elf::ElfFile`] may be
//! the binary itself or its separate debug file (found by `debuginfo/`); both are read the
//! same way, and a dwz supplementary file (`.gnu_debugaltlink`, also found by `debuginfo/`)
//! is joined with [`DwarfInfo::with_supplementary`]. Split DWARF is followed here, since its
//! files are named by the DWARF itself: the `<file>.dwp` package, else the `.dwo` a skeleton
//! unit names, looked for in the file's own directory only (see `DwarfInfo::frames`).
//! Bounded work on any input: no recursion whose depth the input controls (the DIE walk
//! keeps its own stack); inlined calls nested deeper than [`MAX_INLINED_DEPTH`] refuse
//! their unit (an error for lookups in it); reference chains (`DW_AT_abstract_origin`,
//! `DW_AT_specification`) are followed 16 hops at most; line rows at one address collapse
//! into one. Not handled: relocatable objects (`ET_REL`, whose DWARF needs relocations
//! applied). Falling back to the symbol table where DWARF does not cover an address is the
//! caller's job: [`DwarfInfo::frames`] returns `Ok(None)`.

/// One unit's file table, compact.
mod files;
/// One unit's functions and inlined calls.
mod functions;
mod info;
/// A line program's rows, decoded from its bytes.
mod line_program;
/// One unit's line table.
mod lines;
/// The owned, zero-copy byte type gimli reads through.
mod reader;
/// The units and the addresses each covers.
mod units;
pub(crate) use reader::SectionBytes;

pub use functions::MAX_INLINED_DEPTH;
pub use info::{DwarfInfo, DwarfSections, FunctionName, InlineFrame};

/// Where `probe` lies relative to the half-open range `[begin, end)`, as `binary_search_by`
/// over sorted, disjoint ranges wants it (`Greater`: the range lies after `probe`).
fn range_order(begin: u64, end: u64, probe: u64) -> std::cmp::Ordering {
    if probe < begin {
        std::cmp::Ordering::Greater
    } else if probe >= end {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Equal
    }
}

/// A DWARF number in the engine's compact `u32` fields, saturated.
fn saturate(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
