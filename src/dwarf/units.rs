//! The compilation units of one file's DWARF and the addresses each covers.
//!
//! A unit's ranges come from `.debug_aranges` where it lists the unit (as llvm-symbolizer
//! takes them); such a unit is parsed (its abbreviation table, root DIE and line program
//! header) only when an address in it is first asked about, so a few addresses in a large
//! file parse a few units. A unit `.debug_aranges` does not list is parsed up front: its
//! root DIE's `DW_AT_ranges` or `DW_AT_low_pc`/`DW_AT_high_pc`, and when it states none,
//! its line program's sequences. Ranges of several units may overlap (weak symbols, a unit
//! stating one range around discontiguous code): [`Units::find`] yields every unit whose
//! ranges hold an address, and the caller asks each in turn. Each unit's line table and
//! functions are read on first use and kept (`info.rs`).

use std::cell::{OnceCell, RefCell};
use std::ops::Range;
use std::sync::Arc;

use gimli::{Reader as _, RunTimeEndian};

use crate::dwarf::files::FileTable;
use crate::dwarf::functions::{root_range_attributes, FunctionTable, FunctionsError};
use crate::dwarf::lines::LineTable;
use crate::dwarf::reader::{Reader, SectionBytes};
use crate::elf::ElfFile;
use crate::error::{Error, Result};

/// One unit: its header, and the unit itself once parsed.
pub(crate) struct UnitSlot {
    offset: gimli::DebugInfoOffset<usize>,
    /// Its length, the initial length field included.
    len: usize,
    /// Its header: read with the slot, or, for a `.debug_info` read unit by unit
    /// ([`UnitSource`]), read with the unit's bytes on first use (an error: they could not
    /// be read, or the header does not parse).
    header: OnceCell<Result<gimli::UnitHeader<Reader>>>,
    /// Parsed on first use (`None`: it does not parse, and answers nothing). Boxed: a parsed
    /// unit is about 1 KB, and most units of a large file are never parsed.
    parsed: OnceCell<Option<Box<UnitEntry>>>,
}

impl UnitSlot {
    fn new(offset: gimli::DebugInfoOffset<usize>, header: gimli::UnitHeader<Reader>) -> Self {
        UnitSlot {
            offset,
            len: header.length_including_self(),
            header: OnceCell::from(Ok(header)),
            parsed: OnceCell::new(),
        }
    }

    fn unread(offset: gimli::DebugInfoOffset<usize>, len: usize) -> Self {
        UnitSlot {
            offset,
            len,
            header: OnceCell::new(),
            parsed: OnceCell::new(),
        }
    }
}

/// The `.debug_info` of a file read in part (`elf/partial.rs`), read one unit at a time:
/// the unit headers by a walk of small reads when the units are listed, a unit's bytes when
/// it is first parsed. A process's `libpython3.13.so` has 15.7 MB of `.debug_info`, of which
/// a stack needs the dozen units its frames are in.
#[derive(Clone)]
pub(crate) struct UnitSource {
    pub(crate) file: Arc<ElfFile>,
    /// Where the section lies in the file.
    pub(crate) section: Range<usize>,
    pub(crate) endian: RunTimeEndian,
}

/// What [`UnitSource::walk`] reads of a unit: its offset and length (the initial length
/// field included), its version and, from version 5, its unit type.
struct UnitStub {
    offset: usize,
    len: usize,
    version: u16,
    unit_type: Option<gimli::DwUt>,
}

impl UnitSource {
    fn malformed(&self, context: &str, offset: usize, e: gimli::Error) -> Error {
        Error::MalformedDwarf {
            path: self.file.path().to_path_buf(),
            section: ".debug_info",
            context: context.to_string(),
            offset: Some(offset as u64),
            source: e,
        }
    }

    /// `len` bytes at `offset` of the section (fewer at its end).
    fn read(&self, offset: usize, len: usize) -> Result<Vec<u8>> {
        let start = self
            .section
            .start
            .saturating_add(offset)
            .min(self.section.end);
        let end = start.saturating_add(len).min(self.section.end);
        self.file.read_range(start..end)
    }

    /// Every unit's offset, length, version and type, as gimli's unit iterator reads them
    /// (the same errors for a length past the section's end, an unknown version or type).
    fn walk(&self) -> Result<Vec<UnitStub>> {
        let size = self.section.len();
        let mut units = Vec::new();
        let mut offset = 0;
        while offset < size {
            let eof = gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(offset as u64));
            let head = self.read(offset, 24)?;
            let mut reader = gimli::EndianSlice::new(&head, self.endian);
            let (unit_length, format) = reader
                .read_initial_length()
                .map_err(|e| self.malformed("unit headers", offset, e))?;
            let initial = match format {
                gimli::Format::Dwarf32 => 4,
                gimli::Format::Dwarf64 => 12,
            };
            let len = unit_length
                .checked_add(initial)
                .filter(|&len| len <= size - offset)
                .ok_or_else(|| self.malformed("unit headers", offset, eof))?;
            let version = reader
                .read_u16()
                .map_err(|e| self.malformed("unit headers", offset, e))?;
            let unit_type = match version {
                2..=4 => None,
                5 => Some(gimli::DwUt(
                    reader
                        .read_u8()
                        .map_err(|e| self.malformed("unit headers", offset, e))?,
                )),
                _ => {
                    let e = gimli::Error::UnknownVersion(u64::from(version));
                    return Err(self.malformed("unit headers", offset, e));
                }
            };
            units.push(UnitStub {
                offset,
                len,
                version,
                unit_type,
            });
            offset += len;
        }
        Ok(units)
    }

    /// The header of the unit at `offset` (`len` bytes), its bytes read now and kept by it.
    fn header(&self, offset: usize, len: usize) -> Result<gimli::UnitHeader<Reader>> {
        let bytes = self.read(offset, len)?;
        let reader = Reader::new(SectionBytes::Owned(Arc::new(bytes)), self.endian);
        let malformed = |e| self.malformed("unit header", offset, e);
        let header = gimli::DebugInfo::from(reader.clone())
            .units()
            .next()
            .map_err(malformed)?
            .ok_or_else(|| malformed(gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(0))))?;
        // The same header, at its offset in the section: DIE offsets are the unit's own,
        // references between units go through `Units::at_offset`.
        let mut entries = reader;
        entries.skip(header.header_size()).map_err(malformed)?;
        Ok(gimli::UnitHeader::new(
            header.encoding(),
            header.unit_length(),
            header.type_(),
            header.debug_abbrev_offset(),
            gimli::SectionId::DebugInfo,
            gimli::UnitSectionOffset(offset),
            entries,
        ))
    }
}

/// A unit parsed as `UnitSlot::parsed` does, with its line table and (when it is not a
/// split-DWARF skeleton, whose functions are in another file) its functions, as `info.rs`
/// reads them on first use.
fn parse_unit(
    dwarf: &gimli::Dwarf<Reader>,
    header: gimli::UnitHeader<Reader>,
) -> Option<Box<UnitEntry>> {
    let entry = UnitEntry::parse(dwarf, header)?;
    let _ = entry.lines();
    if entry.unit.dwo_id.is_none() {
        let table = entry.read_functions(&gimli::UnitRef::new(dwarf, &entry.unit));
        let _ = entry.functions.set(table);
    }
    Some(entry)
}

/// One parsed unit and what was read from it so far.
pub(crate) struct UnitEntry {
    /// The unit, without its line program (`program` and `file_table` have it).
    pub(crate) unit: gimli::Unit<Reader>,
    /// Its line program until its line table is read (then dropped: see `files.rs`).
    /// Boxed: 480 bytes that would stay in every parsed unit after they are dropped.
    program: RefCell<Option<Box<gimli::IncompleteLineProgram<Reader>>>>,
    /// Its line table, read on first use (`None`: the unit has no line program; a split
    /// unit's is its skeleton's, this unit's).
    lines: OnceCell<Result<Option<LineTable>, gimli::Error>>,
    /// Its line program's file table (`None`: it has no line program).
    pub(crate) file_table: Option<FileTable>,
    /// Its split unit, for a skeleton unit (`None`: not split, or the split file is
    /// missing or refused; the skeleton then answers alone, with lines only). Boxed: a
    /// `gimli::Unit` is 768 bytes, and few units are skeletons.
    pub(crate) split: OnceCell<Option<Box<SplitUnit>>>,
    /// Its functions (a skeleton's, from its split unit).
    pub(crate) functions: OnceCell<Result<FunctionTable, FunctionsError>>,
    /// Per entry of `functions`, its name once read: `info.rs`'s cache.
    pub(crate) names: RefCell<Vec<Option<Arc<crate::dwarf::FunctionName>>>>,
    /// File names of its line table by index, rendered once each (outer `None`: not yet).
    pub(crate) files: RefCell<Vec<Option<Option<Arc<str>>>>>,
}

impl UnitEntry {
    /// The unit at `header` (its abbreviations, root DIE and line program header); `None`
    /// when it does not parse.
    fn parse(dwarf: &gimli::Dwarf<Reader>, header: gimli::UnitHeader<Reader>) -> Option<Box<Self>> {
        let mut unit = dwarf.unit(header).ok()?;
        let (program, file_table) = take_line_program(dwarf, &mut unit);
        Some(Box::new(UnitEntry {
            unit,
            program: RefCell::new(program.map(Box::new)),
            lines: OnceCell::new(),
            file_table,
            split: OnceCell::new(),
            functions: OnceCell::new(),
            names: RefCell::default(),
            files: RefCell::default(),
        }))
    }

    /// Its line table, read on first use (`None`: the unit has no line program).
    pub(crate) fn lines(&self) -> Result<Option<&LineTable>, gimli::Error> {
        let lines = self.lines.get_or_init(|| {
            // Taken: the rows and `file_table` are all that is kept of it.
            let program = self.program.borrow_mut().take();
            program.map(|program| LineTable::read(*program)).transpose()
        });
        match lines {
            Ok(lines) => Ok(lines.as_ref()),
            Err(e) => Err(*e),
        }
    }

    /// Reads the function table of `unit` (this unit, or its split unit), and sizes
    /// `names` to it; for `functions` to keep.
    pub(crate) fn read_functions(
        &self,
        unit: &gimli::UnitRef<'_, Reader>,
    ) -> Result<FunctionTable, FunctionsError> {
        let table = FunctionTable::read(unit);
        if let Ok(table) = &table {
            *self.names.borrow_mut() = vec![None; table.len()];
        }
        table
    }
}

/// A split-DWARF unit (from a `.dwo` file or a `.dwp` package) and its sections.
pub(crate) struct SplitUnit {
    pub(crate) dwarf: Arc<gimli::Dwarf<Reader>>,
    /// The unit, without its line program (which has only a file table: `file_table`).
    pub(crate) unit: gimli::Unit<Reader>,
    /// The file table its `DW_AT_decl_file`s index.
    pub(crate) file_table: Option<FileTable>,
}

impl SplitUnit {
    /// `unit`, read from `dwarf`, its line program's header kept as a [`FileTable`].
    pub(crate) fn new(dwarf: Arc<gimli::Dwarf<Reader>>, mut unit: gimli::Unit<Reader>) -> Self {
        let (_, file_table) = take_line_program(&dwarf, &mut unit);
        SplitUnit {
            dwarf,
            unit,
            file_table,
        }
    }
}

/// Takes `unit`'s line program out of it (a parsed unit would keep its whole header as long
/// as it lives: see `files.rs`), with its file table; `unit` was read from `dwarf`.
fn take_line_program(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &mut gimli::Unit<Reader>,
) -> (
    Option<gimli::IncompleteLineProgram<Reader>>,
    Option<FileTable>,
) {
    let program = unit.line_program.take();
    let file_table = program
        .as_ref()
        .map(|program| FileTable::new(unit, &dwarf.debug_line, program.header()));
    (program, file_table)
}

/// An address range of a unit, with the lowest start of every range sorted after it (so a
/// search stops as soon as no later range can hold the address).
struct UnitRange {
    begin: u64,
    end: u64,
    unit: usize,
    min_begin: u64,
}

/// The units of one file's DWARF.
pub(crate) struct Units {
    /// Sorted by offset (the order of `.debug_info`).
    units: Box<[UnitSlot]>,
    /// Sorted by end, then unit.
    ranges: Box<[UnitRange]>,
    /// Where the units' bytes are read from when `.debug_info` is read unit by unit.
    source: Option<UnitSource>,
}

impl Units {
    /// Reads every unit's header and where its code is (see the module docs; type units
    /// are skipped, and so is a unit that must be parsed now and cannot be, as the addr2line
    /// crate skips it).
    ///
    /// With a `source`, the units are listed by [`UnitSource::walk`] instead of from
    /// `dwarf`'s `.debug_info` (empty then), and each is read when first needed. `malformed`
    /// turns gimli's errors into the caller's.
    pub(crate) fn read(
        dwarf: &gimli::Dwarf<Reader>,
        source: Option<UnitSource>,
        malformed: impl Fn(gimli::Error) -> Error,
    ) -> Result<Units> {
        Self::read_gimli(dwarf, source).map_err(|e| match e {
            Read::Gimli(e) => malformed(e),
            Read::Other(e) => e,
        })
    }

    fn read_gimli(
        dwarf: &gimli::Dwarf<Reader>,
        source: Option<UnitSource>,
    ) -> std::result::Result<Units, Read> {
        let mut aranges = Vec::new();
        let mut headers = dwarf.debug_aranges.headers();
        while let Some(header) = headers.next()? {
            aranges.push((header.debug_info_offset(), header.offset()));
        }
        aranges.sort_unstable_by_key(|&(info, _)| info);

        let mut units: Vec<UnitSlot> = Vec::new();
        let mut ranges = Vec::new();
        let mut headers = dwarf.units();
        let mut stubs = match &source {
            Some(source) => Some(source.walk().map_err(Read::Other)?.into_iter()),
            None => None,
        };
        loop {
            let (slot, kind) = match &mut stubs {
                Some(stubs) => {
                    let Some(stub) = stubs.next() else { break };
                    let kind = match stub.unit_type {
                        None if stub.version < 5 => gimli::DW_UT_compile,
                        None => continue,
                        Some(kind) => kind,
                    };
                    (
                        UnitSlot::unread(gimli::DebugInfoOffset(stub.offset), stub.len),
                        kind,
                    )
                }
                None => {
                    let Some(header) = headers.next()? else { break };
                    let Some(offset) = header.debug_info_offset() else {
                        continue;
                    };
                    let kind = match header.type_() {
                        gimli::UnitType::Type { .. } => gimli::DW_UT_type,
                        gimli::UnitType::SplitType { .. } => gimli::DW_UT_split_type,
                        gimli::UnitType::Partial => gimli::DW_UT_partial,
                        _ => gimli::DW_UT_compile,
                    };
                    (UnitSlot::new(offset, header), kind)
                }
            };
            let offset = slot.offset;
            let mut needs_ranges = match kind {
                gimli::DW_UT_type | gimli::DW_UT_split_type => continue,
                // Only referred to from other units; no code of its own.
                gimli::DW_UT_partial => false,
                gimli::DW_UT_compile | gimli::DW_UT_skeleton | gimli::DW_UT_split_compile => true,
                // As gimli's unit iterator, which stops there.
                _ => return Err(Read::Gimli(gimli::Error::UnknownUnitType(kind))),
            };
            let index = units.len();
            let mut add = |begin: u64, end: u64| {
                ranges.push(UnitRange {
                    begin,
                    end,
                    unit: index,
                    min_begin: 0,
                });
            };
            if needs_ranges {
                // `.debug_aranges` first, as llvm-symbolizer does: a unit it covers is not
                // parsed until an address in it is asked about (most units of a large file
                // never are; parsing one reads its whole abbreviation table).
                let first = aranges.partition_point(|&(info, _)| info < offset);
                for &(_, set) in aranges[first..].iter().take_while(|&&(i, _)| i == offset) {
                    let mut entries = dwarf.debug_aranges.header(set)?.entries();
                    // An entry that does not read (an address overflow) is skipped; the
                    // iterator ends on errors it cannot go past.
                    while let Some(arange) = entries.next().transpose() {
                        if let Ok(arange) = arange {
                            if arange.length() != 0 {
                                let range = arange.range();
                                add(range.begin, range.end);
                                needs_ranges = false;
                            }
                        }
                    }
                }
            }
            if needs_ranges {
                // Not in `.debug_aranges`: its root DIE's ranges, else its line program's
                // sequences.
                let Some(entry) = parsed(&slot, source.as_ref(), dwarf).map_err(Read::Other)?
                else {
                    continue;
                };
                let unit = gimli::UnitRef::new(dwarf, &entry.unit);
                let Some(root) = root_range_attributes(&unit)? else {
                    continue;
                };
                if !root.for_each(&unit, &mut add)? {
                    if let Ok(Some(lines)) = entry.lines() {
                        for range in lines.ranges() {
                            add(range.begin, range.end);
                        }
                    }
                }
            }
            units.push(slot);
        }
        ranges.sort_unstable_by_key(|r| (r.end, r.unit));
        let mut min = u64::MAX;
        for range in ranges.iter_mut().rev() {
            min = min.min(range.begin);
            range.min_begin = min;
        }
        Ok(Units {
            units: units.into_boxed_slice(),
            ranges: ranges.into_boxed_slice(),
            source,
        })
    }

    /// The unit of `slot` (one of these units), parsed (its abbreviations, root DIE and line
    /// program header) on first use; `Ok(None)` when it does not parse, an error when its
    /// bytes could not be read (see [`UnitSource`]).
    pub(crate) fn parsed<'a>(
        &self,
        slot: &'a UnitSlot,
        dwarf: &gimli::Dwarf<Reader>,
    ) -> Result<Option<&'a UnitEntry>> {
        parsed(slot, self.source.as_ref(), dwarf)
    }

    /// Parses, on `threads` threads (the caller's among them), every unit that holds one of
    /// `addrs` and is not parsed yet, with its line table and (unless its functions are in
    /// a split-DWARF file) its function table: what the first lookup in each would do, with
    /// the same results and errors, kept the same way. `addrs` in address order visit the
    /// units in order; any order works.
    pub(crate) fn prepare(
        &self,
        dwarf: &gimli::Dwarf<Reader>,
        helper_dwarf: &(dyn Fn() -> Option<gimli::Dwarf<Reader>> + Sync),
        addrs: impl Iterator<Item = u64>,
        threads: usize,
    ) {
        let unparsed = |&index: &usize| {
            self.units
                .get(index)
                .is_some_and(|slot| slot.parsed.get().is_none())
        };
        let mut wanted: Vec<usize> = addrs
            .flat_map(|addr| self.find_indices(addr).filter(unparsed))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            return;
        }
        // Headers are cloned out: a slot (its `OnceCell`s) cannot be shared between threads,
        // a header and the sections can.
        let headers: Vec<(
            usize,
            gimli::DebugInfoOffset<usize>,
            gimli::UnitHeader<Reader>,
        )> = wanted
            .iter()
            .filter_map(|&index| {
                let slot = self.units.get(index)?;
                // A unit whose bytes do not read is left for its lookup to report.
                let header = header(slot, self.source.as_ref()).ok()?;
                Some((index, slot.offset, header.clone()))
            })
            .collect();
        // One unit each at most: a thread costs tens of microseconds to start.
        let threads = threads.min(headers.len());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let in_part = self.source.is_some();
        // Takes units off the shared list until none is left. A helper passes its own
        // sections and reads each unit's header again from them.
        let parse_some = |own: Option<&gimli::Dwarf<Reader>>| {
            let mut parsed = Vec::new();
            loop {
                let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((index, offset, header)) = headers.get(at) else {
                    return parsed;
                };
                let entry = match own {
                    None => parse_unit(dwarf, header.clone()),
                    // Read unit by unit: the header holds the unit's own bytes.
                    Some(own) if in_part => parse_unit(own, header.clone()),
                    Some(own) => match own.debug_info.header_from_offset(*offset) {
                        Ok(header) => parse_unit(own, header),
                        Err(_) => parse_unit(dwarf, header.clone()),
                    },
                };
                parsed.push((*index, entry));
            }
        };
        let parsed: Vec<_> = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let own = helper_dwarf();
                        parse_some(own.as_ref())
                    })
                })
                .collect();
            let mut parsed = parse_some(None);
            for helper in helpers {
                match helper.join() {
                    Ok(more) => parsed.extend(more),
                    // A panic in a helper is a bug; the units it took stay unparsed and are
                    // parsed on first use, where the panic would show again.
                    Err(_) => log::error!("a unit-parsing thread panicked"),
                }
            }
            parsed
        });
        for (index, entry) in parsed {
            if let Some(slot) = self.units.get(index) {
                // Already set only if another lookup parsed it meanwhile; same result.
                let _ = slot.parsed.set(entry);
            }
        }
    }

    /// The units whose ranges hold `probe`, in order of their ranges' ends.
    pub(crate) fn find(&self, probe: u64) -> impl Iterator<Item = &UnitSlot> + '_ {
        self.find_indices(probe)
            .filter_map(|index| self.units.get(index))
    }

    /// As [`Units::find`], the units' indices.
    fn find_indices(&self, probe: u64) -> impl Iterator<Item = usize> + '_ {
        // The first range that ends after `probe`.
        let first = self.ranges.partition_point(|r| r.end <= probe);
        self.ranges
            .get(first..)
            .unwrap_or_default()
            .iter()
            .take_while(move |r| probe >= r.min_begin)
            .filter(move |r| r.begin <= probe && probe < r.end)
            .map(|r| r.unit)
    }

    /// The unit holding the DIE at `offset` of `.debug_info`, and the DIE's offset in it.
    pub(crate) fn at_offset(
        &self,
        offset: gimli::DebugInfoOffset<usize>,
    ) -> Option<(&UnitSlot, gimli::UnitOffset<usize>)> {
        let after = self.units.partition_point(|u| u.offset <= offset);
        // No DIE lies at a unit's own offset (its header is there).
        let slot = self.units.get(after.checked_sub(1)?)?;
        if slot.offset == offset {
            return None;
        }
        // As `DebugInfoOffset::to_unit_offset`, without the header (which may be unread).
        let inside = offset.0 - slot.offset.0;
        (inside < slot.len).then_some((slot, gimli::UnitOffset(inside)))
    }
}

/// Why [`Units::read`] stopped: gimli's error, or one of ours (a unit's bytes not read).
enum Read {
    Gimli(gimli::Error),
    Other(Error),
}

impl From<gimli::Error> for Read {
    fn from(e: gimli::Error) -> Self {
        Read::Gimli(e)
    }
}

/// `slot`'s header, read from `source` on first use when it was not read with the slot.
fn header<'a>(
    slot: &'a UnitSlot,
    source: Option<&UnitSource>,
) -> Result<&'a gimli::UnitHeader<Reader>> {
    slot.header
        .get_or_init(|| match source {
            Some(source) => source.header(slot.offset.0, slot.len),
            // Slots of a `.debug_info` read whole get their header when they are made.
            None => Err(Error::MalformedElf {
                path: std::path::PathBuf::new(),
                what: "a DWARF unit without its header".to_string(),
            }),
        })
        .as_ref()
        .map_err(Error::clone_for_cache)
}

/// See [`Units::parsed`].
fn parsed<'a>(
    slot: &'a UnitSlot,
    source: Option<&UnitSource>,
    dwarf: &gimli::Dwarf<Reader>,
) -> Result<Option<&'a UnitEntry>> {
    if let Some(parsed) = slot.parsed.get() {
        return Ok(parsed.as_deref());
    }
    let header = header(slot, source)?.clone();
    Ok(slot
        .parsed
        .get_or_init(|| UnitEntry::parse(dwarf, header))
        .as_deref())
}
