//! perf JIT maps (`/tmp/perf-PID.map`: fixtures in testdata/perfmap, a fake procfs root, a
//! live child) and the vDSO of another process (read from its `/proc/PID/mem`), and how
//! `Symbolizer::symbolize_process_with` routes addresses to them.
//!
//! The vDSO reference is independent of stacksym: the test copies the child's `[vdso]` bytes
//! out of `/proc/PID/mem` itself and asks binutils `nm -D` and `readelf -l` about them.

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use stacksym::addr::AbsAddr;
use stacksym::process::{parse_perf_map, MappingKind, PerfMap, PerfMapSym, Process, ProcessMaps};
use stacksym::NotFound;
use stacksym::{Error, Symbolizer};
use support::writeln_stderr;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn perfmap_fixture(name: &str) -> (PathBuf, Vec<u8>) {
    let path = manifest().join("testdata/perfmap").join(name);
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, text)
}

fn is_root() -> bool {
    // /proc/self is owned by the effective uid.
    std::fs::metadata("/proc/self").map(|m| m.uid()).ok() == Some(0)
}

/// A pid above the kernel's limit (2^22), so no real process and no /tmp file of one has it.
const FAKE_PID: u32 = 4_000_000_123;

/// Removes a file when dropped (files written to the real /tmp).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

// ------------------------------------------------------------------------------------------
// The parser, on fixtures
// ------------------------------------------------------------------------------------------

#[test]
fn fixture_lookups_later_lines_win() {
    let (path, text) = perfmap_fixture("jit.map");
    let map = parse_perf_map(&path, &text).unwrap();
    assert_eq!(map.path(), path);
    assert_eq!(map.len(), 10);
    assert_eq!(map.skipped_lines(), 5);

    let base = 0x7f3c4a000000u64;
    let find = |off: u64| map.find(AbsAddr(base + off));
    let sym = |name, start: u64, size, offset| PerfMapSym {
        name,
        start: AbsAddr(base + start),
        size,
        offset,
    };
    assert_eq!(map.find(AbsAddr(base - 1)), None);
    assert_eq!(find(0), Some(sym("Interpreter", 0, 0x100, 0)));
    assert_eq!(find(0xff), Some(sym("Interpreter", 0, 0x100, 0xff)));
    // Line 2 (0x prefix) is overwritten entirely by line 12 at the same range.
    let star = "LazyCompile:*main /app/index.js:12:5";
    assert_eq!(find(0x100), Some(sym(star, 0x100, 0x40, 0)));
    assert_eq!(find(0x13f), Some(sym(star, 0x100, 0x40, 0x3f)));
    // Upper-case bare hex.
    assert_eq!(
        find(0x150),
        Some(sym("java.lang.String::hashCode()", 0x140, 0x20, 0x10))
    );
    assert_eq!(find(0x160), None);
    // 0X prefix; a later entry re-emitted inside it wins there, the rest stays the stub's.
    let stub = "[stub] call_stub";
    assert_eq!(find(0x200), Some(sym(stub, 0x200, 0x80, 0)));
    let reemitted = "Function:re-emitted   at a reused address";
    assert_eq!(find(0x220), Some(sym(reemitted, 0x220, 0x20, 0)));
    assert_eq!(find(0x23f), Some(sym(reemitted, 0x220, 0x20, 0x1f)));
    assert_eq!(find(0x240), Some(sym(stub, 0x200, 0x80, 0x40)));
    assert_eq!(find(0x27f), Some(sym(stub, 0x200, 0x80, 0x7f)));
    assert_eq!(find(0x280), None);
    // Malformed lines named 0x300 cover nothing.
    assert_eq!(find(0x300), None);
    assert_eq!(find(0x407), Some(sym("tab separated", 0x400, 8, 7)));
    assert_eq!(find(0x408), None);
    assert_eq!(find(0x500), None, "a zero-sized entry covers nothing");
    assert_eq!(find(0x605), Some(sym("crlf name", 0x600, 0x10, 5)));
    assert_eq!(
        find(0x70f),
        Some(sym("no newline at the end", 0x700, 0x10, 0xf))
    );
    assert_eq!(find(0x710), None);
    assert_eq!(map.find(AbsAddr(u64::MAX)), None);
    assert_eq!(map.find(AbsAddr(0)), None);
}

#[test]
fn fixture_without_a_perf_map_line_is_an_error_naming_the_file() {
    let (path, text) = perfmap_fixture("garbage.map");
    let err = parse_perf_map(&path, &text).unwrap_err();
    assert_eq!(err.path(), path);
    let shown = err.to_string();
    assert!(shown.contains("not a perf map"), "{shown}");
    assert!(shown.contains("line 1"), "{shown}");
    // Empty is not an error: a JIT that has not emitted anything yet.
    assert!(parse_perf_map(&path, b"").unwrap().is_empty());
}

#[test]
fn hostile_perf_map_text_never_panics() {
    let cases: &[&[u8]] = &[
        b"0 ffffffffffffffff all",
        b"1 ffffffffffffffff overflows",
        b"0x 0x x",
        b"0x0 0x0 0",
        b"00000000000000000 1 seventeen digits",
        b"+1 1 plus",
        b"\xff\xfe \xff",
        b"10 10 \xff\xfe invalid utf-8",
        b"\r\n\r\n",
        b"\t\t\t",
    ];
    for case in cases {
        if let Ok(map) = parse_perf_map(Path::new("h"), case) {
            for a in [0, 1, 0x10, 0x1f, 0x20, u64::MAX] {
                if let Some(sym) = map.find(AbsAddr(a)) {
                    assert!(sym.start.0 <= a && a - sym.start.0 < sym.size);
                }
            }
        }
    }
    let map = parse_perf_map(Path::new("h"), b"10 10 \xff\xfe invalid utf-8").unwrap();
    assert_eq!(
        map.find(AbsAddr(0x10)).unwrap().name,
        "\u{fffd}\u{fffd} invalid utf-8"
    );
}

// ------------------------------------------------------------------------------------------
// Finding and trusting the file: a fake procfs root
// ------------------------------------------------------------------------------------------

/// `<root>/<pid>/{status,stat,root/tmp/}` (pid FAKE_PID unless told) standing in for a
/// container process whose pid in its own namespace is 7.
struct FakeProc {
    dir: tempfile::TempDir,
    pid: u32,
}

impl FakeProc {
    fn new(uid: u32) -> FakeProc {
        FakeProc::with_pid(FAKE_PID, uid)
    }

    fn with_pid(pid: u32, uid: u32) -> FakeProc {
        let dir = tempfile::tempdir().unwrap();
        let proc_dir = dir.path().join(pid.to_string());
        std::fs::create_dir_all(proc_dir.join("root/tmp")).unwrap();
        let fake = FakeProc { dir, pid };
        fake.set_uid(uid);
        std::fs::write(
            proc_dir.join("stat"),
            format!("{pid} (fake (jit)) S 1 1 1 0 -1 0\n"),
        )
        .unwrap();
        fake
    }

    fn set_uid(&self, uid: u32) {
        let pid = self.pid;
        let status = format!(
            "Name:\tfake\nState:\tS (sleeping)\nPid:\t{pid}\n\
             Uid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t0\t0\t0\t0\nNSpid:\t{pid}\t7\n"
        );
        std::fs::write(self.proc_dir().join("status"), status).unwrap();
    }

    fn proc_dir(&self) -> PathBuf {
        self.dir.path().join(self.pid.to_string())
    }

    /// The map as the container process wrote it: its /tmp, its own pid.
    fn container_map(&self) -> PathBuf {
        self.proc_dir().join("root/tmp/perf-7.map")
    }

    fn process(&self) -> Process {
        Process::with_procfs_root(self.dir.path(), self.pid)
    }
}

#[test]
fn container_map_is_found_by_nspid_in_the_container_tmp() {
    let fake = FakeProc::new(0);
    let process = fake.process();
    assert_eq!(process.ns_pid().unwrap(), 7);
    assert_eq!(process.perf_map().unwrap(), None, "no map anywhere");

    std::fs::write(fake.container_map(), "1000 100 in the container\n").unwrap();
    let map = process.perf_map().unwrap().expect("the container's map");
    assert_eq!(map.path(), fake.container_map());
    assert_eq!(map.find(AbsAddr(0x1010)).unwrap().name, "in the container");
}

#[test]
fn host_tmp_map_is_the_fallback() {
    // Its own pid: the other tests expect no host map for FAKE_PID.
    let fake = FakeProc::with_pid(FAKE_PID + 1, 0);
    let host = PathBuf::from(format!("/tmp/perf-{}.map", fake.pid));
    let _cleanup = RemoveOnDrop(host.clone());
    std::fs::write(&host, "2000 10 on the host\n").unwrap();
    let map = fake.process().perf_map().unwrap().expect("the host's map");
    assert_eq!(map.path(), host);
    assert_eq!(map.find(AbsAddr(0x2000)).unwrap().name, "on the host");

    // The container's own map comes first.
    std::fs::write(fake.container_map(), "2000 10 in the container\n").unwrap();
    let map = fake.process().perf_map().unwrap().unwrap();
    assert_eq!(map.find(AbsAddr(0x2000)).unwrap().name, "in the container");

    // A map that is no perf map is an error naming it, not silently nothing.
    std::fs::write(fake.container_map(), "#!/bin/sh\necho hello\n").unwrap();
    let err = fake.process().perf_map().unwrap_err();
    assert_eq!(err.path(), fake.container_map());
}

#[test]
fn map_owned_by_another_user_is_ignored() {
    if !is_root() {
        writeln_stderr(format_args!("skipped: needs root (chown to another uid)"));
        return;
    }
    // The process runs as root (uid 0); the map belongs to nobody (65534).
    let fake = FakeProc::new(0);
    let map = fake.container_map();
    std::fs::write(&map, "1000 100 planted by someone else\n").unwrap();
    std::os::unix::fs::chown(&map, Some(65534), Some(65534)).unwrap();
    assert_eq!(fake.process().perf_map().unwrap(), None);

    // The process runs as 65534 itself: its own file is used.
    fake.set_uid(65534);
    let found = fake.process().perf_map().unwrap().expect("its own map");
    assert_eq!(
        found.find(AbsAddr(0x1000)).unwrap().name,
        "planted by someone else"
    );

    // The process runs as 1000: neither its file nor root's.
    fake.set_uid(1000);
    assert_eq!(fake.process().perf_map().unwrap(), None);

    // A root-owned file is trusted for any process.
    std::os::unix::fs::chown(&map, Some(0), Some(0)).unwrap();
    assert!(fake.process().perf_map().unwrap().is_some());
}

#[test]
fn symlinked_or_fifo_map_is_ignored() {
    let fake = FakeProc::new(0);
    let target = fake.dir.path().join("elsewhere.map");
    std::fs::write(&target, "1000 100 through a symlink\n").unwrap();
    std::os::unix::fs::symlink(&target, fake.container_map()).unwrap();
    assert_eq!(fake.process().perf_map().unwrap(), None);

    // A FIFO would block a reader forever; it is not opened.
    std::fs::remove_file(fake.container_map()).unwrap();
    let status = Command::new("mkfifo")
        .arg(fake.container_map())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(fake.process().perf_map().unwrap(), None);
}

#[test]
fn perf_map_of_a_missing_process_is_an_error_naming_the_pid() {
    let dir = tempfile::tempdir().unwrap();
    let err = Process::with_procfs_root(dir.path(), 12345)
        .perf_map()
        .unwrap_err();
    assert!(
        matches!(err, Error::ProcessGone { pid: 12345, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("process 12345"), "{err}");
}

// ------------------------------------------------------------------------------------------
// Routing in symbolize_process_with, on the fake procfs
// ------------------------------------------------------------------------------------------

#[test]
fn routing_jit_and_vdso_addresses_on_a_fake_procfs() {
    let fake = FakeProc::new(0);
    std::fs::write(
        fake.container_map(),
        "7f0000001000 100 LazyCompile:~handler /app/server.js:3\n\
         7f0000003000 100 stub in a non-exec mapping\n\
         7f0000005000 40 v8 builtin\n",
    )
    .unwrap();
    let maps = ProcessMaps::from_bytes(
        Path::new("fake maps"),
        b"7f0000000000-7f0000002000 r-xp 00000000 00:00 0\n\
          7f0000003000-7f0000004000 rw-p 00000000 00:00 0\n\
          7f0000005000-7f0000006000 r-xp 00000000 00:00 0    [anon:v8 code]\n\
          7f0000010000-7f0000012000 r-xp 00000000 00:00 0    [vdso]\n",
    )
    .unwrap();
    let symbolizer = Symbolizer::builder().build();
    let addrs = [
        0x7f0000001010,
        0x7f0000000010,
        0x7f0000003010,
        0x7f0000005001,
        0x7f0000010010,
        0x1,
    ]
    .map(AbsAddr);
    let results = support::in_process(&symbolizer, &fake.process(), Some(&maps), &addrs).unwrap();

    let found = results.get(0).expect("a perf-map symbol");
    assert_eq!(found.name, "LazyCompile:~handler /app/server.js:3");
    assert_eq!(found.offset, 0x10);
    assert_eq!(found.addr.raw(), 0x7f0000001000);
    assert_eq!(found.size, 0x100);
    assert_eq!(found.module, fake.container_map());
    assert_eq!(
        found.file_offset().unwrap().0,
        0x1010,
        "offset in the mapping"
    );

    assert!(
        matches!(
            results.not_found(1),
            Some(NotFound::NotInFile(MappingKind::Anonymous))
        ),
        "exec memory the map does not cover: {:?}",
        results.result(1)
    );
    assert!(
        matches!(
            results.not_found(2),
            Some(NotFound::NotInFile(MappingKind::Anonymous))
        ),
        "not executable: the perf map is not asked: {:?}",
        results.result(2)
    );
    assert_eq!(results.get(3).unwrap().name, "v8 builtin");
    // The fake process has no mem file: its vDSO cannot be read; the error names the pid.
    match results.not_found(4) {
        Some(NotFound::FileError(e)) => {
            assert!(
                e.to_string().contains(&format!("process {FAKE_PID}")),
                "{e}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(results.not_found(5), Some(NotFound::Unmapped)));
}

// ------------------------------------------------------------------------------------------
// Live children
// ------------------------------------------------------------------------------------------

/// A running testdata/bin/c-wait (blocks reading stdin): killed when dropped.
struct Waiter {
    child: Child,
    pid: u32,
}

impl Waiter {
    fn spawn() -> Waiter {
        let path = manifest().join("testdata/bin/c-wait");
        let mut child = Command::new(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stdout = child.stdout.take().unwrap();
        let mut said: HashMap<String, String> = HashMap::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if line == "ready" {
                break;
            }
            let (k, v) = line.split_once(' ').unwrap();
            said.insert(k.into(), v.into());
        }
        let pid = child.id();
        assert_eq!(said["pid"], pid.to_string());
        Waiter { child, pid }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn live_vdso_of_a_child_is_read_from_its_memory() {
    let waiter = Waiter::spawn();
    let process = Process::new(waiter.pid);
    let maps = process.read_maps().unwrap();
    let Some(mapping) = maps.mappings().iter().find(|m| m.kind == MappingKind::Vdso) else {
        writeln_stderr(format_args!("skipped: the child has no [vdso] (vdso=0?)"));
        return;
    };
    let start = mapping.range.start.0;
    let len = mapping.range.end.0 - start;

    // The reference: the same bytes, copied out by the test, read by binutils.
    let mut bytes = vec![0u8; len as usize];
    std::fs::File::open(format!("/proc/{}/mem", waiter.pid))
        .unwrap()
        .read_exact_at(&mut bytes, start)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("vdso.so");
    std::fs::write(&image, &bytes).unwrap();
    let image = image.to_str().unwrap();
    // Defined functions by address: nm -D prints "ADDR T NAME" (NAME@@VERSION on new binutils).
    let mut by_addr: HashMap<u64, Vec<String>> = HashMap::new();
    for line in run("nm", &["-D", "--defined-only", image]).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 3 && (f[1] == "T" || f[1] == "W") {
            let name = f[2].split('@').next().unwrap().to_string();
            by_addr
                .entry(u64::from_str_radix(f[0], 16).unwrap())
                .or_default()
                .push(name);
        }
    }
    let (&target, names) = by_addr
        .iter()
        .find(|(_, names)| names.iter().any(|n| n.contains("gettime")))
        .expect("a *gettime* function in the vDSO");
    // The first PT_LOAD (p_offset, p_vaddr), by readelf: virtual address -> image offset.
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let (p_offset, p_vaddr) = run("readelf", &["-lW", image])
        .lines()
        .find(|l| l.trim_start().starts_with("LOAD "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (hex(f[1]), hex(f[2]))
        })
        .unwrap();
    let abs = start + (target - p_vaddr + p_offset) + 1;

    // Through the API: the child's vDSO as an ELF file.
    let vdso = process.vdso(&maps).unwrap().expect("the child's vDSO");
    assert_eq!(vdso.path(), Path::new(&format!("[vdso] of {}", waiter.pid)));
    let sym = vdso
        .find_symbol(stacksym::VirtAddr(target + 1))
        .unwrap()
        .unwrap();
    let name = sym.name_str.unwrap();
    assert!(names.iter().any(|n| n == name), "{name} vs {names:?}");

    // Through the process path: start + 1 of the function, in the [vdso] mapping.
    let symbolizer = Symbolizer::builder().build();
    let results = support::in_process(
        &symbolizer,
        &process,
        Some(&maps),
        &[AbsAddr(abs), AbsAddr(start)],
    )
    .unwrap();
    // The ELF header at the start of the image: in the vDSO, in no symbol.
    assert!(
        matches!(
            results.not_found(1),
            Some(NotFound::NotInFile(MappingKind::Vdso))
        ),
        "{:?}",
        results.result(1)
    );
    let found = results
        .get(0)
        .unwrap_or_else(|| panic!("{:?}", results.result(0)));
    assert!(
        names.iter().any(|n| n == found.name),
        "{} vs {names:?}",
        found.name
    );
    assert_eq!(found.offset, 1);
    assert_eq!(found.addr.raw(), target);
    assert_eq!(found.module, Path::new("[vdso]"));
    assert_eq!(found.file_offset().unwrap().0, abs - start);
}

#[test]
fn live_perf_map_of_a_child_routes_its_anonymous_memory() {
    let waiter = Waiter::spawn();
    let process = Process::new(waiter.pid);
    let maps = process.read_maps().unwrap();
    let anon = maps
        .mappings()
        .iter()
        .find(|m| m.kind == MappingKind::Anonymous)
        .expect("an anonymous mapping in c-wait")
        .clone();
    let (start, end) = (anon.range.start.0, anon.range.end.0);
    // The child runs as root, in our pid namespace: /proc/PID/root/tmp is our /tmp.
    let path = PathBuf::from(format!("/tmp/perf-{}.map", waiter.pid));
    let _cleanup = RemoveOnDrop(path.clone());
    std::fs::write(
        &path,
        format!(
            "{start:x} 10 jit one\n0x{:x} 20 jit two with spaces\n",
            start + 0x10
        ),
    )
    .unwrap();
    assert_eq!(process.ns_pid().unwrap(), waiter.pid);

    let map: PerfMap = process.perf_map().unwrap().expect("the child's perf map");
    assert_eq!(
        map.find(AbsAddr(start + 0x15)).unwrap().name,
        "jit two with spaces"
    );
    assert_eq!(map.find(AbsAddr(start + 0x30)), None);

    // c-wait has no executable anonymous memory; the same mapping, marked executable, stands
    // in for a JIT's code cache. Unmarked, the perf map is not asked.
    let symbolizer = Symbolizer::builder().build();
    let addrs = [AbsAddr(start + 3), AbsAddr(start + 0x2f)];
    let plain = support::in_process(&symbolizer, &process, Some(&maps), &addrs).unwrap();
    assert!(plain.iter().all(|r| r.is_none()), "{plain:?}");

    let mut exec = anon.clone();
    exec.perms.exec = true;
    let mut mappings: Vec<_> = maps
        .mappings()
        .iter()
        .filter(|m| m.range.start.0 != start)
        .cloned()
        .collect();
    mappings.push(exec);
    let jit_maps = ProcessMaps::from_mappings(mappings);
    let results = support::in_process(&symbolizer, &process, Some(&jit_maps), &addrs).unwrap();
    let one = results.get(0).unwrap();
    assert_eq!((one.name, one.offset), ("jit one", 3));
    // Found through the child's root, which is ours.
    let through_root = format!("/proc/{0}/root/tmp/perf-{0}.map", waiter.pid);
    assert_eq!(one.module, Path::new(&through_root));
    let two = results.get(1).unwrap();
    assert_eq!((two.name, two.offset), ("jit two with spaces", 0x1f));
    assert!(end > start + 0x30);
}

#[test]
fn exited_child_vdso_and_perf_map_are_errors_naming_the_pid() {
    let mut waiter = Waiter::spawn();
    let pid = waiter.pid;
    let process = Process::new(pid);
    let maps = process.read_maps().unwrap();
    waiter.child.kill().unwrap();
    waiter.child.wait().unwrap();

    let err = process.perf_map().unwrap_err();
    assert!(err.to_string().contains(&format!("process {pid}")), "{err}");
    if maps.mappings().iter().any(|m| m.kind == MappingKind::Vdso) {
        let err = process.vdso(&maps).unwrap_err();
        assert!(err.to_string().contains(&format!("process {pid}")), "{err}");
        // Through the façade the whole call fails: the process is gone.
        let vdso = maps
            .mappings()
            .iter()
            .find(|m| m.kind == MappingKind::Vdso)
            .unwrap();
        let symbolizer = Symbolizer::builder().build();
        let err = support::in_process(&symbolizer, &process, Some(&maps), &[vdso.range.start])
            .unwrap_err();
        assert!(err.to_string().contains(&format!("process {pid}")), "{err}");
    }
}

/// The symbolizer keeps a process's perf map between batches (a JIT's map can be tens of
/// MB) and reads it again when the file changes, as it does when the JIT appends. Checked by
/// rewriting the map in place with its old size and mtime (the cached map must still
/// answer), then appending a line (the new line must be found).
#[test]
fn perf_map_is_cached_and_read_again_when_it_grows() {
    let fake = FakeProc::new(0);
    std::fs::write(
        fake.proc_dir().join("maps"),
        "7f0000000000-7f0000100000 rwxp 00000000 00:00 0\n",
    )
    .unwrap();
    // A start time (field 22), which caches are keyed by along with the pid.
    std::fs::write(
        fake.proc_dir().join("stat"),
        format!(
            "{} (fake (jit)) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n",
            fake.pid
        ),
    )
    .unwrap();
    let map_file = fake.container_map();
    std::fs::write(&map_file, "7f0000001000 100 jit_alpha\n").unwrap();
    let mtime = std::fs::metadata(&map_file).unwrap().modified().unwrap();
    let process = fake.process();
    let symbolizer = Symbolizer::builder().build();
    let name = |addr: u64| {
        let results = support::in_process(&symbolizer, &process, None, &[AbsAddr(addr)]).unwrap();
        results.get(0).map(|s| s.name.to_string())
    };
    assert_eq!(name(0x7f00_0000_1010).as_deref(), Some("jit_alpha"));

    // Same size, same mtime, other bytes: the cached map answers.
    std::fs::write(&map_file, "7f0000001000 100 jit_omega\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&map_file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(
        name(0x7f00_0000_1010).as_deref(),
        Some("jit_alpha"),
        "cached"
    );

    // The JIT appends: read again.
    let mut text = std::fs::read_to_string(&map_file).unwrap();
    text += "7f0000002000 80 jit_beta\n";
    std::fs::write(&map_file, text).unwrap();
    assert_eq!(name(0x7f00_0000_2004).as_deref(), Some("jit_beta"));
    assert_eq!(name(0x7f00_0000_1010).as_deref(), Some("jit_omega"));
}
