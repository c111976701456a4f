//! `stacksym perf` on a raw recording of Node (no `perf inject --jit`): the frames in V8's
//! anonymous JIT memory are named from the `jit-PID.dump` the recording's MMAP records name
//! (src/perf/jit.rs), as `perf script` names them after `perf inject --jit`. The reference is
//! the same dump read by tests/support's independent reader (`jitdump_loads`): every JIT
//! frame printed must carry the name of the last load covering its address, and the
//! optimized `fib` of the script must be among them. (perf script on the injected recording
//! is not run here: on 2,500 generated ELF files it takes minutes.)
//!
//! Needs node, perf and the right to profile (root, or `kernel.perf_event_paranoid` <= 1):
//! skipped with a note otherwise, a failure under CI. x86-64 only.

mod support;

use std::process::{Command, Stdio};

use support::{find_tool, skip_or_fail, tool};

const TEST: &str = "perf_jitdump";

#[test]
fn raw_node_recording_names_jit_frames_from_the_jitdump() {
    if !cfg!(target_arch = "x86_64") {
        return skip_or_fail(TEST, "x86-64 only");
    }
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(TEST, "perf not found (apt-get install linux-perf)");
    };
    if Command::new("node").arg("--version").output().is_err() {
        return skip_or_fail(TEST, "node not found (apt-get install nodejs)");
    }
    let dir = tempfile::tempdir().expect("a temporary dir");
    std::fs::write(
        dir.path().join("app.js"),
        "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n\
         let t = Date.now(); let s = 0; while (Date.now() - t < 500) s += fib(20);\n\
         console.log(s > 0);\n",
    )
    .unwrap();
    let data = dir.path().join("perf.data");
    // -k 1: V8 stamps its records with CLOCK_MONOTONIC; the frame pointers V8 keeps let the
    // kernel walk the JIT frames (fp: a small recording).
    let recorded = Command::new(&perf)
        .args([
            "record",
            "-q",
            "--no-buildid-cache",
            "-k",
            "1",
            "-e",
            "cpu-clock:u",
        ])
        .args(["--call-graph", "fp", "-o"])
        .arg(&data)
        .args([
            "node",
            "--perf-prof",
            "--interpreted-frames-native-stack",
            "app.js",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("perf runs");
    if !recorded.status.success() || !data.is_file() {
        return skip_or_fail(
            TEST,
            &format!(
                "perf record failed (needs root or kernel.perf_event_paranoid <= 1): {}",
                String::from_utf8_lossy(&recorded.stderr).trim()
            ),
        );
    }
    let dump = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("jit-"))
        })
        .expect("node wrote jit-PID.dump");
    let loads = support::jitdump_loads(&std::fs::read(&dump).unwrap());
    let out = tool("perf")
        .arg("-i")
        .arg(&data)
        .args(["-F", "ip,sym,dso"])
        .output()
        .expect("stacksym perf runs");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut named, mut fib) = (0, 0);
    for line in text.lines() {
        // `\t    7f0a1b2c3d4e JS:*fib /tmp/x/app.js:1:13 (/tmp/perf-123.map)`
        let Some((frame, dso)) = line.trim().rsplit_once(" (") else {
            continue;
        };
        if !dso.starts_with("/tmp/perf-") {
            continue;
        }
        let (ip, sym) = frame.split_once(' ').expect("ip and sym");
        let ip = u64::from_str_radix(ip, 16).expect("hex ip");
        let want = support::jitdump_name_at(&loads, ip).unwrap_or("[unknown]");
        assert_eq!(sym, want, "{line}");
        if sym != "[unknown]" {
            named += 1;
        }
        fib += usize::from(sym.starts_with("JS:*fib "));
    }
    support::writeln_stderr(format_args!(
        "{TEST}: {named} JIT frames named as the dump names them ({fib} of optimized fib)"
    ));
    assert!(fib > 100, "{fib} frames of the optimized fib");
}
