//! One ELF file: its bytes, headers, segments, build-id and symbol tables.
//!
//! This layer knows nothing of processes, debug files or caches; it answers "which symbol of
//! this file covers this virtual address". Input comes from a path the caller trusts
//! (memory-mapped), a path inside a process's root or an open file (read into memory:
//! [`ElfFile::open_in_root`], [`ElfFile::from_file`]), or bytes already in memory.

mod bytes;
pub(crate) mod compressed;
mod dynamic;
mod file;
mod index_builder;
mod names;
mod partial;
mod relocatable;
mod segments;
mod sigbus;
mod symbols;
#[cfg(feature = "minidebuginfo")]
mod xz;

pub(crate) use bytes::{hex, FileBytes};
pub(crate) use file::SymbolRuns;
pub use file::{ElfFile, ElfHeaderInfo, SectionContents, MAX_READ_FILE_BYTES};
pub use names::{Binding, NamedSymbol};
pub use relocatable::RelocatableSection;
pub use segments::{LoadSegment, Segments};
pub use sigbus::read_files_instead_of_mapping;
pub(crate) use sigbus::shrinks;
pub(crate) use symbols::SymbolSpans;
pub use symbols::{ElfSymbol, SymbolId, SymbolKind, SymbolOrigin};
