//! A copy of an `.eh_frame` section that gimli can read where a CIE's `L` augmentation says
//! `DW_EH_PE_omit` (0xff): "this CIE's FDEs have no LSDA pointer". libgcc's unwinder, libdw
//! and framehop read such a CIE so; gimli 0.34 instead tries to parse the (absent) pointer in
//! every FDE of it and fails with `CannotParseOmitPointerEncoding`. V8 writes exactly these
//! CIEs (`zLR`, LSDA encoding 0xff) into the unwinding records of its jitdump, which perf
//! inject copies into its `jitted-PID-N.so` files, so without this every such frame stopped
//! the walk with `MalformedCfi`.
//!
//! The copy replaces such an `L` by an `R` whose byte is the CIE's FDE pointer encoding (its
//! own `R`'s, else `DW_EH_PE_absptr`, the default): gimli then reads the same encoding once
//! more and expects no LSDA pointer in the FDEs, which is what the CIE meant. Sizes and
//! offsets do not change. Only made when gimli has failed so (`cfi.rs`), so a file without
//! such CIEs never pays for the copy.

/// `DW_EH_PE_omit`: no value.
const OMIT: u8 = 0xff;

/// The section with every CIE whose `L` encoding is `DW_EH_PE_omit` rewritten (see the
/// module docs), or `None` when it has none. Entries that cannot be walked end the rewrite:
/// the entries before them are kept.
pub(super) fn without_omitted_lsda(section: &[u8], big_endian: bool) -> Option<Vec<u8>> {
    let mut copy = section.to_vec();
    let mut changed = false;
    let mut at = 0usize;
    while let Some(length) = word(&copy, at, 4, big_endian) {
        // A zero length is the terminator; 0xffffffff announces a 64-bit length.
        let (header, length) = match length {
            0 => break,
            0xffff_ffff => (12, word(&copy, at + 4, 8, big_endian)?),
            length => (4, length),
        };
        let id_size = if header == 12 { 8 } else { 4 };
        let start = at.checked_add(header)?;
        let end = start.checked_add(usize::try_from(length).ok()?)?;
        let body = copy.get_mut(start..end)?;
        // In `.eh_frame` a CIE's id is 0 (an FDE's is the offset back to its CIE).
        if word(body, 0, id_size, big_endian) == Some(0) {
            if let Some(cie) = body.get_mut(id_size..) {
                changed |= rewrite_cie(cie).is_some();
            }
        }
        at = end;
    }
    changed.then_some(copy)
}

/// Rewrites one CIE (from its version byte to its end) if its `L` encoding is
/// `DW_EH_PE_omit`; `Some(())` if it did.
fn rewrite_cie(cie: &mut [u8]) -> Option<()> {
    let version = *cie.first()?;
    let aug_len = cie.get(1..)?.iter().position(|&b| b == 0)?;
    let aug = 1..1 + aug_len;
    if cie.get(aug.start) != Some(&b'z') {
        return None;
    }
    let after_aug = cie.get(aug.end + 1..)?;
    let mut reader = gimli::EndianSlice::new(after_aug, gimli::RunTimeEndian::Little);
    gimli::Reader::read_uleb128(&mut reader).ok()?; // code alignment
    gimli::Reader::read_sleb128(&mut reader).ok()?; // data alignment
    if version == 1 {
        gimli::Reader::read_u8(&mut reader).ok()?; // return address register
    } else {
        gimli::Reader::read_uleb128(&mut reader).ok()?;
    }
    gimli::Reader::read_uleb128(&mut reader).ok()?; // augmentation data length
    let mut data = cie.len() - reader.slice().len();
    let mut omitted_l = None;
    let mut fde_encoding = 0u8; // DW_EH_PE_absptr
    for (i, &ch) in cie.get(aug.start + 1..aug.end)?.iter().enumerate() {
        match ch {
            b'L' => {
                if *cie.get(data)? == OMIT {
                    omitted_l = Some((aug.start + 1 + i, data));
                }
                data += 1;
            }
            b'R' => {
                fde_encoding = *cie.get(data)?;
                data += 1;
            }
            b'P' => {
                let encoding = *cie.get(data)?;
                data += 1 + pointer_size(encoding, cie.get(data + 1..)?)?;
            }
            b'S' | b'B' | b'G' => {}
            _ => return None,
        }
    }
    let (letter, byte) = omitted_l?;
    *cie.get_mut(letter)? = b'R';
    *cie.get_mut(byte)? = fde_encoding;
    Some(())
}

/// The size of a pointer in `encoding` at the start of `bytes` (`None` for encodings whose
/// size depends on where the pointer lies, `DW_EH_PE_aligned`, or that are not encodings).
fn pointer_size(encoding: u8, bytes: &[u8]) -> Option<usize> {
    if encoding & 0x70 == 0x50 {
        return None;
    }
    Some(match encoding & 0x0f {
        0x00 | 0x04 | 0x0c => 8,
        0x02 | 0x0a => 2,
        0x03 | 0x0b => 4,
        0x01 | 0x09 => bytes.iter().position(|b| b & 0x80 == 0)? + 1,
        _ => return None,
    })
}

/// The `size`-byte (4 or 8) word at `at`.
fn word(bytes: &[u8], at: usize, size: usize, big_endian: bool) -> Option<u64> {
    let word = bytes.get(at..at.checked_add(size)?)?;
    let fold = |value: u64, byte: &u8| (value << 8) | u64::from(*byte);
    Some(if big_endian {
        word.iter().fold(0, fold)
    } else {
        word.iter().rev().fold(0, fold)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// V8's CIE as perf inject copies it into a `jitted-PID-N.so` (`zLR`, LSDA encoding
    /// omitted, FDE pointers pc-relative sdata4), one FDE and the terminator.
    const V8_EH_FRAME: &[u8] = &[
        0x18, 0, 0, 0, 0, 0, 0, 0, 0x03, b'z', b'L', b'R', 0, 0x01, 0x78, 0x10, 0x02, 0xff, 0x1b,
        0x0c, 0x07, 0x08, 0x90, 0x01, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 0x5c, 0xfe, 0xff,
        0xff, 0x7e, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn v8_cie_is_rewritten_to_what_it_meant() {
        let copy = without_omitted_lsda(V8_EH_FRAME, false).expect("the CIE has L = omit");
        assert_eq!(&copy[9..12], b"zRR");
        assert_eq!(&copy[17..19], &[0x1b, 0x1b]);
        assert_eq!(copy.len(), V8_EH_FRAME.len());
        assert_eq!(copy[19..], V8_EH_FRAME[19..]);
        // gimli now reads the FDE, where it failed before.
        let parse = |bytes: &[u8]| {
            use gimli::UnwindSection;
            let section = gimli::EhFrame::new(bytes, gimli::LittleEndian);
            let bases = gimli::BaseAddresses::default().set_eh_frame(0x200);
            section
                .fde_from_offset(
                    &bases,
                    gimli::EhFrameOffset(0x1c),
                    gimli::EhFrame::cie_from_offset,
                )
                .map(|fde| (fde.initial_address(), fde.len()))
        };
        assert_eq!(
            parse(V8_EH_FRAME),
            Err(gimli::Error::CannotParseOmitPointerEncoding)
        );
        assert_eq!(parse(&copy), Ok((0x80, 0x17e)));
    }

    #[test]
    fn other_sections_are_left_alone() {
        // gcc's usual CIE: zR, no L.
        let mut gcc = V8_EH_FRAME.to_vec();
        gcc[10] = b'P';
        gcc[17] = 0x00; // personality absptr: 8 bytes would follow, which the CIE lacks
        assert_eq!(without_omitted_lsda(&gcc, false), None);
        // An L that names a real encoding.
        let mut with_lsda = V8_EH_FRAME.to_vec();
        with_lsda[17] = 0x1b;
        assert_eq!(without_omitted_lsda(&with_lsda, false), None);
        // Truncated, absurd lengths, empty: nothing, and no panic.
        for len in 0..V8_EH_FRAME.len() {
            let _ = without_omitted_lsda(&V8_EH_FRAME[..len], false);
        }
        assert_eq!(without_omitted_lsda(&[0xff; 16], false), None);
        assert_eq!(without_omitted_lsda(&[], true), None);
    }
}
