//! Broken, hostile and odd input: every failure is an `Err` whose `Display` names the path and
//! the problem, and nothing panics.
//!
//! The malformed files are made at test time from the committed binaries (testdata/bin) by
//! patching fields this file locates itself (see [`RawElf`]), so they follow a rebuild.

use std::path::{Path, PathBuf};

mod support;

use stacksym::elf::ElfFile;
use stacksym::{Error, FileOffset, Input, Source, Symbolizer, VirtAddr};
use support::writeln_stderr;
use support::{bin, ALL_BINARIES};

fn read_bin(name: &str) -> Vec<u8> {
    std::fs::read(bin(name)).unwrap()
}

// ------------------------------------------------------------------------------------------
// A minimal reader of ELF headers (little-endian, both classes), written independently of
// stacksym and object, to find the fields to break.
// ------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Section {
    /// Where this section's header starts in the file.
    header_at: usize,
    name: String,
    sh_type: u32,
    offset: u64,
    size: u64,
    link: u32,
}

#[derive(Debug, Clone, Copy)]
enum ShField {
    Type,
    Offset,
    Size,
    Link,
    EntSize,
}

#[derive(Debug, Clone, Copy)]
enum EhField {
    PhOff,
    ShOff,
    PhEntSize,
    PhNum,
    ShEntSize,
    ShNum,
    ShStrNdx,
}

#[derive(Debug, Clone)]
struct RawElf {
    is64: bool,
    sections: Vec<Section>,
}

/// Whether `data`, a whole ELF file, is big-endian (`EI_DATA` is 2; c-s390x is).
fn big_endian(data: &[u8]) -> bool {
    data.get(5) == Some(&2)
}

/// Reads a `width`-byte field at `at` of the whole ELF file `data`, in the file's byte order.
fn rd(data: &[u8], at: usize, width: usize) -> u64 {
    let bytes = &data[at..at + width];
    let fold = |v: u64, b: &u8| (v << 8) | u64::from(*b);
    if big_endian(data) {
        bytes.iter().fold(0, fold)
    } else {
        bytes.iter().rev().fold(0, fold)
    }
}

/// Writes a `width`-byte field at `at` of the whole ELF file `data`, in the file's byte order.
fn wr(data: &mut [u8], at: usize, width: usize, value: u64) {
    let big = big_endian(data);
    for i in 0..width {
        let shift = if big { 8 * (width - 1 - i) } else { 8 * i };
        data[at + i] = (value >> shift) as u8;
    }
}

impl RawElf {
    fn parse(data: &[u8]) -> RawElf {
        assert_eq!(&data[..4], b"\x7fELF");
        let is64 = data[4] == 2;
        let mut elf = RawElf {
            is64,
            sections: Vec::new(),
        };
        let shoff = elf.eh(data, EhField::ShOff) as usize;
        let shentsize = elf.eh(data, EhField::ShEntSize) as usize;
        let shnum = elf.eh(data, EhField::ShNum) as usize;
        let shstrndx = elf.eh(data, EhField::ShStrNdx) as usize;
        for i in 0..shnum {
            let h = shoff + i * shentsize;
            let (offset, size, link) = if is64 {
                (
                    rd(data, h + 24, 8),
                    rd(data, h + 32, 8),
                    rd(data, h + 40, 4),
                )
            } else {
                (
                    rd(data, h + 16, 4),
                    rd(data, h + 20, 4),
                    rd(data, h + 24, 4),
                )
            };
            elf.sections.push(Section {
                header_at: h,
                name: String::new(),
                sh_type: rd(data, h + 4, 4) as u32,
                offset,
                size,
                link: link as u32,
            });
        }
        let names = elf.sections[shstrndx].clone();
        for s in &mut elf.sections {
            let start = names.offset as usize + rd(data, s.header_at, 4) as usize;
            let end = start + data[start..].iter().position(|&b| b == 0).unwrap();
            s.name = String::from_utf8_lossy(&data[start..end]).into_owned();
        }
        elf
    }

    /// Width of an address-sized field.
    fn word(&self) -> usize {
        if self.is64 {
            8
        } else {
            4
        }
    }

    fn eh_pos(&self, f: EhField) -> (usize, usize) {
        match (self.is64, f) {
            (true, EhField::PhOff) => (0x20, 8),
            (true, EhField::ShOff) => (0x28, 8),
            (true, EhField::PhEntSize) => (0x36, 2),
            (true, EhField::PhNum) => (0x38, 2),
            (true, EhField::ShEntSize) => (0x3a, 2),
            (true, EhField::ShNum) => (0x3c, 2),
            (true, EhField::ShStrNdx) => (0x3e, 2),
            (false, EhField::PhOff) => (0x1c, 4),
            (false, EhField::ShOff) => (0x20, 4),
            (false, EhField::PhEntSize) => (0x2a, 2),
            (false, EhField::PhNum) => (0x2c, 2),
            (false, EhField::ShEntSize) => (0x2e, 2),
            (false, EhField::ShNum) => (0x30, 2),
            (false, EhField::ShStrNdx) => (0x32, 2),
        }
    }

    fn eh(&self, data: &[u8], f: EhField) -> u64 {
        let (at, w) = self.eh_pos(f);
        rd(data, at, w)
    }

    fn set_eh(&self, data: &mut [u8], f: EhField, value: u64) {
        let (at, w) = self.eh_pos(f);
        wr(data, at, w, value);
    }

    fn header_size(&self) -> usize {
        if self.is64 {
            64
        } else {
            52
        }
    }

    fn section(&self, name: &str) -> &Section {
        self.sections
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no section {name}"))
    }

    fn set_sh(&self, data: &mut [u8], section: &str, f: ShField, value: u64) {
        let s = self.section(section);
        let (off, w) = match (self.is64, f) {
            (_, ShField::Type) => (4, 4),
            (true, ShField::Offset) => (24, 8),
            (true, ShField::Size) => (32, 8),
            (true, ShField::Link) => (40, 4),
            (true, ShField::EntSize) => (56, 8),
            (false, ShField::Offset) => (16, 4),
            (false, ShField::Size) => (20, 4),
            (false, ShField::Link) => (24, 4),
            (false, ShField::EntSize) => (36, 4),
        };
        wr(data, s.header_at + off, w, value);
    }

    fn sym_size(&self) -> usize {
        if self.is64 {
            24
        } else {
            16
        }
    }

    /// `(file position of the entry, st_name, st_value)` of every entry of a symbol table.
    fn symbols(&self, data: &[u8], table: &str) -> Vec<(usize, u32, u64)> {
        let s = self.section(table);
        let n = s.size as usize / self.sym_size();
        (0..n)
            .map(|i| {
                let at = s.offset as usize + i * self.sym_size();
                let value = if self.is64 {
                    rd(data, at + 8, 8)
                } else {
                    rd(data, at + 4, 4)
                };
                (at, rd(data, at, 4) as u32, value)
            })
            .collect()
    }

    /// The position of the symbol called `name` in `table`, and its value.
    fn symbol_named(&self, data: &[u8], table: &str, name: &str) -> (usize, u64) {
        let strings = self.section(&self.strtab_of(table)).offset as usize;
        self.symbols(data, table)
            .into_iter()
            .find(|&(_, st_name, _)| {
                let start = strings + st_name as usize;
                data[start..].starts_with(name.as_bytes()) && data[start + name.len()] == 0
            })
            .map(|(at, _, value)| (at, value))
            .unwrap_or_else(|| panic!("no symbol {name} in {table}"))
    }

    fn strtab_of(&self, table: &str) -> String {
        let link = self.section(table).link as usize;
        self.sections[link].name.clone()
    }
}

// ------------------------------------------------------------------------------------------
// Running a file through every entry point
// ------------------------------------------------------------------------------------------

/// What the library made of one input.
#[derive(Debug)]
enum Outcome {
    /// Opened and every lookup answered (found or not).
    Ok,
    /// Some call failed; the messages seen.
    Err(Vec<String>),
}

impl Outcome {
    /// Ok without errors, else the distinct errors in the order seen.
    fn from_errors(mut errors: Vec<String>) -> Outcome {
        let mut seen = std::collections::HashSet::new();
        errors.retain(|e| seen.insert(e.clone()));
        if errors.is_empty() {
            Outcome::Ok
        } else {
            Outcome::Err(errors)
        }
    }

    fn errors(&self) -> &[String] {
        match self {
            Outcome::Ok => &[],
            Outcome::Err(e) => e,
        }
    }
}

/// Checks that an error names `path` and says something after it.
fn check_error(err: &Error, path: &Path) -> String {
    let shown = err.to_string();
    let prefix = format!("{}: ", path.display());
    assert!(
        shown.starts_with(&prefix) && shown.len() > prefix.len() + 3,
        "error does not name the path {} and the problem: {shown:?}",
        path.display()
    );
    assert_eq!(err.path(), path);
    shown
}

/// Interesting addresses for lookups in a file: its own symbols' addresses taken from the
/// intact original (if given), segment starts/ends and some extremes.
fn probe_addrs(elf: &ElfFile, extra: &[u64]) -> Vec<u64> {
    let mut addrs: Vec<u64> = extra.to_vec();
    for seg in elf.segments().loads() {
        let v = seg.virt_addr.0;
        addrs.extend([
            v,
            v.wrapping_add(seg.mem_size / 2),
            v.wrapping_add(seg.mem_size),
            v.wrapping_add(seg.mem_size).wrapping_sub(1),
        ]);
    }
    addrs.extend([0, 1, u64::MAX, u64::MAX - 1, 1 << 63, u32::MAX as u64]);
    addrs
}

/// Uses everything a caller could on `elf`: lookups by address and offset, names, ids,
/// build-id, counts. Returns the errors seen.
fn exercise(elf: &ElfFile, extra: &[u64], errors: &mut Vec<String>) {
    let path = elf.path().to_path_buf();
    let _ = elf.header();
    let _ = elf.build_id().map(<[u8]>::len);
    match elf.symbol_count() {
        Ok(_) => {}
        Err(e) => errors.push(check_error(&e, &path)),
    }
    for addr in probe_addrs(elf, extra) {
        match elf.find_symbol(VirtAddr(addr)) {
            Ok(Some(s)) => {
                let name = String::from_utf8_lossy(s.name);
                let _ = stacksym::demangle::demangle(&name);
                let _ = s.version.map(<[u8]>::len);
                assert!(s.addr.0 <= addr, "a symbol starts at or before its address");
                let again = elf.symbol_by_id(s.id).unwrap().unwrap();
                assert_eq!(again.name, s.name);
            }
            Ok(None) => {}
            Err(e) => errors.push(check_error(&e, &path)),
        }
        if let Some(off) = elf.segments().virt_to_file_offset(VirtAddr(addr)) {
            match elf.find_symbol_at_file_offset(off) {
                Ok(_) => {}
                Err(e) => errors.push(check_error(&e, &path)),
            }
        }
        let _ = elf.segments().file_offset_to_virt(FileOffset(addr));
        if let Err(e) = elf.find_symbol_at_file_offset(FileOffset(addr)) {
            errors.push(check_error(&e, &path));
        }
    }
}

/// Runs `bytes` through `ElfFile::from_bytes` (named `name`) and everything after it.
fn run_bytes(name: &Path, bytes: &[u8], extra: &[u64]) -> Outcome {
    let mut errors = Vec::new();
    match ElfFile::from_bytes(name, bytes.to_vec()) {
        Ok(elf) => exercise(&elf, extra, &mut errors),
        Err(e) => errors.push(check_error(&e, name)),
    }
    Outcome::from_errors(errors)
}

/// Writes `bytes` to `path` and runs the file through `ElfFile::open` and the Symbolizer
/// (with both kinds of input), checking that both agree on failing.
fn run_file(path: &Path, bytes: &[u8], extra: &[u64]) -> Outcome {
    std::fs::write(path, bytes).unwrap();
    let outcome = run_path(path, extra);
    let from_bytes = run_bytes(path, bytes, extra);
    assert_eq!(
        matches!(outcome, Outcome::Ok),
        matches!(from_bytes, Outcome::Ok),
        "{}: open and from_bytes disagree: {outcome:?} vs {from_bytes:?}",
        path.display()
    );
    outcome
}

/// Runs an existing path through `ElfFile::open` and the Symbolizer.
fn run_path(path: &Path, extra: &[u64]) -> Outcome {
    let mut errors = Vec::new();
    let mut addrs = extra.to_vec();
    match ElfFile::open(path) {
        Ok(elf) => {
            exercise(&elf, extra, &mut errors);
            addrs = probe_addrs(&elf, extra);
        }
        Err(e) => errors.push(check_error(&e, path)),
    }
    let symbolizer = Symbolizer::default();
    for input in [
        Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&addrs)),
    ] {
        match symbolizer.symbolize(&Source::Elf { path }, input) {
            Ok(symbols) => {
                assert_eq!(symbols.len(), addrs.len());
                for s in symbols.iter().flatten() {
                    let _ = (s.name.len(), s.raw_name.len(), s.version, s.module);
                }
            }
            Err(e) => errors.push(check_error(&e, path)),
        }
    }
    Outcome::from_errors(errors)
}

fn assert_err_mentions(outcome: &Outcome, what: &str, words: &[&str]) {
    let errors = outcome.errors();
    assert!(!errors.is_empty(), "{what}: expected an error, got Ok");
    for e in errors {
        assert!(
            words
                .iter()
                .any(|w| e.to_lowercase().contains(&w.to_lowercase())),
            "{what}: error {e:?} mentions none of {words:?}"
        );
    }
}

/// Addresses of a binary's functions and data, from its intact copy.
fn symbol_addrs(name: &str) -> Vec<u64> {
    let data = read_bin(name);
    let raw = RawElf::parse(&data);
    let mut addrs = Vec::new();
    for table in [".symtab", ".dynsym"] {
        if raw.sections.iter().any(|s| s.name == table) {
            addrs.extend(raw.symbols(&data, table).iter().map(|&(_, _, v)| v));
        }
    }
    addrs.sort_unstable();
    addrs.dedup();
    addrs
}

// ------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------

/// Every binary cut at many lengths: the first bytes, the ELF header's end, inside the
/// program headers, inside and at the ends of every section (symtab, strtab, dynsym, version
/// tables, ...), inside the section headers, and one byte short. Errors are fine (and must
/// name the path), Ok is fine; no panic.
#[test]
fn truncated_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut total = 0;
    for name in ALL_BINARIES {
        let data = read_bin(name);
        let raw = RawElf::parse(&data);
        let extra = symbol_addrs(name);
        let len = data.len();
        let shoff = raw.eh(&data, EhField::ShOff) as usize;
        let shentsize = raw.eh(&data, EhField::ShEntSize) as usize;
        let phoff = raw.eh(&data, EhField::PhOff) as usize;
        let mut cuts = vec![0, 1, 3, 4, 5, 16, 51, 52, 53, 63, 64, 65];
        cuts.extend([
            raw.header_size() - 1,
            raw.header_size(),
            phoff + 20,
            phoff + 56 + 3,
        ]);
        cuts.extend([shoff, shoff + 1, shoff + shentsize / 2]);
        for k in [1, 2, raw.sections.len() / 2, raw.sections.len() - 1] {
            cuts.push(shoff + k * shentsize);
            cuts.push(shoff + k * shentsize + 7);
        }
        for s in &raw.sections {
            if s.sh_type == 8 {
                continue; // NOBITS
            }
            let (o, z) = (s.offset as usize, s.size as usize);
            cuts.extend([o, o + 1, o + z / 2, o + z.saturating_sub(1), o + z]);
        }
        cuts.extend((1..32).map(|i| len * i / 32));
        cuts.extend([len - 1, len]);
        cuts.retain(|&c| c <= len);
        cuts.sort_unstable();
        cuts.dedup();
        let path = dir.path().join(format!("{name}.cut"));
        for &cut in &cuts {
            let outcome = run_file(&path, &data[..cut], &extra);
            total += 1;
            match cut {
                0 => assert_err_mentions(&outcome, "empty", &["empty"]),
                1 | 3 => assert_err_mentions(&outcome, "tiny", &["bytes long"]),
                _ if cut < raw.header_size() => assert!(!outcome.errors().is_empty()),
                _ if cut == len => {
                    assert!(matches!(outcome, Outcome::Ok), "{name} whole: {outcome:?}")
                }
                _ => {}
            }
        }
    }
    eprintln!("{total} truncated files checked");
}

/// A file cut inside its ELF header (after the magic) is an ELF file that is too short: the
/// error must say the header is cut, not blame a byte that is there and valid. Every cut is
/// tried; the failure lists all misleading messages.
#[test]
fn truncated_elf_header_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let words = ["truncated", "too short", "shorter", "bytes long", "header"];
    let mut misleading = Vec::new();
    for name in ["c-pie-g", "c-i386"] {
        let data = read_bin(name);
        let raw = RawElf::parse(&data);
        for cut in 4..raw.header_size() {
            let path = dir.path().join(format!("{name}-{cut}"));
            let outcome = run_file(&path, &data[..cut], &[0]);
            assert!(!outcome.errors().is_empty(), "{name} cut at {cut}: Ok");
            for e in outcome.errors() {
                if !words.iter().any(|w| e.contains(w)) {
                    misleading.push(format!("{name} cut at {cut}: {e}"));
                }
            }
        }
    }
    assert!(
        misleading.is_empty(),
        "errors that do not say the header is cut:\n{}",
        misleading.join("\n")
    );
}

/// Magic bytes that are not ELF, and a file that is ELF only in its first bytes.
#[test]
fn wrong_magic_is_not_elf() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-elf");
    let mut data = read_bin("c-pie-g");
    data[3] = b'G';
    let outcome = run_file(&path, &data, &[0x1000]);
    assert_err_mentions(&outcome, "bad magic", &["not an ELF file", "magic"]);
    // A PE/COFF-like header.
    let outcome = run_file(&path, b"MZ\x90\x00\x03\x00\x00\x00\x04\x00", &[0]);
    assert_err_mentions(&outcome, "MZ", &["not an ELF file"]);
    // ELF magic, then an unknown class byte.
    let mut data = read_bin("c-pie-g");
    data[4] = 7;
    let outcome = run_file(&path, &data, &[0x1000]);
    assert_err_mentions(&outcome, "class 7", &["class", "malformed", "ELF"]);
    // Big-endian data byte on a little-endian file: every field is garbage.
    let mut data = read_bin("c-pie-g");
    data[5] = 2;
    let _ = run_file(&path, &data, &[0x1000]);
}

/// A linker script (what `libc.so` is on glibc systems) is not ELF, and says so.
#[test]
fn linker_script_is_not_elf() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libc.so");
    let script = b"/* GNU ld script\n   Use the shared library, but some functions are only in\n   the static library, so try that secondarily.  */\nOUTPUT_FORMAT(elf64-x86-64)\nGROUP ( /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libc_nonshared.a  AS_NEEDED ( /lib64/ld-linux-x86-64.so.2 ) )\n";
    let outcome = run_file(&path, script, &[0, 0x1000]);
    assert_err_mentions(&outcome, "linker script", &["not an ELF file"]);
    assert_err_mentions(&outcome, "linker script", &["linker script"]);
}

/// A file that is not ELF is refused without a byte of it in the error: a tracer logs errors,
/// and the file may be a secret (a container can plant a link to `/etc/shadow` where a
/// library is expected). Text, binary and linker-script files, through `ElfFile::open`,
/// `from_bytes` and the Symbolizer.
#[test]
fn errors_quote_nothing_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shadow");
    let secret = "root:$y$j9T$SECRETHASHsecrethash:20228:0:99999:7:::";
    for (what, bytes, said) in [
        ("text", format!("{secret}\n").into_bytes(), "no ELF magic"),
        (
            "binary",
            [&[0u8, 1, 2, 3][..], secret.as_bytes()].concat(),
            "no ELF magic",
        ),
        (
            "a linker script",
            format!("INPUT({secret})\n").into_bytes(),
            "INPUT command",
        ),
    ] {
        let outcome = run_file(&path, &bytes, &[0]);
        assert_err_mentions(&outcome, what, &[said]);
        for e in outcome.errors() {
            for quoted in ["root:", "SECRET", "secret", "9T$"] {
                assert!(
                    !e.contains(quoted),
                    "{what}: {e:?} quotes the file ({quoted:?})"
                );
            }
        }
    }
}

/// Empty file, a directory, a missing file, and a file nobody may read.
#[test]
fn empty_directory_missing_and_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    let outcome = run_file(&empty, b"", &[0]);
    assert_err_mentions(&outcome, "empty file", &["empty"]);

    let outcome = run_path(dir.path(), &[0]);
    assert_err_mentions(&outcome, "directory", &["directory"]);

    let missing = dir.path().join("no-such-file");
    let outcome = run_path(&missing, &[0]);
    assert_err_mentions(&outcome, "missing", &["no such file"]);

    let unreadable = dir.path().join("unreadable");
    std::fs::copy(bin("c-pie-g"), &unreadable).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&unreadable, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&unreadable).is_ok() {
        // Root (CAP_DAC_OVERRIDE) reads any file whatever its mode.
        writeln_stderr(format_args!(
            "unreadable-file check skipped: running as root (uid {}), which can read a mode-000 file",
            uid()));
    } else {
        let outcome = run_path(&unreadable, &[0]);
        assert_err_mentions(&outcome, "mode 000", &["permission denied"]);
    }
}

/// A character device is not a regular file: refused before any read.
#[test]
fn device_is_not_a_file() {
    let outcome = run_path(Path::new("/dev/null"), &[0]);
    assert_err_mentions(&outcome, "/dev/null", &["not a regular file"]);
}

/// A named pipe is not a regular file either, and must be refused without waiting for a
/// writer (opening a FIFO for reading blocks until one comes). The test waits 3 s at most,
/// then unblocks the open itself by opening the FIFO for writing.
#[test]
fn fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !matches!(status, Ok(s) if s.success()) {
        writeln_stderr(format_args!("mkfifo not available: FIFO check skipped"));
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let fifo_for_thread = fifo.clone();
    let worker = std::thread::spawn(move || {
        let result = ElfFile::open(&fifo_for_thread).map(|_| ());
        let _ = tx.send(result.map_err(|e| e.to_string()));
    });
    let result = match rx.recv_timeout(std::time::Duration::from_secs(3)) {
        Ok(result) => Some(result),
        Err(_) => {
            // Unblock the reader: open for writing, then close at once (it then reads EOF).
            // O_NONBLOCK (0o4000 on Linux): if the reader is gone by now, fail with ENXIO
            // instead of waiting for one.
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(0o4000)
                .open(&fifo);
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
            None
        }
    };
    let _ = worker.join();
    let Some(result) = result else {
        panic!("ElfFile::open on a FIFO blocked until a writer came (> 3 s)");
    };
    let err = result.expect_err("a FIFO is not an ELF file");
    assert!(err.contains(&fifo.display().to_string()), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

fn uid() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("Uid:")
                    .map(|u| u.split_whitespace().next().unwrap_or("?").to_string())
            })
        })
        .unwrap_or_else(|| "?".into())
}

/// One malformation of one binary: what to break and what the error must mention (`None`:
/// Ok and Err are both acceptable).
struct Case {
    label: &'static str,
    binary: &'static str,
    patch: fn(&RawElf, &mut Vec<u8>),
    expect_err: Option<&'static [&'static str]>,
}

const MALFORMED: &[&str] = &["malformed", "unsupported"];

fn cases() -> Vec<Case> {
    vec![
        Case {
            label: "e_shoff past EOF",
            binary: "c-pie-g",
            patch: |r, d| {
                let len = d.len() as u64;
                r.set_eh(d, EhField::ShOff, len + 64)
            },
            expect_err: Some(MALFORMED),
        },
        Case {
            label: "e_shoff huge",
            binary: "c-i386",
            patch: |r, d| r.set_eh(d, EhField::ShOff, u64::MAX),
            expect_err: Some(MALFORMED),
        },
        Case {
            label: "e_shnum huge",
            binary: "c-pie-g",
            patch: |r, d| r.set_eh(d, EhField::ShNum, 0xffff),
            expect_err: Some(MALFORMED),
        },
        Case {
            label: "e_shentsize 0",
            binary: "c-pie-g",
            patch: |r, d| r.set_eh(d, EhField::ShEntSize, 0),
            expect_err: None,
        },
        Case {
            label: "e_shstrndx bogus",
            binary: "c-pie-g",
            patch: |r, d| r.set_eh(d, EhField::ShStrNdx, 0xfff0),
            expect_err: None,
        },
        Case {
            label: "e_phoff past EOF",
            binary: "c-pie-g",
            patch: |r, d| {
                let len = d.len() as u64;
                r.set_eh(d, EhField::PhOff, len + 8)
            },
            expect_err: Some(MALFORMED),
        },
        Case {
            label: "e_phnum huge",
            binary: "c-nopie",
            patch: |r, d| r.set_eh(d, EhField::PhNum, 0xfffe),
            expect_err: Some(MALFORMED),
        },
        Case {
            label: "e_phentsize wrong",
            binary: "c-nopie",
            patch: |r, d| r.set_eh(d, EhField::PhEntSize, 3),
            expect_err: None,
        },
        Case {
            label: ".symtab sh_offset past EOF",
            binary: "c-pie-g",
            patch: |r, d| {
                let len = d.len() as u64;
                r.set_sh(d, ".symtab", ShField::Offset, len + 24)
            },
            // A broken .symtab falls back to .dynsym (see
            // `broken_symtab_falls_back_to_dynsym`): Ok or an error are both right here.
            expect_err: None,
        },
        Case {
            label: ".symtab sh_size past EOF",
            binary: "c-pie-g",
            patch: |r, d| {
                let len = d.len() as u64;
                r.set_sh(d, ".symtab", ShField::Size, len)
            },
            // A broken .symtab falls back to .dynsym (see
            // `broken_symtab_falls_back_to_dynsym`): Ok or an error are both right here.
            expect_err: None,
        },
        Case {
            label: ".symtab sh_size huge",
            binary: "c-i386",
            patch: |r, d| r.set_sh(d, ".symtab", ShField::Size, u64::MAX),
            // A broken .symtab falls back to .dynsym (see
            // `broken_symtab_falls_back_to_dynsym`): Ok or an error are both right here.
            expect_err: None,
        },
        Case {
            label: ".dynsym sh_size huge",
            binary: "c-stripped-dynsym",
            patch: |r, d| r.set_sh(d, ".dynsym", ShField::Size, 1 << 40),
            expect_err: Some(MALFORMED),
        },
        Case {
            label: ".symtab sh_entsize 0",
            binary: "c-pie-g",
            patch: |r, d| r.set_sh(d, ".symtab", ShField::EntSize, 0),
            expect_err: None,
        },
        Case {
            label: ".symtab sh_entsize wrong",
            binary: "c-pie-g",
            patch: |r, d| r.set_sh(d, ".symtab", ShField::EntSize, 7),
            expect_err: None,
        },
        Case {
            label: ".dynsym sh_entsize 0",
            binary: "libversioned.so",
            patch: |r, d| r.set_sh(d, ".dynsym", ShField::EntSize, 0),
            expect_err: None,
        },
        Case {
            label: ".symtab sh_size not a multiple of the entry size",
            binary: "c-pie-g",
            patch: |r, d| {
                let size = r.section(".symtab").size;
                r.set_sh(d, ".symtab", ShField::Size, size - 5)
            },
            expect_err: None,
        },
        Case {
            label: ".symtab sh_link to no section",
            binary: "c-pie-g",
            patch: |r, d| r.set_sh(d, ".symtab", ShField::Link, 0xffff),
            // A broken .symtab falls back to .dynsym (see
            // `broken_symtab_falls_back_to_dynsym`): Ok or an error are both right here.
            expect_err: None,
        },
        Case {
            label: ".symtab sh_link to a code section",
            binary: "c-pie-g",
            patch: |r, d| {
                let text = r.sections.iter().position(|s| s.name == ".text").unwrap();
                r.set_sh(d, ".symtab", ShField::Link, text as u64)
            },
            expect_err: None,
        },
        Case {
            label: ".symtab sh_link to section 0",
            binary: "c-pie-g",
            patch: |r, d| r.set_sh(d, ".symtab", ShField::Link, 0),
            expect_err: None,
        },
        Case {
            label: ".dynsym sh_link to itself",
            binary: "libversioned.so",
            patch: |r, d| {
                let i = r.sections.iter().position(|s| s.name == ".dynsym").unwrap();
                r.set_sh(d, ".dynsym", ShField::Link, i as u64)
            },
            expect_err: None,
        },
        Case {
            label: ".symtab turned into a second SHT_DYNSYM",
            binary: "c-pie-g",
            patch: |r, d| r.set_sh(d, ".symtab", ShField::Type, 11),
            expect_err: None,
        },
        Case {
            label: ".strtab turned into PROGBITS",
            binary: "c-pie-g",
            patch: |r, d| r.set_sh(d, ".strtab", ShField::Type, 1),
            // A broken .symtab falls back to .dynsym (see
            // `broken_symtab_falls_back_to_dynsym`): Ok or an error are both right here.
            expect_err: None,
        },
        Case {
            label: ".strtab sh_offset past EOF",
            binary: "c-pie-g",
            patch: |r, d| {
                let len = d.len() as u64;
                r.set_sh(d, ".strtab", ShField::Offset, len + 1)
            },
            // A broken .symtab falls back to .dynsym (see
            // `broken_symtab_falls_back_to_dynsym`): Ok or an error are both right here.
            expect_err: None,
        },
        Case {
            label: ".strtab sh_size huge",
            binary: "c-pie-g",
            patch: |r, d| r.set_sh(d, ".strtab", ShField::Size, u64::MAX - 8),
            // A broken .symtab falls back to .dynsym (see
            // `broken_symtab_falls_back_to_dynsym`): Ok or an error are both right here.
            expect_err: None,
        },
        Case {
            label: ".strtab without its final NUL (size cut by one)",
            binary: "c-pie-g",
            patch: |r, d| {
                let size = r.section(".strtab").size;
                r.set_sh(d, ".strtab", ShField::Size, size - 1)
            },
            expect_err: None,
        },
        Case {
            label: ".strtab without any NUL",
            binary: "c-pie-g",
            patch: |r, d| {
                let s = r.section(".strtab");
                for b in &mut d[s.offset as usize..(s.offset + s.size) as usize] {
                    if *b == 0 {
                        *b = b'x';
                    }
                }
            },
            expect_err: None,
        },
        Case {
            label: ".dynstr without its final NUL",
            binary: "c-stripped-dynsym",
            patch: |r, d| {
                let s = r.section(".dynstr");
                d[(s.offset + s.size - 1) as usize] = b'!';
            },
            expect_err: None,
        },
        Case {
            label: "st_name of every symbol past the string table",
            binary: "c-pie-g",
            patch: |r, d| {
                for (at, _, _) in r.symbols(d, ".symtab") {
                    wr(d, at, 4, 0xfff_0000 + at as u64);
                }
            },
            expect_err: None,
        },
        Case {
            label: "st_name of checksum = u32::MAX",
            binary: "c-i386",
            patch: |r, d| {
                let (at, _) = r.symbol_named(d, ".symtab", "checksum");
                wr(d, at, 4, u64::from(u32::MAX));
            },
            expect_err: None,
        },
        Case {
            label: "st_shndx of every symbol bogus",
            binary: "libversioned.so",
            patch: |r, d| {
                for table in [".symtab", ".dynsym"] {
                    for (at, _, _) in r.symbols(d, table) {
                        wr(d, at + 6, 2, 0xfeee);
                    }
                }
            },
            expect_err: None,
        },
        Case {
            label: "st_size of every symbol huge",
            binary: "c-pie-g",
            patch: |r, d| {
                for (at, _, _) in r.symbols(d, ".symtab") {
                    wr(d, at + 16, 8, u64::MAX);
                }
            },
            expect_err: None,
        },
        Case {
            label: "st_value of every symbol near u64::MAX",
            binary: "c-pie-g",
            patch: |r, d| {
                for (i, (at, _, _)) in r.symbols(d, ".symtab").into_iter().enumerate() {
                    wr(d, at + 8, 8, u64::MAX - i as u64);
                }
            },
            expect_err: None,
        },
        Case {
            label: ".gnu.version cut to nothing",
            binary: "libversioned.so",
            patch: |r, d| r.set_sh(d, ".gnu.version", ShField::Size, 0),
            expect_err: None,
        },
        Case {
            label: ".gnu.version_d past EOF",
            binary: "libversioned.so",
            patch: |r, d| {
                let len = d.len() as u64;
                r.set_sh(d, ".gnu.version_d", ShField::Offset, len - 4)
            },
            expect_err: None,
        },
        Case {
            label: ".gnu.version indexes all 0x7fff",
            binary: "libversioned.so",
            patch: |r, d| {
                let s = r.section(".gnu.version").clone();
                for i in 0..s.size as usize / 2 {
                    wr(d, s.offset as usize + 2 * i, 2, 0x7fff);
                }
            },
            expect_err: None,
        },
        Case {
            label: ".rela.plt sh_size huge",
            binary: "c-ibt",
            patch: |r, d| r.set_sh(d, ".rela.plt", ShField::Size, 1 << 50),
            expect_err: None,
        },
        Case {
            label: "build-id note with a huge descsz",
            binary: "c-pie-g",
            patch: |r, d| {
                let s = r.section(".note.gnu.build-id");
                wr(d, s.offset as usize + 4, 4, 0xffff_fff0);
            },
            expect_err: None,
        },
        Case {
            label: "PT_LOAD p_filesz huge",
            binary: "c-aarch64",
            patch: |r, d| {
                let phoff = r.eh(d, EhField::PhOff) as usize;
                let phnum = r.eh(d, EhField::PhNum) as usize;
                for i in 0..phnum {
                    let ph = phoff + i * 56;
                    if rd(d, ph, 4) == 1 {
                        wr(d, ph + 32, 8, u64::MAX);
                        wr(d, ph + 16, 8, u64::MAX - 0x1000);
                    }
                }
            },
            expect_err: None,
        },
    ]
}

/// Each malformation, through every entry point: errors name the path and say it is
/// malformed where one is required; otherwise Ok and Err are both fine. Never a panic: every
/// case runs, and the test fails at the end listing the cases that panicked. (Malformations
/// that panicked once have their own regression tests below.)
#[test]
fn malformed_headers_and_tables() {
    let dir = tempfile::tempdir().unwrap();
    let mut panicked = Vec::new();
    for (i, case) in cases().into_iter().enumerate() {
        let mut data = read_bin(case.binary);
        let raw = RawElf::parse(&data);
        (case.patch)(&raw, &mut data);
        assert_ne!(
            data,
            read_bin(case.binary),
            "{}: patch changed nothing",
            case.label
        );
        let path = dir.path().join(format!("case{i}-{}", case.binary));
        let extra = symbol_addrs(case.binary);
        let outcome = std::panic::catch_unwind(|| run_file(&path, &data, &extra));
        let Ok(outcome) = outcome else {
            panicked.push(format!("{} ({})", case.label, case.binary));
            continue;
        };
        eprintln!("{:<55} {outcome:?}", case.label);
        if let Some(words) = case.expect_err {
            assert_err_mentions(&outcome, case.label, words);
        }
    }
    assert!(
        panicked.is_empty(),
        "these malformed inputs panicked: {panicked:#?}"
    );
}

/// A string table without a final NUL must not cost the names that are terminated inside it:
/// c-pie-g's `.strtab` cut by one byte loses (at most) its last name; `checksum` and `main`
/// are still found.
#[test]
fn unterminated_string_table_keeps_other_names() {
    let mut data = read_bin("c-pie-g");
    let raw = RawElf::parse(&data);
    let (_, checksum) = raw.symbol_named(&data, ".symtab", "checksum");
    let (_, main) = raw.symbol_named(&data, ".symtab", "main");
    let size = raw.section(".strtab").size;
    raw.set_sh(&mut data, ".strtab", ShField::Size, size - 1);
    let elf = ElfFile::from_bytes("cut-strtab", data).unwrap();
    assert_eq!(
        elf.find_symbol(VirtAddr(checksum)).unwrap().unwrap().name,
        b"checksum"
    );
    assert_eq!(
        elf.find_symbol(VirtAddr(main)).unwrap().unwrap().name,
        b"main"
    );
}

/// st_name past the string table: that symbol is skipped, the rest stay usable.
#[test]
fn name_past_string_table_skips_only_that_symbol() {
    let mut data = read_bin("c-pie-g");
    let raw = RawElf::parse(&data);
    let (at, checksum) = raw.symbol_named(&data, ".symtab", "checksum");
    let (_, main) = raw.symbol_named(&data, ".symtab", "main");
    wr(&mut data, at, 4, 0x00ff_ffff);
    let elf = ElfFile::from_bytes("bad-st-name", data).unwrap();
    if let Some(s) = elf.find_symbol(VirtAddr(checksum)).unwrap() {
        panic!(
            "a symbol with a bad name was returned: {:?}",
            String::from_utf8_lossy(s.name)
        );
    }
    assert_eq!(
        elf.find_symbol(VirtAddr(main)).unwrap().unwrap().name,
        b"main"
    );
}

// ------------------------------------------------------------------------------------------
// Regressions found by fuzzing (fuzz/fuzz_targets/elf_symbolize.rs)
// ------------------------------------------------------------------------------------------

/// Found by `cargo fuzz` (minimized to c-ibt with its first PT_LOAD rewritten): a segment
/// whose `p_offset` is near `u64::MAX` makes `Segments::virt_to_file_offset` overflow
/// (`seg.file_offset + (addr - seg.virt_addr)`, src/elf/segments.rs) for an address inside
/// the segment: a panic in debug builds, a wrapped offset in release.
#[test]
fn fuzz_regression_load_segment_offset_near_u64_max() {
    let mut data = read_bin("c-ibt");
    let raw = RawElf::parse(&data);
    let phoff = raw.eh(&data, EhField::PhOff) as usize;
    let phnum = raw.eh(&data, EhField::PhNum) as usize;
    let first_load = (0..phnum)
        .map(|i| phoff + i * 56)
        .find(|&ph| rd(&data, ph, 4) == 1)
        .unwrap();
    // p_offset, p_vaddr, p_paddr, p_filesz, p_memsz as in the crashing input.
    wr(&mut data, first_load + 8, 8, 0xff00_0004_0000_0001);
    wr(&mut data, first_load + 16, 8, 0x00c5_07ff_ffff_ffff);
    wr(&mut data, first_load + 24, 8, 0);
    wr(&mut data, first_load + 32, 8, 0x0b9a_0000_0000_0000);
    wr(&mut data, first_load + 40, 8, 0xa1e);
    let elf = ElfFile::from_bytes("fuzz-load-offset", data.clone()).unwrap();
    let addr = 0x00c5_07ff_ffff_ffff + 0x0100_0000_0000_0000;
    let segments = elf.segments().clone();
    let result = std::panic::catch_unwind(|| segments.virt_to_file_offset(VirtAddr(addr)));
    assert!(
        result.is_ok(),
        "virt_to_file_offset panicked on a segment with p_offset near u64::MAX"
    );
    // And the whole pipeline on it.
    let dir = tempfile::tempdir().unwrap();
    let _ = run_file(&dir.path().join("fuzz-load-offset"), &data, &[addr]);
}

/// The PLT overflow of `src/elf/index_builder.rs` (`section_end: addr + size` for a PLT entry
/// at the very top of the address space), reduced to c-ibt with `.plt.sec` moved to
/// `u64::MAX - 0x20` and made huge: a panic in debug builds while building the index.
#[test]
fn regression_plt_at_the_top_of_the_address_space() {
    let mut data = read_bin("c-ibt");
    let raw = RawElf::parse(&data);
    raw.set_sh(&mut data, ".plt.sec", ShField::Size, u64::MAX);
    let at = raw.section(".plt.sec").header_at;
    wr(&mut data, at + 16, 8, u64::MAX - 0x20);
    let result = std::panic::catch_unwind(|| {
        let elf = ElfFile::from_bytes("plt-at-top", data.clone()).unwrap();
        elf.find_symbol(VirtAddr(u64::MAX))
            .map(|s| s.map(|s| s.name.to_vec()))
    });
    let Ok(result) = result else {
        panic!(
            "building the index of a file with .plt.sec at the top of the address space panicked"
        );
    };
    if let Ok(Some(name)) = result {
        assert!(
            name.ends_with(b"@plt"),
            "{}",
            String::from_utf8_lossy(&name)
        );
    }
}

// ------------------------------------------------------------------------------------------
// Random mutations
// ------------------------------------------------------------------------------------------

/// splitmix64: a small PRNG with a fixed seed, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Interesting values to write into a field.
const SPECIAL: &[u64] = &[
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x1_0000_0000,
    u64::MAX,
    u64::MAX - 1,
    1 << 63,
];

/// The regions worth hitting: the ELF header, program headers, section headers, symbol and
/// string tables, version tables, relocation tables, notes.
fn regions(raw: &RawElf, data: &[u8]) -> Vec<std::ops::Range<usize>> {
    let elf_header = 0..raw.header_size();
    let mut r = vec![elf_header];
    let phoff = raw.eh(data, EhField::PhOff) as usize;
    let phsize = raw.eh(data, EhField::PhEntSize) as usize * raw.eh(data, EhField::PhNum) as usize;
    r.push(phoff..phoff + phsize);
    let shoff = raw.eh(data, EhField::ShOff) as usize;
    r.push(shoff..data.len());
    for s in &raw.sections {
        // SYMTAB, STRTAB, RELA, NOTE, REL, DYNSYM, GNU_verdef, GNU_verneed, GNU_versym.
        if matches!(
            s.sh_type,
            2 | 3 | 4 | 7 | 9 | 11 | 0x6fff_fffd..=0x6fff_ffff
        ) && s.size > 0
        {
            r.push(s.offset as usize..(s.offset + s.size) as usize);
        }
    }
    r
}

fn mutate(rng: &mut Rng, data: &mut Vec<u8>, regions: &[std::ops::Range<usize>], word: usize) {
    let rounds = 1 + rng.below(6);
    for _ in 0..rounds {
        let region = &regions[rng.below(regions.len())];
        let at = region.start + rng.below(region.len());
        if at >= data.len() {
            continue;
        }
        match rng.below(6) {
            0 => data[at] = rng.next() as u8,
            1 => data[at] ^= 1 << rng.below(8),
            2 | 3 => {
                let width = [2, 4, word][rng.below(3)];
                if at + width <= data.len() {
                    let v = if rng.below(2) == 0 {
                        SPECIAL[rng.below(SPECIAL.len())]
                    } else {
                        // A value near the file's size or near an existing value.
                        (data.len() as u64)
                            .wrapping_add(rng.next() % 64)
                            .wrapping_sub(32)
                    };
                    wr(data, at, width, v);
                }
            }
            4 => {
                // Copy a run of bytes from elsewhere (e.g. one symbol over another).
                let from = rng.below(data.len());
                let len = (1 + rng.below(32))
                    .min(data.len() - at)
                    .min(data.len() - from);
                let chunk = data[from..from + len].to_vec();
                data[at..at + len].copy_from_slice(&chunk);
            }
            _ => {
                let cut = rng.below(data.len() + 1);
                if rng.below(8) == 0 {
                    data.truncate(cut);
                }
            }
        }
    }
}

/// A few thousand random variants of five binaries (ELF64 and ELF32, `.symtab`, `.dynsym`
/// only, versions, IBT PLT) through `ElfFile::from_bytes` and every lookup. Fixed seed.
#[test]
fn random_mutations_never_panic() {
    let start = std::time::Instant::now();
    let mut rng = Rng(0x005e_ed0f_57ac_c5f3);
    let mut counts = (0, 0);
    for (name, variants) in [
        ("c-pie-g", 3000),
        ("c-i386", 2000),
        ("libversioned.so", 2000),
        ("c-stripped-dynsym", 1500),
        ("c-ibt", 1500),
    ] {
        let original = read_bin(name);
        let raw = RawElf::parse(&original);
        let regions = regions(&raw, &original);
        let extra = symbol_addrs(name);
        for v in 0..variants {
            let mut data = original.clone();
            mutate(&mut rng, &mut data, &regions, raw.word());
            let label = PathBuf::from(format!("{name}#mutant{v}"));
            let result = std::panic::catch_unwind(|| run_bytes(&label, &data, &extra));
            match result {
                Ok(Outcome::Ok) => counts.0 += 1,
                Ok(Outcome::Err(_)) => counts.1 += 1,
                Err(_) => {
                    let dump = std::env::temp_dir().join(format!("stacksym-{name}-mutant{v}"));
                    std::fs::write(&dump, &data).unwrap();
                    panic!("{label:?} panicked; input saved to {}", dump.display());
                }
            }
        }
    }
    eprintln!(
        "{} mutants opened and looked up fine, {} rejected with an error, in {:?}",
        counts.0,
        counts.1,
        start.elapsed()
    );
    assert!(counts.0 > 100, "most mutants should still be usable");
}

/// A broken `.symtab` (here: its offset past EOF) does not make the file useless: lookups fall
/// back to `.dynsym` (and the reason is logged). Breaking `.dynsym` too makes it an error that
/// names both. libversioned.so has both tables, with vhelper/vfunc in each.
#[test]
fn broken_symtab_falls_back_to_dynsym() {
    let mut data = read_bin("libversioned.so");
    let raw = RawElf::parse(&data);
    let len = data.len() as u64;
    raw.set_sh(&mut data, ".symtab", ShField::Offset, len + 24);
    let vhelper = symbol_addrs("libversioned.so")
        .into_iter()
        .find(|&a| {
            let elf = ElfFile::open(bin("libversioned.so")).unwrap();
            elf.find_symbol(VirtAddr(a))
                .unwrap()
                .is_some_and(|s| s.name == b"vhelper")
        })
        .expect("vhelper has an address");
    let elf = ElfFile::from_bytes("broken-symtab.so", data.clone()).unwrap();
    let sym = elf
        .find_symbol(VirtAddr(vhelper))
        .unwrap()
        .expect("found through .dynsym");
    assert_eq!(sym.name, b"vhelper");
    assert_eq!(sym.origin, stacksym::elf::SymbolOrigin::Dynsym);

    raw.set_sh(&mut data, ".dynsym", ShField::Offset, len + 48);
    let elf = ElfFile::from_bytes("broken-both.so", data).unwrap();
    let err = elf.find_symbol(VirtAddr(vhelper)).unwrap_err().to_string();
    assert!(err.starts_with("broken-both.so: malformed ELF"), "{err}");
    assert!(err.contains(".symtab") && err.contains(".dynsym"), "{err}");
}
