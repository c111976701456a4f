//! No SIGBUS from any file (issue 26, item 3): every kind of file a batch holds is truncated
//! in place (`cp new.so over.so` truncates to zero before it writes) while the batch is held;
//! then the same addresses and more are symbolized through the cached file (whose mapping
//! now has pages past the file's end), the held batch is read, and the addresses are
//! symbolized once more (the symbolizer reopens what shrank). Clean answers or clean errors
//! naming a file, and the process lives.
//!
//! The work runs in a child process (this test binary run again with `STACKSYM_SIGBUS_VICTIM`
//! set), so that a SIGBUS shows as the child's death by signal 7 (exit 135 in a shell), a
//! failure of this test, instead of killing the test harness. Without the handler of
//! `src/elf/sigbus.rs` the child dies at the first case.
//!
//! Files (copies in a temporary dir; testdata/README.md says how each is built):
//! - the caller's path: `c-pie-g` (`.symtab` and DWARF in the file), cut to an eighth (its
//!   first page stays, names and DWARF go), and its `ElfFile` held and read again, DWARF too;
//! - a host debug file found by build-id: `c-gcc-O2-g-dwarf4.stripped-buildid`'s, cut to 0;
//! - a dwz supplementary file: `c-dwz-a`'s debug file's (`.dwz/stacksym-c-dwz.debug`), cut to
//!   0 (at 2.5 KB, an eighth would keep its only page, which never faults);
//! - a `.dwp` beside its binary: `c-split-dwp.dwp`, cut to 0 (one page, likewise);
//! - a kallsyms copy (`kallsyms/kmod-demo.kallsyms`) and a perf map (this process's
//!   `/tmp/perf-PID.map`): read into memory, so the held answers must not change at all;
//! - a core file (`core/tiny.core.zst` decompressed, with `core/core-tiny`; testdata/build-core.sh),
//!   cut to 0 while it is held: its threads are then unwound through its memory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

mod support;

use object::{Object, ObjectSymbol, SymbolKind};
use stacksym::core::{CoreFile, CoreOptions};
use stacksym::dwarf::{DwarfInfo, DwarfSections};
use stacksym::symbolize::KernelSource;
use stacksym::{AbsAddr, Input, Source, Symbolizer, Symbols, VirtAddr};

const VICTIM: &str = "STACKSYM_SIGBUS_VICTIM";

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
}

/// Sized functions of `path`'s `.symtab`: their start and a byte in their middle.
fn function_addrs(path: &Path) -> Vec<u64> {
    let data = std::fs::read(path).expect("a committed file");
    let file = object::File::parse(&*data).expect("ELF");
    let mut addrs: Vec<u64> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .flat_map(|s| [s.address(), s.address() + s.size() / 2])
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert!(addrs.len() >= 4, "{} has functions", path.display());
    addrs
}

/// Reads everything a batch holds (names, versions, frames); returns a sum of it, and how
/// many addresses answered.
fn touch(symbols: &Symbols) -> (usize, usize) {
    let mut sum = 0usize;
    let mut answered = 0;
    for sym in symbols.iter().flatten() {
        answered += 1;
        sum += sym.name.bytes().map(usize::from).sum::<usize>();
        sum += sym.raw_name.len() + sym.version.map_or(0, str::len);
        for frame in sym.frames {
            sum += frame.file.as_deref().map_or(0, str::len);
            sum += frame.function.as_ref().map_or(0, |f| f.raw.len());
        }
    }
    (sum, answered)
}

/// Cuts `path` in place to `len` bytes.
fn cut(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(len))
        .unwrap_or_else(|e| panic!("truncating {}: {e}", path.display()));
}

/// A clean answer, or an error that names a file of the temporary dir.
fn clean(what: &str, dir: &Path, result: stacksym::Result<Symbols>) {
    match result {
        Ok(symbols) => eprintln!("{what}: answered ({:?})", touch(&symbols)),
        Err(e) => {
            let message = e.to_string();
            assert!(
                message.contains(&*dir.to_string_lossy()),
                "{what}: the error names the file: {message}"
            );
            eprintln!("{what}: a clean error: {message}");
        }
    }
}

/// A file to cut, and the length to cut it to (from its length).
type Victim<'a> = (&'a Path, fn(u64) -> u64);

/// Symbolizes `binary` (half of `addrs`), cuts each of `victims` to `len(victim)`, then:
/// symbolizes all of `addrs` through the cached file, reads the held batch, and symbolizes
/// all of `addrs` once more.
fn held_then_cut(
    what: &str,
    dir: &Path,
    symbolizer: &Symbolizer,
    binary: &Path,
    addrs: &[u64],
    victims: &[Victim<'_>],
) {
    let addrs = VirtAddr::from_raw_slice(addrs);
    let source = Source::Elf { path: binary };
    let held = symbolizer
        .symbolize(&source, Input::VirtAddrs(&addrs[..addrs.len() / 2]))
        .unwrap_or_else(|e| panic!("{what}: before the cut: {e}"));
    let (_, answered) = touch(&held);
    assert!(answered > 0, "{what}: the batch has answers before the cut");
    for (victim, len) in victims {
        let before = std::fs::metadata(victim).expect("exists").len();
        cut(victim, len(before));
    }
    // The binary's cache entry is unchanged when only a companion was cut, so this batch
    // reads the cut file's mapping (units not yet parsed, names not yet read).
    clean(
        &format!("{what}: through the cached file"),
        dir,
        symbolizer.symbolize(&source, Input::VirtAddrs(addrs)),
    );
    let (_, answered_after) = touch(&held);
    assert_eq!(
        answered_after, answered,
        "{what}: the held batch keeps its answers"
    );
    eprintln!("{what}: held batch read after the cut");
    clean(
        &format!("{what}: once more"),
        dir,
        symbolizer.symbolize(&source, Input::VirtAddrs(addrs)),
    );
}

fn victim(dir: &Path) {
    let copy = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    };
    // The committed debug dir, copied: its files are the ones cut.
    let debug = dir.join("debug");
    for entry in walk(&testdata("debug")) {
        let rel = entry.strip_prefix(testdata("debug")).expect("under it");
        copy(&entry, &debug.join(rel));
    }
    let symbolizer = || {
        Symbolizer::builder()
            .debug_dirs(vec![debug.clone()])
            .build()
    };
    let to_zero: fn(u64) -> u64 = |_| 0;
    let to_an_eighth: fn(u64) -> u64 = |len| len / 8;

    // 1. The caller's path, and its ElfFile held and read again after the cut.
    let caller = dir.join("c-pie-g");
    copy(&support::bin("c-pie-g"), &caller);
    let addrs = function_addrs(&caller);
    let s = symbolizer();
    let held_file = s.elf_file(&caller).expect("c-pie-g opens");
    held_then_cut(
        "caller path",
        dir,
        &s,
        &caller,
        &addrs,
        &[(&caller, to_an_eighth)],
    );
    read_elf_again("caller path", &held_file, &addrs);

    // 2. A host debug file found by build-id.
    let stripped = dir.join("c-gcc-O2-g-dwarf4.stripped-buildid");
    copy(
        &support::bin("c-gcc-O2-g-dwarf4.stripped-buildid"),
        &stripped,
    );
    let debug_file = debug.join(".build-id/af/db8b6b43ccf7491fabdf677a99651c39db30fe.debug");
    let addrs = function_addrs(&debug_file);
    held_then_cut(
        "host debug file",
        dir,
        &symbolizer(),
        &stripped,
        &addrs,
        &[(&debug_file, to_zero)],
    );

    // 3. A dwz supplementary file (the binary is stripped: addresses from its debug file).
    let dwz_a = dir.join("c-dwz-a");
    copy(&support::bin("c-dwz-a"), &dwz_a);
    let dwz_debug = debug.join(format!(".build-id/{}", build_id_path(&dwz_a)));
    let addrs = function_addrs(&dwz_debug);
    let common = debug.join(".dwz/stacksym-c-dwz.debug");
    held_then_cut(
        "dwz supplementary file",
        dir,
        &symbolizer(),
        &dwz_a,
        &addrs,
        &[(&common, to_zero)],
    );

    // 4. A .dwp beside its binary.
    let split = dir.join("c-split-dwp");
    copy(&support::bin("c-split-dwp"), &split);
    let dwp = dir.join("c-split-dwp.dwp");
    copy(&support::bin("c-split-dwp.dwp"), &dwp);
    let addrs = function_addrs(&split);
    held_then_cut(
        ".dwp",
        dir,
        &symbolizer(),
        &split,
        &addrs,
        &[(&dwp, to_zero)],
    );

    // 5. A kallsyms copy (read into memory: cutting it changes nothing held).
    let kallsyms = dir.join("kallsyms");
    copy(&testdata("kallsyms/kmod-demo.kallsyms"), &kallsyms);
    let text = std::fs::read_to_string(&kallsyms).expect("text");
    let kaddrs: Vec<u64> = text
        .lines()
        .filter_map(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
        .filter(|&a| a != 0)
        .take(64)
        .map(|a| a + 1)
        .collect();
    let kaddrs = AbsAddr::from_raw_slice(&kaddrs);
    let source = Source::Kernel(KernelSource {
        kallsyms: Some(&kallsyms),
        ..KernelSource::default()
    });
    let s = symbolizer();
    let held = s
        .symbolize(&source, Input::AbsAddrs(kaddrs))
        .expect("kallsyms symbolizes");
    let before = touch(&held);
    assert!(before.1 > 0, "kallsyms answers");
    cut(&kallsyms, 0);
    assert_eq!(
        touch(&held),
        before,
        "kallsyms: the held batch is unchanged"
    );
    eprintln!("kallsyms: held batch read after the cut");
    clean(
        "kallsyms: again",
        dir,
        s.symbolize(&source, Input::AbsAddrs(kaddrs)),
    );

    // 6. This process's perf map, for an address of an anonymous executable mapping (stated
    // in maps given with the source: where a JIT compiler's code would be).
    let at = 0x7f00_0000_0000u64;
    let map = PathBuf::from(format!("/tmp/perf-{}.map", std::process::id()));
    std::fs::write(&map, format!("{at:x} 40 jitted_victim_function\n")).expect("write map");
    let maps_text = format!("{at:x}-{:x} r-xp 00000000 00:00 0\n", at + 0x1000);
    let maps = stacksym::process::ProcessMaps::from_bytes(Path::new("maps"), maps_text.as_bytes())
        .expect("one mapping");
    let process = stacksym::process::Process::new(std::process::id());
    let source = Source::Process {
        process: &process,
        maps: Some(&maps),
    };
    let s = symbolizer();
    let input = [AbsAddr(at + 1)];
    let held = s
        .symbolize(&source, Input::AbsAddrs(&input))
        .expect("own process");
    assert_eq!(
        held.get(0).map(|sym| sym.name.to_string()).as_deref(),
        Some("jitted_victim_function"),
        "the perf map answers"
    );
    cut(&map, 0);
    assert_eq!(
        held.get(0).map(|sym| sym.name.to_string()).as_deref(),
        Some("jitted_victim_function"),
        "perf map: the held batch is unchanged"
    );
    eprintln!("perf map: held batch read after the cut");
    let again = s.symbolize(&source, Input::AbsAddrs(&input));
    let _ = std::fs::remove_file(&map);
    match again {
        Ok(again) => eprintln!("perf map: again ({:?})", touch(&again)),
        Err(e) => panic!("perf map: own process symbolizes again: {e}"),
    }

    // 7. A core file (mapped as well: `CoreFile::open`), cut while the core and a batch of
    // it are held; then its threads are unwound through its memory and symbolized again.
    let core_path = dir.join("tiny.core");
    let compressed = std::fs::read(testdata("core/tiny.core.zst")).expect("committed");
    let mut decoder = ruzstd::decoding::StreamingDecoder::new(&compressed[..]).expect("zstd");
    let mut core_bytes = Vec::new();
    std::io::Read::read_to_end(&mut decoder, &mut core_bytes).expect("decompresses");
    std::fs::write(&core_path, &core_bytes).expect("write core");
    let exe = dir.join("core-tiny");
    copy(&testdata("core/core-tiny"), &exe);
    let options = CoreOptions {
        exe: Some(exe),
        ..CoreOptions::default()
    };
    let core = CoreFile::open_with(&core_path, &options).expect("the core opens");
    let pc = core.threads()[0].registers.ip();
    let s = symbolizer();
    let held = s
        .symbolize(&Source::Core(&core), Input::AbsAddrs(&[AbsAddr(pc)]))
        .expect("the core symbolizes");
    assert!(held.get(0).is_some(), "core: the pc is named");
    cut(&core_path, 0);
    let (_, answered) = touch(&held);
    assert_eq!(answered, 1, "core: the held batch keeps its answer");
    eprintln!("core file: held batch read after the cut");
    let mut addrs = vec![pc];
    #[cfg(target_arch = "x86_64")]
    {
        use stacksym::unwind::{Modules, RegsX86_64, UnwindCache, Unwinder};
        let unwinder = Unwinder::new(Modules::from_core(&core, None));
        let mut cache = UnwindCache::new();
        for thread in core.threads() {
            let regs = RegsX86_64::from_core(&thread.registers).expect("x86_64");
            let stack = unwinder.unwind(&regs, &core, &mut cache);
            addrs.extend(stack.frames.iter().map(|f| f.lookup_addr().0));
        }
    }
    clean(
        "core file: unwound and symbolized again",
        dir,
        s.symbolize(
            &Source::Core(&core),
            Input::AbsAddrs(AbsAddr::from_raw_slice(&addrs)),
        ),
    );
}

/// Reads a held `ElfFile` whose file was cut: every symbol at `addrs`, then its DWARF
/// loaded anew from the cut mapping and asked for every address.
fn read_elf_again(what: &str, file: &Arc<stacksym::elf::ElfFile>, addrs: &[u64]) {
    let mut names = 0usize;
    for &addr in addrs {
        match file.find_symbol(VirtAddr(addr)) {
            Ok(Some(sym)) => names += sym.name.len(),
            Ok(None) => {}
            Err(e) => eprintln!("{what}: held ElfFile: a clean error: {e}"),
        }
    }
    match DwarfSections::load(file).and_then(|s| s.map(|s| DwarfInfo::new(&s)).transpose()) {
        Ok(Some(dwarf)) => {
            let mut frames = 0;
            for &addr in addrs {
                match dwarf.frames(VirtAddr(addr)) {
                    Ok(found) => frames += found.map_or(0, |f| f.len()),
                    Err(e) => eprintln!("{what}: held ElfFile's DWARF: a clean error: {e}"),
                }
            }
            eprintln!("{what}: held ElfFile read again ({names} name bytes, {frames} frames)");
        }
        Ok(None) => eprintln!("{what}: held ElfFile read again ({names} name bytes, no DWARF)"),
        Err(e) => eprintln!("{what}: held ElfFile's DWARF: a clean error: {e}"),
    }
}

/// `xx/rest.debug` for `path`'s build-id.
fn build_id_path(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("a copied file");
    let file = object::File::parse(&*bytes).expect("ELF");
    let id = file.build_id().ok().flatten().expect("a build-id");
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}/{}.debug", &hex[..2], &hex[2..])
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a committed dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.is_file() {
            files.push(path);
        }
    }
    files
}

#[test]
fn cutting_held_files_does_not_kill_the_process() {
    if let Some(dir) = std::env::var_os(VICTIM) {
        victim(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary dir");
    let out = Command::new(std::env::current_exe().expect("own path"))
        .args([
            "--exact",
            "cutting_held_files_does_not_kill_the_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(VICTIM, dir.path())
        .output()
        .expect("the test binary runs again");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        None,
        "the child died of signal {:?} (7 is SIGBUS)",
        out.status.signal()
    );
    assert!(
        out.status.success(),
        "the child failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    for what in [
        "caller path",
        "host debug file",
        "dwz supplementary file",
        ".dwp",
        "kallsyms",
        "perf map",
        "core file",
    ] {
        assert!(
            stderr.contains(&format!("{what}: held batch read after the cut")),
            "{what} was exercised"
        );
    }
    assert!(
        stderr.contains("caller path: held ElfFile read again"),
        "the held ElfFile was read again"
    );
}
