//! Shared by the tests that run perf beside the `perf_unwind` example: running a command for
//! its output, byte comparisons sample by sample, and `perf report`'s table row by row.

use std::path::Path;
use std::process::Command;

use super::{perf_report_rows, tool, writeln_stderr};

/// The command's standard output; fails the test (with its stderr) when it does not succeed.
pub fn output(command: &mut Command) -> String {
    let out = command.output().expect("runs");
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `perf record ARGS -o DIR/perf.data PROGRAM PROGRAM_ARGS` (standard output
/// dropped) in a new temporary dir; `None`, after `skip_or_fail`, when perf cannot record
/// (no permission to profile). The dir lives as long as the returned handle.
pub fn record(
    test: &str,
    perf: &Path,
    args: &[&str],
    program: &Path,
    program_args: &[&str],
) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    let dir = tempfile::tempdir().expect("a temporary dir");
    let data = dir.path().join("perf.data");
    let recorded = Command::new(perf)
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(&data)
        .arg(program)
        .args(program_args)
        .stdout(std::process::Stdio::null())
        .output()
        .expect("perf runs");
    if !recorded.status.success() || !data.is_file() {
        super::skip_or_fail(
            test,
            &format!(
                "perf record failed (needs root or kernel.perf_event_paranoid <= 1): {}",
                String::from_utf8_lossy(&recorded.stderr).trim()
            ),
        );
        return None;
    }
    Some((dir, data))
}

/// Asserts `ours` is `theirs` byte for byte; prints how many samples (blank-line separated
/// blocks) differ and, on a difference, the first few of them side by side.
pub fn assert_same_samples(what: &str, ours: &str, theirs: &str) {
    let (a, b): (Vec<&str>, Vec<&str>) =
        (ours.split("\n\n").collect(), theirs.split("\n\n").collect());
    let differing: Vec<usize> = (0..a.len().max(b.len()))
        .filter(|&i| a.get(i) != b.get(i))
        .collect();
    writeln_stderr(format_args!(
        "{what}: {} samples, perf {}; {} differ; {} bytes, perf {}",
        a.len(),
        b.len(),
        differing.len(),
        ours.len(),
        theirs.len()
    ));
    for &i in differing.iter().take(3) {
        writeln_stderr(format_args!(
            "--- sample {i}, ours:\n{}\n--- perf's:\n{}",
            a.get(i).unwrap_or(&"(none)"),
            b.get(i).unwrap_or(&"(none)")
        ));
    }
    assert!(ours == theirs, "{what}: not perf's bytes");
}

/// `perf_unwind --report` against `perf report --stdio -g none --sort comm,dso,sym` on
/// `data`, once per (`--children` or `--no-children`, `--percent-limit`) of `runs`: the same
/// rows, every percentage equal to 0.01 %. Returns perf's rows of each run.
pub fn compare_reports(
    test: &str,
    perf: &Path,
    data: &Path,
    runs: &[(&str, &str)],
) -> Vec<std::collections::BTreeMap<(String, String, String), Vec<f64>>> {
    let example = || tool("perf");
    let mut perfs = Vec::new();
    for &(children, limit) in runs {
        let theirs = output(
            Command::new(perf)
                .args(["report", "--stdio", children, "-g", "none"])
                .args(["--sort", "comm,dso,sym", "--percent-limit", limit, "-i"])
                .arg(data),
        );
        let ours = output(
            example()
                .args(["--report", children, "--sort", "comm,dso,sym"])
                .args(["--percent-limit", limit, "-i"])
                .arg(data),
        );
        let (ours, theirs) = (perf_report_rows(&ours), perf_report_rows(&theirs));
        writeln_stderr(format_args!(
            "{test}: report {children} --percent-limit {limit}: {} rows, perf {}",
            ours.len(),
            theirs.len()
        ));
        let mut bad = Vec::new();
        for key in theirs.keys().chain(ours.keys()) {
            let (a, b) = (ours.get(key), theirs.get(key));
            let same = match (a, b) {
                (Some(a), Some(b)) => {
                    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 0.01001)
                }
                _ => false,
            };
            if !same {
                bad.push(format!("{key:?}: ours {a:?}, perf's {b:?}"));
            }
        }
        bad.dedup();
        for line in bad.iter().take(10) {
            writeln_stderr(format_args!("    {line}"));
        }
        assert!(
            bad.is_empty(),
            "report {children} --percent-limit {limit}: {} rows differ",
            bad.len()
        );
        perfs.push(theirs);
    }
    perfs
}
