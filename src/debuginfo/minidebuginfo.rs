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
    crate::elf::compressed::xz(compressed, MAX_MINIDEBUGINFO_BYTES as u64)
        .map(Some)
        .map_err(|source| crate::Error::Decompress {
            path: elf.path().to_path_buf(),
            section: Some(".gnu_debugdata".to_string()),
            source,
        })
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
        let err = crate::elf::compressed::xz(&compressed, 1000).expect_err("over the cap");
        assert_eq!(
            err,
            crate::error::DecompressError::TooLarge {
                format: "xz",
                cap: 1000
            }
        );
        assert!(mini_debuginfo(&elf).expect("decompresses").is_some());
    }
}
