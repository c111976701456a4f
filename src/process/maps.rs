//! Parsing `/proc/PID/maps`: one [`Mapping`] per line, typed.
//!
//! This is the I/O-free core: [`parse_maps`] takes the file's bytes (read by
//! [`super::Process::read_maps`], or given by a caller who captured them elsewhere, e.g. a
//! fixture or a `perf` recording) and a name used in errors. It does not open the mapped files
//! and does not know where procfs is.
//!
//! The kernel writes each line as
//! `start-end perms offset major:minor inode` followed, when the mapping has a name, by
//! padding spaces and the name (`fs/proc/task_mmu.c`, `show_map_vma`). The name is everything
//! after the whitespace that follows the inode, to the end of the line, so paths with spaces
//! (and with trailing spaces) are kept whole. A path whose file was deleted ends in
//! ` (deleted)`; that suffix is stripped and flagged. The kernel escapes a newline in a path
//! as `\012`; this parser keeps such escapes as they are (it does not unescape).
//!
//! Malformed lines are an error naming the line (1-based), not skipped: the format is fixed
//! by the kernel, so a line that does not fit means the input is not a maps file, and skipping
//! it would silently lose a mapping and mis-symbolize every address in it. Empty lines are
//! ignored (a trailing newline, or a file concatenated from pieces).

use std::ffi::OsStr;
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::addr::{AbsAddr, FileOffset, VirtAddr};
use crate::elf::ElfFile;
use crate::error::{Error, Result};

/// The suffix the kernel appends to the path of a file that was deleted (or replaced).
const DELETED_SUFFIX: &[u8] = b" (deleted)";

/// The access flags of a mapping (`r-xp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Perms {
    /// Readable (`r`).
    pub read: bool,
    /// Writable (`w`).
    pub write: bool,
    /// Executable (`x`).
    pub exec: bool,
    /// Shared (`s`) rather than private copy-on-write (`p`).
    pub shared: bool,
}

/// The device a mapped file lives on, as `major:minor` (hex in the maps file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dev {
    /// Major device number.
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
}

/// What backs a mapping, from its name column.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MappingKind {
    /// A file, named by its path as the process sees it (relative to the process's root
    /// directory, which for a container process is not the host's).
    File {
        /// The path, without any ` (deleted)` suffix.
        path: PathBuf,
        /// The file was deleted or replaced after it was mapped: the path no longer names
        /// it; it can only be opened through `/proc/PID/map_files/`.
        deleted: bool,
    },
    /// A `memfd_create` file (`/memfd:NAME (deleted)`): never on disk, openable only through
    /// `/proc/PID/map_files/`. JIT engines and some loaders map ELF files from memfds.
    Memfd {
        /// The name given to `memfd_create` (without the `memfd:` prefix).
        name: PathBuf,
    },
    /// The kernel's vDSO (`[vdso]`).
    Vdso,
    /// The vDSO's data pages (`[vvar]`, `[vvar_vclock]`).
    Vvar,
    /// The legacy fixed vsyscall page (`[vsyscall]`).
    Vsyscall,
    /// The program break heap (`[heap]`).
    Heap,
    /// The main thread's stack (`[stack]`; older kernels also named thread stacks
    /// `[stack:TID]`).
    Stack,
    /// Anonymous memory without a name (no name column).
    Anonymous,
    /// Anonymous memory named with `prctl(PR_SET_VMA_ANON_NAME)` (`[anon:NAME]`) or shared
    /// anonymous memory so named (`[anon_shmem:NAME]`); holds the whole name column.
    AnonNamed(String),
    /// Any other name: `[uprobes]`, `anon_inode:[perf_event]`, a name this parser does not
    /// know. Holds the name column as it was (invalid UTF-8 replaced).
    Other(String),
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// The addresses the mapping covers: `start..end`, end exclusive.
    pub range: Range<AbsAddr>,
    /// Access flags.
    pub perms: Perms,
    /// Where in the backing file `range.start` is (0 for anonymous memory).
    pub file_offset: FileOffset,
    /// Device of the backing file (`00:00` for anonymous memory).
    pub dev: Dev,
    /// Inode of the backing file (0 for anonymous memory).
    pub inode: u64,
    /// What backs the mapping.
    pub kind: MappingKind,
}

/// The offset in a mapped file of the absolute address `addr`, for a mapping of `range`
/// whose start is the file's offset `start_offset`: `addr - start + start_offset`, as
/// `/proc/PID/maps` and perf's MMAP records state mappings. This is the one place an
/// absolute process address becomes a file offset ([`Mapping::file_offset`], the unwinder's
/// `Module`). `None` if `addr` is outside the mapping (or the sum overflows, which only a
/// made-up mapping can cause).
pub fn file_offset_in(
    range: &Range<AbsAddr>,
    start_offset: FileOffset,
    addr: AbsAddr,
) -> Option<FileOffset> {
    if !(range.start <= addr && addr < range.end) {
        return None;
    }
    let into = addr.0 - range.start.0;
    start_offset.0.checked_add(into).map(FileOffset)
}

impl Mapping {
    /// Whether `addr` lies in this mapping.
    pub fn contains(&self, addr: AbsAddr) -> bool {
        self.range.start <= addr && addr < self.range.end
    }

    /// The offset in the backing file of the absolute address `addr` ([`file_offset_in`]).
    pub fn file_offset(&self, addr: AbsAddr) -> Option<FileOffset> {
        file_offset_in(&self.range, self.file_offset, addr)
    }

    /// The absolute address at which this mapping holds the file's byte at `offset`: the
    /// inverse of [`Mapping::file_offset`]; `None` when the mapping does not cover it.
    pub fn abs_addr_of_file_offset(&self, offset: FileOffset) -> Option<AbsAddr> {
        let into = offset.0.checked_sub(self.file_offset.0)?;
        let addr = self.range.start.0.checked_add(into)?;
        (addr < self.range.end.0).then_some(AbsAddr(addr))
    }

    /// The absolute address of the ELF virtual address `virt` of `elf`, the file this
    /// mapping maps (a symbol's `st_value`, a probe's address): through the file's segments
    /// to a file offset, then into this mapping. `None` when `virt` is in no segment with
    /// file contents or this mapping does not cover it (another mapping of the same file
    /// may: ask each). With [`Mapping::file_offset`] and
    /// [`Segments::file_offset_to_virt`](crate::elf::Segments::file_offset_to_virt), the
    /// round trip between the kinds of addresses.
    pub fn virt_to_abs(&self, elf: &ElfFile, virt: VirtAddr) -> Option<AbsAddr> {
        self.abs_addr_of_file_offset(elf.segments().virt_to_file_offset(virt)?)
    }

    /// Whether the mapping is backed by a file that can be opened (a file, deleted or not, or
    /// a memfd), as opposed to anonymous memory, the heap, the stack or the vDSO.
    pub fn is_file(&self) -> bool {
        matches!(
            self.kind,
            MappingKind::File { .. } | MappingKind::Memfd { .. }
        )
    }

    /// Whether the backing file is gone from its path: deleted or replaced, or a memfd.
    pub fn is_deleted(&self) -> bool {
        matches!(
            self.kind,
            MappingKind::File { deleted: true, .. } | MappingKind::Memfd { .. }
        )
    }

    /// The path of the backing file as the maps line names it, for a file or a memfd
    /// (`/memfd:NAME`); `None` for other mappings.
    pub fn file_path(&self) -> Option<PathBuf> {
        match &self.kind {
            MappingKind::File { path, .. } => Some(path.clone()),
            MappingKind::Memfd { name } => {
                let mut path = PathBuf::from("/memfd:");
                path.as_mut_os_string().push(name.as_os_str());
                Some(path)
            }
            _ => None,
        }
    }

    /// The name of the mapping's entry in `/proc/PID/map_files/`: `start-end` in lowercase hex
    /// without `0x`, as the kernel names it.
    pub fn map_files_name(&self) -> String {
        format!("{:x}-{:x}", self.range.start.0, self.range.end.0)
    }
}

/// Parses the text of a `/proc/PID/maps` file. `name` is only used in errors (pass the path
/// the bytes were read from). Mappings are returned in file order (the kernel writes them
/// sorted by address).
///
/// ```
/// use stacksym::process::{parse_maps, MappingKind};
/// # fn main() -> stacksym::Result<()> {
/// let text = b"7f00-8000 r-xp 00001000 fe:00 42     /usr/lib/my lib.so (deleted)\n";
/// let maps = parse_maps("/proc/1/maps".as_ref(), text)?;
/// assert_eq!(
///     maps[0].kind,
///     MappingKind::File { path: "/usr/lib/my lib.so".into(), deleted: true }
/// );
/// # Ok(())
/// # }
/// ```
pub fn parse_maps(name: &Path, text: &[u8]) -> Result<Vec<Mapping>> {
    let mut mappings = Vec::new();
    for (index, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match parse_line(line) {
            Ok(mapping) => mappings.push(mapping),
            Err(what) => {
                return Err(Error::Process {
                    path: name.to_path_buf(),
                    what: format!("line {}: {what}: \"{}\"", index + 1, shorten(line)),
                })
            }
        }
    }
    Ok(mappings)
}

/// A line quoted in an error of this parser (procfs text, written by the kernel; a perf map,
/// which may be any file, is never quoted), cut to a readable length.
pub(crate) fn shorten(line: &[u8]) -> String {
    const MAX: usize = 120;
    let line = String::from_utf8_lossy(line);
    match line.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line.into_owned(),
    }
}

/// Splits off the next field: skips leading blanks, then takes up to the next blank. Shared
/// with [`super::perfmap`], whose lines are split the same way.
pub(crate) fn next_field<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let start = rest.iter().position(|&b| b != b' ' && b != b'\t')?;
    let tail = &rest[start..];
    let len = tail
        .iter()
        .position(|&b| b == b' ' || b == b'\t')
        .unwrap_or(tail.len());
    let (field, after) = tail.split_at(len);
    *rest = after;
    Some(field)
}

/// `field` as hex, or `why` it is not.
fn hex(field: &[u8], why: &'static str) -> Result<u64, &'static str> {
    hex_digits(field).ok_or(why)
}

/// 1 to 16 hex digits and nothing else (no `0x`, no sign: `from_str_radix` alone would accept
/// a leading `+`, which procfs never writes).
pub(crate) fn hex_digits(field: &[u8]) -> Option<u64> {
    if field.is_empty() || field.len() > 16 || !field.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    // All ASCII hex digits, at most 16: always valid UTF-8 and in range.
    u64::from_str_radix(std::str::from_utf8(field).ok()?, 16).ok()
}

/// One line of the maps file, or what is wrong with it (the caller adds the file and the
/// line, which it quotes).
fn parse_line(line: &[u8]) -> Result<Mapping, &'static str> {
    // A CR would end up in the path of a file copied from another system; strip it.
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut rest = line;
    let range = next_field(&mut rest).ok_or("empty line")?;
    let perms = next_field(&mut rest).ok_or("no permissions field")?;
    let offset = next_field(&mut rest).ok_or("no offset field")?;
    let dev = next_field(&mut rest).ok_or("no device field")?;
    let inode = next_field(&mut rest).ok_or("no inode field")?;

    let dash = range
        .iter()
        .position(|&b| b == b'-')
        .ok_or("bad address range (no '-')")?;
    let start = hex(&range[..dash], "bad start address")?;
    let end = hex(&range[dash + 1..], "bad end address")?;
    if end < start {
        return Err("address range ends before it starts");
    }

    let perms = match perms {
        [r, w, x, s] => {
            let flag = |c: u8, yes: u8| match c {
                _ if c == yes => Ok(true),
                b'-' => Ok(false),
                _ => Err("bad permissions"),
            };
            Perms {
                read: flag(*r, b'r')?,
                write: flag(*w, b'w')?,
                exec: flag(*x, b'x')?,
                shared: match s {
                    b's' => true,
                    b'p' => false,
                    _ => return Err("bad permissions"),
                },
            }
        }
        _ => return Err("bad permissions"),
    };
    let file_offset = FileOffset(hex(offset, "bad offset")?);

    let colon = dev
        .iter()
        .position(|&b| b == b':')
        .ok_or("bad device (no ':')")?;
    let major = hex(&dev[..colon], "bad device")?;
    let minor = hex(&dev[colon + 1..], "bad device")?;
    let dev = Dev {
        major: u32::try_from(major).map_err(|_| "bad device")?,
        minor: u32::try_from(minor).map_err(|_| "bad device")?,
    };

    if inode.is_empty() || inode.len() > 20 || !inode.iter().all(u8::is_ascii_digit) {
        return Err("bad inode");
    }
    let inode = std::str::from_utf8(inode)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or("bad inode")?;

    // The name: everything after the whitespace that follows the inode.
    let name_start = rest
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(rest.len());
    let kind = mapping_kind(&rest[name_start..]);

    Ok(Mapping {
        range: AbsAddr(start)..AbsAddr(end),
        perms,
        file_offset,
        dev,
        inode,
        kind,
    })
}

fn mapping_kind(name: &[u8]) -> MappingKind {
    if name.is_empty() {
        return MappingKind::Anonymous;
    }
    if name.starts_with(b"/") {
        let (path, deleted) = match name.strip_suffix(DELETED_SUFFIX) {
            Some(path) => (path, true),
            None => (name, false),
        };
        if let Some(memfd) = path.strip_prefix(b"/memfd:") {
            return MappingKind::Memfd {
                name: PathBuf::from(OsStr::from_bytes(memfd)),
            };
        }
        return MappingKind::File {
            path: PathBuf::from(OsStr::from_bytes(path)),
            deleted,
        };
    }
    match name {
        b"[vdso]" => MappingKind::Vdso,
        b"[vvar]" | b"[vvar_vclock]" => MappingKind::Vvar,
        b"[vsyscall]" => MappingKind::Vsyscall,
        b"[heap]" => MappingKind::Heap,
        b"[stack]" => MappingKind::Stack,
        _ if name.starts_with(b"[stack:") => MappingKind::Stack,
        _ if name.starts_with(b"[anon:") || name.starts_with(b"[anon_shmem:") => {
            MappingKind::AnonNamed(String::from_utf8_lossy(name).into_owned())
        }
        _ => MappingKind::Other(String::from_utf8_lossy(name).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Mapping {
        let mut maps = parse_maps(Path::new("t"), line.as_bytes()).unwrap();
        assert_eq!(maps.len(), 1);
        maps.remove(0)
    }

    #[test]
    fn fields() {
        let m = one("55d0c000-55d0e000 r-xp 00002000 fe:01 247030   /usr/bin/cat\n");
        assert_eq!(m.range, AbsAddr(0x55d0c000)..AbsAddr(0x55d0e000));
        assert_eq!(
            m.perms,
            Perms {
                read: true,
                write: false,
                exec: true,
                shared: false
            }
        );
        assert_eq!(m.file_offset, FileOffset(0x2000));
        assert_eq!(
            m.dev,
            Dev {
                major: 0xfe,
                minor: 1
            }
        );
        assert_eq!(m.inode, 247030);
        assert_eq!(
            m.kind,
            MappingKind::File {
                path: "/usr/bin/cat".into(),
                deleted: false
            }
        );
        assert_eq!(m.file_offset(AbsAddr(0x55d0c010)), Some(FileOffset(0x2010)));
        assert_eq!(m.file_offset(AbsAddr(0x55d0e000)), None);
        assert_eq!(m.file_offset(AbsAddr(0x55d0bfff)), None);
        assert_eq!(
            m.abs_addr_of_file_offset(FileOffset(0x2010)),
            Some(AbsAddr(0x55d0c010))
        );
        assert_eq!(m.abs_addr_of_file_offset(FileOffset(0x1fff)), None);
        assert_eq!(m.abs_addr_of_file_offset(FileOffset(0x4000)), None);
        assert_eq!(m.map_files_name(), "55d0c000-55d0e000");
    }

    #[test]
    fn names() {
        let kind = |l: &str| one(l).kind;
        let pre = "1000-2000 rw-p 00000000 00:00 0";
        assert_eq!(kind(pre), MappingKind::Anonymous);
        assert_eq!(kind(&format!("{pre} ")), MappingKind::Anonymous);
        assert_eq!(kind(&format!("{pre}   [heap]")), MappingKind::Heap);
        assert_eq!(kind(&format!("{pre}   [stack]")), MappingKind::Stack);
        assert_eq!(kind(&format!("{pre}   [stack:42]")), MappingKind::Stack);
        assert_eq!(kind(&format!("{pre}   [vdso]")), MappingKind::Vdso);
        assert_eq!(kind(&format!("{pre}   [vvar]")), MappingKind::Vvar);
        assert_eq!(
            kind(&format!("{pre}   [anon:jit code]")),
            MappingKind::AnonNamed("[anon:jit code]".into())
        );
        assert_eq!(
            kind(&format!("{pre}   /memfd:my jit (deleted)")),
            MappingKind::Memfd {
                name: "my jit".into()
            }
        );
        assert_eq!(
            kind(&format!("{pre}   /a b/c d  (deleted)")),
            MappingKind::File {
                path: "/a b/c d ".into(),
                deleted: true
            }
        );
        assert_eq!(
            kind(&format!("{pre}   anon_inode:[perf_event]")),
            MappingKind::Other("anon_inode:[perf_event]".into())
        );
    }

    #[test]
    fn malformed_lines_name_the_line() {
        for bad in [
            "zz-2000 r-xp 0 00:00 0",
            "1000 r-xp 0 00:00 0",
            "2000-1000 r-xp 0 00:00 0",
            "1000-2000 r-x 0 00:00 0",
            "1000-2000 rwxq 0 00:00 0",
            "1000-2000 r-xp 0 0000 0",
            "1000-2000 r-xp 0 00:00 x",
            "1000-2000 r-xp 0 00:00",
            "1000-2000 r-xp +1 00:00 0",
            "11112222333344445-2000 r-xp 0 00:00 0",
        ] {
            let text = format!("1000-2000 r-xp 0 00:00 0\n\n{bad}\n");
            let err = parse_maps(Path::new("/proc/7/maps"), text.as_bytes()).unwrap_err();
            let shown = err.to_string();
            assert!(shown.starts_with("/proc/7/maps: line 3: "), "{shown}");
        }
    }
}
