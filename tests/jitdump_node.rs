//! A live Node process writing its jitdump (`node --perf-prof
//! --interpreted-frames-native-stack`: `jit-PID.dump` in its working directory, which it maps
//! so that perf sees it): `Source::Process` names the code of the JIT's anonymous memory from
//! that file, and the names are compared with the same file read by an independent reader
//! in tests/support (`jitdump_loads`: the specification's record layout, little-endian only,
//! no checks beyond what it needs), the last load covering each address winning.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use stacksym::addr::AbsAddr;
use stacksym::process::{MappingKind, Process};
use stacksym::{Input, NameOrigin, Source, Symbolizer};

/// Kills the child when dropped.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn node_jit_code_is_named_from_its_jitdump() {
    const TEST: &str = "node_jit_code_is_named_from_its_jitdump";
    if Command::new("node").arg("--version").output().is_err() {
        support::skip_or_fail(TEST, "node is not installed");
        return;
    }
    // --perf-prof writes jit-PID.dump into the working directory: a fresh one.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("app.js");
    std::fs::write(
        &script,
        "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n\
         let t = Date.now(); while (Date.now() - t < 1000) fib(20);\n\
         console.log('ready');\n\
         setInterval(() => fib(20), 10);\n",
    )
    .unwrap();
    let mut child = KillOnDrop(
        Command::new("node")
            .args(["--perf-prof", "--interpreted-frames-native-stack"])
            .arg(&script)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = child.0.id();
    let process = Process::new(pid);
    let maps = process.read_maps().unwrap();
    let dump_path = dir.path().join(format!("jit-{pid}.dump"));
    let mapped = maps
        .mappings()
        .iter()
        .any(|m| matches!(&m.kind, MappingKind::File { path, .. } if *path == dump_path));
    assert!(mapped, "node maps {}", dump_path.display());
    let bytes = std::fs::read(&dump_path).unwrap();
    let loads = support::jitdump_loads(&bytes);
    assert!(loads.len() > 100, "{} loads", loads.len());
    // The middle of each load still covered by it (no later load over that address), in
    // anonymous executable memory.
    let in_jit_memory = |addr: u64| {
        maps.mappings().iter().any(|m| {
            m.perms.exec
                && matches!(m.kind, MappingKind::Anonymous | MappingKind::AnonNamed(_))
                && m.range.start.0 <= addr
                && addr < m.range.end.0
        })
    };
    let mut want: Vec<(AbsAddr, &str)> = Vec::new();
    for (i, (start, size, name)) in loads.iter().enumerate() {
        let addr = start + size / 2;
        let later = loads[i + 1..]
            .iter()
            .any(|(s, n, _)| *s <= addr && addr - s < *n);
        if *size > 0 && !later && in_jit_memory(addr) {
            want.push((AbsAddr(addr), name));
        }
    }
    assert!(want.len() > 100, "{} addresses in JIT memory", want.len());
    assert!(
        want.iter()
            .any(|(_, name)| name.starts_with("JS:") && name.contains("fib")),
        "fib was compiled"
    );
    let addrs: Vec<AbsAddr> = want.iter().map(|&(addr, _)| addr).collect();
    let symbolizer = Symbolizer::builder().build();
    let source = Source::Process {
        process: &process,
        maps: Some(&maps),
    };
    let symbols = symbolizer
        .symbolize(&source, Input::AbsAddrs(&addrs))
        .unwrap();
    let mut named = 0;
    let mut with_lines = 0;
    for (i, &(addr, name)) in want.iter().enumerate() {
        let sym = symbols
            .get(i)
            .unwrap_or_else(|| panic!("{addr:?} ({name}): {:?}", symbols.not_found(i)));
        assert_eq!(
            (sym.name, sym.origin),
            (name, NameOrigin::JitDump),
            "{addr:?}"
        );
        assert_eq!(
            sym.symbol_file.file_name(),
            dump_path.file_name(),
            "{addr:?}: named from the process's jit-PID.dump"
        );
        named += 1;
        with_lines += usize::from(!sym.frames.is_empty());
    }
    support::writeln_stderr(format_args!(
        "{TEST}: {named} JIT addresses named from the jitdump as the independent reader \
         names them; {with_lines} with a source line"
    ));
}
