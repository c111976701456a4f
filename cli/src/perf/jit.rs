//! perf JIT maps for `stacksym perf` (src/perf/): which mappings perf names through
//! `/tmp/perf-PID.map`, and reading that file — also after the process has exited, as perf
//! does (the file stays in `/tmp` until someone removes it).
//!
//! perf 6.1 (`map__new`, util/map.c): an executable mapping of anonymous memory (`//anon`,
//! `/dev/zero...`, `/anon_hugepage...`) or of memory without a file (`[stack...`, `/SYSV...`,
//! `[heap]`) is named `/tmp/perf-PID.map` (PID the recorded process's), and every such
//! mapping, executable or not, maps addresses to themselves (its address column is the
//! address, not a file offset). `dso__load_perf_map` takes the symbols from the file as its
//! lines say (`START SIZE NAME`, not demangled); the library's `parse_perf_map` reads them
//! (a later line wins where two overlap).
//!
//! The file is found as the library finds a live process's (its own `/tmp` first, confined to
//! its root: a container's), else at the reader's `/tmp/perf-PID.map`: the only place left
//! once the process is gone. The reader's `/tmp` is trusted (ARCHITECTURE.md, "Trust"); the
//! file's contents are not (`parse_perf_map` is fuzzed).
//!
//! jitdump files: a runtime maps the `jit-PID.dump` it writes (V8 with `--perf-prof`), so
//! the recording's MMAP records name it, as `perf inject --jit` finds it. A raw recording's
//! frames in the process's anonymous JIT memory are named from that file (read when a frame
//! needs it, with the library's `read_jit_dump`) before the perf map: the names and
//! source lines `perf script` prints after `perf inject --jit`. The dso column stays the
//! perf map's path (`/tmp/perf-PID.map`, what perf prints for such memory without inject):
//! inject's `jitted-PID-N.so` files are not written here. The code that names an address
//! is the one loaded there last at or before the sample's time (`code_at`), as the mapping
//! perf inject puts into the recording at each load's time names it; the code inside the
//! binary's text that V8 names (its embedded builtins) is named so too, as after inject.
//! Each process's unwinder gets the loads' unwind tables as the samples' time passes them
//! (`add_unwind_tables`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use stacksym::process::{
    parse_perf_map, read_jit_dump, JitCode, JitDump, PerfMap, Process, MAX_JITDUMP_BYTES,
    MAX_PERF_MAP_BYTES,
};

/// perf's `is_anon_memory` and `is_no_dso_memory`: a mapping whose addresses are its own
/// (identity-mapped), not offsets into a file.
pub fn is_identity(path: &[u8]) -> bool {
    path == b"//anon"
        || path.starts_with(b"/dev/zero")
        || path.starts_with(b"/anon_hugepage")
        || path.starts_with(b"[stack")
        || path.starts_with(b"/SYSV")
        || path == b"[heap]"
}

/// The path perf gives an executable identity mapping of process `pid`.
pub fn map_path(pid: i32) -> String {
    format!("/tmp/perf-{pid}.map")
}

/// The perf map of `pid`: the live process's (through the library), else the file at
/// `/tmp/perf-PID.map`; `None` when there is none or it cannot be read (said on stderr, as
/// perf warns).
pub fn read(pid: i32) -> Option<PerfMap> {
    let live = pid > 0 && Path::new(&format!("/proc/{pid}")).exists();
    if let Some(process) = u32::try_from(pid).ok().filter(|_| live).map(Process::new) {
        match process.perf_map() {
            Ok(Some(map)) => return Some(map),
            Ok(None) => {}
            Err(e) => eprintln!("stacksym perf: note: process {pid}'s perf map: {e}"),
        }
    }
    let path = map_path(pid);
    let text = match read_capped(Path::new(&path)) {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(e) => {
            eprintln!("stacksym perf: note: {path}: {e}");
            return None;
        }
    };
    match parse_perf_map(Path::new(&path), &text) {
        Ok(map) => Some(map),
        Err(e) => {
            eprintln!("stacksym perf: note: {e}");
            None
        }
    }
}

/// The bytes of the regular file at `path`, at most `MAX_PERF_MAP_BYTES` of them (more is an
/// error); `Ok(None)` when there is no such file.
fn read_capped(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = Vec::new();
    file.take(MAX_PERF_MAP_BYTES + 1).read_to_end(&mut text)?;
    if text.len() as u64 > MAX_PERF_MAP_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_PERF_MAP_BYTES} bytes"
        )));
    }
    Ok(Some(text))
}

/// Gives `proc`'s unwinder the unwind tables of the loads of its jitdump written at or
/// before `time` (all of them when the sample has no time), after those it has: a sample
/// unwinds through the code that was at its addresses then (V8's `.eh_frame` of each
/// function, `JIT_CODE_UNWINDING_INFO`; the library's `Modules::add_jit_code`), as perf
/// unwinds through the `jitted-PID-N.so` files `perf inject --jit` writes from them.
pub fn add_unwind_tables<A: stacksym::unwind::UnwindArch>(
    dump: Option<&Option<JitDump>>,
    proc: &mut super::Proc<A>,
    time: Option<u64>,
) {
    let Some(Some(dump)) = dump else {
        return;
    };
    let due = |i: usize| {
        dump.nth(i)
            .filter(|code| time.is_none_or(|time| code.timestamp <= time))
    };
    if due(proc.jit_loads).is_none() {
        return;
    }
    let modules = proc.unwinder.modules_mut();
    while let Some(code) = due(proc.jit_loads) {
        modules.add_jit_code(&code);
        proc.jit_loads += 1;
    }
}

/// The code of `dump` at `addr` at a sample's `time`: the last load or move written there
/// at or before it (addresses are reused as code is collected); without a time, the last
/// written at all.
pub fn code_at(dump: &JitDump, addr: u64, time: Option<u64>) -> Option<JitCode<'_>> {
    match time {
        Some(time) => dump.find_at(stacksym::AbsAddr(addr), time),
        None => dump.find(stacksym::AbsAddr(addr)),
    }
}

/// A frame at `addr` in `code` named as perf names it after inject: the load's name and
/// offset, `FILE:LINE` where the JIT wrote a line, else `short[addr]`.
pub fn resolved(code: &JitCode<'_>, short: &str, addr: u64) -> super::Resolved {
    super::Resolved {
        sym: Some((code.name.into(), code.offset)),
        inlines: Vec::new(),
        srcline: Some(match code.line() {
            Some(line) => format!("{}:{}", line.file, line.line).into(),
            None => format!("{short}[{addr:x}]").into(),
        }),
    }
}

/// The jitdump files the recording's MMAP records name, by process, and each read once.
#[derive(Default)]
pub struct Dumps {
    paths: Mutex<HashMap<i32, PathBuf>>,
    read: Mutex<HashMap<i32, Arc<OnceLock<Option<JitDump>>>>>,
}

/// Whether `path` names a jitdump as runtimes name them (`jit-<digits>.dump`).
pub fn is_jitdump(path: &[u8]) -> bool {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or_default();
    name.strip_prefix(b"jit-")
        .and_then(|rest| rest.strip_suffix(b".dump"))
        .is_some_and(|pid| !pid.is_empty() && pid.iter().all(u8::is_ascii_digit))
}

impl Dumps {
    /// Process `pid` mapped the jitdump at `path`.
    pub fn mapped(&self, pid: i32, path: &[u8]) {
        let path = PathBuf::from(String::from_utf8_lossy(path).into_owned());
        let mut paths = self.paths.lock().unwrap_or_else(PoisonError::into_inner);
        paths.entry(pid).or_insert(path);
    }

    /// Process `pid`'s jitdump, read on first use (`None`: none mapped, or unreadable: said
    /// on stderr).
    pub fn of(&self, pid: i32) -> Option<Arc<OnceLock<Option<JitDump>>>> {
        let path = self
            .paths
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&pid)?
            .clone();
        let cell = Arc::clone(
            self.read
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(pid)
                .or_default(),
        );
        cell.get_or_init(|| read_dump(&path));
        Some(cell)
    }
}

/// The jitdump at `path`, read with the library's reader (at most `MAX_JITDUMP_BYTES`: the
/// bytes left unread are said on stderr); `None` when it cannot be read (said on stderr).
fn read_dump(path: &Path) -> Option<JitDump> {
    let read = std::fs::File::open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
        .and_then(|file| read_jit_dump(file, path).map_err(|e| e.to_string()));
    match read {
        Ok(dump) => {
            if dump.unread_bytes() > 0 {
                eprintln!(
                    "stacksym perf: note: {}: larger than {MAX_JITDUMP_BYTES} bytes: its last {} bytes are not read",
                    path.display(),
                    dump.unread_bytes()
                );
            }
            Some(dump)
        }
        Err(e) => {
            eprintln!("stacksym perf: note: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up dump: two loads at 0x1000 (16 bytes), "old" at time 10, "new" at time 20.
    fn two_loads() -> JitDump {
        let mut file = Vec::new();
        for word in [0x4A69_5444u32, 1, 40, 62, 0, 42] {
            file.extend(word.to_le_bytes());
        }
        file.extend([0u8; 16]);
        for (time, name, index) in [(10u64, &b"old\0"[..], 1u64), (20, b"new\0", 2)] {
            file.extend(0u32.to_le_bytes()); // JIT_CODE_LOAD
            file.extend((16 + 40 + name.len() as u32 + 16).to_le_bytes());
            file.extend(time.to_le_bytes());
            file.extend([42u32, 42].iter().flat_map(|w| w.to_le_bytes()));
            for word in [0x1000u64, 0x1000, 16, index] {
                file.extend(word.to_le_bytes());
            }
            file.extend(name);
            file.extend([0xc3u8; 16]);
        }
        stacksym::process::parse_jitdump(Path::new("jit-42.dump"), &file).expect("a valid dump")
    }

    #[test]
    fn a_sample_is_named_by_the_code_loaded_at_its_time() {
        let dump = two_loads();
        let name = |time| code_at(&dump, 0x1004, time).map(|code| code.name);
        assert_eq!(name(Some(9)), None);
        assert_eq!(name(Some(10)), Some("old"));
        assert_eq!(name(Some(19)), Some("old"));
        assert_eq!(name(Some(20)), Some("new"));
        assert_eq!(name(None), Some("new"));
        assert_eq!(code_at(&dump, 0x1010, Some(30)).map(|c| c.name), None);
        let resolved = resolved(&code_at(&dump, 0x1004, Some(15)).expect("old"), "x", 0x1004);
        assert_eq!(resolved.sym, Some(("old".into(), 4)));
        assert_eq!(resolved.srcline.as_deref(), Some("x[1004]"));
    }
}
