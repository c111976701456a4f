//! A live c-wait child for the tests that read a running process (tests/process.rs,
//! tests/api.rs): started, its printed addresses read, killed when dropped; and a ptrace
//! stop that reads its registers.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

/// A running c-wait: killed when dropped.
pub struct Waiter {
    child: Child,
    pub pid: u32,
    /// NAME -> address, as the child printed them.
    addrs: HashMap<String, u64>,
}

impl Waiter {
    /// Starts `path` (c-wait or a program that prints as it does) and reads its
    /// `NAME 0xADDR` lines up to `ready`.
    pub fn spawn(path: &Path) -> Waiter {
        let mut child = Command::new(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let mut addrs = HashMap::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if line == "ready" {
                break;
            }
            let (name, value) = line.split_once(' ').unwrap();
            let value = match value.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
                None => value.parse().unwrap(),
            };
            addrs.insert(name.to_string(), value);
        }
        let pid = child.id();
        assert_eq!(addrs["pid"], u64::from(pid));
        // Let it reach its read(2) on stdin (tests/api.rs stops it there).
        std::thread::sleep(std::time::Duration::from_millis(50));
        Waiter { child, pid, addrs }
    }

    /// The address the child printed for `name`.
    pub fn addr(&self, name: &str) -> u64 {
        self.addrs[name]
    }

    /// Kills the child; reaps it too if `reap`, else leaves a zombie.
    pub fn kill(&mut self, reap: bool) {
        self.child.kill().unwrap();
        if reap {
            self.child.wait().unwrap();
        } else {
            // Wait until it is a zombie (state Z in /proc/PID/stat).
            for _ in 0..200 {
                let stat =
                    std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
                if stat
                    .rsplit_once(')')
                    .is_some_and(|(_, s)| s.starts_with(" Z"))
                {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            panic!("child {} did not become a zombie", self.pid);
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Seizes and stops `pid` and returns its `user_regs_struct` as words; `None` when
/// ptrace is refused.
#[cfg(target_arch = "x86_64")]
pub fn stopped_registers(pid: libc::pid_t) -> Option<[u64; 27]> {
    // SAFETY: plain ptrace calls on a child of ours; the register buffer is a
    // user_regs_struct-sized array of words, which PTRACE_GETREGS fills.
    unsafe {
        if libc::ptrace(libc::PTRACE_SEIZE, pid, 0, 0) != 0 {
            return None;
        }
        if libc::ptrace(libc::PTRACE_INTERRUPT, pid, 0, 0) != 0 {
            return None;
        }
        let mut status = 0;
        if libc::waitpid(pid, &mut status, libc::__WALL) != pid {
            return None;
        }
        assert_eq!(
            std::mem::size_of::<libc::user_regs_struct>(),
            27 * 8,
            "user_regs_struct is 27 words"
        );
        let mut words = [0u64; 27];
        if libc::ptrace(libc::PTRACE_GETREGS, pid, 0, words.as_mut_ptr()) != 0 {
            return None;
        }
        Some(words)
    }
}

/// Lets a seized process go.
pub fn detach(pid: libc::pid_t) {
    // SAFETY: detaching a tracee of ours.
    unsafe {
        libc::ptrace(libc::PTRACE_DETACH, pid, 0, 0);
    }
}
