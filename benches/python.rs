//! Python stacks of a whole live process: `stacksym pstack --python` against `py-spy dump`,
//! each started on the same running process, in the same run.
//!
//! The process: `testdata/python/many.py 50` (50 threads parked in `time.sleep` five Python
//! frames deep, and the main thread), under each interpreter found: Debian's
//! `/usr/bin/python3.11` (stripped, as a distribution ships it: no DWARF here unless its
//! debug package is installed) and pyenv's newest CPython 3 (`/root/.pyenv/versions`; built
//! with `-g`, so its `libpython` is 30 MB, 27 of them DWARF); `STACKSYM_BENCH_PYTHON` names
//! one interpreter instead. Commands, output to a file (both tools stop the process while
//! they read it: pstack with ptrace, py-spy by default):
//! - `stacksym pstack --python PID`: every thread's native stack (CFI, source lines and
//!   inlined frames from the DWARF it finds) with its Python frames in place of the
//!   evaluation loop's frames;
//! - `py-spy dump --pid PID`: the Python frames (the peer; the target is ≥ 2×);
//! - `py-spy dump --native --pid PID`: py-spy's merged stacks (native frames named by their
//!   symbol, no source lines), the peer of the merged view;
//! - `stacksym pstack --python-only PID`: the Python frames alone (py-spy dump's view; no
//!   native stack is unwound or symbolized).
//!
//! Before timing every tool runs once and must show the 51 threads and 50 frames of `leaf`
//! at its `time.sleep` line.
//!
//! Timing: criterion times each command (whole processes); then rounds in which every
//! command runs once, in turn (interleaved, so that load from elsewhere falls on all): the
//! medians of each command's wall time and CPU time (user + system, from `wait4`), and the
//! median of each round's ratio of the command's time over `pstack --python`'s. 7 rounds;
//! one in a quick run (`-- --test`, or `cargo test --benches`), whose figures mean nothing.
//! The tool is built in the bench's profile (`common::build_tool`). Needs ptrace permission
//! (root) and py-spy (`pip install py-spy`): a failure under `CI=true`, a SKIPPED line
//! otherwise.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{median, mode, quick_note};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/python/many.py");
const THREADS: usize = 50;

/// Skips the bench with a note, or fails it under CI.
fn skip(why: &str) {
    assert!(std::env::var_os("CI").is_none(), "python bench: {why}");
    println!("python bench: SKIPPED: {why}");
}

fn find_tool(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The interpreters to run `many.py` under: (label, executable).
fn interpreters() -> Vec<(String, PathBuf)> {
    if let Some(path) = std::env::var_os("STACKSYM_BENCH_PYTHON") {
        let path = PathBuf::from(path);
        return vec![(path.display().to_string(), path)];
    }
    let mut found = Vec::new();
    let debian = PathBuf::from("/usr/bin/python3.11");
    if debian.is_file() {
        found.push(("Debian python3.11 (no DWARF)".to_string(), debian));
    }
    // pyenv's newest 3.x: the highest minor version, then micro.
    let newest = std::fs::read_dir("/root/.pyenv/versions")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let mut parts = name.split('.').map(|p| p.parse::<u32>().ok());
            match (parts.next(), parts.next(), parts.next()) {
                (Some(Some(3)), Some(Some(minor)), Some(Some(micro))) => {
                    Some(((minor, micro), name, entry.path()))
                }
                _ => None,
            }
        })
        .max();
    if let Some(((minor, _), name, dir)) = newest {
        let exe = dir.join(format!("bin/python3.{minor}"));
        if exe.is_file() {
            found.push((format!("pyenv {name} (libpython with DWARF)"), exe));
        }
    }
    found
}

/// `many.py` running and parked; killed when dropped.
struct Parked {
    child: Child,
}

impl Parked {
    fn start(python: &Path) -> Parked {
        let mut child = Command::new(python)
            .arg(SCRIPT)
            .arg(THREADS.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
        let stdout = child.stdout.take().expect("piped");
        let parked = Parked { child };
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("many.py says it is ready");
        assert_eq!(line.trim(), "ready", "{}: many.py", python.display());
        parked
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Tool {
    name: &'static str,
    command: Vec<String>,
    /// How a thread starts in its output.
    thread_prefix: &'static str,
    /// How `leaf`'s frame, at its `time.sleep`, reads in its output.
    leaf: String,
}

impl Tool {
    fn command(&self) -> Command {
        let mut command = Command::new(&self.command[0]);
        command.args(&self.command[1..]).stdin(Stdio::null());
        command
    }
}

/// One run's wall and CPU (user + system) time, in seconds.
struct Run {
    wall: f64,
    cpu: f64,
}

/// Runs `tool` once, output to `out`; reaped by `wait4`, which gives its own CPU time.
#[allow(clippy::zombie_processes)]
fn run(tool: &Tool, out: &Path) -> Run {
    let file = std::fs::File::create(out).expect("the output file");
    let start = Instant::now();
    let child = tool
        .command()
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.name));
    let pid = i32::try_from(child.id()).expect("a pid fits i32");
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, not waited for yet; both pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid, "wait4 of {}", tool.name);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{} failed (status {status:#x})",
        tool.name
    );
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Run {
        wall,
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
    }
}

/// Checks a tool's output: every thread, and `leaf` at its line in each parked one.
fn check(tool: &Tool, label: &str, text: &str) {
    let threads = text.matches(tool.thread_prefix).count();
    assert_eq!(
        threads,
        THREADS + 1,
        "{label}: {}: {threads} threads:\n{text}",
        tool.name
    );
    let leaves = text.matches(&tool.leaf).count();
    assert_eq!(
        leaves, THREADS,
        "{label}: {}: {leaves} frames `{}`:\n{text}",
        tool.name, tool.leaf
    );
}

fn main() {
    let (listing, quick) = mode();
    if listing {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return skip("both tools stop the process with ptrace (run as root)");
    }
    let Some(py_spy) = find_tool("py-spy") else {
        return skip("py-spy not found (pip install py-spy)");
    };
    let pythons = interpreters();
    if pythons.is_empty() {
        return skip("no /usr/bin/python3.11 and no pyenv CPython 3 (or STACKSYM_BENCH_PYTHON)");
    }
    let leaf_line = std::fs::read_to_string(SCRIPT)
        .expect("many.py")
        .lines()
        .position(|line| line == "    time.sleep(3600)")
        .expect("leaf's time.sleep in many.py")
        + 1;
    let stacksym = common::build_tool()
        .expect("the stacksym tool builds")
        .display()
        .to_string();
    let py_spy = py_spy.display().to_string();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut criterion = common::criterion(Duration::from_secs(3));
    for (label, python) in &pythons {
        let parked = Parked::start(python);
        let pid = parked.child.id().to_string();
        let command = |parts: &[&str]| -> Vec<String> {
            parts
                .iter()
                .map(|p| p.to_string())
                .chain([pid.clone()])
                .collect()
        };
        let tools = [
            Tool {
                name: "stacksym pstack --python",
                command: command(&[&stacksym, "pstack", "--python"]),
                thread_prefix: "\nTID ",
                leaf: format!(" in leaf at {SCRIPT}:{leaf_line} (python)"),
            },
            Tool {
                name: "py-spy dump",
                command: command(&[&py_spy, "dump", "--pid"]),
                thread_prefix: "\nThread ",
                leaf: format!("    leaf (many.py:{leaf_line})\n"),
            },
            Tool {
                name: "py-spy dump --native",
                command: command(&[&py_spy, "dump", "--native", "--pid"]),
                thread_prefix: "\nThread ",
                leaf: format!("    leaf (many.py:{leaf_line})\n"),
            },
            Tool {
                name: "stacksym pstack --python-only",
                command: command(&[&stacksym, "pstack", "--python-only"]),
                thread_prefix: "\nTID ",
                leaf: format!(" in leaf at {SCRIPT}:{leaf_line} (python)"),
            },
        ];
        for (i, tool) in tools.iter().enumerate() {
            let out = dir.path().join(format!("out{i}.txt"));
            run(tool, &out);
            let text = std::fs::read_to_string(&out).expect("the output");
            check(tool, label, &text);
        }

        let mut group = criterion.benchmark_group(format!("python {label}"));
        for tool in &tools {
            group.bench_function(tool.name, |b| {
                b.iter(|| {
                    let status = tool
                        .command()
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status()
                        .expect("the command runs");
                    assert!(status.success(), "{}: {status}", tool.name);
                })
            });
        }
        group.finish();

        let rounds = if quick { 1 } else { 7 };
        let mut runs: Vec<Vec<Run>> = tools.iter().map(|_| Vec::new()).collect();
        for _ in 0..rounds {
            for (i, tool) in tools.iter().enumerate() {
                runs[i].push(run(tool, &dir.path().join(format!("out{i}.txt"))));
            }
        }
        println!(
            "\npython bench: {label}, many.py {THREADS} ({} threads), {rounds} interleaved \
             round(s){}",
            THREADS + 1,
            quick_note(quick)
        );
        println!(
            "| command | wall, ms (median) | CPU, ms (median) | its wall over pstack --python's \
             (median of rounds) | its CPU over pstack --python's |"
        );
        println!("|---|---|---|---|---|");
        let ratio = |i: usize, of: fn(&Run) -> f64| {
            median(
                runs[i]
                    .iter()
                    .zip(&runs[0])
                    .map(|(theirs, ours)| of(theirs) / of(ours))
                    .collect(),
            )
            .unwrap_or(0.0)
        };
        for (i, tool) in tools.iter().enumerate() {
            let ms =
                |of: fn(&Run) -> f64| median(runs[i].iter().map(of).collect()).unwrap_or(0.0) * 1e3;
            println!(
                "| {} | {:.1} | {:.1} | {:.2} | {:.2} |",
                tool.name,
                ms(|r| r.wall),
                ms(|r| r.cpu),
                ratio(i, |r| r.wall),
                ratio(i, |r| r.cpu)
            );
        }
        let (wall, cpu) = (ratio(1, |r| r.wall), ratio(1, |r| r.cpu));
        println!(
            "py-spy dump / stacksym pstack --python: {wall:.2}x wall, {cpu:.2}x CPU (target \
             2x: {})",
            if wall >= 2.0 { "met" } else { "missed" }
        );
        drop(parked);
    }
    criterion.final_summary();
}
