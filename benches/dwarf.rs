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
//! - warm: the same batch again on the symbolizer of a cold run.
//!
//! Before timing, the peers' chains are compared (frame counts, innermost function names
//! and lines) and the agreement printed. Peak memory: each peer's cold run is repeated in a
//! child process of this bench and its peak resident set (`VmHWM`) reported.
//! After the criterion groups, interleaved rounds run the peers in turn and the summary
//! prints medians and the ratios against the targets (cold and warm ≥ 2× faster than the
//! addr2line crate and ≥ 3× faster than blazesym; peak memory not above blazesym's).
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
use object::{Object, ObjectSymbol, SymbolKind};
use stacksym::{Input, Source, Symbolizer};

mod common;
use common::{consume, median as median_of, mode, XorShift};

const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const DEBUG_DIR: &str = "/usr/lib/debug";
/// How many addresses every peer symbolizes.
const ADDRESS_COUNT: usize = 20_000;
/// Fixed seed of the address generator, so every run uses the same addresses.
const SEED: u64 = 0x0d1a_ce5e_ed5e_ed01;
/// Argument that makes this bench a child that measures one peer's peak memory.
const PEAK_CHILD: &str = "--peak-memory-of";

/// libc's debug file, by the build-id of libc.so.6 (read with the object crate).
fn debug_file() -> Result<PathBuf, String> {
    let bytes = std::fs::read(LIBC).map_err(|e| format!("{LIBC}: {e}"))?;
    let file = object::File::parse(&*bytes).map_err(|e| format!("{LIBC}: {e}"))?;
    let id = file
        .build_id()
        .ok()
        .flatten()
        .ok_or_else(|| format!("{LIBC} has no build-id"))?;
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let path = PathBuf::from(format!(
        "{DEBUG_DIR}/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} does not exist (apt-get install libc6-dbg)",
            path.display()
        ))
    }
}

/// Random addresses inside sized FUNC symbols of the debug file's `.symtab`.
fn pick_addresses(debug: &Path) -> Vec<u64> {
    let bytes = std::fs::read(debug).expect("debug file readable");
    let file = object::File::parse(&*bytes).expect("debug file parses");
    let mut funcs: Vec<(u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.is_definition())
        .map(|s| (s.address(), s.size()))
        .collect();
    funcs.sort_unstable();
    funcs.dedup();
    let mut rng = XorShift(SEED);
    (0..ADDRESS_COUNT)
        .map(|_| {
            let (start, size) = funcs[(rng.next() % funcs.len() as u64) as usize];
            start + rng.next() % size
        })
        .collect()
}

/// One address's answer, reduced for comparing the peers: (frames, innermost function,
/// innermost line).
type Summary = (usize, String, u32);

fn stacksym_new() -> Symbolizer {
    Symbolizer::builder()
        .demangle(true)
        .debug_dirs(vec![PathBuf::from(DEBUG_DIR)])
        .build()
}

fn stacksym_run(s: &Symbolizer, addrs: &[u64], summaries: Option<&mut Vec<Summary>>) -> usize {
    let symbols = s
        .symbolize(
            &Source::Elf {
                path: Path::new(LIBC),
            },
            Input::VirtAddrs(addrs),
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
}

impl Peer {
    const ALL: [Peer; 3] = [Peer::Stacksym, Peer::Addr2line, Peer::Blazesym];

    fn name(self) -> &'static str {
        match self {
            Peer::Stacksym => "stacksym",
            Peer::Addr2line => "addr2line",
            Peer::Blazesym => "blazesym",
        }
    }

    /// Open + the whole batch, once, on a new symbolizer.
    fn cold(self, debug: &Path, addrs: &[u64]) -> Duration {
        let start = Instant::now();
        match self {
            Peer::Stacksym => black_box(stacksym_run(&stacksym_new(), addrs, None)),
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
}

/// Warm symbolizers of every peer, each after one cold run.
struct Warm {
    stacksym: Symbolizer,
    addr2line: addr2line::Loader,
    blazesym: BlazeSymbolizer,
    blazesym_source: BlazeSource<'static>,
}

impl Warm {
    fn new(debug: &Path, addrs: &[u64]) -> Warm {
        let warm = Warm {
            stacksym: stacksym_new(),
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

/// Child mode: one cold run of `peer`, then its peak RSS on stdout.
fn peak_child(peer: &str) {
    let debug = debug_file().expect("the parent checked the debug file");
    let addrs = pick_addresses(&debug);
    let before = peak_rss_kib().unwrap_or(0);
    let peer = Peer::ALL
        .into_iter()
        .find(|p| p.name() == peer)
        .expect("a peer's name");
    peer.cold(&debug, &addrs);
    println!("{} {before}", peak_rss_kib().unwrap_or(0));
}

/// Peak RSS of a cold run of `peer`, in KiB, measured in a child process: (peak, the
/// child's peak before the run, which every peer shares).
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
    let addrs = pick_addresses(&debug);

    if !listing {
        println!(
            "{LIBC} with {}: {} addresses in sized functions, seed {SEED:#x}",
            debug.display(),
            addrs.len()
        );
        let mut ours = Vec::new();
        let mut a2l = Vec::new();
        let mut blaze = Vec::new();
        stacksym_run(&stacksym_new(), &addrs, Some(&mut ours));
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
        let mut group = criterion.benchmark_group("dwarf-warm");
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
    let mut cold: [Vec<f64>; 3] = Default::default();
    let mut hot: [Vec<f64>; 3] = Default::default();
    let mut cold_ratio: [Vec<f64>; 2] = Default::default();
    let mut hot_ratio: [Vec<f64>; 2] = Default::default();
    for _ in 0..rounds {
        let c: Vec<f64> = Peer::ALL
            .iter()
            .map(|p| p.cold(&debug, &addrs).as_secs_f64())
            .collect();
        let h: Vec<f64> = Peer::ALL
            .iter()
            .map(|&p| warm.time(p, &addrs).as_secs_f64())
            .collect();
        for i in 0..3 {
            cold[i].push(c[i]);
            hot[i].push(h[i]);
        }
        for i in 0..2 {
            cold_ratio[i].push(c[i + 1] / c[0]);
            hot_ratio[i].push(h[i + 1] / h[0]);
        }
    }
    let peaks: Vec<Option<(u64, u64)>> = Peer::ALL.iter().map(|&p| peak_of(p)).collect();

    let ms = |v: &Vec<f64>| median(v.clone()) * 1e3;
    let us_per_addr = |v: &Vec<f64>| median(v.clone()) * 1e6 / addrs.len() as f64;
    let verdict = |ratio: f64, target: f64| if ratio >= target { "met" } else { "MISSED" };
    println!();
    println!(
        "summary ({rounds} interleaved round(s){}; {} addresses):",
        if quick {
            ", quick run: indicative only"
        } else {
            ""
        },
        addrs.len()
    );
    println!("| | stacksym | addr2line crate | blazesym |");
    println!("|---|---|---|---|");
    println!(
        "| cold (open + find debug file + all frames), ms | {:.1} | {:.1} | {:.1} |",
        ms(&cold[0]),
        ms(&cold[1]),
        ms(&cold[2])
    );
    println!(
        "| warm, µs/address | {:.2} | {:.2} | {:.2} |",
        us_per_addr(&hot[0]),
        us_per_addr(&hot[1]),
        us_per_addr(&hot[2])
    );
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
        "| peak RSS of a cold run, MiB (+ over the child's baseline) | {} | {} | {} |",
        peak(&peaks[0]),
        peak(&peaks[1]),
        peak(&peaks[2])
    );
    println!("| target | measured | |");
    println!("|---|---|---|");
    for (i, (name, target)) in [("addr2line crate", 2.0), ("blazesym", 3.0)]
        .into_iter()
        .enumerate()
    {
        let (c, h) = (median(cold_ratio[i].clone()), median(hot_ratio[i].clone()));
        println!(
            "| cold ≥ {target}× faster than the {name} | {c:.2}× | {} |",
            verdict(c, target)
        );
        println!(
            "| warm ≥ {target}× faster than the {name} | {h:.2}× | {} |",
            verdict(h, target)
        );
    }
    if let (Some((ours, _)), Some((theirs, _))) = (peaks[0], peaks[2]) {
        println!(
            "| peak memory not above blazesym's | {:.1} vs {:.1} MiB | {} |",
            ours as f64 / 1024.0,
            theirs as f64 / 1024.0,
            if ours <= theirs { "met" } else { "MISSED" }
        );
    }
}
