//! Arbitrary bytes as a perf.data file → the reader `stacksym perf` uses
//! (`cli/src/perf/data.rs`: the header check, linux-perf-data's parsing, records turned into
//! mappings, registers and stack copies) → every sample unwound. Every mapping, whatever path
//! it names, is of `testdata/unwind/unwind-demo-nofp` (real `.eh_frame`; no file named by the
//! input is ever opened). A malformed or truncated file must end with an error, never a
//! panic, a hang or unbounded memory.
//!
//! Run from the repository root, seeded with the committed inputs (a small recording of
//! unwind-demo-nofp and truncated copies of it and of the bench's recording):
//!   mkdir -p fuzz/corpus/perf_data
//!   cargo +nightly fuzz run perf_data fuzz/corpus/perf_data testdata/fuzz/perf_data -- -max_total_time=30

#![no_main]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use stacksym::elf::ElfFile;
use stacksym::unwind::{Modules, RegsAarch64, RegsX86_64, UnwindCache, Unwinder};

#[path = "../../cli/src/perf/data.rs"]
mod perf_data;
use perf_data::{PerfEvent, RecordedArch};

const PROGRAM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/unwind/unwind-demo-nofp"
);

/// Most records read from one input (each is at least a header; the reader's work per record
/// is bounded by the input).
const MAX_RECORDS: usize = 100_000;

fn program() -> Option<Arc<ElfFile>> {
    static ELF: OnceLock<Option<Arc<ElfFile>>> = OnceLock::new();
    ELF.get_or_init(|| ElfFile::open(PROGRAM).ok().map(Arc::new))
        .clone()
}

fuzz_target!(|input: &[u8]| {
    let Ok(mut recording) = perf_data::from_bytes(Path::new("fuzz.data"), input) else {
        return;
    };
    // Compressed records (`perf record -z`) decompress into memory: at most 64 MiB here.
    recording.set_max_decompressed(64 << 20);
    let arch = recording.arch();
    let _ = recording.build_ids();
    let elf = program();
    let mut unwinders: HashMap<i32, Unwinder> = HashMap::new();
    let mut x86_64_cache = UnwindCache::<RegsX86_64>::new();
    let mut aarch64_cache = UnwindCache::<RegsAarch64>::new();
    for _ in 0..MAX_RECORDS {
        let Ok(Some(event)) = recording.next_event() else {
            break;
        };
        match event {
            PerfEvent::Mmap {
                pid,
                start,
                len,
                pgoff,
                ..
            } => {
                if let Some(elf) = &elf {
                    // At most a few hundred processes, as a recording of a machine has.
                    if unwinders.len() < 512 || unwinders.contains_key(&pid) {
                        let unwinder = unwinders
                            .entry(pid)
                            .or_insert_with(|| Unwinder::new(Modules::new()));
                        unwinder.modules_mut().add(
                            stacksym::AbsAddr(start)..stacksym::AbsAddr(start.saturating_add(len)),
                            stacksym::FileOffset(pgoff),
                            Arc::clone(elf),
                        );
                    }
                }
            }
            PerfEvent::Sample(sample) => {
                let Some(unwinder) = unwinders.get(&sample.pid) else {
                    continue;
                };
                match arch {
                    RecordedArch::X86_64 => {
                        if let Some((regs, memory)) = sample.unwind_input::<RegsX86_64>() {
                            let stack = unwinder.unwind(&regs, &memory, &mut x86_64_cache);
                            assert!(!stack.frames.is_empty());
                        }
                    }
                    RecordedArch::Aarch64 => {
                        if let Some((regs, memory)) = sample.unwind_input::<RegsAarch64>() {
                            let stack = unwinder.unwind(&regs, &memory, &mut aarch64_cache);
                            assert!(!stack.frames.is_empty());
                        }
                    }
                }
            }
            _ => {}
        }
    }
});
