//! Tests of `stacksym symbolize` (cli/src/symbolize/): its output is compared byte for
//! byte with llvm-symbolizer's (and, for the GNU style, with binutils addr2line's) on the
//! binaries of testdata/bin, for addresses taken from their symbol tables with nm.
//!
//! A comparison whose reference tool is missing is skipped with a `SKIPPED` line on stderr
//! (written past the harness's output capture, so it always shows); under CI (the `CI` environment variable set, as
//! CI services set it) a missing tool fails the test instead, since CI installs them.
//!
//! Where the answers legitimately differ, the difference is tolerated only in the name line
//! and each tolerated line is counted on stderr:
//! - aliases (several names at one address): stacksym prefers GLOBAL > WEAK > LOCAL, then
//!   the first in the table; llvm-symbolizer takes another one of the same names;
//! - versions: llvm-symbolizer prints .symtab's literal `vfunc@@VERS_2`, stacksym the name
//!   without its version (which JSON reports in `Version`);
//! - C++ demangler dialect (only when demangling C++): llvm's `'lambda'(int)` and `(.cold)`
//!   against cpp_demangle's `{lambda(int)#1}` and `[clone .cold]`.
//!
//! Symbol tables: the comparisons of names read a copy of each binary stripped of debug info
//! (`llvm-objcopy --strip-debug`), both tools the same copy, so that both answer from the
//! symbol tables alone. Source lines and inlined frames are compared on the unstripped
//! binaries (`*_dwarf_*` tests), with their own counted tolerances (see `DwarfTolerated`).

mod support;

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use support::tool;

// ---------------------------------------------------------------------------------------
// Running things

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bin(name: &str) -> PathBuf {
    root().join("testdata/bin").join(name)
}

/// Runs `program` in the repository root with `args`, feeding it `stdin` (from a thread, so
/// a big input cannot deadlock against a full stdout pipe).
fn run_with(mut program: Command, args: &[&OsStr], stdin: &[u8], dir: &Path) -> Output {
    let mut child = program
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program:?}: {e}"));
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input); // the program may exit without reading it all
    });
    let output = child.wait_with_output().expect("the program runs");
    writer.join().expect("the stdin writer does not panic");
    output
}

fn os<'a, S: AsRef<OsStr> + ?Sized>(args: &'a [&'a S]) -> Vec<&'a OsStr> {
    args.iter().map(|a| a.as_ref()).collect()
}

fn ours(args: &[&str], stdin: &str) -> Output {
    run_with(tool("symbolize"), &os(args), stdin.as_bytes(), root())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

// ---------------------------------------------------------------------------------------
// Reference tools

/// Skips a comparison loudly; under CI, fails instead. Written to the real stderr, past
/// the test harness's capture, so that it shows even when the test passes.
fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED ({test}): {why}");
    if std::env::var_os("CI").is_some() {
        panic!("{test}: {why}; CI is expected to install it");
    }
}

fn works(program: &str, args: &[&str]) -> Option<Output> {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
}

struct Llvm {
    exe: PathBuf,
    major: u32,
}

/// llvm-symbolizer (`$LLVM_SYMBOLIZER`, else from `$PATH`), with its major version.
fn llvm_symbolizer(test: &str) -> Option<&'static Llvm> {
    static TOOL: OnceLock<Option<Llvm>> = OnceLock::new();
    let tool = TOOL.get_or_init(|| {
        let mut names: Vec<String> = std::env::var("LLVM_SYMBOLIZER").into_iter().collect();
        names.push("llvm-symbolizer".into());
        names.extend((14..=21).map(|v| format!("llvm-symbolizer-{v}")));
        names.into_iter().find_map(|name| {
            let out = works(&name, &["--version"])?;
            let version = text(&out.stdout);
            let major = version
                .split("version ")
                .nth(1)?
                .split('.')
                .next()?
                .trim()
                .parse()
                .ok()?;
            Some(Llvm {
                exe: PathBuf::from(name),
                major,
            })
        })
    });
    if tool.is_none() {
        skip(
            test,
            "llvm-symbolizer not found (set LLVM_SYMBOLIZER or install llvm, e.g. apt-get \
             install llvm); the comparison with it was not run",
        );
    }
    tool.as_ref()
}

fn llvm(tool: &Llvm, args: &[&str], stdin: &str) -> Output {
    run_with(Command::new(&tool.exe), &os(args), stdin.as_bytes(), root())
}

fn first_working(candidates: &[&str], probe: &[&str]) -> Option<String> {
    candidates
        .iter()
        .find(|c| works(c, probe).is_some())
        .map(|c| c.to_string())
}

/// One symbol as `nm -S` lists it.
#[derive(Debug, Clone)]
struct NmSym {
    addr: u64,
    size: u64,
    kind: char,
    /// Without any `@VERSION` / `@@VERSION` suffix.
    name: String,
}

impl NmSym {
    fn is_code(&self) -> bool {
        matches!(self.kind, 'T' | 't' | 'W' | 'w' | 'i')
    }
    fn is_data(&self) -> bool {
        matches!(self.kind, 'D' | 'd' | 'B' | 'b' | 'R' | 'r' | 'V' | 'v')
    }
}

fn strip_version(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

/// The sized symbols of `path` (`.symtab`, else `.dynsym`), from llvm-nm or binutils nm.
fn nm_symbols(test: &str, path: &Path) -> Option<Vec<NmSym>> {
    static NM: OnceLock<Option<String>> = OnceLock::new();
    let Some(nm) = NM.get_or_init(|| first_working(&["llvm-nm", "nm"], &["--version"])) else {
        skip(
            test,
            "neither llvm-nm nor nm found (install llvm or binutils)",
        );
        return None;
    };
    let list = |dynamic: bool| -> Vec<NmSym> {
        let mut cmd = Command::new(nm);
        cmd.args(["-S", "--defined-only"]);
        if dynamic {
            cmd.arg("-D");
        }
        let out = cmd.arg(path).output().expect("nm runs");
        text(&out.stdout)
            .lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                let [addr, size, kind, name] = f[..] else {
                    return None;
                };
                let sym = NmSym {
                    addr: u64::from_str_radix(addr, 16).ok()?,
                    size: u64::from_str_radix(size, 16).ok()?,
                    kind: kind.chars().next()?,
                    name: strip_version(name).to_string(),
                };
                (sym.size > 0).then_some(sym)
            })
            .collect()
    };
    let symbols = list(false);
    Some(if symbols.is_empty() {
        list(true)
    } else {
        symbols
    })
}

/// First, middle and last byte of each sized symbol that `keep` selects.
fn addresses_in(symbols: &[NmSym], keep: impl Fn(&NmSym) -> bool) -> Vec<u64> {
    let mut addrs: Vec<u64> = symbols
        .iter()
        .filter(|s| keep(s))
        .flat_map(|s| [s.addr, s.addr + s.size / 2, s.addr + s.size - 1])
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    addrs
}

/// Sets of names that share an address (aliases, identical-code-folded functions).
fn alias_groups(symbols: &[NmSym]) -> Vec<HashSet<String>> {
    let mut by_addr: BTreeMap<u64, HashSet<String>> = BTreeMap::new();
    for s in symbols {
        by_addr.entry(s.addr).or_default().insert(s.name.clone());
    }
    by_addr.into_values().filter(|g| g.len() > 1).collect()
}

fn has_dwarf(path: &Path) -> bool {
    let data = std::fs::read(path).expect("testdata binary readable");
    data.windows(12).any(|w| w == b".debug_info\0")
}

/// The file llvm-symbolizer should read for `path`: itself, or a copy without DWARF.
fn reference_copy(test: &str, path: &Path, dir: &Path) -> Option<PathBuf> {
    if !has_dwarf(path) {
        return Some(path.to_path_buf());
    }
    static OBJCOPY: OnceLock<Option<String>> = OnceLock::new();
    let Some(objcopy) =
        OBJCOPY.get_or_init(|| first_working(&["llvm-objcopy", "objcopy"], &["--version"]))
    else {
        skip(
            test,
            "neither llvm-objcopy nor objcopy found, needed to strip DWARF for llvm-symbolizer",
        );
        return None;
    };
    let copy = dir.join(path.file_name().expect("a file name"));
    let status = Command::new(objcopy)
        .arg("--strip-debug")
        .arg(path)
        .arg(&copy)
        .status()
        .expect("objcopy runs");
    assert!(
        status.success(),
        "{objcopy} --strip-debug {}",
        path.display()
    );
    Some(copy)
}

// ---------------------------------------------------------------------------------------
// Comparing

#[derive(Default)]
struct Tolerated {
    alias: usize,
    version: usize,
    dialect: usize,
    file: usize,
}

impl Tolerated {
    fn report(&self, context: &str) {
        if self.alias + self.version + self.dialect + self.file > 0 {
            eprintln!(
                "{context}: tolerated differences: {} alias, {} version, {} demangler dialect \
                 (names); {} STT_FILE file name (locations)",
                self.alias, self.version, self.dialect, self.file
            );
        }
    }
}

struct Rules<'a> {
    aliases: &'a [HashSet<String>],
    /// Tolerate llvm's C++ demangling dialect.
    cpp_dialect: bool,
    /// `--functions=short`: tolerate template arguments spelled differently.
    short: bool,
}

/// Splits a name line into (address prefix, name, pretty-print location suffix).
fn split_name_line(line: &str) -> (&str, &str, &str) {
    let (prefix, rest) = match line.find(": ") {
        Some(i) if line.starts_with("0x") && line[2..i].bytes().all(|b| b.is_ascii_hexdigit()) => {
            line.split_at(i + 2)
        }
        _ => ("", line),
    };
    match rest.rfind(" at ") {
        Some(i) if is_location(&rest[i + 4..]) => (prefix, &rest[..i], &rest[i + 4..]),
        _ => (prefix, rest, ""),
    }
}

/// `FILE:0:0` or `FILE:0` (llvm-symbolizer), `FILE:?` (addr2line): a location without line.
fn is_location(s: &str) -> bool {
    let file = s
        .strip_suffix(":0:0")
        .or_else(|| s.strip_suffix(":0"))
        .or_else(|| s.strip_suffix(":?"));
    file.is_some_and(|f| !f.is_empty() && !f.contains(' '))
}

/// Our unknown location against llvm-symbolizer's: equal, or llvm-symbolizer names the file
/// of a LOCAL symbol from the symbol table's preceding STT_FILE entry (`demo.c:0:0`), which
/// stacksym does not report (yet).
fn equivalent_locations(ours: &str, theirs: &str, t: &mut Tolerated) -> bool {
    if ours == theirs {
        return true;
    }
    let ours_unknown = ours == "??:0:0" || ours == "??:0";
    if ours_unknown && is_location(theirs) && theirs.ends_with(&ours[2..]) {
        t.file += 1;
        return true;
    }
    false
}

fn equivalent_names(ours: &str, theirs: &str, rules: &Rules<'_>, t: &mut Tolerated) -> bool {
    if ours == theirs {
        return true;
    }
    if !ours.contains('@') && strip_version(theirs) == ours && theirs.contains('@') {
        t.version += 1;
        return true;
    }
    let (a, b) = (strip_version(ours), strip_version(theirs));
    if rules.aliases.iter().any(|g| g.contains(a) && g.contains(b)) {
        t.alias += 1;
        return true;
    }
    // llvm: 'lambda'(int), f() (.cold), X (.0); cpp_demangle 0.5: {lambda(int)#1},
    // f() [clone .cold], X.0, and {vtable(X)} for c++filt's "vtable for X".
    let dialect = theirs.contains("'lambda")
        || theirs.contains(" (.")
        || (ours.starts_with("{vtable(") && theirs.starts_with("vtable for "))
        || (ours.starts_with("{vtt(") && theirs.starts_with("VTT for "));
    if rules.cpp_dialect && dialect {
        t.dialect += 1;
        return true;
    }
    false
}

/// Asserts that two LLVM/GNU-style outputs are equal line by line, up to tolerated names
/// and locations.
fn assert_same_text(context: &str, ours: &str, theirs: &str, rules: &Rules<'_>) {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(
        a.len(),
        b.len(),
        "{context}: line counts differ\n--- ours:\n{ours}\n--- llvm:\n{theirs}"
    );
    let mut t = Tolerated::default();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if x == y || equivalent_locations(x, y, &mut t) {
            continue;
        }
        let (xp, xn, xs) = split_name_line(x);
        let (yp, yn, ys) = split_name_line(y);
        assert!(
            xp == yp
                && equivalent_locations(xs, ys, &mut t)
                && equivalent_names(xn, yn, rules, &mut t),
            "{context}: line {} differs:\n  ours: {x:?}\n  llvm: {y:?}",
            i + 1
        );
    }
    t.report(context);
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// The JSON values an output holds (an array, or a sequence of values, compact or not).
fn json_values(output: &str) -> Vec<Value> {
    let mut values = Vec::new();
    for value in serde_json::Deserializer::from_str(output).into_iter::<Value>() {
        match value.unwrap_or_else(|e| panic!("bad JSON: {e}\n{output}")) {
            Value::Array(items) => values.extend(items),
            v => values.push(v),
        }
    }
    values
}

/// Removes our extra keys, so the value can be compared with llvm-symbolizer's.
fn without_extras(mut v: Value) -> Value {
    if let Some(frames) = v.get_mut("Symbol").and_then(Value::as_array_mut) {
        for frame in frames.iter_mut().filter_map(Value::as_object_mut) {
            for key in ["Offset", "Size", "Version"] {
                frame.remove(key);
            }
        }
    }
    if let Some(data) = v.get_mut("Data").and_then(Value::as_object_mut) {
        data.remove("Version");
    }
    v
}

fn assert_same_json(context: &str, ours: &str, theirs: &str, rules: &Rules<'_>) {
    let (a, b) = (json_values(ours), json_values(theirs));
    assert_eq!(a.len(), b.len(), "{context}: value counts differ");
    let mut t = Tolerated::default();
    for (x, y) in a.into_iter().zip(b) {
        let mut x = without_extras(x);
        // llvm-symbolizer's FileName from an STT_FILE symbol (see equivalent_locations).
        if let (Some(""), Some(file)) = (
            x.pointer("/Symbol/0/FileName").and_then(Value::as_str),
            y.pointer("/Symbol/0/FileName").and_then(Value::as_str),
        ) {
            if !file.is_empty() && y.pointer("/Symbol/0/Line") == Some(&Value::from(0)) {
                t.file += 1;
                x["Symbol"][0]["FileName"] = Value::from(file);
            }
        }
        for pointer in ["/Symbol/0/FunctionName", "/Data/Name"] {
            if let (Some(Value::String(xn)), Some(Value::String(yn))) =
                (x.pointer(pointer), y.pointer(pointer))
            {
                if xn != yn && equivalent_names(xn, yn, rules, &mut t) {
                    let yn = yn.clone();
                    if let Some(slot) = x.pointer_mut(pointer) {
                        *slot = Value::String(yn);
                    }
                }
            }
        }
        assert_eq!(x, y, "{context}: JSON differs");
    }
    t.report(context);
}

// ---------------------------------------------------------------------------------------
// Byte-for-byte comparisons with llvm-symbolizer

const C_BINARIES: &[&str] = &[
    "c-nopie",
    "c-stripped-dynsym",
    "c-pie-g",
    "c-ibt",
    "c-i386",
    "c-aarch64",
    "libversioned.so",
];

/// The queries for one binary: every function's first, middle and last byte; every data
/// object's, both as CODE (llvm-symbolizer names data objects too) and, with
/// llvm-symbolizer 14 (whose DATA layout the example follows), as DATA.
fn queries_for(symbols: &[NmSym], llvm_major: u32, extra: &[&str]) -> Vec<String> {
    let mut queries: Vec<String> = addresses_in(symbols, NmSym::is_code)
        .into_iter()
        .map(hex)
        .collect();
    for addr in addresses_in(symbols, NmSym::is_data) {
        queries.push(hex(addr));
        if llvm_major == 14 {
            queries.push(format!("DATA {}", hex(addr)));
        }
    }
    queries.extend(extra.iter().map(|s| s.to_string()));
    queries
}

fn compare_binary(test: &str, tool: &Llvm, name: &str, flag_sets: &[&[&str]], cpp: bool) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = bin(name);
    let Some(reference) = reference_copy(test, &path, dir.path()) else {
        return;
    };
    let Some(symbols) = nm_symbols(test, &path) else {
        return;
    };
    // Not-found addresses and an unparsable token where they are known to be in no symbol.
    let extra: &[&str] = match name {
        "c-nopie" => &["0x1", "0x0", "zz", "0x401300x"],
        _ => &["zz"],
    };
    let queries = queries_for(&symbols, tool.major, extra);
    assert!(queries.len() > 5, "{name}: nm found symbols");
    let aliases = alias_groups(&symbols);
    let ref_s = reference.to_str().expect("UTF-8 path");
    for flags in flag_sets {
        let demangling = !flags.contains(&"--no-demangle");
        let rules = Rules {
            aliases: &aliases,
            cpp_dialect: cpp && demangling,
            short: false,
        };
        // Both read the stripped copy: this compares symbol-table answers.
        let mut a: Vec<&str> = flags.to_vec();
        a.extend(["--obj", ref_s]);
        a.extend(queries.iter().map(String::as_str));
        let mut b: Vec<&str> = flags.to_vec();
        b.extend(["--obj", ref_s]);
        b.extend(queries.iter().map(String::as_str));
        let (x, y) = (ours(&a, ""), llvm(tool, &b, ""));
        assert_eq!(
            x.status.code(),
            y.status.code(),
            "{name} {flags:?}: exit codes"
        );
        let context = format!("{name} {flags:?} ({} queries)", queries.len());
        let (xs, ys) = (text(&x.stdout), text(&y.stdout));
        if flags.contains(&"--output-style=JSON") {
            assert_same_json(&context, &xs, &ys, &rules);
        } else {
            assert_same_text(&context, &xs, &ys, &rules);
        }
    }
}

#[test]
fn c_binaries_match_llvm_symbolizer_in_every_style() {
    let test = "c_binaries_match_llvm_symbolizer_in_every_style";
    let Some(tool) = llvm_symbolizer(test) else {
        return;
    };
    let flag_sets: &[&[&str]] = &[
        &[],
        &["-a"],
        &["-p"],
        &["--print-address", "--pretty-print"],
        &["--functions=none"],
        &["-f"],
        &["--no-demangle", "--no-inlines"],
        &["--output-style=GNU"],
        &["--output-style=GNU", "-a", "-p"],
        &["--output-style=JSON"],
        &["--output-style=JSON", "-p"],
        &["--output-style=JSON", "--functions=none"],
    ];
    // Every style on a non-PIE and a PIE executable; the other binaries (their symbol tables
    // are what differs: stripped to .dynsym, IBT PLTs, i386, aarch64, versions) in the
    // default style with the address line (`-a`) and the JSON style, which between them
    // print every field. Each llvm-symbolizer run starts libLLVM: 5–11 s on the project's
    // loaded 2-core machine on 2026-11-26, where this file took 869 s with all 84 runs.
    const EVERY_STYLE: &[&str] = &["c-nopie", "c-pie-g"];
    let two_styles: &[&[&str]] = &[&["-a"], &["--output-style=JSON"]];
    for name in C_BINARIES {
        let styles = if EVERY_STYLE.contains(name) {
            flag_sets
        } else {
            two_styles
        };
        compare_binary(test, tool, name, styles, false);
    }
}

#[test]
fn cpp_and_rust_binaries_match_llvm_symbolizer() {
    let test = "cpp_and_rust_binaries_match_llvm_symbolizer";
    let Some(tool) = llvm_symbolizer(test) else {
        return;
    };
    // Demangled C++ is compared up to llvm's demangling dialect; Rust only mangled: llvm
    // and rustc-demangle spell legacy Rust names differently (llvm keeps the ::h hash).
    compare_binary(
        test,
        tool,
        "cpp-O2-g",
        &[
            &[],
            &["--no-demangle"],
            &["--output-style=JSON", "--no-demangle"],
        ],
        true,
    );
    for name in ["rust-v0", "rust-legacy"] {
        compare_binary(test, tool, name, &[&["--no-demangle"]], false);
    }
}

/// Address syntax: llvm reads `1234` as decimal, `017` as octal, `0b..` as binary.
#[test]
fn addresses_parse_like_llvm_symbolizer() {
    let args = [
        "--obj",
        "testdata/bin/c-nopie",
        "0x401265",
        "0X401265",
        "4199013", // 0x401265 in decimal
        "020011145",
        "0o20011145",
        "0b10000000001001001100101",
        "401265", // decimal: 0x61f71, in no symbol
        "09",
        "0x",
        "0x10000000000000000",
        "  0x401265",
        "0x401265 trailing words",
        "0x401265,",
    ];
    let out = ours(&args, "");
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.matches("checksum\n??:0:0\n\n").count(),
        8,
        "{stdout}"
    );
    assert!(
        stdout.contains("??\n??:0:0\n\n09\n0x\n0x10000000000000000\n"),
        "{stdout}"
    );
    let test = "addresses_parse_like_llvm_symbolizer";
    if let Some(tool) = llvm_symbolizer(test) {
        assert_eq!(stdout, text(&llvm(tool, &args, "").stdout));
    }
}

// ---------------------------------------------------------------------------------------
// GNU style against binutils addr2line

#[test]
fn gnu_style_matches_addr2line() {
    let test = "gnu_style_matches_addr2line";
    let path = bin("c-nopie");
    let Some(symbols) = nm_symbols(test, &path) else {
        return;
    };
    let addrs: Vec<String> = addresses_in(&symbols, NmSym::is_code)
        .into_iter()
        .map(hex)
        .chain(["0x1".to_string()])
        .collect();
    let mut args = vec!["--output-style=GNU", "-e", "testdata/bin/c-nopie"];
    args.extend(addrs.iter().map(String::as_str));
    let ours = text(&ours(&args, "").stdout);
    let lines: Vec<&str> = ours.lines().collect();
    assert_eq!(lines.len(), 2 * addrs.len(), "{ours}");
    // Our own expectation: nm's names, ??:0.
    for (i, pair) in lines.chunks(2).enumerate() {
        assert_eq!(pair[1], "??:0", "{}", addrs[i]);
    }
    if works("addr2line", &["--version"]).is_none() {
        skip(test, "addr2line not found (install binutils)");
        return;
    }
    let mut a2l = vec!["-f", "-e", "testdata/bin/c-nopie"];
    a2l.extend(addrs.iter().map(String::as_str));
    let theirs = text(&run_with(Command::new("addr2line"), &os(&a2l), b"", root()).stdout);
    let their_lines: Vec<&str> = theirs.lines().collect();
    assert_eq!(their_lines.len(), lines.len(), "{theirs}");
    let aliases = alias_groups(&symbols);
    let rules = Rules {
        aliases: &aliases,
        cpp_dialect: false,
        short: false,
    };
    let mut t = Tolerated::default();
    for ((addr, x), y) in addrs.iter().zip(lines.chunks(2)).zip(their_lines.chunks(2)) {
        assert!(
            x[0] == y[0] || equivalent_names(x[0], y[0], &rules, &mut t),
            "{addr}: ours {:?}, addr2line {:?}",
            x[0],
            y[0]
        );
        // addr2line says ??:? when it knows the function but no line, ??:0 otherwise;
        // llvm-symbolizer's GNU style (which the example follows) always says ??:0.
        // It also names the file of a LOCAL symbol from the preceding STT_FILE symbol
        // (demo.c:?), as llvm-symbolizer does (demo.c:0) and stacksym does not (yet).
        if y[0] == "??" {
            assert_eq!(y[1], "??:0", "{addr}: addr2line's location");
        } else {
            assert!(
                y[1].ends_with(":?"),
                "{addr}: addr2line's location {:?}",
                y[1]
            );
        }
    }
    eprintln!(
        "{test}: {} addresses agree ({} by alias)",
        addrs.len(),
        t.alias
    );
}

// ---------------------------------------------------------------------------------------
// JSON

fn one_frame(v: &Value) -> &Value {
    let frames = v["Symbol"].as_array().expect("a Symbol list");
    assert_eq!(frames.len(), 1, "{v}");
    &frames[0]
}

#[test]
fn json_has_llvm_keys_and_ours() {
    let test = "json_has_llvm_keys_and_ours";
    let path = bin("c-nopie");
    let Some(symbols) = nm_symbols(test, &path) else {
        return;
    };
    let checksum = symbols
        .iter()
        .find(|s| s.name == "checksum")
        .expect("nm lists checksum");
    let stderr_sym = symbols
        .iter()
        .find(|s| s.name == "stderr")
        .expect("nm lists stderr@GLIBC_2.2.5");
    let inside = checksum.addr + 5;
    let (inside_s, data_query) = (hex(inside), format!("DATA {}", hex(stderr_sym.addr + 1)));
    let args = [
        "--output-style=JSON",
        "--obj",
        "testdata/bin/c-nopie",
        &inside_s,
        "0x1",
        &data_query,
        "zz",
    ];
    let out = ours(&args, "");
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "arguments give one JSON array");
    let values = json_values(&stdout);
    assert_eq!(values.len(), 4);

    let found = &values[0];
    assert_eq!(found["Address"], hex(inside));
    assert_eq!(found["ModuleName"], "testdata/bin/c-nopie");
    let frame = one_frame(found);
    assert_eq!(frame["FunctionName"], "checksum");
    assert_eq!(frame["StartAddress"], hex(checksum.addr));
    assert_eq!(frame["Offset"], "0x5");
    assert_eq!(frame["Size"], hex(checksum.size));
    assert_eq!(frame["FileName"], "");
    assert_eq!(frame["Line"], 0);
    assert_eq!(frame["Column"], 0);
    assert!(frame.get("Version").is_none(), "checksum has no version");

    let none = one_frame(&values[1]);
    assert_eq!(none["FunctionName"], "");
    assert_eq!(none["StartAddress"], "");
    assert!(none.get("Offset").is_none() && none.get("Size").is_none());

    let data = &values[2]["Data"];
    // As llvm-symbolizer spells it: the .symtab name keeps its version suffix.
    assert_eq!(data["Name"], "stderr@GLIBC_2.2.5");
    assert_eq!(data["Start"], hex(stderr_sym.addr));
    assert_eq!(data["Size"], hex(stderr_sym.size));
    assert_eq!(data["Version"], "GLIBC_2.2.5");

    assert_eq!(
        values[3]["Error"]["Message"],
        "unable to parse arguments: zz"
    );

    // Versioned functions of a shared library.
    let out = ours(
        &[
            "--output-style=JSON",
            "--obj",
            "testdata/bin/libversioned.so",
            "0x1130",
            "0x1122",
        ],
        "",
    );
    let values = json_values(&text(&out.stdout));
    // libversioned.so keeps .symtab, where ld spells the default version `vfunc@@VERS_2`;
    // llvm-symbolizer shows that literal name, and so do we, with the version also apart.
    assert_eq!(one_frame(&values[0])["FunctionName"], "vfunc@@VERS_2");
    assert_eq!(one_frame(&values[0])["Version"], "VERS_2");
    assert_eq!(one_frame(&values[1])["Version"], "VERS_1");
    assert_eq!(one_frame(&values[1])["Offset"], "0x2");

    // Input lines: one compact object per line; -p indents.
    let out = ours(
        &["--output-style=JSON"],
        "testdata/bin/c-nopie 0x1\ntestdata/bin/c-nopie 0x2\n",
    );
    assert_eq!(text(&out.stdout).lines().count(), 2);
    let out = ours(&["--output-style=JSON", "-p"], "testdata/bin/c-nopie 0x1\n");
    assert!(text(&out.stdout).starts_with("{\n  \"Address\": \"0x1\",\n"));
    assert_eq!(json_values(&text(&out.stdout)).len(), 1);
}

// ---------------------------------------------------------------------------------------
// Input forms

/// A function with a single name (no alias), and an address inside it.
struct Pick {
    name: String,
    addr: u64,
    start: u64,
    size: u64,
}

/// A few functions of `name` that have a single name (no alias), from nm.
fn plain_functions(test: &str, name: &str, count: usize) -> Option<Vec<Pick>> {
    let symbols = nm_symbols(test, &bin(name))?;
    let mut seen = HashSet::new();
    let aliased: HashSet<u64> = symbols
        .iter()
        .filter(|s| !seen.insert(s.addr))
        .map(|s| s.addr)
        .collect();
    let picks: Vec<Pick> = symbols
        .iter()
        .filter(|s| s.is_code() && !aliased.contains(&s.addr))
        .take(count)
        .map(|s| Pick {
            name: s.name.clone(),
            addr: s.addr + s.size / 2,
            start: s.addr,
            size: s.size,
        })
        .collect();
    assert_eq!(
        picks.len(),
        count,
        "{name} has {count} functions without aliases"
    );
    Some(picks)
}

fn block(name: &str) -> String {
    format!("{name}\n??:0:0\n\n")
}

#[test]
fn stdin_lines_name_their_module_like_llvm_symbolizer() {
    let test = "stdin_lines_name_their_module_like_llvm_symbolizer";
    let Some(nopie) = plain_functions(test, "c-nopie", 3) else {
        return;
    };
    let Some(dynsym) = plain_functions(test, "c-stripped-dynsym", 2) else {
        return;
    };
    // A module path with spaces, only reachable quoted.
    let dir = tempfile::tempdir().expect("a temp dir");
    let spaced = dir.path().join("dir with spaces");
    std::fs::create_dir(&spaced).expect("mkdir");
    let spaced = spaced.join("c nopie");
    std::fs::copy(bin("c-nopie"), &spaced).expect("copy");
    let spaced = spaced.to_str().expect("UTF-8 temp path");

    let (n0, n1, n2) = (&nopie[0], &nopie[1], &nopie[2]);
    let (d0, d1) = (&dynsym[0], &dynsym[1]);
    let input = format!(
        "testdata/bin/c-nopie {a0:#x}\n\
         \"testdata/bin/c-nopie\" {a1:#x}\n\
         'testdata/bin/c-stripped-dynsym' {b0:#x}\n\
         CODE testdata/bin/c-nopie {a2:#x}\n\
         DATA testdata/bin/c-nopie {a2:#x}\n\
         testdata/bin/c-stripped-dynsym {b1:#x} trailing words\n\
         \"{spaced}\" {a1:#x}\n\
         testdata/bin/c-nopie {a0}\n",
        a0 = n0.addr,
        a1 = n1.addr,
        a2 = n2.addr,
        b0 = d0.addr,
        b1 = d1.addr,
    );
    let out = ours(&[], &input);
    let stdout = text(&out.stdout);
    // The last line's address is written in decimal, which llvm-symbolizer reads as such.
    let data = format!("{}\n{} {}\n\n", n2.name, n2.start, n2.size);
    let expected = [
        block(&n0.name),
        block(&n1.name),
        block(&d0.name),
        block(&n2.name),
        data,
        block(&d1.name),
        block(&n1.name),
        block(&n0.name),
    ]
    .concat();
    assert_eq!(stdout, expected);
    assert!(out.status.success());

    if let Some(tool) = llvm_symbolizer(test) {
        let theirs = llvm(tool, &[], &input);
        assert_eq!(stdout, text(&theirs.stdout));
    }
}

#[test]
fn sanitizer_frames_and_input_files() {
    let test = "sanitizer_frames_and_input_files";
    let Some(nopie) = plain_functions(test, "c-nopie", 2) else {
        return;
    };
    let Some(dynsym) = plain_functions(test, "c-stripped-dynsym", 1) else {
        return;
    };
    let report = format!(
        "=================================================================\n\
         ==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010\n\
         READ of size 4 at 0x602000000010 thread T0\n\
         \x20   #0 0x55d1c3a91a2b in {f0} /src/demo.c:10:3 (testdata/bin/c-stripped-dynsym+{o0:#x}) (BuildId: 0123abcd)\n\
         \x20   #1 0x{a1:x} in {f1} (testdata/bin/c-nopie+{a1:#x})\n\
         \x20   #2 0x7f0a12345678 in __libc_start_main (<unknown module>)\n\
         \n\
         # comment lines and blank lines print nothing\n\
         \x20   #3 0x{a2:x} in main (testdata/bin/c-nopie+{a2:#x})\n",
        f0 = dynsym[0].name,
        o0 = dynsym[0].addr,
        f1 = nopie[0].name,
        a1 = nopie[0].addr,
        a2 = nopie[1].addr,
    );
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("asan.txt");
    std::fs::write(&file, &report).expect("write the report");
    let file = file.to_str().expect("UTF-8 temp path");

    // --obj does not override the module a frame names.
    let out = ours(&["--input", file, "--obj", "testdata/bin/c-ibt"], "");
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = report.lines().collect();
    let expected = format!(
        "{}\n{}\n{}\n{}{}{}\n{}",
        lines[0],
        lines[1],
        lines[2],
        block(&dynsym[0].name),
        block(&nopie[0].name),
        lines[5],
        block(&nopie[1].name),
    );
    assert_eq!(stdout, expected);
    let stderr = text(&out.stderr);
    for n in [1, 2, 3, 6] {
        assert!(
            stderr.contains(&format!("{file}:{n}: cannot parse")),
            "line {n} explained on stderr:\n{stderr}"
        );
    }
    assert!(stderr.contains("(MODULE+0xOFFSET)"), "{stderr}");
    assert!(out.status.success());

    // The same frames as llvm-symbolizer lines give the same answers.
    let plain = format!(
        "testdata/bin/c-stripped-dynsym {:#x}\ntestdata/bin/c-nopie {:#x}\n",
        dynsym[0].addr, nopie[0].addr
    );
    let answers = [block(&dynsym[0].name), block(&nopie[0].name)].concat();
    assert_eq!(text(&ours(&[], &plain).stdout), answers);
    if let Some(tool) = llvm_symbolizer(test) {
        assert_eq!(text(&llvm(tool, &[], &plain).stdout), answers);
    }

    // Several --input files, '-' for stdin, in order; a lone '-' argument reads stdin too.
    let out = ours(&["--input", file, "--input", "-"], &plain);
    assert_eq!(text(&out.stdout), format!("{expected}{answers}"));
    assert_eq!(text(&ours(&["-"], &plain).stdout), answers);

    // An unreadable --input file: reported, the others still read, exit code 1.
    let out = ours(
        &["--input", "/nonexistent/dump.txt", "--input", "-"],
        &plain,
    );
    assert_eq!(text(&out.stdout), answers);
    assert!(text(&out.stderr).contains("/nonexistent/dump.txt"));
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn bad_lines_are_echoed_and_explained() {
    let input = "testdata/bin/c-nopie 0x1\n\
                 0x401265\n\
                 testdata/bin/c-nopie zz\n\
                 \"unterminated 0x1\n\
                 \n\
                 # a comment\n\
                 testdata/bin/c-nopie 0x1\n";
    let out = ours(&[], input);
    let no = "??\n??:0:0\n\n";
    assert_eq!(
        text(&out.stdout),
        format!("{no}0x401265\ntestdata/bin/c-nopie zz\n\"unterminated 0x1\n{no}")
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("<stdin>:2: cannot parse `0x401265`"),
        "{stderr}"
    );
    assert!(stderr.contains("<stdin>:3: cannot parse"), "{stderr}");
    assert!(stderr.contains("<stdin>:4: cannot parse"), "{stderr}");
    assert!(!stderr.contains("<stdin>:5") && !stderr.contains("<stdin>:6"));
    assert!(out.status.success());

    // llvm-symbolizer echoes the same lines; it also echoes blank and comment lines,
    // which the example skips.
    let test = "bad_lines_are_echoed_and_explained";
    if let Some(tool) = llvm_symbolizer(test) {
        let theirs = text(&llvm(tool, &[], input).stdout);
        assert_eq!(text(&out.stdout), theirs.replace("\n\n# a comment\n", "\n"));
    }
}

// ---------------------------------------------------------------------------------------
// Unreadable modules

#[test]
fn unreadable_modules_answer_like_llvm_symbolizer() {
    let test = "unreadable_modules_answer_like_llvm_symbolizer";
    let dir = tempfile::tempdir().expect("a temp dir");
    let text_file = dir.path().join("notes.txt");
    std::fs::write(&text_file, "not an ELF file\n").expect("write");
    let text_file = text_file.to_str().expect("UTF-8 temp path");
    let missing = dir.path().join("missing");
    let missing = missing.to_str().expect("UTF-8 temp path");
    let directory = dir.path().to_str().expect("UTF-8 temp path");
    let tool = llvm_symbolizer(test);

    for obj in [missing, text_file, directory] {
        for style in ["LLVM", "GNU", "JSON"] {
            let style = format!("--output-style={style}");
            let args = [style.as_str(), "--obj", obj, "0x10", "0x20", "DATA 0x30"];
            let out = ours(&args, "");
            let stderr = text(&out.stderr);
            assert_eq!(stderr.matches(obj).count(), 1, "reported once:\n{stderr}");
            assert!(stderr.contains("error reading file"), "{stderr}");
            assert!(out.status.success(), "exit 0, as llvm-symbolizer");
            let Some(tool) = tool else { continue };
            let theirs = llvm(tool, &args, "");
            assert_eq!(out.status.code(), theirs.status.code(), "exit code ({obj})");
            let (x, y) = (text(&out.stdout), text(&theirs.stdout));
            if style.ends_with("JSON") {
                // Same objects; only the error message's wording is ours.
                let strip = |mut v: Value| {
                    if let Some(e) = v.get_mut("Error") {
                        e["Message"] = Value::Null;
                    }
                    v
                };
                let xv: Vec<Value> = json_values(&x).into_iter().map(strip).collect();
                let yv: Vec<Value> = json_values(&y).into_iter().map(strip).collect();
                assert_eq!(xv, yv, "JSON for {obj}");
            } else {
                assert_eq!(x, y, "{style} output for {obj}");
            }
        }
    }

    // Interleaved with a good module, from stdin: ?? for the bad ones, each reported once,
    // answers for the good one, in input order.
    let Some(good) = plain_functions(test, "c-nopie", 1) else {
        return;
    };
    let input = format!(
        "{missing} 0x1\ntestdata/bin/c-nopie {g:#x}\n{text_file} 0x2\n{missing} 0x3\n\
         {text_file} 0x4\ntestdata/bin/c-nopie {g:#x}\n",
        g = good[0].addr
    );
    let out = ours(&[], &input);
    let no = "??\n??:0:0\n\n";
    let yes = block(&good[0].name);
    assert_eq!(text(&out.stdout), [no, &yes, no, no, no, &yes].concat());
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches(missing).count(), 1, "{stderr}");
    assert_eq!(stderr.matches(text_file).count(), 1, "{stderr}");
    assert!(stderr.contains("not an ELF file"), "{stderr}");
    if let Some(tool) = tool {
        let theirs = llvm(tool, &[], &input);
        assert_eq!(text(&out.stdout), text(&theirs.stdout));
        assert_eq!(out.status.code(), theirs.status.code());
    }
}

// ---------------------------------------------------------------------------------------
// The demo run, batching, interactivity, flags

/// `(binary, address, expected name)` from demo.txt's `# Expected ...` header.
fn demo_expectations() -> Vec<(String, u64, String)> {
    let demo = std::fs::read_to_string(root().join("testdata/dumps/demo.txt")).expect("demo.txt");
    let mut expected = Vec::new();
    let mut in_list = false;
    for line in demo.lines() {
        let Some(comment) = line.strip_prefix('#') else {
            continue;
        };
        if comment.contains("Expected") {
            in_list = true;
            continue;
        }
        if !in_list {
            continue;
        }
        let mut fields = comment.split_whitespace();
        let (Some(binary), Some(addr)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some(addr) = addr
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        else {
            continue;
        };
        let name = fields.collect::<Vec<_>>().join(" ");
        expected.push((binary.to_string(), addr, name));
    }
    expected
}

fn check_demo_output(out: &Output) {
    let expected = demo_expectations();
    assert!(expected.len() >= 10, "demo.txt lists its expectations");
    let stdout = text(&out.stdout);
    let blocks: Vec<&str> = stdout.split_terminator("\n\n").collect();
    assert_eq!(blocks.len(), expected.len(), "{stdout}");
    for ((binary, addr, want), block) in expected.iter().zip(&blocks) {
        // Name and location per frame, inlined ones first: the function whose code it is
        // (named by the symbol table) is the last pair. Binaries built with -g give lines.
        let lines: Vec<&str> = block.lines().collect();
        assert!(lines.len() >= 2 && lines.len().is_multiple_of(2), "{block}");
        let (name, location) = (lines[lines.len() - 2], lines[lines.len() - 1]);
        let with_lines = ["cpp-O2-g", "c-pie-g"].iter().any(|b| binary.ends_with(b));
        if with_lines && !name.ends_with("@plt") && !name.starts_with("demo_global") {
            assert!(
                location.starts_with("./src/demo.c") && !location.ends_with(":0:0"),
                "{binary} {addr:#x}: a source line, got {location:?}"
            );
        } else {
            assert_eq!(location, "??:0:0", "{binary} {addr:#x}");
        }
        // The header may explain a name after it: `puts@plt (inside the .plt entry; ...)`.
        assert!(
            want == name || want.starts_with(&format!("{name} (")),
            "{binary} {addr:#x}: expected {want:?}, got {name:?}"
        );
    }
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("demo dump") && stderr.contains("testdata/dumps/demo.txt"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one note, no errors:\n{stderr}");
    assert!(out.status.success());
}

#[test]
fn no_arguments_symbolize_the_demo_dump() {
    // stdin is empty: no arguments and nothing on stdin means the demo.
    check_demo_output(&ours(&[], ""));
    // From elsewhere, the dump and its relative paths are found in the crate directory.
    let dir = tempfile::tempdir().expect("a temp dir");
    check_demo_output(&run_with(tool("symbolize"), &[], b"", dir.path()));
    // The demo's names are the PLT entry's `puts@plt` and the data object's own name.
    let stdout = text(&ours(&[], "").stdout);
    assert!(stdout.contains("\nputs@plt\n??:0:0\n"));
    assert!(stdout.contains("\ndemo_global_table\n??:0:0\n"));
    // Any argument (here a flag) turns the demo off: stdin is read, as llvm-symbolizer does.
    let out = ours(&["-a"], "");
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
}

#[test]
fn long_inputs_keep_input_order_across_modules_and_batches() {
    let test = "long_inputs_keep_input_order_across_modules_and_batches";
    let Some(a) = plain_functions(test, "c-nopie", 3) else {
        return;
    };
    let Some(b) = plain_functions(test, "c-stripped-dynsym", 3) else {
        return;
    };
    let mut input = String::new();
    let mut expected = String::new();
    for i in 0..40_000 {
        let (module, pick) = if i % 3 == 0 {
            ("testdata/bin/c-stripped-dynsym", &b[i % b.len()])
        } else {
            ("testdata/bin/c-nopie", &a[i % a.len()])
        };
        input.push_str(&format!("{module} {:#x}\n", pick.addr));
        expected.push_str(&block(&pick.name));
    }
    let out = ours(&[], &input);
    assert_eq!(text(&out.stdout), expected);
    assert!(out.stderr.is_empty());
}

/// A program driving the example through a pipe (as sanitizers drive llvm-symbolizer) gets
/// each answer before it sends the next line or closes stdin.
#[test]
fn answers_come_before_end_of_input() {
    let mut child = tool("symbolize")
        .args(["--obj", "testdata/bin/c-nopie"])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the example runs");
    let mut stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if send.send(line.expect("UTF-8 output")).is_err() {
                break;
            }
        }
    });
    for query in ["0x401265", "0x1"] {
        writeln!(stdin, "{query}").expect("write a query");
        stdin.flush().expect("flush");
        let mut answer = Vec::new();
        for _ in 0..3 {
            match receive.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => answer.push(line),
                Err(_) => {
                    let _ = child.kill();
                    panic!("no answer to {query} within 30 s while stdin stays open");
                }
            }
        }
        assert_eq!(answer[1..], ["??:0:0", ""]);
    }
    drop(stdin);
    assert!(child.wait().expect("exits").success());
}

#[test]
fn help_version_and_bad_flags() {
    let help = text(&ours(&["--help"], "").stdout);
    for flag in [
        "--obj",
        "-e",
        "--exe",
        "--input",
        "--demangle",
        "--no-demangle",
        "--inlines",
        "--no-inlines",
        "--output-style",
        "--addresses",
        "--print-address",
        "--functions",
        "--pretty-print",
        "--adjust-vma",
        "--version",
        "--debug-file-directory",
        "--basenames",
        "--relativenames",
        "discriminator",
        "StartFileName",
        "testdata/dumps/demo.txt",
        "DECIMAL",
        "(PATH+0xOFFSET)",
    ] {
        assert!(help.contains(flag), "--help mentions {flag}");
    }
    assert!(text(&ours(&["-v"], "").stdout).starts_with("symbolize "));

    let out = ours(&["--no-such-flag"], "");
    assert_eq!(out.status.code(), Some(1), "llvm-symbolizer's exit code");
    assert!(text(&out.stderr).contains("--no-such-flag"));
    let test = "help_version_and_bad_flags";
    if let Some(tool) = llvm_symbolizer(test) {
        let theirs = llvm(tool, &["--no-such-flag"], "");
        assert_eq!(out.status.code(), theirs.status.code());
    }

    // llvm-symbolizer's other spellings, and the last of a repeated flag counts.
    let spellings: &[&[&str]] = &[
        &["-e", "testdata/bin/c-nopie"],
        &["-e=testdata/bin/c-nopie"],
        &["--exe", "testdata/bin/c-nopie"],
        &["--exe=testdata/bin/c-nopie"],
        &["--obj=testdata/bin/c-nopie"],
        &["--obj=/nonexistent", "--obj", "testdata/bin/c-nopie"],
        &[
            "--obj",
            "testdata/bin/c-nopie",
            "-demangle=false",
            "-C",
            "--inlining=false",
        ],
        &[
            "--obj",
            "testdata/bin/c-nopie",
            "--demangle",
            "--no-demangle",
            "-i",
        ],
    ];
    for args in spellings {
        let mut args = args.to_vec();
        args.push("0x401265");
        let out = ours(&args, "");
        assert_eq!(text(&out.stdout), block("checksum"), "{args:?}");
        assert!(out.status.success(), "{args:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Source lines and inlined frames: the unstripped binaries, against llvm-symbolizer and
// binutils addr2line

/// Binaries compared with their DWARF (rust-v0 has none: its answers must stay those of the
/// symbol table, `??:0:0`).
const DWARF_BINARIES: &[&str] = &[
    "c-pie-g",
    "cpp-O2-g",
    "c-wait",
    "libversioned.so",
    "rust-v0",
    "c-clang-O2-g",
    "cpp-clang-O2-g",
];

/// Differences tolerated in the DWARF comparisons, each counted and printed.
#[derive(Default)]
struct DwarfTolerated {
    /// Names and STT_FILE locations, as in the symbol-table comparisons.
    names: Tolerated,
    /// addr2line's ` (discriminator N)` on outer frames (it repeats the innermost row's on
    /// every frame; llvm-symbolizer and we print it on the innermost only). Must stay 0
    /// against llvm-symbolizer.
    discriminator: usize,
    /// JSON `StartFileName` / `StartLine` (DW_AT_decl_file/line; not in the library's frames).
    decl: usize,
    /// A name from a separate debug file's `.symtab` where llvm-symbolizer, which takes names
    /// from the binary's own tables, has none (`??`).
    debug_symtab: usize,
    /// JSON `StartAddress` of a frame whose start the library does not give (an inlined one,
    /// or with `--functions=short` the DWARF function's own start).
    start: usize,
    /// `--functions=short`: template arguments spelled by the demangler, not by the compiler.
    short_spelling: usize,
    /// addr2line: `??:?` / `FILE:?` where llvm-symbolizer's GNU style (and we) say `:0`.
    unknown_line: usize,
    /// addr2line names the outer frame by DWARF (`process_value`), we by the symbol table
    /// (`process_value.cold`), as llvm-symbolizer does.
    outer_name: usize,
    /// Lines (text) or frames (JSON) compared, and how many were identical.
    compared: usize,
    identical: usize,
}

impl DwarfTolerated {
    /// The counts, one line.
    fn summary(&self, context: &str) -> String {
        let n = &self.names;
        format!(
            "{context}: {}/{} identical; tolerated: {} discriminator, {} decl file/line, {} \
             start address, {} short-name spelling, {} unknown line, {} outer name by symbol \
             table, {} alias, {} version, {} demangler dialect, {} STT_FILE file, {} named \
             by the debug file's .symtab only",
            self.identical,
            self.compared,
            self.discriminator,
            self.decl,
            self.start,
            self.short_spelling,
            self.unknown_line,
            self.outer_name,
            n.alias,
            n.version,
            n.dialect,
            n.file,
            self.debug_symtab
        )
    }

    fn report(&self, context: &str) {
        eprintln!("{}", self.summary(context));
    }
}

/// `X (discriminator N)` → `X`.
fn without_discriminator(line: &str) -> Option<&str> {
    let (head, tail) = line.rsplit_once(" (discriminator ")?;
    let n = tail.strip_suffix(')')?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(head)
}

/// The name without template arguments (`apply_twice<...>` → `apply_twice`).
fn without_templates(name: &str) -> &str {
    name.split('<').next().unwrap_or(name)
}

/// Splits a text line into (address prefix, `(inlined by) ` prefix, name, location): a
/// pretty-printed `NAME at LOCATION` line, or a plain line (taken as a name).
fn split_frame_line(line: &str) -> (&str, &str, &str, &str) {
    let (prefix, rest) = match line.find(": ") {
        Some(i) if line.starts_with("0x") && line[2..i].bytes().all(|b| b.is_ascii_hexdigit()) => {
            line.split_at(i + 2)
        }
        _ => ("", line),
    };
    let (inlined, rest) = match rest.strip_prefix(" (inlined by) ") {
        Some(r) => (" (inlined by) ", r),
        None => ("", rest),
    };
    match rest.rsplit_once(" at ") {
        Some((name, location)) if looks_like_location(location) => {
            (prefix, inlined, name, location)
        }
        _ => (prefix, inlined, rest, ""),
    }
}

/// `FILE:LINE` or `FILE:LINE:COLUMN` (`?` or digits), maybe with ` (discriminator N)`: not
/// the tail of a clang name such as `(lambda at src/lines.cpp:42:25)> >`.
fn looks_like_location(s: &str) -> bool {
    let s = without_discriminator(s).unwrap_or(s);
    let mut parts = s.rsplitn(3, ':');
    let numeric = |p: Option<&str>| {
        p.is_some_and(|p| p == "?" || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    };
    let last = parts.next();
    let middle = parts.next();
    numeric(last) && (numeric(middle) || middle.is_some())
}

/// One location (`FILE:LINE[:COLUMN]`, maybe with llvm's discriminator suffix).
fn dwarf_locations_agree(ours: &str, theirs: &str, t: &mut DwarfTolerated) -> bool {
    if ours == theirs || equivalent_locations(ours, theirs, &mut t.names) {
        return true;
    }
    match without_discriminator(theirs) {
        Some(bare) if bare == ours => {
            t.discriminator += 1;
            true
        }
        _ => false,
    }
}

fn dwarf_names_agree(ours: &str, theirs: &str, rules: &Rules<'_>, t: &mut DwarfTolerated) -> bool {
    if ours == theirs || equivalent_names(ours, theirs, rules, &mut t.names) {
        return true;
    }
    if rules.short && without_templates(ours) == without_templates(theirs) && theirs.contains('<') {
        t.short_spelling += 1;
        return true;
    }
    // A compiler-made part (`.cold`, `.part.0`, `.isra.0`, `.constprop.0`) named by a
    // separate debug file's `.symtab` (libc's), which llvm-symbolizer does not read for
    // names: it shows the DWARF function's.
    if ours.split_once('.').is_some_and(|(base, _)| base == theirs) {
        t.outer_name += 1;
        return true;
    }
    // A function only that `.symtab` names (no DWARF function: assembly, libgcc's soft-fp):
    // llvm-symbolizer has no name for it.
    if (theirs == "??" || theirs.is_empty()) && !ours.is_empty() && ours != "??" {
        t.debug_symtab += 1;
        return true;
    }
    false
}

/// LLVM or GNU style output, line by line, up to the counted tolerances.
fn assert_same_dwarf_text(
    context: &str,
    ours: &str,
    theirs: &str,
    rules: &Rules<'_>,
    t: &mut DwarfTolerated,
) {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(
        a.len(),
        b.len(),
        "{context}: line counts differ\n--- ours:\n{ours}\n--- theirs:\n{theirs}"
    );
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        t.compared += 1;
        if x == y {
            t.identical += 1;
            continue;
        }
        if dwarf_locations_agree(x, y, t) {
            continue;
        }
        let (xp, xi, xn, xl) = split_frame_line(x);
        let (yp, yi, yn, yl) = split_frame_line(y);
        assert!(
            xp == yp
                && xi == yi
                && dwarf_locations_agree(xl, yl, t)
                && dwarf_names_agree(xn, yn, rules, t),
            "{context}: line {} differs:\n  ours:   {x:?}\n  theirs: {y:?}",
            i + 1
        );
    }
}

/// JSON output, frame by frame, up to the counted tolerances.
fn assert_same_dwarf_json(
    context: &str,
    ours: &str,
    theirs: &str,
    rules: &Rules<'_>,
    t: &mut DwarfTolerated,
) {
    let (a, b) = (json_values(ours), json_values(theirs));
    assert_eq!(a.len(), b.len(), "{context}: value counts differ");
    for (x, y) in a.into_iter().zip(b) {
        let mut x = without_extras(x);
        let (Some(xs), Some(ys)) = (
            x.get_mut("Symbol").and_then(Value::as_array_mut),
            y.get("Symbol").and_then(Value::as_array),
        ) else {
            assert_eq!(x, y, "{context}: JSON differs");
            continue;
        };
        assert_eq!(
            xs.len(),
            ys.len(),
            "{context}: frame counts differ\n{x}\n{y}"
        );
        for (xf, yf) in xs.iter_mut().zip(ys) {
            t.compared += 1;
            if xf == yf {
                t.identical += 1;
                continue;
            }
            let mut copy = |key: &str, ours_unknown: Value, counter: &mut usize| {
                if xf[key] != yf[key] && xf[key] == ours_unknown {
                    *counter += 1;
                    xf[key] = yf[key].clone();
                }
            };
            copy("Discriminator", Value::from(0), &mut t.discriminator);
            copy("StartAddress", Value::from(""), &mut t.start);
            let mut decl = 0;
            copy("StartFileName", Value::from(""), &mut decl);
            copy("StartLine", Value::from(0), &mut decl);
            // llvm-symbolizer 14 prints StartLine but leaves StartFileName empty (later
            // versions fill it, as we do).
            if yf["StartFileName"] == "" && xf["StartFileName"] != "" {
                decl += 1;
                xf["StartFileName"] = Value::from("");
            }
            t.decl += usize::from(decl > 0);
            // llvm-symbolizer's FileName from an STT_FILE symbol (see equivalent_locations).
            if xf["FileName"] == "" && yf["Line"] == 0 && yf["FileName"] != "" {
                t.names.file += 1;
                xf["FileName"] = yf["FileName"].clone();
            }
            if let (Some(xn), Some(yn)) = (xf["FunctionName"].as_str(), yf["FunctionName"].as_str())
            {
                if xn != yn && dwarf_names_agree(xn, yn, rules, t) {
                    xf["FunctionName"] = Value::from(yn);
                }
            }
            // llvm-symbolizer's StartAddress is the DWARF function's low_pc: none for one
            // split by DW_AT_ranges (hot/cold, libc's), or when no DWARF function covers the
            // address; ours is the symbol's start (also with `--functions=short|none`).
            if xf["StartAddress"] != "" && yf["StartAddress"] == "" {
                t.start += 1;
                xf["StartAddress"] = yf["StartAddress"].clone();
            }
            assert_eq!(*xf, *yf, "{context}: JSON frame differs");
        }
    }
}

/// The queries for a DWARF comparison: `count` random addresses inside functions (nm's
/// sized code symbols; fixed seed), and up to `inlined` addresses where llvm-symbolizer
/// reports inlined frames (found by asking it about every byte of every function), plus the
/// `known` ones. Returns the addresses and how many of them are inside inlined code.
fn dwarf_queries(
    test: &str,
    tool: &Llvm,
    name: &str,
    count: usize,
    inlined: usize,
    known: &[u64],
) -> Option<(Vec<u64>, usize)> {
    let path = bin(name);
    let symbols = nm_symbols(test, &path)?;
    // One entry per function (aliases share an address and would weigh more).
    let mut seen = HashSet::new();
    let code: Vec<&NmSym> = symbols
        .iter()
        .filter(|s| s.is_code() && seen.insert(s.addr))
        .collect();
    assert!(!code.is_empty(), "{name}: nm lists functions");
    let mut rng = support::XorShift::new(0x5eed_0000 + name.len() as u64);
    let mut addrs: Vec<u64> = (0..count)
        .map(|_| {
            let s = code[rng.below(code.len() as u64) as usize];
            s.addr + rng.below(s.size)
        })
        .collect();
    let every: Vec<u64> = code
        .iter()
        .flat_map(|s| s.addr..s.addr + s.size)
        .collect::<std::collections::BTreeSet<u64>>()
        .into_iter()
        .collect();
    let values = support::llvm_symbolizer_json(&tool.exe, &path, &["--inlines"], &every);
    let deep: Vec<u64> = every
        .iter()
        .zip(&values)
        .filter(|(_, v)| v["Symbol"].as_array().is_some_and(|f| f.len() > 1))
        .map(|(&a, _)| a)
        .collect();
    let step = deep.len().div_ceil(inlined.max(1)).max(1);
    addrs.extend(deep.iter().step_by(step));
    addrs.extend(known);
    let in_inlined = addrs
        .iter()
        .filter(|a| deep.binary_search(a).is_ok())
        .count();
    Some((addrs, in_inlined))
}

/// Runs both tools with `flags --obj PATH ADDRS...` and compares, for every flag set;
/// returns the tolerated differences of all of them.
fn compare_dwarf_runs(
    test: &str,
    tool: &Llvm,
    obj: &str,
    queries: &[String],
    flag_sets: &[&[&str]],
    aliases: &[HashSet<String>],
    cpp: bool,
) -> DwarfTolerated {
    let mut total = DwarfTolerated::default();
    for flags in flag_sets {
        let rules = Rules {
            aliases,
            cpp_dialect: cpp && !flags.contains(&"--no-demangle"),
            short: flags.contains(&"--functions=short"),
        };
        let mut args: Vec<&str> = flags.to_vec();
        args.extend(["--obj", obj]);
        args.extend(queries.iter().map(String::as_str));
        let (x, y) = (ours(&args, ""), llvm(tool, &args, ""));
        assert_eq!(
            x.status.code(),
            y.status.code(),
            "{obj} {flags:?}: exit codes"
        );
        let context = format!("{test}: {obj} {flags:?} ({} addresses)", queries.len());
        let (xs, ys) = (text(&x.stdout), text(&y.stdout));
        let mut t = DwarfTolerated::default();
        if flags.contains(&"--output-style=JSON") {
            assert_same_dwarf_json(&context, &xs, &ys, &rules, &mut t);
        } else {
            assert_same_dwarf_text(&context, &xs, &ys, &rules, &mut t);
        }
        t.report(&context);
        // The library's frames carry the innermost row's discriminator, as llvm-symbolizer's.
        assert_eq!(t.discriminator, 0, "{context}: discriminators differ");
        total.add(&t);
    }
    total
}

impl DwarfTolerated {
    /// Like `report`, past the harness's capture, so the totals show in every run.
    fn report_always(&self, context: &str) {
        self.report(context);
        support::writeln_stderr(format_args!("{}", self.summary(context)));
    }

    fn add(&mut self, t: &DwarfTolerated) {
        self.names.alias += t.names.alias;
        self.names.version += t.names.version;
        self.names.dialect += t.names.dialect;
        self.names.file += t.names.file;
        self.discriminator += t.discriminator;
        self.decl += t.decl;
        self.debug_symtab += t.debug_symtab;
        self.start += t.start;
        self.short_spelling += t.short_spelling;
        self.unknown_line += t.unknown_line;
        self.outer_name += t.outer_name;
        self.compared += t.compared;
        self.identical += t.identical;
    }
}

#[test]
fn dwarf_lines_and_inlined_frames_match_llvm_symbolizer() {
    let test = "dwarf_lines_and_inlined_frames_match_llvm_symbolizer";
    let Some(tool) = llvm_symbolizer(test) else {
        return;
    };
    let flag_sets: &[&[&str]] = &[
        &[],
        &["--no-inlines"],
        &["-p"],
        &["-p", "-a", "--no-inlines"],
        &["-a"],
        &["--basenames"],
        &["-s", "-p"],
        &["--relativenames"],
        &["--functions=none"],
        &["--functions=none", "-p"],
        &["--functions=short"],
        &["--functions=short", "--no-inlines"],
        &["--inlining=false", "-p"],
        &["--output-style=GNU"],
        &["--output-style=GNU", "--no-inlines"],
        &["--output-style=GNU", "-p", "-a"],
        &["--output-style=GNU", "--basenames"],
        &["--output-style=JSON"],
        &["--output-style=JSON", "--no-inlines"],
        &["--output-style=JSON", "--functions=short"],
        &["--output-style=JSON", "--functions=none", "--relativenames"],
    ];
    let mut total = DwarfTolerated::default();
    let mut inlined_total = 0;
    for &name in DWARF_BINARIES {
        // testdata/README.md: 0x12c4 in c-pie-g is inside scale(), inlined into checksum().
        let known: &[u64] = if name == "c-pie-g" { &[0x12c4] } else { &[] };
        let Some((addrs, in_inlined)) = dwarf_queries(test, tool, name, 300, 100, known) else {
            return;
        };
        if name != "rust-v0" && name != "libversioned.so" {
            assert!(in_inlined > 0, "{name}: some addresses are in inlined code");
        }
        inlined_total += in_inlined;
        eprintln!(
            "{test}: {name}: {} addresses, {in_inlined} inside inlined code",
            addrs.len()
        );
        let queries: Vec<String> = addrs.into_iter().map(hex).collect();
        let symbols = nm_symbols(test, &bin(name)).unwrap_or_default();
        let aliases = alias_groups(&symbols);
        let obj = format!("testdata/bin/{name}");
        let mut flags: Vec<Vec<&str>> = flag_sets.iter().map(|f| f.to_vec()).collect();
        if name == "cpp-O2-g" {
            flags.push(vec!["--no-demangle"]);
            flags.push(vec!["--no-demangle", "--output-style=JSON"]);
        }
        if name.starts_with("rust") {
            // llvm 14 and rustc-demangle spell Rust names differently (and the alias groups
            // are of mangled names): compare mangled, as the symbol-table tests do.
            for f in &mut flags {
                f.push("--no-demangle");
            }
        }
        let flags: Vec<&[&str]> = flags.iter().map(Vec::as_slice).collect();
        let cpp = name.starts_with("cpp");
        total.add(&compare_dwarf_runs(
            test, tool, &obj, &queries, &flags, &aliases, cpp,
        ));
    }
    total.report_always(&format!(
        "{test}: TOTAL ({inlined_total} addresses inside inlined code)"
    ));
}

#[test]
fn inlined_scale_in_checksum_prints_both_frames() {
    // testdata/README.md: 0x12c4 in c-pie-g is inside scale(), inlined into checksum().
    let out = ours(&["--obj", "testdata/bin/c-pie-g", "0x12c4"], "");
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    assert_eq!(lines[0], "scale");
    assert!(lines[1].starts_with("./src/demo.c:"), "{stdout}");
    assert_eq!(lines[2], "checksum");
    assert!(lines[3].starts_with("./src/demo.c:"), "{stdout}");
    // --no-inlines: the innermost location, the outer function's name.
    let one = text(
        &ours(
            &["--obj", "testdata/bin/c-pie-g", "--no-inlines", "0x12c4"],
            "",
        )
        .stdout,
    );
    assert_eq!(one, format!("checksum\n{}\n\n", lines[1]));
    let pretty = text(&ours(&["--obj", "testdata/bin/c-pie-g", "-p", "-s", "0x12c4"], "").stdout);
    assert!(
        pretty.starts_with("scale at demo.c:")
            && pretty.contains("\n (inlined by) checksum at demo.c:"),
        "{pretty}"
    );
}

#[test]
fn gnu_style_with_dwarf_matches_addr2line() {
    let test = "gnu_style_with_dwarf_matches_addr2line";
    let Some(addr2line) = support::require_tool(test, "addr2line", "binutils") else {
        if std::env::var_os("CI").is_some() {
            panic!("{test}: addr2line not found; CI is expected to install binutils");
        }
        return;
    };
    let mut total = DwarfTolerated::default();
    for name in ["c-pie-g", "cpp-O2-g", "c-wait", "libversioned.so"] {
        let path = bin(name);
        let Some(symbols) = nm_symbols(test, &path) else {
            return;
        };
        let mut addrs = addresses_in(&symbols, NmSym::is_code);
        let code: Vec<&NmSym> = symbols.iter().filter(|s| s.is_code()).collect();
        let mut rng = support::XorShift::new(0xadd2_0000 + name.len() as u64);
        addrs.extend((0..300).map(|_| {
            let s = code[rng.below(code.len() as u64) as usize];
            s.addr + rng.below(s.size)
        }));
        if name == "c-pie-g" {
            addrs.push(0x12c4);
        }
        let queries: Vec<String> = addrs.iter().copied().map(hex).collect();
        let obj = format!("testdata/bin/{name}");
        let mut args = vec!["--output-style=GNU", "--obj", &obj];
        args.extend(queries.iter().map(String::as_str));
        let x = text(&ours(&args, "").stdout);
        let mut a2l = vec!["-f", "-i", "-C", "-e", &obj];
        a2l.extend(queries.iter().map(String::as_str));
        let y = text(&run_with(Command::new(&addr2line), &os(&a2l), b"", root()).stdout);
        let (xl, yl): (Vec<&str>, Vec<&str>) = (x.lines().collect(), y.lines().collect());
        assert_eq!(
            xl.len(),
            yl.len(),
            "{name}: line counts\n--- ours:\n{x}\n--- addr2line:\n{y}"
        );
        let aliases = alias_groups(&symbols);
        let rules = Rules {
            aliases: &aliases,
            cpp_dialect: false,
            short: false,
        };
        let mut t = DwarfTolerated::default();
        for (i, (ours_line, theirs)) in xl.iter().zip(&yl).enumerate() {
            t.compared += 1;
            if ours_line == theirs {
                t.identical += 1;
                continue;
            }
            // addr2line repeats the innermost row's discriminator on every frame.
            let theirs = match without_discriminator(theirs) {
                Some(bare) => {
                    t.discriminator += 1;
                    bare
                }
                None => theirs,
            };
            if *ours_line == theirs {
                continue;
            }
            if let (Some(o), Some(th)) = (ours_line.strip_suffix(":0"), theirs.strip_suffix(":?")) {
                // ??:0 against ??:?, or against addr2line's STT_FILE name (crtstuff.c:?).
                if o == th || o == "??" {
                    t.unknown_line += 1;
                    continue;
                }
            }
            if equivalent_names(ours_line, theirs, &rules, &mut t.names) {
                continue;
            }
            // The outer frame: the symbol's name (a .cold part) against DWARF's.
            let cold = [".cold", " [clone .cold]"]
                .iter()
                .any(|suffix| ours_line.strip_suffix(suffix) == Some(theirs));
            assert!(
                cold,
                "{name}: line {} differs:\n  ours:      {ours_line:?}\n  addr2line: {theirs:?}",
                i + 1
            );
            t.outer_name += 1;
        }
        t.report(&format!("{test}: {name} ({} addresses)", addrs.len()));
        total.add(&t);
    }
    total.report_always(&format!("{test}: TOTAL"));
}

#[test]
fn debug_file_directory_finds_separate_debug_files() {
    let test = "debug_file_directory_finds_separate_debug_files";
    // Our own expectations first: c-buildid's DWARF is only in testdata/debug/.build-id.
    let Some(symbols) = nm_symbols(test, &bin("c-buildid")) else {
        return;
    };
    let checksum = symbols
        .iter()
        .find(|s| s.name == "checksum")
        .expect("c-buildid keeps its .symtab");
    let at = hex(checksum.addr);
    let without = text(&ours(&["--obj", "testdata/bin/c-buildid", &at], "").stdout);
    assert_eq!(without, "checksum\n??:0:0\n\n", "no debug dir, no lines");
    let dirs: &[&[&str]] = &[
        &["--debug-file-directory", "testdata/debug"],
        &["--debug-file-directory=testdata/debug"],
        // Repeatable: each directory is searched in order.
        &[
            "--debug-file-directory=/nonexistent/stacksym",
            "--debug-file-directory",
            "testdata/debug",
        ],
    ];
    for flags in dirs {
        let mut args = flags.to_vec();
        args.extend(["--obj", "testdata/bin/c-buildid", &at]);
        let with = text(&ours(&args, "").stdout);
        assert!(
            with.starts_with("checksum\n./src/demo.c:") && !with.contains("??"),
            "{flags:?}: lines from the build-id debug file:\n{with}"
        );
    }
    // c-debuglink: its .debug file beside it is found through .gnu_debuglink, no flag needed.
    let Some(linked) = nm_symbols(test, &bin("c-debuglink")) else {
        return;
    };
    let checksum = linked
        .iter()
        .find(|s| s.name == "checksum")
        .expect("c-debuglink keeps its .symtab");
    let with = text(
        &ours(
            &["--obj", "testdata/bin/c-debuglink", &hex(checksum.addr)],
            "",
        )
        .stdout,
    );
    assert!(with.starts_with("checksum\n./src/demo.c:"), "{with}");

    // The same as llvm-symbolizer, on many addresses, in every style.
    let Some(tool) = llvm_symbolizer(test) else {
        return;
    };
    let mut total = DwarfTolerated::default();
    for (name, flags) in [
        ("c-buildid", &["--debug-file-directory=testdata/debug"][..]),
        (
            "c-buildid",
            &["--debug-file-directory=/nonexistent/stacksym"][..],
        ),
        ("c-debuglink", &[][..]),
    ] {
        let Some(symbols) = nm_symbols(test, &bin(name)) else {
            return;
        };
        let queries: Vec<String> = addresses_in(&symbols, NmSym::is_code)
            .into_iter()
            .map(hex)
            .collect();
        let aliases = alias_groups(&symbols);
        let styles: &[&str] = &[
            "--output-style=LLVM",
            "--output-style=GNU",
            "--output-style=JSON",
        ];
        let sets: Vec<Vec<&str>> = styles
            .iter()
            .map(|style| flags.iter().copied().chain([*style]).collect())
            .collect();
        let sets: Vec<&[&str]> = sets.iter().map(Vec::as_slice).collect();
        let obj = format!("testdata/bin/{name}");
        total.add(&compare_dwarf_runs(
            test, tool, &obj, &queries, &sets, &aliases, false,
        ));
    }
    total.report_always(&format!("{test}: TOTAL"));
}

/// The system's libc, whose DWARF sits in libc6-dbg's `/usr/lib/debug/.build-id/…` file
/// (both tools find it by build-id): a real binary nobody here built, with glibc's DWARF 5
/// relative directory 0 (`./malloc/./malloc/malloc.c`), names from the debug file's
/// `.symtab`, and addresses in the padding after short functions, which only the line table
/// covers (`??` at a file and line). 400 random addresses in its functions (by `nm` of the
/// debug file) and one past the end of each of 100 of them.
#[test]
fn libc_with_its_debug_file_matches_llvm_symbolizer() {
    let test = "libc_with_its_debug_file_matches_llvm_symbolizer";
    let Some(tool) = llvm_symbolizer(test) else {
        return;
    };
    let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
    let Some(readelf) = support::require_tool(test, "readelf", "binutils") else {
        return;
    };
    let debug = match support::build_id_debug_file(&readelf, libc, Path::new("/usr/lib/debug")) {
        Ok(debug) => debug,
        Err(why) => {
            skip(test, &why);
            return;
        }
    };
    let Some(symbols) = nm_symbols(test, &debug) else {
        return;
    };
    let mut seen = HashSet::new();
    let code: Vec<&NmSym> = symbols
        .iter()
        .filter(|s| s.is_code() && s.size > 0 && seen.insert(s.addr))
        .collect();
    let mut rng = support::XorShift::new(0x11bc);
    let mut addrs: Vec<u64> = (0..400)
        .map(|_| {
            let s = code[rng.below(code.len() as u64) as usize];
            s.addr + rng.below(s.size)
        })
        .collect();
    addrs.extend((0..100).map(|_| {
        let s = code[rng.below(code.len() as u64) as usize];
        s.addr + s.size
    }));
    let queries: Vec<String> = addrs.into_iter().map(hex).collect();
    let aliases = alias_groups(&symbols);
    let flags: &[&[&str]] = &[
        &[],
        &["-p"],
        &["--output-style=GNU"],
        &["--output-style=JSON"],
    ];
    let total = compare_dwarf_runs(
        test,
        tool,
        libc.to_str().expect("UTF-8 path"),
        &queries,
        flags,
        &aliases,
        false,
    );
    total.report_always(&format!("{test}: TOTAL"));
}
