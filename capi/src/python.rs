//! Python frames from C: [`stacksym_python_unwind_process`], a stopped thread of a live
//! CPython process (3.6-3.13) unwound as `stacksym_unwind_process` unwinds it, symbolized,
//! and merged with the thread's Python frames (function, file, line) as `py-spy dump
//! --native` merges them: each frame of the evaluation loop replaced by the Python frames
//! it runs. Each frame says its kind ([`stacksym_mixed_kind`]). One block, freed by
//! [`stacksym_python_stack_free`].

use std::ffi::c_char;

use stacksym::process::Process;
use stacksym::python::{merge_native, MixedFrame, PythonFrame};
use stacksym::unwind::Frame;

use crate::block::{free_block, Bases, Block, Pool, Str};
use crate::error::{guard, stacksym_err, CError};
use crate::symbols::{stacksym_frame, FlatSym};
use crate::unwind::{
    host_regs, stack_frame, stacksym_regs, stacksym_stack_frame, stacksym_stop, stop_reason,
    symbolize_stack, HostRegs,
};
use crate::{handle, name_of, out_slot, stacksym_symbolizer};

/// What a frame of a merged stack is: `STACKSYM_MIXED_*`.
pub type stacksym_mixed_kind = u32;
/// A native frame: its `native` member holds it.
pub const STACKSYM_MIXED_NATIVE: stacksym_mixed_kind = 0;
/// A Python frame: its `python` member holds it. It stands where the native frame of the
/// interpreter's evaluation loop (`_PyEval_EvalFrameDefault`) that runs it was.
pub const STACKSYM_MIXED_PYTHON: stacksym_mixed_kind = 1;

/// One Python frame.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_python_frame {
    /// The function's qualified name (`co_qualname`, CPython 3.11+: `Class.method`), else
    /// its name (`co_name`): what `py-spy dump` prints.
    pub function: *const c_char,
    /// The code's file name (`co_filename`), as the interpreter has it.
    pub file: *const c_char,
    /// The line being run; 0 when the code's line table gives none.
    pub line: u32,
    /// Whether this is the outermost Python frame of one call of the evaluation loop (the
    /// frames from the innermost down to it stand for one native frame of the loop).
    pub is_entry: bool,
    /// The code object's address in the process.
    pub code: u64,
}

/// One frame of a merged stack. Only the member its `kind` names is filled; the other is
/// zeroed (NULL pointers, 0, false).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_mixed_frame {
    /// Which member holds the frame.
    pub kind: stacksym_mixed_kind,
    /// For `STACKSYM_MIXED_NATIVE`: the frame, as stacksym_unwind_process() gives it.
    pub native: stacksym_stack_frame,
    /// For `STACKSYM_MIXED_PYTHON`: the frame.
    pub python: stacksym_python_frame,
}

/// A thread's native stack merged with its Python frames; one block, freed by
/// stacksym_python_stack_free().
#[repr(C)]
#[derive(Debug)]
pub struct stacksym_python_stack {
    /// The CPython version found in the process: "3.12.1", or "3.12" where the micro
    /// version could not be read.
    pub python_version: *const c_char,
    /// The thread the stack is of.
    pub tid: u32,
    /// Whether the thread has a Python thread state. A thread without one (a thread the
    /// interpreter does not know) has native frames only.
    pub has_thread_state: bool,
    /// Why the thread's Python frames could not be read (its stack is then native only);
    /// NULL when they were.
    pub python_error: *const c_char,
    /// The number of `frames`.
    pub len: usize,
    /// The frames, innermost first.
    pub frames: *const stacksym_mixed_frame,
    /// Why the native walk stopped after its last frame (as in stacksym_stack).
    pub stop: stacksym_stop,
    /// As in stacksym_stack.
    pub stop_addr: u64,
    /// As in stacksym_stack.
    pub stop_detail: *const c_char,
    /// As stacksym_syms' `debug_error`.
    pub debug_error: *const c_char,
}

/// An all-zero frame member: NULL pointers, zeros, false.
fn zeroed<T: Zeroable>() -> T {
    // SAFETY: `Zeroable` is implemented only for the `repr(C)` structs of this file whose
    // fields are integers, bools and raw pointers (recursively), for which all-zero bytes
    // are a valid value (0, false, NULL).
    unsafe { std::mem::zeroed() }
}

/// Structs for which all-zero bytes are a valid value (see [`zeroed`]).
trait Zeroable {}
impl Zeroable for stacksym_stack_frame {}
impl Zeroable for stacksym_python_frame {}

/// Unwinds the stopped thread `tid` of the live CPython process `pid` from `regs` (the
/// thread's registers, as for stacksym_unwind_process()), symbolizes its frames, reads
/// the process's Python threads (their frames, through the process's memory) and merges
/// the thread's Python frames into its native stack: each native frame of the evaluation
/// loop is replaced by the Python frames it runs, innermost first, as `py-spy dump
/// --native` shows them. Stop the whole process (ptrace every thread, or SIGSTOP) for a
/// consistent answer: the Python frames are read from memory that running threads change.
/// Needs ptrace access to the process.
///
/// On success `*out` holds the stack (free it with stacksym_python_stack_free()); on
/// failure `*out` is NULL: `STACKSYM_ERR_NOT_FOUND` when no file of the process defines
/// CPython's `_PyRuntime` (not a CPython process), `STACKSYM_ERR_UNSUPPORTED` for a
/// CPython version without Python frames here, `STACKSYM_ERR_MALFORMED` when the
/// interpreter's state cannot be read, `STACKSYM_ERR_PROCESS_GONE` when the process does
/// not exist (any more). A thread whose own Python frames cannot be read is no failure:
/// `python_error` says why and the stack is native only.
///
/// Pointers: `symbolizer` is a live handle; `regs` points to a valid stacksym_regs whose
/// `values` holds `len` values; `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_python_unwind_process(
    symbolizer: *const stacksym_symbolizer,
    pid: u32,
    tid: u32,
    regs: *const stacksym_regs,
    out: *mut *mut stacksym_python_stack,
) -> stacksym_err {
    guard(|| {
        // SAFETY: by the contract, NULL (refused) or writable.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: by the contract, NULL (refused) or a live handle.
        let handle = unsafe { handle(symbolizer) }?;
        // SAFETY: by the contract, NULL (refused) or valid, with `len` values.
        let regs = unsafe { host_regs(regs) }?;
        let process = Process::new(pid);
        let stacks = handle.inner.python_stacks(&process)?;
        let thread = stacks
            .threads
            .iter()
            .find(|thread| thread.os_tid == Some(tid));
        let (python, python_error): (&[PythonFrame], _) = match thread.map(|t| &t.frames) {
            Some(Ok(frames)) => (frames, None),
            Some(Err(e)) => (&[], Some(e.to_string())),
            None => (&[], None),
        };
        let mut unwinder = handle.inner.process_unwinder::<HostRegs>(&process)?;
        let stack = unwinder.unwind(&regs);
        let mut pool = Pool::default();
        let (symbols, flat) = symbolize_stack(handle, &process, &stack, &mut pool)?;
        let native: Vec<(usize, Option<&str>)> = (0..stack.frames.len())
            .map(|i| (i, symbols.get(i).map(|sym| sym.name)))
            .collect();
        let merged = merge_native(&native, python);
        // The Python frames' strings (function, file), in the pool before the block is
        // sized.
        let python_strs: Vec<Option<(Str, Str)>> = merged
            .iter()
            .map(|frame| match frame {
                MixedFrame::Python(py) => Some((pool.str(&py.function), pool.str(&py.file))),
                MixedFrame::Native(_) => None,
            })
            .collect();
        let version = pool.str(stacks.version.to_string());
        let python_error = pool.opt_str(python_error);
        let (stop, stop_addr, detail) = stop_reason(&stack.stop);
        let stop_detail = pool.opt_str(detail);
        let mut block = Block::<stacksym_python_stack, stacksym_mixed_frame, stacksym_frame>::new(
            merged.len(),
            flat.frames.len(),
            &pool,
        )?;
        let at = block.bases();
        for frame in &flat.frames {
            block.push_b(frame.to_c(&at))?;
        }
        for (frame, strs) in merged.iter().zip(python_strs) {
            block.push_a(mixed_frame(frame, strs, &stack.frames, &flat.syms, &at)?)?;
        }
        *out = block.finish(stacksym_python_stack {
            python_version: at.str(version),
            tid,
            has_thread_state: thread.is_some(),
            python_error: at.str(python_error),
            len: merged.len(),
            frames: at.a(0),
            stop,
            stop_addr,
            stop_detail: at.str(stop_detail),
            debug_error: at.str(flat.debug_error),
        })?;
        Ok(())
    })
}

/// One merged frame for C: a native frame by its index in `frames` (its answer in
/// `syms`), a Python frame with its strings (function, file) from the pool.
fn mixed_frame(
    frame: &MixedFrame<usize>,
    strs: Option<(Str, Str)>,
    frames: &[Frame],
    syms: &[FlatSym],
    at: &Bases<stacksym_mixed_frame, stacksym_frame>,
) -> Result<stacksym_mixed_frame, CError> {
    Ok(match (frame, strs) {
        (MixedFrame::Native(i), _) => {
            let (Some(native), Some(sym)) = (frames.get(*i), syms.get(*i)) else {
                return Err(CError::internal("a merged frame's native frame is missing"));
            };
            stacksym_mixed_frame {
                kind: STACKSYM_MIXED_NATIVE,
                native: stack_frame(native, sym, at),
                python: zeroed(),
            }
        }
        (MixedFrame::Python(py), Some((function, file))) => stacksym_mixed_frame {
            kind: STACKSYM_MIXED_PYTHON,
            native: zeroed(),
            python: stacksym_python_frame {
                function: at.str(function),
                file: at.str(file),
                line: py.line.unwrap_or(0),
                is_entry: py.is_entry,
                code: py.code.0,
            },
        },
        (MixedFrame::Python(_), None) => {
            return Err(CError::internal("a Python frame's strings are missing"))
        }
    })
}

/// Frees the result of stacksym_python_unwind_process() (NULL is ignored).
///
/// Pointers: `stack` is NULL or a result of stacksym_python_unwind_process(), not freed
/// before.
#[no_mangle]
pub unsafe extern "C" fn stacksym_python_stack_free(stack: *mut stacksym_python_stack) {
    // SAFETY: by the contract, NULL or a block `Block::finish` handed out, freed once.
    unsafe { free_block(stack) }
}

/// The name of a merged frame's kind ("STACKSYM_MIXED_PYTHON"), a static string;
/// "unknown" for a value this library does not know.
#[no_mangle]
pub extern "C" fn stacksym_mixed_kind_name(kind: stacksym_mixed_kind) -> *const c_char {
    name_of(
        kind,
        &[
            (STACKSYM_MIXED_NATIVE, c"STACKSYM_MIXED_NATIVE"),
            (STACKSYM_MIXED_PYTHON, c"STACKSYM_MIXED_PYTHON"),
        ],
    )
}
