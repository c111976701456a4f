//! stacksym's DWARF engine (`src/dwarf/`) against the addr2line crate, its oracle.
//!
//! The engine reads units, line programs and DIE trees itself (one pass each, per unit); the
//! addr2line crate (0.27, its `Loader`, on the same file) did that job before and is the
//! reference here. For every byte of every sized FUNC symbol of the committed `-g` binaries
//! (C, C++ and Rust; gcc and clang; DWARF 2 to 5; x86_64, i386, aarch64 and big-endian
//! s390x), and for 20,000 random addresses of the system libc's debug file (zlib-compressed
//! sections, 4,000 units), the whole inline chain must be the crate's: the same number of
//! frames and, per frame, the same function name as DWARF states it, line, column and file
//! name. Not compared, because the engine deliberately differs: the directories of a file
//! (a DWARF 5 relative directory 0 is joined as llvm-symbolizer joins it; tests/dwarf.rs
//! holds the paths to llvm-symbolizer), a line-0 row's column and the discriminators (which
//! the crate drops). A frame's name: the crate's `raw_name`; ours `FunctionName::raw`.
//!
//! Split DWARF and dwz files are held to llvm-symbolizer by tests/dwarf.rs and
//! tests/debuginfo.rs instead (the crate's `Loader` looks for `.dwo` files elsewhere).

mod support;

use std::path::Path;
use std::sync::Arc;

use stacksym::dwarf::{DwarfInfo, DwarfSections};
use stacksym::elf::ElfFile;
use stacksym::VirtAddr;

/// One frame, comparable: (function, file name, line, column where the line is known).
type Compared = (Option<String>, Option<String>, Option<u32>, Option<u32>);

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn ours(dwarf: &DwarfInfo, addr: u64) -> Vec<Compared> {
    let frames = dwarf
        .frames(VirtAddr(addr))
        .unwrap_or_else(|e| panic!("{addr:#x}: {e}"))
        .unwrap_or_default();
    frames
        .into_iter()
        .map(|f| {
            (
                f.function.map(|n| n.raw.clone()),
                f.file.as_deref().map(file_name),
                f.line,
                f.line.and(f.column),
            )
        })
        .collect()
}

fn theirs(loader: &addr2line::Loader, addr: u64) -> Vec<Compared> {
    let mut out = Vec::new();
    let mut frames = loader
        .find_frames(addr)
        .unwrap_or_else(|e| panic!("addr2line at {addr:#x}: {e}"));
    while let Some(frame) = frames.next().expect("addr2line frame") {
        let location = frame.location.as_ref();
        let line = location.and_then(|l| l.line);
        out.push((
            frame
                .function
                .map(|n| n.raw_name().expect("name").into_owned()),
            location.and_then(|l| l.file).map(file_name),
            line,
            line.and(location.and_then(|l| l.column)),
        ));
    }
    out
}

/// Compares every address of `addrs` in `path`; returns (addresses, with inlined frames).
fn compare(path: &Path, addrs: &[u64]) -> (usize, usize) {
    let elf = Arc::new(ElfFile::open(path).expect("opens"));
    let sections = DwarfSections::load(&elf)
        .expect("reads")
        .unwrap_or_else(|| panic!("{}: no DWARF", path.display()));
    let dwarf = DwarfInfo::new(&sections).expect("DWARF reads");
    let loader = addr2line::Loader::new(path).expect("addr2line opens the file");
    let mut differ = Vec::new();
    let mut inlined = 0;
    for &addr in addrs {
        let (a, b) = (ours(&dwarf, addr), theirs(&loader, addr));
        inlined += usize::from(b.len() > 1);
        if a != b {
            differ.push(format!("{addr:#x}:\n  stacksym {a:?}\n  addr2line {b:?}"));
        }
    }
    eprintln!(
        "{}: {} addresses, {} with inlined frames, {} differ",
        path.display(),
        addrs.len(),
        inlined,
        differ.len()
    );
    assert!(
        differ.is_empty(),
        "{}: {} of {} addresses differ from the addr2line crate; first:\n{}",
        path.display(),
        differ.len(),
        addrs.len(),
        differ
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    (addrs.len(), inlined)
}

/// Every byte of every sized function of `path` (at most `cap` addresses, evenly spread).
fn every_byte(path: &Path, cap: usize) -> Vec<u64> {
    let readelf = support::find_tool("readelf").expect("binutils' readelf (see .ci/run)");
    let mut addrs: Vec<u64> = support::readelf_symbols(&readelf, path)
        .iter()
        .filter(|s| s.is_sized_function())
        .flat_map(|s| s.value..s.value + s.size)
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    let step = addrs.len().div_ceil(cap).max(1);
    addrs.into_iter().step_by(step).collect()
}

#[test]
fn committed_binaries_agree_with_the_addr2line_crate() {
    let mut inlined = 0;
    for name in [
        "c-pie-g",
        "c-clang-O2-g",
        "c-gcc-O2-g-dwarf2",
        "c-gcc-O2-g-dwarf3",
        "c-gcc-O2-g-dwarf4",
        "c-compress-zlib-gnu",
        "c-i386",
        "c-aarch64",
        "c-s390x",
        "cpp-O2-g",
        "cpp-clang-O2-g",
        "cpp-gcc-O2-g-dwarf4",
        "rust-O2-g",
    ] {
        let path = support::bin(name);
        inlined += compare(&path, &every_byte(&path, 40_000)).1;
    }
    // The comparison means something only where there are inline chains.
    assert!(inlined > 1000, "{inlined} addresses with inlined frames");
}

#[test]
fn libc_debug_file_agrees_with_the_addr2line_crate() {
    const TEST: &str = "libc_debug_file_agrees_with_the_addr2line_crate";
    let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
    let readelf = support::find_tool("readelf").expect("binutils' readelf (see .ci/run)");
    let debug = match support::build_id_debug_file(&readelf, libc, Path::new("/usr/lib/debug")) {
        Ok(debug) => debug,
        Err(why) => return support::skip_or_fail(TEST, &why),
    };
    // 20,000 addresses: a function of the debug file's table, then an offset in it
    // (fixed seed).
    let symbols = support::readelf_symbols(&readelf, &debug);
    let addrs: Vec<u64> =
        support::sample_function_addrs(&symbols, |_| true, 20_000, 0x0d1a_ce5e_ed5e_ed01)
            .iter()
            .map(|sample| sample.addr)
            .collect();
    let (_, inlined) = compare(&debug, &addrs);
    assert!(inlined > 1000, "{inlined} addresses with inlined frames");
}
