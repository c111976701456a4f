//! Live processes: their memory maps, the files behind them, and absolute addresses turned
//! into file offsets, normalized addresses and symbols.
//!
//! Input comes from procfs: `<procfs_root>/<pid>/maps` for the mappings (parsed by the
//! I/O-free [`parse_maps`]), `<procfs_root>/<pid>/root/<path>` to open a mapped file as the
//! process sees it (so a container process's files are its own, not the host's), and
//! `<procfs_root>/<pid>/map_files/<start>-<end>` for a deleted file or a memfd. The procfs
//! root is `/proc` unless configured ([`Process::with_procfs_root`]): a tracer in a container
//! sees the host's procfs elsewhere, e.g. at `/host/proc`.
//!
//! Also here: the vDSO of another process, read from `<procfs_root>/<pid>/mem`
//! ([`Process::vdso`]), perf's JIT maps (`/tmp/perf-PID.map`, in the container's `/tmp` first:
//! [`Process::perf_map`]), jitdump files (`jit-PID.dump`, the ones the process maps:
//! [`Process::jit_dumps`]; parsed by the I/O-free [`parse_jitdump`]), and the in-container pid (`NSpid`, [`Process::ns_pid`]).
//!
//! Every path that comes from the process is untrusted: a mapped file is opened through
//! `<procfs_root>/<pid>/map_files/<start>-<end>` (the very inode mapped) where that is
//! permitted, else by its path confined to the process's root (no
//! symbolic link leads out of it) with its (device, inode) checked against the maps line
//! ([`Process::open_mapped`]); perf maps are opened confined too. Files so opened are read
//! into memory, not mapped (the process may truncate them at any time).
//!
//! This layer does no caching: every call reads procfs anew. The façade caches maps per
//! process ([`Source::Process`](crate::Source::Process)), and
//! symbolizing is its job too; this layer reads ELF files only for their build-ids
//! (normalization).

mod jitdump;
mod maps;
mod perfmap;
mod vdso;

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub use jitdump::{
    parse_growing_jitdump, parse_jitdump, read_jit_dump, JitCode, JitDump, JitDumpHeader,
    JitSourceLine, JitUnwindingInfo, MAX_JITDUMP_BYTES,
};
pub use maps::{file_offset_in, parse_maps, Dev, Mapping, MappingKind, Perms};
pub use perfmap::{parse_perf_map, PerfMap, PerfMapSym, MAX_PERF_MAP_BYTES};
pub use vdso::MAX_VDSO_BYTES;

use crate::addr::{AbsAddr, FileOffset, VirtAddr};
use crate::confine::ConfinedRoot;
use crate::elf::{ElfFile, Segments};
use crate::error::{Error, Result};

/// The fields of a `<pid>/stat` line after `PID (COMM)`, from STATE on. COMM may hold spaces
/// and parentheses, so they start after the line's last `)`.
fn stat_fields(stat: &[u8]) -> Option<std::str::SplitAsciiWhitespace<'_>> {
    let after = stat.iter().rposition(|&b| b == b')')?;
    Some(
        std::str::from_utf8(stat.get(after + 1..)?)
            .ok()?
            .split_ascii_whitespace(),
    )
}

/// The default procfs root.
pub const DEFAULT_PROCFS_ROOT: &str = "/proc";

/// `ESRCH` on Linux: reading `/proc/PID/maps` of a process whose memory is being torn down.
const ESRCH: i32 = 3;

/// The mappings of one process, sorted by start address, with lookups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessMaps {
    pub(crate) mappings: Vec<Mapping>,
}

impl ProcessMaps {
    /// Parses the text of a maps file (see [`parse_maps`]); `name` is used in errors.
    pub fn from_bytes(name: &Path, text: &[u8]) -> Result<ProcessMaps> {
        Ok(ProcessMaps::from_mappings(parse_maps(name, text)?))
    }

    /// Wraps mappings, sorting them by start address.
    pub fn from_mappings(mut mappings: Vec<Mapping>) -> ProcessMaps {
        mappings.sort_by_key(|m| m.range.start);
        ProcessMaps { mappings }
    }

    /// All mappings, by start address.
    pub fn mappings(&self) -> &[Mapping] {
        &self.mappings
    }

    /// The mapping that contains `addr`, if any. Mappings from the kernel never overlap; if
    /// given ones do, the one with the highest start at or below `addr` is asked.
    pub fn find(&self, addr: AbsAddr) -> Option<&Mapping> {
        self.find_index(addr)
            .and_then(|index| self.mappings.get(index))
    }

    /// The index (in [`ProcessMaps::mappings`]) of the mapping that contains `addr`.
    pub(crate) fn find_index(&self, addr: AbsAddr) -> Option<usize> {
        let index = self
            .mappings
            .partition_point(|m| m.range.start <= addr)
            .checked_sub(1)?;
        self.mappings.get(index)?.contains(addr).then_some(index)
    }
}

/// An absolute address of a process, normalized: which file and where in it, so that it can be
/// symbolized later or on another machine.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NormalizedAddr {
    /// The GNU build-id of the file, if it has one and could be read.
    pub build_id: Option<Vec<u8>>,
    /// The offset in the file.
    pub file_offset: FileOffset,
    /// The ELF virtual address at that offset (from the file's `PT_LOAD` segments), which
    /// the file's separate debug file understands too (its segments have no file contents,
    /// so offsets mean nothing to it); `None` when the file could not be read or the offset
    /// is in no segment.
    pub virt_addr: Option<VirtAddr>,
    /// The path as the process's maps name it (relative to the process's root directory).
    /// For a memfd, `/memfd:NAME`.
    pub path: PathBuf,
    /// Whether the file was deleted or replaced after it was mapped (always for a memfd).
    pub deleted: bool,
}

/// What one absolute address normalizes to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Normalized {
    /// The address is in a file mapping.
    File(NormalizedAddr),
    /// The address is mapped, but not from a file (vDSO, heap, stack, anonymous memory, ...).
    NotInFile(MappingKind),
    /// No mapping contains the address.
    Unmapped,
}

/// One process, by its pid as seen in the procfs at `procfs_root`. Holds no open handles:
/// every call reads procfs anew.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Process {
    procfs_root: PathBuf,
    pid: u32,
}

impl Process {
    /// The process `pid` in `/proc`.
    pub fn new(pid: u32) -> Process {
        Process::with_procfs_root(DEFAULT_PROCFS_ROOT, pid)
    }

    /// The process `pid` in the procfs mounted at `procfs_root` (e.g. `/host/proc` for a
    /// tracer in a container that sees the host's procfs there; the pid is the host's).
    pub fn with_procfs_root(procfs_root: impl Into<PathBuf>, pid: u32) -> Process {
        Process {
            procfs_root: procfs_root.into(),
            pid,
        }
    }

    /// The pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `<procfs_root>/<pid>`.
    pub fn proc_dir(&self) -> PathBuf {
        self.procfs_root.join(self.pid.to_string())
    }

    /// `<procfs_root>/<pid>/maps`.
    pub fn maps_path(&self) -> PathBuf {
        self.proc_dir().join("maps")
    }

    /// Reads and parses the process's maps. Errors: the process does not exist or exited
    /// ([`Error::Process`] naming the pid), the maps are not readable (permissions:
    /// [`Error::Io`]), or a line is malformed ([`Error::Process`] naming the line).
    pub fn read_maps(&self) -> Result<ProcessMaps> {
        let path = self.maps_path();
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(ESRCH) =>
            {
                return Err(self.gone(&format!("({e})")));
            }
            Err(source) => return Err(Error::Io { path, source }),
        };
        let maps = ProcessMaps::from_bytes(&path, &text)?;
        // A zombie has no memory left, and reads as empty maps; a kernel thread has none
        // either, but is alive. Only the first is an error.
        if maps.mappings.is_empty() && self.is_gone() {
            return Err(self.gone("(it is a zombie)"));
        }
        Ok(maps)
    }

    /// The error for a process that does not exist (any more).
    pub(crate) fn gone(&self, detail: &str) -> Error {
        Error::ProcessGone {
            path: self.maps_path(),
            pid: self.pid,
            detail: detail.to_string(),
        }
    }

    /// Whether the process is gone: its procfs directory is missing, or it is a zombie
    /// (state `Z` or `X` in `<pid>/stat`).
    pub(crate) fn is_gone(&self) -> bool {
        let Some(stat) = self.read_stat() else {
            return true;
        };
        let state = stat_fields(&stat).and_then(|mut fields| fields.next());
        matches!(state, Some("Z" | "X"))
    }

    /// When the process started (field 22 of `<pid>/stat`, clock ticks since boot): with the
    /// pid, it tells one process's life from another's that reuses the pid. `None` when the
    /// process is gone or the line is not what procfs writes.
    pub fn start_time(&self) -> Option<u64> {
        let stat = self.read_stat()?;
        // Fields after COMM start with STATE, field 3, so field 22 is the 20th of them.
        stat_fields(&stat)?.nth(19)?.parse().ok()
    }

    fn read_stat(&self) -> Option<Vec<u8>> {
        std::fs::read(self.proc_dir().join("stat")).ok()
    }

    /// The process's root directory as the host reaches it, `<procfs>/<pid>/root`: a
    /// container's own file system (its files, and its debug files under it).
    pub fn root_dir(&self) -> PathBuf {
        self.proc_dir().join("root")
    }

    /// The process's root directory as a `ConfinedRoot`: every path that came from the
    /// process is opened through it.
    pub fn root(&self) -> ConfinedRoot {
        ConfinedRoot::new(self.root_dir())
    }

    /// Opens the file behind `mapping` for reading (`None` for a mapping not backed by a
    /// file), with the name it is shown by (`<procfs_root>/<pid>/root/<path>`, or the
    /// `map_files` entry for a deleted file or a memfd):
    ///
    /// 1. `<procfs_root>/<pid>/map_files/<start>-<end>`: the very inode mapped, whatever has
    ///    happened to its path since (needs `CAP_SYS_ADMIN` or `CAP_CHECKPOINT_RESTORE`);
    /// 2. where that is not permitted, the mapping's path confined to the process's root
    ///    ([`Process::root`]), and then the opened file's (device, inode) must be the maps
    ///    line's: a file replaced since it was mapped is an [`Error::Process`] saying so, and
    ///    is not symbolized (its symbols would be another file's).
    ///
    /// A deleted file or a memfd has only the first way. Anything but a regular file (a
    /// mapped device) is refused without being opened.
    pub fn open_mapped(&self, mapping: &Mapping) -> Option<Result<(File, PathBuf)>> {
        let map_files = self
            .proc_dir()
            .join("map_files")
            .join(mapping.map_files_name());
        let in_root = match &mapping.kind {
            MappingKind::File {
                path,
                deleted: false,
            } => path,
            MappingKind::File { deleted: true, .. } | MappingKind::Memfd { .. } => {
                return Some(open_regular(&map_files).map(|file| (file, map_files)));
            }
            _ => return None,
        };
        let root = self.root();
        let shown = root.host_path(in_root);
        match open_regular(&map_files) {
            Ok(file) => return Some(Ok((file, shown))),
            Err(e) => log::trace!(
                "process {}: {e}; opening {} confined to its root",
                self.pid,
                in_root.display()
            ),
        }
        let opened = root.open(in_root).and_then(|file| {
            let metadata = file.metadata().map_err(|source| Error::Io {
                path: shown.clone(),
                source,
            })?;
            let have = (dev_of(metadata.dev()), metadata.ino());
            let want = (mapping.dev, mapping.inode);
            if have != want {
                return Err(Error::Process {
                    path: shown.clone(),
                    what: format!(
                        "not the file process {} mapped: device {}:{} inode {} at that path \
                         now, device {}:{} inode {} mapped (replaced since it was mapped); \
                         not symbolized",
                        self.pid,
                        have.0.major,
                        have.0.minor,
                        have.1,
                        want.0.major,
                        want.0.minor,
                        want.1
                    ),
                });
            }
            Ok(file)
        });
        Some(opened.map(|file| (file, shown)))
    }

    /// The process's threads (`/proc/PID/task`), each as (the id `/proc` gives it, the id it
    /// has in its own pid namespace): the last `NSpid:` value of its `status`, the same id
    /// where there is no namespace of its own (or no `NSpid:` line, before Linux 4.1). A
    /// process in a container knows its threads by the second (CPython's
    /// `native_thread_id`, glibc's `struct pthread`); ptrace and the host know the first.
    /// Empty when the threads cannot be listed (the process gone, no permission).
    pub(crate) fn thread_ids(&self) -> Vec<(u32, u32)> {
        let dir = self.proc_dir().join("task");
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                log::debug!("{}: {e}", dir.display());
                return Vec::new();
            }
        };
        entries
            .filter_map(|entry| {
                let tid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
                let status = std::fs::read_to_string(dir.join(tid.to_string()).join("status"));
                let own = status.ok().and_then(|status| {
                    status
                        .lines()
                        .find_map(|line| line.strip_prefix("NSpid:"))?
                        .split_whitespace()
                        .last()?
                        .parse()
                        .ok()
                });
                Some((tid, own.unwrap_or(tid)))
            })
            .collect()
    }

    /// The (device, inode) of the process's executable, as its maps lines state a file's:
    /// the file `/proc/PID/exe` names, stat'ed through the kernel's link (not opened).
    /// `None` when that cannot be told (the process gone, a kernel thread, no permission).
    pub(crate) fn executable_id(&self) -> Option<(Dev, u64)> {
        let exe = std::fs::metadata(self.proc_dir().join("exe")).ok()?;
        Some((dev_of(exe.dev()), exe.ino()))
    }

    /// The host path that names this process's file behind `mapping`:
    /// `<procfs_root>/<pid>/root/<path>` for a file, or
    /// `<procfs_root>/<pid>/map_files/<start>-<end>` for a deleted file or a memfd. `None`
    /// for a mapping not backed by a file.
    ///
    /// Do not open it with the OS's path resolution: an absolute symbolic link inside the
    /// process's root would lead to a host file. [`Process::open_mapped`] opens the file
    /// (through `map_files`, or confined to the root); this is the name it is shown by.
    pub fn open_path(&self, mapping: &Mapping) -> Option<PathBuf> {
        match &mapping.kind {
            MappingKind::File {
                path,
                deleted: false,
            } => {
                // The maps path is absolute; joining an absolute path would replace the root.
                let relative = path.strip_prefix("/").unwrap_or(path);
                Some(self.proc_dir().join("root").join(relative))
            }
            MappingKind::File { deleted: true, .. } | MappingKind::Memfd { .. } => Some(
                self.proc_dir()
                    .join("map_files")
                    .join(mapping.map_files_name()),
            ),
            _ => None,
        }
    }

    /// Normalizes absolute addresses of the process (reads its maps first); one result per
    /// address, in input order. See [`Process::normalize_with`].
    pub fn normalize(&self, addrs: &[AbsAddr]) -> Result<Vec<Normalized>> {
        let maps = self.read_maps()?;
        Ok(self.normalize_with(&maps, addrs))
    }

    /// Normalizes absolute addresses with maps read before: for each address its file, file
    /// offset and the file's build-id; [`Normalized::NotInFile`] or [`Normalized::Unmapped`]
    /// where it is in no file. Each mapped file is opened once per call, through
    /// [`Process::open_mapped`], to read its build-id; a file that cannot be opened or is not ELF
    /// gets `build_id: None` (logged with `log::debug!`), not an error.
    pub fn normalize_with(&self, maps: &ProcessMaps, addrs: &[AbsAddr]) -> Vec<Normalized> {
        // Build-id and segments per file (`None`: unreadable): its mappings share an entry.
        type FileFacts = Option<(Option<Vec<u8>>, Segments)>;
        let mut files: HashMap<FileKey, FileFacts> = HashMap::new();
        addrs
            .iter()
            .map(|&addr| {
                let Some(mapping) = maps.find(addr) else {
                    return Normalized::Unmapped;
                };
                let (true, Some(path), Some(file_offset)) = (
                    mapping.is_file(),
                    mapping.file_path(),
                    mapping.file_offset(addr),
                ) else {
                    return Normalized::NotInFile(mapping.kind.clone());
                };
                let file = files.entry(FileKey::of(mapping)).or_insert_with(|| {
                    // `is_file` above: a file mapping has a file to open.
                    let elf = self.open_mapped(mapping).map(|opened| {
                        opened.and_then(|(file, shown)| ElfFile::from_file(&file, shown))
                    });
                    let elf = elf.unwrap_or_else(|| {
                        Err(Error::Process {
                            path: self.maps_path(),
                            what: "a file mapping without a file to open".to_string(),
                        })
                    });
                    match elf {
                        Ok(elf) => {
                            Some((elf.build_id().map(<[u8]>::to_vec), elf.segments().clone()))
                        }
                        Err(e) => {
                            log::debug!("no build-id for a mapping of process {}: {e}", self.pid);
                            None
                        }
                    }
                });
                let (build_id, virt_addr) = match file {
                    Some((build_id, segments)) => {
                        (build_id.clone(), segments.file_offset_to_virt(file_offset))
                    }
                    None => (None, None),
                };
                Normalized::File(NormalizedAddr {
                    build_id,
                    file_offset,
                    virt_addr,
                    path,
                    deleted: mapping.is_deleted(),
                })
            })
            .collect()
    }
}

/// `open_path`'s file, refusing anything but a regular file before opening it (a mapped
/// device would be opened otherwise; a FIFO would block).
fn open_regular(path: &Path) -> Result<File> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.is_file() {
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
            kind: "not a regular file",
        });
    }
    File::open(path).map_err(io)
}

/// A `st_dev` as the major and minor numbers maps lines show (glibc's `major`/`minor`).
fn dev_of(dev: u64) -> Dev {
    Dev {
        major: (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)) as u32,
        minor: (((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)) as u32,
    }
}

/// Identifies a mapped file within one process's maps: the mappings of one file (its
/// read-only, code and data segments) share a key; a file replaced at the same path does not.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FileKey {
    dev: Dev,
    inode: u64,
    path: Option<PathBuf>,
}

impl FileKey {
    pub(crate) fn of(mapping: &Mapping) -> FileKey {
        FileKey {
            dev: mapping.dev,
            inode: mapping.inode,
            path: mapping.file_path(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
1000-2000 r--p 00000000 08:01 12   /bin/a b
2000-3000 r-xp 00001000 08:01 12   /bin/a b
5000-6000 rw-p 00000000 00:00 0    [heap]
7000-8000 r-xp 00002000 08:01 13   /lib/gone.so (deleted)
9000-a000 r-xp 00000000 00:01 14   /memfd:jit (deleted)
";

    #[test]
    fn lookups_and_paths() {
        let maps = ProcessMaps::from_bytes(Path::new("t"), MAPS.as_bytes()).unwrap();
        assert!(maps.find(AbsAddr(0xfff)).is_none());
        assert_eq!(
            maps.find(AbsAddr(0x1000)).unwrap().range.start,
            AbsAddr(0x1000)
        );
        assert_eq!(
            maps.find(AbsAddr(0x2fff)).unwrap().range.start,
            AbsAddr(0x2000)
        );
        assert!(maps.find(AbsAddr(0x3000)).is_none());
        assert!(maps.find(AbsAddr(u64::MAX)).is_none());
        assert_eq!(maps.find_index(AbsAddr(0x5000)), Some(2));

        let p = Process::with_procfs_root("/host/proc", 42);
        let m = |a| maps.find(AbsAddr(a)).unwrap();
        assert_eq!(
            p.open_path(m(0x2000)).unwrap(),
            Path::new("/host/proc/42/root/bin/a b")
        );
        assert_eq!(
            p.open_path(m(0x7000)).unwrap(),
            Path::new("/host/proc/42/map_files/7000-8000")
        );
        assert_eq!(
            p.open_path(m(0x9000)).unwrap(),
            Path::new("/host/proc/42/map_files/9000-a000")
        );
        assert_eq!(p.open_path(m(0x5000)), None);

        let norm = p.normalize_with(&maps, &[AbsAddr(0x2010), AbsAddr(0x5000), AbsAddr(0)]);
        assert_eq!(
            norm[0],
            Normalized::File(NormalizedAddr {
                build_id: None,
                file_offset: FileOffset(0x1010),
                virt_addr: None,
                path: "/bin/a b".into(),
                deleted: false,
            })
        );
        assert_eq!(norm[1], Normalized::NotInFile(MappingKind::Heap));
        assert_eq!(norm[2], Normalized::Unmapped);
    }
}
