//! Core files (src/core/, `Source::Core`, `Modules::from_core`, `pstack --core`).
//!
//! - The committed core `testdata/core/tiny.core.zst` (testdata/build-core.sh: the static
//!   `core-tiny` crashed three calls deep with `coredump_filter` 0x11, zstd-compressed):
//!   threads, signal, memory from the core and from the verified file, unwinding and
//!   symbolizing through the one API; a build-id mismatch (another build at the path: a
//!   per-frame error, then the right file found by build-id in a debug dir); truncations.
//! - Cores made here: `gcore` of `core-demo wait` (threads in a condition wait, 40 calls deep
//!   in recursion, in a signal handler), and real crashes (`core-demo segv`: SIGSEGV 33
//!   calls deep; `core-throw`: abort() from an uncaught C++ exception; `core-demo overflow`:
//!   a thread's stack overflow into its guard page) with a core pattern
//!   this test sets and restores. Each is compared thread by thread with
//!   `gdb -batch -c CORE BIN -ex 'thread apply all bt'` and `eu-stack -i --core CORE -e BIN`:
//!   the same function sequences; every explained difference class is counted and printed,
//!   any other difference fails. The segv core is also read compressed (zstd) and truncated.
//!
//! - aarch64 on this x86_64 host: `core-a64` and `core-a64-pac` (static, no libc; the second
//!   with `-mbranch-protection=pac-ret`) crashed under `qemu-aarch64`, which writes the
//!   guest's core itself, without NT_FILE, NT_SIGINFO or NT_ARM_PAC_MASK: the executable is
//!   placed by AT_PHDR, the signal comes from NT_PRSTATUS, return addresses are stripped above
//!   bit 48. Compared with `gdb-multiarch` (which stops at the first signed return address)
//!   and `eu-stack` (pcs only: it names nothing without NT_FILE, and leaves the PAC in);
//!   then with the NT_ARM_PAC_MASK note Linux writes on a PAC CPU added: the mask is applied,
//!   and gdb-multiarch agrees frame by frame.
//!
//! - A binary rebuilt after its crash (`core-demo` crashed from a copy, the copy replaced by
//!   another build): each of its frames is a build-id mismatch naming both build-ids, then
//!   the crashed build is found by build-id in a debug dir and the stacks are as before.
//! - A core of a process in a container-like root (`chroot`: the kernel writes NT_FILE's
//!   paths as the process saw them, `/app/core-demo`): without a sysroot each frame of the
//!   executable says its file is missing; with `--sysroot` every file is matched by path
//!   and build-id inside the root, compared with gdb (`set sysroot`) and eu-stack.
//!
//! gdb, gcore, gdb-multiarch, eu-stack, zstd and qemu-aarch64 come from `.ci/run`; making
//! crash cores needs root (the core pattern is global). Skipped with a note otherwise, a
//! failure under CI.

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stacksym::core::{CoreFile, CoreOptions, Matched, Unreadable};
use stacksym::debuginfo::DebugFinder;
use stacksym::unwind::{Modules, RegsAarch64, RegsX86_64, StopReason, UnwindCache, Unwinder};
use stacksym::{AbsAddr, Input, NotFound, Source, Symbolizer};
use support::{find_tool, parse_frame, skip_or_fail, tool, writeln_stderr, Frames};

fn td(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(path)
}

fn tiny_options(exe: &str) -> CoreOptions {
    CoreOptions {
        exe: Some(td(exe)),
        ..CoreOptions::default()
    }
}

/// The function names of a core's threads: unwound, then symbolized in one batch
/// (innermost inlined frame first at each address, as pstack prints them).
fn stacks_of(core: &CoreFile) -> Vec<(u32, Vec<String>, StopReason)> {
    let unwinder = Unwinder::new(Modules::from_core(core, None));
    let mut x86 = UnwindCache::new();
    let mut arm = UnwindCache::new();
    let stacks: Vec<_> = core
        .threads()
        .iter()
        .map(|t| {
            let stack = match RegsX86_64::from_core(&t.registers) {
                Some(regs) => unwinder.unwind(&regs, core, &mut x86),
                None => {
                    let regs = RegsAarch64::from_core_thread(t).expect("x86_64 or aarch64");
                    unwinder.unwind(&regs, core, &mut arm)
                }
            };
            (t.tid, stack)
        })
        .collect();
    let addrs: Vec<u64> = stacks
        .iter()
        .flat_map(|(_, s)| s.frames.iter().map(|f| f.lookup_addr().0))
        .collect();
    let symbols = Symbolizer::builder()
        .build()
        .symbolize(
            &Source::Core(core),
            Input::AbsAddrs(AbsAddr::from_raw_slice(&addrs)),
        )
        .expect("symbolize");
    let mut index = 0;
    stacks
        .into_iter()
        .map(|(tid, stack)| {
            let mut names = Vec::new();
            for _ in &stack.frames {
                let lines = symbols.lines(index);
                if lines.is_empty() {
                    names.push(symbols.get(index).map_or("??", |s| s.name).to_string());
                } else {
                    for line in lines {
                        names.push(
                            line.function
                                .as_ref()
                                .map_or("??".into(), |f| f.demangled.clone()),
                        );
                    }
                }
                index += 1;
            }
            (tid, names, stack.stop)
        })
        .collect()
}

#[test]
fn tiny_core_reads_threads_signal_memory_and_unwinds() {
    let core = CoreFile::open_with(td("core/tiny.core.zst"), &tiny_options("core/core-tiny"))
        .expect("the committed core opens");
    assert!(core.problems().is_empty(), "{:?}", core.problems());
    assert_eq!(core.threads().len(), 1);
    let signal = core.signal().expect("NT_SIGINFO");
    assert_eq!(
        (signal.name().as_str(), signal.fault_addr),
        ("SIGSEGV", Some(AbsAddr(0x18)))
    );
    let process = core.process().expect("NT_PRPSINFO");
    assert_eq!(process.command, "core-tiny");
    assert_eq!(process.pid, core.threads()[0].tid);
    // The executable's text was not dumped (filter 0x11): its bytes come from the file,
    // whose build-id matches the one in its dumped first page.
    let exe = core
        .files()
        .iter()
        .find(|f| f.path.ends_with("core-tiny"))
        .expect("the executable's mapping");
    let (elf, matched) = exe.file.as_ref().expect("matched");
    assert_eq!(*matched, Matched::ByPath);
    assert_eq!(exe.build_id.as_deref(), elf.build_id());
    let pc = core.threads()[0].registers.ip();
    let mut code = [0u8; 16];
    assert!(
        core.read(AbsAddr(pc), &mut code),
        "the pc's code, from the file"
    );
    let on_disk = std::fs::read(td("core/core-tiny")).unwrap();
    let offset = core
        .mapping_at(AbsAddr(pc))
        .unwrap()
        .file_offset(AbsAddr(pc))
        .unwrap()
        .0 as usize;
    assert_eq!(code, on_disk[offset..offset + 16]);
    // The vsyscall page and the space between mappings are not in the core.
    assert_eq!(
        core.why_unreadable(AbsAddr(0x10)),
        Some(Unreadable::Unmapped)
    );
    let entry = core.entry().expect("AT_ENTRY");
    assert!(core.mapping_at(entry).unwrap().path.ends_with("core-tiny"));

    let stacks = stacks_of(&core);
    let (tid, names, stop) = &stacks[0];
    assert_eq!(*tid, core.threads()[0].tid);
    assert_eq!(
        names,
        &["tiny_crash", "tiny_middle", "tiny_outer", "_start"]
    );
    assert_eq!(*stop, StopReason::Root);
}

#[test]
fn tiny_core_symbolizes_with_source_lines() {
    let core =
        CoreFile::open_with(td("core/tiny.core.zst"), &tiny_options("core/core-tiny")).unwrap();
    let pc = core.threads()[0].registers.ip();
    let symbols = Symbolizer::builder()
        .build()
        .symbolize(
            &Source::Core(&core),
            Input::AbsAddrs(&[AbsAddr(pc), AbsAddr(0x10)]),
        )
        .unwrap();
    let sym = symbols.get(0).expect("the pc is named");
    assert_eq!(sym.name, "tiny_crash");
    assert!(sym.module.ends_with("core-tiny"), "{:?}", sym.module);
    let line = &symbols.lines(0)[0];
    assert!(line
        .file
        .as_deref()
        .is_some_and(|f| f.ends_with("core-tiny.c")));
    assert_eq!(line.line, Some(10), "*where = 1");
    assert!(matches!(symbols.not_found(1), Some(NotFound::Unmapped)));
}

#[test]
fn another_build_at_the_path_is_a_mismatch_then_found_by_build_id() {
    // core-demo stands for core-tiny rebuilt: same role, another build-id.
    let core = CoreFile::open_with(
        td("core/tiny.core.zst"),
        &CoreOptions {
            finder: None,
            ..tiny_options("core/core-demo")
        },
    )
    .unwrap();
    let exe = core
        .files()
        .iter()
        .find(|f| f.path.ends_with("core-tiny"))
        .unwrap();
    let error = exe.file.as_ref().expect_err("another build").to_string();
    assert!(error.contains("build-id mismatch"), "{error}");
    let pc = core.threads()[0].registers.ip();
    // Never the other build's bytes or names.
    assert_eq!(
        core.why_unreadable(AbsAddr(pc)),
        Some(Unreadable::NotDumped)
    );
    let symbols = Symbolizer::builder()
        .build()
        .symbolize(&Source::Core(&core), Input::AbsAddrs(&[AbsAddr(pc)]))
        .unwrap();
    assert!(symbols.get(0).is_none());
    match symbols.not_found(0) {
        Some(NotFound::FileError(e)) => assert!(e.to_string().contains("mismatch"), "{e}"),
        other => panic!("{other:?}"),
    }
    writeln_stderr(format_args!("mismatch: {error}"));

    // The right build in a debug dir, by build-id: found, and everything works again.
    let dir = tempfile::tempdir().unwrap();
    let id = exe.build_id.as_ref().unwrap();
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let link = dir.path().join(".build-id").join(&hex[..2]);
    std::fs::create_dir_all(&link).unwrap();
    std::fs::copy(td("core/core-tiny"), link.join(&hex[2..])).unwrap();
    let core = CoreFile::open_with(
        td("core/tiny.core.zst"),
        &CoreOptions {
            finder: Some(DebugFinder::new(vec![dir.path().to_path_buf()])),
            ..tiny_options("core/core-demo")
        },
    )
    .unwrap();
    let exe = core
        .files()
        .iter()
        .find(|f| f.path.ends_with("core-tiny"))
        .unwrap();
    assert_eq!(exe.file.as_ref().unwrap().1, Matched::ByBuildId);
    assert_eq!(
        stacks_of(&core)[0].1,
        ["tiny_crash", "tiny_middle", "tiny_outer", "_start"]
    );
}

fn tiny_core_bytes() -> Vec<u8> {
    let compressed = std::fs::read(td("core/tiny.core.zst")).unwrap();
    let mut out = Vec::new();
    let mut decoder = ruzstd::decoding::StreamingDecoder::new(&compressed[..]).unwrap();
    std::io::Read::read_to_end(&mut decoder, &mut out).unwrap();
    out
}

#[test]
fn truncated_tiny_core_says_why_and_never_panics() {
    let bytes = tiny_core_bytes();
    let options = tiny_options("core/core-tiny");
    let whole = CoreFile::from_bytes("tiny", bytes.clone(), &options).unwrap();
    let sp = whole.threads()[0].registers.sp();
    // Cut the core inside the stack segment, below the stack pointer's page: the notes and
    // registers survive, the stack does not.
    let load = whole_stack_offset(&bytes, sp);
    let cut = CoreFile::from_bytes("tiny-cut", bytes[..load].to_vec(), &options).unwrap();
    assert_eq!(cut.threads().len(), 1);
    assert!(
        cut.problems().iter().any(|p| p.contains("truncated")),
        "{:?}",
        cut.problems()
    );
    assert_eq!(cut.why_unreadable(AbsAddr(sp)), Some(Unreadable::Truncated));
    let stacks = stacks_of(&cut);
    assert!(
        matches!(stacks[0].2, StopReason::MemoryUnreadable { .. }),
        "{:?}",
        stacks[0]
    );
    assert_eq!(
        stacks[0].1[0], "tiny_crash",
        "the pc still names its function"
    );
    // Every length: an error or a core, never a panic.
    for len in (0..bytes.len()).step_by(331) {
        let _ = CoreFile::from_bytes("tiny-cut", bytes[..len].to_vec(), &options)
            .map(|core| stacks_of(&core));
    }
}

#[test]
fn compressed_core_is_read_capped_and_a_cut_one_is_refused() {
    // tiny.core.zst is 4.6 KB of zstd for a 184 KB core: under a 100 KB cap it is refused
    // (a bomb is never decompressed whole), at the default cap it opens.
    let capped = CoreFile::open_with(
        td("core/tiny.core.zst"),
        &CoreOptions {
            max_decompressed: 100_000,
            ..tiny_options("core/core-tiny")
        },
    )
    .expect_err("over the cap")
    .to_string();
    assert!(
        capped.contains("tiny.core.zst") && capped.contains("more than 100000 bytes"),
        "{capped}"
    );
    let whole = tiny_core_bytes().len();
    let opened = CoreFile::open_with(
        td("core/tiny.core.zst"),
        &CoreOptions {
            max_decompressed: whole as u64,
            ..tiny_options("core/core-tiny")
        },
    );
    assert!(opened.is_ok(), "exactly at the cap: {opened:?}");
    // A compressed core cut short (a crash reporter's partial upload): an error naming the
    // file, never a panic or a core invented from what decompressed.
    let zst = std::fs::read(td("core/tiny.core.zst")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.core.zst");
    std::fs::write(&cut, &zst[..zst.len() / 2]).unwrap();
    let error = CoreFile::open_with(&cut, &tiny_options("core/core-tiny"))
        .expect_err("half a zstd frame")
        .to_string();
    assert!(error.contains("cut.core.zst"), "{error}");
    writeln_stderr(format_args!("capped: {capped}\ncut: {error}"));
}

/// The core-file offset of the byte at address `addr` (in a `PT_LOAD` with contents).
fn whole_stack_offset(bytes: &[u8], addr: u64) -> usize {
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let half = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap());
    let (phoff, phnum) = (word(0x20) as usize, half(0x38) as usize);
    for i in 0..phnum {
        let ph = phoff + i * 56;
        let (offset, vaddr, filesz) = (word(ph + 8), word(ph + 16), word(ph + 32));
        if half(ph) == 1 && (vaddr..vaddr + filesz).contains(&addr) {
            return (offset + (addr - vaddr)) as usize & !0xfff;
        }
    }
    panic!("{addr:#x} in no segment")
}

// ---------------------------------------------------------------- made here, vs gdb

/// Threads by tid from output whose thread lines are `TID N` (pstack, eu-stack) or
/// `Thread N (... (LWP TID) ...)` (gdb).
fn parse_threads(text: &str) -> BTreeMap<u32, Frames> {
    let mut threads = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        let tid = if let Some(rest) = line.strip_prefix("TID ") {
            Some(rest.split([' ', ':']).next().and_then(|t| t.parse().ok()))
        } else if line.starts_with("Thread ") {
            Some(
                line.split_once("(LWP ")
                    .and_then(|(_, rest)| rest.split(')').next())
                    .and_then(|tid| tid.parse().ok()),
            )
        } else {
            None
        };
        if let Some(tid) = tid {
            current = tid;
            if let Some(tid) = tid {
                threads.insert(tid, Vec::new());
            }
        } else if let (Some(tid), Some(frame)) = (current, parse_frame(line)) {
            threads.entry(tid).or_insert_with(Vec::new).push(frame);
        }
    }
    threads
}

/// Compares one thread's frames with a reference tool's; adds explained differences to
/// `classes`, returns the rest.
fn compare_thread(
    tool: &str,
    core: &CoreFile,
    ours: &Frames,
    theirs: &Frames,
    classes: &mut BTreeMap<String, usize>,
) -> Vec<String> {
    let mut ours = ours.clone();
    if theirs.last().is_some_and(|(name, _)| name == "main") {
        if let Some(at) = ours.iter().position(|(name, _)| name == "main") {
            if at + 1 < ours.len() {
                *classes
                    .entry(format!("{tool} stops at main (backtrace past-main off)"))
                    .or_default() += 1;
                ours.truncate(at + 1);
            }
        }
    }
    let follows_jmp = |pc: u64| {
        let byte = |at: u64| {
            let mut b = [0u8];
            core.read(AbsAddr(at), &mut b).then_some(b[0])
        };
        byte(pc.wrapping_sub(5)) == Some(0xe9) || byte(pc.wrapping_sub(2)) == Some(0xeb)
    };
    let mut problems = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < ours.len() || j < theirs.len() {
        match (ours.get(i), theirs.get(j)) {
            (Some(a), Some(b)) if a.0 == b.0 => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a.0 == "<signal handler called>" && b.0 == "__restore_rt" => {
                *classes
                    .entry(format!("{tool} names the signal frame __restore_rt"))
                    .or_default() += 1;
                i += 1;
                j += 1;
            }
            (Some((a, Some(pa))), Some((b, Some(pb)))) if pa == pb && a == "??" && b.is_empty() => {
                *classes
                    .entry(format!(
                        "neither we nor {tool} name the pc (no symbol covers it)"
                    ))
                    .or_default() += 1;
                i += 1;
                j += 1;
            }
            (Some((a, Some(pa))), Some((b, Some(pb)))) if pa == pb && same_symbol(a, b) => {
                *classes
                    .entry(format!(
                        "{tool} names the same pc by an alias ({b} for {a})"
                    ))
                    .or_default() += 1;
                i += 1;
                j += 1;
            }
            (_, Some((name, Some(pc)))) if follows_jmp(*pc) => {
                *classes
                    .entry(format!(
                        "{tool} shows a tail call from DWARF call sites ({name})"
                    ))
                    .or_default() += 1;
                j += 1;
            }
            (a, b) => {
                problems.push(format!(
                    "frame {i}: ours {:?}, {tool}'s frame {j} {:?}",
                    a.map(|f| &f.0),
                    b.map(|f| &f.0)
                ));
                break;
            }
        }
    }
    problems
}

/// Whether two names are glibc's aliases of one symbol (`clone3` and `__clone3`, `raise`
/// and `__GI_raise`): equal without leading underscores and glibc's `__GI_` prefix. Any
/// other difference of names, even at the same pc, is a difference.
fn same_symbol(a: &str, b: &str) -> bool {
    let bare = |name: &str| {
        let name = name.trim_start_matches('_');
        name.strip_prefix("GI_")
            .unwrap_or(name)
            .trim_start_matches('_')
            .to_string()
    };
    bare(a) == bare(b)
}

/// Runs `pstack --core` on `core_path` and compares it with gdb and eu-stack, thread by
/// thread; returns pstack's text. Panics on any unexplained difference.
fn compare_with_tools(test: &str, core_path: &Path, exe: &Path, tools: &Tools) -> String {
    compare_with_tools_in(test, core_path, exe, None, tools)
}

/// [`compare_with_tools`] for a core whose paths are under `sysroot` (pstack's `--sysroot`,
/// gdb's `set sysroot`; eu-stack 0.188 has no such option: it gets the executable by `-e`
/// and finds the libraries at the same paths on the host).
fn compare_with_tools_in(
    test: &str,
    core_path: &Path,
    exe: &Path,
    sysroot: Option<&Path>,
    tools: &Tools,
) -> String {
    let mut pstack = tool("pstack");
    pstack.arg("--core").arg(core_path).arg("--exe").arg(exe);
    if let Some(root) = sysroot {
        pstack.arg("--sysroot").arg(root);
    }
    let ours = pstack.output().expect("pstack runs");
    let ours_text = String::from_utf8_lossy(&ours.stdout).to_string();
    assert!(
        ours.status.success(),
        "pstack --core failed: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let core = CoreFile::open_with(
        core_path,
        &CoreOptions {
            exe: Some(exe.to_path_buf()),
            sysroot: sysroot.map(Path::to_path_buf),
            ..CoreOptions::default()
        },
    )
    .unwrap();
    let ours = parse_threads(&ours_text);
    let mut gdb = Command::new(&tools.gdb);
    gdb.args(["-batch", "-nx"]);
    if let Some(root) = sysroot {
        // -iex: before the core and its libraries are loaded.
        gdb.arg("-iex")
            .arg(format!("set sysroot {}", root.display()));
    }
    let gdb = gdb
        .arg("-c")
        .arg(core_path)
        .arg(exe)
        .args(["-ex", "thread apply all bt"])
        .stdin(Stdio::null())
        .output()
        .expect("gdb runs");
    let eu = Command::new(&tools.eu_stack)
        .args(["-i", "--core"])
        .arg(core_path)
        .arg("-e")
        .arg(exe)
        .output()
        .expect("eu-stack runs");
    let mut problems = Vec::new();
    for (tool, out) in [("gdb", &gdb), ("eu-stack", &eu)] {
        let text = String::from_utf8_lossy(&out.stdout);
        let theirs = parse_threads(&text);
        let mut classes = BTreeMap::new();
        let mut tool_problems = Vec::new();
        let (tids, their_tids): (Vec<_>, Vec<_>) = (ours.keys().collect(), theirs.keys().collect());
        if tids != their_tids {
            tool_problems.push(format!("threads: ours {tids:?}, {tool}'s {their_tids:?}"));
        }
        let mut frames = 0;
        for (tid, our_frames) in &ours {
            let Some(their_frames) = theirs.get(tid) else {
                continue;
            };
            frames += their_frames.len();
            for p in compare_thread(tool, &core, our_frames, their_frames, &mut classes) {
                tool_problems.push(format!(
                    "thread {tid}: {p}\n        ours:   {:?}\n        {tool}: {:?}",
                    our_frames.iter().map(|f| &f.0).collect::<Vec<_>>(),
                    their_frames.iter().map(|f| &f.0).collect::<Vec<_>>()
                ));
            }
        }
        writeln_stderr(format_args!(
            "{test}: {} vs {tool}: {} threads, {frames} of {tool}'s frames; {} unexplained \
             differences",
            core_path.display(),
            theirs.len(),
            tool_problems.len()
        ));
        for (class, count) in &classes {
            writeln_stderr(format_args!("    {count:3}  {class}"));
        }
        for p in &tool_problems {
            writeln_stderr(format_args!("    DIFFERENT {p}"));
        }
        if !tool_problems.is_empty() {
            writeln_stderr(format_args!("pstack:\n{ours_text}\n{tool}:\n{text}"));
        }
        assert!(!theirs.is_empty(), "{tool} printed no thread: {text}");
        problems.extend(tool_problems);
    }
    assert!(
        problems.is_empty(),
        "{test}: {} differences (printed above)",
        problems.len()
    );
    ours_text
}

struct Tools {
    gdb: PathBuf,
    gcore: PathBuf,
    eu_stack: PathBuf,
    zstd: PathBuf,
}

fn tools_or_skip(test: &str) -> Option<Tools> {
    let find = |name: &str, package: &str| {
        let found = find_tool(name);
        if found.is_none() {
            skip_or_fail(
                test,
                &format!("{name} not found (apt-get install {package})"),
            );
        }
        found
    };
    Some(Tools {
        gdb: find("gdb", "gdb")?,
        gcore: find("gcore", "gdb")?,
        eu_stack: find("eu-stack", "elfutils")?,
        zstd: find("zstd", "zstd")?,
    })
}

#[test]
fn tiny_core_matches_gdb_and_eu_stack() {
    let test = "tiny_core_matches_gdb_and_eu_stack";
    let Some(tools) = tools_or_skip(test) else {
        return;
    };
    // gdb and eu-stack read no compressed core: the committed one, decompressed.
    let dir = tempfile::tempdir().unwrap();
    let core_path = dir.path().join("tiny.core");
    std::fs::write(&core_path, tiny_core_bytes()).unwrap();
    let text = compare_with_tools(test, &core_path, &td("core/core-tiny"), &tools);
    let threads = parse_threads(&text);
    let names: Vec<&str> = threads
        .values()
        .flatten()
        .map(|frame| frame.0.as_str())
        .collect();
    assert_eq!(
        names,
        ["tiny_crash", "tiny_middle", "tiny_outer", "_start"],
        "{text}"
    );
    assert!(
        text.contains("terminated by signal SIGSEGV, fault address 0x18"),
        "{text}"
    );
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn gcore_of_waiting_threads_matches_gdb_and_eu_stack() {
    let test = "gcore_of_waiting_threads_matches_gdb_and_eu_stack";
    let Some(tools) = tools_or_skip(test) else {
        return;
    };
    if !is_root() {
        return skip_or_fail(test, "gcore needs ptrace permission (run as root)");
    }
    let exe = td("core/core-demo");
    let mut child = Command::new(&exe)
        .arg("wait")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("ready "), "{line:?}");
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("gcore");
    let out = Command::new(&tools.gcore)
        .arg("-o")
        .arg(&prefix)
        .arg(child.id().to_string())
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let core_path = dir.path().join(format!("gcore.{}", child.id()));
    assert!(
        core_path.is_file(),
        "gcore wrote nothing: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = compare_with_tools(test, &core_path, &exe, &tools);
    let threads = parse_threads(&text);
    assert_eq!(threads.len(), 4, "{text}");
    let names = |want: &str| -> Vec<String> {
        threads
            .values()
            .find(|f| f.iter().any(|x| x.0 == want))
            .unwrap_or_else(|| panic!("no thread in {want}: {text}"))
            .iter()
            .map(|f| f.0.clone())
            .collect()
    };
    let recursion = names("recurse_thread");
    assert_eq!(
        recursion.iter().filter(|n| *n == "recurse").count(),
        41,
        "{recursion:?}"
    );
    let signal = names("on_usr1");
    let at = signal
        .iter()
        .position(|n| n == "<signal handler called>")
        .expect("a signal frame");
    assert_eq!(
        signal[at - 2..at + 3],
        [
            "handler_wait",
            "on_usr1",
            "<signal handler called>",
            "busy_inner",
            "busy_outer"
        ]
    );
}

/// Sets the global core pattern for as long as it lives, and restores it on drop (also
/// when the test fails). One test at a time holds it (the tests of this file run in
/// parallel threads; the pattern is one for the machine).
struct CorePattern {
    old: String,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl CorePattern {
    const PATH: &'static str = "/proc/sys/kernel/core_pattern";

    fn set(pattern: &str) -> std::io::Result<CorePattern> {
        static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        // A test that failed while holding it poisoned it; the pattern was restored.
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let old = std::fs::read_to_string(Self::PATH)?;
        std::fs::write(Self::PATH, pattern)?;
        Ok(CorePattern {
            old,
            _serial: serial,
        })
    }
}

impl Drop for CorePattern {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(Self::PATH, self.old.trim_end()) {
            writeln_stderr(format_args!(
                "could not restore {} to {:?}: {e}",
                Self::PATH,
                self.old
            ));
        }
    }
}

/// Runs `exe args` with core dumps on (unlimited size) and waits for it to crash; the
/// core it left in `dir` (named by the pattern `dir/core.%p`).
fn crash(exe: &Path, args: &[&str], dir: &Path) -> PathBuf {
    let mut command = Command::new(exe);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // SAFETY: between fork and exec only setrlimit, which is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            let unlimited = libc::rlimit {
                rlim_cur: libc::RLIM_INFINITY,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_CORE, &unlimited) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().unwrap();
    let pid = child.id();
    let status = command_wait(child);
    let core = dir.join(format!("core.{pid}"));
    assert!(
        core.is_file(),
        "{} {args:?} ended with {status:?} and left no core in {}",
        exe.display(),
        dir.display()
    );
    core
}

fn command_wait(mut child: std::process::Child) -> std::process::ExitStatus {
    child.wait().unwrap()
}

#[test]
fn crash_cores_match_gdb_and_eu_stack() {
    let test = "crash_cores_match_gdb_and_eu_stack";
    let Some(tools) = tools_or_skip(test) else {
        return;
    };
    if !is_root() {
        return skip_or_fail(test, "setting the core pattern needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    // Every core made serially while the pattern is set; restored when `pattern` drops.
    let (segv, abort, overflow) = {
        let pattern = CorePattern::set(&format!("{}/core.%p", dir.path().display()));
        let Ok(_pattern) = pattern else {
            return skip_or_fail(test, "cannot write /proc/sys/kernel/core_pattern");
        };
        (
            crash(&td("core/core-demo"), &["segv"], dir.path()),
            crash(&td("core/core-throw"), &[], dir.path()),
            crash(&td("core/core-demo"), &["overflow"], dir.path()),
        )
    };

    // A stack overflow: the thread ran into its guard page (the kernel could not deliver
    // SIGSEGV on that stack). Its whole recursion unwinds from the faulting prologue.
    let text = compare_with_tools(test, &overflow, &td("core/core-demo"), &tools);
    let core = CoreFile::open(&overflow).unwrap();
    let signal = core.signal().expect("NT_SIGINFO");
    let crashed = &core.threads()[0];
    let sp = crashed.registers.sp();
    let fault = signal.fault_addr.expect("a fault address").0;
    assert!(
        signal.signal == 11 && (sp - 8..=sp).contains(&fault),
        "fault {fault:#x}, sp {sp:#x}"
    );
    assert!(
        core.why_unreadable(AbsAddr(fault)).is_some(),
        "the guard page"
    );
    let threads = parse_threads(&text);
    let frames: Vec<&str> = threads[&crashed.tid].iter().map(|f| f.0.as_str()).collect();
    let depth = frames
        .iter()
        .take_while(|name| **name == "overflow")
        .count();
    // 64 KiB of about 500-byte frames.
    assert!(
        (100..140).contains(&depth)
            && frames[depth..] == ["overflow_thread", "start_thread", "clone3"],
        "{text}"
    );
    writeln_stderr(format_args!(
        "{test}: stack overflow: {depth} overflow() frames, fault {fault:#x} at sp {sp:#x}"
    ));

    let text = compare_with_tools(test, &segv, &td("core/core-demo"), &tools);
    assert!(
        text.contains("terminated by signal SIGSEGV, fault address 0x10"),
        "{text}"
    );
    let threads = parse_threads(&text);
    assert_eq!(threads.len(), 3, "{text}");
    let first = threads
        .values()
        .find(|f| f.first().is_some_and(|x| x.0 == "crash_write"))
        .expect("the crashing thread");
    assert_eq!(
        first.iter().filter(|f| f.0 == "crash_chain").count(),
        31,
        "{first:?}"
    );
    // The crashing thread is printed first.
    let first_tid = text
        .lines()
        .find_map(|l| l.strip_prefix("TID "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap();
    assert_eq!(
        threads[&first_tid.parse::<u32>().unwrap()][0].0,
        "crash_write"
    );

    let text = compare_with_tools(test, &abort, &td("core/core-throw"), &tools);
    assert!(text.contains("terminated by signal SIGABRT"), "{text}");
    // libc's names are its DWARF's (__GI_abort), as gdb prints them.
    let frames: Vec<String> = parse_threads(&text)
        .into_values()
        .flatten()
        .map(|f| f.0)
        .collect();
    for want in ["abort", "std::terminate", "throw_chain", "main"] {
        assert!(
            frames.iter().any(|name| name.ends_with(want)),
            "no {want} in:\n{text}"
        );
    }

    // The segv core compressed as systemd-coredump stores it: the same output.
    let zst = dir.path().join("segv.zst");
    let status = Command::new(&tools.zstd)
        .args(["-q", "-3", "-o"])
        .arg(&zst)
        .arg(&segv)
        .status()
        .unwrap();
    assert!(status.success());
    let pstack = |core: &Path| {
        let out = tool("pstack").arg("--core").arg(core).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        // The first line names the core file.
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.split_once('\n')
            .map(|(_, rest)| rest.to_string())
            .unwrap()
    };
    assert_eq!(pstack(&zst), pstack(&segv));

    // Truncated: the notes (first) and the lowest segments survive; a thread whose stack
    // was cut says so, the others unwind whole.
    let bytes = std::fs::read(&segv).unwrap();
    let whole = CoreFile::open(&segv).unwrap();
    let whole_stacks = stacks_of(&whole);
    let mut sps: Vec<(u64, u32)> = whole
        .threads()
        .iter()
        .map(|t| (t.registers.sp(), t.tid))
        .collect();
    sps.sort();
    // Cut below the highest stack (the main thread's, at the top of the address space).
    let (high_sp, cut_tid) = sps[sps.len() - 1];
    let cut_at = whole_stack_offset(&bytes, high_sp);
    let cut_path = dir.path().join("segv.cut");
    std::fs::write(&cut_path, &bytes[..cut_at]).unwrap();
    let cut = CoreFile::open(&cut_path).unwrap();
    assert!(
        cut.problems().iter().any(|p| p.contains("truncated")),
        "{:?}",
        cut.problems()
    );
    let cut_stacks = stacks_of(&cut);
    for ((tid, names, stop), (_, whole_names, _)) in cut_stacks.iter().zip(&whole_stacks) {
        if *tid == cut_tid {
            assert!(
                matches!(stop, StopReason::MemoryUnreadable { addr } if
                    cut.why_unreadable(*addr) == Some(Unreadable::Truncated)),
                "{tid}: {stop:?}"
            );
        } else {
            assert_eq!(names, whole_names, "thread {tid} is whole in the cut core");
        }
    }
    let out = tool("pstack")
        .arg("--core")
        .arg(&cut_path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("past the end of the truncated core"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------- aarch64, under qemu-user

/// Runs the static aarch64 program `exe` under `qemu` in `dir` until it crashes; the core
/// qemu wrote for the guest. qemu-user writes it itself (no NT_FILE, NT_SIGINFO or
/// NT_ARM_PAC_MASK note: qemu 7.2) into its working directory, named
/// `qemu_<program>_<date>-<time>_<pid>.core`, when RLIMIT_CORE allows (it stops writing at the
/// limit); then it kills itself with the signal, and the host's kernel dumps qemu by the
/// core pattern (the caller's, into `dir` too, cut at the same limit).
fn qemu_crash(qemu: &Path, exe: &Path, dir: &Path) -> PathBuf {
    let mut command = Command::new(qemu);
    // A 64 KiB guest stack (qemu's default is 8 MiB, all of it in the core).
    command
        .args(["-s", "65536"])
        .arg(exe)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // SAFETY: between fork and exec only setrlimit, which is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            let limit = libc::rlimit {
                rlim_cur: 16 << 20,
                rlim_max: 16 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_CORE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let status = command.status().unwrap();
    let stem = exe.file_name().unwrap().to_string_lossy().to_string();
    let cores: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(&format!("qemu_{stem}_")) && name.ends_with(".core")
        })
        .collect();
    assert_eq!(
        cores.len(),
        1,
        "{} under qemu ended with {status:?}, left {cores:?} in {}",
        exe.display(),
        dir.display()
    );
    cores.into_iter().next().unwrap()
}

/// `core` with an `NT_ARM_PAC_MASK` note (data and instruction masks both `mask`) added at
/// the end of its notes, as Linux writes it on a CPU with pointer authentication: qemu
/// leaves room (its first segment starts on the next page).
fn with_pac_mask_note(core: &[u8], mask: u64) -> Vec<u8> {
    let mut out = core.to_vec();
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (phoff, phnum) = (
        word(core, 0x20) as usize,
        u16::from_le_bytes([core[0x38], core[0x39]]) as usize,
    );
    let ph = (0..phnum)
        .map(|i| phoff + i * 56)
        .find(|&ph| core[ph..ph + 4] == 4u32.to_le_bytes())
        .expect("a PT_NOTE");
    let (offset, filesz) = (word(core, ph + 8) as usize, word(core, ph + 32) as usize);
    let mut note = Vec::new();
    for v in [6u32, 16, 0x406] {
        note.extend_from_slice(&v.to_le_bytes());
    }
    note.extend_from_slice(b"LINUX\0\0\0");
    note.extend_from_slice(&mask.to_le_bytes());
    note.extend_from_slice(&mask.to_le_bytes());
    let end = offset + filesz;
    assert!(
        out[end..end + note.len()].iter().all(|&b| b == 0),
        "no room after the notes"
    );
    out[end..end + note.len()].copy_from_slice(&note);
    out[ph + 32..ph + 40].copy_from_slice(&((filesz + note.len()) as u64).to_le_bytes());
    out
}

/// Linux's instruction PAC mask on a 48-bit address space: bits 48–54
/// (`GENMASK(54, vabits)`; the top byte is the address tag).
const PAC_MASK_48: u64 = 0x007f << 48;

/// `gdb-multiarch -batch -c CORE EXE -ex 'thread apply all bt'`'s threads ("[PAC]", which
/// gdb prints after a stripped address, dropped).
fn gdb_multiarch(gdb: &Path, core: &Path, exe: &Path) -> (String, BTreeMap<u32, Frames>) {
    let out = Command::new(gdb)
        .args(["-batch", "-nx", "-c"])
        .arg(core)
        .arg(exe)
        .args(["-ex", "thread apply all bt"])
        .stdin(Stdio::null())
        .output()
        .expect("gdb-multiarch runs");
    let text = String::from_utf8_lossy(&out.stdout).replace(" [PAC] ", " ");
    let threads = parse_threads(&text);
    (text, threads)
}

#[test]
fn qemu_aarch64_cores_unwind_with_and_without_pac_ret() {
    let test = "qemu_aarch64_cores_unwind_with_and_without_pac_ret";
    let Some((qemu, gdb)) = support::qemu_aarch64_and_gdb(test) else {
        return;
    };
    let Some(eu_stack) = find_tool("eu-stack") else {
        return skip_or_fail(test, "eu-stack not found (apt-get install elfutils)");
    };
    if !is_root() {
        return skip_or_fail(
            test,
            "setting the core pattern (for qemu's own core) needs root",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let (plain, pac) = {
        let Ok(_pattern) = CorePattern::set(&format!("{}/host-core.%p", dir.path().display()))
        else {
            return skip_or_fail(test, "cannot write /proc/sys/kernel/core_pattern");
        };
        (
            qemu_crash(&qemu, &td("core/core-a64"), dir.path()),
            qemu_crash(&qemu, &td("core/core-a64-pac"), dir.path()),
        )
    };
    let want = ["a64_crash", "a64_middle", "a64_outer", "_start"];
    for (core_path, exe, signed) in [
        (&plain, td("core/core-a64"), false),
        (&pac, td("core/core-a64-pac"), true),
    ] {
        let options = CoreOptions {
            exe: Some(exe.clone()),
            ..CoreOptions::default()
        };
        let core = CoreFile::open_with(core_path, &options).unwrap();
        assert_eq!(core.machine(), 183);
        assert_eq!(core.threads().len(), 1);
        // No NT_SIGINFO: the signal from NT_PRSTATUS, without the fault address.
        let signal = core.signal().expect("the signal from NT_PRSTATUS");
        assert_eq!(
            (signal.name().as_str(), signal.fault_addr),
            ("SIGSEGV", None)
        );
        // No NT_FILE: the executable placed by AT_PHDR, said once.
        assert!(
            core.problems().len() == 1 && core.problems()[0].contains("NT_FILE"),
            "{:?}",
            core.problems()
        );
        let file = core
            .files()
            .iter()
            .find(|f| f.path.ends_with(exe.file_name().unwrap()))
            .expect("the executable's mapping");
        // qemu does not dump the page of the ELF header: no recorded build-id to check.
        assert_eq!(file.file.as_ref().unwrap().1, Matched::Unverified);
        assert_eq!(
            core.threads()[0].pac_mask,
            None,
            "qemu writes no NT_ARM_PAC_MASK"
        );

        let stacks = stacks_of(&core);
        let (_, names, stop) = &stacks[0];
        assert_eq!(names, &want, "{}", core_path.display());
        assert_eq!(*stop, StopReason::Root);

        // The return address a64_middle saved in its frame record (x29 + 8): signed under
        // pac-ret (code bits above bit 48), plain otherwise; the unwinder stripped it.
        let thread = &core.threads()[0];
        let x29 = RegsAarch64::from_core_thread(thread)
            .unwrap()
            .reg(RegsAarch64::X29)
            .unwrap();
        let saved = core.read_u64(AbsAddr(x29 + 8)).expect("the frame record");
        assert_eq!(saved >> 48 != 0, signed, "saved lr {saved:#x}");

        // gdb-multiarch, and eu-stack (which names nothing without NT_FILE: its pcs).
        let ours = tool("pstack")
            .arg("--core")
            .arg(core_path)
            .arg("--exe")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(ours.status.success(), "{ours:?}");
        let ours_text = String::from_utf8_lossy(&ours.stdout).to_string();
        let ours = parse_threads(&ours_text);
        let our_frames = &ours[&thread.tid];
        let (gdb_text, theirs) = gdb_multiarch(&gdb, core_path, &exe);
        let gdb_frames = theirs.get(&thread.tid).expect(&gdb_text);
        let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
        if signed {
            // Without NT_ARM_PAC_MASK gdb does not strip: it stops at the first signed
            // return address (a64_middle's), after the frames it agrees on.
            assert!(
                gdb_frames.len() < our_frames.len()
                    && our_frames[..gdb_frames.len()] == gdb_frames[..],
                "gdb-multiarch:\n{gdb_text}\npstack:\n{ours_text}"
            );
            *classes
                .entry("gdb-multiarch stops at a signed return address (no NT_ARM_PAC_MASK)")
                .or_default() += our_frames.len() - gdb_frames.len();
        } else {
            assert_eq!(our_frames, gdb_frames, "gdb-multiarch:\n{gdb_text}");
        }
        let eu = Command::new(&eu_stack)
            .args(["--core"])
            .arg(core_path)
            .arg("-e")
            .arg(&exe)
            .output()
            .unwrap();
        let eu_text = String::from_utf8_lossy(&eu.stdout);
        let eu_pcs: Vec<u64> = parse_threads(&eu_text)
            .into_values()
            .flatten()
            .filter_map(|f| f.1)
            .collect();
        let our_pcs: Vec<u64> = our_frames.iter().filter_map(|f| f.1).collect();
        assert!(eu_pcs.len() >= our_pcs.len(), "eu-stack:\n{eu_text}");
        for (ours, theirs) in our_pcs.iter().zip(&eu_pcs) {
            if ours != theirs {
                assert_eq!(*ours, theirs & ((1 << 48) - 1), "eu-stack:\n{eu_text}");
                *classes
                    .entry("eu-stack leaves the PAC in a return address")
                    .or_default() += 1;
            }
        }
        writeln_stderr(format_args!(
            "{test}: {}: {} frames, vs gdb-multiarch {} frames, eu-stack {} pcs",
            core_path.display(),
            our_frames.len(),
            gdb_frames.len(),
            eu_pcs.len()
        ));
        for (class, count) in &classes {
            writeln_stderr(format_args!("    {count:3}  {class}"));
        }
        assert!(
            ours_text.contains("terminated by signal SIGSEGV"),
            "{ours_text}"
        );
    }

    // The core as Linux writes it on a CPU with pointer authentication (NT_ARM_PAC_MASK):
    // the mask is read and applied, and gdb-multiarch strips too and agrees frame by frame.
    let bytes = std::fs::read(&pac).unwrap();
    let masked = dir.path().join("pac-mask.core");
    std::fs::write(&masked, with_pac_mask_note(&bytes, PAC_MASK_48)).unwrap();
    let exe = td("core/core-a64-pac");
    let options = CoreOptions {
        exe: Some(exe.clone()),
        ..CoreOptions::default()
    };
    let core = CoreFile::open_with(&masked, &options).unwrap();
    assert_eq!(core.threads()[0].pac_mask, Some(PAC_MASK_48));
    assert_eq!(stacks_of(&core)[0].1, want);
    let out = tool("pstack")
        .arg("--core")
        .arg(&masked)
        .arg("--exe")
        .arg(&exe)
        .output()
        .unwrap();
    let ours_text = String::from_utf8_lossy(&out.stdout).to_string();
    let (gdb_text, theirs) = gdb_multiarch(&gdb, &masked, &exe);
    assert_eq!(
        parse_threads(&ours_text),
        theirs,
        "pstack:\n{ours_text}\ngdb-multiarch:\n{gdb_text}"
    );
    writeln_stderr(format_args!(
        "{test}: with NT_ARM_PAC_MASK {PAC_MASK_48:#x}: gdb-multiarch agrees on all {} frames",
        want.len()
    ));
    // A mask that misses the code bits this CPU used leaves them: the signed return address
    // is no code, a64_outer is lost (what follows is the frame-pointer fallback's guess).
    // The mask is what strips.
    let wrong = with_pac_mask_note(&bytes, 1 << 48);
    let core = CoreFile::from_bytes("pac-wrong-mask", wrong, &options).unwrap();
    let stacks = stacks_of(&core);
    assert!(
        stacks[0].1[..2] == want[..2] && !stacks[0].1.contains(&"a64_outer".to_string()),
        "{:?}",
        stacks[0]
    );
}

// ---------------------------------------------------------------- a container's core

/// Runs `inside` (a path in `root`) chrooted into `root`, with core dumps on, until it
/// crashes; the core the kernel wrote by the relative pattern `core.%p` into its working
/// directory, the root's `/`.
fn crash_in_root(root: &Path, inside: &str, args: &[&str]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let root_c = std::ffi::CString::new(root.as_os_str().as_bytes()).unwrap();
    let mut command = Command::new(inside);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // SAFETY: between fork and exec only chroot, chdir and setrlimit, async-signal-safe;
    // the path was made before the fork.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
            let unlimited = libc::rlimit {
                rlim_cur: libc::RLIM_INFINITY,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::chroot(root_c.as_ptr()) != 0
                || libc::chdir(c"/".as_ptr()) != 0
                || libc::setrlimit(libc::RLIMIT_CORE, &unlimited) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().unwrap();
    let pid = child.id();
    let status = command_wait(child);
    let core = root.join(format!("core.{pid}"));
    assert!(
        core.is_file(),
        "{inside} {args:?} in {} ended with {status:?}, no core",
        root.display()
    );
    core
}

#[test]
fn container_core_reads_its_files_under_the_sysroot() {
    let test = "container_core_reads_its_files_under_the_sysroot";
    let Some(tools) = tools_or_skip(test) else {
        return;
    };
    if !is_root() {
        return skip_or_fail(test, "chroot and the core pattern need root");
    }
    let Some(ldd) = find_tool("ldd") else {
        return skip_or_fail(test, "ldd not found (libc-bin)");
    };
    // The root: core-demo at /app/core-demo (no such file on the host), its libraries at the
    // paths ldd shows.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let exe = root.join("app/core-demo");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::copy(td("core/core-demo"), &exe).unwrap();
    let out = Command::new(&ldd)
        .arg(td("core/core-demo"))
        .output()
        .unwrap();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim();
        let path = line.split_once(" => ").map_or(line, |(_, rest)| rest);
        let path = path.split(" (").next().unwrap_or("").trim();
        if let Some(inside) = path.strip_prefix('/') {
            let to = root.join(inside);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(path, &to).unwrap();
        }
    }
    let core_path = {
        let Ok(_pattern) = CorePattern::set("core.%p") else {
            return skip_or_fail(test, "cannot write /proc/sys/kernel/core_pattern");
        };
        crash_in_root(root, "/app/core-demo", &["segv"])
    };

    // The paths as the process saw them; without the sysroot the executable is missing,
    // and its frames say so (never another file's names).
    let core = CoreFile::open(&core_path).unwrap();
    let app = core
        .files()
        .iter()
        .find(|f| f.path == Path::new("/app/core-demo"))
        .expect("NT_FILE names /app/core-demo");
    let error = app
        .file
        .as_ref()
        .expect_err("no /app on the host")
        .to_string();
    assert!(error.contains("/app/core-demo"), "{error}");
    let pc = core.threads()[0].registers.ip();
    let symbols = Symbolizer::builder()
        .build()
        .symbolize(&Source::Core(&core), Input::AbsAddrs(&[AbsAddr(pc)]))
        .unwrap();
    assert!(
        matches!(symbols.not_found(0), Some(NotFound::FileError(_))),
        "{:?}",
        symbols.not_found(0)
    );

    // With the sysroot: every ELF file of the process matched inside the root, by build-id.
    let core = CoreFile::open_with(
        &core_path,
        &CoreOptions {
            sysroot: Some(root.to_path_buf()),
            ..CoreOptions::default()
        },
    )
    .unwrap();
    let elf_files: Vec<_> = core
        .files()
        .iter()
        .filter(|f| !matches!(f.file, Err(stacksym::Error::NotElf { .. })))
        .collect();
    assert!(elf_files.len() >= 3, "{:?}", core.files());
    for file in &elf_files {
        match &file.file {
            Ok((elf, matched)) => {
                assert_eq!(*matched, Matched::ByPath, "{}", file.path.display());
                assert!(elf.path().starts_with(root), "{}", elf.path().display());
            }
            Err(e) => panic!("{}: {e}", file.path.display()),
        }
    }
    assert_eq!(stacks_of(&core)[0].1[0], "crash_write");
    let text = compare_with_tools_in(test, &core_path, &exe, Some(root), &tools);
    assert!(text.contains("in crash_write"), "{text}");
}

// ---------------------------------------------------------------- rebuilt since the crash

#[test]
fn rebuilt_binary_is_a_per_frame_mismatch_then_found_by_build_id() {
    let test = "rebuilt_binary_is_a_per_frame_mismatch_then_found_by_build_id";
    if !is_root() {
        return skip_or_fail(test, "setting the core pattern needs root");
    }
    // core-demo crashes from a copy; the copy is then replaced by another build (the
    // package upgraded since the crash: core-throw stands for it) and the crashed build is
    // kept only in a debug dir, by build-id, as a build-id archive keeps it.
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("core-demo");
    std::fs::copy(td("core/core-demo"), &exe).unwrap();
    let core_path = {
        let Ok(_pattern) = CorePattern::set(&format!("{}/core.%p", dir.path().display())) else {
            return skip_or_fail(test, "cannot write /proc/sys/kernel/core_pattern");
        };
        crash(&exe, &["segv"], dir.path())
    };
    let whole = stacks_of(&CoreFile::open(&core_path).unwrap());
    assert_eq!(whole[0].1[0], "crash_write");
    std::fs::remove_file(&exe).unwrap();
    std::fs::copy(td("core/core-throw"), &exe).unwrap();

    // Without the old build: its frames are a mismatch, each saying both build-ids; nothing
    // is named from the new build.
    let no_dirs = CoreOptions {
        finder: None,
        ..CoreOptions::default()
    };
    let core = CoreFile::open_with(&core_path, &no_dirs).unwrap();
    let file = core.files().iter().find(|f| f.path == exe).unwrap();
    let error = file.file.as_ref().expect_err("another build").to_string();
    let recorded: String = file
        .build_id
        .as_ref()
        .unwrap()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        error.contains("build-id mismatch") && error.contains(&recorded),
        "{error}"
    );
    let out = tool("pstack")
        .arg("--core")
        .arg(&core_path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let crashing = text.split("\nTID ").nth(1).expect("a thread");
    let first = crashing.lines().nth(1).expect("frame #0");
    assert!(
        first.contains("build-id mismatch") && !text.contains("throw_chain"),
        "{text}"
    );
    // libc's frames are named; unwinding stops, saying why, at the first frame of the
    // mismatched file (its CFI is not used: it is another build's).
    assert!(
        text.contains("in ___pthread_cond_wait") && text.contains("no unwind information"),
        "{text}"
    );
    writeln_stderr(format_args!(
        "{test}: frame #0 of the crashing thread: {first}"
    ));

    // The crashed build in a debug dir, by build-id: matched, and the stacks are the ones
    // the core had before the rebuild.
    let debug = dir.path().join("debug");
    let link = debug.join(".build-id").join(&recorded[..2]);
    std::fs::create_dir_all(&link).unwrap();
    std::fs::copy(td("core/core-demo"), link.join(&recorded[2..])).unwrap();
    let core = CoreFile::open_with(
        &core_path,
        &CoreOptions {
            finder: Some(DebugFinder::new(vec![debug])),
            ..CoreOptions::default()
        },
    )
    .unwrap();
    let file = core.files().iter().find(|f| f.path == exe).unwrap();
    assert_eq!(file.file.as_ref().unwrap().1, Matched::ByBuildId);
    let stacks = stacks_of(&core);
    assert_eq!(
        stacks.iter().map(|s| &s.1).collect::<Vec<_>>(),
        whole.iter().map(|s| &s.1).collect::<Vec<_>>()
    );
}
