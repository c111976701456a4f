//! The instruction-count guard: how many instructions (callgrind's `Ir`) a small symbol-table
//! batch and a small DWARF batch cost, cold and warm, checked against a committed baseline.
//! Instruction counts do not depend on the machine's load, so unlike a timed benchmark the
//! check can run in CI and fail on a slowdown of a few percent.
//!
//! ```text
//! icount measure CASE      runs one case once (valgrind counts the function `measured_case`)
//! icount check             runs every case under callgrind, prints the counts beside the
//!                          baseline, exits 1 if one is outside the tolerance
//! icount update REASON...  runs every case and rewrites the baseline's counts, appending
//!                          REASON to its history (commit it with the change it describes)
//! ```
//!
//! The cases (the file and addresses are committed, so every machine counts the same work):
//! - `symtab-cold`: a new `Symbolizer` (demangling on, no source lines, no debug files)
//!   opens `testdata/bin/rust-O2-g`, indexes its symbols and symbolizes 20,000 addresses;
//!   every name is read (length and last byte);
//! - `symtab-warm`: the same batch again on the same symbolizer;
//! - `dwarf-cold`, `dwarf-warm`: the same with source lines, 2,000 addresses, every frame's
//!   function, file and line read.
//!
//! Addresses are uniform in sized `FUNC` symbols (fixed-seed xorshift), read with the
//! `object` crate. Only `measured_case` is counted (`--toggle-collect`): starting the
//! process, picking addresses and dropping the results are not. The baseline file
//! (`.ci/icount-baseline`) states the tolerance; a count above the baseline by more fails
//! (a slowdown), and so does one below it by more (the baseline is stale: a later slowdown
//! would hide in the gap), with the command that updates it. Needs valgrind.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use object::{Object, ObjectSymbol, SymbolKind};
use stacksym::{Input, Source, Symbolizer, VirtAddr};

/// The file every case symbolizes: committed, with `.symtab` and DWARF.
const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/bin/rust-O2-g");
/// The committed baseline.
const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../icount-baseline");
/// Fixed seed of the address generator.
const SEED: u64 = 0x1c0_0047_5eed;

/// One measured case.
#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    dwarf: bool,
    warm: bool,
    addresses: usize,
}

const CASES: [Case; 4] = [
    Case {
        name: "symtab-cold",
        dwarf: false,
        warm: false,
        addresses: 20_000,
    },
    Case {
        name: "symtab-warm",
        dwarf: false,
        warm: true,
        addresses: 20_000,
    },
    Case {
        name: "dwarf-cold",
        dwarf: true,
        warm: false,
        addresses: 2_000,
    },
    Case {
        name: "dwarf-warm",
        dwarf: true,
        warm: true,
        addresses: 2_000,
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("measure") => match args
            .get(1)
            .and_then(|n| CASES.iter().find(|c| c.name == n.as_str()))
        {
            Some(case) => measure(*case),
            None => Err(format!(
                "measure needs a case: {}",
                CASES.map(|c| c.name).join(", ")
            )),
        },
        Some("check") => check(),
        Some("update") if args.len() > 1 => update(&args[1..].join(" ")),
        _ => Err("usage: icount measure CASE | check | update REASON...".into()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("icount: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// One case, in the process valgrind runs.

fn symbolizer(case: Case) -> Symbolizer {
    Symbolizer::builder()
        .demangle(true)
        .source_lines(case.dwarf)
        .debug_files(false)
        .threads(1)
        .build()
}

/// The counted part: a batch on `symbolizer` (new for a cold case), every answer read.
/// Its name is what `--toggle-collect` matches; it must not be inlined.
#[inline(never)]
fn measured_case(symbolizer: &Symbolizer, addrs: &[u64]) -> usize {
    let symbols = batch(symbolizer, addrs);
    let mut total = 0;
    for sym in symbols.iter().flatten() {
        total += consume(sym.name);
        for frame in sym.frames {
            if let Some(function) = &frame.function {
                total += consume(&function.demangled);
            }
            total += frame.file.as_deref().map_or(0, consume);
            total += frame.line.unwrap_or(0) as usize;
        }
    }
    // Dropping the batch is not counted: callers keep results as long as they like.
    std::mem::forget(black_box(symbols));
    total
}

/// The cold case builds its symbolizer inside the counted part.
#[inline(never)]
fn measured_case_cold(case: Case, addrs: &[u64]) -> (Symbolizer, usize) {
    let s = symbolizer(case);
    let total = measured_case(&s, addrs);
    (s, total)
}

fn consume(text: &str) -> usize {
    text.len() + usize::from(text.as_bytes().last().copied().unwrap_or(0))
}

fn measure(case: Case) -> Result<bool, String> {
    let addrs = function_addresses(case.addresses)?;
    let total = if case.warm {
        let s = symbolizer(case);
        // Not counted: only `measured_case`'s second call is (see `toggle_pattern`).
        black_box(warm_up(&s, &addrs));
        measured_case(&s, &addrs)
    } else {
        let (s, total) = measured_case_cold(case, &addrs);
        std::mem::forget(s);
        total
    };
    println!("{}: {total}", case.name);
    Ok(true)
}

/// One batch of [`FILE`]'s addresses: what both the counted case and the warm-up run.
fn batch(symbolizer: &Symbolizer, addrs: &[u64]) -> stacksym::Symbols {
    symbolizer
        .symbolize(
            &Source::Elf {
                path: Path::new(FILE),
            },
            Input::VirtAddrs(VirtAddr::from_raw_slice(addrs)),
        )
        .expect("stacksym symbolizes the committed file")
}

/// The uncounted first batch of a warm case.
#[inline(never)]
fn warm_up(symbolizer: &Symbolizer, addrs: &[u64]) -> usize {
    let symbols = batch(symbolizer, addrs);
    symbols.iter().flatten().map(|s| consume(s.name)).sum()
}

/// The function whose calls callgrind counts for `case`: the cold case's wrapper (which
/// builds the symbolizer), or the warm case's batch (called only once in a warm run: the
/// warm-up goes through `warm_up`).
fn toggle_pattern(case: Case) -> &'static str {
    if case.warm {
        "*icount::measured_case"
    } else {
        "*icount::measured_case_cold"
    }
}

/// `count` addresses inside sized FUNC symbols of [`FILE`]: a function picked uniformly with
/// a fixed-seed xorshift, then an offset inside it.
fn function_addresses(count: usize) -> Result<Vec<u64>, String> {
    let bytes = std::fs::read(FILE).map_err(|e| format!("{FILE}: {e}"))?;
    let file = object::File::parse(&*bytes).map_err(|e| format!("{FILE}: {e}"))?;
    let mut funcs: Vec<(u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.is_definition())
        .map(|s| (s.address(), s.size()))
        .collect();
    funcs.sort_unstable();
    funcs.dedup();
    if funcs.is_empty() {
        return Err(format!("{FILE} has no sized functions"));
    }
    let mut state = SEED;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    Ok((0..count)
        .map(|_| {
            let (start, size) = funcs[(next() % funcs.len() as u64) as usize];
            start + next() % size
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// Running the cases under callgrind and the baseline.

/// Runs `case` in a child process under callgrind and returns its instruction count.
fn count(case: Case) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let out = std::env::temp_dir().join(format!(
        "stacksym-icount-{}-{}.callgrind",
        std::process::id(),
        case.name
    ));
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg("--collect-atstart=no")
        .arg(format!("--toggle-collect={}", toggle_pattern(case)))
        .arg(&exe)
        .args(["measure", case.name])
        .output()
        .map_err(|e| format!("cannot run valgrind (apt-get install valgrind): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "valgrind on case {} failed ({}): {}",
            case.name,
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()));
    // The output is read once; a file left behind would only fill the temporary directory.
    let _ = std::fs::remove_file(&out);
    let text = text?;
    // "summary: N" (or "totals: N") is the sum of the counted events; only Ir is collected.
    let total = text
        .lines()
        .find_map(|line| {
            line.strip_prefix("summary:")
                .or_else(|| line.strip_prefix("totals:"))
        })
        .and_then(|n| n.split_whitespace().next()?.parse::<u64>().ok())
        .ok_or_else(|| format!("no summary line in {}", out.display()))?;
    if total == 0 {
        return Err(format!(
            "callgrind counted nothing in {}: was it inlined or renamed?",
            toggle_pattern(case)
        ));
    }
    Ok(total)
}

/// The baseline file: `tolerance PERCENT`, one `CASE COUNT` line per case, comments (`#`).
struct Baseline {
    tolerance_percent: f64,
    counts: Vec<(String, u64)>,
}

fn read_baseline(path: &Path) -> Result<Baseline, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tolerance = None;
    let mut counts = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("tolerance"), Some(p)) => {
                tolerance = p.trim_end_matches('%').parse::<f64>().ok();
            }
            (Some(name), Some(n)) => {
                let n = n
                    .parse::<u64>()
                    .map_err(|e| format!("{}: {line:?}: {e}", path.display()))?;
                counts.push((name.to_string(), n));
            }
            _ => return Err(format!("{}: cannot read {line:?}", path.display())),
        }
    }
    Ok(Baseline {
        tolerance_percent: tolerance
            .ok_or_else(|| format!("{}: no tolerance line", path.display()))?,
        counts,
    })
}

fn count_all() -> Result<Vec<(Case, u64)>, String> {
    CASES.iter().map(|&c| count(c).map(|n| (c, n))).collect()
}

fn check() -> Result<bool, String> {
    let path = PathBuf::from(BASELINE);
    let baseline = read_baseline(&path)?;
    let tolerance = baseline.tolerance_percent;
    println!(
        "instruction counts (callgrind Ir of the icount tool's (.ci/icount) cases) against {} (tolerance {tolerance}%):",
        path.display()
    );
    println!(
        "{:<12} {:>14} {:>14} {:>9}  verdict",
        "case", "count", "baseline", "change"
    );
    let mut ok = true;
    for (case, n) in count_all()? {
        let Some(&(_, base)) = baseline.counts.iter().find(|(name, _)| name == case.name) else {
            println!(
                "{:<12} {n:>14} {:>14} {:>9}  no baseline",
                case.name, "-", "-"
            );
            ok = false;
            continue;
        };
        let change = (n as f64 - base as f64) / base as f64 * 100.0;
        let verdict = if change > tolerance {
            ok = false;
            "SLOWER: more instructions than the baseline allows"
        } else if change < -tolerance {
            ok = false;
            "faster than the baseline: update it (a stale baseline hides a later slowdown)"
        } else {
            "ok"
        };
        println!(
            "{:<12} {n:>14} {base:>14} {change:>+8.2}%  {verdict}",
            case.name
        );
    }
    if !ok {
        println!(
            "a deliberate change updates the baseline in its own commit, with its reason:\n  cargo run --release --manifest-path .ci/icount/Cargo.toml -- update 'why the counts changed'"
        );
    }
    Ok(ok)
}

fn update(reason: &str) -> Result<bool, String> {
    let path = PathBuf::from(BASELINE);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let counts = count_all()?;
    let is_count_line = |line: &str| {
        let first = line.split_whitespace().next().unwrap_or("");
        CASES.iter().any(|c| c.name == first)
    };
    let mut out: Vec<String> = text
        .lines()
        .filter(|line| !is_count_line(line))
        .map(str::to_string)
        .collect();
    // The history comment goes before the counts, which close the file.
    let summary: Vec<String> = counts
        .iter()
        .map(|(c, n)| format!("{} {n}", c.name))
        .collect();
    out.push(format!("# {}: {}", today(), reason.replace('\n', " ")));
    out.push(format!("#   -> {}", summary.join(", ")));
    out.extend(summary);
    std::fs::write(&path, out.join("\n") + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    println!("{} updated:", path.display());
    for (c, n) in counts {
        println!("  {} {n}", c.name);
    }
    Ok(true)
}

/// Today's date (UTC) as `date -u +%F` prints it, for the history line.
fn today() -> String {
    Command::new("date")
        .args(["-u", "+%F %H:%M"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "(date unknown)".into())
}
