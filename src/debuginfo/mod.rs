//! Finding a file's debug companion: the separate file that holds the DWARF (and the full
//! `.symtab`) a distribution stripped from a binary, and the dwz supplementary file that
//! debug file may refer to.
//!
//! [`DebugFinder::find`] looks where gdb looks, in gdb's order, and takes the first candidate
//! that passes its check:
//!
//! 1. `<debug-dir>/.build-id/xx/rest.debug`, for each configured debug dir in order (default
//!    [`DEFAULT_DEBUG_DIR`]), where `xxrest` is the file's build-id in lowercase hex. The
//!    candidate's build-id must equal the file's.
//! 2. The name in the file's `.gnu_debuglink`, in the file's directory, in its `.debug/`
//!    subdirectory, then in `<debug-dir>/<file's directory>/` and under each shorter tail of
//!    that directory (`<debug-dir>/bin/` for `/usr/bin/`, down to `<debug-dir>/`, as elfutils
//!    looks) for each debug dir. The CRC32 of
//!    the whole candidate must equal the one the link records, and a candidate whose build-id
//!    differs from the file's (when both have one) is refused too.
//!
//! A candidate that is missing is passed over silently (`log::trace!`); one that exists but
//! is refused (not ELF, wrong build-id, wrong CRC, the file itself) is passed over with a
//! `log::debug!` saying why. "The file's directory" is the directory of its real path (symlinks
//! resolved, as gdb does).
//!
//! What is not followed, on purpose:
//! - a debuglink that names the file itself (or a hard link to it) is skipped: the file would
//!   be its own debug file;
//! - the debug file's own `.gnu_debuglink` is never followed: the search goes one level deep,
//!   so a chain of links, or a cycle (`a` → `b` → `a`), cannot loop;
//! - a debuglink name with a `/`, or that is `.` or `..`, is refused: every candidate is built
//!   inside a configured debug dir or the file's own directory, and nothing outside them is
//!   opened. (Symlinks inside those directories are followed as the OS follows them; Fedora's
//!   `.build-id` tree is made of symlinks.)
//!
//! [`DebugFinder::find_supplementary`] finds the dwz file a debug file names in its
//! `.gnu_debugaltlink`: the recorded path (relative to the referring file's directory; used
//! only when it lies inside a debug dir or that directory), then `<debug-dir>/.build-id/…`,
//! then `<debug-dir>/.dwz/…`; each candidate's build-id must equal the recorded one.
//!
//! [`mini_debuginfo`] reads MiniDebugInfo, the xz-compressed symbol table some distributions
//! embed in stripped binaries (`.gnu_debugdata`; feature `minidebuginfo`, on by default).
//!
//! `Debuginfod` (feature `debuginfod`, off by default) fetches what the local places lack
//! from debuginfod servers, into the cache gdb and elfutils share: a [`DebugFinder`] given a
//! client (`DebugFinder::with_debuginfod`) asks it last, for the `debuginfo` of a file's
//! build-id, of a dwz supplementary file's, and for [`DebugFinder::find_by_build_id`] the
//! `executable`, then the `debuginfo`. Nothing is fetched unless a server URL is configured.
//!
//! Split DWARF (`.dwo`/`.dwp`) is followed by `dwarf/`, since the DWARF names those files.
//! Debug files inside a container's root are searched by the symbolizer, which puts the
//! root's debug dirs first.

#[cfg(feature = "debuginfod")]
mod debuginfod;
mod finder;
mod minidebuginfo;

#[cfg(feature = "debuginfod")]
pub use debuginfod::{
    Debuginfod, DebuginfodConfig, DebuginfodStats, Fetched, FileKind, Progress, ProgressFn,
    DEFAULT_MAX_REDIRECTS, DEFAULT_NEGATIVE_TTL, DEFAULT_TIMEOUT, MAX_UNCACHED_BYTES,
};

pub use finder::{DebugFile, DebugFinder, DebugLinkDir, FoundBy, DEFAULT_DEBUG_DIR};
pub use minidebuginfo::{mini_debuginfo, MAX_MINIDEBUGINFO_BYTES};
