//! Unwinds the user stacks of a `perf record --call-graph dwarf` recording with stacksym and
//! prints them in the layout of `perf script -F comm,tid,ip,sym,dso --no-inline`, so the two
//! outputs diff line by line; or, with `--folded`, one `comm;outer;...;inner count` line per
//! distinct stack, for flame graph tools.
//!
//! MMAP/MMAP2 records give each process its modules (the symbolizer's cached files, shared
//! with the unwinder; the `[vdso]` is this machine's, read from our own memory), SAMPLE
//! records give the user registers and the stack copy; kernel frames come from the sample's
//! callchain, named through `/proc/kallsyms`. Caller frames are shown at their return address
//! − 1, as perf shows them; addresses in a file as perf does (`addr - map start + pgoff`).
//!
//!   perf record -e cpu-clock --call-graph dwarf,16384 -o perf.data ./program
//!   cargo run --release --example perf_unwind -- -i perf.data
//!
//! A file that is not perf.data, or is truncated, is an error naming the file and offset.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use stacksym::elf::ElfFile;
use stacksym::kernel::Kallsyms;
use stacksym::process::Process;
use stacksym::unwind::{Modules, RegsAarch64, RegsX86_64, UnwindArch, UnwindCache, Unwinder};
use stacksym::{Input, Source, Symbolizer};

mod perf_data;
use perf_data::{FromPerfRegs, PerfEvent, RecordedArch};

#[derive(Parser, Debug)]
#[command(
    about = "Unwind perf.data's user stacks (perf record --call-graph dwarf) with stacksym; \
                   prints what `perf script -F comm,tid,ip,sym,dso --no-inline` prints"
)]
struct Args {
    /// The recording.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Print folded stacks (`comm;outermost;...;innermost count`) instead.
    #[arg(long)]
    folded: bool,
    /// Leave out the kernel frames of the samples' callchains.
    #[arg(long)]
    no_kernel: bool,
    /// Print each sample's unwinding stop reason to stderr.
    #[arg(long)]
    stop_reasons: bool,
    /// The kallsyms file that names kernel frames.
    #[arg(long, default_value = "/proc/kallsyms")]
    kallsyms: PathBuf,
}

/// One process: its modules, an unwinder over them and its cache, per architecture.
struct Proc<A: UnwindArch> {
    unwinder: Unwinder,
    cache: UnwindCache<A>,
}

/// Where a frame is and what it is called, as perf prints it.
struct Shown {
    ip: u64,
    sym: String,
    dso: String,
}

struct State<A: UnwindArch> {
    symbolizer: Symbolizer,
    procs: HashMap<i32, Proc<A>>,
    comms: HashMap<i32, String>,
    /// A path's `Arc<ElfFile>`, or `None` when it cannot be opened (checked once).
    files: HashMap<Vec<u8>, Option<Arc<ElfFile>>>,
    vdso: Option<Arc<ElfFile>>,
    kallsyms: Option<Kallsyms>,
    names: HashMap<(PathBuf, u64), String>,
    folded: HashMap<String, u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("perf_unwind: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let mut recording = perf_data::open(&args.input)?;
    let kallsyms = if args.no_kernel {
        None
    } else {
        match Kallsyms::open(&args.kallsyms) {
            Ok(k) => Some(k),
            Err(e) => {
                eprintln!("perf_unwind: note: kernel frames unnamed: {e}");
                None
            }
        }
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match recording.arch() {
        RecordedArch::Aarch64 => {
            unwind_all::<RegsAarch64, _>(&mut recording, args, kallsyms, &mut out)?
        }
        RecordedArch::X86_64 => {
            unwind_all::<RegsX86_64, _>(&mut recording, args, kallsyms, &mut out)?
        }
    }
    out.flush().map_err(|e| format!("writing: {e}"))
}

/// Prints every sample of `recording`, unwound with registers of type `A`.
fn unwind_all<A: UnwindArch + FromPerfRegs, R: std::io::Read>(
    recording: &mut perf_data::PerfData<R>,
    args: &Args,
    kallsyms: Option<Kallsyms>,
    out: &mut impl Write,
) -> Result<(), String> {
    let mut state: State<A> = State {
        symbolizer: Symbolizer::builder().source_lines(false).build(),
        procs: HashMap::new(),
        comms: HashMap::new(),
        files: HashMap::new(),
        vdso: own_vdso(),
        kallsyms,
        names: HashMap::new(),
        folded: HashMap::new(),
    };
    while let Some(event) = recording.next_event()? {
        state
            .record(event, args, out)
            .map_err(|e| format!("writing: {e}"))?;
    }
    if args.folded {
        let mut lines: Vec<_> = state.folded.into_iter().collect();
        lines.sort();
        for (stack, n) in lines {
            writeln!(out, "{stack} {n}").map_err(|e| format!("writing: {e}"))?;
        }
    }
    Ok(())
}

/// This machine's vDSO (the one a recording made here saw).
fn own_vdso() -> Option<Arc<ElfFile>> {
    let process = Process::new(std::process::id());
    let maps = process.read_maps().ok()?;
    process.vdso(&maps).ok().flatten().map(Arc::new)
}

impl<A: UnwindArch + FromPerfRegs> State<A> {
    fn record(
        &mut self,
        event: PerfEvent<'_>,
        args: &Args,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        match event {
            PerfEvent::Comm { tid, name } => {
                self.comms.insert(tid, name);
            }
            PerfEvent::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                if pid != ppid {
                    if let Some(parent) = self.procs.get(&ppid) {
                        let modules = parent.unwinder.modules().clone();
                        self.procs.insert(pid, new_proc(modules));
                    }
                }
                if let Some(comm) = self.comms.get(&ptid).cloned() {
                    self.comms.insert(tid, comm);
                }
            }
            PerfEvent::Mmap {
                pid,
                start,
                len,
                pgoff,
                path,
            } => self.add_mapping(pid, start, len, pgoff, &path),
            PerfEvent::Sample(sample) => {
                let (pid, tid) = (sample.pid, sample.tid);
                let mut shown: Vec<Shown> = Vec::new();
                if !args.no_kernel {
                    for &ip in &sample.kernel_callchain {
                        shown.push(self.kernel_frame(ip));
                    }
                }
                if let Some((regs, memory)) = sample.unwind_input::<A>() {
                    let frames = match self.procs.get_mut(&pid) {
                        Some(proc) => {
                            let stack = proc.unwinder.unwind(&regs, &memory, &mut proc.cache);
                            if args.stop_reasons {
                                eprintln!(
                                    "{tid}: {} frames, {:?} sp {:#x} copy {}",
                                    stack.frames.len(),
                                    stack.stop,
                                    memory.start(),
                                    memory.bytes().len(),
                                );
                            }
                            stack.frames
                        }
                        // No mapping of the process is known yet (a sample taken while the
                        // kernel still loads the program, before its first mmap event): perf
                        // unwinds nothing and shows no user frame, and neither do we.
                        None => Vec::new(),
                    };
                    for frame in frames {
                        // perf script shows every frame after the first at `addr - 1`, a
                        // signal trampoline too (where `lookup_addr` keeps the address, so
                        // that the trampoline is named `__restore_rt`): print what perf prints.
                        let shown_addr = if frame.is_return_address() {
                            frame.addr.wrapping_sub(1)
                        } else {
                            frame.addr
                        };
                        shown.push(self.user_frame(pid, shown_addr));
                    }
                } else if sample.in_user_mode {
                    if let Some(ip) = sample.ip {
                        shown.push(self.user_frame(pid, ip));
                    }
                }
                let comm = self
                    .comms
                    .get(&tid)
                    .map_or(":-1", String::as_str)
                    .to_string();
                if args.folded {
                    let mut line = comm.clone();
                    for frame in shown.iter().rev() {
                        line.push(';');
                        line.push_str(&frame.sym);
                    }
                    *self.folded.entry(line).or_default() += 1;
                } else {
                    writeln!(out, "{comm} {tid:5} ")?;
                    for frame in &shown {
                        writeln!(out, "\t{:16x} {} ({})", frame.ip, frame.sym, frame.dso)?;
                    }
                    writeln!(out)?;
                }
            }
            PerfEvent::Other => {}
        }
        Ok(())
    }

    fn add_mapping(&mut self, pid: i32, start: u64, len: u64, pgoff: u64, path: &[u8]) {
        if pid < 0 {
            return;
        }
        let elf = if path == b"[vdso]" {
            self.vdso.clone()
        } else if path.first() == Some(&b'/') {
            let symbolizer = &self.symbolizer;
            self.files
                .entry(path.to_vec())
                .or_insert_with(|| {
                    let path = Path::new(std::str::from_utf8(path).ok()?);
                    symbolizer.elf_file(path).ok()
                })
                .clone()
        } else {
            None
        };
        let proc = self
            .procs
            .entry(pid)
            .or_insert_with(|| new_proc(Modules::new()));
        if let Some(elf) = elf {
            proc.unwinder
                .modules_mut()
                .add(start..start.saturating_add(len), pgoff, elf);
        }
    }

    fn kernel_frame(&self, ip: u64) -> Shown {
        let found = self
            .kallsyms
            .as_ref()
            .and_then(|k| k.find_symbol(ip).ok().flatten());
        match found {
            Some(sym) => Shown {
                ip,
                sym: sym.name.to_string(),
                dso: match sym.module {
                    Some(module) => format!("[{module}]"),
                    None => "[kernel.kallsyms]".to_string(),
                },
            },
            None => Shown {
                ip,
                sym: "[unknown]".to_string(),
                dso: "[kernel.kallsyms]".to_string(),
            },
        }
    }

    fn user_frame(&mut self, pid: i32, addr: u64) -> Shown {
        let unknown = |ip| Shown {
            ip,
            sym: "[unknown]".to_string(),
            dso: "[unknown]".to_string(),
        };
        let Some(proc) = self.procs.get(&pid) else {
            return unknown(addr);
        };
        let modules = proc.unwinder.modules();
        let Some(module) = modules.find(addr) else {
            return unknown(addr);
        };
        let Some(elf) = modules.elf(module) else {
            return unknown(addr);
        };
        let Some(offset) = module.file_offset_of(addr).map(|offset| offset.0) else {
            return unknown(addr);
        };
        let path = elf.path().to_path_buf();
        let is_vdso = self.vdso.as_ref().is_some_and(|v| Arc::ptr_eq(v, elf));
        let dso = if is_vdso {
            "[vdso]".to_string()
        } else {
            path.display().to_string()
        };
        let key = (path.clone(), offset);
        let sym = if let Some(name) = self.names.get(&key) {
            name.clone()
        } else {
            let name = if is_vdso {
                elf.segments()
                    .file_offset_to_virt(stacksym::FileOffset(offset))
                    .and_then(|virt| elf.find_symbol(virt).ok().flatten())
                    .map_or("[unknown]".to_string(), |s| {
                        String::from_utf8_lossy(s.name).into_owned()
                    })
            } else {
                match self.symbolizer.symbolize(
                    &Source::Elf { path: &path },
                    Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&[offset])),
                ) {
                    Ok(symbols) => symbols
                        .get(0)
                        .map_or("[unknown]".to_string(), |sym| sym.name.to_string()),
                    Err(_) => "[unknown]".to_string(),
                }
            };
            self.names.insert(key, name.clone());
            name
        };
        Shown {
            ip: offset,
            sym,
            dso,
        }
    }
}

fn new_proc<A: UnwindArch>(modules: Modules) -> Proc<A> {
    Proc {
        unwinder: Unwinder::new(modules),
        cache: UnwindCache::new(),
    }
}
