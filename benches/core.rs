//! Post-mortem stacks of a whole process: the `pstack` example (`pstack --core`) against
//! `eu-stack --core` and gdb (`thread apply all bt`), each started on the same core.
//!
//! The core: `gcore` of `testdata/core/core-demo many 50` (50 threads waiting in
//! pthread_cond_wait 3 calls deep, and main reading stdin; -O2 -g, no frame pointers), made
//! once per run in a temporary directory. Commands, output to a file:
//! - `pstack --core CORE --exe EXE` (unwound by CFI, symbolized with source lines and inlined
//!   frames, libc's from its debug file when libc6-dbg is installed);
//! - `eu-stack -i -s --core CORE -e EXE` (inlined frames, source lines);
//! - `gdb -batch -nx -c CORE EXE -ex 'thread apply all bt'`.
//!
//! Before timing every tool runs once and must show the 51 threads, each with the function
//! names pstack shows (compared as tests/core.rs compares them, coarsely here: the thread
//! count and, in every thread, `cond_inner` or `wait_for_stdin`).
//!
//! Timing: rounds in which every tool runs once, in turn (interleaved, so that load from
//! elsewhere falls on all); the median wall time of each, and the median of each round's
//! ratio of the tool's time over pstack's. 7 rounds; one in a quick run (`-- --test`, or
//! `cargo test --benches`), whose figures mean nothing. The example is built in the bench's
//! profile (`common::build_tool`). Needs root (gcore attaches with ptrace), gdb, gcore and
//! eu-stack: a failure under `CI=true`, a SKIPPED line otherwise.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

mod common;
use common::{median, mode, quick_note};

const EXE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/core/core-demo");
const THREADS: usize = 50;

fn find_tool(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Skips the bench with a note, or fails it under CI.
fn skip(why: &str) {
    assert!(std::env::var_os("CI").is_none(), "core bench: {why}");
    println!("core bench: SKIPPED: {why}");
}

/// `gcore` of `core-demo many THREADS`, in `dir`.
fn make_core(gcore: &Path, dir: &Path) -> PathBuf {
    let mut child = Command::new(EXE)
        .args(["many", &THREADS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("core-demo starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("core-demo says it is ready");
    assert!(line.starts_with("ready "), "{line:?}");
    let prefix = dir.join("core");
    let out = Command::new(gcore)
        .arg("-o")
        .arg(&prefix)
        .arg(child.id().to_string())
        .output()
        .expect("gcore runs");
    let _ = child.kill();
    let _ = child.wait();
    let core = dir.join(format!("core.{}", child.id()));
    assert!(
        core.is_file(),
        "gcore wrote nothing: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    core
}

struct Tool {
    name: &'static str,
    command: Vec<String>,
    /// How a thread starts in its output.
    thread_prefix: &'static str,
}

/// Runs `tool` once, output to `out`; its wall time in seconds.
fn run(tool: &Tool, out: &Path) -> f64 {
    let file = std::fs::File::create(out).expect("the output file");
    let start = Instant::now();
    let status = Command::new(&tool.command[0])
        .args(&tool.command[1..])
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.name));
    let took = start.elapsed().as_secs_f64();
    // eu-stack exits 1 when any thread's unwinding ended in an error (the outermost frame
    // of clone3 threads, on this machine's libc): its output is checked instead.
    assert!(
        status.success() || tool.name == "eu-stack",
        "{}: {status}",
        tool.name
    );
    took
}

/// Checks a tool's output: every thread, each waiting where core-demo waits.
fn check(tool: &Tool, text: &str) {
    let threads: Vec<&str> = text.split(tool.thread_prefix).skip(1).collect();
    assert_eq!(
        threads.len(),
        THREADS + 1,
        "{}: {} threads:\n{text}",
        tool.name,
        threads.len()
    );
    for thread in &threads {
        assert!(
            thread.contains("cond_inner") || thread.contains("wait_for_stdin"),
            "{}: a thread outside core-demo's waits:\n{thread}",
            tool.name
        );
    }
}

fn main() {
    let (listing, quick) = mode();
    if listing {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return skip("gcore needs ptrace permission (run as root)");
    }
    let (Some(gdb), Some(gcore), Some(eu_stack)) =
        (find_tool("gdb"), find_tool("gcore"), find_tool("eu-stack"))
    else {
        return skip("gdb, gcore or eu-stack not found (apt-get install gdb elfutils)");
    };
    let pstack = common::build_tool().expect("the stacksym tool builds");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let core = make_core(&gcore, dir.path());
    let core_arg = core.display().to_string();
    let size = std::fs::metadata(&core).map_or(0, |m| m.len());
    let tools = [
        Tool {
            name: "pstack --core",
            command: vec![
                pstack.display().to_string(),
                "pstack".into(),
                "--core".into(),
                core_arg.clone(),
                "--exe".into(),
                EXE.into(),
            ],
            thread_prefix: "\nTID ",
        },
        Tool {
            name: "eu-stack",
            command: vec![
                eu_stack.display().to_string(),
                "-i".into(),
                "-s".into(),
                "--core".into(),
                core_arg.clone(),
                "-e".into(),
                EXE.into(),
            ],
            thread_prefix: "\nTID ",
        },
        Tool {
            name: "gdb",
            command: vec![
                gdb.display().to_string(),
                "-batch".into(),
                "-nx".into(),
                "-c".into(),
                core_arg,
                EXE.into(),
                "-ex".into(),
                "thread apply all bt".into(),
            ],
            thread_prefix: "\nThread ",
        },
    ];
    for (i, tool) in tools.iter().enumerate() {
        let out = dir.path().join(format!("out{i}.txt"));
        run(tool, &out);
        check(tool, &std::fs::read_to_string(&out).expect("the output"));
    }
    let rounds = if quick { 1 } else { 7 };
    println!(
        "core bench: gcore of core-demo many {THREADS} ({} threads, {:.1} MiB), {rounds} \
         interleaved round(s){}",
        THREADS + 1,
        size as f64 / (1 << 20) as f64,
        quick_note(quick)
    );
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); tools.len()];
    for _ in 0..rounds {
        for (i, tool) in tools.iter().enumerate() {
            times[i].push(run(tool, &dir.path().join(format!("out{i}.txt"))));
        }
    }
    println!("| tool | wall, ms (median) | the tool's time over pstack's (median of rounds) |");
    println!("|---|---|---|");
    for (i, tool) in tools.iter().enumerate() {
        let ratios: Vec<f64> = times[i]
            .iter()
            .zip(&times[0])
            .map(|(t, ours)| t / ours)
            .collect();
        println!(
            "| {} | {:.1} | {:.2} |",
            tool.name,
            median(times[i].clone()).unwrap_or(0.0) * 1e3,
            median(ratios).unwrap_or(0.0)
        );
    }
}
