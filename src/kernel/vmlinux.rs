//! A kernel image with symbols and DWARF (`vmlinux`: a build tree's, or a distribution's
//! debug package's, e.g. `/usr/lib/debug/boot/vmlinux-$(uname -r)`), matched to the running
//! kernel through kallsyms.
//!
//! The running kernel is loaded at a random offset (KASLR); kallsyms shows the addresses it
//! runs at, vmlinux the addresses it was linked at. [`Vmlinux::new`] takes the difference at
//! an anchor symbol both list, the first of [`KASLR_ANCHORS`] that both have.

use std::path::{Path, PathBuf};

use crate::addr::{AbsAddr, LoadBias, VirtAddr};
use crate::elf::ElfFile;
use crate::error::{Error, Result};
use crate::kernel::Kallsyms;

/// The symbols that mark the start of the kernel's text, tried in order: `_stext` (every
/// architecture), `_text` (the image's start), `startup_64` (x86_64's entry).
pub const KASLR_ANCHORS: [&str; 3] = ["_stext", "_text", "startup_64"];

/// A vmlinux file and the KASLR offset of the running kernel relative to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vmlinux {
    path: PathBuf,
    kaslr_offset: LoadBias,
    anchor: Option<&'static str>,
}

impl Vmlinux {
    /// Opens `path` and computes the KASLR offset: `kallsyms`' address of the first
    /// [`KASLR_ANCHORS`] symbol both list, minus vmlinux's. Fails, naming the file, when it
    /// is not a readable ELF file or has no anchor kallsyms also lists (not a vmlinux, or
    /// stripped). A vmlinux of another kernel build is not detected here: its names would be
    /// wrong; compare build-ids (`/sys/kernel/notes`) before, where that matters.
    pub fn new(path: impl Into<PathBuf>, kallsyms: &Kallsyms) -> Result<Vmlinux> {
        let path = path.into();
        let elf = ElfFile::open(&path)?;
        for anchor in KASLR_ANCHORS {
            let Some(running) = kallsyms.address_of(anchor) else {
                continue;
            };
            if let Some(linked) = elf.symbol_value_by_name(anchor)? {
                return Ok(Vmlinux {
                    path,
                    kaslr_offset: LoadBias::between(running, linked),
                    anchor: Some(anchor),
                });
            }
        }
        Err(Error::Unsupported {
            path,
            what: format!(
                "cannot match this vmlinux to {}: none of {} is in both (a stripped vmlinux, \
                 or not a kernel image?); give the KASLR offset instead",
                kallsyms.path().display(),
                KASLR_ANCHORS.join(", ")
            ),
        })
    }

    /// A vmlinux whose KASLR offset is known (`0` for a kernel booted with `nokaslr`).
    pub fn with_kaslr_offset(path: impl Into<PathBuf>, kaslr_offset: LoadBias) -> Vmlinux {
        Vmlinux {
            path: path.into(),
            kaslr_offset,
            anchor: None,
        }
    }

    /// The vmlinux file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Running address minus linked address (wrapping: a kernel may be loaded below its
    /// link address).
    pub fn kaslr_offset(&self) -> LoadBias {
        self.kaslr_offset
    }

    /// The anchor symbol the offset was computed from (`None` when it was given).
    pub fn anchor(&self) -> Option<&'static str> {
        self.anchor
    }

    /// The vmlinux virtual address of a running kernel address.
    pub fn virt_addr(&self, kernel_addr: AbsAddr) -> VirtAddr {
        self.kaslr_offset.to_virt(kernel_addr)
    }
}
