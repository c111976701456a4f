//! Processes: `/proc/PID/maps` fixtures (testdata/maps), a fake procfs root standing in for a
//! container's, and live children (testdata/bin/c-wait) symbolized and normalized through
//! their pid, including one whose binary was deleted after it started and ones that exited.
//!
//! References are independent of stacksym: binutils `nm` (symbol addresses), `readelf -l`
//! (segments) and `readelf -n` (build-id), and the child's own report of its addresses.

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use stacksym::addr::AbsAddr;
use stacksym::process::{
    parse_maps, Dev, MappingKind, Normalized, NormalizedAddr, Perms, Process, ProcessMaps,
};
use stacksym::NotFound;
use stacksym::{Error, FileOffset, Symbolizer};
use support::waiter::Waiter;
use support::writeln_stderr;
use support::{name_of, nm_addr, readelf_build_id, readelf_file_offset, readelf_loads};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> (PathBuf, Vec<u8>) {
    let path = manifest().join("testdata/maps").join(name);
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, text)
}

fn bin(name: &str) -> PathBuf {
    manifest().join("testdata/bin").join(name)
}

// ------------------------------------------------------------------------------------------
// Fixtures
// ------------------------------------------------------------------------------------------

#[test]
fn fixture_every_kind_of_line() {
    let (path, text) = fixture("all-kinds.txt");
    let maps = ProcessMaps::from_bytes(&path, &text).unwrap();
    let kinds: Vec<&MappingKind> = maps.mappings().iter().map(|m| &m.kind).collect();
    let file = |p: &str, deleted| MappingKind::File {
        path: p.into(),
        deleted,
    };
    let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
    assert_eq!(
        kinds,
        [
            &file("/usr/bin/my prog", false),
            &file("/usr/bin/my prog", false),
            &file("/usr/bin/my prog", false),
            &MappingKind::Heap,
            &MappingKind::Anonymous,
            &MappingKind::Memfd {
                name: "jit code".into()
            },
            &MappingKind::AnonNamed("[anon:v8 heap]".into()),
            &file(libc, false),
            &file(libc, false),
            &file("/opt/app/lib/old lib.so", true),
            &file("/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache", false),
            &file("/SYSV00000000", true),
            &MappingKind::Vvar,
            &MappingKind::Vdso,
            &MappingKind::Other("anon_inode:[perf_event]".into()),
            &MappingKind::Stack,
            &MappingKind::Vsyscall,
        ]
    );

    let m = &maps.mappings()[1];
    assert_eq!(m.range.start, AbsAddr(0x5581a0a02000));
    assert_eq!(m.range.end, AbsAddr(0x5581a0a07000));
    assert_eq!(
        m.perms,
        Perms {
            read: true,
            write: false,
            exec: true,
            shared: false
        }
    );
    assert_eq!(m.file_offset, FileOffset(0x2000));
    assert_eq!(
        m.dev,
        Dev {
            major: 0xfe,
            minor: 0
        }
    );
    assert_eq!(m.inode, 247030);
    assert!(maps.mappings()[10].perms.shared);

    // Lookups: first and last byte, one past the end, gaps, the edges of the address space.
    let find = |a: u64| maps.find(AbsAddr(a)).map(|m| m.range.start.0);
    assert_eq!(find(0x5581a0a02000), Some(0x5581a0a02000));
    assert_eq!(find(0x5581a0a06fff), Some(0x5581a0a02000));
    assert_eq!(find(0x5581a0a0a000), None);
    assert_eq!(find(0), None);
    assert_eq!(find(u64::MAX), None);
    assert_eq!(find(0xffffffffff600000), Some(0xffffffffff600000));

    // The one conversion: addr - start + offset.
    let exec = maps.find(AbsAddr(0x5581a0a02123)).unwrap();
    assert_eq!(
        exec.file_offset(AbsAddr(0x5581a0a02123)),
        Some(FileOffset(0x2123))
    );
    assert_eq!(exec.file_offset(AbsAddr(0x5581a0a07000)), None);

    // Where files are opened from.
    let p = Process::with_procfs_root("/host/proc", 4321);
    let open = |a: u64| p.open_path(maps.find(AbsAddr(a)).unwrap());
    assert_eq!(
        open(0x5581a0a02000),
        Some("/host/proc/4321/root/usr/bin/my prog".into())
    );
    assert_eq!(
        open(0x7f2914000010),
        Some("/host/proc/4321/map_files/7f2914000000-7f2914001000".into())
    );
    assert_eq!(
        open(0x7f2913dc0000),
        Some("/host/proc/4321/map_files/7f2913dc0000-7f2913dc1000".into())
    );
    assert_eq!(open(0x7f2914014000), None, "vdso");
    assert_eq!(open(0x5581a1c5b000), None, "heap");

    // Normalization without files to read: paths and offsets, no build-ids; non-files typed.
    let norm = p.normalize_with(
        &maps,
        &[
            AbsAddr(0x7f2913e48000 + 0x10),
            AbsAddr(0x7f2914014000),
            AbsAddr(0x7f2913d9e000),
            AbsAddr(0x7ffd5c9e1000),
            AbsAddr(0x1000),
            AbsAddr(0x7f2913dc0008),
        ],
    );
    assert_eq!(
        norm,
        [
            Normalized::File(NormalizedAddr {
                build_id: None,
                file_offset: FileOffset(0x26010),
                virt_addr: None,
                path: libc.into(),
                deleted: false,
            }),
            Normalized::NotInFile(MappingKind::Vdso),
            Normalized::NotInFile(MappingKind::Anonymous),
            Normalized::NotInFile(MappingKind::Stack),
            Normalized::Unmapped,
            Normalized::File(NormalizedAddr {
                build_id: None,
                file_offset: FileOffset(8),
                virt_addr: None,
                path: "/memfd:jit code".into(),
                deleted: true,
            }),
        ]
    );
}

#[test]
fn fixture_malformed_line_is_an_error_naming_file_and_line() {
    let (path, text) = fixture("malformed.txt");
    let err = ProcessMaps::from_bytes(&path, &text).unwrap_err();
    assert_eq!(err.path(), path);
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("{}: line 3: ", path.display())),
        "{shown}"
    );
    assert!(matches!(err, Error::Process { .. }));
    assert_eq!(
        err.kind(),
        stacksym::ErrorKind::Malformed,
        "told apart from a gone process"
    );
}

#[test]
fn hostile_maps_text_never_panics() {
    let name = Path::new("/proc/1/maps");
    let cases: &[&[u8]] = &[
        b"",
        b"\n\n\n",
        b"-",
        b"- - - - -",
        b"0-0 ---p 0 0:0 0",
        b"0-ffffffffffffffff rwxs ffffffffffffffff ffffffff:ffffffff 18446744073709551615 /x",
        b"0-1 r--p 0 0:0 18446744073709551616 /x",
        b"1-2 r--p 0 100000000:0 0",
        b"1-2 r--p 0 0:0 0 \xff\xfe (deleted)",
        b"1-2 r--p 0 0:0 0 /\xff\xfe (deleted)",
        b"1-2 r--p 0 0:0 0 [",
        b"1-2 r--p 0 0:0 0 /memfd:",
        b"1-2 r--p 0 0:0 0  (deleted)",
        b"\x00\x00\x00",
    ];
    for &text in cases {
        if let Ok(maps) = ProcessMaps::from_bytes(name, text) {
            for addr in [0, 1, 2, u64::MAX] {
                if let Some(m) = maps.find(AbsAddr(addr)) {
                    let _ = m.file_offset(AbsAddr(addr));
                }
            }
            let _ = Process::new(1).normalize_with(&maps, &[AbsAddr(1), AbsAddr(u64::MAX)]);
        }
    }
    // A huge offset near the end of the address space: no overflow.
    let maps = parse_maps(
        name,
        b"fffffffffffff000-ffffffffffffffff r-xp fffffffffffffff0 0:0 1 /x\n",
    )
    .unwrap();
    assert_eq!(maps[0].file_offset(AbsAddr(u64::MAX - 1)), None);
    assert_eq!(
        maps[0].file_offset(AbsAddr(0xfffffffffffff000)),
        Some(FileOffset(0xfffffffffffffff0))
    );
}

// ------------------------------------------------------------------------------------------
// A fake procfs root: the maps name a path that exists only under <root>/<pid>/root, as for a
// process in a container. No child process, no root needed.
// ------------------------------------------------------------------------------------------

/// The `MAJOR:MINOR INODE` columns a maps line would show for the file at `path`.
fn dev_inode(path: &Path) -> String {
    let meta = std::fs::metadata(path).unwrap();
    let (dev, inode) = (meta.dev(), meta.ino());
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    format!("{major:02x}:{minor:02x} {inode}")
}

/// A fake procfs holding one process, `pid`, that maps `binary` as `path` (an absolute path
/// inside its root, where the file is copied): every `PT_LOAD`, page-aligned, from `base`,
/// as ld.so maps it, then the lines of `extra_maps`. The temporary dir holds it all.
fn fake_process(
    binary: &Path,
    path: &str,
    pid: u32,
    base: u64,
    extra_maps: &str,
) -> (tempfile::TempDir, Process) {
    let procfs = tempfile::tempdir().unwrap();
    let proc_dir = procfs.path().join(pid.to_string());
    let in_root = proc_dir.join("root").join(path.trim_start_matches('/'));
    std::fs::create_dir_all(in_root.parent().unwrap()).unwrap();
    std::fs::copy(binary, &in_root).unwrap();
    std::fs::write(proc_dir.join("stat"), format!("{pid} (app) S 1")).unwrap();
    // The copy's own device and inode, as the kernel would write them: stacksym opens the
    // path confined to the root and refuses a file that is not the one the maps line names.
    let dev_inode = dev_inode(&in_root);
    let mut maps = String::new();
    for (off, vaddr, size) in readelf_loads(binary) {
        let start = base + (vaddr & !0xfff);
        let end = (base + vaddr + size + 0xfff) & !0xfff;
        maps += &format!(
            "{start:x}-{end:x} r-xp {:08x} {dev_inode}      {path}\n",
            off & !0xfff
        );
    }
    maps += extra_maps;
    std::fs::write(proc_dir.join("maps"), maps).unwrap();
    let process = Process::with_procfs_root(procfs.path(), pid);
    (procfs, process)
}

/// Where a root's default debug dir holds the debug file of `binary` by its build-id
/// (`usr/lib/debug/.build-id/xx/rest.debug`, relative), and the committed debug file for it in
/// testdata/debug.
fn build_id_debug_file(binary: &Path) -> (String, PathBuf) {
    let id: String = readelf_build_id(binary)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let rel = format!("usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]);
    let debug = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/debug")
        .join(rel.strip_prefix("usr/lib/debug/").unwrap());
    (rel, debug)
}

/// A container's debug files live in its own root: `c-buildid` (its DWARF stripped into a
/// debug file found by build-id) is mapped from `<root>/opt/app`, and
/// its debug file sits only under `<root>/usr/lib/debug/.build-id/`. The symbolizer (debug
/// dirs: the default `/usr/lib/debug`) must look inside the root first and find it.
#[test]
fn debug_files_are_searched_inside_the_process_root_first() {
    let stripped = bin("c-buildid");
    let (rel, debug) = build_id_debug_file(&stripped);
    assert!(debug.is_file(), "{} is committed", debug.display());

    let base = 0x5600_0000_0000u64;
    let (_procfs, process) = fake_process(&stripped, "/opt/app/c-buildid", 4343, base, "");
    let root = process.root_dir();
    std::fs::create_dir_all(root.join(&rel).parent().unwrap()).unwrap();
    let checksum = base + nm_addr(&debug, "checksum") + 4;

    let without = Symbolizer::builder().build();
    let results = support::in_process(&without, &process, None, &[AbsAddr(checksum)]).unwrap();
    let before = results.get(0).expect("named by the binary's own .symtab");
    assert_eq!(before.name, "checksum");
    assert!(
        before.frames.is_empty(),
        "without the container's debug file there is no DWARF: {:?}",
        before.frames
    );

    std::fs::copy(&debug, root.join(&rel)).unwrap();
    let with = Symbolizer::builder().build();
    let results = support::in_process(&with, &process, None, &[AbsAddr(checksum)]).unwrap();
    let sym = results
        .get(0)
        .expect("found through the container's debug file");
    assert_eq!(sym.name, "checksum");
    let outer = sym.frames.last().expect("DWARF lines from the debug file");
    assert_eq!(
        outer.function.as_ref().map(|f| f.raw.as_str()),
        Some("checksum")
    );
    assert!(
        outer.file.as_deref().is_some_and(|f| f.ends_with("demo.c")),
        "{outer:?}"
    );
}

/// Links a process plants in its root must not lead the host out of it. For each place a
/// process's file names another (its build-id debug file, its debuglink file, its
/// split-DWARF `.dwo`, its debug file's dwz supplementary file, its perf map's directory),
/// the test runs a fake procfs three ways: the file absent, the place holding a symbolic link (absolute, and relative with more `..` than the root is
/// deep) to a host-only copy of the right file or to a host secret, and the process's own
/// copy in place. The links must read as absent (the host copy's DWARF never shows), the
/// own copy must be used, and no result or error may name the host files or quote the secret.
/// No root needed: the fake root is a plain directory, and the kernel alone would follow the
/// absolute links to the host.
#[test]
fn links_planted_in_a_process_root_lead_nowhere_outside_it() {
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret");
    std::fs::write(&secret, "SECRET-ON-THE-HOST root:$y$j9T$hash").unwrap();
    let host_copy = |from: &Path, name: &str| {
        let to = host.path().join(name);
        std::fs::copy(from, &to).unwrap();
        to
    };

    struct Case {
        what: &'static str,
        binary: PathBuf,
        /// Where in the root the companion goes.
        place: String,
        /// The right file for that place.
        own: PathBuf,
        /// A host copy of it (or the secret).
        host: PathBuf,
        /// The process's own files that the place is found through (in its root in every
        /// run): its debug file, for the dwz case.
        also: Vec<(String, PathBuf)>,
    }
    let buildid = bin("c-buildid");
    let (buildid_place, buildid_debug) = build_id_debug_file(&buildid);
    let dwz_common =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/debug/.dwz/stacksym-c-dwz.debug");
    let cases = [
        Case {
            what: "build-id debug file",
            place: buildid_place.clone(),
            host: host_copy(&buildid_debug, "c-buildid.debug"),
            own: buildid_debug.clone(),
            binary: buildid.clone(),
            also: Vec::new(),
        },
        Case {
            what: "build-id debug file, link to a secret",
            place: buildid_place,
            host: secret.clone(),
            own: buildid_debug,
            binary: buildid,
            also: Vec::new(),
        },
        Case {
            what: "debuglink file",
            place: "opt/app/c-debuglink.debug".into(),
            host: host_copy(&bin("c-debuglink.debug"), "c-debuglink.debug"),
            own: bin("c-debuglink.debug"),
            binary: bin("c-debuglink"),
            also: Vec::new(),
        },
        Case {
            what: "split-DWARF .dwo",
            place: "opt/app/c-split-dwarf.dwo".into(),
            host: host_copy(&bin("c-split-dwarf.dwo"), "c-split-dwarf.dwo"),
            own: bin("c-split-dwarf.dwo"),
            binary: bin("c-split-dwarf"),
            also: Vec::new(),
        },
        Case {
            // c-dwz-a's debug file names ../../.dwz/stacksym-c-dwz.debug in its
            // .gnu_debugaltlink (testdata/README.md, "dwz").
            what: "dwz supplementary file",
            place: "usr/lib/debug/.dwz/stacksym-c-dwz.debug".into(),
            host: host_copy(&dwz_common, "stacksym-c-dwz.debug"),
            own: dwz_common.clone(),
            binary: bin("c-dwz-a"),
            also: vec![build_id_debug_file(&bin("c-dwz-a"))],
        },
    ];
    let base = 0x5600_0000_0000u64;
    for case in &cases {
        let name = case.binary.file_name().unwrap().to_str().unwrap();
        let (_procfs, process) =
            fake_process(&case.binary, &format!("/opt/app/{name}"), 4646, base, "");
        let place = process.root_dir().join(&case.place);
        std::fs::create_dir_all(place.parent().unwrap()).unwrap();
        for (at, from) in &case.also {
            let to = process.root_dir().join(at);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(from, to).unwrap();
        }
        // Every address of checksum(), which has inlined calls and lines.
        // A stripped binary's symbols are in its debug file.
        let symbols = case.also.first().map_or(&case.binary, |(_, debug)| debug);
        let start = nm_addr(symbols, "checksum");
        let addrs: Vec<AbsAddr> = (0..0x60).map(|i| AbsAddr(base + start + i)).collect();
        let run = || -> Vec<String> {
            let symbolizer = Symbolizer::builder().build();
            let results = support::in_process(&symbolizer, &process, None, &addrs).unwrap();
            results.results().map(|r| format!("{r:?}")).collect()
        };
        // The first address whose answers differ, and both answers.
        let first_difference = |a: &[String], b: &[String]| {
            a.iter()
                .zip(b)
                .find(|(x, y)| x != y)
                .map(|(x, y)| format!("{x}\n  vs\n{y}"))
        };
        let absent = run();
        let depth = place.components().count();
        let relative =
            Path::new(&"../".repeat(depth + 3)).join(case.host.strip_prefix("/").unwrap());
        for target in [case.host.clone(), relative] {
            std::os::unix::fs::symlink(&target, &place).unwrap();
            let planted = run();
            if let Some(difference) = first_difference(&planted, &absent) {
                panic!(
                    "{}: a link to {} changed the answers:\n{difference}",
                    case.what,
                    target.display()
                );
            }
            let shown = planted.join("\n");
            for leaked in [host.path().to_str().unwrap(), "SECRET", "root:$y"] {
                assert!(
                    !shown.contains(leaked),
                    "{}: {leaked:?} in {shown}",
                    case.what
                );
            }
            std::fs::remove_file(&place).unwrap();
        }
        std::fs::copy(&case.own, &place).unwrap();
        let own = run();
        assert!(
            first_difference(&own, &absent).is_some(),
            "{}: the process's own copy was not used",
            case.what
        );
    }

    // The perf map, in a /tmp that is a link to a host directory holding a map.
    let jit = "7f0000000000-7f0000010000 r-xp 00000000 00:00 0\n";
    let (_procfs, process) = fake_process(&bin("c-wait"), "/opt/app/c-wait", 4747, base, jit);
    std::fs::write(
        process.proc_dir().join("status"),
        "Uid:\t0\t0\t0\t0\nNSpid:\t4747\t1\n",
    )
    .unwrap();
    std::fs::write(
        host.path().join("perf-1.map"),
        "7f0000000000 100 host_jit_SECRET\n",
    )
    .unwrap();
    let tmp = process.root_dir().join("tmp");
    std::os::unix::fs::symlink(host.path(), &tmp).unwrap();
    let jit = [AbsAddr(0x7f00_0000_0010)];
    let results =
        support::in_process(&Symbolizer::builder().build(), &process, None, &jit).unwrap();
    // Inside the root the link leads to itself (`/tmp/.tmpX` under a `/tmp` that is that
    // link): an error or nothing, never the host's map.
    let shown = format!("{:?}", results.result(0));
    assert!(
        results.get(0).is_none() && !shown.contains("SECRET"),
        "the host's perf map was read through a planted /tmp: {shown}"
    );
    std::fs::remove_file(&tmp).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    std::fs::write(tmp.join("perf-1.map"), "7f0000000000 100 own_jit\n").unwrap();
    let results =
        support::in_process(&Symbolizer::builder().build(), &process, None, &jit).unwrap();
    assert_eq!(name_of(&results, 0), "own_jit");
}

/// A file a process can change under the symbolizer must not crash it (a mapped file
/// truncated in place raises SIGBUS on the next read of a page past its new end). The files
/// of a process are read into memory, so the symbolizer keeps answering from what it read:
/// `c-buildid` in a fake root, its debug file in the root's build-id dir; the first batch
/// loads both (and the DWARF), then the debug file is truncated in place and overwritten with
/// garbage, and the next batches, at other addresses (DWARF not yet read), answer as an
/// untouched copy does. A new symbolizer, reading the ruined file afresh, answers from the
/// binary's own symbols, without frames and without a crash.
#[test]
fn a_debug_file_truncated_while_held_does_not_crash() {
    let binary = bin("c-buildid");
    let (rel, debug) = build_id_debug_file(&binary);
    let base = 0x5600_0000_0000u64;
    let (_procfs, process) = fake_process(&binary, "/opt/app/c-buildid", 4848, base, "");
    let held = process.root_dir().join(&rel);
    std::fs::create_dir_all(held.parent().unwrap()).unwrap();
    std::fs::copy(&debug, &held).unwrap();

    let first = [AbsAddr(base + nm_addr(&binary, "checksum") + 4)];
    let later: Vec<AbsAddr> = ["main", "process_value", "run_all", "leaf_hash"]
        .iter()
        .map(|name| AbsAddr(base + nm_addr(&binary, name) + 1))
        .collect();
    let answers = |symbolizer: &Symbolizer, addrs: &[AbsAddr]| -> Vec<String> {
        let results = support::in_process(symbolizer, &process, None, addrs).unwrap();
        results.results().map(|r| format!("{r:?}")).collect()
    };
    let want = answers(&Symbolizer::builder().build(), &later);

    let symbolizer = Symbolizer::builder().build();
    let loaded = support::in_process(&symbolizer, &process, None, &first).unwrap();
    assert!(
        !loaded.get(0).expect("checksum").frames.is_empty(),
        "the debug file was found: {:?}",
        loaded.result(0)
    );
    let file = std::fs::OpenOptions::new().write(true).open(&held).unwrap();
    file.set_len(0).unwrap();
    std::fs::write(&held, b"garbage, not ELF").unwrap();
    drop(file);
    assert_eq!(
        answers(&symbolizer, &later),
        want,
        "answers from what was read before"
    );

    let fresh = Symbolizer::builder().build();
    let ruined = support::in_process(&fresh, &process, None, &later).unwrap();
    for sym in ruined.iter() {
        let sym = sym.expect("the binary's own .symtab still names it");
        assert!(sym.frames.is_empty(), "{sym:?}");
    }
}

/// Normalize now, symbolize later by build-id: an address of `c-buildid` (its DWARF and
/// full `.symtab` in testdata/debug/.build-id) is normalized in a fake procfs, then
/// symbolized through `Source::BuildId` alone: from the debug file by virtual address, from
/// a binary linked into a `.build-id` dir (Fedora's layout) by file offset.
#[test]
fn normalized_addresses_are_symbolized_by_build_id() {
    use stacksym::{Input, Source};
    let binary = bin("c-buildid");
    let base = 0x5500_0000_0000u64;
    let (_procfs, process) = fake_process(&binary, "/opt/app", 4444, base, "");
    let checksum = nm_addr(&binary, "checksum");
    let norm = process.normalize(&[AbsAddr(base + checksum + 4)]).unwrap();
    let Normalized::File(n) = &norm[0] else {
        panic!("{norm:?}")
    };
    let build_id = n.build_id.clone().expect("c-buildid has a build-id");
    assert_eq!(n.virt_addr.map(|v| v.0), Some(checksum + 4));

    let testdata_debug = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/debug");
    let symbolizer = Symbolizer::builder()
        .debug_dirs(vec![testdata_debug.clone()])
        .build();
    let source = Source::BuildId {
        build_id: &build_id,
    };
    let virt = [n.virt_addr.unwrap().0];
    let symbols = symbolizer
        .symbolize(
            &source,
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&virt)),
        )
        .expect("the debug file is found by build-id");
    let sym = symbols.get(0).expect("named");
    assert_eq!((sym.name, sym.offset), ("checksum", 4));
    assert!(symbols
        .module(0)
        .unwrap()
        .to_string_lossy()
        .ends_with(".debug"));
    assert!(!sym.frames.is_empty(), "the debug file's DWARF");
    let err = symbolizer
        .symbolize(
            &source,
            Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&[n.file_offset.0])),
        )
        .expect_err("a debug file cannot convert file offsets");
    assert!(err.to_string().contains("virt_addr"), "{err}");

    // Fedora links the binary itself at .build-id/xx/rest: file offsets work there.
    let linked = tempfile::tempdir().unwrap();
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let link = linked
        .path()
        .join(".build-id")
        .join(&hex[..2])
        .join(&hex[2..]);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&binary, &link).unwrap();
    let symbolizer = Symbolizer::builder()
        .debug_dirs(vec![linked.path().to_path_buf()])
        .build();
    let symbols = symbolizer
        .symbolize(
            &source,
            Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&[n.file_offset.0])),
        )
        .expect("the binary is found by build-id");
    assert_eq!(
        symbols.get(0).map(|s| (s.name, s.offset)),
        Some(("checksum", 4))
    );

    // An unknown build-id: an error that names it.
    let err = symbolizer
        .symbolize(
            &Source::BuildId {
                build_id: &[0xde, 0xad, 0xbe, 0xef],
            },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&virt)),
        )
        .expect_err("nothing has it");
    assert!(err.to_string().contains("deadbeef"), "{err}");
}

#[test]
fn files_are_opened_under_the_configured_procfs_root() {
    let wait = bin("c-wait");
    // Every PT_LOAD mapped the way ld.so does (page-aligned), at a made-up base; a path
    // with a blank in it.
    let base = 0x5600_0000_0000u64;
    let stack = "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0     [stack]\n";
    let (_procfs, process) = fake_process(&wait, "/opt/app/my app", 4242, base, stack);
    let proc_dir = process.proc_dir();
    let app_dir = process.root_dir().join("opt/app");
    let target = base + nm_addr(&wait, "wait_target");
    let symbolizer = Symbolizer::builder().build();
    let results = support::in_process(
        &symbolizer,
        &process,
        None,
        &[AbsAddr(target + 2), AbsAddr(0x7ffd00000010), AbsAddr(0x10)],
    )
    .unwrap();
    let sym = results.get(0).expect("wait_target found");
    assert_eq!(sym.name, "wait_target");
    assert_eq!(sym.offset, 2);
    assert_eq!(sym.module, Path::new("/opt/app/my app"));
    assert_eq!(
        sym.file_offset(),
        Some(FileOffset(readelf_file_offset(
            &wait,
            nm_addr(&wait, "wait_target") + 2
        )))
    );
    assert!(matches!(
        results.not_found(1),
        Some(NotFound::NotInFile(MappingKind::Stack))
    ));
    assert!(matches!(results.not_found(2), Some(NotFound::Unmapped)));

    let norm = process.normalize(&[AbsAddr(target)]).unwrap();
    let Normalized::File(n) = &norm[0] else {
        panic!("{norm:?}")
    };
    assert_eq!(n.build_id.as_deref(), Some(&readelf_build_id(&wait)[..]));
    assert_eq!(n.path, Path::new("/opt/app/my app"));

    // A maps file that is not one: the error names it and the line.
    std::fs::write(proc_dir.join("maps"), "hello world\n").unwrap();
    let err = process.read_maps().unwrap_err();
    assert_eq!(err.path(), proc_dir.join("maps"));
    assert!(err.to_string().contains("line 1: "), "{err}");

    // A file in the maps that is not ELF: an error for its addresses only. And a file whose
    // device and inode are not the maps line's (replaced since it was mapped, as far as
    // stacksym can tell without map_files): refused, not symbolized.
    let notes = app_dir.join("notes");
    std::fs::write(&notes, "just text").unwrap();
    std::fs::write(
        proc_dir.join("maps"),
        format!(
            "1000-2000 r-xp 00000000 {} /opt/app/notes\n\
             3000-4000 r-xp 00000000 fe:00 78 /opt/app/my app\n\
             7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0     [stack]\n",
            dev_inode(&notes)
        ),
    )
    .unwrap();
    let results = support::in_process(
        &symbolizer,
        &process,
        None,
        &[AbsAddr(0x1000), AbsAddr(0x3000), AbsAddr(0x7ffd00000000)],
    )
    .unwrap();
    let Some(NotFound::FileError(e)) = results.not_found(0) else {
        panic!("{results:?}")
    };
    assert!(e.to_string().contains("not an ELF file"), "{e}");
    let Some(NotFound::FileError(e)) = results.not_found(1) else {
        panic!("{results:?}")
    };
    assert!(
        e.to_string().contains("not the file process 4242 mapped"),
        "{e}"
    );
    assert!(matches!(
        results.not_found(2),
        Some(NotFound::NotInFile(MappingKind::Stack))
    ));
}

// ------------------------------------------------------------------------------------------
// Live children
// ------------------------------------------------------------------------------------------

#[test]
fn live_process_symbols_in_exe_shared_lib_and_libc() {
    let waiter = Waiter::spawn(&bin("c-wait"));
    let process = Process::new(waiter.pid);
    let maps = process.read_maps().unwrap();
    let vdso = maps
        .mappings()
        .iter()
        .find(|m| m.kind == MappingKind::Vdso)
        .map(|m| m.range.start);

    let mut addrs = vec![
        AbsAddr(waiter.addr("wait_target")),
        AbsAddr(waiter.addr("wait_target") + 1),
        AbsAddr(waiter.addr("wait_local")),
        AbsAddr(waiter.addr("vhelper") + 3),
        AbsAddr(waiter.addr("puts")),
        AbsAddr(0),
    ];
    addrs.extend(vdso);
    let symbolizer = Symbolizer::builder().build();
    let results = support::in_process(&symbolizer, &process, Some(&maps), &addrs).unwrap();
    assert_eq!(results.len(), addrs.len());
    assert_eq!(name_of(&results, 0), "wait_target");
    assert_eq!(results.get(0).unwrap().offset, 0);
    assert_eq!(name_of(&results, 1), "wait_target");
    assert_eq!(results.get(1).unwrap().offset, 1);
    assert!(
        name_of(&results, 2).starts_with("wait_local"),
        "{:?}",
        results.result(2)
    );
    assert_eq!(name_of(&results, 3), "vhelper");
    assert_eq!(results.get(3).unwrap().offset, 3);
    assert!(
        results
            .get(3)
            .unwrap()
            .module
            .ends_with("testdata/bin/libversioned.so"),
        "{:?}",
        results.result(3)
    );
    // puts and _IO_puts are aliases in glibc; either name is right.
    assert!(
        ["puts", "_IO_puts"].contains(&name_of(&results, 4)),
        "{:?}",
        results.result(4)
    );
    assert_eq!(results.get(4).unwrap().offset, 0);
    assert!(
        results
            .get(4)
            .unwrap()
            .module
            .to_string_lossy()
            .contains("libc"),
        "{:?}",
        results.result(4)
    );
    assert!(matches!(results.not_found(5), Some(NotFound::Unmapped)));
    if vdso.is_some() {
        assert!(matches!(
            results.not_found(6),
            Some(NotFound::NotInFile(MappingKind::Vdso))
        ));
    }

    // The whole-call form reads the maps itself and agrees.
    let again = support::in_process(&symbolizer, &process, None, &addrs[..2]).unwrap();
    assert_eq!(again.get(0), results.get(0));
}

#[test]
fn live_process_normalized_addresses_match_readelf() {
    let wait = bin("c-wait");
    let waiter = Waiter::spawn(&wait);
    let process = Process::new(waiter.pid);
    let target = waiter.addr("wait_target");
    let norm = process
        .normalize(&[AbsAddr(target + 5), AbsAddr(waiter.addr("puts"))])
        .unwrap();
    let Normalized::File(n) = &norm[0] else {
        panic!("{norm:?}")
    };
    assert_eq!(n.path, wait);
    assert!(!n.deleted);
    assert_eq!(n.build_id.as_deref(), Some(&readelf_build_id(&wait)[..]));
    assert_eq!(
        n.file_offset,
        FileOffset(readelf_file_offset(
            &wait,
            nm_addr(&wait, "wait_target") + 5
        ))
    );
    let Normalized::File(libc) = &norm[1] else {
        panic!("{norm:?}")
    };
    assert!(libc.path.to_string_lossy().contains("libc"), "{libc:?}");
    assert!(libc.build_id.is_some(), "{libc:?}");
}

/// The process `pid` and its maps, checked to show the file mapped at `target` as `exe`,
/// deleted (unlinked, or replaced by a rename over it).
fn maps_marking_deleted(pid: u32, target: AbsAddr, exe: &Path) -> (Process, ProcessMaps) {
    let process = Process::new(pid);
    let maps = process.read_maps().unwrap();
    let mapping = maps.find(target).unwrap();
    assert_eq!(
        mapping.kind,
        MappingKind::File {
            path: exe.to_path_buf(),
            deleted: true
        }
    );
    (process, maps)
}

#[test]
fn live_process_whose_binary_was_deleted_is_read_through_map_files() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("c-wait copy");
    std::fs::copy(bin("c-wait"), &exe).unwrap();
    std::fs::copy(bin("libversioned.so"), dir.path().join("libversioned.so")).unwrap();
    let build_id = readelf_build_id(&exe);
    let target_virt = nm_addr(&exe, "wait_target");
    let waiter = Waiter::spawn(&exe);
    std::fs::remove_file(&exe).unwrap();

    let target = AbsAddr(waiter.addr("wait_target"));
    let (process, maps) = maps_marking_deleted(waiter.pid, target, &exe);
    let mapping = maps.find(target).unwrap();
    let via = process.open_path(mapping).unwrap();
    assert_eq!(
        via,
        Path::new(&format!(
            "/proc/{}/map_files/{:x}-{:x}",
            waiter.pid, mapping.range.start.0, mapping.range.end.0
        ))
    );

    // Following map_files links needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE).
    if std::fs::File::open(&via).is_err() {
        writeln_stderr(format_args!(
            "skipped: cannot open {} (needs root)",
            via.display()
        ));
        return;
    }
    let symbolizer = Symbolizer::builder().build();
    let results = support::in_process(
        &symbolizer,
        &process,
        Some(&maps),
        &[target, AbsAddr(target.0 + 4)],
    )
    .unwrap();
    assert_eq!(name_of(&results, 0), "wait_target");
    assert_eq!(results.get(1).unwrap().offset, 4);
    assert_eq!(results.get(0).unwrap().module, exe);

    let norm = process.normalize_with(&maps, &[target]);
    let Normalized::File(n) = &norm[0] else {
        panic!("{norm:?}")
    };
    assert!(n.deleted);
    assert_eq!(n.path, exe);
    assert_eq!(n.build_id.as_deref(), Some(&build_id[..]));
    assert_eq!(
        n.file_offset,
        FileOffset(readelf_file_offset(&bin("c-wait"), target_virt))
    );
}

/// A binary replaced on disk after the process started (a package upgrade renames the new
/// file over the old path): the path now names another program, the maps say `(deleted)`,
/// and the process's own, old symbols must still answer (through map_files), not the new
/// file's. Uses c-wait (the running program) and c-nopie (the replacement, whose symbols
/// differ).
#[test]
fn live_process_whose_binary_was_replaced_keeps_its_old_symbols() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("app");
    std::fs::copy(bin("c-wait"), &exe).unwrap();
    std::fs::copy(bin("libversioned.so"), dir.path().join("libversioned.so")).unwrap();
    let waiter = Waiter::spawn(&exe);
    let replacement = dir.path().join("app.new");
    std::fs::copy(bin("c-nopie"), &replacement).unwrap();
    std::fs::rename(&replacement, &exe).unwrap();

    let target = AbsAddr(waiter.addr("wait_target"));
    // The kernel marks the replaced inode deleted.
    let (process, maps) = maps_marking_deleted(waiter.pid, target, &exe);
    let mapping = maps.find(target).unwrap();
    let via = process.open_path(mapping).unwrap();
    if std::fs::File::open(&via).is_err() {
        writeln_stderr(format_args!(
            "live_process_whose_binary_was_replaced_keeps_its_old_symbols: skipped: cannot \
             open {} (needs root)",
            via.display()
        ));
        return;
    }
    // A symbolizer that saw the new file at that path first must not mix the two up.
    let symbolizer = Symbolizer::builder().build();
    let new_file = symbolizer
        .symbolize(
            &stacksym::Source::Elf { path: &exe },
            stacksym::Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[nm_addr(
                &bin("c-nopie"),
                "main",
            )])),
        )
        .unwrap();
    assert_eq!(new_file.get(0).map(|s| s.name), Some("main"));
    let results = support::in_process(&symbolizer, &process, Some(&maps), &[target]).unwrap();
    assert_eq!(name_of(&results, 0), "wait_target");
    let sym = results.get(0).unwrap();
    assert_eq!(sym.module, exe);
    assert!(
        sym.frames
            .last()
            .and_then(|f| f.file.as_deref())
            .is_some_and(|f| f.ends_with("wait.c")),
        "the old file's DWARF: {:?}",
        sym.frames
    );
}

fn assert_names_pid(err: &Error, pid: u32) {
    let shown = err.to_string();
    assert!(
        matches!(err, Error::ProcessGone { pid: p, .. } if *p == pid),
        "{err:?}"
    );
    assert_eq!(err.kind(), stacksym::ErrorKind::ProcessGone);
    assert!(shown.contains(&format!("process {pid} ")), "{shown}");
    assert_eq!(err.path(), Path::new(&format!("/proc/{pid}/maps")));
}

#[test]
fn exited_process_is_an_error_naming_the_pid() {
    let symbolizer = Symbolizer::builder().build();

    // Reaped before the call.
    let mut waiter = Waiter::spawn(&bin("c-wait"));
    let addr = AbsAddr(waiter.addr("wait_target"));
    let process = Process::new(waiter.pid);
    waiter.kill(true);
    assert_names_pid(&process.read_maps().unwrap_err(), waiter.pid);
    assert_names_pid(
        &support::in_process(&symbolizer, &process, None, &[addr]).unwrap_err(),
        waiter.pid,
    );
    assert_names_pid(&process.normalize(&[addr]).unwrap_err(), waiter.pid);

    // A zombie: its procfs directory is still there, its memory is gone.
    let mut waiter = Waiter::spawn(&bin("c-wait"));
    let process = Process::new(waiter.pid);
    waiter.kill(false);
    assert_names_pid(
        &support::in_process(&symbolizer, &process, None, &[addr]).unwrap_err(),
        waiter.pid,
    );

    // Gone between reading the maps and opening the files (mid-call).
    let mut waiter = Waiter::spawn(&bin("c-wait"));
    let addr = AbsAddr(waiter.addr("wait_target"));
    let process = Process::new(waiter.pid);
    let maps = process.read_maps().unwrap();
    waiter.kill(true);
    assert_names_pid(
        &support::in_process(&symbolizer, &process, Some(&maps), &[addr]).unwrap_err(),
        waiter.pid,
    );
}

/// A mixed stack through one call: kernel addresses (top bit set) go to a kallsyms — here
/// testdata/kallsyms/synthetic.txt, where 0xffffffff81000104 is in `do_work` and
/// 0xffffffffc0001010 in `ext4_fill_super` of module `ext4` — and user addresses to the live
/// c-wait, in input order; a kernel address with no kernel source is `NoKernelSource`.
#[test]
fn mixed_kernel_and_user_stack_in_one_call() {
    use stacksym::{Input, KernelSource, NameOrigin, Source};
    let waiter = Waiter::spawn(&bin("c-wait"));
    let process = Process::new(waiter.pid);
    let kallsyms = manifest().join("testdata/kallsyms/synthetic.txt");
    let stack = [
        0xffff_ffff_8100_0104,
        0xffff_ffff_c000_1010,
        waiter.addr("wait_target") + 1,
        waiter.addr("vhelper"),
        0x10,
    ];
    let symbolizer = Symbolizer::builder().build();
    let kernel = KernelSource {
        kallsyms: Some(&kallsyms),
        ..KernelSource::default()
    };
    let source = Source::Stack {
        process: &process,
        kernel: Some(kernel),
    };
    let frames = symbolizer
        .symbolize(
            &source,
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&stack)),
        )
        .unwrap();
    assert_eq!(frames.len(), stack.len());
    let do_work = frames.get(0).expect("kallsyms names it");
    assert_eq!((do_work.name, do_work.offset), ("do_work", 4));
    assert_eq!(do_work.origin, NameOrigin::Kallsyms);
    assert_eq!(do_work.kernel_module, None);
    assert_eq!(do_work.module, Path::new("[kernel.kallsyms]"));
    assert!(do_work.frames.is_empty());
    let ext4 = frames.get(1).unwrap();
    assert_eq!(ext4.kernel_module, Some("ext4"));
    assert_eq!(ext4.module, Path::new("[ext4]"));
    assert_eq!(name_of(&frames, 2), "wait_target");
    assert_eq!(name_of(&frames, 3), "vhelper");
    assert!(matches!(frames.not_found(4), Some(NotFound::Unmapped)));

    let source = Source::Stack {
        process: &process,
        kernel: None,
    };
    let without_kernel = symbolizer
        .symbolize(
            &source,
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&stack)),
        )
        .unwrap();
    assert!(matches!(
        without_kernel.not_found(0),
        Some(NotFound::NoKernelSource)
    ));
    assert_eq!(name_of(&without_kernel, 2), "wait_target");

    // With modules' files: a kmod_demo address (testdata/kallsyms/kmod-demo.kallsyms, its
    // .ko loaded where testdata/kmod/sys/module says) gets its source line, beside a user
    // frame of the same stack.
    use stacksym::kernel::KernelModules;
    let testdata = manifest().join("testdata");
    let kallsyms = testdata.join("kallsyms/kmod-demo.kallsyms");
    let modules = KernelModules::new(vec![testdata.join("bin")], testdata.join("kmod/sys/module"));
    let source = Source::Stack {
        process: &process,
        kernel: Some(KernelSource {
            kallsyms: Some(&kallsyms),
            modules: Some(&modules),
            ..KernelSource::default()
        }),
    };
    let stack = [0xffff_ffff_c0a0_1083, waiter.addr("wait_target") + 1];
    let frames = symbolizer
        .symbolize(
            &source,
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&stack)),
        )
        .unwrap();
    let module_frame = frames.get(0).expect("kallsyms names it");
    assert_eq!(module_frame.name, "kd_run");
    assert_eq!(module_frame.kernel_module, Some("kmod_demo"));
    assert_eq!(module_frame.module, Path::new("[kmod_demo]"));
    assert_eq!(
        module_frame.opened_as,
        Some(testdata.join("bin/kmod-demo.ko").as_path())
    );
    let line = &module_frame
        .frames
        .last()
        .expect("the .ko's DWARF covers it");
    assert!(line
        .file
        .as_deref()
        .unwrap_or_default()
        .ends_with("demo_main.c"));
    assert_eq!(name_of(&frames, 1), "wait_target");
}

/// The symbolizer caches a process's maps: a second stack of the same process reads no maps
/// (a hit), an address outside every cached mapping reads them again (a miss is not counted
/// twice: the entry is refreshed), and the cache is keyed by the process's life, so another
/// process is another entry.
#[test]
fn process_maps_are_cached_per_process_and_refreshed_on_unknown_addresses() {
    let waiter = Waiter::spawn(&bin("c-wait"));
    let process = Process::new(waiter.pid);
    let symbolizer = Symbolizer::builder().build();
    let target = AbsAddr(waiter.addr("wait_target"));
    for _ in 0..3 {
        let results = support::in_process(&symbolizer, &process, None, &[target]).unwrap();
        assert_eq!(name_of(&results, 0), "wait_target");
    }
    let stats = symbolizer.stats().process_maps;
    assert_eq!((stats.misses, stats.hits), (1, 2), "{stats:?}");
    // 0x10 is in no mapping: the cached maps are read again, and the answer is still right.
    let results =
        support::in_process(&symbolizer, &process, None, &[AbsAddr(0x10), target]).unwrap();
    assert!(matches!(results.not_found(0), Some(NotFound::Unmapped)));
    assert_eq!(name_of(&results, 1), "wait_target");
    let other = Waiter::spawn(&bin("c-wait"));
    support::in_process(
        &symbolizer,
        &Process::new(other.pid),
        None,
        &[AbsAddr(other.addr("wait_target"))],
    )
    .unwrap();
    let stats = symbolizer.stats().process_maps;
    assert_eq!(
        stats.misses, 2,
        "a second process is a second entry: {stats:?}"
    );
}
