//! `perf_unwind` reads a file as it was when recorded from perf's build-id cache when the
//! file at the recorded path has changed since, as `perf script` does.
//!
//! The program: testdata/unwind/unwind-demo-fp with its library, copied to a temporary dir
//! and run there for 100 ms under `perf --buildid-dir DIR/.debug record -e cpu-clock:u
//! --call-graph fp` (user frames only), which copies every file with a sample into that cache
//! (`.build-id/xx/rest/elf`, `[vdso]/ID/vdso`, `[kernel.kallsyms]/ID/kallsyms`). Then the
//! program is replaced, at the same path, by another build (unwind-demo-nofp: other code,
//! another build-id). `perf_unwind`'s output is `perf script`'s, byte for byte, with the cache
//! found each way perf finds it:
//! - `$HOME/.debug` (perf's default; `HOME` set to the temporary dir on both sides);
//! - `--buildid-dir` (perf's `--buildid-dir`), on the files `perf archive` packed, unpacked
//!   into a fresh dir as its message says.
//!
//! (`PERF_BUILDID_DIR` is not one of them: perf 6.1's commands set it for their scripts and
//! do not read it — with it pointing at the cache and `HOME` elsewhere, `perf script` names
//! nothing in the replaced program; only `perf archive`, a script, reads it.)
//!
//! With an empty cache both print the frames in the replaced program `[unknown]` (neither
//! names a file whose build-id is not the recorded one), and the samples differ only where
//! perf names nothing in the vDSO (it looks for the vDSO in its cache only; ours is this
//! machine's, with the recorded build-id): counted.
//!
//! The chains are frame-pointer ones (`--call-graph fp`, recorded by the kernel), so that
//! the comparison is about naming: with `--call-graph dwarf` the cached copy also gives the
//! CFI (the unwinder gets the same `ElfFile`), but perf's and stacksym's DWARF chains part in
//! a few samples for reasons of their own (seen in this test's first version, 2 of ~280
//! samples a run: a sample in lazy binding, where stacksym stops at
//! `_dl_runtime_resolve_xsavec`, whose CFA is rbx-based, and one in `rt_sigreturn`, where
//! perf's chain goes on past `__libc_start_call_main` into `[stack]`).
//!
//! Needs perf (and bzip2 for `perf archive`'s tarball) and the right to profile (root, or
//! `kernel.perf_event_paranoid` <= 1): skipped with a note otherwise, a failure under CI.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};

use support::perf::{assert_same_samples, output};
use support::{find_tool, skip_or_fail, tool, writeln_stderr};

const TEST: &str = "perf_buildid_cache";

/// Copies `from` to `to` through a new file renamed over it (a running program keeps its
/// inode).
fn replace(from: &Path, to: &Path) {
    let tmp = to.with_extension("new");
    std::fs::copy(from, &tmp).expect("copied");
    std::fs::rename(&tmp, to).expect("renamed");
}

#[test]
fn perf_unwind_reads_changed_files_from_perfs_buildid_cache() {
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(TEST, "perf not found (apt-get install linux-perf)");
    };
    let unwind = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/unwind");
    let dir = tempfile::tempdir().expect("a temporary dir");
    let dir = dir.path();
    let program = dir.join("unwind-demo");
    replace(&unwind.join("unwind-demo-fp"), &program);
    replace(
        &unwind.join("libunwind-demo-fp.so"),
        &dir.join("libunwind-demo-fp.so"),
    );
    let cache = dir.join(".debug");
    let data = dir.join("perf.data");
    let recorded = Command::new(&perf)
        .arg("--buildid-dir")
        .arg(&cache)
        .args(["record", "-q", "-e", "cpu-clock:u", "--call-graph", "fp"])
        .arg("-o")
        .arg(&data)
        .arg(&program)
        .arg("100")
        .stdout(Stdio::null())
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
    // Another build at the same path: the recording's build-id is no longer the file's.
    replace(&unwind.join("unwind-demo-nofp"), &program);

    let example = || tool("perf");
    // Each side with the same environment: `HOME` or `PERF_BUILDID_DIR`, or a flag.
    let both = |env: &[(&str, &Path)], flag: Option<&Path>| -> (String, String) {
        let mut theirs = Command::new(&perf);
        let mut ours = example();
        for command in [&mut theirs, &mut ours] {
            command.env_remove("PERF_BUILDID_DIR");
            for (name, value) in env {
                command.env(name, value);
            }
        }
        if let Some(flag) = flag {
            theirs.arg("--buildid-dir").arg(flag);
            ours.arg("--buildid-dir").arg(flag);
        }
        theirs.arg("script").arg("-i").arg(&data);
        ours.arg("-i").arg(&data);
        (output(&mut ours), output(&mut theirs))
    };
    let named = "chain1+0x".to_string();
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("a dir");

    let (ours, theirs) = both(&[("HOME", dir)], None);
    assert!(
        theirs.contains(&named) && theirs.contains(&format!("({})", program.display())),
        "perf script names no frame of the program from its cache?"
    );
    assert_same_samples(&format!("{TEST}: $HOME/.debug"), &ours, &theirs);

    // perf archive (a script reading PERF_BUILDID_DIR) packs the cached files the recording
    // needs; unpacked elsewhere, they are a cache of their own. perf itself sets
    // PERF_BUILDID_DIR for the script from its own setting, `$HOME/.debug` by default, over
    // the caller's: HOME is what points it at `cache` (with the variable alone it packed the
    // user's ~/.debug, which held this program's files only when an earlier test had
    // recorded it there: the test failed when run alone).
    let archived = Command::new(&perf)
        .env("HOME", dir)
        .env("PERF_BUILDID_DIR", &cache)
        .arg("archive")
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let tarball = dir.join("perf.data.tar.bz2");
    if archived.is_ok_and(|s| s.success()) && tarball.is_file() {
        let unpacked = dir.join("unpacked");
        std::fs::create_dir_all(&unpacked).expect("a dir");
        output(
            Command::new("tar")
                .arg("xjf")
                .arg(&tarball)
                .arg("-C")
                .arg(&unpacked),
        );
        let (ours, theirs) = both(&[("HOME", &elsewhere)], Some(&unpacked));
        assert!(theirs.contains(&named), "nothing named from the archive?");
        assert_same_samples(
            &format!("{TEST}: perf archive, --buildid-dir"),
            &ours,
            &theirs,
        );
    } else {
        skip_or_fail(TEST, "perf archive failed (is bzip2 installed?)");
    }

    // No cache: both name nothing in the replaced program; perf has no vDSO.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).expect("a dir");
    let (ours, theirs) = both(&[("HOME", &elsewhere)], Some(&empty));
    let unnamed = format!("[unknown] ({})", program.display());
    assert!(
        theirs.contains(&unnamed) && ours.contains(&unnamed),
        "the replaced program's frames named without a cache?"
    );
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(a.len(), b.len(), "empty cache: line counts");
    let (mut same, mut vdso, mut bad) = (0, 0, Vec::new());
    for (x, y) in a.iter().zip(&b) {
        let address = |line: &str| line.split_whitespace().next().map(str::to_string);
        if x == y {
            same += 1;
        } else if y.ends_with(" [unknown] ([vdso])")
            && x.ends_with(" ([vdso])")
            && address(x) == address(y)
        {
            vdso += 1;
        } else {
            bad.push(format!("ours {x:?}, perf's {y:?}"));
        }
    }
    writeln_stderr(format_args!(
        "{TEST}: empty cache: {same} lines perf's, {vdso} vDSO frames perf leaves [unknown], \
         {} differ otherwise",
        bad.len()
    ));
    for line in bad.iter().take(5) {
        writeln_stderr(format_args!("    {line}"));
    }
    assert!(bad.is_empty(), "empty cache: lines differ");
}
