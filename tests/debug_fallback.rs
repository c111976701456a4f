//! Debug information that is broken or partly missing, through the `Symbolizer`: the batch
//! still succeeds from the symbol tables, and what went wrong is reported, never a panic.
//!
//! Binaries (testdata/README.md, "DWARF fixtures"): `c-pie-g` (DWARF in the file; its
//! `.debug_info` is overwritten here), `c-dwz-a` (its debug file needs a dwz supplementary
//! file, left out here), `c-split-dwarf` (its `.dwo` left out, or replaced by another
//! unit's).

mod support;

use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};
use stacksym::{Input, Source, Symbolizer};

fn bin(name: &str) -> PathBuf {
    support::bin(name)
}

/// The file range of section `name` in `bytes`.
fn section_range(bytes: &[u8], name: &str) -> std::ops::Range<usize> {
    let file = object::File::parse(bytes).expect("an ELF file");
    let section = file.section_by_name(name).expect("the section exists");
    let (offset, size) = section.file_range().expect("the section has bytes");
    offset as usize..(offset + size) as usize
}

/// Addresses inside `main`, `checksum` and `run_all` (by `nm`), functions of the fixtures'
/// demo.c that have others inlined into them.
fn some_function_addrs(path: &Path) -> Vec<u64> {
    ["main", "checksum", "run_all"]
        .iter()
        .map(|name| support::nm_addr(path, name) + 4)
        .collect()
}

#[test]
fn malformed_debug_info_is_reported_and_symbols_still_answer() {
    let dir = tempfile::tempdir().expect("a temporary dir");
    let mut bytes = std::fs::read(bin("c-pie-g")).expect("committed test binary");
    let range = section_range(&bytes, ".debug_info");
    // A unit header claiming DWARF version 0xffff and a length past the section's end.
    for byte in &mut bytes[range] {
        *byte = 0xff;
    }
    let path = dir.path().join("c-pie-g-broken-dwarf");
    std::fs::write(&path, &bytes).expect("writable temp dir");
    let addrs = some_function_addrs(&bin("c-pie-g"));
    assert!(!addrs.is_empty(), "nm finds the demo's functions");
    let symbolizer = Symbolizer::builder().debug_files(false).build();
    let symbols = symbolizer
        .symbolize(
            &Source::Elf { path: &path },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        )
        .expect("a file with broken DWARF is still symbolized");
    let error = symbols
        .debug_error()
        .expect("the broken DWARF is reported")
        .to_string();
    assert!(
        error.contains("c-pie-g-broken-dwarf") && error.contains("DWARF"),
        "the error names the file and the DWARF: {error}"
    );
    for (i, sym) in symbols.iter().enumerate() {
        let sym = sym.unwrap_or_else(|| panic!("address {:#x} has its symbol", addrs[i]));
        assert!(sym.frames.is_empty(), "no frames from broken DWARF");
    }
}

#[test]
fn missing_dwz_supplementary_file_keeps_lines_and_symbols() {
    let dir = tempfile::tempdir().expect("a temporary dir");
    let binary = bin("c-dwz-a");
    let stripped = dir.path().join("c-dwz-a");
    std::fs::copy(&binary, &stripped).expect("copy");
    // The build-id debug file alone, without `.dwz/` and without the supplementary file's
    // own build-id entry.
    let debug_dir = dir.path().join("debug");
    let testdata_debug = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/debug");
    let build_id = {
        let bytes = std::fs::read(&binary).expect("committed test binary");
        let file = object::File::parse(&*bytes).expect("ELF");
        let id = file.build_id().ok().flatten().expect("a build-id");
        id.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let rel = format!(".build-id/{}/{}.debug", &build_id[..2], &build_id[2..]);
    std::fs::create_dir_all(debug_dir.join(&rel).parent().expect("a parent")).expect("mkdir");
    std::fs::copy(testdata_debug.join(&rel), debug_dir.join(&rel)).expect("copy debug file");

    let addrs = some_function_addrs(&testdata_debug.join(&rel));
    assert!(
        !addrs.is_empty(),
        "nm finds the demo's functions in the debug file"
    );
    let symbolizer = Symbolizer::builder().debug_dirs(vec![debug_dir]).build();
    let symbols = symbolizer
        .symbolize(
            &Source::Elf { path: &stripped },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        )
        .expect("a missing supplementary file does not fail the batch");
    assert!(symbols.debug_file().is_some(), "the debug file is found");
    for (i, sym) in symbols.iter().enumerate() {
        let sym = sym.unwrap_or_else(|| panic!("address {:#x} has its symbol", addrs[i]));
        // Names moved into the supplementary file are missing, or the unit cannot be read
        // at all (then `debug_error` says so); either way the symbol answers.
        if let Some(outer) = sym.frames.last() {
            assert!(outer.line.is_some() || outer.function.is_none());
        }
    }
    if let Some(e) = symbols.debug_error() {
        assert!(e.to_string().contains("DWARF"), "{e}");
    }
}

#[test]
fn split_dwarf_without_its_dwo_gives_skeleton_lines() {
    let dir = tempfile::tempdir().expect("a temporary dir");
    let copy = dir.path().join("c-split-dwarf");
    std::fs::copy(bin("c-split-dwarf"), &copy).expect("copy");
    let addrs = some_function_addrs(&copy);
    assert!(!addrs.is_empty(), "nm finds the demo's functions");
    let symbolizer = Symbolizer::builder().debug_files(false).build();
    let alone = symbolizer
        .symbolize(
            &Source::Elf { path: &copy },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        )
        .expect("symbolized without the .dwo");
    assert!(
        alone.debug_error().is_none(),
        "a missing .dwo is not an error"
    );

    // The .dwo with its unit's id altered: it no longer matches the skeleton, so it is
    // refused (as llvm-symbolizer refuses it).
    std::fs::copy(
        bin("c-split-dwarf.dwo"),
        dir.path().join("c-split-dwarf.dwo"),
    )
    .expect("copy");
    let mut bytes = std::fs::read(dir.path().join("c-split-dwarf.dwo")).expect("read");
    let range = section_range(&bytes, ".debug_info.dwo");
    // Flip the unit's DWO id (DWARF 5 split unit header: length 4, version 2, unit type 1,
    // abbrev offset 4, address size 1, then the 8-byte id at offset 12).
    if range.len() > 20 {
        bytes[range.start + 12] ^= 0xff;
    }
    std::fs::write(dir.path().join("c-split-dwarf.dwo"), &bytes).expect("write");
    let symbolizer = Symbolizer::builder().debug_files(false).build();
    let wrong = symbolizer
        .symbolize(
            &Source::Elf { path: &copy },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        )
        .expect("symbolized with a wrong .dwo");
    for (a, b) in alone.iter().zip(wrong.iter()) {
        let (a, b) = (a.expect("a symbol"), b.expect("a symbol"));
        assert_eq!(a.name, b.name);
        assert_eq!(a.frames, b.frames, "the wrong .dwo is not used");
        // Only the skeleton: no inlined frames without the .dwo.
        assert!(a.frames.len() <= 1);
    }
}
