//! `stacksym perf` against perf 6.1 on template-heavy C++ with inlined frames (issue 37):
//! testdata/unwind/cpp-templates (testdata/build-unwind.sh, `g++ -O2 -g`: `std::sort` with a
//! lambda, a `std::vector` of structs grown by `push_back`, constructors, an `operator++`),
//! recorded here for 300 ms with `perf record -e cpu-clock:u --call-graph dwarf,16384`.
//!
//! perf prints the inline chains binutils' `addr2line` gives it: each frame by its linkage
//! name demangled without parameters or return type (`geo::Mesh::Mesh`,
//! `std::__introsort_loop<…>`), the function an address is in by its symbol, with the file.
//! Compared sample by sample (`-F comm,tid,ip,sym,dso`), a sample is either perf's bytes or
//! differs only where binutils leaves out an inlined frame that DWARF lists (it names the
//! address by the symbol's line table instead: `std::__unguarded_partition` inside
//! `__unguarded_partition_pivot`), which llvm-symbolizer and eu-addr2line list as we do (a
//! deliberate difference, in the README). Any other difference fails the test. The
//! `perf report --stdio -g none --sort comm,dso,sym` rows must be perf's too.
//!
//! Needs perf and the right to profile (root, or `kernel.perf_event_paranoid` <= 1): skipped
//! with a note otherwise, a failure under CI.

mod support;

use std::path::Path;
use std::process::Command;

use support::perf::{compare_reports, output, record};
use support::{find_tool, skip_or_fail, tool, writeln_stderr};

const TEST: &str = "perf_cpp";

/// Whether `ours` is `theirs` with some `(inlined)` lines added: the frames binutils drops.
fn only_inlined_frames_added(ours: &str, theirs: &str) -> bool {
    let mut theirs = theirs.lines().peekable();
    for line in ours.lines() {
        if theirs.peek() == Some(&line) {
            theirs.next();
        } else if !line.ends_with(" (inlined)") {
            return false;
        }
    }
    theirs.next().is_none()
}

#[test]
fn perf_script_and_report_on_template_heavy_cpp() {
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(TEST, "perf not found (apt-get install linux-perf)");
    };
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/unwind/cpp-templates");
    let args = &[
        "-q",
        "--no-buildid-cache",
        "-e",
        "cpu-clock:u",
        "--call-graph",
        "dwarf,16384",
    ];
    let Some((_dir, data)) = record(TEST, &perf, args, &program, &["300"]) else {
        return;
    };
    let fields = ["-F", "comm,tid,ip,sym,dso"];
    let theirs = output(
        Command::new(&perf)
            .arg("script")
            .args(fields)
            .arg("-i")
            .arg(&data),
    );
    let ours = output(tool("perf").args(fields).arg("-i").arg(&data));
    let (a, b): (Vec<&str>, Vec<&str>) =
        (ours.split("\n\n").collect(), theirs.split("\n\n").collect());
    assert_eq!(a.len(), b.len(), "sample counts, ours and perf's");
    let (mut same, mut dropped, mut differ) = (0, 0, Vec::new());
    for (x, y) in a.iter().zip(&b) {
        if x == y {
            same += 1;
        } else if only_inlined_frames_added(x, y) {
            dropped += 1;
        } else {
            differ.push((x, y));
        }
    }
    writeln_stderr(format_args!(
        "{TEST}: {} samples: {same} perf's bytes ({:.1} %), {dropped} where binutils drops an \
         inlined frame ours lists, {} differ otherwise",
        a.len(),
        100.0 * same as f64 / a.len().max(1) as f64,
        differ.len()
    ));
    for (x, y) in differ.iter().take(3) {
        writeln_stderr(format_args!("--- ours:\n{x}\n--- perf's:\n{y}"));
    }
    assert!(
        theirs.contains("std::__introsort_loop<") && theirs.contains("geo::Mesh::Mesh"),
        "perf names neither the sort nor the constructor?"
    );
    assert!(differ.is_empty(), "samples differ from perf's");

    compare_reports(
        TEST,
        &perf,
        &data,
        &[("--no-children", "0"), ("--children", "0")],
    );
}
