//! Arbitrary bytes as a process's memory holding a CPython runtime: the first byte picks the
//! version (3.6 + byte % 8), the next four the runtime's offset in the image, the rest is the
//! image, mapped at 0x10000. Every thread's frames are read: lies (cycles, absurd lengths,
//! wild pointers) must give errors, never a panic or a hang.
//!
//! Seeds (testdata/fuzz/python_frames, replayed by `.ci/run`): the made-up images of
//! src/python/tests.rs, one per version (one interpreter, two threads, three frames). Run
//! from the repository root:
//!   mkdir -p fuzz/corpus/python_frames
//!   cargo +nightly fuzz run python_frames fuzz/corpus/python_frames testdata/fuzz/python_frames -- -max_total_time=30

#![no_main]

use libfuzzer_sys::fuzz_target;
use stacksym::python::{PythonRuntime, PythonTypes, PythonVersion};
use stacksym::unwind::Memory;
use stacksym::AbsAddr;

const BASE: u64 = 0x10000;

struct Image<'a>(&'a [u8]);

impl Memory for Image<'_> {
    fn read_u64(&self, addr: AbsAddr) -> Option<u64> {
        let mut word = [0u8; 8];
        self.read_bytes(addr, &mut word)
            .then(|| u64::from_le_bytes(word))
    }

    fn read_bytes(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        let Some(start) = addr.0.checked_sub(BASE).and_then(|s| usize::try_from(s).ok()) else {
            return false;
        };
        match start.checked_add(buf.len()).and_then(|end| self.0.get(start..end)) {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                true
            }
            None => false,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&[version, a, b, c, d], image)) = data.split_first_chunk::<5>() else {
        return;
    };
    let runtime = PythonRuntime {
        version: PythonVersion {
            major: 3,
            minor: 6 + version % 8,
            micro: None,
        },
        runtime: AbsAddr(BASE + u64::from(u32::from_le_bytes([a, b, c, d]))),
        file: "fuzz-python".into(),
        types: PythonTypes::default(),
    };
    if let Ok(stacks) = runtime.read_stacks(&Image(image), &[100, 101]) {
        for thread in &stacks.threads {
            let _ = thread.frames.as_ref().map(|frames| frames.len());
        }
    }
});
