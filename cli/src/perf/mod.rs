//! Unwinds the user stacks of a `perf record --call-graph dwarf` recording with stacksym and
//! prints them as `perf script` does: by default its default layout (header with comm, tid,
//! time, period and event; callchain lines `addr name+0xoff (dso)`, with the frames of
//! inlined functions as perf prints them, `addr name+0xoff (inlined)`, before the frame that
//! holds them); `--no-inline` leaves those out, `-F` picks fields as perf's `-F` does
//! (`comm,tid,pid,time,ip,sym,dso,symoff,srcline`, or `+srcline` to add one). With
//! `--folded`, one `comm;outer;...;inner count` line per distinct stack instead, for flame
//! graph tools.
//!
//! MMAP/MMAP2 records give each process its modules (the symbolizer's cached files, shared
//! with the unwinder; the `[vdso]` is this machine's, read from our own memory), SAMPLE
//! records give the user registers and the stack copy; kernel frames come from the sample's
//! callchain, named through kallsyms — read only once a kernel address appears, on a second
//! thread while user stacks go on unwinding, and only where perf would use it: `--kallsyms
//! FILE`, else perf's build-id cache (`DIR/[kernel.kallsyms]/ID/kallsyms`, DIR `~/.debug` or
//! `--buildid-dir`), else
//! `/proc/kallsyms` when the running kernel is the recorded one (its build-id in
//! `/sys/kernel/notes`); otherwise kernel frames are `[unknown]`, as perf prints them.
//! Two threads share the work: one reads the recording and unwinds, the main one names the
//! frames (each distinct address once) and prints.
//! Caller frames are shown at their return address − 1, as perf shows them; addresses in a
//! file as perf does (`addr - map start + pgoff`). A `--call-graph fp` recording (callchains,
//! no stack copies) is printed from the chain the kernel recorded, as perf prints it: each
//! entry at its own address, without inlined frames. Executable anonymous memory is named
//! through the process's perf map (`/tmp/perf-PID.map`) as perf names it, read when a frame
//! needs it — the process may have exited long ago (src/perf/jit.rs). A file whose
//! build-id is not the recorded one (rebuilt since) is read from perf's build-id cache, as
//! perf reads it (`DIR/.build-id/xx/rest/elf`: what `perf record` and `perf buildid-cache -a`
//! put there, what `perf archive` packs); when the cache has no copy, nothing in it is named
//! and the chain stops at its frame. The files of a process in another mount namespace (a
//! container: its MMAP paths are its own) are opened in its root while it lives, as perf
//! opens them in its namespace (src/perf/container.rs); once it is gone, from the cache.
//!
//!   perf record -e cpu-clock --call-graph dwarf,16384 -o perf.data ./program
//!   stacksym perf -i perf.data        (cargo run --release -p stacksym-cli -- perf -i perf.data)
//!
//! A file that is not perf.data, or is truncated, is an error naming the file and offset.

use std::collections::{HashMap, VecDeque};
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::thread::JoinHandle;

use clap::Parser;
use stacksym::elf::ElfFile;
use stacksym::kernel::Kallsyms;
use stacksym::process::Process;
use stacksym::unwind::{
    FileCfi, Modules, RegsAarch64, RegsX86_64, StackCopy, UnwindArch, UnwindCache, Unwinder,
};
use stacksym::{AbsAddr, FileOffset, Input, NameOrigin, Source, Symbolizer};

use spelling::{perf_name, perf_symbol_name};

mod container;
mod data;
mod jit;
mod plt;
mod report;
mod script;
mod spelling;
mod symbols;
use data::{FromPerfRegs, PerfEvent, RecordedArch};
use script::{Field, Fields};

#[derive(Parser, Debug)]
#[command(
    name = "perf",
    bin_name = "stacksym perf",
    about = "Unwind perf.data's user stacks (perf record --call-graph dwarf) with stacksym; \
             prints what `perf script` prints"
)]
struct Args {
    /// The recording.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Leave out the frames of inlined functions (perf script --no-inline).
    #[arg(long)]
    no_inline: bool,
    /// The fields to print, as perf script's -F: a list of comm,tid,pid,cpu,time,period,
    /// event,ip,sym,symoff,dso,srcline, or +field/-field changes to the default.
    #[arg(short = 'F', long = "fields")]
    fields: Option<String>,
    /// Print folded stacks (`comm;outermost;...;innermost period`, as inferno-collapse-perf
    /// folds perf script's output) instead.
    #[arg(long)]
    folded: bool,
    /// Write a flame graph of the folded stacks to this SVG file (inferno's), inlined
    /// functions as boxes of their own.
    #[arg(long, value_name = "FILE.svg")]
    flamegraph: Option<PathBuf>,
    /// Only the samples of these commands (a comma-separated list), as perf's `--comms`.
    #[arg(long)]
    comms: Option<String>,
    /// Leave out the kernel frames of the samples' callchains.
    #[arg(long)]
    no_kernel: bool,
    /// Print each sample's unwinding stop reason to stderr.
    #[arg(long)]
    stop_reasons: bool,
    /// The kallsyms file that names kernel frames (default: as perf picks it; see above).
    #[arg(long)]
    kallsyms: Option<PathBuf>,
    /// perf's build-id cache, where the files as recorded are looked for when the file at a
    /// recorded path is not the one recorded (as `perf --buildid-dir`; default `~/.debug`).
    /// `PERF_BUILDID_DIR` is not read: perf 6.1 only sets it for its scripts (`perf
    /// archive` reads it).
    #[arg(long, value_name = "DIR")]
    buildid_dir: Option<PathBuf>,
    /// Print perf report's table (`perf report --stdio -g none`) instead of the samples.
    #[arg(long)]
    report: bool,
    /// With --report: each entry also gets the samples whose callchain holds it (perf's
    /// default when callchains were recorded).
    #[arg(long, overrides_with = "no_children")]
    children: bool,
    /// With --report: each entry gets only the samples at its own address.
    #[arg(long)]
    no_children: bool,
    /// With --report: the sort keys; perf's comm,dso,sym is the one supported.
    #[arg(long, default_value = "comm,dso,sym")]
    sort: String,
    /// With --report: leave out entries below this percentage.
    #[arg(long, default_value_t = 0.0)]
    percent_limit: f64,
}

/// A mapped file as perf names it, and the ELF file read from it (if it could be).
struct FileInfo {
    /// The dso column: the MMAP path (`/usr/lib/...`, `[vdso]`, `/memfd:x (deleted)`).
    dso: Arc<str>,
    /// perf's short name: the last component (`[JIT] tid PID` for a perf map), what its
    /// srcline shows for an address without a line and its report's dso column.
    short: Arc<str>,
    elf: Option<Arc<ElfFile>>,
    /// The ELF file's CFI, shared by every process that maps it (its compiled rules serve
    /// them all).
    cfi: Option<FileCfi>,
    is_vdso: bool,
    /// The recording lists a build-id for this path and no file with it was found (not the
    /// file at the path, not perf's build-id cache): perf neither names nor unwinds through
    /// it (its libunwind has no CFI for it), so the chain ends at a frame in it.
    missing_recorded: bool,
    /// Tells files apart in the name cache.
    id: usize,
    /// Its addresses are its own, not file offsets (perf's anonymous and file-less memory).
    identity: bool,
    /// For `/tmp/perf-PID.map` (an executable anonymous mapping): process PID, whose perf
    /// map is read when an address needs it.
    jit: Option<(i32, std::sync::OnceLock<Option<stacksym::process::PerfMap>>)>,
}

/// One mapping of a process.
#[derive(Clone)]
struct Map {
    range: Range<u64>,
    pgoff: u64,
    file: Arc<FileInfo>,
}

/// One process: its mappings, an unwinder over the ELF ones and its cache.
struct Proc<A: UnwindArch> {
    unwinder: Unwinder,
    /// Made when the process's first sample is unwound: most processes of a system-wide
    /// recording have none (short-lived, or left out by `--comms`), and a cache's
    /// allocation (its CFI context) for each took fresh pages.
    cache: Option<UnwindCache<A>>,
    /// Sorted by start, highest first, not overlapping (a later mapping replaces what it
    /// overlaps). Highest first because the kernel places a process's libraries top-down,
    /// each below the last: its next mapping goes near the end (in ascending order, each
    /// insertion moved every library mapped before; with the vector's growth, 4.5 % of a
    /// system-wide run, all on the unwinding thread).
    maps: Vec<Map>,
    /// How many of the process's jitdump loads (in file order) its unwinder has been given:
    /// those written at or before the last sample's time (src/perf/jit.rs).
    jit_loads: usize,
}

/// What one address of a file resolves to, as perf shows it.
struct Resolved {
    /// The symbol table's name and the offset into the symbol.
    sym: Option<(Arc<str>, u64)>,
    /// The inline chain, innermost first, when DWARF has one: each function's name, and
    /// whether it is the symbol itself (perf prints that one with its dso, the others as
    /// `(inlined)`), and its srcline (the frame's own line: the call site for an outer
    /// one). Empty: no DWARF for the address.
    inlines: Vec<(Arc<str>, bool, Option<Arc<str>>)>,
    /// perf's srcline: `file:line` of the innermost frame, else `dso[vaddr]`.
    srcline: Option<Arc<str>>,
}

/// A frame of a sample, resolved as far as it can be before kallsyms is read.
enum FrameOut {
    Kernel(u64),
    User {
        /// The address column: the file offset, or the address when no mapping holds it.
        ip: u64,
        /// The address in the process (what `perf report` shows for a callchain entry
        /// without a symbol).
        abs: u64,
        file: Option<Arc<FileInfo>>,
        resolved: Option<Arc<Resolved>>,
    },
}

/// A sample ready to print but for its kernel frames' names.
struct SampleOut {
    comm: Arc<str>,
    period: u64,
    /// The header's fields, printed by the naming side (`--report` and `--folded` print
    /// none; formatting them took 4 % of the unwinding thread).
    pid: i32,
    tid: i32,
    cpu: Option<u32>,
    time: Option<u64>,
    recorded_period: Option<u64>,
    attr_index: usize,
    frames: Vec<FrameOut>,
    /// Its user frames are a callchain the kernel recorded (`--call-graph fp`): perf 6.1
    /// adds inlined frames only to chains it unwinds itself (`unwind_entry`), not to a
    /// recorded callchain's entries (`add_callchain_ip`), so a frame in an inlined function
    /// is its symbol's line alone.
    user_from_callchain: bool,
}

/// kallsyms: not asked for yet, being read on a second thread, or read (or unusable).
enum KernelNames {
    NotNeeded(Option<PathBuf>),
    Loading(JoinHandle<Option<KernelTable>>),
    Ready(Option<KernelTable>),
}

/// kallsyms, and perf's pick among its aliases.
struct KernelTable {
    kallsyms: Kallsyms,
    aliases: symbols::KernelAliases,
}

/// Reads and indexes the kallsyms file at `path`, and perf's pick among its aliases from the
/// same bytes (read here, as `Kallsyms::open` reads them, so that the aliases' pass reads
/// the text the index is built from).
fn read_kallsyms(path: &Path) -> Result<KernelTable, String> {
    use std::io::Read;
    let read = || -> std::io::Result<Option<Vec<u8>>> {
        let mut file = std::fs::File::open(path)?;
        if !file.metadata()?.is_file() {
            return Ok(None);
        }
        // /proc/kallsyms says its size is 0: room for a typical one (4-8 MB), as
        // `Kallsyms::open` makes.
        let mut bytes = Vec::with_capacity(8 << 20);
        file.read_to_end(&mut bytes)?;
        Ok(Some(bytes))
    };
    let Ok(Some(bytes)) = read() else {
        // `Kallsyms::open` says what is wrong (not a regular file, unreadable).
        return Err(match Kallsyms::open(path) {
            Err(e) => e.to_string(),
            Ok(_) => format!("{}: unreadable", path.display()),
        });
    };
    let candidates = symbols::AliasCandidates::new(&bytes);
    let kallsyms = Kallsyms::from_bytes(path, bytes).map_err(|e| e.to_string())?;
    Ok(KernelTable {
        aliases: symbols::KernelAliases::new(candidates, &kallsyms),
        kallsyms,
    })
}

/// What the unwinding thread hands the naming thread, in the recording's order.
enum Unwound {
    Sample(SampleOut),
    /// The period of a sample `--comms` left out (perf report's percentages count it).
    FilteredOut(u64),
}

/// The unwinding side (a thread of its own): reads the recording, keeps each process's
/// mappings and unwinder, and turns each sample into frames located in files.
struct Unwinding<A: UnwindArch> {
    /// Shared with the naming side: files are opened once, for both.
    symbolizer: Arc<Symbolizer>,
    procs: HashMap<i32, Proc<A>>,
    comms: HashMap<i32, Arc<str>>,
    /// A path's file, opened once.
    files: HashMap<Vec<u8>, Arc<FileInfo>>,
    /// The build-ids the recording lists, by path.
    build_ids: HashMap<Vec<u8>, Vec<u8>>,
    /// perf's build-id cache (see [`buildid_dir`]).
    buildid_dir: Option<PathBuf>,
    /// Which processes live in another mount namespace (src/perf/container.rs).
    roots: container::Roots,
    vdso: Option<Arc<ElfFile>>,
    /// The jitdump files the MMAP records name (shared with the naming side by the files).
    jit_dumps: Arc<jit::Dumps>,
}

/// The naming side (the main thread): names the located frames, as perf does, and prints
/// or adds up the samples.
struct Naming {
    symbolizer: Arc<Symbolizer>,
    fields: Fields,
    event_names: Arc<[String]>,
    /// The longest event name (perf pads the event to it).
    event_width: usize,
    kernel: KernelNames,
    /// Samples waiting for kallsyms (in order).
    pending: VecDeque<SampleOut>,
    names: HashMap<(usize, u64), Arc<Resolved>>,
    perf_names: symbols::PerfNames,
    folded: HashMap<String, u64>,
    report: report::Report,
    line: String,
}

/// `stacksym perf ARGS`: `argv` starts with the command's name, as clap expects.
pub fn main(argv: Vec<std::ffi::OsString>) -> ExitCode {
    keep_freed_memory();
    let args = Args::parse_from(argv);
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("stacksym perf: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let recording = data::open(&args.input)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    match recording.arch() {
        RecordedArch::Aarch64 => unwind_all::<RegsAarch64, _>(recording, args, &mut out)?,
        RecordedArch::X86_64 => unwind_all::<RegsX86_64, _>(recording, args, &mut out)?,
    }
    out.flush().map_err(|e| format!("writing: {e}"))
}

/// Tells glibc's malloc to keep memory it is given back rather than return it to the kernel:
/// the unwinding thread allocates each sample's frames and header and the naming thread
/// frees them, so the unwinding thread's arena kept shrinking and growing again (trimmed
/// back, then `mprotect` and a fresh zeroed page at each fault): a tenth of that thread's
/// time on a system-wide recording. A process that lives a second can keep it.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets malloc's parameters; it is called before any other thread starts
    // (and glibc takes its lock for it). A parameter it refuses stays at its default.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TOP_PAD, 16 << 20);
    }
}

/// perf's build-id cache: `--buildid-dir`, else `~/.debug` (perf's default; its config's
/// `buildid.dir` is not read).
fn buildid_dir(args: &Args) -> Option<PathBuf> {
    if let Some(dir) = &args.buildid_dir {
        return Some(dir.clone());
    }
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".debug"))
}

/// The kallsyms file perf would name the recording's kernel frames with (see the top).
fn kallsyms_path(args: &Args, recorded: Option<&[u8]>) -> Option<PathBuf> {
    if args.no_kernel {
        return None;
    }
    if let Some(path) = &args.kallsyms {
        return Some(path.clone());
    }
    let Some(recorded) = recorded else {
        return Some(PathBuf::from("/proc/kallsyms"));
    };
    let hex: String = recorded.iter().map(|b| format!("{b:02x}")).collect();
    if let Some(dir) = buildid_dir(args) {
        let cached = dir.join("[kernel.kallsyms]").join(&hex).join("kallsyms");
        if cached.is_file() {
            return Some(cached);
        }
    }
    let running = std::fs::read("/sys/kernel/notes")
        .ok()
        .and_then(|notes| gnu_build_id(&notes));
    // perf pads a recorded build-id to 20 bytes.
    let same = running.is_some_and(|id| {
        recorded.starts_with(&id) && recorded[id.len()..].iter().all(|&b| b == 0)
    });
    if same {
        Some(PathBuf::from("/proc/kallsyms"))
    } else {
        eprintln!(
            "stacksym perf: note: kernel frames unnamed: the recording's kernel (build-id {hex}) \
             is not the running one, and perf's build-id cache has no kallsyms of it"
        );
        None
    }
}

/// The GNU build-id in an ELF notes section's bytes (`/sys/kernel/notes`).
fn gnu_build_id(mut notes: &[u8]) -> Option<Vec<u8>> {
    let word = |b: &[u8], at: usize| -> Option<usize> {
        let bytes: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_le_bytes(bytes) as usize)
    };
    let align = |n: usize| n.checked_add(3).map(|n| n & !3);
    while notes.len() >= 12 {
        let (namesz, descsz, kind) = (word(notes, 0)?, word(notes, 4)?, word(notes, 8)?);
        let desc_at = 12 + align(namesz)?;
        let next = desc_at.checked_add(align(descsz)?)?;
        let name = notes.get(12..12 + namesz)?;
        if kind == 3 && name == b"GNU\0" {
            return notes.get(desc_at..desc_at + descsz).map(<[u8]>::to_vec);
        }
        notes = notes.get(next..)?;
    }
    None
}

/// Prints every sample of `recording`, unwound with registers of type `A`.
fn unwind_all<A: UnwindArch + FromPerfRegs + Send, R: AsRef<[u8]> + Send>(
    mut recording: data::PerfData<R>,
    args: &Args,
    out: &mut impl Write,
) -> Result<(), String> {
    let event_names: Vec<String> = recording
        .event_names()
        .into_iter()
        .map(|name| name.unwrap_or_else(|| "[unknown]".to_string()))
        .collect();
    let event_width = event_names.iter().map(String::len).max().unwrap_or(0);
    let (time, cpu, period) = recording
        .sample_fields()
        .first()
        .copied()
        .unwrap_or((true, false, true));
    let default = Fields::perf_default(time, cpu, period);
    let fields = match &args.fields {
        Some(spec) => Fields::parse(spec, default)?,
        None => default,
    };
    let mut build_ids: HashMap<Vec<u8>, Vec<u8>> = recording.build_ids().into_iter().collect();
    if recording.features_missing() {
        // A recording cut short does not say which vDSO it saw (its build-id is gone): an
        // empty build-id, which no file has, leaves it unread as perf leaves a vDSO it does
        // not have (unnamed, the unwinding stopped there).
        build_ids.insert(b"[vdso]".to_vec(), Vec::new());
    }
    let kernel_build_id = build_ids.get(&b"[kernel.kallsyms]"[..]).cloned();
    let need_lines = !args.no_inline || fields.has(Field::SrcLine);
    // Two threads: this one names and prints while the other reads the recording and
    // unwinds (about half of the work each on a system-wide recording); the symbolizer's
    // files are shared, and its DWARF sections are decompressed on two threads as well.
    let symbolizer = Arc::new(
        Symbolizer::builder()
            .source_lines(need_lines)
            .threads(2)
            .build(),
    );
    let event_names: Arc<[String]> = event_names.into();
    let mut unwinding: Unwinding<A> = Unwinding {
        symbolizer: Arc::clone(&symbolizer),
        procs: HashMap::new(),
        comms: HashMap::new(),
        files: HashMap::new(),
        build_ids,
        buildid_dir: buildid_dir(args),
        roots: container::Roots::default(),
        vdso: own_vdso(),
        jit_dumps: Arc::default(),
    };
    let mut naming = Naming {
        symbolizer,
        fields,
        event_names,
        event_width,
        kernel: KernelNames::NotNeeded(match recording.features_missing() {
            // Which kernel recorded it is not known (its build-id was a feature section).
            true if args.kallsyms.is_none() => None,
            _ => kallsyms_path(args, kernel_build_id.as_deref()),
        }),
        pending: VecDeque::new(),
        names: HashMap::new(),
        perf_names: symbols::PerfNames::default(),
        folded: HashMap::new(),
        report: report::Report::default(),
        line: String::new(),
    };
    let io = |e: std::io::Error| format!("writing: {e}");
    // Batches bound what is in flight (the stack copies stay on the unwinding side). The
    // first ones are small (1, 2, 4... samples): the naming side, and the reading of
    // kallsyms it starts at the first kernel frame, begin at the first sample instead of
    // the 64th (on a system-wide recording, 20 ms in, one core idle until then).
    const BATCH: usize = 64;
    let (send, receive) = std::sync::mpsc::sync_channel::<Vec<Unwound>>(16);
    let notes = std::thread::scope(|scope| -> Result<Vec<String>, String> {
        let unwinder = scope.spawn(move || -> Result<Vec<String>, String> {
            let mut batch = Vec::with_capacity(BATCH);
            let mut limit = 1;
            while let Some(event) = recording.next_event()? {
                unwinding.record(event, args, &mut batch);
                if batch.len() >= limit {
                    limit = (limit * 2).min(BATCH);
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    if send.send(full).is_err() {
                        // The naming side stopped; it reports why.
                        return Ok(Vec::new());
                    }
                }
            }
            let _ = send.send(batch);
            // Said once the samples are printed: record kinds passed over, and what was
            // wrong where the recording ends.
            let notes = recording.notes();
            // Its processes, mappings and caches are not freed one by one: the process ends
            // soon (as for the naming side's, below), and the naming side waits for this
            // thread's end (1.4 % of a system-wide run, at its end).
            std::mem::forget(unwinding);
            // Unmapped here, while the naming side finishes, rather than by the main thread
            // after it.
            drop(recording);
            Ok(notes)
        });
        let named = receive.into_iter().try_for_each(|batch| {
            naming.name_batch(&batch);
            batch
                .into_iter()
                .try_for_each(|unwound| naming.take(unwound, args, out))
        });
        // `receive` is gone: an unwinding side still sending stops at its next batch.
        let unwound = unwinder
            .join()
            .unwrap_or_else(|_| Err("the unwinding thread panicked".to_string()));
        named.map_err(io)?;
        unwound
    })?;
    for note in notes {
        eprintln!("stacksym perf: note: {note}");
    }
    naming.finish_kernel();
    naming.flush_pending(args, out).map_err(io)?;
    if args.report {
        let event = naming
            .event_names
            .first()
            .map_or("[unknown]", String::as_str);
        let children = !args.no_children;
        let table = naming.report.print(children, args.percent_limit, event);
        out.write_all(table.as_bytes()).map_err(io)?;
    }
    let mut folded: Vec<_> = std::mem::take(&mut naming.folded).into_iter().collect();
    folded.sort();
    if args.folded {
        for (stack, n) in &folded {
            writeln!(out, "{stack} {n}").map_err(io)?;
        }
    }
    if let Some(path) = &args.flamegraph {
        write_flamegraph(path, &folded, &naming.event_names)?;
    }
    // The process ends next: freeing each cached name, file and table one by one took 5 %
    // of a system-wide run.
    std::mem::forget(naming);
    Ok(())
}

/// Writes the folded stacks as inferno's flame graph SVG (titled with the event, counted in
/// samples).
fn write_flamegraph(
    path: &Path,
    folded: &[(String, u64)],
    event_names: &[String],
) -> Result<(), String> {
    let lines: Vec<String> = folded.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let mut options = inferno::flamegraph::Options::default();
    options.title = match event_names.first() {
        Some(event) => format!("stacksym perf: {event}"),
        None => "stacksym perf".to_string(),
    };
    options.count_name = "samples".to_string();
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut writer = BufWriter::new(file);
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut writer)
        .map_err(|e| format!("{}: writing the flame graph: {e}", path.display()))?;
    writer
        .flush()
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// This machine's vDSO (the one a recording made here saw).
fn own_vdso() -> Option<Arc<ElfFile>> {
    let process = Process::new(std::process::id());
    let maps = process.read_maps().ok()?;
    process.vdso(&maps).ok().flatten().map(Arc::new)
}

impl<A: UnwindArch + FromPerfRegs> Unwinding<A> {
    /// Takes in one event of the recording; a sample goes to `batch`, unwound.
    fn record(&mut self, event: PerfEvent<'_>, args: &Args, batch: &mut Vec<Unwound>) {
        match event {
            PerfEvent::Comm { tid, name, .. } => {
                self.comms.insert(tid, name.into());
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
                        // Room for what an exec maps next: a clone is exactly full, and
                        // growing it at the child's first mapping copied it again (most of
                        // the time add_mapping took).
                        let mut maps = Vec::with_capacity(parent.maps.len() + 64);
                        maps.extend(parent.maps.iter().cloned());
                        let mut proc = new_proc(modules);
                        proc.maps = maps;
                        self.procs.insert(pid, proc);
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
                exec,
            } => {
                if jit::is_jitdump(&path) {
                    self.jit_dumps.mapped(pid, &path);
                }
                let jit = exec && jit::is_identity(&path);
                let path = match jit {
                    true => jit::map_path(pid).into_bytes(),
                    false => path,
                };
                self.add_mapping(pid, start, len, pgoff, &path, jit)
            }
            PerfEvent::Sample(sample) => {
                let (pid, tid) = (sample.pid, sample.tid);
                let comm = match self.comms.get(&tid) {
                    Some(comm) => comm.clone(),
                    None => Arc::from(format!(":{tid}")),
                };
                if let Some(comms) = &args.comms {
                    if !comms.split(',').any(|c| c == &*comm) {
                        batch.push(Unwound::FilteredOut(sample.period.unwrap_or(1)));
                        return;
                    }
                }
                let mut frames: Vec<FrameOut> = Vec::new();
                let mut user_from_callchain = false;
                if !args.no_kernel {
                    frames.extend(
                        sample
                            .kernel_callchain
                            .iter()
                            .map(|&ip| FrameOut::Kernel(ip)),
                    );
                }
                if let Some((regs, memory)) = sample.unwind_input::<A>() {
                    // perf's libunwind reads a word of the copy only when it ends before
                    // the copy's last byte (`addr + 8 >= end` is "not inside range",
                    // util/unwind-libunwind-local.c's access_mem): the last word is never
                    // read. Without its last byte, the copy gives the unwinder what perf
                    // reads: a return address in that word ends the walk, as perf's does (9
                    // of 177 samples of a CPython 3.13 recording named one frame more).
                    let bytes = memory.bytes();
                    let memory =
                        StackCopy::new(memory.start(), &bytes[..bytes.len().saturating_sub(1)]);
                    // perf's end of a walk that ran off the stack copy (see below).
                    let mut off_the_copy = false;
                    let user = match self.procs.get_mut(&pid) {
                        // An empty stack copy: perf unwinds nothing ("Bail out if nothing
                        // was captured", thread__resolve_callchain_unwind), not even the
                        // sample's own address.
                        Some(_) if memory.bytes().is_empty() => Vec::new(),
                        Some(proc) => {
                            if let Some(dump) = self.jit_dumps.of(pid) {
                                jit::add_unwind_tables(dump.get(), proc, sample.time);
                            }
                            let cache = proc.cache.get_or_insert_with(UnwindCache::new);
                            let stack = proc.unwinder.unwind(&regs, &memory, cache);
                            if args.stop_reasons {
                                eprintln!(
                                    "{tid}: {} frames, {:?} sp {:#x} copy {}",
                                    stack.frames.len(),
                                    stack.stop,
                                    memory.start(),
                                    memory.bytes().len(),
                                );
                            }
                            let copy_end =
                                memory.start().0.saturating_add(memory.bytes().len() as u64);
                            off_the_copy = matches!(
                                stack.stop,
                                stacksym::unwind::StopReason::MemoryUnreadable { addr } if addr.0.saturating_add(8) > copy_end
                            );
                            stack.frames
                        }
                        // No mapping of the process is known yet (a sample taken while the
                        // kernel still loads the program, before its first mmap event): perf
                        // unwinds nothing and shows no user frame, and neither do we.
                        None => Vec::new(),
                    };
                    frames.reserve(user.len());
                    for frame in user {
                        // perf script shows every frame after the first at `addr - 1`, a
                        // signal trampoline too (where `lookup_addr` keeps the address, so
                        // that the trampoline is named `__restore_rt`): print what perf prints.
                        let shown_addr = if frame.is_return_address() {
                            frame.addr.wrapping_sub(1)
                        } else {
                            frame.addr
                        };
                        let frame = self.user_frame(pid, shown_addr.0, sample.time);
                        let last = matches!(
                            &frame,
                            FrameOut::User { file: Some(file), .. } if file.missing_recorded
                        );
                        frames.push(frame);
                        if last {
                            // perf cannot unwind through a file it does not have.
                            off_the_copy = false;
                            break;
                        }
                    }
                    if off_the_copy {
                        // A return address past what perf reads of the stack copy: perf's
                        // libunwind reads it as 0 (access_mem sets the word to 0 as it
                        // fails), a frame at pc 0 shown at `0 - 1` (`ffffffffffffffff
                        // [unknown] ([unknown])`); so in 87 of 87 such samples of a Node
                        // recording.
                        frames.push(self.user_frame(pid, u64::MAX, sample.time));
                    }
                } else if !sample.user_callchain.is_empty() {
                    user_from_callchain = true;
                    self.callchain_frames(pid, &sample.user_callchain, sample.time, &mut frames);
                } else if sample.in_user_mode {
                    if let Some(ip) = sample.ip {
                        frames.push(self.user_frame(pid, ip, sample.time));
                    }
                }
                batch.push(Unwound::Sample(SampleOut {
                    comm,
                    period: sample.period.unwrap_or(1),
                    pid,
                    tid,
                    cpu: sample.cpu,
                    time: sample.time,
                    recorded_period: sample.period,
                    attr_index: sample.attr_index,
                    frames,
                    user_from_callchain,
                }));
            }
            PerfEvent::Exit { .. } | PerfEvent::Other => {}
        }
    }
}

impl Naming {
    /// Takes in what the unwinding side sent: names a sample's frames and prints it (or
    /// adds it up), or holds it while kallsyms is being read.
    fn take(&mut self, unwound: Unwound, args: &Args, out: &mut impl Write) -> std::io::Result<()> {
        let mut sample = match unwound {
            Unwound::FilteredOut(period) => {
                self.report.add_filtered_out(period);
                return Ok(());
            }
            Unwound::Sample(sample) => sample,
        };
        for frame in &mut sample.frames {
            match frame {
                FrameOut::Kernel(_) => self.start_kernel(),
                // Named on the unwinding side (from a jitdump, by the sample's time).
                FrameOut::User {
                    resolved: Some(_), ..
                } => {}
                FrameOut::User {
                    ip,
                    file: Some(file),
                    resolved,
                    ..
                } => {
                    let key = (file.id, *ip);
                    let mut found = match self.names.get(&key) {
                        Some(found) => found.clone(),
                        None => {
                            let found = Arc::new(self.resolve(file, *ip));
                            self.names.insert(key, found.clone());
                            found
                        }
                    };
                    if sample.user_from_callchain && !found.inlines.is_empty() {
                        found = Arc::new(Resolved {
                            sym: found.sym.clone(),
                            inlines: Vec::new(),
                            srcline: found.srcline.clone(),
                        });
                    }
                    *resolved = Some(found);
                }
                FrameOut::User { file: None, .. } => {}
            }
        }
        if let KernelNames::Loading(handle) = &self.kernel {
            if handle.is_finished() {
                self.finish_kernel();
            }
        }
        match self.kernel {
            KernelNames::Loading(_) => self.pending.push_back(sample),
            _ => {
                self.flush_pending(args, out)?;
                self.emit(&sample, args, out)?;
            }
        }
        Ok(())
    }

    /// Starts reading kallsyms on a second thread (once).
    fn start_kernel(&mut self) {
        if let KernelNames::NotNeeded(path) = &mut self.kernel {
            self.kernel = match path.take() {
                Some(path) => {
                    KernelNames::Loading(std::thread::spawn(move || match read_kallsyms(&path) {
                        Ok(table) => Some(table),
                        Err(e) => {
                            eprintln!("stacksym perf: note: kernel frames unnamed: {e}");
                            None
                        }
                    }))
                }
                None => KernelNames::Ready(None),
            };
        }
    }

    /// Waits for kallsyms if it is being read.
    fn finish_kernel(&mut self) {
        if let KernelNames::Loading(_) = self.kernel {
            let KernelNames::Loading(handle) =
                std::mem::replace(&mut self.kernel, KernelNames::Ready(None))
            else {
                return; // matched just above
            };
            self.kernel = KernelNames::Ready(handle.join().ok().flatten());
        }
    }

    fn flush_pending(&mut self, args: &Args, out: &mut impl Write) -> std::io::Result<()> {
        while let Some(sample) = self.pending.pop_front() {
            self.emit(&sample, args, out)?;
        }
        Ok(())
    }

    /// Prints a sample (or adds it to the folded stacks).
    fn emit(
        &mut self,
        sample: &SampleOut,
        args: &Args,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        let kallsyms = match &self.kernel {
            KernelNames::Ready(k) => k.as_ref(),
            _ => None,
        };
        let fields = self.fields;
        let inline = !args.no_inline;
        let line = &mut self.line;
        line.clear();
        if args.report {
            // An inlined line's dso is its holding frame's; a callchain entry without a
            // symbol is the address in the process (perf's quirk), the sample's own entry
            // the address in the file.
            let key = |l: &script::Line<'_>, frame: &FrameOut, kernel: bool, in_chain: bool| {
                let (dso, abs) = match frame {
                    FrameOut::Kernel(ip) => (l.dso.unwrap_or_default(), *ip),
                    FrameOut::User { file, abs, .. } => {
                        (file.as_ref().map_or("[unknown]", |file| &*file.short), *abs)
                    }
                };
                let mark = if kernel { "[k]" } else { "[.]" };
                let sym = match (l.sym, l.dso) {
                    (Some((name, _)), Some(_)) => format!("{mark} {name}"),
                    (Some((name, _)), None) => format!("{mark} {name} (inlined)"),
                    (None, _) if in_chain => format!("{mark} {}", c_hex(abs)),
                    (None, _) => format!("{mark} {}", c_hex(l.ip)),
                };
                report::Key {
                    comm: sample.comm.to_string(),
                    // perf's short name (a user file's is FileInfo::short).
                    dso: dso.rsplit('/').next().unwrap_or(dso).to_string(),
                    sym,
                    // perf tells symbols apart by their start (two `operator delete`
                    // rows for libstdc++'s two), inlined ones by the holder's.
                    holder: l.sym.map_or(0, |s| l.ip.wrapping_sub(s.1)),
                }
            };
            let levels = report_levels(&sample.frames);
            let mut chain = Vec::new();
            let mut own = None;
            if let Some(frame) = sample.frames.first() {
                let kernel = matches!(frame, FrameOut::Kernel(_));
                for_each_line(frame, kallsyms, false, |l| {
                    own = Some(key(&l, frame, kernel, false))
                });
            }
            for (frame, &kernel) in sample.frames.iter().zip(&levels) {
                for_each_line(frame, kallsyms, inline, |l| {
                    chain.push(key(&l, frame, kernel, true))
                });
            }
            self.report.add(sample.period, own, chain);
            return Ok(());
        }
        if args.folded || args.flamegraph.is_some() {
            // As inferno's collapse-perf folds perf script's lines (the reference of
            // tests/perf_script_layout.rs): a frame without a symbol is its dso's last
            // component in brackets, `;` in a name is `:`, a space in the command `_`, and a
            // stack counts its samples' periods.
            let mut names: Vec<String> = Vec::new();
            for frame in &sample.frames {
                for_each_line(frame, kallsyms, inline, |l| {
                    names.push(match (l.sym, l.dso) {
                        (Some((name, _)), _) => name.replace(';', ":"),
                        (None, Some(dso)) if dso != "[unknown]" => {
                            format!("[{}]", dso.rsplit('/').next().unwrap_or(dso))
                        }
                        (None, _) => "[unknown]".to_string(),
                    })
                });
            }
            let mut stack = sample.comm.replace(' ', "_");
            for name in names.iter().rev() {
                stack.push(';');
                stack.push_str(name);
            }
            *self.folded.entry(stack).or_default() += sample.period;
            return Ok(());
        }
        let event = self
            .event_names
            .get(sample.attr_index)
            .map_or("[unknown]", String::as_str);
        script::header(
            line,
            fields,
            &script::Header {
                comm: &sample.comm,
                pid: sample.pid,
                tid: sample.tid,
                cpu: sample.cpu,
                time: sample.time,
                period: sample.recorded_period,
                event,
                event_width: self.event_width,
            },
        );
        line.push('\n');
        for frame in &sample.frames {
            for_each_line(frame, kallsyms, inline, |l| script::line(line, fields, &l));
        }
        line.push('\n');
        out.write_all(line.as_bytes())
    }
}

impl<A: UnwindArch> Unwinding<A> {
    /// Adds a mapping of `path` to process `pid`; `jit`: `path` is its perf map's (see
    /// src/perf/jit.rs).
    fn add_mapping(&mut self, pid: i32, start: u64, len: u64, pgoff: u64, path: &[u8], jit: bool) {
        if pid < 0 || len == 0 {
            return;
        }
        // A file of a process in another mount namespace is that namespace's.
        let namespace = match jit || path.first() != Some(&b'/') {
            true => None,
            false => self.roots.other_namespace(pid).map(str::to_string),
        };
        let key = match &namespace {
            Some(namespace) => [namespace.as_bytes(), b"\0", path].concat(),
            None => path.to_vec(),
        };
        let file = match self.files.get(&key) {
            Some(file) => file.clone(),
            None => {
                let is_vdso = path == b"[vdso]";
                let in_root = namespace
                    .as_ref()
                    .and_then(|_| container::open(&self.symbolizer, pid, start, path))
                    .filter(|elf| self.is_recorded(path, elf));
                let elf = if is_vdso {
                    self.vdso.clone()
                } else if in_root.is_some() {
                    in_root
                } else if jit {
                    None
                } else if path.first() == Some(&b'/') {
                    std::str::from_utf8(path)
                        .ok()
                        .and_then(|p| self.symbolizer.elf_file(Path::new(p)).ok())
                } else {
                    None
                };
                let elf = self.as_recorded(path, elf);
                let missing_recorded = elf.is_none() && self.build_ids.contains_key(path);
                let dso: Arc<str> = Arc::from(String::from_utf8_lossy(path).as_ref());
                let short: Arc<str> = match jit {
                    // perf's short name of a perf map (`dso__set_basename`).
                    true => Arc::from(format!("[JIT] tid {pid}")),
                    false => Arc::from(dso.rsplit('/').next().unwrap_or(&dso)),
                };
                let cfi = elf.as_ref().map(|elf| FileCfi::new(elf.clone(), None));
                let file = Arc::new(FileInfo {
                    dso,
                    short,
                    elf,
                    cfi,
                    is_vdso,
                    missing_recorded,
                    id: self.files.len(),
                    identity: jit || jit::is_identity(path),
                    jit: jit.then(|| (pid, std::sync::OnceLock::new())),
                });
                self.files.insert(key, file.clone());
                file
            }
        };
        let proc = self
            .procs
            .entry(pid)
            .or_insert_with(|| new_proc(Modules::new()));
        let range = start..start.saturating_add(len);
        if let Some(cfi) = &file.cfi {
            proc.unwinder.modules_mut().add_shared(
                AbsAddr(range.start)..AbsAddr(range.end),
                FileOffset(pgoff),
                cfi,
            );
        }
        // Sorted (highest first) and not overlapping, so the ends are sorted too: the
        // mappings the new one overlaps (and replaces) are one run, found by two binary
        // searches (a `retain` over every mapping took 2.5 % of a system-wide run), after
        // those above it.
        let first = proc.maps.partition_point(|m| m.range.start >= range.end);
        let last = proc.maps.partition_point(|m| m.range.end > range.start);
        let map = Map { range, pgoff, file };
        proc.maps
            .splice(first..last.max(first), std::iter::once(map));
    }

    /// Whether `elf` is the file the recording saw at `path`: its build-id, where the
    /// recording lists one (perf pads it to 20 bytes).
    fn is_recorded(&self, path: &[u8], elf: &ElfFile) -> bool {
        let Some(recorded) = self.build_ids.get(path) else {
            return true;
        };
        elf.build_id().is_some_and(|id| {
            recorded.starts_with(id) && recorded[id.len()..].iter().all(|&b| b == 0)
        })
    }

    /// `elf` when it is the file the recording saw (its build-id, where the recording lists
    /// one, is the file's); else the copy in perf's build-id cache (`DIR/.build-id/xx/rest/elf`,
    /// `DIR/[vdso]/ID/vdso`, as `perf record` and `perf buildid-cache -a` fill it and
    /// `perf archive` packs it); else none: perf names nothing in a file that changed.
    fn as_recorded(&self, path: &[u8], elf: Option<Arc<ElfFile>>) -> Option<Arc<ElfFile>> {
        let Some(recorded) = self.build_ids.get(path) else {
            return elf;
        };
        // perf pads a build-id to 20 bytes.
        let same =
            |id: &[u8]| recorded.starts_with(id) && recorded[id.len()..].iter().all(|&b| b == 0);
        if let Some(elf) = elf.filter(|elf| self.is_recorded(path, elf)) {
            return Some(elf);
        }
        let hex: String = recorded.iter().map(|b| format!("{b:02x}")).collect();
        let dir = self.buildid_dir.as_ref()?;
        let cached = if path == b"[vdso]" {
            dir.join("[vdso]").join(&hex).join("vdso")
        } else {
            dir.join(".build-id")
                .join(hex.get(..2)?)
                .join(hex.get(2..)?)
                .join("elf")
        };
        let elf = self.symbolizer.elf_file(&cached).ok()?;
        elf.build_id().is_some_and(same).then_some(elf)
    }

    /// The user frames of a callchain the kernel recorded (`--call-graph fp`): each entry
    /// named as it is, as perf shows them — the sample's address, then return addresses
    /// (not `- 1`, unlike the frames perf unwinds from a stack copy), a `0` where the walk
    /// read a null return address.
    fn callchain_frames(
        &self,
        pid: i32,
        callchain: &[u64],
        time: Option<u64>,
        frames: &mut Vec<FrameOut>,
    ) {
        // Named without inlined frames (see SampleOut::user_from_callchain).
        frames.extend(
            callchain
                .iter()
                .map(|&addr| self.user_frame(pid, addr, time)),
        );
    }

    /// The frame at `addr` of process `pid`: its file and the offset in it, not yet named.
    /// Where the process's jitdump has code at `addr` at the sample's `time`, the frame is
    /// named here from it (src/perf/jit.rs).
    fn user_frame(&self, pid: i32, addr: u64, time: Option<u64>) -> FrameOut {
        let unknown = FrameOut::User {
            ip: addr,
            abs: addr,
            file: None,
            resolved: None,
        };
        let Some(proc) = self.procs.get(&pid) else {
            return unknown;
        };
        // The highest mapping starting at or below `addr` (the maps are highest first).
        let at = proc.maps.partition_point(|m| m.range.start > addr);
        let Some(map) = proc.maps.get(at) else {
            return unknown;
        };
        if !map.range.contains(&addr) {
            return unknown;
        }
        if let Some(frame) = self.jit_frame(pid, addr, time) {
            return frame;
        }
        let offset = match map.file.identity {
            true => addr,
            false => addr - map.range.start + map.pgoff,
        };
        FrameOut::User {
            ip: offset,
            abs: addr,
            file: Some(map.file.clone()),
            // Named on the naming side.
            resolved: None,
        }
    }

    /// The frame at `addr` of process `pid` named from the code its jitdump had there at
    /// `time` (the last written when the sample has no time), as perf names it after
    /// `perf inject --jit`, whose injected mapping of each load replaces, from the load's
    /// time on, what was mapped there: anonymous memory, or the binary's text where V8
    /// names its embedded builtins. Its file is the process's perf map's (the dso column,
    /// see src/perf/jit.rs); `None` when no load covers `addr` then or the process mapped
    /// no anonymous executable memory.
    fn jit_frame(&self, pid: i32, addr: u64, time: Option<u64>) -> Option<FrameOut> {
        let cell = self.jit_dumps.of(pid)?;
        let dump = cell.get()?.as_ref()?;
        let code = jit::code_at(dump, addr, time)?;
        let file = self.files.get(jit::map_path(pid).as_bytes())?.clone();
        let resolved = jit::resolved(&code, &file.short, addr);
        Some(FrameOut::User {
            ip: addr,
            abs: addr,
            file: Some(file),
            resolved: Some(Arc::new(resolved)),
        })
    }
}

impl Naming {
    /// Names the address at `offset` of `file` as perf does.
    fn resolve(&mut self, file: &FileInfo, offset: u64) -> Resolved {
        let mut resolved = Resolved {
            sym: None,
            inlines: Vec::new(),
            srcline: None,
        };
        if let Some((pid, map)) = &file.jit {
            // An identity mapping: `offset` is the address. Code its jitdump had here at the
            // sample's time was named on the unwinding side (`jit_frame`); the perf map names
            // the rest.
            let map = map.get_or_init(|| jit::read(*pid));
            if let Some(sym) = map.as_ref().and_then(|m| m.find(stacksym::AbsAddr(offset))) {
                resolved.sym = Some((sym.name.into(), sym.offset));
            }
            resolved.srcline = Some(format!("{}[{offset:x}]", file.short).into());
            return resolved;
        }
        let Some(elf) = &file.elf else {
            resolved.srcline = Some(format!("{}[{offset:x}]", file.short).into());
            return resolved;
        };
        let virt = elf
            .segments()
            .file_offset_to_virt(stacksym::FileOffset(offset));
        let unknown_line =
            || -> Arc<str> { format!("{}[{:x}]", file.short, virt.map_or(offset, |v| v.0)).into() };
        if file.is_vdso {
            if let Some(sym) = virt.and_then(|virt| elf.find_symbol(virt).ok().flatten()) {
                let name = String::from_utf8_lossy(sym.name);
                let start = sym.addr.0;
                resolved.sym = Some((name.as_ref().into(), virt.map_or(0, |v| v.0 - start)));
            }
            resolved.srcline = Some(unknown_line());
            return resolved;
        }
        let symbols = self.symbolizer.symbolize(
            &Source::Elf { path: elf.path() },
            Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&[offset])),
        );
        let sym = symbols.as_ref().ok().and_then(|s| s.get(0));
        name_in_elf(&mut self.perf_names, file, elf, offset, sym)
    }

    /// Names the user frames of `batch` that are not named yet and that stacksym names
    /// (in ELF files): one `symbolize` call per file for all of them (one per address took
    /// a file-identity `stat` each: 8 % of the naming thread).
    fn name_batch(&mut self, batch: &[Unwound]) {
        let mut misses: Vec<(usize, u64, &Arc<FileInfo>)> = Vec::new();
        for unwound in batch {
            let Unwound::Sample(sample) = unwound else {
                continue;
            };
            for frame in &sample.frames {
                if let FrameOut::User {
                    ip,
                    file: Some(file),
                    ..
                } = frame
                {
                    let in_elf = file.jit.is_none() && !file.is_vdso && file.elf.is_some();
                    if in_elf && !self.names.contains_key(&(file.id, *ip)) {
                        misses.push((file.id, *ip, file));
                    }
                }
            }
        }
        misses.sort_unstable_by_key(|&(id, ip, _)| (id, ip));
        misses.dedup_by_key(|&mut (id, ip, _)| (id, ip));
        for group in misses.chunk_by(|a, b| a.0 == b.0) {
            let Some(&(_, _, file)) = group.first() else {
                continue;
            };
            let Some(elf) = &file.elf else { continue };
            let offsets: Vec<u64> = group.iter().map(|&(_, ip, _)| ip).collect();
            let symbols = self.symbolizer.symbolize(
                &Source::Elf { path: elf.path() },
                Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&offsets)),
            );
            for (i, &offset) in offsets.iter().enumerate() {
                let sym = symbols.as_ref().ok().and_then(|s| s.get(i));
                let resolved = name_in_elf(&mut self.perf_names, file, elf, offset, sym);
                self.names.insert((file.id, offset), Arc::new(resolved));
            }
        }
    }
}

/// Names the address at `offset` of the ELF file `elf` (`file`'s) as perf does, from what
/// stacksym answered for it (`sym`); in a PLT section, by perf's own walk of its symbols
/// (perf/plt.rs), which may name the entry, the `_init` before it, or nothing.
fn name_in_elf(
    perf_names: &mut symbols::PerfNames,
    file: &FileInfo,
    elf: &ElfFile,
    offset: u64,
    sym: Option<stacksym::Sym<'_>>,
) -> Resolved {
    let mut resolved = name_from_stacksym(perf_names, file, elf, offset, sym);
    let virt = elf
        .segments()
        .file_offset_to_virt(stacksym::FileOffset(offset));
    if let Some(virt) = virt {
        let table = || perf_debug_table(elf);
        if let Some(answer) = perf_names.plt.name(elf, virt.0, table) {
            resolved.sym = answer.map(|(name, off)| (name.into(), off));
            resolved.inlines.clear();
        }
    }
    resolved
}

/// The debug file whose symbol table perf 6.1 reads for `elf`, where it reads one: under
/// `/usr/lib/debug/.build-id/`, with `elf`'s build-id and a `.symtab` (perf's `dso__load`
/// tries it before the file itself); `None` for the file's own table.
fn perf_debug_table(elf: &ElfFile) -> Option<PathBuf> {
    let id = elf.build_id()?;
    let path = build_id_debug_file(id);
    let debug = ElfFile::open(&path).ok()?;
    let has_symtab = debug
        .section_address(".symtab")
        .is_ok_and(|symtab| symtab.is_some());
    (debug.build_id() == Some(id) && has_symtab).then_some(path)
}

/// The debug file of build-id `id` under `/usr/lib/debug/.build-id/`, where perf looks.
fn build_id_debug_file(id: &[u8]) -> PathBuf {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    Path::new("/usr/lib/debug/.build-id")
        .join(hex.get(..2).unwrap_or_default())
        .join(format!("{}.debug", hex.get(2..).unwrap_or_default()))
}

/// [`name_in_elf`] outside PLT sections.
fn name_from_stacksym(
    perf_names: &mut symbols::PerfNames,
    file: &FileInfo,
    elf: &ElfFile,
    offset: u64,
    sym: Option<stacksym::Sym<'_>>,
) -> Resolved {
    let mut resolved = Resolved {
        sym: None,
        inlines: Vec::new(),
        srcline: None,
    };
    let virt = elf
        .segments()
        .file_offset_to_virt(stacksym::FileOffset(offset));
    let unknown_line =
        || -> Arc<str> { format!("{}[{:x}]", file.short, virt.map_or(offset, |v| v.0)).into() };
    let Some(sym) = sym else {
        // perf names some addresses stacksym does not: labels, in the file's own table
        // or its debug file's (found by build-id, as perf finds it).
        let tables = [
            Some(elf.path().to_path_buf()),
            elf.build_id().map(build_id_debug_file),
        ];
        if let Some(virt) = virt {
            for table in tables.iter().flatten() {
                if let Some((name, off)) = perf_names.containing(table, virt.0) {
                    let name = stacksym::demangle::demangle(name);
                    resolved.sym = Some((perf_name(&name).into(), off));
                    break;
                }
            }
            if resolved.sym.is_none() {
                resolved.sym = unnamed_plt_entry(elf, virt.0).map(|off| ("@plt".into(), off));
            }
        }
        resolved.srcline = Some(unknown_line());
        return resolved;
    };
    let base: Option<Arc<str>> = match sym.origin {
        NameOrigin::Dwarf => None,
        _ => Some(match perf_names.at(sym.symbol_file, sym.addr.raw()) {
            Some(name) => perf_symbol_name(name).into(),
            None => match std::str::from_utf8(sym.raw_name) {
                Ok(raw) if raw.starts_with("_Z") => perf_symbol_name(raw).into(),
                _ => perf_name(sym.name).into(),
            },
        }),
    };
    if let Some(name) = &base {
        resolved.sym = Some((name.clone(), sym.offset));
        for frame in sym.frames {
            // perf 6.1 reads inlined frames from binutils' addr2line, which names a function
            // by its linkage name where DWARF has one, demangled without parameters.
            let function = frame.function.as_ref().map_or_else(
                || "??".to_string(),
                |f| match f.raw.starts_with("_Z") {
                    true => perf_symbol_name(&f.raw),
                    false => perf_name(&f.demangled).to_string(),
                },
            );
            // A line DWARF gives outside every function (`.fini` of libm's debug file)
            // is the symbol's own frame, not an inlined `??`: perf prints the symbol. So is
            // a frame named as the symbol (perf reuses the symbol where addr2line's name is
            // its name), which the linkage name makes of a template function's own frame.
            let own = (frame.function.is_none() && !frame.inlined) || function == **name;
            resolved.inlines.push((
                if own { name.clone() } else { function.into() },
                own,
                frame_srcline(frame),
            ));
        }
    }
    resolved.srcline = sym
        .frames
        .first()
        .and_then(frame_srcline)
        .or_else(|| Some(unknown_line()));
    resolved
}

/// The offset into its entry of `virt` when it is in a `.plt` entry stacksym leaves
/// unnamed: one whose relocation names no symbol (`R_X86_64_IRELATIVE`, as all of libc's
/// are), which perf 6.1's `dso__synthesize_plt_symbols` names `@plt` (an empty name plus
/// the suffix). Not the header entry (PLT0), which perf leaves unnamed; not in a file with
/// `.plt.sec` (IBT), whose entries lie elsewhere. 16-byte entries (x86_64).
fn unnamed_plt_entry(elf: &ElfFile, virt: u64) -> Option<u64> {
    const ENTRY: u64 = 16;
    if elf.header().machine != 62 || elf.section_address(".plt.sec").ok().flatten().is_some() {
        return None;
    }
    let start = elf.section_address(".plt").ok()??.0;
    let size = match elf.section_contents(".plt").ok()?? {
        stacksym::elf::SectionContents::InFile(range) => range.len() as u64,
        stacksym::elf::SectionContents::Owned(bytes) => bytes.len() as u64,
    };
    let offset = virt.checked_sub(start)?;
    (offset >= ENTRY && offset < size).then_some(offset % ENTRY)
}

/// perf's srcline of a DWARF frame: the file's last component and the line (0 unknown).
fn frame_srcline(frame: &stacksym::dwarf::InlineFrame) -> Option<Arc<str>> {
    let file = frame.file.as_deref()?;
    let base = file.rsplit('/').next().unwrap_or(file);
    Some(format!("{base}:{}", frame.line.unwrap_or(0)).into())
}

/// Calls `f` with each line perf prints for `frame`: the frames of inlined functions (when
/// `inline` and DWARF has them) and the frame itself.
fn for_each_line(
    frame: &FrameOut,
    kallsyms: Option<&KernelTable>,
    inline: bool,
    mut f: impl FnMut(script::Line<'_>),
) {
    match frame {
        FrameOut::Kernel(ip) => {
            let found = kallsyms.and_then(|k| {
                let sym = k.kallsyms.find_symbol(AbsAddr(*ip)).ok().flatten()?;
                Some((k.aliases.name(sym.addr.0, sym.name), sym.offset, sym.module))
            });
            let module = found.and_then(|sym| sym.2).map(|m| format!("[{m}]"));
            let dso = module.as_deref().unwrap_or("[kernel.kallsyms]");
            // perf's srcline of an address it cannot give a line: `dso[address]`.
            let srcline = format!("{dso}[{ip:x}]");
            f(script::Line {
                ip: *ip,
                sym: found.map(|(name, offset, _)| (name, offset)),
                dso: Some(dso),
                srcline: Some(&srcline),
            })
        }
        FrameOut::User {
            ip, file, resolved, ..
        } => {
            let dso: &str = file.as_ref().map_or("[unknown]", |file| &file.dso);
            let Some(resolved) = resolved else {
                return f(script::Line {
                    ip: *ip,
                    sym: None,
                    dso: Some(dso),
                    srcline: None,
                });
            };
            let srcline = resolved.srcline.as_deref();
            match &resolved.sym {
                Some((_, offset)) if inline && !resolved.inlines.is_empty() => {
                    for (name, own, srcline) in &resolved.inlines {
                        f(script::Line {
                            ip: *ip,
                            sym: Some((&**name, *offset)),
                            dso: own.then_some(dso),
                            srcline: srcline.as_deref(),
                        })
                    }
                }
                sym => f(script::Line {
                    ip: *ip,
                    sym: sym.as_ref().map(|(name, offset)| (&**name, *offset)),
                    dso: Some(dso),
                    srcline,
                }),
            }
        }
    }
}

/// An address as perf report prints one without a symbol (`%-#.*llx`, 16 digits): C's `#`
/// adds no `0x` to a zero.
fn c_hex(addr: u64) -> String {
    if addr == 0 {
        format!("{addr:016x}")
    } else {
        format!("{addr:#018x}")
    }
}

/// Whether perf report marks each callchain entry of a sample `[k]` (else `[.]`): a kernel
/// frame `[k]`, a user frame in a mapping `[.]`, and one in no mapping keeps the mark of the
/// entry before it, outermost first (perf walks the chain caller first and
/// `fill_callchain_info` leaves `al->level` as it was when there is no map), the sample's
/// own (a kernel frame first: `[k]`) at the outermost. So the `0` that ends a
/// `--call-graph fp` chain is `[k] 0000000000000000` in a sample taken in the kernel.
fn report_levels(frames: &[FrameOut]) -> Vec<bool> {
    let mut level = matches!(frames.first(), Some(FrameOut::Kernel(_)));
    let mut levels = vec![level; frames.len()];
    for (frame, slot) in frames.iter().zip(levels.iter_mut()).rev() {
        match frame {
            FrameOut::Kernel(_) => level = true,
            FrameOut::User { file: Some(_), .. } => level = false,
            FrameOut::User { file: None, .. } => {}
        }
        *slot = level;
    }
    levels
}

fn new_proc<A: UnwindArch>(modules: Modules) -> Proc<A> {
    Proc {
        unwinder: Unwinder::new(modules),
        cache: None,
        maps: Vec::new(),
        jit_loads: 0,
    }
}
