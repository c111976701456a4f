//! MiniDebugInfo (`.gnu_debugdata`) through the `Symbolizer` (feature `minidebuginfo`, on by
//! default).
//!
//! Binaries (testdata/README.md, "MiniDebugInfo"): `c-minidebuginfo`, stripped to `.dynsym`
//! (which names no function of the program) with an xz-compressed `.symtab` of its functions
//! in `.gnu_debugdata`, built as Fedora builds it; `c-minidebuginfo-corrupt`, the same with
//! 16 payload bytes inverted. The reference names come from the payload as binutils and
//! xz-utils read it (`objcopy --dump-section`, `xz -dc`, `nm`), not from stacksym.

#![cfg(feature = "minidebuginfo")]

mod support;

use std::path::Path;
use std::process::Command;

use stacksym::debuginfo::mini_debuginfo;
use stacksym::elf::ElfFile;
use stacksym::{Input, NameOrigin, Source, Symbolizer};
use support::writeln_stderr;

/// `(address, name)` of every function in the payload's `.symtab`, by `nm`.
fn payload_functions(test: &str, binary: &Path) -> Option<Vec<(u64, String)>> {
    let objcopy = support::require_tool(test, "objcopy", "binutils")?;
    let xz = support::require_tool(test, "xz", "xz-utils")?;
    let dir = tempfile::tempdir().expect("a temporary dir");
    let compressed = dir.path().join("payload.xz");
    let status = Command::new(objcopy)
        .arg(format!(
            "--dump-section=.gnu_debugdata={}",
            compressed.display()
        ))
        .arg(binary)
        .arg(dir.path().join("discard"))
        .status()
        .expect("objcopy runs");
    assert!(status.success(), "objcopy --dump-section failed");
    let status = Command::new(xz)
        .args(["-d", "-k"])
        .arg(&compressed)
        .status()
        .expect("xz runs");
    assert!(status.success(), "xz -d failed on the committed payload");
    let payload = dir.path().join("payload");
    let out = support::run(
        "nm",
        &["--defined-only", payload.to_str().expect("UTF-8 path")],
    );
    Some(
        out.lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let addr = u64::from_str_radix(fields.next()?, 16).ok()?;
                let kind = fields.next()?;
                let name = fields.next()?;
                matches!(kind, "t" | "T").then(|| (addr, name.to_string()))
            })
            .collect(),
    )
}

#[test]
fn stripped_binary_names_its_functions_from_minidebuginfo() {
    let test = "stripped_binary_names_its_functions_from_minidebuginfo";
    let binary = support::bin("c-minidebuginfo");
    let Some(functions) = payload_functions(test, &binary) else {
        return;
    };
    assert!(
        functions.iter().any(|(_, n)| n == "mix"),
        "the payload holds the static function mix: {functions:?}"
    );
    let addrs: Vec<u64> = functions.iter().map(|(addr, _)| addr + 1).collect();
    let symbolizer = Symbolizer::builder().debug_files(false).build();
    let symbols = symbolizer
        .symbolize(
            &Source::Elf { path: &binary },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        )
        .expect("symbolized");
    assert!(
        symbols.debug_error().is_none(),
        "{:?}",
        symbols.debug_error()
    );
    let mut aliases = 0;
    for ((addr, name), sym) in functions.iter().zip(symbols.iter()) {
        let sym = sym.unwrap_or_else(|| panic!("{addr:#x} ({name}) is named"));
        assert!(
            sym.symbol_file
                .to_string_lossy()
                .ends_with("[.gnu_debugdata]"),
            "{name}: named from {}",
            sym.symbol_file.display()
        );
        assert!(matches!(sym.origin, NameOrigin::Table(_)));
        assert_eq!(
            sym.addr.raw(),
            *addr,
            "{name}: the symbol starts where nm says"
        );
        if sym.name != name {
            // Two names at one address (demo_impl / demo_alias): the library's rule picks one.
            assert!(
                functions.iter().any(|(a, n)| a == addr && n == sym.name),
                "{addr:#x}: {} is not a name nm gives for it",
                sym.name
            );
            aliases += 1;
        }
    }
    writeln_stderr(format_args!(
        "{test}: {} functions named from .gnu_debugdata ({aliases} by an alias)",
        functions.len()
    ));
}

#[test]
fn corrupt_minidebuginfo_is_reported_and_dynsym_still_answers() {
    let binary = support::bin("c-minidebuginfo-corrupt");
    let good = support::bin("c-minidebuginfo");
    let Some(functions) = payload_functions("corrupt_minidebuginfo", &good) else {
        return;
    };
    let addrs: Vec<u64> = functions.iter().map(|(addr, _)| addr + 1).collect();
    let symbolizer = Symbolizer::builder().debug_files(false).build();
    let symbols = symbolizer
        .symbolize(
            &Source::Elf { path: &binary },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        )
        .expect("a corrupt .gnu_debugdata does not fail the batch");
    let error = symbols
        .debug_error()
        .expect("the corrupt payload is reported")
        .to_string();
    assert!(
        error.contains("c-minidebuginfo-corrupt") && error.contains(".gnu_debugdata"),
        "{error}"
    );
    for sym in symbols.iter().flatten() {
        assert!(
            !sym.symbol_file.to_string_lossy().contains(".gnu_debugdata"),
            "nothing is named from the corrupt payload"
        );
    }
}

/// A finding of the `debug_companions` fuzz target (2026-11-24), kept as
/// `testdata/fuzz/debug_companions/regression-xz-footer-overflow`: an ELF file whose
/// `.gnu_debugdata` xz stream reaches a stream footer whose Backward Size is 0xFFFFFFFF.
/// lzma-rs 0.3 computed `(backward_size + 1) << 2` and panicked where overflow checks are on
/// (as in this test's build). Now an error that names the file.
#[test]
fn xz_footer_with_the_largest_backward_size_is_an_error() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/fuzz/debug_companions/regression-xz-footer-overflow");
    let bytes = std::fs::read(&path).expect("the committed fuzz input");
    let elf =
        ElfFile::from_bytes("fuzz-input", bytes.as_slice()).expect("its ELF headers are fine");
    match mini_debuginfo(&elf) {
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.starts_with("fuzz-input") && text.contains("xz"),
                "{text}"
            );
        }
        Ok(found) => panic!(
            "a broken xz stream decoded: {:?}",
            found.map(|f| f.path().to_path_buf())
        ),
    }
}
