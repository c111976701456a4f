//! The unwinder on real aarch64 code: `testdata/unwind/aarch64-capture` (static, -O2, built
//! by testdata/build-unwind.sh from `src/unwind/aarch64-capture*.c`) runs under
//! `qemu-aarch64` and, at the bottom of a call chain (frame records and functions without
//! them, a VLA whose CFA follows x29, a leaf whose return address is only in the link
//! register; the chain compiled once plain and once with `-mbranch-protection=pac-ret`),
//! writes its registers (pc, sp, x29, x30), the return address each function of the chain
//! read for itself (`__builtin_return_address`), and a copy of its stack up to the
//! environment block. The test unwinds each capture offline (the binary as the one module, the
//! copy as memory) and checks the frames against what the program recorded: the pc, then
//! each return address, recovered from the link register for the leaf and from CFI above it,
//! named (through the Symbolizer) as the functions the program went through, up to `main` and
//! on to the root.
//!
//! Needs `qemu-aarch64` (Debian `qemu-user`) or `qemu-aarch64-static`: skipped with a note
//! without it, a failure under CI.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use stacksym::elf::ElfFile;
use stacksym::unwind::{
    Modules, Recovery, RegsAarch64, StackCopy, StopReason, UnwindCache, Unwinder,
};
use stacksym::{AbsAddr, Input, Source, Symbolizer};
use support::{find_tool, skip_or_fail, writeln_stderr};

/// One capture the program wrote.
#[derive(Debug)]
struct Capture {
    /// 0: the chain without pointer authentication, 1: with pac-ret.
    variant: u64,
    pc: u64,
    sp: u64,
    x29: u64,
    x30: u64,
    /// The return address of each function from the leaf up (authentication code stripped).
    returns: Vec<u64>,
    stack: Vec<u8>,
}

/// Reads the captures: per capture "A64STACK", then u64 words (see aarch64-capture.c).
fn parse(mut bytes: &[u8]) -> Vec<Capture> {
    let word = |bytes: &mut &[u8]| -> u64 {
        let (head, rest) = bytes.split_at(8);
        *bytes = rest;
        u64::from_le_bytes(head.try_into().unwrap())
    };
    let mut captures = Vec::new();
    while !bytes.is_empty() {
        assert_eq!(&bytes[..8], b"A64STACK", "capture {} magic", captures.len());
        bytes = &bytes[8..];
        let variant = word(&mut bytes);
        let (pc, sp, x29, x30) = (
            word(&mut bytes),
            word(&mut bytes),
            word(&mut bytes),
            word(&mut bytes),
        );
        let n = word(&mut bytes);
        let returns = (0..n).map(|_| word(&mut bytes)).collect();
        let len = word(&mut bytes) as usize;
        let (stack, rest) = bytes.split_at(len);
        bytes = rest;
        captures.push(Capture {
            variant,
            pc,
            sp,
            x29,
            x30,
            returns,
            stack: stack.to_vec(),
        });
    }
    captures
}

/// The chain the program went through, leaf first, for one variant's suffix.
fn expected_chain(suffix: &str) -> Vec<String> {
    let chain = [
        "capture_leaf",
        "chain_fp_e",
        "chain_nofp_d",
        "chain_vla_c",
        "chain_nofp_b",
        "chain_fp_a",
    ];
    let mut names: Vec<String> = chain.iter().map(|f| format!("{f}_{suffix}")).collect();
    names.push("main".to_string());
    names
}

#[test]
fn aarch64_capture_under_qemu_unwinds_to_the_chain_it_recorded() {
    let test = "aarch64_capture_under_qemu_unwinds_to_the_chain_it_recorded";
    let Some(qemu) = find_tool("qemu-aarch64").or_else(|| find_tool("qemu-aarch64-static")) else {
        return skip_or_fail(
            test,
            "qemu-aarch64 not found (apt-get install qemu-user, or qemu-user-static)",
        );
    };
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/unwind/aarch64-capture");
    let dir = tempfile::tempdir().expect("a temporary dir");
    let out_path = dir.path().join("capture.bin");
    let run = Command::new(&qemu)
        .arg(&program)
        .arg(&out_path)
        .output()
        .expect("qemu runs");
    assert!(
        run.status.success(),
        "{} {}: {run:?}",
        qemu.display(),
        program.display()
    );
    let captures = parse(&std::fs::read(&out_path).expect("the capture file"));
    assert_eq!(captures.len(), 2, "two captures (plain, pac-ret)");

    let symbolizer = Symbolizer::builder().build();
    let elf: Arc<ElfFile> = symbolizer.elf_file(&program).expect("the program opens");
    // A static non-PIE program: each PT_LOAD segment is mapped at its own virtual address.
    let mut modules = Modules::new();
    for load in elf.segments().loads() {
        let start = load.virt_addr.0;
        modules.add(
            AbsAddr(start)..AbsAddr(start + load.mem_size),
            load.file_offset,
            Arc::clone(&elf),
        );
    }
    let unwinder = Unwinder::new(modules);

    for capture in &captures {
        let suffix = ["plain", "pac"][capture.variant as usize];
        let regs = RegsAarch64::new(capture.pc, capture.sp, capture.x29, capture.x30);
        let memory = StackCopy::new(AbsAddr(capture.sp), &capture.stack);
        let stack = unwinder.unwind(&regs, &memory, &mut UnwindCache::new());
        let lookups: Vec<u64> = stack.frames.iter().map(|f| f.lookup_addr().0).collect();
        let symbols = symbolizer
            .symbolize(
                &Source::Elf { path: &program },
                Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&lookups)),
            )
            .expect("symbolized");
        let names: Vec<String> = (0..lookups.len())
            .map(|i| {
                symbols
                    .get(i)
                    .map_or("??".to_string(), |s| s.name.to_string())
            })
            .collect();
        writeln_stderr(format_args!(
            "{test}: {suffix}: {} frames, stop {:?}, stack copy {} bytes",
            stack.frames.len(),
            stack.stop,
            capture.stack.len()
        ));
        for (frame, name) in stack.frames.iter().zip(&names) {
            writeln_stderr(format_args!(
                "    {:#x} {:?} {name}",
                frame.addr, frame.recovered
            ));
        }

        // The addresses: the pc, then every return address the chain recorded.
        let ours: Vec<u64> = stack.frames.iter().map(|f| f.addr.0).collect();
        let mut recorded = vec![capture.pc];
        recorded.extend(&capture.returns);
        assert!(
            ours.starts_with(&recorded),
            "{suffix}: frames {ours:#x?}, the program recorded {recorded:#x?}"
        );
        // How: the leaf's caller from the link register, the others from CFI.
        let recoveries: Vec<Recovery> = stack.frames.iter().map(|f| f.recovered).collect();
        let mut expected = vec![Recovery::Registers, Recovery::LinkRegister];
        expected.resize(recorded.len(), Recovery::Cfi);
        assert_eq!(&recoveries[..recorded.len()], &expected[..], "{suffix}");
        // The names: the chain, then main, then libc's start code to the root.
        let chain = expected_chain(suffix);
        assert_eq!(&names[..chain.len()], &chain[..], "{suffix}: {names:?}");
        assert_eq!(
            names.last().map(String::as_str),
            Some("_start"),
            "{suffix}: {names:?}"
        );
        assert_eq!(stack.stop, StopReason::Root, "{suffix}");

        // With pac-ret, the saved return addresses carry an authentication code (qemu's
        // default CPU has pointer authentication): the stripping above was exercised.
        let signed = capture
            .stack
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .filter(|w| w >> 48 != 0 && capture.returns.contains(&(w & ((1 << 48) - 1))))
            .count();
        writeln_stderr(format_args!(
            "    {signed} saved return addresses with an authentication code"
        ));
        if capture.variant == 1 {
            assert!(
                signed >= 4,
                "{suffix}: only {signed} signed return addresses"
            );
        } else {
            assert_eq!(
                signed, 0,
                "{suffix}: signed return addresses without pac-ret"
            );
        }
    }
}
