//! jitdump files (`jit-PID.dump`): what a JIT compiler (V8/Node with `--perf-prof`, the JVM
//! with a jvmti agent, CPython 3.13 with `-X perf_jit`, .NET with `DOTNET_PerfMapEnabled`)
//! writes about each piece of code it generates: its address, size and name, its source
//! lines, its unwind tables. perf reads it in `perf inject --jit`; here it names the code of
//! a process directly (`Source::Process`), without the ELF files perf inject writes.
//!
//! The format is perf's (`tools/perf/Documentation/jitdump-specification.txt`): a header
//! (magic `JiTD` in the writer's byte order, version, total size, ELF machine, pid,
//! timestamp, flags), then records, each `id, total_size, timestamp` and a payload:
//! `JIT_CODE_LOAD` (pid, tid, vma, code address, code size, code index, NUL-terminated name,
//! the code), `JIT_CODE_MOVE` (a loaded code index at a new address), `JIT_CODE_DEBUG_INFO`
//! (address → file, line, discriminator entries of the *next* load),
//! `JIT_CODE_UNWINDING_INFO` (`.eh_frame_hdr` + `.eh_frame` bytes of the next load) and
//! `JIT_CODE_CLOSE`. The code bytes are checked to lie in their record but not kept.
//!
//! Addresses are reused as code is collected and compiled again: each load (or move) names
//! its range from its timestamp on. [`JitDump::find_at`] picks, for an address and a time,
//! the latest load at or before that time that covers it (what a sample of that time ran);
//! [`JitDump::find`] the last one written (what is there now).
//!
//! [`parse_jitdump`] is I/O-free and treats the bytes as hostile: every size is checked
//! against its record and the record against the file, nothing is allocated by a size the
//! file states (only by bytes that are there), and a problem is an [`Error::JitDump`] naming
//! the file and the offset of the record. A file a runtime is still writing ends in a record
//! cut short: [`parse_growing_jitdump`] stops there instead ([`JitDump::cut_short_at`]).
//! What a live runtime compiled last may not be in the file yet: V8 (node 20) writes its
//! records through a stdio buffer, whole pages at a time, so its newest loads reach the file
//! only when more code follows or the process exits (its perf map, `--perf-basic-prof`, is
//! written line by line, and names that code meanwhile).
//! [`Process::jit_dumps`](super::Process::jit_dumps) finds and reads a process's files.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::perfmap::{build_index, find_piece, Piece};
use super::{MappingKind, Process, ProcessMaps};
use crate::addr::AbsAddr;
use crate::error::{Error, Result};

/// The magic as the writer's byte order stores it: "JiTD".
const MAGIC: u32 = 0x4A69_5444;
/// The header's size up to its flags.
const HEADER_BYTES: usize = 40;
/// A record's header: id, total size, timestamp.
const RECORD_HEADER_BYTES: usize = 16;

const JIT_CODE_LOAD: u32 = 0;
const JIT_CODE_MOVE: u32 = 1;
const JIT_CODE_DEBUG_INFO: u32 = 2;
const JIT_CODE_CLOSE: u32 = 3;
const JIT_CODE_UNWINDING_INFO: u32 = 4;

/// The header of a jitdump file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitDumpHeader {
    /// The format version (1 in every writer known; 2 accepted).
    pub version: u32,
    /// The ELF machine (`e_machine`) of the code: 62 x86_64, 183 aarch64.
    pub elf_machine: u32,
    /// The process that wrote the file (in its own pid namespace).
    pub pid: u32,
    /// When the file was created, in the clock of the records.
    pub timestamp: u64,
    /// Flags; bit 0 (`JITDUMP_FLAGS_ARCH_TIMESTAMP`): timestamps are the CPU's counter
    /// (x86's TSC), not `CLOCK_MONOTONIC`.
    pub flags: u64,
    /// The writer was big-endian (the magic read backwards).
    pub big_endian: bool,
}

/// A parsed jitdump file: its loads, indexed by address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitDump {
    path: PathBuf,
    header: JitDumpHeader,
    /// Every name and source file name, one after the other.
    strings: String,
    /// Loads and moves in file order (time order).
    loads: Vec<Load>,
    /// Debug entries of every load, each load's contiguous and sorted by address.
    lines: Vec<Line>,
    /// Unwinding data (`.eh_frame_hdr` + `.eh_frame`) of every load that has some.
    unwinding: Vec<u8>,
    /// The code of every load that has unwinding data (what an unwinder built from those
    /// tables reads at a frame's address: `crate::unwind`'s JIT modules).
    code: Vec<u8>,
    /// The last load covering each address.
    latest: Vec<Piece>,
    /// Indexes of `loads` sorted by start, and the largest code size: the loads that may
    /// cover an address at some time are those starting at most this much before it.
    by_start: Vec<usize>,
    max_size: u64,
    cut_short_at: Option<u64>,
    /// Bytes of the file past what [`read_jit_dump`] read.
    unread_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Load {
    start: u64,
    size: u64,
    timestamp: u64,
    code_index: u64,
    name: Range<usize>,
    lines: Range<usize>,
    unwinding: Option<Unwinding>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Unwinding {
    bytes: Range<usize>,
    eh_frame_hdr_size: u64,
    mapped_size: u64,
    /// The load's code in `JitDump::code` (empty until the load is read).
    code: Range<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line {
    addr: u64,
    line: u32,
    discriminator: u32,
    file: (u32, u32),
}

/// A piece of generated code that covers an address ([`JitDump::find`], [`JitDump::find_at`]).
#[derive(Debug, Clone, Copy)]
pub struct JitCode<'a> {
    /// The name the JIT gave it (V8: `JS:*fib /app/app.js:1:13`; invalid UTF-8 replaced).
    pub name: &'a str,
    /// Its first byte, an absolute address of the process.
    pub start: AbsAddr,
    /// Its size in bytes.
    pub size: u64,
    /// How far into the code the address looked up is.
    pub offset: u64,
    /// When it was loaded (or moved here), in the clock of the file.
    pub timestamp: u64,
    /// The JIT's number for it (a moved piece keeps its load's).
    pub code_index: u64,
    dump: &'a JitDump,
    load: usize,
}

/// A source line of generated code, from a `JIT_CODE_DEBUG_INFO` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitSourceLine<'a> {
    /// The first address the line covers (as the JIT wrote it: V8's are 64 bytes past the
    /// code's, which perf's ELF files keep, so lookups compare with the address as perf does).
    pub addr: AbsAddr,
    /// The source file (V8: the script's path or URL).
    pub file: &'a str,
    /// The line, from 1.
    pub line: u32,
    /// The discriminator (V8 writes the column here, 0 where it has none).
    pub discriminator: u32,
}

/// The unwind tables a JIT wrote for one piece of code (`JIT_CODE_UNWINDING_INFO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitUnwindingInfo<'a> {
    /// The bytes: `.eh_frame` and `.eh_frame_hdr` (V8 writes the header last; the
    /// specification says first), `eh_frame_hdr_size` of them the header.
    pub bytes: &'a [u8],
    /// How many of `bytes` are the `.eh_frame_hdr`.
    pub eh_frame_hdr_size: u64,
    /// How many bytes of the data the process mapped (0: none, only the header matters).
    pub mapped_size: u64,
    /// The code the tables describe (the load's bytes, as the JIT wrote them).
    pub code: &'a [u8],
}

impl<'a> JitCode<'a> {
    /// The source line of the address looked up: the last debug entry at or before it
    /// (`None` if the load has no debug info or the address precedes its first entry).
    pub fn line(&self) -> Option<JitSourceLine<'a>> {
        let load = self.dump.loads.get(self.load)?;
        let lines = self.dump.lines.get(load.lines.clone())?;
        let addr = self.start.0.checked_add(self.offset)?;
        let at = lines.partition_point(|l| l.addr <= addr).checked_sub(1)?;
        lines.get(at).map(|l| self.dump.source_line(l))
    }

    /// The file the code is from.
    pub fn dump(&self) -> &'a JitDump {
        self.dump
    }

    /// Every source line of the code, by address.
    pub fn lines(&self) -> impl Iterator<Item = JitSourceLine<'a>> + 'a {
        let dump = self.dump;
        let lines = dump
            .loads
            .get(self.load)
            .and_then(|load| dump.lines.get(load.lines.clone()))
            .unwrap_or_default();
        lines.iter().map(move |l| dump.source_line(l))
    }

    /// The unwind tables the JIT wrote for this code, if it did.
    pub fn unwinding_info(&self) -> Option<JitUnwindingInfo<'a>> {
        let unwinding = self.dump.loads.get(self.load)?.unwinding.as_ref()?;
        Some(JitUnwindingInfo {
            bytes: self.dump.unwinding.get(unwinding.bytes.clone())?,
            eh_frame_hdr_size: unwinding.eh_frame_hdr_size,
            mapped_size: unwinding.mapped_size,
            code: self.dump.code.get(unwinding.code.clone())?,
        })
    }
}

impl JitDump {
    /// The name given to the parser (the path the file was read from).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's header.
    pub fn header(&self) -> &JitDumpHeader {
        &self.header
    }

    /// How many loads and moves it holds.
    pub fn len(&self) -> usize {
        self.loads.len()
    }

    /// Whether it holds no load.
    pub fn is_empty(&self) -> bool {
        self.loads.is_empty()
    }

    /// Where the record cut short by the end of the file starts ([`parse_growing_jitdump`]:
    /// the runtime was writing it).
    pub fn cut_short_at(&self) -> Option<u64> {
        self.cut_short_at
    }

    /// How many bytes of the file [`read_jit_dump`] left unread: those past
    /// [`MAX_JITDUMP_BYTES`] (0 for a file read whole, and for the parsers' own results).
    pub fn unread_bytes(&self) -> u64 {
        self.unread_bytes
    }

    /// The code covering `addr` now: of the loads and moves covering it, the last written.
    pub fn find(&self, addr: AbsAddr) -> Option<JitCode<'_>> {
        let piece = find_piece(&self.latest, addr.0)?;
        self.code(piece.entry, addr.0)
    }

    /// The code that covered `addr` at `timestamp` (in the file's clock: a perf sample's time
    /// when the runtime used the same clock, `perf record -k 1` for V8's
    /// `CLOCK_MONOTONIC`): of the loads and moves covering it written at or before then, the
    /// last. `None` if none was.
    pub fn find_at(&self, addr: AbsAddr, timestamp: u64) -> Option<JitCode<'_>> {
        // Loads starting after `addr` cannot cover it; of those before, only the ones at
        // most `max_size` before can.
        let end = self
            .by_start
            .partition_point(|&i| self.loads.get(i).is_some_and(|l| l.start <= addr.0));
        let lowest = addr.0.saturating_sub(self.max_size);
        let mut best: Option<usize> = None;
        for &i in self.by_start.get(..end)?.iter().rev() {
            let Some(load) = self.loads.get(i) else {
                continue;
            };
            if load.start < lowest {
                break;
            }
            let covers = addr.0 - load.start < load.size;
            if covers && load.timestamp <= timestamp && best.is_none_or(|b| i > b) {
                best = Some(i);
            }
        }
        self.code(best?, addr.0)
    }

    /// Every load and move, in file order, each looked up at its start.
    pub fn iter(&self) -> impl Iterator<Item = JitCode<'_>> {
        (0..self.loads.len()).filter_map(|i| self.nth(i))
    }

    /// The `index`th load or move in file order (time order), looked up at its start;
    /// `None` past the last ([`JitDump::len`]). A reader following a recording's time
    /// through the file keeps its place by index.
    pub fn nth(&self, index: usize) -> Option<JitCode<'_>> {
        self.code(index, self.loads.get(index)?.start)
    }

    fn code(&self, load: usize, addr: u64) -> Option<JitCode<'_>> {
        let entry = self.loads.get(load)?;
        Some(JitCode {
            name: self.strings.get(entry.name.clone()).unwrap_or_default(),
            start: AbsAddr(entry.start),
            size: entry.size,
            offset: addr.checked_sub(entry.start)?,
            timestamp: entry.timestamp,
            code_index: entry.code_index,
            dump: self,
            load,
        })
    }

    fn source_line(&self, line: &Line) -> JitSourceLine<'_> {
        let (from, len) = (line.file.0 as usize, line.file.1 as usize);
        JitSourceLine {
            addr: AbsAddr(line.addr),
            file: self.strings.get(from..from + len).unwrap_or_default(),
            line: line.line,
            discriminator: line.discriminator,
        }
    }
}

/// Parses a complete jitdump file (see the module docs); `name` is kept as
/// [`JitDump::path`] and named in errors. A record cut short by the end of the file is an
/// error here; [`parse_growing_jitdump`] reads a file still being written.
///
/// ```
/// use stacksym::addr::AbsAddr;
/// use stacksym::process::parse_jitdump;
/// # fn main() -> stacksym::Result<()> {
/// // A header and one JIT_CODE_LOAD of 16 bytes at 0x1000 named "f".
/// let mut file = Vec::new();
/// for word in [0x4A69_5444u32, 1, 40, 62, 0, 42] {
///     file.extend(word.to_le_bytes());
/// }
/// file.extend([0u8; 16]); // timestamp, flags
/// file.extend(0u32.to_le_bytes()); // JIT_CODE_LOAD
/// file.extend((16u32 + 40 + 2 + 16).to_le_bytes()); // its total size
/// file.extend(7u64.to_le_bytes()); // its timestamp
/// file.extend([42u32, 42].iter().flat_map(|w| w.to_le_bytes())); // pid, tid
/// for word in [0x1000u64, 0x1000, 16, 1] {
///     file.extend(word.to_le_bytes()); // vma, code address, code size, code index
/// }
/// file.extend(b"f\0");
/// file.extend([0xc3u8; 16]); // the code
/// let dump = parse_jitdump("jit-42.dump".as_ref(), &file)?;
/// let code = dump.find(AbsAddr(0x1004)).unwrap();
/// assert_eq!((code.name, code.offset), ("f", 4));
/// assert!(dump.find_at(AbsAddr(0x1004), 6).is_none()); // not loaded yet at time 6
/// # Ok(())
/// # }
/// ```
pub fn parse_jitdump(name: &Path, bytes: &[u8]) -> Result<JitDump> {
    Parser::new(name, bytes, false).parse()
}

/// Parses a jitdump file that its runtime may still be writing: a last record cut short by
/// the end of the file ends it ([`JitDump::cut_short_at`], logged), as perf reads one.
/// Everything else is checked as [`parse_jitdump`] checks it.
pub fn parse_growing_jitdump(name: &Path, bytes: &[u8]) -> Result<JitDump> {
    Parser::new(name, bytes, true).parse()
}

struct Parser<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    growing: bool,
    big_endian: bool,
}

/// A pending `JIT_CODE_DEBUG_INFO` or `JIT_CODE_UNWINDING_INFO`, for the next load.
#[derive(Default)]
struct Pending {
    lines: Option<Range<usize>>,
    unwinding: Option<Unwinding>,
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path, bytes: &'a [u8], growing: bool) -> Self {
        Parser {
            path,
            bytes,
            growing,
            big_endian: false,
        }
    }

    fn error(&self, offset: usize, what: impl Into<String>) -> Error {
        Error::JitDump {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            what: what.into(),
        }
    }

    fn u32_at(&self, bytes: &[u8], at: usize) -> Option<u32> {
        let word: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(match self.big_endian {
            true => u32::from_be_bytes(word),
            false => u32::from_le_bytes(word),
        })
    }

    fn u64_at(&self, bytes: &[u8], at: usize) -> Option<u64> {
        let word: [u8; 8] = bytes.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(match self.big_endian {
            true => u64::from_be_bytes(word),
            false => u64::from_le_bytes(word),
        })
    }

    fn header(&mut self) -> Result<(JitDumpHeader, usize)> {
        let bytes = self.bytes;
        let magic = bytes
            .get(..4)
            .and_then(|m| <[u8; 4]>::try_from(m).ok())
            .ok_or_else(|| self.error(0, "not a jitdump: shorter than its magic"))?;
        self.big_endian = match (u32::from_le_bytes(magic), u32::from_be_bytes(magic)) {
            (MAGIC, _) => false,
            (_, MAGIC) => true,
            // The bytes are not quoted: the file may be anything.
            _ => return Err(self.error(0, "not a jitdump: wrong magic (not \"JiTD\")")),
        };
        if bytes.len() < HEADER_BYTES {
            return Err(self.error(
                0,
                format!("header cut short: {} of {HEADER_BYTES} bytes", bytes.len()),
            ));
        }
        let word = |at| self.u32_at(bytes, at).unwrap_or_default();
        let long = |at| self.u64_at(bytes, at).unwrap_or_default();
        let header = JitDumpHeader {
            version: word(4),
            elf_machine: word(12),
            pid: word(20),
            timestamp: long(24),
            flags: long(32),
            big_endian: self.big_endian,
        };
        if !(1..=2).contains(&header.version) {
            return Err(self.error(0, format!("version {} (1 and 2 are read)", header.version)));
        }
        let total = word(8) as usize;
        if total < HEADER_BYTES || total > bytes.len() {
            return Err(self.error(
                0,
                format!(
                    "header size {total} outside {HEADER_BYTES}..={} (the file's size)",
                    bytes.len()
                ),
            ));
        }
        Ok((header, total))
    }

    fn parse(mut self) -> Result<JitDump> {
        let (header, mut at) = self.header()?;
        let mut dump = JitDump {
            path: self.path.to_path_buf(),
            header,
            strings: String::new(),
            loads: Vec::new(),
            lines: Vec::new(),
            unwinding: Vec::new(),
            code: Vec::new(),
            latest: Vec::new(),
            by_start: Vec::new(),
            max_size: 0,
            cut_short_at: None,
            unread_bytes: 0,
        };
        let mut pending = Pending::default();
        let mut by_index: HashMap<u64, usize> = HashMap::new();
        let mut last_time = 0u64;
        let bytes = self.bytes;
        while at < bytes.len() {
            let remaining = bytes.len() - at;
            let (id, size) = match (self.u32_at(bytes, at), self.u32_at(bytes, at + 4)) {
                (Some(id), Some(size)) if remaining >= RECORD_HEADER_BYTES => (id, size as usize),
                _ => {
                    self.cut_short(&mut dump, at, "record header")?;
                    break;
                }
            };
            if size < RECORD_HEADER_BYTES {
                return Err(self.error(at, format!("record of {size} bytes, less than its header")));
            }
            if size > remaining {
                self.cut_short(&mut dump, at, &format!("record of {size} bytes"))?;
                break;
            }
            let record = bytes.get(at..at + size).unwrap_or_default();
            let timestamp = self.u64_at(record, 8).unwrap_or_default();
            if timestamp < last_time {
                return Err(self.error(
                    at,
                    format!("record written at {timestamp}, before the previous one ({last_time})"),
                ));
            }
            last_time = timestamp;
            let payload = record.get(RECORD_HEADER_BYTES..).unwrap_or_default();
            match id {
                JIT_CODE_LOAD => self.code_load(
                    at,
                    payload,
                    timestamp,
                    &mut dump,
                    &mut pending,
                    &mut by_index,
                )?,
                JIT_CODE_MOVE => {
                    self.code_move(at, payload, timestamp, &mut dump, &mut by_index)?
                }
                JIT_CODE_DEBUG_INFO => {
                    let lines = self.debug_info(at, payload, &mut dump)?;
                    pending.lines = Some(lines);
                }
                JIT_CODE_UNWINDING_INFO => {
                    let unwinding = self.unwinding_info(at, payload, &mut dump)?;
                    pending.unwinding = Some(unwinding);
                }
                JIT_CODE_CLOSE => break,
                other => log::debug!(
                    "{}: record of unknown type {other} at {at:#x}, skipped",
                    self.path.display()
                ),
            }
            at += size;
        }
        dump.latest = build_index(dump.loads.iter().map(|l| (l.start, l.start + l.size)));
        dump.by_start = (0..dump.loads.len()).collect();
        let loads = &dump.loads;
        dump.by_start
            .sort_by_key(|&i| loads.get(i).map_or(0, |l| l.start));
        dump.max_size = loads.iter().map(|l| l.size).max().unwrap_or(0);
        Ok(dump)
    }

    /// A `JIT_CODE_LOAD` record at `at`: the code's name, and its bytes where the
    /// preceding `JIT_CODE_UNWINDING_INFO` gave tables for it; the pending debug and unwind
    /// records are the load's.
    fn code_load(
        &self,
        at: usize,
        payload: &[u8],
        timestamp: u64,
        dump: &mut JitDump,
        pending: &mut Pending,
        by_index: &mut HashMap<u64, usize>,
    ) -> Result<()> {
        let field = |what: &str| self.error(at, format!("{what} cut short"));
        let (start, code_size, code_index) = match (
            self.u64_at(payload, 16),
            self.u64_at(payload, 24),
            self.u64_at(payload, 32),
        ) {
            (Some(a), Some(s), Some(i)) => (a, s, i),
            _ => return Err(field("JIT_CODE_LOAD's fields")),
        };
        let name = payload.get(40..).unwrap_or_default();
        let name_len = name
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| field("JIT_CODE_LOAD's name (no NUL)"))?;
        let room = (name.len() - name_len - 1) as u64;
        if code_size > room {
            return Err(self.error(
                at,
                format!("JIT_CODE_LOAD of {code_size} code bytes, {room} in the record"),
            ));
        }
        if start.checked_add(code_size).is_none() {
            return Err(self.error(at, "JIT_CODE_LOAD beyond the address space"));
        }
        let from = dump.strings.len();
        dump.strings
            .push_str(&String::from_utf8_lossy(&name[..name_len]));
        let mut pending = std::mem::take(pending);
        // Kept only where there are tables besides the header (V8 writes a header alone for
        // code it has no tables for: builtins).
        let tables = pending
            .unwinding
            .as_mut()
            .filter(|u| (u.bytes.len() as u64) > u.eh_frame_hdr_size);
        if let Some(unwinding) = tables {
            // Checked above: the code lies in the record after the name.
            let code = name
                .get(name_len + 1..)
                .and_then(|rest| rest.get(..usize::try_from(code_size).ok()?))
                .unwrap_or_default();
            let at = dump.code.len();
            dump.code.extend_from_slice(code);
            unwinding.code = at..dump.code.len();
        }
        let lines = pending.lines.unwrap_or(dump.lines.len()..dump.lines.len());
        by_index.insert(code_index, dump.loads.len());
        dump.loads.push(Load {
            start,
            size: code_size,
            timestamp,
            code_index,
            name: from..dump.strings.len(),
            lines,
            unwinding: pending.unwinding,
        });
        Ok(())
    }

    /// A `JIT_CODE_MOVE` record at `at`: the code of an earlier load, now at another address
    /// (its name moves with it, its source lines and unwind tables do not).
    fn code_move(
        &self,
        at: usize,
        payload: &[u8],
        timestamp: u64,
        dump: &mut JitDump,
        by_index: &mut HashMap<u64, usize>,
    ) -> Result<()> {
        let (new_start, code_size, code_index) = match (
            self.u64_at(payload, 24),
            self.u64_at(payload, 32),
            self.u64_at(payload, 40),
        ) {
            (Some(a), Some(s), Some(i)) => (a, s, i),
            _ => return Err(self.error(at, "JIT_CODE_MOVE's fields cut short")),
        };
        if new_start.checked_add(code_size).is_none() {
            return Err(self.error(at, "JIT_CODE_MOVE beyond the address space"));
        }
        match by_index.get(&code_index).and_then(|&i| dump.loads.get(i)) {
            Some(loaded) => {
                let moved = Load {
                    start: new_start,
                    size: code_size,
                    timestamp,
                    code_index,
                    // The source lines and unwind tables are the code's, at its old address:
                    // not moved with it.
                    lines: 0..0,
                    unwinding: None,
                    name: loaded.name.clone(),
                };
                by_index.insert(code_index, dump.loads.len());
                dump.loads.push(moved);
            }
            None => log::debug!(
                "{}: JIT_CODE_MOVE at {at:#x} of code index {code_index}, never loaded",
                self.path.display()
            ),
        }
        Ok(())
    }

    /// A record (or its header) at `at` goes past the end of the file.
    fn cut_short(&self, dump: &mut JitDump, at: usize, what: &str) -> Result<()> {
        let remaining = self.bytes.len() - at;
        let why = format!("{what} cut short by the end of the file ({remaining} bytes left)");
        if !self.growing {
            return Err(self.error(at, why));
        }
        log::debug!(
            "{}: at {at:#x}: {why}; the rest is still being written",
            self.path.display()
        );
        dump.cut_short_at = Some(at as u64);
        Ok(())
    }

    /// The entries of a `JIT_CODE_DEBUG_INFO` payload, appended to `dump.lines` (sorted by
    /// address); their range there.
    fn debug_info(&self, at: usize, payload: &[u8], dump: &mut JitDump) -> Result<Range<usize>> {
        let count = self
            .u64_at(payload, 8)
            .ok_or_else(|| self.error(at, "JIT_CODE_DEBUG_INFO's fields cut short"))?;
        let first = dump.lines.len();
        let mut rest = payload.get(16..).unwrap_or_default();
        // Each entry takes at least 17 bytes, so the count is checked against the bytes as
        // they are read, never used to reserve memory.
        for n in 0..count {
            let (Some(addr), Some(line), Some(discriminator)) = (
                self.u64_at(rest, 0),
                self.u32_at(rest, 8),
                self.u32_at(rest, 12),
            ) else {
                return Err(self.error(
                    at,
                    format!("JIT_CODE_DEBUG_INFO of {count} entries: entry {n} cut short"),
                ));
            };
            let name = rest.get(16..).unwrap_or_default();
            let Some(len) = name.iter().position(|&b| b == 0) else {
                return Err(self.error(
                    at,
                    format!("JIT_CODE_DEBUG_INFO: entry {n}'s file name has no NUL"),
                ));
            };
            let file = self.file_name(dump, &name[..len]);
            dump.lines.push(Line {
                addr,
                line,
                discriminator,
                file,
            });
            rest = name.get(len + 1..).unwrap_or_default();
        }
        let lines = dump.lines.get_mut(first..).unwrap_or_default();
        lines.sort_by_key(|l| l.addr);
        Ok(first..dump.lines.len())
    }

    /// A source file name in `dump.strings`: the previous entry's when it is the same (V8
    /// repeats the script's name in every entry).
    fn file_name(&self, dump: &mut JitDump, name: &[u8]) -> (u32, u32) {
        if let Some(last) = dump.lines.last() {
            let (from, len) = (last.file.0 as usize, last.file.1 as usize);
            if dump.strings.as_bytes().get(from..from + len) == Some(name) {
                return last.file;
            }
        }
        let from = dump.strings.len();
        dump.strings.push_str(&String::from_utf8_lossy(name));
        let len = dump.strings.len() - from;
        // Strings past 4 GiB (a file of that size) get an empty name rather than a wrong one.
        match (u32::try_from(from), u32::try_from(len)) {
            (Ok(from), Ok(len)) => (from, len),
            _ => (0, 0),
        }
    }

    /// A `JIT_CODE_UNWINDING_INFO` payload, its bytes appended to `dump.unwinding`.
    fn unwinding_info(&self, at: usize, payload: &[u8], dump: &mut JitDump) -> Result<Unwinding> {
        let (Some(size), Some(eh_frame_hdr_size), Some(mapped_size)) = (
            self.u64_at(payload, 0),
            self.u64_at(payload, 8),
            self.u64_at(payload, 16),
        ) else {
            return Err(self.error(at, "JIT_CODE_UNWINDING_INFO's fields cut short"));
        };
        let data = payload.get(24..).unwrap_or_default();
        let Some(data) = usize::try_from(size).ok().and_then(|size| data.get(..size)) else {
            return Err(self.error(
                at,
                format!(
                    "JIT_CODE_UNWINDING_INFO of {size} bytes, {} in the record",
                    data.len()
                ),
            ));
        };
        if eh_frame_hdr_size > size {
            return Err(self.error(
                at,
                format!("JIT_CODE_UNWINDING_INFO: a header of {eh_frame_hdr_size} bytes in {size}"),
            ));
        }
        let from = dump.unwinding.len();
        dump.unwinding.extend_from_slice(data);
        Ok(Unwinding {
            bytes: from..dump.unwinding.len(),
            eh_frame_hdr_size,
            mapped_size,
            code: 0..0,
        })
    }
}

/// The largest jitdump [`Process::jit_dumps`] reads (V8 writes about 1 KiB per compiled
/// function, code included).
pub const MAX_JITDUMP_BYTES: u64 = 1 << 30;

/// Whether `path` names a jitdump as runtimes name them: `jit-<digits>.dump`.
fn is_jitdump_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.strip_prefix("jit-")
        .and_then(|rest| rest.strip_suffix(".dump"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

impl Process {
    /// The jitdump files the process maps (`jit-PID.dump`: runtimes map the file they write,
    /// so that perf record sees it in an MMAP record, and perf finds it so too), each read and
    /// parsed as a file still being written ([`parse_growing_jitdump`]). Opened as every
    /// mapped file is ([`Process::open_mapped`]: the very inode mapped, else confined to the
    /// process's root and checked against the maps line), read into memory, at most
    /// [`MAX_JITDUMP_BYTES`].
    ///
    /// Errors: a file that cannot be opened or read, or is not a jitdump ([`Error::JitDump`]
    /// naming it and the offset); the first error is returned once no file could be read.
    pub fn jit_dumps(&self, maps: &ProcessMaps) -> Result<Vec<JitDump>> {
        let mut dumps: Vec<JitDump> = Vec::new();
        let mut first_error = None;
        for opened in self.jit_dump_files(maps) {
            match opened.and_then(|(file, path)| read_jit_dump(file, &path)) {
                Ok(dump) => dumps.push(dump),
                Err(e) => {
                    log::debug!("process {}: {e}", self.pid);
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) if dumps.is_empty() => Err(e),
            _ => Ok(dumps),
        }
    }

    /// The jitdump files the process maps, opened (each once, in maps order), with the
    /// names they are shown by: for the symbolizer's cache, which reads a file again only
    /// when it changed.
    pub(crate) fn jit_dump_files(&self, maps: &ProcessMaps) -> Vec<Result<(File, PathBuf)>> {
        let mut seen: Vec<&Path> = Vec::new();
        let mut files = Vec::new();
        for mapping in maps.mappings() {
            let MappingKind::File { path, .. } = &mapping.kind else {
                continue;
            };
            if !is_jitdump_name(path) || seen.contains(&path.as_path()) {
                continue;
            }
            seen.push(path);
            files.extend(self.open_mapped(mapping));
        }
        files
    }
}

/// Reads an opened jitdump, at most [`MAX_JITDUMP_BYTES`] of it, and parses it as a file
/// still being written ([`parse_growing_jitdump`]); `path` names it in the result and in
/// errors. A longer file loses its tail: what it held past the limit is not read, which
/// [`JitDump::unread_bytes`] says (and a `log::warn!` line, with the count).
///
/// Errors: the file cannot be read ([`Error::Io`]), or is not a jitdump ([`Error::JitDump`]).
pub fn read_jit_dump(file: File, path: &Path) -> Result<JitDump> {
    read_capped(file, path, MAX_JITDUMP_BYTES)
}

/// [`read_jit_dump`] with the limit `cap` (tests try a small one).
fn read_capped(file: File, path: &Path, cap: u64) -> Result<JitDump> {
    use std::io::Read;
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let len = file.metadata().map_err(io)?.len();
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes).map_err(io)?;
    let mut dump = parse_growing_jitdump(path, &bytes)?;
    dump.unread_bytes = len.saturating_sub(bytes.len() as u64);
    if dump.unread_bytes > 0 {
        log::warn!(
            "{}: larger than {cap} bytes: its last {} bytes are not read",
            path.display(),
            dump.unread_bytes
        );
    }
    Ok(dump)
}

#[cfg(test)]
mod tests;
