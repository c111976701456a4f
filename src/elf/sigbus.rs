//! Mapped files that shrink do not kill the process.
//!
//! A read of a mapped page past the end of a file that was truncated after it was mapped
//! (`cp new.so over.so` truncates in place) raises `SIGBUS`, whose default action ends the
//! process. A library inside a long-running agent must not die of it, and reading every
//! file into memory instead would cost a cold batch a copy of every file it opens (the
//! toolchain's `librustc_driver` is 154 MB, most of it code no lookup reads). So files stay
//! mapped, and every mapping is registered here ([`Registered`]); the first mapping installs
//! a `SIGBUS` handler (once per process) that, for a fault the kernel raised
//! (`BUS_ADRERR`, `BUS_OBJERR`) inside a registered mapping, maps a page of zeros over the
//! faulting page (`MAP_FIXED`, anonymous, read-only), marks the mapping as shrunk, counts
//! the event ([`shrinks`]) and returns: the read is retried and sees zeros. Every reader
//! already treats file bytes as hostile (bounds checks, no panics: the fuzz targets), so
//! zeros where the file was give clean answers or clean errors; the symbolizer reopens its
//! cached files once it sees the count change (`symbolize/mod.rs`, `open_elf`).
//!
//! Any other `SIGBUS` is passed on as if this handler were not there: to the handler that
//! was installed before ours (called with the same arguments), or, where that was the
//! default action, the default action is restored and the signal happens again (the faulting
//! read is retried; a signal sent by `kill` is raised again), so the process ends as it would
//! have. An embedder that installs its own `SIGBUS` handler after the first file is mapped
//! should chain to the one it replaces (as the JVM, Go's runtime and crash reporters do);
//! one that does not want a handler at all calls [`read_files_instead_of_mapping`] first.
//!
//! The handler is async-signal-safe: it reads and writes atomics and calls `mmap`,
//! `sigaction` and `raise` (system calls); it does not allocate, lock or log. The registry is
//! a fixed array of [`SLOTS`] slots, each a seqlock (a sequence number, odd while the slot
//! changes), so the handler never sees a half-written (start, length) pair. A fault inside a
//! registered mapping comes from a thread that is reading it, so the mapping cannot be
//! unmapped while the handler replaces the page (it is unregistered before it is unmapped,
//! and the reader holds it). A file mapped when every slot is taken, or when the handler
//! could not be installed, is read into memory instead (see `FileBytes::map`).
//!
//! What stays: pages the file still has are read from it as it is now (a mapping is not a
//! snapshot: a file rewritten in place gives its new bytes; the symbolizer's cache keys a
//! file by size and mtime, so new batches reopen it); a name handed out as `&str` before the
//! shrink may end in zeros (where a multi-byte character was cut, invalid UTF-8: names read
//! after the shrink are checked again, see `ElfFile::symbol`).

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

/// How many mappings can be registered at once (the symbolizer's file cache holds 64 by
/// default, each with a debug file and perhaps a supplementary file and a `.dwp`; results
/// and unwinders may hold more).
pub(crate) const SLOTS: usize = 1024;

/// One registered mapping. Written only by the thread that claimed it (`USED`).
struct Slot {
    /// Even while the slot is stable, odd while it is being written.
    seq: AtomicU32,
    start: AtomicUsize,
    /// 0 for a free slot.
    len: AtomicUsize,
    /// Set by the handler when it replaced a page of this mapping.
    shrunk: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // each array element is its own atomic
const FREE: Slot = Slot {
    seq: AtomicU32::new(0),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    shrunk: AtomicBool::new(false),
};
static REGISTRY: [Slot; SLOTS] = [FREE; SLOTS];
/// Which slots are claimed (claimed with a compare-and-swap before the slot is written).
static USED: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];

static INSTALL: Once = Once::new();
/// Whether our handler is installed (false if `sigaction` failed).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Set by [`read_files_instead_of_mapping`].
static NO_MAPPING: AtomicBool = AtomicBool::new(false);
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);
/// Pages replaced with zeros so far, in every mapping.
static SHRINKS: AtomicU64 = AtomicU64::new(0);

/// The action that was installed before ours, kept for faults that are not ours. Set once,
/// before our handler is installed, so the handler's `get` never races with the `set`.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// From now on, in this whole process, files that stacksym would map (files the caller
/// names, host debug files, cores) are read into memory instead, up to
/// [`MAX_READ_FILE_BYTES`](crate::elf::MAX_READ_FILE_BYTES) each, and stacksym installs no
/// `SIGBUS` handler.
///
/// By default stacksym maps such files and, on the first one, installs a process-wide
/// `SIGBUS` handler that turns a read past the end of a mapped file that shrank (truncated
/// in place, as `cp new.so over.so` does) into a read of zeros, so that the process does not
/// die of it; every other `SIGBUS` is passed on to the handler that was installed before
/// (or gets the default action). Call this before the first file is opened if your program
/// must not have that handler (it manages `SIGBUS` itself and does not chain), or cannot
/// afford to share its signal disposition; reading files costs a cold batch the copy of each
/// whole file and its memory (ARCHITECTURE.md, "SIGBUS", has the measured cost). A handler
/// already installed stays, and keeps protecting the files mapped before the call.
pub fn read_files_instead_of_mapping() {
    NO_MAPPING.store(true, Ordering::Relaxed);
}

/// How many pages of shrunk mapped files the handler has replaced with zeros in this
/// process so far. A cached file opened before the count changed may hold such a page.
pub(crate) fn shrinks() -> u64 {
    SHRINKS.load(Ordering::Relaxed)
}

/// A mapping registered with the handler for as long as the value lives; dropped before
/// the mapping is unmapped.
#[derive(Debug)]
pub(crate) struct Registered {
    slot: usize,
}

impl Registered {
    /// Whether the handler replaced a page of this mapping with zeros (its file shrank while
    /// it was mapped, and a read went past the new end).
    pub(crate) fn shrunk(&self) -> bool {
        REGISTRY[self.slot].shrunk.load(Ordering::Relaxed)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        write_slot(self.slot, 0, 0);
        USED[self.slot].store(false, Ordering::Release);
    }
}

/// Registers `len` bytes mapped at `start`, installing the handler first if needed.
/// `None` when mapping is turned off ([`read_files_instead_of_mapping`]), the handler could
/// not be installed or every slot is taken: the caller must not keep the mapping then.
pub(crate) fn register(start: *const u8, len: usize) -> Option<Registered> {
    if !mapping_allowed() || start.is_null() || len == 0 {
        return None;
    }
    for (slot, used) in USED.iter().enumerate() {
        if used.load(Ordering::Relaxed) {
            continue;
        }
        if used
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            write_slot(slot, start as usize, len);
            return Some(Registered { slot });
        }
    }
    log::debug!("all {SLOTS} SIGBUS registry slots are taken; a file is read instead of mapped");
    None
}

/// Whether files may be mapped: mapping is not turned off and the handler is installed
/// (installing it now on the first call).
pub(crate) fn mapping_allowed() -> bool {
    if NO_MAPPING.load(Ordering::Relaxed) {
        return false;
    }
    install();
    INSTALLED.load(Ordering::Acquire)
}

/// Writes a claimed slot (the only writer of it) as a seqlock writer does.
fn write_slot(slot: usize, start: usize, len: usize) {
    let s = &REGISTRY[slot];
    let seq = s.seq.load(Ordering::Relaxed);
    s.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    s.start.store(start, Ordering::Relaxed);
    s.len.store(len, Ordering::Relaxed);
    s.shrunk.store(false, Ordering::Relaxed);
    s.seq.store(seq.wrapping_add(2), Ordering::Release);
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: `sysconf` has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if let Ok(page) = usize::try_from(page) {
            if page.is_power_of_two() {
                PAGE_SIZE.store(page, Ordering::Relaxed);
            }
        }
        // SAFETY: a zeroed `sigaction` (plain integers, pointers and a signal set) is a
        // valid value to fill in.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: reading the current action (a null new action) changes nothing; `previous`
        // is a valid, writable `sigaction`.
        if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) } != 0 {
            log::debug!(
                "cannot read the SIGBUS action ({}); files are read into memory",
                std::io::Error::last_os_error()
            );
            return;
        }
        // Kept before ours is installed, so the handler always finds it.
        let _ = PREVIOUS.set(previous);
        // SAFETY: as above; the handler has the signature `SA_SIGINFO` requires.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                handler;
            action.sa_sigaction = handler as usize;
            // SA_ONSTACK: run on the thread's alternate stack where it has one (Rust's
            // runtime sets one up for stack overflows), as the handler we replace might.
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            // Between the read above and this call another thread could install a handler
            // that we then replace without chaining to it; `previous` from this call closes
            // that window when it differs (it is what we really replaced).
            let mut replaced: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &action, &mut replaced) == 0 {
                if replaced.sa_sigaction != previous.sa_sigaction {
                    // Rare (a race with an embedder's own install): restore theirs and do
                    // not map, rather than chain to the wrong one.
                    libc::sigaction(libc::SIGBUS, &replaced, std::ptr::null_mut());
                    log::debug!("SIGBUS handler changed during install; files are read");
                    return;
                }
                INSTALLED.store(true, Ordering::Release);
            } else {
                log::debug!(
                    "cannot install the SIGBUS handler ({}); files are read into memory",
                    std::io::Error::last_os_error()
                );
            }
        }
    });
}

/// The slot of the registered mapping holding `addr`, read consistently (seqlock reader).
fn registered_slot(addr: usize) -> Option<usize> {
    (0..SLOTS).find(|&slot| {
        let s = &REGISTRY[slot];
        let before = s.seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            return false;
        }
        let start = s.start.load(Ordering::Relaxed);
        let len = s.len.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if s.seq.load(Ordering::Relaxed) != before {
            return false;
        }
        len != 0 && addr >= start && addr - start < len
    })
}

extern "C" fn handler(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO` handler (a chained
    // caller does as well). `si_addr` is meaningful for kernel-raised faults only, which the
    // `si_code` check selects (a `kill` has `si_code` <= 0, and its union holds a pid there).
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    let fault = code == libc::BUS_ADRERR || code == libc::BUS_OBJERR;
    if fault {
        if let Some(slot) = registered_slot(addr) {
            let page = PAGE_SIZE.load(Ordering::Relaxed);
            let at = addr & !(page - 1);
            // SAFETY: `at` is a page of a mapping this crate made and still holds: it stays
            // registered until it is unmapped, and the faulting thread is reading it, so it
            // is not unmapped now. Replacing the page with zeros changes only what reads of
            // that page see (nothing writes it: the mapping is read-only). The faulting read
            // is retried on return.
            let mapped = unsafe {
                libc::mmap(
                    at as *mut libc::c_void,
                    page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if mapped != libc::MAP_FAILED {
                REGISTRY[slot].shrunk.store(true, Ordering::Relaxed);
                SHRINKS.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }
    // Not ours (or the page could not be replaced): what would have happened without us.
    let previous = PREVIOUS.get();
    let action = previous.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
    if action == libc::SIG_IGN && !fault {
        // An ignored signal sent by another process stays ignored. (A fault cannot be
        // ignored: the kernel would kill the process, so it gets the default action below.)
        return;
    }
    if let Some(previous) = previous.filter(|_| action != libc::SIG_DFL && action != libc::SIG_IGN)
    {
        // SAFETY: `action` is the handler the embedder installed for SIGBUS, with these
        // flags; it is called as the kernel would have called it.
        unsafe {
            if previous.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(action);
                f(signal, info, context);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(action);
                f(signal);
            }
        }
        return;
    }
    // The default action: restore it, then let the signal happen again. A fault repeats when
    // the read is retried on return; a sent signal is raised again (blocked until this
    // handler returns). The process ends with SIGBUS, as it would have without us.
    // SAFETY: a zeroed sigaction with SIG_DFL is valid; `raise` is async-signal-safe.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
        if !fault {
            libc::raise(libc::SIGBUS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_range_is_found_until_it_is_dropped() {
        let buffer = vec![0u8; 3 * 4096];
        let registered = register(buffer.as_ptr(), buffer.len()).expect("a free slot");
        let start = buffer.as_ptr() as usize;
        assert_eq!(registered_slot(start), Some(registered.slot));
        assert_eq!(
            registered_slot(start + buffer.len() - 1),
            Some(registered.slot)
        );
        assert_eq!(registered_slot(start + buffer.len()), None);
        assert!(!registered.shrunk());
        let slot = registered.slot;
        drop(registered);
        assert_eq!(registered_slot(start), None);
        assert!(!USED[slot].load(Ordering::Relaxed));
    }
}
