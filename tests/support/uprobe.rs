//! Uprobes registered through tracefs' `uprobe_events` (tests/usdt.rs: a USDT probe's
//! offset and semaphore; tests/gopclntab.rs: a stripped Go function found by name), each
//! removed when its guard drops.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::skip_or_fail;

/// A uprobe event registered through `uprobe_events`, removed on drop (also when the test
/// fails): disabled, then deleted by name.
pub struct UprobeEvent {
    tracing: PathBuf,
    group: String,
    event: String,
}

impl UprobeEvent {
    /// Registers `p:GROUP/EVENT SPEC` (SPEC: `PATH:0xOFFSET`, with `(0xREF_CTR)` for a
    /// semaphore).
    pub fn register(tracing: &Path, group: &str, event: &str, spec: &str) -> std::io::Result<Self> {
        // Appended: other tracers' events stay. One write(2) per command: the kernel parses
        // each write on its own, and `writeln!` would split the line at every argument.
        let mut events = std::fs::OpenOptions::new()
            .append(true)
            .open(tracing.join("uprobe_events"))?;
        events.write_all(format!("p:{group}/{event} {spec}\n").as_bytes())?;
        Ok(UprobeEvent {
            tracing: tracing.to_path_buf(),
            group: group.to_string(),
            event: event.to_string(),
        })
    }

    /// The event's `enable` file (write `1` to arm it).
    pub fn enable_path(&self) -> PathBuf {
        self.tracing
            .join("events")
            .join(&self.group)
            .join(&self.event)
            .join("enable")
    }

    /// How often the event fired, from `uprobe_profile`.
    pub fn hits(&self) -> u64 {
        let profile = std::fs::read_to_string(self.tracing.join("uprobe_profile")).unwrap();
        // "  PATH EVENT HITS" (6.18 writes the event without its group).
        let name = format!("{}/{}", self.group, self.event);
        profile
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let at = f.iter().position(|&x| x == name || x == self.event)?;
                f.get(at + 1)?.parse().ok()
            })
            .unwrap_or_else(|| panic!("{name} not in uprobe_profile:\n{profile}"))
    }
}

impl Drop for UprobeEvent {
    fn drop(&mut self) {
        let _ = std::fs::write(self.enable_path(), "0");
        if let Ok(mut events) = std::fs::OpenOptions::new()
            .append(true)
            .open(self.tracing.join("uprobe_events"))
        {
            let _ = events.write_all(format!("-:{}/{}\n", self.group, self.event).as_bytes());
        }
    }
}

/// The tracefs directory, mounted if it is not; `None` after [`skip_or_fail`].
pub fn tracefs(test: &str) -> Option<PathBuf> {
    let dir = PathBuf::from("/sys/kernel/tracing");
    if !dir.join("uprobe_events").exists() {
        let _ = Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .stderr(Stdio::null())
            .status();
    }
    if std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("uprobe_events"))
        .is_err()
    {
        skip_or_fail(
            test,
            "/sys/kernel/tracing/uprobe_events is not writable (needs root and tracefs)",
        );
        return None;
    }
    Some(dir)
}
