//! USDT probes (`.note.stapsdt`) against the tools that read them elsewhere:
//! - the reader ([`stacksym::usdt::read_probes`]) lists what `readelf -n` lists (provider,
//!   name, location, base, semaphore, argument string) for `testdata/bin/usdt-x86_64` and
//!   `usdt-aarch64` (testdata/src/usdt.c and usdt-guarded.c: probes with and without
//!   semaphores, arguments of every operand kind, built by testdata/build-usdt.sh), and for
//!   files nobody here wrote: the system's python3, libstdc++ and postgres;
//! - `bpftrace -l 'usdt:BIN:*'` lists the same probes;
//! - the kernel fires a uprobe registered at our file offset with our semaphore offset as
//!   `ref_ctr_offset`, and the program sees its semaphore raised while it is registered;
//! - a live process gives absolute addresses (a file mapped twice: both);
//! - hostile notes are clear errors.
//!
//! Tools and root that are missing are skipped with a message, and fail the test under CI.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stacksym::process::{Process, ProcessMaps};
use stacksym::usdt::{read_probes, Operand, Probe};
use stacksym::{elf::ElfFile, Error, Source, Symbolizer};
use support::uprobe::{tracefs, UprobeEvent};
use support::{bin, find_tool, readelf_file_offset, skip_or_fail};

/// The tool's path, or `None` after [`skip_or_fail`] (which fails under CI).
fn tool(test: &str, name: &str, package: &str) -> Option<PathBuf> {
    let found = find_tool(name);
    if found.is_none() {
        skip_or_fail(test, &format!("{name} not found (install {package})"));
    }
    found
}

/// One probe as `readelf -n` prints it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ReadelfProbe {
    provider: String,
    name: String,
    location: u64,
    base: u64,
    semaphore: u64,
    args: String,
}

fn readelf_probes(readelf: &Path, path: &Path) -> Vec<ReadelfProbe> {
    let out = Command::new(readelf)
        .args(["-n", "-W"])
        .arg(path)
        .output()
        .expect("readelf runs");
    assert!(
        out.status.success(),
        "readelf -n {}: {out:?}",
        path.display()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    let mut probes = Vec::new();
    let mut current: Option<ReadelfProbe> = None;
    for line in text.lines() {
        // With -W the provider ends the note's header line.
        let line = match line.find("Provider: ") {
            Some(at) => &line[at..],
            None => line.trim_start(),
        };
        if let Some(provider) = line.strip_prefix("Provider: ") {
            current = Some(ReadelfProbe {
                provider: provider.to_string(),
                name: String::new(),
                location: 0,
                base: 0,
                semaphore: 0,
                args: String::new(),
            });
        } else if let (Some(probe), Some(name)) = (current.as_mut(), line.strip_prefix("Name: ")) {
            probe.name = name.to_string();
        } else if let (Some(probe), Some(rest)) =
            (current.as_mut(), line.strip_prefix("Location: "))
        {
            let fields: Vec<&str> = rest.split(", ").collect();
            probe.location = hex(fields[0]);
            probe.base = hex(fields[1].trim_start_matches("Base: "));
            probe.semaphore = hex(fields[2].trim_start_matches("Semaphore: "));
        } else if let Some(args) = line.strip_prefix("Arguments:") {
            let mut probe = current.take().expect("Arguments after Provider");
            probe.args = args.trim().to_string();
            probes.push(probe);
        }
    }
    probes
}

fn ours(probes: &[Probe]) -> Vec<ReadelfProbe> {
    probes
        .iter()
        .map(|p| ReadelfProbe {
            provider: p.provider.clone(),
            name: p.name.clone(),
            location: p.note.location,
            base: p.note.base,
            semaphore: p.note.semaphore,
            args: p.args_text.clone(),
        })
        .collect()
}

/// The reader against readelf on `path`: every field, in order; and every location's and
/// semaphore's file offset against readelf's segments. Returns the probes.
fn compare_with_readelf(readelf: &Path, path: &Path) -> Vec<Probe> {
    let elf = ElfFile::open(path).unwrap();
    let probes = read_probes(&elf).unwrap();
    let reference = readelf_probes(readelf, path);
    assert!(
        !reference.is_empty(),
        "readelf lists no probe in {}",
        path.display()
    );
    assert_eq!(ours(&probes), reference, "{}", path.display());
    let base = elf.section_address(".stapsdt.base").unwrap();
    for probe in &probes {
        // No file here was prelinked: the base is where the note says, nothing moves.
        assert_eq!(base.map(|b| b.0), Some(probe.note.base), "{}", probe.name);
        assert_eq!(probe.addr.0, probe.note.location);
        let offset = readelf_file_offset(path, probe.addr.0);
        assert_eq!(
            probe.file_offset.map(|o| o.0),
            Some(offset),
            "{}",
            probe.name
        );
        if let Some(sem) = probe.semaphore {
            assert_eq!(sem.addr.0, probe.note.semaphore);
            let offset = readelf_file_offset(path, sem.addr.0);
            assert_eq!(sem.file_offset.map(|o| o.0), Some(offset), "{}", probe.name);
        }
    }
    eprintln!(
        "usdt: {} probes of {} equal readelf -n's ({} with semaphores, {} args parsed)",
        probes.len(),
        path.display(),
        probes.iter().filter(|p| p.semaphore.is_some()).count(),
        probes.iter().filter(|p| p.args.is_ok()).count(),
    );
    probes
}

fn testdata_probe<'a>(probes: &'a [Probe], name: &str) -> &'a Probe {
    probes
        .iter()
        .find(|p| p.provider == "stacksym_demo" && p.name == name)
        .unwrap_or_else(|| panic!("no stacksym_demo:{name}"))
}

#[test]
fn testdata_probes_equal_readelf_and_cover_every_operand_kind() {
    let Some(readelf) = tool("testdata_probes", "readelf", "binutils") else {
        return;
    };
    for (binary, aarch64) in [("usdt-x86_64", false), ("usdt-aarch64", true)] {
        let probes = compare_with_readelf(&readelf, &bin(binary));
        let names: BTreeSet<&str> = probes.iter().map(|p| p.name.as_str()).collect();
        let expected: BTreeSet<&str> =
            ["plain", "widths", "global", "noargs", "guarded", "guarded2"].into();
        assert_eq!(names, expected, "{binary}");
        for probe in &probes {
            if aarch64 && probe.name == "global" {
                // `[x3, #:lo12:.LANCHOR0]`: a page offset whose page an earlier adrp loaded.
                let err = probe.args.as_ref().unwrap_err();
                assert!(err.to_string().contains("adrp"), "{err}");
                continue;
            }
            let args = probe
                .args
                .as_ref()
                .unwrap_or_else(|e| panic!("{binary}: {e}"));
            let with_semaphore = probe.name.starts_with("guarded");
            assert_eq!(probe.semaphore.is_some(), with_semaphore, "{}", probe.name);
            assert_eq!(
                args.len(),
                probe.args_text.split('@').count() - 1,
                "{}",
                probe.name
            );
        }
        let kinds: BTreeSet<&str> = probes
            .iter()
            .filter_map(|p| p.args.as_ref().ok())
            .flatten()
            .map(|a| match a.operand {
                Operand::Register(_) => "register",
                Operand::Memory { .. } => "memory",
                Operand::Symbol { .. } => "symbol",
                Operand::Constant(_) => "constant",
            })
            .collect();
        let expected: BTreeSet<&str> = if aarch64 {
            ["constant", "memory", "register"].into()
        } else {
            ["constant", "memory", "register", "symbol"].into()
        };
        assert_eq!(kinds, expected, "{binary}");
        // plain: (a in a register, a volatile local in memory, 7).
        let plain = testdata_probe(&probes, "plain").args.as_ref().unwrap();
        assert_eq!(plain[2].operand, Operand::Constant(7), "{binary}");
        // The volatile local: on the stack, at an offset from the stack pointer.
        let sp = if aarch64 { 31 } else { 7 };
        assert!(
            matches!(plain[1].operand, Operand::Memory { base, .. } if base.dwarf == sp),
            "{binary}: {plain:?}"
        );
        // widths: a signed byte, an unsigned 16-bit, a signed 32-bit, an unsigned 64-bit.
        let widths = testdata_probe(&probes, "widths").args.as_ref().unwrap();
        let shapes: Vec<(u8, bool)> = widths.iter().map(|a| (a.size, a.signed)).collect();
        assert_eq!(
            shapes,
            [(1, true), (2, false), (4, true), (8, false)],
            "{binary}"
        );
        if !aarch64 {
            // The globals' values are read %rip-relative on x86_64, at their symbols'
            // addresses (nm's).
            let global = testdata_probe(&probes, "global").args.as_ref().unwrap();
            for (arg, symbol) in global.iter().zip(["demo_global", "demo_counter"]) {
                let expected = support::nm_addr(&bin(binary), symbol);
                match &arg.operand {
                    Operand::Symbol {
                        base,
                        name,
                        offset: 0,
                        addr: Some(addr),
                    } if base.name == "rip" && name == symbol => {
                        assert_eq!(addr.0, expected, "{symbol}")
                    }
                    other => panic!("{binary}: {symbol}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn system_files_equal_readelf() {
    let test = "system_files_equal_readelf";
    let Some(readelf) = tool(test, "readelf", "binutils") else {
        return;
    };
    let mut candidates: Vec<PathBuf> = vec![
        PathBuf::from("/usr/bin/python3.11"),
        PathBuf::from("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
    ];
    if let Ok(dirs) = std::fs::read_dir("/usr/lib/postgresql") {
        for dir in dirs.flatten() {
            candidates.push(dir.path().join("bin/postgres"));
        }
    }
    let mut compared = Vec::new();
    for path in &candidates {
        if !path.is_file() {
            continue;
        }
        let probes = compare_with_readelf(&readelf, path);
        let parsed = probes.iter().filter(|p| p.args.is_ok()).count();
        for probe in &probes {
            if let Err(e) = &probe.args {
                eprintln!("{}: {}:{}: {e}", path.display(), probe.provider, probe.name);
            }
        }
        // Every argument string GCC wrote for these x86_64 files parses.
        assert_eq!(parsed, probes.len(), "{}", path.display());
        compared.push(format!("{} ({} probes)", path.display(), probes.len()));
    }
    for (what, package) in [
        ("python3.11", "python3.11"),
        ("libstdc++", "libstdc++6"),
        ("postgres", "postgresql-15"),
    ] {
        if !compared.iter().any(|c| c.contains(what)) {
            skip_or_fail(test, &format!("no {what} to compare (install {package})"));
        }
    }
    eprintln!("usdt: readelf -n agrees on {}", compared.join(", "));
}

#[test]
fn bpftrace_lists_the_same_probes() {
    let test = "bpftrace_lists_the_same_probes";
    let Some(bpftrace) = tool(test, "bpftrace", "bpftrace") else {
        return;
    };
    let symbolizer = Symbolizer::builder().build();
    let mut files = vec![bin("usdt-x86_64")];
    for extra in [
        "/usr/bin/python3.11",
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
    ] {
        if Path::new(extra).is_file() {
            files.push(PathBuf::from(extra));
        }
    }
    if let Ok(dirs) = std::fs::read_dir("/usr/lib/postgresql") {
        files.extend(dirs.flatten().map(|d| d.path().join("bin/postgres")));
    }
    files.retain(|f| f.is_file());
    for path in files {
        let path = path.canonicalize().unwrap();
        let out = Command::new(&bpftrace)
            .arg("-l")
            // Quoted: libstdc++'s "++" is not a bare path to bpftrace's parser.
            .arg(format!("usdt:\"{}\":*", path.display()))
            .output()
            .expect("bpftrace runs");
        if !out.status.success() {
            skip_or_fail(test, &format!("bpftrace -l failed: {out:?}"));
            return;
        }
        let prefix = format!("usdt:{}:", path.display());
        let theirs: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().strip_prefix(&prefix).map(str::to_string))
            .collect();
        let ours: BTreeSet<String> = symbolizer
            .find_usdt(&Source::Elf { path: &path }, "*:*")
            .unwrap()
            .iter()
            .map(|m| format!("{}:{}", m.probe.provider, m.probe.name))
            .collect();
        assert!(
            !theirs.is_empty(),
            "bpftrace lists nothing in {}",
            path.display()
        );
        assert_eq!(ours, theirs, "{}", path.display());
        eprintln!(
            "usdt: bpftrace -l lists the same {} probes of {}",
            ours.len(),
            path.display()
        );
    }
}

fn run_demo(binary: &Path, loops: &str) -> (u64, u64) {
    // The copy was just written: while another test thread forks, its child holds the write
    // descriptor until it execs (ETXTBSY), so a busy file is tried again.
    let mut tries = 0;
    let out = loop {
        match Command::new(binary).args([loops, "0"]).output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.unwrap(),
        }
    };
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let field = |name: &str| -> u64 {
        text.split_whitespace()
            .find_map(|f| f.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {text:?}"))
    };
    (field("guarded_runs="), field("semaphore_max="))
}

#[test]
fn a_uprobe_at_our_offsets_fires_and_raises_the_semaphore() {
    let test = "a_uprobe_at_our_offsets_fires";
    if std::env::consts::ARCH != "x86_64" {
        skip_or_fail(test, "the demo binary is x86_64");
        return;
    }
    // A copy of its own: a uprobe fires in every process running the file (inode), and the
    // other tests here run the committed one.
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("usdt-x86_64");
    std::fs::copy(bin("usdt-x86_64"), &binary).unwrap();
    // Without a tracer the semaphore stays 0 and the guarded site never runs.
    assert_eq!(run_demo(&binary, "20"), (0, 0), "guarded site ran untraced");
    let Some(tracing) = tracefs(test) else {
        return;
    };
    let symbolizer = Symbolizer::builder().build();
    let found = symbolizer
        .find_usdt(&Source::Elf { path: &binary }, "stacksym_demo:guarded")
        .unwrap();
    let probe = &found[0].probe;
    let offset = probe.file_offset.unwrap().0;
    let ref_ctr = probe.semaphore.unwrap().file_offset.unwrap().0;
    let group = format!("stacksym_usdt_{}", std::process::id());
    let spec = format!("{}:{offset:#x}({ref_ctr:#x})", binary.display());
    // uprobe_profile names the event without its group: a name of its own.
    let name = format!("guarded_{}", std::process::id());
    let event = UprobeEvent::register(&tracing, &group, &name, &spec)
        .unwrap_or_else(|e| panic!("registering {spec}: {e}"));
    std::fs::write(event.enable_path(), "1").unwrap();
    let loops = 25;
    let (runs, semaphore) = run_demo(&binary, &loops.to_string());
    let hits = event.hits();
    eprintln!(
        "usdt: uprobe {spec}: {hits} hits in uprobe_profile, the guarded site ran {runs} of \
         {loops} times, semaphore up to {semaphore}"
    );
    assert_eq!(runs, loops, "the semaphore did not open the guarded site");
    assert!(semaphore >= 1, "semaphore stayed 0");
    assert_eq!(hits, loops, "uprobe hits");
    drop(event);
    // Unregistered: the semaphore is 0 again in a new run.
    assert_eq!(run_demo(&binary, "5"), (0, 0));
}

#[test]
fn a_live_process_gives_absolute_addresses_per_mapping() {
    let binary = bin("usdt-x86_64").canonicalize().unwrap();
    if std::env::consts::ARCH != "x86_64" {
        return skip_or_fail("a_live_process", "the demo binary is x86_64");
    }
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let child = Kill(
        Command::new(&binary)
            .args(["1000", "10"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let child_pid = child.0.id();
    let process = Process::new(child_pid);
    let symbolizer = Symbolizer::builder().build();
    // The maps may be read before the loader mapped the binary: wait for it.
    let mut found = Vec::new();
    for _ in 0..100 {
        found = symbolizer
            .find_usdt(&Source::process(&process), "stacksym_demo:*")
            .unwrap();
        if found.len() == 6 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(found.len(), 6, "{found:#?}");
    let maps = process.read_maps().unwrap();
    let exec: Vec<_> = maps
        .mappings()
        .iter()
        .filter(|m| m.perms.exec && m.file_path().is_some_and(|p| p == binary))
        .cloned()
        .collect();
    assert_eq!(exec.len(), 1);
    for m in &found {
        let offset = m.probe.file_offset.unwrap().0;
        // Independently: the mapping's start plus the offset into it.
        let expected = exec[0].range.start.0 + offset - exec[0].file_offset.0;
        assert_eq!(m.abs_addr.map(|a| a.0), Some(expected), "{}", m.probe.name);
        assert_eq!(m.file, binary);
        assert_eq!(m.semaphore_abs_addr.is_some(), m.probe.semaphore.is_some());
        if let (Some(sem), Some(abs)) = (m.probe.semaphore, m.semaphore_abs_addr) {
            assert_eq!(
                abs.0 - sem.addr.0,
                expected - m.probe.addr.0,
                "one load bias"
            );
        }
    }
    // The same file mapped a second time (as dlmopen would): a match per mapping.
    let mut twice = maps.mappings().to_vec();
    let mut copy = exec[0].clone();
    let shift = 0x1000_0000_0000;
    copy.range = stacksym::addr::AbsAddr(copy.range.start.0 + shift)
        ..stacksym::addr::AbsAddr(copy.range.end.0 + shift);
    twice.push(copy);
    let twice = ProcessMaps::from_mappings(twice);
    let source = Source::Process {
        process: &process,
        maps: Some(&twice),
    };
    let both = symbolizer
        .find_usdt(&source, "stacksym_demo:plain")
        .unwrap();
    let addrs: Vec<u64> = both.iter().map(|m| m.abs_addr.unwrap().0).collect();
    assert_eq!(addrs.len(), 2, "{both:#?}");
    assert_eq!(addrs[1] - addrs[0], shift);
}

/// The test binary's bytes with its `.note.stapsdt` section's range.
fn note_section() -> (Vec<u8>, std::ops::Range<usize>) {
    use object::{Object, ObjectSection};
    let bytes = std::fs::read(bin("usdt-x86_64")).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let section = file.section_by_name(".note.stapsdt").unwrap();
    let (offset, size) = section.file_range().unwrap();
    let range = offset as usize..(offset + size) as usize;
    (bytes, range)
}

fn read_hostile(bytes: Vec<u8>) -> Error {
    let elf = ElfFile::from_bytes("hostile-usdt", bytes).unwrap();
    read_probes(&elf).expect_err("a hostile note is an error")
}

#[test]
fn hostile_notes_are_clear_errors() {
    let (bytes, notes) = note_section();
    // A descriptor size far past the section.
    let mut absurd = bytes.clone();
    absurd[notes.start + 4..notes.start + 8].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    let err = read_hostile(absurd);
    // Structured: the section, and the offset of the first note in it.
    assert!(matches!(err, Error::MalformedSection { .. }), "{err:?}");
    assert_eq!(err.section(), Some(".note.stapsdt"));
    assert_eq!(err.offset(), Some(0));
    assert_eq!(err.kind(), stacksym::ErrorKind::Malformed);
    let err = err.to_string();
    assert!(
        err.contains("hostile-usdt") && err.contains(".note.stapsdt"),
        "{err}"
    );
    assert!(err.contains("past the end of the section"), "{err}");
    // An owner name size past the section.
    let mut name = bytes.clone();
    name[notes.start..notes.start + 4].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let err = read_hostile(name).to_string();
    assert!(err.contains("owner's name"), "{err}");
    // A descriptor cut to fewer bytes than its three addresses.
    let mut short = bytes.clone();
    short[notes.start + 4..notes.start + 8].copy_from_slice(&20u32.to_le_bytes());
    let err = read_hostile(short).to_string();
    assert!(
        err.contains("shorter than its three 8-byte addresses"),
        "{err}"
    );
    // Strings without their NUL: the first note's strings overwritten.
    let mut no_nul = bytes.clone();
    let desc_size =
        u32::from_le_bytes(bytes[notes.start + 4..notes.start + 8].try_into().unwrap()) as usize;
    let desc_start = notes.start + 12 + 8; // "stapsdt\0"
    for b in &mut no_nul[desc_start + 24..desc_start + desc_size] {
        *b = b'A';
    }
    let err = read_hostile(no_nul).to_string();
    assert!(err.contains("no terminating NUL"), "{err}");
    // The section cut in the middle of a note header.
    let mut cut = bytes.clone();
    let mut probe_count = 0;
    let mut pos = notes.start;
    while pos + 12 <= notes.end {
        let word = |at: usize| u32::from_le_bytes(cut[at..at + 4].try_into().unwrap()) as usize;
        let next = pos + 12 + word(pos).next_multiple_of(4) + word(pos + 4).next_multiple_of(4);
        probe_count += 1;
        if next >= notes.end {
            break;
        }
        pos = next;
    }
    assert_eq!(probe_count, 6);
    // The last note's header made to claim the rest of the file.
    cut[pos + 4..pos + 8].copy_from_slice(&(notes.end - pos - 12 - 8 + 1).to_le_bytes()[..4]);
    let err = read_hostile(cut).to_string();
    assert!(err.contains("past the end of the section"), "{err}");
}

#[test]
fn the_example_prints_probes_and_their_targets() {
    let binary = bin("usdt-x86_64");
    let exe = || support::tool("symbolize");
    let path = binary.to_str().unwrap();
    let lines = support::run_command(exe(), &["--find-usdt", "stacksym_demo:*", "--obj", path]);
    let probes = read_probes(&ElfFile::open(&binary).unwrap()).unwrap();
    assert_eq!(lines.lines().count(), probes.len(), "{lines}");
    for (line, probe) in lines.lines().zip(&probes) {
        let semaphore = probe.semaphore.map_or("none".to_string(), |s| {
            format!("{:#x}", s.file_offset.unwrap().0)
        });
        assert_eq!(
            line,
            format!(
                "{:#x} stacksym_demo:{} semaphore={semaphore} args={}",
                probe.file_offset.unwrap().0,
                probe.name,
                probe.args_text
            )
        );
    }
    // Given a relative path (the tests run in the crate's root), bpftrace's probe keeps it
    // and the uprobe_events line, which the kernel takes only with an absolute path, has
    // the absolute one.
    let relative = "testdata/bin/usdt-x86_64";
    let spec = support::run_command(
        exe(),
        &[
            "--find-usdt",
            "*:guarded",
            "--obj",
            relative,
            "--probe-spec",
        ],
    );
    let guarded = testdata_probe(&probes, "guarded");
    let (offset, sem) = (
        guarded.file_offset.unwrap().0,
        guarded.semaphore.unwrap().file_offset.unwrap().0,
    );
    assert!(
        spec.contains(&format!("  usdt:{relative}:stacksym_demo:guarded\n")),
        "{spec}"
    );
    assert!(
        spec.contains(&format!(
            "  p:usdt_stacksym_demo/guarded {path}:{offset:#x}({sem:#x}) arg1="
        )),
        "{spec}"
    );
    let json = support::run_command(
        exe(),
        &[
            "--find-usdt",
            "stacksym_demo:plain",
            "--obj",
            path,
            "--output-style=JSON",
        ],
    );
    let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    let plain = testdata_probe(&probes, "plain");
    assert_eq!(value["provider"], "stacksym_demo");
    assert_eq!(value["name"], "plain");
    assert_eq!(
        value["file_offset"],
        format!("{:#x}", plain.file_offset.unwrap().0)
    );
    assert_eq!(value["address"], format!("{:#x}", plain.addr.0));
    assert_eq!(value["semaphore_file_offset"], serde_json::Value::Null);
    assert_eq!(value["args"]["raw"], plain.args_text.as_str());
    assert_eq!(value["args"]["parsed"][2]["operand"]["kind"], "constant");
    assert_eq!(value["args"]["parsed"][2]["operand"]["value"], 7);
    // Nothing matches: exit status 1.
    let status = exe()
        .args(["--find-usdt", "nope:*", "--obj", path])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
}
