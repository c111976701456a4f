//! The symbolizer's file cache stays within its configured capacity however many files it
//! sees: 10,000 distinct copies of testdata/bin/c-nopie (a small non-PIE binary; each copy is
//! its own inode, so its own FileId), symbolized once each through one Symbolizer with room
//! for 16 open files.

mod support;

use std::num::NonZeroUsize;

use stacksym::{Input, Source, Symbolizer};
use support::bin;

const FILES: usize = 10_000;
const CAPACITY: usize = 16;

#[test]
fn ten_thousand_files_stay_within_capacity() {
    let original = std::fs::read(bin("c-nopie")).unwrap();
    let elf = stacksym::elf::ElfFile::from_bytes("c-nopie", original.clone()).unwrap();
    let main = (0x401000..0x402000)
        .find(|&a| {
            elf.find_symbol(stacksym::VirtAddr(a))
                .unwrap()
                .is_some_and(|s| s.name == b"main")
        })
        .expect("c-nopie has main in its first text page");
    let dir = tempfile::tempdir().unwrap();
    let symbolizer = Symbolizer::builder()
        .max_open_files(NonZeroUsize::new(CAPACITY).unwrap())
        .build();
    for i in 0..FILES {
        let path = dir.path().join(format!("copy-{i}"));
        std::fs::write(&path, &original).unwrap();
        let symbols = symbolizer
            .symbolize(
                &Source::Elf { path: &path },
                Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[main])),
            )
            .unwrap();
        assert_eq!(symbols.get(0).unwrap().name, "main");
        drop(symbols);
        // Deleting the copy keeps the disk use flat; the cache keeps its mapping alive.
        std::fs::remove_file(&path).unwrap();
        let stats = symbolizer.stats();
        assert!(stats.open_files <= CAPACITY, "{stats:?}");
        assert!(
            stats.bytes_mapped <= (CAPACITY * original.len()) as u64,
            "{stats:?}"
        );
    }
    let stats = symbolizer.stats();
    assert_eq!(stats.files.misses, FILES as u64, "{stats:?}");
    assert_eq!(
        stats.files.evictions,
        (FILES - CAPACITY) as u64,
        "{stats:?}"
    );
    assert_eq!(stats.open_files, CAPACITY);
    symbolizer.clear();
    assert_eq!(symbolizer.stats().open_files, 0);
    assert_eq!(symbolizer.stats().bytes_mapped, 0);
}
