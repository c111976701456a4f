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

/// xz through lzma-rust2 (the `minidebuginfo` feature), at most `cap` bytes; concatenated
/// streams are read as `xz -d` reads them.
#[cfg(feature = "minidebuginfo")]
pub(crate) fn xz(data: &[u8], cap: u64) -> Result<Vec<u8>, String> {
    let reader = lzma_rust2::XzReader::new_mem_limit(data, true, XZ_MEMORY_LIMIT_KIB);
    let mut out = Vec::new();
    read_capped(reader, cap, &mut out)?;
    Ok(out)
}

#[cfg(not(feature = "minidebuginfo"))]
pub(crate) fn xz(_data: &[u8], _cap: u64) -> Result<Vec<u8>, String> {
    Err("stacksym was built without its `minidebuginfo` feature, which reads xz".to_string())
}
