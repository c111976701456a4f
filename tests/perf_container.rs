//! `perf_unwind` on a recording of a process in a container: its MMAP paths are the
//! container's (`/opt/app/bin`, which the host does not have), opened in the process's root
//! (`/proc/PID/root`, confined) while it lives, as perf opens them in its mount namespace;
//! from perf's build-id cache (which `perf record` fills from inside the namespace) once it
//! is gone.
//!
//! The container is made as tests/container.rs makes one (new mount and pid namespaces,
//! `pivot_root` into a directory holding testdata/unwind/unwind-demo-fp at `/opt/app/bin`, its
//! library beside it, and the host's libc and loader at their paths), running the program
//! for up to 600 s (it is ended when the test is done with it; 60 s was too short on a
//! loaded 2-core machine). It is recorded twice for 300 ms with `perf record -e cpu-clock:u
//! -p PID --call-graph fp` (user frames only):
//! - without perf's build-id cache (`--no-buildid-cache`, an empty `--buildid-dir`), printed
//!   while the process lives: every frame is perf's, but in the container's libc and vDSO,
//!   where perf has only libc's `.dynsym` (it looks for libc's debug file inside the
//!   namespace, which has none) and no vDSO (it looks in the empty cache only): there it
//!   prints `[unknown]`, another alias of the same symbol from `.dynsym` (`getppid` for
//!   `__GI___getppid`, at the same offset into it), or `@plt` (a PLT entry it synthesized;
//!   stacksym names no PLT entry of a file with a debug file), where stacksym names them
//!   from libc's debug file (found by build-id) and this machine's vDSO (both with the
//!   recorded build-ids); counted. Without
//!   opening files in the process's root, stacksym named nothing in `/opt/app/bin`;
//! - with the cache (a fresh `--buildid-dir`), printed after the container has ended: byte
//!   for byte `perf script`'s.
//!
//! Needs root (namespaces, `pivot_root`, recording), util-linux and perf: skipped with a note
//! otherwise, a failure under CI.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::perf::output;
use support::{find_tool, skip_or_fail, writeln_stderr};

const TEST: &str = "perf_container";
const APP_BIN: &str = "/opt/app/bin";

/// Run as pid 1 of the new namespaces: the container's root, then the program.
const SCRIPT: &str = r#"set -e
"$MOUNT" --make-rprivate /
"$MOUNT" --bind "$ROOT" "$ROOT"
"$MOUNT" -t proc proc "$ROOT/proc"
cd "$ROOT"
"$PIVOT_ROOT" . .old
"$OLD_LOADER" --library-path "$OLD_LIBS" "$OLD_UMOUNT" -l /.old
exec /opt/app/bin 600000
"#;

/// `unshare` and the container under it (`--kill-child`): killed when dropped.
struct Container(Child);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The absolute paths `ldd` lists for `path`, canonical.
fn ldd(path: &Path) -> Vec<(PathBuf, PathBuf)> {
    let out = Command::new("ldd").arg(path).output().expect("ldd runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let file = l.split("=>").last()?.trim().split(" (").next()?.trim();
            file.starts_with('/').then(|| {
                let file = PathBuf::from(file);
                let canonical = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
                (file, canonical)
            })
        })
        .collect()
}

fn copy_into(root: &Path, from: &Path, at: &Path) {
    let to = root.join(at.strip_prefix("/").unwrap_or(at));
    std::fs::create_dir_all(to.parent().expect("a parent")).expect("dirs");
    std::fs::copy(from, &to).expect("copied");
}

/// The host pid of `parent`'s child, once it runs /opt/app/bin.
fn container_pid(parent: u32) -> Option<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
            if ppid == Some(parent) && maps.contains(APP_BIN) {
                return Some(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn perf_unwind_opens_container_files_in_the_process_root() {
    let Some(perf) = find_tool("perf") else {
        return skip_or_fail(TEST, "perf not found (apt-get install linux-perf)");
    };
    let tool = |name: &str| {
        find_tool(name).or_else(|| {
            ["/usr/sbin", "/sbin"]
                .map(|dir| Path::new(dir).join(name))
                .into_iter()
                .find(|p| p.is_file())
        })
    };
    let tools: Option<Vec<PathBuf>> = ["unshare", "mount", "pivot_root", "umount", "ldd"]
        .iter()
        .map(|t| tool(t))
        .collect();
    let Some(tools) = tools else {
        return skip_or_fail(
            TEST,
            "util-linux (unshare, mount, pivot_root, umount) or ldd missing",
        );
    };
    let (unshare, mount, pivot_root, umount) = (&tools[0], &tools[1], &tools[2], &tools[3]);
    if Path::new(APP_BIN).exists() {
        return skip_or_fail(
            TEST,
            "the host has /opt/app/bin: the test would show nothing",
        );
    }
    // Built first: the container's program runs for a bounded time.
    let example = || support::tool("perf");
    let unwind = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/unwind");
    let program = unwind.join("unwind-demo-fp");
    let dir = tempfile::tempdir().expect("a temporary dir");
    let root = dir.path().join("root");
    copy_into(&root, &program, Path::new(APP_BIN));
    copy_into(
        &root,
        &unwind.join("libunwind-demo-fp.so"),
        Path::new("/opt/app/libunwind-demo-fp.so"),
    );
    for (file, canonical) in ldd(&program) {
        if !file.to_string_lossy().contains("unwind-demo") {
            copy_into(&root, &canonical, &file);
        }
    }
    for empty in ["proc", ".old"] {
        std::fs::create_dir_all(root.join(empty)).expect("a dir");
    }
    // The host's umount after pivot_root: under /.old, through the host's loader.
    let umount = std::fs::canonicalize(umount).expect("umount");
    let libs = ldd(&umount);
    let old = |p: &Path| format!("/.old{}", p.display());
    let loader = libs
        .iter()
        .find(|(file, _)| file.to_string_lossy().contains("ld-linux"))
        .map(|(_, canonical)| old(canonical))
        .expect("umount's loader");
    let lib_dirs: Vec<String> = libs
        .iter()
        .filter_map(|(_, canonical)| canonical.parent().map(old))
        .collect();
    let started = Command::new(unshare)
        .args([
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "--",
            "sh",
            "-c",
            SCRIPT,
        ])
        .env("ROOT", &root)
        .env("MOUNT", mount)
        .env("PIVOT_ROOT", pivot_root)
        .env("OLD_LOADER", &loader)
        .env("OLD_LIBS", lib_dirs.join(":"))
        .env("OLD_UMOUNT", old(&umount))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let container = match started {
        Ok(child) => Container(child),
        Err(e) => return skip_or_fail(TEST, &format!("unshare: {e}")),
    };
    let Some(pid) = container_pid(container.0.id()) else {
        return skip_or_fail(
            TEST,
            "the container did not start (needs root: mount and pid namespaces, pivot_root)",
        );
    };
    let record = |cache: &Path, extra: &[&str], data: &Path| {
        Command::new(&perf)
            .arg("--buildid-dir")
            .arg(cache)
            .args(["record", "-q", "-e", "cpu-clock:u", "--call-graph", "fp"])
            .args(extra)
            .args(["-p", &pid.to_string(), "-o"])
            .arg(data)
            .args(["--", "sleep", "0.3"])
            .stdout(Stdio::null())
            .output()
            .map(|out| {
                if !out.status.success() {
                    writeln_stderr(format_args!(
                        "{TEST}: perf record: {} {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
                out.status.success()
            })
            .unwrap_or(false)
    };
    let script = |cache: &Path, data: &Path| -> (String, String) {
        let theirs = output(
            Command::new(&perf)
                .arg("--buildid-dir")
                .arg(cache)
                .args(["script", "-i"])
                .arg(data),
        );
        let ours = output(
            example()
                .arg("--buildid-dir")
                .arg(cache)
                .arg("-i")
                .arg(data),
        );
        (ours, theirs)
    };

    // Without the cache, while the process lives.
    let empty = dir.path().join("empty");
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&empty).expect("a dir");
    let (live, cached) = (dir.path().join("live.data"), dir.path().join("cached.data"));
    if !record(&empty, &["--no-buildid-cache"], &live) || !record(&cache, &[], &cached) {
        return skip_or_fail(TEST, "perf record -p failed (needs root)");
    }
    let (ours, theirs) = script(&empty, &live);
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "the container ended before the recording was printed"
    );
    let in_program = format!("({APP_BIN})");
    assert!(
        theirs
            .lines()
            .any(|l| l.contains("spin+0x") && l.ends_with(&in_program)),
        "perf script names nothing in {APP_BIN}?"
    );
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(a.len(), b.len(), "line counts, ours and perf's");
    let (mut same, mut unnamed, mut dynsym, mut plt, mut differ) = (0, 0, 0, 0, Vec::new());
    // `ADDR NAME+0xOFF (DSO)`: (ADDR, NAME, OFF, DSO).
    let split = |line: &str| -> Option<(String, String, String, String)> {
        let line = line.trim_start();
        let (addr, rest) = line.split_once(' ')?;
        let (name, dso) = rest.rsplit_once(" (")?;
        let (name, offset) = name.rsplit_once("+0x").unwrap_or((name, ""));
        Some((addr.into(), name.into(), offset.into(), dso.into()))
    };
    for (x, y) in a.iter().zip(&b) {
        if x == y {
            same += 1;
            continue;
        }
        let (Some((ours_addr, ours_name, ours_offset, ours_dso)), Some((addr, name, offset, dso))) =
            (split(x), split(y))
        else {
            differ.push(format!("ours {x:?}, perf's {y:?}"));
            continue;
        };
        let libc_or_vdso = dso == "/lib/x86_64-linux-gnu/libc.so.6)" || dso == "[vdso])";
        if !libc_or_vdso || (ours_addr, &ours_dso) != (addr, &dso) {
            differ.push(format!("ours {x:?}, perf's {y:?}"));
        } else if name == "[unknown]" {
            unnamed += 1;
        } else if name.ends_with("@plt") && ours_name == "[unknown]" {
            // perf's PLT entry synthesized from .dynsym's relocations (`@plt` alone where
            // the relocation names no symbol).
            plt += 1;
        } else if ours_offset == offset {
            // Another name of the same symbol (the same offset from its start).
            dynsym += 1;
        } else {
            differ.push(format!("ours {x:?}, perf's {y:?}"));
        }
    }
    writeln_stderr(format_args!(
        "{TEST}: live, no cache: {same} lines perf's; in the container's libc and vDSO, \
         {unnamed} frames perf leaves [unknown], {dynsym} it names by another alias from \
         .dynsym and {plt} a PLT entry it made up, which ours name from libc's debug file \
         (found by build-id) and this machine's vDSO; {} differ otherwise",
        differ.len()
    ));
    for line in differ.iter().take(5) {
        writeln_stderr(format_args!("    {line}"));
    }
    assert!(differ.is_empty(), "lines differ");

    // With the cache, after the container has ended.
    drop(container);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the container still runs"
    );
    let (ours, theirs) = script(&cache, &cached);
    assert!(theirs.contains(&in_program), "no frame in {APP_BIN}?");
    let samples = theirs.split("\n\n").count();
    let differing = ours
        .split("\n\n")
        .zip(theirs.split("\n\n"))
        .filter(|(x, y)| x != y)
        .count();
    writeln_stderr(format_args!(
        "{TEST}: gone, from the cache: {samples} samples, {differing} differ"
    ));
    assert!(ours == theirs, "from the cache: not perf's bytes");
}
