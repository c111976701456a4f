//! Arbitrary CFI bytes (as `.eh_frame` or `.debug_frame` of a small synthetic ELF file),
//! registers and a stack copy → unwind, on x86_64 and aarch64, with CFI and with frame
//! pointers only. Malformed CFI, absurd offsets, expression loops and unreadable memory
//! must end the walk with a stop reason, never a panic, a hang or unbounded memory.
//!
//! Input: 1 byte of flags (bit 0 aarch64, bit 1 `.debug_frame`, bit 2 frame pointers only),
//! 4 little-endian u64 (instruction pointer offset into `.text`, stack pointer offset into the
//! copy, frame pointer, link register), a u16 stack length and that many stack bytes, then the
//! CFI bytes.
//!
//! Run from the repository root, seeded with the committed inputs:
//!   mkdir -p fuzz/corpus/unwind
//!   cargo +nightly fuzz run unwind fuzz/corpus/unwind testdata/unwind-fuzz -- -max_total_time=30

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use stacksym::elf::ElfFile;
use stacksym::unwind::{
    Modules, RegsAarch64, RegsX86_64, StackCopy, UnwindCache, UnwindOptions, Unwinder,
};
use stacksym::{AbsAddr, FileOffset};

#[path = "../../tests/support/cfi_elf.rs"]
mod cfi_elf;
use cfi_elf::{elf_with_cfi, CfiKind, TEXT_OFFSET};

const BASE: u64 = 0x5555_0000_0000;
const SP: u64 = 0x7fff_0000_0000;
const TEXT_LEN: u64 = 0x400;

fn take<'a>(data: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, tail) = (data.get(..n)?, data.get(n..)?);
    *data = tail;
    Some(head)
}

fn word(data: &mut &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(take(data, 8)?.try_into().ok()?))
}

fuzz_target!(|input: &[u8]| {
    let mut data = input;
    let Some(flags) = take(&mut data, 1).map(|b| b[0]) else {
        return;
    };
    let (Some(ip), Some(sp), Some(fp), Some(lr)) = (
        word(&mut data),
        word(&mut data),
        word(&mut data),
        word(&mut data),
    ) else {
        return;
    };
    let Some(len) = take(&mut data, 2).map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
    else {
        return;
    };
    let available = data.len();
    let Some(stack) = take(&mut data, len.min(available)) else {
        return;
    };
    let cfi = data;
    let aarch64 = flags & 1 != 0;
    let kind = if flags & 2 != 0 {
        CfiKind::DebugFrame
    } else {
        CfiKind::EhFrame
    };
    let machine = if aarch64 { 183 } else { 62 };
    let mut text = vec![0u8; TEXT_LEN as usize];
    // A sigreturn trampoline of each architecture at fixed places.
    text[0x300..0x309].copy_from_slice(&[0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05]);
    text[0x380..0x388].copy_from_slice(&[0x68, 0x11, 0x80, 0xd2, 0x01, 0, 0, 0xd4]);
    let bytes = elf_with_cfi(machine, &text, kind, cfi);
    let file_len = bytes.len() as u64;
    let Ok(elf) = ElfFile::from_bytes("fuzz-input", bytes) else {
        return;
    };
    let mut modules = Modules::new();
    modules.add(
        AbsAddr(BASE)..AbsAddr(BASE + file_len),
        FileOffset(0),
        Arc::new(elf),
    );
    let unwinder = Unwinder::with_options(
        modules,
        UnwindOptions {
            max_frames: 64,
            ..UnwindOptions::default()
        },
    );
    let memory = StackCopy::new(AbsAddr(SP), stack);
    let ip = BASE + TEXT_OFFSET + ip % TEXT_LEN;
    let sp = SP + sp % 0x1_0000;
    let fp_only = flags & 4 != 0;
    let result = if aarch64 {
        let regs = RegsAarch64::new(ip, sp, fp, lr);
        let mut cache = UnwindCache::new();
        if fp_only {
            unwinder.unwind_frame_pointers(&regs, &memory, &mut cache)
        } else {
            unwinder.unwind(&regs, &memory, &mut cache)
        }
    } else {
        let regs = RegsX86_64::new(ip, sp, fp);
        let mut cache = UnwindCache::new();
        if fp_only {
            unwinder.unwind_frame_pointers(&regs, &memory, &mut cache)
        } else {
            unwinder.unwind(&regs, &memory, &mut cache)
        }
    };
    assert!(!result.frames.is_empty() && result.frames.len() <= 64);
});
