//! The symbolizer's cache of what a process has besides mapped files: its vDSO image (read
//! from its memory once per process life: it never changes), its perf JIT map and the
//! jitdump files it maps (each read again when its file changed: JIT compilers append to them
//! as they compile). A Java or Node process
//! can have a perf map of tens of MB; reading it for every stack would cost more than all
//! the rest.
//!
//! Keyed like the maps cache (procfs dir, pid and start time), so a reused pid starts afresh.
//! Failures are not cached: the next batch tries again.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::elf::ElfFile;
use crate::error::Result;
use crate::process::{read_jit_dump, JitDump, PerfMap, Process, ProcessMaps};
use crate::symbolize::FileId;

/// One process's vDSO and perf map, as read so far.
#[derive(Default)]
pub(crate) struct ProcessSpecials {
    /// `Some(None)`: the process has no vDSO.
    vdso: OnceLock<Option<Arc<ElfFile>>>,
    /// The perf map, with the identity of its file when it was read.
    perf_map: Mutex<Option<(Option<FileId>, Arc<PerfMap>)>>,
    /// The jitdump files the process maps, with the identities of their files when read.
    jit_dumps: Mutex<Option<(Vec<FileId>, JitDumps)>>,
}

/// A process's jitdump files, shared by the batches that use them.
pub(crate) type JitDumps = Arc<Vec<Arc<JitDump>>>;

impl ProcessSpecials {
    /// The process's vDSO, read from its memory on first use.
    pub(crate) fn vdso(
        &self,
        process: &Process,
        maps: &ProcessMaps,
    ) -> Result<Option<Arc<ElfFile>>> {
        if let Some(vdso) = self.vdso.get() {
            return Ok(vdso.clone());
        }
        let vdso = process.vdso(maps)?.map(Arc::new);
        Ok(self.vdso.get_or_init(|| vdso).clone())
    }

    /// The process's perf map, read on first use and again when its file changed since.
    pub(crate) fn perf_map(&self, process: &Process) -> Result<Option<Arc<PerfMap>>> {
        let mut cached = self.perf_map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((file, map)) = cached.as_ref() {
            if file.is_some() && perf_map_id(process, map) == *file {
                return Ok(Some(Arc::clone(map)));
            }
        }
        let Some(map) = process.perf_map()? else {
            *cached = None;
            return Ok(None);
        };
        let map = Arc::new(map);
        *cached = Some((perf_map_id(process, &map), Arc::clone(&map)));
        Ok(Some(map))
    }
}

impl ProcessSpecials {
    /// The jitdump files the process maps, read on first use and again when one of them
    /// changed (runtimes append to them as they compile) or the set of files did. A file that
    /// cannot be opened or read is left out (logged); only a process that is gone fails.
    pub(crate) fn jit_dumps(&self, process: &Process, maps: &ProcessMaps) -> Result<JitDumps> {
        let mut opened = Vec::new();
        for file in process.jit_dump_files(maps) {
            match file.and_then(|(file, path)| Ok((FileId::of_file(&file, &path)?, file, path))) {
                Ok(file) => opened.push(file),
                Err(_) if process.is_gone() => return Err(process.gone("(reading its jitdump)")),
                Err(e) => log::debug!("process {}: {e}", process.pid()),
            }
        }
        let ids: Vec<FileId> = opened.iter().map(|(id, _, _)| *id).collect();
        let mut cached = self
            .jit_dumps
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((cached_ids, dumps)) = cached.as_ref() {
            if *cached_ids == ids {
                return Ok(Arc::clone(dumps));
            }
        }
        let mut dumps = Vec::new();
        for (_, file, path) in opened {
            match read_jit_dump(file, &path) {
                Ok(dump) => dumps.push(Arc::new(dump)),
                Err(e) => log::debug!("process {}: {e}", process.pid()),
            }
        }
        let dumps = Arc::new(dumps);
        *cached = Some((ids, Arc::clone(&dumps)));
        Ok(dumps)
    }
}

/// The identity of the file `map` was read from, stated again now: a map inside the
/// process's root is opened confined to it (a path there is never stat'ed on the host, where
/// its links would lead out), the reader's `/tmp` one is stat'ed as it is.
fn perf_map_id(process: &Process, map: &PerfMap) -> Option<FileId> {
    let root = process.root();
    match root.inside(map.path()) {
        Some(inside) => {
            let file = root.open(&inside).ok()?;
            FileId::of_file(&file, map.path()).ok()
        }
        None => FileId::of_path(map.path()).ok(),
    }
}
