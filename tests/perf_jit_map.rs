//! `perf_unwind` names the frames of JIT code through the process's perf map
//! (`/tmp/perf-PID.map`) after the process has exited, as `perf script` and `perf report` do.
//!
//! The program: testdata/unwind/jit-perfmap (testdata/src/unwind/jit-perfmap.c, built by
//! build-unwind.sh), a tiny JIT: two functions of machine code in anonymous executable memory
//! (`jit_outer` calls `jit_inner`, which spins; both keep frame pointers), named in
//! `/tmp/perf-PID.map` (one name with spaces, `jit_inner [tier 1]`), called for 200 ms; then it
//! exits and the map stays. It runs under `perf record -e cpu-clock:u --call-graph fp` (user
//! frames only: the kernel's are not the subject, and kallsyms then is not read), so the
//! kernel's frame-pointer walk goes through both JIT frames into `main`. Once `perf record`
//! has returned the process is gone; then:
//! - `perf_unwind`'s default layout is `perf script`'s, byte for byte: the JIT frames at their
//!   addresses (perf maps anonymous memory to itself), `jit_inner [tier 1]+0xb
//!   (/tmp/perf-PID.map)`;
//! - `--report --children` and `--no-children` are `perf report --stdio -g none --sort
//!   comm,dso,sym`'s rows (perf's dso column for a perf map: `[JIT] tid PID`);
//! - with the map removed, both print the frames `[unknown] (/tmp/perf-PID.map)`.
//!
//! Needs perf and the right to profile (root, or `kernel.perf_event_paranoid` <= 1): skipped
//! with a note otherwise, a failure under CI. x86-64 only (the JIT writes x86-64 code).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::perf::{assert_same_samples, compare_reports, output};
use support::{find_tool, skip_or_fail, tool};

const TEST: &str = "perf_jit_map";

/// Removes the perf map the program left in /tmp, however the test ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn perf_unwind_names_jit_frames_of_an_exited_process_from_its_perf_map() {
    if !cfg!(target_arch = "x86_64") {
        return skip_or_fail(TEST, "the JIT writes x86-64 code");
    }
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(TEST, "perf not found (apt-get install linux-perf)");
    };
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/unwind/jit-perfmap");
    let dir = tempfile::tempdir().expect("a temporary dir");
    let data = dir.path().join("jit.data");
    let recorded = Command::new(&perf)
        .args(["record", "-q", "--no-buildid-cache", "-e", "cpu-clock:u"])
        .args(["--call-graph", "fp", "-o"])
        .arg(&data)
        .arg(&program)
        .arg("200")
        .stderr(Stdio::piped())
        .output()
        .expect("perf runs");
    // The program prints its map's path last.
    let stdout = String::from_utf8_lossy(&recorded.stdout);
    let map = stdout
        .lines()
        .find(|l| l.starts_with("/tmp/perf-"))
        .map(PathBuf::from);
    let _remove = map.clone().map(RemoveOnDrop);
    if !recorded.status.success() || !data.is_file() {
        return skip_or_fail(
            TEST,
            &format!(
                "perf record failed (needs root or kernel.perf_event_paranoid <= 1): {}",
                String::from_utf8_lossy(&recorded.stderr).trim()
            ),
        );
    }
    let map = map.expect("jit-perfmap printed its perf map's path");
    let pid: u32 = map
        .to_str()
        .and_then(|p| {
            p.strip_prefix("/tmp/perf-")?
                .strip_suffix(".map")?
                .parse()
                .ok()
        })
        .expect("/tmp/perf-PID.map");
    assert!(map.is_file(), "{} is not there", map.display());
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} still runs: the test is about one that exited"
    );
    let example = || tool("perf");
    let perf_script = || output(Command::new(&perf).arg("script").arg("-i").arg(&data));
    let ours = || output(example().arg("-i").arg(&data));

    let theirs = perf_script();
    let dso = format!("({})", map.display());
    for frame in [
        format!("jit_inner [tier 1]+0xb {dso}"),
        format!("jit_outer+0x9 {dso}"),
    ] {
        assert!(theirs.contains(&frame), "perf script shows no {frame}?");
    }
    assert_same_samples(&format!("{TEST}: with the perf map"), &ours(), &theirs);
    let runs = [("--children", "0"), ("--no-children", "0")];
    for theirs in compare_reports(TEST, &perf, &data, &runs) {
        assert!(
            theirs
                .keys()
                .any(|(_, dso, sym)| dso.starts_with("[JIT] tid ")
                    && sym == "[.] jit_inner [tier 1]"),
            "perf report has no JIT row?"
        );
    }

    std::fs::remove_file(&map).expect("the map removed");
    let theirs = perf_script();
    assert!(
        theirs.contains(&format!("[unknown] {dso}")),
        "perf script shows no unnamed JIT frame?"
    );
    assert_same_samples(&format!("{TEST}: without the perf map"), &ours(), &theirs);
}
