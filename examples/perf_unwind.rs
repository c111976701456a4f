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
use std::io::{BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use linux_perf_data::linux_perf_event_reader::{CpuMode, EventRecord};
use linux_perf_data::{PerfFileReader, PerfFileRecord};
use stacksym::elf::ElfFile;
use stacksym::kernel::Kallsyms;
use stacksym::process::Process;
use stacksym::unwind::{
    Frame, Modules, RegsAarch64, RegsX86_64, StackCopy, UnwindArch, UnwindCache, Unwinder,
};
use stacksym::{Input, Source, Symbolizer};

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

/// perf's callchain context markers (`PERF_CONTEXT_*`), as u64.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;

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

/// Checks the perf.data header ourselves, so that a wrong or truncated file is named with the
/// offset of what is missing.
fn check_header(path: &Path, file: &mut std::fs::File) -> Result<(), String> {
    let len = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let mut header = [0u8; 104];
    file.read_exact(&mut header).map_err(|_| {
        format!(
            "{}: not a perf.data file: {len} bytes, shorter than the 104-byte header at offset 0",
            path.display()
        )
    })?;
    if &header[..8] != b"PERFILE2" {
        return Err(format!(
            "{}: not a perf.data file: offset 0 holds {:?}, not the magic \"PERFILE2\"",
            path.display(),
            String::from_utf8_lossy(&header[..8])
        ));
    }
    let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or_default());
    let (data_offset, data_size) = (word(40), word(48));
    let end = data_offset.saturating_add(data_size);
    if end > len {
        return Err(format!(
            "{}: truncated perf.data: the data section (offset {data_offset:#x}, {data_size} bytes) \
             ends at offset {end:#x}, the file at {len:#x}",
            path.display()
        ));
    }
    file.rewind()
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn run(args: &Args) -> Result<(), String> {
    let path = &args.input;
    let mut file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    check_header(path, &mut file)?;
    let reader = std::io::BufReader::new(file);
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(reader)
        .map_err(|e| format!("{}: not a readable perf.data file: {e}", path.display()))?;
    let arch = perf_file
        .arch()
        .ok()
        .flatten()
        .unwrap_or("x86_64")
        .to_string();
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
    macro_rules! go {
        ($A:ty, $regs:expr) => {{
            let mut state: State<$A> = State {
                symbolizer: Symbolizer::builder().source_lines(false).build(),
                procs: HashMap::new(),
                comms: HashMap::new(),
                files: HashMap::new(),
                vdso: own_vdso(),
                kallsyms,
                names: HashMap::new(),
                folded: HashMap::new(),
            };
            let mut count = 0u64;
            loop {
                let record = match record_iter.next_record(&mut perf_file) {
                    Ok(Some(record)) => record,
                    Ok(None) => break,
                    Err(e) => {
                        return Err(format!(
                            "{}: record {count} (after the header) is unreadable: {e}",
                            path.display()
                        ))
                    }
                };
                count += 1;
                let PerfFileRecord::EventRecord { record, .. } = record else {
                    continue;
                };
                let parsed = record
                    .parse()
                    .map_err(|e| format!("{}: record {count}: malformed: {e}", path.display()))?;
                state
                    .record(parsed, args, &mut out, $regs)
                    .map_err(|e| format!("writing: {e}"))?;
            }
            if args.folded {
                let mut lines: Vec<_> = state.folded.into_iter().collect();
                lines.sort();
                for (stack, n) in lines {
                    writeln!(out, "{stack} {n}").map_err(|e| format!("writing: {e}"))?;
                }
            }
        }};
    }
    match arch.as_str() {
        "aarch64" | "arm64" => go!(RegsAarch64, |mask, values: &[u64]| RegsAarch64::from_perf(
            mask, values
        )),
        _ => go!(RegsX86_64, |mask, values: &[u64]| RegsX86_64::from_perf(
            mask, values
        )),
    }
    out.flush().map_err(|e| format!("writing: {e}"))
}

/// This machine's vDSO (the one a recording made here saw).
fn own_vdso() -> Option<Arc<ElfFile>> {
    let process = Process::new(std::process::id());
    let maps = process.read_maps().ok()?;
    process.vdso(&maps).ok().flatten().map(Arc::new)
}

impl<A: UnwindArch> State<A> {
    fn record(
        &mut self,
        record: EventRecord<'_>,
        args: &Args,
        out: &mut impl Write,
        regs_of: impl Fn(u64, &[u64]) -> A,
    ) -> std::io::Result<()> {
        match record {
            EventRecord::Comm(comm) => {
                let name = String::from_utf8_lossy(&comm.name.as_slice()).into_owned();
                self.comms.insert(comm.tid, name);
            }
            EventRecord::Fork(fork) => {
                if fork.pid != fork.ppid {
                    if let Some(parent) = self.procs.get(&fork.ppid) {
                        let modules = parent.unwinder.modules().clone();
                        self.procs.insert(fork.pid, new_proc(modules));
                    }
                }
                if let Some(comm) = self.comms.get(&fork.ptid).cloned() {
                    self.comms.insert(fork.tid, comm);
                }
            }
            EventRecord::Mmap(mmap) => {
                let path = mmap.path.as_slice().into_owned();
                self.add_mapping(mmap.pid, mmap.address, mmap.length, mmap.page_offset, &path);
            }
            EventRecord::Mmap2(mmap) => {
                let path = mmap.path.as_slice().into_owned();
                self.add_mapping(mmap.pid, mmap.address, mmap.length, mmap.page_offset, &path);
            }
            EventRecord::Sample(sample) => {
                let (Some(pid), Some(tid)) = (sample.pid, sample.tid) else {
                    return Ok(());
                };
                let mut shown: Vec<Shown> = Vec::new();
                if let Some(callchain) = &sample.callchain {
                    let mut in_user = false;
                    for i in 0..callchain.len() {
                        let Some(ip) = callchain.get(i) else { break };
                        if ip >= PERF_CONTEXT_MAX {
                            in_user = ip == PERF_CONTEXT_USER;
                            continue;
                        }
                        if in_user {
                            continue;
                        }
                        if !args.no_kernel {
                            shown.push(self.kernel_frame(ip));
                        }
                    }
                }
                let is_user = matches!(sample.cpu_mode, CpuMode::User);
                if let (Some(user_regs), Some((stack, dyn_size))) =
                    (&sample.user_regs, &sample.user_stack)
                {
                    let mut mask = 0u64;
                    let mut values = Vec::new();
                    for reg in 0..64 {
                        if let Some(value) = user_regs.get(reg) {
                            mask |= 1 << reg;
                            values.push(value);
                        }
                    }
                    if mask != 0 {
                        let regs = regs_of(mask, &values);
                        let bytes = stack.as_slice();
                        let len = (*dyn_size as usize).min(bytes.len());
                        let sp = regs.sp().unwrap_or(0);
                        let memory = StackCopy::new(sp, &bytes[..len]);
                        let frames = match self.procs.get_mut(&pid) {
                            Some(proc) => {
                                let stack = proc.unwinder.unwind(&regs, &memory, &mut proc.cache);
                                if args.stop_reasons {
                                    eprintln!(
                                        "{tid}: {} frames, {:?} sp {sp:#x} copy {len} of {}",
                                        stack.frames.len(),
                                        stack.stop,
                                        bytes.len()
                                    );
                                }
                                stack.frames
                            }
                            None => vec![Frame {
                                addr: regs.ip(),
                                is_return_address: false,
                                recovered: stacksym::unwind::Recovery::Registers,
                            }],
                        };
                        for frame in frames {
                            shown.push(self.user_frame(pid, frame.lookup_addr()));
                        }
                    }
                } else if is_user {
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
            _ => {}
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
        let offset = module.file_offset_of(addr).0;
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
                match self
                    .symbolizer
                    .symbolize(&Source::Elf { path: &path }, Input::FileOffsets(&[offset]))
                {
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
