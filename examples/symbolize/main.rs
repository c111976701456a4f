//! `symbolize`: symbolize raw address dumps, with llvm-symbolizer's flags, answers and layout.
//!
//! ```text
//! cargo run --release --example symbolize                                   # the demo dump
//! cargo run --release --example symbolize -- --obj testdata/bin/c-nopie 0x401260
//! grep -v '^#' testdata/dumps/demo.txt | cargo run --example symbolize -- --output-style=JSON
//! cargo run --example symbolize -- --input asan-report.txt
//! ```
//!
//! See `--help` (`AFTER_LONG_HELP` below) for every flag and for where this tool
//! deliberately differs from llvm-symbolizer 14.

mod input;
mod output;

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgAction, Parser};
use stacksym::{Input, Source, Symbolizer};

use input::{parse_line, Kind, Parsed};
use output::{Answer, Functions, Outcome, Printer, Style};

const ABOUT: &str = "Symbolize raw address dumps: llvm-symbolizer's flags, answers and layout, \
from ELF symbol tables (no DWARF yet)";

const LONG_ABOUT: &str = "\
Symbolize raw address dumps: pipe a crash log, a sanitizer report or a hex dump through it
and get llvm-symbolizer's answers, in llvm-symbolizer's layout, from the ELF symbol tables
(.symtab, .dynsym, PLT entries). There is no DWARF support yet: no source locations (always
??:0:0) and no inline frames.";

const AFTER_LONG_HELP: &str = "\
INPUT
  Each query is a positional argument or one line of input. As in llvm-symbolizer it is
      [CODE |DATA ][MODULE ]ADDRESS [ignored...]
  MODULE is there only when --obj is not: a path without blanks, or a \"quoted\" or
  'quoted' path. ADDRESS is read as llvm-symbolizer reads it: 0x1a2b hex, 0b101 binary,
  0o17 and 017 octal, and 1234 DECIMAL (GNU addr2line would read 1234 as hex). It is an ELF
  virtual address (for a PIE or a shared library: the runtime address minus the load base).
  Text after the address is ignored. A query that does not parse is echoed back on stdout,
  as llvm-symbolizer does, and explained on stderr with its line number.
  Extensions to llvm-symbolizer's syntax:
  - a line holding a sanitizer frame's (PATH+0xOFFSET), e.g.
        #3 0x55d1c3a91a2b in foo (/usr/bin/app+0x1a2b)
    asks for OFFSET in PATH, with or without --obj (OFFSET is pc minus the module base,
    which is the ELF virtual address); a #N frame line without it is invalid;
  - blank lines and '#' comments ('#' not followed by a digit) are skipped
    (llvm-symbolizer echoes them back);
  - a tab separates fields like a space.

  Where queries come from:
    ADDRESS arguments     those, in order (as llvm-symbolizer); '-' alone means stdin
                          (llvm-symbolizer would echo '-' back);
    --input FILE          the lines of FILE ('-': stdin); repeatable;
    neither               the lines of stdin (as llvm-symbolizer), except that
    no arguments at all   with stdin a terminal or empty, symbolizes the demo dump
                          testdata/dumps/demo.txt instead (from the current directory, else
                          from this crate's directory; its relative module paths likewise),
                          with a note on stderr. llvm-symbolizer would wait for stdin.

OUTPUT (--output-style)
  LLVM  per address: the function name (?? if none), ??:0:0, a blank line.
        DATA queries: the name, then START SIZE in decimal, then a blank line.
  GNU   the same without the blank line, and ??:0 as the location (llvm-symbolizer's GNU
        style; GNU addr2line itself prints ??:? when it knows the function).
  JSON  llvm-symbolizer's objects and keys (sorted, compact):
          {\"Address\":\"0x..\",\"ModuleName\":\"..\",\"Symbol\":[{\"Column\":0,\"Discriminator\":0,
           \"FileName\":\"\",\"FunctionName\":\"..\",\"Line\":0,\"StartAddress\":\"0x..\",
           \"StartFileName\":\"\",\"StartLine\":0}]}
        plus, where a symbol was found, \"Offset\" (address minus symbol start, hex string),
        \"Size\" (symbol size, hex string) and \"Version\" (ELF symbol version, versioned
        symbols only). DATA queries give \"Data\":{\"Name\",\"Size\",\"Start\"}. Addresses given
        as arguments print one JSON array; input lines print one object per line, as
        llvm-symbolizer does. An unreadable module gives {\"Error\":{\"Message\":..}} for its
        first address and an empty \"Symbol\" list for the others, as llvm-symbolizer does.
  Names come from the stacksym library, so they can differ from llvm-symbolizer's: a PLT
  entry is named target@plt (llvm-symbolizer names the preceding symbol, often _init);
  among aliases (several names at one address) the library prefers GLOBAL over WEAK over
  LOCAL, then the first in the table (llvm-symbolizer takes the alphabetically first);
  a .symtab name keeps its version as the file spells it (vfunc@@VERS_2, as llvm-symbolizer
  shows it; .dynsym versions are shown only in JSON's \"Version\"); C++ and Rust demanglers
  differ in details ({lambda(int)#1} vs 'lambda'(int), [clone .cold] vs (.cold), legacy
  Rust hashes). Data objects are named too, as
  llvm-symbolizer names them. For a LOCAL symbol, llvm-symbolizer takes a file name from the
  symbol table's preceding STT_FILE entry (demo.c:0:0); stacksym does not report it, so the
  location stays ??:0:0.

ERRORS
  A module that cannot be read (missing, not ELF, a directory...) is reported once on
  stderr, with its path and the reason, and its addresses are answered with ??; the run
  goes on and exits with 0, as llvm-symbolizer does. A bad flag exits with 1, as in
  llvm-symbolizer. An --input FILE that cannot be read is reported and makes the exit
  code 1 (the other inputs are still read).

BATCHING
  Answers come in input order, but queries are batched: one library call per module and
  batch. A batch ends whenever reading more input would block, so an interactive user (or a
  program driving this through a pipe) gets each answer at once.";

#[derive(Debug, Parser)]
#[command(
    name = "symbolize",
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

    /// Print inlined frames; accepted, no effect: no DWARF support yet, so no inline frames
    #[arg(
        long,
        short = 'i',
        visible_alias = "inlining",
        overrides_with = "no_inlines"
    )]
    inlines: bool,

    /// Do not print inlined frames; accepted, no effect (also --inlining=false)
    #[arg(long, overrides_with = "inlines")]
    no_inlines: bool,

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

    /// One line per address: `NAME at ??:0:0` (`ADDRESS: ` first with -a); indented JSON
    #[arg(long, short = 'p')]
    pretty_print: bool,

    /// Subtract OFFSET from each address before the lookup (output shows it unchanged)
    #[arg(long, value_name = "OFFSET", value_parser = parse_offset)]
    adjust_vma: Option<u64>,

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
        /// The module as the input named it (printed in JSON).
        module: PathBuf,
        /// The path to open (differs from `module` only for the demo's relative paths).
        open: PathBuf,
        /// The address as given (printed).
        addr: u64,
        outcome: Option<Outcome>,
    },
    Invalid {
        line: Vec<u8>,
        module: String,
    },
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
    /// Modules that failed to open: reported once, not retried (as llvm-symbolizer does).
    failed: HashSet<PathBuf>,
    pending: Vec<Item>,
}

impl<W: Write> Engine<W> {
    /// Parses one line (or argument) and queues it. `origin` names it in messages.
    fn push(&mut self, line: &[u8], origin: &dyn Fn() -> String) {
        match parse_line(line, self.obj.is_some()) {
            Parsed::Skip => {}
            Parsed::Query { kind, module, addr } => {
                let Some(module) = module.or_else(|| self.obj.clone()) else {
                    return; // the parser returns a module whenever --obj is absent
                };
                let open = self.resolve(&module);
                self.pending.push(Item::Query {
                    kind,
                    module,
                    open,
                    addr,
                    outcome: None,
                });
            }
            Parsed::Invalid { module, reason } => {
                eprintln!(
                    "symbolize: {}: cannot parse `{}`: {reason}",
                    origin(),
                    String::from_utf8_lossy(line)
                );
                let module = module
                    .or_else(|| self.obj.clone())
                    .map(|m| m.to_string_lossy().into_owned())
                    .unwrap_or_default();
                self.pending.push(Item::Invalid {
                    line: line.to_vec(),
                    module,
                });
            }
        }
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
    /// answers in input order.
    fn flush(&mut self) -> io::Result<()> {
        let mut groups: Vec<(PathBuf, Vec<usize>)> = Vec::new();
        let mut group_of: HashMap<PathBuf, usize> = HashMap::new();
        for (i, item) in self.pending.iter().enumerate() {
            if let Item::Query { open, .. } = item {
                let g = *group_of.entry(open.clone()).or_insert_with(|| {
                    groups.push((open.clone(), Vec::new()));
                    groups.len() - 1
                });
                groups[g].1.push(i);
            }
        }
        for (path, items) in groups {
            let outcomes = self.lookup(&path, &items);
            for (i, outcome) in items.into_iter().zip(outcomes) {
                if let Item::Query { outcome: slot, .. } = &mut self.pending[i] {
                    *slot = Some(outcome);
                }
            }
        }
        for item in std::mem::take(&mut self.pending) {
            match item {
                Item::Query {
                    kind,
                    module,
                    addr,
                    outcome,
                    ..
                } => {
                    let outcome = outcome.unwrap_or(Outcome::NotFound);
                    let module = module.to_string_lossy();
                    self.printer
                        .answer(&mut self.out, kind, &module, addr, &outcome)?;
                }
                Item::Invalid { line, module } => {
                    self.printer.invalid(&mut self.out, &line, &module)?;
                }
            }
        }
        self.out.flush()
    }

    /// The outcomes of the queued queries `items`, all of module `path`.
    fn lookup(&mut self, path: &Path, items: &[usize]) -> Vec<Outcome> {
        if self.failed.contains(path) {
            return vec![Outcome::ModuleError(None); items.len()];
        }
        let addrs: Vec<u64> = items
            .iter()
            .map(|&i| match &self.pending[i] {
                Item::Query { addr, .. } => addr.wrapping_sub(self.adjust_vma),
                Item::Invalid { .. } => 0,
            })
            .collect();
        match self
            .symbolizer
            .symbolize(&Source::Elf { path }, Input::VirtAddrs(&addrs))
        {
            Ok(symbols) => symbols
                .iter()
                .map(|sym| match sym {
                    Some(sym) => Outcome::Found(Answer {
                        name: shown_name(&sym),
                        start: sym.addr.0,
                        size: sym.size,
                        offset: sym.offset,
                        version: sym.version.map(str::to_string),
                    }),
                    None => Outcome::NotFound,
                })
                .collect(),
            Err(err) => {
                // The error's text names the path and the problem.
                eprintln!("symbolize: error reading file: {err}");
                // JSON's ModuleName names the file already; like llvm-symbolizer, the message
                // then says only what is wrong.
                let text = err.to_string();
                let prefix = format!("{}: ", err.path().display());
                let message = text.strip_prefix(&prefix).unwrap_or(&text).to_string();
                self.failed.insert(path.to_path_buf());
                let mut outcomes = vec![Outcome::ModuleError(None); items.len()];
                outcomes[0] = Outcome::ModuleError(Some(message));
                outcomes
            }
        }
    }

    /// Reads `reader` line by line. Queries are batched while more input is already
    /// buffered, and answered before any read that could block. Returns the number of lines.
    fn run_reader<R: Read>(&mut self, reader: R, name: &str) -> io::Result<usize> {
        let mut reader = BufReader::with_capacity(1 << 16, reader);
        let mut line = Vec::new();
        let mut count = 0;
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

/// The demo dump, from the current directory or else from this crate's directory.
fn demo_dump() -> Option<(PathBuf, PathBuf)> {
    let rel = Path::new("testdata/dumps/demo.txt");
    if rel.is_file() {
        return Some((rel.to_path_buf(), PathBuf::from(env!("CARGO_MANIFEST_DIR"))));
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = dir.join(rel);
    path.is_file().then_some((path, dir))
}

fn run_demo<W: Write>(engine: &mut Engine<W>) -> io::Result<bool> {
    let Some((path, dir)) = demo_dump() else {
        eprintln!(
            "symbolize: no arguments, and the demo dump testdata/dumps/demo.txt is neither in \
             the current directory nor in {}; see --help",
            env!("CARGO_MANIFEST_DIR")
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
    let symbolizer = Symbolizer::builder().demangle(demangle).build();
    let lone_dash = args.addresses.len() == 1 && args.addresses[0] == "-";
    let positional = !args.addresses.is_empty() && !lone_dash;
    let printer = Printer::new(
        args.output_style,
        args.print_address,
        args.pretty_print,
        args.functions,
        positional,
    );
    let stdout = io::stdout();
    let mut engine = Engine {
        symbolizer,
        printer,
        out: io::BufWriter::new(stdout.lock()),
        obj: args.obj,
        adjust_vma: args.adjust_vma.unwrap_or(0),
        fallback_dir: None,
        failed: HashSet::new(),
        pending: Vec::new(),
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
    Ok(ok)
}

fn main() -> ExitCode {
    let argv = normalize_args(std::env::args_os());
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

/// The name as llvm-symbolizer shows it: a `.symtab` name keeps its `@VER` / `@@VER` suffix,
/// which the library reports apart.
fn shown_name(sym: &stacksym::Sym<'_>) -> String {
    match (sym.origin, sym.version) {
        (stacksym::elf::SymbolOrigin::Symtab, Some(version)) => {
            let at = if sym.version_hidden { "@" } else { "@@" };
            format!("{}{at}{version}", sym.name)
        }
        _ => sym.name.to_string(),
    }
}
