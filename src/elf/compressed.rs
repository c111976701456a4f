//! Whole files compressed with xz, zstd or gzip, as distributions ship kernel modules
//! (`ext4.ko.xz` on Fedora and Debian, `.ko.zst` on Ubuntu and Arch, `.ko.gz` elsewhere):
//! recognized by their magic bytes and decompressed into memory, with a cap.

use std::io::Read;

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
/// bomb"), as is data that does not decompress. The error is a message without the path,
/// which the caller adds.
pub(crate) fn decompress(format: Compression, data: &[u8], cap: u64) -> Result<Vec<u8>, String> {
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", format.name());
    let mut out = Vec::new();
    match format {
        Compression::Xz => return xz(data, cap).map_err(|e| fail(&e)),
        Compression::Zstd => {
            let decoder = ruzstd::decoding::StreamingDecoder::new(data).map_err(|e| fail(&e))?;
            read_capped(decoder, cap, &mut out).map_err(|e| fail(&e))?;
        }
        Compression::Gzip => {
            read_capped(flate2::read::GzDecoder::new(data), cap, &mut out).map_err(|e| fail(&e))?;
        }
    }
    Ok(out)
}

/// A compressed section's `data` (`SHF_COMPRESSED`, or `.zdebug_*`: zlib) decompressed to
/// exactly `size` bytes (its header's claim, which the caller has checked against its cap):
/// fewer or more is an error, as is a format other than zlib and zstd. The error is a
/// message without the file and section, which the caller adds.
pub(crate) fn decompress_section(
    format: object::CompressionFormat,
    data: &[u8],
    size: usize,
) -> Result<Vec<u8>, String> {
    use object::CompressionFormat;
    if !matches!(
        format,
        CompressionFormat::Zlib | CompressionFormat::Zstandard
    ) {
        return Err(format!("unknown compression {format:?}"));
    }
    let mut out = Vec::new();
    out.try_reserve_exact(size)
        .map_err(|_| format!("cannot allocate {size} bytes to decompress into"))?;
    advise_huge_pages(&mut out);
    match format {
        CompressionFormat::Zlib => {
            let mut inflate = flate2::Decompress::new(true);
            let status = inflate
                .decompress_vec(data, &mut out, flate2::FlushDecompress::Finish)
                .map_err(|e| format!("zlib: {e}"))?;
            if status != flate2::Status::StreamEnd && out.len() == size {
                return Err(format!(
                    "zlib: more than the {size} bytes the header claims"
                ));
            }
        }
        // Zstandard, the only other format let through above.
        _ => {
            let mut decoder = ruzstd::decoding::FrameDecoder::new();
            decoder
                .decode_all_to_vec(data, &mut out)
                .map_err(|e| format!("zstd: {e}"))?;
        }
    }
    if out.len() != size {
        return Err(format!(
            "decompressed to {} bytes, the header claims {size}",
            out.len()
        ));
    }
    Ok(out)
}

/// Asks the kernel for transparent huge pages behind the 2 MiB-aligned part of `buffer`'s
/// allocation, before anything is written to it. Why: a decompressed section is written
/// once from start to end, and with 4 KiB pages each page is a fault of its own: libc's
/// 10 MB of debug sections were 2,100 of the 10,000 faults of a cold batch, and the
/// aligned parts take 1,000 of them away (about 1 ms of 70, `perf stat`). The parts
/// before the first and after the last 2 MiB boundary keep small pages. Where the kernel
/// has no huge pages for it (THP off, none free) nothing changes.
fn advise_huge_pages(buffer: &mut Vec<u8>) {
    const HUGE_PAGE: usize = 2 << 20;
    let start = buffer.as_mut_ptr() as usize;
    let aligned_start = start.next_multiple_of(HUGE_PAGE);
    let end = start.saturating_add(buffer.capacity());
    let aligned_end = end - end % HUGE_PAGE;
    if aligned_end <= aligned_start {
        return;
    }
    // SAFETY: the range lies inside `buffer`'s allocation, which this function borrows
    // mutably; MADV_HUGEPAGE changes how future faults in it are served, not its contents.
    let result = unsafe {
        libc::madvise(
            aligned_start as *mut libc::c_void,
            aligned_end - aligned_start,
            libc::MADV_HUGEPAGE,
        )
    };
    if result != 0 {
        log::debug!(
            "madvise(MADV_HUGEPAGE) on a decompression buffer: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Reads `reader` to its end into `out`, failing past `cap` bytes.
fn read_capped(reader: impl Read, cap: u64, out: &mut Vec<u8>) -> Result<(), String> {
    reader
        .take(cap.saturating_add(1))
        .read_to_end(out)
        .map_err(|e| e.to_string())?;
    if out.len() as u64 > cap {
        return Err(format!("decompression bomb: more than {cap} bytes"));
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
pub(crate) fn xz(data: &[u8], cap: u64) -> Result<Vec<u8>, String> {
    super::xz::decompress(data, cap, XZ_MEMORY_LIMIT_KIB)
}

#[cfg(not(feature = "minidebuginfo"))]
pub(crate) fn xz(_data: &[u8], _cap: u64) -> Result<Vec<u8>, String> {
    Err("stacksym was built without its `minidebuginfo` feature, which reads xz".to_string())
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
            Err(format!(
                "decompressed to {} bytes, the header claims {}",
                section.len(),
                section.len() + 1
            ))
        );
        let fewer = decompress_section(object::CompressionFormat::Zlib, &data, section.len() - 1);
        assert_eq!(
            fewer,
            Err(format!(
                "zlib: more than the {} bytes the header claims",
                section.len() - 1
            ))
        );
        let truncated = decompress_section(
            object::CompressionFormat::Zlib,
            &data[..1000],
            section.len(),
        );
        assert!(truncated.is_err(), "a truncated stream decompressed");
        let garbage = decompress_section(object::CompressionFormat::Zstandard, b"not zstd", 100);
        assert!(garbage.unwrap_err().starts_with("zstd: "));
    }
}
