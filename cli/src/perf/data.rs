//! Reading a `perf record --call-graph dwarf` recording (perf.data) for the unwinder: the
//! header checked here first (so a wrong or truncated file is named with the offset of what
//! is missing), the header, attributes and feature sections read through the
//! linux-perf-data crate, then the records found, attributed to their event and ordered
//! here ([`Records`], as that crate's record iterator does) and parsed by
//! linux-perf-event-reader where they lie in the file's bytes, into the values the unwinder
//! needs ([`PerfEvent`]): COMM, FORK, MMAP/MMAP2 (a mapping of a file: what
//! `stacksym::unwind::Modules::add` takes) and SAMPLE (the user registers as perf's `perf_regs`
//! mask and values, the stack copy cut to its `dyn_size` and borrowed from the file's bytes,
//! the kernel part of the callchain). [`Sample::unwind_input`] makes registers and a
//! `StackCopy` of a sample.
//!
//! Shared by `stacksym perf` (src/perf/), benches/unwind.rs and the `perf_data` fuzz target
//! (`#[path]`), so all three read recordings the same way. Errors are messages naming the
//! file; nothing here panics on any input.
#![allow(dead_code)] // each user takes what it needs

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use linux_perf_data::linux_perf_event_reader::{
    CpuMode, Endianness, EventRecord, PerfEventType, RawData, RawEventRecord, ReadFormat,
    RecordIdParseInfo, RecordParseInfo, RecordType, SampleFormat,
};
use linux_perf_data::{PerfFile, PerfFileReader};
use stacksym::unwind::{Registers, RegsAarch64, RegsX86_64, StackCopy};

/// perf's callchain context markers (`PERF_CONTEXT_*`), as u64.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;

/// Size of perf.data's file header (`struct perf_file_header`).
const HEADER_SIZE: usize = 104;

/// The architecture a recording was made on (its `arch` header feature; x86_64 when absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordedArch {
    X86_64,
    Aarch64,
}

/// An open recording: its bytes (mapped, or held by the caller), whose records are parsed
/// where they lie — a sample's stack copy and registers are borrowed, not copied (copying
/// each record into a buffer of its own, as linux-perf-data's record iterator does, with the
/// memset, the fresh pages and the heap growing and shrinking it brings, was half of the
/// unwinding thread on a system-wide recording).
pub struct PerfData<B: AsRef<[u8]>> {
    path: PathBuf,
    perf_file: PerfFile,
    bytes: B,
    records: Records,
    /// Records read so far (for errors).
    count: u64,
    /// The user registers' mask of each event attribute (`sample_regs_user`).
    regs_masks: Vec<u64>,
    /// Records of kinds not read here, by type (see [`understood`]).
    not_understood: std::collections::BTreeMap<u32, u64>,
}

/// How records are found, attributed to their event and ordered: linux-perf-data 0.12's
/// `PerfRecordIter` over the data section, with records kept as their place in the file
/// instead of copies.
struct Records {
    /// The data section's offset and size in the file (inside it: `check_layout`).
    data_offset: u64,
    data_size: u64,
    /// The next record's offset in the data section.
    read_offset: u64,
    /// How each event's records are parsed, by attr index (at least one: linux-perf-data's
    /// `parse_file` fails without an attr).
    parse_infos: Vec<RecordParseInfo>,
    /// How a record's event is found when there are several.
    ids: EventIds,
    event_id_to_attr_index: HashMap<u64, usize>,
    sorter: Sorter,
    /// Records read so far: the second half of the sort key, their order in the file (and in
    /// the decompressed stream where it is read).
    seq: u64,
    /// The records of `perf record -z`'s compressed records, decompressed.
    inflated: Inflated,
    /// Why the data section is shorter than the header says, when it is ([`cut_short`]).
    cut: Option<String>,
    /// Where and why the records ended before the data section's end.
    notes: Vec<String>,
}

/// linux-perf-data's `IdParseInfos`.
enum EventIds {
    /// One event: every record is its.
    OnlyOne,
    /// Several events whose records place their id alike.
    Same(RecordIdParseInfo),
    /// Several events, each recording `PERF_SAMPLE_IDENTIFIER`; whether `sample_id_all`.
    Identifier(bool),
}

/// A record read but not yet handed out: where its body lies in the file (or, `inflated`, in
/// the decompressed stream).
#[derive(Clone, Copy)]
struct Pending {
    record_type: RecordType,
    misc: u16,
    body: (usize, usize),
    inflated: bool,
    attr_index: Option<usize>,
}

/// Orders records by (time, offset) as perf's `FINISHED_ROUND` records allow, as
/// linux-perf-data 0.12's `Sorter` does: when a round finishes, every record read so far
/// whose key is at most the largest key read before the previous round finished goes out,
/// in key order; at the end, all of them. (The keys are unique, offsets differ, so the
/// order is the same as that sorter's.)
#[derive(Default)]
struct Sorter {
    outgoing: VecDeque<Pending>,
    incoming: Vec<((Option<u64>, u64), Pending)>,
    /// The largest key read before the previous round finished.
    prev_max: (Option<u64>, u64),
    /// The largest key read so far.
    cur_max: (Option<u64>, u64),
}

impl Sorter {
    fn insert(&mut self, key: (Option<u64>, u64), record: Pending) {
        self.cur_max = self.cur_max.max(key);
        self.incoming.push((key, record));
    }

    fn finish_round(&mut self) {
        // The ready ones are the smallest keys: selected, then sorted (only they).
        let prev_max = self.prev_max;
        let ready = self
            .incoming
            .iter()
            .filter(|&&(key, _)| key <= prev_max)
            .count();
        if let Some(last) = ready.checked_sub(1) {
            let (first, _, _) = self
                .incoming
                .select_nth_unstable_by_key(last, |&(key, _)| key);
            first.sort_unstable_by_key(|&(key, _)| key);
            self.outgoing
                .extend(self.incoming.drain(..ready).map(|(_, record)| record));
        }
        self.prev_max = self.cur_max;
    }

    fn finish(&mut self) {
        self.incoming.sort_unstable_by_key(|&(key, _)| key);
        self.outgoing
            .extend(self.incoming.drain(..).map(|(_, record)| record));
    }
}

/// One record the unwinder uses.
#[derive(Debug)]
pub enum PerfEvent<'a> {
    /// A thread's name (`COMM`); `exec` when an exec gave it.
    Comm {
        pid: i32,
        tid: i32,
        name: String,
        exec: bool,
    },
    /// A thread ended (`EXIT`).
    Exit { pid: i32, tid: i32 },
    /// A new thread or process (`FORK`).
    Fork {
        pid: i32,
        ppid: i32,
        tid: i32,
        ptid: i32,
    },
    /// A mapping (`MMAP`, `MMAP2`): `len` bytes at `start` from file offset `pgoff` of `path`
    /// (a path, or perf's `[vdso]`, `//anon`...); `exec` when it is executable (MMAP2's
    /// `prot` has `PROT_EXEC`; an MMAP record not marked as data).
    Mmap {
        pid: i32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: Vec<u8>,
        exec: bool,
    },
    /// A sample.
    Sample(Sample<'a>),
    /// A record the unwinder does not use.
    Other,
}

/// One sample.
#[derive(Debug)]
pub struct Sample<'a> {
    pub pid: i32,
    pub tid: i32,
    /// Which of the recording's events (an index into [`PerfData::event_names`]).
    pub attr_index: usize,
    /// The sample's time (ns), CPU and period, where the event records them.
    pub time: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    /// The sample interrupted user code.
    pub in_user_mode: bool,
    /// The sample's `ip`.
    pub ip: Option<u64>,
    /// The kernel frames of the callchain, innermost first (context markers left out).
    pub kernel_callchain: Vec<u64>,
    /// The user frames of the callchain, innermost first: what the kernel walked by frame
    /// pointers (`--call-graph fp`; empty for `dwarf`, which records no user callchain).
    pub user_callchain: Vec<u64>,
    /// The user registers' `perf_regs` mask and values (mask 0: none recorded).
    pub regs_mask: u64,
    pub regs: Vec<u64>,
    /// The user stack copy from the stack pointer up, `dyn_size` bytes of it.
    pub stack: Cow<'a, [u8]>,
}

impl Sample<'_> {
    /// The registers and stack copy to unwind, when the sample recorded both.
    pub fn unwind_input<A: FromPerfRegs>(&self) -> Option<(A, StackCopy<'_>)> {
        if self.regs_mask == 0 {
            return None;
        }
        let regs = A::from_perf_regs(self.regs_mask, &self.regs);
        let sp = regs.sp().unwrap_or(0);
        Some((regs, StackCopy::new(stacksym::AbsAddr(sp), &self.stack)))
    }
}

/// Registers made from perf's `perf_regs` mask and values.
pub trait FromPerfRegs: Registers {
    fn from_perf_regs(mask: u64, values: &[u64]) -> Self;
}

impl FromPerfRegs for RegsX86_64 {
    fn from_perf_regs(mask: u64, values: &[u64]) -> Self {
        RegsX86_64::from_perf(mask, values)
    }
}

impl FromPerfRegs for RegsAarch64 {
    fn from_perf_regs(mask: u64, values: &[u64]) -> Self {
        RegsAarch64::from_perf(mask, values)
    }
}

/// A recording's bytes: the file mapped, or a whole-file zstd-compressed recording
/// (`perf.data.zst`, as `zstd perf.data` writes it and testdata/recordings/ commits them)
/// decompressed into memory.
pub enum RecordingBytes {
    /// The file itself, mapped.
    Mapped(memmap2::Mmap),
    /// The decompressed recording.
    Decompressed(Vec<u8>),
}

impl AsRef<[u8]> for RecordingBytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            RecordingBytes::Mapped(map) => map,
            RecordingBytes::Decompressed(bytes) => bytes,
        }
    }
}

/// A zstd frame's magic number (RFC 8878), little-endian as it starts the file.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The most a compressed recording may decompress to: the bytes are held in memory, and a
/// small file that claims terabytes must end in an error, not in an allocation that fails.
/// 16 GiB is past what `perf record` writes in a long system-wide session.
const MAX_DECOMPRESSED: u64 = 16 << 30;

/// Opens the recording at `path`, mapped: records are copied out of the page cache once
/// (read through a buffer, the kernel's copy and the syscalls took about a fifth of the
/// unwinding thread on a system-wide recording; mapped, `perf_unwind --no-inline` ran
/// 0.178 s instead of 0.187-0.206 s, `perf stat -r 5`). A file compressed whole with zstd is
/// decompressed into memory first (at most [`MAX_DECOMPRESSED`] bytes).
pub fn open(path: &Path) -> Result<PerfData<RecordingBytes>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: a recording is not written while it is read (perf writes it to a new file);
    // one truncated by another process meanwhile would fault, a risk this tool accepts
    // (the library guards its own maps: src/elf/sigbus.rs).
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{}: {e}", path.display()))?;
    if map.starts_with(&ZSTD_MAGIC) {
        let bytes = decompress_zstd(&map, MAX_DECOMPRESSED)
            .map_err(|e| format!("{}: zstd: {e}", path.display()))?;
        return PerfData::new(path, RecordingBytes::Decompressed(bytes));
    }
    PerfData::new(path, RecordingBytes::Mapped(map))
}

/// Every zstd frame of `data` decompressed, in order (as `zstd -d` concatenates them); more
/// than `cap` bytes is an error.
fn decompress_zstd(data: &[u8], cap: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let before = rest.len();
        let mut decoder =
            ruzstd::decoding::StreamingDecoder::new(&mut rest).map_err(|e| e.to_string())?;
        let room = cap.saturating_sub(out.len() as u64).saturating_add(1);
        std::io::Read::read_to_end(&mut std::io::Read::take(&mut decoder, room), &mut out)
            .map_err(|e| e.to_string())?;
        if out.len() as u64 > cap {
            return Err(format!("decompresses to more than {cap} bytes"));
        }
        if rest.len() >= before {
            // Each frame consumes its header at least; a decoder that did not would loop.
            return Err("no progress in the compressed stream".to_string());
        }
    }
    Ok(out)
}

/// Reads a recording held in memory; `name` names it in errors.
pub fn from_bytes<'a>(name: &Path, bytes: &'a [u8]) -> Result<PerfData<&'a [u8]>, String> {
    PerfData::new(name, bytes)
}

/// `perf_file_header.attr_size` and `HEADER_EVENT_DESC`'s: at least `PERF_ATTR_SIZE_VER0`;
/// at most a page (perf's attrs are 136 bytes today).
const ATTR_SIZES: std::ops::RangeInclusive<u64> = 64..=4096;
const HEADER_EVENT_DESC: u32 = 12;
const HEADER_SIMPLEPERF_META_INFO: u32 = 129;

/// Checks what linux-perf-data reads before the first record, so that it never allocates
/// or seeks by a size the file does not back (it trusts sizes and counts: an attr size of 0
/// divides by zero, a feature section of 2^60 bytes is allocated before it is read):
/// the magic; the attr, data and event-type sections and every feature section inside the
/// file; the attr size; the walk of `HEADER_EVENT_DESC` (counts, names and id lists within
/// the section). Rewinds `reader` to the start.
fn check_layout<R: Read + Seek>(path: &Path, reader: &mut R, len: u64) -> Result<(), String> {
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut header = [0u8; HEADER_SIZE];
    reader.rewind().map_err(io)?;
    let read = read_up_to(reader, &mut header).map_err(io)?;
    if read < HEADER_SIZE {
        return Err(format!(
            "{}: not a perf.data file: {len} bytes, shorter than the {HEADER_SIZE}-byte header \
             at offset 0",
            path.display()
        ));
    }
    if &header[..8] != b"PERFILE2" {
        return Err(format!(
            // The file's bytes are not quoted: it may be anything (see ARCHITECTURE.md, "Trust").
            "{}: not a perf.data file: no \"PERFILE2\" magic at offset 0",
            path.display()
        ));
    }
    let word = |at: usize| le_u64(&header[at..at + 8]);
    let bad = |what: String| Err(format!("{}: malformed perf.data: {what}", path.display()));
    let (data_offset, data_size) = (word(40), word(48));
    let data_end = data_offset.saturating_add(data_size);
    if data_end > len {
        return Err(format!(
            "{}: truncated perf.data: the data section (offset {data_offset:#x}, {data_size} \
             bytes) ends at offset {data_end:#x}, the file at {len:#x}",
            path.display()
        ));
    }
    let attr_size = word(16);
    if !ATTR_SIZES.contains(&attr_size) {
        return bad(format!("attr size {attr_size} at offset 0x10"));
    }
    for (name, at) in [("attr", 24), ("event types", 56)] {
        let (offset, size) = (word(at), word(at + 8));
        if offset.checked_add(size).is_none_or(|end| end > len) {
            return bad(format!(
                "the {name} section (offset {offset:#x}, {size} bytes; header offset {at:#x}) \
                 is not inside the file ({len:#x} bytes)"
            ));
        }
    }
    let features: Vec<u32> = (0..256u32)
        .filter(|&bit| header[72 + (bit / 8) as usize] & (1 << (bit % 8)) != 0)
        .collect();
    if features.contains(&HEADER_SIMPLEPERF_META_INFO) {
        return bad("a simpleperf recording (not read here)".to_string());
    }
    // The feature sections' table follows the data section: (offset, size) per feature bit.
    let table_len = 16 * features.len() as u64;
    if data_end.saturating_add(table_len) > len {
        return Err(format!(
            "{}: truncated perf.data: the table of {} feature sections at offset {data_end:#x} \
             ends past the file's end at {len:#x}",
            path.display(),
            features.len()
        ));
    }
    reader.seek(SeekFrom::Start(data_end)).map_err(io)?;
    let mut table = vec![0u8; table_len as usize];
    reader.read_exact(&mut table).map_err(io)?;
    for (i, &feature) in features.iter().enumerate() {
        let (offset, size) = (le_u64(&table[16 * i..]), le_u64(&table[16 * i + 8..]));
        if offset.checked_add(size).is_none_or(|end| end > len) {
            return bad(format!(
                "feature section {feature} (offset {offset:#x}, {size} bytes; table entry at \
                 {:#x}) is not inside the file ({len:#x} bytes)",
                data_end + 16 * i as u64
            ));
        }
        if feature == HEADER_EVENT_DESC {
            reader.seek(SeekFrom::Start(offset)).map_err(io)?;
            let mut section = vec![0u8; size as usize];
            reader.read_exact(&mut section).map_err(io)?;
            check_event_desc(&section).map_err(|at| {
                format!(
                    "{}: malformed perf.data: the event description \
                     (offset {offset:#x}) is cut short or inconsistent at its byte {at}",
                    path.display()
                )
            })?;
        }
    }
    // Without an event description, linux-perf-data reads the event types section: per
    // entry an attr and the (offset, size) of its list of ids, which it allocates by size.
    let (types_offset, types_size) = (word(56), word(64));
    if !features.contains(&HEADER_EVENT_DESC) && types_size != 0 {
        reader.seek(SeekFrom::Start(types_offset)).map_err(io)?;
        // Inside the file (checked above), so no larger than what was read into memory.
        let mut section = vec![0u8; types_size as usize];
        reader.read_exact(&mut section).map_err(io)?;
        check_event_types(&section, attr_size, len).map_err(|at| {
            format!(
                "{}: malformed perf.data: the event types section (offset {types_offset:#x}) \
                 has an attr size or a list of event ids that does not fit at its byte {at}",
                path.display()
            )
        })?;
    }
    reader.rewind().map_err(io)
}

/// Checks the event types section (entries of an `attr_size`-byte attr and the offset and
/// size of its ids): every attr's own size one the reader consumes exactly and no larger
/// than its slot, every list of ids inside the file of `len` bytes; `Err(position)` of the
/// first that is not.
fn check_event_types(section: &[u8], attr_size: u64, len: u64) -> Result<(), usize> {
    // `attr_size` is in ATTR_SIZES (checked by the caller), so entries are 80 bytes or more.
    let entry = usize::try_from(attr_size + 16).map_err(|_| 0usize)?;
    for start in (0..section.len() / entry).map(|i| i * entry) {
        check_attr_size(section, start, attr_size)?;
        let ids_at = start + entry - 16;
        let ids = section.get(ids_at..start + entry).ok_or(ids_at)?;
        let (offset, size) = (le_u64(&ids[..8]), le_u64(&ids[8..]));
        if offset.checked_add(size).is_none_or(|end| end > len) {
            return Err(ids_at);
        }
    }
    Ok(())
}

/// Walks `HEADER_EVENT_DESC` (`nr`, `attr_size`, then per event the attr, `nr_ids`, a
/// length-prefixed name and the ids); `Err(position)` where it leaves the section.
fn check_event_desc(section: &[u8]) -> Result<(), usize> {
    let u32_at = |at: usize| u32_at(section, at);
    let nr = u32_at(0)?;
    let attr_size = u32_at(4)?;
    if !ATTR_SIZES.contains(&attr_size) {
        return Err(4);
    }
    let mut at = 8usize;
    let advance = |at: usize, by: u64| -> Result<usize, usize> {
        let next = usize::try_from(by)
            .ok()
            .and_then(|by| at.checked_add(by))
            .ok_or(at)?;
        if next > section.len() {
            return Err(at);
        }
        Ok(next)
    };
    for _ in 0..nr {
        check_attr_size(section, at, attr_size)?;
        at = advance(at, attr_size)?;
        let nr_ids = u32_at(at)?;
        at = advance(at, 4)?;
        let name_len = u32_at(at)?;
        at = advance(at, 4 + name_len)?;
        at = advance(at, 8 * nr_ids)?;
    }
    Ok(())
}

/// The little-endian u32 at `at` of `section`; `Err(at)` when it does not fit.
fn u32_at(section: &[u8], at: usize) -> Result<u64, usize> {
    let bytes = section.get(at..at.checked_add(4).ok_or(at)?).ok_or(at)?;
    Ok(u64::from(u32::from_le_bytes([
        bytes[0], bytes[1], bytes[2], bytes[3],
    ])))
}

/// The attr at `attr_at` in a slot of `slot_size` bytes: its own size (its second u32) must
/// fit the slot and be one the reader consumes exactly ([`attr_read_exactly`]);
/// `Err(position)` of that size otherwise.
fn check_attr_size(section: &[u8], attr_at: usize, slot_size: u64) -> Result<(), usize> {
    let size_at = attr_at.checked_add(4).ok_or(attr_at)?;
    let own = u32_at(section, size_at)?;
    if own > slot_size || !attr_read_exactly(own) {
        return Err(size_at);
    }
    Ok(())
}

/// Whether linux-perf-event-reader reads exactly `size` bytes of an attr that says it is
/// `size` bytes long: it reads the fields of the largest known layout (64, 72, ... 128
/// bytes) that fits and skips only what lies past 128, so a size between two layouts (69,
/// say) leaves it short of the attr's end, and linux-perf-data then reads the list of event
/// ids that follows from the wrong place (a size it allocates).
fn attr_read_exactly(size: u64) -> bool {
    matches!(size, 64 | 72 | 80 | 96 | 104 | 112 | 120) || size >= 128
}

fn le_u64(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    for (to, from) in word.iter_mut().zip(bytes) {
        *to = *from;
    }
    u64::from_le_bytes(word)
}

fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The largest feature section taken for one a cut left past the file's end (perf's are
/// kilobytes to a few megabytes: build-ids, the CPU topology, the event descriptions).
const MAX_FEATURE_SIZE: u64 = 1 << 30;

/// A recording whose file does not hold its data section whole: the header's data size
/// is 0 (what `perf record` writes first and sets when it ends), or runs past the file's
/// end (a disk that filled, a copy stopped half way). Its records are read up to the file's
/// end; its feature sections, which follow the data, are taken as absent.
struct Cut {
    data_offset: usize,
    /// What the file holds of the data section.
    data_size: u64,
    /// Why the records end before the header says (a note, see [`PerfData::notes`]).
    why: String,
}

/// The file's data section when the file is cut short (see [`Cut`]); `None` when it is
/// whole, or when nothing of it is there to read (the header or the data's start past the
/// file's end: [`check_layout`] says what is wrong).
fn cut_short(all: &[u8]) -> Option<Cut> {
    let header = all.get(..HEADER_SIZE)?;
    if &header[..8] != b"PERFILE2" {
        return None;
    }
    let (data_offset, data_size) = (le_u64(&header[40..48]), le_u64(&header[48..56]));
    let len = all.len() as u64;
    if data_offset < HEADER_SIZE as u64 || data_offset > len {
        return None;
    }
    let data_end = data_offset.saturating_add(data_size);
    let (data_size, why) = if data_size == 0 {
        // perf script's warning: "The perf.data file's data size field is 0 which is
        // unexpected. Was the 'perf record' command properly terminated?"
        let why = format!(
            "the header's data size is 0, which perf record writes until it ends properly \
             (was it stopped, or is the file still being written?): the records from offset \
             {data_offset:#x} to the file's end at {len:#x} are read, the feature sections \
             (build-ids: kernel and vDSO frames are left unnamed, the kernel's but with --kallsyms) are missing"
        );
        (len - data_offset, why)
    } else if data_end > len {
        let why = format!(
            "truncated: the data section (offset {data_offset:#x}, {data_size} bytes) ends at \
             offset {data_end:#x}, the file at {len:#x} (a copy stopped half way, a disk that \
             filled?): the records up to the file's end are read, the feature sections \
             (build-ids: kernel and vDSO frames are left unnamed, the kernel's but with --kallsyms) are missing"
        );
        (len - data_offset, why)
    } else {
        // The data section is whole; are the feature sections after it?
        let features: u32 = header[72..HEADER_SIZE].iter().map(|b| b.count_ones()).sum();
        let table_end = data_end.saturating_add(16 * u64::from(features));
        let table = all.get(data_end as usize..usize::try_from(table_end).ok()?);
        let cut = match table {
            None => true,
            // perf writes the sections after their table, each of a sane size (a build-id
            // list, a CPU topology...), the last one ending the file: a cut leaves some
            // past the end. A section before the table or of gigabytes is malformed
            // ([`check_layout`] says so), not cut.
            Some(table) => {
                let entries = || table.chunks_exact(16).map(|e| (le_u64(e), le_u64(&e[8..])));
                let sane = |(at, size): (u64, u64)| at >= table_end && size <= MAX_FEATURE_SIZE;
                let past_end = |(at, size): (u64, u64)| at.saturating_add(size) > len;
                entries().all(sane) && entries().any(past_end)
            }
        };
        if !cut {
            return None;
        }
        let why = format!(
            "truncated: the feature sections after the data (from offset {data_end:#x}) run \
             past the file's end at {len:#x} (a copy stopped half way?): the records are read, \
             the feature sections (build-ids: kernel and vDSO frames are left unnamed, \
             the kernel's but with --kallsyms) are missing"
        );
        (data_size, why)
    };
    Some(Cut {
        data_offset: data_offset as usize, // at most the file's length
        data_size,
        why,
    })
}

impl Cut {
    /// A copy of the file's bytes before its data section, its header saying the data
    /// section is empty and there are no feature sections: what linux-perf-data reads.
    fn header_and_attrs(&self, all: &[u8]) -> Vec<u8> {
        let mut bytes = all.get(..self.data_offset).unwrap_or_default().to_vec();
        if let Some(size) = bytes.get_mut(48..56) {
            size.fill(0);
        }
        if let Some(features) = bytes.get_mut(72..HEADER_SIZE) {
            features.fill(0);
        }
        bytes
    }
}

impl<B: AsRef<[u8]>> PerfData<B> {
    fn new(path: &Path, bytes: B) -> Result<PerfData<B>, String> {
        let all = bytes.as_ref();
        let len = all.len() as u64;
        // A recording cut short is read as far as it goes: the header and attributes from a
        // copy of what precedes its data section, without the feature sections (they
        // follow the data, so they are gone).
        let cut = cut_short(all);
        let before_data;
        let (view, view_len) = match &cut {
            Some(cut) => {
                before_data = cut.header_and_attrs(all);
                (&before_data[..], before_data.len() as u64)
            }
            None => (all, len),
        };
        let mut reader = std::io::Cursor::new(view);
        check_layout(path, &mut reader, view_len)?;
        // linux-perf-data reads the header, the attributes and the feature sections (and
        // checks that several events can be told apart); the records are read here.
        let PerfFileReader { perf_file, .. } =
            PerfFileReader::parse_file(reader).map_err(|e| match &cut {
                Some(cut) => format!(
                    "{}: not a readable perf.data file: {e} ({})",
                    path.display(),
                    cut.why
                ),
                None => format!("{}: not a readable perf.data file: {e}", path.display()),
            })?;
        let attributes = perf_file.event_attributes();
        let regs_masks = attributes
            .iter()
            .map(|attr| attr.attr.sample_regs_user)
            .collect();
        // `check_layout` accepts only "PERFILE2": little-endian.
        let parse_infos: Vec<RecordParseInfo> = attributes
            .iter()
            .map(|attr| RecordParseInfo::new(&attr.attr, Endianness::LittleEndian))
            .collect();
        let mut event_id_to_attr_index = HashMap::new();
        for (attr_index, attr) in attributes.iter().enumerate() {
            for &id in &attr.event_ids {
                event_id_to_attr_index.insert(id, attr_index);
            }
        }
        // As linux-perf-data decides it (its parse_file has refused the other cases).
        let ids = match parse_infos.split_first() {
            Some((_, [])) | None => EventIds::OnlyOne,
            Some((first, rest)) if rest.iter().all(|i| i.id_parse_info == first.id_parse_info) => {
                EventIds::Same(first.id_parse_info)
            }
            Some(_) => EventIds::Identifier(attributes.first().is_some_and(|attr| {
                attr.attr
                    .flags
                    .contains(linux_perf_data::linux_perf_event_reader::AttrFlags::SAMPLE_ID_ALL)
            })),
        };
        // The header's data section (offset 40), inside the file (`check_layout`), or what
        // is left of it.
        let header = all.get(..HEADER_SIZE).unwrap_or_default();
        let data_offset = le_u64(header.get(40..48).unwrap_or_default());
        let data_size = match &cut {
            Some(cut) => cut.data_size,
            None => le_u64(header.get(48..56).unwrap_or_default()),
        };
        let records = Records {
            data_offset,
            data_size,
            cut: cut.map(|cut| cut.why),
            notes: Vec::new(),
            read_offset: 0,
            parse_infos,
            ids,
            event_id_to_attr_index,
            sorter: Sorter::default(),
            seq: 0,
            inflated: Inflated::new(MAX_DECOMPRESSED),
        };
        Ok(PerfData {
            path: path.to_path_buf(),
            perf_file,
            bytes,
            records,
            count: 0,
            regs_masks,
            not_understood: Default::default(),
        })
    }
}

impl Records {
    /// The next record in order: its type, misc, body's place and attr index (its body:
    /// [`Records::body`]); `Ok(None)` at the end, `Err` (what is wrong) for a record header
    /// or body past the file's end.
    fn next(&mut self, file: &[u8]) -> Result<Option<Pending>, String> {
        if self.sorter.outgoing.is_empty() {
            self.read_round(file)?;
        }
        Ok(self.sorter.outgoing.pop_front())
    }

    /// A record's body, in the file or in the decompressed stream.
    fn body<'a>(&'a self, file: &'a [u8], pending: &Pending) -> &'a [u8] {
        let (start, end) = pending.body;
        let bytes = match pending.inflated {
            true => &self.inflated.bytes[..],
            false => file,
        };
        // Checked when it was read.
        bytes.get(start..end).unwrap_or_default()
    }

    /// Reads records up to the next `FINISHED_ROUND` that makes some of them ready, or to
    /// the end of the data section. Once a compressed record has been met, rounds are not
    /// followed: the decoder holds back the last window of what it decompressed until the
    /// stream ends (see [`Inflated`]), so its records come out later than the rounds that
    /// follow them in the file; they are all read, then sorted by time, which is the order
    /// perf's rounds give a recording that keeps to them.
    fn read_round(&mut self, file: &[u8]) -> Result<(), String> {
        while self.read_offset < self.data_size {
            let offset = self.read_offset;
            let at = self.data_offset + offset;
            let Some(header) = usize::try_from(at)
                .ok()
                .and_then(|at| file.get(at..at.checked_add(8)?))
            else {
                self.stop(format!(
                    "the file ends at offset {:#x} inside the header of a record at {at:#x}: \
                     the records before it are read",
                    file.len()
                ));
                break;
            };
            let record_type = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
            let misc = u16::from_le_bytes([header[4], header[5]]);
            let size = u16::from_le_bytes([header[6], header[7]]);
            if size < 8 {
                let what = format!(
                    "the record at offset {at:#x} says it is {size} bytes, less than its header"
                );
                if self.cut.is_none() {
                    return Err(what);
                }
                // What follows the last record written may be anything (zeros, say).
                self.stop(format!("{what}: the records before it are read"));
                break;
            }
            self.read_offset += u64::from(size);
            if record_type == PERF_RECORD_FINISHED_ROUND {
                if self.inflated.seen {
                    continue;
                }
                self.sorter.finish_round();
                if !self.sorter.outgoing.is_empty() {
                    return Ok(());
                }
                continue;
            }
            // `at` fits in usize: its header is in the file.
            let start = at as usize + 8;
            let end = start + usize::from(size) - 8;
            let Some(body) = file.get(start..end) else {
                self.stop(format!(
                    "the file ends at offset {:#x} inside a record at {at:#x} ({size} bytes, \
                     {} of them in the file): the records before it are read",
                    file.len(),
                    file.len().saturating_sub(at as usize)
                ));
                break;
            };
            match record_type {
                PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 => {
                    let data = compressed_data(record_type, body).ok_or_else(|| {
                        format!("the compressed record at offset {at:#x} says it holds more than its {size} bytes")
                    })?;
                    self.inflated
                        .inflate(data)
                        .map_err(|e| format!("the compressed record at offset {at:#x}: {e}"))?;
                    self.take_inflated()?;
                    continue;
                }
                PERF_RECORD_AUXTRACE => {
                    // Its trace data follows the record, outside its size.
                    self.read_offset = self
                        .read_offset
                        .saturating_add(u64_at(body, 0).unwrap_or(0));
                }
                _ => {}
            }
            let pending = self.classify(RecordType(record_type), misc, (start, end), false, body);
            self.insert(pending, body);
        }
        if self.inflated.seen {
            self.inflated.finish()?;
            self.take_inflated()?;
            self.inflated.note_leftover();
        }
        self.sorter.finish();
        Ok(())
    }

    /// Ends the reading before the data section's end, for `why`.
    fn stop(&mut self, why: String) {
        self.read_offset = self.data_size;
        self.notes.push(why);
    }

    /// Hands the whole records decompressed so far to the sorter.
    fn take_inflated(&mut self) -> Result<(), String> {
        while let Some((record_type, misc, body)) = self.inflated.next_record()? {
            let bytes = &self.inflated.bytes[body.0..body.1];
            let pending = self.classify(record_type, misc, body, true, bytes);
            let key = (self.time(&pending, bytes), self.seq);
            self.seq += 1;
            self.sorter.insert(key, pending);
        }
        Ok(())
    }

    /// A record found at `body`: its event.
    fn classify(
        &self,
        record_type: RecordType,
        misc: u16,
        body: (usize, usize),
        inflated: bool,
        bytes: &[u8],
    ) -> Pending {
        let attr_index = record_type.is_builtin_type().then(|| {
            let id = match &self.ids {
                EventIds::OnlyOne => None,
                EventIds::Same(info) => record_id(record_type, bytes, info),
                EventIds::Identifier(sample_id_all) => {
                    record_identifier(record_type, bytes, *sample_id_all)
                }
            };
            id.and_then(|id| self.event_id_to_attr_index.get(&id).copied())
                .unwrap_or(0)
        });
        Pending {
            record_type,
            misc,
            body,
            inflated,
            attr_index,
        }
    }

    /// A record's time, where its event records one.
    fn time(&self, pending: &Pending, bytes: &[u8]) -> Option<u64> {
        let info = self.parse_infos.get(pending.attr_index?)?;
        record_time(pending.record_type, bytes, info)
    }

    /// Gives a record of the file to the sorter.
    fn insert(&mut self, pending: Pending, bytes: &[u8]) {
        let key = (self.time(&pending, bytes), self.seq);
        self.seq += 1;
        self.sorter.insert(key, pending);
    }
}

/// perf's record types for compressed records: `PERF_RECORD_COMPRESSED` (perf 5.2: the
/// header, then zstd data to the record's end) and `PERF_RECORD_COMPRESSED2` (perf 6.15: the
/// header, the data's size as a u64, the data, padded to 8 bytes).
const PERF_RECORD_COMPRESSED: u32 = 81;
const PERF_RECORD_COMPRESSED2: u32 = 83;
/// `PERF_RECORD_AUXTRACE`: its trace data (as many bytes as its first field says) follows it.
const PERF_RECORD_AUXTRACE: u32 = 71;

/// A compressed record's zstd data; `None` when its size field says more than it holds.
fn compressed_data(record_type: u32, body: &[u8]) -> Option<&[u8]> {
    if record_type == PERF_RECORD_COMPRESSED {
        return Some(body);
    }
    let size = usize::try_from(u64_at(body, 0)?).ok()?;
    body.get(8..8usize.checked_add(size)?)
}

/// The little-endian u64 at `at` of `body`, if it has one there.
fn u64_at(body: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = body.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// A record's event id where its events place it alike (linux-perf-event-reader's
/// `get_record_id`).
fn record_id(record_type: RecordType, body: &[u8], info: &RecordIdParseInfo) -> Option<u64> {
    if record_type == RecordType::SAMPLE {
        u64_at(body, usize::from(info.sample_record_id_offset_from_start?))
    } else {
        let from_end = usize::from(info.nonsample_record_id_offset_from_end?);
        u64_at(body, body.len().checked_sub(from_end)?)
    }
}

/// A record's `PERF_SAMPLE_IDENTIFIER` (linux-perf-event-reader's `get_record_identifier`):
/// a sample's first word, another record's last when `sample_id_all`.
fn record_identifier(record_type: RecordType, body: &[u8], sample_id_all: bool) -> Option<u64> {
    if record_type == RecordType::SAMPLE {
        u64_at(body, 0)
    } else if sample_id_all {
        u64_at(body, body.len().checked_sub(8)?)
    } else {
        None
    }
}

/// A record's time (linux-perf-event-reader's `get_record_timestamp`).
fn record_time(record_type: RecordType, body: &[u8], info: &RecordParseInfo) -> Option<u64> {
    if record_type == RecordType::SAMPLE {
        u64_at(
            body,
            usize::from(info.sample_record_time_offset_from_start?),
        )
    } else {
        let from_end = usize::from(info.nonsample_record_time_offset_from_end?);
        u64_at(body, body.len().checked_sub(from_end)?)
    }
}

impl<B: AsRef<[u8]>> PerfData<B> {
    /// The architecture recorded in the header (x86_64 when it says none).
    pub fn arch(&self) -> RecordedArch {
        match self.perf_file.arch() {
            Ok(Some("aarch64" | "arm64")) => RecordedArch::Aarch64,
            _ => RecordedArch::X86_64,
        }
    }

    /// Each event's name as the header gives it (`cpu-clock`), else perf's name of its
    /// hardware or software event (a recording cut short has no event descriptions), by
    /// attr index; `None` where neither gives one.
    pub fn event_names(&self) -> Vec<Option<String>> {
        self.perf_file
            .event_attributes()
            .iter()
            .map(|attr| {
                let known = || perf_event_name(&attr.attr.type_).map(str::to_string);
                attr.name.clone().or_else(known)
            })
            .collect()
    }

    /// Whether each event records (time, CPU, period), by attr index.
    pub fn sample_fields(&self) -> Vec<(bool, bool, bool)> {
        self.perf_file
            .event_attributes()
            .iter()
            .map(|attr| {
                let format = attr.attr.sample_format;
                (
                    format.contains(SampleFormat::TIME),
                    format.contains(SampleFormat::CPU),
                    format.contains(SampleFormat::PERIOD),
                )
            })
            .collect()
    }

    /// The build-ids the header lists: (path, build-id).
    pub fn build_ids(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut ids: Vec<_> = match self.perf_file.build_ids() {
            Ok(ids) => ids
                .into_values()
                .map(|info| (info.path, info.build_id))
                .collect(),
            Err(_) => vec![],
        };
        ids.sort();
        ids
    }

    /// Whether the recording's feature sections are missing (a recording cut short): its
    /// build-ids, event names and architecture are then not known.
    pub fn features_missing(&self) -> bool {
        self.records.cut.is_some()
    }

    /// The most the recording's compressed records may decompress to (16 GiB unless set).
    pub fn set_max_decompressed(&mut self, max: u64) {
        self.records.inflated.max = max;
    }

    /// What the reading passed over, to be said once it has ended: records of kinds not
    /// read here, counted by kind, and what was wrong at the end of the compressed records.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .not_understood
            .iter()
            .map(|(&kind, &count)| {
                let name = record_kind_name(kind).map_or_else(
                    || format!("type {kind}"),
                    |name| format!("{name} (type {kind})"),
                );
                let s = if count == 1 { "" } else { "s" };
                format!("{count} record{s} of kind {name} not read")
            })
            .collect();
        let records = &self.records;
        let ends = records.cut.iter().chain(&records.notes);
        notes.extend(ends.chain(&records.inflated.notes).cloned());
        let path = self.path.display();
        notes
            .into_iter()
            .map(|note| format!("{path}: {note}"))
            .collect()
    }

    /// The next record; `Ok(None)` at the end.
    pub fn next_event(&mut self) -> Result<Option<PerfEvent<'_>>, String> {
        let file = self.bytes.as_ref();
        let pending = match self.records.next(file) {
            Ok(Some(record)) => record,
            Ok(None) => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "{}: record {} (after the header) is unreadable: {e}",
                    self.path.display(),
                    self.count
                ))
            }
        };
        self.count += 1;
        let body = self.records.body(file, &pending);
        if !understood(pending.record_type.0) {
            *self
                .not_understood
                .entry(pending.record_type.0)
                .or_default() += 1;
        }
        let (Some(attr_index), Some(&parse_info)) = (
            pending.attr_index,
            pending
                .attr_index
                .and_then(|index| self.records.parse_infos.get(index)),
        ) else {
            // A user record (perf's own: FINISHED_INIT, build-ids, ...).
            return Ok(Some(PerfEvent::Other));
        };
        let record = RawEventRecord::new(
            pending.record_type,
            pending.misc,
            RawData::from(body),
            parse_info,
        );
        if let Err(what) = check_record(&record) {
            return Err(format!(
                "{}: record {}: malformed: {what}",
                self.path.display(),
                self.count
            ));
        }
        let parsed = record.parse().map_err(|e| {
            format!(
                "{}: record {}: malformed: {e}",
                self.path.display(),
                self.count
            )
        })?;
        Ok(Some(match parsed {
            EventRecord::Comm(comm) => PerfEvent::Comm {
                pid: comm.pid,
                tid: comm.tid,
                name: String::from_utf8_lossy(&comm.name.as_slice()).into_owned(),
                exec: comm.is_execve,
            },
            EventRecord::Exit(exit) => PerfEvent::Exit {
                pid: exit.pid,
                tid: exit.tid,
            },
            EventRecord::Fork(fork) => PerfEvent::Fork {
                pid: fork.pid,
                ppid: fork.ppid,
                tid: fork.tid,
                ptid: fork.ptid,
            },
            EventRecord::Mmap(mmap) => PerfEvent::Mmap {
                pid: mmap.pid,
                start: mmap.address,
                len: mmap.length,
                pgoff: mmap.page_offset,
                path: mmap.path.as_slice().into_owned(),
                exec: mmap.is_executable,
            },
            EventRecord::Mmap2(mmap) => PerfEvent::Mmap {
                pid: mmap.pid,
                start: mmap.address,
                len: mmap.length,
                pgoff: mmap.page_offset,
                path: mmap.path.as_slice().into_owned(),
                // PROT_EXEC
                exec: mmap.protection & 4 != 0,
            },
            EventRecord::Sample(sample) => {
                let (Some(pid), Some(tid)) = (sample.pid, sample.tid) else {
                    return Ok(Some(PerfEvent::Other));
                };
                let (mut kernel_callchain, mut user_callchain) = (Vec::new(), Vec::new());
                if let Some(callchain) = &sample.callchain {
                    // A dwarf recording's chains are all kernel frames (no user part).
                    kernel_callchain.reserve(callchain.len());
                    let mut in_user = false;
                    for i in 0..callchain.len() {
                        let Some(ip) = callchain.get(i) else { break };
                        if ip >= PERF_CONTEXT_MAX {
                            in_user = ip == PERF_CONTEXT_USER;
                        } else if in_user {
                            user_callchain.push(ip);
                        } else {
                            kernel_callchain.push(ip);
                        }
                    }
                }
                let (mut regs_mask, mut regs) = (0u64, Vec::new());
                if let Some(user_regs) = &sample.user_regs {
                    let mask = self.regs_masks.get(attr_index).copied().unwrap_or(u64::MAX);
                    regs.reserve(mask.count_ones() as usize);
                    for reg in (0..64).filter(|reg| mask & (1 << reg) != 0) {
                        if let Some(value) = user_regs.get(reg) {
                            regs_mask |= 1 << reg;
                            regs.push(value);
                        }
                    }
                }
                let stack = match sample.user_stack {
                    Some((stack, dyn_size)) => {
                        let len = usize::try_from(dyn_size).unwrap_or(usize::MAX);
                        match stack.as_slice() {
                            Cow::Borrowed(bytes) => Cow::Borrowed(&bytes[..len.min(bytes.len())]),
                            Cow::Owned(mut bytes) => {
                                bytes.truncate(len);
                                Cow::Owned(bytes)
                            }
                        }
                    }
                    None => Cow::Borrowed(&[][..]),
                };
                PerfEvent::Sample(Sample {
                    pid,
                    tid,
                    attr_index,
                    time: sample.timestamp,
                    cpu: sample.cpu,
                    period: sample.period,
                    in_user_mode: matches!(sample.cpu_mode, CpuMode::User),
                    ip: sample.ip,
                    kernel_callchain,
                    user_callchain,
                    regs_mask,
                    regs,
                    stack,
                })
            }
            _ => PerfEvent::Other,
        }))
    }
}

/// perf's name of a hardware or software event (`evsel__hw_names`, `evsel__sw_names`),
/// without the modifiers (`:u`) perf adds for some attributes.
fn perf_event_name(event: &PerfEventType) -> Option<&'static str> {
    use linux_perf_data::linux_perf_event_reader::{
        HardwareEventId as H, SoftwareCounterType as S,
    };
    Some(match event {
        PerfEventType::Hardware(id, _) => match id {
            H::CpuCycles => "cycles",
            H::Instructions => "instructions",
            H::CacheReferences => "cache-references",
            H::CacheMisses => "cache-misses",
            H::BranchInstructions => "branches",
            H::BranchMisses => "branch-misses",
            H::BusCycles => "bus-cycles",
            H::StalledCyclesFrontend => "stalled-cycles-frontend",
            H::StalledCyclesBackend => "stalled-cycles-backend",
            H::RefCpuCycles => "ref-cycles",
            _ => return None,
        },
        PerfEventType::Software(counter) => match counter {
            S::CpuClock => "cpu-clock",
            S::TaskClock => "task-clock",
            S::PageFaults => "page-faults",
            S::ContextSwitches => "context-switches",
            S::CpuMigrations => "cpu-migrations",
            S::PageFaultsMin => "minor-faults",
            S::PageFaultsMaj => "major-faults",
            S::AlignmentFaults => "alignment-faults",
            S::EmulationFaults => "emulation-faults",
            S::Dummy => "dummy",
            S::BpfOutput => "bpf-output",
            S::CgroupSwitches => "cgroup-switches",
            _ => return None,
        },
        _ => return None,
    })
}

/// Whether a record kind is read here, or passed over because it cannot change what is
/// printed: perf's own records about the header and the session (`perf script` prints
/// nothing of them either), throttling, context switches, namespaces and cgroups. The rest
/// (lost events, kernel and BPF symbols, AUX trace data, text pokes, kinds this reader does
/// not know) are counted and named on stderr ([`PerfData::notes`]).
fn understood(kind: u32) -> bool {
    matches!(
        kind,
        1 // MMAP
        | 3 // COMM
        | 4 // EXIT
        | 5 // THROTTLE
        | 6 // UNTHROTTLE
        | 7 // FORK
        | 9 // SAMPLE
        | 10 // MMAP2
        | 14 // SWITCH
        | 15 // SWITCH_CPU_WIDE
        | 16 // NAMESPACES
        | 19 // CGROUP
        | 64..=69 // HEADER_ATTR, HEADER_EVENT_TYPE, HEADER_TRACING_DATA, HEADER_BUILD_ID,
                  // FINISHED_ROUND, ID_INDEX
        | 73..=80 // THREAD_MAP, CPU_MAP, STAT_CONFIG, STAT, STAT_ROUND, EVENT_UPDATE,
                  // TIME_CONV, HEADER_FEATURE
        | 81 // COMPRESSED
        | 82 // FINISHED_INIT
        | 83 // COMPRESSED2
    )
}

/// perf's name of a record kind (`PERF_RECORD_*` without the prefix).
fn record_kind_name(kind: u32) -> Option<&'static str> {
    const KERNEL: [&str; 22] = [
        "",
        "MMAP",
        "LOST",
        "COMM",
        "EXIT",
        "THROTTLE",
        "UNTHROTTLE",
        "FORK",
        "READ",
        "SAMPLE",
        "MMAP2",
        "AUX",
        "ITRACE_START",
        "LOST_SAMPLES",
        "SWITCH",
        "SWITCH_CPU_WIDE",
        "NAMESPACES",
        "KSYMBOL",
        "BPF_EVENT",
        "CGROUP",
        "TEXT_POKE",
        "AUX_OUTPUT_HW_ID",
    ];
    const USER: [&str; 20] = [
        "HEADER_ATTR",
        "HEADER_EVENT_TYPE",
        "HEADER_TRACING_DATA",
        "HEADER_BUILD_ID",
        "FINISHED_ROUND",
        "ID_INDEX",
        "AUXTRACE_INFO",
        "AUXTRACE",
        "AUXTRACE_ERROR",
        "THREAD_MAP",
        "CPU_MAP",
        "STAT_CONFIG",
        "STAT",
        "STAT_ROUND",
        "EVENT_UPDATE",
        "TIME_CONV",
        "HEADER_FEATURE",
        "COMPRESSED",
        "FINISHED_INIT",
        "COMPRESSED2",
    ];
    let kind = usize::try_from(kind).ok()?;
    match kind {
        1..=21 => KERNEL.get(kind).copied(),
        64.. => USER.get(kind - 64).copied(),
        _ => None,
    }
}

/// Checks what linux-perf-event-reader 0.10 trusts in a record: a SAMPLE's callchain length
/// ([`callchain_fits`]), an MMAP2 build-id's length (it asserts it is at most 20).
fn check_record(record: &RawEventRecord<'_>) -> Result<(), &'static str> {
    const PERF_RECORD_MISC_MMAP_BUILD_ID: u16 = 1 << 14;
    if record.record_type == RecordType::SAMPLE && !callchain_fits(record) {
        return Err("a callchain longer than its sample");
    }
    if record.record_type == RecordType::MMAP2 && record.misc & PERF_RECORD_MISC_MMAP_BUILD_ID != 0
    {
        // pid, tid (4 bytes each), address, length, page offset (8 each), build-id length.
        let build_id_len = record.data.as_slice().get(32).copied();
        if build_id_len.is_some_and(|len| len > 20) {
            return Err("an MMAP2 build-id longer than 20 bytes");
        }
    }
    Ok(())
}

/// Whether a SAMPLE record's callchain length (if it has one) fits in the record: the
/// reader multiplies it by 8 unchecked (overflowing, a panic with overflow checks on, for a
/// length of 2^61 or more). The fields before it are skipped as linux-perf-event-reader 0.10
/// reads them (its `READ` layout included).
fn callchain_fits(record: &RawEventRecord<'_>) -> bool {
    let info = &record.parse_info;
    let format = info.sample_format;
    if !format.contains(SampleFormat::CALLCHAIN) {
        return true;
    }
    let bytes = record.data.as_slice();
    let little = matches!(
        info.endian,
        linux_perf_data::linux_perf_event_reader::Endianness::LittleEndian
    );
    let word = |at: usize| -> Option<u64> {
        let slice: [u8; 8] = bytes.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(if little {
            u64::from_le_bytes(slice)
        } else {
            u64::from_be_bytes(slice)
        })
    };
    let mut at = 0usize;
    for field in [
        SampleFormat::IDENTIFIER,
        SampleFormat::IP,
        SampleFormat::TID,
        SampleFormat::TIME,
        SampleFormat::ADDR,
        SampleFormat::ID,
        SampleFormat::STREAM_ID,
        SampleFormat::CPU,
        SampleFormat::PERIOD,
    ] {
        if format.contains(field) {
            at += 8;
        }
    }
    if format.contains(SampleFormat::READ) {
        let read = info.read_format;
        let optional = [
            ReadFormat::TOTAL_TIME_ENABLED,
            ReadFormat::TOTAL_TIME_RUNNING,
        ]
        .iter()
        .filter(|&&flag| read.contains(flag))
        .count();
        if read.contains(ReadFormat::GROUP) {
            at += 8 * (1 + optional + usize::from(read.contains(ReadFormat::ID)));
        } else {
            let Some(nr) = word(at) else { return false };
            let per_value = 8 * (1 + u64::from(read.contains(ReadFormat::ID)));
            let Some(values) = nr.checked_mul(per_value) else {
                return false;
            };
            let Some(next) = usize::try_from(values)
                .ok()
                .and_then(|values| (at + 8 + 8 * optional).checked_add(values))
            else {
                return false;
            };
            at = next;
        }
    }
    let Some(length) = word(at) else { return false };
    length
        .checked_mul(8)
        .is_some_and(|len| len <= (bytes.len().saturating_sub(at + 8)) as u64)
}

/// `PERF_RECORD_FINISHED_ROUND`: records before it up to the previous round's latest time
/// may be sorted and handed out.
const PERF_RECORD_FINISHED_ROUND: u32 = 68;

/// The largest zstd frame header (RFC 8878: 4-byte magic, descriptor, window, dictionary id
/// and content size): fewer bytes than this that do not parse may be a header cut short.
const MAX_FRAME_HEADER: usize = 18;

/// The largest window a recording's stream may use: zstd's level 22, the most `perf record
/// -z` takes, uses 2^27 bytes (ruzstd's default limit is 100 MB).
const MAX_WINDOW: u64 = 1 << 27;

/// The records of a recording's compressed records (`perf record -z`), decompressed. perf
/// compresses what it reads from its ring buffers as one zstd stream per recording,
/// flushed at the end of each compressed record (a block may still lie across two, and a
/// record of the stream does), and never ends the stream's frame. ruzstd, the decoder
/// already in the build, decodes whole blocks (a block cut short waits here for the next
/// compressed record) and holds back the last window of output until its frame ends: after
/// the last compressed record, the frame is ended here by an empty last block.
///
/// Everything decompressed is kept until the recording is dropped (as perf keeps it), at
/// most `max` bytes.
struct Inflated {
    decoder: ruzstd::decoding::FrameDecoder,
    /// Whether a frame is being decoded, and whether its last block has been.
    in_frame: bool,
    after_last_block: bool,
    /// Compressed bytes not yet decoded (the start of a block).
    input: Vec<u8>,
    /// The decompressed stream so far.
    bytes: Vec<u8>,
    /// Where the next record of `bytes` starts.
    read_offset: usize,
    /// Whether any compressed record was met.
    seen: bool,
    /// The most `bytes` may hold.
    max: u64,
    /// Compressed records met inside the decompressed stream (not read).
    nested: u64,
    /// What was wrong at the stream's end.
    notes: Vec<String>,
}

/// A record of the decompressed stream: its type, misc and where its body lies.
type StreamRecord = (RecordType, u16, (usize, usize));

impl Inflated {
    fn new(max: u64) -> Inflated {
        let mut decoder = ruzstd::decoding::FrameDecoder::new();
        decoder.set_max_window_size(MAX_WINDOW);
        Inflated {
            decoder,
            in_frame: false,
            after_last_block: false,
            input: Vec::new(),
            bytes: Vec::new(),
            read_offset: 0,
            seen: false,
            max,
            nested: 0,
            notes: Vec::new(),
        }
    }

    /// Decompresses a compressed record's zstd data (what it completes of the stream).
    fn inflate(&mut self, data: &[u8]) -> Result<(), String> {
        self.seen = true;
        self.input.extend_from_slice(data);
        loop {
            if !self.in_frame {
                if self.input.is_empty() {
                    return Ok(());
                }
                let mut source = &self.input[..];
                match self.decoder.init(&mut source) {
                    Ok(()) => {
                        let header = self.input.len() - source.len();
                        self.input.drain(..header);
                        self.in_frame = true;
                        self.after_last_block = false;
                    }
                    Err(_) if self.input.len() < MAX_FRAME_HEADER => return Ok(()),
                    Err(e) => return Err(format!("zstd: {e}")),
                }
            }
            if self.after_last_block {
                // The frame's checksum (4 bytes) when it has one.
                if !self.decoder.is_finished() {
                    if self.input.len() < 4 {
                        return Ok(());
                    }
                    self.decode(4)?;
                }
                self.collect()?;
                self.in_frame = false;
                continue;
            }
            // One block at a time, so that what it gives is collected (and capped) before
            // the next is decoded: a block header (3 bytes: last-block bit, type, size),
            // then the size's bytes, or one byte for a run (type 1).
            let Some(header) = self.input.get(..3) else {
                return Ok(());
            };
            let header = u32::from_le_bytes([header[0], header[1], header[2], 0]);
            let size = match (header >> 1) & 3 {
                1 => 1,
                _ => (header >> 3) as usize,
            };
            if self.input.len() < 3 + size {
                return Ok(());
            }
            self.decode(3 + size)?;
            self.after_last_block = header & 1 != 0;
            self.collect()?;
        }
    }

    /// Decodes the first `len` bytes of `input` (a whole block, or a checksum).
    fn decode(&mut self, len: usize) -> Result<(), String> {
        let (read, _) = self
            .decoder
            .decode_from_to(&self.input[..len], &mut [])
            .map_err(|e| format!("zstd: {e}"))?;
        if read == 0 {
            return Err("zstd: a block that does not decode".to_string());
        }
        self.input.drain(..read.min(len));
        Ok(())
    }

    /// Moves what the decoder can give out to `bytes`.
    fn collect(&mut self) -> Result<(), String> {
        let more = self.decoder.can_collect() as u64;
        if (self.bytes.len() as u64).saturating_add(more) > self.max {
            return Err(format!(
                "the compressed records decompress to more than {} bytes",
                self.max
            ));
        }
        self.decoder
            .collect_to_writer(&mut self.bytes)
            .map_err(|e| format!("zstd: {e}"))?;
        Ok(())
    }

    /// Ends the stream after the last compressed record: its frame ended by an empty last
    /// block (perf never ends it), so that the decoder gives out its last window.
    fn finish(&mut self) -> Result<(), String> {
        if !self.in_frame {
            if !self.input.is_empty() {
                self.notes.push(format!(
                    "the compressed records end inside a zstd frame header ({} bytes of it)",
                    self.input.len()
                ));
            }
            return Ok(());
        }
        if !self.after_last_block {
            if !self.input.is_empty() {
                self.notes.push(format!(
                    "the compressed records end inside a zstd block ({} bytes of it, not \
                     decompressed)",
                    self.input.len()
                ));
            }
            // A raw block of 0 bytes, the frame's last.
            self.input = vec![1, 0, 0];
            self.decode(3)?;
            self.after_last_block = true;
        }
        if !self.decoder.is_finished() {
            // A checksum to end the frame (ruzstd does not check it).
            self.input = vec![0; 4];
            self.decode(4)?;
        }
        self.input.clear();
        self.in_frame = false;
        self.collect()
    }

    /// The next whole record of the decompressed stream: type, misc and where its body
    /// lies in `bytes`; `None` until more of the stream is decompressed. Rounds and
    /// compressed records inside the stream are passed over (see [`Records::read_round`]).
    fn next_record(&mut self) -> Result<Option<StreamRecord>, String> {
        loop {
            let at = self.read_offset;
            let Some(header) = self.bytes.get(at..at.saturating_add(8)) else {
                return Ok(None);
            };
            let record_type = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
            let misc = u16::from_le_bytes([header[4], header[5]]);
            let size = usize::from(u16::from_le_bytes([header[6], header[7]]));
            if size < 8 {
                return Err(format!(
                    "the record at offset {at:#x} of the data decompressed from the \
                     compressed records says it is {size} bytes, less than its header"
                ));
            }
            let end = at + size;
            let Some(body) = self.bytes.get(at + 8..end) else {
                return Ok(None);
            };
            self.read_offset = end;
            match record_type {
                PERF_RECORD_FINISHED_ROUND => continue,
                PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 => {
                    self.nested += 1;
                    continue;
                }
                PERF_RECORD_AUXTRACE => {
                    let skip = usize::try_from(u64_at(body, 0).unwrap_or(0)).unwrap_or(usize::MAX);
                    self.read_offset = end.saturating_add(skip);
                }
                _ => {}
            }
            return Ok(Some((RecordType(record_type), misc, (at + 8, end))));
        }
    }

    /// What the stream left unread at its end, after its last record was taken.
    fn note_leftover(&mut self) {
        let left = self.bytes.len().saturating_sub(self.read_offset);
        if left > 0 {
            self.notes.push(format!(
                "the data decompressed from the compressed records ends inside a record \
                 ({left} bytes of it at offset {:#x})",
                self.read_offset
            ));
        }
        if self.nested > 0 {
            self.notes.push(format!(
                "{} compressed records inside compressed records, not read",
                self.nested
            ));
        }
    }
}
