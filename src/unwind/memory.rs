//! The memory an unwinder reads (saved registers, return addresses, a signal's ucontext):
//! a copy of the stack captured with the registers, as perf (`PERF_SAMPLE_STACK_USER`) and
//! eBPF profilers record it, or a live process's memory.
//!
//! Reads are of 8-byte little-endian words (both architectures are little-endian here) and
//! answer `None` for memory that is not there; nothing here panics on any address.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::addr::AbsAddr;

/// Memory the unwinder may read.
pub trait Memory {
    /// The 8-byte word at `addr`, or `None` if it cannot be read.
    fn read_u64(&self, addr: AbsAddr) -> Option<u64>;

    /// Fills `buf` with the bytes at `addr`; `false` if any of them cannot be read. Readers
    /// of structures (the Python frames of [`crate::python`]) use it; the default reads
    /// word by word through [`Memory::read_u64`].
    fn read_bytes(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        let len = buf.len();
        for (i, chunk) in buf.chunks_mut(8).enumerate() {
            // A short last chunk is read as the word that ends where the request ends (it
            // overlaps the chunk before), so that no byte past the request is needed; only
            // a request shorter than a word reads past its end.
            let offset = if chunk.len() < 8 && len >= 8 {
                len - 8
            } else {
                i * 8
            };
            let Some(at) = u64::try_from(offset)
                .ok()
                .and_then(|offset| addr.checked_add(offset))
            else {
                return false;
            };
            let Some(word) = self.read_u64(at) else {
                return false;
            };
            let word = word.to_le_bytes();
            let skip = i * 8 - offset.min(i * 8);
            chunk.copy_from_slice(&word[skip..skip + chunk.len()]);
        }
        true
    }
}

impl<M: Memory + ?Sized> Memory for &M {
    fn read_u64(&self, addr: AbsAddr) -> Option<u64> {
        (**self).read_u64(addr)
    }

    fn read_bytes(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        (**self).read_bytes(addr, buf)
    }
}

/// A copy of the stack starting at the stack pointer it was captured at: perf's
/// `PERF_SAMPLE_STACK_USER` (`dyn_size` bytes of it) or an eBPF profiler's copy.
#[derive(Debug, Clone, Copy)]
pub struct StackCopy<'a> {
    sp: AbsAddr,
    bytes: &'a [u8],
}

impl<'a> StackCopy<'a> {
    /// `bytes` of stack as they were from address `sp` up.
    pub fn new(sp: AbsAddr, bytes: &'a [u8]) -> StackCopy<'a> {
        StackCopy { sp, bytes }
    }

    /// The address the copy starts at.
    pub fn start(&self) -> AbsAddr {
        self.sp
    }

    /// The copy's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

impl Memory for StackCopy<'_> {
    fn read_u64(&self, addr: AbsAddr) -> Option<u64> {
        let start = usize::try_from(addr.offset_from(self.sp)?).ok()?;
        let word = self.bytes.get(start..start.checked_add(8)?)?;
        Some(u64::from_le_bytes(word.try_into().ok()?))
    }

    fn read_bytes(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        let bytes = addr
            .offset_from(self.sp)
            .and_then(|start| usize::try_from(start).ok())
            .and_then(|start| self.bytes.get(start..start.checked_add(buf.len())?));
        match bytes {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                true
            }
            None => false,
        }
    }
}

/// A live process's memory: `process_vm_readv(2)`, falling back to `/proc/PID/mem` where
/// that syscall is refused (some seccomp profiles and older kernels). Reading another
/// process needs ptrace access to it (the same user and `kernel.yama.ptrace_scope` 0, or
/// `CAP_SYS_PTRACE`); a process that is not stopped may change under the reads.
#[derive(Debug)]
pub struct ProcessMemory {
    pid: u32,
    mem: Option<File>,
    mem_path: PathBuf,
}

impl ProcessMemory {
    /// The memory of process `pid`. Opens `/proc/PID/mem` for the fallback now; that it
    /// cannot be opened is not an error (reads then use only `process_vm_readv`).
    pub fn new(pid: u32) -> ProcessMemory {
        let mem_path = PathBuf::from(format!("/proc/{pid}/mem"));
        let mem = match File::open(&mem_path) {
            Ok(file) => Some(file),
            Err(e) => {
                log::debug!(
                    "{}: {e}; reading with process_vm_readv only",
                    mem_path.display()
                );
                None
            }
        };
        ProcessMemory { pid, mem, mem_path }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Reads `buf.len()` bytes at `addr`; `false` if any of them cannot be read.
    pub fn read_exact(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        if self.read_vm(addr, buf) {
            return true;
        }
        match &self.mem {
            Some(file) => match file.read_exact_at(buf, addr.0) {
                Ok(()) => true,
                Err(e) => {
                    log::trace!("{}: {e} at {addr:#x}", self.mem_path.display());
                    false
                }
            },
            None => false,
        }
    }

    fn read_vm(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return false;
        };
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let remote = libc::iovec {
            iov_base: addr.0 as usize as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: `local` describes `buf`, which is valid for writes of its length for the
        // whole call; `remote` is only read by the kernel, in the other process, which
        // checks it. One iovec each, as the counts say.
        let read = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        usize::try_from(read).is_ok_and(|n| n == buf.len())
    }
}

impl Memory for ProcessMemory {
    fn read_u64(&self, addr: AbsAddr) -> Option<u64> {
        let mut word = [0u8; 8];
        self.read_exact(addr, &mut word)
            .then(|| u64::from_le_bytes(word))
    }

    fn read_bytes(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        self.read_exact(addr, buf)
    }
}

/// A core file's memory: its dumped bytes, and pages it did not dump from the mapped files
/// whose build-id it recorded and matched ([`crate::core::CoreFile::read`]).
impl Memory for crate::core::CoreFile {
    fn read_u64(&self, addr: AbsAddr) -> Option<u64> {
        crate::core::CoreFile::read_u64(self, addr)
    }

    fn read_bytes(&self, addr: AbsAddr, buf: &mut [u8]) -> bool {
        crate::core::CoreFile::read(self, addr, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_copy_reads_inside_and_refuses_outside() {
        let bytes: Vec<u8> = (0..20).collect();
        let stack = StackCopy::new(AbsAddr(0x1000), &bytes);
        assert_eq!(stack.read_u64(AbsAddr(0x1000)), Some(0x0706050403020100));
        assert_eq!(stack.read_u64(AbsAddr(0x100c)), Some(0x131211100f0e0d0c));
        assert_eq!(stack.read_u64(AbsAddr(0x100d)), None, "runs past the end");
        assert_eq!(
            stack.read_u64(AbsAddr(0xfff)),
            None,
            "below the stack pointer"
        );
        assert_eq!(stack.read_u64(AbsAddr(u64::MAX)), None);
        assert_eq!(
            StackCopy::new(AbsAddr(u64::MAX - 3), &bytes).read_u64(AbsAddr(12)),
            None,
            "wrapped"
        );
    }

    /// Memory answering only word reads, to check `read_bytes`' default.
    struct WordsOnly<'a>(StackCopy<'a>);

    impl Memory for WordsOnly<'_> {
        fn read_u64(&self, addr: AbsAddr) -> Option<u64> {
            self.0.read_u64(addr)
        }
    }

    #[test]
    fn read_bytes_reads_exactly_the_request() {
        let bytes: Vec<u8> = (0..20).collect();
        let stack = StackCopy::new(AbsAddr(0x1000), &bytes);
        for memory in [&stack as &dyn Memory, &WordsOnly(stack)] {
            let mut buf = [0u8; 10];
            assert!(
                memory.read_bytes(AbsAddr(0x100a), &mut buf),
                "ends at the end"
            );
            assert_eq!(buf.to_vec(), (10..20).collect::<Vec<u8>>());
            let mut buf = [0u8; 20];
            assert!(memory.read_bytes(AbsAddr(0x1000), &mut buf));
            assert_eq!(buf.to_vec(), bytes);
            assert!(
                !memory.read_bytes(AbsAddr(0x100b), &mut [0u8; 10]),
                "past the end"
            );
            assert!(!memory.read_bytes(AbsAddr(0xfff), &mut [0u8; 9]), "below");
            assert!(memory.read_bytes(AbsAddr(0x1000), &mut []));
        }
    }

    #[test]
    fn own_process_memory_reads_a_local_value() {
        let value: u64 = 0x1234_5678_9abc_def0;
        let memory = ProcessMemory::new(std::process::id());
        let addr = std::ptr::addr_of!(value) as u64;
        assert_eq!(memory.read_u64(AbsAddr(addr)), Some(value));
        assert_eq!(
            memory.read_u64(AbsAddr(0)),
            None,
            "page zero is never mapped"
        );
    }
}
