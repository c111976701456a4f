//! `--find PATTERN`: names → addresses, for probes. Lists the functions of `--obj` (or, with
//! `--kernel`, kallsyms) whose name matches, through the library's finder
//! (`Symbolizer::find_addresses`), one `FILE_OFFSET SIZE NAME` line each; with
//! `--probe-spec`, each as the targets perf probe and bpftrace take.

use std::io::{self, Write};
use std::path::Path;

use stacksym::elf::SymbolKind;
use stacksym::symbolize::{FoundIn, NamePattern, SymbolMatch};
use stacksym::{KernelSource, Source, Symbolizer};

/// What `--find` lists, and how.
pub struct Find<'a> {
    pub pattern: &'a str,
    /// `--obj`: the file; `None` with `--kernel`.
    pub obj: Option<&'a Path>,
    /// `--kallsyms FILE` (with `--kernel`); `None`: /proc/kallsyms.
    pub kallsyms: Option<&'a Path>,
    pub probe_spec: bool,
    pub demangle: bool,
}

/// Prints the matches; `Ok(false)` (after a message on stderr) when the source cannot be read
/// or nothing matches.
pub fn run(find: &Find<'_>, symbolizer: &Symbolizer, out: &mut impl Write) -> io::Result<bool> {
    let source = match find.obj {
        Some(path) => Source::Elf { path },
        None => Source::Kernel(KernelSource {
            kallsyms: find.kallsyms,
            ..KernelSource::default()
        }),
    };
    let found = match symbolizer.find_addresses(&source, &NamePattern::parse(find.pattern)) {
        Ok(found) => found,
        Err(err) => {
            eprintln!("symbolize: {err}");
            return Ok(false);
        }
    };
    // Probes attach to code: data objects are left out.
    let functions: Vec<&SymbolMatch> = found
        .iter()
        .filter(|m| m.kind == SymbolKind::Function)
        .collect();
    if functions.is_empty() {
        eprintln!("symbolize: no function matches {:?}", find.pattern);
        return Ok(false);
    }
    for m in &functions {
        let name = if find.demangle { &m.demangled } else { &m.name };
        let version = match (&m.version, m.version_hidden) {
            (Some(v), true) => format!("@{v}"),
            (Some(v), false) => format!("@@{v}"),
            (None, _) => String::new(),
        };
        let module = m
            .kernel_module
            .as_deref()
            .map(|module| format!(" [{module}]"))
            .unwrap_or_default();
        // The file offset a uprobe takes; for the kernel, the address.
        let place = match (find.obj, m.file_offset) {
            (Some(_), Some(offset)) => offset.0,
            _ => m.addr.raw(),
        };
        writeln!(out, "{place:#x} {:#x} {name}{version}{module}", m.size)?;
        if find.probe_spec {
            print_probe_spec(find.obj, m, &functions, out)?;
        }
    }
    Ok(true)
}

/// The match as perf probe's and bpftrace's targets: perf probe's `-a 0xOFFSET` is a file
/// offset (it writes `PATH:0xOFFSET` to uprobe_events as given); bpftrace takes the mangled
/// name, or, where several symbols share it (versions), the ELF virtual address, or in a file
/// without symbols (a stripped Go binary), the file offset.
fn print_probe_spec(
    obj: Option<&Path>,
    m: &SymbolMatch,
    all: &[&SymbolMatch],
    out: &mut impl Write,
) -> io::Result<()> {
    let Some(obj) = obj else {
        // Kernel: kprobes by name.
        writeln!(out, "  perf probe -a '{}'", m.name)?;
        return writeln!(out, "  kprobe:{}", m.name);
    };
    let obj = obj.display();
    match m.file_offset {
        Some(offset) => writeln!(out, "  perf probe -x '{obj}' -a {:#x}", offset.0)?,
        None => writeln!(
            out,
            "  perf probe: no file offset (the address is in no segment)"
        )?,
    }
    let shared = all.iter().filter(|other| other.name == m.name).count() > 1;
    if let (FoundIn::GoTable, Some(offset)) = (m.found_in, m.file_offset) {
        // A stripped Go binary: its names are in the Go table only, which bpftrace does not
        // read, and a Go name (`main.(*Server).Handle`) is no bpftrace attach point. With no
        // symbol table, bpftrace 0.17 takes the number as a file offset, unconverted (the
        // virtual address gave EINVAL from perf_event_open, the offset attached), and only
        // with --unsafe ("Could not resolve address" without it).
        writeln!(out, "  uprobe:{obj}:{:#x}", offset.0)?;
        writeln!(
            out,
            "  (bpftrace --unsafe: the file has no symbol table to check the address against)"
        )
    } else if shared || m.version.is_some() {
        writeln!(out, "  uprobe:{obj}:{:#x}", m.addr.raw())
    } else {
        writeln!(out, "  uprobe:{obj}:{}", m.name)
    }
}
