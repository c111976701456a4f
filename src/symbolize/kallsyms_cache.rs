//! The symbolizer's cache of kallsyms files: parsing `/proc/kallsyms` (100k+ lines) for every
//! kernel stack would cost more than symbolizing it.
//!
//! An entry is keyed by path and read again when the file was replaced (a regular file whose
//! device, inode, size or mtime changed), or when an address about to be looked up is covered
//! by no text symbol and the entry is at least [`KALLSYMS_MIN_AGE`] old: `/proc/kallsyms`
//! always has size 0 and the same mtime, so a module loaded since the last read shows only as
//! addresses the cached copy does not know (as with the maps cache's refresh).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::addr::{AbsAddr, LoadBias};
use crate::error::Result;
use crate::kernel::{Kallsyms, Vmlinux};
use crate::symbolize::{FileId, Symbolizer};

/// How old a cached kallsyms must be before an unknown address makes it read again: a stack
/// of addresses that kallsyms really does not cover (e.g. BPF programs without their symbols)
/// then costs at most one read per second, not one per stack.
pub const KALLSYMS_MIN_AGE: Duration = Duration::from_secs(1);

/// One cached kallsyms file, with the vmlinux files matched to it.
pub(crate) struct CachedKallsyms {
    kallsyms: Arc<Kallsyms>,
    /// The file's identity when it was read (`None` if it could not be stat'ed).
    file: Option<FileId>,
    read_at: Instant,
    /// Vmlinux files matched to this kallsyms (their KASLR offset), by path and identity;
    /// a few at most (one per kernel image a caller names).
    vmlinux: Mutex<Vec<MatchedVmlinux>>,
}

/// A vmlinux matched to a kallsyms: its path, identity, the offset given (if one was).
type MatchedVmlinux = (PathBuf, Option<FileId>, Option<LoadBias>, Arc<Vmlinux>);

impl CachedKallsyms {
    fn read(path: &Path) -> Result<CachedKallsyms> {
        let file = FileId::of_path(path).ok();
        Ok(CachedKallsyms {
            kallsyms: Arc::new(Kallsyms::open(path)?),
            file,
            read_at: Instant::now(),
            vmlinux: Mutex::new(Vec::new()),
        })
    }

    /// The parsed file.
    pub(crate) fn kallsyms(&self) -> &Arc<Kallsyms> {
        &self.kallsyms
    }

    /// The vmlinux at `path` matched to this kallsyms ([`Vmlinux::new`]), or placed at
    /// `kaslr_offset` when given; matched once per (path, file identity, offset).
    pub(crate) fn vmlinux(
        &self,
        path: &Path,
        kaslr_offset: Option<LoadBias>,
    ) -> Result<Arc<Vmlinux>> {
        let id = FileId::of_path(path).ok();
        let mut matched = self.vmlinux.lock().unwrap_or_else(PoisonError::into_inner);
        let known = matched
            .iter()
            .find(|(p, i, o, _)| p == path && *i == id && *o == kaslr_offset);
        if let Some((_, _, _, vmlinux)) = known {
            return Ok(Arc::clone(vmlinux));
        }
        let vmlinux = Arc::new(match kaslr_offset {
            Some(offset) => Vmlinux::with_kaslr_offset(path, offset),
            None => Vmlinux::new(path, &self.kallsyms)?,
        });
        // Bounded: a caller cycling through many vmlinux paths re-matches instead of growing.
        if matched.len() >= MAX_VMLINUX_PER_KALLSYMS {
            matched.remove(0);
        }
        matched.push((path.to_path_buf(), id, kaslr_offset, Arc::clone(&vmlinux)));
        Ok(vmlinux)
    }
}

/// How many vmlinux matches one cached kallsyms keeps.
const MAX_VMLINUX_PER_KALLSYMS: usize = 4;

impl Symbolizer {
    /// The kallsyms file at `path` ([`crate::kernel::PROC_KALLSYMS`] for the running kernel),
    /// parsed once and cached (at most [`crate::SymbolizerBuilder::max_cached_kallsyms`]
    /// files). `addrs` are the addresses about to be looked up: when one of them is covered by
    /// no text symbol and the cached copy is older than [`KALLSYMS_MIN_AGE`], or the file was
    /// replaced, it is read again (a module may have been loaded since). Errors are those of
    /// [`Kallsyms::open`] (they name the file and, for hidden addresses, explain
    /// `kptr_restrict`).
    pub(crate) fn cached_kallsyms(
        &self,
        path: &Path,
        addrs: &[AbsAddr],
    ) -> Result<Arc<CachedKallsyms>> {
        let key = path.to_path_buf();
        let cached = self
            .kallsyms
            .get_or_load(&key, || CachedKallsyms::read(path))?;
        let replaced = FileId::of_path(path).ok() != cached.file;
        let stale = || {
            cached.read_at.elapsed() >= KALLSYMS_MIN_AGE
                && addrs
                    .iter()
                    .any(|&addr| !matches!(cached.kallsyms.find_symbol(addr), Ok(Some(_))))
        };
        if !replaced && !stale() {
            return Ok(cached);
        }
        let fresh = Arc::new(CachedKallsyms::read(path)?);
        self.kallsyms.insert(key, Arc::clone(&fresh));
        Ok(fresh)
    }
}
