//! Go binaries through their own table (`.gopclntab`): the stripped test binaries of
//! testdata/build-go.sh and the distribution's restic, compared address by address with
//! Go's own tools (`go tool addr2line`; Go's debug/gosym for a PIE, where Go 1.19's
//! addr2line finds no table), with the unstripped twin's DWARF (through llvm-symbolizer and
//! through stacksym), and with the twin's `.symtab`.

#[path = "support/go_spelling.rs"]
mod go_spelling;
mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use go_spelling::go_spelling;
use stacksym::elf::ElfFile;
use stacksym::gopclntab::{GoTable, GoTableFoundBy, GoTableVersion};
use stacksym::symbolize::{FoundIn, NamePattern};
use stacksym::{AbsAddr, FileOffset, Input, NameOrigin, Source, Symbolizer, VirtAddr};
use support::{bin, find_tool, skip_or_fail, XorShift};

/// The `go` command, or a loud skip.
fn go(test: &str) -> Option<PathBuf> {
    let found = find_tool("go").or_else(|| {
        let path = PathBuf::from("/usr/lib/go-1.19/bin/go");
        path.exists().then_some(path)
    });
    if found.is_none() {
        skip_or_fail(test, "go not found; install golang-go");
    }
    found
}

fn table(path: &Path) -> GoTable {
    let elf = Arc::new(ElfFile::open(path).unwrap());
    GoTable::find(&elf).unwrap().expect("a Go table")
}

/// Raw addresses as the ELF virtual addresses they are.
fn virt(addrs: &[u64]) -> Vec<VirtAddr> {
    addrs.iter().copied().map(VirtAddr).collect()
}

/// `count` addresses: a function of the table chosen uniformly, then an offset in it.
fn sample(table: &GoTable, count: usize, seed: u64) -> Vec<u64> {
    let functions: Vec<_> = table
        .functions()
        .map(Result::unwrap)
        .filter(|f| f.end > f.entry)
        .collect();
    let mut rng = XorShift::new(seed);
    (0..count)
        .map(|_| {
            let f = &functions[rng.below(functions.len() as u64) as usize];
            f.entry.0 + rng.below(f.end.0 - f.entry.0)
        })
        .collect()
}

/// (function, "file:line") per address, as a Go tool prints them (two lines each).
fn run_go_tool(mut command: Command, addrs: &[u64]) -> Vec<(String, String)> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("running go");
    let mut stdin = child.stdin.take().unwrap();
    let input: String = addrs.iter().map(|a| format!("{a:#x}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "{command:?} failed");
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 * addrs.len(), "{command:?}: {text}");
    lines
        .chunks(2)
        .map(|pair| (pair[0].to_string(), no_line_as_ours(pair[1])))
        .collect()
}

/// Go's tools print a PC without a line (a function's alignment padding, which the table's
/// line runs do not reach) as `:-1` or `:0` (no file); stacksym gives no frame there, which
/// [`ours`] prints `?:0`.
fn no_line_as_ours(file_line: &str) -> String {
    if file_line.starts_with(':') {
        "?:0".to_string()
    } else {
        file_line.to_string()
    }
}

fn go_addr2line(go: &Path, binary: &Path, addrs: &[u64]) -> Vec<(String, String)> {
    // Go 1.19's addr2line (cmd/internal/objfile, debug/gosym) takes the text start of a
    // 1.18+ table from the `.text` section's address instead of the table's own textStart
    // (runtime.text). In an externally linked binary (cgo: restic) C start-up code comes
    // first in `.text`, so its function ranges are all shifted by the difference: it names
    // the code at `addr` when asked for `addr - shift`. Asking that way gives Go's answer
    // for `addr` (lines are per function, relative to its entry, so they shift alike).
    let shift = text_start_shift(binary);
    let asked: Vec<u64> = addrs.iter().map(|a| a.wrapping_sub(shift)).collect();
    let mut command = Command::new(go);
    command.args(["tool", "addr2line"]).arg(binary);
    run_go_tool(command, &asked)
}

/// The table's textStart (a 1.18+ table's header word 2) minus `.text`'s address: 0 for
/// Go's internal linker, 0x100 for restic (see [`go_addr2line`]).
fn text_start_shift(binary: &Path) -> u64 {
    let elf = ElfFile::open(binary).unwrap();
    let text = elf.section_address(".text").unwrap().expect(".text").0;
    let table = elf.section_data(".gopclntab").unwrap().expect(".gopclntab");
    // Read in the file's byte order and pointer size (the 386 and s390x builds too).
    let header = elf.header();
    let word = |at: usize, size: usize| -> u64 {
        let mut bytes = table[at..at + size].to_vec();
        if !header.big_endian {
            bytes.reverse();
        }
        bytes.iter().fold(0, |v, &b| v << 8 | u64::from(b))
    };
    let magic = word(0, 4);
    if magic != 0xfffffff0 && magic != 0xfffffff1 {
        return 0;
    }
    let ptr = if header.is_64 { 8 } else { 4 };
    let text_start = word(8 + 2 * ptr, ptr);
    let shift = text_start - text;
    if shift != 0 {
        eprintln!(
            "{}: textStart {text_start:#x}, .text at {text:#x}: go tool addr2line asked at \
             addr - {shift:#x}",
            binary.display()
        );
    }
    shift
}

/// Go's debug/gosym on `binary` (for a PIE, where Go 1.19's addr2line finds no table): a
/// few lines of Go, run with `go run`.
fn debug_gosym(go: &Path, binary: &Path, addrs: &[u64]) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.go"),
        r#"package main

import (
	"bufio"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"os"
	"strconv"
)

func main() {
	f, err := elf.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	section := f.Section(".gopclntab")
	if section == nil {
		// A PIE's table (the section Go 1.19's objfile does not look for).
		section = f.Section(".data.rel.ro.gopclntab")
	}
	data, err := section.Data()
	if err != nil {
		panic(err)
	}
	table, err := gosym.NewTable(nil, gosym.NewLineTable(data, f.Section(".text").Addr))
	if err != nil {
		panic(err)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		pc, _ := strconv.ParseUint(in.Text(), 0, 64)
		file, line, fn := table.PCToLine(pc)
		name := "?"
		if fn != nil {
			name = fn.Name
		}
		fmt.Printf("%s\n%s:%d\n", name, file, line)
	}
}
"#,
    )
    .unwrap();
    let mut command = Command::new(go);
    command
        .current_dir(dir.path())
        .env("GOCACHE", std::env::temp_dir().join("stacksym-go-cache"))
        .env("GO111MODULE", "off")
        .args(["run", "main.go"])
        .arg(binary);
    run_go_tool(command, addrs)
}

/// stacksym's answers: (function, innermost frame's "file:line") per address.
fn ours(path: &Path, addrs: &[u64]) -> Vec<(String, String)> {
    let symbolizer = Symbolizer::builder().build();
    let symbols = symbolizer
        .symbolize(&Source::Elf { path }, Input::VirtAddrs(&virt(addrs)))
        .unwrap();
    (0..addrs.len())
        .map(|i| match symbols.get(i) {
            Some(sym) => {
                let frame = sym.frames.first();
                let file = frame.and_then(|f| f.file.as_deref()).unwrap_or("?");
                let line = frame.and_then(|f| f.line).unwrap_or(0);
                (sym.name.to_string(), format!("{file}:{line}"))
            }
            None => ("?".to_string(), "?:0".to_string()),
        })
        .collect()
}

/// Compares answer lists, printing the first differences; returns how many differ.
fn differences(
    what: &str,
    addrs: &[u64],
    ours: &[(String, String)],
    theirs: &[(String, String)],
) -> usize {
    let mut differ = 0;
    for ((addr, a), b) in addrs.iter().zip(ours).zip(theirs) {
        if a != b {
            differ += 1;
            if differ <= 10 {
                eprintln!("{what} {addr:#x}: stacksym {a:?}, reference {b:?}");
            }
        }
    }
    eprintln!(
        "{what}: {} of {} addresses agree",
        addrs.len() - differ,
        addrs.len()
    );
    differ
}

/// Every sampled PC of the stripped demo binaries (inlining on and off) gives the function,
/// file and line `go tool addr2line` gives; the names come from the Go table.
#[test]
fn stripped_demo_agrees_with_go_addr2line() {
    let Some(go) = go("stripped_demo_agrees_with_go_addr2line") else {
        return;
    };
    for name in ["go-demo.stripped", "go-demo-noinline.stripped"] {
        let path = bin(name);
        let table = table(&path);
        assert_eq!(table.version(), GoTableVersion::Go1_18);
        assert_eq!(table.found_by(), GoTableFoundBy::Section);
        let addrs = sample(&table, 3000, 0x60);
        let ours = ours(&path, &addrs);
        let theirs = go_addr2line(&go, &path, &addrs);
        assert_eq!(differences(name, &addrs, &ours, &theirs), 0, "{name}");
        // The answers say where they came from.
        let symbolizer = Symbolizer::builder().build();
        let symbols = symbolizer
            .symbolize(
                &Source::Elf { path: &path },
                Input::VirtAddrs(&virt(&addrs[..1])),
            )
            .unwrap();
        assert_eq!(symbols.get(0).unwrap().origin, NameOrigin::GoTable);
    }
}

/// The table's other layouts: the demo cross-compiled for 386 (4-byte pointers and
/// function-table words, instruction quantum 1), arm64 (quantum 4) and s390x (big-endian,
/// quantum 2), stripped; every sampled PC against `go tool addr2line`, which reads any
/// GOARCH's table. Inlined frames are checked too: each binary has some.
#[test]
fn other_architectures_agree_with_go_addr2line() {
    let Some(go) = go("other_architectures_agree_with_go_addr2line") else {
        return;
    };
    for (name, is_64, big_endian, quantum) in [
        ("go-demo-386.stripped", false, false, 1),
        ("go-demo-arm64.stripped", true, false, 4),
        ("go-demo-s390x.stripped", true, true, 2),
    ] {
        let path = bin(name);
        let table = table(&path);
        let header = table.elf().header();
        assert_eq!(
            (header.is_64, header.big_endian),
            (is_64, big_endian),
            "{name}"
        );
        assert_eq!(table.version(), GoTableVersion::Go1_18, "{name}");
        assert_eq!(table.found_by(), GoTableFoundBy::Section, "{name}");
        // The header's quantum byte: the table's PC runs are in these units.
        let bytes = table.elf().section_data(".gopclntab").unwrap().unwrap();
        assert_eq!(bytes[6], quantum, "{name}");
        let addrs = sample(&table, 3000, 0x65);
        let ours = ours(&path, &addrs);
        let theirs = go_addr2line(&go, &path, &addrs);
        assert_eq!(differences(name, &addrs, &ours, &theirs), 0, "{name}");
        let symbolizer = Symbolizer::builder().build();
        let frames = our_frames(&symbolizer, &path, &addrs);
        let inlined = frames.iter().filter(|f| f.len() > 1).count();
        eprintln!("{name}: quantum {quantum}, {inlined} of the PCs with inlined frames");
        assert!(inlined > 0, "{name}: no inlined frames");
        assert_eq!(
            symbolizer
                .symbolize(
                    &Source::Elf { path: &path },
                    Input::VirtAddrs(&virt(&addrs[..1]))
                )
                .unwrap()
                .get(0)
                .unwrap()
                .origin,
            NameOrigin::GoTable
        );
    }
}

/// The PIE (where Go 1.19's addr2line finds no table) against Go's own debug/gosym.
#[test]
fn stripped_pie_agrees_with_debug_gosym() {
    let Some(go) = go("stripped_pie_agrees_with_debug_gosym") else {
        return;
    };
    let path = bin("go-demo-pie.stripped");
    let table = table(&path);
    let addrs = sample(&table, 3000, 0x61);
    let ours = ours(&path, &addrs);
    let theirs = debug_gosym(&go, &path, &addrs);
    assert_eq!(
        differences("go-demo-pie.stripped", &addrs, &ours, &theirs),
        0
    );
}

/// A Go binary nobody here wrote: Debian's restic (Go 1.19), stripped.
#[test]
fn restic_agrees_with_go_addr2line() {
    let Some(go) = go("restic_agrees_with_go_addr2line") else {
        return;
    };
    let Some(path) = find_tool("restic") else {
        skip_or_fail(
            "restic_agrees_with_go_addr2line",
            "restic not found; install restic",
        );
        return;
    };
    let table = table(&path);
    eprintln!("restic: {:?}", table);
    let addrs = sample(&table, 5000, 0x62);
    let ours = ours(&path, &addrs);
    let pie = ElfFile::open(&path).unwrap().header().file_type == 3;
    let theirs = if pie {
        debug_gosym(&go, &path, &addrs)
    } else {
        go_addr2line(&go, &path, &addrs)
    };
    assert_eq!(differences("restic", &addrs, &ours, &theirs), 0);
}

/// One frame as (function, file, line), to compare across sources.
type FrameKey = (String, String, u32);

/// A DWARF file name as the Go table spells it: Go's DWARF (built with -trimpath) names
/// files relative to the compilation directory `.`, which readers join (`./runtime/proc.go`);
/// the table says `runtime/proc.go`.
fn without_dot_slash(file: &str) -> String {
    file.strip_prefix("./").unwrap_or(file).to_string()
}

fn our_frames(symbolizer: &Symbolizer, path: &Path, addrs: &[u64]) -> Vec<Vec<FrameKey>> {
    let symbols = symbolizer
        .symbolize(&Source::Elf { path }, Input::VirtAddrs(&virt(addrs)))
        .unwrap();
    (0..addrs.len())
        .map(|i| {
            symbols
                .lines(i)
                .iter()
                .map(|f| {
                    (
                        go_spelling(
                            f.function
                                .as_ref()
                                .map(|n| n.raw.as_str())
                                .unwrap_or_default(),
                        ),
                        without_dot_slash(f.file.as_deref().unwrap_or("")),
                        f.line.unwrap_or(0),
                    )
                })
                .collect()
        })
        .collect()
}

/// Whether the Go table's frames `go` and DWARF's `dwarf` differ only as Go 1.19 writes
/// them for an autogenerated wrapper (`runtime.(*waitReason).String`, file
/// `<autogenerated>`) whose callee was inlined into it: the table records the inlined call
/// (as `go tool addr2line` and the runtime's tracebacks read it), the DWARF has no inlined
/// subroutine there and puts the callee's line on the wrapper itself.
fn inlined_into_wrapper(go: &[FrameKey], dwarf: &[FrameKey]) -> bool {
    let [inner @ .., (inner_name, inner_file, inner_line), (wrapper, file, _)] = go else {
        return false;
    };
    let [dwarf_inner @ .., (dwarf_wrapper, dwarf_file, dwarf_line)] = dwarf else {
        return false;
    };
    file == "<autogenerated>"
        && !inner_name.is_empty()
        && inner == dwarf_inner
        && wrapper == dwarf_wrapper
        && (inner_file, inner_line) == (dwarf_file, dwarf_line)
}

/// The stripped binary's frames from the Go table (inlined frames innermost first) are the
/// unstripped twin's DWARF frames: through stacksym's DWARF reader and through
/// llvm-symbolizer. The twin has the same code at the same addresses (build-go.sh checks).
#[test]
fn stripped_frames_match_the_twins_dwarf() {
    let test = "stripped_frames_match_the_twins_dwarf";
    let stripped = bin("go-demo.stripped");
    let twin = bin("go-demo");
    let table = table(&stripped);
    let addrs = sample(&table, 3000, 0x63);
    let symbolizer = Symbolizer::builder().build();
    let go_frames = our_frames(&symbolizer, &stripped, &addrs);
    let dwarf_frames = our_frames(&symbolizer, &twin, &addrs);
    let (mut differ, mut wrappers) = (0, 0);
    let mut inlined = 0;
    for ((addr, go), dwarf) in addrs.iter().zip(&go_frames).zip(&dwarf_frames) {
        inlined += usize::from(go.len() > 1);
        if inlined_into_wrapper(go, dwarf) {
            wrappers += 1;
        } else if go != dwarf {
            differ += 1;
            if differ <= 10 {
                eprintln!("{addr:#x}: Go table {go:?}, DWARF {dwarf:?}");
            }
        }
    }
    eprintln!(
        "{test}: {} of {} addresses agree ({inlined} with inlined frames), {wrappers} more \
         differ only by a call inlined into an <autogenerated> wrapper",
        addrs.len() - differ - wrappers,
        addrs.len()
    );
    assert_eq!(differ, 0);
    assert!(inlined > 0, "no inlined frames sampled");
    let Some(llvm) = find_tool("llvm-symbolizer") else {
        skip_or_fail(test, "llvm-symbolizer not found; install llvm");
        return;
    };
    let json =
        support::llvm_symbolizer_json(&llvm, &twin, &["--inlining", "--functions=linkage"], &addrs);
    let (mut differ, mut wrappers) = (0, 0);
    for ((addr, go), value) in addrs.iter().zip(&go_frames).zip(&json) {
        let theirs: Vec<FrameKey> = value["Symbol"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    go_spelling(f["FunctionName"].as_str().unwrap_or_default()),
                    without_dot_slash(f["FileName"].as_str().unwrap_or_default()),
                    f["Line"].as_u64().unwrap_or(0) as u32,
                )
            })
            // llvm-symbolizer answers an address without DWARF (a function's padding) with
            // one empty frame (`??`); stacksym with none.
            .filter(|frame| *frame != (String::new(), String::new(), 0))
            .collect();
        if inlined_into_wrapper(go, &theirs) {
            wrappers += 1;
        } else if *go != theirs {
            differ += 1;
            if differ <= 10 {
                eprintln!("{addr:#x}: Go table {go:?}, llvm-symbolizer {theirs:?}");
            }
        }
    }
    eprintln!(
        "{test}: llvm-symbolizer: {} of {} agree, {wrappers} more differ only by a call \
         inlined into an <autogenerated> wrapper",
        addrs.len() - differ - wrappers,
        addrs.len()
    );
    assert_eq!(differ, 0);
}

/// Where `.symtab` exists, the Go table names every function as it does (in Go's
/// spelling, see [`go_spelling`]), at the same address.
#[test]
fn names_agree_with_symtab() {
    let twin = bin("go-demo");
    let elf = Arc::new(ElfFile::open(&twin).unwrap());
    let table = GoTable::find(&elf).unwrap().unwrap();
    let (mut checked, mut respelled) = (0, 0);
    for function in table.functions() {
        let function = function.unwrap();
        let symbol = elf.find_symbol(function.entry).unwrap().expect("a symbol");
        assert_eq!(symbol.addr, function.entry);
        let name = symbol.name_str.expect("a UTF-8 name");
        assert_eq!(
            go_spelling(name),
            function.name,
            "at {:#x}",
            function.entry.0
        );
        respelled += usize::from(name != function.name);
        checked += 1;
    }
    eprintln!(
        "names_agree_with_symtab: {checked} functions, {respelled} of them spelled otherwise in .symtab"
    );
    assert!(checked > 1000);
}

/// Names → addresses over the Go table of a stripped binary: exact names and globs give
/// the twin's `.symtab` functions at the same addresses and file offsets (what
/// `perf probe -x BIN -a 0xOFFSET` takes).
#[test]
fn find_addresses_in_a_stripped_go_binary() {
    let symbolizer = Symbolizer::builder().build();
    let stripped = bin("go-demo.stripped");
    let twin = bin("go-demo");
    let twin_elf = ElfFile::open(&twin).unwrap();
    let find = |path: &Path, pattern: &str| {
        symbolizer
            .find_addresses(&Source::Elf { path }, &NamePattern::parse(pattern))
            .unwrap()
    };
    for (pattern, at_least) in [
        ("main.(*Server).Handle", 1),
        ("main.*", 8),
        ("*.(*Server).*", 1),
        ("main.Sum[...]", 2),
        ("runtime.goexit*", 1),
    ] {
        let ours = find(&stripped, pattern);
        assert!(ours.len() >= at_least, "{pattern}: {ours:?}");
        for found in &ours {
            assert_eq!(found.found_in, FoundIn::GoTable, "{pattern}");
            // The twin's symbol at that address, found again by its own name.
            let addr = found
                .addr
                .virt()
                .expect("a Go table gives virtual addresses");
            let symbol = twin_elf.find_symbol(addr).unwrap().expect("a symbol");
            assert_eq!(symbol.addr, addr, "{pattern}: {}", found.name);
            let symtab_name = symbol.name_str.unwrap();
            assert_eq!(go_spelling(symtab_name), found.name, "{pattern}");
            let theirs = find(&twin, symtab_name);
            let theirs = theirs
                .iter()
                .find(|m| m.addr == found.addr && m.kind == stacksym::elf::SymbolKind::Function)
                .unwrap_or_else(|| panic!("{symtab_name} in the twin"));
            assert_eq!(theirs.file_offset, found.file_offset, "{symtab_name}");
            assert!(found.file_offset.is_some(), "{symtab_name}");
        }
        let names: Vec<_> = ours.iter().map(|m| m.name.as_str()).collect();
        eprintln!("{pattern}: {} functions: {names:?}", ours.len());
    }
}

/// The file offsets `find_addresses` gives for Go names of a stripped binary are where a
/// uprobe fires: `main.(*Server).Handle` (called once per run) and `main.outer` (twice: from
/// main.main and from a goroutine) of a copy of go-demo.stripped, probed through
/// `uprobe_events` at `PATH:0xOFFSET` (what `perf probe -x PATH -a 0xOFFSET` registers);
/// the kernel's hit counts are the calls of three runs. Needs root and tracefs (CI has both).
#[test]
fn a_uprobe_at_a_go_name_fires() {
    use support::uprobe::{tracefs, UprobeEvent};
    let test = "a_uprobe_at_a_go_name_fires";
    // A copy of its own: a uprobe fires in every process that runs the file (its inode),
    // and other tests run the committed one.
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("go-demo.stripped");
    std::fs::copy(bin("go-demo.stripped"), &binary).unwrap();
    let Some(tracing) = tracefs(test) else {
        return;
    };
    let symbolizer = Symbolizer::builder().build();
    let pid = std::process::id();
    let mut events = Vec::new();
    for (name, calls_per_run, event) in [
        ("main.(*Server).Handle", 1, format!("go_handle_{pid}")),
        ("main.outer", 2, format!("go_outer_{pid}")),
    ] {
        let found = symbolizer
            .find_addresses(&Source::Elf { path: &binary }, &NamePattern::parse(name))
            .unwrap();
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        assert_eq!(found[0].found_in, FoundIn::GoTable, "{name}");
        let offset = found[0].file_offset.expect("a file offset").0;
        let spec = format!("{}:{offset:#x}", binary.display());
        let uprobe = UprobeEvent::register(&tracing, &format!("stacksym_go_{pid}"), &event, &spec)
            .unwrap_or_else(|e| panic!("registering {spec}: {e}"));
        std::fs::write(uprobe.enable_path(), "1").unwrap();
        assert_eq!(uprobe.hits(), 0, "{name} before any run");
        events.push((name, calls_per_run, spec, uprobe));
    }
    let runs = 3;
    for _ in 0..runs {
        // Just written by copy: another test thread's fork may hold it open (ETXTBSY).
        let mut tries = 0;
        let status = loop {
            match Command::new(&binary).stderr(Stdio::null()).status() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other.unwrap(),
            }
        };
        assert!(status.success());
    }
    for (name, calls_per_run, spec, uprobe) in &events {
        let hits = uprobe.hits();
        eprintln!("{test}: {name} at {spec}: {hits} hits in {runs} runs");
        assert_eq!(hits, calls_per_run * runs, "{name}");
    }
}

/// A copy of the stripped binary without section headers: the table is found by the scan
/// of the segments, and every answer is the same.
#[test]
fn headerless_binary_is_scanned() {
    let stripped = bin("go-demo-pie.stripped");
    let mut bytes = std::fs::read(&stripped).unwrap();
    // e_shoff, e_shnum, e_shstrndx of an ELF64 header.
    bytes[0x28..0x30].fill(0);
    bytes[0x3c..0x40].fill(0);
    let dir = tempfile::tempdir().unwrap();
    let headerless = dir.path().join("go-demo-pie.headerless");
    std::fs::write(&headerless, &bytes).unwrap();
    let scanned = table(&headerless);
    assert_eq!(scanned.found_by(), GoTableFoundBy::Scan);
    let addrs = sample(&table(&stripped), 2000, 0x64);
    let symbolizer = Symbolizer::builder().build();
    let a = our_frames(&symbolizer, &stripped, &addrs);
    let b = our_frames(&symbolizer, &headerless, &addrs);
    assert_eq!(a, b);
    assert!(
        a.iter().filter(|f| f.len() > 1).count() > 0,
        "no inlined frames"
    );
}

#[test]
fn sp_delta_is_zero_at_entry() {
    let table = table(&bin("go-demo.stripped"));
    for function in table.functions().take(500) {
        let function = function.unwrap();
        let delta = table.sp_delta(function.entry).unwrap();
        assert_eq!(delta, Some(0), "{}", function.name);
    }
}

/// The threads of `pid` (its `/proc/PID/task` entries).
#[cfg(target_arch = "x86_64")]
fn threads(pid: u32) -> Vec<libc::pid_t> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Unwinding Go code, which has no CFI, by the table's SP deltas: the stripped demo spins
/// in main.spinInner (called through spinMiddle and spinOuter from main.main); stopped at
/// random moments, the thread that runs it unwinds to exactly that chain, then runtime.main
/// and runtime.goexit, where the walk ends (`StopReason::Root`), every caller recovered by
/// the Go table. Non-PIE and PIE. (ptrace stops of a live process, not perf samples.)
#[test]
#[cfg(target_arch = "x86_64")]
fn unwinds_a_spinning_go_program() {
    use stacksym::process::Process;
    use stacksym::unwind::{Recovery, RegsX86_64};
    let test = "unwinds_a_spinning_go_program";
    let expected = [
        "main.spinInner",
        "main.spinMiddle",
        "main.spinOuter",
        "main.main",
        "runtime.main",
        "runtime.goexit",
    ];
    for name in ["go-demo.stripped", "go-demo-pie.stripped"] {
        let mut child = Command::new(bin(name))
            .arg("spin")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        // Let the runtime start its threads and main.main reach the loop.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let symbolizer = Symbolizer::builder().build();
        let process = Process::new(pid);
        let (mut samples, mut spinning) = (0, 0);
        for _ in 0..20 {
            for tid in threads(pid) {
                let Some(words) = support::waiter::stopped_registers(tid) else {
                    let _ = child.kill();
                    let _ = child.wait();
                    skip_or_fail(
                        test,
                        "cannot ptrace the child (kernel.yama.ptrace_scope, no CAP_SYS_PTRACE)",
                    );
                    return;
                };
                let result =
                    symbolizer.unwind_process(&process, &RegsX86_64::from_user_regs(&words));
                support::waiter::detach(tid);
                let (stack, symbols) = result.unwrap();
                samples += 1;
                let names: Vec<&str> = (0..stack.frames.len())
                    .map(|i| symbols.get(i).map_or("??", |s| s.name))
                    .collect();
                if names.first() != Some(&"main.spinInner") {
                    continue;
                }
                spinning += 1;
                assert_eq!(
                    names, expected,
                    "{name} thread {tid}: stop {:?}",
                    stack.stop
                );
                assert_eq!(stack.stop, stacksym::unwind::StopReason::Root, "{name}");
                for frame in &stack.frames[1..] {
                    assert_eq!(frame.recovered, Recovery::GoTable, "{name}: {names:?}");
                }
                if spinning == 1 {
                    eprintln!(
                        "{name}: {names:?}, recovered {:?}, stop {:?}",
                        stack.frames.iter().map(|f| f.recovered).collect::<Vec<_>>(),
                        stack.stop
                    );
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        eprintln!("{name}: {spinning} stops in main.spinInner of {samples} thread stops");
        assert!(
            spinning >= 15,
            "{name}: only {spinning} of 20 rounds in the loop"
        );
    }
}

/// Whether `name` matches `pattern`, where one `*` stands for any text (cgo's generated
/// names carry a hash of the package: `_cgoexp_689b36a042b8_goSpin`).
#[cfg(target_arch = "x86_64")]
fn matches_glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        Some((prefix, suffix)) => {
            name.len() >= prefix.len() + suffix.len()
                && name.starts_with(prefix)
                && name.ends_with(suffix)
        }
        None => name == pattern,
    }
}

/// The frames (name, pc) of thread `tid` in the output of `gdb ... -ex 'thread apply all
/// bt'` (`Thread N (... (LWP tid) ...)` headers) or `eu-stack -p` (`TID tid:` headers).
#[cfg(target_arch = "x86_64")]
fn thread_frames(text: &str, tid: u32) -> support::Frames {
    let (gdb, eu) = (format!("(LWP {tid})"), format!("TID {tid}:"));
    let mut frames = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("Thread ") || line.starts_with("TID ") {
            inside = line.contains(&gdb) || line == eu;
        } else if inside {
            frames.extend(support::parse_frame(line));
        }
    }
    frames
}

/// cgo's two stack switches: go-cgo.stripped (testdata/build-go.sh) spins in Go called
/// from C called from Go (`main.main` → `main.callC` → C `c_outer` → `c_inner` → the
/// exported Go `goSpin` → `main.spinInner`). The Go frames above the callback are on the
/// goroutine's stack, the C frames on the thread's system stack (g0's), the Go frames below
/// the call into C on the goroutine's stack again. Stopped at random moments (ptrace, as
/// `pstack` does), the spinning thread unwinds through both switches (the frames after
/// them `Recovery::GoStackSwitch`: `crosscall2`, C's caller of `runtime.cgocallback`, and
/// `runtime.cgocall`, Go's caller of `runtime.asmcgocall`) to `runtime.goexit`, every stop.
///
/// Against two independent answers: gdb on the unstripped twin (same code at the same
/// addresses) follows the goroutine's stack with Go's DWARF CFI, as the Go runtime's
/// traceback does: its frames up to `runtime.cgocallback`, and from the Go caller of the
/// fake return address `runtime.systemstack_switch` (which gdb prints as `??`) to
/// `main.main`, are ours, address for address; eu-stack on the stripped file reaches the C
/// frames by the frame pointers Go keeps across the switch (no CFI for Go code): its
/// addresses from `crosscall2` to `runtime.asmcgocall` (where it stops) are ours.
#[test]
#[cfg(target_arch = "x86_64")]
fn unwinds_a_cgo_stack_across_both_switches() {
    use stacksym::process::Process;
    use stacksym::unwind::{Recovery, RegsX86_64, StopReason};
    let test = "unwinds_a_cgo_stack_across_both_switches";
    let expected = [
        "main.spinInner",
        "_cgoexp_*_goSpin",
        "runtime.cgocallbackg1",
        "runtime.cgocallbackg",
        "runtime.cgocallbackg",
        "runtime.cgocallback",
        "crosscall2",
        "goSpin",
        "c_inner",
        "c_outer",
        "_cgo_*_Cfunc_c_outer",
        "runtime.asmcgocall",
        "runtime.cgocall",
        "main._Cfunc_c_outer",
        "main.callC",
        "main.main",
        "runtime.main",
        "runtime.goexit",
    ];
    // Where the two switches are in `expected`: the frame before each is the switch.
    let (to_g0, to_goroutine) = (6, 12);
    let (gdb, eu_stack) = (find_tool("gdb"), find_tool("eu-stack"));
    let mut ours: Option<Vec<u64>> = None;
    for name in ["go-cgo.stripped", "go-cgo"] {
        /// The program, killed however the test ends (it spins forever).
        struct Spinning(std::process::Child);
        impl Drop for Spinning {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let child = Spinning(
            Command::new(bin(name))
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let pid = child.0.id();
        // Let the runtime start its threads and the callback reach its loop.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let symbolizer = Symbolizer::builder().build();
        let process = Process::new(pid);
        let (mut stops, mut spinning) = (0, 0);
        // The thread in the loop: the goroutine cannot leave it while inside the C call.
        let mut spin_tid = None;
        for _ in 0..20 {
            for tid in threads(pid) {
                let Some(words) = support::waiter::stopped_registers(tid) else {
                    skip_or_fail(
                        test,
                        "cannot ptrace the child (kernel.yama.ptrace_scope, no CAP_SYS_PTRACE)",
                    );
                    return;
                };
                let result =
                    symbolizer.unwind_process(&process, &RegsX86_64::from_user_regs(&words));
                support::waiter::detach(tid);
                let (stack, symbols) = result.unwrap();
                stops += 1;
                let names: Vec<&str> = (0..stack.frames.len())
                    .map(|i| symbols.get(i).map_or("??", |s| s.name))
                    .collect();
                // A stop in the loop (not in a signal handler, the runtime's preemption).
                if names.first() != Some(&"main.spinInner") {
                    continue;
                }
                spinning += 1;
                assert!(
                    spin_tid.is_none() || spin_tid == Some(tid),
                    "{name}: the loop moved from thread {spin_tid:?} to {tid}"
                );
                spin_tid = Some(tid);
                let recovered: Vec<Recovery> = stack.frames.iter().map(|f| f.recovered).collect();
                // The twin names ABI0 functions as its .symtab does
                // (`runtime.cgocallback.abi0`): its addresses are held to the stripped
                // file's below.
                let chain_ok = names.len() == expected.len()
                    && (name == "go-cgo"
                        || expected
                            .iter()
                            .zip(&names)
                            .all(|(pattern, name)| matches_glob(pattern, name)));
                assert!(
                    chain_ok,
                    "{name} thread {tid}: {names:?}, recovered {recovered:?}, stop {:?}",
                    stack.stop
                );
                assert_eq!(stack.stop, StopReason::Root, "{name}: {names:?}");
                for (i, recovery) in recovered.iter().enumerate() {
                    let switched = i == to_g0 || i == to_goroutine;
                    assert_eq!(
                        *recovery == Recovery::GoStackSwitch,
                        switched,
                        "{name} frame {i} ({}): {recovered:?}",
                        names[i]
                    );
                }
                // Above the loop the stack does not change: every stop gives the same
                // return addresses.
                let addrs: Vec<u64> = stack.frames[1..].iter().map(|f| f.addr.0).collect();
                match &ours {
                    Some(first) => assert_eq!(first, &addrs, "{name}: {names:?}"),
                    None => {
                        eprintln!("{name}: {names:?}, recovered {recovered:?}");
                        ours = Some(addrs);
                    }
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        eprintln!("{name}: {spinning} stops in main.spinInner of {stops} thread stops");
        assert!(
            spinning >= 15,
            "{name}: only {spinning} of 20 rounds in the loop"
        );
        let ours = ours.as_ref().expect("a stop in the loop");
        // The independent answers, on the same (still spinning) process.
        let (tool, args): (_, Vec<String>) = if name == "go-cgo" {
            let args = [
                "-batch",
                "-p",
                &pid.to_string(),
                "-ex",
                "thread apply all bt",
            ];
            (&gdb, args.iter().map(|a| a.to_string()).collect())
        } else {
            (&eu_stack, vec!["-p".to_string(), pid.to_string()])
        };
        let Some(tool) = tool else {
            skip_or_fail(test, "gdb or eu-stack not found; install gdb and elfutils");
            continue;
        };
        let spin_tid = u32::try_from(spin_tid.expect("a stop in the loop")).unwrap();
        // The tool's one stop of the thread may catch it out of the loop, as some of ours
        // did (the runtime preempts the goroutine and parks the thread locked to it, in
        // runtime.futex): taken again, a few times, until its frame 0 is in the loop (gdb
        // names it; eu-stack's pc is named by the Go table).
        let in_loop = |theirs: &support::Frames| match theirs.first() {
            Some((function, _)) if function == "main.spinInner" => true,
            Some((_, Some(pc))) => {
                support::in_process(&symbolizer, &process, None, &[stacksym::addr::AbsAddr(*pc)])
                    .is_ok_and(|symbols| symbols.get(0).map(|s| s.name) == Some("main.spinInner"))
            }
            _ => false,
        };
        let mut theirs = Vec::new();
        for _ in 0..10 {
            let output = Command::new(tool).args(&args).output().unwrap();
            theirs = thread_frames(&String::from_utf8_lossy(&output.stdout), spin_tid);
            if in_loop(&theirs) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        drop(child);
        // Their return addresses (frame 0 is the loop's pc, wherever it was).
        let addrs: Vec<u64> = theirs.iter().skip(1).filter_map(|&(_, pc)| pc).collect();
        let mut deduped = addrs.clone();
        deduped.dedup(); // eu-stack has no inlined frames, gdb prints their pc once
        if name == "go-cgo" {
            // gdb: the goroutine's stack, through the fake return address, printed `??`.
            let fake = theirs
                .iter()
                .position(|(function, _)| function == "??")
                .unwrap_or_else(|| panic!("gdb shows no systemstack_switch: {theirs:?}"));
            let fake_pc = theirs[fake].1.unwrap();
            let split = deduped.iter().position(|&pc| pc == fake_pc).unwrap();
            let (above, below) = (&deduped[..split], &deduped[split + 1..]);
            assert_eq!(
                above,
                &ours[..to_g0 - 1],
                "gdb up to runtime.cgocallback: {theirs:?}"
            );
            assert!(
                ours[to_goroutine - 1..].starts_with(below),
                "gdb from runtime.cgocall: {theirs:?}, ours {ours:x?}"
            );
            assert_eq!(
                theirs.last().map(|(f, _)| f.as_str()),
                Some("main.main"),
                "{theirs:?}"
            );
            eprintln!(
                "gdb on go-cgo: {} of its {} return addresses are ours (the {} before the \
                 switch to C, the {} after it), the fake {fake_pc:#x} apart",
                above.len() + below.len(),
                deduped.len(),
                above.len(),
                below.len()
            );
        } else {
            // eu-stack: the frame pointers into the system stack, to runtime.asmcgocall.
            let c_part = &ours[to_g0 - 1..to_goroutine - 1];
            let at = deduped
                .iter()
                .position(|&pc| pc == c_part[0])
                .unwrap_or_else(|| panic!("eu-stack does not reach crosscall2: {theirs:?}"));
            assert_eq!(
                &deduped[at..],
                c_part,
                "eu-stack from crosscall2: {theirs:?}"
            );
            eprintln!(
                "eu-stack on go-cgo.stripped: its {} return addresses from crosscall2 to \
                 runtime.asmcgocall are ours",
                c_part.len()
            );
        }
    }
}

/// The function name of a traceback line `name(args)`: without its trailing argument list
/// (which may hold braces, `...` and `?`, but no parentheses of its own).
fn traceback_name(line: &str) -> Option<&str> {
    let body = line.strip_suffix(')')?;
    let open = body.rfind('(')?;
    Some(&line[..open])
}

/// One physical frame of a Go runtime traceback (`GOTRACEBACK=system`): the address the
/// runtime looked it up at, and its frames innermost first (inlined calls, printed without
/// `pc=`, then the function itself) as (name, "file:line").
type TracebackFrame = (u64, Vec<(String, String)>);

/// Reads every goroutine's frames from a traceback; `created by` entries (not frames) and
/// the register dump are left out. The runtime looks a frame up at its `pc=` less one (a
/// return address: the call is the instruction before), except at a function's entry (no
/// `+0x..` offset printed: a goroutine not started) and at the PC the signal interrupted
/// (the header's `PC=`, the first frame after it), which are exact.
fn runtime_traceback(text: &str) -> Vec<TracebackFrame> {
    let mut out = Vec::new();
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut name: Option<String> = None;
    let mut trap: Option<u64> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("PC=0x") {
            trap = rest
                .split(' ')
                .next()
                .and_then(|hex| u64::from_str_radix(hex, 16).ok());
            continue;
        }
        if line.starts_with("created by ") {
            lines.next();
            name = None;
            continue;
        }
        let Some(location) = line.strip_prefix('\t') else {
            name = traceback_name(line).map(str::to_string);
            if name.is_none() {
                pending.clear();
            }
            continue;
        };
        let Some(function) = name.take() else {
            continue;
        };
        let mut fields = location.split(' ');
        let file_line = fields.next().unwrap_or_default().to_string();
        pending.push((function, file_line));
        let mut offset = None;
        let mut pc = None;
        for field in fields {
            if let Some(hex) = field.strip_prefix("+0x") {
                offset = u64::from_str_radix(hex, 16).ok();
            } else if let Some(hex) = field.strip_prefix("pc=0x") {
                pc = u64::from_str_radix(hex, 16).ok();
            }
        }
        // A physical frame has `pc=` and, past its function's entry, an offset (`+0x..`);
        // an inlined call has neither. A physical frame printed with an offset but without
        // `pc=` (`runtime.systemstack_switch`) is not compared, nor are its frames.
        match (pc, offset) {
            (Some(pc), offset) => {
                let exact = offset.is_none() || trap.take() == Some(pc);
                let lookup = if exact { pc } else { pc - 1 };
                out.push((lookup, std::mem::take(&mut pending)));
            }
            (None, Some(_)) => pending.clear(),
            (None, None) => {}
        }
    }
    out
}

/// restic against the Go runtime's own answer: restic blocked on its password command is
/// sent SIGQUIT with `GOTRACEBACK=system`, and every frame of every goroutine it prints
/// (function, file, line, inlined calls included) is what stacksym gives where the runtime
/// looked it up (see [`runtime_traceback`]).
#[test]
fn restic_agrees_with_its_runtime_traceback() {
    let test = "restic_agrees_with_its_runtime_traceback";
    let Some(path) = find_tool("restic") else {
        skip_or_fail(test, "restic not found; install restic");
        return;
    };
    let elf = ElfFile::open(&path).unwrap();
    // An ET_EXEC file: the runtime's absolute PCs are the file's virtual addresses.
    assert_eq!(
        elf.header().file_type,
        2,
        "{} is not ET_EXEC",
        path.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(&path)
        .env("GOTRACEBACK", "system")
        .arg("--repo")
        .arg(dir.path().join("repo"))
        .args(["--password-command", "sleep 10", "snapshots"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until restic has started its password command (and so blocks on it).
    let children = format!("/proc/{pid}/task/{pid}/children");
    let started = std::time::Instant::now();
    let sleep: libc::pid_t = loop {
        let listed = std::fs::read_to_string(&children).unwrap_or_default();
        if let Some(Ok(sleep)) = listed.split_whitespace().next().map(str::parse) {
            break sleep;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "restic started no password command"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // SAFETY: signals to our own child and to its child (which holds restic's stderr open).
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGQUIT);
        libc::kill(sleep, libc::SIGKILL);
    }
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stderr);
    agrees_with_traceback(test, &path, &text);
}

/// Checks every frame of a runtime traceback `text` of `path` (see [`runtime_traceback`])
/// against stacksym's frames at the address the runtime looked it up at.
fn agrees_with_traceback(test: &str, path: &Path, text: &str) {
    let frames = runtime_traceback(text);
    assert!(frames.len() > 20, "{text}");
    let addrs: Vec<u64> = frames.iter().map(|&(addr, _)| addr).collect();
    let symbolizer = Symbolizer::builder().build();
    let ours = our_frames(&symbolizer, path, &addrs);
    let (mut differ, mut inlined) = (0, 0);
    for ((addr, theirs), ours) in frames.iter().zip(&ours) {
        let ours: Vec<(String, String)> = ours
            .iter()
            .map(|(name, file, line)| (name.clone(), format!("{file}:{line}")))
            .collect();
        inlined += theirs.len() - 1;
        if ours != *theirs {
            differ += 1;
            eprintln!("at {addr:#x}: stacksym {ours:?}, runtime {theirs:?}");
        }
    }
    if differ > 0 {
        eprintln!("the runtime's traceback:\n{text}");
    }
    eprintln!(
        "{test}: {} of {} frames agree ({inlined} inlined calls among them)",
        frames.len() - differ,
        frames.len()
    );
    assert_eq!(differ, 0);
    assert!(inlined > 0, "no inlined calls in the traceback");
}

/// The esbuild binary of npm's `@esbuild/linux-x64` (a stripped Go binary of a recent Go:
/// a 1.20+ table, magic 0xfffffff1), which .ci/run installs with `npm install -g`:
/// `$STACKSYM_ESBUILD`, else under `npm root -g`.
fn esbuild() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("STACKSYM_ESBUILD") {
        return Some(PathBuf::from(path));
    }
    let root = Command::new("npm")
        .args(["root", "-g"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let root = String::from_utf8(root.stdout).ok()?;
    let path = Path::new(root.trim()).join("@esbuild/linux-x64/bin/esbuild");
    path.is_file().then_some(path)
}

/// A Go 1.20+ table (magic 0xfffffff1), which Go 1.19's tools cannot read, against the Go
/// runtime's own answer: npm's esbuild, blocked reading its standard input, is sent SIGQUIT
/// with `GOTRACEBACK=system`, and every frame of every goroutine it prints is what stacksym
/// gives (see [`runtime_traceback`]).
#[test]
fn esbuild_agrees_with_its_runtime_traceback() {
    let test = "esbuild_agrees_with_its_runtime_traceback";
    let Some(path) = esbuild() else {
        skip_or_fail(
            test,
            "esbuild not found; npm install -g @esbuild/linux-x64 (or set STACKSYM_ESBUILD)",
        );
        return;
    };
    let table = table(&path);
    eprintln!("esbuild: {table:?}");
    assert_eq!(table.version(), GoTableVersion::Go1_20);
    let elf = ElfFile::open(&path).unwrap();
    assert_eq!(
        elf.header().file_type,
        2,
        "{} is not ET_EXEC",
        path.display()
    );
    assert!(
        !elf.has_section_bytes(".symtab").unwrap(),
        "{} is not stripped",
        path.display()
    );
    let mut child = Command::new(&path)
        .env("GOTRACEBACK", "system")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until a thread of esbuild blocks in read(0, ...): its signal handlers are set by
    // then (the runtime sets them before main.main), so SIGQUIT prints the traceback.
    let started = std::time::Instant::now();
    let reading = |tid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall"))
            .is_ok_and(|s| s.starts_with("0 0x0 "))
    };
    loop {
        let tids: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|dir| {
                dir.filter_map(|e| Some(e.ok()?.file_name().to_str()?.to_string()))
                    .collect()
            })
            .unwrap_or_default();
        if tids.iter().any(|tid| reading(tid)) {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "esbuild never read its standard input"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: a signal to our own child.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGQUIT);
    }
    let stdin = child.stdin.take();
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    let text = String::from_utf8_lossy(&output.stderr);
    agrees_with_traceback(test, &path, &text);
}

/// The entry of the one function `name` names in `path`.
fn only_entry(symbolizer: &Symbolizer, path: &Path, name: &str) -> u64 {
    let found = symbolizer
        .find_addresses(&Source::Elf { path }, &NamePattern::parse(name))
        .unwrap();
    assert_eq!(found.len(), 1, "{name}: {found:?}");
    found[0].addr.raw()
}

/// An unwinder over the executable `path` mapped where its `PT_LOAD`s say (qemu-user maps
/// a non-PIE executable so), for the arm64 Go tests.
fn unwinder_at_file_addresses(path: &Path) -> stacksym::unwind::Unwinder {
    let elf = Arc::new(ElfFile::open(path).unwrap());
    let mut modules = stacksym::unwind::Modules::new();
    for (offset, vaddr, size) in support::readelf_loads(path) {
        modules.add(
            AbsAddr(vaddr)..AbsAddr(vaddr + size),
            FileOffset(offset),
            elf.clone(),
        );
    }
    stacksym::unwind::Unwinder::new(modules)
}

/// The names of `stack`'s frames in the executable `path`, looked up at each frame's lookup
/// address (virtual addresses: it is mapped at them).
fn frame_names(
    symbolizer: &Symbolizer,
    path: &Path,
    stack: &stacksym::unwind::Stack,
) -> Vec<String> {
    let addrs: Vec<VirtAddr> = stack
        .frames
        .iter()
        .map(|f| VirtAddr(f.lookup_addr().0))
        .collect();
    let symbols = symbolizer
        .symbolize(&Source::Elf { path }, Input::VirtAddrs(&addrs))
        .unwrap();
    (0..addrs.len())
        .map(|k| support::name_of(&symbols, k).to_string())
        .collect()
}

/// A sample in `runtime.morestack_noctxt` on arm64 (the Go scheduler's preemption requests
/// and stack growth send a function's prologue there before it has a frame): the function's
/// return address is in R3 (`MOVD R30, R3; BL runtime.morestack_noctxt`), not in the link
/// register, which holds the return into the function. In `go-demo-arm64.stripped`, the
/// call sites are found by their `BL` instructions: `main.spinMiddle`'s to morestack and
/// `main.spinOuter`'s to `main.spinMiddle`. Without the morestack step the walk stopped
/// after `main.spinMiddle` (`NoUnwindInfo`, seen in a fresh-clone CI run under qemu).
#[test]
fn unwinds_arm64_go_code_stopped_in_morestack() {
    use stacksym::unwind::{Recovery, RegsAarch64, StackCopy, UnwindCache};
    let path = bin("go-demo-arm64.stripped");
    let symbolizer = Symbolizer::builder().build();
    let entry = |name: &str| only_entry(&symbolizer, &path, name);
    let loads = support::readelf_loads(&path);
    let bytes = std::fs::read(&path).unwrap();
    // The address after the first `BL target` in the 4 KiB from `from`.
    let return_after_call = |from: u64, target: u64| -> u64 {
        let (offset, vaddr, _) = *loads
            .iter()
            .find(|(_, vaddr, size)| (*vaddr..vaddr + size).contains(&from))
            .unwrap();
        let start = (from - vaddr + offset) as usize;
        (0..1024u64)
            .find_map(|i| {
                let at = start + 4 * i as usize;
                let word = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
                let pc = from + 4 * i;
                // BL: 0b100101 then a signed 26-bit word offset.
                let imm = ((word & 0x03ff_ffff) << 6) as i32 >> 6;
                (word & 0xfc00_0000 == 0x9400_0000
                    && pc.wrapping_add((imm as i64 * 4) as u64) == target)
                    .then_some(pc + 4)
            })
            .unwrap_or_else(|| panic!("no BL {target:#x} after {from:#x}"))
    };
    let morestack = entry("runtime.morestack_noctxt");
    let middle = entry("main.spinMiddle");
    let into_middle = return_after_call(middle, morestack);
    let into_outer = return_after_call(entry("main.spinOuter"), middle);

    let unwinder = unwinder_at_file_addresses(&path);
    const SP: u64 = 0x4000_0000;
    let regs = RegsAarch64::new(morestack, SP, 0, into_middle).with(3, into_outer);
    let stack = vec![0u8; 256];
    let stack = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &stack),
        &mut UnwindCache::new(),
    );
    let names = frame_names(&symbolizer, &path, &stack);
    assert_eq!(
        names.get(..3),
        Some(
            &[
                "runtime.morestack_noctxt",
                "main.spinMiddle",
                "main.spinOuter"
            ]
            .map(String::from)[..]
        ),
        "{stack:?}"
    );
    assert_eq!(stack.frames[1].recovered, Recovery::GoTable);
    assert_eq!(stack.frames[2].recovered, Recovery::GoTable);
}

/// Unwinding arm64 Go code by the Go table's SP deltas (a frameless leaf and a prologue's
/// link register, then `str x30, [sp, #-N]!` slots): `go-demo-arm64.stripped spin` runs
/// under `qemu-aarch64 -g`, and `gdb-multiarch` stops it at `main.spinMiddle`'s entry and
/// then after each instruction (`stepi`) through its prologue, its call and into
/// `main.spinInner`'s loop, printing the registers and dumping 4 KB of stack at each stop.
/// Every stop must unwind to exactly the known chain (`main.spinMiddle` or
/// `main.spinInner`, then up to `runtime.goexit`, where the walk ends at the root), every
/// caller recovered by the Go table. gdb itself cannot unwind the stripped file (no CFI,
/// no symbols); the chain is the program's source's (testdata/src/go/main.go).
#[test]
fn unwinds_arm64_go_code_stopped_by_gdb_under_qemu() {
    use stacksym::unwind::{Recovery, RegsAarch64, StackCopy, StopReason, UnwindCache};
    let test = "unwinds_arm64_go_code_stopped_by_gdb_under_qemu";
    let Some((qemu, gdb)) = support::qemu_aarch64_and_gdb(test) else {
        return;
    };
    let path = bin("go-demo-arm64.stripped");
    let symbolizer = Symbolizer::builder().build();
    let entry = |name: &str| only_entry(&symbolizer, &path, name);
    let middle = entry("main.spinMiddle");
    const STOPS: usize = 14;
    let dir = tempfile::tempdir().unwrap();
    // One run of qemu and gdb: gdb's output, or `None` when it did not finish in time. On a
    // loaded machine gdb once waited forever in `continue` (the program under qemu at 1 %
    // CPU, the breakpoint never hit): `timeout` stops it, and the run is tried once more.
    let run = |dir: &std::path::Path| -> Option<std::process::Output> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut script = format!(
            "set pagination off\nset confirm off\ntarget remote 127.0.0.1:{port}\n\
             break *{middle:#x}\ncontinue\ndelete\n"
        );
        for i in 0..STOPS {
            script += &format!(
                "printf \"STOP {i} %lx %lx %lx %lx\\n\", $pc, $sp, $x29, $x30\n\
                 dump binary memory {dir}/stop{i}.bin $sp $sp+4096\nstepi\n",
                dir = dir.display()
            );
        }
        script += "kill\n";
        let script_path = dir.join("stops.gdb");
        std::fs::write(&script_path, script).unwrap();
        let mut qemu = Command::new(&qemu)
            .args(["-g", &port.to_string()])
            .arg(&path)
            .arg("spin")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while support::listening_addresses(port).is_empty() && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = Command::new("timeout")
            .args(["-k", "5", "90"])
            .arg(&gdb)
            .args(["-batch", "-nx", "-x"])
            .arg(&script_path)
            .output()
            .unwrap();
        let _ = qemu.kill();
        let _ = qemu.wait();
        // timeout's status when it stopped gdb.
        (out.status.code() != Some(124) && out.status.code() != Some(137)).then_some(out)
    };
    let out = match run(dir.path()) {
        Some(out) => out,
        None => {
            support::writeln_stderr(format_args!(
                "{test}: gdb did not finish in 90 s: trying again"
            ));
            run(dir.path()).expect("gdb finishes its script under qemu")
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);

    let unwinder = unwinder_at_file_addresses(&path);
    let chain = [
        "main.spinMiddle",
        "main.spinOuter",
        "main.main",
        "runtime.main",
        "runtime.goexit",
    ];
    let mut stops = 0;
    let mut pcs = Vec::new();
    for line in text.lines().filter_map(|l| l.strip_prefix("STOP ")) {
        let (i, registers) = line.split_once(' ').unwrap();
        let words: Vec<u64> = registers
            .split_whitespace()
            .map(|w| u64::from_str_radix(w, 16).unwrap())
            .collect();
        let [pc, sp, fp, lr] = words[..] else {
            panic!("{line}");
        };
        let bytes = std::fs::read(dir.path().join(format!("stop{i}.bin"))).unwrap();
        let regs = RegsAarch64::new(pc, sp, fp, lr);
        let stack = unwinder.unwind(
            &regs,
            &StackCopy::new(AbsAddr(sp), &bytes),
            &mut UnwindCache::new(),
        );
        let names = frame_names(&symbolizer, &path, &stack);
        // A step may land in main.spinInner, or in runtime.morestack(_noctxt) when
        // spinMiddle's prologue finds its stack to grow or a preemption request (the Go
        // scheduler's timing: under load it did, at 16:14 in a fresh-clone CI run); there
        // spinMiddle's return address is in R3.
        let expected: Vec<&str> = match names.first().map(String::as_str) {
            Some(first) if first == "main.spinInner" || first.starts_with("runtime.morestack") => {
                std::iter::once(first).chain(chain).collect()
            }
            _ => chain.to_vec(),
        };
        assert_eq!(names, expected, "stop {i} at pc {pc:#x}: {stack:?}");
        assert_eq!(stack.stop, StopReason::Root, "stop {i} at pc {pc:#x}");
        for frame in &stack.frames[1..] {
            assert_eq!(frame.recovered, Recovery::GoTable, "stop {i} at pc {pc:#x}");
        }
        stops += 1;
        pcs.push(pc);
    }
    pcs.dedup();
    eprintln!(
        "{test}: {stops} stops of {STOPS}, each the whole chain; pcs {:x?}",
        pcs
    );
    assert_eq!(
        stops,
        STOPS,
        "gdb-multiarch stopped fewer times: {}\n{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        pcs.iter().any(|&pc| pc == entry("main.spinInner")),
        "the stops did not reach main.spinInner: {pcs:x?}"
    );
}
