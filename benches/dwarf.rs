//! Source lines and inlined frames of the system libc: stacksym's `Symbolizer` against the
//! addr2line crate (`Loader`) and blazesym (ELF source, debug symbols, code info, inlined
//! functions).
//!
//! The same 20,000 addresses for every peer: a FUNC symbol with a size, picked uniformly from
//! libc's debug file's `.symtab` with a fixed-seed xorshift, then an offset inside it. Each
//! peer produces every frame of every inline chain with function name, file and line, and
//! the bench reads them (lengths and last bytes), as printing would.
//! - cold: a new symbolizer, which opens `libc.so.6`, finds its debug file
//!   (`/usr/lib/debug/.build-id/...`) and symbolizes the batch. The addr2line crate does not
//!   follow build-ids, so its `Loader` is opened on the debug file directly (a head start);
//!   blazesym is given `libc.so.6` and finds the debug file through `.gnu_debuglink` in its
//!   default debug dirs.
//! - warm, new addresses: a second batch of 20,000 different random addresses (another
//!   seed) on the symbolizer of a cold run: what a profiler meets (new samples, the same
//!   binaries).
//! - warm, same batch: the cold run's batch again on its symbolizer (everything it needs is
//!   cached), reported apart.
//!
//! - stacksym with `threads(2)` (not the default): the same, reading each batch's DWARF
//!   ahead on two threads; a column of its own, and its ratios against the peers printed
//!   apart from the targets' (which are judged on the default, one thread).
//!
//! Before timing, the peers' chains are compared (frame counts, innermost function names
//! and lines) and the agreement printed. Peak memory: each peer's cold run and its second
//! batch are repeated in a child process of this bench and its peak resident set (`VmHWM`)
//! reported. After the criterion groups, interleaved rounds run the peers in turn and the
//! summary prints medians and the ratios against the targets (cold and warm with new
//! addresses ≥ 2× faster than the addr2line crate and ≥ 3× faster than blazesym; peak
//! memory not above the addr2line crate's).
//!
//! `STACKSYM_BENCH_READ_FILES=1` makes stacksym read files into memory instead of mapping
//! them (`stacksym::elf::read_files_instead_of_mapping`; ARCHITECTURE.md, "SIGBUS").
//!
//! Needs libc6-dbg (the bench says so and stops without it).
//! `cargo bench --bench dwarf` takes about a minute; `-- --test` runs each once.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use blazesym::symbolize::source::{Elf as BlazeElf, Source as BlazeSource};
use blazesym::symbolize::{Input as BlazeInput, Symbolized, Symbolizer as BlazeSymbolizer};
use criterion::SamplingMode;
use stacksym::{Input, Source, Symbolizer};

mod common;
use common::{
    consume, function_addresses, libc_debug_file as debug_file, median as median_of, mode,
    DEBUG_DIR, LIBC,
};

/// How many addresses every peer symbolizes.
const ADDRESS_COUNT: usize = 20_000;
/// Fixed seed of the address generator, so every run uses the same addresses.
const SEED: u64 = 0x0d1a_ce5e_ed5e_ed01;
/// The seed of the second batch (warm, new addresses).
const SECOND_SEED: u64 = 0x5ec0_4d5e_ed5e_ed02;
/// Argument that makes this bench a child that measures one peer's peak memory.
const PEAK_CHILD: &str = "--peak-memory-of";

/// The bench's addresses in libc (see the module docs); `seed` picks the batch.
fn pick_addresses(debug: &Path, seed: u64) -> Vec<u64> {
    function_addresses(debug, ADDRESS_COUNT, seed).expect("libc's debug file has functions")
}

/// One address's answer, reduced for comparing the peers: (frames, innermost function,
/// innermost line).
type Summary = (usize, String, u32);

/// stacksym's symbolizer; `threads` > 1 reads a batch's DWARF ahead on that many threads
/// (`SymbolizerBuilder::threads`, not the default).
fn stacksym_new(threads: usize) -> Symbolizer {
    Symbolizer::builder()
        .demangle(true)
        .debug_dirs(vec![PathBuf::from(DEBUG_DIR)])
        .threads(threads)
        .build()
}

fn stacksym_run(s: &Symbolizer, addrs: &[u64], summaries: Option<&mut Vec<Summary>>) -> usize {
    let symbols = s
        .symbolize(
            &Source::Elf {
                path: Path::new(LIBC),
            },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(addrs)),
        )
        .expect("stacksym symbolizes libc");
    let mut total = 0;
    let mut summaries = summaries;
    for sym in symbols.iter() {
        let Some(sym) = sym else {
            if let Some(out) = summaries.as_deref_mut() {
                out.push((0, String::new(), 0));
            }
            continue;
        };
        total += consume(sym.name);
        for frame in sym.frames {
            if let Some(f) = &frame.function {
                total += consume(&f.demangled);
            }
            total += frame.file.as_deref().map_or(0, consume);
            total += frame.line.unwrap_or(0) as usize;
        }
        if let Some(out) = summaries.as_deref_mut() {
            let inner = sym.frames.first();
            out.push((
                sym.frames.len(),
                inner
                    .and_then(|f| f.function.as_ref())
                    .map_or_else(|| sym.name.to_string(), |f| f.demangled.clone()),
                inner.and_then(|f| f.line).unwrap_or(0),
            ));
        }
    }
    total
}

fn addr2line_new(debug: &Path) -> addr2line::Loader {
    addr2line::Loader::new(debug).expect("addr2line opens the debug file")
}

fn addr2line_run(
    loader: &addr2line::Loader,
    addrs: &[u64],
    summaries: Option<&mut Vec<Summary>>,
) -> usize {
    let mut total = 0;
    let mut summaries = summaries;
    for &addr in addrs {
        let mut count = 0;
        let mut inner: Option<(String, u32)> = None;
        if let Ok(mut frames) = loader.find_frames(addr) {
            while let Ok(Some(frame)) = frames.next() {
                count += 1;
                let name = frame
                    .function
                    .as_ref()
                    .and_then(|f| f.demangle().ok())
                    .map(|n| n.into_owned())
                    .unwrap_or_default();
                total += consume(&name);
                let line = frame.location.as_ref().and_then(|l| l.line).unwrap_or(0);
                total += frame
                    .location
                    .as_ref()
                    .and_then(|l| l.file)
                    .map_or(0, consume);
                total += line as usize;
                if inner.is_none() {
                    inner = Some((name, line));
                }
            }
        }
        if count == 0 {
            // No DWARF here: the symbol table's name, as the others fall back to.
            if let Some(name) = loader.find_symbol(addr) {
                total += consume(name);
                inner = Some((name.to_string(), 0));
            }
        }
        if let Some(out) = summaries.as_deref_mut() {
            let (name, line) = inner.unwrap_or_default();
            out.push((count, name, line));
        }
    }
    total
}

fn blazesym_new() -> BlazeSymbolizer {
    BlazeSymbolizer::builder()
        .enable_demangling(true)
        .enable_code_info(true)
        .enable_inlined_fns(true)
        .build()
}

fn blazesym_source() -> BlazeSource<'static> {
    let mut elf = BlazeElf::new(LIBC);
    elf.debug_syms = true;
    BlazeSource::Elf(elf)
}

fn blazesym_run(
    s: &BlazeSymbolizer,
    source: &BlazeSource<'_>,
    addrs: &[u64],
    summaries: Option<&mut Vec<Summary>>,
) -> usize {
    let results = s
        .symbolize(source, BlazeInput::VirtOffset(addrs))
        .expect("blazesym symbolizes libc");
    let mut total = 0;
    let mut summaries = summaries;
    for result in &results {
        let Symbolized::Sym(sym) = result else {
            if let Some(out) = summaries.as_deref_mut() {
                out.push((0, String::new(), 0));
            }
            continue;
        };
        total += consume(&sym.name);
        if let Some(info) = &sym.code_info {
            total += consume(&info.file.to_string_lossy());
            total += info.line.unwrap_or(0) as usize;
        }
        for inlined in sym.inlined.iter() {
            total += consume(&inlined.name);
            if let Some(info) = &inlined.code_info {
                total += consume(&info.file.to_string_lossy());
                total += info.line.unwrap_or(0) as usize;
            }
        }
        if let Some(out) = summaries.as_deref_mut() {
            // blazesym lists inlined functions outermost first; the innermost is the last.
            let frames = usize::from(sym.code_info.is_some()) + sym.inlined.len();
            let (name, line) = match sym.inlined.last() {
                Some(inner) => (
                    inner.name.to_string(),
                    inner.code_info.as_ref().and_then(|c| c.line).unwrap_or(0),
                ),
                None => (
                    sym.name.to_string(),
                    sym.code_info.as_ref().and_then(|c| c.line).unwrap_or(0),
                ),
            };
            out.push((frames, name, line));
        }
    }
    total
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Peer {
    Stacksym,
    Addr2line,
    Blazesym,
    /// stacksym with `threads(2)`; last, so that the first three keep their places.
    StacksymTwoThreads,
}

impl Peer {
    const ALL: [Peer; 4] = [
        Peer::Stacksym,
        Peer::Addr2line,
        Peer::Blazesym,
        Peer::StacksymTwoThreads,
    ];

    fn name(self) -> &'static str {
        match self {
            Peer::Stacksym => "stacksym",
            Peer::Addr2line => "addr2line",
            Peer::Blazesym => "blazesym",
            Peer::StacksymTwoThreads => "stacksym-2-threads",
        }
    }

    /// Open + the whole batch, once, on a new symbolizer.
    fn cold(self, debug: &Path, addrs: &[u64]) -> Duration {
        let start = Instant::now();
        match self {
            Peer::Stacksym => black_box(stacksym_run(&stacksym_new(1), addrs, None)),
            Peer::StacksymTwoThreads => black_box(stacksym_run(&stacksym_new(2), addrs, None)),
            Peer::Addr2line => black_box(addr2line_run(&addr2line_new(debug), addrs, None)),
            Peer::Blazesym => black_box(blazesym_run(
                &blazesym_new(),
                &blazesym_source(),
                addrs,
                None,
            )),
        };
        start.elapsed()
    }

    /// A new symbolizer: `first` (cold), then `second` (new addresses on the opened file);
    /// both timed.
    fn cold_then_new(self, debug: &Path, first: &[u64], second: &[u64]) -> (Duration, Duration) {
        fn timed(run: impl FnOnce() -> usize) -> Duration {
            let start = Instant::now();
            black_box(run());
            start.elapsed()
        }
        match self {
            Peer::Stacksym | Peer::StacksymTwoThreads => {
                let threads = if self == Peer::Stacksym { 1 } else { 2 };
                let mut s = None;
                let cold = timed(|| stacksym_run(s.insert(stacksym_new(threads)), first, None));
                let s = s.expect("set by the cold run");
                (cold, timed(|| stacksym_run(&s, second, None)))
            }
            Peer::Addr2line => {
                let mut s = None;
                let cold = timed(|| addr2line_run(s.insert(addr2line_new(debug)), first, None));
                let s = s.expect("set by the cold run");
                (cold, timed(|| addr2line_run(&s, second, None)))
            }
            Peer::Blazesym => {
                let mut s = None;
                let source = blazesym_source();
                let cold = timed(|| blazesym_run(s.insert(blazesym_new()), &source, first, None));
                let s = s.expect("set by the cold run");
                (cold, timed(|| blazesym_run(&s, &source, second, None)))
            }
        }
    }
}

/// Warm symbolizers of every peer, each after one cold run.
struct Warm {
    stacksym: Symbolizer,
    stacksym_two_threads: Symbolizer,
    addr2line: addr2line::Loader,
    blazesym: BlazeSymbolizer,
    blazesym_source: BlazeSource<'static>,
}

impl Warm {
    fn new(debug: &Path, addrs: &[u64]) -> Warm {
        let warm = Warm {
            stacksym: stacksym_new(1),
            stacksym_two_threads: stacksym_new(2),
            addr2line: addr2line_new(debug),
            blazesym: blazesym_new(),
            blazesym_source: blazesym_source(),
        };
        for peer in Peer::ALL {
            warm.run(peer, addrs);
        }
        warm
    }

    fn run(&self, peer: Peer, addrs: &[u64]) -> usize {
        match peer {
            Peer::Stacksym => stacksym_run(&self.stacksym, addrs, None),
            Peer::StacksymTwoThreads => stacksym_run(&self.stacksym_two_threads, addrs, None),
            Peer::Addr2line => addr2line_run(&self.addr2line, addrs, None),
            Peer::Blazesym => blazesym_run(&self.blazesym, &self.blazesym_source, addrs, None),
        }
    }

    fn time(&self, peer: Peer, addrs: &[u64]) -> Duration {
        let start = Instant::now();
        black_box(self.run(peer, addrs));
        start.elapsed()
    }
}

/// The peak resident set of this process so far, in KiB (`VmHWM`).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Child mode: one cold run of `peer` and its second batch, then its peak RSS on stdout.
fn peak_child(peer: &str) {
    let debug = debug_file().expect("the parent checked the debug file");
    let addrs = pick_addresses(&debug, SEED);
    let second = pick_addresses(&debug, SECOND_SEED);
    let before = peak_rss_kib().unwrap_or(0);
    let peer = Peer::ALL
        .into_iter()
        .find(|p| p.name() == peer)
        .expect("a peer's name");
    peer.cold_then_new(&debug, &addrs, &second);
    println!("{} {before}", peak_rss_kib().unwrap_or(0));
}

/// Peak RSS of a cold run of `peer` and its second batch, in KiB, measured in a child
/// process: (peak, the child's peak before the run, which every peer shares).
fn peak_of(peer: Peer) -> Option<(u64, u64)> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new(exe)
        .args([PEAK_CHILD, peer.name()])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace();
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

fn median(v: Vec<f64>) -> f64 {
    median_of(v).unwrap_or(0.0)
}

fn main() {
    // `STACKSYM_BENCH_READ_FILES=1`: stacksym reads files into memory instead of mapping
    // them (`read_files_instead_of_mapping`), to measure that choice (ARCHITECTURE.md, "SIGBUS").
    if std::env::var_os("STACKSYM_BENCH_READ_FILES").is_some() {
        stacksym::elf::read_files_instead_of_mapping();
    }
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == PEAK_CHILD) {
        peak_child(args.get(i + 1).map_or("", String::as_str));
        return;
    }
    let (listing, quick) = mode();

    let debug = match debug_file() {
        Ok(debug) => debug,
        Err(why) => {
            println!("dwarf bench skipped: {why}");
            return;
        }
    };
    let addrs = pick_addresses(&debug, SEED);
    let second = pick_addresses(&debug, SECOND_SEED);

    if !listing {
        println!(
            "{LIBC} with {}: {} addresses in sized functions, seed {SEED:#x} (the second \
             batch: seed {SECOND_SEED:#x})",
            debug.display(),
            addrs.len()
        );
        let mut ours = Vec::new();
        let mut a2l = Vec::new();
        let mut blaze = Vec::new();
        stacksym_run(&stacksym_new(1), &addrs, Some(&mut ours));
        addr2line_run(&addr2line_new(&debug), &addrs, Some(&mut a2l));
        blazesym_run(
            &blazesym_new(),
            &blazesym_source(),
            &addrs,
            Some(&mut blaze),
        );
        let with_lines = ours.iter().filter(|s| s.0 > 0).count();
        let inlined = ours.iter().filter(|s| s.0 > 1).count();
        println!(
            "stacksym: {with_lines} addresses with source lines, {inlined} with inlined frames"
        );
        for (name, theirs) in [("addr2line", &a2l), ("blazesym", &blaze)] {
            let same_count = ours.iter().zip(theirs).filter(|(a, b)| a.0 == b.0).count();
            let same_inner = ours
                .iter()
                .zip(theirs)
                .filter(|(a, b)| a.1 == b.1 && a.2 == b.2)
                .count();
            println!(
                "agreement with {name}: same frame count {same_count}, same innermost \
                 function and line {same_inner}, of {}",
                addrs.len()
            );
        }
    }

    let mut criterion = common::criterion(Duration::from_secs(3));
    {
        let mut group = criterion.benchmark_group("dwarf-cold");
        group.sampling_mode(SamplingMode::Flat);
        for peer in Peer::ALL {
            group.bench_function(peer.name(), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| peer.cold(&debug, &addrs)).sum())
            });
        }
        group.finish();
    }
    {
        // Each sample: new symbolizers, the first batch (not timed), the second one timed.
        let mut group = criterion.benchmark_group("dwarf-warm-new-addresses");
        group.sampling_mode(SamplingMode::Flat);
        for peer in Peer::ALL {
            group.bench_function(peer.name(), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| peer.cold_then_new(&debug, &addrs, &second).1)
                        .sum()
                })
            });
        }
        group.finish();
    }
    {
        let mut group = criterion.benchmark_group("dwarf-warm-same-batch");
        group.sampling_mode(SamplingMode::Flat);
        let warm = Warm::new(&debug, &addrs);
        for peer in Peer::ALL {
            group.bench_function(peer.name(), |b| {
                b.iter(|| black_box(warm.run(peer, &addrs)))
            });
        }
        group.finish();
    }
    criterion.final_summary();
    if listing {
        return;
    }

    // Interleaved rounds: the peers take turns, so load from elsewhere falls on all.
    let rounds = if quick { 1 } else { 7 };
    let warm = Warm::new(&debug, &addrs);
    // Per measure (cold, warm with new addresses, warm with the same batch), per peer.
    let mut times: [[Vec<f64>; 4]; 3] = Default::default();
    // Per measure, the addr2line crate's and blazesym's time over stacksym's, and over
    // stacksym's with two threads.
    let mut ratios: [[Vec<f64>; 2]; 3] = Default::default();
    let mut ratios_two_threads: [[Vec<f64>; 2]; 3] = Default::default();
    for _ in 0..rounds {
        let mut round = [[0.0; 4]; 3];
        for (i, peer) in Peer::ALL.into_iter().enumerate() {
            let (cold, new) = peer.cold_then_new(&debug, &addrs, &second);
            round[0][i] = cold.as_secs_f64();
            round[1][i] = new.as_secs_f64();
        }
        for (i, &peer) in Peer::ALL.iter().enumerate() {
            round[2][i] = warm.time(peer, &addrs).as_secs_f64();
        }
        for m in 0..3 {
            for i in 0..4 {
                times[m][i].push(round[m][i]);
            }
            for i in 0..2 {
                ratios[m][i].push(round[m][i + 1] / round[m][0]);
                ratios_two_threads[m][i].push(round[m][i + 1] / round[m][3]);
            }
        }
    }
    let peaks: Vec<Option<(u64, u64)>> = Peer::ALL.iter().map(|&p| peak_of(p)).collect();

    let ms = |v: &Vec<f64>| median(v.clone()) * 1e3;
    let us_per_addr = |v: &Vec<f64>| median(v.clone()) * 1e6 / addrs.len() as f64;
    let verdict = |ratio: f64, target: f64| if ratio >= target { "met" } else { "MISSED" };
    println!();
    println!(
        "summary ({rounds} interleaved round(s){}; {} addresses per batch):",
        if quick {
            ", quick run: indicative only"
        } else {
            ""
        },
        addrs.len()
    );
    println!("| | stacksym | addr2line crate | blazesym | stacksym, `threads(2)` |");
    println!("|---|---|---|---|---|");
    println!(
        "| cold (open + find debug file + all frames), ms | {:.1} | {:.1} | {:.1} | {:.1} |",
        ms(&times[0][0]),
        ms(&times[0][1]),
        ms(&times[0][2]),
        ms(&times[0][3])
    );
    for (m, what) in [
        (1, "warm, new addresses (a second batch on the opened file)"),
        (2, "warm, the same batch again"),
    ] {
        println!(
            "| {what}, µs/address | {:.2} | {:.2} | {:.2} | {:.2} |",
            us_per_addr(&times[m][0]),
            us_per_addr(&times[m][1]),
            us_per_addr(&times[m][2]),
            us_per_addr(&times[m][3])
        );
    }
    let peak = |p: &Option<(u64, u64)>| {
        p.map_or_else(
            || "?".to_string(),
            |(peak, base)| {
                format!(
                    "{:.1} (+{:.1})",
                    peak as f64 / 1024.0,
                    (peak.saturating_sub(base)) as f64 / 1024.0
                )
            },
        )
    };
    println!(
        "| peak RSS of a cold run and a second batch, MiB (+ over the child's baseline) | {} | \
         {} | {} | {} |",
        peak(&peaks[0]),
        peak(&peaks[1]),
        peak(&peaks[2]),
        peak(&peaks[3])
    );
    println!("| target | measured | |");
    println!("|---|---|---|");
    for (i, (name, target)) in [("addr2line crate", 2.0), ("blazesym", 3.0)]
        .into_iter()
        .enumerate()
    {
        for (m, what) in [(0, "cold"), (1, "warm (new addresses)")] {
            let r = median(ratios[m][i].clone());
            println!(
                "| {what} ≥ {target}× faster than the {name} | {r:.2}× | {} |",
                verdict(r, target)
            );
        }
        let r = median(ratios[2][i].clone());
        println!("| (warm, the same batch: not a target) vs the {name} | {r:.2}× | |");
        for (m, what) in [(0, "cold"), (1, "warm (new addresses)")] {
            let r = median(ratios_two_threads[m][i].clone());
            println!(
                "| (with `threads(2)`, not the default) {what} vs the {name} | {r:.2}× | {} |",
                verdict(r, target)
            );
        }
    }
    if let (Some((ours, _)), Some((theirs, _))) = (peaks[0], peaks[1]) {
        println!(
            "| peak memory not above the addr2line crate's | {:.1} vs {:.1} MiB | {} |",
            ours as f64 / 1024.0,
            theirs as f64 / 1024.0,
            if ours <= theirs { "met" } else { "MISSED" }
        );
    }
}
