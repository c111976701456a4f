//! Arbitrary bytes as USDT probe notes: an input that starts with the ELF magic is read as a
//! file and its `.note.stapsdt` probes listed (`stacksym::usdt::read_probes`); any other is
//! an argument string parsed in both syntaxes (x86_64 AT&T, aarch64). Truncated notes,
//! strings without their NUL and absurd sizes must give errors that name the input, never a
//! panic or a hang.
//!
//! Run from the repository root, seeded with the test binaries (usdt-x86_64, usdt-aarch64)
//! and argument strings (the corpus dir must exist):
//!   mkdir -p fuzz/corpus/usdt
//!   cargo +nightly fuzz run usdt fuzz/corpus/usdt testdata/bin testdata/fuzz/usdt -- -max_total_time=30
//! Without a nightly toolchain: `RUSTC_BOOTSTRAP=1 cargo fuzz ...` (what `.ci/run` falls back to).

#![no_main]

use libfuzzer_sys::fuzz_target;
use stacksym::elf::ElfFile;
use stacksym::usdt::{parse_args, read_probes, ArgSyntax};

fuzz_target!(|data: &[u8]| {
    if data.starts_with(b"\x7fELF") {
        let Ok(elf) = ElfFile::from_bytes("fuzz-input", data) else {
            return;
        };
        match read_probes(&elf) {
            Ok(probes) => {
                for probe in probes {
                    std::hint::black_box((probe.provider.len(), probe.args.is_ok()));
                }
            }
            Err(e) => assert!(e.to_string().starts_with("fuzz-input: "), "{e}"),
        }
        return;
    }
    let text = String::from_utf8_lossy(data);
    for syntax in [ArgSyntax::X86_64, ArgSyntax::Aarch64] {
        if let Ok(args) = parse_args(&text, syntax, 8) {
            assert!(args.len() <= stacksym::usdt::args::MAX_ARGS);
        }
    }
});
