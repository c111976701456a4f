//! Builds small synthetic ELF files with hand-written CFI, for the unwinder's unit tests
//! (`src/unwind/tests.rs`) and its fuzz target (`fuzz/fuzz_targets/unwind.rs`): an ELF64
//! little-endian header for the given machine, one `PT_LOAD` mapping the whole file at
//! virtual address = file offset, a `.text` section of given bytes at [`TEXT_OFFSET`], and
//! an `.eh_frame` or `.debug_frame` section. No dependencies, so both can include it.
#![allow(dead_code)]

/// Where `.text` starts (file offset and virtual address).
pub const TEXT_OFFSET: u64 = 0x1000;

/// Which CFI section to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CfiKind {
    EhFrame,
    DebugFrame,
}

/// One CIE with one FDE per `(start, len, instructions)`; addresses absolute (8 bytes).
/// `augmentation` is for `.eh_frame` "z" or "zS" (a signal frame), or V8's "zLR" (no LSDA,
/// absolute FDE addresses), for `.debug_frame` "" or "S". `data_align` is usually -8 (x86_64) or -8 (aarch64); `code_align` 1 or 4.
pub struct Cie<'a> {
    pub augmentation: &'a str,
    pub code_align: u8,
    pub data_align: i8,
    pub ra_register: u8,
    pub instructions: &'a [u8],
}

fn pad(out: &mut Vec<u8>, start: usize) {
    while (out.len() - start) % 8 != 4 {
        out.push(0); // DW_CFA_nop; entries are 4 (length) + a multiple of 8
    }
}

/// The bytes of a CFI section with `cie` and `fdes`.
pub fn cfi_section(kind: CfiKind, cie: &Cie<'_>, fdes: &[(u64, u64, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let cie_start = out.len();
    out.extend([0; 4]);
    out.extend(match kind {
        CfiKind::EhFrame => 0u32.to_le_bytes(),
        CfiKind::DebugFrame => u32::MAX.to_le_bytes(),
    });
    out.push(1); // version
    out.extend(cie.augmentation.as_bytes());
    out.push(0);
    out.push(cie.code_align);
    out.push(cie.data_align as u8 & 0x7f);
    out.push(cie.ra_register);
    let z = cie.augmentation.starts_with('z');
    if z {
        // The augmentation data: `L` as V8 writes it (DW_EH_PE_omit: the FDEs carry no LSDA
        // pointer), `R` for the absolute (absptr) FDE addresses written here.
        let data: Vec<u8> = (cie.augmentation.bytes())
            .filter_map(|c| match c {
                b'L' => Some(0xff),
                b'R' => Some(0x00),
                _ => None,
            })
            .collect();
        out.push(data.len() as u8);
        out.extend(data);
    }
    out.extend(cie.instructions);
    pad(&mut out, cie_start);
    let len = (out.len() - cie_start - 4) as u32;
    out[cie_start..cie_start + 4].copy_from_slice(&len.to_le_bytes());
    for &(start, range, instructions) in fdes {
        let fde_start = out.len();
        out.extend([0; 4]);
        let pointer = match kind {
            CfiKind::EhFrame => (out.len() - cie_start) as u32,
            CfiKind::DebugFrame => cie_start as u32,
        };
        out.extend(pointer.to_le_bytes());
        out.extend(start.to_le_bytes());
        out.extend(range.to_le_bytes());
        if z {
            out.push(0);
        }
        out.extend(instructions);
        pad(&mut out, fde_start);
        let len = (out.len() - fde_start - 4) as u32;
        out[fde_start..fde_start + 4].copy_from_slice(&len.to_le_bytes());
    }
    if kind == CfiKind::EhFrame {
        out.extend([0; 4]); // terminator
    }
    out
}

/// An ELF file for `machine` (62 x86_64, 183 aarch64) with `text` at [`TEXT_OFFSET`] and
/// `cfi` as `.eh_frame` or `.debug_frame`.
pub fn elf_with_cfi(machine: u16, text: &[u8], kind: CfiKind, cfi: &[u8]) -> Vec<u8> {
    let cfi_name: &[u8] = match kind {
        CfiKind::EhFrame => b".eh_frame\0",
        CfiKind::DebugFrame => b".debug_frame\0",
    };
    let mut shstrtab = vec![0u8];
    let text_name = shstrtab.len() as u32;
    shstrtab.extend(b".text\0");
    let cfi_name_at = shstrtab.len() as u32;
    shstrtab.extend(cfi_name);
    let shstrtab_name = shstrtab.len() as u32;
    shstrtab.extend(b".shstrtab\0");

    let mut out = vec![0u8; TEXT_OFFSET as usize];
    out.extend(text);
    let cfi_offset = out.len().next_multiple_of(8);
    out.resize(cfi_offset, 0);
    out.extend(cfi);
    let shstrtab_offset = out.len();
    out.extend(&shstrtab);
    let shoff = out.len().next_multiple_of(8);
    out.resize(shoff, 0);
    let file_len = (shoff + 4 * 64) as u64;

    let section =
        |out: &mut Vec<u8>, name: u32, kind: u32, flags: u64, addr: u64, off: u64, size: u64| {
            out.extend(name.to_le_bytes());
            out.extend(kind.to_le_bytes());
            out.extend(flags.to_le_bytes());
            out.extend(addr.to_le_bytes());
            out.extend(off.to_le_bytes());
            out.extend(size.to_le_bytes());
            out.extend(0u32.to_le_bytes()); // link
            out.extend(0u32.to_le_bytes()); // info
            out.extend(8u64.to_le_bytes()); // align
            out.extend(0u64.to_le_bytes()); // entsize
        };
    out.extend([0u8; 64]);
    section(
        &mut out,
        text_name,
        1,
        6,
        TEXT_OFFSET,
        TEXT_OFFSET,
        text.len() as u64,
    );
    let (cfi_flags, cfi_addr) = match kind {
        CfiKind::EhFrame => (2, cfi_offset as u64),
        CfiKind::DebugFrame => (0, 0),
    };
    section(
        &mut out,
        cfi_name_at,
        1,
        cfi_flags,
        cfi_addr,
        cfi_offset as u64,
        cfi.len() as u64,
    );
    section(
        &mut out,
        shstrtab_name,
        3,
        0,
        0,
        shstrtab_offset as u64,
        shstrtab.len() as u64,
    );

    // ELF header
    let mut header = Vec::with_capacity(64);
    header.extend(b"\x7fELF");
    header.extend([2, 1, 1, 0]); // 64-bit, little-endian, version 1, SysV
    header.extend([0u8; 8]);
    header.extend(3u16.to_le_bytes()); // ET_DYN
    header.extend(machine.to_le_bytes());
    header.extend(1u32.to_le_bytes());
    header.extend(TEXT_OFFSET.to_le_bytes()); // entry
    header.extend(64u64.to_le_bytes()); // phoff
    header.extend((shoff as u64).to_le_bytes());
    header.extend(0u32.to_le_bytes()); // flags
    header.extend(64u16.to_le_bytes()); // ehsize
    header.extend(56u16.to_le_bytes()); // phentsize
    header.extend(1u16.to_le_bytes()); // phnum
    header.extend(64u16.to_le_bytes()); // shentsize
    header.extend(4u16.to_le_bytes()); // shnum
    header.extend(3u16.to_le_bytes()); // shstrndx
                                       // PT_LOAD, R+X, the whole file at vaddr 0
    header.extend(1u32.to_le_bytes());
    header.extend(5u32.to_le_bytes());
    header.extend(0u64.to_le_bytes()); // offset
    header.extend(0u64.to_le_bytes()); // vaddr
    header.extend(0u64.to_le_bytes()); // paddr
    header.extend(file_len.to_le_bytes()); // filesz
    header.extend(file_len.to_le_bytes()); // memsz
    header.extend(0x1000u64.to_le_bytes()); // align
    out[..header.len()].copy_from_slice(&header);
    out
}
