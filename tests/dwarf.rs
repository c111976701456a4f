//! Source lines and inlined frames compared with llvm-symbolizer.
//!
//! For each file, random addresses inside sized FUNC symbols (`readelf -sW`, fixed-seed
//! xorshift: a function, then an offset in it) go to ONE llvm-symbolizer run (JSON, inlined
//! frames on, no demangling: linkage names) and to ONE `Symbolizer::symbolize` call on the
//! same file (`Sym::frames`; the library finds the debug file itself, and names a frame
//! without a function DIE from the symbol table, as llvm-symbolizer does). An address agrees
//! when the whole inline chain agrees: the same number of frames and, per frame, the same
//! function name (raw, as DWARF states it), file basename, line, column (a line-0 row's too)
//! and discriminator. Where DWARF
//! covers nothing, stacksym says `None` and llvm-symbolizer prints a frame with no file and
//! line 0 (its name from the symbol table); that agrees too. At least 99.5 % must agree;
//! disagreements are counted by kind and the first ones printed.
//!
//! Files: the committed binaries built with `-g` (x86_64, aarch64, big-endian s390x, C and
//! C++, a shared library), and the system libc's separate debug file (zlib-compressed
//! sections): both are given `libc.so.6` and `/usr/lib/debug`, and each must find the debug
//! file by build-id (the test checks the library read the DWARF from it). A missing tool or file prints SKIPPED.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use stacksym::dwarf::{DwarfInfo, DwarfSections};
use stacksym::elf::ElfFile;
use stacksym::InlineFrame;
use stacksym::{Input, Source, Symbolizer, VirtAddr};
use support::writeln_stderr;

/// Agreement required, in thousandths.
const REQUIRED_PER_MILLE: usize = 995;
const SHOWN_DISAGREEMENTS: usize = 8;
const TESTDATA_SAMPLES: usize = 10_000;
const LIBC_SAMPLES: usize = 10_000;

/// One frame as llvm-symbolizer prints it, or as stacksym's frame is compared.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CmpFrame {
    function: Option<String>,
    /// Basename of the file.
    file: Option<String>,
    line: u32,
    column: u32,
    /// The line-table discriminator (0: none).
    discriminator: u32,
}

impl std::fmt::Display for CmpFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} @ {}:{}:{}",
            self.function.as_deref().unwrap_or("??"),
            self.file.as_deref().unwrap_or("??"),
            self.line,
            self.column
        )?;
        if self.discriminator != 0 {
            write!(f, " (discriminator {})", self.discriminator)?;
        }
        Ok(())
    }
}

fn basename(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

fn ours_to_cmp(frame: &InlineFrame) -> CmpFrame {
    CmpFrame {
        function: frame.function.as_ref().map(|f| f.raw.clone()),
        file: frame.file.as_deref().map(basename),
        line: frame.line.unwrap_or(0),
        column: frame.column.unwrap_or(0),
        discriminator: frame.discriminator.unwrap_or(0),
    }
}

/// Runs llvm-symbolizer once on all `addrs`; one inline chain (innermost first) per address.
/// `debug_dir`: where it may look for separate debug files (`None`: nowhere).
fn llvm_chains(
    llvm_symbolizer: &Path,
    obj: &Path,
    debug_dir: Option<&Path>,
    addrs: &[u64],
) -> Vec<Vec<CmpFrame>> {
    // In the file's directory: a split-DWARF skeleton's relative comp_dir (".") is resolved
    // against the working directory by llvm-symbolizer, against the file's by stacksym.
    let dir = obj.parent();
    let debug_dir = debug_dir.unwrap_or(Path::new("/nonexistent/stacksym-dwarf-test"));
    let debug_flag = format!("--debug-file-directory={}", debug_dir.display());
    let flags = [
        "--no-demangle",
        "--functions=linkage",
        "--inlining",
        debug_flag.as_str(),
    ];
    support::llvm_symbolizer_json_in(dir, llvm_symbolizer, obj, &flags, addrs)
        .iter()
        .map(|value| {
            let frames = value["Symbol"].as_array().cloned().unwrap_or_default();
            frames
                .iter()
                .map(|f| CmpFrame {
                    function: f["FunctionName"]
                        .as_str()
                        .filter(|n| !n.is_empty() && *n != "??")
                        .map(str::to_string),
                    file: f["FileName"]
                        .as_str()
                        .filter(|n| !n.is_empty() && *n != "??")
                        .map(basename),
                    line: f["Line"].as_u64().unwrap_or(0) as u32,
                    column: f["Column"].as_u64().unwrap_or(0) as u32,
                    discriminator: f["Discriminator"].as_u64().unwrap_or(0) as u32,
                })
                .collect()
        })
        .collect()
}

/// Names of the symbols of the sampled file (and of the file the DWARF is read from),
/// each with every `(start, size)` a symbol of that name has.
type SymbolAddrs = std::collections::HashMap<String, Vec<(u64, u64)>>;

/// How two chains compare: `Ok(kind of agreement)` or `Err(kind of disagreement)`.
///
/// llvm-symbolizer (with `--functions=linkage`, its default) replaces the outer frame's
/// DWARF name with the name of the symbol-table entry covering the address
/// (`shouldOverrideWithSymbolTable`; LLVM 14 has no flag to turn that off), so its outer
/// name is not DWARF's. An outer frame still agrees when llvm-symbolizer's name is a symbol
/// covering the address and DWARF's name is that symbol's alias (same start: `demo_impl` /
/// `demo_alias`, `__error` / `error`, `vfunc_v1` / `vfunc@VERS_1`), or DWARF's name plus a
/// compiler suffix (`process_value.cold`, `f.isra.0`), or a name the symbol tables do not
/// have at all (a C++ function DWARF names without its linkage name, a lambda's
/// `operator()`, an IFUNC resolver's `__wcscpy_ifunc`); file, line and column must agree
/// in every case. Each kind is counted apart.
fn compare_chains(
    addr: u64,
    ours: Option<&[CmpFrame]>,
    llvm: &[CmpFrame],
    symbols: &SymbolAddrs,
) -> Result<&'static str, String> {
    // No line anywhere: llvm-symbolizer's frame then carries only a symbol-table name, and
    // at most a unit's name (e.g. `crti.o`) as file.
    let llvm_has_no_lines = llvm.iter().all(|f| f.line == 0);
    let Some(ours) = ours else {
        return if llvm_has_no_lines {
            Ok("both: no line information")
        } else {
            Err("only llvm-symbolizer found DWARF lines for the address".to_string())
        };
    };
    if ours.len() != llvm.len() {
        return Err(format!(
            "inline chains of different length (stacksym {}, llvm-symbolizer {})",
            ours.len(),
            llvm.len()
        ));
    }
    let mut kind = "identical chains";
    for (depth, (a, b)) in ours.iter().zip(llvm).enumerate() {
        let outer = depth + 1 == ours.len();
        let at = if outer {
            "outer frame"
        } else {
            "inlined frame"
        };
        if a.function != b.function {
            let stand_in = if outer {
                symbol_table_stand_in(addr, a.function.as_deref(), b, symbols)
            } else {
                None
            };
            match stand_in {
                Some(why) => kind = why,
                None if a.function.is_none() && outer => {
                    return Err("outer frame: no function DIE covers the address; \
                                llvm-symbolizer named it from the symbol table"
                        .to_string())
                }
                None => return Err(format!("{at}: function name differs")),
            }
        }
        if a.file != b.file {
            return Err(format!("{at}: file differs"));
        }
        if a.line != b.line {
            return Err(format!("{at}: line differs"));
        }
        if a.column != b.column {
            return Err(format!("{at}: column differs (same line)"));
        }
        if a.discriminator != b.discriminator {
            return Err(format!("{at}: discriminator differs"));
        }
    }
    Ok(kind)
}

/// Why llvm-symbolizer's outer name `llvm` is the symbol-table stand-in for DWARF's name
/// `ours` at `addr`, or `None` if it is not.
fn symbol_table_stand_in(
    addr: u64,
    ours: Option<&str>,
    llvm: &CmpFrame,
    symbols: &SymbolAddrs,
) -> Option<&'static str> {
    let ours = ours?;
    let theirs = llvm.function.as_deref()?;
    let theirs = theirs.split('@').next().unwrap_or(theirs);
    let covering: Vec<u64> = symbols
        .get(theirs)?
        .iter()
        .filter(|&&(start, size)| start <= addr && addr < start.saturating_add(size.max(1)))
        .map(|&(start, _)| start)
        .collect();
    if covering.is_empty() {
        return None;
    }
    if theirs.split('.').next() == Some(ours) {
        return Some("outer frame: llvm-symbolizer's symbol-table name is DWARF's plus a suffix");
    }
    match symbols.get(ours) {
        Some(ranges) if ranges.iter().any(|(start, _)| covering.contains(start)) => {
            Some("outer frame: llvm-symbolizer's symbol-table name is an alias of DWARF's")
        }
        Some(_) => None,
        None => Some(
            "outer frame: DWARF's name is in no symbol table; llvm-symbolizer used the \
             covering symbol's",
        ),
    }
}

fn seed_for(path: &Path) -> u64 {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.bytes().fold(0x9e37_79b9_7f4a_7c15, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

struct Report {
    total: usize,
    agreed: usize,
}

/// One comparison: where addresses are sampled, what each side is given.
struct Case<'a> {
    /// Its FUNC symbols give the addresses (a stripped binary has none: sample its debug
    /// file, which has the same addresses).
    sample_from: &'a Path,
    samples: usize,
    /// What the library is given, with which debug dirs.
    ours: &'a Path,
    ours_debug_dirs: Vec<PathBuf>,
    /// The file the library must read the DWARF from (`ours` itself or its debug file).
    dwarf_file: &'a Path,
    /// What llvm-symbolizer is given (the same file, or an unstripped twin from the same
    /// link), and where it may look for debug files.
    llvm: &'a Path,
    llvm_debug_dir: Option<&'a Path>,
    /// False where llvm-symbolizer 14 cannot name functions (dwz's DW_FORM_GNU_ref_alt):
    /// then only locations are compared, and every frame of ours must have a name.
    llvm_names: bool,
}

impl<'a> Case<'a> {
    /// A file compared with itself, no debug dirs.
    fn same(path: &'a Path, samples: usize) -> Case<'a> {
        Case {
            sample_from: path,
            samples,
            ours: path,
            ours_debug_dirs: Vec::new(),
            dwarf_file: path,
            llvm: path,
            llvm_debug_dir: None,
            llvm_names: true,
        }
    }
}

/// Compares every case (all of their FUNC symbols sampled) and fails the test when any is
/// below the required agreement, after all were compared and reported.
fn compare_all(tools: &support::ReferenceTools, cases: &[(String, Case<'_>)]) {
    let failed: Vec<&str> = cases
        .iter()
        .filter(|(_, case)| {
            let report = compare(tools, case, |_| true);
            report.agreed * 1000 < report.total * REQUIRED_PER_MILLE
        })
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        failed.is_empty(),
        "below the required agreement: {failed:?}"
    );
}

/// Every `(start, size)` of each defined symbol's name.
fn symbol_addrs_of<'s>(symbols: impl Iterator<Item = &'s support::RefSym>) -> SymbolAddrs {
    let mut addrs = SymbolAddrs::new();
    for sym in symbols.filter(|s| s.is_defined()) {
        addrs
            .entry(sym.name.clone())
            .or_default()
            .push((sym.value, sym.size));
    }
    addrs
}

/// Compares `case.samples` random in-function addresses of `case.sample_from` (its FUNC
/// symbols that `keep` accepts).
fn compare(
    tools: &support::ReferenceTools,
    case: &Case<'_>,
    keep: impl Fn(&support::RefSym) -> bool,
) -> Report {
    let Case {
        sample_from,
        samples,
        ours: ours_obj,
        ref ours_debug_dirs,
        dwarf_file,
        llvm: llvm_obj,
        llvm_debug_dir: debug_dir,
        llvm_names,
    } = *case;
    let symbols = support::readelf_symbols(&tools.readelf, sample_from);
    let debug_symbols = if dwarf_file == sample_from {
        Vec::new()
    } else {
        support::readelf_symbols(&tools.readelf, dwarf_file)
    };
    let symbol_addrs = symbol_addrs_of(symbols.iter().chain(&debug_symbols));
    let sampled = support::sample_function_addrs(&symbols, keep, samples, seed_for(sample_from));
    let addrs: Vec<u64> = sampled.iter().map(|s| s.addr).collect();

    let t = Instant::now();
    let llvm = llvm_chains(&tools.llvm_symbolizer, llvm_obj, debug_dir, &addrs);
    let llvm_time = t.elapsed();

    let t = Instant::now();
    // Through the library's front door, on the same file llvm-symbolizer is given: the
    // Symbolizer finds the debug file itself (build-id or debuglink, in `debug_dir` only).
    let symbolizer = Symbolizer::builder()
        .demangle(false)
        .debug_dirs(ours_debug_dirs.clone())
        .build();
    let symbols = symbolizer
        .symbolize(
            &Source::Elf { path: ours_obj },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
        )
        .unwrap_or_else(|e| panic!("symbolizing {}: {e}", ours_obj.display()));
    if let Some(e) = symbols.debug_error() {
        panic!("{}: DWARF error: {e}", ours_obj.display());
    }
    let read_from = symbols.debug_file().unwrap_or(ours_obj);
    assert_eq!(
        read_from.canonicalize().ok(),
        dwarf_file.canonicalize().ok(),
        "the DWARF must come from {}",
        dwarf_file.display()
    );
    let ours: Vec<Option<Vec<CmpFrame>>> = symbols
        .iter()
        .map(|sym| {
            let sym = sym?;
            if sym.frames.is_empty() {
                return None;
            }
            let mut chain: Vec<CmpFrame> = sym.frames.iter().map(ours_to_cmp).collect();
            // A line-table row outside every function DIE: name it from the symbol table,
            // as llvm-symbolizer does (and as the library's callers are told to).
            if let Some(outer) = chain.last_mut().filter(|f| f.function.is_none()) {
                outer.function = Some(String::from_utf8_lossy(sym.raw_name).into_owned());
            }
            Some(chain)
        })
        .collect();
    let ours_time = t.elapsed();

    let mut classes: BTreeMap<String, usize> = BTreeMap::new();
    let mut agreements: BTreeMap<&str, usize> = BTreeMap::new();
    let mut shown = 0;
    let mut agreed = 0;
    let mut multi_frame = 0;
    for ((addr, ours), llvm) in addrs.iter().zip(&ours).zip(&llvm) {
        if ours.as_ref().is_some_and(|o| o.len() > 1) {
            multi_frame += 1;
        }
        let mut llvm = llvm.clone();
        if !llvm_names {
            // Locations only; a nameless frame of ours is a disagreement of its own.
            if ours.iter().flatten().any(|frame| frame.function.is_none()) {
                *classes
                    .entry("a frame without a function name".to_string())
                    .or_default() += 1;
                continue;
            }
            for (theirs, ours) in llvm.iter_mut().zip(ours.iter().flatten()) {
                theirs.function.clone_from(&ours.function);
            }
        }
        let llvm = &llvm;
        match compare_chains(*addr, ours.as_deref(), llvm, &symbol_addrs) {
            Ok(kind) => {
                agreed += 1;
                *agreements.entry(kind).or_default() += 1;
            }
            Err(class) => {
                if shown < SHOWN_DISAGREEMENTS {
                    shown += 1;
                    eprintln!("  {addr:#x}: {class}");
                    let show = |who: &str, chain: &[CmpFrame]| {
                        for (i, f) in chain.iter().enumerate() {
                            eprintln!("    {who} #{i}: {f}");
                        }
                    };
                    match ours {
                        Some(chain) => show("stacksym       ", chain),
                        None => eprintln!("    stacksym        : no DWARF"),
                    }
                    show("llvm-symbolizer", llvm);
                }
                *classes.entry(class).or_default() += 1;
            }
        }
    }
    eprintln!(
        "{}: agreement {agreed}/{} = {:.2} % (required {:.1} %); {multi_frame} addresses \
         with inlined frames; llvm-symbolizer {llvm_time:.2?}, stacksym {ours_time:.2?} \
         (DWARF read from {})",
        dwarf_file.display(),
        addrs.len(),
        agreed as f64 * 100.0 / addrs.len() as f64,
        REQUIRED_PER_MILLE as f64 / 10.0,
        read_from.display(),
    );
    for (kind, count) in &agreements {
        eprintln!("    {count:6}  agree: {kind}");
    }
    for (class, count) in &classes {
        eprintln!("    {count:6}  DISAGREE: {class}");
    }
    Report {
        total: addrs.len(),
        agreed,
    }
}

#[test]
fn testdata_binaries_agree_with_llvm_symbolizer() {
    let test = "testdata_binaries_agree_with_llvm_symbolizer";
    let Some(tools) = support::reference_tools(test) else {
        return;
    };
    let mut paths = Vec::new();
    for name in [
        "c-pie-g",
        "cpp-O2-g",
        "c-wait",
        "c-aarch64",
        "c-s390x",
        "libversioned.so",
    ] {
        let path = support::bin(name);
        if !path.is_file() {
            writeln_stderr(format_args!(
                "{test}: SKIPPED {name}: {} does not exist",
                path.display()
            ));
            continue;
        }
        paths.push((name, path));
    }
    let cases: Vec<(String, Case<'_>)> = paths
        .iter()
        .map(|(name, path)| (name.to_string(), Case::same(path, TESTDATA_SAMPLES)))
        .collect();
    compare_all(&tools, &cases);
}

#[test]
fn libc_debug_file_agrees_with_llvm_symbolizer() {
    let test = "libc_debug_file_agrees_with_llvm_symbolizer";
    let Some(tools) = support::reference_tools(test) else {
        return;
    };
    let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
    if !libc.is_file() {
        writeln_stderr(format_args!(
            "{test}: SKIPPED: {} does not exist",
            libc.display()
        ));
        return;
    }
    let debug =
        match support::build_id_debug_file(&tools.readelf, libc, Path::new("/usr/lib/debug")) {
            Ok(debug) => debug,
            Err(why) => {
                writeln_stderr(format_args!("{test}: SKIPPED: {why}"));
                return;
            }
        };
    let debug_dir = Path::new("/usr/lib/debug");
    let case = Case {
        ours_debug_dirs: vec![debug_dir.to_path_buf()],
        dwarf_file: &debug,
        llvm_debug_dir: Some(debug_dir),
        ..Case::same(libc, LIBC_SAMPLES)
    };
    let report = compare(&tools, &case, |s| s.table == support::Table::Dynsym);
    assert!(
        report.agreed * 1000 >= report.total * REQUIRED_PER_MILLE,
        "{}: only {}/{} agree (see above)",
        debug.display(),
        report.agreed,
        report.total
    );
}

/// More of the system's glibc (libc6-dbg ships their debug files too): libm and the dynamic
/// loader, sampled from their debug files' full `.symtab` (static functions included), the
/// library given by its installed path to both sides.
#[test]
fn libm_and_ld_so_agree_with_llvm_symbolizer() {
    let test = "libm_and_ld_so_agree_with_llvm_symbolizer";
    let Some(tools) = support::reference_tools(test) else {
        return;
    };
    let debug_dir = Path::new("/usr/lib/debug");
    let mut found = Vec::new();
    for lib in [
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/ld-linux-x86-64.so.2",
    ] {
        let lib = Path::new(lib);
        match support::build_id_debug_file(&tools.readelf, lib, debug_dir) {
            Ok(debug) => found.push((lib, debug)),
            Err(why) => writeln_stderr(format_args!("{test}: SKIPPED {}: {why}", lib.display())),
        }
    }
    let cases: Vec<(String, Case<'_>)> = found
        .iter()
        .map(|(lib, debug)| {
            let case = Case {
                sample_from: debug,
                ours_debug_dirs: vec![debug_dir.to_path_buf()],
                dwarf_file: debug,
                llvm_debug_dir: Some(debug_dir),
                ..Case::same(lib, LIBC_SAMPLES / 2)
            };
            (lib.display().to_string(), case)
        })
        .collect();
    compare_all(&tools, &cases);
}

/// The DWARF fixtures of testdata/README.md ("DWARF fixtures"): gcc DWARF 2, 3 and 4 and
/// clang DWARF 5, C, C++ (templates, lambdas, inlining: lines.cpp) and Rust, each program in
/// three shapes from one link (unstripped; stripped + `.gnu_debuglink`; stripped + build-id
/// dir), compared with llvm-symbolizer on the unstripped twin; zlib-gnu `.zdebug_*`; zstd
/// (llvm-symbolizer 14 cannot read it: compared with `c-debuglink`, whose debug file holds
/// the same DWARF); a dwz pair (llvm-symbolizer 14 cannot follow `.gnu_debugaltlink`, so it
/// names no function: locations compared, and every frame of ours must be named).
#[test]
fn dwarf_fixtures_agree_with_llvm_symbolizer() {
    let test = "dwarf_fixtures_agree_with_llvm_symbolizer";
    let Some(tools) = support::reference_tools(test) else {
        return;
    };
    let debug_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/debug");
    let mut cases: Vec<(String, Case<'_>)> = Vec::new();
    let paths: Vec<(String, PathBuf)> = [
        "c-gcc-O2-g-dwarf2",
        "c-gcc-O2-g-dwarf3",
        "c-gcc-O2-g-dwarf4",
        "c-clang-O2-g",
        "cpp-clang-O2-g",
        "cpp-gcc-O2-g-dwarf4",
        "rust-O2-g",
        "c-compress-zlib-gnu",
        "c-compress-zstd",
        "c-debuglink",
        "c-dwz-a",
        "c-dwz-b",
        "c-split-dwarf",
        "c-split-dwp",
    ]
    .iter()
    .chain(&[
        "c-gcc-O2-g-dwarf4.debug",
        "c-gcc-O2-g-dwarf4.stripped-debuglink",
        "c-gcc-O2-g-dwarf4.stripped-buildid",
        "cpp-clang-O2-g.debug",
        "cpp-clang-O2-g.stripped-debuglink",
        "cpp-clang-O2-g.stripped-buildid",
        "rust-O2-g.debug",
        "rust-O2-g.stripped-debuglink",
        "rust-O2-g.stripped-buildid",
    ])
    .map(|name| (name.to_string(), support::bin(name)))
    .collect();
    let path = |name: &str| -> &Path {
        &paths
            .iter()
            .find(|(n, _)| n == name)
            .expect("listed above")
            .1
    };
    if let Some((name, missing)) = paths.iter().find(|(_, p)| !p.is_file()) {
        panic!(
            "{name}: {} is missing; run testdata/build.sh",
            missing.display()
        );
    }
    let build_id_files: Vec<PathBuf> = [
        "c-gcc-O2-g-dwarf4",
        "cpp-clang-O2-g",
        "rust-O2-g",
        "c-dwz-a",
        "c-dwz-b",
    ]
    .iter()
    .map(|name| {
        support::build_id_debug_file(&tools.readelf, path(name), &debug_dir)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    })
    .collect();
    for name in [
        "c-gcc-O2-g-dwarf2",
        "c-gcc-O2-g-dwarf3",
        "c-gcc-O2-g-dwarf4",
        "c-clang-O2-g",
        "cpp-clang-O2-g",
        "cpp-gcc-O2-g-dwarf4",
        "rust-O2-g",
        "c-compress-zlib-gnu",
        "c-split-dwarf",
        "c-split-dwp",
    ] {
        cases.push((name.to_string(), Case::same(path(name), TESTDATA_SAMPLES)));
    }
    for (i, program) in ["c-gcc-O2-g-dwarf4", "cpp-clang-O2-g", "rust-O2-g"]
        .iter()
        .enumerate()
    {
        let debug = path(&format!("{program}.debug"));
        let unstripped = path(program);
        let debuglink = path(&format!("{program}.stripped-debuglink"));
        let buildid = path(&format!("{program}.stripped-buildid"));
        cases.push((
            format!("{program}.stripped-debuglink"),
            Case {
                sample_from: debug,
                ours: debuglink,
                dwarf_file: debug,
                llvm: unstripped,
                ..Case::same(debuglink, TESTDATA_SAMPLES)
            },
        ));
        cases.push((
            format!("{program}.stripped-buildid"),
            Case {
                sample_from: debug,
                ours: buildid,
                ours_debug_dirs: vec![debug_dir.clone()],
                dwarf_file: &build_id_files[i],
                llvm: unstripped,
                ..Case::same(buildid, TESTDATA_SAMPLES)
            },
        ));
    }
    cases.push((
        "c-compress-zstd".to_string(),
        Case {
            llvm: path("c-debuglink"),
            ..Case::same(path("c-compress-zstd"), TESTDATA_SAMPLES)
        },
    ));
    for (i, name) in ["c-dwz-a", "c-dwz-b"].iter().enumerate() {
        cases.push((
            name.to_string(),
            Case {
                sample_from: &build_id_files[3 + i],
                ours_debug_dirs: vec![debug_dir.clone()],
                dwarf_file: &build_id_files[3 + i],
                llvm_debug_dir: Some(&debug_dir),
                llvm_names: false,
                ..Case::same(path(name), TESTDATA_SAMPLES)
            },
        ));
    }
    compare_all(&tools, &cases);
}

#[test]
fn inlined_scale_in_checksum() {
    let elf = ElfFile::open(support::bin("c-pie-g")).expect("committed test binary");
    let sections = DwarfSections::load(&Arc::new(elf))
        .expect("readable")
        .expect("c-pie-g has DWARF");
    let dwarf = DwarfInfo::new(&sections).expect("well-formed DWARF");
    for addr in 0x12c4..0x12ce {
        let frames = dwarf
            .frames(VirtAddr(addr))
            .expect("well-formed")
            .expect("covered");
        let names: Vec<_> = frames
            .iter()
            .map(|f| f.function.as_ref().map(|n| n.demangled.as_str()))
            .collect();
        assert_eq!(names, [Some("scale"), Some("checksum")], "at {addr:#x}");
        assert!(frames[0]
            .file
            .as_deref()
            .is_some_and(|f| f.ends_with("demo.c")));
        assert!(frames[1].line.is_some(), "the call site of scale()");
    }
    // Far outside any unit: no DWARF, not an error.
    assert_eq!(dwarf.frames(VirtAddr(0xdead_0000_0000)).expect("ok"), None);
}

#[test]
fn file_without_dwarf_has_no_sections() {
    // c-nopie is built without -g.
    let elf = ElfFile::open(support::bin("c-nopie")).expect("committed test binary");
    if elf.section_data(".debug_info").expect("readable").is_some() {
        writeln_stderr(format_args!(
            "file_without_dwarf_has_no_sections: SKIPPED: c-nopie has .debug_info"
        ));
        return;
    }
    assert!(DwarfSections::load(&Arc::new(elf))
        .expect("readable")
        .is_none());
}

#[test]
fn last_address_is_not_covered_and_does_not_panic() {
    let elf = ElfFile::open(support::bin("c-pie-g")).expect("committed test binary");
    let sections = DwarfSections::load(&Arc::new(elf))
        .expect("readable")
        .expect("c-pie-g has DWARF");
    let dwarf = DwarfInfo::new(&sections).expect("well-formed DWARF");
    assert_eq!(dwarf.frames(VirtAddr(u64::MAX)).expect("ok"), None);
    assert_eq!(dwarf.frames(VirtAddr(0)).expect("ok"), None);
}

/// `c-pie-g` with zlib-compressed debug sections (by `objcopy`), and the file offset of
/// `.debug_info`'s compression header. `None` (after printing SKIPPED) without objcopy.
fn compressed_copy(test: &str, dir: &Path) -> Option<(Vec<u8>, usize)> {
    use object::read::elf::{FileHeader, SectionHeader};
    let objcopy = support::require_tool(test, "objcopy", "binutils")?;
    let out = dir.join("c-pie-g-zlib");
    let status = Command::new(objcopy)
        .arg("--compress-debug-sections=zlib")
        .arg(support::bin("c-pie-g"))
        .arg(&out)
        .status()
        .expect("running objcopy");
    assert!(
        status.success(),
        "objcopy --compress-debug-sections=zlib failed"
    );
    let bytes = std::fs::read(&out).expect("objcopy's output");
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&bytes[..])
        .expect("c-pie-g is ELF64");
    let endian = header.endian().expect("known endianness");
    let sections = header
        .sections(endian, &bytes[..])
        .expect("section headers");
    let (_, info) = sections
        .section_by_name(endian, b".debug_info")
        .expect("c-pie-g has .debug_info");
    assert!(
        info.sh_flags(endian).contains(object::elf::SHF_COMPRESSED),
        "objcopy compressed .debug_info"
    );
    let offset = info.sh_offset(endian) as usize;
    Some((bytes, offset))
}

#[test]
fn compressed_sections_read_like_plain_ones() {
    let test = "compressed_sections_read_like_plain_ones";
    let dir = tempfile::tempdir().expect("temp dir");
    let Some((bytes, _)) = compressed_copy(test, dir.path()) else {
        return;
    };
    let plain = ElfFile::open(support::bin("c-pie-g")).expect("committed test binary");
    let zlib = ElfFile::from_bytes("c-pie-g-zlib", bytes).expect("ELF");
    assert_eq!(
        plain.section_data(".debug_info").expect("ok"),
        zlib.section_data(".debug_info").expect("decompresses"),
    );
    let plain_sections = DwarfSections::load(&Arc::new(plain))
        .expect("ok")
        .expect("DWARF");
    let zlib_sections = DwarfSections::load(&Arc::new(zlib))
        .expect("ok")
        .expect("DWARF");
    assert_eq!(plain_sections.heap_bytes(), 0, "borrowed from the mapping");
    assert!(
        zlib_sections.heap_bytes() > 0,
        "decompressed into owned buffers"
    );
    let plain_dwarf = DwarfInfo::new(&plain_sections).expect("ok");
    let zlib_dwarf = DwarfInfo::new(&zlib_sections).expect("ok");
    for addr in (0x1000..0x1600).step_by(3) {
        assert_eq!(
            plain_dwarf.frames(VirtAddr(addr)).expect("ok"),
            zlib_dwarf.frames(VirtAddr(addr)).expect("ok"),
            "at {addr:#x}"
        );
    }
}

#[test]
fn decompression_bomb_and_truncated_section_are_errors() {
    let test = "decompression_bomb_and_truncated_section_are_errors";
    let dir = tempfile::tempdir().expect("temp dir");
    let Some((bytes, chdr)) = compressed_copy(test, dir.path()) else {
        return;
    };
    // Elf64_Chdr: ch_type (4), ch_reserved (4), ch_size (8), ch_addralign (8); little-endian.
    let mut bomb = bytes.clone();
    bomb[chdr + 8..chdr + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let elf = ElfFile::from_bytes("bomb", bomb).expect("ELF");
    let err = DwarfSections::load(&Arc::new(elf)).expect_err("a 1 TiB .debug_info is refused");
    let shown = err.to_string();
    assert!(
        shown.starts_with("bomb: ") && shown.contains("decompression bomb"),
        "{shown}"
    );

    // The stated size is a little larger than what the zlib stream holds.
    let mut short = bytes.clone();
    let size = u64::from_le_bytes(short[chdr + 8..chdr + 16].try_into().expect("8 bytes"));
    short[chdr + 8..chdr + 16].copy_from_slice(&(size + 1).to_le_bytes());
    let elf = ElfFile::from_bytes("short", short).expect("ELF");
    let err = DwarfSections::load(&Arc::new(elf)).expect_err("size mismatch");
    assert!(err.to_string().starts_with("short: "), "{err}");

    // A corrupted zlib stream.
    let mut corrupt = bytes;
    for b in &mut corrupt[chdr + 24..chdr + 64] {
        *b = 0xff;
    }
    let elf = ElfFile::from_bytes("corrupt", corrupt).expect("ELF");
    let err = DwarfSections::load(&Arc::new(elf)).expect_err("invalid zlib data");
    assert!(err.to_string().starts_with("corrupt: "), "{err}");
}

/// One `Symbolizer` shared by four threads, each symbolizing the same batch of rust-O2-g
/// (many units, deep inline chains) at once: the file's DWARF state is shared behind its
/// lock, and every thread must get what one thread alone gets.
#[test]
fn threads_sharing_a_symbolizer_get_the_frames_of_one() {
    let test = "threads_sharing_a_symbolizer_get_the_frames_of_one";
    let Some(tools) = support::reference_tools(test) else {
        return;
    };
    let path = support::bin("rust-O2-g");
    let symbols = support::readelf_symbols(&tools.readelf, &path);
    let addrs: Vec<u64> = support::sample_function_addrs(&symbols, |_| true, 3_000, 11)
        .iter()
        .map(|s| s.addr)
        .collect();
    let answers = |symbolizer: &Symbolizer| {
        let symbols = symbolizer
            .symbolize(
                &Source::Elf { path: &path },
                Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        symbols
            .iter()
            .map(|s| s.map(|s| (s.name.to_string(), s.offset, s.frames.to_vec())))
            .collect::<Vec<_>>()
    };
    let alone = answers(&Symbolizer::builder().build());
    assert!(
        alone.iter().flatten().any(|s| s.2.len() > 1),
        "inlined frames"
    );
    let shared = Symbolizer::builder().build();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| answers(&shared))).collect();
        for handle in handles {
            let got = handle.join().expect("no panic");
            assert!(got == alone, "a thread got other answers");
        }
    });
    assert_eq!(shared.stats().open_files, 1, "one file, shared");
}

/// Links the relocatable `ko` into an executable whose sections sit at the addresses
/// stacksym lays them out at ([`ElfFile::relocatable_sections`]; a linker script names each
/// one), so that the linker, not stacksym, applies the DWARF's relocations: llvm-symbolizer
/// on this twin is the reference for stacksym on `ko` at the same addresses. `ld` is the
/// linker for `ko`'s machine (binutils `ld`, or `aarch64-linux-gnu-ld`).
fn linked_twin(ld: &Path, ko: &Path, out_dir: &Path) -> PathBuf {
    let elf = ElfFile::open(ko).unwrap_or_else(|e| panic!("{}: {e}", ko.display()));
    let sections = elf.relocatable_sections();
    assert!(!sections.is_empty(), "{}: not relocatable", ko.display());
    let mut script = String::from("SECTIONS {\n");
    for section in sections {
        script.push_str(&format!(
            "  {name} {addr:#x} : {{ *({name}) }}\n",
            name = section.name,
            addr = section.addr.0
        ));
    }
    script.push_str("}\n");
    let stem = ko.file_name().unwrap().to_str().unwrap();
    let script_path = out_dir.join(format!("{stem}.lds"));
    std::fs::write(&script_path, &script).unwrap();
    let twin = out_dir.join(format!("{stem}.linked"));
    let out = Command::new(ld)
        .args([
            "-o",
            twin.to_str().unwrap(),
            "-T",
            script_path.to_str().unwrap(),
        ])
        .args(["-e", "0", "--unresolved-symbols=ignore-all", "--no-relax"])
        .arg(ko)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", ld.display()));
    assert!(
        out.status.success(),
        "{} {}: {}\nscript:\n{script}",
        ld.display(),
        ko.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // The twin's sections must be where the script put them, or the comparison means nothing.
    let placed = readelf_sections(&twin);
    for section in sections.iter().filter(|s| s.executable) {
        let at = placed
            .iter()
            .find(|(name, _, _)| *name == section.name)
            .map(|&(_, addr, _)| addr);
        assert_eq!(
            at,
            Some(section.addr.0),
            "{} in {}",
            section.name,
            twin.display()
        );
    }
    twin
}

/// `(name, address, size)` of every section, by `readelf -SW`.
fn readelf_sections(path: &Path) -> Vec<(String, u64, u64)> {
    support::run("readelf", &["-SW", path.to_str().unwrap()])
        .lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once(']')?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let hex = |i: usize| u64::from_str_radix(fields.get(i)?, 16).ok();
            Some((fields.first()?.to_string(), hex(2)?, hex(4)?))
        })
        .collect()
}

/// The linker for `ko`'s machine, or `None` after printing SKIPPED.
fn linker_for(test: &str, ko: &Path) -> Option<PathBuf> {
    let machine = ElfFile::open(ko).unwrap().header().machine;
    match machine {
        62 => support::require_tool(test, "ld", "binutils"),
        183 => support::require_tool(test, "aarch64-linux-gnu-ld", "binutils-aarch64-linux-gnu"),
        other => panic!("{}: no linker known for machine {other}", ko.display()),
    }
}

/// Kernel modules (`testdata/bin/kmod-demo*.ko`: `ld -r` output with `.rela.debug_*`
/// sections, built by testdata/build.sh) agree with llvm-symbolizer on a twin the linker
/// relocated (see [`linked_twin`]): DWARF 5 and 4 x86_64, aarch64 (its own relocation
/// types), and the stripped module whose DWARF is in a `.ko.debug` file found by build-id
/// (only `--only-keep-debug`'s copy has the DWARF: its layout must be the module's).
#[test]
fn kernel_modules_agree_with_their_linked_twins() {
    let test = "kernel_modules_agree_with_their_linked_twins";
    let Some(tools) = support::reference_tools(test) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let debug_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/debug");
    let mut twins = Vec::new();
    for name in [
        "kmod-demo.ko",
        "kmod-demo-dwarf4.ko",
        "kmod-demo-aarch64.ko",
    ] {
        let ko = support::bin(name);
        let Some(ld) = linker_for(test, &ko) else {
            continue;
        };
        twins.push((name, ko.clone(), linked_twin(&ld, &ko, tmp.path())));
    }
    let mut cases: Vec<(String, Case<'_>)> = twins
        .iter()
        .map(|(name, ko, twin)| {
            let case = Case {
                sample_from: twin,
                llvm: twin,
                ..Case::same(ko, TESTDATA_SAMPLES)
            };
            (name.to_string(), case)
        })
        .collect();
    let stripped = support::bin("kmod-demo.stripped.ko");
    let stripped_debug = support::build_id_debug_file(&tools.readelf, &stripped, &debug_dir)
        .unwrap_or_else(|e| panic!("kmod-demo.stripped.ko: {e}"));
    if let Some((_, _, twin)) = twins.iter().find(|(name, _, _)| *name == "kmod-demo.ko") {
        cases.push((
            "kmod-demo.stripped.ko".to_string(),
            Case {
                sample_from: twin,
                ours: &stripped,
                ours_debug_dirs: vec![debug_dir.clone()],
                dwarf_file: &stripped_debug,
                llvm: twin,
                llvm_debug_dir: None,
                llvm_names: true,
                samples: TESTDATA_SAMPLES,
            },
        ));
    }
    compare_all(&tools, &cases);
}

/// The whole path of a module address, as a tracer has it: kallsyms (the committed
/// testdata/kallsyms/kmod-demo.kallsyms) says the address is in `kmod_demo`, the module's
/// sections are where a sysfs copy says (testdata/kmod/sys/module/kmod_demo/sections/, each
/// section loaded apart, as the kernel does), and `KernelModules` finds `kmod_demo.ko` in a
/// directory (testdata/bin, as `kmod-demo.ko`: `-` and `_` alike). Sampled from the twin's
/// functions and moved to their running addresses by the test's own arithmetic (section
/// address in sysfs + offset in the section); frames compared with llvm-symbolizer on the twin.
/// Every section of code is sampled but `.init.text` (see below).
#[test]
fn module_addresses_from_kallsyms_and_sysfs_agree_with_llvm_symbolizer() {
    use stacksym::kernel::KernelModules;
    use stacksym::{KernelSource, Source};
    let test = "module_addresses_from_kallsyms_and_sysfs_agree_with_llvm_symbolizer";
    let Some(tools) = support::reference_tools(test) else {
        return;
    };
    let Some(ld) = support::require_tool(test, "ld", "binutils") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let tmp = tempfile::tempdir().unwrap();
    let twin = linked_twin(&ld, &support::bin("kmod-demo.ko"), tmp.path());
    let sysfs = root.join("kmod/sys/module");
    let sections = readelf_sections(&twin);
    let symbols = support::readelf_symbols(&tools.readelf, &twin);
    // Not `.init.text`: the kernel frees it once the module's init function returns, and
    // kallsyms then no longer lists its symbols (the fixture is of a module past init).
    let init_text = sections
        .iter()
        .find(|(name, _, _)| name == ".init.text")
        .map(|&(_, start, size)| start..start + size)
        .expect("the twin has .init.text");
    let sampled =
        support::sample_function_addrs(&symbols, |sym| !init_text.contains(&sym.value), 2_000, 7);
    let twin_addrs: Vec<u64> = sampled.iter().map(|s| s.addr).collect();
    let running: Vec<u64> = twin_addrs
        .iter()
        .map(|&addr| {
            let (name, start, _) = sections
                .iter()
                .find(|(_, start, size)| (*start..start + size).contains(&addr))
                .unwrap_or_else(|| panic!("{addr:#x} in no section of the twin"));
            let file = sysfs.join("kmod_demo/sections").join(name);
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let base = u64::from_str_radix(text.trim().trim_start_matches("0x"), 16).unwrap();
            base + (addr - start)
        })
        .collect();

    let kallsyms = root.join("kallsyms/kmod-demo.kallsyms");
    let modules = KernelModules::new(vec![root.join("bin")], &sysfs);
    let symbolizer = Symbolizer::builder().demangle(false).build();
    let source = Source::Kernel(KernelSource {
        kallsyms: Some(&kallsyms),
        modules: Some(&modules),
        ..KernelSource::default()
    });
    let ours = symbolizer
        .symbolize(
            &source,
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&running)),
        )
        .unwrap();
    assert!(modules.problems().is_empty(), "{:?}", modules.problems());
    let llvm = llvm_chains(&tools.llvm_symbolizer, &twin, None, &twin_addrs);
    let symbol_addrs = symbol_addrs_of(symbols.iter());
    let mut agreed = 0;
    let mut with_lines = 0;
    for (i, (frame, llvm)) in ours.iter().zip(&llvm).enumerate() {
        let frame = frame.unwrap_or_else(|| panic!("{:#x}: not symbolized", running[i]));
        assert_eq!(frame.kernel_module, Some("kmod_demo"), "{:#x}", running[i]);
        let mut chain: Vec<CmpFrame> = frame.frames.iter().map(ours_to_cmp).collect();
        if let Some(outer) = chain.last_mut().filter(|f| f.function.is_none()) {
            outer.function = Some(frame.name.to_string());
        }
        with_lines += usize::from(!chain.is_empty());
        let chain = (!chain.is_empty()).then_some(chain);
        match compare_chains(twin_addrs[i], chain.as_deref(), llvm, &symbol_addrs) {
            Ok(_) => agreed += 1,
            Err(why) => eprintln!("  {:#x} (twin {:#x}): {why}", running[i], twin_addrs[i]),
        }
    }
    eprintln!(
        "{test}: {agreed}/{} agree with llvm-symbolizer, {with_lines} with source lines",
        running.len()
    );
    assert_eq!(
        with_lines,
        running.len(),
        "every sampled address has DWARF lines"
    );
    assert!(agreed * 1000 >= running.len() * REQUIRED_PER_MILLE);
}

/// `SymbolizerBuilder::threads(2)` reads a batch's DWARF ahead on two threads
/// (`DwarfInfo::prepare`: units, line tables and function ranges parsed by another thread,
/// through sections of its own) and demangles its names on two threads. The answers must
/// be one thread's, field for field and frame for frame. Files: the system's `libc.so.6`
/// (its debug file found by build-id: 1,900 zlib-compressed units, so both threads parse
/// many), the toolchain's `librustc_driver-*.so` (no DWARF; thousands of v0 names per
/// batch, so both threads demangle) and every ELF file of testdata/bin (a few units each;
/// the split-DWARF and dwz ones keep their functions lazy, the rest are read ahead).
/// Addresses: 5,000 random ones inside each file's functions (`.symtab`, else `.dynsym`),
/// in one batch.
#[test]
fn two_threads_answer_as_one_thread() {
    use object::{Object, ObjectSymbol};
    let test = "two_threads_answer_as_one_thread";
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/bin");
    let mut files: Vec<PathBuf> = std::fs::read_dir(bin)
        .expect("testdata/bin")
        .flatten()
        .map(|entry| entry.path())
        .collect();
    files.sort();
    let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
    if libc.is_file() {
        files.push(libc.to_path_buf());
    } else {
        support::skip_or_fail(test, &format!("{} does not exist", libc.display()));
    }
    let rustc_driver = support::rust_sysroot()
        .and_then(|sysroot| support::find_file(&sysroot.join("lib"), "librustc_driver-", ".so"));
    match rustc_driver {
        Some(path) => files.push(path),
        None => support::skip_or_fail(test, "no librustc_driver-*.so in the Rust sysroot"),
    }
    let one = Symbolizer::builder().build();
    let two = Symbolizer::builder().threads(2).build();
    let mut compared = 0;
    for path in &files {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        let Ok(object) = object::File::parse(&*bytes) else {
            continue;
        };
        let functions: Vec<(u64, u64)> = {
            let table: Vec<_> = if object.symbols().next().is_some() {
                object.symbols().collect()
            } else {
                object.dynamic_symbols().collect()
            };
            table
                .iter()
                .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
                .map(|s| (s.address(), s.size()))
                .collect()
        };
        if functions.is_empty() {
            continue;
        }
        let mut random = support::XorShift::new(seed_for(path));
        let addrs: Vec<u64> = (0..5_000)
            .map(|_| {
                let (start, size) = functions[random.next_u64() as usize % functions.len()];
                start + random.next_u64() % size
            })
            .collect();
        let source = Source::Elf { path };
        let (Ok(a), Ok(b)) = (
            one.symbolize(
                &source,
                Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
            ),
            two.symbolize(
                &source,
                Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
            ),
        ) else {
            continue;
        };
        for (i, addr) in addrs.iter().enumerate() {
            assert_eq!(
                a.get(i).map(|s| s.to_owned()),
                b.get(i).map(|s| s.to_owned()),
                "{} at {addr:#x}",
                path.display()
            );
            assert_eq!(a.lines(i), b.lines(i), "{} at {addr:#x}", path.display());
        }
        compared += 1;
    }
    assert!(compared >= 10, "only {compared} files compared");
}
