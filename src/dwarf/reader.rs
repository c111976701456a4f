//! The bytes gimli reads: a section of an [`ElfFile`] that stays open as long as any reader
//! of it lives, with no lifetime to carry and no copy of mapped sections.

use std::ops::{Deref, Range};
use std::sync::Arc;

use gimli::{EndianReader, RunTimeEndian};

use crate::elf::ElfFile;

/// gimli's reader over [`SectionBytes`]: owned (`'static`-free of borrows), `Send + Sync`,
/// cheap to clone (an `Arc` and a range).
pub(crate) type Reader = EndianReader<RunTimeEndian, SectionBytes>;

/// One section's bytes: a range of a mapped file, or a buffer of decompressed bytes.
#[derive(Clone)]
pub(crate) enum SectionBytes {
    /// `file.bytes_in(range)`, the section as it lies in the file.
    InFile {
        file: Arc<ElfFile>,
        range: Range<usize>,
    },
    /// A decompressed or relocated section. (A `Vec` behind the `Arc`, not an `Arc<[u8]>`:
    /// turning the decompressed `Vec` into the latter would copy it, megabytes for a large
    /// `.debug_info`, with both copies alive at once.)
    Owned(Arc<Vec<u8>>),
    /// The same bytes as the inner value, behind a reference count of its own: gimli clones
    /// and drops readers constantly, and threads that parse with one `Arc` each do not
    /// contend on its count (two threads on one count ran barely faster than one).
    Shadow(Arc<SectionBytes>),
}

impl SectionBytes {
    pub(crate) fn empty() -> SectionBytes {
        SectionBytes::Owned(Arc::new(Vec::new()))
    }
}

impl Deref for SectionBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            SectionBytes::InFile { file, range } => file.bytes_in(range.clone()),
            SectionBytes::Owned(bytes) => bytes,
            SectionBytes::Shadow(inner) => inner,
        }
    }
}

impl std::fmt::Debug for SectionBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SectionBytes::InFile { file, range } => f
                .debug_struct("InFile")
                .field("file", &file.path())
                .field("range", range)
                .finish(),
            SectionBytes::Owned(bytes) => write!(f, "Owned({} bytes)", bytes.len()),
            SectionBytes::Shadow(inner) => write!(f, "Shadow({inner:?})"),
        }
    }
}

// SAFETY: `deref` returns bytes owned by the `Arc` (the file's mapping or owned buffer, which
// an `ElfFile` never moves, reallocates or changes while it exists, or the decompressed
// buffer; for `Shadow`, the inner value's, which its `Arc` keeps in place), never bytes
// inside `self`; so the address stays valid when a `SectionBytes` moves,
// and it is the same for every clone, which shares the `Arc` and the range. gimli's
// `EndianReader` relies on exactly this to keep a pointer into the bytes.
unsafe impl gimli::StableDeref for SectionBytes {}
// SAFETY: as above; a clone holds the same `Arc` and range, so it derefs to the same bytes.
unsafe impl gimli::CloneStableDeref for SectionBytes {}
