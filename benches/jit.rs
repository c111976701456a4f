//! `stacksym perf` on a raw Node recording (JIT frames named and unwound from the runtime's
//! jitdump) against what a perf user runs for the same output: `perf inject --jit`, then
//! `perf script -F comm,tid,ip,sym,dso` on the injected file. Whole processes, output to
//! /dev/null, in the same run; issue 35's target: ≥ 20×.
//!
//! The recording is made here, as testdata/jit/record-node.sh makes it: `perf record -k 1
//! --call-graph dwarf -- node --perf-prof --interpreted-frames-native-stack app.js` (1.5 s
//! of `fib`). Without perf or node, or when perf may not record, the bench says `SKIPPED:`
//! and why, and measures nothing. perf's two steps are timed once each (perf script on the
//! thousands of `jitted-PID-N.so` files inject writes takes minutes on a loaded machine);
//! ours by criterion. `cargo bench --bench jit`; `-- --test` runs each once.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

fn find(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(tool))
        .find(|candidate| candidate.is_file())
}

/// Runs `command` (output to /dev/null) and returns its wall time; an error names it.
fn timed(command: &mut Command) -> Result<Duration, String> {
    let start = Instant::now();
    let status = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{command:?}: {e}"))?;
    if !status.success() {
        return Err(format!("{command:?}: {status}"));
    }
    Ok(start.elapsed())
}

/// Records app.js under perf in `dir`; the recording's path.
fn record(perf: &Path, node: &Path, dir: &Path) -> Result<PathBuf, String> {
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/jit/app.js");
    std::fs::copy(&app, dir.join("app.js")).map_err(|e| format!("{}: {e}", app.display()))?;
    timed(
        Command::new(perf)
            .current_dir(dir)
            .args(["record", "-q", "-k", "1", "--call-graph", "dwarf", "-o"])
            .arg("perf.data")
            .arg("--")
            .arg(node)
            .args(["--perf-prof", "--interpreted-frames-native-stack", "app.js"]),
    )?;
    Ok(dir.join("perf.data"))
}

fn main() {
    let (listing, quick) = common::mode();
    if listing {
        println!("jit/stacksym_perf_raw: benchmark");
        return;
    }
    let (Some(perf), Some(node)) = (find("perf"), find("node")) else {
        println!("SKIPPED: jit bench: needs perf and node on PATH");
        return;
    };
    let tool = match common::build_tool() {
        Ok(tool) => tool,
        Err(e) => {
            println!("SKIPPED: jit bench: building stacksym: {e}");
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("stacksym-bench-jit-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        println!("SKIPPED: jit bench: {}: {e}", dir.display());
        return;
    }
    let data = match record(&perf, &node, &dir) {
        Ok(data) => data,
        Err(e) => {
            println!(
                "SKIPPED: jit bench: perf record failed (root or perf_event_paranoid <= 1?): {e}"
            );
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
    };
    let ours = || {
        Command::new(&tool)
            .args(["perf", "-F", "comm,tid,ip,sym,dso", "-i"])
            .arg(&data)
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let injected = dir.join("perf.jit.data");
    let inject = timed(
        Command::new(&perf)
            .current_dir(&dir)
            .args(["inject", "--jit", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&injected),
    );
    let script = inject.as_ref().ok().map(|_| {
        timed(
            Command::new(&perf)
                .current_dir(&dir)
                .args(["script", "-F", "comm,tid,ip,sym,dso", "-i"])
                .arg(&injected),
        )
    });
    let start = Instant::now();
    let ok = ours();
    let ours_once = start.elapsed();
    if !ok {
        println!(
            "SKIPPED: jit bench: stacksym perf failed on {}",
            data.display()
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let mut criterion = common::criterion(Duration::from_secs(if quick { 1 } else { 5 }));
    criterion.bench_function("jit/stacksym_perf_raw", |b| b.iter(|| assert!(ours())));
    match (inject, script) {
        (Ok(inject), Some(Ok(script))) => {
            let theirs = inject + script;
            println!(
                "jit: perf inject --jit {inject:.2?} + perf script {script:.2?} = {theirs:.2?}; \
                 stacksym perf on the raw recording {ours_once:.2?} (one run; criterion's above): \
                 {:.1}× (target ≥ 20×){}",
                theirs.as_secs_f64() / ours_once.as_secs_f64().max(1e-9),
                common::quick_note(quick)
            );
        }
        (Err(e), _) | (_, Some(Err(e))) => println!("jit: perf's side failed: {e}"),
        _ => {}
    }
    let _ = std::fs::remove_dir_all(&dir);
}
