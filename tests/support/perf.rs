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

/// How `stacksym perf` on a raw recording of a JIT (no `perf inject --jit`) agrees with
/// `perf script` on the injected one, sample by sample ([`compare_jit_samples`]).
#[derive(Debug, Default)]
pub struct JitAgreement {
    /// Samples in perf's output (blank-line separated blocks).
    pub samples: usize,
    /// Samples identical line for line, a JIT frame by its name only (see below).
    pub identical: usize,
    /// Frames of JIT code compared (named in a `jitted-PID-N.so` by perf).
    pub jit_frames: usize,
    /// Samples that differ only in the names of non-JIT frames at the same address in the
    /// same file: the demangler's spelling of C++ templates and lambdas (issue 37; e.g. ours
    /// `int f<T>`, perf's `f<T>`), not a question of JIT code.
    pub spelling: Vec<usize>,
    /// Samples where ours has one frame more, right after the leaf, and is otherwise
    /// identical: a leaf in the first instructions of code without CFI (a V8 builtin,
    /// bytecode handler or baseline stub), where perf's frame-pointer fallback (libunwind's)
    /// reads the caller's frame pointer and skips the caller, and the unwinder reads the
    /// return address where the prologue left it (src/unwind/prologue.rs).
    pub caller_at_entry: Vec<usize>,
    /// Samples where perf stops at a frame in the vDSO it names `[unknown]` and ours names it
    /// and goes on, otherwise identical: perf had no copy of the vDSO (it keeps the one it saw
    /// in its build-id cache, and the tests record with `--no-buildid-cache` and give perf an
    /// empty cache of their own); ours reads this machine's.
    pub vdso_unread: Vec<usize>,
    /// Any other difference.
    pub other: Vec<usize>,
}

impl JitAgreement {
    /// The share of identical samples, in percent.
    pub fn identical_percent(&self) -> f64 {
        100.0 * self.identical as f64 / self.samples.max(1) as f64
    }

    /// The share of samples identical or differing in C++ spelling only, in percent.
    pub fn identical_but_spelling_percent(&self) -> f64 {
        100.0 * (self.identical + self.spelling.len()) as f64 / self.samples.max(1) as f64
    }
}

/// One line of `-F ...,ip,sym,dso` output: the indentation and address, the name, the dso.
fn frame_fields(line: &str) -> Option<(&str, &str, &str)> {
    let start = line.len() - line.trim_start().len();
    let (addr, rest) = line[start..].split_once(' ')?;
    let (name, dso) = rest.rsplit_once(" (")?;
    Some((&line[..start + addr.len()], name, dso.strip_suffix(')')?))
}

/// Whether `dso` is a file `perf inject --jit` wrote (`.../jitted-PID-N.so`).
fn is_jitted_so(dso: &str) -> bool {
    let name = dso.rsplit('/').next().unwrap_or(dso);
    name.strip_prefix("jitted-")
        .and_then(|rest| rest.strip_suffix(".so"))
        .is_some_and(|rest| {
            rest.split_once('-').is_some_and(|(pid, n)| {
                [pid, n]
                    .iter()
                    .all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            })
        })
}

/// How a line of ours matches perf's: `Some(false)` the same frame, `Some(true)` the same
/// frame spelled otherwise (a non-JIT frame at the same address in the same file under
/// another name), `None` another frame. A frame perf names in a `jitted-PID-N.so` is the
/// same when ours has its name in the process's perf map (`/tmp/perf-PID.map`): the address
/// and the dso of a JIT frame differ by design (perf prints the address in the generated
/// file, ours the process's; README, "JIT code").
fn same_frame(ours: &str, theirs: &str, jit_frames: &mut usize) -> Option<bool> {
    if ours == theirs {
        return Some(false);
    }
    let ((oa, on, od), (ta, tn, td)) = (frame_fields(ours)?, frame_fields(theirs)?);
    if is_jitted_so(td) {
        *jit_frames += 1;
        let perf_map = od.starts_with("/tmp/perf-") && od.ends_with(".map");
        return (on == tn && perf_map).then_some(false);
    }
    (oa == ta && od == td && !is_jitted_so(od)).then_some(true)
}

/// Whether two samples' lines are the same frames; the second value: some only spelled
/// otherwise ([`same_frame`]).
fn same_frames(ours: &[&str], theirs: &[&str], jit_frames: &mut usize) -> Option<bool> {
    if ours.len() != theirs.len() {
        return None;
    }
    let mut spelled = false;
    for (o, t) in ours.iter().zip(theirs) {
        spelled |= same_frame(o, t, jit_frames)?;
    }
    Some(spelled)
}

/// `stacksym perf` on a raw recording of a JIT against `perf script` on the recording
/// `perf inject --jit` made of it, both in the same `-F` layout, sample by sample; prints
/// the counts and the first samples of each kind of difference.
pub fn compare_jit_samples(what: &str, ours: &str, theirs: &str) -> JitAgreement {
    let blocks = |text: &str| -> Vec<Vec<String>> {
        text.split("\n\n")
            .filter(|b| !b.trim().is_empty())
            .map(|b| b.lines().map(str::to_string).collect())
            .collect()
    };
    let (a, b) = (blocks(ours), blocks(theirs));
    let mut agreement = JitAgreement {
        samples: b.len(),
        ..JitAgreement::default()
    };
    for i in 0..a.len().max(b.len()) {
        let (Some(o), Some(t)) = (a.get(i), b.get(i)) else {
            agreement.other.push(i);
            continue;
        };
        let o: Vec<&str> = o.iter().map(String::as_str).collect();
        let t: Vec<&str> = t.iter().map(String::as_str).collect();
        let mut jit = 0;
        match same_frames(&o, &t, &mut jit) {
            Some(false) => {
                agreement.identical += 1;
                agreement.jit_frames += jit;
                continue;
            }
            Some(true) => {
                agreement.spelling.push(i);
                agreement.jit_frames += jit;
                continue;
            }
            None => {}
        }
        let mut scratch = 0;
        // The leaf is the first frame line after the header that is not the kernel's.
        let leaf = t
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, l)| frame_fields(l).is_some_and(|(_, _, dso)| dso != "[kernel.kallsyms]"))
            .map(|(k, _)| k);
        let without = |k: usize| -> Vec<&str> {
            o.iter()
                .enumerate()
                .filter(|&(j, _)| j != k)
                .map(|(_, l)| *l)
                .collect()
        };
        if o.len() == t.len() + 1
            && leaf.is_some_and(|k| same_frames(&without(k + 1), &t, &mut scratch).is_some())
        {
            agreement.caller_at_entry.push(i);
            continue;
        }
        let vdso_end = t
            .last()
            .and_then(|l| frame_fields(l))
            .and_then(|(ta, tn, td)| {
                let (oa, _, od) = frame_fields(o.get(t.len() - 1)?)?;
                (tn == "[unknown]" && td == "[vdso]" && oa == ta && od == td).then_some(())
            });
        if vdso_end.is_some()
            && o.len() > t.len()
            && same_frames(&o[..t.len() - 1], &t[..t.len() - 1], &mut scratch).is_some()
        {
            agreement.vdso_unread.push(i);
            continue;
        }
        agreement.other.push(i);
    }
    writeln_stderr(format_args!(
        "{what}: {} samples (ours {}): {} identical ({:.2} %), JIT frames by name ({} of them); \
         {} differ in C++ spelling only (issue 37), {:.2} % identical with them; \
         {} where ours has one frame more after a leaf at the entry of code without CFI; \
         {} where perf had no copy of the vDSO; {} differ otherwise",
        agreement.samples,
        a.len(),
        agreement.identical,
        agreement.identical_percent(),
        agreement.jit_frames,
        agreement.spelling.len(),
        agreement.identical_but_spelling_percent(),
        agreement.caller_at_entry.len(),
        agreement.vdso_unread.len(),
        agreement.other.len(),
    ));
    let kinds = [
        ("C++ spelling", &agreement.spelling, 2),
        ("a frame more after the leaf", &agreement.caller_at_entry, 3),
        ("perf without the vDSO", &agreement.vdso_unread, 1),
        ("other", &agreement.other, 10),
    ];
    for (kind, samples, shown) in kinds {
        for &i in samples.iter().take(shown) {
            let (o, t) = (a.get(i).map(Vec::as_slice), b.get(i).map(Vec::as_slice));
            writeln_stderr(format_args!("--- sample {i} ({kind}):"));
            let (o, t) = (o.unwrap_or_default(), t.unwrap_or_default());
            let lines = (0..o.len().max(t.len())).filter_map(|k| {
                let x = o.get(k).map_or("(none)", String::as_str);
                let y = t.get(k).map_or("(none)", String::as_str);
                let differ = same_frame(x, y, &mut 0).is_none_or(|spelled| spelled);
                differ.then(|| format!("  {k} ours: {}\n  {k} perf: {}", x.trim(), y.trim()))
            });
            for line in lines.take(4) {
                writeln_stderr(format_args!("{line}"));
            }
        }
    }
    agreement
}

/// The assertions every JIT agreement test makes on [`compare_jit_samples`]'s counts: at
/// least 100 samples, at least `min_percent` of them identical or differing in C++
/// spelling only, and no more than 0.5 % differing in any other way (issue 35's bound).
pub fn assert_jit_agreement(agreement: &JitAgreement, min_percent: f64) {
    assert!(agreement.samples >= 100, "{agreement:?}");
    assert!(
        agreement.identical_but_spelling_percent() >= min_percent,
        "{:.2} % of the samples identical but for C++ spelling (at least {min_percent} % \
         asked): {agreement:?}",
        agreement.identical_but_spelling_percent()
    );
    assert!(
        agreement.other.len() * 200 <= agreement.samples,
        "{} of {} samples differ otherwise: {:?}",
        agreement.other.len(),
        agreement.samples,
        agreement.other
    );
}

/// What a perf user runs on a recording of a JIT: `perf inject --jit` on `data` (into
/// `dir/perf.jit.data`, in `dir`), then `perf script --no-inline -F fields` on the injected
/// file; perf script's output. Both with a build-id cache of their own in `dir`: inject and
/// script would add each file inject writes (thousands for Node) to ~/.debug.
pub fn inject_and_script(perf: &Path, dir: &Path, data: &Path, fields: &str) -> String {
    let cache = dir.join("buildid-cache");
    std::fs::create_dir_all(&cache).expect("the build-id cache dir");
    let injected = dir.join("perf.jit.data");
    output(
        Command::new(perf)
            .arg("--buildid-dir")
            .arg(&cache)
            .args(["inject", "--jit", "-i"])
            .arg(data)
            .arg("-o")
            .arg(&injected)
            .current_dir(dir),
    );
    output(
        Command::new(perf)
            .arg("--buildid-dir")
            .arg(&cache)
            .args(["script", "--no-inline", "-F", fields, "-i"])
            .arg(&injected)
            .current_dir(dir),
    )
}
