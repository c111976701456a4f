//! The symbolizer's cache of process maps: reading `/proc/PID/maps` for every stack of a
//! process that is sampled thousands of times a second would cost more than symbolizing.
//!
//! An entry is keyed by (procfs root, pid, the process's start time from `<pid>/stat`), so a
//! pid reused by a new process never gets the old one's maps. An entry is read again when an
//! address of a batch falls outside every mapping it knows (the process mapped something
//! since, e.g. a `dlopen`), as the cache's only invalidation: mappings that went away are
//! harmless (an address the process gives us is mapped when it is taken).

use std::path::PathBuf;
use std::sync::Arc;

use crate::addr::AbsAddr;
use crate::error::Result;
use crate::process::{Process, ProcessMaps};
use crate::symbolize::Symbolizer;

/// What identifies one process's life: its pid and start time in one procfs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ProcessKey {
    procfs_dir: PathBuf,
    start_time: u64,
}

impl ProcessKey {
    /// The key of `process`'s current life; `None` when its start time cannot be read (it is
    /// gone, or the procfs is unusual).
    pub(crate) fn of(process: &Process) -> Option<ProcessKey> {
        Some(ProcessKey {
            procfs_dir: process.proc_dir(),
            start_time: process.start_time()?,
        })
    }
}

impl Symbolizer {
    /// The maps of `process` as this symbolizer caches them for [`crate::Source::Process`]
    /// (read now if not cached), to build the process's unwinding modules from
    /// (`unwind::Modules::from_process_maps` with [`Symbolizer::process_file`]). A later
    /// batch reads them again if one of its addresses lies outside every mapping known.
    pub fn process_maps(&self, process: &Process) -> Result<Arc<ProcessMaps>> {
        self.cached_maps(process, &[])
    }

    /// The maps of `process`, from the cache when they cover every address of `addrs`, else
    /// read (again) and cached.
    pub(crate) fn cached_maps(&self, process: &Process, addrs: &[u64]) -> Result<Arc<ProcessMaps>> {
        let Some(key) = ProcessKey::of(process) else {
            // Gone, or an unusual procfs: read without caching; read_maps says what is wrong.
            return Ok(Arc::new(process.read_maps()?));
        };
        let maps = self
            .process_maps
            .get_or_load(&key, || process.read_maps())?;
        if addrs.iter().all(|&addr| maps.find(AbsAddr(addr)).is_some()) {
            return Ok(maps);
        }
        let fresh = Arc::new(process.read_maps()?);
        self.process_maps.insert(key, Arc::clone(&fresh));
        Ok(fresh)
    }
}
