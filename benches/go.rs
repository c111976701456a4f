//! A stripped Go binary through its own table (`.gopclntab`): stacksym against Go's own
//! `go tool addr2line` (the toolchain's `addr2line` tool, started directly from `go env
//! GOTOOLDIR`, whole process: it reads the table and answers addresses from stdin).
//!
//! Workload: Debian's restic (Go 1.19, stripped, about 20,000 functions), 20,000 addresses:
//! a function of the table chosen uniformly with a fixed-seed xorshift, then an offset in it.
//! Peers, each answering function, file and line for every address:
//! - stacksym cold: a new `Symbolizer`, the file opened, its Go table found, all addresses
//!   symbolized (names and innermost frames read);
//! - stacksym warm: the same again with a symbolizer that has the file;
//! - go tool addr2line: one process, addresses on stdin, its output read to the end.
//!
//! Before timing every answer is compared: both give the same function and `file:line` for
//! every address (Go 1.19's addr2line counts functions from `.text` instead of the table's
//! textStart, 0x100 apart in restic: it is asked at `addr - shift`, as tests/gopclntab.rs
//! explains). Then criterion times each peer, and 7 interleaved rounds (3 in a quick run)
//! give the medians and the ratio go tool addr2line / stacksym cold, and / warm.
//!
//! Second part, the same binary with and without its table's companions: cmd/go of the
//! installed toolchain, built by the bench twice from GOROOT's own sources (offline) into
//! `CARGO_TARGET_TMPDIR` (kept for later runs): stripped (`-ldflags='-s -w'`, so only the Go
//! table) and as the linker writes it (`.symtab` and compressed DWARF). The link strips
//! after layout, so both have the same code at the same addresses (checked). On the same
//! addresses, stacksym through the Go table of the stripped file against stacksym through
//! `.symtab` and DWARF of the twin, cold and warm, with their agreement printed (names;
//! `file:line` of the innermost frame).
//!
//! `cargo bench --bench go`; `-- --test` runs each part once. Without restic or go the bench
//! prints why and does nothing (`STACKSYM_BENCH_GO_BINARY` picks another stripped Go
//! binary of Go 1.18 or 1.19, which Go 1.19's tool reads).

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stacksym::elf::ElfFile;
use stacksym::gopclntab::GoTable;
use stacksym::{Input, Source, Symbolizer, VirtAddr};

mod common;
#[path = "../tests/support/go_spelling.rs"]
mod go_spelling;
use common::{consume, median, mode, quick_note, XorShift};

const ADDRESS_COUNT: usize = 20_000;
const SEED: u64 = 0x90ba_5eed_0123_4567;

/// `count` addresses of `table`'s functions: one chosen uniformly, then an offset in it.
fn addresses(table: &GoTable, count: usize) -> Vec<u64> {
    let functions: Vec<(u64, u64)> = table
        .functions()
        .filter_map(Result::ok)
        .filter(|f| f.end > f.entry)
        .map(|f| (f.entry.0, f.end.0))
        .collect();
    let mut rng = XorShift(SEED);
    (0..count)
        .map(|_| {
            let (entry, end) = functions[(rng.next() % functions.len() as u64) as usize];
            entry + rng.next() % (end - entry)
        })
        .collect()
}

/// (function, "file:line") per address, from stacksym.
fn stacksym(symbolizer: &Symbolizer, path: &Path, addrs: &[VirtAddr]) -> Vec<(String, String)> {
    let symbols = symbolizer
        .symbolize(&Source::Elf { path }, Input::VirtAddrs(addrs))
        .expect("symbolize");
    (0..addrs.len())
        .map(|i| match symbols.get(i) {
            Some(sym) => {
                let frame = sym.frames.first();
                let file = frame.and_then(|f| f.file.as_deref()).unwrap_or("?");
                let line = frame.and_then(|f| f.line).unwrap_or(0);
                (sym.name.to_string(), format!("{file}:{line}"))
            }
            None => ("?".to_string(), "?:0".to_string()),
        })
        .collect()
}

/// The timed stacksym pass: the same lookups, the results read (names, files, lines).
fn stacksym_pass(symbolizer: &Symbolizer, path: &Path, addrs: &[VirtAddr]) -> usize {
    let symbols = symbolizer
        .symbolize(&Source::Elf { path }, Input::VirtAddrs(addrs))
        .expect("symbolize");
    let mut sum = 0;
    for i in 0..addrs.len() {
        if let Some(sym) = symbols.get(i) {
            sum += consume(sym.name);
            if let Some(frame) = sym.frames.first() {
                sum += frame.file.as_deref().map_or(0, consume) + frame.line.unwrap_or(0) as usize;
            }
        }
    }
    sum
}

/// go tool addr2line's answers (two lines per address), asked at `addr - shift`.
fn go_addr2line(tool: &Path, path: &Path, addrs: &[u64], shift: u64) -> String {
    let mut child = Command::new(tool)
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("go tool addr2line runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input: String = addrs
        .iter()
        .map(|a| format!("{:#x}\n", a.wrapping_sub(shift)))
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("go tool addr2line ends");
    writer.join().expect("writer").expect("writing addresses");
    assert!(output.status.success(), "go tool addr2line failed");
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The table's textStart minus `.text`'s address (see the module docs).
fn text_start_shift(elf: &ElfFile) -> u64 {
    let Ok(Some(text)) = elf.section_address(".text") else {
        return 0;
    };
    let Ok(Some(table)) = elf.section_data(".gopclntab") else {
        return 0;
    };
    let magic = table
        .get(..4)
        .map(|m| u32::from_le_bytes(m.try_into().unwrap()));
    if !matches!(magic, Some(0xfffffff0 | 0xfffffff1)) || !elf.header().is_64 {
        return 0;
    }
    let text_start = table
        .get(24..32)
        .map_or(0, |w| u64::from_le_bytes(w.try_into().unwrap()));
    text_start.saturating_sub(text.0)
}

fn binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("STACKSYM_BENCH_GO_BINARY") {
        return Ok(PathBuf::from(path));
    }
    let path = PathBuf::from("/usr/bin/restic");
    if path.is_file() {
        Ok(path)
    } else {
        Err("/usr/bin/restic not found (apt-get install restic)".into())
    }
}

fn tool() -> Result<PathBuf, String> {
    let out = Command::new("go")
        .args(["env", "GOTOOLDIR"])
        .output()
        .map_err(|e| format!("go: {e} (apt-get install golang-go)"))?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let tool = Path::new(&dir).join("addr2line");
    if tool.is_file() {
        Ok(tool)
    } else {
        Err(format!("{} not found", tool.display()))
    }
}

fn main() {
    let (listing, quick) = mode();
    if listing {
        return;
    }
    let (path, tool) = match (binary(), tool()) {
        (Ok(path), Ok(tool)) => (path, tool),
        (Err(why), _) | (_, Err(why)) => {
            if std::env::var_os("CI").is_some() {
                panic!("go bench: {why}; CI is expected to provide it");
            }
            eprintln!("go bench: SKIPPED: {why}");
            return;
        }
    };
    let elf = Arc::new(ElfFile::open(&path).expect("open"));
    let table = GoTable::find(&elf).expect("a table").expect("a Go binary");
    let addrs = addresses(&table, ADDRESS_COUNT);
    let virt: Vec<VirtAddr> = addrs.iter().copied().map(VirtAddr).collect();
    let shift = text_start_shift(&elf);

    // Both peers give the same answers.
    let symbolizer = Symbolizer::builder().build();
    let ours = stacksym(&symbolizer, &path, &virt);
    let theirs = go_addr2line(&tool, &path, &addrs, shift);
    let lines: Vec<&str> = theirs.lines().collect();
    assert_eq!(lines.len(), 2 * addrs.len(), "go tool addr2line's answers");
    let differ = ours
        .iter()
        .zip(lines.chunks(2))
        .filter(|((name, file_line), pair)| {
            let theirs = if pair[1].starts_with(':') {
                "?:0"
            } else {
                pair[1]
            };
            name != pair[0] || file_line != theirs
        })
        .count();
    assert_eq!(differ, 0, "{differ} of {} answers differ", addrs.len());
    eprintln!(
        "go bench: {} ({} functions): {} addresses, every answer the same as go tool \
         addr2line's",
        path.display(),
        table.function_count(),
        addrs.len()
    );

    let mut criterion = common::criterion(Duration::from_secs(5));
    let mut group = criterion.benchmark_group("go");
    group.bench_function("stacksym cold", |b| {
        b.iter(|| {
            let symbolizer = Symbolizer::builder().build();
            black_box(stacksym_pass(&symbolizer, &path, &virt))
        })
    });
    group.bench_function("stacksym warm", |b| {
        b.iter(|| black_box(stacksym_pass(&symbolizer, &path, &virt)))
    });
    group.bench_function("go tool addr2line", |b| {
        b.iter(|| black_box(go_addr2line(&tool, &path, &addrs, shift).len()))
    });
    group.finish();

    // Interleaved rounds: each peer in turn, so that load from elsewhere falls on all.
    let rounds = if quick { 3 } else { 7 };
    let (mut cold, mut warm, mut go) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        black_box(stacksym_pass(&Symbolizer::builder().build(), &path, &virt));
        cold.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        black_box(stacksym_pass(&symbolizer, &path, &virt));
        warm.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        black_box(go_addr2line(&tool, &path, &addrs, shift).len());
        go.push(start.elapsed().as_secs_f64());
    }
    let (cold, warm, go) = (
        median(cold).unwrap_or(0.0),
        median(warm).unwrap_or(0.0),
        median(go).unwrap_or(0.0),
    );
    let per = |t: f64| t * 1e9 / addrs.len() as f64;
    eprintln!(
        "go bench summary ({} addresses of {}, medians of {rounds} interleaved rounds{}):\n  \
         stacksym cold (open + table + all) {:.1} ms ({:.0} ns/address)\n  \
         stacksym warm {:.1} ms ({:.0} ns/address)\n  \
         go tool addr2line (whole process) {:.1} ms ({:.0} ns/address)\n  \
         go tool addr2line / stacksym cold: {:.2}x; / stacksym warm: {:.2}x",
        addrs.len(),
        path.display(),
        quick_note(quick),
        cold * 1e3,
        per(cold),
        warm * 1e3,
        per(warm),
        go * 1e3,
        per(go),
        go / cold,
        go / warm
    );
    twin_part(quick);
}

/// Builds cmd/go of the installed toolchain into `dir`, as the linker writes it and
/// stripped (`-s -w`); kept for later runs (same Go version: same files).
fn build_twins(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    let version = Command::new("go")
        .args(["env", "GOVERSION"])
        .output()
        .map_err(|e| format!("go: {e}"))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let full = dir.join(format!("cmd-go-{version}"));
    let stripped = dir.join(format!("cmd-go-{version}-stripped"));
    for (path, flags) in [(&full, ""), (&stripped, "-s -w")] {
        if path.is_file() {
            continue;
        }
        let out = Command::new("go")
            .args(["build", "-o"])
            .arg(path)
            .arg(format!("-ldflags={flags}"))
            .arg("cmd/go")
            .current_dir(dir)
            .output()
            .map_err(|e| format!("go build: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "go build cmd/go: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    Ok((full, stripped))
}

/// The second part (see the module docs): the Go table of a stripped cmd/go against
/// `.symtab` and DWARF of its unstripped twin.
fn twin_part(quick: bool) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-bench");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("go bench: {}: {e}", dir.display());
    }
    let (full, stripped) = match build_twins(&dir) {
        Ok(paths) => paths,
        Err(why) => panic!("go bench: {why}"),
    };
    let stripped_elf = Arc::new(ElfFile::open(&stripped).expect("open"));
    let table = GoTable::find(&stripped_elf)
        .expect("a table")
        .expect("a Go binary");
    let full_elf = Arc::new(ElfFile::open(&full).expect("open"));
    let twin_table = GoTable::find(&full_elf)
        .expect("a table")
        .expect("a Go binary");
    let addrs = addresses(&table, ADDRESS_COUNT);
    let virt: Vec<VirtAddr> = addrs.iter().copied().map(VirtAddr).collect();
    // Same code at the same addresses: every sampled address is in the same function of
    // both tables.
    for &addr in &virt {
        let entry = |t: &GoTable| t.find_function(addr).ok().flatten().map(|f| f.entry);
        assert_eq!(entry(&table), entry(&twin_table), "{addr:?}: twins differ");
    }
    let symbolizer = Symbolizer::builder().build();
    let by_table = stacksym(&symbolizer, &stripped, &virt);
    let by_dwarf = stacksym(&symbolizer, &full, &virt);
    // Compared where both answer: in the alignment padding after a function's last
    // instruction the Go table still names the function (as go tool addr2line does), where
    // `.symtab`'s sizes end before it and DWARF has no line. Go's DWARF names generated
    // code's file `./<autogenerated>` (the compilation directory "." joined), the table
    // `<autogenerated>`: the same file.
    let both: Vec<_> = by_table
        .iter()
        .zip(&by_dwarf)
        .filter(|(_, dwarf)| dwarf.0 != "?")
        .collect();
    // Names in Go's spelling (see `go_spelling`); the table writes a closure's or a
    // generated type's `·` where `.symtab` has `.`.
    let same_spelling = |table: &str, symtab: &str| {
        table.replace('·', ".") == go_spelling::go_spelling(symtab).replace('·', ".")
    };
    let same_name = both
        .iter()
        .filter(|(a, b)| same_spelling(&a.0, &b.0))
        .count();
    let with_lines: Vec<_> = both.iter().filter(|(_, b)| b.1 != "?:0").collect();
    let same_line = with_lines
        .iter()
        .filter(|(a, b)| a.1 == b.1.strip_prefix("./").unwrap_or(&b.1))
        .count();
    if std::env::var_os("GO_BENCH_DIFFS").is_some() {
        for (a, b) in &both {
            if a.1 != b.1.strip_prefix("./").unwrap_or(&b.1) || !same_spelling(&a.0, &b.0) {
                eprintln!("differ: table {a:?} dwarf {b:?}");
            }
        }
    }
    eprintln!(
        "go bench, twins: {} ({} functions) and {}: {} addresses, {} with a .symtab \
         symbol: the Go table names {same_name} of them the same (in Go's spelling); {} with a DWARF line: the \
         Go table gives {same_line} the same innermost file:line",
        stripped.display(),
        table.function_count(),
        full.display(),
        addrs.len(),
        both.len(),
        with_lines.len(),
    );

    let mut criterion = common::criterion(Duration::from_secs(5));
    let mut group = criterion.benchmark_group("go twins");
    for (name, path) in [("Go table", &stripped), ("symtab + DWARF", &full)] {
        group.bench_function(format!("{name} cold"), |b| {
            b.iter(|| {
                let symbolizer = Symbolizer::builder().build();
                black_box(stacksym_pass(&symbolizer, path, &virt))
            })
        });
        group.bench_function(format!("{name} warm"), |b| {
            b.iter(|| black_box(stacksym_pass(&symbolizer, path, &virt)))
        });
    }
    group.finish();

    let rounds = if quick { 3 } else { 7 };
    let mut times: [Vec<f64>; 4] = Default::default();
    for _ in 0..rounds {
        for (i, path) in [&stripped, &full].into_iter().enumerate() {
            let start = Instant::now();
            black_box(stacksym_pass(&Symbolizer::builder().build(), path, &virt));
            times[2 * i].push(start.elapsed().as_secs_f64());
            let start = Instant::now();
            black_box(stacksym_pass(&symbolizer, path, &virt));
            times[2 * i + 1].push(start.elapsed().as_secs_f64());
        }
    }
    let [table_cold, table_warm, dwarf_cold, dwarf_warm] = times.map(|t| median(t).unwrap_or(0.0));
    let per = |t: f64| t * 1e9 / addrs.len() as f64;
    eprintln!(
        "go bench twins summary ({} addresses, medians of {rounds} interleaved rounds{}):\n  \
         Go table (stripped): cold {:.1} ms, warm {:.0} ns/address\n  \
         .symtab + DWARF (twin): cold {:.1} ms, warm {:.0} ns/address\n  \
         DWARF / Go table: cold {:.2}x, warm {:.2}x",
        addrs.len(),
        quick_note(quick),
        table_cold * 1e3,
        per(table_warm),
        dwarf_cold * 1e3,
        per(dwarf_warm),
        dwarf_cold / table_cold,
        dwarf_warm / table_warm,
    );
}
