//! A real `perf record` profile, symbolized by stacksym and by perf itself.
//!
//! `sort` (coreutils) sorts 300,000 random lines under `perf record -e cpu-clock`; most
//! samples land in libc (`strcmp`, `memcmp`, `strcoll`), whose names come from libc6-dbg's
//! debug file, some in the kernel. `perf script --show-mmap-events` gives each sample's
//! address and perf's `symbol+offset`, and the mappings. stacksym symbolizes the same samples:
//! user addresses as file offsets of the mapped file (`ip - start + pgoff`, the conversion
//! perf does), kernel addresses through `/proc/kallsyms`. A sample agrees when both name a
//! symbol with the same start address (the name may be an alias: perf and stacksym pick among
//! aliases by different rules); at least 99 % must agree, disagreements are printed.
//!
//! Needs perf (`linux-perf`) and a kernel that lets root open a cpu-clock event; says
//! SKIPPED otherwise.

mod support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use stacksym::kernel::PROC_KALLSYMS;
use stacksym::{Input, KernelSource, NotFound, Source, Symbolizer};
use support::writeln_stderr;

/// A `PERF_RECORD_MMAP2` line's mapping.
#[derive(Debug)]
struct Mmap {
    start: u64,
    len: u64,
    pgoff: u64,
    path: PathBuf,
}

/// A sample: its address, perf's symbol (without a version suffix) and offset, and its dso.
#[derive(Debug)]
struct Sample {
    ip: u64,
    sym: Option<(String, u64)>,
    dso: String,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// `PERF_RECORD_MMAP2 PID/TID: [0xSTART(0xLEN) @ 0xPGOFF ...]: PROT PATH`
fn parse_mmap(line: &str) -> Option<Mmap> {
    let rest = line.split_once("PERF_RECORD_MMAP2 ")?.1;
    let bracket = rest.split_once('[')?.1;
    let (range, rest) = bracket.split_once(']')?;
    let (start, rest_range) = range.split_once('(')?;
    let (len, after) = rest_range.split_once(')')?;
    let pgoff = after.split_whitespace().nth(1)?;
    // `: r-xp /path/to/file` (the path may hold blanks).
    let (_prot, path) = rest.trim_start_matches(':').trim().split_once(' ')?;
    Some(Mmap {
        start: hex(start)?,
        len: hex(len)?,
        pgoff: hex(pgoff)?,
        path: PathBuf::from(path),
    })
}

/// `IP SYM+0xOFF (DSO)` or `IP [unknown] (DSO)`.
fn parse_sample(line: &str) -> Option<Sample> {
    let mut fields = line.split_whitespace();
    let ip = hex(fields.next()?)?;
    let sym = fields.next()?;
    let dso = fields.next()?.trim_start_matches('(').trim_end_matches(')');
    let sym = sym.rsplit_once("+0x").and_then(|(name, off)| {
        let name = name.split('@').next().unwrap_or(name).to_string();
        Some((name, hex(off)?))
    });
    Some(Sample {
        ip,
        sym,
        dso: dso.to_string(),
    })
}

#[test]
fn perf_record_of_sort_agrees_with_perf_script() {
    let test = "perf_record_of_sort_agrees_with_perf_script";
    let Some(perf) = support::require_tool(test, "perf", "linux-perf") else {
        return;
    };
    let Some(sort) = support::require_tool(test, "sort", "coreutils") else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    let words = dir.path().join("words.txt");
    let mut rng = support::XorShift::new(0x50_47);
    let text: String = (0..300_000)
        .map(|_| {
            let word: String = (0..12)
                .map(|_| char::from(b'a' + rng.below(26) as u8))
                .collect();
            word + "\n"
        })
        .collect();
    std::fs::write(&words, text).expect("writable temp dir");
    let data = dir.path().join("perf.data");
    let record = Command::new(&perf)
        .args(["record", "-q", "-e", "cpu-clock", "-F", "4000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&sort)
        .arg(&words)
        .args(["-o", "/dev/null"])
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("perf runs");
    if !record.status.success() {
        // The kernel may forbid perf events (a container, perf_event_paranoid): not a tool
        // CI can install.
        writeln_stderr(format_args!(
            "{test}: SKIPPED: perf record failed: {}",
            String::from_utf8_lossy(&record.stderr).trim()
        ));
        return;
    }
    let script = Command::new(&perf)
        .args([
            "script",
            "--show-mmap-events",
            "-F",
            "ip,sym,symoff,dso",
            "-i",
        ])
        .arg(&data)
        .output()
        .expect("perf script runs");
    assert!(script.status.success(), "perf script failed");
    let out = String::from_utf8_lossy(&script.stdout);
    let mmaps: Vec<Mmap> = out.lines().filter_map(parse_mmap).collect();
    let samples: Vec<Sample> = out
        .lines()
        .filter(|l| !l.contains("PERF_RECORD_"))
        .filter_map(parse_sample)
        .collect();
    assert!(
        samples.len() > 200,
        "perf recorded {} samples",
        samples.len()
    );

    // User samples, by mapped file, as file offsets.
    let mut by_file: HashMap<PathBuf, Vec<(usize, u64)>> = HashMap::new();
    let mut kernel = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        if s.dso == "[kernel.kallsyms]" {
            kernel.push(i);
            continue;
        }
        let Some(m) = mmaps
            .iter()
            .rev()
            .find(|m| m.start <= s.ip && s.ip < m.start + m.len && m.path.is_absolute())
        else {
            continue;
        };
        by_file
            .entry(m.path.clone())
            .or_default()
            .push((i, s.ip - m.start + m.pgoff));
    }
    let symbolizer = Symbolizer::builder().build();
    // Per sample: our (name, absolute start), if found.
    let mut ours: HashMap<usize, (String, u64)> = HashMap::new();
    for (path, list) in &by_file {
        let offsets: Vec<u64> = list.iter().map(|&(_, off)| off).collect();
        let symbols = symbolizer
            .symbolize(
                &Source::Elf { path },
                Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&offsets)),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        for (k, &(i, _)) in list.iter().enumerate() {
            if let Some(sym) = symbols.get(k) {
                ours.insert(i, (sym.name.to_string(), samples[i].ip - sym.offset));
            }
        }
    }
    // The running kernel's kallsyms: whether it shows addresses is its own answer.
    let addrs: Vec<u64> = kernel.iter().map(|&i| samples[i].ip).collect();
    let kernel_symbols = symbolizer
        .symbolize(
            &Source::Kernel(KernelSource::default()),
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&addrs)),
        )
        .ok()
        .filter(|symbols| {
            !addrs.is_empty()
                && !matches!(symbols.not_found(0), Some(NotFound::KernelAddrsHidden(_)))
        });
    match &kernel_symbols {
        Some(symbols) => {
            for (k, &i) in kernel.iter().enumerate() {
                if let Some(f) = symbols.get(k) {
                    ours.insert(i, (f.name.to_string(), samples[i].ip - f.offset));
                }
            }
        }
        None => writeln_stderr(format_args!(
            "{test}: kernel samples not compared ({PROC_KALLSYMS} unreadable or none)"
        )),
    }
    let kallsyms = kernel_symbols.as_ref();

    let (mut compared, mut agreed, mut same_name, mut shown) = (0, 0, 0, 0);
    let mut per_dso: HashMap<&str, (usize, usize)> = HashMap::new();
    for (i, s) in samples.iter().enumerate() {
        let Some((name, off)) = &s.sym else { continue };
        if s.dso == "[kernel.kallsyms]" && kallsyms.is_none() {
            continue;
        }
        compared += 1;
        let entry = per_dso.entry(s.dso.as_str()).or_default();
        entry.0 += 1;
        let theirs_start = s.ip - off;
        match ours.get(&i) {
            Some((our_name, our_start)) if *our_start == theirs_start => {
                agreed += 1;
                entry.1 += 1;
                same_name += usize::from(our_name == name);
            }
            other => {
                if shown < 8 {
                    shown += 1;
                    eprintln!(
                        "  {:#x} ({}): perf {name}+{off:#x}, stacksym {other:?}",
                        s.ip, s.dso
                    );
                }
            }
        }
    }
    for (dso, (n, ok)) in &per_dso {
        eprintln!("  {dso}: {ok}/{n}");
    }
    writeln_stderr(format_args!(
        "{test}: {} samples; {agreed}/{compared} named by both with the same symbol start \
         ({same_name} with the same name, the rest aliases)",
        samples.len()
    ));
    assert!(compared > 100, "perf named {compared} samples");
    assert!(
        agreed * 100 >= compared * 99,
        "only {agreed}/{compared} samples agree with perf (see above)"
    );
}
