//! The bytes of one file: memory-mapped from disk, or owned (read whole from a file that
//! must not be mapped, decompressed, or given as bytes).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::elf::sigbus::{self, Registered};
use crate::elf::MAX_READ_FILE_BYTES;
use crate::error::{Error, Result};

/// The immutable bytes of a file, mapped or owned.
///
/// Mapping a file that another process truncates while we read it raises `SIGBUS`. Files the
/// caller names (trusted) are mapped, as perf, gdb and llvm-symbolizer map them, and
/// registered with the `SIGBUS` handler of `sigbus.rs`, which makes a shrink harmless (reads
/// past the new end see zeros); files reached through another process's root (untrusted:
/// that process may change them whenever it likes) are read into memory
/// ([`FileBytes::read`], capped), which no change to the file can disturb afterwards. See
/// ARCHITECTURE.md, "Trust" and "SIGBUS".
pub(crate) enum FileBytes {
    /// Registered with the `SIGBUS` handler first, so that it is unregistered before the
    /// mapping goes (fields drop in order).
    Mapped(Registered, memmap2::Mmap),
    Owned(Box<[u8]>),
    /// Anonymous memory holding a file read in part (`partial.rs`): no file is mapped, so
    /// nothing can shrink under it; the parts not read are zero pages never touched.
    Anonymous(memmap2::Mmap),
}

impl FileBytes {
    /// Opens and maps `path`; a directory or a device is refused before mapping. Also returns
    /// the (device, inode) of the file mapped. Read into memory instead (at most
    /// [`MAX_READ_FILE_BYTES`]) when the mapping could not be protected against `SIGBUS` or
    /// the embedder turned mapping off ([`sigbus::read_files_instead_of_mapping`]).
    pub(crate) fn map(path: &Path) -> Result<(Self, (u64, u64))> {
        let io_err = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        // Refuse anything but a regular file before opening it: opening a FIFO for reading
        // blocks until a writer appears, and a device can do worse.
        refuse_non_regular(path, &std::fs::metadata(path).map_err(io_err)?)?;
        let file = File::open(path).map_err(io_err)?;
        // Checked again on the open file, in case the path was replaced in between.
        let metadata = file.metadata().map_err(io_err)?;
        refuse_non_regular(path, &metadata)?;
        let id = (metadata.dev(), metadata.ino());
        if metadata.len() == 0 {
            // mmap of an empty file fails with EINVAL, which would be a confusing message.
            return Ok((FileBytes::Owned(Box::new([])), id));
        }
        if !sigbus::mapping_allowed() {
            return Ok((Self::read(&file, path, MAX_READ_FILE_BYTES)?, id));
        }
        // SAFETY: the mapping is read-only and private. If another process truncates the file
        // while it is mapped, reads past the new end raise SIGBUS, which the handler of
        // `sigbus.rs` turns into reads of zeros for a registered mapping (registered below,
        // before any read of it).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err)?;
        match sigbus::register(map.as_ptr(), map.len()) {
            Some(registered) => Ok((FileBytes::Mapped(registered, map), id)),
            None => {
                // An unprotected mapping is not kept: read the file instead.
                drop(map);
                Ok((Self::read(&file, path, MAX_READ_FILE_BYTES)?, id))
            }
        }
    }

    /// Whether this is a mapping whose file shrank under it, so that some of its pages now
    /// read as zeros (see `sigbus.rs`). Always false for owned bytes.
    pub(crate) fn shrunk(&self) -> bool {
        match self {
            FileBytes::Mapped(registered, _) => registered.shrunk(),
            FileBytes::Owned(_) | FileBytes::Anonymous(_) => false,
        }
    }

    /// Reads the whole of `file` (opened from `path`, shown in errors) into memory: at most
    /// `cap` bytes, a larger file is an error saying so. A file whose size or modification
    /// time changed while it was read, or that read shorter or longer than its stated size,
    /// is an error ("changed while it was read"): the bytes would mix two versions.
    pub(crate) fn read(file: &File, path: &Path, cap: u64) -> Result<Self> {
        let io_err = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let metadata = file.metadata().map_err(io_err)?;
        refuse_non_regular(path, &metadata)?;
        if metadata.size() > cap {
            return Err(Error::Unsupported {
                path: path.to_path_buf(),
                what: format!(
                    "a file of {} bytes, more than the {cap} bytes read into memory (the \
                     files of another process are read, not mapped, as are all files when \
                     mapping is turned off)",
                    metadata.size()
                ),
            });
        }
        // The size is a hint only: the file may change while it is read.
        let mut bytes = Vec::with_capacity(usize::try_from(metadata.size()).unwrap_or(0));
        advise_huge_pages(&mut bytes);
        file.take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_err)?;
        if bytes.len() as u64 > cap {
            return Err(Error::Unsupported {
                path: path.to_path_buf(),
                what: format!("the file grew past the {cap} bytes read into memory"),
            });
        }
        // A file rewritten while it was read holds parts of two versions: refuse it (the
        // caller's cache keys the bytes by the size and time stated before the read).
        let after = file.metadata().map_err(io_err)?;
        let stated = |m: &std::fs::Metadata| (m.size(), m.mtime(), m.mtime_nsec(), m.ino());
        if stated(&after) != stated(&metadata) || bytes.len() as u64 != metadata.size() {
            return Err(io_err(std::io::Error::other(
                "the file changed while it was read",
            )));
        }
        Ok(FileBytes::Owned(bytes.into_boxed_slice()))
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(_, map) | FileBytes::Anonymous(map) => map,
            FileBytes::Owned(bytes) => bytes,
        }
    }

    /// Bytes mapped from disk (0 for owned bytes), for statistics.
    pub(crate) fn mapped_len(&self) -> usize {
        match self {
            FileBytes::Mapped(_, map) => map.len(),
            FileBytes::Owned(_) | FileBytes::Anonymous(_) => 0,
        }
    }
}

fn refuse_non_regular(path: &Path, metadata: &std::fs::Metadata) -> Result<()> {
    let file_type = metadata.file_type();
    if !file_type.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let kind = if file_type.is_dir() {
            "a directory"
        } else if file_type.is_fifo() {
            "a named pipe"
        } else if file_type.is_socket() {
            "a socket"
        } else if file_type.is_block_device() || file_type.is_char_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
            kind,
        });
    }
    Ok(())
}

/// `bytes` in lower-case hex, two digits a byte (how build-ids are written).
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The NUL-terminated string starting at `start` inside `table`, without its NUL.
/// `None` when `start` is outside the table or no NUL ends the string inside it.
pub(crate) fn c_str_in(table: &[u8], start: usize) -> Option<&[u8]> {
    let tail = table.get(start..)?;
    let len = find_byte(tail, 0)?;
    Some(&tail[..len])
}

/// The position of the first `needle` in `haystack`, eight bytes at a time: symbol names are
/// long (Rust and C++ names run to hundreds of bytes) and are searched on every lookup.
pub(crate) fn find_byte(haystack: &[u8], needle: u8) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let pattern = ONES * u64::from(needle);
    let mut chunks = haystack.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ pattern;
        // Sets the high bit of every byte of `x` that is zero (a match), and possibly of
        // bytes after it; the first match is found exactly below.
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            break;
        }
        offset += 8;
    }
    haystack[offset..]
        .iter()
        .position(|&b| b == needle)
        .map(|i| offset + i)
}

/// Asks the kernel for transparent huge pages behind the 2 MiB-aligned part of `buffer`'s
/// allocation, before anything is written to it. Why: a decompressed section, or a file
/// read into memory, is written once from start to end, and with 4 KiB pages each page is
/// a fault of its own: libc's 10 MB of debug sections were 2,100 of the 10,000 faults of a
/// cold batch, and the aligned parts take 1,000 of them away (about 1 ms of 70, `perf
/// stat`); the 30 MB of a pyenv `libpython` with its DWARF, read whole because a process
/// maps it (`FileBytes::read`), were 7,400 faults. The parts
/// before the first and after the last 2 MiB boundary keep small pages. Where the kernel
/// has no huge pages for it (THP off, none free) nothing changes.
pub(crate) fn advise_huge_pages(buffer: &mut Vec<u8>) {
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
            "madvise(MADV_HUGEPAGE) on a buffer of {} bytes: {}",
            buffer.capacity(),
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_byte_agrees_with_a_plain_search() {
        let text = b"_ZN4core3ptr13drop_in_place17h0123456789abcdefE@@VER\0tail@";
        for start in 0..text.len() {
            for needle in [0u8, b'@', b'E', b'x', 0x80] {
                let hay = &text[start..];
                assert_eq!(
                    find_byte(hay, needle),
                    hay.iter().position(|&b| b == needle)
                );
            }
        }
    }
}
