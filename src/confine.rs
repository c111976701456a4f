//! Opening a path inside a directory taken as the root of all paths: a process's root as the
//! host reaches it (`/proc/PID/root`), so that nothing a container plants can make the host
//! open a host file.
//!
//! The kernel walks `/proc/PID/root/<path>` inside the process's root, **except absolute
//! symbolic links, which it resolves against the opener's root**: a link
//! `/usr/lib/debug/.build-id/xx/y.debug -> /etc/shadow` planted in a container would open the
//! host's file. [`open_in_root`] is the one function that opens a path that came from a
//! process (a mapped binary, its debug files found by build-id or debuglink, a dwz file, a
//! split-DWARF file, a perf map): `openat2(2)` with `RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS`
//! on a descriptor of the root (Linux 5.6 and later), else a walk one component at a time
//! (`O_PATH | O_NOFOLLOW`, each symbolic link read and resolved by hand inside the root, at
//! most [`MAX_SYMLINKS`] of them, as the kernel allows). Either way `..` never leaves the
//! root, and an absolute link restarts at the root. Only regular files are opened for reading:
//! the path is first opened with `O_PATH` (which opens nothing), checked, then reopened
//! through `/proc/self/fd`, so a FIFO or a device is never opened.
//!
//! It is a leaf utility (like `addr.rs`): `process/` opens mapped files and perf maps through
//! it, and the layers below (`elf/`, `debuginfo/`, `dwarf/`) open a confined file's companions
//! through the [`ConfinedRoot`] the file carries.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::error::{Error, Result};

/// The most symbolic links one resolution follows (the kernel's limit, `MAXSYMLINKS`).
pub const MAX_SYMLINKS: usize = 40;

/// The deepest directory nesting the fallback walk follows: it holds one descriptor per
/// level, and a hostile path must not exhaust the process's descriptors.
const MAX_WALK_DEPTH: usize = 256;

/// A directory that every path opened through it is confined to: `..` and absolute symbolic
/// links stop at it. For a process, [`crate::process::Process::root`] (`/proc/PID/root`).
///
/// Files are named by their host path (`<dir>/<path inside>`, e.g.
/// `/proc/42/root/usr/lib/libc.so.6`) in errors and results; [`ConfinedRoot::inside`] turns
/// such a name back into the path inside.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfinedRoot {
    dir: PathBuf,
}

/// What to do when the last component of a path is a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LastLink {
    /// Follow it (inside the root), as `open(2)` does.
    Follow,
    /// Refuse it (a perf map in `/tmp`, which anyone may write, must not be a link).
    Refuse,
}

impl ConfinedRoot {
    /// The root `dir` (opened, following symbolic links, each time a path is opened in it:
    /// `/proc/PID/root` is itself a link to the process's root).
    pub fn new(dir: impl Into<PathBuf>) -> ConfinedRoot {
        ConfinedRoot { dir: dir.into() }
    }

    /// The root directory, as given.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `inside` (a path inside the root; absolute or not) as a host path under the root
    /// directory: the name files opened in the root are shown by.
    pub fn host_path(&self, inside: &Path) -> PathBuf {
        self.dir.join(inside.strip_prefix("/").unwrap_or(inside))
    }

    /// The path inside the root that `host_path` names (absolute), if it lies under the root
    /// directory; `None` for any other path (a host path).
    pub fn inside(&self, host_path: &Path) -> Option<PathBuf> {
        let rest = host_path.strip_prefix(&self.dir).ok()?;
        Some(Path::new("/").join(rest))
    }

    /// Opens the regular file at `inside` for reading, confined to the root (see the
    /// [module docs](self)). Errors name the host path: it does not exist, the root is gone
    /// (the process exited), more than [`MAX_SYMLINKS`] links ([`Error::Io`]), or it is not
    /// a regular file ([`Error::NotAFile`]).
    pub fn open(&self, inside: &Path) -> Result<File> {
        self.open_with(inside, LastLink::Follow, Resolver::Best)
    }

    pub(crate) fn open_with(
        &self,
        inside: &Path,
        last: LastLink,
        resolver: Resolver,
    ) -> Result<File> {
        let shown = self.host_path(inside);
        let io = |e: std::io::Error| Error::Io {
            path: shown.clone(),
            source: e,
        };
        let root = rustix::fs::open(
            &self.dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io(e.into()))?;
        let found = open_in_root(root.as_fd(), inside, last, resolver).map_err(io)?;
        let stat = rustix::fs::fstat(&found).map_err(|e| io(e.into()))?;
        let kind = FileType::from_raw_mode(stat.st_mode);
        if kind != FileType::RegularFile {
            return Err(Error::NotAFile {
                path: shown,
                kind: match kind {
                    FileType::Directory => "a directory",
                    FileType::Fifo => "a named pipe",
                    FileType::Socket => "a socket",
                    FileType::CharacterDevice | FileType::BlockDevice => "a device",
                    FileType::Symlink => "a symbolic link",
                    _ => "not a regular file",
                },
            });
        }
        reopen_for_reading(&found).map_err(io)
    }
}

/// Which resolution [`open_in_root`] uses (the walk is chosen directly only by tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolver {
    /// `openat2`, and the walk where the kernel lacks it.
    Best,
    /// The component-by-component walk.
    #[cfg_attr(not(test), allow(dead_code))]
    Walk,
}

/// Opens `path` with `O_PATH` under the directory `root`, confined to it: `openat2` with
/// `RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS`, else (a kernel before 5.6, or a seccomp filter
/// that refuses the call) the walk of [`walk_in_root`]. The descriptor opens nothing: the
/// caller checks what it is before reading.
pub(crate) fn open_in_root(
    root: BorrowedFd<'_>,
    path: &Path,
    last: LastLink,
    resolver: Resolver,
) -> std::io::Result<OwnedFd> {
    if resolver == Resolver::Best {
        let mut flags = OFlags::PATH | OFlags::CLOEXEC;
        if last == LastLink::Refuse {
            flags |= OFlags::NOFOLLOW;
        }
        let resolve = ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS;
        // EAGAIN: a rename raced with `..` resolution; the kernel asks to try again.
        for _ in 0..3 {
            match rustix::fs::openat2(root, path, flags, Mode::empty(), resolve) {
                Ok(fd) => return Ok(fd),
                Err(Errno::AGAIN) => continue,
                Err(Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::TOOBIG) => break,
                Err(e) => return Err(e.into()),
            }
        }
        log::debug!("openat2 with RESOLVE_IN_ROOT unavailable; walking the path instead");
    }
    walk_in_root(root, path, last)
}

/// Resolves `path` under `root` one component at a time, each opened with
/// `O_PATH | O_NOFOLLOW` relative to the directory before it: a symbolic link is read and its
/// target's components take its place (an absolute target restarts at `root`), at most
/// [`MAX_SYMLINKS`] times; `..` goes back one directory and never above `root`. What the
/// kernel's `RESOLVE_IN_ROOT` does, for kernels without `openat2`. Magic links (procfs's
/// `/proc/*/root`, `/proc/*/fd/*` inside the root) are read as text like any link, so they
/// never jump either.
pub(crate) fn walk_in_root(
    root: BorrowedFd<'_>,
    path: &Path,
    last: LastLink,
) -> std::io::Result<OwnedFd> {
    // Directories entered below `root`, innermost last.
    let mut dirs: Vec<OwnedFd> = Vec::new();
    // Components still to resolve, next first (reversed, so a link's target is pushed on).
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&mut pending, path.as_os_str());
    let mut links = 0;
    let too_deep = || std::io::Error::from_raw_os_error(Errno::NAMETOOLONG.raw_os_error());
    while let Some(part) = pending.pop() {
        if part == ".." {
            dirs.pop();
            continue;
        }
        if part == "/" {
            dirs.clear();
            continue;
        }
        let dir = dirs.last().map_or(root, AsFd::as_fd);
        let fd = rustix::fs::openat(
            dir,
            part.as_os_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let kind = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
        let is_last = pending.is_empty();
        match kind {
            FileType::Symlink if is_last && last == LastLink::Refuse => return Ok(fd),
            FileType::Symlink => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Errno::LOOP.into());
                }
                let target = rustix::fs::readlinkat(&fd, "", Vec::new())?;
                push_components(&mut pending, OsStr::from_bytes(target.as_bytes()));
                if pending.len() > MAX_WALK_DEPTH * 16 {
                    return Err(too_deep());
                }
            }
            FileType::Directory => {
                if dirs.len() >= MAX_WALK_DEPTH {
                    return Err(too_deep());
                }
                dirs.push(fd);
            }
            _ if is_last => return Ok(fd),
            _ => return Err(Errno::NOTDIR.into()),
        }
    }
    match dirs.pop() {
        Some(dir) => Ok(dir),
        None => Ok(rustix::fs::openat(
            root,
            ".",
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
        )?),
    }
}

/// Pushes the components of `path` onto `pending` so that the first pops first: `/` for an
/// absolute path (back to the root), `..` as is, `.` and empty components dropped.
fn push_components(pending: &mut Vec<OsString>, path: &OsStr) {
    let parts: Vec<OsString> = Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::RootDir => Some(OsString::from("/")),
            Component::ParentDir => Some(OsString::from("..")),
            Component::Normal(name) => Some(name.to_os_string()),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    pending.extend(parts.into_iter().rev());
}

/// A descriptor for reading the file an `O_PATH` descriptor refers to: the very inode, not a
/// path that may have changed since.
fn reopen_for_reading(found: &OwnedFd) -> std::io::Result<File> {
    File::open(format!("/proc/self/fd/{}", found.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A root with a file, a host file outside it, and links of every kind to both.
    fn setup() -> (tempfile::TempDir, PathBuf) {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        let host = top.path().join("host-secret");
        std::fs::write(&host, "host secret").unwrap();
        std::fs::create_dir_all(root.join("usr/lib/debug/.build-id/ab")).unwrap();
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::write(root.join("etc/own"), "own file").unwrap();
        // The host's secret, at the same absolute path inside the root, is the root's own.
        let host_inside = root.join(host.strip_prefix("/").unwrap());
        std::fs::create_dir_all(host_inside.parent().unwrap()).unwrap();
        std::fs::write(&host_inside, "root's copy").unwrap();
        let links = root.join("usr/lib/debug/.build-id/ab");
        symlink(&host, links.join("absolute.debug")).unwrap();
        symlink("../../../../../../../../../../..", links.join("up")).unwrap();
        symlink("up/etc/own", links.join("up-then-own")).unwrap();
        symlink("/etc/own", links.join("abs-own")).unwrap();
        symlink("loop-b", links.join("loop-a")).unwrap();
        symlink("loop-a", links.join("loop-b")).unwrap();
        symlink("/proc/self/root/etc/passwd", links.join("magic")).unwrap();
        (top, root)
    }

    fn read(root: &Path, inside: &str, resolver: Resolver) -> Result<String> {
        let file =
            ConfinedRoot::new(root).open_with(Path::new(inside), LastLink::Follow, resolver)?;
        Ok(std::io::read_to_string(file).unwrap())
    }

    #[test]
    fn links_stay_inside_the_root_both_ways() {
        let (top, root) = setup();
        for resolver in [Resolver::Best, Resolver::Walk] {
            let dir = "/usr/lib/debug/.build-id/ab";
            // An absolute link to the host's file opens the root's file of that path.
            assert_eq!(
                read(&root, &format!("{dir}/absolute.debug"), resolver).unwrap(),
                "root's copy",
                "{resolver:?}"
            );
            assert_eq!(
                read(&root, &format!("{dir}/up-then-own"), resolver).unwrap(),
                "own file"
            );
            assert_eq!(
                read(&root, &format!("{dir}/abs-own"), resolver).unwrap(),
                "own file"
            );
            assert_eq!(
                read(&root, "/../../../etc/own", resolver).unwrap(),
                "own file"
            );
            let looped = read(&root, &format!("{dir}/loop-a"), resolver).unwrap_err();
            assert!(looped.to_string().contains("symbolic links"), "{looped}");
            // /proc/self/root inside the root is not the host's procfs: there is no /proc.
            assert!(read(&root, &format!("{dir}/magic"), resolver).is_err());
            let dir_err = read(&root, "/etc", resolver).unwrap_err();
            assert!(matches!(dir_err, Error::NotAFile { .. }), "{dir_err}");
            let missing = read(&root, "/no/such", resolver).unwrap_err();
            assert!(missing.to_string().contains(&root.display().to_string()));
        }
        drop(top);
    }

    #[test]
    fn a_last_link_can_be_refused() {
        let (_top, root) = setup();
        for resolver in [Resolver::Best, Resolver::Walk] {
            let refused = ConfinedRoot::new(&root)
                .open_with(
                    Path::new("/usr/lib/debug/.build-id/ab/abs-own"),
                    LastLink::Refuse,
                    resolver,
                )
                .unwrap_err();
            assert!(
                matches!(
                    refused,
                    Error::NotAFile {
                        kind: "a symbolic link",
                        ..
                    }
                ),
                "{refused}"
            );
        }
    }

    #[test]
    fn fifos_are_refused_without_being_opened() {
        let (_top, root) = setup();
        let fifo = root.join("etc/fifo");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !status.is_ok_and(|s| s.success()) {
            assert!(std::env::var_os("CI").is_none(), "mkfifo is needed in CI");
            eprintln!("SKIPPED: fifos_are_refused_without_being_opened: no mkfifo");
            return;
        }
        for resolver in [Resolver::Best, Resolver::Walk] {
            // Opening a FIFO for reading would block until a writer came.
            let e = read(&root, "/etc/fifo", resolver).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::NotAFile {
                        kind: "a named pipe",
                        ..
                    }
                ),
                "{e}"
            );
        }
    }

    #[test]
    fn host_paths_and_back() {
        let root = ConfinedRoot::new("/proc/42/root");
        let shown = root.host_path(Path::new("/usr/lib/x.so"));
        assert_eq!(shown, Path::new("/proc/42/root/usr/lib/x.so"));
        assert_eq!(root.inside(&shown).unwrap(), Path::new("/usr/lib/x.so"));
        assert_eq!(root.inside(Path::new("/usr/lib/debug")), None);
        assert_eq!(root.inside(Path::new("/proc/42/rootx/a")), None);
    }
}
