//! Files of container processes for `stacksym perf` (src/perf/): a process in another mount
//! namespace maps files by the paths of its own root (`/opt/app/bin`), which perf records as
//! they are; the host has no such file, or another one. While the process lives, perf opens
//! them in the process's namespace (`nsinfo`); so does this, through the library
//! (`Symbolizer::process_file`: the mapping's `map_files` entry, else its path confined to
//! `/proc/PID/root`, checked against the maps line), for the mapping at the recorded address
//! with the recorded path. Once the process is gone only a copy can serve: perf's build-id
//! cache, which `perf record` fills from inside the namespace (see `as_recorded`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use stacksym::elf::ElfFile;
use stacksym::process::{MappingKind, Process};
use stacksym::{AbsAddr, Symbolizer};

/// Which recorded processes live in another mount namespace, found once per pid.
#[derive(Default)]
pub struct Roots {
    /// Our own mount namespace (`mnt:[INODE]`).
    ours: Option<Option<String>>,
    by_pid: HashMap<i32, Option<String>>,
}

impl Roots {
    /// The mount namespace of process `pid` when it lives now in one that is not ours (its
    /// files are not the host's at their paths); `None` when it is gone or in ours.
    pub fn other_namespace(&mut self, pid: i32) -> Option<&str> {
        let ours = self
            .ours
            .get_or_insert_with(|| namespace("/proc/self/ns/mnt"))
            .clone()?;
        self.by_pid
            .entry(pid)
            .or_insert_with(|| {
                let theirs = namespace(&format!("/proc/{pid}/ns/mnt"))?;
                (theirs != ours).then_some(theirs)
            })
            .as_deref()
    }
}

fn namespace(link: &str) -> Option<String> {
    let target = std::fs::read_link(link).ok()?;
    target.to_str().map(str::to_string)
}

/// The file that process `pid` maps at `start` by `path` (as recorded), opened in the
/// process's root; `None` (said on stderr) when the process no longer maps it there or it
/// cannot be read.
pub fn open(symbolizer: &Symbolizer, pid: i32, start: u64, path: &[u8]) -> Option<Arc<ElfFile>> {
    let process = Process::new(u32::try_from(pid).ok()?);
    let maps = match process.read_maps() {
        Ok(maps) => maps,
        Err(e) => {
            eprintln!("stacksym perf: note: process {pid}: {e}");
            return None;
        }
    };
    let wanted = Path::new(std::str::from_utf8(path).ok()?);
    let mapping = maps.mappings().iter().find(|m| {
        m.range.start == AbsAddr(start)
            && matches!(&m.kind, MappingKind::File { path, .. } if path == wanted)
    });
    let Some(mapping) = mapping else {
        eprintln!(
            "stacksym perf: note: process {pid} no longer maps {} at {start:#x}",
            wanted.display()
        );
        return None;
    };
    match symbolizer.process_file(&process, mapping) {
        Ok(elf) => elf,
        Err(e) => {
            eprintln!("stacksym perf: note: process {pid}: {e}");
            None
        }
    }
}
