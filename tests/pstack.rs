//! The `pstack` example against gdb: `testdata/unwind/pstack-threads-{fp,nofp}` (built by
//! testdata/build-unwind.sh, -O2 -g, with and without frame pointers) runs with five threads
//! waiting in different ways (read, pthread_cond_wait, nanosleep, read on a pipe, and pause()
//! inside a SIGUSR1 handler that interrupted a busy loop); the example and
//! `gdb -batch -p PID -ex 'thread apply all bt'` print every thread's stack, and the function
//! sequences are compared thread by thread (matched by LWP id), inlined frames included.
//!
//! Two differences are gdb's conventions, counted and printed but not failures: gdb stops at
//! `main` (`backtrace past-main` is off), and gdb shows tail calls it reconstructs from DWARF
//! call-site information (a frame whose pc follows a `jmp`, so it has no return address on the
//! stack; checked here in the process's memory). Any other difference fails.
//!
//! Also: the target is never left stopped, after a normal run, and after pstack is killed by
//! SIGINT, SIGTERM or SIGKILL while it holds the threads stopped (`--hold`).
//!
//! Needs gdb and ptrace permission (root, or `kernel.yama.ptrace_scope` 0): skipped with a
//! note otherwise, a failure under CI.

// The test programs are x86_64 binaries, and the tail-call check reads x86_64 jumps.
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{find_tool, parse_frame, skip_or_fail, tool, writeln_stderr, Frames};

/// A running `pstack-threads-VARIANT`, killed on drop.
struct Target {
    child: Child,
    pid: u32,
}

impl Target {
    /// Starts the program and waits until it says every thread is on its way to its wait and
    /// every thread sleeps (state `S`).
    fn start(variant: &str) -> Target {
        let program = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/unwind")
            .join(format!("pstack-threads-{variant}"));
        let mut child = Command::new(&program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("the program's first line");
        assert!(line.starts_with("ready "), "unexpected: {line:?}");
        let target = Target {
            pid: child.id(),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let states = target.states();
            if states.len() == 5 && states.values().all(|&s| s == 'S') {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the threads do not all sleep: {states:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        target
    }

    /// Each thread's state letter (`/proc/PID/task/TID/stat`, field 3).
    fn states(&self) -> BTreeMap<u32, char> {
        let mut states = BTreeMap::new();
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            return states;
        };
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            // "TID (COMM) STATE ...": COMM may hold spaces and parentheses.
            if let Some(state) = stat
                .rfind(')')
                .and_then(|at| stat[at + 1..].trim_start().chars().next())
            {
                states.insert(tid, state);
            }
        }
        states
    }

    /// Threads stopped by a tracer or a signal (`t`, `T`), after giving threads let go a
    /// moment to run again.
    fn stopped_threads(&self) -> BTreeMap<u32, char> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let stopped: BTreeMap<u32, char> = self
                .states()
                .into_iter()
                .filter(|(_, s)| matches!(s, 't' | 'T'))
                .collect();
            if stopped.is_empty() || Instant::now() >= deadline {
                return stopped;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The bytes at `addr` in the process's memory.
    fn read(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        let mem = std::fs::File::open(format!("/proc/{}/mem", self.pid)).ok()?;
        let mut buf = vec![0; len];
        mem.read_exact_at(&mut buf, addr).ok()?;
        Some(buf)
    }

    /// Whether the instruction before `pc` is a `jmp` (`e9 rel32` or `eb rel8`): a frame gdb
    /// shows at such a pc is a tail call it reconstructed, not a return address.
    fn follows_jmp(&self, pc: u64) -> bool {
        let rel32 = self.read(pc.wrapping_sub(5), 1) == Some(vec![0xe9]);
        let rel8 = self.read(pc.wrapping_sub(2), 1) == Some(vec![0xeb]);
        rel32 || rel8
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// pstack's output: `TID N "name":` then the frames.
fn parse_pstack(text: &str) -> BTreeMap<u32, Frames> {
    let mut threads = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("TID ") {
            let tid = rest.split(' ').next().and_then(|t| t.parse().ok());
            current = tid;
            if let Some(tid) = tid {
                threads.insert(tid, Vec::new());
            }
        } else if let (Some(tid), Some(frame)) = (current, parse_frame(line)) {
            threads.entry(tid).or_insert_with(Vec::new).push(frame);
        }
    }
    threads
}

/// gdb's output: `Thread N (Thread 0x... (LWP TID) "name"):` then the frames.
fn parse_gdb(text: &str) -> BTreeMap<u32, Frames> {
    let mut threads = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if line.starts_with("Thread ") {
            current = line
                .split_once("(LWP ")
                .and_then(|(_, rest)| rest.split(')').next())
                .and_then(|tid| tid.parse().ok());
            if let Some(tid) = current {
                threads.insert(tid, Vec::new());
            }
        } else if let (Some(tid), Some(frame)) = (current, parse_frame(line)) {
            threads.entry(tid).or_insert_with(Vec::new).push(frame);
        }
    }
    threads
}

/// The function names of `frames`.
fn names(frames: &Frames) -> Vec<&str> {
    frames.iter().map(|frame| frame.0.as_str()).collect()
}

/// Compares one thread's frames; adds the explained differences to `classes` and returns the
/// unexplained ones.
fn compare_thread(
    target: &Target,
    ours: &Frames,
    gdb: &Frames,
    classes: &mut BTreeMap<String, usize>,
) -> Vec<String> {
    let mut ours: Frames = ours.clone();
    // gdb's `backtrace past-main off`: its stack ends at main.
    if gdb.last().is_some_and(|(name, _)| name == "main") {
        if let Some(at) = ours.iter().position(|(name, _)| name == "main") {
            if at + 1 < ours.len() {
                *classes
                    .entry("gdb stops at main (backtrace past-main off)".into())
                    .or_default() += 1;
                ours.truncate(at + 1);
            }
        }
    }
    let mut problems = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < ours.len() || j < gdb.len() {
        match (ours.get(i), gdb.get(j)) {
            (Some(a), Some(b)) if a.0 == b.0 => {
                i += 1;
                j += 1;
            }
            (_, Some((name, Some(pc)))) if target.follows_jmp(*pc) => {
                *classes
                    .entry(format!(
                        "gdb shows a tail call from DWARF call sites ({name}: its pc follows a \
                         jmp, no return address on the stack)"
                    ))
                    .or_default() += 1;
                j += 1;
            }
            (a, b) => {
                problems.push(format!(
                    "frame {i}: ours {:?}, gdb's frame {j} {:?}",
                    a.map(|f| &f.0),
                    b.map(|f| &f.0)
                ));
                break;
            }
        }
    }
    problems
}

fn gdb_or_skip(test: &str) -> Option<std::path::PathBuf> {
    let gdb = find_tool("gdb");
    if gdb.is_none() {
        skip_or_fail(test, "gdb not found (apt-get install gdb)");
    }
    gdb
}

#[test]
fn pstack_matches_gdb_thread_by_thread() {
    let test = "pstack_matches_gdb_thread_by_thread";
    let Some(gdb) = gdb_or_skip(test) else {
        return;
    };
    if let Ok(scope) = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope") {
        if scope.trim() != "0" && !is_root() {
            return skip_or_fail(
                test,
                &format!("kernel.yama.ptrace_scope is {} and not root", scope.trim()),
            );
        }
    }
    let pstack = || tool("pstack");
    let mut all_problems = Vec::new();
    let mut threads_compared = 0;
    let mut frames_compared = 0;
    for variant in ["fp", "nofp"] {
        let target = Target::start(variant);
        let pid = target.pid.to_string();
        let ours = pstack().arg(&pid).output().expect("pstack runs");
        assert!(
            ours.status.success(),
            "pstack failed: {}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let stopped = target.stopped_threads();
        assert!(
            stopped.is_empty(),
            "threads left stopped after pstack: {stopped:?}"
        );
        let theirs = Command::new(&gdb)
            .args(["-batch", "-nx", "-p", &pid, "-ex", "thread apply all bt"])
            .stdin(Stdio::null())
            .output()
            .expect("gdb runs");
        let (ours_text, gdb_text) = (
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
        );
        let (ours, gdb_threads) = (parse_pstack(&ours_text), parse_gdb(&gdb_text));
        if gdb_threads.is_empty() {
            return skip_or_fail(
                test,
                &format!(
                    "gdb could not attach (permissions?): {}",
                    String::from_utf8_lossy(&theirs.stderr)
                ),
            );
        }
        let mut classes = BTreeMap::new();
        let mut problems = Vec::new();
        let tids: Vec<&u32> = ours.keys().collect();
        let gdb_tids: Vec<&u32> = gdb_threads.keys().collect();
        if tids != gdb_tids {
            problems.push(format!("threads: ours {tids:?}, gdb's {gdb_tids:?}"));
        }
        for (tid, our_frames) in &ours {
            let Some(gdb_frames) = gdb_threads.get(tid) else {
                continue;
            };
            threads_compared += 1;
            frames_compared += gdb_frames.len();
            for problem in compare_thread(&target, our_frames, gdb_frames, &mut classes) {
                problems.push(format!(
                    "thread {tid}: {problem}\n        ours: {:?}\n        gdb:  {:?}",
                    names(our_frames),
                    names(gdb_frames)
                ));
            }
        }
        writeln_stderr(format_args!(
            "{test}: pstack-threads-{variant}: {} threads, {} of gdb's frames; {} unexplained \
             differences",
            gdb_threads.len(),
            gdb_threads.values().map(Vec::len).sum::<usize>(),
            problems.len()
        ));
        for (class, count) in &classes {
            writeln_stderr(format_args!("    {count:3}  {class}"));
        }
        for problem in &problems {
            writeln_stderr(format_args!("    DIFFERENT {problem}"));
        }
        if !problems.is_empty() {
            writeln_stderr(format_args!("pstack:\n{ours_text}\ngdb:\n{gdb_text}"));
        }
        // The signal thread's stack runs through the handler into the code it interrupted.
        let signal_thread = ours
            .values()
            .find(|f| f.iter().any(|x| x.0 == "on_usr1"))
            .expect("a thread in the signal handler");
        let names = names(signal_thread);
        let at = names
            .iter()
            .position(|&n| n == "<signal handler called>")
            .expect("a signal frame");
        assert_eq!(
            names[at - 2..at + 3],
            [
                "handler_wait",
                "on_usr1",
                "<signal handler called>",
                "busy_inner",
                "busy_outer"
            ],
            "{names:?}"
        );
        let stopped = target.stopped_threads();
        assert!(
            stopped.is_empty(),
            "threads left stopped after gdb: {stopped:?}"
        );
        all_problems.extend(problems);
    }
    assert!(
        threads_compared >= 10,
        "{threads_compared} threads compared"
    );
    assert!(frames_compared >= 60, "{frames_compared} frames compared");
    assert!(
        all_problems.is_empty(),
        "{} threads differ from gdb's (printed above)",
        all_problems.len()
    );
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// pstack killed while it holds the threads stopped (`--hold`): every thread runs again.
#[test]
fn pstack_killed_while_holding_the_threads_lets_them_go() {
    let test = "pstack_killed_while_holding_the_threads_lets_them_go";
    if !is_root() {
        return skip_or_fail(test, "needs ptrace permission (run as root)");
    }
    let pstack = || tool("pstack");
    for (signal, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGKILL, "SIGKILL"),
    ] {
        let target = Target::start("nofp");
        let mut child = pstack()
            .args(["--hold", "60000"])
            .arg(target.pid.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pstack starts");
        // Wait until pstack holds every thread (state t: a tracing stop).
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let states = target.states();
            if states.values().all(|&s| s == 't') {
                break;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                panic!("{name}: pstack never stopped the threads: {states:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: kill with a valid signal number on our own child.
        let sent = unsafe { libc::kill(child.id() as i32, signal) };
        assert_eq!(sent, 0, "kill {name}");
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                panic!("{name}: pstack did not end within 10 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(
            status.signal(),
            Some(signal),
            "{name}: pstack should die of the signal after letting the threads go: {status:?}"
        );
        let stopped = target.stopped_threads();
        assert!(
            stopped.is_empty(),
            "{name}: threads left stopped: {stopped:?}"
        );
        writeln_stderr(format_args!(
            "{test}: {name}: pstack died of it, all {} threads running",
            target.states().len()
        ));
    }
}

#[test]
fn pstack_names_a_missing_process() {
    let out = tool("pstack").arg("999999999").output().expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("999999999"), "{stderr}");
}
