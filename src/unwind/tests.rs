//! Each rule kind on synthetic stacks for both architectures, with CFI written by hand into
//! small ELF files (`tests/support/cfi_elf.rs`), and bad input: garbage registers and
//! stacks, cyclic frame pointers, absurd CFI offsets, expression loops.

use std::sync::Arc;

use super::*;
use crate::addr::FileOffset;
use crate::elf::ElfFile;
use aarch64::RuleAarch64;
use x86_64::{RuleX86_64, SavedX86_64};

#[path = "../../tests/support/cfi_elf.rs"]
mod cfi_elf;
use cfi_elf::{cfi_section, elf_with_cfi, CfiKind, Cie, TEXT_OFFSET};

/// Where the synthetic files are "loaded" (a PIE's bias).
const BASE: u64 = 0x5555_0000_0000;
/// Where the synthetic stack copies start.
const SP: u64 = 0x7fff_0000_0000;

fn code(offset: u64) -> u64 {
    BASE + TEXT_OFFSET + offset
}

/// [`code`] as the absolute address the unwinder answers.
fn abs(offset: u64) -> AbsAddr {
    AbsAddr(code(offset))
}

fn module(machine: u16, text: &[u8], kind: CfiKind, cfi: &[u8]) -> Unwinder {
    let bytes = elf_with_cfi(machine, text, kind, cfi);
    let len = bytes.len() as u64;
    let elf = ElfFile::from_bytes("synthetic", bytes).expect("the builder writes valid ELF");
    let mut modules = Modules::new();
    modules.add(
        AbsAddr(BASE)..AbsAddr(BASE + len),
        FileOffset(0),
        Arc::new(elf),
    );
    Unwinder::new(modules)
}

/// A stack copy from [`SP`] with `words` (offset from SP, value) written.
fn stack(len: usize, words: &[(u64, u64)]) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    for &(offset, value) in words {
        let at = offset as usize;
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }
    bytes
}

fn addrs(stack: &Stack) -> Vec<(u64, bool, Recovery)> {
    stack
        .frames
        .iter()
        .map(|f| (f.addr.0, f.is_return_address(), f.recovered))
        .collect()
}

// ------------------------------------------------------------------------ x86_64

/// x86_64 CIE: CFA = rsp + 8, return address at CFA − 8 (the state at a call's target).
const X86_CIE: &[u8] = &[0x0c, 7, 8, 0x90, 1];

/// Functions of the x86_64 file, by text offset:
/// - 0x000..0x100 `framed`: push rbp (1 byte); mov rsp, rbp (3 bytes); then CFA = rbp + 16
/// - 0x100..0x200 `root`: the return address is undefined
/// - 0x200..0x300 `plt`: CFA = rsp + 16 for the first 6 bytes, then the PLT expression
/// - 0x300..0x400 `realigned`: CFA = [rbp − 8], rbp at [rbp] (gcc's stack realignment)
/// - 0x400..0x500 `absurd`: CFA = rsp + 2^40
/// - 0x500..0x600 `looping`: a CFA expression that jumps to itself
/// - 0x600..0x700: no FDE (frame pointer fallback; at 0x680 a sigreturn trampoline)
/// - 0x700..0x800 `saves_rbx`: push rbx (1 byte); then CFA = rsp + 16, rbx at CFA − 16
///   (as glibc's `_dl_fixup`)
/// - 0x800..0x900 `rbx_frame`: CFA = rbx + 16, rbx at CFA − 16 (as glibc's
///   `_dl_runtime_resolve_xsavec`, which keeps its realigned frame's base in rbx)
fn x86_64_cfi(kind: CfiKind) -> Vec<u8> {
    let t = TEXT_OFFSET;
    let plt_expr = [
        0x0e, 16, 0x46, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
    ];
    let fdes: &[(u64, u64, &[u8])] = &[
        (t, 0x100, &[0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6]),
        (t + 0x100, 0x100, &[0x07, 16]),
        (t + 0x200, 0x100, &plt_expr),
        (
            t + 0x300,
            0x100,
            &[0x0f, 3, 0x76, 0x78, 0x06, 0x10, 6, 2, 0x76, 0x00],
        ),
        (
            t + 0x400,
            0x100,
            &[0x0e, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20],
        ),
        (t + 0x500, 0x100, &[0x0f, 3, 0x2f, 0xfd, 0xff]),
        (t + 0x700, 0x100, &[0x41, 0x0e, 16, 0x83, 2]),
        (t + 0x800, 0x100, &[0x0c, 3, 16, 0x83, 2]),
    ];
    let augmentation = match kind {
        CfiKind::EhFrame => "z",
        CfiKind::DebugFrame => "",
    };
    let cie = Cie {
        augmentation,
        code_align: 1,
        data_align: -8,
        ra_register: 16,
        instructions: X86_CIE,
    };
    cfi_section(kind, &cie, fdes)
}

fn x86_64_text() -> Vec<u8> {
    let mut text = vec![0x90u8; 0x900];
    // `framed` starts with an instruction the prologue decoder does not know (int3), so
    // that a file without CFI falls back to the frame pointer inside it (unwind/prologue.rs
    // would otherwise read the NOPs as a prologue that pushed nothing).
    text[0] = 0xcc;
    text[0x680..0x689].copy_from_slice(&[0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05]);
    text
}

fn x86_64_unwinder(kind: CfiKind) -> Unwinder {
    module(62, &x86_64_text(), kind, &x86_64_cfi(kind))
}

#[test]
fn compiled_rules_are_small() {
    assert_eq!(std::mem::size_of::<RuleX86_64>(), 8);
    assert_eq!(std::mem::size_of::<RuleAarch64>(), 12);
    assert_eq!(std::mem::size_of::<Option<RuleX86_64>>(), 8);
}

fn compiled_x86_64(unwinder: &Unwinder, offset: u64) -> Option<RuleX86_64> {
    let module = unwinder.modules().find(abs(offset)).expect("mapped");
    let cfi = unwinder.modules().cfi(module).expect("its CFI");
    let mut ctx = CfiContext::new();
    let virt = module
        .virt_addr(cfi.elf(), abs(offset))
        .expect("in a segment");
    cfi.find_row(virt, &mut ctx, RegsX86_64::compile)
        .expect("well-formed")
}

#[test]
fn x86_64_rows_compile_to_each_rule_kind() {
    for kind in [CfiKind::EhFrame, CfiKind::DebugFrame] {
        let unwinder = x86_64_unwinder(kind);
        let rule = |offset| compiled_x86_64(&unwinder, offset);
        let sp = |cfa_offset, bp_offset| RuleX86_64::CfaSp {
            cfa_offset,
            bp_offset,
            saved: SavedX86_64::NONE,
        };
        assert_eq!(rule(0), Some(sp(8, 0)), "{kind:?}");
        assert_eq!(rule(1), Some(sp(16, -16)));
        assert_eq!(
            rule(4),
            Some(RuleX86_64::CfaBp {
                cfa_offset: 16,
                bp_offset: -16,
                saved: SavedX86_64::NONE,
            })
        );
        assert_eq!(rule(0x100), Some(RuleX86_64::Root));
        assert_eq!(rule(0x203), Some(sp(16, 0)));
        assert_eq!(
            rule(0x206),
            Some(RuleX86_64::Plt {
                sp_offset: 8,
                threshold: 11
            })
        );
        assert_eq!(
            rule(0x300),
            Some(RuleX86_64::Full),
            "realignment expression"
        );
        assert_eq!(rule(0x400), Some(RuleX86_64::Full), "offset beyond i32");
        assert_eq!(rule(0x600), None, "no FDE");
        assert_eq!(rule(0x700), Some(sp(8, 0)));
        assert_eq!(
            rule(0x701),
            Some(RuleX86_64::CfaSp {
                cfa_offset: 16,
                bp_offset: 0,
                saved: SavedX86_64::of(&[RegsX86_64::RBX]),
            }),
            "rbx saved"
        );
        assert_eq!(rule(0x800), Some(RuleX86_64::Full), "CFA from rbx");
    }
}

#[test]
fn x86_64_register_saved_by_a_callee_is_restored_for_a_cfa_based_on_it() {
    // glibc's lazy binding: `_dl_runtime_resolve_xsavec` (here `rbx_frame`, CFA = rbx + 16)
    // calls `_dl_fixup` (here `saves_rbx`), which pushed the caller's rbx and then used the
    // register for itself. The caller's CFA needs rbx as `saves_rbx`'s row restores it,
    // not the value sampled inside `saves_rbx`. (Before, the compiled rule kept the
    // sampled rbx: the walk read the return address at 0xdead + 8 and stopped, where perf
    // went on; seen in a cc1 sample of tests/perf_system_wide.rs.)
    for kind in [CfiKind::EhFrame, CfiKind::DebugFrame] {
        let unwinder = x86_64_unwinder(kind);
        let frame = SP + 0x40;
        let bytes = stack(
            0x100,
            &[
                (0, frame),
                (8, code(0x810)),
                (0x40, 0x7777),
                (0x48, code(0x110)),
            ],
        );
        let regs = RegsX86_64::new(code(0x710), SP, 0x1234).with(RegsX86_64::RBX, 0xdead);
        let mut cache = UnwindCache::new();
        for round in 0..2 {
            let result = unwinder.unwind(&regs, &StackCopy::new(AbsAddr(SP), &bytes), &mut cache);
            assert_eq!(
                addrs(&result),
                vec![
                    (code(0x710), false, Recovery::Registers),
                    (code(0x810), true, Recovery::Cfi),
                    (code(0x110), true, Recovery::Cfi),
                ],
                "{kind:?}, round {round} (the second from the cache)"
            );
            assert_eq!(result.stop, StopReason::Root);
        }
        // Unsampled, rbx is still restored from `saves_rbx`'s slot; where nothing saved it, a
        // clear stop.
        let mut no_rbx = regs.clone();
        no_rbx.forget_reg(RegsX86_64::RBX);
        let result = unwinder.unwind(&no_rbx, &StackCopy::new(AbsAddr(SP), &bytes), &mut cache);
        assert_eq!(result.frames.len(), 3, "rbx is restored from the stack");
        let lost = RegsX86_64::new(code(0x810), SP, 0x1234);
        let result = unwinder.unwind(&lost, &StackCopy::new(AbsAddr(SP), &bytes), &mut cache);
        assert_eq!(
            result.stop,
            StopReason::InvalidUnwindInfo {
                addr: abs(0x810),
                what: UnwindProblem::UnknownRegister(RegsX86_64::RBX)
            }
        );
    }
}

#[test]
fn x86_64_cfi_walk_from_entry_through_framed_function_to_root() {
    for kind in [CfiKind::EhFrame, CfiKind::DebugFrame] {
        let unwinder = x86_64_unwinder(kind);
        // Frame 0 at the entry of `framed` (CFA = rsp + 8): [SP] = return address into
        // `framed` after its prologue (CFA = rbp + 16), whose rbp chain holds a return
        // address into `root`.
        let rbp = SP + 0x40;
        let bytes = stack(
            0x100,
            &[(0, code(0x20)), (0x40, 0x1111), (0x48, code(0x110))],
        );
        let regs = RegsX86_64::new(code(0), SP, rbp);
        let mut cache = UnwindCache::new();
        let result = unwinder.unwind(&regs, &StackCopy::new(AbsAddr(SP), &bytes), &mut cache);
        assert_eq!(
            addrs(&result),
            vec![
                (code(0), false, Recovery::Registers),
                (code(0x20), true, Recovery::Cfi),
                (code(0x110), true, Recovery::Cfi),
            ],
            "{kind:?}"
        );
        assert_eq!(result.stop, StopReason::Root);
        // The same walk again is answered from the cache.
        let again = unwinder.unwind(&regs, &StackCopy::new(AbsAddr(SP), &bytes), &mut cache);
        assert_eq!(again, result);
        assert_eq!(cache.stats(), (3, 3));
    }
}

#[test]
fn x86_64_plt_expression_depends_on_the_offset_in_the_entry() {
    let unwinder = x86_64_unwinder(CfiKind::EhFrame);
    let bytes = stack(0x40, &[(8, code(0x110)), (16, code(0x120))]);
    let mut cache = UnwindCache::new();
    // At 0x206 & 15 = 6 < 11: CFA = rsp + 8, the return address at [rsp].
    let early = RegsX86_64::new(code(0x206), SP + 8 - 8, 0);
    let bytes_early = stack(0x40, &[(0, code(0x110))]);
    let result = unwinder.unwind(
        &early,
        &StackCopy::new(AbsAddr(SP), &bytes_early),
        &mut cache,
    );
    assert_eq!(result.frames[1].addr, abs(0x110));
    // At 0x20b: CFA = rsp + 16 (the entry pushed its relocation index).
    let late = RegsX86_64::new(code(0x20b), SP, 0);
    let result = unwinder.unwind(&late, &StackCopy::new(AbsAddr(SP), &bytes), &mut cache);
    assert_eq!(result.frames[1].addr, abs(0x110));
    assert_eq!(result.stop, StopReason::Root);
}

#[test]
fn x86_64_realigned_frame_reads_the_cfa_from_memory() {
    let unwinder = x86_64_unwinder(CfiKind::EhFrame);
    // rbp = SP + 0x20: [rbp − 8] = CFA = SP + 0x60, [rbp] = caller's rbp; the return
    // address at CFA − 8.
    let bytes = stack(
        0x100,
        &[(0x18, SP + 0x60), (0x20, 0x4242), (0x58, code(0x150))],
    );
    let regs = RegsX86_64::new(code(0x310), SP, SP + 0x20);
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(addrs(&result)[1..], [(code(0x150), true, Recovery::Cfi)]);
    assert_eq!(result.stop, StopReason::Root);
}

#[test]
fn x86_64_absurd_offsets_and_expression_loops_stop_with_a_reason() {
    let unwinder = x86_64_unwinder(CfiKind::EhFrame);
    let bytes = stack(0x40, &[]);
    let mut cache = UnwindCache::new();
    let absurd = RegsX86_64::new(code(0x410), SP, 0);
    let result = unwinder.unwind(&absurd, &StackCopy::new(AbsAddr(SP), &bytes), &mut cache);
    assert_eq!(result.frames.len(), 1);
    assert!(
        matches!(result.stop, StopReason::MemoryUnreadable { .. }),
        "{:?}",
        result.stop
    );
    let looping = RegsX86_64::new(code(0x510), SP, 0);
    let result = unwinder.unwind(&looping, &StackCopy::new(AbsAddr(SP), &bytes), &mut cache);
    assert_eq!(
        result.stop,
        StopReason::InvalidUnwindInfo {
            addr: abs(0x510),
            what: UnwindProblem::Expression(expr::ExprError::TooManySteps)
        }
    );
}

#[test]
fn x86_64_frame_pointer_fallback_and_cycles() {
    let unwinder = x86_64_unwinder(CfiKind::EhFrame);
    // No FDE at 0x610: the frame pointer gives the caller, `framed` after its prologue,
    // whose CFA = rbp + 16 then lands in `root`.
    let bytes = stack(
        0x100,
        &[(0x10, SP + 0x40), (0x18, code(0x30)), (0x48, code(0x110))],
    );
    let regs = RegsX86_64::new(code(0x610), SP, SP + 0x10);
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result),
        vec![
            (code(0x610), false, Recovery::Registers),
            (code(0x30), true, Recovery::FramePointer),
            (code(0x110), true, Recovery::Cfi),
        ]
    );
    // A frame pointer that points at itself: the frame-pointer walk stops, bounded.
    let cyclic = stack(0x40, &[(0x10, SP + 0x10), (0x18, code(0x610))]);
    let regs = RegsX86_64::new(code(0x610), SP, SP + 0x10);
    for fp_only in [false, true] {
        let memory = StackCopy::new(AbsAddr(SP), &cyclic);
        let mut cache = UnwindCache::new();
        let result = if fp_only {
            unwinder.unwind_frame_pointers(&regs, &memory, &mut cache)
        } else {
            unwinder.unwind(&regs, &memory, &mut cache)
        };
        assert!(result.frames.len() <= 3, "{result:?}");
        assert_ne!(result.stop, StopReason::DepthLimit);
    }
    // Without the fallback, no CFI is the end.
    let strict = Unwinder::with_options(
        Modules::new(),
        UnwindOptions {
            frame_pointer_fallback: false,
            ..UnwindOptions::default()
        },
    );
    let result = strict.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(result.stop, StopReason::NoUnwindInfo { addr: abs(0x610) });
}

/// A file whose CFI gimli cannot read at some PCs, beside V8's CIE (`zLR` with no LSDA):
/// - 0x000..0x100: `framed`'s rows (after 0x13: CFA = rbp + 16), under a "zLR" CIE
/// - 0x100..0x200: an FDE whose instructions hold an opcode that does not exist (0x3d)
fn x86_64_unreadable_cfi_unwinder(options: UnwindOptions) -> Unwinder {
    let t = TEXT_OFFSET;
    let cie = Cie {
        augmentation: "zLR",
        code_align: 1,
        data_align: -8,
        ra_register: 16,
        instructions: X86_CIE,
    };
    let fdes: &[(u64, u64, &[u8])] = &[
        (t, 0x100, &[0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6]),
        (t + 0x100, 0x100, &[0x3d]),
    ];
    let cfi = cfi_section(CfiKind::EhFrame, &cie, fdes);
    // int3: no prologue the decoder knows, so only CFI or the frame pointer step.
    let bytes = elf_with_cfi(62, &[0xcc; 0x200], CfiKind::EhFrame, &cfi);
    let len = bytes.len() as u64;
    let elf = ElfFile::from_bytes("synthetic", bytes).expect("the builder writes valid ELF");
    let mut modules = Modules::new();
    modules.add(
        AbsAddr(BASE)..AbsAddr(BASE + len),
        FileOffset(0),
        Arc::new(elf),
    );
    Unwinder::with_options(modules, options)
}

#[test]
fn x86_64_unreadable_cfi_falls_back_to_the_frame_pointer() {
    let unwinder = x86_64_unreadable_cfi_unwinder(UnwindOptions::default());
    // 0x110: unreadable CFI, so the frame pointer; 0x30: V8's CIE, read by CFI; 0x130:
    // the frame pointer again, to the root.
    let bytes = stack(
        0x100,
        &[
            (0x10, SP + 0x40),
            (0x18, code(0x30)),
            (0x40, SP + 0x60),
            (0x48, code(0x130)),
        ],
    );
    let regs = RegsX86_64::new(code(0x110), SP, SP + 0x10);
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result),
        vec![
            (code(0x110), false, Recovery::Registers),
            (code(0x30), true, Recovery::FramePointer),
            (code(0x130), true, Recovery::Cfi),
        ]
    );
    assert_eq!(result.stop, StopReason::Root);
    // A frame pointer that leaves the stack copy: a clean stop there (the return address
    // above it is read first).
    let regs = RegsX86_64::new(code(0x110), SP, SP + 0x1000);
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(result.frames.len(), 1);
    assert_eq!(
        result.stop,
        StopReason::MemoryUnreadable {
            addr: AbsAddr(SP + 0x1008)
        }
    );
    // Without the fallback, unreadable CFI stops the walk and says so.
    let strict = x86_64_unreadable_cfi_unwinder(UnwindOptions {
        frame_pointer_fallback: false,
        ..UnwindOptions::default()
    });
    let regs = RegsX86_64::new(code(0x110), SP, SP + 0x10);
    let result = strict.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        result.stop,
        StopReason::InvalidUnwindInfo {
            addr: abs(0x110),
            what: UnwindProblem::MalformedCfi
        }
    );
}

/// perf inject's ELF files of V8 code (testdata/jit/record-node.sh): `jitted-fib.so`, whose
/// `.eh_frame` has V8's "zLR" CIE (its FDE covers 0x80..0x1fe: CFA = rbp + 16 from 0x92 to
/// 0x196), and `jitted-builtin.so`, with an empty `.eh_frame` (walked by frame pointer).
/// perf maps each at the code's address from file offset 0x80.
#[test]
fn perf_inject_jitted_files_unwind() {
    const FIB: u64 = 0x7f00_0000_0000;
    const BUILTIN: u64 = 0x7f00_0001_0000;
    let open = |name: &str| {
        let path = format!("{}/testdata/jit/{name}", env!("CARGO_MANIFEST_DIR"));
        Arc::new(ElfFile::open(path).expect("testdata/jit"))
    };
    let mut modules = Modules::new();
    modules.add(
        AbsAddr(FIB)..AbsAddr(FIB + 0x180),
        FileOffset(0x80),
        open("jitted-fib.so"),
    );
    modules.add(
        AbsAddr(BUILTIN)..AbsAddr(BUILTIN + 0xcc),
        FileOffset(0x80),
        open("jitted-builtin.so"),
    );
    let unwinder = Unwinder::new(modules);
    // fib at 0x100 → the builtin (by fib's CFI) → fib at 0xb0 (by the frame pointer) → root.
    let bytes = stack(
        0x100,
        &[
            (0x20, SP + 0x40),
            (0x28, BUILTIN + 0x20),
            (0x40, SP + 0x60),
            (0x48, FIB + 0x30),
        ],
    );
    let regs = RegsX86_64::new(FIB + 0x80, SP, SP + 0x20);
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result),
        vec![
            (FIB + 0x80, false, Recovery::Registers),
            (BUILTIN + 0x20, true, Recovery::Cfi),
            (FIB + 0x30, true, Recovery::FramePointer),
        ]
    );
    assert_eq!(result.stop, StopReason::Root);
}

/// A jitdump of V8's `fib` made from perf inject's `jitted-fib.so` (its code, `.eh_frame`
/// and `.eh_frame_hdr`, which genelf copied from the dump's JIT_CODE_UNWINDING_INFO): one
/// JIT_CODE_UNWINDING_INFO (the tables, `.eh_frame` first as V8 writes them) and the
/// JIT_CODE_LOAD of the code at `addr`, at time 1; `reload`: then another load (16 bytes, no
/// tables) at the same address, at time 2.
fn fib_jitdump(addr: u64, reload: bool) -> crate::process::JitDump {
    let path = format!("{}/testdata/jit/jitted-fib.so", env!("CARGO_MANIFEST_DIR"));
    let elf = ElfFile::open(path).expect("testdata/jit");
    let section = |name| {
        elf.section_data(name)
            .expect(name)
            .expect(name)
            .into_owned()
    };
    let (code, eh_frame, hdr) = (
        section(".text"),
        section(".eh_frame"),
        section(".eh_frame_hdr"),
    );
    let mut file = Vec::new();
    for word in [0x4A69_5444u32, 1, 40, 62, 0, 42] {
        file.extend(word.to_le_bytes());
    }
    file.extend([0u8; 16]);
    let tables = [eh_frame, hdr.clone()].concat();
    let padded = (24 + tables.len()).next_multiple_of(8);
    file.extend(4u32.to_le_bytes()); // JIT_CODE_UNWINDING_INFO
    file.extend((16 + padded as u32).to_le_bytes());
    file.extend(1u64.to_le_bytes());
    for word in [tables.len() as u64, hdr.len() as u64, tables.len() as u64] {
        file.extend(word.to_le_bytes());
    }
    file.extend(&tables);
    file.resize(file.len() + padded - 24 - tables.len(), 0);
    let name = b"JS:*fib /app.js:1:13\0";
    file.extend(0u32.to_le_bytes()); // JIT_CODE_LOAD
    file.extend((16 + 40 + name.len() as u32 + code.len() as u32).to_le_bytes());
    file.extend(1u64.to_le_bytes());
    file.extend([42u32, 42].iter().flat_map(|w| w.to_le_bytes()));
    for word in [addr, addr, code.len() as u64, 7] {
        file.extend(word.to_le_bytes());
    }
    file.extend(name);
    file.extend(&code);
    if reload {
        file.extend(0u32.to_le_bytes());
        file.extend((16u32 + 40 + 2 + 16).to_le_bytes());
        file.extend(2u64.to_le_bytes());
        file.extend([42u32, 42].iter().flat_map(|w| w.to_le_bytes()));
        for word in [addr, addr, 16, 8] {
            file.extend(word.to_le_bytes());
        }
        file.extend(b"g\0");
        file.extend([0xc3u8; 16]);
    }
    crate::process::parse_jitdump("jit-42.dump".as_ref(), &file).expect("a valid dump")
}

/// The jitdump's own tables unwind V8's code as perf inject's file of them does: the same
/// walk as `perf_inject_jitted_files_unwind`, fib's frame by its CFI (not by the frame
/// pointer, which the stack here would follow elsewhere).
#[test]
fn jitdump_unwinding_info_unwinds_as_perf_injects_file() {
    const FIB: u64 = 0x7f00_0000_0000;
    const BUILTIN: u64 = 0x7f00_0001_0000;
    let dump = fib_jitdump(FIB, false);
    let mut modules = Modules::new();
    assert!(modules.add_jit_code(&dump.nth(0).expect("one load")));
    let path = format!(
        "{}/testdata/jit/jitted-builtin.so",
        env!("CARGO_MANIFEST_DIR")
    );
    let builtin = Arc::new(ElfFile::open(path).expect("testdata/jit"));
    modules.add(
        AbsAddr(BUILTIN)..AbsAddr(BUILTIN + 0xcc),
        FileOffset(0x80),
        builtin,
    );
    let unwinder = Unwinder::new(modules);
    // Code offset 0x80 (virt 0x100 in the .so): CFA = rbp + 16.
    let bytes = stack(
        0x100,
        &[
            (0x20, SP + 0x40),
            (0x28, BUILTIN + 0x20),
            (0x40, SP + 0x60),
            (0x48, FIB + 0x30),
        ],
    );
    let regs = RegsX86_64::new(FIB + 0x80, SP, SP + 0x20);
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result),
        vec![
            (FIB + 0x80, false, Recovery::Registers),
            (BUILTIN + 0x20, true, Recovery::Cfi),
            (FIB + 0x30, true, Recovery::FramePointer),
        ]
    );
    assert_eq!(result.stop, StopReason::Root);
    // Code offset 2, before the frame is set up (CFA = rbp + 16 only from offset 0x12):
    // the CIE's initial row, CFA = rsp + 8, the return address at the stack pointer, where
    // the frame pointer (rbp = SP + 0x20) would not find it.
    let bytes = stack(0x40, &[(0, BUILTIN + 0x20), (0x20, SP + 0x40)]);
    let regs = RegsX86_64::new(FIB + 2, SP, SP + 0x20);
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result).get(1),
        Some(&(BUILTIN + 0x20, true, Recovery::Cfi)),
        "{result:?}"
    );
}

/// A load without tables adds nothing and removes the earlier code's tables at its
/// addresses; code over a mapped file leaves the file's CFI.
#[test]
fn jitdump_code_without_tables_replaces_earlier_code() {
    const FIB: u64 = 0x7f00_0000_0000;
    let dump = fib_jitdump(FIB, true);
    let fib = dump.nth(0).expect("fib");
    assert!(fib.unwinding_info().is_some_and(|u| !u.code.is_empty()));
    let reloaded = dump.nth(1).expect("the second load");
    assert!(reloaded.unwinding_info().is_none());
    let mut modules = Modules::new();
    assert!(modules.add_jit_code(&fib));
    assert_eq!(modules.iter().count(), 1);
    assert!(!modules.add_jit_code(&reloaded));
    assert_eq!(modules.iter().count(), 0);
    // Over a file's mapping: refused.
    let path = format!(
        "{}/testdata/jit/jitted-builtin.so",
        env!("CARGO_MANIFEST_DIR")
    );
    let file = Arc::new(ElfFile::open(path).expect("testdata/jit"));
    modules.add(AbsAddr(FIB)..AbsAddr(FIB + 0x1000), FileOffset(0), file);
    assert!(!modules.add_jit_code(&fib));
    let ranges: Vec<(u64, u64)> = modules
        .iter()
        .map(|m| (m.range.start.0, m.range.end.0))
        .collect();
    assert_eq!(ranges, [(FIB, FIB + 0x1000)]);
}

#[test]
fn x86_64_depth_limit() {
    let unwinder = Unwinder::with_options(
        Modules::new(),
        UnwindOptions {
            max_frames: 3,
            ..UnwindOptions::default()
        },
    );
    // An endless, growing frame-pointer chain.
    let words: Vec<(u64, u64)> = (0..16)
        .flat_map(|i| [(i * 16, SP + (i + 1) * 16), (i * 16 + 8, 0x1000 + i)])
        .collect();
    let bytes = stack(0x200, &words);
    let regs = RegsX86_64::new(0x999, SP, SP);
    let result = unwinder.unwind_frame_pointers(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(result.frames.len(), 3);
    assert_eq!(result.stop, StopReason::DepthLimit);
}

/// glibc's `__restore_rt` row: a "zS" CIE, CFA = [rsp + 160], and every register from its
/// slot in the ucontext at rsp (gregs 40 bytes in, r8..r15, rdi, rsi, rbp, rbx, rdx, rax,
/// rcx, rsp, rip: rbp at 120, rsp at 160, rip at 168); or, `partial`, only rip, rbp and rsp.
fn restore_rt_row(partial: bool) -> Vec<u8> {
    let mut row = vec![0x0f, 4, 0x77, 0xa0, 0x01, 0x06]; // CFA = [rsp + 160]
    const GREGS: [u8; 17] = [8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7, 16];
    for (i, &reg) in GREGS.iter().enumerate() {
        if partial && ![6, 7, 16].contains(&reg) {
            continue;
        }
        let offset = 40 + 8 * i as u8; // DW_CFA_expression reg: DW_OP_breg7 offset
        if offset < 64 {
            row.extend([0x10, reg, 2, 0x77, offset]);
        } else {
            row.extend([0x10, reg, 3, 0x77, 0x80 | (offset & 0x7f), offset >> 7]);
        }
    }
    row
}

/// A signal trampoline with CFI (glibc's `__restore_rt`, complete: a compiled rule; partial:
/// evaluated in full): the interrupted address is not decremented, registers come from the
/// ucontext.
#[test]
fn x86_64_signal_frame_by_cfi_restores_the_ucontext_without_decrementing() {
    for partial in [false, true] {
        let t = TEXT_OFFSET;
        let trampoline = &restore_rt_row(partial)[..];
        let cie = Cie {
            augmentation: "zS",
            code_align: 1,
            data_align: -8,
            ra_register: 16,
            instructions: &[],
        };
        let cfi = cfi_section(CfiKind::EhFrame, &cie, &[(t + 0x7f, 0x11, trampoline)]);
        let signal_module = module(62, &[0x90; 0x100], CfiKind::EhFrame, &cfi);
        // Both files in one address space: the trampoline's file at BASE2.
        const BASE2: u64 = 0x6666_0000_0000;
        let mut modules = Modules::new();
        let main = x86_64_unwinder(CfiKind::EhFrame);
        for m in main.modules().iter() {
            let elf = Arc::clone(main.modules().elf(m).expect("file"));
            modules.add(m.range.clone(), m.file_offset, elf);
        }
        for m in signal_module.modules().iter() {
            let elf = Arc::clone(signal_module.modules().elf(m).expect("file"));
            modules.add(
                AbsAddr(BASE2)..AbsAddr(BASE2 + (m.range.end.0 - m.range.start.0)),
                FileOffset(0),
                elf,
            );
        }
        let unwinder = Unwinder::new(modules);
        // The handler (frame 0 at `framed`'s entry) returns into the trampoline at 0x80; the
        // ucontext says the signal interrupted `framed` at its entry (offset 0, which a
        // decremented lookup would miss) with rsp pointing at a return address into `root`.
        let interrupted_sp = SP + 0x200;
        let bytes = stack(
            0x300,
            &[
                (0, BASE2 + t + 0x80),
                (8 + 120, 0x5555),
                (8 + 160, interrupted_sp),
                (8 + 168, code(0)),
                (0x200, code(0x120)),
            ],
        );
        let regs = RegsX86_64::new(code(0), SP, 0);
        let result = unwinder.unwind(
            &regs,
            &StackCopy::new(AbsAddr(SP), &bytes),
            &mut UnwindCache::new(),
        );
        assert_eq!(
            addrs(&result),
            vec![
                (code(0), false, Recovery::Registers),
                (BASE2 + t + 0x80, true, Recovery::Cfi),
                (code(0), false, Recovery::Cfi),
                (code(0x120), true, Recovery::Cfi),
            ],
            "partial {partial}"
        );
        // The trampoline is looked up at its own address (its first instruction), the
        // interrupted code at the exact address, the caller below it at its return address - 1.
        let kinds: Vec<(FrameKind, u64)> = result
            .frames
            .iter()
            .map(|f| (f.kind, f.lookup_addr().0))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (FrameKind::InstructionPointer, code(0)),
                (FrameKind::SignalTrampoline, BASE2 + t + 0x80),
                (FrameKind::InstructionPointer, code(0)),
                (FrameKind::ReturnAddress, code(0x120) - 1),
            ]
        );
        assert_eq!(result.stop, StopReason::Root);
        let module = unwinder
            .modules()
            .find(AbsAddr(BASE2 + t + 0x80))
            .expect("mapped");
        let cfi = unwinder.modules().cfi(module).expect("its CFI");
        let virt = module
            .virt_addr(cfi.elf(), AbsAddr(BASE2 + t + 0x80))
            .expect("in a segment");
        let rule = cfi.find_row(virt, &mut CfiContext::new(), RegsX86_64::compile);
        let expected = if partial {
            RuleX86_64::Full
        } else {
            RuleX86_64::SignalContext
        };
        assert_eq!(rule.expect("well-formed"), Some(expected));
    }
}

#[test]
fn x86_64_signal_trampoline_without_cfi_found_by_its_code() {
    let unwinder = x86_64_unwinder(CfiKind::EhFrame);
    // Frame 0 in the handler at `framed`'s entry returns into the sigreturn code at 0x680
    // (no FDE); the ucontext at the trampoline's rsp (SP + 8) holds rip = `framed` + 0 and
    // rsp pointing at a return address into `root`.
    let uc = 8;
    let bytes = stack(
        0x300,
        &[
            (0, code(0x680)),
            (uc + 40 + 15 * 8, SP + 0x200),
            (uc + 40 + 16 * 8, code(0)),
            (0x200, code(0x120)),
        ],
    );
    let regs = RegsX86_64::new(code(0), SP, 0);
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result),
        vec![
            (code(0), false, Recovery::Registers),
            (code(0x680), true, Recovery::Cfi),
            (code(0), false, Recovery::SignalContext),
            (code(0x120), true, Recovery::Cfi),
        ]
    );
}

/// Deterministic pseudo-random numbers (xorshift64).
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn garbage_registers_and_stacks_of_any_length_are_bounded() {
    let x86 = x86_64_unwinder(CfiKind::EhFrame);
    let arm = aarch64_unwinder();
    let mut state = 0x1234_5678_9abc_def1u64;
    for len in (0..600).step_by(7) {
        let bytes: Vec<u8> = (0..len).map(|_| xorshift(&mut state) as u8).collect();
        // Stack words that point into the code and into the stack, to get some steps.
        let mut bytes = bytes;
        for chunk in bytes.chunks_exact_mut(8) {
            let pick = xorshift(&mut state);
            let word = match pick % 4 {
                0 => code(pick % 0x700),
                1 => SP + pick % 0x300,
                _ => u64::from_le_bytes(chunk.try_into().unwrap_or_default()),
            };
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        let memory = StackCopy::new(AbsAddr(SP), &bytes);
        let ip = code(xorshift(&mut state) % 0x700);
        let regs = RegsX86_64::new(ip, SP + xorshift(&mut state) % 16, xorshift(&mut state));
        for result in [
            x86.unwind(&regs, &memory, &mut UnwindCache::new()),
            x86.unwind_frame_pointers(&regs, &memory, &mut UnwindCache::new()),
        ] {
            assert!(!result.frames.is_empty() && result.frames.len() <= 256);
        }
        let regs = RegsAarch64::new(ip, SP, xorshift(&mut state), xorshift(&mut state));
        let result = arm.unwind(&regs, &memory, &mut UnwindCache::new());
        assert!(result.frames.len() <= 256);
    }
}

// ------------------------------------------------------------------------ aarch64

/// Functions of the aarch64 file, by text offset (4-byte instructions, code alignment 4):
/// - 0x000..0x100 `framed`: stp x29, x30, [sp, #-32]!; mov x29, sp; then CFA = x29 + 32
/// - 0x100..0x200 `leaf`: nothing saved, the return address in the link register
/// - 0x200..0x300 `signed`: paciasp (DW_CFA_AARCH64_negate_ra_state), then as `framed`
/// - 0x300..0x400 `root`: x30 undefined
/// - 0x400..0x500 `indirect`: CFA = [sp + 8] (an expression that reads memory: a `Full`
///   rule), x29 at CFA − 16, x30 at CFA − 8
/// - 0x500..0x600: no FDE; at 0x580 the rt_sigreturn trampoline (mov x8, #139; svc #0)
/// - 0x600..0x700 `saves_x19`: after one instruction CFA = sp + 16, x19 at CFA − 16, x30 at
///   CFA − 8
/// - 0x700..0x800 `x19_frame`: CFA = x19 + 16, x19 at CFA − 16, x30 at CFA − 8
fn aarch64_unwinder() -> Unwinder {
    let t = TEXT_OFFSET;
    let framed: &[u8] = &[0x41, 0x0e, 32, 0x9d, 4, 0x9e, 3, 0x41, 0x0d, 29];
    let signed: &[u8] = &[0x41, 0x2d, 0x41, 0x0e, 32, 0x9d, 4, 0x9e, 3, 0x41, 0x0d, 29];
    let fdes: &[(u64, u64, &[u8])] = &[
        (t, 0x100, framed),
        (t + 0x100, 0x100, &[]),
        (t + 0x200, 0x100, signed),
        (t + 0x300, 0x100, &[0x07, 30]),
        // DW_CFA_def_cfa_expression { DW_OP_breg31 8; DW_OP_deref }, x29 and x30 saved.
        (
            t + 0x400,
            0x100,
            &[0x0f, 3, 0x8f, 8, 0x06, 0x9d, 2, 0x9e, 1],
        ),
        (t + 0x600, 0x100, &[0x41, 0x0e, 16, 0x93, 2, 0x9e, 1]),
        (t + 0x700, 0x100, &[0x0c, 19, 16, 0x93, 2, 0x9e, 1]),
    ];
    let cie = Cie {
        augmentation: "z",
        code_align: 4,
        data_align: -8,
        ra_register: 30,
        instructions: &[0x0c, 31, 0],
    };
    let cfi = cfi_section(CfiKind::EhFrame, &cie, fdes);
    let mut text = vec![0u8; 0x800];
    let sigreturn = [0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4];
    text[0x380..0x388].copy_from_slice(&sigreturn);
    text[0x580..0x588].copy_from_slice(&sigreturn);
    module(183, &text, CfiKind::EhFrame, &cfi)
}

#[test]
fn aarch64_rows_compile_to_each_rule_kind() {
    let unwinder = aarch64_unwinder();
    let module = unwinder.modules().find(abs(0)).expect("mapped");
    let cfi = unwinder.modules().cfi(module).expect("its CFI");
    let mut ctx = CfiContext::new();
    let mut rule = |offset| {
        cfi.find_row(VirtAddr(TEXT_OFFSET + offset), &mut ctx, |row| {
            RegsAarch64::compile(row)
        })
        .expect("well-formed")
    };
    let cfa = |cfa_from_fp, ra_signed, cfa_offset, fp_offset, lr_offset| RuleAarch64::Cfa {
        cfa_from_fp,
        ra_signed,
        cfa_offset,
        fp_offset,
        lr_offset,
        saves_others: false,
    };
    assert_eq!(rule(0), Some(cfa(false, false, 0, 0, 0)));
    assert_eq!(rule(4), Some(cfa(false, false, 32, -32, -24)));
    assert_eq!(rule(8), Some(cfa(true, false, 32, -32, -24)));
    assert_eq!(rule(0x110), Some(cfa(false, false, 0, 0, 0)));
    assert_eq!(rule(0x204), Some(cfa(false, true, 0, 0, 0)));
    assert_eq!(rule(0x210), Some(cfa(true, true, 32, -32, -24)));
    assert_eq!(rule(0x300), Some(RuleAarch64::Root));
    assert_eq!(rule(0x410), Some(RuleAarch64::Full));
    assert_eq!(rule(0x510), None, "no FDE");
    assert_eq!(
        rule(0x604),
        Some(RuleAarch64::Cfa {
            cfa_from_fp: false,
            ra_signed: false,
            cfa_offset: 16,
            fp_offset: 0,
            lr_offset: -8,
            saves_others: true,
        })
    );
    assert_eq!(rule(0x700), Some(RuleAarch64::Full), "CFA from x19");
}

#[test]
fn aarch64_register_saved_by_a_callee_is_restored_for_a_cfa_based_on_it() {
    // As x86_64's lazy-binding case: `x19_frame`'s CFA is x19 + 16, and its callee
    // `saves_x19` saved x19 and then used the register.
    let unwinder = aarch64_unwinder();
    let frame = SP + 0x40;
    let bytes = stack(
        0x80,
        &[
            (0, frame),
            (8, code(0x710)),
            (0x40, 0x7777),
            (0x48, code(0x310)),
        ],
    );
    let regs = RegsAarch64::new(code(0x604), SP, 0x1111, 0x2222).with(19, 0xdead);
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result),
        vec![
            (code(0x604), false, Recovery::Registers),
            (code(0x710), true, Recovery::Cfi),
            (code(0x310), true, Recovery::Cfi),
        ]
    );
    assert_eq!(result.stop, StopReason::Root);
}

#[test]
fn aarch64_cfa_expression_reading_memory_is_evaluated_in_full() {
    let unwinder = aarch64_unwinder();
    // pc in `indirect`: [SP + 8] holds the CFA, SP + 0x40; x29 and x30 saved below it.
    let bytes = stack(0x80, &[(8, SP + 0x40), (0x30, 0x9999), (0x38, code(0x310))]);
    let regs = RegsAarch64::new(code(0x420), SP, 0x1111, 0x2222);
    let mut cache = UnwindCache::new();
    let result = unwinder.unwind(&regs, &StackCopy::new(AbsAddr(SP), &bytes), &mut cache);
    assert_eq!(
        addrs(&result),
        vec![
            (code(0x420), false, Recovery::Registers),
            (code(0x310), true, Recovery::Cfi),
        ]
    );
    assert_eq!(result.stop, StopReason::Root);
    // The CFA's word unreadable: the walk stops saying where.
    let short = stack(8, &[]);
    let result = unwinder.unwind(&regs, &StackCopy::new(AbsAddr(SP), &short), &mut cache);
    assert_eq!(result.frames.len(), 1);
    assert_eq!(
        result.stop,
        StopReason::MemoryUnreadable {
            addr: AbsAddr(SP + 8)
        }
    );
}

#[test]
fn aarch64_handler_returns_through_the_sigreturn_trampoline_to_the_interrupted_code() {
    let unwinder = aarch64_unwinder();
    // A leaf handler (pc in `leaf`, nothing saved) whose link register is the trampoline
    // at 0x580 (no FDE there); at the trampoline sp points at the rt_sigframe, whose
    // sigcontext (128 + 176 + 8 bytes in) holds the interrupted registers: pc in `framed`
    // after its prologue (CFA = x29 + 32), x29 = sp = SP + 0x300, where the frame record
    // holds a return address into `root`.
    let regs_at = 128 + 176 + 8;
    let bytes = stack(
        0x400,
        &[
            (regs_at + 29 * 8, SP + 0x300),
            (regs_at + 30 * 8, 0x3030),
            (regs_at + 31 * 8, SP + 0x300),
            (regs_at + 32 * 8, code(0x20)),
            (0x300, 0),
            (0x308, code(0x310)),
        ],
    );
    let regs = RegsAarch64::new(code(0x120), SP, 0x1111, code(0x580));
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result),
        vec![
            (code(0x120), false, Recovery::Registers),
            (code(0x580), true, Recovery::LinkRegister),
            // Interrupted, not called: looked up at its own address.
            (code(0x20), false, Recovery::SignalContext),
            (code(0x310), true, Recovery::Cfi),
        ]
    );
    assert_eq!(result.stop, StopReason::Root);
}

#[test]
fn aarch64_leaf_link_register_then_signed_frame_record_then_root() {
    let unwinder = aarch64_unwinder();
    // pc in `leaf` (lr = into `signed` after its prologue); `signed`'s frame record at
    // x29 = SP + 0x20 holds a return address into `root` with a PAC in its top bits.
    let pac = 0x002d_0000_0000_0000;
    let bytes = stack(0x100, &[(0x20, 0x7777), (0x28, pac | code(0x310))]);
    let regs = RegsAarch64::new(code(0x120), SP, SP + 0x20, code(0x214));
    let result = unwinder.unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result),
        vec![
            (code(0x120), false, Recovery::Registers),
            (code(0x214), true, Recovery::LinkRegister),
            (code(0x310), true, Recovery::Cfi),
        ]
    );
    assert_eq!(result.stop, StopReason::Root);
}

#[test]
fn aarch64_frame_pointer_mode_and_signal_context() {
    let unwinder = aarch64_unwinder();
    // Frame records: x29 = SP + 0x10 → (SP + 0x30, ra1), SP + 0x30 → (0, ra2).
    let bytes = stack(
        0x100,
        &[
            (0x10, SP + 0x30),
            (0x18, code(0x20)),
            (0x30, 0),
            (0x38, code(0x40)),
        ],
    );
    let regs = RegsAarch64::new(code(0x120), SP, SP + 0x10, 0);
    let result = unwinder.unwind_frame_pointers(
        &regs,
        &StackCopy::new(AbsAddr(SP), &bytes),
        &mut UnwindCache::new(),
    );
    assert_eq!(
        addrs(&result)[1..],
        [
            (code(0x20), true, Recovery::FramePointer),
            (code(0x40), true, Recovery::FramePointer)
        ]
    );
    assert_eq!(result.stop, StopReason::Root);
    // A handler (leaf) returns to the sigreturn code at 0x380 (no FDE there: the root's
    // range ends at 0x380? no, `root` covers it, so use frame 0 at the trampoline itself).
    let sigframe = 0u64;
    let regs_base = sigframe + 128 + 176 + 8;
    let bytes = stack(
        0x400,
        &[
            (regs_base + 29 * 8, 0),
            (regs_base + 30 * 8, code(0x310)),
            (regs_base + 31 * 8, SP + 0x300),
            (regs_base + 32 * 8, code(0x100)),
        ],
    );
    assert!(RegsAarch64::is_sigreturn(&[
        0x68, 0x11, 0x80, 0xd2, 0x01, 0, 0, 0xd4
    ]));
    let mut regs = RegsAarch64::new(code(0x380), SP, 0, 0);
    regs.restore_signal_context(&StackCopy::new(AbsAddr(SP), &bytes))
        .expect("the ucontext is in the copy");
    assert_eq!(regs.ip(), code(0x100));
    assert_eq!(regs.sp(), Some(SP + 0x300));
    assert_eq!(regs.lr(), Some(code(0x310)));
}

#[test]
fn x86_64_saved_rbp_below_the_copy_is_forgotten_not_fatal() {
    // At an epilogue's `ret`, gcc's CFI still says rbp is saved at CFA − 16, which is
    // below the stack pointer (already popped): outside a stack copy. The return address
    // is still found; rbp becomes unknown. (Seen in perf samples at qsort's callback.)
    let bytes = stack(0x10, &[(0, code(0x110))]);
    let mut regs = RegsX86_64::new(code(0x20), SP, 0x1234);
    let rule = RuleX86_64::CfaSp {
        cfa_offset: 8,
        bp_offset: -16,
        saved: SavedX86_64::NONE,
    };
    let applied = regs.apply(rule, &StackCopy::new(AbsAddr(SP), &bytes));
    assert_eq!(
        applied,
        Ok(Applied::Caller {
            recovery: Recovery::Cfi,
            signal: false
        })
    );
    assert_eq!(regs.ip(), code(0x110));
    assert_eq!(regs.sp(), Some(SP + 8));
    assert_eq!(regs.fp(), None);
}

/// One cache serving two address spaces that map different files at the same addresses, and
/// an address space whose mapping is replaced: no rule cached for one answers for the other.
#[test]
fn a_shared_cache_keeps_address_spaces_and_remappings_apart() {
    let with_cfi = x86_64_unwinder(CfiKind::EhFrame);
    let without_cfi = module(62, &x86_64_text(), CfiKind::EhFrame, &[]);
    // After `framed`'s `push rbp`: by CFI the return address is at [SP + 8]; by the frame
    // pointer, at [rbp + 8]. (Not at its entry: there the file without CFI would read the
    // return address at [SP] too, as code starting without CFI does.)
    let rbp = SP + 0x40;
    let bytes = stack(0x100, &[(8, code(0x110)), (0x40, 0), (0x48, code(0x120))]);
    let regs = RegsX86_64::new(code(1), SP, rbp);
    let memory = StackCopy::new(AbsAddr(SP), &bytes);
    let alone = |unwinder: &Unwinder| unwinder.unwind(&regs, &memory, &mut UnwindCache::new());
    let (by_cfi, by_fp) = (alone(&with_cfi), alone(&without_cfi));
    assert_eq!(by_cfi.frames[1].addr, abs(0x110));
    assert_eq!(by_fp.frames[1].addr, abs(0x120));
    let mut shared = UnwindCache::new();
    for _ in 0..2 {
        assert_eq!(with_cfi.unwind(&regs, &memory, &mut shared), by_cfi);
        assert_eq!(without_cfi.unwind(&regs, &memory, &mut shared), by_fp);
    }
    // The CFI file's mapping replaced by the file without CFI.
    let mut remapped = x86_64_unwinder(CfiKind::EhFrame);
    assert_eq!(remapped.unwind(&regs, &memory, &mut shared), by_cfi);
    let plain = without_cfi
        .modules()
        .iter()
        .next()
        .expect("a module")
        .clone();
    let elf = Arc::clone(without_cfi.modules().elf(&plain).expect("its file"));
    remapped
        .modules_mut()
        .add(plain.range.clone(), plain.file_offset, elf);
    assert_eq!(remapped.unwind(&regs, &memory, &mut shared), by_fp);
}

/// The first instruction of code without CFI: libgmp's `_fini` (its `.fini` section; the
/// system's libgmp, there wherever gcc is, which `.ci/run` installs), as glibc's `_dl_fini`
/// calls it at exit. Nothing is pushed yet, so the caller is the word at the stack pointer
/// (what framehop found where the frame-pointer fallback skipped `_dl_fini`, in
/// tests/perf_system_wide.rs); further in, by what `_fini` pushed (unwind/prologue.rs).
#[test]
fn x86_64_entry_of_code_without_cfi_returns_through_the_stack_pointer() {
    let path = "/usr/lib/x86_64-linux-gnu/libgmp.so.10";
    let Ok(elf) = ElfFile::open(path) else {
        panic!("{path} is missing: apt-get install libgmp10 (gcc depends on it)");
    };
    let fini = elf
        .section_address(".fini")
        .expect("section headers")
        .expect("libgmp has .fini")
        .0;
    let len = 0x10_0000_0000;
    let mut modules = Modules::new();
    modules.add(
        AbsAddr(BASE)..AbsAddr(BASE + len),
        FileOffset(0),
        Arc::new(elf),
    );
    let unwinder = Unwinder::new(modules);
    // The caller's return address at [SP]; the frame pointer points elsewhere on the stack.
    let caller = 0x7f00_1234_5678;
    let bytes = stack(
        0x40,
        &[(0, caller), (0x20, SP + 0x30), (0x28, 0x7f00_0000_9999)],
    );
    let memory = StackCopy::new(AbsAddr(SP), &bytes);
    let regs = RegsX86_64::new(BASE + fini, SP, SP + 0x20);
    let result = unwinder.unwind(&regs, &memory, &mut UnwindCache::new());
    assert_eq!(
        addrs(&result).get(..2),
        Some(
            &[
                (BASE + fini, false, Recovery::Registers),
                (caller, true, Recovery::LinkRegister)
            ][..]
        ),
        "{result:?}"
    );
    // After `sub $8, %rsp` (a sample there failed tests/perf_system_wide.rs once, at
    // libzstd's `_fini + 4`) the return address is 8 bytes up; after `add $8, %rsp`, at the
    // stack pointer again. Not the frame pointer's, which is the caller's.
    for (at, sp) in [(4, SP - 8), (8, SP)] {
        let regs = RegsX86_64::new(BASE + fini + at, sp, SP + 0x20);
        let result = unwinder.unwind(&regs, &memory, &mut UnwindCache::new());
        assert_eq!(
            addrs(&result).get(1),
            Some(&(caller, true, Recovery::LinkRegister)),
            "_fini + {at}: {result:?}"
        );
    }
}

#[test]
fn aarch64_go_step_reads_the_link_register_then_the_frame_slots() {
    use arch::GoStep;
    // A Go arm64 frame of 32 bytes: the return address at SP + 0, the caller's frame
    // pointer at SP − 8, x29 pointing at that slot once the prologue has set it.
    let below = SP - 8;
    let bytes = stack(0x40, &[(0, 0xcafe), (8, code(0x110))]);
    let memory = StackCopy::new(AbsAddr(below), &bytes);
    let mut framed = RegsAarch64::new(code(0x20), SP, below, 0x2222);
    assert_eq!(framed.go_step(32, &memory), Ok(true));
    assert_eq!(framed.ip(), code(0x110));
    assert_eq!(framed.sp(), Some(SP + 32));
    assert_eq!(framed.fp(), Some(0xcafe), "the caller's frame pointer");
    assert_eq!(framed.lr(), None, "the caller's link register is not known");
    // Before the prologue points x29 at the slot, x29 still is the caller's.
    let mut early = RegsAarch64::new(code(0x20), SP, 0x7777, 0x2222);
    assert_eq!(early.go_step(32, &memory), Ok(true));
    assert_eq!((early.ip(), early.fp()), (code(0x110), Some(0x7777)));
    // Delta 0 (a frameless function, or the prologue before it stores x30): the link
    // register; without one, no step.
    let mut leaf = RegsAarch64::new(code(0x20), SP, 0x7777, code(0x130));
    assert_eq!(leaf.go_step(0, &memory), Ok(true));
    assert_eq!((leaf.ip(), leaf.sp()), (code(0x130), Some(SP)));
    let mut lost = leaf.clone();
    assert_eq!(lost.go_step(0, &memory), Ok(false));
    // A slot outside the copy ends the walk there.
    let mut outside = RegsAarch64::new(code(0x20), SP + 0x100, 0, 0);
    assert_eq!(
        outside.go_step(32, &memory),
        Err(StopReason::MemoryUnreadable {
            addr: AbsAddr(SP + 0x100)
        })
    );
}

#[test]
fn modules_given_one_file_cfi_share_its_compiled_rules() {
    let bytes = cfi_elf::elf_with_cfi(
        62,
        &x86_64_text(),
        CfiKind::EhFrame,
        &x86_64_cfi(CfiKind::EhFrame),
    );
    let len = bytes.len() as u64;
    let elf = Arc::new(ElfFile::from_bytes("synthetic", bytes).expect("valid ELF"));
    let shared = FileCfi::new(elf.clone(), None);
    let (mut first, mut second, mut apart) = (Modules::new(), Modules::new(), Modules::new());
    first.add_shared(AbsAddr(BASE)..AbsAddr(BASE + len), FileOffset(0), &shared);
    second.add_shared(AbsAddr(BASE)..AbsAddr(BASE + len), FileOffset(0), &shared);
    apart.add(AbsAddr(BASE)..AbsAddr(BASE + len), FileOffset(0), elf);
    let virt = VirtAddr(TEXT_OFFSET + 0x20);
    let rule_of = |modules: &Modules| {
        let module = modules.find(abs(0x20)).expect("mapped");
        modules
            .cfi(module)
            .expect("its CFI")
            .cached_rule::<RuleX86_64>(virt)
    };
    // Frame 0 at `framed` after its prologue (CFA = rbp + 16) returns into `root`.
    let memory = stack(0x40, &[(0x10, 0x1111), (0x18, code(0x110))]);
    let regs = RegsX86_64::new(code(0x20), SP, SP + 0x10);
    let walked = Unwinder::new(first).unwind(
        &regs,
        &StackCopy::new(AbsAddr(SP), &memory),
        &mut UnwindCache::new(),
    );
    assert_eq!(walked.frames.len(), 2, "{walked:?}");
    assert!(rule_of(&second).is_some(), "compiled once, for both");
    assert_eq!(rule_of(&apart), None, "a CFI of its own");
}

/// CFI that cannot be read is an error that keeps gimli's error as its source and says which
/// section and which entry: here a `.debug_frame` FDE whose first instruction is an opcode
/// DWARF does not define (0x30).
#[test]
fn unreadable_cfi_is_a_structured_error() {
    let cie = Cie {
        augmentation: "",
        code_align: 1,
        data_align: -8,
        ra_register: 16,
        instructions: X86_CIE,
    };
    let bad: &[(u64, u64, &[u8])] = &[(TEXT_OFFSET, 0x100, &[0x30])];
    let unwinder = module(
        62,
        &x86_64_text(),
        CfiKind::DebugFrame,
        &cfi_section(CfiKind::DebugFrame, &cie, bad),
    );
    let module = unwinder.modules().find(abs(0x10)).expect("mapped");
    let cfi = unwinder.modules().cfi(module).expect("its CFI");
    let virt = module
        .virt_addr(cfi.elf(), abs(0x10))
        .expect("in a segment");
    let err = cfi
        .find_row(virt, &mut CfiContext::new(), RegsX86_64::compile)
        .expect_err("an undefined opcode");
    assert_eq!(err.kind(), crate::ErrorKind::Malformed);
    assert_eq!(err.section(), Some(".debug_frame"));
    assert!(err.offset().is_some(), "{err:?}");
    assert!(
        matches!(
            err,
            crate::Error::MalformedDwarf {
                source: gimli::Error::UnknownCallFrameInstruction(_),
                ..
            }
        ),
        "{err:?}"
    );
    let source = std::error::Error::source(&err).expect("gimli's error as the source");
    assert_eq!(
        source.to_string(),
        gimli::Error::UnknownCallFrameInstruction(gimli::constants::DwCfa(0x30)).to_string()
    );
    assert!(
        err.to_string()
            .starts_with("synthetic: malformed DWARF in .debug_frame at offset 0x"),
        "{err}"
    );
}
