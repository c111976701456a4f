//! Stopping every thread of a live process with ptrace, reading their registers, and letting
//! them go again: the pstack example's only use of ptrace, kept out of the library (which
//! reads a process's memory, not its threads' registers).
//!
//! Each thread listed in `/proc/PID/task` is seized (`PTRACE_SEIZE`: no signal is sent, so
//! the process sees nothing) and stopped with `PTRACE_INTERRUPT`; the listing is read again
//! until it shows no new thread (one created meanwhile). [`Seized`] detaches every thread it
//! holds when it is dropped (a return, an error, a panic), passing on any signal that arrived
//! while the thread was stopped. Waits poll with a deadline and watch a flag the caller's
//! signal handler sets, so a thread that never stops (in uninterruptible sleep) or a Ctrl-C
//! cannot keep the others stopped.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// How long to wait for one thread to stop before giving up on it.
const STOP_TIMEOUT: Duration = Duration::from_secs(2);
/// Rounds of reading `/proc/PID/task` for threads created while the others were being seized.
const MAX_ROUNDS: usize = 16;

/// One seized thread.
#[derive(Debug)]
pub struct Thread {
    /// Its thread id (LWP).
    pub tid: i32,
    /// It reported its stop; only a stopped thread's registers can be read.
    pub stopped: bool,
    /// A signal it was about to receive when it stopped (a signal-delivery stop): given back
    /// at detach, so the process does not lose it.
    pending_signal: i32,
}

/// The threads of one process, seized and (those with `stopped`) stopped; detached on drop.
#[derive(Debug)]
pub struct Seized {
    pid: i32,
    /// The seized threads, in the order seized.
    pub threads: Vec<Thread>,
}

/// Why stopping the process failed or ended early.
#[derive(Debug)]
pub enum StopError {
    /// A signal arrived while waiting: the caller was interrupted.
    Interrupted,
    /// Not even one thread could be seized.
    Failed(String),
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// `ptrace(request, tid, addr, data)`.
fn ptrace(request: libc::c_uint, tid: i32, addr: usize, data: usize) -> std::io::Result<i64> {
    // SAFETY: the requests used here (SEIZE, INTERRUPT, DETACH, GETREGSET) read or write only
    // the memory `addr`/`data` point to when they are pointers: GETREGSET's iovec and the
    // buffer it describes, both valid for the call (see `registers`). The others take
    // integers.
    let ret = unsafe {
        libc::ptrace(
            request,
            tid,
            addr as *mut libc::c_void,
            data as *mut libc::c_void,
        )
    };
    if ret == -1 {
        Err(errno())
    } else {
        Ok(ret)
    }
}

/// The thread ids in `/proc/PID/task`.
fn list_threads(pid: i32) -> std::io::Result<Vec<i32>> {
    let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

impl Seized {
    /// Seizes and stops every thread of `pid`. Returns early with
    /// [`StopError::Interrupted`] when `signal` becomes non-zero (the threads seized so far
    /// are detached then, as always on drop).
    pub fn stop_all(pid: i32, signal: &AtomicI32) -> Result<Seized, StopError> {
        let mut seized = Seized {
            pid,
            threads: Vec::new(),
        };
        let mut first_error = None;
        for _ in 0..MAX_ROUNDS {
            let tids = list_threads(pid)
                .map_err(|e| StopError::Failed(format!("/proc/{pid}/task: {e}")))?;
            let mut new = 0;
            for tid in tids {
                if seized.threads.iter().any(|t| t.tid == tid) {
                    continue;
                }
                check_signal(signal)?;
                match ptrace(libc::PTRACE_SEIZE, tid, 0, 0) {
                    Ok(_) => {}
                    // Exited since the listing.
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                    Err(e) => {
                        first_error.get_or_insert_with(|| format!("thread {tid}: {e}"));
                        continue;
                    }
                }
                new += 1;
                seized.threads.push(Thread {
                    tid,
                    stopped: false,
                    pending_signal: 0,
                });
                if let Err(e) = ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0) {
                    log::debug!("PTRACE_INTERRUPT of thread {tid}: {e}");
                }
            }
            for thread in seized.threads.iter_mut().filter(|t| !t.stopped) {
                thread.wait_for_stop(Instant::now() + STOP_TIMEOUT, signal)?;
            }
            // Threads that exited while being stopped are no longer traced.
            seized.threads.retain(|t| t.tid != 0);
            if new == 0 {
                break;
            }
        }
        if seized.threads.is_empty() {
            return Err(StopError::Failed(first_error.unwrap_or_else(|| {
                format!("process {pid} has no thread that could be stopped")
            })));
        }
        Ok(seized)
    }

    /// Detaches every thread now (what drop does), returning the threads that could not be
    /// detached with why; the kernel detaches those when this process exits.
    pub fn detach_all(&mut self) -> Vec<String> {
        let mut failures = Vec::new();
        for thread in self.threads.drain(..) {
            if let Err(e) = thread.detach() {
                failures.push(format!("thread {} of {}: {e}", thread.tid, self.pid));
            }
        }
        failures
    }
}

impl Drop for Seized {
    fn drop(&mut self) {
        for failure in self.detach_all() {
            eprintln!("pstack: detach: {failure} (the kernel detaches it when pstack exits)");
        }
    }
}

fn check_signal(signal: &AtomicI32) -> Result<(), StopError> {
    match signal.load(Ordering::SeqCst) {
        0 => Ok(()),
        _ => Err(StopError::Interrupted),
    }
}

impl Thread {
    /// Waits (polling, until `deadline`) for this thread's stop after `PTRACE_INTERRUPT`.
    /// A thread that exits gets tid 0 (dropped by the caller); one that does not stop in
    /// time stays `stopped: false` (reported, and not unwound).
    fn wait_for_stop(&mut self, deadline: Instant, signal: &AtomicI32) -> Result<(), StopError> {
        loop {
            let mut status = 0;
            // SAFETY: `status` is a valid out-pointer for the call.
            let ret = unsafe { libc::waitpid(self.tid, &mut status, libc::__WALL | libc::WNOHANG) };
            if ret == self.tid {
                if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                    self.tid = 0;
                    return Ok(());
                }
                if libc::WIFSTOPPED(status) {
                    let sig = libc::WSTOPSIG(status);
                    let event = (status >> 16) & 0xff;
                    // PTRACE_EVENT_STOP: our interrupt, or a group stop (the process was
                    // stopped by SIGSTOP and stays so). A plain stop with another signal is
                    // a signal-delivery stop: the signal is handed back at detach.
                    if event != libc::PTRACE_EVENT_STOP && sig != libc::SIGTRAP {
                        self.pending_signal = sig;
                    }
                    self.stopped = true;
                    return Ok(());
                }
            } else if ret == -1 {
                let e = errno();
                if e.raw_os_error() == Some(libc::ECHILD) {
                    // Gone (reaped by its process's exit).
                    self.tid = 0;
                    return Ok(());
                }
                if e.raw_os_error() != Some(libc::EINTR) {
                    log::debug!("waitpid({}): {e}", self.tid);
                }
            }
            check_signal(signal)?;
            if Instant::now() >= deadline {
                eprintln!(
                    "pstack: thread {} did not stop within {:?} (uninterruptible sleep?); \
                     its stack is not shown",
                    self.tid, STOP_TIMEOUT
                );
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Lets the thread go, with the signal it was about to receive.
    fn detach(&self) -> std::io::Result<()> {
        if self.tid == 0 {
            return Ok(());
        }
        let sig = usize::try_from(self.pending_signal).unwrap_or(0);
        match ptrace(libc::PTRACE_DETACH, self.tid, 0, sig) {
            Ok(_) => Ok(()),
            // ESRCH: gone, or not in a ptrace stop yet (the interrupt is still on its way):
            // wait for that stop briefly, then detach.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) && !self.stopped => {
                let mut late = Thread {
                    tid: self.tid,
                    stopped: false,
                    pending_signal: 0,
                };
                let no_signal = AtomicI32::new(0);
                let deadline = Instant::now() + Duration::from_millis(200);
                let _ = late.wait_for_stop(deadline, &no_signal);
                if late.tid == 0 {
                    return Ok(());
                }
                let sig = usize::try_from(late.pending_signal).unwrap_or(0);
                ptrace(libc::PTRACE_DETACH, self.tid, 0, sig).map(|_| ())
            }
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The thread's general registers (`PTRACE_GETREGSET`, `NT_PRSTATUS`): the kernel's
    /// `user_regs_struct` of this architecture.
    pub fn registers(&self) -> std::io::Result<libc::user_regs_struct> {
        // SAFETY: user_regs_struct is plain integers; all zeroes is a valid value.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        let mut iov = libc::iovec {
            iov_base: std::ptr::addr_of_mut!(regs).cast(),
            iov_len: std::mem::size_of::<libc::user_regs_struct>(),
        };
        ptrace(
            libc::PTRACE_GETREGSET,
            self.tid,
            libc::NT_PRSTATUS as usize,
            std::ptr::addr_of_mut!(iov) as usize,
        )?;
        Ok(regs)
    }
}
