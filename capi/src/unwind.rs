//! Stacks from C: [`stacksym_unwind_process`] (a stopped thread of a live process, its stack
//! read from the process) and [`stacksym_unwind_sample`] (registers and a copy of the user
//! stack, as `perf_event_open` with `PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER` or an
//! eBPF profiler captures them), each unwound with the symbolizer's cached files of the
//! process and symbolized in the same call: one [`stacksym_stack`], one block.
//!
//! Registers are this machine's architecture's (x86_64 or aarch64): the C API unwinds the
//! processes of the host it runs on. Each call builds the process's unwind modules from the
//! symbolizer's caches (maps, opened files); nothing is kept between calls but those caches.

use std::ffi::c_char;

use stacksym::process::Process;
use stacksym::unwind::{Frame, FrameKind, Recovery, Registers, Stack, StackCopy, StopReason};

use stacksym::Symbols;

use crate::block::{free_block, Bases, Block, Pool, Str};
use crate::error::{guard, stacksym_err, CError};
use crate::symbols::{flatten_syms, stacksym_frame, stacksym_sym, FlatSym, FlatSyms};
use crate::{handle, name_of, out_slot, slice, stacksym_symbolizer};

/// The registers of the architecture this library was built for.
#[cfg(target_arch = "aarch64")]
pub(crate) type HostRegs = stacksym::unwind::RegsAarch64;
/// The registers of the architecture this library was built for.
#[cfg(not(target_arch = "aarch64"))]
pub(crate) type HostRegs = stacksym::unwind::RegsX86_64;

/// How a stacksym_regs' values are laid out: `STACKSYM_REGS_*`.
pub type stacksym_regs_layout = u32;
/// perf's layout (`PERF_SAMPLE_REGS_USER`): one value per bit set in `perf_mask`, in
/// increasing bit order (`enum perf_event_x86_regs`, `enum perf_event_arm64_regs`); see
/// stacksym_perf_sample_regs_mask() for the mask to ask perf for.
pub const STACKSYM_REGS_PERF: stacksym_regs_layout = 0;
/// The kernel's `struct user_regs_struct` (x86_64: 27 words) or `struct user_pt_regs`
/// (aarch64: 34 words), as `PTRACE_GETREGS` / `PTRACE_GETREGSET NT_PRSTATUS` fill it.
pub const STACKSYM_REGS_USER: stacksym_regs_layout = 1;
/// The few registers a frame-pointer walker or an eBPF program has: `values[0]` the
/// instruction pointer, `values[1]` the stack pointer, then optionally `values[2]` the frame
/// pointer (`rbp`, `x29`) and, on aarch64, `values[3]` the link register (`x30`).
pub const STACKSYM_REGS_IP_SP_FP: stacksym_regs_layout = 2;

/// The registers a stack is unwound from (this machine's architecture).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_regs {
    /// How `values` are laid out.
    pub layout: stacksym_regs_layout,
    /// For `STACKSYM_REGS_PERF`: the sample's register mask (`sample_regs_user`); else
    /// ignored.
    pub perf_mask: u64,
    /// The register values.
    pub values: *const u64,
    /// The number of `values`.
    pub len: usize,
}

/// What a frame's address is, which decides where it is looked up: `STACKSYM_FRAME_*`.
pub type stacksym_frame_kind = u32;
/// An exact instruction pointer (the first frame, or where a signal interrupted the code):
/// looked up at the address itself.
pub const STACKSYM_FRAME_IP: stacksym_frame_kind = 0;
/// A return address: looked up at `addr - 1`, inside the call (as perf and gdb do).
pub const STACKSYM_FRAME_RETURN_ADDRESS: stacksym_frame_kind = 1;
/// The signal trampoline a signal handler returns to (`__restore_rt`,
/// `__kernel_rt_sigreturn`): looked up at the address itself.
pub const STACKSYM_FRAME_SIGNAL_TRAMPOLINE: stacksym_frame_kind = 2;

/// How a frame's address was found: `STACKSYM_RECOVERED_*`.
pub type stacksym_recovery = u32;
/// The instruction pointer of the registers given (the first frame).
pub const STACKSYM_RECOVERED_REGISTERS: stacksym_recovery = 0;
/// The CFI (`.eh_frame`, `.debug_frame`) of the callee's code.
pub const STACKSYM_RECOVERED_CFI: stacksym_recovery = 1;
/// The callee's frame-pointer chain.
pub const STACKSYM_RECOVERED_FRAME_POINTER: stacksym_recovery = 2;
/// The link register (aarch64, a leaf that had not saved it).
pub const STACKSYM_RECOVERED_LINK_REGISTER: stacksym_recovery = 3;
/// The registers the kernel saved when it delivered a signal.
pub const STACKSYM_RECOVERED_SIGNAL_CONTEXT: stacksym_recovery = 4;
/// A Go function's stack-pointer deltas (`.gopclntab`'s pcsp table; Go code has no CFI).
pub const STACKSYM_RECOVERED_GO_TABLE: stacksym_recovery = 5;
/// Across one of cgo's stack switches (a Go function called from C to its C caller, C
/// called from Go to its Go caller), from what the Go runtime saved where it switched.
pub const STACKSYM_RECOVERED_GO_STACK_SWITCH: stacksym_recovery = 6;

/// Why the walk stopped after the last frame: `STACKSYM_STOP_*`.
pub type stacksym_stop = u32;
/// The outermost frame (`_start`, a thread's start; the return address is undefined or 0).
pub const STACKSYM_STOP_ROOT: stacksym_stop = 0;
/// Memory the next step needed could not be read (`stop_addr`): outside the stack copy of
/// a sample, or unmapped.
pub const STACKSYM_STOP_MEMORY_UNREADABLE: stacksym_stop = 1;
/// No unwind information at `stop_addr`, and no frame pointer to follow.
pub const STACKSYM_STOP_NO_UNWIND_INFO: stacksym_stop = 2;
/// The frame-pointer chain could not be followed.
pub const STACKSYM_STOP_NO_FRAME_POINTER: stacksym_stop = 3;
/// The unwind information at `stop_addr` could not be used (`stop_detail` says why).
pub const STACKSYM_STOP_INVALID_UNWIND_INFO: stacksym_stop = 4;
/// A step made no progress (a loop).
pub const STACKSYM_STOP_NO_PROGRESS: stacksym_stop = 5;
/// The most frames an unwind returns (256) were found.
pub const STACKSYM_STOP_DEPTH_LIMIT: stacksym_stop = 6;

/// One frame of an unwound stack, with its symbol.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_stack_frame {
    /// The address as unwound: an instruction pointer or a return address (`kind`).
    pub addr: u64,
    /// Where it was looked up (`addr - 1` for a return address, else `addr`); also
    /// `sym.input`.
    pub lookup_addr: u64,
    /// What `addr` is.
    pub kind: stacksym_frame_kind,
    /// How `addr` was found.
    pub recovered: stacksym_recovery,
    /// The answer for `lookup_addr`, as `stacksym_symbolize_process` gives it.
    pub sym: stacksym_sym,
}

/// An unwound, symbolized stack; one block, freed by stacksym_stack_free().
#[repr(C)]
#[derive(Debug)]
pub struct stacksym_stack {
    /// The number of `frames`.
    pub len: usize,
    /// The frames, innermost first.
    pub frames: *const stacksym_stack_frame,
    /// Why the walk stopped after the last frame.
    pub stop: stacksym_stop,
    /// The address `stop` is about (`STACKSYM_STOP_MEMORY_UNREADABLE`,
    /// `STACKSYM_STOP_NO_UNWIND_INFO`, `STACKSYM_STOP_INVALID_UNWIND_INFO`); else 0.
    pub stop_addr: u64,
    /// For `STACKSYM_STOP_INVALID_UNWIND_INFO`, what was wrong; else NULL.
    pub stop_detail: *const c_char,
    /// As stacksym_syms' `debug_error`.
    pub debug_error: *const c_char,
}

/// The mask of the user registers to ask perf for (`sample_regs_user`) so that
/// stacksym_unwind_sample() has every register it can use, on this machine's architecture
/// (x86_64: `0xff0fff`; aarch64: `(1 << 33) - 1`).
#[no_mangle]
pub extern "C" fn stacksym_perf_sample_regs_mask() -> u64 {
    HostRegs::PERF_SAMPLE_MASK
}

/// The registers `regs` describes.
///
/// # Safety
/// `regs` is NULL or valid for reads, its `values` NULL or `len` values.
pub(crate) unsafe fn host_regs(regs: *const stacksym_regs) -> Result<HostRegs, CError> {
    // SAFETY: by the contract, NULL (refused) or valid for reads.
    let regs = unsafe { regs.as_ref() }.ok_or_else(|| CError::invalid("regs is NULL"))?;
    // SAFETY: by the contract, `len` values at `values`.
    let values = unsafe { slice(regs.values, regs.len, "regs.values") }?;
    match regs.layout {
        STACKSYM_REGS_PERF => Ok(HostRegs::from_perf(regs.perf_mask, values)),
        STACKSYM_REGS_USER => user_regs(values),
        STACKSYM_REGS_IP_SP_FP => ip_sp_fp(values),
        other => Err(CError::invalid(format!(
            "register layout {other} is none of STACKSYM_REGS_PERF, STACKSYM_REGS_USER, \
             STACKSYM_REGS_IP_SP_FP"
        ))),
    }
}

#[cfg(not(target_arch = "aarch64"))]
fn user_regs(values: &[u64]) -> Result<HostRegs, CError> {
    let words: &[u64; 27] = values.try_into().map_err(|_| {
        CError::invalid(format!(
            "STACKSYM_REGS_USER on x86_64 is struct user_regs_struct: 27 values, not {}",
            values.len()
        ))
    })?;
    Ok(HostRegs::from_user_regs(words))
}

#[cfg(target_arch = "aarch64")]
fn user_regs(values: &[u64]) -> Result<HostRegs, CError> {
    let words: &[u64; 34] = values.try_into().map_err(|_| {
        CError::invalid(format!(
            "STACKSYM_REGS_USER on aarch64 is struct user_pt_regs: 34 values, not {}",
            values.len()
        ))
    })?;
    Ok(HostRegs::from_user_regs(words))
}

#[cfg(not(target_arch = "aarch64"))]
fn ip_sp_fp(values: &[u64]) -> Result<HostRegs, CError> {
    match *values {
        [ip, sp] => Ok(HostRegs::from_ip_sp(ip, sp)),
        [ip, sp, bp] => Ok(HostRegs::new(ip, sp, bp)),
        _ => Err(CError::invalid(format!(
            "STACKSYM_REGS_IP_SP_FP on x86_64 is ip, sp and optionally bp: 2 or 3 values, not {}",
            values.len()
        ))),
    }
}

#[cfg(target_arch = "aarch64")]
fn ip_sp_fp(values: &[u64]) -> Result<HostRegs, CError> {
    match *values {
        [pc, sp] => Ok(HostRegs::from_pc_sp(pc, sp)),
        [pc, sp, fp] => Ok(HostRegs::from_pc_sp(pc, sp).with(HostRegs::X29, fp)),
        [pc, sp, fp, lr] => Ok(HostRegs::new(pc, sp, fp, lr)),
        _ => Err(CError::invalid(format!(
            "STACKSYM_REGS_IP_SP_FP on aarch64 is pc, sp and optionally x29 and x30: 2 to 4 \
             values, not {}",
            values.len()
        ))),
    }
}

fn frame_kind(kind: FrameKind) -> stacksym_frame_kind {
    match kind {
        FrameKind::InstructionPointer => STACKSYM_FRAME_IP,
        FrameKind::ReturnAddress => STACKSYM_FRAME_RETURN_ADDRESS,
        FrameKind::SignalTrampoline => STACKSYM_FRAME_SIGNAL_TRAMPOLINE,
    }
}

fn recovery(recovered: Recovery) -> stacksym_recovery {
    match recovered {
        Recovery::Registers => STACKSYM_RECOVERED_REGISTERS,
        Recovery::Cfi => STACKSYM_RECOVERED_CFI,
        Recovery::FramePointer => STACKSYM_RECOVERED_FRAME_POINTER,
        Recovery::LinkRegister => STACKSYM_RECOVERED_LINK_REGISTER,
        Recovery::SignalContext => STACKSYM_RECOVERED_SIGNAL_CONTEXT,
        Recovery::GoTable => STACKSYM_RECOVERED_GO_TABLE,
        Recovery::GoStackSwitch => STACKSYM_RECOVERED_GO_STACK_SWITCH,
    }
}

/// The stop reason's code, address and detail.
pub(crate) fn stop_reason(stop: &StopReason) -> (stacksym_stop, u64, Option<String>) {
    match *stop {
        StopReason::Root => (STACKSYM_STOP_ROOT, 0, None),
        StopReason::MemoryUnreadable { addr } => (STACKSYM_STOP_MEMORY_UNREADABLE, addr.0, None),
        StopReason::NoUnwindInfo { addr } => (STACKSYM_STOP_NO_UNWIND_INFO, addr.0, None),
        StopReason::NoFramePointer => (STACKSYM_STOP_NO_FRAME_POINTER, 0, None),
        StopReason::InvalidUnwindInfo { addr, what } => (
            STACKSYM_STOP_INVALID_UNWIND_INFO,
            addr.0,
            Some(format!("{what:?}")),
        ),
        StopReason::NoProgress => (STACKSYM_STOP_NO_PROGRESS, 0, None),
        StopReason::DepthLimit => (STACKSYM_STOP_DEPTH_LIMIT, 0, None),
    }
}

/// The frames of `stack` symbolized (as `stacksym_symbolize_process` answers) and
/// flattened into `pool`: the answers (for their names) and their flat form, one per frame.
pub(crate) fn symbolize_stack(
    handle: &stacksym_symbolizer,
    process: &Process,
    stack: &Stack,
    pool: &mut Pool,
) -> Result<(Symbols, FlatSyms), CError> {
    let symbols = handle.inner.symbolize_frames(process, &stack.frames)?;
    let lookups: Vec<u64> = stack
        .frames
        .iter()
        .map(|frame| frame.lookup_addr().0)
        .collect();
    let flat = flatten_syms(pool, &symbols, &lookups, handle.demangle);
    if flat.syms.len() != stack.frames.len() {
        return Err(CError::internal(
            "the symbolizer answered a different number of frames than it was given",
        ));
    }
    Ok((symbols, flat))
}

/// One frame of an unwound stack with its answer, for C.
pub(crate) fn stack_frame<A>(
    frame: &Frame,
    sym: &FlatSym,
    at: &Bases<A, stacksym_frame>,
) -> stacksym_stack_frame {
    stacksym_stack_frame {
        addr: frame.addr.0,
        lookup_addr: frame.lookup_addr().0,
        kind: frame_kind(frame.kind),
        recovered: recovery(frame.recovered),
        sym: sym.to_c(at),
    }
}

/// `stack` of `process`, symbolized, as one block.
fn stack_block(
    handle: &stacksym_symbolizer,
    process: &Process,
    stack: &Stack,
) -> Result<*mut stacksym_stack, CError> {
    let mut pool = Pool::default();
    let (_, flat) = symbolize_stack(handle, process, stack, &mut pool)?;
    let (stop, stop_addr, detail) = stop_reason(&stack.stop);
    let stop_detail: Str = pool.opt_str(detail);
    let mut block = Block::<stacksym_stack, stacksym_stack_frame, stacksym_frame>::new(
        stack.frames.len(),
        flat.frames.len(),
        &pool,
    )?;
    let at = block.bases();
    for frame in &flat.frames {
        block.push_b(frame.to_c(&at))?;
    }
    for (frame, sym) in stack.frames.iter().zip(&flat.syms) {
        block.push_a(stack_frame(frame, sym, &at))?;
    }
    block.finish(stacksym_stack {
        len: stack.frames.len(),
        frames: at.a(0),
        stop,
        stop_addr,
        stop_detail: at.str(stop_detail),
        debug_error: at.str(flat.debug_error),
    })
}

/// Unwinds a stopped thread of the live process `pid` from `regs`, reading its stack
/// through the process's memory (`process_vm_readv`, else `/proc/PID/mem`: ptrace access to
/// the process is needed), and symbolizes each frame where its kind says. The thread must
/// stay stopped during the call (ptrace), or be the calling thread unwinding frames that
/// are still live above the registers given. On success `*out` holds the stack (free it
/// with stacksym_stack_free()); on failure `*out` is NULL: `STACKSYM_ERR_PROCESS_GONE`
/// when the process does not exist (any more). A walk that stops early is not a failure:
/// `stop` says why.
///
/// Pointers: `symbolizer` is a live handle; `regs` points to a valid stacksym_regs whose
/// `values` holds `len` values; `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_unwind_process(
    symbolizer: *const stacksym_symbolizer,
    pid: u32,
    regs: *const stacksym_regs,
    out: *mut *mut stacksym_stack,
) -> stacksym_err {
    guard(|| {
        // SAFETY: by the contract, NULL (refused) or writable.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: by the contract, NULL (refused) or a live handle.
        let handle = unsafe { handle(symbolizer) }?;
        // SAFETY: by the contract, NULL (refused) or valid, with `len` values.
        let regs = unsafe { host_regs(regs) }?;
        let process = Process::new(pid);
        let mut unwinder = handle.inner.process_unwinder::<HostRegs>(&process)?;
        let stack = unwinder.unwind(&regs);
        *out = stack_block(handle, &process, &stack)?;
        Ok(())
    })
}

/// Unwinds a sample of the live process `pid`: `regs` and the copy of its user stack from
/// the stack pointer up (`stack_len` bytes at `stack`, as `PERF_SAMPLE_STACK_USER` records
/// it, its `dyn_size` bytes), with the process's current mappings; reads no memory of the
/// process. Symbolizes and returns as stacksym_unwind_process(). The walk stops
/// (`STACKSYM_STOP_MEMORY_UNREADABLE`) where it needs memory beyond the copy.
///
/// Pointers: `symbolizer` is a live handle; `regs` points to a valid stacksym_regs whose
/// `values` holds `len` values (the stack pointer among them); `stack` points to
/// `stack_len` bytes (or is NULL with `stack_len` 0); `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_unwind_sample(
    symbolizer: *const stacksym_symbolizer,
    pid: u32,
    regs: *const stacksym_regs,
    stack: *const u8,
    stack_len: usize,
    out: *mut *mut stacksym_stack,
) -> stacksym_err {
    guard(|| {
        // SAFETY: by the contract, NULL (refused) or writable.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: by the contract, NULL (refused) or a live handle.
        let handle = unsafe { handle(symbolizer) }?;
        // SAFETY: by the contract, NULL (refused) or valid, with `len` values.
        let regs = unsafe { host_regs(regs) }?;
        // SAFETY: by the contract, `stack_len` bytes at `stack`.
        let bytes = unsafe { slice(stack, stack_len, "stack") }?;
        let sp = regs
            .sp()
            .ok_or_else(|| CError::invalid("the registers hold no stack pointer"))?;
        let process = Process::new(pid);
        let mut unwinder = handle.inner.process_unwinder::<HostRegs>(&process)?;
        let stack = unwinder.unwind_sample(&regs, &StackCopy::new(stacksym::AbsAddr(sp), bytes));
        *out = stack_block(handle, &process, &stack)?;
        Ok(())
    })
}

/// Frees the result of a `stacksym_unwind_*` call (NULL is ignored).
///
/// Pointers: `stack` is NULL or a result of a `stacksym_unwind_*` call, not freed before.
#[no_mangle]
pub unsafe extern "C" fn stacksym_stack_free(stack: *mut stacksym_stack) {
    // SAFETY: by the contract, NULL or a block `Block::finish` handed out, freed once.
    unsafe { free_block(stack) }
}

/// The name of a register layout ("STACKSYM_REGS_PERF"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_regs_layout_name(layout: stacksym_regs_layout) -> *const c_char {
    name_of(
        layout,
        &[
            (STACKSYM_REGS_PERF, c"STACKSYM_REGS_PERF"),
            (STACKSYM_REGS_USER, c"STACKSYM_REGS_USER"),
            (STACKSYM_REGS_IP_SP_FP, c"STACKSYM_REGS_IP_SP_FP"),
        ],
    )
}

/// The name of a frame kind ("STACKSYM_FRAME_IP"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_frame_kind_name(kind: stacksym_frame_kind) -> *const c_char {
    name_of(
        kind,
        &[
            (STACKSYM_FRAME_IP, c"STACKSYM_FRAME_IP"),
            (
                STACKSYM_FRAME_RETURN_ADDRESS,
                c"STACKSYM_FRAME_RETURN_ADDRESS",
            ),
            (
                STACKSYM_FRAME_SIGNAL_TRAMPOLINE,
                c"STACKSYM_FRAME_SIGNAL_TRAMPOLINE",
            ),
        ],
    )
}

/// The name of a recovery ("STACKSYM_RECOVERED_REGISTERS"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_recovery_name(recovered: stacksym_recovery) -> *const c_char {
    name_of(
        recovered,
        &[
            (
                STACKSYM_RECOVERED_REGISTERS,
                c"STACKSYM_RECOVERED_REGISTERS",
            ),
            (STACKSYM_RECOVERED_CFI, c"STACKSYM_RECOVERED_CFI"),
            (
                STACKSYM_RECOVERED_FRAME_POINTER,
                c"STACKSYM_RECOVERED_FRAME_POINTER",
            ),
            (
                STACKSYM_RECOVERED_LINK_REGISTER,
                c"STACKSYM_RECOVERED_LINK_REGISTER",
            ),
            (
                STACKSYM_RECOVERED_SIGNAL_CONTEXT,
                c"STACKSYM_RECOVERED_SIGNAL_CONTEXT",
            ),
            (STACKSYM_RECOVERED_GO_TABLE, c"STACKSYM_RECOVERED_GO_TABLE"),
            (
                STACKSYM_RECOVERED_GO_STACK_SWITCH,
                c"STACKSYM_RECOVERED_GO_STACK_SWITCH",
            ),
        ],
    )
}

/// The name of a stop reason ("STACKSYM_STOP_ROOT"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_stop_name(stop: stacksym_stop) -> *const c_char {
    name_of(
        stop,
        &[
            (STACKSYM_STOP_ROOT, c"STACKSYM_STOP_ROOT"),
            (
                STACKSYM_STOP_MEMORY_UNREADABLE,
                c"STACKSYM_STOP_MEMORY_UNREADABLE",
            ),
            (
                STACKSYM_STOP_NO_UNWIND_INFO,
                c"STACKSYM_STOP_NO_UNWIND_INFO",
            ),
            (
                STACKSYM_STOP_NO_FRAME_POINTER,
                c"STACKSYM_STOP_NO_FRAME_POINTER",
            ),
            (
                STACKSYM_STOP_INVALID_UNWIND_INFO,
                c"STACKSYM_STOP_INVALID_UNWIND_INFO",
            ),
            (STACKSYM_STOP_NO_PROGRESS, c"STACKSYM_STOP_NO_PROGRESS"),
            (STACKSYM_STOP_DEPTH_LIMIT, c"STACKSYM_STOP_DEPTH_LIMIT"),
        ],
    )
}
