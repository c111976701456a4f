//! Agreement with perf on a JVM: Java 17 with `-XX:+PreserveFramePointer` (the JIT's code
//! keeps rbp chains) and `-XX:+DumpPerfMapAtExit` (HotSpot writes `/tmp/perf-PID.map` as it
//! exits: names only, no jitdump), recorded with `--call-graph fp`, so that the kernel walks
//! the frames at sample time through the interpreter, the compiled code and libjvm.
//! `stacksym perf` against `perf script` on the same recording, `-F comm,tid,ip,sym,dso`:
//! both name the JIT frames from the map (`int Fib.fib(int) (/tmp/perf-PID.map)`), and
//! libjvm's C++ names as perf spells them (its thunks, `non-virtual thunk to
//! LIRGenerator::block_do(BlockBegin*)`, were the samples that differed before: the cli's
//! `perf::spelling`), so at least 99.5 % of the samples must be identical (issue 35's
//! target; 100 % in three runs of 176-300 samples).
//!
//! Why frame pointers and not DWARF: with `--call-graph dwarf` perf's libunwind stops at the
//! first frame in the JIT's anonymous memory (it finds no unwind tables for the perf map's
//! "file" and does not fall back to the frame pointer there), 201 of 254 samples of such a
//! run ended there, where the unwinder goes on by frame pointer to `clone3`.
//!
//! Needs java and javac 17+, perf and the right to profile: skipped with a note otherwise,
//! a failure under CI. x86-64 only.

mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use support::perf::{assert_jit_agreement, compare_jit_samples, output};
use support::{find_tool, skip_or_fail, tool};

const TEST: &str = "perf_jit_java";

/// The layout compared: the issue's.
const FIELDS: &str = "comm,tid,ip,sym,dso";

/// Removes the JVM's perf map, however the test ends.
struct RemoveOnDrop(Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[test]
fn java_perf_map_frames_agree_with_perf_script() {
    if !cfg!(target_arch = "x86_64") {
        return skip_or_fail(TEST, "x86-64 only");
    }
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(TEST, "perf not found (apt-get install linux-perf)");
    };
    let (Some(java), Some(javac)) = (find_tool("java"), find_tool("javac")) else {
        return skip_or_fail(
            TEST,
            "java or javac not found (apt-get install openjdk-17-jdk-headless)",
        );
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    // 300 ms of the main thread's CPU time, not of the clock's, so that a loaded machine
    // still gives the samples the test counts on.
    std::fs::write(
        dir.path().join("Fib.java"),
        "public class Fib {\n\
         \x20   static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n\
         \x20   public static void main(String[] args) {\n\
         \x20       java.lang.management.ThreadMXBean cpu =\n\
         \x20           java.lang.management.ManagementFactory.getThreadMXBean();\n\
         \x20       long t = cpu.getCurrentThreadCpuTime(), s = 0;\n\
         \x20       while (cpu.getCurrentThreadCpuTime() - t < 300_000_000L) { s += fib(20); }\n\
         \x20       System.out.println(ProcessHandle.current().pid() + \" \" + (s > 0));\n\
         \x20   }\n\
         }\n",
    )
    .unwrap();
    output(Command::new(&javac).arg("Fib.java").current_dir(dir.path()));
    let data = dir.path().join("perf.data");
    let recorded = Command::new(&perf)
        .args(["record", "-q", "--no-buildid-cache", "-F", "999"])
        .args(["-e", "cpu-clock:u", "--call-graph", "fp", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&java)
        .args([
            "-XX:+PreserveFramePointer",
            "-XX:+UnlockDiagnosticVMOptions",
            "-XX:+DumpPerfMapAtExit",
            "-cp",
            ".",
            "Fib",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("perf runs");
    let stdout = String::from_utf8_lossy(&recorded.stdout);
    let pid: Option<u32> = stdout
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok());
    let map = pid.map(|pid| PathBuf::from(format!("/tmp/perf-{pid}.map")));
    let _remove = RemoveOnDrop(map.clone());
    if !recorded.status.success() || !data.is_file() {
        return skip_or_fail(
            TEST,
            &format!(
                "perf record failed (needs root or kernel.perf_event_paranoid <= 1): {}",
                String::from_utf8_lossy(&recorded.stderr).trim()
            ),
        );
    }
    let map = map.expect("the program printed its pid");
    assert!(map.is_file(), "the JVM wrote no {}", map.display());
    let theirs = output(
        Command::new(&perf)
            .args(["script", "-F", FIELDS, "-i"])
            .arg(&data),
    );
    let ours = output(tool("perf").args(["-F", FIELDS, "-i"]).arg(&data));
    let fib = format!("int Fib.fib(int) ({})", map.display());
    let named = |text: &str| text.lines().filter(|l| l.ends_with(&fib)).count();
    let (fibs, perf_fibs) = (named(&ours), named(&theirs));
    // Walks from compiled Java code into the JVM's C++ and on to the thread's start.
    let through = ours
        .split("\n\n")
        .filter(|s| s.contains(&fib) && s.contains(" JavaMain ("))
        .count();
    let agreement = compare_jit_samples(TEST, &ours, &theirs);
    support::writeln_stderr(format_args!(
        "{TEST}: {fibs} frames of {fib} (perf: {perf_fibs}); {through} samples walk from \
         Fib.fib to JavaMain"
    ));
    assert!(fibs >= 100, "{fibs} frames of Fib.fib");
    assert!(through >= 10, "{through} samples from Fib.fib to JavaMain");
    assert_jit_agreement(&agreement, 99.5);
    // No spelling set apart either: identical byte for byte.
    assert!(
        agreement.identical_percent() >= 99.5,
        "{:.2} % of the samples identical",
        agreement.identical_percent()
    );
}
