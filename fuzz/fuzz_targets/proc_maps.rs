//! Arbitrary bytes as a `/proc/PID/maps` file: parse, then look up addresses taken from the
//! input and from the mappings' edges, convert them to file offsets, normalize them (with a
//! procfs root that does not exist, so no file is opened).
//!
//! Run from the repository root, seeded with the fixtures (the corpus dir must exist):
//!   mkdir -p fuzz/corpus/proc_maps
//!   cargo +nightly fuzz run proc_maps fuzz/corpus/proc_maps testdata/maps -- -max_total_time=30

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use stacksym::addr::AbsAddr;
use stacksym::process::{Normalized, Process, ProcessMaps};

/// Most addresses probed in one input, to keep each run fast.
const MAX_PROBES: usize = 256;

fuzz_target!(|data: &[u8]| {
    let maps = match ProcessMaps::from_bytes(Path::new("fuzz-maps"), data) {
        Ok(maps) => maps,
        Err(e) => {
            // Errors name the input and the line.
            let shown = e.to_string();
            assert!(shown.starts_with("fuzz-maps: line "), "{shown}");
            return;
        }
    };
    let mut addrs: Vec<AbsAddr> = data
        .rchunks_exact(8)
        .take(4)
        .map(|c| AbsAddr(u64::from_le_bytes(c.try_into().unwrap_or_default())))
        .collect();
    for m in maps.mappings() {
        let (start, end) = (m.range.start.0, m.range.end.0);
        addrs.extend([start, start.wrapping_sub(1), end, end.wrapping_sub(1)].map(AbsAddr));
    }
    addrs.truncate(MAX_PROBES);

    let process = Process::with_procfs_root("/nonexistent-procfs-root", 1);
    for &addr in &addrs {
        if let Some(m) = maps.find(addr) {
            assert!(m.contains(addr));
            if let Some(offset) = m.file_offset(addr) {
                assert!(offset.0 >= m.file_offset.0);
            }
            let _ = process.open_path(m);
            let _ = m.map_files_name();
        }
    }
    for (addr, n) in addrs.iter().zip(process.normalize_with(&maps, &addrs)) {
        match n {
            Normalized::File(f) => assert!(f.build_id.is_none(), "{addr:?}"),
            Normalized::NotInFile(_) => {}
            Normalized::Unmapped => assert!(maps.find(*addr).is_none()),
        }
    }
});
