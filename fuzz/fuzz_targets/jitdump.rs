//! Arbitrary bytes as a jitdump file (`jit-PID.dump`): parsed complete and as a file still
//! being written, then every load looked up at its edges, now and at its own time, with its
//! source line and unwinding info. Errors must name the file; nothing may panic.
//!
//! Run from the repository root, seeded with the committed inputs (the corpus dir must exist):
//!   mkdir -p fuzz/corpus/jitdump
//!   cargo +nightly fuzz run jitdump fuzz/corpus/jitdump testdata/fuzz/jitdump -- -max_total_time=30

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use stacksym::addr::AbsAddr;
use stacksym::process::{parse_growing_jitdump, parse_jitdump};

/// Most loads probed in one input, to keep each run fast.
const MAX_PROBES: usize = 256;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz-jit.dump");
    let complete = parse_jitdump(path, data);
    for parsed in [parse_growing_jitdump(path, data), complete] {
        let dump = match parsed {
            Ok(dump) => dump,
            Err(e) => {
                assert_eq!(e.path(), path, "{e}");
                continue;
            }
        };
        let loads: Vec<_> = dump
            .iter()
            .take(MAX_PROBES)
            .map(|c| (c.start, c.size, c.timestamp))
            .collect();
        for (start, size, time) in loads {
            let last = start.0.saturating_add(size.saturating_sub(1));
            for addr in [
                start.0,
                last,
                start.0.wrapping_sub(1),
                start.0.saturating_add(size),
            ] {
                for code in [dump.find(AbsAddr(addr)), dump.find_at(AbsAddr(addr), time)]
                    .into_iter()
                    .flatten()
                {
                    assert!(code.offset < code.size, "{addr:#x}: {code:?}");
                    let _ = (code.line(), code.lines().count(), code.unwinding_info());
                }
            }
        }
    }
});
