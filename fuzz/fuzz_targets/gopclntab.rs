//! Arbitrary bytes as an ELF file with a Go table (`.gopclntab`): find it (section, symbols
//! or the segment scan), then look up functions, frames and SP deltas at addresses spread
//! over its text and chosen by the input.
//!
//! Seeds: the Go test binaries (testdata/bin/go-*) and the hostile tables of
//! testdata/fuzz/gopclntab (written by `STACKSYM_WRITE_SEEDS=1 cargo test --lib gopclntab`):
//!   cargo +nightly fuzz run gopclntab fuzz/corpus/gopclntab testdata/fuzz/gopclntab -- -max_total_time=60

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use stacksym::elf::ElfFile;
use stacksym::gopclntab::GoTable;
use stacksym::VirtAddr;

/// Most addresses probed in one input, to keep each run fast.
const MAX_PROBES: usize = 256;

fuzz_target!(|data: &[u8]| {
    let Ok(elf) = ElfFile::from_bytes("fuzz-input", data) else {
        return;
    };
    let table = match GoTable::find(&Arc::new(elf)) {
        Ok(Some(table)) => table,
        Ok(None) => return,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz-input: "), "{e}");
            return;
        }
    };
    let mut addrs: Vec<u64> = data
        .rchunks_exact(8)
        .take(4)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    for function in table.functions().take(MAX_PROBES / 4).flatten() {
        let (start, end) = (function.entry.0, function.end.0);
        addrs.extend([
            start,
            end.wrapping_sub(1),
            start.wrapping_add(end.wrapping_sub(start) / 2),
        ]);
    }
    addrs.truncate(MAX_PROBES);
    let mut frames = Vec::new();
    for addr in addrs {
        if let Ok(Some(function)) = table.find_function(VirtAddr(addr)) {
            assert!(function.entry.0 <= addr && addr < function.end.0);
        }
        frames.clear();
        if let Err(e) = table.append_frames(VirtAddr(addr), &mut frames) {
            assert!(e.to_string().starts_with("fuzz-input: "), "{e}");
        }
        let _ = table.sp_delta(VirtAddr(addr));
    }
});
