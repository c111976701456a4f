//! The `perf_unwind` example prints what `perf script` prints, byte for byte, on the committed
//! recording `testdata/recordings/perf-nofp.data.zst` (testdata/record-unwind.sh:
//! `unwind-demo-nofp` — no frame pointers, a deep chain, recursion, a shared library, qsort's
//! callback with glibc's inlined `msort_with_tmp`, a signal handler, two threads — recorded
//! for 300 ms with `perf record -e cpu-clock --call-graph dwarf,16384`, ~1,160 samples):
//! - the default layout (header `comm tid time: period event:`, callchain lines
//!   `addr name+0xoff (dso)`, inlined functions as `addr name+0xoff (inlined)` lines before
//!   the frame that holds them, perf's `[unknown]`), against `perf script`;
//! - `--no-inline`, against `perf script --no-inline`;
//! - `-F +srcline` (the default and a `  file:line` line per frame) against
//!   `perf script -F +srcline`: the same lines but for srclines perf took from binutils
//!   addr2line's symbol-table fallback (a frame without DWARF lines, where addr2line prints
//!   the `STT_FILE` name before the symbol and line `?`, perf `unwind-demo.c:0`), which are
//!   counted, as are srclines where perf (binutils) names the compilation unit's file and
//!   the line table (llvm-symbolizer, us) an included one, at the same line;
//! - `-F comm,tid,pid,time,ip,sym,dso,symoff` against the same `perf script -F`.
//!
//! The program runs from /tmp/stacksym-unwind-bench/ in the recording; the test puts the
//! two files back there, as benches/unwind.rs does. libc and ld.so are this machine's (the
//! recording's MMAP paths); the recording's kernel is not this one, so both sides print its
//! frames `[unknown]` (perf will not name them from another kernel's kallsyms).
//! Needs perf: skipped with a note otherwise, a failure under CI.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::perf::{assert_same_samples, compare_reports, output};
use support::{find_tool, skip_or_fail, tool, writeln_stderr};

const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/recordings/perf-nofp.data.zst"
);
/// The report runs compared with perf report: (`--children` or not, `--percent-limit`).
const REPORT_RUNS: &[(&str, &str)] = &[
    ("--no-children", "0"),
    ("--children", "0"),
    ("--no-children", "1"),
];
const RUN_DIR: &str = "/tmp/stacksym-unwind-bench";
const RUN_FILES: [&str; 2] = ["unwind-demo-nofp", "libunwind-demo-nofp.so"];

/// Unpacks the recording into `dir` and puts the recorded program back where it ran.
fn prepare(dir: &Path) -> PathBuf {
    prepare_recording(dir, RECORDING, &RUN_FILES)
}

/// Unpacks `recording` into `dir` and puts the recorded files (from testdata/unwind/) back
/// where they ran.
fn prepare_recording(dir: &Path, recording: &str, run_files: &[&str]) -> PathBuf {
    let mut bytes = Vec::new();
    let file = std::fs::File::open(recording).expect("the committed recording");
    ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(file))
        .expect("a zstd stream")
        .read_to_end(&mut bytes)
        .expect("decompressed");
    let data = dir.join("perf.data");
    std::fs::write(&data, bytes).expect("written");
    std::fs::create_dir_all(RUN_DIR).expect("the run dir");
    for name in run_files {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/unwind")
            .join(name);
        let to = Path::new(RUN_DIR).join(name);
        let bytes = std::fs::read(&from).expect("testdata/unwind");
        if std::fs::read(&to).ok().as_deref() != Some(&bytes[..]) {
            // A new file renamed over the old one: a running copy keeps its inode.
            let tmp = to.with_extension(format!("new{}", std::process::id()));
            std::fs::write(&tmp, &bytes).expect("written");
            std::fs::rename(&tmp, &to).expect("renamed");
        }
    }
    data
}

/// `-F +srcline`: every line but srclines is perf's; a srcline is perf's wherever perf's
/// has a line number (DWARF's), and where it has none (`file:0`, `??:0`, `[dso][addr]`)
/// the frames are counted apart.
fn compare_srclines(ours: &str, theirs: &str) {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(
        a.len(),
        b.len(),
        "-F +srcline: {} lines, perf {}",
        a.len(),
        b.len()
    );
    let (mut same, mut fallback, mut unit_file, mut differ) = (0, 0, 0, Vec::new());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if !y.starts_with("  ") {
            assert_eq!(x, y, "-F +srcline: line {} differs", i + 1);
            continue;
        }
        let line_number = y
            .trim()
            .rsplit(':')
            .next()
            .and_then(|n| n.split(' ').next());
        let dwarf = line_number.is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n > 0));
        if x == y {
            same += 1;
        } else if dwarf && same_line_other_file(x, y) {
            // perf asks binutils' addr2line, which names the compilation unit's file where
            // the line table names an included one: libc's `__libc_start_call_main` at
            // libc_start_call_main.h:58 is `libc-start.c:58` for binutils, and
            // `libc_start_call_main.h:58` for llvm-symbolizer and us (checked by hand on
            // libc's debug file, 2026-11-26).
            unit_file += 1;
        } else if dwarf {
            differ.push(format!("line {}: ours {x:?}, perf's {y:?}", i + 1));
        } else {
            fallback += 1;
        }
    }
    writeln_stderr(format_args!(
        "-F +srcline: {same} srclines perf's, {fallback} from addr2line's symbol-table \
         fallback differ, {unit_file} name the line table's file where perf (binutils) names \
         the compilation unit's at the same line, {} with a DWARF line differ",
        differ.len()
    ));
    for line in differ.iter().take(10) {
        writeln_stderr(format_args!("    {line}"));
    }
    assert!(differ.is_empty(), "-F +srcline: DWARF srclines differ");
}

/// Whether two srclines (`  FILE:LINE`, perhaps with a suffix) have the same line number
/// and different files.
fn same_line_other_file(ours: &str, theirs: &str) -> bool {
    let split = |s: &str| {
        let s = s.trim();
        let s = s.split(' ').next().unwrap_or(s);
        s.rsplit_once(':')
            .map(|(file, line)| (file.to_string(), line.to_string()))
    };
    match (split(ours), split(theirs)) {
        (Some((a_file, a_line)), Some((b_file, b_line))) => a_line == b_line && a_file != b_file,
        _ => false,
    }
}

#[test]
fn perf_unwind_prints_perf_scripts_bytes() {
    let test = "perf_unwind_prints_perf_scripts_bytes";
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(test, "perf not found (apt-get install linux-perf)");
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    let data = prepare(dir.path());
    let with_srcline = perf_script(&perf, &data, &["-F", "+srcline"]);
    assert!(with_srcline.contains(" (inlined)\n"), "no inlined frames?");
    compare_srclines(&perf_unwind(&data, &["-F", "+srcline"]), &with_srcline);
    // Not that output less its srcline lines: with `+srcline` perf marks an inlined frame on
    // its srcline line, not after the name as its default layout does.
    assert_layouts_are_perfs("", &perf, &data);
}

/// `perf script ARGS -i data`'s output.
fn perf_script(perf: &Path, data: &Path, args: &[&str]) -> String {
    output(
        Command::new(perf)
            .arg("script")
            .args(args)
            .arg("-i")
            .arg(data),
    )
}

/// `perf_unwind ARGS -i data`'s output.
fn perf_unwind(data: &Path, args: &[&str]) -> String {
    output(tool("perf").args(args).arg("-i").arg(data))
}

/// `perf_unwind` prints perf script's bytes on `data` in the default layout, with
/// `--no-inline` and with `-F comm,tid,pid,time,ip,sym,dso,symoff` (each labelled after
/// `label`).
fn assert_layouts_are_perfs(label: &str, perf: &Path, data: &Path) {
    let fields = "comm,tid,pid,time,ip,sym,dso,symoff";
    for args in [&[][..], &["--no-inline"], &["-F", fields]] {
        let what = if args.is_empty() {
            format!("{label}default")
        } else {
            format!("{label}{}", args.join(" "))
        };
        assert_same_samples(
            &what,
            &perf_unwind(data, args),
            &perf_script(perf, data, args),
        );
    }
}

const FP_RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/recordings/perf-fp.data.zst"
);

/// A `--call-graph fp` recording (`testdata/recordings/perf-fp.data.zst`, by
/// testdata/record-callchain-fp.sh: `unwind-demo-fp`, built with frame pointers, for 150 ms,
/// ~430 samples): no registers or stack copies, the user chain is the one the kernel walked.
/// `perf_unwind` prints it as perf does — every entry at its recorded address (return
/// addresses, not `- 1`), `0` where the kernel read a null return address, no inlined
/// frames (perf 6.1 adds them only to chains it unwinds itself) — byte for byte: the
/// default layout, `--no-inline`, `-F comm,tid,pid,time,ip,sym,dso,symoff`; and the report
/// table. Not `-F +srcline`: where binutils' addr2line has no line (`??:?`, `main` of this
/// program without DWARF), perf 6.1 prints no srcline line for an entry of a recorded chain
/// and `??:0` for a frame it unwound, on the same kind of address; that fallback is the
/// default layout's business (perf_unwind_prints_perf_scripts_bytes), not the chain's.
#[test]
fn perf_unwind_prints_perf_scripts_bytes_for_fp_callchains() {
    let test = "perf_unwind_prints_perf_scripts_bytes_for_fp_callchains";
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(test, "perf not found (apt-get install linux-perf)");
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    let data = prepare_recording(
        dir.path(),
        FP_RECORDING,
        &["unwind-demo-fp", "libunwind-demo-fp.so"],
    );
    let default = perf_script(&perf, &data, &[]);
    // The chains are the recorded ones: from the sampled function through the library's
    // and the program's frames to main's caller.
    for frame in [
        "chain1+",
        "lib_spin+",
        "__libc_start_call_main+",
        "(/tmp/stacksym-unwind-bench/libunwind-demo-fp.so)",
    ] {
        assert!(default.contains(frame), "perf script shows no {frame}?");
    }
    assert_layouts_are_perfs("fp: ", &perf, &data);
    compare_reports(test, &perf, &data, REPORT_RUNS);
}

/// `--report --no-children`: every row's percentage equals perf report's to 0.01 %, and the
/// rows are the same; `--children`: the children and self percentages too (the chains are
/// perf's on this recording, see perf_unwind_prints_perf_scripts_bytes); `--percent-limit`
/// leaves out the same rows.
#[test]
fn perf_unwind_report_is_perf_reports_table() {
    let test = "perf_unwind_report_is_perf_reports_table";
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(test, "perf not found (apt-get install linux-perf)");
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    let data = prepare(dir.path());
    compare_reports(test, &perf, &data, REPORT_RUNS);
}

/// `--folded` is what inferno's collapse-perf (the `inferno` crate's `Folder`, which
/// `cargo flamegraph` and `inferno-collapse-perf` use) makes of `perf script`'s default
/// output, inlined frames included; `--flamegraph` writes inferno's SVG of those stacks.
#[test]
fn perf_unwind_folded_is_inferno_collapse_of_perf_script() {
    use inferno::collapse::Collapse;
    let test = "perf_unwind_folded_is_inferno_collapse_of_perf_script";
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(test, "perf not found (apt-get install linux-perf)");
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    let data = prepare(dir.path());
    let example = || tool("perf");
    let script = output(Command::new(&perf).arg("script").arg("-i").arg(&data));
    let mut theirs = Vec::new();
    inferno::collapse::perf::Folder::from(inferno::collapse::perf::Options::default())
        .collapse(script.as_bytes(), &mut theirs)
        .expect("inferno folds perf script's output");
    let theirs = String::from_utf8(theirs).expect("UTF-8");
    let ours = output(example().arg("--folded").arg("-i").arg(&data));
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    let differ: Vec<String> = a
        .iter()
        .filter(|l| !b.contains(l))
        .map(|l| format!("ours only: {l}"))
        .chain(
            b.iter()
                .filter(|l| !a.contains(l))
                .map(|l| format!("inferno's only: {l}")),
        )
        .collect();
    writeln_stderr(format_args!(
        "{test}: {} stacks, inferno {}; {} lines differ",
        a.len(),
        b.len(),
        differ.len()
    ));
    for line in differ.iter().take(6) {
        writeln_stderr(format_args!("    {line}"));
    }
    assert!(
        ours.contains("msort_with_tmp"),
        "no inlined frame in the stacks?"
    );
    assert!(differ.is_empty(), "--folded is not inferno's collapse");

    let svg = dir.path().join("flame.svg");
    output(example().arg("--flamegraph").arg(&svg).arg("-i").arg(&data));
    let svg = std::fs::read_to_string(&svg).expect("the SVG written");
    assert!(
        svg.starts_with("<?xml") && svg.contains("<svg"),
        "not an SVG"
    );
    // Each stack's frames are boxes: an inlined function's name among them.
    assert!(
        svg.contains("msort_with_tmp"),
        "the inlined frame has no box"
    );
}

/// A whole-file zstd recording, as the committed ones are (and as `zstd perf.data` writes
/// it), is read as the recording itself: the output is the unpacked file's, byte for byte.
/// A truncated one is an error that names the file. No perf needed.
#[test]
fn perf_reads_a_zstd_compressed_recording() {
    let dir = tempfile::tempdir().expect("a temporary dir");
    let data = prepare(dir.path());
    let unpacked = output(tool("perf").arg("-i").arg(&data));
    let packed = output(tool("perf").arg("-i").arg(RECORDING));
    assert!(
        unpacked.lines().filter(|l| l.is_empty()).count() >= 1000,
        "the recording's 1,163 samples are printed"
    );
    assert!(
        packed == unpacked,
        "the .zst prints what the unpacked file prints"
    );

    let bytes = std::fs::read(RECORDING).expect("the committed recording");
    let cut = dir.path().join("cut.data.zst");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("written");
    let out = tool("perf").arg("-i").arg(&cut).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a truncated .zst fails: {stderr}");
    assert!(
        stderr.contains(&cut.display().to_string()) && stderr.contains("zstd"),
        "the error names the file and the format: {stderr}"
    );
}
