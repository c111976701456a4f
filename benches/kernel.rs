//! Kernel symbolization from kallsyms: stacksym's `Kallsyms` against blazesym's `Kernel`
//! source (kallsyms file, no vmlinux, KASLR offset 0, no debug symbols, no demangling).
//!
//! Both read the same file: a snapshot of `/proc/kallsyms` in a temporary file (so the time
//! the kernel takes to generate `/proc/kallsyms`, which both would pay, does not blur the
//! comparison; it is measured and printed apart). When `/proc/kallsyms` is unreadable or
//! zeroed (not root), the committed `testdata/kallsyms/real-excerpt.txt` is used instead and
//! the bench says so.
//!
//! The same 100,000 addresses for both: a text symbol picked uniformly with a fixed-seed
//! xorshift, then an offset before the next symbol's address (symbols read by a plain parse
//! here, not through stacksym). Measured:
//! - parse: open + index + look one address up (blazesym loads kallsyms on first use: a new
//!   symbolizer per iteration);
//! - lookups: all 100,000 addresses with the opened index / symbolizer, reading each name
//!   (its length and last byte), as printing would: stacksym one `find_symbol` call per
//!   address; blazesym one `symbolize` call for the batch (its API);
//! - batch lookups: stacksym's batch call, `find_symbols` (what `symbolize_kernel` uses),
//!   against the same blazesym batch call.
//!
//! Before timing, both peers' names are compared. After the criterion groups, interleaved
//! rounds run the peers in turn and the summary prints medians and the ratios against the
//! targets (parse ≥ 2× faster, lookups ≥ 10× faster than blazesym).
//!
//! `cargo bench --bench kernel` takes about half a minute; `-- --test` runs each once.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blazesym::symbolize::source::{Kernel, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::MaybeDefault;
use criterion::SamplingMode;
use stacksym::kernel::{Kallsyms, PROC_KALLSYMS};
use stacksym::AbsAddr;

mod common;
use common::{consume, median as median_of, mode, XorShift};

/// How many addresses every peer symbolizes.
const ADDRESS_COUNT: usize = 100_000;
/// Fixed seed of the address generator, so every run uses the same addresses.
const SEED: u64 = 0x5eed_cafe_f00d_d00d;
/// The committed fallback when `/proc/kallsyms` cannot be used.
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/kallsyms/real-excerpt.txt"
);

/// The kallsyms text to use and where it came from.
fn kallsyms_text() -> (String, String) {
    match std::fs::read_to_string(PROC_KALLSYMS) {
        Ok(text) if text.lines().any(|l| !l.starts_with("0000000000000000 ")) => {
            (text, format!("a snapshot of {PROC_KALLSYMS}"))
        }
        Ok(_) => (
            std::fs::read_to_string(FIXTURE).unwrap_or_default(),
            format!("{FIXTURE} ({PROC_KALLSYMS} is zeroed: kptr_restrict / not root)"),
        ),
        Err(e) => (
            std::fs::read_to_string(FIXTURE).unwrap_or_default(),
            format!("{FIXTURE} ({PROC_KALLSYMS} is not readable: {e})"),
        ),
    }
}

/// Random addresses inside text symbols: (start, next distinct address) pairs from a plain
/// parse of the text, a pair picked uniformly, an offset inside it.
fn pick_addresses(text: &str) -> (Vec<u64>, usize) {
    let mut syms: Vec<(u64, bool)> = text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let addr = u64::from_str_radix(fields.next()?, 16).ok()?;
            let kind = fields.next()?;
            Some((addr, matches!(kind, "t" | "T" | "w" | "W")))
        })
        .collect();
    // Text first at an address, so that a text symbol sharing a data symbol's address counts.
    syms.sort_by_key(|&(addr, text)| (addr, !text));
    syms.dedup_by_key(|s| s.0);
    let ranges: Vec<(u64, u64)> = syms
        .windows(2)
        .filter(|w| w[0].1 && w[1].0 - w[0].0 < 1 << 20)
        .map(|w| (w[0].0, w[1].0))
        .collect();
    let mut rng = XorShift(SEED);
    let addrs = (0..ADDRESS_COUNT)
        .map(|_| {
            let (start, end) = ranges[(rng.next() % ranges.len() as u64) as usize];
            start + rng.next() % (end - start)
        })
        .collect();
    (addrs, ranges.len())
}

fn blazesym_new() -> Symbolizer {
    Symbolizer::builder()
        .enable_demangling(false)
        .enable_code_info(false)
        .enable_inlined_fns(false)
        .build()
}

fn blazesym_source(path: &Path) -> Source<'static> {
    Source::Kernel(Kernel {
        kallsyms: MaybeDefault::Some(path.to_path_buf()),
        vmlinux: MaybeDefault::None,
        kaslr_offset: Some(0),
        debug_syms: false,
        ..Kernel::default()
    })
}

fn blazesym_lookups(s: &Symbolizer, source: &Source<'_>, addrs: &[u64]) -> usize {
    s.symbolize(source, Input::AbsAddr(addrs))
        .expect("blazesym symbolizes kallsyms")
        .iter()
        .map(|sym| match sym {
            Symbolized::Sym(sym) => consume(&sym.name),
            Symbolized::Unknown(_) => 0,
        })
        .sum()
}

fn stacksym_lookups(k: &Kallsyms, addrs: &[u64]) -> usize {
    addrs
        .iter()
        .map(|&addr| match k.find_symbol(AbsAddr(addr)) {
            Ok(Some(sym)) => consume(sym.name),
            _ => 0,
        })
        .sum()
}

fn stacksym_batch_lookups(k: &Kallsyms, addrs: &[u64]) -> usize {
    k.find_symbols(AbsAddr::from_raw_slice(addrs))
        .expect("lookups do not fail")
        .iter()
        .map(|sym| sym.map_or(0, |sym| consume(sym.name)))
        .sum()
}

fn stacksym_parse(path: &Path, first: u64) -> Duration {
    let start = Instant::now();
    let k = Kallsyms::open(path).expect("stacksym opens the kallsyms snapshot");
    black_box(stacksym_lookups(&k, &[first]));
    start.elapsed()
}

fn blazesym_parse(path: &Path, first: u64) -> Duration {
    let start = Instant::now();
    let s = blazesym_new();
    black_box(blazesym_lookups(&s, &blazesym_source(path), &[first]));
    start.elapsed()
}

/// Names both give, compared: (same name, same start address, both found).
fn agreement(path: &Path, addrs: &[u64]) -> (usize, usize, usize) {
    let k = Kallsyms::open(path).expect("stacksym opens the kallsyms snapshot");
    let s = blazesym_new();
    let source = blazesym_source(path);
    let theirs = s
        .symbolize(&source, Input::AbsAddr(addrs))
        .expect("blazesym symbolizes kallsyms");
    let (mut same_name, mut same_start, mut both) = (0, 0, 0);
    for (&addr, theirs) in addrs.iter().zip(&theirs) {
        let ours = k.find_symbol(AbsAddr(addr)).ok().flatten();
        if let (Some(ours), Symbolized::Sym(theirs)) = (ours, theirs) {
            both += 1;
            same_name += usize::from(ours.name == theirs.name);
            same_start += usize::from(ours.addr.0 == theirs.addr);
        }
    }
    (same_name, same_start, both)
}

fn median(v: Vec<Duration>) -> Duration {
    median_of(v).unwrap_or_default()
}

fn main() {
    let (listing, quick) = mode();

    let (text, origin) = kallsyms_text();
    let (addrs, text_syms) = pick_addresses(&text);
    let Ok(snapshot) = tempfile::NamedTempFile::new() else {
        println!("kernel bench skipped: no temporary file");
        return;
    };
    if std::fs::write(snapshot.path(), &text).is_err() {
        println!(
            "kernel bench skipped: cannot write {}",
            snapshot.path().display()
        );
        return;
    }
    let path: PathBuf = snapshot.path().to_path_buf();
    let first = addrs[0];

    if !listing {
        println!(
            "kallsyms: {origin}: {} lines, {:.1} MB, {text_syms} text symbols; {} addresses, seed {SEED:#x}",
            text.lines().count(),
            text.len() as f64 / 1e6,
            addrs.len(),
        );
        let (same_name, same_start, both) = agreement(&path, &addrs);
        let pct = |n: usize| 100.0 * n as f64 / addrs.len() as f64;
        println!(
            "agreement with blazesym: same name {same_name} ({:.2} %), same symbol start {same_start} ({:.2} %), both found {both} ({:.2} %) of {}{}",
            pct(same_name),
            pct(same_start),
            pct(both),
            addrs.len(),
            if pct(same_name) >= 99.0 { "" } else { "  ** below 99 % **" },
        );
    }

    let mut criterion = common::criterion(Duration::from_secs(2));
    {
        let mut group = criterion.benchmark_group("parse");
        group.sampling_mode(SamplingMode::Flat);
        group.bench_function("stacksym", |b| {
            b.iter_custom(|iters| (0..iters).map(|_| stacksym_parse(&path, first)).sum())
        });
        group.bench_function("blazesym", |b| {
            b.iter_custom(|iters| (0..iters).map(|_| blazesym_parse(&path, first)).sum())
        });
        group.finish();
    }
    {
        let mut group = criterion.benchmark_group("lookups");
        group.sampling_mode(SamplingMode::Flat);
        let k = Kallsyms::open(&path).expect("stacksym opens the kallsyms snapshot");
        group.bench_function("stacksym", |b| {
            b.iter(|| black_box(stacksym_lookups(&k, &addrs)))
        });
        group.bench_function("stacksym-batch", |b| {
            b.iter(|| black_box(stacksym_batch_lookups(&k, &addrs)))
        });
        let s = blazesym_new();
        let source = blazesym_source(&path);
        group.bench_function("blazesym", |b| {
            b.iter(|| black_box(blazesym_lookups(&s, &source, &addrs)))
        });
        group.finish();
    }
    criterion.final_summary();
    if listing {
        return;
    }

    // Interleaved rounds: the peers take turns, so load from elsewhere falls on both.
    let rounds = if quick { 1 } else { 11 };
    let k = Kallsyms::open(&path).expect("stacksym opens the kallsyms snapshot");
    let s = blazesym_new();
    let source = blazesym_source(&path);
    black_box(blazesym_lookups(&s, &source, &addrs));
    let (mut parse_ours, mut parse_theirs, mut look_ours, mut look_theirs) =
        (vec![], vec![], vec![], vec![]);
    let (mut parse_ratio, mut look_ratio) = (vec![], vec![]);
    let (mut batch_ours, mut batch_ratio) = (vec![], vec![]);
    for _ in 0..rounds {
        let (ours, theirs) = (stacksym_parse(&path, first), blazesym_parse(&path, first));
        parse_ratio.push(theirs.as_secs_f64() / ours.as_secs_f64());
        parse_ours.push(ours);
        parse_theirs.push(theirs);

        black_box(stacksym_lookups(&k, &addrs));
        let start = Instant::now();
        black_box(stacksym_lookups(&k, &addrs));
        let ours = start.elapsed();
        black_box(blazesym_lookups(&s, &source, &addrs));
        let start = Instant::now();
        black_box(blazesym_lookups(&s, &source, &addrs));
        let theirs = start.elapsed();
        look_ratio.push(theirs.as_secs_f64() / ours.as_secs_f64());
        look_ours.push(ours);
        look_theirs.push(theirs);

        black_box(stacksym_batch_lookups(&k, &addrs));
        let start = Instant::now();
        black_box(stacksym_batch_lookups(&k, &addrs));
        let batch = start.elapsed();
        batch_ratio.push(theirs.as_secs_f64() / batch.as_secs_f64());
        batch_ours.push(batch);
    }
    let proc_read = std::fs::read(PROC_KALLSYMS).ok().map(|_| {
        let start = Instant::now();
        black_box(std::fs::read(PROC_KALLSYMS).map(|b| b.len()).unwrap_or(0));
        start.elapsed()
    });
    let median_f = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let per_addr = |d: Duration| d.as_nanos() as f64 / addrs.len() as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let verdict = |ratio: f64, target: f64| if ratio >= target { "met" } else { "missed" };

    println!();
    println!(
        "summary ({rounds} interleaved round(s){}; {} symbols indexed in 16 bytes each, plus the {:.1} MB text):",
        if quick { ", quick run: indicative only" } else { "" },
        k.len(),
        text.len() as f64 / 1e6,
    );
    println!("| | stacksym | blazesym |");
    println!("|---|---|---|");
    let (po, pt) = (median(parse_ours), median(parse_theirs));
    let (lo, lt) = (median(look_ours), median(look_theirs));
    println!(
        "| parse (open + index + 1 lookup), ms | {:.1} | {:.1} |",
        ms(po),
        ms(pt)
    );
    println!(
        "| lookups, ns/address | {:.0} | {:.0} |",
        per_addr(lo),
        per_addr(lt)
    );
    println!(
        "| batch lookups (find_symbols), ns/address | {:.0} | (as above: its call is a batch) |",
        per_addr(median(batch_ours)),
    );
    let (pr, lr) = (median_f(parse_ratio), median_f(look_ratio));
    let br = median_f(batch_ratio);
    println!("| target | measured | |");
    println!("|---|---|---|");
    println!(
        "| parse ≥ 2× faster than blazesym | {pr:.1}× | {} |",
        verdict(pr, 2.0)
    );
    println!(
        "| lookups ≥ 10× faster than blazesym, one call per address | {lr:.1}× | {} |",
        verdict(lr, 10.0)
    );
    println!(
        "| lookups ≥ 10× faster than blazesym, batch call vs batch call | {br:.1}× | {} |",
        verdict(br, 10.0)
    );
    if let Some(d) = proc_read {
        println!(
            "(reading {PROC_KALLSYMS} itself, which both would pay on top: {:.1} ms)",
            ms(d)
        );
    }
}
