//! The three output styles, laid out byte for byte as llvm-symbolizer 14 lays them out.
//!
//! There is no DWARF support yet, so every source location is unknown: `??:0:0` (LLVM),
//! `??:0` (GNU), empty `FileName` and zero `Line`/`Column` (JSON), exactly what
//! llvm-symbolizer prints for an address it finds only in the symbol table.

use std::io::{self, Write};

use clap::ValueEnum;
use serde_json::{json, Value};

use crate::input::Kind;

/// `--output-style`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Style {
    /// Function name, `??:0:0`, blank line (llvm-symbolizer's default).
    #[value(name = "LLVM")]
    Llvm,
    /// Function name, `??:0` (llvm-symbolizer's addr2line-like style).
    #[value(name = "GNU")]
    Gnu,
    /// One JSON object per address (see --help).
    #[value(name = "JSON")]
    Json,
}

/// `--functions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Functions {
    /// Print the symbol name (the default; demangled unless --no-demangle).
    Linkage,
    /// Same as linkage: short names come from DWARF, which is not supported yet.
    Short,
    /// Print no function name line.
    None,
}

/// The symbol an address resolved to, copied out of the library's `Sym`.
#[derive(Debug, Clone)]
pub struct Answer {
    pub name: String,
    pub start: u64,
    pub size: u64,
    pub offset: u64,
    pub version: Option<String>,
    pub origin: Origin,
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

impl Answer {
    /// The name line of the LLVM and GNU styles: `name`, or `name [module]` for a kernel
    /// module's symbol.
    pub fn display_name(&self) -> String {
        match &self.origin {
            Origin::KernelModule(module) => format!("{} [{module}]", self.name),
            Origin::Elf | Origin::KernelImage => self.name.clone(),
        }
    }
}

/// What became of one query.
#[derive(Debug, Clone)]
pub enum Outcome {
    Found(Answer),
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
    /// JSON only: collect the objects into one array printed by [`Printer::finish`]
    /// (llvm-symbolizer does so for addresses given as arguments; stdin gets one per line).
    json_array: Option<Vec<Value>>,
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

impl Printer {
    pub fn new(
        style: Style,
        print_address: bool,
        pretty: bool,
        functions: Functions,
        json_array: bool,
    ) -> Printer {
        Printer {
            style,
            print_address,
            pretty,
            functions,
            json_array: (json_array && style == Style::Json).then(Vec::new),
        }
    }

    /// Prints the answer for `addr` (the address as the input gave it).
    pub fn answer(
        &mut self,
        w: &mut impl Write,
        kind: Kind,
        module: &str,
        addr: u64,
        outcome: &Outcome,
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
            if self.pretty {
                write!(w, "{addr:#x}: ")?;
            } else {
                writeln!(w, "{addr:#x}")?;
            }
        }
        let name = found.map_or_else(|| "??".to_string(), Answer::display_name);
        match kind {
            Kind::Code => {
                if self.functions != Functions::None {
                    w.write_all(name.as_bytes())?;
                    w.write_all(if self.pretty { b" at " } else { b"\n" })?;
                }
                let location: &[u8] = match self.style {
                    Style::Gnu => b"??:0\n",
                    _ => b"??:0:0\n",
                };
                w.write_all(location)?;
            }
            Kind::Data => {
                // llvm-symbolizer prints the data name even with --functions=none, and the
                // start and size in decimal.
                let (start, size) = found.map_or((0, 0), |a| (a.start, a.size));
                writeln!(w, "{name}\n{start} {size}")?;
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
    fn json_answer(&self, kind: Kind, module: &str, addr: u64, outcome: &Outcome) -> Value {
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
                    "Name": found.map_or("", |a| a.name.as_str()),
                    "Size": hex(found.map_or(0, |a| a.size)),
                    "Start": hex(found.map_or(0, |a| a.start)),
                });
                if let Some(version) = found.and_then(|a| a.version.as_deref()) {
                    data["Version"] = json!(version);
                }
                json!({ "Address": address, "Data": data, "ModuleName": module })
            }
            Kind::Code => {
                let named = found.filter(|_| self.functions != Functions::None);
                let mut frame = json!({
                    "Column": 0,
                    "Discriminator": 0,
                    "FileName": "",
                    "FunctionName": named.map_or("", |a| a.name.as_str()),
                    "Line": 0,
                });
                if let Some(a) = named {
                    match &a.origin {
                        Origin::Elf => {}
                        Origin::KernelImage => frame["Module"] = json!("vmlinux"),
                        Origin::KernelModule(module) => frame["Module"] = json!(module),
                    }
                    frame["Offset"] = json!(hex(a.offset));
                    frame["Size"] = json!(hex(a.size));
                }
                frame["StartAddress"] = json!(named.map_or(String::new(), |a| hex(a.start)));
                frame["StartFileName"] = json!("");
                frame["StartLine"] = json!(0);
                if let Some(version) = named.and_then(|a| a.version.as_deref()) {
                    frame["Version"] = json!(version);
                }
                json!({ "Address": address, "ModuleName": module, "Symbol": [frame] })
            }
        }
    }
}
