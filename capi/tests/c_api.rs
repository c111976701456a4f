//! The C API from C and from Python, against the Rust API's answers.
//!
//! - `c_program_gives_the_rust_apis_answers_under_valgrind`: tests/c/stacksym_test.c, compiled
//!   here with the system's `cc` against include/stacksym.h and the staticlib (as bpftrace
//!   links blazesym's), is given a script of requests on committed testdata binaries (ELF
//!   with DWARF, C++ and Rust names, a build-id in testdata/debug, kallsyms, a kernel
//!   module's `.ko`, name lookups) and on the system's libc (a file nobody here wrote); what it
//!   prints must be what this file prints from the Rust API for the same requests. Its
//!   `self` request checks this process (symbolize, normalize and back, unwinding its own
//!   stack live and as a perf sample's copy, four threads on one handle, error codes and
//!   messages). It runs under valgrind (`--leak-check=full`, any
//!   error or leak fails), so every result's one block must be freed by its one call.
//! - `c_program_merges_python_frames`: the same program's `python PID` request on a stopped
//!   CPython process (testdata/python/parked.py): every thread's merged stack
//!   (`stacksym_python_unwind_process`), its Python frames the Rust API's, under valgrind.
//! - `python_ctypes_loads_the_cdylib`: tests/ctypes_demo.py loads libstacksym_capi.so with
//!   ctypes and symbolizes an address of testdata/bin/c-pie-g.
//! - `header_compiles_as_c_and_cxx`: the committed header, with `-Wall -Wextra -Werror`.
//! - `committed_header_is_what_cbindgen_generates`: the committed header, byte for byte, is
//!   what cbindgen 0.29.4 (a dev-dependency, as a library) generates from capi/src.
//! - `readme_c_snippet_builds_and_answers`: README's C snippet against this build's static
//!   library; `cinstall_prefix_links_through_pkg_config`: the same snippet against the library
//!   `cargo cinstall` (cargo-c) installs into a fresh prefix, built through pkg-config, shared
//!   (NEEDED is the SONAME) and static.
//! - `every_constant_has_its_name`, `version_constants_are_the_packages`: the header's
//!   macros against the `stacksym_*_name` functions and the package version.
//!
//! The libraries are the ones cargo builds for this package's own tests (the crate's lib
//! target, in all its crate types, is built before its integration tests), found beside the
//! test binary in `target/<profile>/deps/`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stacksym::elf::{Binding, ElfFile, SymbolKind, SymbolOrigin};
use stacksym::kernel::KernelModules;
use stacksym::symbolize::{FindOptions, FoundIn, NamePattern, SymbolMatch};
use stacksym::{
    AbsAddr, ErrorKind, FileOffset, InlineFrame, Input, KernelSource, NameOrigin, NotFound, Source,
    Symbolizer, Symbols, VirtAddr,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("capi/ is inside the repository")
        .to_path_buf()
}

fn testdata(path: &str) -> PathBuf {
    repo().join("testdata").join(path)
}

/// `target/<profile>/deps`, where this test binary lies (`c_api-HASH`) and where cargo wrote
/// the package's library, in every crate type of capi/Cargo.toml, before building this
/// test against it (cargo copies the library up to `target/<profile>` only when the library
/// itself was asked for, so that copy may be missing or older).
fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .expect("the test binary lies in target/<profile>/deps")
        .to_path_buf()
}

/// The built library `name` (`libstacksym_capi.a` or `.so`) of this build.
fn capi_lib(name: &str) -> PathBuf {
    let path = deps_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing: cargo builds the crate's library before its tests \
         (cargo test -p stacksym-capi)",
        path.display()
    );
    path
}

/// Writes a line to the process's stderr directly, not through the test harness's capture, so
/// that a skip shows even when the test passes (as tests/support's `writeln_stderr`).
fn note(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut err = std::io::stderr();
    let _ = err.write_fmt(args);
    let _ = err.write_all(b"\n");
}

/// `name`'s path in `$PATH`; without it, `None` after saying loudly what `test` skips, or,
/// under CI (`CI` set, as .ci/run runs, which installs `package`), a failure: a test that
/// needs a tool never passes silently without it.
fn tool(test: &str, name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        let why = format!("{name} not found; install {package} (.ci/run does)");
        if std::env::var_os("CI").is_some() {
            panic!("{test}: {why}; CI is expected to provide it");
        }
        note(format_args!("{test}: SKIPPED: {why}"));
    }
    found
}

/// C's `%#" PRIx64`: `0x` before every value but 0.
fn hx(value: u64) -> String {
    if value == 0 {
        "0".to_string()
    } else {
        format!("{value:#x}")
    }
}

fn hex_bytes(bytes: Option<&[u8]>) -> String {
    match bytes {
        Some(bytes) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        None => "-".to_string(),
    }
}

fn or_dash(text: Option<&str>) -> &str {
    text.unwrap_or("-")
}

/// The C API's `STACKSYM_ORIGIN_*` for `origin` (its documented constants).
fn origin_code(origin: NameOrigin) -> u32 {
    match origin {
        NameOrigin::Table(SymbolOrigin::Symtab) => 1,
        NameOrigin::Table(SymbolOrigin::Dynsym) => 2,
        NameOrigin::Table(SymbolOrigin::Plt) => 3,
        NameOrigin::Dwarf => 4,
        NameOrigin::Kallsyms => 5,
        NameOrigin::PerfMap => 6,
        _ => 7,
    }
}

/// The frame lines stacksym_test.c prints: inlined frames by their DWARF name, the outer
/// frame of a symbol by the symbol's name (as llvm-symbolizer names them).
fn print_frames(out: &mut String, frames: &[InlineFrame], outer_name: Option<&str>) {
    for frame in frames {
        let function = match (frame.inlined, outer_name) {
            (false, Some(name)) => Some(name),
            _ => frame.function.as_ref().map(|f| f.demangled.as_str()),
        };
        writeln!(
            out,
            "  {} {}:{}:{} d={}{}",
            function.unwrap_or("??"),
            frame.file.as_deref().unwrap_or("??"),
            frame.line.unwrap_or(0),
            frame.column.unwrap_or(0),
            frame.discriminator.unwrap_or(0),
            if frame.inlined { " inlined" } else { "" }
        )
        .unwrap();
    }
}

/// What stacksym_test.c prints for a `stacksym_syms` of these answers.
fn print_symbols(symbols: &Symbols, inputs: &[u64]) -> String {
    let mut out = String::new();
    if let Some(e) = symbols.debug_error() {
        writeln!(out, "debug error: {e}").unwrap();
    }
    for (i, result) in symbols.results().enumerate() {
        let fo = |offset: Option<u64>| offset.map_or("-".to_string(), hx);
        match result {
            Ok(sym) => {
                writeln!(
                    out,
                    "{} reason=0 {}+{} size={} addr={} origin={} data={} raw={} ver={}{} \
                     symfile={} kmod={} bid={} module={} fo={}",
                    hx(inputs[i]),
                    sym.name,
                    hx(sym.offset),
                    hx(sym.size),
                    hx(sym.addr.raw()),
                    origin_code(sym.origin),
                    i32::from(sym.kind == SymbolKind::Data),
                    String::from_utf8_lossy(sym.raw_name),
                    or_dash(sym.version),
                    if sym.version_hidden { "(hidden)" } else { "" },
                    sym.symbol_file.display(),
                    or_dash(sym.kernel_module),
                    hex_bytes(sym.build_id),
                    sym.module.display(),
                    fo(sym.file_offset().map(|o| o.0)),
                )
                .unwrap();
                let outer = (!matches!(sym.origin, NameOrigin::Dwarf)).then_some(sym.name);
                print_frames(&mut out, sym.frames, outer);
            }
            Err(why) => {
                let (reason, detail) = match why {
                    NotFound::NoSymbol => (1, None),
                    NotFound::Unmapped => (2, None),
                    NotFound::NotInFile(kind) => (3, Some(format!("{kind:?}"))),
                    NotFound::FileError(e) => (4, Some(e.to_string())),
                    NotFound::KernelAddrsHidden(e) => (5, Some(e.to_string())),
                    NotFound::NoKernelSource => (6, None),
                    other => (7, Some(format!("{other:?}"))),
                };
                writeln!(
                    out,
                    "{} reason={reason} detail={} module={} fo={}",
                    hx(inputs[i]),
                    or_dash(detail.as_deref()),
                    symbols
                        .module(i)
                        .map_or("-".to_string(), |m| m.display().to_string()),
                    fo(symbols.file_offset(i).map(|o| o.0)),
                )
                .unwrap();
                print_frames(&mut out, symbols.lines(i), None);
            }
        }
    }
    out
}

/// What stacksym_test.c prints for a `stacksym_matches`.
fn print_matches(found: &[SymbolMatch]) -> String {
    let mut out = String::new();
    for m in found {
        writeln!(
            out,
            "{} {} addr={} size={} fo={} data={} bind={} in={} ver={}{} kmod={} file={} aliases={}",
            m.name,
            m.demangled,
            hx(m.addr.raw()),
            hx(m.size),
            m.file_offset.map_or("-".to_string(), |o| hx(o.0)),
            i32::from(m.kind == SymbolKind::Data),
            match m.binding {
                Binding::Global => 0,
                Binding::Weak => 1,
                Binding::Local => 2,
            },
            match m.found_in {
                FoundIn::Symtab => 0,
                FoundIn::Dynsym => 1,
                FoundIn::DebugFile => 2,
                FoundIn::MiniDebugInfo => 3,
                FoundIn::Kallsyms => 4,
                _ => 5,
            },
            or_dash(m.version.as_deref()),
            if m.version_hidden { "(hidden)" } else { "" },
            or_dash(m.kernel_module.as_deref()),
            m.file.display(),
            m.aliases.join(","),
        )
        .unwrap();
    }
    out
}

/// A script for stacksym_test.c and, per request, what it must print (`None` for the
/// `self` request, whose lines must all be `ok ...`).
fn script() -> Vec<(String, Option<String>)> {
    let symbolizer = Symbolizer::builder()
        .debug_dirs(vec![testdata("debug")])
        .build();
    let mut requests = Vec::new();
    let elf = |path: &Path, offsets: bool, addrs: &[u64]| {
        let input = if offsets {
            Input::FileOffsets(FileOffset::from_raw_slice(addrs))
        } else {
            Input::VirtAddrs(VirtAddr::from_raw_slice(addrs))
        };
        let symbols = symbolizer.symbolize(&Source::Elf { path }, input).unwrap();
        let words: Vec<String> = addrs.iter().map(|a| format!("{a:#x}")).collect();
        let kind = if offsets { "offset" } else { "virt" };
        (
            format!("elf {} {kind} {}", path.display(), words.join(" ")),
            Some(print_symbols(&symbols, addrs)),
        )
    };
    // C with an inlined call (scale into checksum, as README shows), and an address in
    // no symbol.
    requests.push(elf(&testdata("bin/c-pie-g"), false, &[0x12c4, 0x10]));
    // C++ names by file offset (README's checked_div), Rust names, a non-PIE binary.
    requests.push(elf(&testdata("bin/cpp-O2-g"), true, &[0x1460, 0x1465]));
    requests.push(elf(
        &testdata("bin/c-nopie"),
        false,
        &[0x401000, 0x401130, 0x1],
    ));
    let symbolizer2 = Symbolizer::builder()
        .debug_dirs(vec![testdata("debug")])
        .build();
    // `find` lists one match per name; `findm` (STACKSYM_FIND_MERGE_ALIASES) one per address.
    let find_with = |path: &Path, pattern: &str, merge: bool| {
        let found = symbolizer2
            .find_addresses_with(
                &Source::Elf { path },
                &NamePattern::parse(pattern),
                FindOptions::default().merge_aliases(merge),
            )
            .unwrap();
        let verb = if merge { "findm" } else { "find" };
        (format!("{verb} {} {pattern}", path.display()), found)
    };
    let find = |path: &Path, pattern: &str| find_with(path, pattern, false);
    let rust = testdata("bin/rust-O2-g");
    let (line, rust_main) = find(&rust, "*main*");
    assert!(!rust_main.is_empty(), "rust-O2-g has main functions");
    let rust_addrs: Vec<u64> = rust_main.iter().take(4).map(|m| m.addr.raw() + 1).collect();
    requests.push((line, Some(print_matches(&rust_main))));
    requests.push(elf(&rust, false, &rust_addrs));
    for (path, pattern) in [
        ("bin/cpp-O2-g", "stacksym_demo::checked_div"),
        ("bin/cpp-O2-g", "*checked*"),
        ("bin/c-nopie", "demo_impl"),
        ("bin/libversioned.so", "*"),
    ] {
        let (line, found) = find(&testdata(path), pattern);
        assert!(!found.is_empty(), "{line}");
        requests.push((line, Some(print_matches(&found))));
    }
    // By build-id, from testdata/debug (the debug dir the program is given).
    let c_buildid = testdata("bin/c-buildid");
    let build_id = ElfFile::open(&c_buildid)
        .unwrap()
        .build_id()
        .expect("c-buildid has a build-id")
        .to_vec();
    let (_, main) = find(&c_buildid, "main");
    let addrs = [main[0].addr.raw() + 4, main[0].addr.raw() + 8];
    let symbols = symbolizer
        .symbolize(
            &Source::BuildId {
                build_id: &build_id,
            },
            Input::VirtAddrs(VirtAddr::from_raw_slice(&addrs)),
        )
        .unwrap();
    assert!(symbols.get(0).is_some(), "main by build-id: {symbols:?}");
    requests.push((
        format!(
            "buildid {} virt {:#x} {:#x}",
            hex_bytes(Some(&build_id)),
            addrs[0],
            addrs[1]
        ),
        Some(print_symbols(&symbols, &addrs)),
    ));
    // The kernel: a kallsyms copy; a module's addresses through its .ko.
    let synthetic = testdata("kallsyms/synthetic.txt");
    let addrs = [0xffff_ffff_8100_0010, 0xffff_ffff_8100_0104, 0x1];
    let source = Source::Kernel(KernelSource {
        kallsyms: Some(&synthetic),
        ..KernelSource::default()
    });
    let symbols = symbolizer
        .symbolize(&source, Input::AbsAddrs(AbsAddr::from_raw_slice(&addrs)))
        .unwrap();
    requests.push((
        format!(
            "kernel {} - - {:#x} {:#x} {:#x}",
            synthetic.display(),
            addrs[0],
            addrs[1],
            addrs[2]
        ),
        Some(print_symbols(&symbols, &addrs)),
    ));
    let kmod_kallsyms = testdata("kallsyms/kmod-demo.kallsyms");
    let modules = KernelModules::new(vec![testdata("bin")], testdata("kmod/sys/module"));
    let addrs = [0xffff_ffff_c0a0_1083];
    let source = Source::Kernel(KernelSource {
        kallsyms: Some(&kmod_kallsyms),
        modules: Some(&modules),
        ..KernelSource::default()
    });
    let symbols = symbolizer
        .symbolize(&source, Input::AbsAddrs(AbsAddr::from_raw_slice(&addrs)))
        .unwrap();
    let sym = symbols.get(0).expect("kd_run");
    assert_eq!(sym.kernel_module, Some("kmod_demo"));
    assert!(!sym.frames.is_empty(), "the .ko's lines: {sym:?}");
    requests.push((
        format!(
            "kernel {} {} {} {:#x}",
            kmod_kallsyms.display(),
            testdata("bin").display(),
            testdata("kmod/sys/module").display(),
            addrs[0]
        ),
        Some(print_symbols(&symbols, &addrs)),
    ));
    let found = symbolizer
        .find_addresses(
            &Source::Kernel(KernelSource {
                kallsyms: Some(&synthetic),
                ..KernelSource::default()
            }),
            &NamePattern::parse("*_stext*"),
        )
        .unwrap();
    assert!(!found.is_empty());
    requests.push((
        format!("findk {} *_stext*", synthetic.display()),
        Some(print_matches(&found)),
    ));
    // Hidden kernel addresses (every kallsyms address 0, as kptr_restrict shows them):
    // symbolize succeeds and answers each address STACKSYM_KERNEL_ADDRS_HIDDEN (5) with the
    // message; find, with no answer per address to put it in, fails with
    // STACKSYM_ERR_PERMISSION_DENIED and the same words (the header documents both).
    let zeroed = testdata("kallsyms/zeroed.txt");
    let zeroed_source = Source::Kernel(KernelSource {
        kallsyms: Some(&zeroed),
        ..KernelSource::default()
    });
    let addrs = [0xffff_ffff_8100_0010];
    let symbols = symbolizer
        .symbolize(
            &zeroed_source,
            Input::AbsAddrs(AbsAddr::from_raw_slice(&addrs)),
        )
        .unwrap();
    let Err(NotFound::KernelAddrsHidden(hidden)) = symbols.results().next().unwrap() else {
        panic!("zeroed kallsyms: {symbols:?}");
    };
    requests.push((
        format!("kernel {} - - {:#x}", zeroed.display(), addrs[0]),
        Some(print_symbols(&symbols, &addrs)),
    ));
    let error = symbolizer
        .find_addresses(&zeroed_source, &NamePattern::parse("_stext"))
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::PermissionDenied, "{error}");
    assert_eq!(error.to_string(), hidden.to_string());
    requests.push((
        format!("findk {} _stext", zeroed.display()),
        Some(format!("error STACKSYM_ERR_PERMISSION_DENIED: {error}\n")),
    ));
    // The system's libc (a file nobody here wrote): names by file offset, and a lookup.
    let libc = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib/aarch64-linux-gnu/libc.so.6",
        "/usr/lib64/libc.so.6",
    ]
    .iter()
    .map(Path::new)
    .find(|p| p.is_file());
    match libc {
        Some(libc) => {
            let (line, found) = find(libc, "malloc");
            assert!(!found.is_empty(), "libc has malloc");
            requests.push((line, Some(print_matches(&found))));
            let (line, merged) = find_with(libc, "*malloc", true);
            assert!(!merged.is_empty(), "libc has malloc");
            requests.push((line, Some(print_matches(&merged))));
            let offset = found[0].file_offset.expect("malloc is in a segment").0;
            requests.push(elf(libc, true, &[offset + 0x10, offset]));
        }
        None => note(format_args!(
            "c_api: SKIPPED the libc requests: no libc.so.6 in the usual places"
        )),
    }
    requests.push((
        format!(
            "self {} 0x12c4 checksum {}",
            testdata("bin/c-pie-g").display(),
            repo().join("README.md").display()
        ),
        None,
    ));
    requests
}

/// Compiles `source` with `cc` against the header and `link` (arguments), into the
/// target's tmp dir; `None` without a compiler.
fn compile_c(test: &str, source: &Path, name: &str, link: &[&str]) -> Option<PathBuf> {
    let cc = tool(test, "cc", "gcc")?;
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new(cc)
        .args([
            "-std=c11", "-g", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread",
        ])
        .arg("-I")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("include"))
        .arg(source)
        .arg("-o")
        .arg(&out)
        .args(link)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed on {}", source.display());
    Some(out)
}

/// tests/c/stacksym_test.c compiled against the header and the static library (`test`
/// names the test that needs it); `None` without a compiler.
fn c_test_program(test: &str) -> Option<PathBuf> {
    let lib = capi_lib("libstacksym_capi.a");
    let lib = lib.to_str().expect("a UTF-8 target path");
    // What `cargo rustc -- --print native-static-libs` lists for a Rust staticlib on glibc.
    let link = [
        lib,
        "-lgcc_s",
        "-lutil",
        "-lrt",
        "-lpthread",
        "-lm",
        "-ldl",
        "-lc",
    ];
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/stacksym_test.c");
    compile_c(test, &source, &format!("stacksym_test-{test}"), &link)
}

/// Runs the C test program on `stdin` under valgrind (`--leak-check=full`: any error or
/// leak fails it; without valgrind it runs alone, said loudly); asserts it succeeded and
/// returns what it printed.
fn run_c_program(test: &str, program: &Path, stdin: &str) -> String {
    let valgrind = tool(test, "valgrind", "valgrind");
    let mut command = match &valgrind {
        Some(valgrind) => {
            let mut c = Command::new(valgrind);
            c.args([
                "--error-exitcode=1",
                "--leak-check=full",
                "--show-leak-kinds=definite,indirect,possible",
                "--errors-for-leak-kinds=definite,indirect,possible",
                "--quiet",
            ])
            .arg(program);
            c
        }
        None => {
            note(format_args!(
                "{test}: SKIPPED the leak check: running the C program without valgrind"
            ));
            Command::new(program)
        }
    };
    let mut child = command
        .arg(testdata("debug"))
        .current_dir(repo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the C program starts");
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the C program failed ({}):\n{stdout}\n--- stderr (valgrind's report):\n{stderr}",
        output.status
    );
    stdout.into_owned()
}

#[test]
fn c_program_gives_the_rust_apis_answers_under_valgrind() {
    const TEST: &str = "c_program_gives_the_rust_apis_answers_under_valgrind";
    let Some(program) = c_test_program(TEST) else {
        return;
    };
    let requests = script();
    let stdin: String = requests
        .iter()
        .map(|(line, _)| format!("{line}\n"))
        .collect();
    let stdout = run_c_program(TEST, &program, &stdin);
    // The answers, block by block ("== request" then its lines).
    let mut blocks: Vec<(String, String)> = Vec::new();
    for line in stdout.lines() {
        if let Some(request) = line.strip_prefix("== ") {
            blocks.push((request.to_string(), String::new()));
        } else if let Some((_, text)) = blocks.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    assert_eq!(blocks.len(), requests.len(), "{stdout}");
    for ((request, expected), (echoed, got)) in requests.iter().zip(&blocks) {
        assert_eq!(request, echoed);
        match expected {
            Some(expected) => assert_eq!(got, expected, "answers differ for: {request}"),
            None => {
                assert!(!got.contains("FAILED"), "{request}:\n{got}");
                let oks = got.lines().filter(|l| l.starts_with("ok ")).count();
                assert_eq!(oks, 13, "{request}:\n{got}");
            }
        }
    }
    eprintln!(
        "{TEST}: {} requests agree; the self checks:\n{}",
        blocks.len(),
        blocks.last().unwrap().1
    );
}

/// Whether this process runs as root (the C program ptraces a process that is not its
/// child, which `kernel.yama.ptrace_scope` 1 allows root only).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let uids = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
            Some(uids.split_whitespace().nth(1)? == "0")
        })
        .unwrap_or(false)
}

/// A CPython to run testdata/python/parked.py under: Debian's (no DWARF, so valgrind's run
/// stays short), else pyenv's newest 3.8-3.13.
fn python_interpreter() -> Option<PathBuf> {
    let debian = PathBuf::from("/usr/bin/python3.11");
    if debian.is_file() {
        return Some(debian);
    }
    (8..=13).rev().find_map(|minor| {
        let exe = std::fs::read_dir("/root/.pyenv/versions")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("3.{minor}."))
            })
            .map(|e| e.path().join(format!("bin/python3.{minor}")))
            .max()?;
        exe.is_file().then_some(exe)
    })
}

/// The C program's `python PID` request on testdata/python/parked.py (nine threads parked
/// in Python code, the process stopped with SIGSTOP): for every thread, the Python frames
/// of its merged stack (`STACKSYM_MIXED_PYTHON`) are the Rust API's
/// (`Symbolizer::python_stacks`) in function, file and line, and native frames
/// (`STACKSYM_MIXED_NATIVE`) surround them; a process without CPython is
/// `STACKSYM_ERR_NOT_FOUND`. Under valgrind, as the other requests.
#[test]
fn c_program_merges_python_frames() {
    const TEST: &str = "c_program_merges_python_frames";
    if !is_root() {
        if std::env::var_os("CI").is_some() {
            panic!("{TEST}: needs root (ptrace of a process not the C program's child)");
        }
        return note(format_args!("{TEST}: SKIPPED: not root (ptrace)"));
    }
    let Some(python) = python_interpreter() else {
        if std::env::var_os("CI").is_some() {
            panic!("{TEST}: no /usr/bin/python3.11 and no pyenv CPython 3.8-3.13");
        }
        return note(format_args!("{TEST}: SKIPPED: no CPython 3.8-3.13"));
    };
    let Some(program) = c_test_program(TEST) else {
        return;
    };
    let mut child = Command::new(&python)
        .arg(testdata("python/parked.py"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("python starts");
    /// Kills the Python program at the end, also when an assertion fails.
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = child.stdout.take().expect("piped");
    let child = Kill(child);
    let pid = child.0.id();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("parked.py's output");
    assert_eq!(line.trim(), "ready", "{}: parked.py", python.display());
    let stopped = Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(stopped.success(), "kill -STOP {pid}");
    // Every thread stopped (`T` in its stat) before the process is read.
    let all_stopped = || {
        let tasks: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        !tasks.is_empty()
            && tasks.iter().all(|task| {
                std::fs::read_to_string(task.path().join("stat"))
                    .ok()
                    .and_then(|stat| stat.rsplit_once(')')?.1.trim_start().chars().next())
                    .is_some_and(|state| state == 'T' || state == 't')
            })
    };
    let mut waited = 0;
    while !all_stopped() {
        assert!(waited < 500, "process {pid} did not stop");
        std::thread::sleep(std::time::Duration::from_millis(10));
        waited += 1;
    }
    let stacks = Symbolizer::builder()
        .build()
        .python_stacks(&stacksym::process::Process::new(pid))
        .expect("the Rust API reads the Python threads");
    let out = run_c_program(TEST, &program, &format!("python {pid}\n"));
    drop(child);
    // The C program's threads: (header line, python frames, native frame count).
    let mut threads: Vec<(String, Vec<String>, usize)> = Vec::new();
    for line in out.lines() {
        if line.starts_with("thread ") {
            threads.push((line.to_string(), Vec::new(), 0));
        } else if let (Some(frame), Some((_, python, natives))) =
            (line.strip_prefix("  "), threads.last_mut())
        {
            if let Some(python_frame) = frame.strip_prefix("STACKSYM_MIXED_PYTHON ") {
                python.push(python_frame.to_string());
            } else {
                assert!(frame.starts_with("STACKSYM_MIXED_NATIVE "), "{line}");
                *natives += 1;
            }
        }
    }
    assert!(
        out.contains("\nok not python: STACKSYM_ERR_NOT_FOUND\n"),
        "{out}"
    );
    assert_eq!(threads.len(), stacks.threads.len(), "{out}");
    let mut frames = 0;
    for thread in &stacks.threads {
        let tid = thread.os_tid.expect("an OS thread id");
        let (header, python, natives) = threads
            .iter()
            .find(|(header, ..)| header.starts_with(&format!("thread {tid} ")))
            .unwrap_or_else(|| panic!("thread {tid}: not in the C program's output:\n{out}"));
        let want_header = format!("thread {tid} state=1 version={} error=- ", stacks.version);
        assert!(
            header.starts_with(&want_header),
            "{header}, not {want_header}"
        );
        let want: Vec<String> = thread
            .frames
            .as_ref()
            .expect("the Rust API's frames")
            .iter()
            .map(|f| {
                format!(
                    "{} {}:{} entry={}",
                    f.function,
                    f.file,
                    f.line.unwrap_or(0),
                    i32::from(f.is_entry)
                )
            })
            .collect();
        assert_eq!(python, &want, "thread {tid}");
        assert!(*natives > 0, "thread {tid}: no native frame:\n{out}");
        frames += python.len() + natives;
    }
    note(format_args!(
        "{TEST}: {} ({}): {} threads, {frames} merged frames from C, their Python frames the \
         Rust API's",
        python.display(),
        stacks.version,
        threads.len()
    ));
}

#[test]
fn python_ctypes_loads_the_cdylib() {
    const TEST: &str = "python_ctypes_loads_the_cdylib";
    let lib = capi_lib("libstacksym_capi.so");
    let Some(python) = tool(TEST, "python3", "python3") else {
        return;
    };
    let elf = testdata("bin/c-pie-g");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ctypes_demo.py");
    let output = Command::new(python)
        .arg(script)
        .arg(&lib)
        .arg(&elf)
        .arg("0x12c4")
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let symbols = Symbolizer::builder()
        .build()
        .symbolize(
            &Source::Elf { path: &elf },
            Input::VirtAddrs(&[VirtAddr(0x12c4)]),
        )
        .unwrap();
    let sym = symbols.get(0).unwrap();
    let mut expected = format!("{}+{:#x}\n", sym.name, sym.offset);
    for frame in sym.frames {
        let name = match frame.inlined {
            false => sym.name,
            true => frame
                .function
                .as_ref()
                .map_or("??", |f| f.demangled.as_str()),
        };
        writeln!(
            expected,
            "  {name} {}:{}",
            frame.file.as_deref().unwrap_or("??"),
            frame.line.unwrap_or(0)
        )
        .unwrap();
    }
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
    assert!(
        expected.starts_with("checksum+") && expected.contains("  scale "),
        "{expected}"
    );
}

#[test]
fn header_compiles_as_c_and_cxx() {
    const TEST: &str = "header_compiles_as_c_and_cxx";
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    for (compiler, package, language, standard) in [
        ("cc", "gcc", "c", "-std=c99"),
        ("c++", "g++", "c++", "-std=c++11"),
    ] {
        let Some(compiler) = tool(TEST, compiler, package) else {
            continue;
        };
        let mut child = Command::new(compiler)
            .args([
                "-fsyntax-only",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                standard,
                "-x",
                language,
            ])
            .arg("-I")
            .arg(&include)
            .arg("-")
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"#include \"stacksym.h\"\nint main(void) { return STACKSYM_OK; }\n")
                .unwrap();
        }
        assert!(child.wait().unwrap().success(), "{language}");
    }
}

/// README.md's "Use from C" C snippet, written to the target's tmp dir.
fn readme_snippet() -> PathBuf {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = &readme[readme.find("## Use from C").expect("README has Use from C")..];
    let start = section.find("```c\n").expect("a C snippet") + "```c\n".len();
    let snippet = &section[start..start + section[start..].find("```").unwrap()];
    let source = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme_snippet.c");
    std::fs::write(&source, snippet).unwrap();
    source
}

/// What README's C snippet prints, from the Rust API.
fn readme_snippet_answer() -> String {
    let path = testdata("bin/c-pie-g");
    let symbols = Symbolizer::builder()
        .build()
        .symbolize(
            &Source::Elf { path: &path },
            Input::VirtAddrs(&[VirtAddr(0x12c4), VirtAddr(0x10)]),
        )
        .unwrap();
    let sym = symbols.get(0).unwrap();
    let mut expected = format!("0x12c4: {}+{:#x}\n", sym.name, sym.offset);
    for frame in sym.frames {
        let name = match frame.inlined {
            false => sym.name,
            true => frame
                .function
                .as_ref()
                .map_or("??", |f| f.demangled.as_str()),
        };
        writeln!(
            expected,
            "  {name} at {}:{}",
            frame.file.as_deref().unwrap_or("??"),
            frame.line.unwrap_or(0)
        )
        .unwrap();
    }
    expected.push_str("0x10: ?? (reason 1)\n");
    expected
}

/// The C snippet of README.md's "Use from C", built against this build's static library,
/// prints what the Rust API answers (the installed library's build is
/// `cinstall_prefix_links_through_pkg_config`'s).
#[test]
fn readme_c_snippet_builds_and_answers() {
    const TEST: &str = "readme_c_snippet_builds_and_answers";
    let source = readme_snippet();
    let lib = capi_lib("libstacksym_capi.a");
    let link = [lib.to_str().unwrap(), "-lpthread", "-ldl", "-lm"];
    let Some(program) = compile_c(TEST, &source, "readme_snippet", &link) else {
        return;
    };
    let output = Command::new(program).current_dir(repo()).output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        readme_snippet_answer()
    );
}

/// Runs `command`, returns its stdout; fails the test with its output if it fails.
fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The words of `readelf -d`'s lines of `tag` (`SONAME`, `NEEDED`): the names in brackets.
fn dynamic_entries(readelf: &Path, file: &Path, tag: &str) -> Vec<String> {
    let text = run(Command::new(readelf).arg("-d").arg(file));
    text.lines()
        .filter(|line| line.contains(&format!("({tag})")))
        .filter_map(|line| {
            let start = line.find('[')? + 1;
            let end = line.rfind(']')?;
            Some(line[start..end].to_string())
        })
        .collect()
}

/// The C library as a C user installs it: `cargo cinstall` (cargo-c) into a fresh prefix
/// gives libstacksym.so.0.MINOR with that SONAME, libstacksym.a, stacksym.pc and
/// include/stacksym.h (the committed header, byte for byte); README's C snippet, built with
/// `cc $(pkg-config --cflags --libs stacksym)` (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig) and
/// run from the prefix, prints the Rust API's answers and needs the library by its SONAME,
/// not by a path; built again with the static library (`pkg-config --static`), it prints
/// them too and needs no libstacksym at all.
///
/// Without cargo-c (`cargo install cargo-c --version 0.10.24 --locked`), pkg-config,
/// readelf or cc the test says SKIPPED, and fails under CI (.ci/run installs them). The
/// install builds the library in release, as a user's does, into a target dir of its own
/// (`CARGO_TARGET_TMPDIR/cinstall`): the dependencies once, then only what changed.
#[test]
fn cinstall_prefix_links_through_pkg_config() {
    const TEST: &str = "cinstall_prefix_links_through_pkg_config";
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let has_cargo_c = Command::new(&cargo)
        .args(["cinstall", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_cargo_c {
        let why = "cargo-c not found (cargo cinstall --version failed); install it with \
                   `cargo install cargo-c --version 0.10.24 --locked` (.ci/run does)";
        if std::env::var_os("CI").is_some() {
            panic!("{TEST}: {why}; CI is expected to provide it");
        }
        note(format_args!("{TEST}: SKIPPED: {why}"));
        return;
    }
    let (Some(pkg_config), Some(readelf), Some(cc)) = (
        tool(TEST, "pkg-config", "pkgconf"),
        tool(TEST, "readelf", "binutils"),
        tool(TEST, "cc", "gcc"),
    ) else {
        return;
    };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let prefix = tmp.join("cinstall-prefix");
    let _ = std::fs::remove_dir_all(&prefix);
    // What a C user types (README's "Use from C"), with a target dir of the test's own.
    run(Command::new(&cargo)
        .args([
            "cinstall",
            "-p",
            "stacksym-capi",
            "--libdir",
            "lib",
            "--prefix",
        ])
        .arg(&prefix)
        .arg("--target-dir")
        .arg(tmp.join("cinstall"))
        .current_dir(repo()));

    let lib = prefix.join("lib");
    let minor = env!("CARGO_PKG_VERSION_MINOR");
    let soname = format!("libstacksym.so.0.{minor}");
    let real = lib.join(format!("libstacksym.so.{}", env!("CARGO_PKG_VERSION")));
    assert!(real.is_file(), "{} is missing", real.display());
    for link in [lib.join(&soname), lib.join("libstacksym.so")] {
        assert!(link.is_symlink(), "{} is not a symlink", link.display());
    }
    assert!(lib.join("libstacksym.a").is_file());
    assert_eq!(
        dynamic_entries(&readelf, &real, "SONAME"),
        vec![soname.clone()]
    );
    let header = std::fs::read(prefix.join("include/stacksym.h")).expect("the installed header");
    let committed =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/stacksym.h")).unwrap();
    assert!(
        header == committed,
        "the installed header is not include/stacksym.h"
    );

    let pkg_config_path = lib.join("pkgconfig");
    let flags = |args: &[&str]| -> Vec<String> {
        run(Command::new(&pkg_config)
            .args(args)
            .arg("stacksym")
            .env("PKG_CONFIG_PATH", &pkg_config_path))
        .split_whitespace()
        .map(str::to_string)
        .collect()
    };
    let version = run(Command::new(&pkg_config)
        .args(["--modversion", "stacksym"])
        .env("PKG_CONFIG_PATH", &pkg_config_path));
    assert_eq!(version.trim(), env!("CARGO_PKG_VERSION"));
    let source = readme_snippet();
    let build = |name: &str, link: Vec<String>| -> PathBuf {
        let program = tmp.join(name);
        run(Command::new(&cc)
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
            .arg(&source)
            .arg("-o")
            .arg(&program)
            .args(flags(&["--cflags"]))
            .args(link));
        program
    };
    let answer = readme_snippet_answer();

    // Shared: cc demo.c $(pkg-config --cflags --libs stacksym), run with the prefix's lib.
    let shared = build("installed_shared", flags(&["--libs"]));
    assert_eq!(
        dynamic_entries(&readelf, &shared, "NEEDED")
            .into_iter()
            .filter(|n| n.contains("stacksym"))
            .collect::<Vec<_>>(),
        vec![soname.clone()],
        "the program needs the library by its SONAME, not by a build path"
    );
    let output = Command::new(&shared)
        .env("LD_LIBRARY_PATH", &lib)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), answer);

    // Static: the archive by name, and the system libraries `pkg-config --static` lists.
    let mut link = flags(&["--libs", "--static"]);
    for word in &mut link {
        if word == "-lstacksym" {
            *word = "-l:libstacksym.a".to_string();
        }
    }
    let fixed = build("installed_static", link);
    assert!(
        dynamic_entries(&readelf, &fixed, "NEEDED")
            .iter()
            .all(|n| !n.contains("stacksym")),
        "the static build needs no libstacksym"
    );
    let output = Command::new(&fixed).current_dir(repo()).output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), answer);
    note(format_args!(
        "{TEST}: {} installed (SONAME {soname}); README's snippet built through pkg-config, \
         shared and static, gives the Rust API's answers",
        prefix.display()
    ));
}

/// Every integer macro of the header (but the error codes, which stacksym_err_name() names,
/// the find flags and the version) is named by one of the `stacksym_*_name` functions: a
/// constant added without its name fails here.
#[test]
fn every_constant_has_its_name() {
    use std::ffi::{c_char, CStr};
    let header =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/stacksym.h"))
            .unwrap();
    let namers: [(&str, extern "C" fn(u32) -> *const c_char); 11] = [
        ("addr_kind", stacksym_capi::stacksym_addr_kind_name),
        ("reason", stacksym_capi::stacksym_reason_name),
        ("origin", stacksym_capi::stacksym_origin_name),
        ("binding", stacksym_capi::stacksym_binding_name),
        ("found_in", stacksym_capi::stacksym_found_in_name),
        ("norm_kind", stacksym_capi::stacksym_norm_kind_name),
        ("regs_layout", stacksym_capi::stacksym_regs_layout_name),
        ("frame_kind", stacksym_capi::stacksym_frame_kind_name),
        ("recovery", stacksym_capi::stacksym_recovery_name),
        ("stop", stacksym_capi::stacksym_stop_name),
        ("mixed_kind", stacksym_capi::stacksym_mixed_kind_name),
    ];
    // SAFETY: each returns a static NUL-terminated string.
    let text = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string();
    let mut checked = 0;
    for line in header.lines() {
        let mut words = line.split_whitespace();
        let (Some("#define"), Some(name), Some(value)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        let Ok(value) = value.parse::<u32>() else {
            continue;
        };
        if name.starts_with("STACKSYM_ERR_") || name == "STACKSYM_OK" {
            assert_eq!(text(stacksym_capi::stacksym_err_name(value as i32)), name);
        } else if !name.starts_with("STACKSYM_VERSION_") && !name.starts_with("STACKSYM_FIND_") {
            let named: Vec<String> = namers.iter().map(|(_, f)| text(f(value))).collect();
            assert!(
                named.iter().any(|n| n == name),
                "{name} is named by no stacksym_*_name function (they say {named:?})"
            );
        }
        checked += 1;
    }
    assert!(checked > 60, "only {checked} constants in the header");
    for (what, f) in namers {
        assert_eq!(text(f(1000)), "unknown", "{what}");
    }
}

/// The header's version macros are the package's version.
#[test]
fn version_constants_are_the_packages() {
    use std::ffi::CStr;
    let parse = |v: &str| v.parse::<u32>().unwrap();
    assert_eq!(
        (
            stacksym_capi::STACKSYM_VERSION_MAJOR,
            stacksym_capi::STACKSYM_VERSION_MINOR,
            stacksym_capi::STACKSYM_VERSION_PATCH
        ),
        (
            parse(env!("CARGO_PKG_VERSION_MAJOR")),
            parse(env!("CARGO_PKG_VERSION_MINOR")),
            parse(env!("CARGO_PKG_VERSION_PATCH"))
        )
    );
    // SAFETY: a static NUL-terminated string.
    let version = unsafe { CStr::from_ptr(stacksym_capi::stacksym_version()) };
    assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}

/// The committed header is what cbindgen 0.29.4 (the dev-dependency, as a library) generates
/// from capi/src with capi/cbindgen.toml, so a change to the C API changes the header in the
/// same commit. To regenerate it, see README's "Use from C".
#[test]
fn committed_header_is_what_cbindgen_generates() {
    let capi = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(capi.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(capi)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let committed = std::fs::read(capi.join("include/stacksym.h")).expect("the committed header");
    if fresh != committed {
        let stale = std::env::temp_dir().join("stacksym-capi-fresh.h");
        let _ = std::fs::write(&stale, &fresh);
        panic!(
            "capi/include/stacksym.h is not what cbindgen generates (its output: {}); \
             regenerate it with cbindgen 0.29.4: cbindgen --config capi/cbindgen.toml \
             --crate stacksym-capi --output capi/include/stacksym.h",
            stale.display()
        );
    }
}
