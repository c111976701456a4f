//! Arbitrary bytes as a perf JIT map (`/tmp/perf-PID.map`): parse, then look up addresses taken
//! from the input and from the edges of every line that parsed, and check each hit against
//! the rule that the last line covering an address wins.
//!
//! Run from the repository root, seeded with the fixtures (the corpus dir must exist):
//!   mkdir -p fuzz/corpus/perf_map
//!   cargo +nightly fuzz run perf_map fuzz/corpus/perf_map testdata/perfmap -- -max_total_time=30

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use stacksym::addr::AbsAddr;
use stacksym::process::parse_perf_map;

/// Most addresses probed in one input, to keep each run fast.
const MAX_PROBES: usize = 256;

/// `(start, size)` of the lines that look like entries, by a simple independent reading:
/// first two blank-separated fields as hex (optional 0x), a non-blank rest.
fn naive_entries(data: &[u8]) -> Vec<(u64, u64)> {
    let hex = |f: &str| {
        let d = f
            .strip_prefix("0x")
            .or_else(|| f.strip_prefix("0X"))
            .unwrap_or(f);
        if d.is_empty() || d.len() > 16 || !d.bytes().all(|b| b.is_ascii_hexdigit()) {
            None
        } else {
            u64::from_str_radix(d, 16).ok()
        }
    };
    let text = String::from_utf8_lossy(data);
    text.split('\n')
        .filter_map(|line| {
            let mut f = line.split([' ', '\t']).filter(|s| !s.is_empty());
            let start = hex(f.next()?)?;
            let size = hex(f.next()?)?;
            let name_ok = f.any(|s| !s.trim_ascii().is_empty());
            (name_ok && start.checked_add(size).is_some()).then_some((start, size))
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let map = match parse_perf_map(Path::new("fuzz-perf-map"), data) {
        Ok(map) => map,
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.starts_with("fuzz-perf-map: not a perf map"), "{shown}");
            return;
        }
    };
    let entries = naive_entries(data);
    let mut addrs: Vec<u64> = data
        .rchunks_exact(8)
        .take(4)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    for &(start, size) in &entries {
        let end = start + size;
        addrs.extend([start, start.wrapping_sub(1), end, end.wrapping_sub(1)]);
    }
    addrs.truncate(MAX_PROBES);
    for addr in addrs {
        let hit = map.find(AbsAddr(addr));
        // The last line that covers the address, by the naive reading.
        let want = entries
            .iter()
            .rev()
            .find(|&&(start, size)| start <= addr && addr - start < size);
        match (hit, want) {
            (Some(sym), Some(&(start, size))) => {
                assert_eq!((sym.start.0, sym.size), (start, size), "{addr:#x}");
                assert_eq!(sym.offset, addr - start);
            }
            (None, None) => {}
            (hit, want) => panic!("{addr:#x}: {hit:?} vs {want:?}"),
        }
    }
});
