//! MiniDebugInfo: the `.gnu_debugdata` section Fedora and RHEL put in stripped binaries, an
//! xz-compressed ELF file whose `.symtab` holds the functions `.dynsym` lacks (static
//! functions, non-exported ones), so that a stripped binary still names every function
//! (gdb's "MiniDebugInfo"). No DWARF is in it.

use crate::elf::ElfFile;
use crate::error::Result;

/// The largest decompressed MiniDebugInfo accepted: it is a symbol table, a few MB at most
/// even for the largest programs; more is a decompression bomb.
pub const MAX_MINIDEBUGINFO_BYTES: usize = 256 << 20;

/// The ELF file inside `elf`'s `.gnu_debugdata`, decompressed; `Ok(None)` when there is no
/// such section (or the crate is built without the `minidebuginfo` feature, which
/// `log::debug!` says). `Err`, naming the file, when the section is not valid xz, does not
/// hold an ELF file, or would decompress beyond [`MAX_MINIDEBUGINFO_BYTES`]. The result is
/// named `<path>[.gnu_debugdata]`.
pub fn mini_debuginfo(elf: &ElfFile) -> Result<Option<ElfFile>> {
    let Some(compressed) = elf.section_data(".gnu_debugdata")? else {
        return Ok(None);
    };
    let mut name = elf.path().as_os_str().to_owned();
    name.push("[.gnu_debugdata]");
    decompress(elf, &compressed).map(|bytes| {
        bytes
            .map(|bytes| ElfFile::from_bytes(name, bytes))
            .transpose()
    })?
}

#[cfg(feature = "minidebuginfo")]
fn decompress(elf: &ElfFile, compressed: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut out = Capped {
        bytes: Vec::new(),
        cap: MAX_MINIDEBUGINFO_BYTES,
    };
    let mut input = compressed;
    lzma_rs::xz_decompress(&mut input, &mut out).map_err(|e| crate::Error::MalformedElf {
        path: elf.path().to_path_buf(),
        what: format!("section .gnu_debugdata (MiniDebugInfo): xz: {e}"),
    })?;
    Ok(Some(out.bytes))
}

#[cfg(not(feature = "minidebuginfo"))]
fn decompress(elf: &ElfFile, _compressed: &[u8]) -> Result<Option<Vec<u8>>> {
    log::debug!(
        "{}: has MiniDebugInfo (.gnu_debugdata), not read: stacksym was built without its \
         `minidebuginfo` feature",
        elf.path().display()
    );
    Ok(None)
}

/// A `Write` into memory that refuses to grow past `cap` (a decompression bomb stops there).
#[cfg(feature = "minidebuginfo")]
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
}

#[cfg(feature = "minidebuginfo")]
impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.cap {
            return Err(std::io::Error::other(format!(
                "decompression bomb: more than {} bytes",
                self.cap
            )));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(all(test, feature = "minidebuginfo"))]
mod tests {
    use super::*;

    #[test]
    fn output_past_the_cap_is_refused() {
        let elf = ElfFile::open(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/bin/c-minidebuginfo"
        ))
        .expect("committed test binary");
        let compressed = elf
            .section_data(".gnu_debugdata")
            .expect("readable")
            .expect("has MiniDebugInfo");
        let mut out = Capped {
            bytes: Vec::new(),
            cap: 1000,
        };
        let mut input = &compressed[..];
        let err = lzma_rs::xz_decompress(&mut input, &mut out).expect_err("over the cap");
        assert!(err.to_string().contains("decompression bomb"), "{err}");
        assert!(out.bytes.len() <= 1000);
        assert!(mini_debuginfo(&elf).expect("decompresses").is_some());
    }
}
