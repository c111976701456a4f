//! [`DebugFinder`]: the candidate paths, in order, and the checks each must pass.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "debuginfod")]
use super::Debuginfod;
use crate::confine::ConfinedRoot;
use crate::elf::{hex, ElfFile};
use crate::error::{Error, Result};

/// The debug dir used when none is configured, as on Debian, Ubuntu and Fedora.
pub const DEFAULT_DEBUG_DIR: &str = "/usr/lib/debug";

/// Which directory a `.gnu_debuglink` candidate was found in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DebugLinkDir {
    /// The file's own directory.
    SameDir,
    /// The `.debug/` subdirectory of the file's directory.
    DotDebug,
    /// `<debug_dir>/<file's directory>/`, or under a tail of that directory
    /// (`<debug_dir>/bin/` for `/usr/bin/`, down to `<debug_dir>/` itself), as elfutils looks.
    DebugDir {
        /// The configured debug dir.
        debug_dir: PathBuf,
    },
}

/// How a debug (or supplementary) file was found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FoundBy {
    /// `<debug_dir>/.build-id/xx/rest.debug`, build-id checked.
    BuildIdDir {
        /// The configured debug dir.
        debug_dir: PathBuf,
    },
    /// The name in `.gnu_debuglink`, CRC32 checked.
    DebugLink {
        /// Where the name was found.
        dir: DebugLinkDir,
    },
    /// `<the file's name>.debug`, for a file without `.gnu_debuglink` (as elfutils looks),
    /// build-id checked.
    FileName {
        /// Where the name was found ([`DebugLinkDir::SameDir`] or [`DebugLinkDir::DotDebug`]).
        dir: DebugLinkDir,
    },
    /// The path recorded in `.gnu_debugaltlink`, build-id checked.
    AltLinkPath,
    /// `<debug_dir>/.dwz/…` for a `.gnu_debugaltlink`, build-id checked.
    DwzDir {
        /// The configured debug dir.
        debug_dir: PathBuf,
    },
    /// From a debuginfod server, or its cache (feature `debuginfod`), build-id checked.
    #[cfg(feature = "debuginfod")]
    Debuginfod {
        /// Which file of the build-id it is.
        kind: super::FileKind,
        /// The URL it was downloaded from now; `None` when it was in the cache already.
        downloaded_from: Option<String>,
    },
}

/// A debug companion that passed its checks, opened.
#[derive(Debug)]
pub struct DebugFile {
    /// The path it was opened from (as built from the debug dir or the file's directory;
    /// symlinks not resolved).
    pub path: PathBuf,
    /// How it was found.
    pub found_by: FoundBy,
    /// The opened file.
    pub elf: Arc<ElfFile>,
}

impl DebugFile {
    /// Whether this is a separate debug file (found as `….debug`, or fetched as debuginfod's
    /// `debuginfo`) rather than the binary itself: its code sections are empty, so only
    /// virtual addresses can be looked up in it.
    pub fn is_debug_file(&self) -> bool {
        #[cfg(feature = "debuginfod")]
        if let FoundBy::Debuginfod { kind, .. } = &self.found_by {
            return *kind == super::FileKind::Debuginfo;
        }
        self.path.extension().is_some_and(|e| e == "debug")
    }
}

/// Finds debug companions in a list of debug dirs (see the [module docs](super) for the
/// order and the checks).
///
/// ```
/// use stacksym::debuginfo::{DebugFinder, FoundBy};
/// use stacksym::elf::ElfFile;
/// # fn main() -> stacksym::Result<()> {
/// let finder = DebugFinder::new(vec!["testdata/debug".into()]);
/// let stripped = ElfFile::open("testdata/bin/c-buildid")?;
/// let debug = finder.find(&stripped)?.expect("testdata/debug/.build-id holds it");
/// assert!(matches!(debug.found_by, FoundBy::BuildIdDir { .. }));
/// assert_eq!(debug.elf.build_id(), stripped.build_id());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct DebugFinder {
    debug_dirs: Vec<PathBuf>,
    /// Asked after the local places, when configured.
    #[cfg(feature = "debuginfod")]
    debuginfod: Option<Arc<Debuginfod>>,
    /// The process root that candidates under its directory are confined to
    /// ([`DebugFinder::confined_to`]).
    root: Option<ConfinedRoot>,
}

impl Default for DebugFinder {
    /// A finder that looks in [`DEFAULT_DEBUG_DIR`].
    fn default() -> Self {
        DebugFinder::new(vec![PathBuf::from(DEFAULT_DEBUG_DIR)])
    }
}

/// Which file of a build-id [`DebugFinder`] asks debuginfod for (the feature's `FileKind`,
/// which does not exist without it).
#[derive(Clone, Copy)]
enum RemoteKind {
    Debuginfo,
    Executable,
}

/// What a candidate must satisfy.
#[derive(Clone, Copy)]
enum Check<'a> {
    /// Its build-id equals this one.
    BuildId(&'a [u8]),
    /// The CRC32 of the whole file equals `crc`; its build-id, if both have one, equals
    /// `build_id`.
    Crc {
        crc: u32,
        build_id: Option<&'a [u8]>,
    },
}

/// The file a search is for, as candidates are compared with it.
struct Referrer {
    /// Its real directory (symlinks resolved), if it could be found; for a file inside a
    /// process's root, the host path of its directory inside that root.
    dir: Option<PathBuf>,
    /// That directory as the debug dirs' `<debug-dir>/<file's directory>/` candidates join
    /// it: the path inside the root, for a file inside one.
    dir_to_join: Option<PathBuf>,
    /// (device, inode), to refuse the file itself as its own companion.
    id: Option<(u64, u64)>,
}

impl Referrer {
    fn of(elf: &ElfFile) -> Referrer {
        let path = elf.path();
        let id = elf
            .file_id()
            .or_else(|| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino())));
        if let Some(root) = elf.root() {
            // Never `canonicalize` a path inside a process's root: the kernel would follow its
            // absolute links on the host. Paths from maps are already the kernel's resolved
            // ones; a debug file's directory is taken as written.
            let inside = root.inside(path);
            let dir_in_root = inside
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf);
            return Referrer {
                dir: dir_in_root.as_deref().map(|dir| root.host_path(dir)),
                dir_to_join: dir_in_root,
                id,
            };
        }
        let dir = match path.canonicalize() {
            Ok(real) => real.parent().map(Path::to_path_buf),
            Err(e) => {
                log::debug!(
                    "{}: cannot resolve the file's directory ({e}); only debug dirs are searched",
                    path.display()
                );
                None
            }
        };
        Referrer {
            dir_to_join: dir.clone(),
            dir,
            id,
        }
    }
}

impl DebugFinder {
    /// A finder that looks in `debug_dirs`, in order (gdb's `debug-file-directory`,
    /// llvm-symbolizer's `--debug-file-directory`). An empty list still finds debuglink files
    /// next to the binary and in its `.debug/`.
    pub fn new(debug_dirs: Vec<PathBuf>) -> Self {
        DebugFinder {
            debug_dirs,
            #[cfg(feature = "debuginfod")]
            debuginfod: None,
            root: None,
        }
    }

    /// The same finder, for the files of a process whose root is `root`: every candidate
    /// whose path lies under `root`'s directory (debug dirs given as `<root>/usr/lib/debug`,
    /// the binary's own directory) is opened confined to it ([`ElfFile::open_under`]: no
    /// symbolic link the process planted leads to a host file); the other debug dirs (the
    /// host's, trusted) are opened as they are.
    pub fn confined_to(mut self, root: ConfinedRoot) -> Self {
        self.root = Some(root);
        self
    }

    /// The same finder (its debuginfod client included) with other debug dirs.
    pub fn with_debug_dirs(&self, debug_dirs: Vec<PathBuf>) -> Self {
        let mut finder = self.clone();
        finder.debug_dirs = debug_dirs;
        finder
    }

    /// Also asks `client`'s servers (feature `debuginfod`) when the local places have
    /// nothing: for a debug file, a dwz supplementary file, and a file by build-id.
    #[cfg(feature = "debuginfod")]
    pub fn with_debuginfod(mut self, client: Option<Arc<Debuginfod>>) -> Self {
        self.debuginfod = client;
        self
    }

    /// The debuginfod client, if one is configured.
    #[cfg(feature = "debuginfod")]
    pub fn debuginfod(&self) -> Option<&Arc<Debuginfod>> {
        self.debuginfod.as_ref()
    }

    /// `kind` of `build_id` from the debuginfod servers: `Ok(None)` when none is configured
    /// (or the feature is off), the error when the lookup failed.
    fn fetch_remote(&self, build_id: &[u8], kind: RemoteKind) -> Result<Option<DebugFile>> {
        #[cfg(feature = "debuginfod")]
        if let Some(client) = &self.debuginfod {
            let kind = match kind {
                RemoteKind::Debuginfo => super::FileKind::Debuginfo,
                RemoteKind::Executable => super::FileKind::Executable,
            };
            let fetched = client.fetch(build_id, kind)?;
            log::debug!(
                "build-id {}: {} {} (debuginfod)",
                hex(build_id),
                kind.name(),
                fetched.elf.path().display()
            );
            return Ok(Some(DebugFile {
                path: fetched.elf.path().to_path_buf(),
                found_by: FoundBy::Debuginfod {
                    kind,
                    downloaded_from: fetched.downloaded_from,
                },
                elf: fetched.elf,
            }));
        }
        let _ = (build_id, kind);
        Ok(None)
    }

    /// The configured debug dirs, in search order.
    pub fn debug_dirs(&self) -> &[PathBuf] {
        &self.debug_dirs
    }

    /// The debug companion of `elf`, or `Ok(None)` when no candidate passes its check.
    ///
    /// A local candidate that cannot be used is skipped with a `log::debug!` (gdb does the
    /// same). When none is found and a debuginfod client is configured, its servers are asked
    /// for the `debuginfo` of `elf`'s build-id; `Err` says why that failed (every server's
    /// answer, or a remembered failure).
    pub fn find(&self, elf: &ElfFile) -> Result<Option<DebugFile>> {
        if let Some(found) = self.find_local(elf) {
            return Ok(Some(found));
        }
        match elf.build_id() {
            Some(build_id) => self.fetch_remote(build_id, RemoteKind::Debuginfo),
            None => Ok(None),
        }
    }

    /// For a file without `.gnu_debuglink` (one without section headers has none), its own
    /// name with `.debug` added, in its directory and in the `.debug/` below it, as elfutils
    /// looks: eu-addr2line gives lines for elfutils' testfile52-32.noshdrs.so from
    /// testfile52-32.noshdrs.so.debug beside it. Only with a build-id, which the candidate's
    /// must equal (elfutils checks none): a name is no evidence of a match.
    fn find_by_file_name(&self, elf: &ElfFile, referrer: &Referrer) -> Option<DebugFile> {
        let build_id = elf.build_id()?;
        let dir = referrer.dir.clone()?;
        let mut name = elf.path().file_name()?.to_os_string();
        name.push(".debug");
        [
            (dir.join(&name), DebugLinkDir::SameDir),
            (dir.join(".debug").join(&name), DebugLinkDir::DotDebug),
        ]
        .into_iter()
        .find_map(|(path, dir)| {
            let found_by = FoundBy::FileName { dir };
            self.try_candidate(elf, referrer, path, Check::BuildId(build_id), found_by)
        })
    }

    /// [`DebugFinder::find`] in the debug dirs and the file's directory.
    fn find_local(&self, elf: &ElfFile) -> Option<DebugFile> {
        let referrer = Referrer::of(elf);
        if let Some(build_id) = elf.build_id() {
            for debug_dir in &self.debug_dirs {
                let Some(path) = build_id_path(debug_dir, build_id) else {
                    break;
                };
                if let Some(found) = self.try_candidate(
                    elf,
                    &referrer,
                    path,
                    Check::BuildId(build_id),
                    FoundBy::BuildIdDir {
                        debug_dir: debug_dir.clone(),
                    },
                ) {
                    return Some(found);
                }
            }
        }
        let Some((name, crc)) = elf.debuglink() else {
            return self.find_by_file_name(elf, &referrer);
        };
        let Some(name) = plain_file_name(name) else {
            log::debug!(
                "{}: ignoring .gnu_debuglink {:?}: not a plain file name",
                elf.path().display(),
                String::from_utf8_lossy(name)
            );
            return None;
        };
        let dir = referrer.dir.clone()?;
        let dir_to_join = referrer.dir_to_join.clone()?;
        let check = Check::Crc {
            crc,
            build_id: elf.build_id(),
        };
        let mut candidates = vec![
            (dir.join(name), DebugLinkDir::SameDir),
            (dir.join(".debug").join(name), DebugLinkDir::DotDebug),
        ];
        // `<debug_dir>/<the file's directory>/NAME`, then under each shorter tail of that
        // directory down to `<debug_dir>/NAME`, as elfutils looks (`/usr/bin/x`'s link is
        // also found as `<debug_dir>/bin/x.debug`; eu-addr2line finds it there too).
        let relative = without_root(&dir_to_join);
        let components: Vec<_> = relative.components().collect();
        for debug_dir in &self.debug_dirs {
            for skip in 0..=components.len() {
                let tail: PathBuf = components[skip..].iter().collect();
                candidates.push((
                    debug_dir.join(tail).join(name),
                    DebugLinkDir::DebugDir {
                        debug_dir: debug_dir.clone(),
                    },
                ));
            }
        }
        for (path, how) in candidates {
            let found_by = FoundBy::DebugLink { dir: how };
            if let Some(found) = self.try_candidate(elf, &referrer, path, check, found_by) {
                return Some(found);
            }
        }
        None
    }

    /// The dwz supplementary file named by `debug`'s `.gnu_debugaltlink` (`debug` is usually
    /// a file [`DebugFinder::find`] returned), or `Ok(None)` when it has no such section or
    /// no candidate has the recorded build-id. Candidates: the recorded path (relative to
    /// `debug`'s directory; skipped if it lies outside the debug dirs and that directory),
    /// then `<debug-dir>/.build-id/xx/rest.debug`, then `<debug-dir>/.dwz/<path after
    /// ".dwz/", or the file name>` for each debug dir, then the debuginfod servers'
    /// `debuginfo` of the recorded build-id. A debuginfod failure is logged (`log::debug!`)
    /// and reads as `Ok(None)`: without the supplementary file only the names and lines that
    /// live there are missing.
    pub fn find_supplementary(&self, debug: &ElfFile) -> Result<Option<DebugFile>> {
        let Some((_, build_id)) = debug.debugaltlink() else {
            return Ok(None);
        };
        if let Some(found) = self.find_supplementary_local(debug)? {
            return Ok(Some(found));
        }
        match self.fetch_remote(build_id, RemoteKind::Debuginfo) {
            Ok(found) => Ok(found),
            Err(e) => {
                log::debug!(
                    "{}: supplementary file (.gnu_debugaltlink): {e}",
                    debug.path().display()
                );
                Ok(None)
            }
        }
    }

    /// [`DebugFinder::find_supplementary`] in the local places.
    fn find_supplementary_local(&self, debug: &ElfFile) -> Result<Option<DebugFile>> {
        let Some((recorded, build_id)) = debug.debugaltlink() else {
            return Ok(None);
        };
        let referrer = Referrer::of(debug);
        let check = Check::BuildId(build_id);
        let recorded = Path::new(OsStr::from_bytes(recorded));
        if let Some(path) = self.allowed_alt_path(debug, &referrer, recorded) {
            if let Some(found) =
                self.try_candidate(debug, &referrer, path, check, FoundBy::AltLinkPath)
            {
                return Ok(Some(found));
            }
        }
        for debug_dir in &self.debug_dirs {
            let Some(path) = build_id_path(debug_dir, build_id) else {
                break;
            };
            let found_by = FoundBy::BuildIdDir {
                debug_dir: debug_dir.clone(),
            };
            if let Some(found) = self.try_candidate(debug, &referrer, path, check, found_by) {
                return Ok(Some(found));
            }
        }
        let Some(tail) = dwz_tail(recorded) else {
            return Ok(None);
        };
        for debug_dir in &self.debug_dirs {
            let path = debug_dir.join(".dwz").join(&tail);
            let found_by = FoundBy::DwzDir {
                debug_dir: debug_dir.clone(),
            };
            if let Some(found) = self.try_candidate(debug, &referrer, path, check, found_by) {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The recorded `.gnu_debugaltlink` path, resolved against the referring file's
    /// directory, if it exists and lies inside that directory or a debug dir.
    fn allowed_alt_path(
        &self,
        debug: &ElfFile,
        referrer: &Referrer,
        recorded: &Path,
    ) -> Option<PathBuf> {
        let path = if recorded.is_absolute() {
            match &self.root {
                // An absolute path a process's file records is a path inside its root.
                Some(root) if debug.root().is_some() => root.host_path(recorded),
                _ => recorded.to_path_buf(),
            }
        } else {
            referrer.dir.as_ref()?.join(recorded)
        };
        if let Some(inside) = self.root.as_ref().and_then(|root| root.inside(&path)) {
            // Inside a process's root nothing is canonicalized on the host (its absolute links
            // would lead out): `..` is taken as written, within the root, and the candidate is
            // opened confined; the directories it must lie in are compared the same way.
            let root = self.root.as_ref()?;
            let normal = root.host_path(&lexically_normal(&inside));
            let allowed = referrer.dir.iter().chain(&self.debug_dirs);
            if allowed.into_iter().any(|dir| normal.starts_with(dir)) {
                return Some(normal);
            }
            log::debug!(
                "{}: not reading supplementary file {}: outside the debug dirs and the file's \
                 directory",
                debug.path().display(),
                normal.display()
            );
            return None;
        }
        let real = match path.canonicalize() {
            Ok(real) => real,
            Err(e) => {
                log::trace!(
                    "{}: no supplementary file at {}: {e}",
                    debug.path().display(),
                    path.display()
                );
                return None;
            }
        };
        let allowed = referrer.dir.iter().cloned().chain(
            self.debug_dirs
                .iter()
                .filter_map(|dir| dir.canonicalize().ok()),
        );
        for dir in allowed {
            if real.starts_with(&dir) {
                return Some(path);
            }
        }
        log::debug!(
            "{}: not reading supplementary file {}: outside the debug dirs and the file's directory",
            debug.path().display(),
            real.display()
        );
        None
    }

    /// Opens `path` and returns it if it passes `check` and is not `elf` itself; else logs
    /// why not and returns `None`.
    fn try_candidate(
        &self,
        elf: &ElfFile,
        referrer: &Referrer,
        path: PathBuf,
        check: Check<'_>,
        found_by: FoundBy,
    ) -> Option<DebugFile> {
        let root = self.root.as_ref();
        try_candidate(&elf.path().display(), referrer, root, path, check, found_by)
    }

    /// The file with the GNU build-id `build_id`, for symbolizing an address normalized
    /// earlier (perhaps on another machine) without its path: for each debug dir in order,
    /// `<debug-dir>/.build-id/xx/rest` (the binary itself, as Fedora links it there), then
    /// `<debug-dir>/.build-id/xx/rest.debug` (its debug file); each candidate's build-id
    /// must equal `build_id`. Then, when a debuginfod client is configured, its servers'
    /// `executable`, else their `debuginfo` (`Err` when both fail: what each server said).
    /// `Ok(None)` when nothing is found (or `build_id` is shorter than 2 bytes).
    pub fn find_by_build_id(&self, build_id: &[u8]) -> Result<Option<DebugFile>> {
        if let Some(found) = self.find_by_build_id_locally(build_id) {
            return Ok(Some(found));
        }
        match self.fetch_remote(build_id, RemoteKind::Executable) {
            Ok(found) => Ok(found),
            Err(executable_error) => match self.fetch_remote(build_id, RemoteKind::Debuginfo) {
                Ok(found) => Ok(found),
                Err(debuginfo_error) => {
                    // Both failed for their own reasons: say both, once each.
                    let reason = |e: &Error| match e {
                        Error::Debuginfod { what, .. } => what.clone(),
                        other => other.to_string(),
                    };
                    Err(Error::Debuginfod {
                        path: PathBuf::from(format!("build-id {}", hex(build_id))),
                        what: format!(
                            "executable: {}; debuginfo: {}",
                            reason(&executable_error),
                            reason(&debuginfo_error)
                        ),
                    })
                }
            },
        }
    }

    /// [`DebugFinder::find_by_build_id`] in the debug dirs.
    fn find_by_build_id_locally(&self, build_id: &[u8]) -> Option<DebugFile> {
        let for_file = format!("build-id {}", hex(build_id));
        let nobody = Referrer {
            dir: None,
            dir_to_join: None,
            id: None,
        };
        for debug_dir in &self.debug_dirs {
            let debug = build_id_path(debug_dir, build_id)?;
            let binary = debug.with_extension("");
            for path in [binary, debug] {
                let found_by = FoundBy::BuildIdDir {
                    debug_dir: debug_dir.clone(),
                };
                let check = Check::BuildId(build_id);
                let root = self.root.as_ref();
                if let Some(found) = try_candidate(&for_file, &nobody, root, path, check, found_by)
                {
                    return Some(found);
                }
            }
        }
        None
    }
}

/// Opens `path` (confined to `root` when it lies under it: [`ElfFile::open_under`]) and checks
/// it (see [`Check`]); `None`, with a log line saying why, when it is missing, the referring
/// file itself, not ELF, or fails the check. `for_file` names what the search is for, in the
/// log.
fn try_candidate(
    for_file: &dyn std::fmt::Display,
    referrer: &Referrer,
    root: Option<&ConfinedRoot>,
    path: PathBuf,
    check: Check<'_>,
    found_by: FoundBy,
) -> Option<DebugFile> {
    let candidate = match ElfFile::open_under(root, &path) {
        Ok(candidate) => candidate,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            log::trace!("{for_file}: no debug file at {}", path.display());
            return None;
        }
        Err(e) => {
            log::debug!("{for_file}: skipping debug file candidate: {e}");
            return None;
        }
    };
    if referrer.id.is_some() && referrer.id == candidate.file_id() {
        log::debug!(
            "{for_file}: skipping debug file candidate {}: it is the file itself",
            path.display()
        );
        return None;
    }
    let refusal = match check {
        Check::BuildId(want) => match candidate.build_id() {
            Some(have) if have == want => None,
            Some(have) => Some(format!("its build-id {} is not {}", hex(have), hex(want))),
            None => Some(format!("it has no build-id (want {})", hex(want))),
        },
        Check::Crc { crc, build_id } => match candidate.whole_file_crc32() {
            Err(e) => Some(format!("its CRC32 could not be computed: {e}")),
            Ok(have) if have != crc => Some(format!(
                "its CRC32 is {have:#010x}, .gnu_debuglink says {crc:#010x}"
            )),
            Ok(_) => match (candidate.build_id(), build_id) {
                (Some(have), Some(want)) if have != want => Some(format!(
                    "the CRC matches but its build-id {} is not {}",
                    hex(have),
                    hex(want)
                )),
                _ => None,
            },
        },
    };
    if let Some(why) = refusal {
        log::debug!(
            "{for_file}: skipping debug file candidate {}: {why}",
            path.display()
        );
        return None;
    }
    log::debug!("{for_file}: debug file {} ({found_by:?})", path.display());
    Some(DebugFile {
        path,
        found_by,
        elf: Arc::new(candidate),
    })
}

/// `<debug_dir>/.build-id/xx/rest.debug`; `None` for a build-id shorter than 2 bytes (no
/// "rest"), which gdb does not look up either.
fn build_id_path(debug_dir: &Path, build_id: &[u8]) -> Option<PathBuf> {
    let (first, rest) = build_id.split_first()?;
    if rest.is_empty() {
        return None;
    }
    Some(
        debug_dir
            .join(".build-id")
            .join(format!("{first:02x}"))
            .join(format!("{}.debug", hex(rest))),
    )
}

/// `path` (absolute, inside a root) with `.` dropped and each `..` taking away the component
/// before it, never above `/`: what `RESOLVE_IN_ROOT` does with them, without touching the
/// file system.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::Normal(part) => normal.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    normal
}

/// `name` as one path component, if it is one (not empty, no `/`, not `.` or `..`).
fn plain_file_name(name: &[u8]) -> Option<&OsStr> {
    let name = OsStr::from_bytes(name);
    let mut components = Path::new(name).components();
    match (components.next(), components.next()) {
        (Some(Component::Normal(part)), None) if part.as_bytes() == name.as_bytes() => Some(part),
        _ => None,
    }
}

/// An absolute directory as a relative path, to be put under a debug dir.
fn without_root(dir: &Path) -> PathBuf {
    dir.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect()
}

/// Where under `<debug-dir>/.dwz/` to look for a recorded supplementary path: the part after
/// a `.dwz` component (Debian records `/usr/lib/debug/.dwz/x86_64-linux-gnu/libc6.debug`),
/// else its file name. Only normal components are kept.
fn dwz_tail(recorded: &Path) -> Option<PathBuf> {
    let components: Vec<_> = recorded.components().collect();
    let after_dwz = components
        .iter()
        .rposition(|c| c.as_os_str() == ".dwz")
        .map(|at| &components[at + 1..]);
    let tail: PathBuf = match after_dwz {
        Some(parts) if !parts.is_empty() => parts.iter().collect(),
        _ => PathBuf::from(recorded.file_name()?),
    };
    if tail.components().all(|c| matches!(c, Component::Normal(_))) {
        Some(tail)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_id_path_splits_the_first_byte() {
        let path = build_id_path(Path::new("/d"), &[0xab, 0x01, 0xff]).unwrap();
        assert_eq!(path, Path::new("/d/.build-id/ab/01ff.debug"));
        assert_eq!(build_id_path(Path::new("/d"), &[0xab]), None);
        assert_eq!(build_id_path(Path::new("/d"), &[]), None);
    }

    #[test]
    fn debuglink_names_must_be_plain() {
        assert_eq!(plain_file_name(b"a.debug"), Some(OsStr::new("a.debug")));
        for bad in [
            &b""[..],
            b".",
            b"..",
            b"a/b",
            b"/etc/passwd",
            b"../x",
            b"a/",
        ] {
            assert_eq!(
                plain_file_name(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn debug_dir_joins_the_files_directory() {
        let dir = without_root(Path::new("/usr/lib/x86_64-linux-gnu"));
        assert_eq!(
            Path::new("/usr/lib/debug").join(dir),
            Path::new("/usr/lib/debug/usr/lib/x86_64-linux-gnu")
        );
    }

    #[test]
    fn lexically_normal_stays_under_the_root() {
        assert_eq!(
            lexically_normal(Path::new("/usr/lib/debug/../../../../etc/./x")),
            Path::new("/etc/x")
        );
        assert_eq!(lexically_normal(Path::new("/a/b/../c")), Path::new("/a/c"));
    }

    #[test]
    fn dwz_tail_keeps_the_part_after_dwz() {
        let tail = dwz_tail(Path::new(
            "/usr/lib/debug/.dwz/x86_64-linux-gnu/libc6.debug",
        ));
        assert_eq!(tail.unwrap(), Path::new("x86_64-linux-gnu/libc6.debug"));
        assert_eq!(
            dwz_tail(Path::new("../common.dwz")).unwrap(),
            Path::new("common.dwz")
        );
        assert_eq!(dwz_tail(Path::new("/x/.dwz/../../etc")), None);
    }
}
