//! Go binaries through their own table (`.gopclntab`): the stripped test binaries of
//! testdata/build-go.sh and the distribution's restic, compared address by address with
//! Go's own tools (`go tool addr2line`; Go's debug/gosym for a PIE, where Go 1.19's
//! addr2line finds no table), with the unstripped twin's DWARF (through llvm-symbolizer and
//! through stacksym), and with the twin's `.symtab`.

mod support;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use stacksym::elf::ElfFile;
use stacksym::gopclntab::{GoTable, GoTableFoundBy, GoTableVersion};
use stacksym::symbolize::{FoundIn, NamePattern};
use stacksym::{Input, NameOrigin, Source, Symbolizer, VirtAddr};
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
        .map(|pair| (pair[0].to_string(), pair[1].to_string()))
        .collect()
}

fn go_addr2line(go: &Path, binary: &Path, addrs: &[u64]) -> Vec<(String, String)> {
    let mut command = Command::new(go);
    command.args(["tool", "addr2line"]).arg(binary);
    run_go_tool(command, addrs)
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
	data, err := f.Section(".gopclntab").Data()
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
    let path = PathBuf::from("/usr/bin/restic");
    if !path.exists() {
        skip_or_fail(
            "restic_agrees_with_go_addr2line",
            "restic not found; install restic",
        );
        return;
    }
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
                        f.function
                            .as_ref()
                            .map(|n| n.raw.clone())
                            .unwrap_or_default(),
                        f.file.as_deref().unwrap_or("").to_string(),
                        f.line.unwrap_or(0),
                    )
                })
                .collect()
        })
        .collect()
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
    let mut differ = 0;
    let mut inlined = 0;
    for ((addr, go), dwarf) in addrs.iter().zip(&go_frames).zip(&dwarf_frames) {
        inlined += usize::from(go.len() > 1);
        if go != dwarf {
            differ += 1;
            if differ <= 10 {
                eprintln!("{addr:#x}: Go table {go:?}, DWARF {dwarf:?}");
            }
        }
    }
    eprintln!(
        "{test}: {} of {} addresses agree ({inlined} with inlined frames)",
        addrs.len() - differ,
        addrs.len()
    );
    assert_eq!(differ, 0);
    assert!(inlined > 0, "no inlined frames sampled");
    let Some(llvm) = support::require_tool(test, "llvm-symbolizer", "llvm") else {
        skip_or_fail(test, "llvm-symbolizer not found; install llvm");
        return;
    };
    let json =
        support::llvm_symbolizer_json(&llvm, &twin, &["--inlining", "--functions=linkage"], &addrs);
    let mut differ = 0;
    for ((addr, go), value) in addrs.iter().zip(&go_frames).zip(&json) {
        let theirs: Vec<FrameKey> = value["Symbol"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["FunctionName"].as_str().unwrap_or_default().to_string(),
                    f["FileName"].as_str().unwrap_or_default().to_string(),
                    f["Line"].as_u64().unwrap_or(0) as u32,
                )
            })
            .collect();
        if *go != theirs {
            differ += 1;
            if differ <= 10 {
                eprintln!("{addr:#x}: Go table {go:?}, llvm-symbolizer {theirs:?}");
            }
        }
    }
    eprintln!(
        "{test}: llvm-symbolizer: {} of {} agree",
        addrs.len() - differ,
        addrs.len()
    );
    assert_eq!(differ, 0);
}

/// Where `.symtab` exists, the Go table names every function as it does, at the same
/// address.
#[test]
fn names_agree_with_symtab() {
    let twin = bin("go-demo");
    let elf = Arc::new(ElfFile::open(&twin).unwrap());
    let table = GoTable::find(&elf).unwrap().unwrap();
    let mut checked = 0;
    for function in table.functions() {
        let function = function.unwrap();
        let symbol = elf.find_symbol(function.entry).unwrap().expect("a symbol");
        assert_eq!(symbol.addr, function.entry);
        assert_eq!(
            symbol.name_str,
            Some(function.name),
            "at {:#x}",
            function.entry.0
        );
        checked += 1;
    }
    eprintln!("names_agree_with_symtab: {checked} functions");
    assert!(checked > 1000);
}

/// Names → addresses over the Go table of a stripped binary: exact names and globs give
/// the twin's `.symtab` addresses and file offsets (what `perf probe -x BIN -a 0xOFFSET`
/// takes).
#[test]
fn find_addresses_in_a_stripped_go_binary() {
    let symbolizer = Symbolizer::builder().build();
    let stripped = bin("go-demo.stripped");
    let twin = bin("go-demo");
    let find = |path: &Path, pattern: &str| {
        symbolizer
            .find_addresses(&Source::Elf { path }, &NamePattern::parse(pattern))
            .unwrap()
    };
    for pattern in [
        "main.(*Server).Handle",
        "main.*",
        "*.(*Server).*",
        "main.Sum[...]",
        "runtime.goexit*",
    ] {
        let ours = find(&stripped, pattern);
        let theirs = find(&twin, pattern);
        assert!(!ours.is_empty(), "{pattern}");
        assert!(
            ours.iter().all(|m| m.found_in == FoundIn::GoTable),
            "{pattern}"
        );
        let key = |m: &stacksym::symbolize::SymbolMatch| (m.name.clone(), m.addr, m.file_offset);
        let mut ours: Vec<_> = ours.iter().map(key).collect();
        // The twin's .symtab also lists data and assembler-only symbols the Go table lacks.
        let functions: HashMap<_, _> = theirs
            .iter()
            .filter(|m| m.kind == stacksym::elf::SymbolKind::Function)
            .map(|m| (m.name.clone(), key(m)))
            .collect();
        ours.sort();
        for found in &ours {
            assert_eq!(functions.get(&found.0), Some(found), "{pattern}");
        }
        eprintln!("{pattern}: {} functions", ours.len());
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
