//! Arbitrary bytes as an ELF file with DWARF: read (and decompress) its debug sections, parse
//! its units, and look up the frames at addresses derived from the input and its segments.
//! Malformed DWARF, offsets past a section, truncated or oversized compressed sections must
//! give errors that name the input, never a panic; and the units read ahead on two threads
//! (`DwarfInfo::prepare`) must give the same answers, errors included.
//!
//! Run from the repository root, seeded with the test binaries (the corpus dir must exist):
//!   mkdir -p fuzz/corpus/dwarf_frames
//!   cargo +nightly fuzz run dwarf_frames fuzz/corpus/dwarf_frames testdata/bin -- -max_total_time=30
//! Without a nightly toolchain: `RUSTC_BOOTSTRAP=1 cargo fuzz ...` (what `.ci/run` falls back to).

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use stacksym::dwarf::{DwarfInfo, DwarfSections};
use stacksym::elf::ElfFile;
use stacksym::VirtAddr;

/// Most addresses probed in one input, to keep each run fast.
const MAX_PROBES: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Ok(elf) = ElfFile::from_bytes("fuzz-input", data) else {
        return;
    };
    let elf = Arc::new(elf);
    let sections = match DwarfSections::load(&elf) {
        Ok(Some(sections)) => sections,
        Ok(None) => return,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz-input: "), "{e}");
            return;
        }
    };
    let dwarf = match DwarfInfo::new(&sections) {
        Ok(dwarf) => dwarf,
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
    for seg in elf.segments().loads().iter().filter(|s| s.executable) {
        let step = (seg.mem_size / 16).max(1);
        addrs.extend((0..16).map(|i| seg.virt_addr.0.wrapping_add(i * step)));
    }
    addrs.truncate(MAX_PROBES);
    // The same DWARF read ahead on two threads (`DwarfInfo::prepare`, what
    // `SymbolizerBuilder::threads` does) must answer exactly as the lazy one.
    let prepared = DwarfInfo::new(&sections).expect("loaded once already");
    prepared.prepare(addrs.iter().map(|&addr| VirtAddr(addr)), 2);
    for addr in addrs {
        let ahead = prepared.frames(VirtAddr(addr));
        let lazy = dwarf.frames(VirtAddr(addr));
        match (&lazy, &ahead) {
            (Ok(lazy), Ok(ahead)) => assert_eq!(lazy, ahead, "{addr:#x}"),
            (Err(lazy), Err(ahead)) => assert_eq!(lazy.to_string(), ahead.to_string()),
            _ => panic!("{addr:#x}: {lazy:?} lazily, {ahead:?} read ahead"),
        }
        match lazy {
            Ok(Some(frames)) => {
                assert!(!frames.is_empty());
                assert!(!frames[frames.len() - 1].inlined);
                for frame in &frames {
                    std::hint::black_box((&frame.function, &frame.file, frame.line));
                }
            }
            Ok(None) => {}
            Err(e) => assert!(e.to_string().starts_with("fuzz-input: "), "{e}"),
        }
    }
});
