//! Tests of the `symbolize` example's `--pid`, `--kernel`/`--kallsyms`, stack-dump input and
//! `--folded` (cli/src/symbolize/live.rs, stacks.rs).
//!
//! References: the live child testdata/bin/c-wait reports its own function addresses (see
//! testdata/src/wait.c); kernel answers are worked out by hand from
//! testdata/kallsyms/synthetic.txt (see testdata/kallsyms/README.md).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use support::tool;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn ours(args: &[&str], stdin: &str) -> Output {
    let mut child = tool("symbolize")
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example runs");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.as_bytes().to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().expect("the example runs");
    writer.join().expect("the stdin writer does not panic");
    output
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        stderr(out)
    );
}

const SYNTHETIC: &str = "testdata/kallsyms/synthetic.txt";
const DUMP: &str = "testdata/dumps/bpftrace-stacks.txt";

// ---------------------------------------------------------------------------------------
// --pid

/// testdata/bin/c-wait, running until dropped: its pid and the addresses it printed.
struct Waiter {
    child: Child,
    pid: u32,
    addrs: Vec<(String, u64)>,
}

impl Waiter {
    fn spawn() -> Waiter {
        let path = root().join("testdata/bin/c-wait");
        let mut child = Command::new(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut addrs = Vec::new();
        let mut pid = None;
        for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
            let line = line.expect("c-wait prints text");
            if line == "ready" {
                break;
            }
            let (name, value) = line.split_once(' ').expect("NAME VALUE");
            match value.strip_prefix("0x") {
                Some(hex) => addrs.push((name.to_string(), u64::from_str_radix(hex, 16).unwrap())),
                None => pid = Some(value.parse().expect("a decimal pid")),
            }
        }
        Waiter {
            pid: pid.expect("c-wait prints its pid"),
            child,
            addrs,
        }
    }

    fn addr(&self, name: &str) -> u64 {
        self.addrs
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("c-wait printed no {name}"))
            .1
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The name lines of LLVM-style output (every third line: name, location, blank).
fn llvm_names(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len() % 3,
        0,
        "name, ??:0:0, blank per address:\n{text}"
    );
    for chunk in lines.chunks(3) {
        assert_eq!(chunk[1], "??:0:0", "{text}");
        assert_eq!(chunk[2], "", "{text}");
    }
    lines.iter().step_by(3).copied().collect()
}

/// (name, location) per address of LLVM-style output without inlined frames (name,
/// location, blank per address).
fn llvm_answers(text: &str) -> Vec<(&str, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len() % 3,
        0,
        "name, location, blank per address:\n{text}"
    );
    lines
        .chunks(3)
        .map(|chunk| {
            assert_eq!(chunk[2], "", "{text}");
            (chunk[0], chunk[1])
        })
        .collect()
}

fn is_puts(name: &str) -> bool {
    // puts and _IO_puts are aliases in glibc; either name is right.
    ["puts", "_IO_puts"].contains(&name)
}

#[test]
fn pid_llvm_gnu_json() {
    let waiter = Waiter::spawn();
    let pid = waiter.pid.to_string();
    let names = ["wait_target", "wait_local", "vhelper", "puts"];
    // Into each function (+3), and an address mapped nowhere.
    let addrs: Vec<String> = names
        .iter()
        .map(|n| format!("{:#x}", waiter.addr(n) + 3))
        .chain(["0x10".to_string()])
        .collect();
    let mut args = vec!["--pid", &pid, "--no-inlines"];
    args.extend(addrs.iter().map(String::as_str));

    let out = ours(&args, "");
    assert_ok(&out);
    let text = stdout(&out);
    let got = llvm_answers(&text);
    let got_names: Vec<&str> = got.iter().map(|a| a.0).collect();
    assert_eq!(got.len(), 5, "{text}");
    assert_eq!(&got_names[..3], &names[..3], "{text}");
    assert!(is_puts(got_names[3]), "{text}");
    assert_eq!(got[4], ("??", "??:0:0"), "{text}");
    // Source lines from the mapped files' DWARF: c-wait and libversioned.so are built with
    // -g (testdata/README.md).
    assert!(got[0].1.contains("wait.c:"), "{text}");
    assert!(got[2].1.contains("libversioned.c:"), "{text}");

    // The same as input lines, GNU style.
    let mut gnu_args = vec!["--pid", pid.as_str(), "--output-style=GNU", "--no-inlines"];
    gnu_args.push("-");
    let out = ours(&gnu_args, &(addrs.join("\n") + "\n"));
    assert_ok(&out);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 10, "{text}");
    assert_eq!(lines[0], "wait_target");
    assert!(lines[1].contains("wait.c:"), "{text}");
    assert_eq!(lines[4], "vhelper");
    assert_eq!(lines[8], "??");

    // JSON: ModuleName is the mapped file; StartAddress the absolute start.
    let mut json_args = vec!["--pid", pid.as_str(), "--output-style=JSON"];
    json_args.extend(addrs.iter().map(String::as_str));
    let out = ours(&json_args, "");
    assert_ok(&out);
    let values: Value = serde_json::from_str(&stdout(&out)).expect("one JSON array");
    let values = values.as_array().expect("an array");
    assert_eq!(values.len(), 5);
    let module = |i: usize| values[i]["ModuleName"].as_str().unwrap().to_string();
    let function = |i: usize| values[i]["Symbol"][0]["FunctionName"].as_str().unwrap();
    assert!(module(0).ends_with("/testdata/bin/c-wait"), "{}", module(0));
    assert!(module(2).ends_with("/libversioned.so"), "{}", module(2));
    assert!(module(3).contains("libc"), "{}", module(3));
    assert_eq!(module(4), "");
    assert_eq!(function(0), "wait_target");
    assert_eq!(function(1), "wait_local");
    assert!(is_puts(function(3)));
    assert_eq!(function(4), "");
    let sym = &values[0]["Symbol"][0];
    assert_eq!(sym["Offset"], "0x3");
    assert_eq!(
        sym["StartAddress"],
        format!("{:#x}", waiter.addr("wait_target"))
    );
    assert_eq!(values[0]["Address"], addrs[0]);
}

#[test]
fn pid_that_does_not_exist() {
    // Above the kernel's pid_max limit (4194304), so never a live pid.
    let out = ours(&["--pid", "4999999", "0x1000"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("4999999") && err.contains("does not exist"),
        "{err}"
    );
}

#[test]
fn pid_conflicts_with_obj() {
    let out = ours(&["--pid", "1", "--obj", "testdata/bin/c-nopie", "0x1"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

// ---------------------------------------------------------------------------------------
// --kernel

/// (address, LLVM-style name line, FunctionName, Module) from synthetic.txt, by hand.
const KERNEL_CASES: &[(&str, &str, &str, Option<&str>)] = &[
    // do_work at ..100 (global beats do_work_local_alias), ends at weak_func's ..180.
    ("0xffffffff81000104", "do_work", "do_work", Some("vmlinux")),
    ("0xffffffff8100017f", "do_work", "do_work", Some("vmlinux")),
    // The 16 bytes of padding before do_work.
    (
        "0xffffffff810000f4",
        "__pfx_do_work",
        "__pfx_do_work",
        Some("vmlinux"),
    ),
    // Weak beats local at one address.
    (
        "0xffffffff81000184",
        "weak_func",
        "weak_func",
        Some("vmlinux"),
    ),
    // _stext and _text share an address: the first global text line.
    ("0xffffffff81000010", "_stext", "_stext", Some("vmlinux")),
    // Modules: ext4 and xfs interleaved; each symbol ends at its own module's next one.
    (
        "0xffffffffc0001010",
        "ext4_fill_super [ext4]",
        "ext4_fill_super",
        Some("ext4"),
    ),
    (
        "0xffffffffc0002004",
        "xfs_mount [xfs]",
        "xfs_mount",
        Some("xfs"),
    ),
    (
        "0xffffffffc0003004",
        "bpf_prog_6deef7357e7b4530_sd_fw_ingress [bpf]",
        "bpf_prog_6deef7357e7b4530_sd_fw_ingress",
        Some("bpf"),
    ),
    // Data (init_task) and beyond everything: no text symbol.
    ("0xffffffff82000000", "??", "", None),
    ("0xffffffff90000000", "??", "", None),
];

#[test]
fn kernel_llvm_and_json() {
    let mut args = vec!["--kernel", "--kallsyms", SYNTHETIC];
    args.extend(KERNEL_CASES.iter().map(|c| c.0));
    let out = ours(&args, "");
    assert_ok(&out);
    let text = stdout(&out);
    let expected: Vec<&str> = KERNEL_CASES.iter().map(|c| c.1).collect();
    assert_eq!(llvm_names(&text), expected, "{text}");

    // --kallsyms alone implies --kernel; input lines give one JSON object per line.
    let input: String = KERNEL_CASES.iter().map(|c| format!("{}\n", c.0)).collect();
    let out = ours(&["--kallsyms", SYNTHETIC, "--output-style=JSON"], &input);
    assert_ok(&out);
    let text = stdout(&out);
    let values: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
        .collect();
    assert_eq!(values.len(), KERNEL_CASES.len(), "{text}");
    for (value, &(addr, _, function, module)) in values.iter().zip(KERNEL_CASES) {
        assert_eq!(value["Address"], addr);
        assert_eq!(value["ModuleName"], SYNTHETIC);
        let sym = &value["Symbol"][0];
        assert_eq!(sym["FunctionName"], function, "{value}");
        assert_eq!(sym["Module"].as_str(), module, "{value}");
    }
    let first = &values[0]["Symbol"][0];
    assert_eq!(first["StartAddress"], "0xffffffff81000100");
    assert_eq!(first["Offset"], "0x4");
    assert_eq!(first["Size"], "0x80");
}

#[test]
fn kernel_zeroed_kallsyms_explains_kptr_restrict() {
    let out = ours(
        &[
            "--kallsyms",
            "testdata/kallsyms/zeroed.txt",
            "0xffffffff81000104",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("zeroed.txt") && err.contains("kptr_restrict"),
        "{err}"
    );
}

#[test]
fn kernel_missing_kallsyms_file() {
    let out = ours(&["--kallsyms", "testdata/kallsyms/nope.txt", "0x1"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("nope.txt"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------
// Stack dumps

const DUMP_SYMBOLIZED: &str = "\
Attaching 1 probe...


@[
    do_work+4
    entry_SYSCALL_64+2
    0x7f0000001234
    0x1000
]: 42
@[
    ext4_fill_super+16 [ext4]
    xfs_mount+4 [xfs]
    weak_func+4
]: 7
@syscalls[
    __pfx_do_work+4
    entry_SYSCALL_64+16
    0x7f0000005678
]: 3
@[
    do_work+1
    entry_SYSCALL_64+0
    0x7f0000001234
    0x1000
]: 8
@[
    0xffffffff82000010
    0xffffffff90000000
]: 1

@total: 61
";

const DUMP_FOLDED: &str = "\
0x1000;0x7f0000001234;entry_SYSCALL_64;do_work 50
weak_func;xfs_mount;ext4_fill_super 7
0x7f0000005678;entry_SYSCALL_64;__pfx_do_work 3
0xffffffff90000000;0xffffffff82000010 1
";

fn dump() -> String {
    std::fs::read_to_string(root().join(DUMP)).expect("the dump fixture")
}

#[test]
fn stacks_detected_and_symbolized_in_place() {
    // Detected from the first block opener (after bpftrace's "Attaching" line).
    let out = ours(&["--kallsyms", SYNTHETIC], &dump());
    assert_ok(&out);
    assert_eq!(stdout(&out), DUMP_SYMBOLIZED);

    // --stacks and --input give the same.
    let out = ours(
        &[
            "--stacks",
            "--kernel",
            "--kallsyms",
            SYNTHETIC,
            "--input",
            DUMP,
        ],
        "",
    );
    assert_ok(&out);
    assert_eq!(stdout(&out), DUMP_SYMBOLIZED);
}

#[test]
fn stacks_folded() {
    let out = ours(&["--folded", "--kallsyms", SYNTHETIC, "--input", DUMP], "");
    assert_ok(&out);
    assert_eq!(stdout(&out), DUMP_FOLDED);
}

#[test]
fn stacks_without_kernel_keep_addresses() {
    let out = ours(&["--folded"], &dump());
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "0x1000;0x7f0000001234;0xffffffff81000042;0xffffffff81000104 42\n\
         0xffffffff81000184;0xffffffffc0002004;ffffffffc0001010 7\n\
         0x7f0000005678;entry_SYSCALL_64;0xffffffff810000f4 3\n\
         0x1000;0x7f0000001234;0xffffffff81000040;0xffffffff81000101 8\n\
         0xffffffff90000000;0xffffffff82000010 1\n"
    );
    assert!(stderr(&out).contains("--kernel"), "{}", stderr(&out));
}

#[test]
fn stacks_mixed_kernel_and_live_process() {
    let waiter = Waiter::spawn();
    let pid = waiter.pid.to_string();
    let dump = format!(
        "@[\n    0xffffffff81000104\n    {:#x}\n    {:#x}\n    0x10\n]: 5\n",
        waiter.addr("wait_target") + 2,
        waiter.addr("wait_local"),
    );
    let args = ["--pid", pid.as_str(), "--kallsyms", SYNTHETIC];
    let out = ours(&args, &dump);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "@[\n    do_work+4\n    wait_target+2\n    wait_local+0\n    0x10\n]: 5\n"
    );
    let mut folded = args.to_vec();
    folded.push("--folded");
    let out = ours(&folded, &dump);
    assert_ok(&out);
    assert_eq!(stdout(&out), "0x10;wait_local;wait_target;do_work 5\n");
}

#[test]
fn ordinary_input_is_not_taken_for_stacks() {
    // A dump of plain queries still works as before with --kernel.
    let out = ours(
        &["--kallsyms", SYNTHETIC],
        "# a comment\n0xffffffff81000104\n",
    );
    assert_ok(&out);
    assert_eq!(stdout(&out), "do_work\n??:0:0\n\n");
}

#[test]
fn help_documents_the_new_flags() {
    let out = ours(&["--help"], "");
    assert_ok(&out);
    let help = stdout(&out);
    for flag in ["--pid", "--kernel", "--kallsyms", "--stacks", "--folded"] {
        assert!(
            help.matches(flag).count() >= 2,
            "{flag}: in the flag list and in the long text"
        );
    }
    assert!(help.contains("kptr_restrict"));
}

#[test]
fn stacks_from_lone_dash_and_not_from_arguments() {
    let out = ours(&["--folded", "--kallsyms", SYNTHETIC, "-"], &dump());
    assert_ok(&out);
    assert_eq!(stdout(&out), DUMP_FOLDED);

    let out = ours(&["--folded", "0xffffffff81000104"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("--folded"), "{}", stderr(&out));
}

#[test]
fn pid_that_exits_during_the_run() {
    let mut waiter = Waiter::spawn();
    let pid = waiter.pid.to_string();
    let mut child = tool("symbolize")
        .args(["--pid", &pid])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example runs");
    let mut input = child.stdin.take().expect("piped");
    let mut output = BufReader::new(child.stdout.take().expect("piped"));
    // Answered at once (batches end when reading more would block).
    writeln!(input, "{:#x}", waiter.addr("wait_target")).unwrap();
    input.flush().unwrap();
    let mut answer = String::new();
    for _ in 0..3 {
        output.read_line(&mut answer).unwrap();
    }
    let lines: Vec<&str> = answer.lines().collect();
    assert_eq!(lines[0], "wait_target", "{answer}");
    assert!(
        lines[1].contains("wait.c:"),
        "a source line from c-wait's DWARF: {answer}"
    );

    let _ = waiter.child.kill();
    let _ = waiter.child.wait();
    writeln!(input, "{:#x}", waiter.addr("wait_target")).unwrap();
    drop(input);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut output, &mut rest).unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(rest, "??\n??:0:0\n\n");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains(&pid) && err.contains("does not exist"),
        "{err}"
    );
}

/// bpftrace prints a key of two stacks (`@[kstack(raw), ustack(raw)]`) with a line that is
/// only `,` between them: folded output has no `,` frame, user frames come first (outermost),
/// then the kernel's, innermost last. Addresses are from testdata/kallsyms/synthetic.txt.
#[test]
fn stacks_folded_with_a_kernel_and_user_key() {
    let dump = "@[\n        0xffffffff81000104\n        0xffffffff81000042\n, \n        0x7f0000001234\n        0x1000\n]: 5\n";
    let out = ours(
        &["--kallsyms", "testdata/kallsyms/synthetic.txt", "--folded"],
        dump,
    );
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "0x1000;0x7f0000001234;entry_SYSCALL_64;do_work 5\n"
    );
}

/// `--kallsyms FILE --vmlinux FILE`: kernel-image addresses get vmlinux's names, source lines
/// and inlined frames. `c-pie-g` plays vmlinux (`support::fake_vmlinux`; 0x12c4 is in
/// scale() inlined into checksum()); the kallsyms text lists its functions moved by a
/// made-up KASLR offset.
#[test]
fn kernel_with_vmlinux_prints_source_lines() {
    let test = "kernel_with_vmlinux_prints_source_lines";
    let offset: u64 = 0xffff_ffff_8000_0000 + 0x3a0_0000;
    let Some((dir, vmlinux, text)) = support::fake_vmlinux(test, offset) else {
        return;
    };
    let kallsyms = dir.path().join("kallsyms");
    std::fs::write(&kallsyms, text).expect("writable");
    let addr = format!("{:#x}", 0x12c4 + offset);
    let args = [
        "--kallsyms",
        kallsyms.to_str().unwrap(),
        "--vmlinux",
        vmlinux.to_str().unwrap(),
        addr.as_str(),
    ];
    let out = ours(&args, "");
    assert_ok(&out);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "two frames and a blank line:\n{text}");
    assert_eq!(lines[0], "scale", "{text}");
    assert!(lines[1].contains("demo.c:"), "{text}");
    assert_eq!(lines[2], "checksum", "{text}");
    assert!(lines[3].contains("demo.c:"), "{text}");

    // Without --vmlinux: kallsyms' name only.
    let out = ours(
        &args[..2]
            .iter()
            .chain([&addr.as_str()])
            .copied()
            .collect::<Vec<_>>(),
        "",
    );
    assert_ok(&out);
    assert_eq!(stdout(&out), "checksum\n??:0:0\n\n");

    // A --vmlinux that is missing (or does not match) costs its lines, not the run: kallsyms'
    // answer, and a note that names the file, as perf goes on without its vmlinux.
    let missing = dir.path().join("no-such-vmlinux");
    let out = ours(
        &[
            args[0],
            args[1],
            "--vmlinux",
            missing.to_str().unwrap(),
            addr.as_str(),
        ],
        "",
    );
    assert_ok(&out);
    assert_eq!(stdout(&out), "checksum\n??:0:0\n\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note:") && stderr.contains("no-such-vmlinux"),
        "{stderr}"
    );

    // --vmlinux without --kernel: an error.
    let out = ours(&["--vmlinux", vmlinux.to_str().unwrap(), "0x1"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

/// `--kallsyms FILE --modules-dir DIR --sys-module DIR`: a module address gets the name,
/// size and source line of the module's `.ko` (testdata/bin/kmod-demo.ko, loaded where the
/// sysfs copy testdata/kmod/sys/module says; the kallsyms fixture lists it there). Without
/// the module flags, on this machine's /lib/modules (no kmod_demo.ko), kallsyms' name and a
/// note on stderr that says why.
#[test]
fn kernel_module_addresses_get_lines_from_the_ko() {
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let kallsyms = testdata.join("kallsyms/kmod-demo.kallsyms");
    let modules_dir = testdata.join("bin");
    let sys_module = testdata.join("kmod/sys/module");
    let with_modules = [
        "--kallsyms",
        kallsyms.to_str().unwrap(),
        "--modules-dir",
        modules_dir.to_str().unwrap(),
        "--sys-module",
        sys_module.to_str().unwrap(),
        // kd_run + 3 (.text), kd_report_error + 1 (.text.unlikely), an image address.
        "0xffffffffc0a01083",
        "0xffffffffc0a03001",
        "0xffffffff81002004",
    ];
    let out = ours(&with_modules, "");
    assert_ok(&out);
    let text = stdout(&out);
    let blocks: Vec<&str> = text.split("\n\n").collect();
    assert!(blocks[0].starts_with("kd_run [kmod_demo]\n"), "{text}");
    assert!(blocks[0].contains("src/kmod/demo_main.c:"), "{text}");
    assert!(
        blocks[1].starts_with("kd_report_error [kmod_demo]\n"),
        "{text}"
    );
    assert!(blocks[1].contains("src/kmod/demo_"), "{text}");
    assert_eq!(blocks[2], "do_one_initcall\n??:0:0", "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).is_empty(), "{out:?}");

    let without = [&with_modules[..2], &with_modules[6..7]].concat();
    let empty = tempfile::tempdir().unwrap();
    let no_ko = [
        &with_modules[..2],
        &["--modules-dir", empty.path().to_str().unwrap()],
        &with_modules[4..7],
    ]
    .concat();
    for args in [&without, &no_ko] {
        let out = ours(args, "");
        assert_ok(&out);
        assert_eq!(stdout(&out), "kd_run [kmod_demo]\n??:0:0\n\n", "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("note: module kmod_demo: kallsyms names only: ")
                && stderr.contains("no kmod_demo.ko in"),
            "{args:?}: {stderr}"
        );
    }
}
