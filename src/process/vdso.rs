//! The vDSO of another process, read from its memory (`<procfs_root>/<pid>/mem`).
//!
//! The kernel maps one vDSO image into every process (`[vdso]` in the maps), but which image
//! (64-bit, x32, 32-bit compat) depends on the process, and a process checkpointed or started
//! on another kernel may carry another one. So it is read from the process, not taken from our
//! own address space. Reading `/proc/PID/mem` needs ptrace access to the process (the same
//! user and `kernel.yama.ptrace_scope` permitting, or `CAP_SYS_PTRACE`).

use std::os::unix::fs::FileExt;

use super::{MappingKind, Process, ProcessMaps};
use crate::elf::ElfFile;
use crate::error::{Error, Result};

/// The largest `[vdso]` mapping [`Process::vdso`] reads. vDSOs are a few pages (8 KiB on
/// x86_64 today); a larger mapping is refused rather than read in part.
pub const MAX_VDSO_BYTES: u64 = 1 << 20;

impl Process {
    /// `<procfs_root>/<pid>/mem`.
    pub fn mem_path(&self) -> std::path::PathBuf {
        self.proc_dir().join("mem")
    }

    /// The process's vDSO as an ELF file named `[vdso] of PID`, read from its memory: the
    /// whole `[vdso]` mapping of `maps` (the process's maps, read before). Its bytes are the
    /// vDSO image from file offset 0, so an absolute address `addr` in the mapping is the
    /// image's file offset `addr - start` ([`crate::elf::Segments::file_offset_to_virt`] gives
    /// the vDSO's virtual address; usually the same, the vDSO being linked at 0).
    ///
    /// `Ok(None)` when the maps have no `[vdso]` (e.g. `vdso=0` on the kernel command line).
    /// Errors: the process exited ([`Error::Process`] naming the pid), its memory cannot be
    /// read (permissions, or the mapping changed: [`Error::Process`] naming the pid, the mem
    /// file, the range and the system's error), the mapping is larger than [`MAX_VDSO_BYTES`],
    /// or the bytes are not an ELF file (an error naming `[vdso] of PID`).
    pub fn vdso(&self, maps: &ProcessMaps) -> Result<Option<ElfFile>> {
        let Some(mapping) = maps.mappings().iter().find(|m| m.kind == MappingKind::Vdso) else {
            return Ok(None);
        };
        let (start, end) = (mapping.range.start.0, mapping.range.end.0);
        let fail = |what: String| {
            if self.is_gone() {
                self.gone(&format!("(while reading its vDSO: {what})"))
            } else {
                Error::Process {
                    path: self.maps_path(),
                    what: format!(
                        "cannot read the vDSO of process {} ({start:#x}-{end:#x}) from {}: {what}",
                        self.pid,
                        self.mem_path().display()
                    ),
                }
            }
        };
        let len = end - start;
        if len > MAX_VDSO_BYTES {
            return Err(fail(format!(
                "the mapping is {len} bytes, more than the {MAX_VDSO_BYTES} read"
            )));
        }
        let mem = std::fs::File::open(self.mem_path()).map_err(|e| fail(e.to_string()))?;
        // Bounded by MAX_VDSO_BYTES above.
        let mut bytes = vec![0u8; len as usize];
        let mut done = 0;
        while done < bytes.len() {
            let at = start + done as u64;
            match mem.read_at(&mut bytes[done..], at) {
                Ok(0) => return Err(fail(format!("end of memory at {at:#x}"))),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(fail(format!("at {at:#x}: {e}"))),
            }
        }
        ElfFile::from_bytes(format!("[vdso] of {}", self.pid), bytes).map(Some)
    }
}
