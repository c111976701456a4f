//! `stacksym pstack` on a live Node process, through its JIT frames: V8 (`--perf-prof
//! --interpreted-frames-native-stack`) writes `jit-PID.dump` and maps it; the tool finds it
//! in `/proc/PID/maps`, names the frames of the JIT's anonymous memory from it and unwinds
//! them with its tables (or by frame pointer where V8 gave none).
//!
//! The program blocks its main thread deep in JIT code: `deep(20)`, optimized by TurboFan
//! before the call (`%OptimizeFunctionOnNextCall`), recurses down to `Atomics.wait`, which
//! waits in libc for ever (a fixed place: a process stopped at a random instruction would
//! make the leaf's frame depend on the moment). V8 writes its jitdump through a stdio
//! buffer, so the program first makes code enough to push the loads it ran out to the file
//! (400 small functions), then says `ready`.
//!
//! Checked against:
//! - `eu-stack -p PID -1` (elfutils, which walks JIT code by frame pointer and names
//!   nothing in it): the same frames at the same addresses, from the futex wait to `_start`
//!   (ours' inlined frames left out: eu-stack shows them only with `-i`);
//! - the dump itself, read by tests/support's independent reader (`jitdump_loads`): every
//!   frame in JIT memory carries the name of the last load covering its address, and the
//!   optimized `deep` (`JS:*deep`) is there at least 10 times;
//! - the walk ends at the outermost frame, `_start`, through V8's entry frames and
//!   `node::Start`.
//!
//! Needs node and eu-stack, and ptrace rights over a child (root, or `ptrace_scope` 0):
//! skipped with a note otherwise, a failure under CI. x86-64 only.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use support::{find_tool, skip_or_fail, tool};

const TEST: &str = "pstack_jit";

const PROGRAM: &str = r#"const cell = new Int32Array(new SharedArrayBuffer(4));
function flush() {
  // V8 writes its jitdump through a stdio buffer: code enough to push it out.
  let s = 0;
  for (let i = 0; i < 400; i++) s += new Function('x', 'return x + ' + i)(i);
  return s;
}
function deep(n, block) {
  if (n === 0) {
    if (block) { flush(); console.log('ready'); Atomics.wait(cell, 0, 0); }
    return 0;
  }
  return deep(n - 1, block) + 1;
}
%PrepareFunctionForOptimization(deep);
deep(3, false); deep(3, false);
%OptimizeFunctionOnNextCall(deep);
deep(20, true);
"#;

/// Kills the child when dropped.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn pstack_names_and_unwinds_node_jit_frames_as_eu_stack_walks_them() {
    if !cfg!(target_arch = "x86_64") {
        return skip_or_fail(TEST, "x86-64 only");
    }
    if Command::new("node").arg("--version").output().is_err() {
        return skip_or_fail(TEST, "node not found (apt-get install nodejs)");
    }
    let Some(eu_stack) = find_tool("eu-stack") else {
        return skip_or_fail(TEST, "eu-stack not found (apt-get install elfutils)");
    };
    let dir = tempfile::tempdir().expect("a temporary dir");
    std::fs::write(dir.path().join("wait.js"), PROGRAM).unwrap();
    let mut child = KillOnDrop(
        Command::new("node")
            .args([
                "--perf-prof",
                "--interpreted-frames-native-stack",
                "--allow-natives-syntax",
                "wait.js",
            ])
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node starts"),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = child.0.id();

    let out = tool("pstack")
        .arg("--json")
        .arg(pid.to_string())
        .output()
        .expect("stacksym pstack runs");
    if !out.status.success() {
        return skip_or_fail(
            TEST,
            &format!(
                "pstack failed (needs ptrace rights): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        );
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let main = json["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|t| t["tid"].as_u64() == Some(u64::from(pid)))
        .expect("the main thread");
    let frames = main["frames"].as_array().expect("frames");
    let addr = |f: &serde_json::Value| {
        let text = f["addr"].as_str().expect("addr");
        u64::from_str_radix(text.trim_start_matches("0x"), 16).expect("hex")
    };
    let physical: Vec<&serde_json::Value> = frames
        .iter()
        .filter(|f| f["inlined"].as_bool() != Some(true))
        .collect();
    let ours: Vec<u64> = physical.iter().map(|f| addr(f)).collect();

    let eu = Command::new(eu_stack)
        .args(["-1", "-p"])
        .arg(pid.to_string())
        .output()
        .expect("eu-stack runs");
    let eu_text = String::from_utf8_lossy(&eu.stdout);
    let theirs: Vec<u64> = eu_text
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?;
            let addr = rest.split_whitespace().nth(1)?;
            u64::from_str_radix(addr.strip_prefix("0x")?, 16).ok()
        })
        .collect();
    let show = |addrs: &[u64]| {
        addrs
            .iter()
            .map(|a| format!("{a:#x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        show(&ours),
        show(&theirs),
        "pstack's frames (physical) against eu-stack's:\n{}\n{eu_text}",
        String::from_utf8_lossy(&out.stdout)
    );

    let dump = dir.path().join(format!("jit-{pid}.dump"));
    let loads = support::jitdump_loads(&std::fs::read(&dump).expect("the dump"));
    let (mut jit, mut optimized) = (0, 0);
    for f in &physical {
        let module = f["module"].as_str().unwrap_or_default();
        if !module.ends_with(&format!("jit-{pid}.dump")) {
            continue;
        }
        let name = f["function"].as_str().unwrap_or("??");
        let want = support::jitdump_name_at(&loads, addr(f)).unwrap_or("??");
        assert_eq!(name, want, "{f}");
        jit += 1;
        optimized += usize::from(name.starts_with("JS:*deep "));
    }
    let names: Vec<&str> = frames
        .iter()
        .map(|f| f["function"].as_str().unwrap_or("??"))
        .collect();
    support::writeln_stderr(format_args!(
        "{TEST}: {} frames ({} physical, as eu-stack's), {jit} in JIT code named from the \
         dump ({optimized} of the optimized deep), stop: {}",
        frames.len(),
        physical.len(),
        main["stop"]
    ));
    assert!(optimized >= 10, "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("JS:~deep ")),
        "{names:?}"
    );
    assert!(names.contains(&"node::Start(int, char**)"), "{names:?}");
    assert_eq!(names.last(), Some(&"_start"), "{names:?}");
    assert_eq!(main["stop"], "the outermost frame");
}
