//! Shared by the integration tests: the committed test binaries, and independent references
//! (binutils `readelf` reads the symbol tables, `llvm-symbolizer` looks addresses up,
//! `c++filt` demangles). Nothing here uses stacksym's code, so the tests compare stacksym
//! with tools that share none of it. Each test file uses a part of it.
#![allow(dead_code)]

pub mod perf;
pub mod python;
pub mod uprobe;
pub mod waiter;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Every committed test binary (see testdata/README.md for what each one is for).
pub const ALL_BINARIES: &[&str] = &[
    "c-aarch64",
    "c-i386",
    "c-ibt",
    "c-nopie",
    "c-pie-g",
    "c-s390x",
    "c-stripped-dynsym",
    "cpp-O2-g",
    "libversioned.so",
    "rust-legacy",
    "rust-v0",
];

/// The path of the test binary `name`.
pub fn bin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/bin")
        .join(name)
}

/// The path of `name` if it is an executable file in `$PATH`.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The path of `name`, or `None` after printing why the test `test` is skipped.
pub fn require_tool(test: &str, name: &str, package: &str) -> Option<PathBuf> {
    let found = find_tool(name);
    if found.is_none() {
        writeln_stderr(format_args!(
            "{test}: SKIPPED: {name} not found; install {package}"
        ));
    }
    found
}

/// Which symbol table a [`RefSym`] is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Dynsym,
    Symtab,
}

/// One symbol as `readelf -sW` prints it.
#[derive(Debug, Clone)]
pub struct RefSym {
    pub table: Table,
    pub value: u64,
    pub size: u64,
    /// `FUNC`, `IFUNC`, `OBJECT`, `NOTYPE`, `TLS`, `SECTION`, `FILE`, ...
    pub kind: String,
    /// `LOCAL`, `GLOBAL`, `WEAK`, `UNIQUE`.
    pub bind: String,
    /// Section index, or `UND`, `ABS`, `COM`.
    pub ndx: String,
    /// The name without a `@VERSION` / `@@VERSION` suffix.
    pub name: String,
}

impl RefSym {
    /// A defined function (or IFUNC resolver) with a stated size.
    pub fn is_sized_function(&self) -> bool {
        (self.kind == "FUNC" || self.kind == "IFUNC")
            && self.size > 0
            && self.ndx != "UND"
            && self.ndx != "ABS"
    }

    pub fn is_defined(&self) -> bool {
        self.ndx != "UND"
    }
}

impl std::fmt::Display for RefSym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let table = match self.table {
            Table::Dynsym => "dynsym",
            Table::Symtab => "symtab",
        };
        write!(
            f,
            "{}@{:#x}+{:#x} {} {} ndx {} ({table})",
            self.name, self.value, self.size, self.kind, self.bind, self.ndx
        )
    }
}

/// Runs `readelf -sW` (both `.dynsym` and `.symtab`) on `path` and parses every entry.
pub fn readelf_symbols(readelf: &Path, path: &Path) -> Vec<RefSym> {
    let out = Command::new(readelf)
        .arg("-sW")
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", readelf.display()));
    assert!(
        out.status.success(),
        "readelf -sW {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    parse_readelf(&String::from_utf8_lossy(&out.stdout))
}

fn parse_readelf(text: &str) -> Vec<RefSym> {
    let mut table = None;
    let mut symbols = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Symbol table '") {
            table = if rest.starts_with(".dynsym'") {
                Some(Table::Dynsym)
            } else if rest.starts_with(".symtab'") {
                Some(Table::Symtab)
            } else {
                None
            };
            continue;
        }
        let Some(table) = table else { continue };
        let tokens: Vec<&str> = line.split_whitespace().collect();
        // "Num: Value Size Type Bind Vis [other...] Ndx Name [(version index)]"
        if tokens.len() < 7 || !tokens[0].ends_with(':') || tokens[0] == "Num:" {
            continue;
        }
        let Ok(value) = u64::from_str_radix(tokens[1], 16) else {
            continue;
        };
        let size = match tokens[2].strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => tokens[2].parse(),
        };
        let Ok(size) = size else { continue };
        // Skip bracketed extras after the visibility, e.g. `[VARIANT_PCS]` or `[<other>: 88]`.
        let mut i = 6;
        let mut in_bracket = false;
        while i < tokens.len() && (in_bracket || tokens[i].starts_with('[')) {
            in_bracket = !tokens[i].ends_with(']');
            i += 1;
        }
        let Some(&ndx) = tokens.get(i) else { continue };
        let full_name = tokens.get(i + 1).copied().unwrap_or("");
        let name = match full_name.find('@') {
            Some(at) if at > 0 => &full_name[..at],
            _ => full_name,
        };
        symbols.push(RefSym {
            table,
            value,
            size,
            kind: tokens[3].to_string(),
            bind: tokens[4].to_string(),
            ndx: ndx.to_string(),
            name: name.to_string(),
        });
    }
    symbols
}

/// A small fixed-seed generator (xorshift64*), so every run samples the same addresses.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        XorShift(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform enough in `[0, n)` for `n` far below 2^64.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next_u64() % n
    }
}

/// One sampled address and the function it was drawn from.
#[derive(Debug, Clone)]
pub struct Sample {
    pub addr: u64,
    /// Index into the symbol list the sample was drawn from.
    pub symbol: usize,
}

/// `count` addresses inside sized functions of `symbols` (only those `keep` accepts): a
/// function chosen uniformly among distinct `(start, size)` ranges, then an offset in it.
pub fn sample_function_addrs(
    symbols: &[RefSym],
    keep: impl Fn(&RefSym) -> bool,
    count: usize,
    seed: u64,
) -> Vec<Sample> {
    let mut seen = std::collections::HashSet::new();
    let candidates: Vec<usize> = (0..symbols.len())
        .filter(|&i| symbols[i].is_sized_function() && keep(&symbols[i]))
        .filter(|&i| seen.insert((symbols[i].value, symbols[i].size)))
        .collect();
    assert!(
        !candidates.is_empty(),
        "no sized function symbols to sample"
    );
    let mut rng = XorShift::new(seed);
    (0..count)
        .map(|_| {
            let symbol = candidates[rng.below(candidates.len() as u64) as usize];
            let addr = symbols[symbol].value + rng.below(symbols[symbol].size);
            Sample { addr, symbol }
        })
        .collect()
}

/// What llvm-symbolizer answered for one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlvmFrame {
    /// The function name (as in the file, not demangled); `None` if it found none.
    pub name: Option<String>,
    /// The function's start (`StartAddress`), when llvm-symbolizer gives one.
    pub start: Option<u64>,
}

/// Looks all `addrs` up in ONE llvm-symbolizer run: `--obj`, `--no-demangle`, one frame per
/// address (`--no-inlines`), JSON output. Separate debug files are not used
/// (`--debug-file-directory` pointed at nothing, debuginfod off), so only the file's own
/// symbol tables (and its own DWARF, if any) answer.
pub fn llvm_symbolize(llvm_symbolizer: &Path, path: &Path, addrs: &[u64]) -> Vec<LlvmFrame> {
    let flags = [
        "--no-demangle",
        "--functions=linkage",
        "--no-inlines",
        "--debug-file-directory=/nonexistent/stacksym-agreement",
    ];
    llvm_symbolizer_json(llvm_symbolizer, path, &flags, addrs)
        .iter()
        .map(parse_llvm_json)
        .collect()
}

/// Runs `llvm-symbolizer --obj=OBJ FLAGS --output-style=JSON` once for all `addrs` (fed on
/// stdin, debuginfod off) and returns its JSON value for each address, in order.
pub fn llvm_symbolizer_json(
    llvm_symbolizer: &Path,
    obj: &Path,
    flags: &[&str],
    addrs: &[u64],
) -> Vec<serde_json::Value> {
    llvm_symbolizer_json_in(None, llvm_symbolizer, obj, flags, addrs)
}

/// [`llvm_symbolizer_json`] run in `dir` (llvm-symbolizer resolves a relative
/// `DW_AT_comp_dir` of split DWARF against its working directory).
pub fn llvm_symbolizer_json_in(
    dir: Option<&Path>,
    llvm_symbolizer: &Path,
    obj: &Path,
    flags: &[&str],
    addrs: &[u64],
) -> Vec<serde_json::Value> {
    let mut command = Command::new(llvm_symbolizer);
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command
        .arg(format!("--obj={}", obj.display()))
        .args(flags)
        .arg("--output-style=JSON")
        .env("DEBUGINFOD_URLS", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {}: {e}", llvm_symbolizer.display()));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input: String = addrs.iter().map(|a| format!("{a:#x}\n")).collect();
    // Written from a thread: the child's output could otherwise fill its pipe and stall both.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut values = Vec::with_capacity(addrs.len());
    for line in stdout.lines() {
        let line = line.expect("reading llvm-symbolizer output");
        if line.trim().is_empty() {
            continue;
        }
        values.push(
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("llvm-symbolizer printed non-JSON {line:?}: {e}")),
        );
    }
    writer
        .join()
        .expect("writer thread")
        .expect("writing llvm-symbolizer input");
    let out = child
        .wait_with_output()
        .expect("waiting for llvm-symbolizer");
    assert!(
        out.status.success(),
        "llvm-symbolizer on {} failed: {}",
        obj.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        values.len(),
        addrs.len(),
        "llvm-symbolizer gave one JSON line per address"
    );
    values
}

fn parse_llvm_json(value: &serde_json::Value) -> LlvmFrame {
    let frame = &value["Symbol"][0];
    let name = frame["FunctionName"]
        .as_str()
        .filter(|n| !n.is_empty() && *n != "??" && *n != "<invalid>")
        .map(str::to_string);
    let start = frame["StartAddress"]
        .as_str()
        .and_then(|s| s.strip_prefix("0x"))
        .and_then(|hex| u64::from_str_radix(hex, 16).ok());
    LlvmFrame { name, start }
}

/// Demangles `names` in ONE `c++filt` run (one name a line), with extra `args` (e.g. `-i`).
pub fn cxxfilt(cxxfilt: &Path, args: &[&str], names: &[String]) -> Vec<String> {
    let mut child = Command::new(cxxfilt)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {}: {e}", cxxfilt.display()));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input: String = names.iter().map(|n| format!("{n}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("waiting for c++filt");
    writer
        .join()
        .expect("writer thread")
        .expect("writing c++filt input");
    assert!(out.status.success(), "c++filt failed");
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), names.len(), "c++filt gave one line per name");
    lines
}

/// Symbols by start address, and start addresses by name.
pub struct RefIndex<'a> {
    pub by_addr: HashMap<u64, Vec<&'a RefSym>>,
    pub by_name: HashMap<&'a str, Vec<u64>>,
}

impl<'a> RefIndex<'a> {
    pub fn new(symbols: &'a [RefSym]) -> Self {
        let mut by_addr: HashMap<u64, Vec<&RefSym>> = HashMap::new();
        let mut by_name: HashMap<&str, Vec<u64>> = HashMap::new();
        for s in symbols
            .iter()
            .filter(|s| s.is_defined() && !s.name.is_empty())
        {
            by_addr.entry(s.value).or_default().push(s);
            let addrs = by_name.entry(s.name.as_str()).or_default();
            if !addrs.contains(&s.value) {
                addrs.push(s.value);
            }
        }
        RefIndex { by_addr, by_name }
    }

    /// Every symbol starting at `addr`, as one line.
    pub fn describe(&self, addr: u64) -> String {
        match self.by_addr.get(&addr) {
            None => "(no symbol starts here)".to_string(),
            Some(syms) => syms
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

/// The sysroot of the `rustc` in `$PATH`.
pub fn rust_sysroot() -> Option<PathBuf> {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// The first file in `dir` whose name starts with `prefix` and ends with `suffix`.
pub fn find_file(dir: &Path, prefix: &str, suffix: &str) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found.into_iter().next()
}

/// Writes a line to the process's stderr directly, not through the test harness's capture, so
/// that a note (a skipped comparison) shows even when the test passes.
pub fn writeln_stderr(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut err = std::io::stderr();
    let _ = err.write_fmt(args);
    let _ = err.write_all(b"\n");
}

/// Skips a comparison loudly (a tool or a permission is missing); under CI (`CI` set), fails
/// instead, since CI is expected to provide it.
pub fn skip_or_fail(test: &str, why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{test}: {why}; CI is expected to provide it");
    }
    writeln_stderr(format_args!("{test}: SKIPPED: {why}"));
}

/// The local addresses of the sockets listening on `port` (`/proc/net/tcp` and `tcp6`, as
/// the kernel writes them: hex, in network order per 32-bit word).
pub fn listening_addresses(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(&"0A")) = (fields.get(1), fields.get(3)) else {
                continue;
            };
            if let Some((addr, p)) = local.rsplit_once(':') {
                if u16::from_str_radix(p, 16).ok() == Some(port) {
                    found.push(addr.to_string());
                }
            }
        }
    }
    found
}

/// `qemu-aarch64` (or `-static`) and `gdb-multiarch`, the tools that run and inspect an
/// aarch64 program here; `None` after [`skip_or_fail`] when one is missing.
pub fn qemu_aarch64_and_gdb(test: &str) -> Option<(PathBuf, PathBuf)> {
    let Some(qemu) = find_tool("qemu-aarch64").or_else(|| find_tool("qemu-aarch64-static")) else {
        skip_or_fail(test, "qemu-aarch64 not found (apt-get install qemu-user)");
        return None;
    };
    let Some(gdb) = find_tool("gdb-multiarch") else {
        skip_or_fail(
            test,
            "gdb-multiarch not found (apt-get install gdb-multiarch)",
        );
        return None;
    };
    Some((qemu, gdb))
}

/// `stacksym SUBCOMMAND`: the tool's binary (see [`stacksym_exe`]) with its subcommand
/// (`symbolize`, `perf`, `pstack`) as the first argument.
pub fn tool(subcommand: &str) -> Command {
    let mut command = Command::new(stacksym_exe());
    command.arg(subcommand);
    command
}

/// The `stacksym` tool's binary, `target/<profile>/stacksym` (the workspace crate `cli/`),
/// next to this test's `target/<profile>/deps/<test>-HASH`. It is (re)built once per test
/// binary with `cargo build -p stacksym-cli --bin stacksym` (a no-op when `cargo test` built
/// it already), so that `cargo test --test X` never runs a stale or missing one.
pub fn stacksym_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(build_stacksym)
}

fn build_stacksym() -> PathBuf {
    let test_exe = std::env::current_exe().expect("the test knows its own path");
    let profile_dir = test_exe
        .parent()
        .and_then(Path::parent)
        .expect("tests run from target/<profile>/deps");
    let exe = profile_dir.join(format!("stacksym{}", std::env::consts::EXE_SUFFIX));
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args([
            "build",
            "--quiet",
            "-p",
            "stacksym-cli",
            "--bin",
            "stacksym",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match profile_dir.file_name().and_then(OsStr::to_str) {
        Some("debug") | None => {}
        Some("release") => {
            cargo.arg("--release");
        }
        Some(profile) => {
            cargo.args(["--profile", profile]);
        }
    }
    let status = cargo.status().expect("cargo runs");
    assert!(status.success(), "cargo build -p stacksym-cli failed");
    assert!(
        exe.is_file(),
        "{} is missing after cargo build -p stacksym-cli",
        exe.display()
    );
    exe
}

/// Runs `cmd` with `args`, asserts it succeeded, and returns its standard output.
pub fn run(cmd: impl AsRef<Path>, args: &[&str]) -> String {
    run_command(Command::new(cmd.as_ref()), args)
}

/// Runs `command` with `args` added, asserts it succeeded, and returns its standard output.
pub fn run_command(mut command: Command, args: &[&str]) -> String {
    let out = command
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(out.status.success(), "{command:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `st_value` of a defined symbol, by `nm`.
pub fn nm_addr(path: &Path, name: &str) -> u64 {
    let out = run("nm", &["--defined-only", path.to_str().unwrap()]);
    out.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2] == name).then(|| u64::from_str_radix(f[0], 16).unwrap())
        })
        .unwrap_or_else(|| panic!("nm: no {name} in {}", path.display()))
}

/// `PT_LOAD` segments by `readelf -lW`: (file offset, virtual address, file size).
pub fn readelf_loads(path: &Path) -> Vec<(u64, u64, u64)> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    run("readelf", &["-lW", path.to_str().unwrap()])
        .lines()
        .filter(|l| l.trim_start().starts_with("LOAD "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (hex(f[1]), hex(f[2]), hex(f[4]))
        })
        .collect()
}

/// The file offset of virtual address `virt`, through `readelf -lW`'s segments.
pub fn readelf_file_offset(path: &Path, virt: u64) -> u64 {
    readelf_loads(path)
        .into_iter()
        .find(|&(_, vaddr, size)| vaddr <= virt && virt < vaddr + size)
        .map(|(off, vaddr, _)| virt - vaddr + off)
        .unwrap_or_else(|| panic!("{virt:#x} in no segment of {}", path.display()))
}

/// The build-id by `readelf -n`, as bytes.
pub fn readelf_build_id(path: &Path) -> Vec<u8> {
    let out = run("readelf", &["-n", path.to_str().unwrap()]);
    let hex = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("no build-id in {}", path.display()));
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// The name of the `index`-th answer; panics with the reason when there is none.
pub fn name_of(results: &stacksym::Symbols, index: usize) -> &str {
    match results.result(index) {
        Ok(sym) => sym.name,
        Err(reason) => panic!("no symbol at {index}: {reason:?}"),
    }
}

/// Symbolizes absolute addresses of `process` through the one call (`Source::Process`, maps
/// read and cached by the symbolizer, or `maps` when given).
pub fn in_process(
    symbolizer: &stacksym::Symbolizer,
    process: &stacksym::process::Process,
    maps: Option<&stacksym::process::ProcessMaps>,
    addrs: &[stacksym::addr::AbsAddr],
) -> stacksym::Result<stacksym::Symbols> {
    let source = stacksym::Source::Process { process, maps };
    symbolizer.symbolize(&source, stacksym::Input::AbsAddrs(addrs))
}

/// A stand-in for a kernel image with DWARF, as no kernel build is committed: `c-pie-g`
/// (built with -g; 0x12c4 is in scale() inlined into checksum(), testdata/README.md) given a
/// `_stext` at its `.text` start by `objcopy --add-symbol`, in a temporary dir; and the
/// kallsyms text of a kernel running it `offset` bytes higher (its text symbols, by `nm`).
/// `None` (after printing SKIPPED) without objcopy.
pub fn fake_vmlinux(test: &str, offset: u64) -> Option<(tempfile::TempDir, PathBuf, String)> {
    let objcopy = require_tool(test, "objcopy", "binutils")?;
    let dir = tempfile::tempdir().expect("a temporary dir");
    let vmlinux = dir.path().join("vmlinux");
    let status = Command::new(objcopy)
        .args(["--add-symbol", "_stext=.text:0,global,function"])
        .arg(bin("c-pie-g"))
        .arg(&vmlinux)
        .status()
        .expect("objcopy runs");
    assert!(status.success(), "objcopy --add-symbol failed");
    let mut kallsyms = String::new();
    for line in run(
        "nm",
        &["--defined-only", vmlinux.to_str().expect("UTF-8 path")],
    )
    .lines()
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [addr, kind @ ("t" | "T"), name] = fields[..] {
            let addr = u64::from_str_radix(addr, 16).expect("nm prints hex");
            kallsyms += &format!("{:016x} {kind} {name}\n", addr + offset);
        }
    }
    Some((dir, vmlinux, kallsyms))
}

/// The reference tools most comparisons need: binutils' readelf (symbol tables, notes) and
/// llvm-symbolizer.
pub struct ReferenceTools {
    pub readelf: PathBuf,
    pub llvm_symbolizer: PathBuf,
}

/// Both [`ReferenceTools`], or `None` after printing what is missing (see [`require_tool`]).
pub fn reference_tools(test: &str) -> Option<ReferenceTools> {
    Some(ReferenceTools {
        readelf: require_tool(test, "readelf", "binutils")?,
        llvm_symbolizer: require_tool(test, "llvm-symbolizer", "llvm (Debian: llvm or llvm-14)")?,
    })
}

/// `<debug_dir>/.build-id/xx/rest.debug` for the file's build-id (from `readelf -n`).
pub fn build_id_debug_file(
    readelf: &Path,
    path: &Path,
    debug_dir: &Path,
) -> Result<PathBuf, String> {
    let out = Command::new(readelf)
        .arg("-n")
        .arg(path)
        .output()
        .map_err(|e| format!("running readelf -n: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .ok_or_else(|| format!("{} has no build-id note", path.display()))?
        .trim();
    if id.len() < 3 {
        return Err(format!("build-id {id:?} is too short"));
    }
    let debug = debug_dir
        .join(".build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]));
    if debug.is_file() {
        Ok(debug)
    } else {
        Err(format!(
            "{} does not exist; install libc6-dbg",
            debug.display()
        ))
    }
}

/// One stack's frames as pstack, gdb or eu-stack print them: the function's name (or
/// `<signal handler called>`), and the pc if printed.
pub type Frames = Vec<(String, Option<u64>)>;

/// A frame line of pstack, gdb or eu-stack: `#N  [0xADDR in ]NAME ...` (gdb leaves out the
/// address of inlined frames and of a frame 0 at the start of a line). gdb names a
/// symbol-table function with its version (`clock_nanosleep@GLIBC_2.2.5`); the name is
/// taken without it, as pstack shows it.
pub fn parse_frame(line: &str) -> Option<(String, Option<u64>)> {
    let rest = line.strip_prefix('#')?;
    let rest = rest
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    let (addr, rest) = match rest.strip_prefix("0x") {
        Some(hex) => {
            let (digits, after) = hex.split_once(' ').unwrap_or((hex, ""));
            let after = after.trim_start();
            let after = after.strip_prefix("in ").unwrap_or(after);
            (u64::from_str_radix(digits, 16).ok(), after)
        }
        None => (None, rest),
    };
    if rest.starts_with("<signal handler called>") {
        return Some(("<signal handler called>".to_string(), addr));
    }
    let name = rest.split([' ', '(', '@']).next().unwrap_or("");
    Some((name.to_string(), addr))
}

/// The rows of a `perf report --stdio` table: (command, dso, symbol) -> the percentages.
pub fn perf_report_rows(
    text: &str,
) -> std::collections::BTreeMap<(String, String, String), Vec<f64>> {
    let mut rows = std::collections::BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('%'))
    {
        let mut rest = line.trim_start();
        let mut percents = Vec::new();
        while let Some((number, tail)) = rest.split_once('%') {
            match number.trim().parse::<f64>() {
                Ok(value) => {
                    percents.push(value);
                    rest = tail.trim_start();
                }
                _ => break,
            }
        }
        // comm, dso and symbol are separated by two spaces or more.
        let columns: Vec<&str> = rest
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if let [comm, dso, sym @ ..] = &columns[..] {
            let key = (comm.to_string(), dso.to_string(), sym.join("  "));
            // perf lists an inlined function once per symbol holding it: add them up.
            let entry: &mut Vec<f64> = rows.entry(key).or_default();
            if entry.is_empty() {
                *entry = percents;
            } else {
                for (sum, p) in entry.iter_mut().zip(percents) {
                    *sum += p;
                }
            }
        }
    }
    rows
}

/// (start, size, name) of every `JIT_CODE_LOAD` of a little-endian jitdump, in file order:
/// an independent reading of perf's jitdump-specification.txt for the tests (no checks beyond
/// what it needs). A record cut short at the end (being written) or `JIT_CODE_CLOSE` ends it.
pub fn jitdump_loads(bytes: &[u8]) -> Vec<(u64, u64, String)> {
    let u32_at = |at: usize| {
        let b = bytes.get(at..at + 4)?;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    };
    let u64_at = |at: usize| {
        let b = bytes.get(at..at + 8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    };
    assert_eq!(u32_at(0), Some(0x4A69_5444), "a little-endian jitdump");
    let mut at = u32_at(8).expect("a header") as usize;
    let mut loads = Vec::new();
    while let (Some(id), Some(size)) = (u32_at(at), u32_at(at + 4)) {
        let size = size as usize;
        if at + size > bytes.len() || size < 16 || id == 3 {
            break;
        }
        if id == 0 {
            let payload = at + 16;
            let start = u64_at(payload + 16).expect("code address");
            let code_size = u64_at(payload + 24).expect("code size");
            let name = &bytes[payload + 40..at + size];
            let name = &name[..name.iter().position(|&b| b == 0).expect("a NUL")];
            loads.push((start, code_size, String::from_utf8_lossy(name).into_owned()));
        }
        at += size;
    }
    loads
}

/// The name of the last of `loads` ([`jitdump_loads`]) that covers `addr`.
pub fn jitdump_name_at(loads: &[(u64, u64, String)], addr: u64) -> Option<&str> {
    loads
        .iter()
        .rev()
        .find(|(start, size, _)| *start <= addr && addr - start < *size)
        .map(|(_, _, name)| name.as_str())
}
