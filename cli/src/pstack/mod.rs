//! The stacks of every thread of a live process, like `eu-stack -p PID` or gdb's
//! `thread apply all bt`: each thread is stopped with ptrace (`PTRACE_SEIZE` +
//! `PTRACE_INTERRUPT`, so the process receives no signal), its registers read, its stack
//! unwound through the process's memory (CFI, frame pointers where a module has none, signal
//! frames), and every thread let go again before anything is symbolized, so the process is
//! stopped for as short a time as possible. Frames are then named with source lines and
//! inlined calls by one `Symbolizer::symbolize` call.
//!
//!   stacksym pstack [--python | --python-only] PID
//!   stacksym pstack --core CORE [--exe BIN] [--sysroot DIR] [--json] [--python]
//!
//! With `--python` (CPython 3.6-3.13), each thread's Python frames are read while it is
//! stopped (`stacksym::python`) and shown in place of the evaluation loop's native frames
//! that run them (`merge_native`, as `py-spy dump --native` places them); `--python-only`
//! shows the Python frames alone (as `py-spy dump`), and unwinds and symbolizes no native
//! stack. In `--json` every frame has `"kind": "native"` or
//! `"python"` (a Python frame's `function` is its qualified name, `file` its `co_filename`).
//!
//! With `--core`, the threads of a core file (the kernel's, `systemd-coredump`'s `.zst`,
//! `gcore`'s) instead: registers and memory from the core, the files behind its mappings
//! matched by build-id (`core.rs`); the crashing thread first, after the signal that ended
//! the process ("terminated by signal SIGSEGV, fault address 0x…"). `--json` prints the
//! threads and frames as one JSON object, for machines.
//!
//! The threads are detached on every path: a normal end, an error, a panic, and SIGINT,
//! SIGTERM, SIGHUP or SIGQUIT (caught, the threads detached, then the signal raised again).
//! A SIGKILL of pstack detaches them too (the kernel does, when a tracer exits).
//!
//! Output, per thread (caller frames at their return address; an inlined call is a frame of
//! its own at the same address, marked `(inlined)`; a signal handler's return to the
//! kernel's signal trampoline is `<signal handler called>`, as gdb prints it):
//!
//! ```text
//! TID 4242 "worker":
//! #0  0x00007f4c1d2e5a18 in __GI___clock_nanosleep at ../sysdeps/.../clock_nanosleep.c:78 (/usr/lib/x86_64-linux-gnu/libc.so.6)
//! #1  0x000055d1c0a1b2c3 in sleeper at ./src/pstack/threads.c:40 (/tmp/threads)
//! ```
//!
//! Reading another process's threads needs ptrace permission: the same user and
//! `kernel.yama.ptrace_scope` 0, or `CAP_SYS_PTRACE` (root).

mod core_dump;
mod ptrace;

use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use stacksym::process::Process;
use stacksym::python::{merge_native, MixedFrame, PythonFrame};
use stacksym::unwind::{FrameKind, ProcessMemory, Stack, StopReason};
use stacksym::{Input, Source, Symbolizer};

#[derive(Parser, Debug)]
#[command(
    name = "pstack",
    bin_name = "stacksym pstack",
    about = "Print the stack of every thread of a running process (like eu-stack -p, or gdb's \
             `thread apply all bt`), unwound and symbolized by stacksym"
)]
pub(crate) struct Args {
    /// The process id.
    #[arg(required_unless_present = "core")]
    pid: Option<u32>,
    /// A core file instead of a process (ELF core; zstd, xz or gzip compressed whole).
    #[arg(long, value_name = "CORE", conflicts_with = "pid")]
    core: Option<std::path::PathBuf>,
    /// With --core: the main executable, when not at the path the core names.
    #[arg(long, value_name = "BIN", requires = "core")]
    exe: Option<std::path::PathBuf>,
    /// With --core: the directory the core's paths are under (a core from another machine
    /// or a container).
    #[arg(long, value_name = "DIR", requires = "core")]
    sysroot: Option<std::path::PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Frame pointers only (what bpftrace and perf --call-graph fp do), no CFI.
    #[arg(long)]
    frame_pointers: bool,
    /// Keep the threads stopped this many milliseconds after unwinding them, before letting
    /// them go (to check that an interrupt or a kill still lets them go).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    hold: u64,
    /// Print why each thread's unwinding stopped, also where it reached the root.
    #[arg(long)]
    stop_reasons: bool,
    /// CPython 3.6-3.13: show each thread's Python frames (function, file, line) in place of
    /// the interpreter's evaluation-loop frames that run them, as `py-spy dump --native`.
    #[arg(long)]
    python: bool,
    /// Like --python, but only the Python frames (as `py-spy dump`); no native stack is
    /// unwound.
    #[arg(long)]
    python_only: bool,
}

impl Args {
    /// Whether Python frames are asked for.
    pub(crate) fn wants_python(&self) -> bool {
        self.python || self.python_only
    }
}

/// The signal caught (0: none), set by `on_signal`.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// The signals that make pstack let the threads go and then die of them.
const FATAL_SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

extern "C" fn on_signal(sig: libc::c_int) {
    // An atomic store is async-signal-safe; everything else happens in the main loop.
    CAUGHT.store(sig, Ordering::SeqCst);
}

/// Catches the fatal signals (without `SA_RESTART`, so that a blocking call returns EINTR).
fn catch_signals() {
    for sig in FATAL_SIGNALS {
        // SAFETY: a zeroed sigaction with the handler set is a valid argument; `on_signal`
        // only stores to an atomic.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// Puts the default actions back, and dies of the signal caught if there was one.
fn default_signals() {
    for sig in FATAL_SIGNALS {
        // SAFETY: SIG_DFL is a valid disposition for these signals.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    let sig = CAUGHT.load(Ordering::SeqCst);
    if sig != 0 {
        // SAFETY: raising a signal whose action is the default: the process ends.
        unsafe { libc::raise(sig) };
    }
}

/// `stacksym pstack ARGS`: `argv` starts with the command's name, as clap expects.
pub fn main(argv: Vec<std::ffi::OsString>) -> ExitCode {
    let args = Args::parse_from(argv);
    catch_signals();
    let result = match &args.core {
        Some(path) => core_dump::run(&args, path),
        None => run(&args),
    };
    // The threads were detached inside `run`; now a caught signal ends pstack.
    default_signals();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("pstack: {message}");
            ExitCode::FAILURE
        }
    }
}

/// One thread's unwound stack.
pub(crate) struct ThreadStack {
    pub(crate) tid: i32,
    pub(crate) name: String,
    pub(crate) stack: Result<Stack, String>,
    /// With --python: the thread's Python frames (innermost first; none for a thread
    /// without a Python thread state), or why they could not be read.
    pub(crate) python: Result<Vec<PythonFrame>, String>,
}

/// Sets each thread's Python frames from `stacks` (read by the library), matched by OS
/// thread id; a failure to read the runtime becomes every thread's error.
pub(crate) fn attach_python(
    threads: &mut [ThreadStack],
    stacks: Result<stacksym::python::PythonStacks, String>,
) {
    for thread in threads {
        thread.python = match &stacks {
            Ok(stacks) => stacks
                .threads
                .iter()
                .find(|py| {
                    py.os_tid
                        .is_some_and(|tid| i64::from(tid) == i64::from(thread.tid))
                })
                .map_or(Ok(Vec::new()), |py| {
                    py.frames
                        .as_ref()
                        .map(Vec::clone)
                        .map_err(|e| e.to_string())
                }),
            Err(e) => Err(e.clone()),
        };
    }
}

fn run(args: &Args) -> Result<(), String> {
    let pid_arg = args.pid.unwrap_or(0);
    let pid = i32::try_from(pid_arg).map_err(|_| format!("{pid_arg}: not a process id"))?;
    let process = Process::new(pid_arg);
    let symbolizer = Symbolizer::builder().build();
    // The modules first (reading the maps, opening and reading the files, the vDSO), while
    // the process still runs. --python-only shows no native frame: nothing is unwound.
    let mut unwinder = if args.python_only {
        None
    } else {
        Some(
            symbolizer
                .process_unwinder::<Regs>(&process)
                .map_err(|e| e.to_string())?,
        )
    };
    // CPython's runtime is found (files opened, symbols read) before the stop too; its
    // threads' frames are read while the process is stopped.
    let python = if args.wants_python() {
        let runtime = symbolizer
            .python_runtime(&process, &ProcessMemory::new(pid_arg))
            .map_err(|e| format!("--python: {e}"))?;
        Some(runtime)
    } else {
        None
    };

    let started = Instant::now();
    let mut seized = match ptrace::Seized::stop_all(pid, &CAUGHT) {
        Ok(seized) => seized,
        Err(ptrace::StopError::Interrupted) => return Ok(()),
        Err(ptrace::StopError::Failed(why)) => {
            return Err(format!(
                "cannot stop process {pid}: {why} (needs ptrace permission: the same user and \
                 kernel.yama.ptrace_scope 0, or CAP_SYS_PTRACE)"
            ))
        }
    };
    let mut stacks = Vec::new();
    for thread in &seized.threads {
        if CAUGHT.load(Ordering::SeqCst) != 0 {
            break;
        }
        let stack = if !thread.stopped {
            Err("did not stop".to_string())
        } else if let Some(unwinder) = &mut unwinder {
            match thread.registers() {
                Ok(raw) => {
                    let regs = regs_of(&raw);
                    Ok(if args.frame_pointers {
                        unwinder.unwind_frame_pointers(&regs)
                    } else {
                        unwinder.unwind(&regs)
                    })
                }
                Err(e) => Err(format!("registers: {e}")),
            }
        } else {
            Ok(Stack {
                frames: Vec::new(),
                stop: StopReason::Root,
            })
        };
        stacks.push(ThreadStack {
            tid: thread.tid,
            name: String::new(),
            stack,
            python: Ok(Vec::new()),
        });
    }
    if let Some(runtime) = &python {
        // Threads by the ids ptrace gave them, also in a container (a pid namespace).
        let read = runtime.read_process(&process).map_err(|e| e.to_string());
        attach_python(&mut stacks, read);
    }
    let hold_until = started + Duration::from_millis(args.hold);
    while Instant::now() < hold_until && CAUGHT.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let stopped_for = started.elapsed();
    for failure in seized.detach_all() {
        eprintln!("pstack: detach: {failure} (the kernel detaches it when pstack exits)");
    }
    drop(seized);
    if CAUGHT.load(Ordering::SeqCst) != 0 {
        return Ok(());
    }
    // Everything below runs with the process going again.
    default_signals();
    for thread in &mut stacks {
        thread.name = thread_name(pid, thread.tid);
    }
    let addrs = frame_addrs(&stacks);
    let symbols = symbolizer
        .symbolize(&Source::process(&process), Input::AbsAddrs(&addrs))
        .map_err(|e| e.to_string())?;
    let header = format!(
        "PID {pid} \"{}\": {} threads, stopped for {:.1} ms",
        thread_name(pid, pid),
        stacks.len(),
        stopped_for.as_secs_f64() * 1000.0
    );
    let text = if args.json {
        let mut top = serde_json::Map::new();
        top.insert("pid".into(), pid.into());
        top.insert("command".into(), thread_name(pid, pid).into());
        top.insert(
            "threads".into(),
            threads_json(args, &symbols, &stacks, &|_| None),
        );
        serde_json::Value::Object(top).to_string() + "\n"
    } else {
        format_stacks(args, &header, &symbols, &stacks, &|_| None)
    };
    let written = write_out(&text);
    // pstack ends next, and its memory goes back whole: the files read and indexed (tens
    // of MiB for an interpreter with its DWARF) are not freed and unmapped one by one.
    std::mem::forget(symbols);
    std::mem::forget(unwinder);
    std::mem::forget(symbolizer);
    written
}

#[cfg(target_arch = "x86_64")]
type Regs = stacksym::unwind::RegsX86_64;

/// The unwinder's registers from the kernel's `user_regs_struct`.
#[cfg(target_arch = "x86_64")]
fn regs_of(raw: &libc::user_regs_struct) -> Regs {
    Regs::from_user_regs(&[
        raw.r15,
        raw.r14,
        raw.r13,
        raw.r12,
        raw.rbp,
        raw.rbx,
        raw.r11,
        raw.r10,
        raw.r9,
        raw.r8,
        raw.rax,
        raw.rcx,
        raw.rdx,
        raw.rsi,
        raw.rdi,
        raw.orig_rax,
        raw.rip,
        raw.cs,
        raw.eflags,
        raw.rsp,
        raw.ss,
        raw.fs_base,
        raw.gs_base,
        raw.ds,
        raw.es,
        raw.fs,
        raw.gs,
    ])
}

#[cfg(target_arch = "aarch64")]
type Regs = stacksym::unwind::RegsAarch64;

/// The unwinder's registers from the kernel's `user_pt_regs`.
#[cfg(target_arch = "aarch64")]
fn regs_of(raw: &libc::user_regs_struct) -> Regs {
    let mut words = [0u64; 34];
    words[..31].copy_from_slice(&raw.regs);
    words[31] = raw.sp;
    words[32] = raw.pc;
    words[33] = raw.pstate;
    Regs::from_user_regs(&words)
}

/// What a thread is called (`/proc/PID/task/TID/comm`).
fn thread_name(pid: i32, tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|name| name.trim_end().to_string())
        .unwrap_or_default()
}

/// Every frame's lookup address, thread after thread (what `format_stacks` reads back).
pub(crate) fn frame_addrs(stacks: &[ThreadStack]) -> Vec<stacksym::AbsAddr> {
    stacks
        .iter()
        .filter_map(|thread| thread.stack.as_ref().ok())
        .flat_map(|stack| stack.frames.iter().map(|frame| frame.lookup_addr()))
        .collect()
}

/// Writes `text` to stdout.
pub(crate) fn write_out(text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing: {e}"))
}

/// One printed frame: (function, source file, line, inlined, module).
type Shown = (String, Option<String>, Option<u32>, bool, Option<String>);

/// The frames shown for one address of the batch (inlined calls first), or the trampoline.
fn shown_frames(symbols: &stacksym::Symbols, index: usize) -> Vec<Shown> {
    let found = symbols.get(index);
    let module = symbols.module(index).map(|m| m.display().to_string());
    let symbol_name = found.map_or("??", |sym| sym.name);
    let lines = symbols.lines(index);
    if lines.is_empty() {
        return vec![(symbol_name.to_string(), None, None, false, module)];
    }
    lines
        .iter()
        .map(|line| {
            let name = line
                .function
                .as_ref()
                .map_or(symbol_name, |f| f.demangled.as_str());
            (
                name.to_string(),
                line.file.as_ref().map(|f| f.to_string()),
                line.line,
                line.inlined,
                module.clone(),
            )
        })
        .collect()
}

/// Every thread's frames as text; `note(index)`: a remark for the frame at that index of
/// the batch (a core's mismatched file).
pub(crate) fn format_stacks(
    args: &Args,
    header: &str,
    symbols: &stacksym::Symbols,
    stacks: &[ThreadStack],
    note: &dyn Fn(usize) -> Option<String>,
) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(text, "{header}");
    let mut index = 0;
    for thread in stacks {
        let _ = writeln!(text, "\nTID {} \"{}\":", thread.tid, thread.name);
        let stack = match &thread.stack {
            Ok(stack) => stack,
            Err(why) => {
                let _ = writeln!(text, "    (no stack: {why})");
                continue;
            }
        };
        let mut number = 0;
        if let Err(why) = &thread.python {
            let _ = writeln!(text, "    (no Python frames: {why})");
        }
        for step in merged(thread, stack, symbols, index, args.wants_python()) {
            let (frame, at_index) = match step {
                MixedFrame::Python(py) => {
                    let line = py.line.map_or(String::new(), |n| format!(":{n}"));
                    let _ = writeln!(
                        text,
                        "#{number:<2} {:<18} in {} at {}{line} (python)",
                        "[python]", py.function, py.file
                    );
                    number += 1;
                    continue;
                }
                MixedFrame::Native(native) => native,
            };
            if args.python_only {
                continue;
            }
            let frame = &stack.frames[frame];
            // The signal trampoline the handler returns to (glibc's `__restore_rt`), shown
            // as gdb shows it.
            if frame.kind == FrameKind::SignalTrampoline {
                let _ = writeln!(
                    text,
                    "#{number:<2} {:#018x} <signal handler called>",
                    frame.addr
                );
                number += 1;
                continue;
            }
            let remark = note(at_index).map_or(String::new(), |n| format!(" [{n}]"));
            for (name, file, line, inlined, module) in shown_frames(symbols, at_index) {
                let inlined = if inlined { " (inlined)" } else { "" };
                let at = match (file, line) {
                    (Some(file), Some(n)) => format!(" at {file}:{n}"),
                    (Some(file), None) => format!(" at {file}"),
                    _ => String::new(),
                };
                let module = module.map_or(String::new(), |m| format!(" ({m})"));
                let _ = writeln!(
                    text,
                    "#{number:<2} {:#018x} in {name}{inlined}{at}{module}{remark}",
                    frame.addr
                );
                number += 1;
            }
        }
        index += stack.frames.len();
        if args.stop_reasons || !matches!(stack.stop, StopReason::Root) {
            let _ = writeln!(
                text,
                "    (unwinding stopped: {})",
                describe_stop(&stack.stop)
            );
        }
    }
    text
}

/// Every thread's frames as a JSON array.
pub(crate) fn threads_json(
    args: &Args,
    symbols: &stacksym::Symbols,
    stacks: &[ThreadStack],
    note: &dyn Fn(usize) -> Option<String>,
) -> serde_json::Value {
    let (python, python_only) = (args.wants_python(), args.python_only);
    use serde_json::{json, Value};
    let mut index = 0;
    let mut threads = Vec::new();
    for thread in stacks {
        let mut out = serde_json::Map::new();
        out.insert("tid".into(), thread.tid.into());
        out.insert("name".into(), thread.name.clone().into());
        let stack = match &thread.stack {
            Ok(stack) => stack,
            Err(why) => {
                out.insert("error".into(), why.clone().into());
                threads.push(Value::Object(out));
                continue;
            }
        };
        let mut frames = Vec::new();
        if let Err(why) = &thread.python {
            out.insert("python_error".into(), why.clone().into());
        }
        for step in merged(thread, stack, symbols, index, python) {
            let (frame, at_index) = match step {
                MixedFrame::Python(py) => {
                    frames.push(json!({
                        "kind": "python",
                        "function": py.function,
                        "file": py.file,
                        "line": py.line,
                    }));
                    continue;
                }
                MixedFrame::Native(native) => native,
            };
            if python_only {
                continue;
            }
            let frame = &stack.frames[frame];
            let addr = format!("{:#x}", frame.addr);
            if frame.kind == FrameKind::SignalTrampoline {
                frames.push(json!({"kind": "native", "addr": addr, "signal_frame": true}));
                continue;
            }
            for (name, file, line, inlined, module) in shown_frames(symbols, at_index) {
                frames.push(json!({
                    "kind": "native",
                    "addr": addr,
                    "function": name,
                    "file": file,
                    "line": line,
                    "inlined": inlined,
                    "module": module,
                    "note": note(at_index),
                }));
            }
        }
        index += stack.frames.len();
        out.insert("frames".into(), Value::Array(frames));
        out.insert("stop".into(), describe_stop(&stack.stop).into());
        threads.push(Value::Object(out));
    }
    Value::Array(threads)
}

/// A thread's frames in the order shown: each native frame as (its index in the stack, its
/// index in the batch), with --python its Python frames in place of the evaluation loop's
/// frames that run them (the library's `merge_native`, as `py-spy dump --native` places
/// them).
fn merged(
    thread: &ThreadStack,
    stack: &Stack,
    symbols: &stacksym::Symbols,
    first: usize,
    python: bool,
) -> Vec<MixedFrame<(usize, usize)>> {
    let native: Vec<((usize, usize), Option<&str>)> = (0..stack.frames.len())
        .map(|i| ((i, first + i), symbols.get(first + i).map(|sym| sym.name)))
        .collect();
    let py: &[PythonFrame] = match &thread.python {
        Ok(frames) if python => frames,
        _ => &[],
    };
    merge_native(&native, py)
}

/// A stop reason in words.
pub(crate) fn describe_stop(stop: &StopReason) -> String {
    match stop {
        StopReason::Root => "the outermost frame".to_string(),
        StopReason::MemoryUnreadable { addr } => format!("memory at {addr:#x} not readable"),
        StopReason::NoUnwindInfo { addr } => format!("no unwind information for {addr:#x}"),
        StopReason::NoFramePointer => "no usable frame pointer".to_string(),
        StopReason::InvalidUnwindInfo { addr, what } => {
            format!("unusable unwind information at {addr:#x}: {what:?}")
        }
        StopReason::NoProgress => "no progress (a loop)".to_string(),
        StopReason::DepthLimit => "depth limit".to_string(),
    }
}
