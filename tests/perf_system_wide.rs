//! `perf_unwind` on a system-wide recording made here, against `perf script` and
//! `perf report` on the same file, with framehop as a third opinion where the two differ.
//!
//! The recording: `perf record -a -e cpu-clock -F 199 --call-graph dwarf,8192` while a
//! mixed workload of system programs runs for about two seconds (`xz`, `python3`, `perl`,
//! `gcc` compiling a tiny file, `gzip | sha256sum`, `sort`, `git --version`: many short
//! processes, so fork, exec and comm events; and `xz` run from a memfd through
//! `/proc/self/fd/N`, whose mapping perf calls `/memfd:stacksym-xz (deleted)`), plus whatever
//! else the machine runs then (other builds: their frames are compared too).
//!
//! The fidelity rule (issue 25, item 5): in every sample, perf's user lines — address and
//! dso of each frame, an inlined line by its name — are a prefix of ours, except where
//! perf's own chain is wrong, shown by framehop (a second unwinder, over the same files,
//! registers and stack copy) agreeing with ours at the first frame where perf's and ours
//! part. Every such sample is counted and classified (perf stops early, perf drops a frame,
//! perf's frame differs), and so is each sample where framehop agrees with neither or with
//! perf: those fail the test. How often each side's chain reaches the outermost frame
//! (`_start`, `clone3`, ...) is printed. `perf report --stdio --no-children`'s self
//! percentages equal ours to 0.01 %, row by row; a row each side spells its own way (a
//! kernel alias, libiberty's template spelling) pairs with one of the same command, dso and
//! percentage, and is counted apart.
//!
//! Needs perf and the right to record every CPU (root, or `kernel.perf_event_paranoid` ≤ 0):
//! skipped with a note otherwise, a failure under CI.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module as FramehopModule, Unwinder as _};
use object::{Object, ObjectSection, ObjectSegment};
use stacksym::elf::ElfFile;
use stacksym::process::Process;
use stacksym::unwind::{Memory, Registers, RegsX86_64, StackCopy};
use support::perf::output;
use support::{find_tool, perf_report_rows, skip_or_fail, tool, writeln_stderr};

#[path = "../cli/src/perf/data.rs"]
mod perf_data;
use perf_data::PerfEvent;

const TEST: &str = "perf_system_wide";

/// The workload (a script beside the test binaries).
const WORKLOAD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/system-wide-workload.sh"
);

/// The workload's commands: what the comparisons look at (`--comms`, perf's and ours). Other
/// builds on a shared machine put their compilers' samples in the recording too, which
/// perf script's default layout names through binutils' `addr2line`, minutes for rustc's
/// libraries: they are read but not printed. `9`: the memfd-run xz (`/proc/self/fd/9`).
const COMMS: &str = "sh,xz,python3,perl,gcc,cc1,as,gzip,sha256sum,sort,git,touch,sleep,9";

/// Records the workload system-wide into `dir/sw.data`; `None` (skipped) when perf may not.
fn record(perf: &Path, dir: &Path) -> Option<PathBuf> {
    let data = dir.join("sw.data");
    let out = Command::new(perf)
        .args([
            "record",
            "-q",
            "--no-buildid-cache",
            "-a",
            "-e",
            "cpu-clock",
        ])
        .args(["-F", "199", "--call-graph", "dwarf,8192", "-o"])
        .arg(&data)
        .args(["--", "sh", WORKLOAD])
        .arg(dir)
        .stdout(Stdio::null())
        .output()
        .expect("perf runs");
    if !out.status.success() || !data.is_file() {
        skip_or_fail(
            TEST,
            &format!(
                "perf record -a failed (needs root or kernel.perf_event_paranoid <= 0): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        );
        return None;
    }
    Some(data)
}

/// What a callchain line says, as the rule compares it: a frame's address and dso, or an
/// inlined function's name (and the address perf prints on its line, its frame's).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    Frame(u64, String),
    Inlined(u64, String),
}

impl Key {
    fn addr(&self) -> u64 {
        match self {
            Key::Frame(addr, _) | Key::Inlined(addr, _) => *addr,
        }
    }
}

/// A frame of a printed chain: its address, and its dso unless only inlined lines show it
/// (perf prints the holding function's line only when its name is the symbol's).
type Frame = (u64, Option<String>);

/// One callchain line: its key and the symbol's name (without `+0x..`).
#[derive(Clone, Debug)]
struct Line {
    key: Key,
    name: String,
}

/// A sample as `perf script` (default layout) prints it: the header and its user lines.
struct PrintedSample {
    header: String,
    user: Vec<Line>,
}

/// Kernel addresses (the upper half) are left out: the rule is about user stacks.
const KERNEL_START: u64 = 0x8000_0000_0000_0000;

/// Parses `perf script`'s default layout: `addr name+0xoff (dso)`, `addr name (inlined)`.
fn parse_samples(text: &str) -> Vec<PrintedSample> {
    let mut samples = Vec::new();
    for block in text.split("\n\n") {
        let mut lines = block.lines();
        let Some(header) = lines.next() else { continue };
        if header.trim().is_empty() {
            continue;
        }
        let mut user = Vec::new();
        for line in lines {
            let line = line.trim();
            let Some((addr, rest)) = line.split_once(' ') else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr >= KERNEL_START {
                continue;
            }
            let (sym, dso) = split_dso(rest);
            let name = match sym.rfind("+0x") {
                Some(at) => &sym[..at],
                None => sym,
            };
            let key = if dso == "inlined" {
                Key::Inlined(addr, name.to_string())
            } else {
                Key::Frame(addr, dso.to_string())
            };
            user.push(Line {
                key,
                name: name.to_string(),
            });
        }
        samples.push(PrintedSample {
            header: header.to_string(),
            user,
        });
    }
    samples
}

/// `name+0xoff (dso)` split at the parenthesis matching the last one: a dso has
/// parentheses of its own (`/memfd:x (deleted)`), and so do some names.
fn split_dso(rest: &str) -> (&str, &str) {
    let Some(inner) = rest.strip_suffix(')') else {
        return (rest, "");
    };
    let mut depth = 1;
    for (at, c) in inner.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return (inner[..at].trim_end(), &inner[at + 1..]);
                }
            }
            _ => {}
        }
    }
    (rest, "")
}

/// `(tid, time)` of a printed header (`comm tid [cpu] secs.usec: period event:`).
fn header_key(header: &str) -> Option<(i32, String)> {
    let words: Vec<&str> = header.split_whitespace().collect();
    let time_at = words
        .iter()
        .position(|w| w.ends_with(':') && w.contains('.'))?;
    let time = words[time_at].trim_end_matches(':').to_string();
    let tid = words[..time_at]
        .iter()
        .rev()
        .find_map(|w| w.parse::<i32>().ok())?;
    Some((tid, time))
}

/// The outermost frames of a complete chain: a program's entry, a thread's start.
fn is_outermost(name: &str) -> bool {
    matches!(
        name,
        "_start" | "clone3" | "__clone3" | "clone" | "__clone" | "_dl_start_user" | "_dl_start"
    )
}

/// A mapping of a recorded process.
#[derive(Clone)]
struct Mapping {
    range: std::ops::Range<u64>,
    pgoff: u64,
    path: Vec<u8>,
}

/// A recorded sample framehop can unwind: the process's mappings then, registers, stack.
struct RawSample {
    maps: Arc<Vec<Mapping>>,
    regs: RegsX86_64,
    sp: u64,
    stack: Vec<u8>,
}

/// Reads the recording's samples (by `(tid, time)` as perf prints them) with each
/// process's mappings at the time (a fork's child starts with its parent's, an exec starts
/// anew; a later mapping replaces what it overlaps).
fn read_recording(path: &Path) -> HashMap<(i32, String), Vec<RawSample>> {
    let mut data = perf_data::open(path).expect("the recording reads");
    let mut maps: HashMap<i32, Arc<Vec<Mapping>>> = HashMap::new();
    let mut samples: HashMap<(i32, String), Vec<RawSample>> = HashMap::new();
    while let Some(event) = data.next_event().expect("a record") {
        match event {
            PerfEvent::Fork { pid, ppid, .. } if pid != ppid => {
                let parent = maps.get(&ppid).cloned().unwrap_or_default();
                maps.insert(pid, parent);
            }
            PerfEvent::Comm {
                pid, exec: true, ..
            } => {
                maps.insert(pid, Arc::default());
            }
            PerfEvent::Mmap {
                pid,
                start,
                len,
                pgoff,
                path,
                ..
            } if pid >= 0 => {
                let list = Arc::make_mut(maps.entry(pid).or_default());
                let range = start..start.saturating_add(len);
                list.retain(|m| m.range.end <= range.start || m.range.start >= range.end);
                list.push(Mapping { range, pgoff, path });
            }
            PerfEvent::Sample(sample) => {
                let Some(time) = sample.time else { continue };
                let Some((regs, memory)) = sample.unwind_input::<RegsX86_64>() else {
                    continue;
                };
                let key = (
                    sample.tid,
                    format!(
                        "{}.{:06}",
                        time / 1_000_000_000,
                        time % 1_000_000_000 / 1000
                    ),
                );
                samples.entry(key).or_default().push(RawSample {
                    maps: maps.get(&sample.pid).cloned().unwrap_or_default(),
                    sp: memory.start().0,
                    stack: memory.bytes().to_vec(),
                    regs,
                });
            }
            _ => {}
        }
    }
    samples
}

/// framehop's module for `elf` mapped over `range` with file offset `pgoff` at its start
/// (as benches/unwind.rs builds it).
fn framehop_module(
    name: &str,
    elf: &ElfFile,
    range: std::ops::Range<u64>,
    pgoff: u64,
) -> Option<FramehopModule<Vec<u8>>> {
    let bytes = elf.bytes_in(0..elf.mapped_len());
    let file = object::File::parse(bytes).ok()?;
    let svma = file.segments().find_map(|segment| {
        let (offset, size) = segment.file_range();
        (offset <= pgoff && pgoff < offset + size).then(|| segment.address() + (pgoff - offset))
    })?;
    let section = |name: &str| {
        let section = file.section_by_name(name)?;
        let range = section.address()..section.address() + section.size();
        Some((range, section.data().ok()?.to_vec()))
    };
    let (text_svma, text) = section(".text").unzip();
    let (eh_frame_svma, eh_frame) = section(".eh_frame").unzip();
    let (eh_frame_hdr_svma, eh_frame_hdr) = section(".eh_frame_hdr").unzip();
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma,
        text,
        got_svma: section(".got").map(|(range, _)| range),
        eh_frame_svma,
        eh_frame,
        eh_frame_hdr_svma,
        eh_frame_hdr,
        debug_frame: section(".debug_frame").map(|(_, data)| data),
        ..Default::default()
    };
    Some(FramehopModule::new(
        name.to_string(),
        range.clone(),
        range.start - svma,
        info,
    ))
}

/// framehop's chain of `sample` as perf prints frames: (file offset, dso), callers at their
/// return address − 1.
fn framehop_chain(
    sample: &RawSample,
    files: &mut HashMap<Vec<u8>, Option<Arc<ElfFile>>>,
    vdso: &Option<Arc<ElfFile>>,
) -> Vec<(u64, String)> {
    let mut unwinder = UnwinderX86_64::new();
    // One module per file, over all its mappings, based at its lowest one.
    let mut by_file: Vec<(&[u8], std::ops::Range<u64>, u64)> = vec![];
    for m in sample.maps.iter() {
        match by_file.iter_mut().find(|(path, ..)| *path == &m.path[..]) {
            Some((_, range, pgoff)) => {
                if m.range.start < range.start {
                    *pgoff = m.pgoff;
                }
                range.start = range.start.min(m.range.start);
                range.end = range.end.max(m.range.end);
            }
            None => by_file.push((&m.path, m.range.clone(), m.pgoff)),
        }
    }
    for (path, range, pgoff) in by_file {
        let elf = files
            .entry(path.to_vec())
            .or_insert_with(|| {
                if path == b"[vdso]" {
                    vdso.clone()
                } else if path.first() == Some(&b'/') {
                    ElfFile::open(String::from_utf8_lossy(path).into_owned())
                        .ok()
                        .map(Arc::new)
                } else {
                    None
                }
            })
            .clone();
        let Some(elf) = elf else { continue };
        if let Some(module) = framehop_module(&String::from_utf8_lossy(path), &elf, range, pgoff) {
            unwinder.add_module(module);
        }
    }
    let memory = StackCopy::new(stacksym::AbsAddr(sample.sp), &sample.stack);
    let mut read_stack = |addr| memory.read_u64(stacksym::AbsAddr(addr)).ok_or(());
    let regs = &sample.regs;
    let ip = regs.ip();
    let framehop_regs = UnwindRegsX86_64::new(ip, sample.sp, regs.fp().unwrap_or(0));
    let mut cache = CacheX86_64::new();
    let mut frames = unwinder.iter_frames(ip, framehop_regs, &mut cache, &mut read_stack);
    let mut chain = Vec::new();
    while let Ok(Some(frame)) = frames.next() {
        let addr = frame.address_for_lookup();
        let key = match sample.maps.iter().find(|m| m.range.contains(&addr)) {
            Some(m) => (
                addr - m.range.start + m.pgoff,
                String::from_utf8_lossy(&m.path).into_owned(),
            ),
            None => (addr, "[unknown]".to_string()),
        };
        chain.push(key);
        if chain.len() > 256 {
            break;
        }
    }
    chain
}

/// The frames of a printed chain: a frame's inlined lines, then its own line (if printed),
/// all at its address.
fn frames_of(lines: &[Line]) -> Vec<Frame> {
    let mut frames: Vec<Frame> = Vec::new();
    let mut open = false;
    for line in lines {
        let addr = line.key.addr();
        if !(open && frames.last().is_some_and(|f| f.0 == addr)) {
            frames.push((addr, None));
        }
        open = true;
        if let (Key::Frame(_, dso), Some(last)) = (&line.key, frames.last_mut()) {
            last.1 = Some(dso.clone());
            open = false;
        }
    }
    frames
}

/// Whether a printed frame is framehop's (its dso where printed).
fn same_frame(printed: Option<&Frame>, framehop: Option<&(u64, String)>) -> bool {
    match (printed, framehop) {
        (Some((a, dso)), Some((b, fdso))) => a == b && dso.as_ref().is_none_or(|d| d == fdso),
        (None, None) => true,
        _ => false,
    }
}

/// How a sample where perf's chain is not a prefix of ours is explained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Verdict {
    /// perf's chain runs on past the end of ours, and framehop stops where we stop.
    PerfLongerFramehopStopsWithUs,
    /// perf leaves out a frame that ours and framehop have (its next frame is our next).
    PerfDropsFrame,
    /// perf's frame differs from ours and framehop's there.
    PerfFrameDiffers,
    /// The frames agree, and an inlined line differs (a naming matter, not the chain).
    InlinedLineDiffers,
    /// framehop agrees with perf there, and both return into no mapping (`[unknown]` as
    /// its dso: a return address outside all code cannot be right) where ours returns into
    /// a mapped file or ends: both read the wrong slot (seen at ld.so's
    /// `_dl_runtime_resolve_xsavec`, whose CFA is `rbx + 32`, with perf's chain continuing
    /// at `7ffd71acf3e7ffff`).
    PerfAndFramehopLeaveCode,
    /// framehop agrees with perf there, not with us: ours is wrong. Fails.
    FramehopSidesWithPerf,
    /// framehop agrees with neither there. Fails.
    FramehopAgreesWithNeither,
}

/// Classifies a sample where perf's user lines are not a prefix of ours.
fn classify(ours: &[Line], perf: &[Line], framehop: &[(u64, String)]) -> Verdict {
    let (our_frames, perf_frames) = (frames_of(ours), frames_of(perf));
    let Some(at) = (0..perf_frames.len()).find(|&i| our_frames.get(i) != perf_frames.get(i)) else {
        return Verdict::InlinedLineDiffers;
    };
    let (o, p, f) = (our_frames.get(at), perf_frames.get(at), framehop.get(at));
    let framehop_prefix_ok =
        framehop.len() >= at && (0..at).all(|i| same_frame(our_frames.get(i), framehop.get(i)));
    if !framehop_prefix_ok {
        return Verdict::FramehopAgreesWithNeither;
    }
    let (f_ours, f_perf) = (same_frame(o, f), same_frame(p, f));
    if f_ours && !f_perf {
        match o {
            None => Verdict::PerfLongerFramehopStopsWithUs,
            Some(_) if perf_frames.get(at) == our_frames.get(at + 1) => Verdict::PerfDropsFrame,
            Some(_) => Verdict::PerfFrameDiffers,
        }
    } else if f_perf {
        let unmapped = |frame: Option<&Frame>| {
            frame.is_some_and(|(_, dso)| dso.as_deref() == Some("[unknown]"))
        };
        let mapped = |frame: Option<&Frame>| {
            frame.is_some_and(|(_, dso)| dso.as_deref().is_some_and(|d| d != "[unknown]"))
        };
        if unmapped(p) && (mapped(o) || o.is_none()) {
            Verdict::PerfAndFramehopLeaveCode
        } else {
            Verdict::FramehopSidesWithPerf
        }
    } else {
        Verdict::FramehopAgreesWithNeither
    }
}

#[test]
fn perf_unwind_on_a_system_wide_recording() {
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(TEST, "perf not found (apt-get install linux-perf)");
    };
    if !cfg!(target_arch = "x86_64") {
        return writeln_stderr(format_args!(
            "{TEST}: SKIPPED: framehop is set up for x86_64"
        ));
    }
    let dir = tempfile::tempdir().expect("a temporary dir");
    let Some(data) = record(&perf, dir.path()) else {
        return;
    };
    let example = || tool("perf");
    let ours_text = output(example().args(["--comms", COMMS, "-i"]).arg(&data));
    let perf_text = output(
        Command::new(&perf)
            .args(["script", "--comms", COMMS, "-i"])
            .arg(&data),
    );
    let (ours, theirs) = (parse_samples(&ours_text), parse_samples(&perf_text));

    // Samples by (tid, time); a repeated key keeps its order.
    let mut by_key: HashMap<(i32, String), Vec<&PrintedSample>> = HashMap::new();
    for sample in &ours {
        if let Some(key) = header_key(&sample.header) {
            by_key.entry(key).or_default().push(sample);
        }
    }
    let raw = read_recording(&data);
    let vdso = {
        let process = Process::new(std::process::id());
        process
            .read_maps()
            .ok()
            .and_then(|maps| process.vdso(&maps).ok().flatten())
            .map(Arc::new)
    };
    let mut files = HashMap::new();
    let mut seen: HashMap<(i32, String), usize> = HashMap::new();
    let (mut compared, mut unmatched, mut equal, mut ours_longer) = (0, 0, 0, 0);
    let (mut with_user, mut ours_outermost, mut perf_outermost) = (0, 0, 0);
    let mut headers_differ = 0;
    let mut verdicts: BTreeMap<Verdict, Vec<String>> = BTreeMap::new();
    let mut memfd_lines = (0, 0);
    for theirs in &theirs {
        let Some(key) = header_key(&theirs.header) else {
            unmatched += 1;
            continue;
        };
        let n = seen.entry(key.clone()).or_default();
        let ours = by_key.get(&key).and_then(|v| v.get(*n)).copied();
        let raw_sample = raw.get(&key).and_then(|v| v.get(*n));
        *n += 1;
        let Some(ours) = ours else {
            unmatched += 1;
            continue;
        };
        compared += 1;
        if ours.header != theirs.header {
            headers_differ += 1;
        }
        let memfd = |s: &PrintedSample| {
            s.user
                .iter()
                .filter(|l| matches!(&l.key, Key::Frame(_, dso) if dso.starts_with("/memfd:stacksym-xz")))
                .count()
        };
        memfd_lines.0 += memfd(ours);
        memfd_lines.1 += memfd(theirs);
        if !theirs.user.is_empty() || !ours.user.is_empty() {
            with_user += 1;
            ours_outermost += usize::from(ours.user.last().is_some_and(|l| is_outermost(&l.name)));
            perf_outermost +=
                usize::from(theirs.user.last().is_some_and(|l| is_outermost(&l.name)));
        }
        let prefix = theirs.user.len() <= ours.user.len()
            && theirs
                .user
                .iter()
                .zip(&ours.user)
                .all(|(a, b)| a.key == b.key);
        if prefix {
            if theirs.user.len() == ours.user.len() {
                equal += 1;
            } else {
                ours_longer += 1;
            }
            continue;
        }
        let framehop = match raw_sample {
            Some(raw) => framehop_chain(raw, &mut files, &vdso),
            None => Vec::new(),
        };
        let verdict = classify(&ours.user, &theirs.user, &framehop);
        let show = |lines: &[Line]| {
            lines
                .iter()
                .map(|l| match &l.key {
                    Key::Frame(a, d) => format!("{a:x} {} ({d})", l.name),
                    Key::Inlined(a, n) => format!("{a:x} {n} (inlined)"),
                })
                .collect::<Vec<_>>()
                .join(" | ")
        };
        let fh: Vec<String> = framehop
            .iter()
            .map(|(a, d)| format!("{a:x} ({d})"))
            .collect();
        verdicts.entry(verdict).or_default().push(format!(
            "{}\n      ours:     {}\n      perf:     {}\n      framehop: {}",
            theirs.header,
            show(&ours.user),
            show(&theirs.user),
            fh.join(" | ")
        ));
    }
    let pct = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
    writeln_stderr(format_args!(
        "{TEST}: {} samples printed by perf, {} by perf_unwind; {compared} compared \
         ({headers_differ} headers differ), {unmatched} of perf's without ours",
        theirs.len(),
        ours.len()
    ));
    writeln_stderr(format_args!(
        "{TEST}: perf's user lines a prefix of ours in {} samples ({equal} equal, \
         {ours_longer} ours longer); otherwise:",
        equal + ours_longer
    ));
    for (verdict, samples) in &verdicts {
        writeln_stderr(format_args!("    {verdict:?}: {}", samples.len()));
        for sample in samples.iter().take(3) {
            writeln_stderr(format_args!("      {sample}"));
        }
    }
    writeln_stderr(format_args!(
        "{TEST}: of {with_user} samples with user frames, the chain reaches the outermost \
         frame in {ours_outermost} ({:.1} %) for perf_unwind, {perf_outermost} ({:.1} %) for perf",
        pct(ours_outermost, with_user),
        pct(perf_outermost, with_user)
    ));
    writeln_stderr(format_args!(
        "{TEST}: frame lines in the memfd-run xz (/memfd:stacksym-xz (deleted)): perf_unwind {}, \
         perf {}",
        memfd_lines.0, memfd_lines.1
    ));

    // perf report's self percentages.
    let theirs_report = output(
        Command::new(&perf)
            .args(["report", "--stdio", "--no-children", "-g", "none"])
            .args(["--sort", "comm,dso,sym", "--comms", COMMS, "-i"])
            .arg(&data),
    );
    let ours_report = output(
        example()
            .args(["--report", "--no-children", "--sort", "comm,dso,sym"])
            .args(["--comms", COMMS, "-i"])
            .arg(&data),
    );
    let (a, b) = (
        perf_report_rows(&ours_report),
        perf_report_rows(&theirs_report),
    );
    // A row only one side has, paired with a row only the other side has for the same
    // command and dso at the same percentage: the same entry spelled another way (a kernel
    // alias at the same address, `__pi_memcpy` for `memcpy`; libiberty's template spelling,
    // `wi::lts_p<...>` for `bool wi::lts_p<...>`, `<1u, ...>` for `<(unsigned int)1, ...>`).
    // Counted and shown; any other difference fails.
    let close = |x: &[f64], y: &[f64]| {
        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| (p - q).abs() <= 0.01001)
    };
    let mut bad = Vec::new();
    for key in b.keys().chain(a.keys()) {
        if let (Some(x), Some(y)) = (a.get(key), b.get(key)) {
            if !close(x, y) {
                bad.push(format!("{key:?}: ours {x:?}, perf's {y:?}"));
            }
        }
    }
    let mut ours_only: Vec<_> = a.iter().filter(|(k, _)| !b.contains_key(*k)).collect();
    let mut spelled_apart = Vec::new();
    for (key, y) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
        let twin = ours_only
            .iter()
            .position(|(k, x)| k.0 == key.0 && k.1 == key.1 && close(x, y));
        match twin {
            Some(i) => {
                let (k, _) = ours_only.remove(i);
                spelled_apart.push(format!(
                    "{:?} {:?}: ours {:?}, perf's {:?}",
                    key.0, key.1, k.2, key.2
                ));
            }
            None => bad.push(format!("{key:?}: perf's only, {y:?}")),
        }
    }
    bad.extend(
        ours_only
            .iter()
            .map(|(k, x)| format!("{k:?}: ours only, {x:?}")),
    );
    bad.sort();
    bad.dedup();
    writeln_stderr(format_args!(
        "{TEST}: --report --no-children: {} rows, perf {}; {} the same entry spelled apart, \
         {} differ",
        a.len(),
        b.len(),
        spelled_apart.len(),
        bad.len()
    ));
    for line in spelled_apart.iter().take(10) {
        writeln_stderr(format_args!("    spelled apart: {line}"));
    }
    for line in bad.iter().take(10) {
        writeln_stderr(format_args!("    {line}"));
    }

    assert!(compared > 100, "too few samples compared: {compared}");
    assert_eq!(unmatched, 0, "samples perf prints and we do not");
    assert_eq!(ours.len(), theirs.len(), "sample counts differ");
    let failing: usize = verdicts
        .iter()
        .filter(|(v, _)| {
            matches!(
                v,
                Verdict::FramehopSidesWithPerf | Verdict::FramehopAgreesWithNeither
            )
        })
        .map(|(_, s)| s.len())
        .sum();
    assert_eq!(
        failing, 0,
        "samples where perf's chain is not ours and framehop does not say perf is wrong"
    );
    // Where perf's chain reaches the memfd's frames, the rule above compared their dso
    // lines (`/memfd:stacksym-xz (deleted)`, perf's name of the mapping) with ours; perf's
    // chain often stops in liblzma before them.
    assert!(memfd_lines.0 > 0, "no frame named in the memfd-run xz");
    assert!(
        bad.is_empty(),
        "--report --no-children: {} rows differ",
        bad.len()
    );
}

/// The classification rule on made-up chains (addresses and dsos only).
#[test]
fn classify_explains_each_kind_of_difference() {
    let line = |addr: u64, dso: &str| Line {
        key: Key::Frame(addr, dso.to_string()),
        name: String::new(),
    };
    let fh = |chain: &[(u64, &str)]| -> Vec<(u64, String)> {
        chain.iter().map(|&(a, d)| (a, d.to_string())).collect()
    };
    let (libc, ld, unknown) = ("/libc.so.6", "/ld.so", "[unknown]");
    let ours = [line(0x10, ld), line(0x20, ld)];
    // perf and framehop go on into no mapping; ours ends, or goes on in a file.
    let perf = [line(0x10, ld), line(0x20, ld), line(0x7fff_0000, unknown)];
    let framehop = fh(&[(0x10, ld), (0x20, ld), (0x7fff_0000, unknown)]);
    assert_eq!(
        classify(&ours, &perf, &framehop),
        Verdict::PerfAndFramehopLeaveCode
    );
    let longer = [line(0x10, ld), line(0x20, ld), line(0x30, libc)];
    assert_eq!(
        classify(&longer, &perf, &framehop),
        Verdict::PerfAndFramehopLeaveCode
    );
    // perf and framehop go on in a file where ours ends: ours is wrong.
    let perf_mapped = [line(0x10, ld), line(0x20, ld), line(0x30, libc)];
    let framehop_mapped = fh(&[(0x10, ld), (0x20, ld), (0x30, libc)]);
    assert_eq!(
        classify(&ours, &perf_mapped, &framehop_mapped),
        Verdict::FramehopSidesWithPerf
    );
    // perf goes on where ours and framehop end.
    assert_eq!(
        classify(&ours, &perf_mapped, &fh(&[(0x10, ld), (0x20, ld)])),
        Verdict::PerfLongerFramehopStopsWithUs
    );
    // perf skips a frame ours and framehop have.
    let full = [line(0x10, ld), line(0x20, ld), line(0x30, libc)];
    let skipping = [line(0x10, ld), line(0x30, libc)];
    let framehop_full = fh(&[(0x10, ld), (0x20, ld), (0x30, libc)]);
    assert_eq!(
        classify(&full, &skipping, &framehop_full),
        Verdict::PerfDropsFrame
    );
    // framehop agrees with neither at the first difference: nothing explains it.
    assert_eq!(
        classify(&full, &skipping, &fh(&[(0x10, ld), (0x90, libc)])),
        Verdict::FramehopAgreesWithNeither
    );
}
