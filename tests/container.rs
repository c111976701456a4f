//! A process in a container-like root, symbolized from the host by its host pid.
//!
//! The test copies testdata/bin/c-wait and the libraries it needs (by `ldd`) into a temporary
//! directory and starts it the way container runtimes do: new mount and pid namespaces
//! (`unshare --mount --pid --fork`), the directory bind-mounted on itself, a procfs of the new
//! pid namespace at `<root>/proc`, `pivot_root` into the directory, the old root detached
//! (`umount -l /.old`), then `exec /opt/app/bin`, which becomes pid 1 of the new namespace.
//!
//! Only then does the host see in-container paths (`/opt/app/bin`) in `/proc/PID/maps` and
//! `NSpid: HOSTPID 1` in `/proc/PID/status`; a plain `chroot` (or `unshare --root`) shows host
//! paths and tests nothing. The host has no file at `/opt/app/bin`: stacksym must open the
//! process's files through `/proc/HOSTPID/root/...`.
//!
//! Needs root (mount and pid namespaces, `mount`, `pivot_root`) and util-linux (`unshare`,
//! `mount`, `pivot_root`, `umount`). Without them the test prints `SKIPPED: <why>` and returns;
//! CI runs as root.
//!
//! After `pivot_root` the host's tools are only reachable under `/.old`, and their libraries
//! are not in the new root: `umount` is run through the host's dynamic loader
//! (`/.old/<ld.so> --library-path /.old/<lib dirs> /.old/<umount> -l /.old`). libmount reads
//! `/proc/self/mountinfo`, which is why the procfs is mounted in the new root first.
//!
//! A second container is hostile (`hostile_container_links_lead_nowhere_outside_its_root`):
//! links at every place stacksym looks for a companion file lead to host files, and its
//! binary's path is swapped for links after it was mapped; nothing outside its root may be
//! read (that test also needs `objcopy`, binutils).
//!
//! A third container runs Debian's CPython (`container_python_frames_read_from_the_host`):
//! the interpreter at a path the host lacks, the standard library modules its program
//! imports, testdata/python/parked.py; its Python frames are read from the host by host pid,
//! each thread named by its host tid (the interpreter knows the namespace's), and must be
//! py-spy's (when installed) and `stacksym pstack --python-only`'s.
//!
//! References are independent of stacksym: the child's own report of its addresses, `nm`
//! (symbol addresses), `readelf -l` (segments) and `readelf -n` (build-id).

mod support;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use stacksym::addr::AbsAddr;
use stacksym::process::{MappingKind, Normalized, Process};
use stacksym::NotFound;
use stacksym::{FileOffset, Symbolizer};
use support::python::{basename, pstack_python, py_spy, wait_stopped, Frames};
use support::writeln_stderr;
use support::{name_of, nm_addr, readelf_build_id, readelf_file_offset, run};

/// Where the program lives inside the container root.
const APP_DIR: &str = "/opt/app";
const APP_BIN: &str = "/opt/app/bin";
const APP_LIB: &str = "/opt/app/libversioned.so";

/// Every wait of this test is bounded by this.
const TIMEOUT: Duration = Duration::from_secs(10);

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bin(name: &str) -> PathBuf {
    manifest().join("testdata/bin").join(name)
}

fn skip(why: &str) {
    writeln_stderr(format_args!("SKIPPED: container test: {why}"));
}

/// The effective uid, from the `Uid:` line of `/proc/self/status` (real, effective, ...).
fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `name` in `$PATH` (and the sbin directories, which a non-login root shell may lack).
fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The shared objects `ldd` names for `path`: `(name as ldd shows it, resolved path)`; the
/// dynamic loader's line has no `=>`, its path is both.
fn ldd(ldd: &Path, path: &Path) -> Vec<(String, PathBuf)> {
    run(ldd, &[path.to_str().unwrap()])
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            match l.split_once(" => ") {
                Some((name, rest)) => {
                    let file = rest.split(" (").next()?.trim();
                    file.starts_with('/')
                        .then(|| (name.trim().to_string(), PathBuf::from(file)))
                }
                None => {
                    let file = l.split(" (").next()?.trim();
                    file.starts_with('/')
                        .then(|| (file.to_string(), PathBuf::from(file)))
                }
            }
        })
        .collect()
}

/// `<root>/<absolute path>`.
fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// Copies `from` (following symlinks) to `<root>/<at>`, creating directories.
fn copy_into(root: &Path, from: &Path, at: &Path) -> PathBuf {
    let to = under(root, at);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, &to)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
    to
}

/// The container root: c-wait at /opt/app/bin, libversioned.so next to it (its RUNPATH is
/// $ORIGIN), libc and the dynamic loader at the paths `ldd` shows on the host, and empty
/// `/proc` and `/.old` directories for the procfs and the old root.
fn build_root(root: &Path, ldd_tool: &Path) {
    let wait = bin("c-wait");
    copy_into(root, &wait, Path::new(APP_BIN));
    for (name, file) in ldd(ldd_tool, &wait) {
        if name == "libversioned.so" {
            copy_into(root, &file, Path::new(APP_LIB));
        } else {
            // e.g. /lib/x86_64-linux-gnu/libc.so.6 and /lib64/ld-linux-x86-64.so.2 (the loader
            // finds libc in its default directories; there is no ld.so.cache in the root).
            copy_into(root, &file, &file);
        }
    }
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::create_dir_all(root.join(".old")).unwrap();
}

/// The command line that runs the host's `umount` after `pivot_root`, through the host's
/// dynamic loader, all under `/.old`: `(loader, library path, umount)`.
fn old_root_umount(ldd_tool: &Path, umount: &Path) -> (String, String, String) {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let old = |p: &Path| format!("/.old{}", canonical(p).display());
    let umount = canonical(umount);
    let libs = ldd(ldd_tool, &umount);
    let loader = libs
        .iter()
        .find(|(name, _)| name.starts_with('/'))
        .map(|(_, file)| old(file))
        .unwrap_or_else(|| panic!("ldd {}: no dynamic loader", umount.display()));
    let mut dirs: Vec<String> = Vec::new();
    for (_, file) in &libs {
        let dir = old(canonical(file).parent().unwrap());
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    (loader, dirs.join(":"), old(&umount))
}

/// What runs as pid 1 of the new namespaces, before it becomes the container's program (its
/// arguments: c-wait, or a Python). Everything is done with the host's tools while the host
/// root is still `/`, except the final `umount`.
const SCRIPT: &str = r#"set -e
"$MOUNT" --make-rprivate /
"$MOUNT" --bind "$ROOT" "$ROOT"
"$MOUNT" -t proc proc "$ROOT/proc"
cd "$ROOT"
"$PIVOT_ROOT" . .old
"$OLD_LOADER" --library-path "$OLD_LIBS" "$OLD_UMOUNT" -l /.old
exec "$@"
"#;

/// A started container: `unshare` (our child) and c-wait (its child, pid 1 inside).
struct Container {
    unshare: Child,
    lines: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
}

impl Container {
    /// Waits for `unshare` to exit, at most `TIMEOUT`; kills it (and with `--kill-child`, the
    /// container) when it does not.
    fn wait(&mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.unshare.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.unshare.kill();
        let _ = self.unshare.wait();
        None
    }

    /// What the script and unshare wrote to stderr (after they exited).
    fn stderr(&self) -> String {
        self.stderr.recv_timeout(TIMEOUT).unwrap_or_default()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        // Closing stdin ends c-wait; if it does not end, it is killed.
        drop(self.unshare.stdin.take());
        if self.unshare.try_wait().ok().flatten().is_none() {
            self.wait();
        }
    }
}

/// Why a failure to start means "this machine cannot", not "stacksym is wrong".
fn not_permitted(stderr: &str) -> bool {
    let lower = stderr.to_lowercase();
    lower.contains("operation not permitted") || lower.contains("permission denied")
}

/// The host pid of the process whose parent is `parent`, by scanning `/proc/*/stat`.
fn child_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // "PID (COMM) STATE PPID ...": COMM may hold spaces, so look after the last ')'.
        let ppid: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (ppid == parent).then_some(pid)
    })
}

/// The `NSpid:` values of `/proc/PID/status`: the pid in each namespace, outermost first.
fn nspid(pid: u32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .unwrap_or_else(|| panic!("no NSpid line in /proc/{pid}/status:\n{status}"))
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// The tools the container needs, or why this machine cannot run it.
fn container_tools(extra: &[&'static str]) -> Result<HashMap<&'static str, PathBuf>, String> {
    match euid() {
        Some(0) => {}
        Some(uid) => return Err(format!("needs root (effective uid {uid})")),
        None => return Err("cannot read the effective uid from /proc/self/status".into()),
    }
    let mut tools = HashMap::new();
    for &tool in ["unshare", "mount", "pivot_root", "umount", "ldd", "sh"]
        .iter()
        .chain(extra)
    {
        match find_tool(tool) {
            Some(path) => tools.insert(tool, path),
            None => {
                return Err(format!(
                    "`{tool}` not found (util-linux / libc-bin / sh / binutils)"
                ))
            }
        };
    }
    if Path::new(APP_BIN).exists() || Path::new(APP_DIR).join("libversioned.so").exists() {
        return Err(format!(
            "the host has a file at {APP_BIN} or {APP_LIB}: the test would not show that \
             files are opened through /proc/PID/root"
        ));
    }
    Ok(tools)
}

/// Starts c-wait in a container on `root` (built by `build_root`) and reads its report:
/// "NAME 0xADDR" lines (its function addresses, `pid N`) up to "ready". `Err` is a reason
/// to skip (starting the container was not permitted); other failures panic.
fn start_container(
    root: &Path,
    tools: &HashMap<&'static str, PathBuf>,
) -> Result<(Container, HashMap<String, u64>), String> {
    start_program(root, tools, &[APP_BIN], &[])
}

/// Starts `command` (its path inside the root first) in a container on `root`, with `env`
/// added to its environment, and reads its report as [`start_container`] does.
fn start_program(
    root: &Path,
    tools: &HashMap<&'static str, PathBuf>,
    command: &[&str],
    env: &[(&str, &str)],
) -> Result<(Container, HashMap<String, u64>), String> {
    let (loader, libs, umount) = old_root_umount(&tools["ldd"], &tools["umount"]);
    let mut unshare = Command::new(&tools["unshare"])
        .args(["--mount", "--pid", "--fork", "--kill-child", "--"])
        .arg(&tools["sh"])
        .args(["-c", SCRIPT, "sh"])
        .args(command)
        .envs(env.iter().copied())
        .env("ROOT", root)
        .env("MOUNT", &tools["mount"])
        .env("PIVOT_ROOT", &tools["pivot_root"])
        .env("OLD_LOADER", &loader)
        .env("OLD_LIBS", &libs)
        .env("OLD_UMOUNT", &umount)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", tools["unshare"].display()));
    let (line_tx, lines) = mpsc::channel();
    let stdout = unshare.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });
    let (err_tx, stderr) = mpsc::channel();
    let mut err_pipe = unshare.stderr.take().unwrap();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err_pipe.read_to_string(&mut text);
        let _ = err_tx.send(text);
    });
    let mut container = Container {
        unshare,
        lines,
        stderr,
    };

    // c-wait's report: "NAME 0xADDR" lines, "pid N" (its pid inside), then "ready".
    let mut addrs: HashMap<String, u64> = HashMap::new();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match container.lines.recv_timeout(left) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Killing unshare kills the container too (--kill-child).
                let _ = container.unshare.kill();
                let status = container.unshare.wait();
                panic!(
                    "no \"ready\" from the container within {TIMEOUT:?} (exit {status:?}); \
                     stderr:\n{}",
                    container.stderr()
                );
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = container.wait();
                let stderr = container.stderr();
                if not_permitted(&stderr) {
                    return Err(format!(
                        "starting the container was not permitted (exit {status:?}):\n{stderr}"
                    ));
                }
                panic!("the container ended before \"ready\" (exit {status:?}); stderr:\n{stderr}");
            }
        };
        if line == "ready" {
            return Ok((container, addrs));
        }
        let (name, value) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("unexpected line from c-wait: {line:?}"));
        let value = match value.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => value.parse().unwrap(),
        };
        addrs.insert(name.to_string(), value);
    }
}

#[test]
fn container_process_symbolized_from_the_host_by_host_pid() {
    let started = Instant::now();

    // ---- Can this machine do it at all? --------------------------------------------------
    let tools = match container_tools(&[]) {
        Ok(tools) => tools,
        Err(why) => return skip(&why),
    };

    // ---- The root and the container ------------------------------------------------------
    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path();
    build_root(root, &tools["ldd"]);
    let (mut container, addrs) = match start_container(root, &tools) {
        Ok(started) => started,
        Err(why) => return skip(&why),
    };
    let addr = |name: &str| addrs[name];
    let ready_after = started.elapsed();

    // ---- What the host sees --------------------------------------------------------------
    let host_pid = child_of(container.unshare.id())
        .unwrap_or_else(|| panic!("no child of unshare {}", container.unshare.id()));
    let in_container_pid = u32::try_from(addr("pid")).unwrap();
    let ns = nspid(host_pid);
    assert_eq!(ns.len(), 2, "NSpid of {host_pid}: {ns:?}");
    assert_eq!(ns[0], host_pid, "NSpid of {host_pid}: {ns:?}");
    assert_eq!(ns[1], in_container_pid, "NSpid of {host_pid}: {ns:?}");
    assert!(in_container_pid <= 2, "pid inside: {in_container_pid}");
    assert_ne!(host_pid, in_container_pid);

    let maps_text = std::fs::read_to_string(format!("/proc/{host_pid}/maps")).unwrap();
    assert!(
        maps_text
            .lines()
            .any(|l| l.ends_with(&format!(" {APP_BIN}"))),
        "the host does not see {APP_BIN} in /proc/{host_pid}/maps:\n{maps_text}"
    );
    assert!(
        !Path::new(APP_BIN).exists(),
        "the host has a file at {APP_BIN}"
    );

    let process = Process::new(host_pid);
    let maps = process.read_maps().unwrap();
    let mapping_of = |a: u64| {
        maps.find(AbsAddr(a))
            .unwrap_or_else(|| panic!("{a:#x} in no mapping of {host_pid}"))
    };
    let file = |path: &str| MappingKind::File {
        path: path.into(),
        deleted: false,
    };
    assert_eq!(mapping_of(addr("wait_target")).kind, file(APP_BIN));
    assert_eq!(mapping_of(addr("vhelper")).kind, file(APP_LIB));
    assert_eq!(
        process.open_path(mapping_of(addr("wait_target"))),
        Some(PathBuf::from(format!("/proc/{host_pid}/root{APP_BIN}")))
    );
    // libc is mapped from the root's copy (its inode), not from the host's file of that name.
    let libc = mapping_of(addr("puts"));
    let libc_path = libc.file_path().expect("libc is a file mapping");
    let copy = under(root, &libc_path);
    assert_eq!(
        libc.inode,
        std::fs::metadata(&copy).unwrap().ino(),
        "{libc:?} is not {}",
        copy.display()
    );

    // ---- Symbolized from the host, by host pid -------------------------------------------
    let symbolizer = Symbolizer::builder().build();
    let query = [
        AbsAddr(addr("wait_target")),
        AbsAddr(addr("wait_target") + 1),
        AbsAddr(addr("wait_local")),
        AbsAddr(addr("vhelper") + 3),
        AbsAddr(addr("puts")),
        AbsAddr(0),
    ];
    let results = support::in_process(&symbolizer, &process, None, &query).unwrap();
    assert_eq!(results.len(), query.len());
    assert_eq!(name_of(&results, 0), "wait_target", "{results:?}");
    let target = results.get(0).unwrap();
    assert_eq!(target.offset, 0);
    assert_eq!(target.module, Path::new(APP_BIN));
    let wait = bin("c-wait");
    let target_virt = nm_addr(&wait, "wait_target");
    assert_eq!(target.addr.raw(), target_virt);
    assert_eq!(
        target.file_offset(),
        Some(FileOffset(readelf_file_offset(&wait, target_virt)))
    );
    assert_eq!(name_of(&results, 1), "wait_target");
    assert_eq!(results.get(1).unwrap().offset, 1);
    assert!(
        name_of(&results, 2).starts_with("wait_local"),
        "{:?}",
        results.result(2)
    );
    assert_eq!(name_of(&results, 3), "vhelper");
    assert_eq!(results.get(3).unwrap().offset, 3);
    assert_eq!(results.get(3).unwrap().module, Path::new(APP_LIB));
    // puts and _IO_puts are aliases in glibc; either name is right.
    assert!(
        ["puts", "_IO_puts"].contains(&name_of(&results, 4)),
        "{:?}",
        results.result(4)
    );
    assert_eq!(results.get(4).unwrap().offset, 0);
    assert_eq!(results.get(4).unwrap().module, libc_path);
    assert!(
        matches!(results.not_found(5), Some(NotFound::Unmapped)),
        "{:?}",
        results.result(5)
    );

    // ---- Normalized: build-id, file offset, in-container path ----------------------------
    let norm = process
        .normalize(&[AbsAddr(addr("wait_target") + 5), AbsAddr(addr("vhelper"))])
        .unwrap();
    let Normalized::File(main) = &norm[0] else {
        panic!("{norm:?}")
    };
    assert_eq!(main.path, Path::new(APP_BIN));
    assert!(!main.deleted);
    assert_eq!(main.build_id.as_deref(), Some(&readelf_build_id(&wait)[..]));
    assert_eq!(
        main.file_offset,
        FileOffset(readelf_file_offset(&wait, target_virt + 5))
    );
    let Normalized::File(lib) = &norm[1] else {
        panic!("{norm:?}")
    };
    assert_eq!(lib.path, Path::new(APP_LIB));
    assert_eq!(
        lib.build_id.as_deref(),
        Some(&readelf_build_id(&bin("libversioned.so"))[..])
    );
    let checked_after = started.elapsed();

    // ---- Clean up: EOF on stdin ends c-wait (pid 1), and with it the namespace -----------
    drop(container.unshare.stdin.take());
    let status = container.wait();
    let stderr = container.stderr();
    assert!(
        status.is_some_and(|s| s.success()),
        "the container did not exit cleanly within {TIMEOUT:?}: {status:?}; stderr:\n{stderr}"
    );
    eprintln!(
        "container: host pid {host_pid}, NSpid {ns:?}; ready after {ready_after:?}, \
         checked after {checked_after:?}, exited after {:?}",
        started.elapsed()
    );
}

/// The one façade call of the hostile-container test (a change of the symbolizing API is
/// a change here only).
fn symbolize_pid(symbolizer: &Symbolizer, process: &Process, addrs: &[u64]) -> stacksym::Symbols {
    symbolizer
        .symbolize(
            &stacksym::Source::process(process),
            stacksym::Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(addrs)),
        )
        .unwrap()
}

/// Every answer of `results`, symbol or reason, as text (to search for leaked bytes).
fn answers_text(results: &stacksym::Symbols) -> String {
    let answers: Vec<String> = results.results().map(|r| format!("{r:?}")).collect();
    answers.join("\n")
}

/// A hostile container: its binary (c-wait, its DWARF stripped into a debug file that exists
/// only on the host, outside every debug dir) finds, at each place stacksym looks for a
/// companion, a symbolic link to a host file: its build-id debug path (absolute link to the
/// host's debug file), its debuglink candidate next to it (relative link with more `..` than
/// the root is deep), the debuglink candidate under its debug dir (a link to a host secret),
/// and its `/tmp` (a link to a host directory holding a perf map of that pid). Then its
/// binary's path is swapped for links after it was mapped.
///
/// Nothing outside the root may be read: the host debug file's lines never appear, the
/// secret's bytes appear nowhere in results or errors; the process's own files still
/// symbolize (and with lines, once its own copy of the debug file is in its root). After
/// the swap the mapped file is still read (through `map_files`); without `map_files` (a fake
/// procfs whose `root` is the process's), a path that now leads elsewhere is refused.
#[test]
fn hostile_container_links_lead_nowhere_outside_its_root() {
    let tools = match container_tools(&["objcopy"]) {
        Ok(tools) => tools,
        Err(why) => return skip(&why),
    };
    let host = tempfile::tempdir().unwrap();
    let wait = bin("c-wait");
    let host_debug = host.path().join("wait.debug");
    let stripped = host.path().join("bin.stripped");
    let objcopy = |args: &[&str]| run(&tools["objcopy"], args);
    objcopy(&[
        "--only-keep-debug",
        wait.to_str().unwrap(),
        host_debug.to_str().unwrap(),
    ]);
    objcopy(&[
        "--strip-debug",
        &format!("--add-gnu-debuglink={}", host_debug.display()),
        wait.to_str().unwrap(),
        stripped.to_str().unwrap(),
    ]);
    let secret_text = "SECRET-ON-THE-HOST root:$y$j9T$hash";
    let secret = host.path().join("secret");
    std::fs::write(&secret, secret_text).unwrap();
    let host_tmp = host.path().join("tmp");
    std::fs::create_dir(&host_tmp).unwrap();
    std::fs::write(host_tmp.join("perf-1.map"), "1000 10 host_jit_SECRET\n").unwrap();

    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path();
    build_root(root, &tools["ldd"]);
    std::fs::copy(&stripped, under(root, Path::new(APP_BIN))).unwrap();
    let id: String = readelf_build_id(&wait)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let build_id_place = under(
        root,
        Path::new(&format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &id[..2],
            &id[2..]
        )),
    );
    let link = |target: &Path, at: &Path| {
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, at).unwrap();
    };
    link(&host_debug, &build_id_place);
    let up = "../".repeat(root.components().count() + 6);
    link(
        &Path::new(&up).join(host_debug.strip_prefix("/").unwrap()),
        &under(root, &Path::new(APP_DIR).join("wait.debug")),
    );
    link(
        &secret,
        &under(root, Path::new("/usr/lib/debug/opt/app/wait.debug")),
    );
    link(&host_tmp, &root.join("tmp"));

    let (container, addrs) = match start_container(root, &tools) {
        Ok(started) => started,
        Err(why) => return skip(&why),
    };
    let host_pid = child_of(container.unshare.id())
        .unwrap_or_else(|| panic!("no child of unshare {}", container.unshare.id()));
    let process = Process::new(host_pid);
    let query = [
        addrs["wait_target"],
        addrs["wait_local"],
        addrs["vhelper"] + 3,
        addrs["puts"],
    ];
    let leaks = |shown: &str| -> Vec<String> {
        [
            host.path().to_str().unwrap(),
            "SECRET",
            "root:$y",
            "host_jit",
        ]
        .iter()
        .filter(|leak| shown.contains(*leak))
        .map(|leak| leak.to_string())
        .collect()
    };

    // ---- Planted links: the process's own files symbolize, no host file is read ---------
    let results = symbolize_pid(&Symbolizer::builder().build(), &process, &query);
    let text = answers_text(&results);
    assert!(leaks(&text).is_empty(), "{:?} in {text}", leaks(&text));
    assert_eq!(name_of(&results, 0), "wait_target", "{text}");
    assert!(
        results.get(0).unwrap().frames.is_empty(),
        "the host-only debug file's lines appeared: {text}"
    );
    assert_eq!(name_of(&results, 2), "vhelper");
    assert!(
        ["puts", "_IO_puts"].contains(&name_of(&results, 3)),
        "{text}"
    );
    let perf_map = format!("{:?}", process.perf_map());
    assert!(leaks(&perf_map).is_empty(), "{perf_map}");

    // ---- The container's own debug file, in its root: lines appear ----------------------
    std::fs::remove_file(&build_id_place).unwrap();
    std::fs::copy(&host_debug, &build_id_place).unwrap();
    let results = symbolize_pid(&Symbolizer::builder().build(), &process, &query);
    let target = results.get(0).expect("wait_target");
    let outer = target
        .frames
        .last()
        .expect("lines from the container's debug file");
    assert!(
        outer.file.as_deref().is_some_and(|f| f.ends_with("wait.c")),
        "{target:?}"
    );

    // ---- The binary's path swapped for a link after it was mapped -----------------------
    // A procfs of the same process without map_files, its maps as they are now (naming
    // /opt/app/bin) and its `root` the process's: stacksym must open the path, confined.
    let fake = tempfile::tempdir().unwrap();
    let fake_dir = fake.path().join(host_pid.to_string());
    std::fs::create_dir(&fake_dir).unwrap();
    for name in ["maps", "stat", "status"] {
        std::fs::copy(format!("/proc/{host_pid}/{name}"), fake_dir.join(name)).unwrap();
    }
    std::os::unix::fs::symlink(format!("/proc/{host_pid}/root"), fake_dir.join("root")).unwrap();
    let without_map_files = Process::with_procfs_root(fake.path(), host_pid);
    // Swapped the way `ln -sf` does it (a link renamed over the path); a hard link keeps the
    // mapped file to put back at the end.
    let app = under(root, Path::new(APP_BIN));
    let kept = app.with_file_name("bin.kept");
    std::fs::hard_link(&app, &kept).unwrap();
    let swap_to = |target: &Path| {
        let next = app.with_file_name("bin.next");
        std::os::unix::fs::symlink(target, &next).unwrap();
        std::fs::rename(&next, &app).unwrap();
    };
    swap_to(&secret);
    // The kernel now shows the mapping as deleted; map_files still opens the very inode.
    let results = symbolize_pid(&Symbolizer::builder().build(), &process, &query);
    let text = answers_text(&results);
    assert_eq!(name_of(&results, 0), "wait_target", "{text}");
    assert!(leaks(&text).is_empty(), "{:?} in {text}", leaks(&text));
    // Without map_files: the link to the host secret leads nowhere inside the root.
    let target_only = [addrs["wait_target"]];
    let results = symbolize_pid(
        &Symbolizer::builder().build(),
        &without_map_files,
        &target_only,
    );
    let text = answers_text(&results);
    assert!(
        matches!(results.not_found(0), Some(NotFound::FileError(_))),
        "{text}"
    );
    assert!(leaks(&text).is_empty(), "{:?} in {text}", leaks(&text));
    // A link to another file of the container: refused, not the inode mapped.
    swap_to(Path::new(APP_LIB));
    let results = symbolize_pid(
        &Symbolizer::builder().build(),
        &without_map_files,
        &target_only,
    );
    let Some(NotFound::FileError(e)) = results.not_found(0) else {
        panic!(
            "a file that is not the one mapped was symbolized: {}",
            answers_text(&results)
        )
    };
    assert!(e.to_string().contains("not the file process"), "{e}");
    // The mapped file back at its path: symbolized again, through the confined path.
    std::fs::rename(&kept, &app).unwrap();
    let results = symbolize_pid(
        &Symbolizer::builder().build(),
        &without_map_files,
        &target_only,
    );
    assert_eq!(name_of(&results, 0), "wait_target");
    drop(container);
}

/// Where the container's CPython lives (the host has nothing there).
const PY_HOME: &str = "/opt/py";
/// The interpreter inside the container.
const PY_BIN: &str = "/opt/py/bin/python3.11";
/// The program it runs, inside the container.
const PY_SCRIPT: &str = "/opt/app/parked.py";

/// The root of a container running Debian's CPython 3.11 (`python`): the interpreter at
/// [`PY_BIN`], its libraries where `ldd` finds them on the host, the standard library's
/// modules testdata/python/parked.py imports (those the host interpreter loads for them,
/// asked with `-S -c`) under `/opt/py/lib/python3.11` (its `PYTHONHOME` is [`PY_HOME`]),
/// and parked.py at [`PY_SCRIPT`]. A few hundred KiB of Python and the interpreter's 7 MB.
fn build_python_root(root: &Path, ldd_tool: &Path, python: &Path) {
    copy_into(root, python, Path::new(PY_BIN));
    for (_, file) in ldd(ldd_tool, python) {
        copy_into(root, &file, &file);
    }
    let asked = "import functools, sys, threading, time\n\
                 print(sys.prefix)\n\
                 for m in list(sys.modules.values()):\n    \
                 f = getattr(m, '__file__', None)\n    \
                 if f: print(f)";
    let listed = run(python, &["-S", "-c", asked]);
    let mut lines = listed.lines();
    let prefix = Path::new(lines.next().expect("sys.prefix")).join("lib/python3.11");
    let mut copied = 0;
    for file in lines.map(Path::new) {
        let Ok(relative) = file.strip_prefix(&prefix) else {
            continue;
        };
        copy_into(
            root,
            file,
            &Path::new(PY_HOME).join("lib/python3.11").join(relative),
        );
        copied += 1;
    }
    assert!(copied > 10, "only {copied} modules listed:\n{listed}");
    // Where the interpreter looks for its extension modules (none of these is one).
    std::fs::create_dir_all(under(
        root,
        &Path::new(PY_HOME).join("lib/python3.11/lib-dynload"),
    ))
    .unwrap();
    copy_into(
        root,
        &manifest().join("testdata/python/parked.py"),
        Path::new(PY_SCRIPT),
    );
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::create_dir_all(root.join(".old")).unwrap();
}

/// A CPython in a container (its own mount and pid namespaces, `pivot_root` into a root that
/// holds the interpreter at a path the host lacks): its Python frames are read from the
/// host by its host pid, the interpreter's file opened through the process
/// (`/proc/PID/map_files`, `/proc/PID/root`), every thread named by its host tid (the
/// interpreter knows them by the namespace's: `NSpid`), its frames py-spy's, and the same
/// in `stacksym pstack --python-only --json`.
#[test]
fn container_python_frames_read_from_the_host() {
    let python = Path::new("/usr/bin/python3.11");
    let tools = match container_tools(&[]) {
        Ok(tools) => tools,
        Err(why) => return skip(&why),
    };
    if !python.is_file() {
        return skip("no /usr/bin/python3.11 (Debian's python3.11)");
    }
    if Path::new(PY_HOME).exists() || Path::new(PY_SCRIPT).exists() {
        return skip(&format!(
            "the host has {PY_HOME} or {PY_SCRIPT}: the test would not show that files are \
             opened through the process"
        ));
    }
    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path();
    build_python_root(root, &tools["ldd"], python);
    let (mut container, _) = match start_program(
        root,
        &tools,
        &[PY_BIN, "-S", "-B", PY_SCRIPT],
        &[("PYTHONHOME", PY_HOME)],
    ) {
        Ok(started) => started,
        Err(why) => return skip(&why),
    };
    let host_pid = child_of(container.unshare.id())
        .unwrap_or_else(|| panic!("no child of unshare {}", container.unshare.id()));
    let ns = nspid(host_pid);
    assert_eq!(ns.len(), 2, "NSpid of {host_pid}: {ns:?}");
    assert_ne!(ns[1], host_pid, "NSpid of {host_pid}: {ns:?}");
    // SAFETY: kill(2) on the container's pid 1, seen from the host; it lives until
    // `container` is dropped (unshare --kill-child).
    let stopped = unsafe { libc::kill(host_pid as libc::pid_t, libc::SIGSTOP) };
    assert_eq!(stopped, 0, "SIGSTOP {host_pid}");
    wait_stopped(host_pid);
    let host_tids: Vec<u32> = std::fs::read_dir(format!("/proc/{host_pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();

    let symbolizer = Symbolizer::builder().build();
    let process = Process::new(host_pid);
    let memory = stacksym::unwind::ProcessMemory::new(host_pid);
    let runtime = symbolizer
        .python_runtime(&process, &memory)
        .expect("the runtime, from the interpreter in the container");
    assert_eq!(runtime.file, Path::new(PY_BIN), "{runtime:?}");
    let stacks = symbolizer
        .python_stacks(&process)
        .expect("the Python threads of the container's process");
    let mut ours: BTreeMap<u64, Frames> = BTreeMap::new();
    let mut by_tid: BTreeMap<u32, Frames> = BTreeMap::new();
    for thread in &stacks.threads {
        let tid = thread.os_tid.expect("every thread matched to a host tid");
        assert!(
            host_tids.contains(&tid),
            "{tid} is no host tid of {host_pid}: {host_tids:?}"
        );
        let frames = thread.frames.as_ref().expect("the thread's frames");
        assert!(
            frames.iter().any(|f| f.file == PY_SCRIPT),
            "thread {tid}: no frame of {PY_SCRIPT}: {frames:?}"
        );
        let frames: Frames = frames
            .iter()
            .map(|f| (f.function.clone(), basename(&f.file), f.line.unwrap_or(0)))
            .collect();
        ours.insert(thread.thread_id, frames.clone());
        by_tid.insert(tid, frames);
    }
    assert_eq!(stacks.threads.len(), 9, "parked.py's threads");
    // The tool on the same process: the same frames, by host tid.
    assert_eq!(
        pstack_python(host_pid, true),
        by_tid,
        "stacksym pstack --python-only, the API"
    );
    // py-spy by CPython's thread_id (its OS thread ids are the namespace's).
    let py_spy_tool = support::find_tool("py-spy");
    if let Some(tool) = &py_spy_tool {
        let theirs: BTreeMap<u64, Frames> = py_spy(tool, host_pid)
            .into_iter()
            .map(|((thread_id, _), frames)| (thread_id, frames))
            .collect();
        assert_eq!(theirs, ours, "py-spy, stacksym");
    } else {
        skip("py-spy not found (pip install py-spy): frames not compared with it");
    }
    let frames: usize = ours.values().map(Vec::len).sum();
    let _ = container.unshare.kill();
    writeln_stderr(format_args!(
        "container_python_frames_read_from_the_host: CPython {} at {PY_BIN} in the \
         container, host pid {host_pid} (pid {} inside): {} threads by host tid, {frames} \
         Python frames{}",
        stacks.version,
        ns[1],
        stacks.threads.len(),
        if py_spy_tool.is_some() {
            ", identical to py-spy's"
        } else {
            ""
        }
    ));
}
