//! The files behind a core's mappings: each file's build-id as the core recorded it (the ELF
//! headers and notes in the mapping's first page, which the kernel dumps by default:
//! `coredump_filter` bit 4), and the file on this machine that has it: the path the core
//! names (under the sysroot if given, confined to it), else, when that file is another build,
//! the file with the build-id in the debug dirs (or from debuginfod). A file that cannot be
//! matched is an error kept per file, never replaced by a file that merely has the same name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::read::elf::{FileHeader, ProgramHeader};
use object::{elf, LittleEndian};

use crate::confine::ConfinedRoot;
use crate::debuginfo::DebugFinder;
use crate::elf::{hex, ElfFile};
use crate::error::{Error, Result};

/// The GNU build-id in an ELF file's first `page` (its headers as mapped): the
/// `NT_GNU_BUILD_ID` note of a `PT_NOTE` segment that lies inside the page. `None` when the
/// page is not an ELF header of this kind or holds no such note.
pub(crate) fn build_id_in_first_page(page: &[u8]) -> Option<Vec<u8>> {
    let header = elf::FileHeader64::<LittleEndian>::parse(page).ok()?;
    let endian = LittleEndian;
    let program_headers = header.program_headers(endian, page).ok()?;
    for ph in program_headers {
        if ph.p_type(endian) != elf::PT_NOTE {
            continue;
        }
        let Ok(Some(mut notes)) = ph.notes(endian, page) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == elf::ELF_NOTE_GNU && note.n_type(endian) == elf::NT_GNU_BUILD_ID {
                return Some(note.desc().to_vec());
            }
        }
    }
    None
}

/// How a mapped file was matched to a file on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matched {
    /// The file at the path the core names has the build-id the core recorded.
    ByPath,
    /// The file at the path is another build (or missing); this one, with the recorded
    /// build-id, was found in the debug dirs or fetched from debuginfod.
    ByBuildId,
    /// The core did not record the file's build-id (its first page was not dumped): the
    /// file at the path is used unverified, for symbols and unwind tables only; the core's
    /// memory is never completed from it.
    Unverified,
}

/// One file mapped in the core's process, matched to a file here.
#[derive(Debug)]
pub struct MappedFile {
    /// The path as the process named it (`NT_FILE`).
    pub path: PathBuf,
    /// The build-id the core recorded for it (from its first page), if any.
    pub build_id: Option<Vec<u8>>,
    /// The file opened for it and how it was matched; or why there is none: it cannot be
    /// opened, or is another build and no file with its build-id was found (the message
    /// says both build-ids).
    pub file: Result<(Arc<ElfFile>, Matched)>,
}

/// Where the files of a core are looked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lookup {
    pub(crate) sysroot: Option<PathBuf>,
    pub(crate) exe: Option<PathBuf>,
    pub(crate) finder: Option<DebugFinder>,
}

impl Lookup {
    /// The file for `path` (the core's name for it; `is_exe`: the main executable, replaced
    /// by the `exe` given), checked against the recorded `build_id`.
    pub(crate) fn resolve(
        &self,
        path: &Path,
        build_id: Option<&[u8]>,
        is_exe: bool,
    ) -> Result<(Arc<ElfFile>, Matched)> {
        let opened = self.open(path, is_exe);
        let Some(build_id) = build_id else {
            return opened.map(|elf| (Arc::new(elf), Matched::Unverified));
        };
        let on_disk = match opened {
            Ok(elf) if elf.build_id() == Some(build_id) => {
                return Ok((Arc::new(elf), Matched::ByPath));
            }
            Ok(elf) => match elf.build_id() {
                Some(other) => format!("{} has build-id {}", elf.path().display(), hex(other)),
                None => format!("{} has no build-id", elf.path().display()),
            },
            Err(e) => e.to_string(),
        };
        let by_id = match &self.finder {
            Some(finder) => match finder.find_by_build_id(build_id) {
                Ok(Some(found)) if !found.is_debug_file() => {
                    return Ok((found.elf, Matched::ByBuildId));
                }
                Ok(Some(found)) => format!(
                    "only a debug file has it ({}), which has no code to read",
                    found.path.display()
                ),
                Ok(None) => format!("no file has it in {:?}", finder.debug_dirs()),
                Err(e) => e.to_string(),
            },
            None => "no debug dirs to search".to_string(),
        };
        Err(Error::NotFound {
            path: path.to_path_buf(),
            what: format!(
                "build-id mismatch: the core recorded build-id {}, but {on_disk}; {by_id}",
                hex(build_id)
            ),
        })
    }

    /// Opens the file for `path` (the exe given, for the executable), unverified.
    pub(crate) fn open(&self, path: &Path, is_exe: bool) -> Result<ElfFile> {
        if is_exe {
            if let Some(exe) = &self.exe {
                return ElfFile::open(exe);
            }
        }
        if !path.is_absolute() {
            return Err(Error::Unsupported {
                path: path.to_path_buf(),
                what: "not an absolute path: not a file to open".to_string(),
            });
        }
        match &self.sysroot {
            Some(root) => ElfFile::open_in_root(&ConfinedRoot::new(root), path),
            None => ElfFile::open(path),
        }
    }
}
