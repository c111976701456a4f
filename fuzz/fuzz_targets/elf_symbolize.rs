//! Arbitrary bytes as an ELF file: open, look up addresses derived from the input and from
//! its segments (so that lookups hit symbols), touch every name, demangle it.
//!
//! Run from the repository root, seeded with the test binaries (the corpus dir must exist):
//!   mkdir -p fuzz/corpus/elf_symbolize
//!   cargo +nightly fuzz run elf_symbolize fuzz/corpus/elf_symbolize testdata/bin -- -max_total_time=60
//! Without a nightly toolchain: `RUSTC_BOOTSTRAP=1 cargo fuzz ...` (what `.ci/run` falls back to).
//! Inputs that are not ELF are fed to the demangler as a name, so it is fuzzed too.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stacksym::demangle::demangle;
use stacksym::elf::{ElfFile, ElfSymbol};
use stacksym::{FileOffset, VirtAddr};

/// Most addresses probed in one input, to keep each run fast.
const MAX_PROBES: usize = 256;

fuzz_target!(|data: &[u8]| {
    let elf = match ElfFile::from_bytes("fuzz-input", data) {
        Ok(elf) => elf,
        Err(e) => {
            // Errors name the input and say something.
            let shown = e.to_string();
            assert!(shown.starts_with("fuzz-input: "), "{shown}");
            let _ = demangle(&String::from_utf8_lossy(data));
            return;
        }
    };
    let _ = elf.header();
    let _ = elf.build_id().map(<[u8]>::len);
    let _ = elf.symbol_count();
    // Names -> addresses (the probe finder's walk): every name is a slice of the input.
    match elf.named_symbols() {
        Ok(named) => {
            for sym in named.iter().take(MAX_PROBES) {
                let _ = demangle(&String::from_utf8_lossy(sym.name));
                let _ = elf.segments().virt_to_file_offset(sym.addr);
            }
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz-input: "), "{e}"),
    }

    let mut addrs: Vec<u64> = Vec::new();
    // Addresses chosen by the input itself: its last 32 bytes as four u64s.
    addrs.extend(
        data.rchunks_exact(8)
            .take(4)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())),
    );
    // Addresses inside each loadable segment, spread over it, plus its edges.
    for seg in elf.segments().loads() {
        let start = seg.virt_addr.0;
        let len = seg.mem_size.max(seg.file_size);
        addrs.extend([
            start,
            start.wrapping_sub(1),
            start.wrapping_add(len),
            start.wrapping_add(len).wrapping_sub(1),
        ]);
        let step = (len / 32).max(1);
        addrs.extend((0..32).map(|i| start.wrapping_add(i * step)));
    }
    addrs.truncate(MAX_PROBES);

    for &addr in &addrs {
        match elf.find_symbol(VirtAddr(addr)) {
            Ok(Some(sym)) => {
                assert!(sym.addr.0 <= addr);
                touch(&sym);
                let again = elf.symbol_by_id(sym.id).ok().flatten();
                assert_eq!(again.map(|s| s.name), Some(sym.name));
            }
            Ok(None) => {}
            Err(e) => {
                assert!(e.to_string().starts_with("fuzz-input: "));
                // The index failed to build; every later lookup fails the same way.
                assert!(elf.find_symbol(VirtAddr(addr)).is_err());
                return;
            }
        }
        let segments = elf.segments();
        if let Some(offset) = segments.virt_to_file_offset(VirtAddr(addr)) {
            if let Ok(Some(sym)) = elf.find_symbol_at_file_offset(offset) {
                touch(&sym);
            }
        }
        if let Some(virt) = segments.file_offset_to_virt(FileOffset(addr)) {
            let _ = elf.find_symbol(virt);
        }
    }
});

fn touch(sym: &ElfSymbol<'_>) {
    let checksum = sym.name.iter().fold(0u8, |a, &b| a ^ b);
    std::hint::black_box(checksum);
    if let Some(v) = sym.version {
        std::hint::black_box(v.len());
    }
    let name = String::from_utf8_lossy(sym.name);
    let shown = demangle(&name);
    std::hint::black_box(shown.len());
}
