//! perf JIT maps: `/tmp/perf-PID.map`, the text file in which JIT compilers (the JVM with
//! `-XX:+DumpPerfMapAtExit` or perf-map-agent, V8/Node with `--perf-basic-prof`, CPython 3.12
//! with `-X perf`, LuaJIT, wasmtime, ...) name the code they generate in anonymous memory.
//!
//! The format is perf's (`tools/perf/Documentation/jit-interface.txt`): one symbol a line,
//! `START SIZE NAME`, START and SIZE in hex (with or without `0x`), NAME the rest of the line
//! (it may contain spaces; trailing whitespace and a CR are dropped). START is an absolute
//! address of the process.
//!
//! [`parse_perf_map`] is I/O-free; [`Process::perf_map`](super::Process::perf_map) finds and
//! reads the file of a process (in a container's `/tmp` first) and refuses one not owned by the
//! process's user or root, since anyone can write to `/tmp`.
//!
//! Rules:
//! - A malformed line (too few fields, bad hex, no name, `START + SIZE` overflowing) is
//!   skipped, counted ([`PerfMap::skipped_lines`]) and logged with `log::debug!`: JITs append
//!   to the file while the process runs, so a half-written last line is normal, and one bad
//!   line must not lose the others. Blank lines are ignored. Only a file with content of which
//!   no line parses is an error (it is not a perf map at all).
//! - Overlapping or duplicate entries: **the later line wins** for the addresses it covers.
//!   JITs free code and emit new code at the same addresses, appending a new line; the last
//!   line written for an address describes the code there now. An earlier entry keeps the
//!   parts of its range that no later line covers.
//! - An entry of size 0 covers no address.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::maps::{hex_digits, next_field};
use super::Process;
use crate::addr::AbsAddr;
use crate::confine::{ConfinedRoot, LastLink, Resolver};
use crate::error::{Error, Result};

/// A parsed perf map: its entries, indexed for lookups by address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfMap {
    path: PathBuf,
    /// Every name, one after the other; entries hold ranges into it.
    names: String,
    /// The entries in file order.
    entries: Vec<Entry>,
    /// Disjoint address ranges, sorted by start, each with the entry (index in `entries`)
    /// that covers it: the last line covering those addresses.
    index: Vec<Piece>,
    skipped: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    start: u64,
    size: u64,
    name: Range<usize>,
}

/// A range of addresses and the entry (index) that covers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Piece {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) entry: usize,
}

/// The piece of `index` (sorted, disjoint) that holds `addr`.
pub(super) fn find_piece(index: &[Piece], addr: u64) -> Option<&Piece> {
    let at = index.partition_point(|p| p.start <= addr).checked_sub(1)?;
    index.get(at).filter(|piece| addr < piece.end)
}

/// One symbol of a perf map that covers an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerfMapSym<'a> {
    /// The name, as the JIT wrote it (not demangled; invalid UTF-8 replaced).
    pub name: &'a str,
    /// The symbol's start, an absolute address of the process.
    pub start: AbsAddr,
    /// Its size, as the line states it.
    pub size: u64,
    /// How far into the symbol the address is.
    pub offset: u64,
}

impl PerfMap {
    /// The name given to [`parse_perf_map`] (the path the file was read from).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many lines parsed (including those later lines overwrite entirely).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no line parsed (an empty file).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many non-blank lines were malformed and skipped.
    pub fn skipped_lines(&self) -> usize {
        self.skipped
    }

    /// The symbol covering `addr`: of the lines whose `START..START+SIZE` contains it, the last
    /// one in the file. `None` if no line covers it.
    pub fn find(&self, addr: AbsAddr) -> Option<PerfMapSym<'_>> {
        let piece = find_piece(&self.index, addr.0)?;
        let entry = self.entries.get(piece.entry)?;
        Some(PerfMapSym {
            name: self.names.get(entry.name.clone()).unwrap_or_default(),
            start: AbsAddr(entry.start),
            size: entry.size,
            offset: addr.0 - entry.start,
        })
    }
}

/// Parses the text of a perf map (see the module docs for the format and the rules). `name`
/// is kept as [`PerfMap::path`] and used in errors.
///
/// Errors only when the text has content and not one line of it parses
/// ([`Error::Process`] naming `name` and the first bad line); an empty text is an empty map.
///
/// ```
/// use stacksym::addr::AbsAddr;
/// use stacksym::process::parse_perf_map;
/// # fn main() -> stacksym::Result<()> {
/// let text = b"7f0000001000 40 LazyCompile:~main /app/index.js:1\n0x7f0000001020 0x10 stub\n";
/// let map = parse_perf_map("/tmp/perf-42.map".as_ref(), text)?;
/// let main = map.find(AbsAddr(0x7f0000001010)).unwrap();
/// assert_eq!(main.name, "LazyCompile:~main /app/index.js:1");
/// // The later line wins where the two overlap.
/// let stub = map.find(AbsAddr(0x7f0000001024)).unwrap();
/// assert_eq!((stub.name, stub.offset), ("stub", 4));
/// # Ok(())
/// # }
/// ```
pub fn parse_perf_map(name: &Path, text: &[u8]) -> Result<PerfMap> {
    let mut map = PerfMap {
        path: name.to_path_buf(),
        ..PerfMap::default()
    };
    let mut first_bad: Option<(usize, &'static str)> = None;
    for (number, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(line) {
            Ok((start, size, sym_name)) => {
                let from = map.names.len();
                map.names.push_str(&String::from_utf8_lossy(sym_name));
                map.entries.push(Entry {
                    start,
                    size,
                    name: from..map.names.len(),
                });
            }
            Err(what) => {
                map.skipped += 1;
                // The line itself is not quoted: the file may not be a perf map at all.
                log::debug!("{}: line {}: {what}, skipped", name.display(), number + 1);
                if first_bad.is_none() {
                    first_bad = Some((number + 1, what));
                }
            }
        }
    }
    if let (true, Some((number, what))) = (map.entries.is_empty(), first_bad) {
        return Err(Error::Process {
            path: name.to_path_buf(),
            what: format!(
                "not a perf map: none of its {} non-blank lines is `START SIZE NAME` \
                 (hex START and SIZE); line {number}: {what}",
                map.skipped,
            ),
        });
    }
    map.index = build_index(map.entries.iter().map(|e| (e.start, e.start + e.size)));
    Ok(map)
}

/// Disjoint pieces where each address belongs to the last range covering it; `ranges` are
/// `(start, end)` in the order they were written (`end >= start`; the jitdump reader uses
/// this too: a later load at an address replaces an earlier one).
pub(super) fn build_index(ranges: impl IntoIterator<Item = (u64, u64)>) -> Vec<Piece> {
    // start -> (end, entry), disjoint. Each entry removes what it overlaps (trimming the
    // neighbours at its edges) and inserts itself: at most three pieces added per entry.
    let mut pieces: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
    for (i, (start, end)) in ranges.into_iter().enumerate() {
        if start >= end {
            continue;
        }
        // A piece starting before `start` that reaches into the new range: keep its head, and
        // its tail beyond `end` if it has one.
        if let Some((&before, &(before_end, owner))) = pieces.range(..start).next_back() {
            if before_end > start {
                pieces.insert(before, (start, owner));
                if before_end > end {
                    pieces.insert(end, (before_end, owner));
                }
            }
        }
        // Pieces starting inside the new range: dropped, but a tail beyond `end` stays.
        let inside: Vec<u64> = pieces.range(start..end).map(|(&s, _)| s).collect();
        for s in inside {
            if let Some((piece_end, owner)) = pieces.remove(&s) {
                if piece_end > end {
                    pieces.insert(end, (piece_end, owner));
                }
            }
        }
        pieces.insert(start, (end, i));
    }
    pieces
        .into_iter()
        .map(|(start, (end, entry))| Piece { start, end, entry })
        .collect()
}

/// The largest perf map [`Process::perf_map`] reads (a long-running JVM's can reach hundreds of
/// MiB; beyond this it is more likely a mistake than a map).
pub const MAX_PERF_MAP_BYTES: u64 = 1 << 30;

/// What `<procfs>/<pid>/status` says about the process's identity.
struct Status {
    /// Real, effective, saved and filesystem uid (as seen from the reader's user namespace).
    uids: Vec<u32>,
    /// The pid in the process's own (innermost) pid namespace, from the last value of `NSpid:`.
    ns_pid: Option<u32>,
}

fn parse_status(text: &str) -> Status {
    let values = |key: &str| -> Vec<u32> {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|rest| {
                rest.split_whitespace()
                    .filter_map(|v| v.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    Status {
        uids: values("Uid:"),
        ns_pid: values("NSpid:").last().copied(),
    }
}

impl Process {
    fn read_status(&self) -> Result<Status> {
        let path = self.proc_dir().join("status");
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(parse_status(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || self.is_gone() => {
                Err(self.gone(&format!("({}: {e})", path.display())))
            }
            Err(source) => Err(Error::Io { path, source }),
        }
    }

    /// The process's pid in its own pid namespace (the innermost value of `NSpid:` in
    /// `<procfs_root>/<pid>/status`): the pid a container process knows itself by. The pid
    /// given to [`Process::new`] when the status has no `NSpid:` line (kernels before 4.1).
    pub fn ns_pid(&self) -> Result<u32> {
        Ok(self.read_status()?.ns_pid.unwrap_or(self.pid))
    }

    /// The process's perf JIT map, parsed ([`parse_perf_map`]); `Ok(None)` when it has none.
    ///
    /// Where: the process writes `/tmp/perf-<its pid>.map` in its own `/tmp`, so for a container
    /// process `<procfs_root>/<pid>/root/tmp/perf-<NSpid>.map` is tried first (the in-container
    /// pid, [`Process::ns_pid`]; for a process on the host this is the host's `/tmp` anyway),
    /// then the reader's `/tmp/perf-<pid>.map`, where perf itself looks.
    ///
    /// Security: the container's file is opened confined to its root, so
    /// no link in its path leads to a host file. `/tmp` is writable by everyone, so a file is
    /// used only if it is a regular file (not a symlink, not a FIFO: refused before anything
    /// is opened) owned by root or by one of the process's uids (the `Uid:` line of its
    /// status); otherwise it is ignored with a `log::debug!` saying why, and the next place is
    /// tried. The checks are made on the opened file, so a swap in between is harmless.
    ///
    /// Errors: the process does not exist ([`Error::Process`] naming the pid), a map that is
    /// not a perf map ([`Error::Process`] naming it), larger than [`MAX_PERF_MAP_BYTES`], or
    /// that could not be read while none was found elsewhere ([`Error::Io`] naming it).
    pub fn perf_map(&self) -> Result<Option<PerfMap>> {
        let status = self.read_status()?;
        let ns_pid = status.ns_pid.unwrap_or(self.pid);
        // The process's own /tmp, confined to its root; then the reader's.
        let candidates = [
            (
                self.root(),
                PathBuf::from(format!("/tmp/perf-{ns_pid}.map")),
            ),
            (
                ConfinedRoot::new("/"),
                PathBuf::from(format!("/tmp/perf-{}.map", self.pid)),
            ),
        ];
        let mut first_error = None;
        for (root, inside) in candidates {
            let path = root.host_path(&inside);
            match self.read_perf_map_file(&root, &inside, &status) {
                Ok(Some(text)) => return parse_perf_map(&path, &text).map(Some),
                Ok(None) => {}
                Err(e) => {
                    log::debug!("process {}: {e}", self.pid);
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(_) if self.is_gone() => Err(self.gone("(while reading its perf map)")),
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// The bytes of the perf map at `inside` of `root` if it exists and may be trusted;
    /// `Ok(None)` if it does not exist or is ignored. Opened confined to `root`, refusing a
    /// symbolic link as its last component; the checks are made on the opened file, so
    /// nothing can be swapped in between.
    fn read_perf_map_file(
        &self,
        root: &ConfinedRoot,
        inside: &Path,
        status: &Status,
    ) -> Result<Option<Vec<u8>>> {
        use std::io::Read;
        use std::os::unix::fs::MetadataExt;

        let path = root.host_path(inside);
        let ignore = |why: String| {
            log::debug!("process {}: ignoring {}: {why}", self.pid, path.display());
            Ok(None)
        };
        let file = match root.open_with(inside, LastLink::Refuse, Resolver::Best) {
            Ok(file) => file,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None)
            }
            Err(Error::NotAFile { kind, .. }) => return ignore(format!("it is {kind}")),
            Err(e) => return Err(e),
        };
        let meta = file.metadata().map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let trusted = |uid: u32| uid == 0 || status.uids.contains(&uid);
        if !trusted(meta.uid()) {
            return ignore(format!(
                "owned by uid {}, neither root nor the process's user (uids {:?})",
                meta.uid(),
                status.uids
            ));
        }
        if meta.len() > MAX_PERF_MAP_BYTES {
            return Err(Error::Process {
                path,
                what: format!(
                    "perf map of {} bytes, more than the {MAX_PERF_MAP_BYTES} read",
                    meta.len()
                ),
            });
        }
        let mut text = Vec::new();
        file.take(MAX_PERF_MAP_BYTES)
            .read_to_end(&mut text)
            .map_err(|source| Error::Io { path, source })?;
        Ok(Some(text))
    }
}

/// `START SIZE NAME`: the two numbers and the name (not empty, trailing whitespace dropped),
/// or what is wrong with the line.
fn parse_line(line: &[u8]) -> Result<(u64, u64, &[u8]), &'static str> {
    let mut rest = line;
    let start = next_field(&mut rest).ok_or("empty line")?;
    let size = next_field(&mut rest).ok_or("no size field")?;
    let start = hex(start).ok_or("bad start address (not hex)")?;
    let size = hex(size).ok_or("bad size (not hex)")?;
    start
        .checked_add(size)
        .ok_or("start + size is beyond the address space")?;
    let name = rest.trim_ascii();
    if name.is_empty() {
        return Err("no name");
    }
    Ok((start, size, name))
}

/// Hex with an optional `0x`/`0X`, up to 16 digits.
fn hex(field: &[u8]) -> Option<u64> {
    let digits = field
        .strip_prefix(b"0x")
        .or_else(|| field.strip_prefix(b"0X"))
        .unwrap_or(field);
    hex_digits(digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(map: &PerfMap, addrs: &[u64]) -> Vec<Option<String>> {
        addrs
            .iter()
            .map(|&a| map.find(AbsAddr(a)).map(|s| s.name.to_string()))
            .collect()
    }

    #[test]
    fn later_lines_win_and_earlier_ones_keep_the_rest() {
        let text = b"100 100 a\n180 10 b\n150 20 c\n0 0 empty\n300 10 d\n300 10 e\n";
        let map = parse_perf_map(Path::new("t"), text).unwrap();
        assert_eq!(map.len(), 6);
        assert_eq!(map.skipped_lines(), 0);
        let got = names(
            &map,
            &[
                0xff, 0x100, 0x14f, 0x150, 0x16f, 0x170, 0x180, 0x189, 0x190, 0x1ff, 0x200, 0x305,
            ],
        );
        let want = [
            None,
            Some("a"),
            Some("a"),
            Some("c"),
            Some("c"),
            Some("a"),
            Some("b"),
            Some("b"),
            Some("a"),
            Some("a"),
            None,
            Some("e"),
        ];
        assert_eq!(got, want.map(|n| n.map(String::from)));
        // The piece of `a` after `b` still reports `a`'s own start and size.
        let a = map.find(AbsAddr(0x190)).unwrap();
        assert_eq!((a.start, a.size, a.offset), (AbsAddr(0x100), 0x100, 0x90));
        // A later line covering several earlier ones (and their gaps) replaces them all.
        let map = parse_perf_map(Path::new("t"), b"10 10 x\n30 10 y\n0 100 z\n").unwrap();
        assert_eq!(
            names(&map, &[0x15, 0x35, 0x99]),
            vec![Some("z".to_string()); 3]
        );
        assert_eq!(map.index.len(), 1);
    }

    #[test]
    fn malformed_lines_are_skipped_unless_nothing_parses() {
        let text = b"zz 10 bad\n10\n10 20\n10 20   \nffffffffffffffff 2 wraps\n\n  \n20 10 ok\r\n";
        let map = parse_perf_map(Path::new("t"), text).unwrap();
        assert_eq!((map.len(), map.skipped_lines()), (1, 5));
        assert_eq!(map.find(AbsAddr(0x25)).unwrap().name, "ok");
        assert!(parse_perf_map(Path::new("t"), b"").unwrap().is_empty());
        assert!(parse_perf_map(Path::new("t"), b"\n \n").unwrap().is_empty());
        let err = parse_perf_map(Path::new("/tmp/perf-1.map"), b"hello world\n").unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.starts_with("/tmp/perf-1.map: not a perf map"),
            "{shown}"
        );
        assert!(shown.contains("line 1: bad start address"), "{shown}");
        // The file may be anything: its text is never quoted.
        assert!(!shown.contains("hello"), "{shown}");
    }
}
