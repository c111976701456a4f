//! The walk from `_PyRuntime` to every thread's frames, over memory that may lie: every
//! read is checked, every chain bounded and checked for cycles, every size capped.

use std::collections::{HashMap, HashSet};

use super::lines;
use super::offsets::{self, Layout};
use super::{PythonFrame, PythonRuntime, PythonStacks, PythonThread};
use crate::addr::AbsAddr;
use crate::error::{Error, Result};
use crate::unwind::Memory;

/// At most this many frames are read from one thread (CPython's default recursion limit is
/// 1,000); a deeper chain is an error for that thread.
pub const MAX_FRAMES: usize = 8192;
/// At most this many thread states are read from one interpreter.
pub const MAX_THREADS: usize = 4096;
/// At most this many interpreters are read.
pub const MAX_INTERPRETERS: usize = 256;
/// The longest string (in characters) read: a name or a file name.
const MAX_STRING_CHARS: u64 = 16 * 1024;
/// The largest line table read.
const MAX_LINE_TABLE: u64 = 1 << 20;

/// The `_PyInterpreterFrame.owner` of a frame the C stack owns (3.12+): the shim an entry
/// into the evaluation loop pushes, never shown.
const FRAME_OWNED_BY_CSTACK: u8 = 3;
/// The `owner` of a generator's frame (3.11+), never "incomplete".
const FRAME_OWNED_BY_GENERATOR: u8 = 1;

/// glibc's `struct pthread.tid` (the thread's Linux tid), from `pthread_t` (the struct's
/// address): `offsetof(struct pthread, tid)` in glibc 2.x, after its `tcbhead_t` header on
/// x86_64 and its small header on aarch64. Used before 3.11, whose thread states keep only
/// the `pthread_t`; a tid read there is believed only when it is one of the process's.
#[cfg(target_arch = "aarch64")]
pub(crate) const PTHREAD_TID_OFFSET: u64 = 0xd0;
#[cfg(not(target_arch = "aarch64"))]
pub(crate) const PTHREAD_TID_OFFSET: u64 = 0x2d0;

pub(super) fn read_stacks<M: Memory + ?Sized>(
    runtime: &PythonRuntime,
    memory: &M,
    os_tids: &[u32],
) -> Result<PythonStacks> {
    let table =
        offsets::layout(u32::from(runtime.version.minor)).ok_or_else(|| Error::Unsupported {
            path: runtime.file.clone(),
            what: format!("CPython {}: no offsets table", runtime.version),
        })?;
    let mut reader = Reader {
        memory,
        layout: *table,
        runtime,
        code_cache: HashMap::new(),
    };
    let debug_offsets = reader.apply_debug_offsets()?;
    let mut threads = Vec::new();
    let head = reader.ptr(
        runtime.runtime,
        reader.layout.runtime_interpreters_head,
        "_PyRuntime.interpreters.head",
    )?;
    let mut seen = HashSet::new();
    let mut interp = head;
    while interp != 0 {
        if seen.len() >= MAX_INTERPRETERS || !seen.insert(interp) {
            return Err(reader.error(format!(
                "the interpreter list loops or is longer than {MAX_INTERPRETERS} at {interp:#x}"
            )));
        }
        reader.read_threads(AbsAddr(interp), os_tids, &mut threads)?;
        interp = reader.ptr(
            AbsAddr(interp),
            reader.layout.interp_next,
            "PyInterpreterState.next",
        )?;
    }
    Ok(PythonStacks {
        version: runtime.version,
        runtime: runtime.runtime,
        debug_offsets,
        threads,
    })
}

/// What one code object says, read once per walk.
#[derive(Clone)]
struct Code {
    function: String,
    file: String,
    first_line: i64,
    line_table: Vec<u8>,
    /// 3.11+: `_co_firsttraceable`, in code units.
    first_traceable: u64,
}

struct Reader<'a, M: ?Sized> {
    memory: &'a M,
    layout: Layout,
    runtime: &'a PythonRuntime,
    code_cache: HashMap<u64, Code>,
}

impl<M: Memory + ?Sized> Reader<'_, M> {
    fn error(&self, what: String) -> Error {
        Error::Python {
            path: self.runtime.file.clone(),
            what: format!("CPython {}: {what}", self.runtime.version),
        }
    }

    fn bytes(&self, addr: u64, len: u64, what: &str) -> Result<Vec<u8>> {
        let size = usize::try_from(len).map_err(|_| self.error(format!("{what}: too large")))?;
        let mut buf = vec![0u8; size];
        if addr == 0 || !self.memory.read_bytes(AbsAddr(addr), &mut buf) {
            return Err(self.error(format!("{what}: {len} bytes at {addr:#x} unreadable")));
        }
        Ok(buf)
    }

    fn at<const N: usize>(&self, base: AbsAddr, offset: u64, what: &str) -> Result<[u8; N]> {
        let addr = base
            .0
            .checked_add(offset)
            .ok_or_else(|| self.error(format!("{what}: {:#x} + {offset:#x} overflows", base.0)))?;
        let mut buf = [0u8; N];
        if base.0 == 0 || !self.memory.read_bytes(AbsAddr(addr), &mut buf) {
            return Err(self.error(format!("{what} at {addr:#x} unreadable")));
        }
        Ok(buf)
    }

    fn ptr(&self, base: AbsAddr, offset: u64, what: &str) -> Result<u64> {
        self.at::<8>(base, offset, what).map(u64::from_le_bytes)
    }

    fn i64_at(&self, base: AbsAddr, offset: u64, what: &str) -> Result<i64> {
        self.at::<8>(base, offset, what).map(i64::from_le_bytes)
    }

    fn i32_at(&self, base: AbsAddr, offset: u64, what: &str) -> Result<i32> {
        self.at::<4>(base, offset, what).map(i32::from_le_bytes)
    }

    fn u8_at(&self, base: AbsAddr, offset: u64, what: &str) -> Result<u8> {
        self.at::<1>(base, offset, what).map(|[b]| b)
    }

    /// 3.13+: the offsets from the process's `_Py_DebugOffsets` (the first field of
    /// `_PyRuntime`), after its cookie and version are checked.
    fn apply_debug_offsets(&mut self) -> Result<bool> {
        let Some(debug) = self.layout.debug_offsets else {
            return Ok(false);
        };
        let base = self.runtime.runtime;
        let cookie = self.at::<8>(base, 0, "_Py_DebugOffsets.cookie")?;
        if &cookie != b"xdebugpy" {
            return Err(self.error(format!(
                "_PyRuntime at {:#x} does not start with the _Py_DebugOffsets cookie \
                 \"xdebugpy\"",
                base.0
            )));
        }
        let version = self.ptr(base, debug.version, "_Py_DebugOffsets.version")?;
        if (version >> 16) & 0xff != u64::from(self.runtime.version.minor) || version >> 24 != 3 {
            return Err(self.error(format!(
                "_Py_DebugOffsets.version is {version:#x}, not that of this version"
            )));
        }
        let read = |at: u64, name: &str| self.ptr(base, at, name);
        let values = [
            read(debug.runtime_interpreters_head, "interpreters_head")?,
            read(debug.interp_next, "interpreter_state.next")?,
            read(debug.interp_threads_head, "threads_head")?,
            read(debug.tstate_next, "thread_state.next")?,
            read(debug.tstate_current_frame, "current_frame")?,
            read(debug.tstate_thread_id, "thread_id")?,
            read(debug.tstate_native_thread_id, "native_thread_id")?,
            read(debug.iframe_previous, "interpreter_frame.previous")?,
            read(debug.iframe_code, "interpreter_frame.executable")?,
            read(debug.iframe_instr, "interpreter_frame.instr_ptr")?,
            read(debug.iframe_owner, "interpreter_frame.owner")?,
            read(debug.code_filename, "code_object.filename")?,
            read(debug.code_name, "code_object.name")?,
            read(debug.code_qualname, "code_object.qualname")?,
            read(debug.code_linetable, "code_object.linetable")?,
            read(debug.code_firstlineno, "code_object.firstlineno")?,
            read(debug.code_code_adaptive, "code_object.co_code_adaptive")?,
        ];
        // A structure's field is within a few KiB of its start (the interpreter state, the
        // largest, is about 100 KiB in 3.13); anything larger is not an offset.
        if let Some(bad) = values.iter().find(|&&v| v > 1 << 20) {
            return Err(self.error(format!("_Py_DebugOffsets holds an offset of {bad:#x}")));
        }
        let [runtime_head, interp_next, threads_head, tstate_next, current_frame, thread_id, native_thread_id, previous, executable, instr_ptr, owner, filename, name, qualname, linetable, firstlineno, code_adaptive] =
            values;
        let table = self.layout;
        let l = &mut self.layout;
        l.runtime_interpreters_head = runtime_head;
        l.interp_next = interp_next;
        l.interp_threads_head = threads_head;
        l.tstate_next = tstate_next;
        l.tstate_current_frame = Some(current_frame);
        l.tstate_thread_id = thread_id;
        l.tstate_native_thread_id = Some(native_thread_id);
        l.iframe_previous = Some(previous);
        l.iframe_code = Some(executable);
        l.iframe_instr = Some(instr_ptr);
        l.iframe_owner = Some(owner);
        l.code_filename = filename;
        l.code_name = name;
        l.code_qualname = Some(qualname);
        l.code_linetable = linetable;
        l.code_firstlineno = firstlineno;
        l.code_code_adaptive = Some(code_adaptive);
        if self.layout != table {
            log::debug!(
                "{}: _Py_DebugOffsets differ from the table of CPython 3.{}; using the process's",
                self.runtime.file.display(),
                table.minor
            );
        }
        Ok(true)
    }

    fn read_threads(
        &mut self,
        interp: AbsAddr,
        os_tids: &[u32],
        threads: &mut Vec<PythonThread>,
    ) -> Result<()> {
        let mut tstate = self.ptr(
            interp,
            self.layout.interp_threads_head,
            "PyInterpreterState.threads.head",
        )?;
        let mut seen = HashSet::new();
        while tstate != 0 {
            if seen.len() >= MAX_THREADS || !seen.insert(tstate) {
                return Err(self.error(format!(
                    "the thread list of the interpreter at {:#x} loops or is longer than \
                     {MAX_THREADS}, at {tstate:#x}",
                    interp.0
                )));
            }
            let at = AbsAddr(tstate);
            let thread_id =
                self.ptr(at, self.layout.tstate_thread_id, "PyThreadState.thread_id")?;
            let os_tid = self.os_tid(at, thread_id, os_tids);
            let frames = self.read_frames(at);
            threads.push(PythonThread {
                os_tid,
                thread_id,
                thread_state: at,
                frames,
            });
            tstate = self.ptr(at, self.layout.tstate_next, "PyThreadState.next")?;
        }
        Ok(())
    }

    fn os_tid(&self, tstate: AbsAddr, thread_id: u64, os_tids: &[u32]) -> Option<u32> {
        let known = |tid: u32| os_tids.is_empty() || os_tids.contains(&tid);
        if let Some(offset) = self.layout.tstate_native_thread_id {
            let tid = self
                .ptr(tstate, offset, "PyThreadState.native_thread_id")
                .ok()?;
            return u32::try_from(tid)
                .ok()
                .filter(|&tid| tid != 0 && known(tid));
        }
        if os_tids.is_empty() {
            return None;
        }
        let tid = self
            .at::<4>(AbsAddr(thread_id), PTHREAD_TID_OFFSET, "struct pthread.tid")
            .ok()
            .map(u32::from_le_bytes)?;
        (tid != 0 && known(tid)).then_some(tid)
    }

    fn read_frames(&mut self, tstate: AbsAddr) -> Result<Vec<PythonFrame>> {
        let l = self.layout;
        if let Some(frame_offset) = l.tstate_frame {
            let first = self.ptr(tstate, frame_offset, "PyThreadState.frame")?;
            return self.read_frame_objects(first);
        }
        let first = match (
            l.tstate_cframe,
            l.cframe_current_frame,
            l.tstate_current_frame,
        ) {
            (_, _, Some(current)) => self.ptr(tstate, current, "PyThreadState.current_frame")?,
            (Some(cframe), Some(current), None) => {
                let cframe = self.ptr(tstate, cframe, "PyThreadState.cframe")?;
                if cframe == 0 {
                    0
                } else {
                    self.ptr(AbsAddr(cframe), current, "_PyCFrame.current_frame")?
                }
            }
            _ => return Err(self.error("no way to the thread's frames".to_string())),
        };
        self.read_interpreter_frames(first)
    }

    /// Before 3.11: `PyFrameObject`s linked by `f_back`, each run by its own native call
    /// of the evaluation loop.
    fn read_frame_objects(&mut self, mut frame: u64) -> Result<Vec<PythonFrame>> {
        let l = self.layout;
        let (Some(back), Some(code_at), Some(lasti_at)) =
            (l.frame_back, l.frame_code, l.frame_lasti)
        else {
            return Err(self.error("no PyFrameObject offsets".to_string()));
        };
        let mut frames = Vec::new();
        let mut seen = HashSet::new();
        while frame != 0 {
            self.check_chain(&mut seen, frame)?;
            let at = AbsAddr(frame);
            let code_addr = self.ptr(at, code_at, "PyFrameObject.f_code")?;
            let lasti = self.i32_at(at, lasti_at, "PyFrameObject.f_lasti")?;
            let code = self.code(code_addr)?;
            let line = if lasti < 0 {
                Some(code.first_line)
            } else if l.minor >= 10 {
                // 3.10's f_lasti counts code units of 2 bytes.
                lines::linetable_310_line(&code.line_table, code.first_line, lasti as u64 * 2)
            } else {
                Some(lines::lnotab_line(
                    &code.line_table,
                    code.first_line,
                    lasti as u64,
                ))
            };
            frames.push(frame_of(&code, code_addr, line, true));
            frame = self.ptr(at, back, "PyFrameObject.f_back")?;
        }
        Ok(frames)
    }

    /// 3.11+: `_PyInterpreterFrame`s linked by `previous`; frames the C stack owns (the
    /// shims of 3.12+) and incomplete frames are skipped as CPython's traceback skips them.
    fn read_interpreter_frames(&mut self, mut frame: u64) -> Result<Vec<PythonFrame>> {
        let l = self.layout;
        let (Some(previous_at), Some(code_at), Some(instr_at), Some(owner_at), Some(code_start)) = (
            l.iframe_previous,
            l.iframe_code,
            l.iframe_instr,
            l.iframe_owner,
            l.code_code_adaptive,
        ) else {
            return Err(self.error("no _PyInterpreterFrame offsets".to_string()));
        };
        let mut frames: Vec<PythonFrame> = Vec::new();
        let mut seen = HashSet::new();
        while frame != 0 {
            self.check_chain(&mut seen, frame)?;
            let at = AbsAddr(frame);
            let owner = self.u8_at(at, owner_at, "_PyInterpreterFrame.owner")?;
            let previous = self.ptr(at, previous_at, "_PyInterpreterFrame.previous")?;
            if owner == FRAME_OWNED_BY_CSTACK && l.minor >= 12 {
                // The shim under an entry frame: the frame above it is where a native call
                // of the evaluation loop started.
                if let Some(last) = frames.last_mut() {
                    last.is_entry = true;
                }
                frame = previous;
                continue;
            }
            let code_addr = self.ptr(at, code_at, "_PyInterpreterFrame.f_code")?;
            let instr = self.ptr(at, instr_at, "_PyInterpreterFrame.instr")?;
            let code = self.code(code_addr)?;
            let start = code_addr.wrapping_add(code_start);
            if owner != FRAME_OWNED_BY_GENERATOR
                && instr < start.wrapping_add(code.first_traceable.wrapping_mul(2))
            {
                // `_PyFrame_IsIncomplete`: the frame has not started its first traceable
                // instruction; CPython does not show it.
                frame = previous;
                continue;
            }
            let line = match instr.checked_sub(start) {
                Some(offset) => {
                    lines::location_table_line(&code.line_table, code.first_line, offset)
                }
                None => Some(code.first_line),
            };
            let is_entry = match l.iframe_is_entry {
                Some(entry_at) => self.u8_at(at, entry_at, "_PyInterpreterFrame.is_entry")? != 0,
                None => false,
            };
            frames.push(frame_of(&code, code_addr, line, is_entry));
            frame = previous;
        }
        Ok(frames)
    }

    fn check_chain(&self, seen: &mut HashSet<u64>, frame: u64) -> Result<()> {
        if seen.len() >= MAX_FRAMES {
            return Err(self.error(format!("more than {MAX_FRAMES} frames")));
        }
        if !seen.insert(frame) {
            return Err(self.error(format!("the frame chain loops at {frame:#x}")));
        }
        Ok(())
    }

    /// A code object's names and line table, checked to be a code object when
    /// `PyCode_Type` is known.
    fn code(&mut self, addr: u64) -> Result<Code> {
        if let Some(code) = self.code_cache.get(&addr) {
            return Ok(code.clone());
        }
        let at = AbsAddr(addr);
        self.check_type(at, self.runtime.types.code.map(|t| t.0), "code object")?;
        let l = self.layout;
        let name_at = l.code_qualname.unwrap_or(l.code_name);
        let function = self.string(self.ptr(at, name_at, "co_qualname")?, "co_qualname")?;
        let file = self.string(self.ptr(at, l.code_filename, "co_filename")?, "co_filename")?;
        let first_line = i64::from(self.i32_at(at, l.code_firstlineno, "co_firstlineno")?);
        let table = self.ptr(at, l.code_linetable, "co_linetable")?;
        let line_table = self.bytes_object(table, "co_linetable")?;
        let first_traceable = match l.code_firsttraceable {
            Some(offset) => {
                u64::try_from(self.i32_at(at, offset, "_co_firsttraceable")?).unwrap_or(0)
            }
            None => 0,
        };
        let code = Code {
            function,
            file,
            first_line,
            line_table,
            first_traceable,
        };
        self.code_cache.insert(addr, code.clone());
        Ok(code)
    }

    fn check_type(&self, at: AbsAddr, expected: Option<u64>, what: &str) -> Result<()> {
        let Some(expected) = expected else {
            return Ok(());
        };
        let found = self.ptr(at, self.layout.object_type, "ob_type")?;
        if found != expected {
            return Err(self.error(format!(
                "the {what} at {:#x} has type {found:#x}, not {expected:#x} (freed, or not one)",
                at.0
            )));
        }
        Ok(())
    }

    /// A `str` (compact: the only kind code objects hold) as UTF-8.
    fn string(&self, addr: u64, what: &str) -> Result<String> {
        let at = AbsAddr(addr);
        self.check_type(at, self.runtime.types.unicode.map(|t| t.0), what)?;
        let l = self.layout;
        let length = self.i64_at(at, l.unicode_length, what)?;
        let state = u32::from_le_bytes(self.at::<4>(at, l.unicode_state, what)?);
        let chars = u64::try_from(length)
            .ok()
            .filter(|&n| n <= MAX_STRING_CHARS)
            .ok_or_else(|| {
                self.error(format!(
                    "{what} at {addr:#x}: length {length} (at most {MAX_STRING_CHARS})"
                ))
            })?;
        // PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1 (3.6-3.13).
        let kind = (state >> 2) & 7;
        let compact = (state >> 5) & 1 == 1;
        let ascii = (state >> 6) & 1 == 1;
        if !compact || !matches!(kind, 1 | 2 | 4) {
            return Err(self.error(format!(
                "{what} at {addr:#x}: not a compact string (state {state:#x})"
            )));
        }
        let data = addr.wrapping_add(if ascii {
            l.unicode_ascii_size
        } else {
            l.unicode_compact_size
        });
        let bytes = self.bytes(data, chars * u64::from(kind), what)?;
        Ok(match kind {
            1 => bytes.iter().map(|&b| char::from(b)).collect(),
            2 => char::decode_utf16(
                bytes
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]])),
            )
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect(),
            _ => bytes
                .chunks_exact(4)
                .map(|c| {
                    char::from_u32(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .unwrap_or(char::REPLACEMENT_CHARACTER)
                })
                .collect(),
        })
    }

    /// A `bytes` object's contents.
    fn bytes_object(&self, addr: u64, what: &str) -> Result<Vec<u8>> {
        let at = AbsAddr(addr);
        self.check_type(at, self.runtime.types.bytes.map(|t| t.0), what)?;
        let size = self.i64_at(at, self.layout.var_size, what)?;
        let size = u64::try_from(size)
            .ok()
            .filter(|&n| n <= MAX_LINE_TABLE)
            .ok_or_else(|| {
                self.error(format!(
                    "{what} at {addr:#x}: size {size} (at most {MAX_LINE_TABLE})"
                ))
            })?;
        if size == 0 {
            return Ok(Vec::new());
        }
        self.bytes(addr.wrapping_add(self.layout.bytes_sval), size, what)
    }
}

fn frame_of(code: &Code, code_addr: u64, line: Option<i64>, is_entry: bool) -> PythonFrame {
    PythonFrame {
        function: code.function.clone(),
        file: code.file.clone(),
        line: line.and_then(|l| u32::try_from(l).ok()),
        is_entry,
        code: AbsAddr(code_addr),
    }
}
