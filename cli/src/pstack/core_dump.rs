//! `pstack --core CORE`: the threads of a core file, unwound from the registers and memory
//! the core holds (`Modules::from_core`: its files matched by build-id, its vDSO), named by
//! one `Symbolizer::symbolize(&Source::Core(..))` call. The thread that took the fatal
//! signal comes first.

use std::path::Path;

use stacksym::core::{CoreFile, CoreOptions, Unreadable};
use stacksym::unwind::{Modules, RegsAarch64, RegsX86_64, StopReason, UnwindCache, Unwinder};
use stacksym::{Input, NotFound, Source, Symbolizer};

use crate::pstack::{attach_python, ThreadStack};
use crate::pstack::{describe_stop, format_stacks, frame_addrs, threads_json, write_out, Args};

pub(crate) fn run(args: &Args, path: &Path) -> Result<(), String> {
    let options = CoreOptions {
        sysroot: args.sysroot.clone(),
        exe: args.exe.clone(),
        ..CoreOptions::default()
    };
    let core = CoreFile::open_with(path, &options).map_err(|e| e.to_string())?;
    for problem in core.problems() {
        eprintln!("pstack: note: {}: {problem}", path.display());
    }
    for file in core.files() {
        if let Err(e) = &file.file {
            // Only files with code matter; a data file (a locale archive) is no ELF file.
            if !matches!(e, stacksym::Error::NotElf { .. }) {
                eprintln!("pstack: note: {e}");
            }
        }
    }
    let unwinder = Unwinder::new(Modules::from_core(&core, None));
    let mut x86 = UnwindCache::new();
    let mut arm = UnwindCache::new();
    let mut stacks = Vec::new();
    let crashed = core.signal().map(|s| s.signal);
    // The thread that took the signal first (the kernel writes it first; gcore may not).
    let mut order: Vec<usize> = (0..core.threads().len()).collect();
    if let Some(signal) = crashed {
        if let Some(at) = core
            .threads()
            .iter()
            .position(|t| i32::from(t.signal) == signal)
        {
            order.remove(at);
            order.insert(0, at);
        }
    }
    for &i in &order {
        let thread = &core.threads()[i];
        let stack = if let Some(regs) = RegsX86_64::from_core(&thread.registers) {
            let stack = if args.frame_pointers {
                unwinder.unwind_frame_pointers(&regs, &core, &mut x86)
            } else {
                unwinder.unwind(&regs, &core, &mut x86)
            };
            Ok(stack)
        } else if let Some(regs) = RegsAarch64::from_core_thread(thread) {
            Ok(if args.frame_pointers {
                unwinder.unwind_frame_pointers(&regs, &core, &mut arm)
            } else {
                unwinder.unwind(&regs, &core, &mut arm)
            })
        } else {
            Err("registers of an unknown architecture".to_string())
        };
        // A core names no thread but the process (`NT_PRPSINFO`): its main thread's.
        let name = match core.process() {
            Some(process) if process.pid == thread.tid => process.command.clone(),
            _ => String::new(),
        };
        stacks.push(ThreadStack {
            tid: i32::try_from(thread.tid).unwrap_or(-1),
            name,
            stack,
            python: Ok(Vec::new()),
        });
    }
    if args.wants_python() {
        let read = stacksym::python::PythonStacks::from_core(&core).map_err(|e| e.to_string());
        if let Err(e) = &read {
            return Err(format!("--python: {e}"));
        }
        attach_python(&mut stacks, read);
    }
    let symbolizer = Symbolizer::builder().build();
    let addrs = frame_addrs(&stacks);
    let symbols = symbolizer
        .symbolize(&Source::Core(&core), Input::AbsAddrs(&addrs))
        .map_err(|e| e.to_string())?;
    // A frame in a file that could not be matched says so (never another build's names).
    let note = |index: usize| match symbols.not_found(index) {
        Some(NotFound::FileError(e)) => Some(e.to_string()),
        _ => None,
    };
    let (pid, command, cmdline) = match core.process() {
        Some(p) => (p.pid, p.command.clone(), p.args.clone()),
        None => (0, String::new(), String::new()),
    };
    // Where unwinding stopped for want of memory, say whether the core lacks it.
    let why = |stop: &StopReason| -> Option<String> {
        let StopReason::MemoryUnreadable { addr } = stop else {
            return None;
        };
        Some(match core.why_unreadable(*addr)? {
            Unreadable::Unmapped => "not mapped in the process".to_string(),
            Unreadable::NotDumped => "not dumped in the core".to_string(),
            Unreadable::Truncated => "past the end of the truncated core".to_string(),
        })
    };
    let signal = core.signal();
    let text = if args.json {
        let mut top = serde_json::Map::new();
        top.insert("core".into(), path.display().to_string().into());
        top.insert("pid".into(), pid.into());
        top.insert("command".into(), command.into());
        top.insert("args".into(), cmdline.into());
        if let Some(signal) = signal {
            top.insert(
                "signal".into(),
                serde_json::json!({
                    "number": signal.signal,
                    "name": signal.name(),
                    "code": signal.code,
                    "fault_addr": signal.fault_addr.map(|a| format!("{a:#x}")),
                }),
            );
        }
        let mut threads = threads_json(args, &symbols, &stacks, &note);
        if let Some(list) = threads.as_array_mut() {
            for (value, thread) in list.iter_mut().zip(&stacks) {
                if let (Some(obj), Ok(stack)) = (value.as_object_mut(), &thread.stack) {
                    obj.insert(
                        "stop".into(),
                        match why(&stack.stop) {
                            Some(w) => format!("{} ({w})", describe_stop(&stack.stop)),
                            None => describe_stop(&stack.stop),
                        }
                        .into(),
                    );
                }
            }
        }
        top.insert("threads".into(), threads);
        top.insert("problems".into(), core.problems().to_vec().into());
        serde_json::Value::Object(top).to_string() + "\n"
    } else {
        let mut header = format!(
            "core {}: PID {pid} \"{command}\" ({cmdline}): {} threads",
            path.display(),
            stacks.len()
        );
        match signal {
            // gcore's snapshot records the stop of its attach, not a death.
            Some(signal) if signal.signal != libc::SIGSTOP => {
                header.push_str(&format!("\nterminated by signal {}", signal.name()));
                if let Some(addr) = signal.fault_addr {
                    header.push_str(&format!(", fault address {addr:#x}"));
                }
            }
            _ => header.push_str("\nno fatal signal recorded (a snapshot, as gcore writes)"),
        }
        let mut text = format_stacks(args, &header, &symbols, &stacks, &note);
        for thread in &stacks {
            if let Some(w) = thread.stack.as_ref().ok().and_then(|s| why(&s.stop)) {
                text.push_str(&format!(
                    "note: thread {}: the memory unwinding needed is {w}\n",
                    thread.tid
                ));
            }
        }
        text
    };
    write_out(&text)
}
