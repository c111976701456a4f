//! The three output styles, laid out byte for byte as llvm-symbolizer 14 lays them out.
//!
//! An answer holds the symbol-table symbol and the DWARF frames at the address (innermost
//! first). [`Printer::shown_frames`] turns them into the frames llvm-symbolizer prints: every
//! frame of the inline chain (or, with `--no-inlines`, one frame: the innermost location
//! under the outer function's name), the outermost frame named by the symbol table with
//! `--functions=linkage`, as llvm-symbolizer does. Without DWARF for the address the location
//! is unknown: `??:0:0` (LLVM), `??:0` (GNU), empty `FileName` and zero `Line`/`Column`
//! (JSON), exactly what llvm-symbolizer prints for an address it finds only in the symbol
//! table.

use std::borrow::Cow;
use std::io::{self, Write};

use clap::ValueEnum;
use serde_json::{json, Value};

use crate::symbolize::input::Kind;

/// `--output-style`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Style {
    /// Per frame: function name, `FILE:LINE:COLUMN`; a blank line per address (llvm-symbolizer's
    /// default).
    #[value(name = "LLVM")]
    Llvm,
    /// Per frame: function name, `FILE:LINE` (llvm-symbolizer's addr2line-like style).
    #[value(name = "GNU")]
    Gnu,
    /// One JSON object per address, one `Symbol` element per frame (see --help).
    #[value(name = "JSON")]
    Json,
}

/// `--functions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Functions {
    /// The linkage name (the default; demangled unless --no-demangle); the function whose
    /// code it is is named by the symbol table, as llvm-symbolizer names it.
    Linkage,
    /// The function's short name (DW_AT_name), derived from the DWARF name; `??` without
    /// DWARF, as in llvm-symbolizer.
    Short,
    /// Print no function name line.
    None,
}

/// How source file paths are printed (`--basenames`, `--relativenames`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paths {
    /// As DWARF gives them, joined with the compilation directory (the default).
    Full,
    /// The file name alone (`-s`, `--basenames`).
    Base,
    /// Without the compilation directory (`--relativenames`); see [`Paths::apply`].
    Relative,
}

impl Paths {
    /// The path to print for `file`. `Relative` strips a leading `./`: the compilation
    /// directory `.` (what `-ffile-prefix-map=DIR=.` leaves) joined with a relative path.
    /// The library does not report the compilation directory, so an absolute one stays.
    pub fn apply(self, file: &str) -> &str {
        match self {
            Paths::Full => file,
            Paths::Base => file.rsplit('/').next().unwrap_or(file),
            Paths::Relative => {
                let mut rest = file;
                while let Some(stripped) = rest.strip_prefix("./") {
                    rest = stripped;
                }
                rest
            }
        }
    }
}

/// One DWARF frame of an answer, borrowed from the library's `InlineFrame` (owned where it
/// must outlive the batch: `--pid`, kernel and stack-dump answers).
#[derive(Debug, Clone, Default)]
pub struct Line<'a> {
    /// The function's name (demangled unless --no-demangle); `None` if DWARF names none.
    pub function: Option<Cow<'a, str>>,
    /// Its short name (`--functions=short`).
    pub short: Option<Cow<'a, str>>,
    pub file: Option<Cow<'a, str>>,
    /// 0: unknown.
    pub line: u32,
    /// 0: unknown.
    pub column: u32,
    /// The line-table row's discriminator (innermost frame only; 0: none).
    pub discriminator: u32,
    /// Where the function is declared (`DW_AT_decl_file`, `DW_AT_decl_line`; 0: unknown):
    /// JSON's `StartFileName` and `StartLine`.
    pub decl_file: Option<Cow<'a, str>>,
    pub decl_line: u32,
    /// Where this copy of the function starts (`DW_AT_low_pc`; an inlined copy's own):
    /// JSON's `StartAddress` where DWARF names the frame.
    pub start: Option<u64>,
}

/// The location of a frame DWARF does not cover: `??:0:0`.
const NO_LINE: Line<'static> = Line {
    function: None,
    short: None,
    file: None,
    line: 0,
    column: 0,
    discriminator: 0,
    decl_file: None,
    decl_line: 0,
    start: None,
};

fn owned(text: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
    text.map(|t| Cow::Owned(t.into_owned()))
}

impl Line<'_> {
    /// The same frame, owning its text.
    pub fn into_owned(self) -> Line<'static> {
        Line {
            function: owned(self.function),
            short: owned(self.short),
            file: owned(self.file),
            line: self.line,
            column: self.column,
            discriminator: self.discriminator,
            decl_file: owned(self.decl_file),
            decl_line: self.decl_line,
            start: self.start,
        }
    }
}

/// The symbol an address resolved to, borrowed from the library's `Sym` (owned where it
/// must outlive the batch).
#[derive(Debug, Clone)]
pub struct Answer<'a> {
    /// The symbol table's name (for a DWARF-only answer: the outermost DWARF name).
    pub name: Cow<'a, str>,
    pub start: u64,
    pub size: u64,
    pub offset: u64,
    pub version: Option<Cow<'a, str>>,
    pub origin: Origin,
    /// False when no symbol covers the address and only DWARF named it: then `start`,
    /// `size` and `offset` mean nothing.
    pub has_symbol: bool,
    /// The DWARF frames, innermost first; `Some(empty)` when DWARF does not cover the
    /// address, `None` when DWARF was not consulted (`--pid`, kernel).
    pub frames: Option<Lines<'a>>,
}

/// An answer's frames: borrowed from a batch, or owned (not `Cow`, which would make
/// `Answer` invariant in its lifetime).
#[derive(Debug, Clone)]
pub enum Lines<'a> {
    Borrowed(&'a [Line<'a>]),
    Owned(Vec<Line<'a>>),
}

impl<'a> std::ops::Deref for Lines<'a> {
    type Target = [Line<'a>];

    fn deref(&self) -> &[Line<'a>] {
        match self {
            Lines::Borrowed(lines) => lines,
            Lines::Owned(lines) => lines,
        }
    }
}

/// Where an answer's symbol came from; kernel symbols print their module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An ELF file (`--obj`, a query's module, or a file mapped by `--pid`'s process).
    Elf,
    /// kallsyms, the kernel image itself (JSON `"Module":"vmlinux"`).
    KernelImage,
    /// kallsyms, a module's symbol: `name [module]` (as perf prints it), JSON `"Module"`.
    KernelModule(String),
}

impl Answer<'_> {
    /// Writes the name line of the LLVM and GNU styles: `name`, or `name [module]` for a
    /// kernel module's symbol.
    fn write_name(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(self.name.as_bytes())?;
        if let Origin::KernelModule(module) = &self.origin {
            write!(w, " [{module}]")?;
        }
        Ok(())
    }
}

/// A printed frame's function name.
#[derive(Debug, Default)]
enum ShownName<'a> {
    /// `??` (JSON: `""`), or no name line with `--functions=none`.
    #[default]
    Unknown,
    /// The symbol table's (text: with a kernel module's ` [module]`).
    Table(&'a Answer<'a>),
    /// DWARF's.
    Dwarf(&'a str),
}

impl ShownName<'_> {
    fn write_text(&self, w: &mut impl Write) -> io::Result<()> {
        match self {
            ShownName::Unknown => w.write_all(b"??"),
            ShownName::Table(answer) => answer.write_name(w),
            ShownName::Dwarf(name) => w.write_all(name.as_bytes()),
        }
    }

    fn json(&self) -> &str {
        match self {
            ShownName::Unknown => "",
            ShownName::Table(answer) => &answer.name,
            ShownName::Dwarf(name) => name,
        }
    }
}

/// One frame as printed.
#[derive(Debug, Default)]
struct Shown<'a> {
    name: ShownName<'a>,
    line: Option<&'a Line<'a>>,
    /// JSON's `StartAddress`.
    start: Option<u64>,
    /// The symbol, when this frame is the one it names (JSON's `Offset`, `Size`, ...).
    symbol: Option<&'a Answer<'a>>,
}

/// The short name (DW_AT_name) of a function from its DWARF name: the name itself when it
/// is not mangled (C), else the last component of the demangled name without return type,
/// parameters, qualifiers and clone suffixes: `bar<int>` for
/// `void ns::Foo<int>::bar<int>(int) const`, `largest::<i32>` spelled `largest<i32>` for
/// Rust's `demo::largest::<i32>`. Template arguments keep the demangler's spelling, which
/// can differ from the compiler's DW_AT_name (gcc writes `<lambda(int)>` where the demangler
/// writes `{lambda(int)#1}`).
pub fn short_name(raw: &str, demangled: &str) -> String {
    if raw == demangled {
        return raw.to_string();
    }
    let mut name = demangled.trim();
    // Clone suffixes (`[clone .cold]`), then qualifiers after the parameter list.
    while let Some(open) = name.rfind(" [clone ") {
        if !name.ends_with(']') {
            break;
        }
        name = name[..open].trim_end();
    }
    loop {
        let before = name;
        for qualifier in [" const", " volatile", " &&", " &", " noexcept"] {
            name = name.strip_suffix(qualifier).unwrap_or(name);
        }
        if before == name {
            break;
        }
    }
    // The parameter list: the `(` that matches the final `)`.
    if name.ends_with(')') {
        let mut depth = 0i32;
        for (i, c) in name.char_indices().rev() {
            match c {
                ')' | '>' | ']' | '}' => depth += 1,
                '(' | '<' | '[' | '{' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                let head = &name[..i];
                // `operator()(int)`: the first `()` closes the operator's name.
                if !head.ends_with("operator") || i + 1 >= name.len() {
                    name = head;
                }
                break;
            }
        }
    }
    // Components at nesting depth 0; a return type before the name ends at a depth-0 space.
    let mut components: Vec<&str> = Vec::new();
    let mut depth = 0i32;
    let mut begin = 0;
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if depth == 0 && name[i..].starts_with("operator") {
            break; // `operator<`, `operator()`: the rest is the operator's name
        }
        match bytes[i] {
            b'(' | b'<' | b'[' | b'{' => depth += 1,
            b')' | b'>' | b']' | b'}' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                components.push(&name[begin..i]);
                i += 2;
                begin = i;
                continue;
            }
            b' ' if depth == 0 => {
                // `int ns::f`: the return type ends here.
                components.clear();
                begin = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = &name[begin..];
    match components.last() {
        // Rust's `largest::<i32>` is DW_AT_name `largest<i32>`.
        Some(previous) if last.starts_with('<') && !previous.is_empty() => {
            format!("{previous}{last}")
        }
        _ if last.is_empty() => name.to_string(),
        _ => last.to_string(),
    }
}

/// What became of one query.
#[derive(Debug, Clone)]
pub enum Outcome<'a> {
    Found(Answer<'a>),
    NotFound,
    /// The module could not be read. `Some(message)` on the first query that hit the error
    /// (JSON reports it there, as llvm-symbolizer does); `None` on later ones.
    ModuleError(Option<String>),
}

pub struct Printer {
    pub style: Style,
    pub print_address: bool,
    pub pretty: bool,
    pub functions: Functions,
    /// Print every inlined frame (`--inlines`, the default), else one frame.
    pub inlines: bool,
    pub paths: Paths,
    /// JSON only: collect the objects into one array printed by [`Printer::finish`]
    /// (llvm-symbolizer does so for addresses given as arguments; stdin gets one per line).
    json_array: Option<Vec<Value>>,
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

// The address and line numbers of every answer are written by hand: through `io::Write`,
// `write!` costs ~300 instructions a call (callgrind: a tenth of a symbols-only batch).

/// `v` as `{:#x}` writes it.
fn write_hex(w: &mut impl Write, v: u64) -> io::Result<()> {
    write_digits(w, "0x", v, 16)
}

/// `v` in decimal, as `{}` writes it.
fn write_decimal(w: &mut impl Write, v: u64) -> io::Result<()> {
    write_digits(w, "", v, 10)
}

/// `prefix` and `v`'s digits in `base` (10 or 16, lower-case); inlined into both callers,
/// where the base is a constant (a division by 10 becomes a multiplication).
#[inline(always)]
fn write_digits(w: &mut impl Write, prefix: &str, v: u64, base: u64) -> io::Result<()> {
    // 20 digits (u64::MAX in decimal) and a prefix of at most 2 bytes.
    let mut buf = [0u8; 22];
    let mut at = buf.len();
    let mut rest = v;
    loop {
        at -= 1;
        buf[at] = b"0123456789abcdef"[(rest % base) as usize];
        rest /= base;
        if rest == 0 {
            break;
        }
    }
    at -= prefix.len();
    buf[at..at + prefix.len()].copy_from_slice(prefix.as_bytes());
    w.write_all(&buf[at..])
}

/// How the printer is set up, from the flags.
pub struct PrinterOptions {
    pub style: Style,
    pub print_address: bool,
    pub pretty: bool,
    pub functions: Functions,
    pub inlines: bool,
    pub paths: Paths,
    /// Addresses came as arguments: JSON prints one array.
    pub json_array: bool,
}

impl Printer {
    pub fn new(options: PrinterOptions) -> Printer {
        Printer {
            style: options.style,
            print_address: options.print_address,
            pretty: options.pretty,
            functions: options.functions,
            inlines: options.inlines,
            paths: options.paths,
            json_array: (options.json_array && options.style == Style::Json).then(Vec::new),
        }
    }

    /// Frame `i` of those llvm-symbolizer prints for `found` (at least one: see
    /// [`Printer::shown_count`]); one at a time, so that printing allocates nothing.
    ///
    /// - Without DWARF for the address: one frame, named by the symbol table with
    ///   `--functions=linkage`; with `short`, unnamed (`??`) when DWARF was read but does not
    ///   cover the address, as in llvm-symbolizer (named by the symbol where DWARF is not
    ///   consulted: `--pid`, kernel).
    /// - With DWARF: every frame, innermost first; with `linkage`, the outermost frame (the
    ///   function whose machine code this is) takes the symbol table's name and start, as
    ///   llvm-symbolizer does. With `--no-inlines`, one frame: the innermost location, named
    ///   by the symbol table (`linkage`) or the innermost DWARF function (`short`, and
    ///   `linkage` without a symbol), as llvm-symbolizer 14 does; in the GNU style, the
    ///   innermost frame whole (named by its own DWARF function), as llvm-symbolizer's GNU
    ///   style and addr2line without `-i` do.
    fn shown_frame<'a>(&self, found: Option<&'a Answer<'a>>, i: usize) -> Shown<'a> {
        let Some(a) = found else {
            return Shown::default();
        };
        let linkage = self.functions == Functions::Linkage;
        let table_name = a.has_symbol.then_some(ShownName::Table(a));
        let table_start = a.has_symbol.then_some(a.start);
        let symbol = (a.has_symbol && self.functions != Functions::None).then_some(a);
        let frames = match a.frames.as_deref() {
            Some(frames) if !frames.is_empty() => frames,
            _ => {
                let named = linkage || (self.functions == Functions::Short && a.frames.is_none());
                return if named {
                    Shown {
                        name: ShownName::Table(a),
                        line: None,
                        start: Some(a.start),
                        symbol,
                    }
                } else {
                    Shown::default()
                };
            }
        };
        let dwarf_name = |line: &'a Line<'a>| {
            let name = match self.functions {
                Functions::Linkage => line.function.as_deref(),
                Functions::Short => line.short.as_deref(),
                Functions::None => None,
            };
            name.map_or(ShownName::Unknown, ShownName::Dwarf)
        };
        let or_dwarf = |table: Option<ShownName<'a>>, line: &'a Line<'a>| match table {
            Some(name) => name,
            None => dwarf_name(line),
        };
        let outer = frames.len() - 1;
        if !self.inlines && self.style != Style::Gnu {
            let inner = &frames[0];
            let name = match self.functions {
                Functions::Linkage => or_dwarf(table_name, inner),
                _ => dwarf_name(inner),
            };
            // The start is the named function's: the symbol's (`linkage`), else the named
            // DWARF function's own (an inlined copy's, for an inlined frame).
            let start = if linkage { table_start } else { inner.start };
            return Shown {
                name,
                line: Some(inner),
                start,
                symbol,
            };
        }
        // GNU with --no-inlines: the innermost frame of the chain, whole (its own name), as
        // llvm-symbolizer's GNU style does, like addr2line without -i (`shown_count`: 1).
        let line = &frames[i.min(outer)];
        let is_outer = i == outer;
        let name = if is_outer && linkage {
            or_dwarf(table_name, line)
        } else {
            dwarf_name(line)
        };
        // The symbol's start where the symbol names the frame (the outer one, with
        // `linkage`), else the DWARF function's (llvm-symbolizer's DW_AT_low_pc).
        let start = if is_outer && linkage {
            table_start.or(line.start)
        } else {
            line.start
        };
        Shown {
            name,
            line: Some(line),
            start,
            symbol: if is_outer { symbol } else { None },
        }
    }

    /// How many frames llvm-symbolizer prints for `found` ([`Printer::shown_frame`]).
    fn shown_count(&self, found: Option<&Answer<'_>>) -> usize {
        match found.and_then(|a| a.frames.as_deref()) {
            Some(frames) if !frames.is_empty() && self.inlines => frames.len(),
            _ => 1,
        }
    }

    /// Prints the answer for `addr` (the address as the input gave it).
    pub fn answer(
        &mut self,
        w: &mut impl Write,
        kind: Kind,
        module: &str,
        addr: u64,
        outcome: &Outcome<'_>,
    ) -> io::Result<()> {
        if self.style == Style::Json {
            let value = self.json_answer(kind, module, addr, outcome);
            return self.json_emit(w, value);
        }
        let found = match outcome {
            Outcome::Found(answer) => Some(answer),
            Outcome::NotFound | Outcome::ModuleError(_) => None,
        };
        if self.print_address {
            write_hex(w, addr)?;
            w.write_all(if self.pretty { b": " } else { b"\n" })?;
        }
        match kind {
            Kind::Code => {
                for i in 0..self.shown_count(found) {
                    let frame = self.shown_frame(found, i);
                    if self.functions != Functions::None {
                        if self.pretty && i > 0 {
                            w.write_all(b" (inlined by) ")?;
                        }
                        frame.name.write_text(w)?;
                        w.write_all(if self.pretty { b" at " } else { b"\n" })?;
                    }
                    let line = frame.line.unwrap_or(&NO_LINE);
                    let file = line.file.as_deref().map_or("??", |f| self.paths.apply(f));
                    w.write_all(file.as_bytes())?;
                    match self.style {
                        Style::Gnu => {
                            w.write_all(b":")?;
                            write_decimal(w, line.line.into())?;
                            if line.discriminator != 0 {
                                w.write_all(b" (discriminator ")?;
                                write_decimal(w, line.discriminator.into())?;
                                w.write_all(b")")?;
                            }
                            w.write_all(b"\n")?;
                        }
                        _ => {
                            w.write_all(b":")?;
                            write_decimal(w, line.line.into())?;
                            w.write_all(b":")?;
                            write_decimal(w, line.column.into())?;
                            w.write_all(b"\n")?;
                        }
                    }
                }
            }
            Kind::Data => {
                // llvm-symbolizer prints the data name even with --functions=none, and the
                // start and size in decimal.
                match found {
                    Some(answer) => answer.write_name(w)?,
                    None => w.write_all(b"??")?,
                }
                let (start, size) = found.map_or((0, 0), |a| (a.start, a.size));
                writeln!(w, "\n{start} {size}")?;
            }
        }
        if self.style == Style::Llvm {
            w.write_all(b"\n")?;
        }
        Ok(())
    }
    /// A line that could not be parsed: echoed back as it was (LLVM, GNU), or an error
    /// object (JSON), as llvm-symbolizer does.
    pub fn invalid(&mut self, w: &mut impl Write, line: &[u8], module: &str) -> io::Result<()> {
        if self.style == Style::Json {
            let message = format!(
                "unable to parse arguments: {}",
                String::from_utf8_lossy(line)
            );
            let value = json!({ "Error": { "Message": message }, "ModuleName": module });
            return self.json_emit(w, value);
        }
        w.write_all(line)?;
        w.write_all(b"\n")
    }

    /// Ends the output (prints the JSON array, if one was being collected).
    pub fn finish(&mut self, w: &mut impl Write) -> io::Result<()> {
        if let Some(values) = self.json_array.take() {
            self.json_write(w, &Value::Array(values))?;
        }
        Ok(())
    }

    fn json_emit(&mut self, w: &mut impl Write, value: Value) -> io::Result<()> {
        match &mut self.json_array {
            Some(values) => {
                values.push(value);
                Ok(())
            }
            None => self.json_write(w, &value),
        }
    }

    fn json_write(&self, w: &mut impl Write, value: &Value) -> io::Result<()> {
        let text = if self.pretty {
            serde_json::to_string_pretty(value)
        } else {
            serde_json::to_string(value)
        }
        .map_err(io::Error::other)?;
        writeln!(w, "{text}")
    }

    /// llvm-symbolizer's keys, plus ours where the symbol table gives more than it shows:
    /// `Offset` (address minus symbol start), `Size` (the symbol's size) and `Version`
    /// (the ELF symbol version, only for versioned symbols). Addresses and sizes are
    /// hex strings like llvm-symbolizer's `Address`, `StartAddress` and `Data.Size`.
    /// Keys are written in sorted order, as llvm-symbolizer writes them.
    fn json_answer(&self, kind: Kind, module: &str, addr: u64, outcome: &Outcome<'_>) -> Value {
        let address = hex(addr);
        let found = match outcome {
            Outcome::ModuleError(Some(message)) => {
                return json!({
                    "Address": address,
                    "Error": { "Message": message },
                    "ModuleName": module,
                });
            }
            Outcome::ModuleError(None) if kind == Kind::Code => {
                return json!({ "Address": address, "ModuleName": module, "Symbol": [] });
            }
            Outcome::Found(answer) => Some(answer),
            Outcome::NotFound | Outcome::ModuleError(None) => None,
        };
        match kind {
            Kind::Data => {
                let mut data = json!({
                    "Name": found.map_or("", |a| &*a.name),
                    "Size": hex(found.map_or(0, |a| a.size)),
                    "Start": hex(found.map_or(0, |a| a.start)),
                });
                if let Some(version) = found.and_then(|a| a.version.as_deref()) {
                    data["Version"] = json!(version);
                }
                json!({ "Address": address, "Data": data, "ModuleName": module })
            }
            Kind::Code => {
                let frames: Vec<Value> = (0..self.shown_count(found))
                    .map(|i| self.json_frame(&self.shown_frame(found, i)))
                    .collect();
                json!({ "Address": address, "ModuleName": module, "Symbol": frames })
            }
        }
    }

    /// One element of JSON's `Symbol` list: llvm-symbolizer's keys, and ours on the frame
    /// the symbol names.
    fn json_frame(&self, frame: &Shown<'_>) -> Value {
        let line = frame.line.unwrap_or(&NO_LINE);
        let file = line.file.as_deref().map_or("", |f| self.paths.apply(f));
        let mut value = json!({
            "Column": line.column,
            "Discriminator": line.discriminator,
            "FileName": file,
            "FunctionName": frame.name.json(),
            "Line": line.line,
        });
        if let Some(a) = frame.symbol {
            match &a.origin {
                Origin::Elf => {}
                Origin::KernelImage => value["Module"] = json!("vmlinux"),
                Origin::KernelModule(module) => value["Module"] = json!(module),
            }
            value["Offset"] = json!(hex(a.offset));
            value["Size"] = json!(hex(a.size));
            if let Some(version) = &a.version {
                value["Version"] = json!(version);
            }
        }
        value["StartAddress"] = json!(frame.start.map_or(String::new(), hex));
        // DW_AT_decl_file / DW_AT_decl_line of the frame's DWARF function.
        let decl_file = line
            .decl_file
            .as_deref()
            .map_or("", |f| self.paths.apply(f));
        value["StartFileName"] = json!(decl_file);
        value["StartLine"] = json!(line.decl_line);
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // tests/cli.rs compares whole outputs with llvm-symbolizer; this pins the edge values.
    #[test]
    fn hand_written_numbers_match_fmt() {
        for v in [
            0,
            1,
            9,
            10,
            15,
            16,
            255,
            0x401265,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let (mut hex_out, mut dec_out) = (Vec::new(), Vec::new());
            write_hex(&mut hex_out, v).unwrap();
            write_decimal(&mut dec_out, v).unwrap();
            assert_eq!(hex_out, format!("{v:#x}").into_bytes());
            assert_eq!(dec_out, v.to_string().into_bytes());
        }
    }
}
