//! Go's own symbol table, `.gopclntab`: function names, file and line of every PC, the
//! inline tree and the stack-pointer delta, as the Go runtime reads them for its tracebacks.
//! Every Go binary carries it, also when stripped (`-ldflags=-s -w`, or the distribution's
//! strip): it is how a stripped Go program is symbolized and unwound.
//!
//! The table is read straight from an [`ElfFile`]'s bytes, lazily: opening parses and checks
//! the header only; a lookup binary-searches the function table and decodes just the
//! varint tables of the one function it needs. Every offset and varint is checked; a hostile
//! table gives an error, never a panic, and a lookup's work is bounded by the table's bytes.
//!
//! Found by section name (`.gopclntab`), else through the `runtime.pclntab` or
//! `runtime.firstmoduledata` symbols, else by scanning the file's loadable segments for a
//! header that checks out (see `locate.rs`). Formats: see [`GoTableVersion`]. The inline
//! tree is read for Go 1.16 and later (older tables give the outermost function only).
//!
//! It knows nothing of processes or caches: `symbolize/` asks it where a file has no symbol
//! (names) or no DWARF (lines), and `unwind/` asks it for SP deltas.

mod header;
mod locate;
mod pcvalue;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

pub use header::GoTableVersion;

use crate::addr::VirtAddr;
use crate::dwarf::{FunctionName, InlineFrame};
use crate::elf::ElfFile;
use crate::error::{Error, Result};
use header::{uint_at, Header};

/// How errors name a Go table's section, wherever the table was found (a PIE keeps it in
/// `.data.rel.ro.gopclntab`, a scan finds it in a segment).
const GO_TABLE_SECTION: &str = ".gopclntab";

/// `_PCDATA_InlTreeIndex`: the pcdata table whose value at a PC is the inline-tree index
/// of the innermost inlined call there (-1: none).
const PCDATA_INL_TREE_INDEX: usize = 2;
/// `_FUNCDATA_InlTree`: the funcdata entry that points at a function's inline tree.
const FUNCDATA_INL_TREE: usize = 3;
/// Inlined calls followed per PC at most (Go's inliner nests far fewer); a hostile tree whose
/// parents loop stops here.
const MAX_INLINE_DEPTH: usize = 64;
/// The longest name or file path read; a longer one (no NUL within it) is malformed.
const MAX_STRING: usize = 1 << 16;

/// How the table was found in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GoTableFoundBy {
    /// The `.gopclntab` section.
    Section,
    /// The `runtime.pclntab` or `runtime.firstmoduledata` symbol.
    Symbol,
    /// A scan of the loadable segments for a header that checks out (no section headers, or
    /// a section table without `.gopclntab`).
    Scan,
}

/// One Go function of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoFunction<'a> {
    /// The name as Go prints it (`main.(*Server).Handle`, `main.Map[...]`, `main.main.func1`).
    pub name: &'a str,
    /// Its entry: an ELF virtual address of the file.
    pub entry: VirtAddr,
    /// Where its code ends: the next function's entry (the table states no sizes).
    pub end: VirtAddr,
    /// Its index in the table's function list.
    pub index: usize,
}

/// A Go binary's `.gopclntab`, ready for lookups. `Send + Sync`; holds its file by `Arc`.
pub struct GoTable {
    elf: Arc<ElfFile>,
    /// The table's bytes: a range of the file.
    range: Range<usize>,
    /// The table's virtual address.
    addr: VirtAddr,
    header: Header,
    /// The text start, with a PIE's dynamic relocation applied (1.18+).
    text_start: u64,
    found_by: GoTableFoundBy,
    /// `moduledata.gofunc`, the base of 1.18+ funcdata offsets, found on first need.
    gofunc: OnceLock<Option<u64>>,
    /// The virtual address of the table's `runtime.moduledata`, found on first need.
    moduledata: OnceLock<Option<u64>>,
    /// The file's `R_*_RELATIVE` dynamic relocations (offset, addend), sorted, read on first
    /// need: a PIE's pointers are zero in the file and set by these.
    relocations: OnceLock<Vec<(u64, u64)>>,
    /// The names frames hand out, each made once and then shared (as DWARF's are): by the
    /// name's table offset and, for a function's own frame, its entry (an inlined call's
    /// has none). At most one per name of the table, so bounded by its size.
    frame_names: Mutex<FrameNames>,
    /// The file names frames hand out, by where the name lies in the mapped table (fixed
    /// for the table's life); at most one per file name of the table.
    file_names: Mutex<HashMap<usize, Arc<str>>>,
}

/// A frame's shared name by the name's table offset and the function's entry (see
/// [`GoTable`]'s `frame_names`).
type FrameNames = HashMap<(u32, Option<VirtAddr>), Arc<FunctionName>>;

impl std::fmt::Debug for GoTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoTable")
            .field("path", &self.elf.path())
            .field("version", &self.header.version)
            .field("functions", &self.header.nfunc)
            .field("found_by", &self.found_by)
            .finish()
    }
}

/// The fields of one `_func` record that lookups use.
#[derive(Debug, Clone, Copy)]
struct FuncRecord {
    entry: u64,
    end: u64,
    name_off: u32,
    pcsp: u32,
    pcfile: u32,
    pcln: u32,
    npcdata: u32,
    cu_offset: u32,
    nfuncdata: u8,
    /// Table offset of the pcdata offsets.
    pcdata_at: usize,
}

impl GoTable {
    /// Finds and checks the Go table of `elf`. `Ok(None)` when the file has none (not a Go
    /// binary); `Err` naming the file when a table was found but is malformed.
    pub fn find(elf: &Arc<ElfFile>) -> Result<Option<GoTable>> {
        locate::find(elf)
    }

    /// The table of `elf` at file range `range` (virtual address `addr`), checked.
    fn new(
        elf: &Arc<ElfFile>,
        range: Range<usize>,
        addr: VirtAddr,
        found_by: GoTableFoundBy,
    ) -> Result<GoTable> {
        let data = elf.bytes_in(range.clone());
        let header = Header::parse(data, elf.header().big_endian).map_err(|mut fault| {
            fault.what = format!(
                "the table at file offset {:#x}: {}",
                range.start, fault.what
            );
            fault.in_section(elf.path(), GO_TABLE_SECTION)
        })?;
        let mut table = GoTable {
            elf: Arc::clone(elf),
            range,
            addr,
            text_start: header.text_start,
            header,
            found_by,
            gofunc: OnceLock::new(),
            moduledata: OnceLock::new(),
            relocations: OnceLock::new(),
            frame_names: Mutex::new(HashMap::new()),
            file_names: Mutex::new(HashMap::new()),
        };
        table.text_start = table.relocated_text_start();
        if table.text_start == 0 && table.header.version >= GoTableVersion::Go1_18 {
            // Go 1.26's linker leaves the header's textStart 0: the runtime takes the text
            // start from the module data, and so do we; else from `.text`, as Go's
            // debug/gosym does.
            table.text_start = match locate::moduledata_text(&table) {
                Some(text) => text,
                None => {
                    let text = elf.section_address(".text")?.map_or(0, |a| a.0);
                    log::debug!(
                        "{}: Go table: textStart is 0 and no module data found; \
                         functions counted from .text at {text:#x}",
                        elf.path().display()
                    );
                    text
                }
            };
        }
        Ok(table)
    }

    /// The format of the table.
    pub fn version(&self) -> GoTableVersion {
        self.header.version
    }

    /// How many functions it lists.
    pub fn function_count(&self) -> usize {
        self.header.nfunc
    }

    /// How the table was found.
    pub fn found_by(&self) -> GoTableFoundBy {
        self.found_by
    }

    /// The file the table is in.
    pub fn elf(&self) -> &Arc<ElfFile> {
        &self.elf
    }

    fn data(&self) -> &[u8] {
        self.elf.bytes_in(self.range.clone())
    }

    fn malformed(&self, what: impl std::fmt::Display) -> Error {
        Error::MalformedSection {
            path: self.elf.path().to_path_buf(),
            section: GO_TABLE_SECTION.to_string(),
            offset: None,
            what: format!("the table at file offset {:#x}: {what}", self.range.start),
        }
    }

    fn uint(&self, at: usize, size: u8) -> Option<u64> {
        uint_at(self.data(), at, size, self.header.big_endian)
    }

    fn u32(&self, at: usize) -> Option<u32> {
        self.uint(at, 4).map(|v| v as u32)
    }

    /// The entry PC of function `i` (`i == nfunc`: the end of the last function).
    fn entry(&self, i: usize) -> Option<u64> {
        let at = self.header.functab + i * self.header.entry_size();
        match self.header.version {
            GoTableVersion::Go1_18 | GoTableVersion::Go1_20 => {
                Some(self.text_start.wrapping_add(u64::from(self.u32(at)?)))
            }
            _ => self.uint(at, self.header.ptr_size),
        }
    }

    /// Function `i`'s entry address (`i == function_count()`: the end of the last one).
    pub(crate) fn entry_of(&self, i: usize) -> Result<VirtAddr> {
        self.entry(i)
            .map(VirtAddr)
            .ok_or_else(|| self.malformed("its function table is truncated"))
    }

    /// The table offset of function `i`'s `_func` record.
    fn record_at(&self, i: usize) -> Option<usize> {
        let h = &self.header;
        let at = h.functab + i * h.entry_size();
        let funcoff = match h.version {
            GoTableVersion::Go1_18 | GoTableVersion::Go1_20 => u64::from(self.u32(at + 4)?),
            _ => self.uint(at + usize::from(h.ptr_size), h.ptr_size)?,
        };
        let base = match h.version {
            GoTableVersion::Go1_2 => 0,
            _ => h.functab,
        };
        usize::try_from(funcoff)
            .ok()?
            .checked_add(base)
            .filter(|&at| at <= self.data().len())
    }

    /// The index of the function whose code holds `pc`, by a binary search of the entries.
    fn index_of(&self, pc: u64) -> Result<Option<usize>> {
        let n = self.header.nfunc;
        let (Some(first), Some(last)) = (self.entry(0), self.entry(n)) else {
            return Err(self.malformed("its function table is truncated"));
        };
        if pc < first || pc >= last {
            return Ok(None);
        }
        self.search_between(pc, 0, n)
    }

    /// The index in `lo..hi` of the function whose code holds `pc`, by a binary search for
    /// the greatest i with entry(i) <= pc (the caller knows entry(lo) <= pc). An unsorted
    /// (hostile) table gives some i, whose range is checked: never a wrong answer.
    fn search_between(&self, pc: u64, mut lo: usize, mut hi: usize) -> Result<Option<usize>> {
        let entry = |i: usize| {
            self.entry(i)
                .ok_or_else(|| self.malformed("its function table is truncated"))
        };
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if entry(mid)? <= pc {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok((entry(lo)? <= pc && pc < entry(lo + 1)?).then_some(lo))
    }

    /// Reads function `i`'s record.
    fn record(&self, i: usize) -> Result<FuncRecord> {
        let h = &self.header;
        let bad = |what: &str| self.malformed(format!("function {i}: {what}"));
        let entry = self
            .entry(i)
            .ok_or_else(|| bad("entry outside the table"))?;
        let end = self
            .entry(i + 1)
            .ok_or_else(|| bad("entry outside the table"))?;
        let at = self
            .record_at(i)
            .ok_or_else(|| bad("record offset outside the table"))?;
        let p = usize::from(h.ptr_size);
        // Field offsets of `_func` (runtime/runtime2.go of each version).
        let (name, pcsp, cu, funcid_end, pcdata) = match h.version {
            GoTableVersion::Go1_20 => (4, 16, Some(32), 44, 44),
            GoTableVersion::Go1_18 => (4, 16, Some(32), 40, 40),
            GoTableVersion::Go1_16 => (p, p + 12, Some(p + 28), p + 36, p + 36),
            GoTableVersion::Go1_2 => (p, p + 12, None, p + 32, p + 32),
        };
        let field = |off: usize| {
            self.u32(at + off)
                .ok_or_else(|| bad("record outside the table"))
        };
        let nfuncdata = *self
            .data()
            .get(at + funcid_end - 1)
            .ok_or_else(|| bad("record outside the table"))?;
        Ok(FuncRecord {
            entry,
            end,
            name_off: field(name)?,
            pcsp: field(pcsp)?,
            pcfile: field(pcsp + 4)?,
            pcln: field(pcsp + 8)?,
            npcdata: field(pcsp + 12)?,
            cu_offset: match cu {
                Some(cu) => field(cu)?,
                None => 0,
            },
            nfuncdata,
            pcdata_at: at + pcdata,
        })
    }

    /// A NUL-terminated string at table offset `at`, as UTF-8 (lossy names are refused).
    fn string_at(&self, at: usize) -> Option<&str> {
        let data = self.data();
        let rest = data.get(at..)?;
        let rest = &rest[..rest.len().min(MAX_STRING)];
        let len = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..len]).ok()
    }

    /// The function name at name offset `off` (into funcnametab; the table's start for 1.2).
    fn name_at(&self, off: u32) -> Result<&str> {
        let base = match self.header.version {
            GoTableVersion::Go1_2 => 0,
            _ => self.header.funcnames,
        };
        (off as usize)
            .checked_add(base)
            .and_then(|at| self.string_at(at))
            .ok_or_else(|| {
                self.malformed(format!(
                    "function name offset {off:#x} is outside the table"
                ))
            })
    }

    /// Like [`GoTable::index_of`] for the next address of an ascending run: `hint` is the
    /// index the previous (lower or equal) address found, or 0. Searches forward from it by
    /// doubling steps, so a sorted batch costs a few entry reads per address instead of a
    /// whole binary search each; an address below the hint's entry searches the whole table.
    pub(crate) fn index_from(&self, pc: u64, hint: usize) -> Result<Option<usize>> {
        let n = self.header.nfunc;
        let entry = |i: usize| {
            self.entry(i)
                .ok_or_else(|| self.malformed("its function table is truncated"))
        };
        if hint >= n || entry(hint)? > pc {
            return self.index_of(pc);
        }
        // entry(lo) <= pc; find hi with entry(hi) > pc (or hi = n, the end).
        let (mut lo, mut step) = (hint, 1usize);
        let hi = loop {
            let next = lo.saturating_add(step).min(n);
            if next == n || entry(next)? > pc {
                break next;
            }
            lo = next;
            step = step.saturating_mul(2);
        };
        self.search_between(pc, lo, hi)
    }

    /// The function whose code holds `addr` (an ELF virtual address of the file).
    pub fn find_function(&self, addr: VirtAddr) -> Result<Option<GoFunction<'_>>> {
        let Some(i) = self.index_of(addr.0)? else {
            return Ok(None);
        };
        self.function(i).map(Some)
    }

    /// Function `index` of the table (`index < function_count()`).
    pub fn function(&self, index: usize) -> Result<GoFunction<'_>> {
        let record = self.record(index)?;
        Ok(GoFunction {
            name: self.name_at(record.name_off)?,
            entry: VirtAddr(record.entry),
            end: VirtAddr(record.end),
            index,
        })
    }

    /// Every function of the table, in table (address) order; a record that cannot be read
    /// is an `Err` item, and the rest still come.
    pub fn functions(&self) -> impl Iterator<Item = Result<GoFunction<'_>>> + '_ {
        (0..self.header.nfunc).map(|i| self.function(i))
    }

    /// The value of the pc-value table at `off` (0: none) for `pc` in `record`'s function.
    fn pc_value(&self, record: &FuncRecord, off: u32, pc: u64) -> Result<Option<i32>> {
        if off == 0 {
            return Ok(None);
        }
        let base = match self.header.version {
            GoTableVersion::Go1_2 => 0,
            _ => self.header.pctab,
        };
        let start = (off as usize).saturating_add(base);
        pcvalue::value_at(
            self.data(),
            start,
            self.header.quantum,
            record.entry,
            record.end,
            pc,
        )
        .map_err(|what| self.malformed(format!("function at {:#x}: {what}", record.entry)))
    }

    /// The source file that pcfile value `file` names in `record`'s function.
    fn file_name(&self, record: &FuncRecord, file: i32) -> Result<Option<&str>> {
        let Ok(file) = usize::try_from(file) else {
            return Ok(None);
        };
        let h = &self.header;
        let at = match h.version {
            GoTableVersion::Go1_2 => {
                // filetab: a u32 count, then u32 offsets from the table's start.
                let count = self.u32(h.filetab).unwrap_or(0) as usize;
                if file == 0 || file >= count {
                    return Ok(None);
                }
                file.checked_mul(4)
                    .and_then(|off| h.filetab.checked_add(off))
                    .and_then(|at| self.u32(at))
                    .map(|v| v as usize)
            }
            _ => {
                // cutab: per compilation unit, u32 offsets into filetab.
                let slot = (record.cu_offset as usize).checked_add(file);
                match slot.and_then(|s| self.u32(h.cutab.checked_add(s.checked_mul(4)?)?)) {
                    Some(u32::MAX) => return Ok(None),
                    Some(off) => (off as usize).checked_add(h.filetab),
                    None => None,
                }
            }
        };
        match at.and_then(|at| self.string_at(at)) {
            Some(name) => Ok(Some(name)),
            None => Err(self.malformed(format!(
                "function at {:#x}: file {file} is outside the table",
                record.entry
            ))),
        }
    }

    /// Source file and line of `pc` in `record`'s function.
    fn file_line(&self, record: &FuncRecord, pc: u64) -> Result<(Option<&str>, Option<u32>)> {
        let file = match self.pc_value(record, record.pcfile, pc)? {
            Some(file) => self.file_name(record, file)?,
            None => None,
        };
        let line = self
            .pc_value(record, record.pcln, pc)?
            .and_then(|line| u32::try_from(line).ok())
            .filter(|&line| line > 0);
        Ok((file, line))
    }

    /// The stack-pointer delta at `addr`: how many bytes the function has pushed below its
    /// caller's stack pointer (after the return address on x86) when it executes `addr`;
    /// `Ok(None)` where no function or no pcsp table covers it.
    pub fn sp_delta(&self, addr: VirtAddr) -> Result<Option<i32>> {
        let Some(i) = self.index_of(addr.0)? else {
            return Ok(None);
        };
        let record = self.record(i)?;
        self.pc_value(&record, record.pcsp, addr.0)
    }

    /// The offset of pcdata table `n` of `record` (0: none).
    fn pcdata(&self, record: &FuncRecord, n: usize) -> u32 {
        if n >= record.npcdata as usize {
            return 0;
        }
        // n < npcdata: a hostile count must not overflow on a 32-bit host.
        n.checked_mul(4)
            .and_then(|off| record.pcdata_at.checked_add(off))
            .and_then(|at| self.u32(at))
            .unwrap_or(0)
    }

    /// The virtual address funcdata entry `n` of `record` points at, if it has one.
    fn funcdata(&self, record: &FuncRecord, n: usize) -> Result<Option<u64>> {
        if n >= usize::from(record.nfuncdata) {
            return Ok(None);
        }
        let after_pcdata = (record.npcdata as usize)
            .saturating_mul(4)
            .saturating_add(record.pcdata_at);
        match self.header.version {
            GoTableVersion::Go1_18 | GoTableVersion::Go1_20 => {
                let Some(off) = self.u32(after_pcdata.saturating_add(4 * n)) else {
                    return Err(self.malformed("a funcdata offset is outside the table"));
                };
                if off == u32::MAX {
                    return Ok(None);
                }
                Ok(self.gofunc()?.map(|base| base.wrapping_add(u64::from(off))))
            }
            _ => {
                // Pointers, aligned to the pointer size in memory.
                let p = u64::from(self.header.ptr_size);
                let addr = self
                    .addr
                    .0
                    .checked_add(after_pcdata as u64)
                    .and_then(|a| a.checked_next_multiple_of(p))
                    .and_then(|a| a.checked_add(p * n as u64));
                Ok(addr.and_then(|a| self.pointer_at(a)).filter(|&v| v != 0))
            }
        }
    }

    /// `moduledata.gofunc` (found once).
    fn gofunc(&self) -> Result<Option<u64>> {
        Ok(*self.gofunc.get_or_init(|| locate::gofunc(self)))
    }

    /// The address of the table's `runtime.moduledata` (found once).
    fn moduledata(&self) -> Option<u64> {
        *self.moduledata.get_or_init(|| locate::moduledata(self))
    }

    /// The pointer-sized value at virtual address `addr` as the loaded program sees it: a
    /// dynamic relocation's addend where one sets it, else the file's bytes.
    fn pointer_at(&self, addr: u64) -> Option<u64> {
        if let Some(value) = locate::relocated(self, addr) {
            return Some(value);
        }
        let bytes = locate::bytes_at(&self.elf, addr, usize::from(self.header.ptr_size))?;
        uint_at(bytes, 0, self.header.ptr_size, self.header.big_endian)
    }

    /// Appends the frames of `addr` to `frames`, innermost first, as [`crate::dwarf`] gives
    /// them: the inlined functions at `addr` (each at its file and line), then the function
    /// whose code it is, at the call site of the frame inside it. Returns whether a function
    /// covers `addr` (nothing is appended otherwise). A PC the table gives no line (the
    /// alignment padding after a function's last instruction) gets no frames, as DWARF's line
    /// table gives it none; the function still covers it.
    pub fn append_frames(&self, addr: VirtAddr, frames: &mut Vec<InlineFrame>) -> Result<bool> {
        let Some(i) = self.index_of(addr.0)? else {
            return Ok(false);
        };
        self.append_frames_of(i, addr, frames).map(|()| true)
    }

    /// [`GoTable::append_frames`] for `addr` in function `i` (found by the caller).
    pub(crate) fn append_frames_of(
        &self,
        i: usize,
        addr: VirtAddr,
        frames: &mut Vec<InlineFrame>,
    ) -> Result<()> {
        let record = self.record(i)?;
        let tree = if self.header.version >= GoTableVersion::Go1_16
            && self.pcdata(&record, PCDATA_INL_TREE_INDEX) != 0
        {
            self.funcdata(&record, FUNCDATA_INL_TREE)?
        } else {
            None
        };
        let mut pc = addr.0;
        for depth in 0..MAX_INLINE_DEPTH {
            let (file, line) = self.file_line(&record, pc)?;
            if depth == 0 && file.is_none() && line.is_none() {
                return Ok(());
            }
            let inlined = match tree {
                Some(tree) => {
                    let index =
                        self.pc_value(&record, self.pcdata(&record, PCDATA_INL_TREE_INDEX), pc)?;
                    match index.and_then(|ix| usize::try_from(ix).ok()) {
                        Some(ix) => Some(self.inlined_call(tree, ix)?),
                        None => None,
                    }
                }
                None => None,
            };
            let Some((name_off, parent_pc)) = inlined else {
                let function = self.frame_name(record.name_off, Some(VirtAddr(record.entry)))?;
                frames.push(go_frame(function, self.shared_file(file), line, false));
                return Ok(());
            };
            let function = self.frame_name(name_off, None)?;
            frames.push(go_frame(function, self.shared_file(file), line, true));
            // The call site: an instruction of the caller that the compiler marked.
            pc = record.entry.wrapping_add(parent_pc as u64);
            if pc < record.entry || pc >= record.end {
                return Err(self.malformed(format!(
                    "function at {:#x}: an inlined call's parent PC is outside the function",
                    record.entry
                )));
            }
        }
        Err(self.malformed(format!(
            "function at {:#x}: inlined calls nest deeper than {MAX_INLINE_DEPTH}",
            record.entry
        )))
    }

    /// The shared name of a frame: the function named at `name_off`, starting at `start` (a
    /// function's own frame) or inlined (`None`).
    fn frame_name(&self, name_off: u32, start: Option<VirtAddr>) -> Result<Arc<FunctionName>> {
        shared(&self.frame_names, (name_off, start), || {
            let name = self.name_at(name_off)?;
            Ok(Arc::new(FunctionName {
                raw: name.to_string(),
                demangled: name.to_string(),
                short: None,
                decl_file: None,
                decl_line: None,
                start,
            }))
        })
    }

    /// `file` (a name inside the table's bytes) as a shared string.
    fn shared_file(&self, file: Option<&str>) -> Option<Arc<str>> {
        let file = file?;
        shared(&self.file_names, file.as_ptr() as usize, || {
            Ok(Arc::from(file))
        })
        .ok()
    }

    /// Name offset and parent PC (from the function's entry) of inline-tree entry `ix` of the
    /// tree at virtual address `tree`.
    fn inlined_call(&self, tree: u64, ix: usize) -> Result<(u32, u32)> {
        // runtime.inlinedCall: 1.20+ {funcID u8, _ [3]u8, nameOff, parentPc, startLine};
        // 1.16-1.19 {parent i16, funcID u8, _ u8, file, line, func_, parentPc}.
        let (size, name, parent) = match self.header.version {
            GoTableVersion::Go1_20 => (16u64, 4, 8),
            _ => (20u64, 12, 16),
        };
        let at = (ix as u64)
            .checked_mul(size)
            .and_then(|off| tree.checked_add(off));
        let bytes = at.and_then(|at| locate::bytes_at(&self.elf, at, size as usize));
        let Some(bytes) = bytes else {
            return Err(self.malformed(format!(
                "inline tree entry {ix} at {tree:#x} is outside the file"
            )));
        };
        let be = self.header.big_endian;
        let read = |off| uint_at(bytes, off, 4, be).map(|v| v as u32);
        match (read(name), read(parent)) {
            (Some(name), Some(parent)) => Ok((name, parent)),
            _ => Err(self.malformed(format!("inline tree entry {ix} is truncated"))),
        }
    }

    /// The text start with a PIE's dynamic relocation applied: the linker leaves the header's
    /// word to an `R_*_RELATIVE` relocation there, and the file may hold 0.
    fn relocated_text_start(&self) -> u64 {
        if self.header.version < GoTableVersion::Go1_18 {
            return 0;
        }
        let at = self
            .addr
            .0
            .wrapping_add(8 + 2 * u64::from(self.header.ptr_size));
        locate::relocated(self, at).unwrap_or(self.header.text_start)
    }
}

/// A frame from the Go table in the shape of a DWARF frame.
fn go_frame(
    function: Arc<FunctionName>,
    file: Option<Arc<str>>,
    line: Option<u32>,
    inlined: bool,
) -> InlineFrame {
    InlineFrame {
        function: Some(function),
        file,
        line,
        column: None,
        discriminator: None,
        inlined,
    }
}

/// The value `map` keeps for `key`, made by `make` (and kept) the first time. A poisoned lock
/// (a panic elsewhere while it was held) only loses the sharing.
fn shared<K: Eq + std::hash::Hash, V: Clone>(
    map: &Mutex<HashMap<K, V>>,
    key: K,
    make: impl FnOnce() -> Result<V>,
) -> Result<V> {
    if let Some(found) = map.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(found);
    }
    let made = make()?;
    if let Ok(mut kept) = map.lock() {
        kept.insert(key, made.clone());
    }
    Ok(made)
}
#[cfg(test)]
mod tests;
