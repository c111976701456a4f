//! `--find-usdt PATTERN`: the USDT probes (`.note.stapsdt`) of `--obj` or of a live process
//! (`--pid`) whose `provider:name` matches, through the library's `Symbolizer::find_usdt`,
//! one `FILE_OFFSET provider:name semaphore=FILE_OFFSET|none args=...` line each (JSON: one
//! object per probe); with `--probe-spec`, each as bpftrace's and the kernel's targets.

use std::io::{self, Write};
use std::path::Path;

use serde_json::{json, Value};
use stacksym::process::Process;
use stacksym::symbolize::UsdtMatch;
use stacksym::usdt::{Arg, Operand};
use stacksym::{Source, Symbolizer, VirtAddr};

/// What `--find-usdt` lists, and how.
pub struct FindUsdt<'a> {
    pub pattern: &'a str,
    pub obj: Option<&'a Path>,
    pub pid: Option<u32>,
    pub probe_spec: bool,
    pub json: bool,
}

/// Prints the probes; `Ok(false)` (after a message on stderr) when the source cannot be read
/// or no probe matches.
pub fn run(find: &FindUsdt<'_>, symbolizer: &Symbolizer, out: &mut impl Write) -> io::Result<bool> {
    let process = find.pid.map(Process::new);
    let source = match (find.obj, &process) {
        (Some(path), _) => Source::Elf { path },
        (None, Some(process)) => Source::process(process),
        (None, None) => {
            eprintln!("symbolize: --find-usdt needs --obj FILE or --pid PID");
            return Ok(false);
        }
    };
    let found = match symbolizer.find_usdt(&source, find.pattern) {
        Ok(found) => found,
        Err(err) => {
            eprintln!("symbolize: {err}");
            return Ok(false);
        }
    };
    if found.is_empty() {
        eprintln!("symbolize: no USDT probe matches {:?}", find.pattern);
        return Ok(false);
    }
    for m in &found {
        if find.json {
            writeln!(out, "{}", to_json(m))?;
            continue;
        }
        let probe = &m.probe;
        let offset = probe
            .file_offset
            .map_or_else(|| "none".to_string(), |o| format!("{:#x}", o.0));
        let semaphore = probe
            .semaphore
            .and_then(|sem| sem.file_offset)
            .map_or_else(|| "none".to_string(), |o| format!("{:#x}", o.0));
        write!(
            out,
            "{offset} {}:{} semaphore={semaphore} args={}",
            probe.provider, probe.name, probe.args_text
        )?;
        if let Some(abs) = m.abs_addr {
            write!(out, " address={:#x} file={}", abs.0, m.file.display())?;
        }
        writeln!(out)?;
        if let Err(err) = &probe.args {
            writeln!(out, "  args not parsed: {err}")?;
        }
        if find.probe_spec {
            // A symbol's file offset, for `@+OFFSET` fetch args: from the file's segments.
            let elf = find.obj.and_then(|path| symbolizer.elf_file(path).ok());
            let file_offset = |addr: VirtAddr| {
                elf.as_ref()
                    .and_then(|elf| elf.segments().virt_to_file_offset(addr))
                    .map(|o| o.0)
            };
            print_probe_spec(m, &file_offset, out)?;
        }
    }
    Ok(true)
}

/// bpftrace's probe, and the line `/sys/kernel/tracing/uprobe_events` takes: the probe's file
/// offset, the semaphore's as `(ref_ctr_offset)`, and its arguments as fetch args.
fn print_probe_spec(
    m: &UsdtMatch,
    file_offset: &dyn Fn(VirtAddr) -> Option<u64>,
    out: &mut impl Write,
) -> io::Result<()> {
    let probe = &m.probe;
    let file = m.file.display();
    writeln!(out, "  usdt:{file}:{}:{}", probe.provider, probe.name)?;
    let Some(offset) = probe.file_offset else {
        return writeln!(
            out,
            "  uprobe_events: no file offset (the probe is in no segment)"
        );
    };
    let ref_ctr = probe
        .semaphore
        .and_then(|sem| sem.file_offset)
        .map(|o| format!("({:#x})", o.0))
        .unwrap_or_default();
    // The kernel resolves the path itself and takes only an absolute one.
    let absolute = std::path::absolute(&m.file).unwrap_or_else(|_| m.file.clone());
    let mut line = format!(
        "p:usdt_{}/{} {}:{:#x}{ref_ctr}",
        event_name(&probe.provider),
        event_name(&probe.name),
        absolute.display(),
        offset.0
    );
    if let Ok(args) = &probe.args {
        for (i, arg) in args.iter().enumerate() {
            if let Some(fetch) = fetch_arg(arg, file_offset) {
                line.push_str(&format!(" arg{}={fetch}", i + 1));
            }
        }
    }
    writeln!(out, "  {line}")
}

/// A name as a trace event may spell it: letters, digits and `_`.
fn event_name(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The kernel's fetch-arg for `arg` (Documentation/trace/uprobetracer.rst): `%REG`,
/// `OFFSET(%REG)`, `@+FILE_OFFSET` (a symbol's value), `\IMM`, with its type (`s32`,
/// `u64`). `None` where the kernel's syntax cannot say it (a high-byte register).
fn fetch_arg(arg: &Arg, file_offset: &dyn Fn(VirtAddr) -> Option<u64>) -> Option<String> {
    let kind = format!("{}{}", if arg.signed { 's' } else { 'u' }, arg.size * 8);
    let reg = |r: &stacksym::usdt::Register| -> Option<String> {
        if r.high_byte {
            return None;
        }
        kernel_register(r.name).map(|name| format!("%{name}"))
    };
    let place = match &arg.operand {
        Operand::Register(r) => reg(r)?,
        // The kernel reads %ip at the probe; the CPU's %rip-relative base is the next
        // instruction's address, which the kernel does not know.
        Operand::Memory { base, .. } if base.dwarf == 16 && base.name.ends_with("ip") => {
            return None
        }
        Operand::Memory { base, offset } => format!("{offset:+}({})", reg(base)?),
        Operand::Symbol {
            addr: Some(addr),
            offset,
            ..
        } => format!(
            "@+{:#x}",
            file_offset(VirtAddr(addr.0.wrapping_add(*offset as u64)))?
        ),
        Operand::Symbol { addr: None, .. } => return None,
        Operand::Constant(value) => format!("\\{value}"),
    };
    Some(format!("{place}:{kind}"))
}

/// The kernel's `pt_regs` name of a register as an argument names it (x86_64: `ax` for
/// `rax`/`eax`/`ax`/`al`; aarch64: `x1` for `x1`/`w1`, `sp`).
fn kernel_register(name: &str) -> Option<&'static str> {
    const X86: &[(&str, &[&str])] = &[
        ("ax", &["rax", "eax", "ax", "al"]),
        ("dx", &["rdx", "edx", "dx", "dl"]),
        ("cx", &["rcx", "ecx", "cx", "cl"]),
        ("bx", &["rbx", "ebx", "bx", "bl"]),
        ("si", &["rsi", "esi", "si", "sil"]),
        ("di", &["rdi", "edi", "di", "dil"]),
        ("bp", &["rbp", "ebp", "bp", "bpl"]),
        ("sp", &["rsp", "esp", "sp", "spl"]),
        ("ip", &["rip", "eip"]),
    ];
    if let Some((kernel, _)) = X86.iter().find(|(_, names)| names.contains(&name)) {
        return Some(*kernel);
    }
    const R: [&str; 8] = ["r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"];
    if let Some(r) = R.iter().find(|r| {
        name.strip_prefix(**r)
            .is_some_and(|rest| ["", "d", "w", "b"].contains(&rest))
    }) {
        return Some(*r);
    }
    const X: [&str; 31] = [
        "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
        "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
        "x27", "x28", "x29", "x30",
    ];
    if let Some(n) = name
        .strip_prefix('x')
        .or_else(|| name.strip_prefix('w'))
        .and_then(|n| n.parse::<usize>().ok())
    {
        return X.get(n).copied();
    }
    matches!(name, "sp" | "wsp").then_some("sp")
}

fn to_json(m: &UsdtMatch) -> Value {
    let probe = &m.probe;
    let hex = |v: u64| format!("{v:#x}");
    let args = match &probe.args {
        Ok(args) => Value::Array(args.iter().map(arg_json).collect()),
        Err(_) => Value::Null,
    };
    let mut object = json!({
        "provider": probe.provider,
        "name": probe.name,
        "file": m.file.display().to_string(),
        "file_offset": probe.file_offset.map(|o| hex(o.0)),
        "address": hex(probe.addr.0),
        "semaphore_address": probe.semaphore.map(|s| hex(s.addr.0)),
        "semaphore_file_offset": probe.semaphore.and_then(|s| s.file_offset).map(|o| hex(o.0)),
        "args": {
            "raw": probe.args_text,
            "parsed": args,
            "error": probe.args.as_ref().err().map(ToString::to_string),
        },
    });
    if let Some(abs) = m.abs_addr {
        object["absolute_address"] = json!(hex(abs.0));
        object["semaphore_absolute_address"] = json!(m.semaphore_abs_addr.map(|a| hex(a.0)));
    }
    object
}

fn arg_json(arg: &Arg) -> Value {
    let register = |r: &stacksym::usdt::Register| json!({ "name": r.name, "dwarf": r.dwarf, "high_byte": r.high_byte });
    let operand = match &arg.operand {
        Operand::Register(r) => json!({ "kind": "register", "register": register(r) }),
        Operand::Memory { base, offset } => {
            json!({ "kind": "memory", "base": register(base), "offset": offset })
        }
        Operand::Symbol {
            base,
            name,
            offset,
            addr,
        } => json!({
            "kind": "symbol",
            "base": register(base),
            "symbol": name,
            "offset": offset,
            "symbol_address": addr.map(|a| format!("{:#x}", a.0)),
        }),
        Operand::Constant(value) => json!({ "kind": "constant", "value": value }),
    };
    json!({ "size": arg.size, "signed": arg.signed, "operand": operand })
}
