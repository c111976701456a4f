//! Whole processes: the `symbolize` example against llvm-symbolizer, binutils' `addr2line`
//! and the addr2line crate's own CLI, each started on the same input file of addresses.
//!
//! Workloads:
//! - (a) libc: 20,000 random addresses inside libc's functions (sized FUNC symbols of its
//!   debug file, fixed seed, as `benches/dwarf.rs` picks them), with every inline chain.
//!   The example, llvm-symbolizer and binutils are given `libc.so.6` and find its debug
//!   file by build-id in `/usr/lib/debug`; the addr2line crate's CLI does not follow
//!   build-ids and is given the debug file itself.
//! - (b) rustc: 100,000 random addresses inside the functions of the toolchain's
//!   `librustc_driver-*.so` (`rustc --print sysroot`), which has symbol tables and no DWARF:
//!   symbols only.
//!
//! Commands: `symbolize --output-style=GNU -a --obj FILE` (by default it reads DWARF ahead
//! on every CPU it may use; a row of its own runs it with `--threads 1`), `llvm-symbolizer
//! --output-style=GNU -a --obj FILE`, `addr2line -a -f -i -C -e FILE` (binutils and the
//! crate's), addresses on stdin, output to a file. Before timing, every tool runs once
//! without demangling and its answers are compared with the example's, address by address
//! (the `-a` lines), the way `tests/cli.rs` normalizes them: the same number of frames;
//! per frame the same file name (basename; the tools join directories differently) and
//! line (`?` read as 0, ` (discriminator N)` dropped: binutils repeats it on every frame,
//! the crate prints none), and the same function up to the rules that separate these tools
//! (a name is compared without `@VERSION`; two names of one address, as the symbol tables
//! give them, are the same function; `f.cold` is `f`; `??` against a name only a debug
//! file's `.symtab` has). Without demangling, so that demanglers' spellings do not count
//! (`tests/cli.rs` compares them). A tool that agrees on fewer than 99 % of the addresses is
//! not timed.
//!
//! Timing: rounds in which every tool runs once, in turn (interleaved, so that load from
//! elsewhere falls on all); the medians, the median of each round's ratio against the
//! example, and each process's peak resident set (`ru_maxrss` from `wait4`). Binutils'
//! addr2line needs about a minute for (b) (it searches its symbols linearly): it runs (b)
//! once, and not at all in a quick run (`-- --test`, or `cargo test --benches`).
//!
//! Which addr2line crate CLI: the path in `STACKSYM_ADDR2LINE_CRATE_CLI`, else
//! `target/peers/bin/addr2line`, an optimized build installed with
//! `cargo install --root target/peers addr2line@<the version in Cargo.lock> --features bin`
//! (its binary is also named `addr2line`, so it is kept off the PATH, where it would hide
//! binutils'). The example is built by the bench in its own profile
//! (`common::build_tool`: release under `cargo bench`, debug under `cargo test --benches`,
//! one round whose figures mean nothing). A missing tool is a failure under `CI=true` and a
//! SKIPPED line otherwise.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use object::{Object, ObjectSymbol};

mod common;
use common::{function_addresses, libc_debug_file, median, mode, LIBC};

const LIBC_ADDRESSES: usize = 20_000;
const RUSTC_ADDRESSES: usize = 100_000;
/// The address generator's seed (libc's: the dwarf bench's first batch).
const SEED: u64 = 0x0d1a_ce5e_ed5e_ed01;
/// Below this share of agreeing addresses a tool is not timed.
const REQUIRED_AGREEMENT: f64 = 0.99;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tool {
    Example,
    LlvmSymbolizer,
    Binutils,
    Addr2lineCrate,
    /// The example with `--threads 1`: all its work on one thread, as the other tools do
    /// theirs (by default it reads DWARF ahead on every CPU it may use). Last, so the
    /// others keep their places.
    ExampleOneThread,
}

/// How many tools there are.
const TOOLS: usize = 5;

impl Tool {
    const ALL: [Tool; TOOLS] = [
        Tool::Example,
        Tool::LlvmSymbolizer,
        Tool::Binutils,
        Tool::Addr2lineCrate,
        Tool::ExampleOneThread,
    ];
    /// The other CLIs, which the targets compare the example with.
    const OTHERS: [Tool; 3] = [Tool::LlvmSymbolizer, Tool::Binutils, Tool::Addr2lineCrate];

    fn name(self) -> &'static str {
        match self {
            Tool::Example => "symbolize example",
            Tool::LlvmSymbolizer => "llvm-symbolizer",
            Tool::Binutils => "binutils addr2line",
            Tool::Addr2lineCrate => "addr2line crate CLI",
            Tool::ExampleOneThread => "symbolize example --threads 1",
        }
    }
}

/// One workload: the file the tools open (the crate's CLI may need another), the input.
struct Workload {
    title: String,
    obj: PathBuf,
    /// What the addr2line crate's CLI is given (it follows no build-id).
    crate_obj: PathBuf,
    input: PathBuf,
    addresses: usize,
    /// Files whose symbol tables name the functions (for the alias rule).
    symbol_files: Vec<PathBuf>,
    /// binutils takes about a minute here: once, and not in a quick run.
    binutils_once: bool,
}

/// One finished process.
struct Run {
    seconds: f64,
    peak_kib: u64,
}

/// Where each tool is (`None`: missing, said why).
struct Tools {
    paths: [Option<PathBuf>; TOOLS],
}

impl Tools {
    fn path(&self, tool: Tool) -> Option<&Path> {
        self.paths[tool as usize].as_deref()
    }

    fn command(&self, tool: Tool, workload: &Workload, demangle: bool) -> Option<Vec<OsString>> {
        let exe = self.path(tool)?.as_os_str().to_owned();
        let mut args: Vec<OsString> = vec![exe];
        let obj = workload.obj.as_os_str().to_owned();
        match tool {
            Tool::Example | Tool::ExampleOneThread | Tool::LlvmSymbolizer => {
                if tool != Tool::LlvmSymbolizer {
                    args.push("symbolize".into());
                }
                if tool == Tool::ExampleOneThread {
                    args.extend(["--threads".into(), "1".into()]);
                }
                args.extend([
                    "--output-style=GNU".into(),
                    "-a".into(),
                    "--obj".into(),
                    obj,
                ]);
                if !demangle {
                    args.push("--no-demangle".into());
                }
            }
            Tool::Binutils | Tool::Addr2lineCrate => {
                args.extend(["-a".into(), "-f".into(), "-i".into()]);
                if demangle {
                    args.push("-C".into());
                }
                args.push("-e".into());
                args.push(if tool == Tool::Binutils {
                    obj
                } else {
                    workload.crate_obj.as_os_str().to_owned()
                });
            }
        }
        Some(args)
    }
}

/// Argument that makes this bench a small child that runs one command and measures it.
const MEASURE_CHILD: &str = "--run-and-measure";

/// Runs `command` with `input` on stdin and its stdout in `output`; wall time and peak RSS.
/// Through a new process of this bench (`MEASURE_CHILD`): a process's peak RSS counts the
/// memory of the process that started it at the moment of the `exec` (Linux keeps the
/// larger across `exec`), and this one holds the symbol tables of the check.
fn run(command: &[OsString], input: &Path, output: &Path) -> Run {
    let exe = std::env::current_exe().expect("the bench's path");
    let out = Command::new(exe)
        .arg(MEASURE_CHILD)
        .arg(input)
        .arg(output)
        .args(command)
        .output()
        .expect("the bench runs itself");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace();
    match (
        fields.next().and_then(|f| f.parse().ok()),
        fields.next().and_then(|f| f.parse().ok()),
    ) {
        (Some(seconds), Some(peak_kib)) => Run { seconds, peak_kib },
        _ => panic!(
            "{:?}: {}",
            command[0],
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// Child mode: `input output command...`; prints the wall time and peak RSS of `command`.
fn measure_child(args: &[OsString]) {
    let [input, output, command @ ..] = args else {
        panic!("{MEASURE_CHILD} INPUT OUTPUT COMMAND...");
    };
    let r = run_here(command, Path::new(input), Path::new(output));
    println!("{} {}", r.seconds, r.peak_kib);
}

/// [`run`] in this process. The child is reaped by `wait4`, which gives its own peak RSS
/// (`Child::wait` gives none, and `getrusage(RUSAGE_CHILDREN)` the largest of all children).
#[allow(clippy::zombie_processes)]
fn run_here(command: &[OsString], input: &Path, output: &Path) -> Run {
    let stdin = File::open(input).expect("the input file");
    let stdout = File::create(output).expect("an output file");
    let start = Instant::now();
    let child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{:?}: {e}", command[0]));
    let pid = i32::try_from(child.id()).expect("a pid fits i32");
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, not waited for yet; both pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid, "wait4 of {:?}", command[0]);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{:?} failed (status {status:#x})",
        command[0]
    );
    Run {
        seconds,
        peak_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    }
}

/// One frame: the function (`None`: `??`) and `basename:line`.
type Frame = (Option<String>, String);

/// A tool's GNU-style output with `-a`: per address, its frames.
fn parse_answers(text: &str) -> Vec<(u64, Vec<Frame>)> {
    let mut answers: Vec<(u64, Vec<Frame>)> = Vec::new();
    let mut pending_name: Option<&str> = None;
    for line in text.lines() {
        let address = line
            .strip_prefix("0x")
            .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        if let (Some(address), None) = (address, pending_name) {
            answers.push((address, Vec::new()));
            continue;
        }
        match pending_name.take() {
            None => pending_name = Some(line),
            Some(name) => {
                if let Some((_, frames)) = answers.last_mut() {
                    frames.push((normal_name(name), normal_location(line)));
                }
            }
        }
    }
    answers
}

fn normal_name(name: &str) -> Option<String> {
    let name = name.split('@').next().unwrap_or(name);
    (name != "??" && !name.is_empty()).then(|| name.to_string())
}

/// `basename:line`, without ` (discriminator N)`, `?` read as 0.
fn normal_location(location: &str) -> String {
    let location = location
        .split_once(" (discriminator ")
        .map_or(location, |(head, _)| head);
    let (file, line) = location.rsplit_once(':').unwrap_or((location, "0"));
    let line = if line == "?" { "0" } else { line };
    let base = file.rsplit('/').next().unwrap_or(file);
    format!("{base}:{line}")
}

/// Every symbol's name with the addresses symbols of that name have.
fn symbol_addresses(files: &[PathBuf]) -> HashMap<String, Vec<u64>> {
    let mut names: HashMap<String, Vec<u64>> = HashMap::new();
    for path in files {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        let Ok(file) = object::File::parse(&*bytes) else {
            continue;
        };
        for symbol in file.symbols().chain(file.dynamic_symbols()) {
            if let Ok(name) = symbol.name() {
                let name = name.split('@').next().unwrap_or(name);
                names
                    .entry(name.to_string())
                    .or_default()
                    .push(symbol.address());
            }
        }
    }
    names
}

/// Whether two function names are the same function by the rules in the module docs.
fn same_function(
    ours: &Option<String>,
    theirs: &Option<String>,
    symbols: &HashMap<String, Vec<u64>>,
) -> bool {
    match (ours, theirs) {
        (a, b) if a == b => true,
        // A name only a debug file's .symtab gives (llvm-symbolizer reads names elsewhere).
        (Some(_), None) => true,
        (Some(a), Some(b)) => {
            if a.split_once('.').is_some_and(|(base, _)| base == b) {
                return true;
            }
            match (symbols.get(a), symbols.get(b)) {
                (Some(x), Some(y)) => x.iter().any(|address| y.contains(address)),
                _ => false,
            }
        }
        (None, _) => false,
    }
}

/// How two locations compare.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Same,
    /// The same line in another file: binutils names the unit's own file for code its
    /// line table places in an included one (`getaliasent.c:89` for `getXXent.c:89`).
    OtherFile,
    Differs,
}

fn compare_places(ours: &str, theirs: &str) -> Place {
    // llvm-symbolizer names a file from an STT_FILE symbol where no line is known
    // (`bolt-pseudo.o:0`); the others say `??:0`.
    if ours == theirs || (ours == "??:0" && theirs.ends_with(":0")) {
        return Place::Same;
    }
    match (ours.rsplit_once(':'), theirs.rsplit_once(':')) {
        (Some((_, a)), Some((_, b))) if a == b && a != "0" => Place::OtherFile,
        _ => Place::Differs,
    }
}

/// How `theirs`'s answers compare with `ours`: (agreeing, agreeing but for the file name
/// of a line, the first differences).
fn agreement(
    ours: &[(u64, Vec<Frame>)],
    theirs: &[(u64, Vec<Frame>)],
    symbols: &HashMap<String, Vec<u64>>,
) -> (usize, usize, Vec<String>) {
    let (mut agreed, mut other_file) = (0, 0);
    let mut shown = Vec::new();
    for (a, b) in ours.iter().zip(theirs) {
        let worst = if a.0 != b.0 || a.1.len() != b.1.len() {
            Place::Differs
        } else {
            a.1.iter()
                .zip(&b.1)
                .map(|(x, y)| {
                    if same_function(&x.0, &y.0, symbols) {
                        compare_places(&x.1, &y.1)
                    } else {
                        Place::Differs
                    }
                })
                .max()
                .unwrap_or(Place::Same)
        };
        match worst {
            Place::Same => agreed += 1,
            Place::OtherFile => other_file += 1,
            Place::Differs if shown.len() < 3 => {
                shown.push(format!("{:#x}: ours {:?}, theirs {:?}", a.0, a.1, b.1));
            }
            Place::Differs => {}
        }
    }
    (agreed, other_file, shown)
}

/// Finds the tools; a missing one is reported (and fails the bench under `CI=true`).
fn find_tools(example: PathBuf) -> Tools {
    let ci = std::env::var_os("CI").is_some();
    // target/<profile>/stacksym -> target
    let target = example
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let crate_cli = std::env::var_os("STACKSYM_ADDR2LINE_CRATE_CLI")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("peers/bin/addr2line"));
    let found = |path: PathBuf, how: &str| {
        if path.is_file() {
            Some(path)
        } else {
            let message = format!("cli bench: SKIPPED {}: not found ({how})", path.display());
            assert!(!ci, "{message}; CI must provide it");
            println!("{message}");
            None
        }
    };
    Tools {
        paths: [
            Some(example.clone()),
            which("llvm-symbolizer")
                .or_else(|| found("llvm-symbolizer".into(), "apt-get install llvm")),
            found("/usr/bin/addr2line".into(), "apt-get install binutils"),
            found(
                crate_cli,
                "cargo install --root target/peers addr2line --features bin",
            ),
            Some(example),
        ],
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn write_input(dir: &Path, name: &str, addresses: &[u64]) -> PathBuf {
    let path = dir.join(name);
    let mut file = std::io::BufWriter::new(File::create(&path).expect("an input file"));
    for address in addresses {
        writeln!(file, "{address:#x}").expect("write the input");
    }
    file.flush().expect("write the input");
    path
}

fn rustc_driver() -> Result<PathBuf, String> {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("rustc: {e}"))?;
    let lib = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("lib");
    std::fs::read_dir(&lib)
        .map_err(|e| format!("{}: {e}", lib.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("librustc_driver-") && n.ends_with(".so"))
        })
        .ok_or_else(|| format!("no librustc_driver-*.so in {}", lib.display()))
}

fn main() {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == MEASURE_CHILD) {
        measure_child(&args[2..]);
        return;
    }
    let (listing, quick) = mode();
    if listing {
        return;
    }
    let ci = std::env::var_os("CI").is_some();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut workloads = Vec::new();
    match libc_debug_file() {
        Ok(debug) => {
            let addresses =
                function_addresses(&debug, LIBC_ADDRESSES, SEED).expect("libc's functions");
            workloads.push(Workload {
                title: format!("(a) libc, {LIBC_ADDRESSES} addresses, inline chains"),
                obj: PathBuf::from(LIBC),
                crate_obj: debug.clone(),
                input: write_input(dir.path(), "libc.txt", &addresses),
                addresses: addresses.len(),
                symbol_files: vec![PathBuf::from(LIBC), debug],
                binutils_once: false,
            });
        }
        Err(why) => {
            // As the dwarf bench: libc6-dbg is the machine's business, not CI's.
            println!("cli bench: SKIPPED the libc workload: {why}");
        }
    }
    match rustc_driver() {
        Ok(driver) => {
            let addresses = function_addresses(&driver, RUSTC_ADDRESSES, SEED).expect("functions");
            workloads.push(Workload {
                title: format!(
                    "(b) {}, {RUSTC_ADDRESSES} addresses, symbols only",
                    driver.file_name().unwrap_or_default().to_string_lossy()
                ),
                obj: driver.clone(),
                crate_obj: driver.clone(),
                input: write_input(dir.path(), "rustc.txt", &addresses),
                addresses: addresses.len(),
                symbol_files: vec![driver],
                binutils_once: true,
            });
        }
        Err(why) => {
            assert!(!ci, "cli bench: {why}");
            println!("cli bench: SKIPPED the librustc_driver workload: {why}");
        }
    }
    let tools = find_tools(common::build_tool().expect("the stacksym tool builds"));
    let rounds = if quick { 1 } else { 7 };
    println!(
        "cli bench: {rounds} interleaved round(s){}; wall time of the whole process, peak RSS \
         (ru_maxrss)",
        if quick {
            ", quick run: indicative only"
        } else {
            ""
        }
    );
    let mut summary = Vec::new();
    for workload in &workloads {
        summary.push(measure(workload, &tools, dir.path(), rounds, quick));
    }
    println!();
    println!("| workload | tool | wall, ms (median) | peak RSS, MiB | the tool's time over the example's (median of rounds) | agreement with the example |");
    println!("|---|---|---|---|---|---|");
    for (workload, results) in workloads.iter().zip(&summary) {
        for (tool, result) in Tool::ALL.iter().zip(results) {
            let Some(r) = result else {
                println!("| {} | {} | not run | | | |", workload.title, tool.name());
                continue;
            };
            println!(
                "| {} | {} | {:.1}{} | {:.1} | {} | {} |",
                workload.title,
                tool.name(),
                r.ms,
                if r.runs == 1 && rounds > 1 {
                    " (1 run)"
                } else {
                    ""
                },
                r.peak_kib as f64 / 1024.0,
                if *tool == Tool::Example {
                    "1".to_string()
                } else {
                    format!("{:.2}×", r.ratio)
                },
                r.agreement
            );
        }
    }
    println!();
    println!("| target | workload | measured | |");
    println!("|---|---|---|---|");
    for (workload, results) in workloads.iter().zip(&summary) {
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        let fastest_other = Tool::OTHERS
            .iter()
            .filter_map(|&t| Some((t, results[t as usize].as_ref()?)))
            .min_by(|a, b| a.1.ms.total_cmp(&b.1.ms));
        // A target's line again for the example on one thread (not a target itself: the
        // ratio of the medians, `other_ms` over its time).
        let one_thread = results[Tool::ExampleOneThread as usize].as_ref();
        let one_thread_line = |other_ms: f64, target: f64| {
            if let Some(one) = one_thread {
                let ratio = other_ms / one.ms;
                println!(
                    "| (`--threads 1`, not the default) the same | {} | {ratio:.2}× | {} |",
                    workload.title,
                    verdict(ratio >= target)
                );
            }
        };
        if let Some((tool, fastest)) = fastest_other {
            println!(
                "| ≥ 2× faster than the fastest other CLI ({}) | {} | {:.2}× | {} |",
                tool.name(),
                workload.title,
                fastest.ratio,
                verdict(fastest.ratio >= 2.0)
            );
            one_thread_line(fastest.ms, 2.0);
        }
        if let (Some(llvm), Some(ours)) = (&results[1], &results[0]) {
            println!(
                "| ≥ 4× faster than llvm-symbolizer | {} | {:.2}× | {} |",
                workload.title,
                llvm.ratio,
                verdict(llvm.ratio >= 4.0)
            );
            one_thread_line(llvm.ms, 4.0);
            println!(
                "| peak RSS below llvm-symbolizer's | {} | {:.1} vs {:.1} MiB | {} |",
                workload.title,
                ours.peak_kib as f64 / 1024.0,
                llvm.peak_kib as f64 / 1024.0,
                verdict(ours.peak_kib < llvm.peak_kib)
            );
        }
    }
}

/// A tool's figures on one workload.
struct Measured {
    ms: f64,
    peak_kib: u64,
    /// The tool's time over the example's, median of the rounds.
    ratio: f64,
    runs: usize,
    agreement: String,
}

/// Checks every tool's answers against the example's, then times the ones that agree.
fn measure(
    workload: &Workload,
    tools: &Tools,
    dir: &Path,
    rounds: usize,
    quick: bool,
) -> [Option<Measured>; TOOLS] {
    println!("{}: checking answers", workload.title);
    let symbols = symbol_addresses(&workload.symbol_files);
    let mut reference: Vec<(u64, Vec<Frame>)> = Vec::new();
    let mut timed: Vec<Tool> = Vec::new();
    let mut agreements: [String; TOOLS] = Default::default();
    // A tool run only once (binutils on librustc_driver): its check run is its timing.
    let mut single: [Option<Run>; TOOLS] = Default::default();
    for tool in Tool::ALL {
        let skip_once = tool == Tool::Binutils && workload.binutils_once;
        if skip_once && quick {
            agreements[tool as usize] = "not run (about a minute; full runs only)".into();
            continue;
        }
        let Some(command) = tools.command(tool, workload, false) else {
            continue;
        };
        let out = dir.join("check.out");
        run(&command, &workload.input, &out);
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let answers = parse_answers(&text);
        if tool == Tool::Example {
            assert_eq!(
                answers.len(),
                workload.addresses,
                "the example answers every address"
            );
            reference = answers;
            agreements[0] = "(reference)".into();
            timed.push(tool);
            continue;
        }
        let (agreed, other_file, differences) = agreement(&reference, &answers, &symbols);
        let share = (agreed + other_file) as f64 / workload.addresses as f64;
        agreements[tool as usize] = format!(
            "{:.2} % ({agreed} the same, {other_file} the same but a line's file name, of {})",
            share * 100.0,
            workload.addresses
        );
        println!("  {}: {}", tool.name(), agreements[tool as usize]);
        for difference in &differences {
            println!("    differs: {difference}");
        }
        if answers.len() != workload.addresses || share < REQUIRED_AGREEMENT {
            println!("  {}: not timed (answers differ)", tool.name());
            continue;
        }
        if skip_once {
            // Timed with demangling, like the others, once.
            let command = tools.command(tool, workload, true).expect("found above");
            single[tool as usize] = Some(run(&command, &workload.input, &dir.join("once.out")));
        } else {
            timed.push(tool);
        }
    }
    println!("{}: timing", workload.title);
    let mut seconds: [Vec<f64>; TOOLS] = Default::default();
    let mut peaks: [u64; TOOLS] = [0; TOOLS];
    let mut ratios: [Vec<f64>; TOOLS] = Default::default();
    for round in 0..rounds {
        let mut this_round = [0.0; TOOLS];
        // Rotate the order, so no tool always runs first.
        for k in 0..timed.len() {
            let tool = timed[(k + round) % timed.len()];
            let command = tools.command(tool, workload, true).expect("found above");
            let r = run(&command, &workload.input, &dir.join("timed.out"));
            this_round[tool as usize] = r.seconds;
            seconds[tool as usize].push(r.seconds);
            peaks[tool as usize] = peaks[tool as usize].max(r.peak_kib);
        }
        for &tool in &timed {
            ratios[tool as usize].push(this_round[tool as usize] / this_round[0]);
        }
    }
    let example_ms = median(seconds[0].clone()).unwrap_or(0.0) * 1e3;
    let mut results: [Option<Measured>; TOOLS] = Default::default();
    for tool in Tool::ALL {
        let i = tool as usize;
        let agreement = std::mem::take(&mut agreements[i]);
        if let Some(once) = &single[i] {
            results[i] = Some(Measured {
                ms: once.seconds * 1e3,
                peak_kib: once.peak_kib,
                ratio: once.seconds * 1e3 / example_ms,
                runs: 1,
                agreement,
            });
        } else if let Some(ms) = median(seconds[i].clone()) {
            results[i] = Some(Measured {
                ms: ms * 1e3,
                peak_kib: peaks[i],
                ratio: median(ratios[i].clone()).unwrap_or(0.0),
                runs: seconds[i].len(),
                agreement,
            });
        } else if !agreement.is_empty() {
            println!("  {}: {agreement}", tool.name());
        }
    }
    results
}
