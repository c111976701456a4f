//! Reading Python frames with the tools that compare with stacksym's (tests/python.rs,
//! tests/container.rs): `py-spy dump --json`, and `stacksym pstack --python --json`; a
//! stopped process's threads waited for.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::tool;

/// (function, file basename, line) of each frame, innermost first.
pub type Frames = Vec<(String, String, u32)>;

/// A thread: CPython's `thread_id` (`pthread_t`: py-spy names every thread by it; its OS
/// thread id only where it can tell without stopping the process, 3.11+), and the OS id.
pub type ThreadKey = (u64, Option<u32>);

/// `py-spy dump --nonblocking --json`: frames per thread.
pub fn py_spy(py_spy: &Path, pid: u32) -> BTreeMap<ThreadKey, Frames> {
    let mut command = Command::new(py_spy);
    command.args(["dump", "--nonblocking", "--json", "--pid", &pid.to_string()]);
    let threads: serde_json::Value =
        serde_json::from_slice(&stdout_of(command, "py-spy dump")).expect("py-spy's JSON");
    let mut by_tid = BTreeMap::new();
    for thread in threads.as_array().expect("a list of threads") {
        let thread_id = thread["thread_id"].as_u64().expect("thread_id");
        let tid = thread["os_thread_id"].as_u64().map(|tid| tid as u32);
        let frames = thread["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .map(|frame| {
                (
                    frame["name"].as_str().expect("name").to_string(),
                    basename(frame["filename"].as_str().expect("filename")),
                    frame["line"].as_u64().unwrap_or(0) as u32,
                )
            })
            .collect();
        by_tid.insert((thread_id, tid), frames);
    }
    by_tid
}

/// Waits until every thread of `pid` is stopped (`T` in its stat), at most 5 s.
pub fn wait_stopped(pid: u32) {
    for _ in 0..500 {
        let tasks: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        let all = tasks.iter().all(|task| {
            std::fs::read_to_string(task.path().join("stat"))
                .ok()
                .and_then(|stat| {
                    let after = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
                    Some(after == 'T' || after == 't')
                })
                .unwrap_or(false)
        });
        if !tasks.is_empty() && all {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("process {pid} did not stop");
}

pub fn basename(file: &str) -> String {
    Path::new(file).file_name().map_or_else(
        || file.to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// What `command` printed; it must succeed (`what` names it in the failure).
pub fn stdout_of(mut command: Command, what: &str) -> Vec<u8> {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out.stdout
}

/// `stacksym pstack --python --json PID` (`only`: `--python-only`): the Python frames
/// (`"kind": "python"`) per OS thread id; every frame must have a kind, and a thread with
/// Python frames must have frames of both kinds (`--python-only`: Python frames alone).
pub fn pstack_python(pid: u32, only: bool) -> BTreeMap<u32, Frames> {
    let flag = if only { "--python-only" } else { "--python" };
    let mut command = tool("pstack");
    command.args([flag, "--json", &pid.to_string()]);
    let top: serde_json::Value =
        serde_json::from_slice(&stdout_of(command, &format!("stacksym pstack {flag}")))
            .expect("pstack's JSON");
    let mut by_tid = BTreeMap::new();
    for thread in top["threads"].as_array().expect("threads") {
        let tid = thread["tid"].as_u64().expect("tid") as u32;
        let all = thread["frames"].as_array().expect("frames");
        let kinds: Vec<&str> = all
            .iter()
            .map(|f| f["kind"].as_str().expect("every frame has a kind"))
            .collect();
        let python: Frames = all
            .iter()
            .filter(|f| f["kind"] == "python")
            .map(|f| {
                (
                    f["function"].as_str().expect("function").to_string(),
                    basename(f["file"].as_str().expect("file")),
                    f["line"].as_u64().unwrap_or(0) as u32,
                )
            })
            .collect();
        if only {
            assert!(
                kinds.iter().all(|&kind| kind == "python"),
                "thread {tid}: {flag} shows a native frame"
            );
        }
        if !python.is_empty() {
            assert!(
                only || kinds.contains(&"native"),
                "thread {tid}: no native frame"
            );
            by_tid.insert(tid, python);
        }
    }
    by_tid
}
