//! Process symbolization: stacksym's `Symbolizer::symbolize_process` against blazesym's
//! `Process` source (no debug symbols, no perf map, no demangling, no code info), on the same
//! spawned process (`testdata/bin/c-wait`, which blocks on stdin until the bench ends) and the
//! same addresses.
//!
//! The 100,000 absolute addresses are picked with a fixed-seed xorshift inside the FUNC symbols
//! (sized, defined; `.symtab` and `.dynsym`) of the three files the process maps executable:
//! c-wait itself (10 %), `libversioned.so` (10 %) and libc (80 %). Each symbol's virtual address
//! becomes a file offset through its file's `PT_LOAD` segments (the object crate), then an
//! absolute address through the process's `/proc/PID/maps` (a plain parse here, not stacksym's).
//!
//! Before timing, both peers' results are compared (same name, same symbol start). Measured:
//! - cold: a new symbolizer per iteration (maps read, files opened and indexed, all addresses);
//! - warm: one symbolizer kept across iterations (stacksym caches the maps; both keep files).
//!
//! The criterion groups run blazesym as configured by default (`map_files`: files opened through
//! `/proc/PID/map_files/`). After them, interleaved rounds run the peers in turn, blazesym also
//! with `map_files` off (the paths the maps name, closer to stacksym's `/proc/PID/root/<path>`,
//! and much faster for blazesym), and the summary prints medians and the ratios against the
//! target (≥ 2× faster than blazesym) for both.
//!
//! The child is killed when the bench ends, panics included; should the bench die otherwise,
//! the child reads EOF on its stdin and exits by itself.
//!
//! `cargo bench --bench process` takes well under a minute; `-- --test` runs each once.

use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use blazesym::symbolize::source::{Process as BlazeProcess, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer as BlazeSymbolizer};
use blazesym::Pid;
use criterion::SamplingMode;
use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use stacksym::process::Process;
use stacksym::Symbolizer;

mod common;
use common::{consume, median, mode, quick_note, XorShift};

/// How many addresses every peer symbolizes.
const ADDRESS_COUNT: usize = 100_000;
/// Fixed seed of the address generator, so every run uses the same symbols and offsets.
const SEED: u64 = 0x5eed_0f9a_11d0_0d0d;
/// The spawned program.
const WAIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bin/c-wait");

/// The running c-wait: killed and reaped when dropped (also when the bench panics).
struct Waiter {
    child: Child,
    pid: u32,
}

impl Waiter {
    fn spawn() -> Result<Waiter, String> {
        let child = Command::new(WAIT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{WAIT}: {e}"))?;
        let pid = child.id();
        // Owned from here on: every later return kills it.
        let mut guard = Waiter { child, pid };
        let stdout = guard.child.stdout.take().ok_or("no stdout")?;
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(line) if line == "ready" => return Ok(guard),
                Ok(_) => {}
                Err(e) => return Err(format!("{WAIT}: reading its output: {e}")),
            }
        }
        guard.kill();
        Err(format!("{WAIT} exited before printing \"ready\""))
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One line of `/proc/PID/maps` with a file: start, end, file offset, executable, path.
struct Mapping {
    start: u64,
    end: u64,
    offset: u64,
    exec: bool,
    path: PathBuf,
}

/// A plain parse of `/proc/PID/maps`, file mappings only.
fn read_maps(pid: u32) -> Vec<Mapping> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(6, ' ');
            let (start, end) = fields.next()?.split_once('-')?;
            let perms = fields.next()?;
            let offset = fields.next()?;
            let (_dev, _inode) = (fields.next()?, fields.next()?);
            let path = fields.next()?.trim_start();
            if !path.starts_with('/') {
                return None;
            }
            Some(Mapping {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                exec: perms.as_bytes().get(2) == Some(&b'x'),
                path: PathBuf::from(path),
            })
        })
        .collect()
}

/// The FUNC symbols of a file as absolute address ranges in the process: (start, size).
fn function_ranges(path: &Path, maps: &[Mapping]) -> Vec<(u64, u64)> {
    let Ok(data) = std::fs::read(path) else {
        return vec![];
    };
    let Ok(file) = object::File::parse(&*data) else {
        return vec![];
    };
    // (virtual address, file offset, file size) of each PT_LOAD.
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .map(|s| {
            let (offset, size) = s.file_range();
            (s.address(), offset, size)
        })
        .collect();
    let execs: Vec<&Mapping> = maps.iter().filter(|m| m.exec && m.path == path).collect();
    let mut ranges: Vec<(u64, u64)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.size() > 0)
        .filter_map(|s| {
            let virt = s.address();
            let &(vaddr, offset, _) = segments
                .iter()
                .find(|&&(vaddr, _, size)| vaddr <= virt && virt < vaddr + size)?;
            let file_offset = virt - vaddr + offset;
            let m = execs.iter().find(|m| {
                m.offset <= file_offset && file_offset + s.size() <= m.offset + (m.end - m.start)
            })?;
            Some((m.start + file_offset - m.offset, s.size()))
        })
        .collect();
    ranges.sort_unstable();
    ranges.dedup();
    ranges
}

/// How many candidate functions each file had: (file name, count).
type FileCounts = Vec<(String, usize)>;

/// The addresses, and how many candidate functions each file had.
fn pick_addresses(pid: u32) -> Result<(Vec<u64>, FileCounts), String> {
    let maps = read_maps(pid);
    let find = |suffix: &str| {
        maps.iter()
            .find(|m| m.exec && m.path.to_string_lossy().ends_with(suffix))
            .map(|m| m.path.clone())
            .ok_or_else(|| format!("no executable mapping of *{suffix} in /proc/{pid}/maps"))
    };
    // (file, share of the addresses in per mille)
    let files = [
        (find("/c-wait")?, 100),
        (find("/libversioned.so")?, 100),
        (find("/libc.so.6")?, 800),
    ];
    let ranges: Vec<Vec<(u64, u64)>> = files
        .iter()
        .map(|(path, _)| function_ranges(path, &maps))
        .collect();
    for ((path, _), r) in files.iter().zip(&ranges) {
        if r.is_empty() {
            return Err(format!("no FUNC symbols found in {}", path.display()));
        }
    }
    let mut rng = XorShift(SEED);
    let addrs = (0..ADDRESS_COUNT)
        .map(|_| {
            let mut pick = rng.next() % 1000;
            let mut which = 0;
            while pick >= files[which].1 {
                pick -= files[which].1;
                which += 1;
            }
            let r = &ranges[which];
            let (start, size) = r[(rng.next() % r.len() as u64) as usize];
            start + rng.next() % size
        })
        .collect();
    let counts = files
        .iter()
        .zip(&ranges)
        .map(|((path, _), r)| (path.display().to_string(), r.len()))
        .collect();
    Ok((addrs, counts))
}

fn stacksym_new() -> Symbolizer {
    Symbolizer::builder()
        .demangle(false)
        .source_lines(false) // as blazesym below: symbols only
        .debug_files(false)
        .build()
}

fn stacksym_run(s: &Symbolizer, process: &Process, addrs: &[u64]) -> usize {
    s.symbolize(
        &stacksym::Source::process(process),
        stacksym::Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(addrs)),
    )
    .expect("stacksym symbolizes the child")
    .iter()
    .map(|r| r.map_or(0, |sym| consume(sym.name)))
    .sum()
}

fn blazesym_new() -> BlazeSymbolizer {
    BlazeSymbolizer::builder()
        .enable_demangling(false)
        .enable_code_info(false)
        .enable_inlined_fns(false)
        .build()
}

/// blazesym's Process source; `map_files` (its default, true) opens files through
/// `/proc/PID/map_files/`, false through the paths the maps name.
fn blazesym_source(pid: u32, map_files: bool) -> Source<'static> {
    let mut process = BlazeProcess::new(Pid::from(pid));
    process.debug_syms = false;
    process.perf_map = false;
    process.map_files = map_files;
    Source::Process(process)
}

fn blazesym_run(s: &BlazeSymbolizer, source: &Source<'_>, addrs: &[u64]) -> usize {
    s.symbolize(source, Input::AbsAddr(addrs))
        .expect("blazesym symbolizes the child")
        .iter()
        .map(|sym| match sym {
            Symbolized::Sym(sym) => consume(&sym.name),
            Symbolized::Unknown(_) => 0,
        })
        .sum()
}

fn stacksym_cold(pid: u32, addrs: &[u64]) -> Duration {
    let start = Instant::now();
    let s = stacksym_new();
    black_box(stacksym_run(&s, &Process::new(pid), addrs));
    start.elapsed()
}

fn blazesym_cold(pid: u32, map_files: bool, addrs: &[u64]) -> Duration {
    let start = Instant::now();
    let s = blazesym_new();
    black_box(blazesym_run(&s, &blazesym_source(pid, map_files), addrs));
    start.elapsed()
}

/// Both peers' results compared: (same name, same symbol start, both found, ours only,
/// theirs only), and a few distinct (ours, theirs) names that differ.
fn agreement(pid: u32, ours: &[u64], theirs: &[u64]) -> ([usize; 5], Vec<(String, String)>) {
    let s = stacksym_new();
    let process = Process::new(pid);
    let ours = s
        .symbolize(
            &stacksym::Source::process(&process),
            stacksym::Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(ours)),
        )
        .expect("stacksym symbolizes the child");
    let b = blazesym_new();
    let theirs = b
        .symbolize(&blazesym_source(pid, true), Input::AbsAddr(theirs))
        .expect("blazesym symbolizes the child");
    let mut counts = [0; 5];
    let mut differing: Vec<(String, String)> = vec![];
    for (ours, theirs) in ours.iter().zip(&theirs) {
        match (ours, theirs) {
            (Some(ours), Symbolized::Sym(theirs)) => {
                counts[0] += usize::from(ours.name == theirs.name);
                let pair = (ours.name.to_string(), theirs.name.to_string());
                if ours.name != theirs.name && differing.len() < 4 && !differing.contains(&pair) {
                    differing.push(pair);
                }
                counts[1] += usize::from(ours.addr.raw() == theirs.addr);
                counts[2] += 1;
            }
            (Some(_), Symbolized::Unknown(_)) => counts[3] += 1,
            (None, Symbolized::Sym(_)) => counts[4] += 1,
            (None, Symbolized::Unknown(_)) => {}
        }
    }
    (counts, differing)
}

fn main() {
    let (listing, quick) = mode();

    // Arguments first: a bad one exits before there is a child to leave behind.
    let mut criterion = common::criterion(Duration::from_secs(2));

    let child = match Waiter::spawn() {
        Ok(child) => child,
        Err(e) => {
            println!("process bench skipped: {e}");
            return;
        }
    };
    let pid = child.pid;
    let (addrs, counts) = match pick_addresses(pid) {
        Ok(picked) => picked,
        Err(e) => {
            println!("process bench skipped: {e}");
            return;
        }
    };

    if !listing {
        let files: Vec<String> = counts
            .iter()
            .map(|(path, n)| format!("{path} ({n} functions)"))
            .collect();
        println!(
            "process: {WAIT}, pid {pid}; {} addresses in FUNC symbols of {} (10/10/80 %), seed {SEED:#x}",
            addrs.len(),
            files.join(", "),
        );
        let ([same_name, same_start, both, ours_only, theirs_only], differing) =
            agreement(pid, &addrs, &addrs);
        let pct = |n: usize| 100.0 * n as f64 / addrs.len() as f64;
        println!(
            "agreement with blazesym: same name {same_name} ({:.2} %), same symbol start {same_start} ({:.2} %), both found {both} ({:.2} %), stacksym only {ours_only}, blazesym only {theirs_only}, of {}{}",
            pct(same_name),
            pct(same_start),
            pct(both),
            addrs.len(),
            if pct(same_start) >= 99.0 { "" } else { "  ** below 99 % **" },
        );
        if !differing.is_empty() {
            let pairs: Vec<String> = differing
                .iter()
                .map(|(ours, theirs)| format!("{ours} / {theirs}"))
                .collect();
            println!(
                "  names differ where a start has several names (aliases; stacksym / blazesym): {}",
                pairs.join(", ")
            );
        }
    }

    {
        let mut group = criterion.benchmark_group("process cold");
        group.sampling_mode(SamplingMode::Flat);
        group.bench_function("stacksym", |b| {
            b.iter_custom(|iters| (0..iters).map(|_| stacksym_cold(pid, &addrs)).sum())
        });
        group.bench_function("blazesym", |b| {
            b.iter_custom(|iters| (0..iters).map(|_| blazesym_cold(pid, true, &addrs)).sum())
        });
        group.finish();
    }
    {
        let mut group = criterion.benchmark_group("process warm");
        group.sampling_mode(SamplingMode::Flat);
        let s = stacksym_new();
        let process = Process::new(pid);
        group.bench_function("stacksym", |b| {
            b.iter(|| black_box(stacksym_run(&s, &process, &addrs)))
        });
        let bs = blazesym_new();
        let source = blazesym_source(pid, true);
        group.bench_function("blazesym", |b| {
            b.iter(|| black_box(blazesym_run(&bs, &source, &addrs)))
        });
        group.finish();
    }
    criterion.final_summary();
    if listing {
        return;
    }

    // Interleaved rounds: the peers take turns, so load from elsewhere falls on both. blazesym
    // runs twice: as configured above (map_files, its default) and opening the maps' paths,
    // which is closer to what stacksym does (the paths, through /proc/PID/root).
    let rounds = if quick { 1 } else { 7 };
    let s = stacksym_new();
    let process = Process::new(pid);
    let bs = [blazesym_new(), blazesym_new()];
    let sources = [blazesym_source(pid, true), blazesym_source(pid, false)];
    black_box(stacksym_run(&s, &process, &addrs));
    for (bs, source) in bs.iter().zip(&sources) {
        black_box(blazesym_run(bs, source, &addrs));
    }
    // [stacksym, blazesym map_files, blazesym paths] times; [map_files, paths] ratios.
    let (mut cold, mut warm): ([Vec<Duration>; 3], [Vec<Duration>; 3]) = Default::default();
    let (mut cold_ratio, mut warm_ratio): ([Vec<f64>; 2], [Vec<f64>; 2]) = Default::default();
    for _ in 0..rounds {
        let ours = stacksym_cold(pid, &addrs);
        cold[0].push(ours);
        for (i, map_files) in [true, false].into_iter().enumerate() {
            let theirs = blazesym_cold(pid, map_files, &addrs);
            cold_ratio[i].push(theirs.as_secs_f64() / ours.as_secs_f64());
            cold[i + 1].push(theirs);
        }

        let start = Instant::now();
        black_box(stacksym_run(&s, &process, &addrs));
        let ours = start.elapsed();
        warm[0].push(ours);
        for (i, (bs, source)) in bs.iter().zip(&sources).enumerate() {
            let start = Instant::now();
            black_box(blazesym_run(bs, source, &addrs));
            let theirs = start.elapsed();
            warm_ratio[i].push(theirs.as_secs_f64() / ours.as_secs_f64());
            warm[i + 1].push(theirs);
        }
    }
    drop(child);

    let ms = |v: &[Duration]| median(v.to_vec()).unwrap_or_default().as_secs_f64() * 1e3;
    let per_addr = |v: &[Duration]| {
        median(v.to_vec()).unwrap_or_default().as_nanos() as f64 / addrs.len() as f64
    };
    let ratio = |v: &[f64]| median(v.to_vec()).unwrap_or(0.0);
    let verdict = |ratio: f64| if ratio >= 2.0 { "met" } else { "missed" };

    println!();
    println!(
        "summary ({rounds} interleaved round(s){}; {} addresses per call, demangling off):",
        quick_note(quick),
        addrs.len(),
    );
    println!("| | stacksym | blazesym (map_files, default) | blazesym (map_files off) |");
    println!("|---|---|---|---|");
    println!(
        "| cold (new symbolizer: maps + open + index + all addresses), ms | {:.1} | {:.1} | {:.1} |",
        ms(&cold[0]),
        ms(&cold[1]),
        ms(&cold[2]),
    );
    println!(
        "| warm (same symbolizer), ms | {:.1} | {:.1} | {:.1} |",
        ms(&warm[0]),
        ms(&warm[1]),
        ms(&warm[2]),
    );
    println!(
        "| warm, ns/address | {:.0} | {:.0} | {:.0} |",
        per_addr(&warm[0]),
        per_addr(&warm[1]),
        per_addr(&warm[2]),
    );
    println!("| target: stacksym ≥ 2× faster than blazesym | vs map_files | vs map_files off |");
    println!("|---|---|---|");
    for (what, ratios) in [("cold", &cold_ratio), ("warm", &warm_ratio)] {
        let (a, b) = (ratio(&ratios[0]), ratio(&ratios[1]));
        println!(
            "| {what} | {a:.1}× {} | {b:.1}× {} |",
            verdict(a),
            verdict(b)
        );
    }
}
