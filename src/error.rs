//! The one error type of the crate.
//!
//! Every variant names the file it is about, so that a tracer that symbolizes thousands of
//! files can tell its user which one was broken and why. "Not found" is never an error: lookups
//! return `Ok(None)` for an address no symbol covers.

use std::io;
use std::path::PathBuf;

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while opening or reading a file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened, inspected or mapped.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The path names something that is not a regular file (a directory, a device, ...).
    #[error("{path}: not a regular file ({kind})")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead, e.g. "a directory".
        kind: &'static str,
    },
    /// The file does not start with the ELF magic bytes (e.g. a linker script or a text file).
    #[error("{path}: not an ELF file ({reason})")]
    NotElf {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// The file is ELF but some structure in it is inconsistent or lies outside the file.
    #[error("{path}: malformed ELF: {what}")]
    MalformedElf {
        /// The file.
        path: PathBuf,
        /// What was wrong and where (section, offset).
        what: String,
    },
    /// DWARF inside the file (debugging information in `.debug_*`, or call-frame information
    /// in `.eh_frame` / `.debug_frame`) could not be read: gimli's error is the `source`,
    /// the section and, where known, the offset of the entry say where.
    #[error("{path}: malformed DWARF in {section}{}: {context}: {source}", at_offset(*offset))]
    MalformedDwarf {
        /// The file holding the section (the binary, or its debug companion).
        path: PathBuf,
        /// The section read, e.g. `.debug_info`, `.eh_frame`.
        section: &'static str,
        /// What was being read, e.g. `unit headers`, `lines at 0x1234`.
        context: String,
        /// The offset in `section` of the entry that could not be read, when known.
        offset: Option<u64>,
        /// What gimli reported.
        #[source]
        source: gimli::Error,
    },
    /// The file is well-formed but uses something this crate does not handle.
    #[error("{path}: unsupported: {what}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is not supported.
        what: String,
    },
    /// The request does not fit: the [`crate::Input`]'s kind does not fit the
    /// [`crate::Source`] (the message names both), or the source cannot answer this question
    /// (names are looked up in files, not processes). A mistake of the caller's, not of a file.
    #[error("{path}: {what}")]
    InvalidRequest {
        /// The source asked.
        path: PathBuf,
        /// What does not fit, and what would.
        what: String,
    },
    /// What was asked for does not exist where it was looked for: no file with this build-id
    /// in the debug dirs (the message lists them).
    #[error("{path}: {what}")]
    NotFound {
        /// What was looked for (e.g. `build-id 0a1b…`).
        path: PathBuf,
        /// Where it was looked for.
        what: String,
    },
    /// The process does not exist, or exited (or became a zombie) while it was being read: a
    /// routine event for a profiler, told apart from a process whose maps are malformed
    /// ([`Error::Process`]).
    #[error("{path}: process {pid} does not exist or has exited {detail}")]
    ProcessGone {
        /// The process's maps file, e.g. `/proc/1234/maps`.
        path: PathBuf,
        /// The pid.
        pid: u32,
        /// When it was noticed, e.g. `(it is a zombie)`.
        detail: String,
    },
    /// A live process could not be used: its `/proc/PID/maps` is malformed (the message names
    /// the line), its memory (the vDSO) or its perf JIT map could not be read or parsed, a
    /// mapped file was replaced since it was mapped. `path` is the procfs or perf-map file
    /// concerned (e.g. `/proc/PID/maps`, which names the pid). A process that is gone is
    /// [`Error::ProcessGone`].
    #[error("{path}: {what}")]
    Process {
        /// The process's maps file, e.g. `/proc/1234/maps`.
        path: PathBuf,
        /// What was wrong (with the line number for a malformed line, the pid for a process
        /// that is gone).
        what: String,
    },
    /// A jitdump file (`jit-PID.dump`, perf's format for what a JIT compiled) is malformed:
    /// a wrong magic or version, a record cut short or larger than the file, records out of
    /// time order. `offset` is where in the file the bad header or record starts.
    #[error("{path}: jitdump at offset {offset:#x}: {what}")]
    JitDump {
        /// The jitdump file.
        path: PathBuf,
        /// The file offset of the header or record that is wrong.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// A kallsyms file (`/proc/kallsyms` or a copy) cannot be used: every address in it is 0
    /// (then [`Error::KernelAddrsHidden`]), no line in it is a symbol line, or it is too
    /// large. The message says which and how to fix it.
    #[error("{path}: {what}")]
    Kallsyms {
        /// The kallsyms file.
        path: PathBuf,
        /// What was wrong, and what to do about it.
        what: String,
    },
    /// A kallsyms file lists every address as 0: the kernel hides them from this reader
    /// (`kernel.kptr_restrict`, or no `CAP_SYSLOG`). The message says how to fix it.
    #[error("{path}: {what}")]
    KernelAddrsHidden {
        /// The kallsyms file.
        path: PathBuf,
        /// What was seen, and what to do about it.
        what: String,
    },
    /// A kernel module's `.ko` file cannot be used for the loaded module: not found in the
    /// module directories, its load addresses unreadable (`/sys/module/NAME/sections` needs
    /// root), or a build-id that differs from the loaded module's.
    #[error("{path}: {what}")]
    KernelModule {
        /// The `.ko` file, or the directory searched or read.
        path: PathBuf,
        /// What was wrong, and what to do about it.
        what: String,
    },
    /// A debuginfod lookup failed: every server refused or failed (the message says what each
    /// answered), a recent failure is remembered, or the cache could not be used. `path`
    /// names the build-id and the kind of file (`build-id <hex> (debuginfo)`), or the
    /// downloaded file that was refused.
    #[error("{path}: debuginfod: {what}")]
    Debuginfod {
        /// The build-id and kind looked up, or the refused file.
        path: PathBuf,
        /// What went wrong, per server.
        what: String,
    },
    /// A CPython interpreter's state in a process's memory could not be read as its version
    /// lays it out: a structure unreadable, a chain that loops or never ends, a string or
    /// table of absurd size, an object of the wrong type (freed). `path` is the file that
    /// defines `_PyRuntime` (the executable or `libpython`); the message names the
    /// version, the structure and its address.
    #[error("{path}: {what}")]
    Python {
        /// The file defining `_PyRuntime`.
        path: PathBuf,
        /// What could not be read, and where.
        what: String,
    },
}

/// What kind of failure an [`Error`] is, for a caller to match on ([`Error::kind`]); the
/// error itself says which file and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The process does not exist or exited ([`Error::ProcessGone`]): routine for a profiler.
    ProcessGone,
    /// The operating system refused (a file's permissions, ptrace access, `/proc/PID/mem`),
    /// or the kernel hides its addresses (`kernel.kptr_restrict`).
    PermissionDenied,
    /// A file, a build-id or a kernel module's `.ko` that was asked for is not there.
    NotFound,
    /// A file or text is malformed: not ELF, inconsistent ELF or DWARF, a malformed maps,
    /// perf-map or kallsyms file (the error names it).
    Malformed,
    /// A well-formed file uses something this crate does not handle, or is not a regular
    /// file.
    Unsupported,
    /// The caller's request does not fit ([`Error::InvalidRequest`]).
    InvalidRequest,
    /// A debuginfod server could not give the file ([`Error::Debuginfod`]).
    Network,
    /// Any other I/O failure.
    Io,
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { source, .. } => match source.kind() {
                io::ErrorKind::NotFound => ErrorKind::NotFound,
                io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
                _ => ErrorKind::Io,
            },
            Error::NotAFile { .. } | Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::NotElf { .. }
            | Error::MalformedElf { .. }
            | Error::MalformedDwarf { .. }
            | Error::Process { .. }
            | Error::JitDump { .. }
            | Error::Kallsyms { .. }
            | Error::Python { .. } => ErrorKind::Malformed,
            Error::InvalidRequest { .. } => ErrorKind::InvalidRequest,
            Error::NotFound { .. } | Error::KernelModule { .. } => ErrorKind::NotFound,
            Error::ProcessGone { .. } => ErrorKind::ProcessGone,
            Error::KernelAddrsHidden { .. } => ErrorKind::PermissionDenied,
            Error::Debuginfod { .. } => ErrorKind::Network,
        }
    }

    /// The file this error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            Error::Io { path, .. }
            | Error::InvalidRequest { path, .. }
            | Error::NotFound { path, .. }
            | Error::ProcessGone { path, .. }
            | Error::NotAFile { path, .. }
            | Error::NotElf { path, .. }
            | Error::MalformedElf { path, .. }
            | Error::MalformedDwarf { path, .. }
            | Error::Unsupported { path, .. }
            | Error::Process { path, .. }
            | Error::JitDump { path, .. }
            | Error::Kallsyms { path, .. }
            | Error::KernelAddrsHidden { path, .. }
            | Error::KernelModule { path, .. }
            | Error::Debuginfod { path, .. }
            | Error::Python { path, .. } => path,
        }
    }
}

impl Error {
    /// Where in the file (or, for [`Error::MalformedDwarf`], in [`Error::section`]) the data
    /// that could not be read starts, when the error knows it.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::MalformedDwarf { offset, .. } => *offset,
            Error::JitDump { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// The section the error is about, when it is about one section.
    pub fn section(&self) -> Option<&str> {
        match self {
            Error::MalformedDwarf { section, .. } => Some(section),
            _ => None,
        }
    }
}

/// ` at offset 0x…` for an error's message, or nothing.
fn at_offset(offset: Option<u64>) -> String {
    offset.map_or_else(String::new, |offset| format!(" at offset {offset:#x}"))
}

impl Error {
    /// A copy of an error kept in a cache (a file whose index failed to build fails the same
    /// way on every later lookup). `io::Error` is not `Clone`; its kind and message are kept.
    pub(crate) fn clone_for_cache(&self) -> Error {
        match self {
            Error::Io { path, source } => Error::Io {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::NotAFile { path, kind } => Error::NotAFile {
                path: path.clone(),
                kind,
            },
            Error::NotElf { path, reason } => Error::NotElf {
                path: path.clone(),
                reason: reason.clone(),
            },
            Error::MalformedElf { path, what } => Error::MalformedElf {
                path: path.clone(),
                what: what.clone(),
            },
            Error::MalformedDwarf {
                path,
                section,
                context,
                offset,
                source,
            } => Error::MalformedDwarf {
                path: path.clone(),
                section,
                context: context.clone(),
                offset: *offset,
                source: *source,
            },
            Error::Unsupported { path, what } => Error::Unsupported {
                path: path.clone(),
                what: what.clone(),
            },
            Error::InvalidRequest { path, what } => Error::InvalidRequest {
                path: path.clone(),
                what: what.clone(),
            },
            Error::NotFound { path, what } => Error::NotFound {
                path: path.clone(),
                what: what.clone(),
            },
            Error::ProcessGone { path, pid, detail } => Error::ProcessGone {
                path: path.clone(),
                pid: *pid,
                detail: detail.clone(),
            },
            Error::Process { path, what } => Error::Process {
                path: path.clone(),
                what: what.clone(),
            },
            Error::JitDump { path, offset, what } => Error::JitDump {
                path: path.clone(),
                offset: *offset,
                what: what.clone(),
            },
            Error::Kallsyms { path, what } => Error::Kallsyms {
                path: path.clone(),
                what: what.clone(),
            },
            Error::KernelAddrsHidden { path, what } => Error::KernelAddrsHidden {
                path: path.clone(),
                what: what.clone(),
            },
            Error::KernelModule { path, what } => Error::KernelModule {
                path: path.clone(),
                what: what.clone(),
            },
            Error::Debuginfod { path, what } => Error::Debuginfod {
                path: path.clone(),
                what: what.clone(),
            },
            Error::Python { path, what } => Error::Python {
                path: path.clone(),
                what: what.clone(),
            },
        }
    }
}
