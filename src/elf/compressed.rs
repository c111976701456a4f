//! Whole files compressed with xz, zstd or gzip, as distributions ship kernel modules
//! (`ext4.ko.xz` on Fedora and Debian, `.ko.zst` on Ubuntu and Arch, `.ko.gz` elsewhere):
//! recognized by their magic bytes and decompressed into memory, with a cap.

use std::io::Read;

use crate::error::DecompressError;

/// A compression format recognized by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    Xz,
    Zstd,
    Gzip,
}

impl Compression {
    /// The format `data` starts with, if any.
    pub(crate) fn of(data: &[u8]) -> Option<Compression> {
        if data.starts_with(b"\xfd7zXZ\0") {
            Some(Compression::Xz)
        } else if data.starts_with(b"\x28\xb5\x2f\xfd") {
            Some(Compression::Zstd)
        } else if data.starts_with(b"\x1f\x8b") {
            Some(Compression::Gzip)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
            Compression::Gzip => "gzip",
        }
    }
}

/// `data` decompressed as `format`, at most `cap` bytes: more is an error ("decompression
/// bomb"), as is data that does not decompress. The caller adds the file (and section).
pub(crate) fn decompress(
    format: Compression,
    data: &[u8],
    cap: u64,
) -> Result<Vec<u8>, DecompressError> {
    let name = format.name();
    let mut out = Vec::new();
    match format {
        Compression::Xz => return xz(data, cap),
        Compression::Zstd => {
            let decoder = ruzstd::decoding::StreamingDecoder::new(data)
                .map_err(|e| corrupt(name, e.to_string()))?;
            read_capped(decoder, cap, &mut out).map_err(|e| e.of_format(name))?;
        }
        Compression::Gzip => {
            // The first member, as flate2's `GzDecoder` read it (and `zcat` reads more).
            let limit = usize::try_from(cap.saturating_add(1)).unwrap_or(usize::MAX);
            inflate(GZIP_WINDOW_BITS, data, &mut out, limit).map_err(|e| e.of_format(name))?;
            if out.len() as u64 > cap {
                return Err(DecompressError::TooLarge { format: name, cap });
            }
        }
    }
    Ok(out)
}

/// A [`DecompressError::Corrupt`] of `format`, without an offset.
fn corrupt(format: &'static str, what: String) -> DecompressError {
    DecompressError::Corrupt {
        format,
        what,
        offset: None,
    }
}

/// A compressed section's `data` (`SHF_COMPRESSED`, or `.zdebug_*`: zlib) decompressed to
/// exactly `size` bytes (its header's claim, which the caller has checked against its cap):
/// fewer or more is an error, as is a format other than zlib and zstd. The caller adds the
/// file and section.
pub(crate) fn decompress_section(
    format: object::CompressionFormat,
    data: &[u8],
    size: usize,
) -> Result<Vec<u8>, DecompressError> {
    use object::CompressionFormat;
    let name = match format {
        CompressionFormat::Zlib => "zlib",
        CompressionFormat::Zstandard => "zstd",
        other => {
            return Err(DecompressError::Unsupported {
                format: "section",
                what: format!("compression {other:?}"),
                offset: None,
            })
        }
    };
    let mut out = Vec::new();
    out.try_reserve_exact(size)
        .map_err(|_| DecompressError::OutOfMemory {
            format: name,
            bytes: size as u64,
        })?;
    super::bytes::advise_huge_pages(&mut out);
    if format == CompressionFormat::Zlib {
        let ended =
            inflate(ZLIB_WINDOW_BITS, data, &mut out, size).map_err(|e| e.of_format(name))?;
        if !ended && out.len() == size {
            return Err(DecompressError::SizeMismatch {
                format: name,
                claimed: size as u64,
                decoded: None,
            });
        }
    } else {
        let mut decoder = ruzstd::decoding::FrameDecoder::new();
        decoder
            .decode_all_to_vec(data, &mut out)
            .map_err(|e| corrupt(name, e.to_string()))?;
    }
    if out.len() != size {
        return Err(DecompressError::SizeMismatch {
            format: name,
            claimed: size as u64,
            decoded: Some(out.len() as u64),
        });
    }
    Ok(out)
}

/// zlib-rs's window bits for a zlib header and a 32 KiB window, as zlib's `inflateInit`.
const ZLIB_WINDOW_BITS: u8 = 15;
/// The same for a gzip header (16 + 15, as zlib's `inflateInit2`).
const GZIP_WINDOW_BITS: u8 = 16 + 15;

/// Inflates the stream at the start of `data` (its framing, zlib or gzip, chosen by
/// `window_bits`) onto `out`, with at most `limit` bytes in `out`. `Ok(true)` when the stream
/// ended (its checksum verified by zlib-rs), `Ok(false)` when `out` reached `limit` first; an
/// error for corrupt data or data that ends before its stream does. `out` grows as needed,
/// unless the caller reserved room. zlib-rs directly, not through flate2: one crate fewer
/// (two with crc32fast) in an embedder's build, for what flate2's `Decompress::decompress_vec`
/// and `GzDecoder` did here.
/// Its errors say `zlib` for their format, which the caller corrects for gzip.
fn inflate(
    window_bits: u8,
    data: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<bool, DecompressError> {
    let mut inflater = zlib_rs::Inflate::new(true, window_bits);
    loop {
        if out.len() < limit && out.len() == out.capacity() {
            let more = (limit - out.len()).min(out.len().max(64 << 10));
            out.try_reserve(more)
                .map_err(|_| DecompressError::OutOfMemory {
                    format: "zlib",
                    bytes: (out.len() + more) as u64,
                })?;
        }
        let room = limit.saturating_sub(out.len());
        let before = (inflater.total_in(), inflater.total_out());
        let consumed = usize::try_from(before.0).unwrap_or(usize::MAX);
        let input = data.get(consumed..).unwrap_or_default();
        let spare = out.spare_capacity_mut();
        let spare_len = spare.len().min(room);
        let status = inflater
            .decompress_uninit(
                input,
                spare.get_mut(..spare_len).unwrap_or_default(),
                zlib_rs::InflateFlush::Finish,
            )
            .map_err(|e| DecompressError::Corrupt {
                format: "zlib",
                what: inflater.error_message().unwrap_or(e.as_str()).to_string(),
                offset: Some(inflater.total_in()),
            })?;
        let written = usize::try_from(inflater.total_out() - before.1).unwrap_or(usize::MAX);
        if written > spare_len {
            return Err(corrupt(
                "zlib",
                format!("zlib-rs wrote {written} bytes into {spare_len}"),
            ));
        }
        // SAFETY: zlib-rs has initialized the first `written` bytes of the spare capacity it
        // was given (`total_out` counts the bytes it wrote there, and `written` is at most
        // that slice's length, checked above), so they are part of `out` now.
        unsafe { out.set_len(out.len() + written) };
        if status == zlib_rs::Status::StreamEnd {
            return Ok(true);
        }
        if (inflater.total_in(), inflater.total_out()) == before {
            // No progress: either no room is left or the input ended before the stream.
            if out.len() >= limit {
                return Ok(false);
            }
            return Err(DecompressError::Truncated {
                format: "zlib",
                what: "the compressed stream",
                offset: Some(inflater.total_in()),
            });
        }
    }
}

/// Reads `reader` to its end into `out`, failing past `cap` bytes. Its errors say `zstd`,
/// which the caller corrects for another format.
fn read_capped(reader: impl Read, cap: u64, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    reader
        .take(cap.saturating_add(1))
        .read_to_end(out)
        .map_err(|e| corrupt("zstd", e.to_string()))?;
    if out.len() as u64 > cap {
        return Err(DecompressError::TooLarge {
            format: "zstd",
            cap,
        });
    }
    Ok(())
}

/// The most memory an xz block's decoder may ask for (its dictionary, allocated before
/// anything is decoded): a hostile header can claim up to 4 GiB. `xz -9` needs 65 MiB.
#[cfg(feature = "minidebuginfo")]
const XZ_MEMORY_LIMIT_KIB: u32 = 1 << 20;

/// xz (the `minidebuginfo` feature: src/elf/xz.rs's container reader around lzma-rust2's
/// LZMA2 decoder), at most `cap` bytes; concatenated streams are read as `xz -d` reads them.
#[cfg(feature = "minidebuginfo")]
pub(crate) fn xz(data: &[u8], cap: u64) -> Result<Vec<u8>, DecompressError> {
    super::xz::decompress(data, cap, XZ_MEMORY_LIMIT_KIB)
}

#[cfg(not(feature = "minidebuginfo"))]
pub(crate) fn xz(_data: &[u8], _cap: u64) -> Result<Vec<u8>, DecompressError> {
    Err(DecompressError::Unsupported {
        format: "xz",
        what: "stacksym was built without its `minidebuginfo` feature, which reads xz".to_string(),
        offset: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// A section large enough (5 MiB) that its buffer has a 2 MiB-aligned part to advise.
    fn large_section() -> Vec<u8> {
        (0..5u32 << 20).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn a_section_decompresses_to_the_size_its_header_claims() {
        let section = large_section();
        let out = decompress_section(
            object::CompressionFormat::Zlib,
            &zlib(&section),
            section.len(),
        );
        assert!(
            out.as_deref() == Ok(&section[..]),
            "{:?}",
            out.map(|o| o.len())
        );
    }

    #[test]
    fn a_header_claiming_more_or_fewer_bytes_is_an_error() {
        let section = large_section();
        let data = zlib(&section);
        let more = decompress_section(object::CompressionFormat::Zlib, &data, section.len() + 1);
        assert_eq!(
            more,
            Err(DecompressError::SizeMismatch {
                format: "zlib",
                claimed: section.len() as u64 + 1,
                decoded: Some(section.len() as u64),
            })
        );
        assert_eq!(
            more.unwrap_err().to_string(),
            format!(
                "zlib: decompressed to {} bytes, the header claims {}",
                section.len(),
                section.len() + 1
            )
        );
        let fewer = decompress_section(object::CompressionFormat::Zlib, &data, section.len() - 1);
        assert_eq!(
            fewer,
            Err(DecompressError::SizeMismatch {
                format: "zlib",
                claimed: section.len() as u64 - 1,
                decoded: None,
            })
        );
        let truncated = decompress_section(
            object::CompressionFormat::Zlib,
            &data[..1000],
            section.len(),
        );
        assert!(
            matches!(
                truncated,
                Err(DecompressError::Truncated {
                    format: "zlib",
                    offset: Some(1000),
                    ..
                })
            ),
            "{truncated:?}"
        );
        let garbage = decompress_section(object::CompressionFormat::Zstandard, b"not zstd", 100);
        assert!(
            matches!(
                garbage,
                Err(DecompressError::Corrupt { format: "zstd", .. })
            ),
            "{garbage:?}"
        );
    }

    #[test]
    fn gzip_decompresses_up_to_its_cap_and_checks_its_trailer() {
        let file = large_section();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&file).unwrap();
        let gz = encoder.finish().unwrap();
        assert_eq!(Compression::of(&gz), Some(Compression::Gzip));
        let size = file.len() as u64;
        let out = decompress(Compression::Gzip, &gz, size);
        assert!(
            out.as_deref() == Ok(&file[..]),
            "{:?}",
            out.map(|o| o.len())
        );
        // Trailing bytes after the member are ignored, as flate2's GzDecoder did.
        let trailing = [gz.clone(), b"trailing".to_vec()].concat();
        assert!(decompress(Compression::Gzip, &trailing, size).as_deref() == Ok(&file[..]));
        let bomb = decompress(Compression::Gzip, &gz, size - 1).unwrap_err();
        assert_eq!(
            bomb,
            DecompressError::TooLarge {
                format: "gzip",
                cap: size - 1
            }
        );
        assert_eq!(
            bomb.to_string(),
            format!("gzip: decompression bomb: more than {} bytes", size - 1)
        );
        for cut in [0, 5, 100, gz.len() / 2, gz.len() - 4, gz.len() - 1] {
            let err = decompress(Compression::Gzip, &gz[..cut], size).unwrap_err();
            assert!(err.to_string().starts_with("gzip: "), "{cut}: {err}");
        }
        // A flipped CRC32 in the trailer.
        let mut damaged = gz.clone();
        let at = damaged.len() - 6;
        damaged[at] ^= 1;
        let err = decompress(Compression::Gzip, &damaged, size).unwrap_err();
        assert!(err.to_string().starts_with("gzip: "), "{err}");
    }
}
