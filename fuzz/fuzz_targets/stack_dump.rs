//! Arbitrary bytes as a bpftrace stack dump: the `--stacks` parser of the `symbolize` example
//! (a pure function, included from the example's source) splits them into lines and blocks;
//! nothing may panic, and every frame and closer it returns must lie inside the input.
//!
//!   cargo +nightly fuzz run stack_dump fuzz/corpus/stack_dump testdata/dumps -- -max_total_time=60

#![no_main]

#[path = "../../cli/src/symbolize/stack_parse.rs"]
#[allow(dead_code)]
mod stack_parse;

use libfuzzer_sys::fuzz_target;
use stack_parse::{count_of, parse, Piece};

fuzz_target!(|data: &[u8]| {
    let inside = |part: &[u8]| {
        let start = part.as_ptr() as usize;
        let base = data.as_ptr() as usize;
        part.is_empty() || (start >= base && start + part.len() <= base + data.len())
    };
    for piece in parse(data) {
        match piece {
            Piece::Text(line) => assert!(inside(line)),
            Piece::Block {
                opener,
                frames,
                closer,
            } => {
                assert!(inside(opener));
                for frame in &frames {
                    assert!(inside(frame.indent) && inside(frame.text));
                }
                if let Some(closer) = closer {
                    assert!(inside(closer));
                    let _ = count_of(closer);
                }
            }
        }
    }
});
