//! The unwind tables a JIT wrote into its jitdump for one piece of code
//! (`JIT_CODE_UNWINDING_INFO`: V8's `.eh_frame` and `.eh_frame_hdr`), made into the small
//! ELF file the unwinder reads, as `perf inject --jit` makes them into its
//! `jitted-PID-N.so` files (perf's `util/genelf.c`, `jit_write_elf` and
//! `jit_add_eh_frame_info`): the code at [`TEXT_OFFSET`] (genelf's `GEN_ELF_TEXT_OFFSET`,
//! the ELF and program headers rounded up to 16), `.eh_frame` (the data's first
//! `size - eh_frame_hdr_size` bytes) at the next multiple of 8 after the code, `.eh_frame_hdr`
//! (the rest) right after it. That layout is the one the tables are written for: the JIT
//! encodes its FDEs' code addresses relative to `.eh_frame`, which sits `align8(code size)`
//! bytes after the code's start in its memory (V8's `EhFrameWriter` patches the procedure's
//! address to `-(RoundUp(code_size, 8) + offset)`), and `.eh_frame_hdr`'s pointers relative
//! to itself. The file is then mapped at the code's address from [`TEXT_OFFSET`], as perf's
//! MMAP record for the injected file maps it, and read like any other (`cfi.rs`, including
//! V8's CIE whose LSDA encoding is omitted: `omitted_lsda.rs`).
//!
//! I/O-free: the bytes come from a parsed [`JitDump`](crate::process::JitDump).

use std::path::PathBuf;

use crate::elf::ElfFile;
use crate::error::Result;
use crate::process::JitCode;

/// Where genelf puts the code (`GEN_ELF_TEXT_OFFSET`: the ELF header and one program
/// header, rounded up to 16).
pub(crate) const TEXT_OFFSET: u64 = 128;

const EHDR_BYTES: usize = 64;
const PHDR_BYTES: usize = 56;
const SHDR_BYTES: usize = 64;
/// Section names: `.text` at 1, `.eh_frame` at 7, `.eh_frame_hdr` at 17, `.shstrtab` at 31.
const SHSTRTAB: &[u8] = b"\0.text\0.eh_frame\0.eh_frame_hdr\0.shstrtab\0";

/// A little- or big-endian writer of ELF fields.
struct Out {
    bytes: Vec<u8>,
    big_endian: bool,
}

impl Out {
    fn u16(&mut self, v: u16) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
    }
    fn u32(&mut self, v: u32) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
    }
    fn u64(&mut self, v: u64) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
    }
    fn pad_to(&mut self, len: usize) {
        if self.bytes.len() < len {
            self.bytes.resize(len, 0);
        }
    }
    /// A section header.
    fn section(&mut self, name: u32, kind: u32, flags: u64, addr: u64, offset: u64, size: u64) {
        self.u32(name);
        self.u32(kind);
        self.u64(flags);
        self.u64(addr);
        self.u64(offset);
        self.u64(size);
        self.u32(0); // link
        self.u32(0); // info
        self.u64(1); // alignment
        self.u64(0); // entry size
    }
}

fn align8(v: usize) -> Option<usize> {
    v.checked_add(7).map(|v| v & !7)
}

/// The ELF file of `code`'s unwind tables (see the module docs), to map at `code.start`
/// from [`TEXT_OFFSET`]; `None` when the JIT wrote no tables for it (none, or only the
/// header: V8's builtins) or its machine does not fit an ELF header.
pub(crate) fn jit_elf(code: &JitCode<'_>) -> Option<Result<ElfFile>> {
    let info = code.unwinding_info()?;
    let header = code.dump().header();
    let hdr_len = usize::try_from(info.eh_frame_hdr_size).ok()?;
    let eh_frame_len = info.bytes.len().checked_sub(hdr_len).filter(|&n| n > 0)?;
    let (eh_frame, eh_frame_hdr) = info.bytes.split_at(eh_frame_len);
    let machine = u16::try_from(header.elf_machine).ok()?;
    let text = TEXT_OFFSET as usize;
    let eh_frame_at = align8(text.checked_add(info.code.len())?)?;
    let hdr_at = eh_frame_at.checked_add(eh_frame_len)?;
    let strings_at = hdr_at.checked_add(hdr_len)?;
    let sections_at = align8(strings_at.checked_add(SHSTRTAB.len())?)?;
    let end = sections_at.checked_add(5 * SHDR_BYTES)?;
    let mut out = Out {
        bytes: Vec::with_capacity(end),
        big_endian: header.big_endian,
    };
    out.bytes.extend(b"\x7fELF");
    out.bytes.push(2); // 64-bit
    out.bytes.push(if header.big_endian { 2 } else { 1 });
    out.bytes.push(1); // version
    out.pad_to(16);
    out.u16(3); // ET_DYN
    out.u16(machine);
    out.u32(1); // version
    out.u64(TEXT_OFFSET); // entry
    out.u64(EHDR_BYTES as u64); // program headers
    out.u64(sections_at as u64); // section headers
    out.u32(0); // flags
    out.u16(EHDR_BYTES as u16);
    out.u16(PHDR_BYTES as u16);
    out.u16(1);
    out.u16(SHDR_BYTES as u16);
    out.u16(5);
    out.u16(4); // .shstrtab
                // One PT_LOAD, readable and executable, mapping the file at its own offsets.
    out.u32(1);
    out.u32(5);
    out.u64(0);
    out.u64(0);
    out.u64(0);
    out.u64(strings_at as u64);
    out.u64(strings_at as u64);
    out.u64(16);
    out.pad_to(text);
    out.bytes.extend_from_slice(info.code);
    out.pad_to(eh_frame_at);
    out.bytes.extend_from_slice(eh_frame);
    out.bytes.extend_from_slice(eh_frame_hdr);
    out.bytes.extend_from_slice(SHSTRTAB);
    out.pad_to(sections_at);
    const PROGBITS: u32 = 1;
    const STRTAB: u32 = 3;
    const ALLOC: u64 = 2;
    const EXEC: u64 = 4;
    out.section(0, 0, 0, 0, 0, 0);
    let code_len = info.code.len() as u64;
    out.section(
        1,
        PROGBITS,
        ALLOC | EXEC,
        TEXT_OFFSET,
        TEXT_OFFSET,
        code_len,
    );
    let (eh, len) = (eh_frame_at as u64, eh_frame_len as u64);
    out.section(7, PROGBITS, ALLOC, eh, eh, len);
    let (hdr, len) = (hdr_at as u64, hdr_len as u64);
    out.section(17, PROGBITS, ALLOC, hdr, hdr, len);
    let (strings, len) = (strings_at as u64, SHSTRTAB.len() as u64);
    out.section(31, STRTAB, 0, 0, strings, len);
    let name = PathBuf::from(format!(
        "{} (code {} at {:#x}: {})",
        code.dump().path().display(),
        code.code_index,
        code.start.0,
        code.name
    ));
    Some(ElfFile::from_bytes(name, out.bytes))
}
