//! A process's file read into memory in part: everything but its DWARF sections and its
//! code and data sections up front, each of those when it is first asked for.
//!
//! Files reached through a process are read, not mapped (ARCHITECTURE.md, "Trust"). Read
//! whole, a pyenv `libpython3.13.so` is 30 MB, 25 of them DWARF of which a stack needs a
//! few units, and the location lists none: `pstack --python` spent 45 % of its time copying
//! such files in. [`read_partial`] reads the ELF header, the section headers and the section
//! names, then every byte of the file except the bodies of its large non-allocated
//! `.debug_*`/`.zdebug_*` sections and of its `.text`, `.rodata` and `.data`
//! ([`LOADED_LEFT_OUT`]; the first [`HEAD`] bytes of each are read: a compression header
//! lies there); those stay zero in the buffer, and [`Deferred::read`] reads them from the
//! same open file when `ElfFile::section_contents`, `ElfFile::code_at` or
//! `ElfFile::copy_at` is asked for them. Debian's `python3.11` (6.8 MB, no DWARF) is read
//! so: its symbols and CFI are 0.9 MB of it.
//!
//! The guarantees of a whole read hold: the bytes come from the very file opened (the
//! descriptor is kept, a duplicate of the caller's), and a file whose size, modification time
//! or inode differs from what it stated at open, or that reads short, is an error naming it,
//! up front and at every later read. A section is left out only when nothing else the crate
//! reads through the buffer can lie in its bytes: it overlaps no other section, no header
//! and no segment other than a loadable one (whose bytes are read through `code_at` and
//! `copy_at`; in a Go file, whose table lookups read its data through the buffer, loadable
//! segments are kept whole too); a file that does not parse as this plan expects is read
//! whole, which gives the usual errors.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::Endianness;

use crate::elf::bytes::{advise_huge_pages, FileBytes};
use crate::error::{Error, Result};

/// Files smaller than this are read whole: a partial read saves little on them, and costs a
/// descriptor kept open. (Debian's libc debug file, 4.0 MB of compressed DWARF of which
/// 0.6 MB are location lists, is read in part, and so is its 1.9 MB libc, 1.4 MB of which
/// are `.text`.)
const MIN_FILE: u64 = 1 << 20;

/// Sections are left out only when they add up to at least this much.
const MIN_DEFERRED: u64 = 1 << 20;

/// Bytes read at the start of each section left out: a `SHF_COMPRESSED` section's header
/// (24 bytes in ELF64) or a `.zdebug_*` section's (`ZLIB` and a size, 12 bytes) lies there, so
/// that the object crate finds the compressed range from the buffer.
const HEAD: u64 = 64;

/// The loaded sections left out too: code, constants and initialized data (in Debian's
/// `python3.11`, 5.9 of its 6.8 MB; in libc, 1.4 of 1.9 MB), which symbolizing and
/// unwinding do not read but for the few bytes of code `ElfFile::code_at` reads where no CFI
/// covers an address, and which a core's memory reads where the core left a mapping out
/// (`ElfFile::copy_at`): both read those bytes from the file when they were left out. Not
/// in a Go file ([`GO_SECTIONS`]), whose table lookups read words of its data through the
/// buffer.
const LOADED_LEFT_OUT: [&[u8]; 3] = [b".text", b".rodata", b".data"];

/// Sections that only Go's linker writes (it always writes `.gopclntab`, in a PIE
/// `.data.rel.ro.gopclntab`): a file with one is read with its loaded sections.
const GO_SECTIONS: [&[u8]; 4] = [
    b".gopclntab",
    b".data.rel.ro.gopclntab",
    b".go.buildinfo",
    b".note.go.buildid",
];

/// What a file's stated metadata says of its contents: size, modification time (seconds,
/// nanoseconds) and inode. A file that changed states something else.
type Stated = (u64, i64, i64, u64);

fn stated(metadata: &std::fs::Metadata) -> Stated {
    (
        metadata.size(),
        metadata.mtime(),
        metadata.mtime_nsec(),
        metadata.ino(),
    )
}

/// The parts of a file [`read_partial`] left out, and the file to read them from.
pub(crate) struct Deferred {
    file: File,
    stated: Stated,
    /// Sorted, disjoint ranges of the file that read as zeros in the buffer.
    ranges: Vec<Range<usize>>,
}

impl Deferred {
    /// Whether any byte of `range` was left out of the buffer.
    pub(crate) fn overlaps(&self, range: &Range<usize>) -> bool {
        let first = self.ranges.partition_point(|r| r.end <= range.start);
        self.ranges
            .get(first)
            .is_some_and(|r| r.start < range.end && range.start < range.end)
    }

    /// The ranges left out, in file order.
    pub(crate) fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// Reads `range` of the file (`path` names it in errors) from the descriptor kept open;
    /// an error when it reads short or the file is no longer as it was when opened.
    pub(crate) fn read(&self, path: &Path, range: Range<usize>) -> Result<Vec<u8>> {
        let len = range.end.saturating_sub(range.start);
        let mut bytes = Vec::with_capacity(len);
        advise_huge_pages(&mut bytes);
        bytes.resize(len, 0);
        self.read_into(path, range.start as u64, &mut bytes)?;
        Ok(bytes)
    }

    /// Fills `buf` from `offset` of the file and checks that the file did not change since
    /// it was opened.
    pub(crate) fn read_into(&self, path: &Path, offset: u64, buf: &mut [u8]) -> Result<()> {
        read_exact_at(&self.file, path, offset, buf)?;
        check_unchanged(&self.file, path, self.stated)
    }
}

/// Reads `file` (opened from `path`, shown in errors) in part as the module docs say:
/// `Ok(None)` when the file is small, is not an ELF file this plan reads in part (then the
/// caller reads it whole), or has too little to leave out.
pub(crate) fn read_partial(
    file: &File,
    path: &Path,
    cap: u64,
) -> Result<Option<(FileBytes, Deferred)>> {
    let io_err = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let metadata = file.metadata().map_err(io_err)?;
    let size = metadata.size();
    if size < MIN_FILE || size > cap || !metadata.file_type().is_file() {
        return Ok(None);
    }
    let Ok(len) = usize::try_from(size) else {
        return Ok(None);
    };
    // Anonymous memory: the pages of the parts left out are never touched, so never
    // allocated. Refused (an allocation failure): read whole, which says why.
    let Ok(mut buffer) = memmap2::MmapMut::map_anon(len) else {
        return Ok(None);
    };
    let mut filler = Filler {
        file,
        path,
        buf: &mut buffer,
    };
    filler.fill(0..HEAD.min(size))?;
    let ranges = match filler.buf.get(4) {
        Some(2) => plan::<elf::FileHeader64<Endianness>>(&mut filler)?,
        Some(1) => plan::<elf::FileHeader32<Endianness>>(&mut filler)?,
        _ => None,
    };
    let Some(ranges) = ranges else {
        return Ok(None);
    };
    if ranges.iter().map(|r| (r.end - r.start) as u64).sum::<u64>() < MIN_DEFERRED {
        return Ok(None);
    }
    // Everything between the ranges left out.
    let mut at = 0u64;
    for range in &ranges {
        filler.fill(at..range.start as u64)?;
        at = range.end as u64;
    }
    filler.fill(at..size)?;
    let was = stated(&metadata);
    check_unchanged(file, path, was)?;
    let bytes = buffer.make_read_only().map_err(io_err)?;
    let file = file.try_clone().map_err(io_err)?;
    Ok(Some((
        FileBytes::Anonymous(bytes),
        Deferred {
            file,
            stated: was,
            ranges,
        },
    )))
}

/// Reads ranges of a file into the same offsets of a buffer of the file's size.
struct Filler<'a> {
    file: &'a File,
    path: &'a Path,
    buf: &'a mut [u8],
}

impl Filler<'_> {
    /// Reads `range` of the file into the buffer; `false` when the range does not fit it.
    fn fill(&mut self, range: Range<u64>) -> Result<bool> {
        let start = usize::try_from(range.start).ok();
        let end = usize::try_from(range.end).ok();
        let Some(part) = start
            .zip(end)
            .and_then(|(start, end)| self.buf.get_mut(start..end))
        else {
            return Ok(false);
        };
        read_exact_at(self.file, self.path, range.start, part)?;
        Ok(true)
    }
}

/// The ranges to leave out of the file `filler` reads (its ELF header read already):
/// `None` when the headers do not parse or lie outside the file.
fn plan<Elf: FileHeader<Endian = Endianness>>(
    filler: &mut Filler<'_>,
) -> Result<Option<Vec<Range<usize>>>> {
    let size = filler.buf.len() as u64;
    let (endian, shoff, shentsize, ehsize, phoff, phsize) = {
        let Ok(header) = Elf::parse(&*filler.buf) else {
            return Ok(None);
        };
        let Ok(endian) = header.endian() else {
            return Ok(None);
        };
        if header.e_type(endian) == elf::ET_REL {
            // Relocated sections are copied anyway; kernel modules are not a process's files.
            return Ok(None);
        }
        let phsize = u64::from(header.e_phentsize(endian)) * u64::from(header.e_phnum(endian));
        (
            endian,
            header.e_shoff(endian).into(),
            u64::from(header.e_shentsize(endian)),
            u64::from(header.e_ehsize(endian)),
            header.e_phoff(endian).into(),
            phsize,
        )
    };
    if shoff == 0 || shentsize == 0 {
        return Ok(None);
    }
    // Section 0 first: it holds the real count when e_shnum overflows.
    if !filler.fill(shoff..shoff.saturating_add(shentsize))? {
        return Ok(None);
    }
    let shnum = {
        let Ok(header) = Elf::parse(&*filler.buf) else {
            return Ok(None);
        };
        match header.shnum(endian, &*filler.buf) {
            Ok(shnum) => shnum as u64,
            Err(_) => return Ok(None),
        }
    };
    let table = shoff..shoff.saturating_add(shentsize.saturating_mul(shnum));
    if !filler.fill(table.clone())? || !filler.fill(phoff..phoff.saturating_add(phsize))? {
        return Ok(None);
    }
    // The section headers and what must be read whole: the headers, and the segments but
    // for the loadable ones in a file that is not Go's (the section names and the sections
    // not left out are added below).
    let (headers, names_range, segments) = {
        let buf = &*filler.buf;
        let Ok(header) = Elf::parse(buf) else {
            return Ok(None);
        };
        let Ok(sections) = header.sections(endian, buf) else {
            return Ok(None);
        };
        let Ok(program_headers) = header.program_headers(endian, buf) else {
            return Ok(None);
        };
        let Some((names_offset, names_len)) = header
            .shstrndx(endian, buf)
            .ok()
            .and_then(|index| sections.section(object::SectionIndex(index as usize)).ok())
            .and_then(|names| names.file_range(endian))
        else {
            return Ok(None);
        };
        let segments: Vec<(bool, Range<u64>)> = program_headers
            .iter()
            .map(|ph| {
                let offset: u64 = ph.p_offset(endian).into();
                let range = offset..offset.saturating_add(ph.p_filesz(endian).into());
                (ph.p_type(endian) == elf::PT_LOAD, range)
            })
            .collect();
        let headers: Vec<Elf::SectionHeader> = sections.iter().copied().collect();
        (
            headers,
            names_offset..names_offset.saturating_add(names_len),
            segments,
        )
    };
    if !filler.fill(names_range.clone())? {
        return Ok(None);
    }
    let buf = &*filler.buf;
    let Ok(header) = Elf::parse(buf) else {
        return Ok(None);
    };
    let Ok(names) = header.sections(endian, buf) else {
        return Ok(None);
    };
    let name_of = |section: &Elf::SectionHeader| names.section_name(endian, section).ok();
    let go = headers
        .iter()
        .any(|section| name_of(section).is_some_and(|name| GO_SECTIONS.contains(&name)));
    let mut kept: Vec<Range<u64>> = vec![0..ehsize.max(HEAD), table, names_range];
    kept.push(phoff..phoff.saturating_add(phsize));
    kept.extend(
        segments
            .into_iter()
            .filter(|(load, _)| go || !load)
            .map(|(_, range)| range),
    );
    let mut candidates = Vec::new();
    for section in &headers {
        let Some((offset, len)) = section.file_range(endian) else {
            continue;
        };
        let range = offset..offset.saturating_add(len);
        let name = name_of(section).unwrap_or_default();
        if may_leave_out::<Elf>(endian, section, name, go) && len > HEAD && range.end <= size {
            candidates.push(range);
        } else {
            kept.push(range);
        }
    }
    Ok(Some(without_clashes(candidates, kept)))
}

/// Whether the section `name` may be left out: a non-allocated debug section, or (in a file
/// that is not Go's, `go`) one of [`LOADED_LEFT_OUT`]; either with bytes in the file.
fn may_leave_out<Elf: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    section: &Elf::SectionHeader,
    name: &[u8],
    go: bool,
) -> bool {
    let alloc = section.sh_flags(endian).0 & elf::SHF_ALLOC.0 != 0;
    let debug = (name.starts_with(b".debug_") || name.starts_with(b".zdebug_")) && !alloc;
    let loaded = !go && alloc && LOADED_LEFT_OUT.contains(&name);
    (debug || loaded) && section.sh_type(endian) == elf::SHT_PROGBITS
}

/// The candidates (sections [`may_leave_out`], each longer than `HEAD`) to leave out: those
/// that overlap neither a kept range nor another candidate, less their first `HEAD` bytes,
/// sorted. In O(n log n): a hostile file may list a million sections, and comparing each
/// pair would take hours.
fn without_clashes(
    mut candidates: Vec<Range<u64>>,
    mut kept: Vec<Range<u64>>,
) -> Vec<Range<usize>> {
    candidates.sort_unstable_by_key(|r| r.start);
    kept.sort_unstable_by_key(|r| r.start);
    // The furthest end of the kept ranges up to each one, in start order.
    let mut furthest = 0;
    let kept_ends: Vec<u64> = kept
        .iter()
        .map(|k| {
            furthest = furthest.max(k.end);
            furthest
        })
        .collect();
    let mut left_out = Vec::new();
    let mut earlier_end = 0;
    for (i, range) in candidates.iter().enumerate() {
        // Candidates are not empty: an earlier one (by start) overlaps this one when it ends
        // after this one starts, a later one when it starts before this one ends.
        let clashes_earlier = earlier_end > range.start;
        let clashes_later = candidates
            .get(i + 1)
            .is_some_and(|next| next.start < range.end);
        earlier_end = earlier_end.max(range.end);
        // The kept ranges that start before this one ends: one of them overlaps it when it
        // ends after this one starts.
        let before_end = kept.partition_point(|k| k.start < range.end);
        let clashes_kept = before_end
            .checked_sub(1)
            .and_then(|last| kept_ends.get(last))
            .is_some_and(|&end| end > range.start);
        if clashes_earlier || clashes_later || clashes_kept {
            continue;
        }
        // Within the file (checked by the caller), whose size fits usize.
        let (Ok(start), Ok(end)) = (
            usize::try_from(range.start + HEAD),
            usize::try_from(range.end),
        ) else {
            continue;
        };
        left_out.push(start..end);
    }
    left_out
}

fn read_exact_at(file: &File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<()> {
    file.read_exact_at(buf, offset).map_err(|source| {
        let source = if source.kind() == std::io::ErrorKind::UnexpectedEof {
            std::io::Error::other("the file changed while it was read (it ended early)")
        } else {
            source
        };
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// An error when `file` no longer states `was`: written, truncated or replaced since.
fn check_unchanged(file: &File, path: &Path, was: Stated) -> Result<()> {
    let io_err = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let now = file.metadata().map_err(io_err)?;
    if stated(&now) != was {
        return Err(io_err(std::io::Error::other(
            "the file changed while it was read",
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    #[test]
    fn clashing_sections_are_kept_whole() {
        use super::{without_clashes, HEAD};
        use std::ops::Range;
        let h = HEAD;
        let candidates = vec![
            1000..1000 + 4 * h, // alone: left out
            5000..5000 + 4 * h, // overlaps the next candidate
            5000 + 3 * h..5000 + 8 * h,
            9000..9000 + 4 * h,   // holds an empty kept range
            20000..20000 + 8 * h, // overlaps a kept range that starts before it
            30000..30000 + 2 * h, // touches a kept range at its end: no overlap
        ];
        let kept = vec![
            9100..9100,
            19000..20010,
            30000 + 2 * h..30000 + 3 * h,
            0..64,
        ];
        let at = |n: u64| n as usize;
        assert_eq!(
            without_clashes(candidates, kept),
            vec![
                at(1000 + h)..at(1000 + 4 * h),
                at(30000 + h)..at(30000 + 2 * h)
            ]
        );
        // Many overlapping candidates (a hostile section table): quick, none left out.
        let many: Vec<Range<u64>> = (0..200_000u64).map(|i| i * 10..i * 10 + 1000).collect();
        assert!(without_clashes(many, Vec::new()).is_empty());
    }

    use crate::addr::VirtAddr;
    use crate::dwarf::{DwarfInfo, DwarfSections};
    use crate::elf::{ElfFile, SectionContents};

    /// `testdata/bin/NAME` with a 5 MiB `.debug_zpad` section of varied bytes added by
    /// `objcopy` (so that it is large enough to be read in part), in `dir`.
    fn padded(dir: &tempfile::TempDir, name: &str) -> PathBuf {
        let blob = dir.path().join("pad");
        let mut next = crate::test_support::xorshift64(7);
        let pad: Vec<u8> = (0..5 << 20).map(|_| next() as u8).collect();
        std::fs::write(&blob, pad).expect("the pad");
        let out = dir.path().join(name);
        let status = std::process::Command::new("objcopy")
            .arg(format!("--add-section=.debug_zpad={}", blob.display()))
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bin/").to_string() + name)
            .arg(&out)
            .status()
            .expect("objcopy (binutils) runs");
        assert!(status.success(), "objcopy --add-section");
        out
    }

    fn contents(elf: &ElfFile, name: &str) -> Vec<u8> {
        match elf.section_contents(name).expect("reads").expect(name) {
            SectionContents::InFile(range) => elf.bytes_in(range).to_vec(),
            SectionContents::Owned(bytes) => bytes,
        }
    }

    /// A large file read through `from_file` leaves its DWARF out, and hands out the same
    /// sections (plain, `.zdebug_*` and `SHF_COMPRESSED`), the same CRC32 and the same
    /// source lines as the file mapped whole.
    #[test]
    fn a_file_read_in_part_answers_as_the_whole_file() {
        let dir = tempfile::tempdir().expect("a temporary dir");
        for name in [
            "c-gcc-O2-g-dwarf4",
            "c-compress-zlib-gnu",
            "c-compress-zstd",
        ] {
            let path = padded(&dir, name);
            let whole = Arc::new(ElfFile::open(&path).expect("maps"));
            let file = std::fs::File::open(&path).expect("opens");
            let part = Arc::new(ElfFile::from_file(&file, &path).expect("reads"));
            let deferred = part.deferred().expect("read in part");
            let left_out: usize = deferred.ranges().iter().map(|r| r.len()).sum();
            assert!(left_out >= 5 << 20, "{name}: {left_out} bytes left out");
            // The pad is somewhere the buffer holds zeros.
            assert!(part.data().len() == whole.data().len() && part.data() != whole.data());
            for section in [".debug_zpad", ".debug_info", ".debug_line", ".debug_str"] {
                assert_eq!(
                    contents(&part, section),
                    contents(&whole, section),
                    "{name} {section}"
                );
            }
            assert_eq!(
                part.whole_file_crc32().expect("reads"),
                zlib_rs::crc32::crc32(0, whole.data()),
                "{name}"
            );
            let lines = |elf: &Arc<ElfFile>| {
                let sections = DwarfSections::load(elf).expect("loads").expect("DWARF");
                let info = DwarfInfo::new(&sections).expect("parses");
                let main = elf
                    .symbol_value_by_name("main")
                    .expect("reads")
                    .expect("main");
                let frames = info.frames(VirtAddr(main.0 + 4)).expect("looks up");
                assert!(frames.as_ref().is_some_and(|f| !f.is_empty()), "{name}");
                format!("{frames:?}")
            };
            assert_eq!(lines(&part), lines(&whole), "{name}");
        }
    }

    /// A file read in part reads its `.debug_info` unit by unit, and answers every
    /// function's addresses as the file mapped whole does (a C and a Rust file, the latter
    /// with hundreds of units and references between them).
    #[test]
    fn units_read_one_by_one_answer_as_the_whole_section() {
        let dir = tempfile::tempdir().expect("a temporary dir");
        for name in ["c-gcc-O2-g-dwarf4", "rust-O2-g", "cpp-O2-g"] {
            let path = padded(&dir, name);
            let whole = Arc::new(ElfFile::open(&path).expect("maps"));
            let file = std::fs::File::open(&path).expect("opens");
            let part = Arc::new(ElfFile::from_file(&file, &path).expect("reads"));
            let part_sections = DwarfSections::load(&part).expect("loads").expect("DWARF");
            assert!(
                format!("{part_sections:?}").contains("unit by unit: Some("),
                "{name}: {part_sections:?}"
            );
            let whole_sections = DwarfSections::load(&whole).expect("loads").expect("DWARF");
            let (ours, theirs) = (
                DwarfInfo::new(&part_sections).expect("parses"),
                DwarfInfo::new(&whole_sections).expect("parses"),
            );
            let mut found = 0;
            for symbol in whole.named_symbols().expect("symbols") {
                if symbol.kind != crate::elf::SymbolKind::Function {
                    continue;
                }
                for addr in [symbol.addr.0, symbol.addr.0 + symbol.size / 2] {
                    let expected = theirs.frames(VirtAddr(addr)).expect("looks up");
                    found += usize::from(expected.is_some());
                    assert_eq!(
                        format!("{:?}", ours.frames(VirtAddr(addr)).expect("looks up")),
                        format!("{expected:?}"),
                        "{name} at {addr:#x}"
                    );
                }
            }
            assert!(found >= 4, "{name}: {found} addresses with DWARF");
        }
    }

    /// A file written after it was opened in part is an error naming it when a section left
    /// out is read, not a mix of its two versions.
    #[test]
    fn a_file_changed_after_a_partial_read_is_an_error() {
        let dir = tempfile::tempdir().expect("a temporary dir");
        let path = padded(&dir, "c-gcc-O2-g-dwarf4");
        let file = std::fs::File::open(&path).expect("opens");
        let part = Arc::new(ElfFile::from_file(&file, &path).expect("reads"));
        drop(file);
        // Sections listed now; the units are read when the DWARF is.
        let sections = DwarfSections::load(&part).expect("loads").expect("DWARF");
        let mut bytes = std::fs::read(&path).expect("reads");
        bytes.truncate(bytes.len() - 4096);
        std::fs::write(&path, bytes).expect("rewrites in place");
        let err = part
            .section_contents(".debug_zpad")
            .expect_err("the file changed");
        let text = err.to_string();
        assert!(
            text.contains("changed") && text.contains(&*path.to_string_lossy()),
            "{text}"
        );
        assert!(part.whole_file_crc32().is_err());
        // The unit of `main` is read at its first lookup (its header, in the first bytes
        // of the section, was read with the file): an error, not an answer without DWARF.
        let main = part
            .symbol_value_by_name("main")
            .expect("reads")
            .expect("main");
        let err = DwarfInfo::new(&sections)
            .and_then(|info| info.frames(VirtAddr(main.0 + 4)))
            .expect_err("the unit does not read");
        assert!(err.to_string().contains("changed"), "{err}");
    }

    /// The file range of section `name` of `elf`, if it has bytes in the file.
    fn range_of(elf: &ElfFile, name: &str) -> Option<std::ops::Range<usize>> {
        use object::{Object, ObjectSection};
        let file = object::File::parse(elf.data()).expect("parses");
        let (offset, len) = file.section_by_name(name)?.file_range()?;
        Some(offset as usize..(offset + len) as usize)
    }

    /// A file read in part leaves its `.text`, `.rodata` and `.data` out too, and hands out
    /// the same bytes as the whole file for each of them, for the code at every function
    /// (`code_at`, what the unwinder reads where no CFI covers an address) and for every
    /// stretch of the file (`copy_at`, a core's file-backed memory); symbols are the same.
    #[test]
    fn loaded_sections_are_read_from_the_file_when_asked_for() {
        let dir = tempfile::tempdir().expect("a temporary dir");
        for name in ["c-gcc-O2-g-dwarf4", "rust-O2-g"] {
            let path = padded(&dir, name);
            let whole = Arc::new(ElfFile::open(&path).expect("maps"));
            let file = std::fs::File::open(&path).expect("opens");
            let part = Arc::new(ElfFile::from_file(&file, &path).expect("reads"));
            let deferred = part.deferred().expect("read in part");
            for section in [".text", ".rodata", ".data"] {
                let range = range_of(&whole, section).expect(section);
                assert!(range.len() > super::HEAD as usize, "{name} {section}");
                let left_out = range.start + super::HEAD as usize..range.end;
                assert!(
                    deferred.ranges().contains(&left_out),
                    "{name} {section} {left_out:?}: {:?}",
                    deferred.ranges()
                );
                assert!(part.bytes_in(left_out.clone()).iter().all(|&b| b == 0));
                assert_eq!(
                    contents(&part, section),
                    contents(&whole, section),
                    "{name} {section}"
                );
            }
            let mut functions = 0;
            for symbol in whole.named_symbols().expect("symbols") {
                if symbol.kind == crate::elf::SymbolKind::Function {
                    functions += 1;
                    assert_eq!(
                        part.code_at(symbol.addr, 40),
                        whole.code_at(symbol.addr, 40),
                        "{name} {:#x}",
                        symbol.addr.0
                    );
                    assert_eq!(
                        format!("{:?}", part.find_symbol(symbol.addr).expect("looks up")),
                        format!("{:?}", whole.find_symbol(symbol.addr).expect("looks up")),
                        "{name} {:#x}",
                        symbol.addr.0
                    );
                }
            }
            assert!(functions >= 4, "{name}: {functions} functions");
            let mut buf = vec![0; 3000];
            for offset in (0..whole.data().len() + 2000).step_by(2900) {
                let n = part.copy_at(offset, &mut buf);
                let expected = whole.data().get(offset..).filter(|rest| !rest.is_empty());
                let expected = expected.map(|rest| &rest[..rest.len().min(buf.len())]);
                assert_eq!(n.map(|n| &buf[..n]), expected, "{name} at {offset}");
            }
        }
    }

    /// A Go file keeps its loadable segments whole (its table reads words of its data
    /// through the buffer); its DWARF is still left out.
    #[test]
    fn a_go_file_is_read_with_its_code_and_data() {
        let dir = tempfile::tempdir().expect("a temporary dir");
        let path = padded(&dir, "go-demo.stripped");
        let file = std::fs::File::open(&path).expect("opens");
        let part = ElfFile::from_file(&file, &path).expect("reads");
        let whole = ElfFile::open(&path).expect("maps");
        let deferred = part.deferred().expect("read in part");
        let pad = range_of(&whole, ".debug_zpad").expect("the pad");
        let pad_left_out = pad.start + super::HEAD as usize..pad.end;
        assert_eq!(deferred.ranges(), std::slice::from_ref(&pad_left_out));
        for section in [".text", ".rodata", ".gopclntab"] {
            let range = range_of(&whole, section).expect(section);
            assert_eq!(
                part.bytes_in(range.clone()),
                whole.bytes_in(range),
                "{section}"
            );
        }
    }

    /// A small file is read whole, as before.
    #[test]
    fn a_small_file_is_read_whole() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/bin/c-gcc-O2-g-dwarf4"
        );
        let file = std::fs::File::open(path).expect("opens");
        let elf = ElfFile::from_file(&file, path).expect("reads");
        assert!(elf.deferred().is_none());
    }
}
