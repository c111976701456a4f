//! Arbitrary bytes as an ELF core file (not compressed): parse its program headers and
//! notes (threads, NT_FILE, auxv, siginfo), then read memory at the threads' stack pointers,
//! the mappings' edges and the vDSO, and unwind every thread. No mapped file is opened.
//!
//! Seeds (testdata/fuzz/core_file, replayed by `.ci/run`): `tiny.core` (x86_64, the kernel's)
//! and `qemu-a64-pac-mask.core` (aarch64, qemu-user's: no NT_FILE or NT_SIGINFO, an
//! NT_ARM_PAC_MASK note added as tests/core.rs adds it). Run from the repository root:
//!   mkdir -p fuzz/corpus/core_file
//!   cargo +nightly fuzz run core_file fuzz/corpus/core_file testdata/fuzz/core_file -- -max_total_time=30

#![no_main]

use libfuzzer_sys::fuzz_target;
use stacksym::core::{CoreFile, CoreOptions};
use stacksym::unwind::{Modules, RegsAarch64, RegsX86_64, UnwindCache, Unwinder};
use stacksym::AbsAddr;

fuzz_target!(|data: &[u8]| {
    let options = CoreOptions {
        open_files: false,
        finder: None,
        ..CoreOptions::default()
    };
    let Ok(core) = CoreFile::from_bytes("fuzz-core", data.to_vec(), &options) else {
        return;
    };
    let mut probes: Vec<u64> = core.threads().iter().map(|t| t.registers.sp()).collect();
    for m in core.mappings().iter().take(64) {
        probes.extend([m.range.start.0, m.range.end.0.wrapping_sub(1), m.range.end.0]);
    }
    for &addr in &probes {
        let _ = core.read_u64(AbsAddr(addr));
        let _ = core.why_unreadable(AbsAddr(addr));
        let mut buf = [0u8; 64];
        let _ = core.read(AbsAddr(addr.wrapping_sub(32)), &mut buf);
    }
    let unwinder = Unwinder::new(Modules::from_core(&core, None));
    let mut x86 = UnwindCache::new();
    let mut arm = UnwindCache::new();
    for thread in core.threads().iter().take(16) {
        if let Some(regs) = RegsX86_64::from_core(&thread.registers) {
            let _ = unwinder.unwind(&regs, &core, &mut x86);
        } else if let Some(regs) = RegsAarch64::from_core_thread(thread) {
            let _ = unwinder.unwind(&regs, &core, &mut arm);
        }
    }
    let _ = (core.process(), core.signal(), core.entry(), core.problems());
});
