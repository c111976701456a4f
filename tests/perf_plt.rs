//! Samples in PLT entries named as perf 6.1 names them (cli/src/perf/plt.rs): `TARGET@plt`
//! where perf's walk of its symbol tree reaches the entry's made-up symbol first, `_init+OFF`
//! where it reaches `_init` first (`_init` has no size, so perf lets it reach `.text`), and
//! `[unknown]` where it passes both by.
//!
//! The program: testdata/unwind/plt-stubs (testdata/build-unwind.sh), a loop calling `ffsl`,
//! `abs`, `labs`, `llabs`, `ffs` and `ffsll` through the PLT, recorded here for 400 ms with
//! `perf record -e cpu-clock:u -c 50000 --call-graph fp` (a sample every 50 µs: about 6,000,
//! a few per cent of them in PLT entries). In this file perf names `ffsl`'s entry (the first,
//! 0x1030) `_init+0x30` and the others `TARGET@plt+0x0`: the test fails unless both kinds
//! are in perf's output, so that it cannot pass without samples in the stubs, and unless
//! `stacksym perf -F comm,tid,ip,sym,symoff,dso`'s output is perf's byte for
//! byte. (Before, stacksym printed `ffsl@plt+0x0`
//! there, and the perf tests let a sample differ so, which made them pass or fail by where
//! the samples fell.)
//!
//! Needs perf and the right to profile (root, or `kernel.perf_event_paranoid` <= 1): skipped
//! with a note otherwise, a failure under CI.

mod support;

use std::path::Path;
use std::process::Command;

use support::perf::{assert_same_samples, output, record};
use support::{find_tool, skip_or_fail, tool, writeln_stderr};

const TEST: &str = "perf_plt";

#[test]
fn perf_plt_stubs_are_named_as_perf_names_them() {
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(TEST, "perf not found (apt-get install linux-perf)");
    };
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/unwind/plt-stubs");
    let args = &[
        "-q",
        "--no-buildid-cache",
        "-e",
        "cpu-clock:u",
        "-c",
        "50000",
        "--call-graph",
        "fp",
    ];
    let Some((_dir, data)) = record(TEST, &perf, args, &program, &["400"]) else {
        return;
    };
    // perf script's fields as tests/perf_unwind.rs asks them (its default layout would add
    // the period, which a `-c` recording does not carry in its samples).
    let fields = ["-F", "comm,tid,ip,sym,symoff,dso"];
    let theirs = output(
        Command::new(&perf)
            .arg("script")
            .args(fields)
            .arg("-i")
            .arg(&data),
    );
    let ours = output(tool("perf").args(fields).arg("-i").arg(&data));

    // The lines in the program's PLT (0x1020..0x10b0): (named `_init+OFF`, `TARGET@plt+OFF`).
    let dso = format!("({})", program.display());
    let in_plt = |text: &str| {
        let (mut init, mut stub) = (0, 0);
        for line in text.lines().filter(|line| line.ends_with(&dso)) {
            let mut fields = line.split_whitespace();
            let (Some(addr), Some(sym)) = (fields.next(), fields.next()) else {
                continue;
            };
            if !u64::from_str_radix(addr, 16).is_ok_and(|a| (0x1020..0x10b0).contains(&a)) {
                continue;
            }
            init += usize::from(sym.starts_with("_init+0x"));
            stub += usize::from(sym.contains("@plt+0x"));
        }
        (init, stub)
    };
    let (init, stub) = in_plt(&theirs);
    writeln_stderr(format_args!(
        "{TEST}: in the PLT perf names {init} frames _init+OFF and {stub} TARGET@plt+OFF"
    ));
    assert!(
        init > 0 && stub > 0,
        "perf named no PLT entry one of the two ways: no samples in the stubs?"
    );
    assert_eq!(
        in_plt(&ours),
        (init, stub),
        "PLT frames named (_init+OFF, TARGET@plt+OFF), ours against perf's"
    );
    assert_same_samples(TEST, &ours, &theirs);
}
