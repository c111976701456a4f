//! Arbitrary bytes as an ELF file read for what points at its debug information: the
//! MiniDebugInfo payload (`.gnu_debugdata`: an xz stream holding another ELF file, whose
//! symbols are then looked up), `.gnu_debuglink`, `.gnu_debugaltlink`, and the by-name
//! symbol lookup the kernel's KASLR anchor uses. Bad xz, an ELF inside that is not one, and
//! decompression bombs must give errors that name the input, never a panic or a hang.
//!
//! Run from the repository root, seeded with the test binaries (the corpus dir must exist):
//!   mkdir -p fuzz/corpus/debug_companions
//!   cargo +nightly fuzz run debug_companions fuzz/corpus/debug_companions testdata/bin testdata/fuzz/debug_companions -- -max_total_time=30
//! Without a nightly toolchain: `RUSTC_BOOTSTRAP=1 cargo fuzz ...` (what `.ci/run` falls back to).

#![no_main]

use libfuzzer_sys::fuzz_target;
use stacksym::debuginfo::mini_debuginfo;
use stacksym::elf::ElfFile;
use stacksym::VirtAddr;

fuzz_target!(|data: &[u8]| {
    let Ok(elf) = ElfFile::from_bytes("fuzz-input", data) else {
        return;
    };
    let _ = elf.debuglink().map(|(name, crc)| (name.len(), crc));
    let _ = elf.debugaltlink().map(|(path, id)| (path.len(), id.len()));
    if let Err(e) = elf.symbol_value_by_name("_stext") {
        assert!(e.to_string().starts_with("fuzz-input: "), "{e}");
    }
    match mini_debuginfo(&elf) {
        Ok(Some(mini)) => {
            assert!(mini.path().to_string_lossy().starts_with("fuzz-input"));
            let starts: Vec<u64> = elf
                .segments()
                .loads()
                .iter()
                .map(|s| s.virt_addr.0)
                .take(8)
                .collect();
            for addr in starts {
                if let Ok(Some(sym)) = mini.find_symbol(VirtAddr(addr)) {
                    std::hint::black_box(sym.name.len());
                }
            }
        }
        Ok(None) => {}
        Err(e) => assert!(e.to_string().starts_with("fuzz-input"), "{e}"),
    }
});
