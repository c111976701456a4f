//! Agreement with perf on CPython 3.13's `-X perf_jit`: the interpreter writes
//! `/tmp/jit-PID.dump`, a jitdump with one load per Python function it runs (a copy of its
//! trampoline, named `py::FUNCTION:FILE`) and the trampoline's unwind tables
//! (`JIT_CODE_UNWINDING_INFO`), and maps it, so that a recording's MMAP records name it.
//! `stacksym perf` on the raw recording (the trampolines named from the dump and unwound
//! with its tables) against `perf inject --jit` and then `perf script` on the injected
//! recording, `-F comm,tid,ip,sym,dso`, JIT frames by name (`support::perf::JitAgreement`).
//! CPython's own code keeps no frame pointers: DWARF call graphs, through libpython's CFI
//! and the trampolines' tables.
//!
//! The interpreter is pyenv's newest 3.13 (`/root/.pyenv/versions/3.13.*`, as tests/python.rs
//! finds it). perf inject writes its `jitted-PID-N.so` files next to the dump, in `/tmp`:
//! they and the dump are removed at the end, and perf's build-id cache is a temporary one
//! (`perf --buildid-dir`), so that nothing is left in `~/.debug` either.
//!
//! Needs perf, pyenv's CPython 3.13 and the right to profile: skipped with a note otherwise,
//! a failure under CI. x86-64 only.

mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use support::perf::{assert_jit_agreement, compare_jit_samples, inject_and_script, output};
use support::{find_tool, skip_or_fail, tool};

const TEST: &str = "perf_jit_python";

/// The layout compared: the issue's.
const FIELDS: &str = "comm,tid,ip,sym,dso";

/// pyenv's newest CPython 3.13.
fn python313() -> Option<PathBuf> {
    std::fs::read_dir("/root/.pyenv/versions")
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("3.13."))
        })
        .max()
        .map(|dir| dir.join("bin/python3.13"))
        .filter(|exe| exe.is_file())
}

/// Removes `/tmp/jit-PID.dump` and perf inject's `/tmp/jitted-PID-N.so` files of the
/// process, however the test ends.
struct RemoveJitFiles(Option<u32>);

impl Drop for RemoveJitFiles {
    fn drop(&mut self) {
        let Some(pid) = self.0 else {
            return;
        };
        let _ = std::fs::remove_file(format!("/tmp/jit-{pid}.dump"));
        let prefix = format!("jitted-{pid}-");
        for entry in std::fs::read_dir("/tmp").into_iter().flatten().flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(&prefix) && name.ends_with(".so") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

#[test]
fn raw_cpython_perf_jit_recording_agrees_with_perf_inject_and_perf_script() {
    if !cfg!(target_arch = "x86_64") {
        return skip_or_fail(TEST, "x86-64 only");
    }
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(TEST, "perf not found (apt-get install linux-perf)");
    };
    let Some(python) = python313() else {
        return skip_or_fail(TEST, "no pyenv CPython 3.13 in /root/.pyenv/versions");
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    let script = dir.path().join("app.py");
    // 0.3 s of the process's CPU time, not of the clock's: on a loaded machine a wall-clock
    // loop got 76 samples (638 JIT frames) where the test wants 1000 JIT frames.
    std::fs::write(
        &script,
        "import os, time\n\
         def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\
         def main():\n    t = time.process_time()\n    s = 0\n\
         \x20   while time.process_time() - t < 0.3:\n        s += fib(15)\n\
         \x20   print(os.getpid())\n\
         main()\n",
    )
    .unwrap();
    let data = dir.path().join("perf.data");
    let recorded = Command::new(&perf)
        .args(["record", "-q", "--no-buildid-cache", "-k", "1", "-F", "999"])
        .args(["-e", "cpu-clock:u", "--call-graph", "dwarf", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&python)
        .args(["-X", "perf_jit"])
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("perf runs");
    let pid: Option<u32> = String::from_utf8_lossy(&recorded.stdout)
        .trim()
        .parse()
        .ok();
    let _remove = RemoveJitFiles(pid);
    if !recorded.status.success() || !data.is_file() {
        return skip_or_fail(
            TEST,
            &format!(
                "perf record failed (needs root or kernel.perf_event_paranoid <= 1): {}",
                String::from_utf8_lossy(&recorded.stderr).trim()
            ),
        );
    }
    let pid = pid.expect("the program printed its pid");
    let dump = PathBuf::from(format!("/tmp/jit-{pid}.dump"));
    assert!(dump.is_file(), "CPython wrote no {}", dump.display());
    let theirs = inject_and_script(&perf, dir.path(), &data, FIELDS);
    let ours = output(
        tool("perf")
            .args(["--no-inline", "-F", FIELDS, "-i"])
            .arg(&data),
    );
    let fib = format!("py::fib:{}", script.display());
    assert!(
        theirs.contains(&format!("{fib} (/tmp/jitted-{pid}-")),
        "perf script after inject names no {fib}: {}",
        theirs.lines().take(40).collect::<Vec<_>>().join("\n")
    );
    // The walks reach the interpreter's main through the trampolines.
    let through = ours
        .split("\n\n")
        .filter(|s| s.contains(&fib) && s.contains(" Py_BytesMain ("))
        .count();
    let agreement = compare_jit_samples(TEST, &ours, &theirs);
    support::writeln_stderr(format_args!(
        "{TEST}: {}: {through} samples walk from {fib} to Py_BytesMain",
        python.display(),
    ));
    assert!(agreement.jit_frames >= 1000, "{agreement:?}");
    assert!(through >= 50, "{through} samples from fib to Py_BytesMain");
    assert_jit_agreement(&agreement, 99.0);
}
