//! The xz container (<https://tukaani.org/xz/xz-file-format.txt>) around lzma-rust2's LZMA2
//! decoder, so that lzma-rust2 is built without its `xz` feature (whose SHA-256 checks bring
//! sha2 and seven more crates into an embedder's build).
//!
//! Read here: the stream header, blocks whose filter chain is LZMA2 alone (what `xz` writes
//! by default, and what MiniDebugInfo and kernel modules use; a BCJ or delta filter is refused
//! with an error naming it), the block padding and check, the index (compared with the blocks
//! read), the stream footer, stream padding and further concatenated streams, as `xz -d`
//! reads them. The CRC32 and CRC64 checks are verified; a SHA-256 check (and any check type
//! the format reserves) is skipped, which `log::debug!` says: a corrupted block is still
//! caught by the LZMA2 decoder or the sizes in the chunk headers and the index, and the
//! embedder then needs no SHA-256 implementation.
//!
//! Every length and offset comes from the input and is checked against it; nothing panics on
//! any input. Before a block is decoded its LZMA2 chunk headers are walked (without decoding)
//! to find where its data ends and how much it decodes to, so that the output cap is checked,
//! and the dictionary size against the memory limit, before anything is allocated.

use std::io::Read;

use crate::error::DecompressError;

const HEADER_MAGIC: [u8; 6] = *b"\xfd7zXZ\0";
const FOOTER_MAGIC: [u8; 2] = *b"YZ";
/// The filter ID of LZMA2, the only filter read.
const LZMA2_FILTER: u64 = 0x21;

/// Check types (the low four bits of the stream flags) that are verified.
const CHECK_NONE: u8 = 0x00;
const CHECK_CRC32: u8 = 0x01;
const CHECK_CRC64: u8 = 0x04;
const CHECK_SHA256: u8 = 0x0a;

/// The concatenated xz streams of `data` decompressed, at most `cap` bytes (more is an error,
/// "decompression bomb"); a block whose LZMA2 dictionary would need more than
/// `mem_limit_kib` KiB (lzma-rust2's estimate) is refused before it is allocated.
pub(crate) fn decompress(
    data: &[u8],
    cap: u64,
    mem_limit_kib: u32,
) -> Result<Vec<u8>, DecompressError> {
    let mut input = Input { data, pos: 0 };
    let mut out = Vec::new();
    loop {
        stream(&mut input, cap, mem_limit_kib, &mut out)?;
        // Stream padding: null bytes, a multiple of four, then the end or another stream.
        let padding_start = input.pos;
        while input.peek() == Some(0) {
            input.pos += 1;
        }
        if !(input.pos - padding_start).is_multiple_of(4) {
            return Err(corrupt(
                padding_start,
                format!(
                    "stream padding of {} bytes, not a multiple of four",
                    input.pos - padding_start
                ),
            ));
        }
        if input.pos == data.len() {
            return Ok(out);
        }
    }
}

/// A position in the input.
struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    /// The next `n` bytes, or an error naming `what` was truncated.
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecompressError> {
        let bytes = self
            .pos
            .checked_add(n)
            .and_then(|end| self.data.get(self.pos..end))
            .ok_or_else(|| truncated(what, self.pos))?;
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecompressError> {
        let at = self.pos;
        let bytes = self.take(N, what)?;
        bytes.try_into().map_err(|_| truncated(what, at))
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, DecompressError> {
        self.array::<1>(what).map(|[b]| b)
    }

    fn u32_le(&mut self, what: &'static str) -> Result<u32, DecompressError> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A variable-length integer: seven bits a byte, least significant first, at most nine
    /// bytes, no needless trailing zero byte (as liblzma requires).
    fn vli(&mut self, what: &'static str) -> Result<u64, DecompressError> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..9 {
            let byte = self.byte(what)?;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                if i > 0 && byte == 0 {
                    return Err(corrupt(
                        start,
                        format!("{what}: an integer with a needless zero byte"),
                    ));
                }
                return Ok(value);
            }
        }
        Err(corrupt(
            start,
            format!("{what}: an integer longer than nine bytes"),
        ))
    }
}

/// One stream at `input`'s position, up to and including its footer.
fn stream(
    input: &mut Input,
    cap: u64,
    mem_limit_kib: u32,
    out: &mut Vec<u8>,
) -> Result<(), DecompressError> {
    let start = input.pos;
    let header: [u8; 12] = input.array("the stream header")?;
    if header[..6] != HEADER_MAGIC {
        return Err(corrupt(start, "no xz stream header".to_string()));
    }
    let flags = [header[6], header[7]];
    if crc32(&flags) != u32::from_le_bytes([header[8], header[9], header[10], header[11]]) {
        return Err(checksum("CRC32 of the stream header", start));
    }
    if flags[0] != 0 || flags[1] & 0xf0 != 0 {
        return Err(DecompressError::Unsupported {
            format: "xz",
            what: format!("stream header flags {:02x}{:02x}", flags[0], flags[1]),
            offset: Some(start as u64),
        });
    }
    let check = flags[1];
    match check {
        CHECK_NONE | CHECK_CRC32 | CHECK_CRC64 => {}
        CHECK_SHA256 => log::debug!("xz stream at offset {start}: SHA-256 checks not verified"),
        _ => log::debug!("xz stream at offset {start}: check type {check} not verified"),
    }

    // (unpadded size, uncompressed size) of each block, for the index.
    let mut blocks = Vec::new();
    while input
        .peek()
        .ok_or_else(|| truncated("a stream's blocks", input.pos))?
        != 0
    {
        blocks.push(block(input, check, cap, mem_limit_kib, out)?);
    }

    let index_start = input.pos;
    index(input, &blocks)?;
    let index_size = (input.pos - index_start) as u64;

    let footer_start = input.pos;
    let footer: [u8; 12] = input.array("the stream footer")?;
    if footer[10..] != FOOTER_MAGIC {
        return Err(corrupt(footer_start, "no xz stream footer".to_string()));
    }
    let stored_crc = u32::from_le_bytes([footer[0], footer[1], footer[2], footer[3]]);
    if crc32(&footer[4..10]) != stored_crc {
        return Err(checksum("CRC32 of the stream footer", footer_start));
    }
    let backward_size = (u64::from(u32::from_le_bytes([
        footer[4], footer[5], footer[6], footer[7],
    ])) + 1)
        * 4;
    if backward_size != index_size {
        return Err(corrupt(
            footer_start,
            format!(
                "the stream footer: an index of {backward_size} bytes, but it has {index_size}"
            ),
        ));
    }
    if footer[8..10] != flags {
        return Err(corrupt(
            footer_start,
            "the stream footer: flags differ from the header's".to_string(),
        ));
    }
    Ok(())
}

/// The size of the check of type `check` (the format reserves sizes for the unused types).
fn check_size(check: u8) -> usize {
    match check {
        0 => 0,
        1..=3 => 4,
        4..=6 => 8,
        7..=9 => 16,
        10..=12 => 32,
        _ => 64,
    }
}

/// One block, decoded onto `out`: its unpadded and uncompressed sizes, as the index lists
/// them.
fn block(
    input: &mut Input,
    check: u8,
    cap: u64,
    mem_limit_kib: u32,
    out: &mut Vec<u8>,
) -> Result<(u64, u64), DecompressError> {
    let start = input.pos;
    let fail = |what: &str| corrupt(start, format!("the block: {what}"));
    let BlockHeader {
        size: header_size,
        compressed_size,
        uncompressed_size,
        dict_size,
    } = block_header(input, mem_limit_kib)?;

    // The LZMA2 data: its extent from the chunk headers, checked against the block header's
    // sizes and the cap before it is decoded.
    let rest = input.data.get(input.pos..).unwrap_or_default();
    let (packed, unpacked) = lzma2_extent(rest).map_err(&fail)?;
    if compressed_size.is_some_and(|size| size != packed as u64) {
        return Err(fail("compressed size differs from the LZMA2 data's"));
    }
    if uncompressed_size.is_some_and(|size| size != unpacked) {
        return Err(fail("uncompressed size differs from the LZMA2 data's"));
    }
    if (out.len() as u64).saturating_add(unpacked) > cap {
        return Err(DecompressError::TooLarge { format: "xz", cap });
    }
    let lzma2 = input.take(packed, "LZMA2 data")?;
    let before = out.len();
    let reserve = usize::try_from(unpacked).map_err(|_| fail("too large"))?;
    out.try_reserve(reserve)
        .map_err(|_| DecompressError::OutOfMemory {
            format: "xz",
            bytes: unpacked,
        })?;
    let decoder = lzma_rust2::Lzma2Reader::new_mem_limit(lzma2, dict_size, mem_limit_kib, None)
        .map_err(|e| fail(&format!("LZMA2: {e}")))?;
    decoder
        .take(unpacked.saturating_add(1))
        .read_to_end(out)
        .map_err(|e| fail(&format!("LZMA2: {e}")))?;
    let decoded = out.get(before..).unwrap_or_default();
    if decoded.len() as u64 != unpacked {
        return Err(fail(&format!(
            "LZMA2 data decoded to {} bytes, its chunk headers say {unpacked}",
            decoded.len()
        )));
    }

    // Block padding to a multiple of four bytes, then the check.
    let unpadded_without_check = header_size + packed;
    let padding = input.take((4 - unpadded_without_check % 4) % 4, "block padding")?;
    if padding.iter().any(|&b| b != 0) {
        return Err(fail("nonzero block padding"));
    }
    let size = check_size(check);
    let stored = input.take(size, "a block's check")?;
    let mismatch = match check {
        CHECK_CRC32 => stored != crc32(decoded).to_le_bytes(),
        CHECK_CRC64 => stored != crc64(decoded).to_le_bytes(),
        // None, SHA-256 (see the module's comment) or a reserved type: not verified.
        _ => false,
    };
    if mismatch {
        let name = if check == CHECK_CRC32 {
            "CRC32 of the data"
        } else {
            "CRC64 of the data"
        };
        return Err(checksum(name, start));
    }
    Ok(((unpadded_without_check + size) as u64, unpacked))
}

/// A block's header, read and checked.
struct BlockHeader {
    /// Its size in bytes, CRC32 included.
    size: usize,
    /// The sizes it states, if it states them.
    compressed_size: Option<u64>,
    uncompressed_size: Option<u64>,
    /// The LZMA2 dictionary size, within the memory limit.
    dict_size: u32,
}

/// The header of the block at `input`'s position (`input` is advanced past it): its CRC32,
/// flags, the one LZMA2 filter, the dictionary size against `mem_limit_kib` KiB.
fn block_header(input: &mut Input, mem_limit_kib: u32) -> Result<BlockHeader, DecompressError> {
    let start = input.pos;
    let fail = |what: &str| corrupt(start, format!("the block: {what}"));
    let unsupported = |what: String| DecompressError::Unsupported {
        format: "xz",
        what: format!("the block: {what}"),
        offset: Some(start as u64),
    };

    let header_size = (usize::from(input.peek().unwrap_or(0)) + 1) * 4;
    let header = input.take(header_size, "a block header")?;
    let (body, stored_crc) = header.split_at(header_size - 4);
    let stored_crc = u32::from_le_bytes(stored_crc.try_into().map_err(|_| fail("header"))?);
    if crc32(body) != stored_crc {
        return Err(checksum("CRC32 of the block header", start));
    }
    let mut header = Input { data: body, pos: 1 };
    let flags = header.byte("a block header")?;
    if flags & 0x3c != 0 {
        return Err(unsupported(format!("flags {flags:02x}")));
    }
    let compressed_size = match flags & 0x40 {
        0 => None,
        _ => Some(header.vli("a block's compressed size")?),
    };
    let uncompressed_size = match flags & 0x80 {
        0 => None,
        _ => Some(header.vli("a block's uncompressed size")?),
    };
    let filters = (flags & 3) + 1;
    let filter = header.vli("a block's filter")?;
    if filters != 1 || filter != LZMA2_FILTER {
        return Err(unsupported(format!(
            "a filter chain of {filters} filters, the first 0x{filter:x}: only LZMA2 (0x21) \
             alone is read"
        )));
    }
    if header.vli("a block's filter properties")? != 1 {
        return Err(fail("LZMA2 properties that are not one byte"));
    }
    let dict_size = lzma2_dict_size(header.byte("a block's LZMA2 properties")?)
        .ok_or_else(|| fail("an invalid LZMA2 dictionary size"))?;
    if body
        .get(header.pos..)
        .is_some_and(|padding| padding.iter().any(|&b| b != 0))
    {
        return Err(fail("nonzero header padding"));
    }
    let needed_kib = lzma_rust2::lzma2_get_memory_usage(dict_size);
    if needed_kib > mem_limit_kib {
        return Err(unsupported(format!(
            "its dictionary of {dict_size} bytes needs {needed_kib} KiB, more than the limit \
             of {mem_limit_kib} KiB"
        )));
    }
    Ok(BlockHeader {
        size: header_size,
        compressed_size,
        uncompressed_size,
        dict_size,
    })
}

/// The dictionary size an LZMA2 properties byte encodes; `None` for values above 40.
fn lzma2_dict_size(byte: u8) -> Option<u32> {
    match byte {
        0..=39 => Some((2 | u32::from(byte & 1)) << (byte / 2 + 11)),
        40 => Some(u32::MAX),
        _ => None,
    }
}

/// Where the LZMA2 data at the start of `data` ends (the length up to and including its end
/// marker) and how many bytes it decodes to, from its chunk headers, without decoding.
/// Its error says what was wrong, for the caller to place in its block.
fn lzma2_extent(data: &[u8]) -> Result<(usize, u64), &'static str> {
    let be16 = |at: usize| -> Result<usize, &'static str> {
        match (data.get(at), data.get(at + 1)) {
            (Some(&high), Some(&low)) => Ok(usize::from(u16::from_be_bytes([high, low]))),
            _ => Err("truncated LZMA2 data"),
        }
    };
    let mut pos = 0usize;
    let mut unpacked = 0u64;
    loop {
        let control = *data.get(pos).ok_or("truncated LZMA2 data")?;
        match control {
            0x00 => return Ok((pos + 1, unpacked)),
            // An uncompressed chunk (with or without a dictionary reset).
            0x01 | 0x02 => {
                let size = be16(pos + 1)? + 1;
                unpacked += size as u64;
                pos += 3 + size;
            }
            // An LZMA chunk; from 0xc0 on with a properties byte.
            0x80..=0xff => {
                let size = (usize::from(control & 0x1f) << 16) + be16(pos + 1)? + 1;
                let packed = be16(pos + 3)? + 1;
                unpacked += size as u64;
                pos += if control >= 0xc0 { 6 } else { 5 } + packed;
            }
            _ => return Err("LZMA2 data with a reserved control byte"),
        }
    }
}

/// The index at `input`'s position, compared with the blocks read.
fn index(input: &mut Input, blocks: &[(u64, u64)]) -> Result<(), DecompressError> {
    let start = input.pos;
    let fail = |what: &str| corrupt(start, format!("the index: {what}"));
    if input.byte("the index")? != 0 {
        return Err(fail("no index indicator"));
    }
    if input.vli("the index")? != blocks.len() as u64 {
        return Err(fail("a record count other than the number of blocks"));
    }
    for &(unpadded, uncompressed) in blocks {
        let record = (input.vli("the index")?, input.vli("the index")?);
        if record != (unpadded, uncompressed) {
            return Err(fail("a record that differs from its block"));
        }
    }
    while !(input.pos - start).is_multiple_of(4) {
        if input.byte("the index")? != 0 {
            return Err(fail("nonzero padding"));
        }
    }
    let covered = input.data.get(start..input.pos).unwrap_or_default();
    if crc32(covered) != input.u32_le("the index")? {
        return Err(checksum("CRC32 of the index", start));
    }
    Ok(())
}

/// A [`DecompressError::Truncated`] of xz: `what` cut at `offset`.
fn truncated(what: &'static str, offset: usize) -> DecompressError {
    DecompressError::Truncated {
        format: "xz",
        what,
        offset: Some(offset as u64),
    }
}

/// A [`DecompressError::Corrupt`] of xz: `what`, in the structure at `offset`.
fn corrupt(offset: usize, what: String) -> DecompressError {
    DecompressError::Corrupt {
        format: "xz",
        what,
        offset: Some(offset as u64),
    }
}

/// A [`DecompressError::ChecksumMismatch`] of xz: `what`, of the structure at `offset`.
fn checksum(what: &'static str, offset: usize) -> DecompressError {
    DecompressError::ChecksumMismatch {
        format: "xz",
        what,
        offset: Some(offset as u64),
    }
}

fn crc32(data: &[u8]) -> u32 {
    zlib_rs::crc32::crc32(0, data)
}

/// CRC64 as xz computes it: ECMA-182's polynomial, reflected, initial value and final XOR
/// all ones ("CRC-64/XZ").
fn crc64(data: &[u8]) -> u64 {
    let mut crc = !0u64;
    for &byte in data {
        crc = CRC64_TABLE[((crc ^ u64::from(byte)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

const CRC64_TABLE: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xc96c_5795_d787_0f42
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const LIMIT_KIB: u32 = 1 << 20;

    /// Skips loudly without the `xz` tool; under CI (`CI` set), fails instead, as
    /// tests/support's `skip_or_fail` does.
    fn have_xz(test: &str) -> bool {
        if Command::new("xz").arg("--version").output().is_ok() {
            return true;
        }
        if std::env::var_os("CI").is_some() {
            panic!("{test}: xz not found; CI is expected to provide it (xz-utils)");
        }
        eprintln!("{test}: SKIPPED: xz not found; install xz-utils");
        false
    }

    /// `input` compressed by `xz -z -c` with `args`.
    fn xz(args: &[&str], input: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input");
        std::fs::write(&path, input).unwrap();
        let out = Command::new("xz")
            .args(["-z", "-c"])
            .args(args)
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "xz {args:?}: {out:?}");
        out.stdout
    }

    /// `len` bytes of text-like (compressible) runs and pseudo-random (incompressible) runs,
    /// so that LZMA2 writes both LZMA and uncompressed chunks.
    fn payload_of(len: usize) -> Vec<u8> {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut out = Vec::new();
        let mut n = 0u32;
        while out.len() < len {
            if n % 3 == 2 {
                for _ in 0..40_000 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    out.push(state as u8);
                }
            } else {
                for i in 0..2_000 {
                    out.extend_from_slice(
                        format!("symbol_{} at 0x{:x}\n", i % 97, n * i).as_bytes(),
                    );
                }
            }
            n += 1;
        }
        out.truncate(len);
        out
    }

    /// 1 MiB of [`payload_of`].
    fn payload() -> Vec<u8> {
        payload_of(1 << 20)
    }

    /// The check field of the last block of a single-stream `file` with checks of `size`
    /// bytes: just before the index, whose size the footer gives.
    fn last_check(file: &[u8], size: usize) -> std::ops::Range<usize> {
        let footer = &file[file.len() - 12..];
        let index_size = (u32::from_le_bytes(footer[4..8].try_into().unwrap()) as usize + 1) * 4;
        let end = file.len() - 12 - index_size;
        end - size..end
    }

    #[test]
    fn crcs_are_xz_s() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(&[0x5a; 1000]), crc32fast::hash(&[0x5a; 1000]));
        assert_eq!(crc64(b"123456789"), 0x995d_c9bb_df19_39fa);
    }

    #[test]
    fn every_check_type_round_trips() {
        if !have_xz("every_check_type_round_trips") {
            return;
        }
        let data = payload();
        for check in ["none", "crc32", "crc64", "sha256"] {
            let file = xz(&[&format!("--check={check}")], &data);
            let out = decompress(&file, u64::MAX, LIMIT_KIB);
            assert!(
                out.as_deref() == Ok(&data[..]),
                "{check}: {:?}",
                out.map(|o| o.len())
            );
        }
        let empty = xz(&[], b"");
        assert_eq!(decompress(&empty, 0, LIMIT_KIB), Ok(Vec::new()));
    }

    #[test]
    fn multi_block_streams_with_sizes_in_their_headers_round_trip() {
        if !have_xz("multi_block_streams_with_sizes_in_their_headers_round_trip") {
            return;
        }
        let data = payload();
        let file = xz(&["-T2", "--block-size=65536"], &data);
        // The first block header's flags: both sizes present.
        assert_eq!(file[13] & 0xc0, 0xc0, "no sizes in the block header");
        assert_eq!(
            decompress(&file, u64::MAX, LIMIT_KIB).as_deref(),
            Ok(&data[..])
        );
        // One byte less than the output is over the cap.
        let err = decompress(&file, data.len() as u64 - 1, LIMIT_KIB)
            .unwrap_err()
            .to_string();
        assert!(err.contains("decompression bomb"), "{err}");
    }

    #[test]
    fn concatenated_streams_and_stream_padding() {
        if !have_xz("concatenated_streams_and_stream_padding") {
            return;
        }
        let (a, b) = (b"first stream\n".repeat(100), payload());
        let (xa, xb) = (xz(&[], &a), xz(&["--check=crc32"], &b));
        let both = [a.clone(), b.clone()].concat();
        for padding in [0, 4, 8] {
            let file = [xa.clone(), vec![0; padding], xb.clone(), vec![0; padding]].concat();
            assert!(
                decompress(&file, u64::MAX, LIMIT_KIB).as_deref() == Ok(&both[..]),
                "padding {padding}"
            );
        }
        for padding in [1, 3, 5] {
            let file = [xa.clone(), vec![0; padding], xb.clone()].concat();
            let err = decompress(&file, u64::MAX, LIMIT_KIB)
                .unwrap_err()
                .to_string();
            assert!(err.contains("stream padding"), "{err}");
        }
        let trailing = [xa.clone(), b"garbage!".to_vec()].concat();
        assert!(decompress(&trailing, u64::MAX, LIMIT_KIB).is_err());
        // The cap counts both streams.
        let err = decompress(&[xa, xb].concat(), both.len() as u64 - 1, LIMIT_KIB)
            .unwrap_err()
            .to_string();
        assert!(err.contains("decompression bomb"), "{err}");
    }

    #[test]
    fn a_flipped_check_byte_is_an_error() {
        if !have_xz("a_flipped_check_byte_is_an_error") {
            return;
        }
        let data = payload();
        for (check, size, name) in [("crc32", 4, "CRC32"), ("crc64", 8, "CRC64")] {
            let mut file = xz(&[&format!("--check={check}")], &data);
            let at = last_check(&file, size).start + 1;
            file[at] ^= 0x10;
            let err = decompress(&file, u64::MAX, LIMIT_KIB)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("{name} of the data mismatch")),
                "{err}"
            );
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        if !have_xz("every_truncation_is_an_error") {
            return;
        }
        // Small, since each prefix decodes the blocks before its cut (unoptimized).
        let data = payload_of(160 << 10);
        for args in [&["--check=crc64"][..], &["-T2", "--block-size=16384"]] {
            let file = xz(args, &data);
            for len in (0..file.len()).step_by(97).chain([file.len() - 1]) {
                assert!(
                    decompress(&file[..len], u64::MAX, LIMIT_KIB).is_err(),
                    "{args:?}: {len} of {} bytes decoded",
                    file.len()
                );
            }
        }
    }

    #[test]
    fn a_dictionary_above_the_limit_is_refused() {
        if !have_xz("a_dictionary_above_the_limit_is_refused") {
            return;
        }
        let data = b"a small payload\n".repeat(50);
        // xz -6 (the default) writes an 8 MiB dictionary: above a 1 MiB limit.
        let file = xz(&[], &data);
        let err = decompress(&file, u64::MAX, 1 << 10)
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than the limit of 1024 KiB"), "{err}");
        assert_eq!(
            decompress(&file, u64::MAX, LIMIT_KIB).as_deref(),
            Ok(&data[..])
        );

        // The same block header claiming a 4 GiB dictionary (properties byte 40, with its
        // CRC32 redone), through the limit the crate uses.
        let mut file = file;
        let header_size = (usize::from(file[12]) + 1) * 4;
        let header = 12..12 + header_size;
        assert_eq!(file[14..16], [0x21, 0x01], "one LZMA2 filter, no sizes");
        file[16] = 40;
        let crc = crc32(&file[header.start..header.end - 4]).to_le_bytes();
        file[header.end - 4..header.end].copy_from_slice(&crc);
        let err = crate::elf::compressed::xz(&file, u64::MAX).unwrap_err();
        assert!(
            matches!(
                err,
                DecompressError::Unsupported {
                    offset: Some(12),
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("more than the limit"), "{err}");
        file[16] = 41;
        let crc = crc32(&file[header.start..header.end - 4]).to_le_bytes();
        file[header.end - 4..header.end].copy_from_slice(&crc);
        let err = decompress(&file, u64::MAX, LIMIT_KIB)
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid LZMA2 dictionary size"), "{err}");
    }

    #[test]
    fn other_filters_are_refused_by_name() {
        if !have_xz("other_filters_are_refused_by_name") {
            return;
        }
        let file = xz(&["--x86", "--lzma2"], &payload());
        let err = decompress(&file, u64::MAX, LIMIT_KIB)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unsupported: the block: a filter chain of 2 filters, the first 0x4"),
            "{err}"
        );
    }

    #[test]
    fn garbage_is_an_error() {
        for bytes in [
            &b""[..],
            b"\xfd7zXZ\0",
            b"\xfd7zXZ\0\0\x01\0\0\0\0",
            b"not xz at all",
        ] {
            assert!(decompress(bytes, u64::MAX, LIMIT_KIB).is_err(), "{bytes:?}");
        }
    }
}
