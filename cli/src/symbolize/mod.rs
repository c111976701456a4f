//! `symbolize`: symbolize raw address dumps, with llvm-symbolizer's flags, answers and layout:
//! function names from ELF symbol tables, source lines and inlined frames from DWARF (the
//! file's own, or its separate debug file's, found through `--debug-file-directory`, the
//! build-id or `.gnu_debuglink`).
//!
//! ```text
//! stacksym symbolize                                                         # the demo dump
//! stacksym symbolize --obj testdata/bin/c-pie-g -p 0x12c4
//! stacksym symbolize --obj testdata/bin/c-buildid \
//!     --debug-file-directory testdata/debug --output-style=GNU 0x1290
//! grep -v '^#' testdata/dumps/demo.txt | stacksym symbolize --output-style=JSON
//! stacksym symbolize --input asan-report.txt
//! stacksym symbolize --pid 1234 0x7f3a1c2b4567               # a live process
//! stacksym symbolize --kernel 0xffffffff81234567             # /proc/kallsyms
//! stacksym symbolize --kernel --pid 1234 --folded --input bpftrace-dump.txt
//! ```
//!
//! See `--help` (`AFTER_LONG_HELP` below) for every flag and for where this tool
//! deliberately differs from llvm-symbolizer 14 and from GNU addr2line.

#[cfg(feature = "debuginfod")]
mod debuginfod;
mod find;
mod help;
mod input;
mod live;
mod output;
mod stack_parse;
mod stacks;
mod usdt;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgAction, Parser};
use stacksym::process::Process;
use stacksym::{Input, Source, Symbolizer};

use help::{ABOUT, AFTER_LONG_HELP, LONG_ABOUT};
use input::{parse_line, Kind, Parsed};
use live::{Live, Resolved, Route};
use output::{
    Answer, Functions, Line, Lines, Origin, Outcome, Paths, Printer, PrinterOptions, Style,
};

#[derive(Debug, Parser)]
#[command(
    name = "symbolize",
    bin_name = "stacksym symbolize",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_long_help = AFTER_LONG_HELP,
    disable_version_flag = true,
    args_override_self = true
)]
struct Args {
    /// Addresses (or whole query lines) to symbolize; see INPUT in --help
    #[arg(value_name = "ADDRESS")]
    addresses: Vec<OsString>,

    /// Object file to symbolize (else each query names its module); last one counts
    #[arg(long = "obj", short = 'e', visible_alias = "exe", value_name = "PATH")]
    obj: Option<PathBuf>,

    /// Read queries from FILE ('-': stdin), one per line; repeatable
    #[arg(long, value_name = "FILE", action = ArgAction::Append, conflicts_with = "addresses")]
    input: Vec<PathBuf>,

    /// Demangle C++ and Rust names: the default (also -demangle=true)
    #[arg(long, short = 'C', overrides_with = "no_demangle")]
    demangle: bool,

    /// Print names as the file spells them (also -demangle=false)
    #[arg(long, overrides_with = "demangle")]
    no_demangle: bool,

    /// Threads a batch may use to read DWARF ahead (default: the CPUs this process may run
    /// on); 1 keeps all work on one thread
    #[arg(long, value_name = "N")]
    threads: Option<usize>,

    /// Print every inlined frame, innermost first: the default (also --inlining)
    #[arg(
        long,
        short = 'i',
        visible_alias = "inlining",
        overrides_with = "no_inlines"
    )]
    inlines: bool,

    /// One frame per address: the innermost location, the outer function's name (also
    /// --inlining=false)
    #[arg(long, overrides_with = "inlines")]
    no_inlines: bool,

    /// Print source files' names without their directories
    #[arg(long, short = 's', overrides_with = "relativenames")]
    basenames: bool,

    /// Print source paths without the compilation directory (only `./` is known; see --help)
    #[arg(long, overrides_with = "basenames")]
    relativenames: bool,

    /// A directory to look for separate debug files in (repeatable; default /usr/lib/debug)
    #[arg(long, value_name = "DIR", action = ArgAction::Append)]
    debug_file_directory: Vec<PathBuf>,

    /// A debuginfod server to fetch missing debug files from (repeatable; tried before
    /// DEBUGINFOD_URLS'); see DEBUGINFOD in --help
    #[arg(long = "debuginfod", value_name = "URL", action = ArgAction::Append)]
    debuginfod_urls: Vec<String>,

    /// Fetch nothing from debuginfod servers, whatever DEBUGINFOD_URLS says
    #[arg(long, conflicts_with = "debuginfod_urls")]
    no_debuginfod: bool,

    /// Output layout; see OUTPUT in --help
    #[arg(long, value_enum, value_name = "STYLE", default_value_t = Style::Llvm, ignore_case = true)]
    output_style: Style,

    /// Print the address before its answer
    #[arg(long = "addresses", short = 'a', visible_alias = "print-address")]
    print_address: bool,

    /// Function name to print (-f alone: linkage)
    #[arg(
        long,
        short = 'f',
        value_enum,
        value_name = "KIND",
        num_args = 0..=1,
        require_equals = true,
        default_value = "linkage",
        default_missing_value = "linkage"
    )]
    functions: Functions,

    /// One line per frame: `NAME at FILE:LINE:COLUMN`, inlined frames as ` (inlined by) ...`
    /// (`ADDRESS: ` first with -a); indented JSON
    #[arg(long, short = 'p')]
    pretty_print: bool,

    /// Subtract OFFSET from each address before the lookup (output shows it unchanged)
    #[arg(long, value_name = "OFFSET", value_parser = parse_offset)]
    adjust_vma: Option<u64>,

    /// Addresses are absolute addresses of the live process PID (not with --obj)
    #[arg(long, value_name = "PID", conflicts_with = "obj")]
    pid: Option<u32>,

    /// Addresses are kernel addresses, looked up in /proc/kallsyms (or --kallsyms FILE)
    #[arg(long, conflicts_with = "obj")]
    kernel: bool,

    /// The kallsyms file for --kernel (implies --kernel); default /proc/kallsyms
    #[arg(long, value_name = "FILE", conflicts_with = "obj")]
    kallsyms: Option<PathBuf>,

    /// With --kernel: the kernel image with symbols and DWARF, for names and source lines of
    /// kernel-image addresses (matched to kallsyms by _stext: the KASLR offset)
    #[arg(long, value_name = "FILE", conflicts_with = "obj")]
    vmlinux: Option<PathBuf>,

    /// With --kernel: a directory with modules' .ko files (searched through its modules.dep,
    /// else walked), for names, sizes and source lines of module addresses; repeatable;
    /// default /lib/modules/$(uname -r)
    #[arg(long, value_name = "DIR", conflicts_with = "obj")]
    modules_dir: Vec<PathBuf>,

    /// With --kernel: where modules' load addresses are (NAME/sections/*); default
    /// /sys/module (readable by root only), or a copy taken on the traced machine
    #[arg(long, value_name = "DIR", conflicts_with = "obj")]
    sys_module: Option<PathBuf>,

    /// Input is a stack dump (bpftrace map output with raw stacks); see STACK DUMPS in --help
    #[arg(long)]
    stacks: bool,

    /// With stack-dump input, print folded stacks `outer;...;inner COUNT` (implies --stacks)
    #[arg(long)]
    folded: bool,

    /// Names -> addresses: list the functions of --obj (or, with --kernel, of kallsyms) whose
    /// name matches PATTERN, one `FILE_OFFSET SIZE NAME` line each; see NAMES in --help
    #[arg(long, value_name = "PATTERN", conflicts_with_all = ["addresses", "input", "pid", "stacks", "folded"])]
    find: Option<String>,

    /// With --find: also print each match as perf probe's and bpftrace's probe targets;
    /// with --find-usdt, bpftrace's and uprobe_events' (with the semaphore's ref_ctr_offset)
    #[arg(long)]
    probe_spec: bool,

    /// USDT probes: list the .note.stapsdt probes of --obj FILE (or of every file of --pid
    /// PID) whose provider:name matches the glob PATTERN; see USDT PROBES in --help
    #[arg(long, value_name = "PATTERN", conflicts_with_all = ["addresses", "input", "find", "stacks", "folded", "kernel"])]
    find_usdt: Option<String>,

    /// Print the version
    #[arg(long, short = 'v', action = ArgAction::Version)]
    version: (),
}

fn parse_offset(s: &str) -> Result<u64, String> {
    input::parse_number(s.as_bytes())
        .ok_or_else(|| format!("`{s}` is not a number (0x-prefixed hex, octal or decimal)"))
}

/// Rewrites llvm-symbolizer's spellings that clap cannot express.
fn normalize_args(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    args.map(|arg| {
        let replacement = match arg.to_str() {
            Some("-demangle=false") | Some("--demangle=false") => "--no-demangle",
            Some("-demangle=true") | Some("--demangle=true") => "--demangle",
            Some("--inlining") | Some("--inlining=true") => "--inlines",
            Some("--inlining=false") => "--no-inlines",
            _ => return arg,
        };
        OsString::from(replacement)
    })
    .collect()
}

/// One input line or argument waiting for its answer.
enum Item {
    Query {
        kind: Kind,
        /// Where the address is looked up.
        route: Route,
        /// The address as given (printed).
        addr: u64,
        /// `Route::Elf`: the module's index in `Engine::modules`.
        module: usize,
        /// `--pid` and `--kernel` queries: the module to report and the outcome, once
        /// looked up.
        live: Option<(String, Outcome<'static>)>,
    },
    Invalid {
        line: Vec<u8>,
        module: String,
    },
}

/// A module the input named (or `--obj`), looked up once per distinct path.
struct Module {
    /// The path as the input gave it.
    given: Vec<u8>,
    /// The path to open (differs from `given` only for the demo's relative paths).
    open: PathBuf,
    /// The name printed in JSON (`ModuleName`).
    name: String,
    /// It failed to open: reported once, not retried (as llvm-symbolizer does).
    failed: bool,
    /// The current batch's queries of this module, as indexes into `Engine::pending`.
    queued: Vec<usize>,
    /// For a relocatable file (`.o`, `.ko`): its code sections' layout addresses and sizes,
    /// in section order; `None` until the module is first looked up, empty for other files.
    code_sections: Option<Vec<(u64, u64)>>,
}

/// The code sections of a relocatable file at `path` (see [`Module::code_sections`]); empty
/// for other files, and for a file that does not open (the library call then says why).
fn code_sections(path: &Path) -> Vec<(u64, u64)> {
    match stacksym::elf::ElfFile::open(path) {
        Ok(elf) => elf
            .relocatable_sections()
            .iter()
            .filter(|section| section.executable)
            .map(|section| (section.addr.0, section.size))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// An address given for a relocatable file, as llvm-symbolizer and binutils `addr2line` read
/// it: an offset into the first code section long enough to hold it (with one `.text`, an
/// offset into it), turned into the layout address the library takes. `u64::MAX` (which no
/// symbol holds) past every code section.
fn relocatable_addr(sections: &[(u64, u64)], offset: u64) -> u64 {
    sections
        .iter()
        .find(|&&(_, size)| offset < size)
        .and_then(|&(addr, _)| addr.checked_add(offset))
        .unwrap_or(u64::MAX)
}

/// What one batch's library call gave for a module.
enum ModuleAnswers {
    /// No query of the batch named the module.
    Unused,
    Symbols(stacksym::Symbols),
    /// The module cannot be read: the message for its first query (JSON prints it there,
    /// as llvm-symbolizer does), then `None`.
    Failed(Option<String>),
}

/// Largest batch; bounds memory when a huge dump arrives all at once.
const MAX_BATCH: usize = 1 << 14;

struct Engine<W: Write> {
    symbolizer: Symbolizer,
    printer: Printer,
    out: W,
    obj: Option<PathBuf>,
    adjust_vma: u64,
    /// Demo mode: where relative module paths are looked up when not found from the cwd.
    fallback_dir: Option<PathBuf>,
    /// Live modules (`--pid`, `--kernel`) that failed to open: reported once.
    failed: HashSet<String>,
    /// Every module met so far; `module_index` finds one by its path as given, `last_module`
    /// is the one the previous query named (input usually names one module many times).
    modules: Vec<Module>,
    module_index: HashMap<Vec<u8>, usize>,
    last_module: Option<usize>,
    pending: Vec<Item>,
    /// Per pending query of `Route::Elf`: its place in its module's batch.
    position: Vec<usize>,
    /// The addresses of one module's batch (reused).
    addrs: Vec<u64>,
    /// `--pid` and `--kernel`.
    live: Live,
    /// Set when the `--pid` process could not be inspected (it exited): exit code 1.
    live_failed: bool,
    /// Stack-dump input: `Some(true)` given (`--stacks`, `--folded`), `Some(false)` detected
    /// from each input's first line, `None` never (positional addresses).
    stacks: Option<bool>,
    /// `--folded`.
    folded: bool,
    /// Whether names are demangled (chooses the DWARF names' spelling).
    demangle: bool,
}

impl<W: Write> Engine<W> {
    /// Parses one line (or argument) and queues it. `origin` names it in messages.
    fn push(&mut self, line: &[u8], origin: &dyn Fn() -> String) {
        match parse_line(line, self.obj.is_some() || self.live.is_active()) {
            Parsed::Skip => {}
            Parsed::Query { kind, module, addr } => {
                // A sanitizer frame names its module; anything else goes to --pid/--kernel.
                let route = match module {
                    Some(_) => Route::Elf,
                    None => self.live.route(addr.wrapping_sub(self.adjust_vma)),
                };
                let module = if route == Route::Elf {
                    // The parser returns a module whenever --obj is absent.
                    match self.module(module) {
                        Some(module) => module,
                        None => return,
                    }
                } else {
                    0
                };
                self.pending.push(Item::Query {
                    kind,
                    route,
                    addr,
                    module,
                    live: None,
                });
            }
            Parsed::Invalid { module, reason } => {
                eprintln!(
                    "symbolize: {}: cannot parse `{}`: {reason}",
                    origin(),
                    String::from_utf8_lossy(line)
                );
                let module = match module {
                    Some(given) => String::from_utf8_lossy(given).into_owned(),
                    None => self
                        .obj
                        .as_ref()
                        .map(|m| m.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                };
                self.pending.push(Item::Invalid {
                    line: line.to_vec(),
                    module,
                });
            }
        }
    }

    /// The index in `modules` of the module `given` names (`None`: `--obj`), added on its
    /// first mention; `None` without either.
    fn module(&mut self, given: Option<&[u8]>) -> Option<usize> {
        let obj_bytes;
        let given = match given {
            Some(given) => given,
            None => {
                obj_bytes = self.obj.as_ref()?.as_os_str().as_encoded_bytes();
                obj_bytes
            }
        };
        if let Some(last) = self.last_module {
            if self.modules[last].given == given {
                return Some(last);
            }
        }
        let index = match self.module_index.get(given) {
            Some(&index) => index,
            None => {
                let path = input::bytes_to_path(given);
                let index = self.modules.len();
                self.modules.push(Module {
                    given: given.to_vec(),
                    open: self.resolve(&path),
                    name: path.to_string_lossy().into_owned(),
                    failed: false,
                    queued: Vec::new(),
                    code_sections: None,
                });
                self.module_index.insert(given.to_vec(), index);
                index
            }
        };
        self.last_module = Some(index);
        Some(index)
    }

    fn resolve(&self, module: &Path) -> PathBuf {
        if let Some(dir) = &self.fallback_dir {
            if module.is_relative() && !module.exists() && dir.join(module).exists() {
                return dir.join(module);
            }
        }
        module.to_path_buf()
    }

    /// Answers and prints everything queued: one `symbolize` call per module, then the
    /// answers in input order, printed from the library's results as they are (nothing
    /// copied per address).
    fn flush(&mut self) -> io::Result<()> {
        self.position.clear();
        self.position.resize(self.pending.len(), 0);
        for (i, item) in self.pending.iter().enumerate() {
            if let Item::Query {
                route: Route::Elf,
                module,
                ..
            } = item
            {
                let queued = &mut self.modules[*module].queued;
                self.position[i] = queued.len();
                queued.push(i);
            }
        }
        let answers: Vec<ModuleAnswers> = (0..self.modules.len()).map(|m| self.lookup(m)).collect();
        self.lookup_live();
        let mut pending = std::mem::take(&mut self.pending);
        let printed = self.print(&pending, &answers);
        pending.clear();
        self.pending = pending;
        printed?;
        self.out.flush()
    }

    /// Prints the answers of `pending`, in order.
    fn print(&mut self, pending: &[Item], answers: &[ModuleAnswers]) -> io::Result<()> {
        let Engine {
            printer,
            out,
            modules,
            position,
            demangle,
            ..
        } = self;
        let mut messages: Vec<Option<String>> = answers
            .iter()
            .map(|a| match a {
                ModuleAnswers::Failed(message) => message.clone(),
                _ => None,
            })
            .collect();
        // One frame buffer for every answer.
        let mut lines: Vec<Line<'_>> = Vec::new();
        for (i, item) in pending.iter().enumerate() {
            let (kind, addr, module, symbols) = match item {
                Item::Invalid { line, module } => {
                    printer.invalid(out, line, module)?;
                    continue;
                }
                Item::Query {
                    kind,
                    addr,
                    live: Some((module, outcome)),
                    ..
                } => {
                    printer.answer(out, *kind, module, *addr, outcome)?;
                    continue;
                }
                Item::Query {
                    kind, addr, module, ..
                } => (*kind, *addr, *module, &answers[*module]),
            };
            let name = &modules[module].name;
            let symbols = match symbols {
                ModuleAnswers::Symbols(symbols) => symbols,
                ModuleAnswers::Failed(_) | ModuleAnswers::Unused => {
                    let outcome = Outcome::ModuleError(messages[module].take());
                    printer.answer(out, kind, name, addr, &outcome)?;
                    continue;
                }
            };
            let at = position[i];
            lines.clear();
            let answer = match symbols.get(at) {
                Some(sym) => {
                    lines.extend(sym.frames.iter().map(|f| line_of(f, *demangle)));
                    answer_of(&sym, symbols.debug_file(), &lines)
                }
                // Lines that no symbol or function covers: `??` at FILE:LINE, as
                // llvm-symbolizer prints them.
                None if !symbols.lines(at).is_empty() => {
                    lines.extend(symbols.lines(at).iter().map(|f| line_of(f, *demangle)));
                    Answer {
                        name: Cow::Borrowed(""),
                        start: 0,
                        size: 0,
                        offset: 0,
                        version: None,
                        origin: Origin::Elf,
                        has_symbol: false,
                        frames: Some(Lines::Borrowed(&lines)),
                    }
                }
                None => {
                    printer.answer(out, kind, name, addr, &Outcome::NotFound)?;
                    continue;
                }
            };
            printer.answer(out, kind, name, addr, &Outcome::Found(answer))?;
        }
        Ok(())
    }

    /// Answers the queued `--pid` and `--kernel` queries.
    fn lookup_live(&mut self) {
        let mut process_items = Vec::new();
        let mut process_addrs = Vec::new();
        for (i, item) in self.pending.iter_mut().enumerate() {
            let Item::Query {
                route, addr, live, ..
            } = item
            else {
                continue;
            };
            let addr = addr.wrapping_sub(self.adjust_vma);
            match route {
                Route::Elf => {}
                Route::Kernel => {
                    *live = Some(resolved_outcome(
                        self.live.kernel(&self.symbolizer, addr, self.demangle),
                        &mut self.failed,
                    ));
                }
                Route::Process => {
                    process_items.push(i);
                    process_addrs.push(addr);
                }
            }
        }
        if process_items.is_empty() {
            return;
        }
        let results = if self.live_failed {
            None // reported once already; the process is gone
        } else {
            match self
                .live
                .process(&self.symbolizer, &process_addrs, self.demangle)
            {
                Ok(results) => Some(results),
                Err(err) => {
                    eprintln!("symbolize: {err}");
                    self.live_failed = true;
                    None
                }
            }
        };
        let results =
            results.unwrap_or_else(|| vec![Resolved::NotFound(String::new()); process_items.len()]);
        for (i, resolved) in process_items.into_iter().zip(results) {
            if let Item::Query { live, .. } = &mut self.pending[i] {
                *live = Some(resolved_outcome(resolved, &mut self.failed));
            }
        }
    }

    /// One library call for the queued queries of module `m` (emptied).
    fn lookup(&mut self, m: usize) -> ModuleAnswers {
        let module = &mut self.modules[m];
        if module.queued.is_empty() {
            return ModuleAnswers::Unused;
        }
        self.addrs.clear();
        let code = module
            .code_sections
            .get_or_insert_with(|| code_sections(&module.open));
        for &i in &module.queued {
            if let Item::Query { addr, .. } = &self.pending[i] {
                let addr = addr.wrapping_sub(self.adjust_vma);
                if code.is_empty() {
                    self.addrs.push(addr);
                } else {
                    self.addrs.push(relocatable_addr(code, addr));
                }
            }
        }
        module.queued.clear();
        if module.failed {
            return ModuleAnswers::Failed(None);
        }
        match self.symbolizer.symbolize(
            &Source::Elf { path: &module.open },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&self.addrs)),
        ) {
            Ok(symbols) => ModuleAnswers::Symbols(symbols),
            Err(err) => {
                // The error's text names the path and the problem.
                eprintln!("symbolize: error reading file: {err}");
                // JSON's ModuleName names the file already; like llvm-symbolizer, the message
                // then says only what is wrong.
                let text = err.to_string();
                let prefix = format!("{}: ", err.path().display());
                let message = text.strip_prefix(&prefix).unwrap_or(&text).to_string();
                module.failed = true;
                ModuleAnswers::Failed(Some(message))
            }
        }
    }

    /// Reads `reader` line by line. Queries are batched while more input is already
    /// buffered, and answered before any read that could block. Returns the number of lines.
    fn run_reader<R: Read>(&mut self, reader: R, name: &str) -> io::Result<usize> {
        let mut reader = BufReader::with_capacity(1 << 16, reader);
        let mut line = Vec::new();
        let mut count = 0;
        if let Some(given) = self.stacks {
            // Detection: the first line that is not blank or bpftrace's "Attaching N
            // probes..." opens a block.
            let mut head = Vec::new();
            let mut lines = Vec::new();
            let is_stacks = loop {
                line.clear();
                if reader.read_until(b'\n', &mut line)? == 0 {
                    break given;
                }
                head.extend_from_slice(&line);
                lines.push(line.clone());
                let trimmed = line.trim_ascii();
                let comment = trimmed.first() == Some(&b'#')
                    && !trimmed.get(1).is_some_and(u8::is_ascii_digit);
                let preamble = trimmed.is_empty() || comment || trimmed.starts_with(b"Attaching ");
                if given || !preamble {
                    break given || stack_parse::is_opener(trimmed);
                }
            };
            if is_stacks {
                reader.read_to_end(&mut head)?;
                self.flush()?;
                if !stacks::run(
                    &head,
                    &self.live,
                    &self.symbolizer,
                    self.folded,
                    &mut self.out,
                )? {
                    self.live_failed = true;
                }
                return Ok(head.split(|&b| b == b'\n').count());
            }
            for mut line in lines {
                count += 1;
                line.retain(|&b| b != b'\n' && b != b'\r');
                let number = count;
                self.push(&line, &|| format!("{name}:{number}"));
            }
        }
        loop {
            if !self.pending.is_empty() && reader.buffer().is_empty() {
                self.flush()?;
            }
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            count += 1;
            // As llvm-symbolizer: drop every CR and LF.
            line.retain(|&b| b != b'\n' && b != b'\r');
            let number = count;
            self.push(&line, &|| format!("{name}:{number}"));
            if self.pending.len() >= MAX_BATCH {
                self.flush()?;
            }
        }
        self.flush()?;
        Ok(count)
    }
}

/// A `--pid`/`--kernel` answer as the printer takes it: the module to report and the outcome.
/// A file that cannot be read is reported on stderr once (`failed` remembers it).
fn resolved_outcome(
    resolved: Resolved,
    failed: &mut HashSet<String>,
) -> (String, Outcome<'static>) {
    match resolved {
        Resolved::Found(answer, module) => (module, Outcome::Found(answer)),
        Resolved::NotFound(module) => (module, Outcome::NotFound),
        Resolved::Error(module, message) => {
            if failed.insert(module.clone()) {
                eprintln!("symbolize: error reading file: {message}");
                (module, Outcome::ModuleError(Some(message)))
            } else {
                (module, Outcome::ModuleError(None))
            }
        }
    }
}

/// What stops kernel lookups from `kernel`, found by looking one address up: kallsyms that
/// cannot be used or hides its addresses, a vmlinux that cannot be read or matched.
fn kernel_problem(symbolizer: &Symbolizer, kernel: stacksym::KernelSource<'_>) -> Option<String> {
    let one = stacksym::AbsAddr::from_raw_slice(&[u64::MAX]);
    match symbolizer.symbolize(&Source::Kernel(kernel), Input::AbsAddrs(one)) {
        Err(err) => Some(err.to_string()),
        Ok(symbols) => match symbols.not_found(0) {
            Some(stacksym::NotFound::KernelAddrsHidden(err)) => Some(err.to_string()),
            _ => None,
        },
    }
}

/// The repository the tool was built from (cli/'s parent), where the demo dump lies.
fn repo_dir() -> PathBuf {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR"));
    cli.parent().unwrap_or(cli).to_path_buf()
}

/// The demo dump, from the current directory or else from the repository's directory.
fn demo_dump() -> Option<(PathBuf, PathBuf)> {
    let rel = Path::new("testdata/dumps/demo.txt");
    if rel.is_file() {
        return Some((rel.to_path_buf(), repo_dir()));
    }
    let dir = repo_dir();
    let path = dir.join(rel);
    path.is_file().then_some((path, dir))
}

fn run_demo<W: Write>(engine: &mut Engine<W>) -> io::Result<bool> {
    let Some((path, dir)) = demo_dump() else {
        eprintln!(
            "symbolize: no arguments, and the demo dump testdata/dumps/demo.txt is neither in \
             the current directory nor in {}; see --help",
            repo_dir().display()
        );
        return Ok(false);
    };
    eprintln!(
        "symbolize: no arguments: symbolizing the demo dump {} (see --help for real use)",
        path.display()
    );
    engine.fallback_dir = Some(dir);
    let file = File::open(&path)?;
    engine.run_reader(file, &path.to_string_lossy())?;
    Ok(true)
}

fn run(args: Args, no_arguments: bool) -> io::Result<bool> {
    let demangle = !args.no_demangle;
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let mut builder = Symbolizer::builder().demangle(demangle).threads(threads);
    if !args.debug_file_directory.is_empty() {
        // As llvm-symbolizer: the given directories replace the default /usr/lib/debug.
        builder = builder.debug_dirs(args.debug_file_directory.clone());
    }
    #[cfg(feature = "debuginfod")]
    {
        builder = builder.debuginfod(debuginfod::config(
            &args.debuginfod_urls,
            args.no_debuginfod,
        ));
    }
    let symbolizer = builder.build();
    if let Some(pattern) = &args.find_usdt {
        let find = usdt::FindUsdt {
            pattern,
            obj: args.obj.as_deref(),
            pid: args.pid,
            probe_spec: args.probe_spec,
            json: matches!(args.output_style, Style::Json),
        };
        let stdout = io::stdout();
        let mut out = io::BufWriter::new(stdout.lock());
        let ok = usdt::run(&find, &symbolizer, &mut out)?;
        out.flush()?;
        return Ok(ok);
    }
    if args.probe_spec && args.find.is_none() {
        eprintln!("symbolize: --probe-spec goes with --find or --find-usdt");
        return Ok(false);
    }
    if let Some(pattern) = &args.find {
        if args.obj.is_none() && !args.kernel && args.kallsyms.is_none() {
            eprintln!("symbolize: --find needs --obj FILE, or --kernel (or --kallsyms FILE)");
            return Ok(false);
        }
        let find = find::Find {
            pattern,
            obj: args.obj.as_deref(),
            kallsyms: args.kallsyms.as_deref(),
            probe_spec: args.probe_spec,
            demangle,
        };
        let stdout = io::stdout();
        let mut out = io::BufWriter::new(stdout.lock());
        let ok = find::run(&find, &symbolizer, &mut out)?;
        out.flush()?;
        return Ok(ok);
    }
    let lone_dash = args.addresses.len() == 1 && args.addresses[0] == "-";
    let positional = !args.addresses.is_empty() && !lone_dash;
    let printer = Printer::new(PrinterOptions {
        style: args.output_style,
        print_address: args.print_address,
        pretty: args.pretty_print,
        functions: args.functions,
        inlines: !args.no_inlines,
        paths: if args.basenames {
            Paths::Base
        } else if args.relativenames {
            Paths::Relative
        } else {
            Paths::Full
        },
        json_array: positional,
    });
    if positional && (args.stacks || args.folded) {
        eprintln!(
            "symbolize: --stacks and --folded read a stack dump from stdin or --input, not \
             addresses given as arguments"
        );
        return Ok(false);
    }
    let mut live = Live::default();
    if args.kernel || args.kallsyms.is_some() {
        let path = args
            .kallsyms
            .clone()
            .unwrap_or_else(|| PathBuf::from(stacksym::kernel::PROC_KALLSYMS));
        live.kallsyms = Some(path);
        live.modules = Some(kernel_modules(&args));
    }
    if (!args.modules_dir.is_empty() || args.sys_module.is_some()) && live.kallsyms.is_none() {
        eprintln!("symbolize: --modules-dir and --sys-module need --kernel (or --kallsyms FILE)");
        return Ok(false);
    }
    if args.vmlinux.is_some() && live.kallsyms.is_none() {
        eprintln!("symbolize: --vmlinux needs --kernel (or --kallsyms FILE)");
        return Ok(false);
    }
    live.vmlinux = args.vmlinux.clone();
    // Read (and cached) now: a kallsyms file that cannot be used or a vmlinux that does not
    // match fails here, once, not per address.
    if let Some(err) = live
        .kernel_source()
        .and_then(|kernel| kernel_problem(&symbolizer, kernel))
    {
        // A vmlinux that cannot be read or matched costs its source lines, not the run:
        // kallsyms still names the kernel, as perf goes on with kallsyms when its vmlinux is
        // missing. Checked again without it, so that a kallsyms problem still stops.
        let vmlinux = live.vmlinux.take();
        let kallsyms_ok = vmlinux.is_some()
            && live
                .kernel_source()
                .is_some_and(|kernel| kernel_problem(&symbolizer, kernel).is_none());
        if kallsyms_ok {
            eprintln!("symbolize: note: {err}; kernel names from kallsyms only");
        } else {
            // The library's message names the file and, for zeroed addresses, explains
            // kptr_restrict and how to lift it.
            eprintln!("symbolize: {err}");
            return Ok(false);
        }
    }
    if let Some(pid) = args.pid {
        let process = Process::new(pid);
        if let Err(err) = process.read_maps() {
            // The message names the pid ("/proc/PID/maps: process PID does not exist ...").
            eprintln!("symbolize: --pid {pid}: {err}");
            return Ok(false);
        }
        live.process = Some(process);
    }
    let stdout = io::stdout();
    let mut engine = Engine {
        symbolizer,
        printer,
        out: io::BufWriter::new(stdout.lock()),
        obj: args.obj,
        adjust_vma: args.adjust_vma.unwrap_or(0),
        fallback_dir: None,
        failed: HashSet::new(),
        modules: Vec::new(),
        module_index: HashMap::new(),
        last_module: None,
        pending: Vec::new(),
        position: Vec::new(),
        addrs: Vec::new(),
        live,
        live_failed: false,
        stacks: if positional {
            None
        } else {
            Some(args.stacks || args.folded)
        },
        folded: args.folded,
        demangle,
    };
    let mut ok = true;
    if positional {
        for (i, arg) in args.addresses.iter().enumerate() {
            engine.push(arg.as_encoded_bytes(), &|| format!("argument {}", i + 1));
        }
        engine.flush()?;
    } else if !args.input.is_empty() {
        for path in &args.input {
            if path == Path::new("-") {
                engine.run_reader(io::stdin(), "<stdin>")?;
                continue;
            }
            match File::open(path) {
                Ok(file) => {
                    engine.run_reader(file, &path.to_string_lossy())?;
                }
                Err(err) => {
                    eprintln!("symbolize: cannot read {}: {err}", path.display());
                    ok = false;
                }
            }
        }
    } else if no_arguments && io::stdin().is_terminal() {
        ok = run_demo(&mut engine)?;
    } else {
        let lines = engine.run_reader(io::stdin(), "<stdin>")?;
        if no_arguments && lines == 0 {
            ok = run_demo(&mut engine)?;
        }
    }
    engine.printer.finish(&mut engine.out)?;
    engine.out.flush()?;
    if let Some(modules) = &engine.live.modules {
        // Answered with kallsyms' names only; say why, once per module, after the output.
        for (name, error) in modules.problems() {
            eprintln!("symbolize: note: module {name}: kallsyms names only: {error}");
        }
    }
    let ok = ok && !engine.live_failed;
    // The output is written; freeing the symbolizer's caches (every name met, the DWARF
    // tables) would only delay the exit (5 % of a run over 100,000 addresses, measured).
    std::mem::forget(engine);
    Ok(ok)
}

/// `stacksym symbolize ARGS`: `argv` starts with the command's name, as clap expects.
pub fn main(argv: Vec<OsString>) -> ExitCode {
    let argv = normalize_args(argv.into_iter());
    let no_arguments = argv.len() <= 1;
    let args = match Args::try_parse_from(argv) {
        Ok(args) => args,
        Err(err) => {
            let _ = err.print();
            // llvm-symbolizer exits with 1 on a bad flag; --help and --version with 0.
            return if err.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(args, no_arguments) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        // `symbolize ... | head` closes the pipe early: not an error worth a message.
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("symbolize: {err}");
            ExitCode::from(1)
        }
    }
}

/// The name as llvm-symbolizer shows it: a name from the file's own `.symtab` keeps its
/// `@VER` / `@@VER` suffix, which the library reports apart. A name from a separate debug
/// file's `.symtab` (`debug_file`) does not: llvm-symbolizer names symbols from the binary's
/// own tables, where `.dynsym` keeps versions apart.
fn shown_name<'a>(sym: &stacksym::Sym<'a>, debug_file: Option<&Path>) -> Cow<'a, str> {
    let from_debug_file = debug_file == Some(sym.symbol_file);
    match (sym.origin, sym.version) {
        (stacksym::NameOrigin::Table(stacksym::elf::SymbolOrigin::Symtab), Some(version))
            if !from_debug_file =>
        {
            let at = if sym.version_hidden { "@" } else { "@@" };
            Cow::Owned(format!("{}{at}{version}", sym.name))
        }
        _ => Cow::Borrowed(sym.name),
    }
}

/// An answer from the library's `Sym`: the symbol, and its DWARF frames `lines` (made by
/// [`line_of`] from `sym.frames`).
fn answer_of<'a>(
    sym: &stacksym::Sym<'a>,
    debug_file: Option<&Path>,
    lines: &'a [Line<'a>],
) -> Answer<'a> {
    let has_symbol = matches!(sym.origin, stacksym::NameOrigin::Table(_));
    Answer {
        name: shown_name(sym, debug_file),
        start: sym.addr.raw(),
        size: sym.size,
        offset: sym.offset,
        version: sym.version.map(Cow::Borrowed),
        origin: Origin::Elf,
        has_symbol,
        frames: Some(Lines::Borrowed(lines)),
    }
}

/// Where `--kernel` finds modules' `.ko` files and load addresses: the flags, else the
/// running kernel's `/lib/modules/$(uname -r)` and `/sys/module`.
fn kernel_modules(args: &Args) -> stacksym::kernel::KernelModules {
    use stacksym::kernel::{KernelModules, SYS_MODULE};
    let dirs = if args.modules_dir.is_empty() {
        vec![KernelModules::running_kernel_dir()]
    } else {
        args.modules_dir.clone()
    };
    let sys_module = args
        .sys_module
        .clone()
        .unwrap_or_else(|| PathBuf::from(SYS_MODULE));
    KernelModules::new(dirs, sys_module)
}

/// A library frame as the printer takes it, borrowed; the function name demangled or not
/// as `demangle` says.
pub fn line_of(frame: &stacksym::InlineFrame, demangle: bool) -> Line<'_> {
    let function = frame.function.as_deref();
    Line {
        function: function.map(|f| {
            Cow::Borrowed(if demangle {
                f.demangled.as_str()
            } else {
                f.raw.as_str()
            })
        }),
        // DW_AT_name, as llvm-symbolizer's `--functions=short`; derived from the
        // demangled name where the library could not read it.
        short: function.map(|f| match &f.short {
            Some(short) => Cow::Borrowed(short.as_str()),
            None => Cow::Owned(output::short_name(&f.raw, &f.demangled)),
        }),
        file: frame.file.as_deref().map(Cow::Borrowed),
        line: frame.line.unwrap_or(0),
        column: frame.column.unwrap_or(0),
        discriminator: frame.discriminator.unwrap_or(0),
        decl_file: function.and_then(|f| f.decl_file.as_deref().map(Cow::Borrowed)),
        decl_line: function.and_then(|f| f.decl_line).unwrap_or(0),
        start: function.and_then(|f| f.start).map(|s| s.0),
    }
}

/// Frames that outlive their batch (`--pid`, kernel and stack-dump answers), owned.
pub fn owned_lines(frames: &[stacksym::InlineFrame], demangle: bool) -> Lines<'static> {
    Lines::Owned(
        frames
            .iter()
            .map(|f| line_of(f, demangle).into_owned())
            .collect(),
    )
}
