//! Python frames (src/python/, `Symbolizer::python_stacks`, `PythonStacks::from_core`)
//! against the tools people use to read them.
//!
//! `testdata/python/parked.py` parks eight threads in `time.sleep` inside a method, a
//! classmethod, a staticmethod, recursion, a generator, a closure, a decorated function and
//! a lambda, under every CPython 3.6-3.13 of pyenv and Debian's `/usr/bin/python3.11`. The
//! process is stopped with SIGSTOP and read by `py-spy dump --nonblocking --json` and by
//! `Symbolizer::python_stacks`: per OS thread, the same (function, file basename, line)
//! sequence. A `gcore` of the same stopped process is read by `PythonStacks::from_core` and
//! compared with `pystack core --no-native` the same way.
//!
//! A process without CPython (c-wait) is told so from its executable alone: no library
//! of it is opened.
//!
//! The tools come from `pip install py-spy pystack` (.ci/run installs them); without them
//! (or without an interpreter) the test is skipped, and fails under CI=true.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use stacksym::process::Process;
use stacksym::python::PythonStacks;
use stacksym::Symbolizer;
use support::python::{
    basename, pstack_python, py_spy, stdout_of, wait_stopped, Frames, ThreadKey,
};
use support::{find_tool, skip_or_fail, writeln_stderr};

/// Every interpreter the test runs under: pyenv's 3.6-3.13 and Debian's 3.11.
fn interpreters(test: &str) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for minor in 6..=13 {
        let prefix = format!("3.{minor}.");
        let dir = std::fs::read_dir("/root/.pyenv/versions")
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with(&prefix))
            })
            .max();
        match dir {
            Some(dir) => {
                let exe = dir.join(format!("bin/python3.{minor}"));
                found.push((format!("pyenv {}", dir.display()), exe));
            }
            None => skip_or_fail(test, &format!("no pyenv CPython 3.{minor}")),
        }
    }
    let debian = PathBuf::from("/usr/bin/python3.11");
    if debian.is_file() {
        found.push(("debian 3.11".to_string(), debian));
    } else {
        skip_or_fail(test, "no /usr/bin/python3.11");
    }
    found
}

/// The test program, running and parked, stopped with SIGSTOP; killed when dropped.
struct Parked {
    child: Child,
}

impl Parked {
    fn start(python: &Path) -> Parked {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/python/parked.py");
        let mut child = Command::new(python)
            .arg(&script)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the program's output");
        let parked = Parked { child };
        assert_eq!(
            line.trim(),
            "ready",
            "{}: the program did not get ready",
            python.display()
        );
        // SAFETY: kill(2) on our own child, which has not been waited for: its pid is ours.
        let stopped = unsafe { libc::kill(parked.pid() as libc::pid_t, libc::SIGSTOP) };
        assert_eq!(stopped, 0, "SIGSTOP");
        wait_stopped(parked.pid());
        parked
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A core of process `pid` written by `gcore` into `dir`: its path.
fn gcore_of(gcore: &Path, pid: u32, dir: &Path) -> PathBuf {
    let prefix = dir.join("core");
    let mut command = Command::new(gcore);
    command.arg("-o").arg(&prefix).arg(pid.to_string());
    stdout_of(command, "gcore");
    PathBuf::from(format!("{}.{pid}", prefix.display()))
}

/// Ours: frames per thread (a thread without an OS thread id, or whose frames failed,
/// fails); the OS thread id left out where `with_tids` is false (py-spy's has none).
fn ours(stacks: &PythonStacks, with_tids: bool) -> BTreeMap<ThreadKey, Frames> {
    let mut by_tid = BTreeMap::new();
    for thread in &stacks.threads {
        let tid = thread.os_tid.unwrap_or_else(|| {
            panic!("thread state {:#x}: no OS thread id", thread.thread_state.0)
        });
        let frames = match &thread.frames {
            Ok(frames) => frames
                .iter()
                .map(|f| (f.function.clone(), basename(&f.file), f.line.unwrap_or(0)))
                .collect(),
            Err(e) => panic!("thread {tid}: {e}"),
        };
        by_tid.insert((thread.thread_id, with_tids.then_some(tid)), frames);
    }
    by_tid
}

/// Asserts that both tools saw the same threads with the same frames; returns (threads,
/// frames) compared.
fn assert_same(
    label: &str,
    tool: &str,
    theirs: &BTreeMap<ThreadKey, Frames>,
    mine: &BTreeMap<ThreadKey, Frames>,
) -> (usize, usize) {
    let mut differences = Vec::new();
    for (tid, frames) in theirs {
        match mine.get(tid) {
            Some(ours) if ours == frames => {}
            Some(ours) => differences.push(format!(
                "thread {tid:?}:\n  {tool}: {frames:?}\n  ours:  {ours:?}"
            )),
            None => differences.push(format!("thread {tid:?}: only {tool} has it: {frames:?}")),
        }
    }
    for tid in mine.keys().filter(|tid| !theirs.contains_key(tid)) {
        differences.push(format!("thread {tid:?}: only ours has it"));
    }
    assert!(
        differences.is_empty(),
        "{label}: {tool} and stacksym differ:\n{}",
        differences.join("\n")
    );
    // The program's nine threads, each at least three frames deep.
    assert_eq!(theirs.len(), 9, "{label}: threads seen by {tool}");
    let frames = theirs.values().map(Vec::len).sum();
    assert!(frames >= 9 * 3, "{label}: only {frames} frames");
    (theirs.len(), frames)
}

#[test]
fn live_python_frames_agree_with_py_spy() {
    let test = "live_python_frames_agree_with_py_spy";
    let Some(spy) = find_tool("py-spy") else {
        return skip_or_fail(test, "py-spy not found; pip install py-spy");
    };
    let symbolizer = Symbolizer::builder().build();
    for (label, python) in interpreters(test) {
        let parked = Parked::start(&python);
        let stacks = symbolizer
            .python_stacks(&Process::new(parked.pid()))
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let theirs = py_spy(&spy, parked.pid());
        let with_tids = theirs.keys().all(|(_, tid)| tid.is_some());
        let (threads, frames) = assert_same(&label, "py-spy", &theirs, &ours(&stacks, with_tids));
        // The tool, over the same process: its Python frames alone (--python-only, which
        // unwinds nothing native), and merged into native stacks (--python). The debug
        // build of --python names every native frame through libpython's DWARF (seconds),
        // so it runs for the oldest and newest frame model only: PyFrameObject chains from
        // 3.6's `interp_head` (it has no _PyRuntime) and _PyInterpreterFrame chains read
        // through _Py_DebugOffsets (3.13).
        let tool_checked = stacks.version.minor == 6 || stacks.version.minor == 13;
        let as_keys = |map: BTreeMap<u32, Frames>| -> BTreeMap<ThreadKey, Frames> {
            map.into_iter()
                .map(|(tid, f)| ((0, Some(tid)), f))
                .collect()
        };
        let api: BTreeMap<ThreadKey, Frames> = ours(&stacks, true)
            .into_iter()
            .map(|((_, tid), frames)| ((0, tid), frames))
            .collect();
        for only in [true, false] {
            if !only && !tool_checked {
                continue;
            }
            let flag = if only { "--python-only" } else { "--python" };
            let tool_label = format!("{label} (stacksym pstack {flag})");
            let from_tool = as_keys(pstack_python(parked.pid(), only));
            assert_same(&tool_label, "our API", &api, &from_tool);
        }
        writeln_stderr(format_args!(
            "{label}: CPython {} (debug offsets: {}): {threads} threads, {frames} frames \
             identical to py-spy's{}",
            stacks.version,
            stacks.debug_offsets,
            if tool_checked {
                ", and in stacksym pstack --python-only --json and --python --json"
            } else {
                ", and in stacksym pstack --python-only --json"
            }
        ));
    }
}

/// One frame of a merged stack: Python (function, file basename, line) or native (the
/// function's name).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mixed {
    Python(String, String, u32),
    Native(String),
}

/// `pystack core --native --no-color CORE`: frames per OS thread id, innermost first, each
/// Python function named by its last dotted component: pystack prints `co_name`, which is
/// the last component of `co_qualname` (`decorate.<locals>.wrapper` is `wrapper` to it);
/// a native function without its `@VERSION`; its inlined frames left out (ours are named
/// by their symbol, one name per physical frame). pystack leaves out the interpreter's own
/// native frames between Python frames.
fn pystack_core(pystack: &Path, core: &Path) -> BTreeMap<u32, Vec<Mixed>> {
    let mut command = Command::new(pystack);
    command.args(["core", "--native", "--no-color"]).arg(core);
    let out = stdout_of(command, "pystack core");
    let text = String::from_utf8_lossy(&out);
    let mut by_tid = BTreeMap::new();
    let mut current: Option<(u32, Vec<Mixed>)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Traceback for thread ") {
            if let Some((tid, frames)) = current.take() {
                by_tid.insert(tid, frames);
            }
            let tid = rest.split_whitespace().next().and_then(|t| t.parse().ok());
            current = Some((tid.expect("a thread id"), Vec::new()));
            continue;
        }
        let line = line.trim_start();
        let (python, rest) = if let Some(rest) = line.strip_prefix("(Python) File \"") {
            (true, rest)
        } else if let Some(rest) = line.strip_prefix("(C) File \"") {
            (false, rest)
        } else {
            continue;
        };
        // (Python) File "PATH", line N, in NAME
        // (C) File "PATH", line N, in NAME[@VERSION] [(inlined)] (LIBRARY)
        let (file, rest) = rest.split_once("\", line ").expect("a frame line");
        let (line_no, name) = rest.split_once(", in ").expect("a frame line");
        let frames = &mut current.as_mut().expect("a thread first").1;
        frames.push(if python {
            Mixed::Python(
                name.to_string(),
                basename(file),
                line_no.parse().expect("a line number"),
            )
        } else if name.contains(" (inlined) ") {
            // Our native frames are named by their symbol: one name per physical frame.
            continue;
        } else {
            let name = name.split(' ').next().unwrap_or(name);
            Mixed::Native(name.split('@').next().unwrap_or(name).to_string())
        });
    }
    if let Some((tid, frames)) = current.take() {
        by_tid.insert(tid, frames);
    }
    for frames in by_tid.values_mut() {
        // Most recent call last.
        frames.reverse();
    }
    by_tid
}

fn python_only(frames: &[Mixed]) -> Frames {
    frames
        .iter()
        .filter_map(|frame| match frame {
            Mixed::Python(function, file, line) => Some((function.clone(), file.clone(), *line)),
            Mixed::Native(_) => None,
        })
        .collect()
}

/// Asserts that our merged stacks place each Python frame where pystack does, relative to
/// the native frames both name (pystack hides the interpreter's own and shows inlined
/// ones, so only the native names both have are compared), and that every Python frame
/// found its evaluation frame (none left over past the outermost native frame). Returns
/// how many native frames were compared.
fn assert_merged_like_pystack(
    label: &str,
    theirs: &BTreeMap<u32, Vec<Mixed>>,
    ours: &[stacksym::symbolize::MergedThread],
) -> usize {
    use stacksym::python::MixedFrame;
    let mut compared = 0;
    for (tid, their_frames) in theirs {
        let thread = ours
            .iter()
            .find(|thread| thread.os_tid == *tid)
            .unwrap_or_else(|| panic!("{label}: thread {tid}: no merged stack"));
        let mine: Vec<Mixed> = thread
            .frames
            .iter()
            .map(|frame| match frame {
                MixedFrame::Python(py) => {
                    let name = py.function.rsplit('.').next().unwrap_or(&py.function);
                    Mixed::Python(name.to_string(), basename(&py.file), py.line.unwrap_or(0))
                }
                MixedFrame::Native(native) => {
                    Mixed::Native(native.function.clone().unwrap_or_default())
                }
            })
            .collect();
        assert!(
            matches!(mine.last(), Some(Mixed::Native(_))),
            "{label}: thread {tid}: Python frames left over past the native stack: {mine:?}"
        );
        let natives = |frames: &[Mixed]| -> Vec<String> {
            frames
                .iter()
                .filter_map(|f| match f {
                    Mixed::Native(name) => Some(name.clone()),
                    Mixed::Python(..) => None,
                })
                .collect()
        };
        let (theirs_native, mine_native) = (natives(their_frames), natives(&mine));
        let keep = |frames: &[Mixed], other: &[String]| -> Vec<Mixed> {
            frames
                .iter()
                .filter(|f| match f {
                    Mixed::Native(name) => other.contains(name),
                    Mixed::Python(..) => true,
                })
                .cloned()
                .collect()
        };
        let (a, b) = (
            keep(their_frames, &mine_native),
            keep(&mine, &theirs_native),
        );
        assert_eq!(
            a, b,
            "{label}: thread {tid}: merged stacks differ (pystack, ours)"
        );
        compared += a.iter().filter(|f| matches!(f, Mixed::Native(_))).count();
    }
    compared
}

#[test]
fn core_python_frames_agree_with_pystack() {
    let test = "core_python_frames_agree_with_pystack";
    let Some(pystack) = find_tool("pystack") else {
        return skip_or_fail(test, "pystack not found; pip install pystack");
    };
    let Some(gcore) = find_tool("gcore") else {
        return skip_or_fail(test, "gcore not found; apt-get install gdb");
    };
    let dir = tempfile::tempdir().expect("tempdir");
    for (label, python) in interpreters(test) {
        let parked = Parked::start(&python);
        let core_path = gcore_of(&gcore, parked.pid(), dir.path());
        drop(parked);
        let core =
            stacksym::core::CoreFile::open(&core_path).unwrap_or_else(|e| panic!("{label}: {e}"));
        let stacks = PythonStacks::from_core(&core).unwrap_or_else(|e| panic!("{label}: {e}"));
        let merged = Symbolizer::builder()
            .build()
            .python_merged_core(&core, &stacks)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let mine: BTreeMap<u32, Frames> = ours(&stacks, true)
            .into_iter()
            .map(|((_, tid), frames)| {
                let frames = frames
                    .into_iter()
                    .map(|(function, file, line)| {
                        let name = function.rsplit('.').next().unwrap_or(&function).to_string();
                        (name, file, line)
                    })
                    .collect();
                (tid.expect("an OS thread id"), frames)
            })
            .collect();
        let theirs_merged = pystack_core(&pystack, &core_path);
        drop(core);
        let _ = std::fs::remove_file(&core_path);
        let theirs: BTreeMap<ThreadKey, Frames> = theirs_merged
            .iter()
            .map(|(tid, frames)| ((0, Some(*tid)), python_only(frames)))
            .collect();
        let mine = mine
            .into_iter()
            .map(|(tid, f)| ((0, Some(tid)), f))
            .collect();
        let (threads, frames) = assert_same(&label, "pystack", &theirs, &mine);
        let natives = assert_merged_like_pystack(&label, &theirs_merged, &merged);
        writeln_stderr(format_args!(
            "{label}: CPython {} core: {threads} threads, {frames} Python frames identical \
             to pystack's; merged with native frames as pystack places them ({natives} \
             native frames both name)",
            stacks.version
        ));
    }
}

/// The registers of the stopped thread `tid`, read with ptrace (`PTRACE_SEIZE`,
/// `PTRACE_INTERRUPT`, `PTRACE_GETREGS`), the thread detached again after.
#[cfg(target_arch = "x86_64")]
fn thread_regs(tid: u32) -> stacksym::unwind::RegsX86_64 {
    let tid = tid as libc::pid_t;
    // user_regs_struct on x86_64 is 27 u64 words, in the order from_user_regs takes.
    let mut words = [0u64; 27];
    // SAFETY: ptrace and waitpid on a thread of our own stopped child; PTRACE_GETREGS
    // writes one user_regs_struct (27 words) into `words`, which is that large.
    unsafe {
        assert_eq!(
            libc::ptrace(libc::PTRACE_SEIZE, tid, 0, 0),
            0,
            "PTRACE_SEIZE {tid}"
        );
        assert_eq!(
            libc::ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0),
            0,
            "PTRACE_INTERRUPT"
        );
        let mut status = 0;
        assert_eq!(
            libc::waitpid(tid, &mut status, libc::__WALL),
            tid,
            "waitpid {tid}"
        );
        let got = libc::ptrace(libc::PTRACE_GETREGS, tid, 0, words.as_mut_ptr());
        libc::ptrace(libc::PTRACE_DETACH, tid, 0, 0);
        assert_eq!(got, 0, "PTRACE_GETREGS {tid}");
    }
    stacksym::unwind::RegsX86_64::from_user_regs(&words)
}

/// A merged stack as compared: Python frames whole, native frames by function name.
fn mixed_of(
    frames: &[stacksym::python::MixedFrame<stacksym::symbolize::NativeFrame>],
) -> Vec<Mixed> {
    use stacksym::python::MixedFrame;
    frames
        .iter()
        .map(|frame| match frame {
            MixedFrame::Python(py) => Mixed::Python(
                py.function.clone(),
                basename(&py.file),
                py.line.unwrap_or(0),
            ),
            MixedFrame::Native(native) => {
                Mixed::Native(native.function.clone().unwrap_or_default())
            }
        })
        .collect()
}

/// `Symbolizer::python_merged_stack` on each stopped thread of the live program (its
/// registers from ptrace) gives the same merged stacks as `python_merged_core` on a `gcore`
/// of it (checked against pystack above): the live and the post-mortem paths agree, frame
/// for frame. One interpreter (3.12: frames through `cframe`, entries marked by shims).
#[cfg(target_arch = "x86_64")]
#[test]
fn live_merged_stacks_are_the_cores() {
    let test = "live_merged_stacks_are_the_cores";
    let Some(gcore) = find_tool("gcore") else {
        return skip_or_fail(test, "gcore not found; apt-get install gdb");
    };
    let Some((label, python)) = interpreters(test)
        .into_iter()
        .find(|(_, exe)| exe.ends_with("python3.12"))
    else {
        return skip_or_fail(test, "no CPython 3.12");
    };
    let parked = Parked::start(&python);
    let process = Process::new(parked.pid());
    let symbolizer = Symbolizer::builder().build();
    let stacks = symbolizer
        .python_stacks(&process)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let mut live = BTreeMap::new();
    for thread in &stacks.threads {
        let tid = thread.os_tid.expect("an OS thread id");
        let frames = thread.frames.as_ref().expect("frames");
        let merged = symbolizer
            .python_merged_stack(&process, &thread_regs(tid), frames)
            .unwrap_or_else(|e| panic!("{label}: thread {tid}: {e}"));
        live.insert(tid, mixed_of(&merged));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let core_path = gcore_of(&gcore, parked.pid(), dir.path());
    drop(parked);
    let core = stacksym::core::CoreFile::open(&core_path).expect("the core");
    let from_core = PythonStacks::from_core(&core).expect("Python frames of the core");
    let merged = symbolizer
        .python_merged_core(&core, &from_core)
        .expect("merged core stacks");
    let mut compared = 0;
    for (tid, frames) in &live {
        let theirs = merged
            .iter()
            .find(|thread| thread.os_tid == *tid)
            .unwrap_or_else(|| panic!("thread {tid}: not in the core"));
        assert_eq!(
            frames,
            &mixed_of(&theirs.frames),
            "{label}: thread {tid}: live, core"
        );
        assert!(
            frames.iter().any(|f| matches!(f, Mixed::Python(..)))
                && frames.iter().any(|f| matches!(f, Mixed::Native(_))),
            "{label}: thread {tid}: a merged stack has both kinds: {frames:?}"
        );
        compared += frames.len();
    }
    assert_eq!(live.len(), 9, "{label}: threads");
    writeln_stderr(format_args!(
        "{label}: {} threads, {compared} merged frames: live (ptrace) and core the same",
        live.len()
    ));
}

/// `python_stacks` on a process without CPython (c-wait, which maps itself, a library of
/// its own, libc and the dynamic loader) says so without reading the libraries: only the
/// executable is opened (the files named like CPython's come first, and there are none),
/// and the error is NotFound, naming what was looked for.
#[test]
fn non_python_process_is_told_from_its_executable_alone() {
    let waiter = support::waiter::Waiter::spawn(&support::bin("c-wait"));
    let symbolizer = Symbolizer::builder().build();
    let error = symbolizer
        .python_stacks(&Process::new(waiter.pid))
        .expect_err("c-wait runs no CPython");
    assert_eq!(error.kind(), stacksym::ErrorKind::NotFound, "{error}");
    let message = error.to_string();
    assert!(
        message.contains("_PyRuntime") && message.contains("not a CPython process"),
        "{message}"
    );
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", waiter.pid)).expect("maps");
    assert!(
        maps.contains("libversioned.so") && maps.contains("libc.so"),
        "c-wait maps its libraries:\n{maps}"
    );
    assert_eq!(
        symbolizer.stats().open_files,
        1,
        "only the executable is opened: {message}"
    );
}
