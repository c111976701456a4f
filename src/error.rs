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
    /// Compressed data could not be decompressed: a compressed section (`SHF_COMPRESSED`,
    /// `.zdebug_*`, MiniDebugInfo's `.gnu_debugdata`), or a file or core compressed whole
    /// (`section` is then `None`). The [`DecompressError`] is the `source`.
    #[error("{path}: {}: {source}", what_does_not_decompress(section.as_deref()))]
    Decompress {
        /// The file.
        path: PathBuf,
        /// The compressed section; `None` for a file compressed whole.
        section: Option<String>,
        /// What was wrong with the compressed data.
        #[source]
        source: DecompressError,
    },
    /// A table or note section inside the file is malformed: USDT probe notes
    /// (`.note.stapsdt`), a Go binary's own table (`.gopclntab`). `section` names it, `offset`
    /// says where in it the bad record starts, when known.
    #[error("{path}: malformed {section}{}: {what}", at_offset(*offset))]
    MalformedSection {
        /// The file.
        path: PathBuf,
        /// The section, e.g. `.note.stapsdt`.
        section: String,
        /// Where in the section the bad record or header starts, when known.
        offset: Option<u64>,
        /// What was wrong.
        what: String,
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
    /// A file or text is malformed: not ELF, inconsistent ELF or DWARF, compressed data that
    /// does not decompress, a malformed maps, perf-map or kallsyms file (the error names it).
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
            Error::Decompress { source, .. } => match source {
                DecompressError::Unsupported { .. } => ErrorKind::Unsupported,
                _ => ErrorKind::Malformed,
            },
            Error::NotElf { .. }
            | Error::MalformedElf { .. }
            | Error::MalformedDwarf { .. }
            | Error::MalformedSection { .. }
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
            | Error::Decompress { path, .. }
            | Error::MalformedSection { path, .. }
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
    /// Where in the file (for [`Error::MalformedDwarf`] and [`Error::MalformedSection`], in
    /// [`Error::section`]; for
    /// [`Error::Decompress`], in the compressed data: the section's, or the file's) the data
    /// that could not be read starts, when the error knows it.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::MalformedDwarf { offset, .. } => *offset,
            Error::JitDump { offset, .. } => Some(*offset),
            Error::Decompress { source, .. } => source.offset(),
            Error::MalformedSection { offset, .. } => *offset,
            _ => None,
        }
    }

    /// The section the error is about, when it is about one section.
    pub fn section(&self) -> Option<&str> {
        match self {
            Error::MalformedDwarf { section, .. } => Some(section),
            Error::Decompress { section, .. } => section.as_deref(),
            Error::MalformedSection { section, .. } => Some(section),
            _ => None,
        }
    }
}

/// What is wrong in a section (a note, a table), and where in it: what a section's reader
/// returns, made an [`Error::MalformedSection`] by its caller, which knows the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SectionFault {
    /// Where in the section the bad record or header starts, when known.
    pub(crate) offset: Option<u64>,
    /// What was wrong.
    pub(crate) what: String,
}

impl SectionFault {
    /// A fault of the record at `offset`.
    pub(crate) fn at(offset: usize, what: impl Into<String>) -> SectionFault {
        SectionFault {
            offset: Some(offset as u64),
            what: what.into(),
        }
    }

    /// A fault with no offset to tell.
    pub(crate) fn new(what: impl Into<String>) -> SectionFault {
        SectionFault {
            offset: None,
            what: what.into(),
        }
    }

    /// The error of `section` of the file at `path`.
    pub(crate) fn in_section(self, path: &std::path::Path, section: &str) -> Error {
        Error::MalformedSection {
            path: path.to_path_buf(),
            section: section.to_string(),
            offset: self.offset,
            what: self.what,
        }
    }
}

/// What [`Error::Decompress`] says did not decompress.
fn what_does_not_decompress(section: Option<&str>) -> String {
    match section {
        Some(section) => format!("section {section} does not decompress"),
        None => "a compressed file that does not decompress".to_string(),
    }
}

/// Why compressed bytes (a section compressed with `SHF_COMPRESSED` or as `.zdebug_*`, a file
/// compressed whole, MiniDebugInfo's xz) could not be decompressed: carried as the `source`
/// of [`Error::Decompress`], which names the file and the section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecompressError {
    /// The data ends before its compressed stream does.
    #[error("{format}: truncated in {what}{}", at_offset(*offset))]
    Truncated {
        /// The format: `xz`, `zlib`, `zstd` or `gzip`.
        format: &'static str,
        /// The part that was cut, e.g. `the stream footer`.
        what: &'static str,
        /// Where in the compressed data the cut part starts, when known.
        offset: Option<u64>,
    },
    /// The data decompresses to more than the cap: a decompression bomb, or a file larger
    /// than this crate reads.
    #[error("{format}: decompression bomb: more than {cap} bytes")]
    TooLarge {
        /// The format.
        format: &'static str,
        /// The cap, in bytes.
        cap: u64,
    },
    /// A section's compression header claims a size the data does not decompress to.
    #[error("{format}: decompressed to {}, the header claims {claimed}", decoded_size(*decoded))]
    SizeMismatch {
        /// The format.
        format: &'static str,
        /// The size the section's header claims.
        claimed: u64,
        /// The size the data decompressed to; `None` when it went on past `claimed`.
        decoded: Option<u64>,
    },
    /// A checksum in the data does not match what it covers.
    #[error("{format}: {what} mismatch{}", at_offset(*offset))]
    ChecksumMismatch {
        /// The format.
        format: &'static str,
        /// Which checksum, e.g. `CRC32 of the data`.
        what: &'static str,
        /// Where the structure it checks starts, when known.
        offset: Option<u64>,
    },
    /// The data is not valid in its format (a bad header, a reserved value, inconsistent
    /// sizes, what the decoder reported).
    #[error("{format}: {what}{}", at_offset(*offset))]
    Corrupt {
        /// The format.
        format: &'static str,
        /// What was wrong.
        what: String,
        /// Where in the compressed data the bad structure starts, when known.
        offset: Option<u64>,
    },
    /// The data uses what this crate does not read: a compression type other than zlib and
    /// zstd in a section, an xz filter other than LZMA2, a dictionary larger than the
    /// memory limit, xz without the `minidebuginfo` feature.
    #[error("{format}: unsupported: {what}{}", at_offset(*offset))]
    Unsupported {
        /// The format.
        format: &'static str,
        /// What is not read.
        what: String,
        /// Where in the compressed data it was met, when known.
        offset: Option<u64>,
    },
    /// Memory for the decompressed bytes could not be allocated.
    #[error("{format}: cannot allocate {bytes} bytes to decompress into")]
    OutOfMemory {
        /// The format.
        format: &'static str,
        /// The allocation that failed.
        bytes: u64,
    },
}

impl DecompressError {
    /// Where in the compressed data the error was met, when known.
    pub fn offset(&self) -> Option<u64> {
        match self {
            DecompressError::Truncated { offset, .. }
            | DecompressError::ChecksumMismatch { offset, .. }
            | DecompressError::Corrupt { offset, .. }
            | DecompressError::Unsupported { offset, .. } => *offset,
            DecompressError::TooLarge { .. }
            | DecompressError::SizeMismatch { .. }
            | DecompressError::OutOfMemory { .. } => None,
        }
    }

    /// The same error said of `format` (the layer that knows the format names it).
    pub(crate) fn of_format(mut self, name: &'static str) -> DecompressError {
        match &mut self {
            DecompressError::Truncated { format, .. }
            | DecompressError::TooLarge { format, .. }
            | DecompressError::SizeMismatch { format, .. }
            | DecompressError::ChecksumMismatch { format, .. }
            | DecompressError::Corrupt { format, .. }
            | DecompressError::Unsupported { format, .. }
            | DecompressError::OutOfMemory { format, .. } => *format = name,
        }
        self
    }
}

fn decoded_size(decoded: Option<u64>) -> String {
    decoded.map_or_else(|| "more bytes".to_string(), |n| format!("{n} bytes"))
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
            Error::Decompress {
                path,
                section,
                source,
            } => Error::Decompress {
                path: path.clone(),
                section: section.clone(),
                source: source.clone(),
            },
            Error::MalformedSection {
                path,
                section,
                offset,
                what,
            } => Error::MalformedSection {
                path: path.clone(),
                section: section.clone(),
                offset: *offset,
                what: what.clone(),
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
