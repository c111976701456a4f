//! Names → addresses, for probes: [`Symbolizer::find_addresses`] turns a function name as the
//! source writes it (`ns::Class::method`, `crate::module::function`, `readline`), its mangled
//! spelling, or a glob (`*readline*`), into every matching symbol with its start, size and
//! the file offset a uprobe takes (`perf probe -x BIN`, bpftrace's `uprobe:BIN:`); and, over
//! kallsyms, into kernel addresses for kprobes.
//!
//! Where it looks: for an ELF file, its `.symtab` and `.dynsym`, its debug companion's
//! `.symtab` when the file is stripped (found as for symbolization: build-id, debuglink), its
//! MiniDebugInfo, and a stripped Go binary's own table (`.gopclntab`, names as Go spells
//! them); for the kernel, the kallsyms file.
//!
//! # Which names match
//! A symbol matches when the pattern matches one of its spellings:
//! 1. the name as the table spells it (mangled; without a `@VERSION`);
//! 2. the demangled name, in full (`curve::Demo::hello(std::__cxx11::basic_string<…>)`; Rust
//!    names without their hash);
//! 3. the demangled name without its parameter list (`curve::Demo::hello`), as perf probe and
//!    bpftrace's C++ probes accept it — not for a compiler's clone (`f(int) [clone .cold]`,
//!    a fragment of `f`), which matches by its full spellings only;
//! 4. for a template function, whose demangled name starts with its return type
//!    (`int curve::sum<int>(int const*, int)`), spellings 2 and 3 without the return type
//!    (`curve::sum<int>(int const*, int)`, `curve::sum<int>`: what `perf probe -F` lists).
//!
//! A pattern that ends with a C++ parameter list (`ns::f(const char*, int)`, optionally
//! followed by `const`, `volatile`, `&`, `&&`) matches spellings 2 and 4, which have one,
//! by the list's types, not as a glob: inside the list `*` and `&` are part of the type
//! (`ns::f(char const*)` does not match `ns::f(char const*, unsigned long)`), `const T` is
//! `T const` (the demangler's spelling, which perf probe and gdb accept too) and spaces are
//! free (`ns::f(int,long)` is `ns::f(int, long)`); what precedes the list matches as the
//! pattern says (`*::f(int*)` globs the name). The escape: a backslash before the `(`
//! (`ns::f\(char*`) makes the whole pattern a plain glob or name again, `*` a wildcard in
//! the list too. (A Go receiver, `main.(*T).M`, is not a parameter list.) Types are
//! compared as spelled: `unsigned` is not `unsigned int`, nor `std::string`
//! `std::__cxx11::basic_string<char, …>`.
//!
//! A symbol listed in both `.symtab` and `.dynsym` (same name, same address) is one match;
//! other names at the same address are its [`SymbolMatch::aliases`]. With
//! [`FindOptions::merge_aliases`], names at one address are one match (a probe per address).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crate::addr::{FileOffset, SymAddr, VirtAddr};
use crate::demangle::demangle;
use crate::elf::{Binding, ElfFile, NamedSymbol, SymbolKind, SymbolOrigin};
use crate::error::{Error, Result};
use crate::symbolize::{Input, Source, Symbolizer};

/// What [`Symbolizer::find_addresses`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamePattern<'a> {
    /// Exactly this name, in one of the spellings the module docs list.
    Exact(&'a str),
    /// A glob over those spellings: `*` is any run of characters, `?` one character; the
    /// whole spelling must match (`*read*`, not `read`, finds `readline`). In a C++
    /// parameter list ending the pattern, `*` and `&` are the type's (see the module docs:
    /// `ns::f(const char*)`; `ns::f\(*` globs the list).
    Glob(&'a str),
}

impl<'a> NamePattern<'a> {
    /// A glob if `pattern` has `*` or `?`, else an exact name.
    pub fn parse(pattern: &'a str) -> NamePattern<'a> {
        if pattern.contains(['*', '?']) {
            NamePattern::Glob(pattern)
        } else {
            NamePattern::Exact(pattern)
        }
    }

    fn text(&self) -> &'a str {
        match self {
            NamePattern::Exact(text) | NamePattern::Glob(text) => text,
        }
    }

    pub(crate) fn matches(&self, spelling: &str) -> bool {
        let text = self.text();
        if let Some(unescaped) = text.contains("\\(").then(|| text.replace("\\(", "(")) {
            // `\(`: no parameter list; the whole pattern is matched as before.
            return match self {
                NamePattern::Exact(_) => unescaped == spelling,
                NamePattern::Glob(_) => glob_matches(unescaped.as_bytes(), spelling.as_bytes()),
            };
        }
        if let Some((head, parameters)) = split_parameter_list(text) {
            let Some((spelled_head, spelled)) = split_parameter_list(spelling) else {
                return false;
            };
            let head_matches = match self {
                NamePattern::Exact(_) => head == spelled_head,
                NamePattern::Glob(_) => glob_matches(head.as_bytes(), spelled_head.as_bytes()),
            };
            return head_matches && type_tokens(parameters) == type_tokens(spelled);
        }
        match self {
            NamePattern::Exact(name) => *name == spelling,
            NamePattern::Glob(glob) => glob_matches(glob.as_bytes(), spelling.as_bytes()),
        }
    }

    /// An identifier every matching symbol's raw name contains (identifiers appear verbatim
    /// in Itanium and Rust manglings): the function's own name, the last identifier before
    /// any parameter list, when the pattern has one free of glob characters. Lets the finder
    /// skip demangling the names that cannot match.
    fn required_identifier(&self) -> Option<&'a str> {
        let text = self.text();
        let head = &text[..text.find('(').unwrap_or(text.len())];
        let last = head
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '*' || c == '?'))
            .next()?;
        let usable = !last.is_empty() && !last.contains(['*', '?']) && last != "operator";
        usable.then_some(last)
    }
}

/// Where a [`SymbolMatch`] was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FoundIn {
    /// The file's own `.symtab`.
    Symtab,
    /// The file's `.dynsym`.
    Dynsym,
    /// The `.symtab` of the file's separate debug file (the file is stripped).
    DebugFile,
    /// The file's MiniDebugInfo (`.gnu_debugdata`).
    MiniDebugInfo,
    /// A kallsyms file.
    Kallsyms,
    /// A Go binary's own table (`.gopclntab`), read where the file has no `.symtab`: Go
    /// names (`main.(*Server).Handle`), matched as Go spells them.
    GoTable,
}

/// One symbol whose name matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolMatch {
    /// The name as the table spells it (mangled; without a `@VERSION`): what `nm` prints and
    /// what a probe by name takes.
    pub name: String,
    /// The demangled name (the same as `name` for C names).
    pub demangled: String,
    /// The symbol's start: its ELF virtual address (`st_value`); for the kernel, the absolute
    /// address kallsyms lists.
    pub addr: SymAddr,
    /// `st_size`; for the kernel, kallsyms' bound (the distance to the next symbol).
    pub size: u64,
    /// The start's offset in the file (from its `PT_LOAD` segments): what a uprobe takes
    /// (`/sys/kernel/tracing/uprobe_events`' `PATH:OFFSET`), for executables and shared
    /// libraries, PIE or not. `None` for the kernel, and where no segment holds the address.
    pub file_offset: Option<FileOffset>,
    /// Function or data object.
    pub kind: SymbolKind,
    /// Global, weak or local (a static function).
    pub binding: Binding,
    /// The symbol version (`GLIBC_2.2.5`), if any.
    pub version: Option<String>,
    /// Whether the version is hidden (`name@VER`) rather than the default (`name@@VER`).
    pub version_hidden: bool,
    /// Which table it came from.
    pub found_in: FoundIn,
    /// The other names defined at the same address (as the tables spell them), sorted.
    pub aliases: Vec<String>,
    /// For a kernel symbol of a module, the module's name.
    pub kernel_module: Option<String>,
    /// The file whose table listed it (the file, its debug file, or the kallsyms file).
    pub file: PathBuf,
}

/// How [`Symbolizer::find_addresses_with`] reports what matched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FindOptions {
    merge_aliases: bool,
}

impl FindOptions {
    /// One match per address (default: off, one per matching name): where several names
    /// of one address match (libc's `malloc`, `__libc_malloc`, `__malloc`), the match is the
    /// name [`Symbolizer::symbolize`] answers for the address when it is among them, else
    /// the first by global before weak before local binding, then table order; the other
    /// names are its [`SymbolMatch::aliases`]. What a prober wants: one uprobe per address.
    pub fn merge_aliases(mut self, on: bool) -> Self {
        self.merge_aliases = on;
        self
    }
}

impl Symbolizer {
    /// [`Symbolizer::find_addresses`] with options: see [`FindOptions`].
    pub fn find_addresses_with(
        &self,
        source: &Source<'_>,
        pattern: &NamePattern<'_>,
        options: FindOptions,
    ) -> Result<Vec<SymbolMatch>> {
        let found = self.find_addresses(source, pattern)?;
        if !options.merge_aliases {
            return Ok(found);
        }
        // The name symbolize gives each matched address (its raw spelling, as matches are
        // named), asked of the same source in one batch: symbolize reads the binary's debug
        // file too, and may prefer its `.symtab` name (`__libc_malloc`) over `.dynsym`'s.
        let mut answered: HashMap<u64, String> = HashMap::new();
        if matches!(source, Source::Elf { .. } | Source::BuildId { .. }) {
            let mut addrs: Vec<VirtAddr> = found.iter().filter_map(|m| m.addr.virt()).collect();
            addrs.sort_unstable();
            addrs.dedup();
            let symbols = self.symbolize(source, Input::VirtAddrs(&addrs))?;
            for (addr, sym) in addrs.iter().zip(symbols.iter()) {
                if let Some(sym) = sym.filter(|sym| sym.addr == SymAddr::Virt(*addr)) {
                    answered.insert(addr.0, String::from_utf8_lossy(sym.raw_name).into_owned());
                }
            }
        }
        Ok(merge_aliases(found, |m| {
            answered.get(&m.addr.raw()).map(String::as_str)
        }))
    }

    /// Every symbol of `source` whose name matches `pattern` (see the [module
    /// docs](crate::symbolize::finder) for the spellings a pattern is matched against), in
    /// table order. For [`Source::Elf`] and [`Source::BuildId`]: functions and data objects
    /// of the file (see [`SymbolMatch::kind`]); for [`Source::Kernel`]: every kallsyms line,
    /// aliases included.
    /// A process is not a source for this (probes attach to files: give the mapped file's
    /// path as [`Source::Elf`]): that is an error, as is a file that cannot be read.
    ///
    /// ```
    /// use stacksym::symbolize::NamePattern;
    /// use stacksym::{Source, Symbolizer};
    /// # fn main() -> stacksym::Result<()> {
    /// let symbolizer = Symbolizer::builder().build();
    /// let path = std::path::Path::new("testdata/bin/c-nopie");
    /// let found = symbolizer.find_addresses(&Source::Elf { path }, &NamePattern::parse("demo_impl"))?;
    /// let demo = &found[0];
    /// // What `perf probe -x testdata/bin/c-nopie -a demo_impl` writes to uprobe_events.
    /// assert_eq!(demo.file_offset.map(|o| o.0), Some(0x1300));
    /// # Ok(())
    /// # }
    /// ```
    pub fn find_addresses(
        &self,
        source: &Source<'_>,
        pattern: &NamePattern<'_>,
    ) -> Result<Vec<SymbolMatch>> {
        match source {
            Source::Elf { path } => self.find_in_elf(path, pattern),
            Source::BuildId { build_id } => {
                let found = self.file_with_build_id(source, build_id)?;
                self.find_in_elf(&found.path, pattern)
            }
            Source::Kernel(kernel) => {
                let cached = self.cached_kallsyms(kernel.kallsyms_path(), &[])?;
                let kallsyms = cached.kallsyms();
                let required = pattern.required_identifier();
                Ok(kallsyms
                    .lines()
                    .filter(|sym| required.is_none_or(|id| sym.name.contains(id)))
                    .filter(|sym| spellings(sym.name.as_bytes()).any(|s| pattern.matches(&s)))
                    .map(|sym| SymbolMatch {
                        name: sym.name.to_string(),
                        demangled: demangle(sym.name).into_owned(),
                        addr: SymAddr::Abs(sym.addr),
                        size: sym.size,
                        file_offset: None,
                        kind: if sym.is_text() {
                            SymbolKind::Function
                        } else {
                            SymbolKind::Data
                        },
                        binding: match sym.type_char {
                            'w' | 'W' | 'v' | 'V' => Binding::Weak,
                            c if c.is_ascii_uppercase() => Binding::Global,
                            _ => Binding::Local,
                        },
                        version: None,
                        version_hidden: false,
                        found_in: FoundIn::Kallsyms,
                        aliases: Vec::new(),
                        kernel_module: sym.module.map(str::to_string),
                        file: kallsyms.path().to_path_buf(),
                    })
                    .collect())
            }
            Source::Process { process, .. } | Source::Stack { process, .. } => {
                Err(Error::InvalidRequest {
                    path: process.proc_dir(),
                    what: "names are looked up in a file, not a process (uprobes attach to \
                           files): give the mapped file as Source::Elf"
                        .to_string(),
                })
            }
            Source::Core(core) => Err(Error::InvalidRequest {
                path: core.path().to_path_buf(),
                what: "names are looked up in a file, not a core: give the mapped file as \
                       Source::Elf"
                    .to_string(),
            }),
        }
    }

    fn find_in_elf(
        &self,
        path: &std::path::Path,
        pattern: &NamePattern<'_>,
    ) -> Result<Vec<SymbolMatch>> {
        let file = self.open_elf(path)?;
        let debug = file.debug_state(|| self.debug.clone());
        let symbol_file = file.symbol_file(debug);
        // The tables searched, in order: the file's own, its debug file's (when it names the
        // file's symbols), its MiniDebugInfo's.
        let mut tables: Vec<(&ElfFile, Option<FoundIn>)> = vec![(&file.elf, None)];
        if !std::sync::Arc::ptr_eq(symbol_file, &file) {
            tables.push((&symbol_file.elf, Some(FoundIn::DebugFile)));
        }
        if let Some(mini) = &debug.mini {
            tables.push((&mini.elf, Some(FoundIn::MiniDebugInfo)));
        }
        let mut all: Vec<(NamedSymbol<'_>, FoundIn, &ElfFile)> = Vec::new();
        for (elf, found_in) in tables {
            for sym in elf.named_symbols()? {
                let found_in = found_in.unwrap_or(match sym.table {
                    SymbolOrigin::Dynsym => FoundIn::Dynsym,
                    _ => FoundIn::Symtab,
                });
                all.push((sym, found_in, elf));
            }
        }
        let required = pattern.required_identifier();
        let mut seen: HashSet<(&[u8], u64)> = HashSet::new();
        let mut matched = Vec::new();
        for (i, (sym, _, _)) in all.iter().enumerate() {
            if !seen.insert((sym.name, sym.addr.0)) {
                continue; // the same symbol in a second table
            }
            let may_match = required.is_none_or(|id| contains(sym.name, id.as_bytes()));
            if may_match && spellings(sym.name).any(|s| pattern.matches(&s)) {
                matched.push(i);
            }
        }
        // Aliases: every distinct name at a matched address.
        let wanted: HashSet<u64> = matched.iter().map(|&i| all[i].0.addr.0).collect();
        let mut names_at: HashMap<u64, Vec<&[u8]>> = HashMap::new();
        for (sym, _, _) in &all {
            if wanted.contains(&sym.addr.0) {
                let names = names_at.entry(sym.addr.0).or_default();
                if !names.contains(&sym.name) {
                    names.push(sym.name);
                }
            }
        }
        let segments = file.elf.segments();
        let mut go_matches = Vec::new();
        if let Some(go) = &debug.go {
            for function in go.functions() {
                let function = match function {
                    Ok(function) => function,
                    Err(e) => {
                        log::debug!("{e}");
                        continue;
                    }
                };
                let name = function.name.as_bytes();
                if pattern.matches(function.name) && !seen.contains(&(name, function.entry.0)) {
                    go_matches.push(SymbolMatch {
                        name: function.name.to_string(),
                        demangled: function.name.to_string(),
                        addr: SymAddr::Virt(function.entry),
                        size: function.end.0.saturating_sub(function.entry.0),
                        file_offset: segments.virt_to_file_offset(function.entry),
                        kind: SymbolKind::Function,
                        binding: Binding::Global,
                        version: None,
                        version_hidden: false,
                        found_in: FoundIn::GoTable,
                        aliases: Vec::new(),
                        kernel_module: None,
                        file: go.elf().path().to_path_buf(),
                    });
                }
            }
        }
        let mut found: Vec<SymbolMatch> = matched
            .into_iter()
            .map(|i| {
                let (sym, found_in, elf) = &all[i];
                let name = String::from_utf8_lossy(sym.name).into_owned();
                let mut aliases: Vec<String> = names_at
                    .get(&sym.addr.0)
                    .into_iter()
                    .flatten()
                    .filter(|&&alias| alias != sym.name)
                    .map(|alias| String::from_utf8_lossy(alias).into_owned())
                    .collect();
                aliases.sort();
                SymbolMatch {
                    demangled: demangle(&name).into_owned(),
                    name,
                    addr: SymAddr::Virt(sym.addr),
                    size: sym.size,
                    file_offset: segments.virt_to_file_offset(sym.addr),
                    kind: sym.kind,
                    binding: sym.binding,
                    version: sym.version.map(|v| String::from_utf8_lossy(v).into_owned()),
                    version_hidden: sym.version_hidden,
                    found_in: *found_in,
                    aliases,
                    kernel_module: None,
                    file: elf.path().to_path_buf(),
                }
            })
            .collect();
        found.extend(go_matches);
        Ok(found)
    }
}

/// One match per address (the names of one address may come from different tables: the
/// binary's `.dynsym` and its debug file's `.symtab`): the group's preferred name (`answered`: the name
/// symbolize gives the address, when it is in the group; else global before weak before
/// local, then the first), with every other name of the address among its aliases. Groups
/// keep the order of their first match.
fn merge_aliases<'a>(
    found: Vec<SymbolMatch>,
    answered: impl Fn(&SymbolMatch) -> Option<&'a str>,
) -> Vec<SymbolMatch> {
    let rank = |b: Binding| match b {
        Binding::Global => 0,
        Binding::Weak => 1,
        _ => 2,
    };
    let mut groups: Vec<Vec<SymbolMatch>> = Vec::new();
    let mut group_of: HashMap<u64, usize> = HashMap::new();
    for m in found {
        let key = m.addr.raw();
        match group_of.get(&key) {
            Some(&g) => groups[g].push(m),
            None => {
                group_of.insert(key, groups.len());
                groups.push(vec![m]);
            }
        }
    }
    groups
        .into_iter()
        .filter_map(|mut group| {
            let preferred = answered(&group[0]);
            let best = group
                .iter()
                .enumerate()
                .min_by_key(|(i, m)| (Some(m.name.as_str()) != preferred, rank(m.binding), *i))
                .map(|(i, _)| i)?;
            let mut chosen = group.swap_remove(best);
            let mut aliases: Vec<String> = std::mem::take(&mut chosen.aliases);
            for other in group {
                aliases.push(other.name);
                aliases.extend(other.aliases);
            }
            aliases.retain(|a| *a != chosen.name);
            aliases.sort();
            aliases.dedup();
            chosen.aliases = aliases;
            Some(chosen)
        })
        .collect()
}

/// The spellings a name is matched under: raw, demangled, demangled without parameters, and
/// for a demangled name that starts with a return type, the last two without it.
fn spellings(raw: &[u8]) -> impl Iterator<Item = Cow<'_, str>> {
    let raw = String::from_utf8_lossy(raw);
    let demangled = demangle(&raw).into_owned();
    // A compiler's clone (`f(int) [clone .cold]`) is a fragment, not the function: the
    // short spellings name the function only.
    let is_clone = demangled.contains(" [clone ");
    let without_params = strip_parameters(&demangled)
        .filter(|_| !is_clone)
        .map(str::to_string);
    let without_return = strip_return_type(&demangled).map(str::to_string);
    let without_both = without_return
        .as_deref()
        .and_then(strip_parameters)
        .filter(|_| !is_clone)
        .map(str::to_string);
    let demangled = (demangled != raw).then_some(demangled);
    std::iter::once(raw)
        .chain(demangled.map(Cow::Owned))
        .chain(without_params.map(Cow::Owned))
        .chain(without_return.map(Cow::Owned))
        .chain(without_both.map(Cow::Owned))
}

/// A demangled function name without the return type a template function's name starts
/// with (`int ns::sum<int>(int*, int)` → `ns::sum<int>(int*, int)`): what follows the last
/// space outside template arguments and parentheses before the parameter list, unless that
/// space belongs to a conversion operator or `operator new`/`delete` (`ns::S::operator
/// bool()`). `None` when there is no return type.
fn strip_return_type(name: &str) -> Option<&str> {
    let mut depth = 0usize;
    let mut last_space = None;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 => break,
            ' ' if depth == 0 => {
                if name[..i].ends_with("operator") {
                    break; // `operator bool`, `operator new`: the rest is the name
                }
                last_space = Some(i);
            }
            _ => {}
        }
    }
    let rest = &name[last_space? + 1..];
    (!rest.is_empty() && !rest.starts_with(['(', '['])).then_some(rest)
}

/// A demangled C++ name without its parameter list (and any qualifiers after it):
/// `ns::f<int>(char) const` → `ns::f<int>`; `None` when it has none. The list is the first
/// `(` outside template arguments that does not belong to an `operator()`.
fn strip_parameters(name: &str) -> Option<&str> {
    let mut depth = 0usize;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 => {
                let head = &name[..i];
                if head.ends_with("operator") && name[i..].starts_with("()") {
                    continue;
                }
                return (!head.is_empty()).then_some(head);
            }
            _ => {}
        }
    }
    None
}

/// A C++ name's parameter list: (what precedes it, the list from its `(` to the end), when
/// the name ends with one, optionally followed by `const`, `volatile`, `&` or `&&` (a
/// method's qualifiers); the list is the first `(` outside template arguments that does not
/// belong to an `operator()`. `None` for a name without one, and for a Go name whose
/// parentheses are a receiver (`main.(*Server).Handle`).
fn split_parameter_list(name: &str) -> Option<(&str, &str)> {
    let head = strip_parameters(name)?;
    let list = &name[head.len()..];
    let mut depth = 0usize;
    let mut close = None;
    for (i, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let rest = &list[close? + 1..];
    let qualifiers = rest
        .split(|c: char| c.is_whitespace() || c == '&')
        .all(|word| matches!(word, "" | "const" | "volatile"));
    qualifiers.then_some((head, list))
}

/// A parameter list (and its qualifiers) as tokens, in one spelling: identifiers (with
/// their `::`) and single punctuation characters, whitespace dropped, and a `const` or
/// `volatile` before a type moved after it (`const char*` is `char const*`, the demangler's
/// and gdb's spelling; `int,long` is `int, long`). `*` and `&` are tokens of the type.
fn type_tokens(list: &str) -> Vec<&str> {
    let mut tokens: Vec<&str> = Vec::new();
    let mut start = None;
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    for (i, c) in list.char_indices() {
        if is_word(c) {
            start.get_or_insert(i);
            continue;
        }
        if let Some(at) = start.take() {
            tokens.push(&list[at..i]);
        }
        if !c.is_whitespace() {
            tokens.push(&list[i..i + c.len_utf8()]);
        }
    }
    if let Some(at) = start {
        tokens.push(&list[at..]);
    }
    // `const T` / `volatile T` at a parameter's start (after `(`, `,` or `<`): the
    // qualifier moves after the type's words (`unsigned long`, `ns::T`) and its template
    // arguments.
    let mut i = 0;
    while i < tokens.len() {
        let starts_parameter = i == 0 || matches!(tokens[i - 1], "(" | "," | "<");
        if starts_parameter && matches!(tokens[i], "const" | "volatile") {
            let qualifier = tokens[i];
            let mut end = i + 1;
            let mut depth = 0usize;
            while end < tokens.len() {
                let token = tokens[end];
                let word = token.starts_with(is_word) && !matches!(token, "const" | "volatile");
                match token {
                    "<" => depth += 1,
                    ">" if depth > 0 => depth -= 1,
                    _ if depth > 0 || word => {}
                    _ => break,
                }
                end += 1;
            }
            if end > i + 1 {
                tokens.remove(i);
                tokens.insert(end - 1, qualifier);
                i = end;
                continue;
            }
        }
        i += 1;
    }
    tokens
}

/// Whether `haystack` contains `needle`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// Glob matching with `*` (any run) and `?` (one byte), in time linear in
/// `text.len() * pattern.len()` at worst (the classic backtrack to the last `*`).
fn glob_matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_matches(b"*readline*", b"rl_readline_name"));
        assert!(glob_matches(b"read?ine", b"readline"));
        assert!(!glob_matches(b"read", b"readline"));
        assert!(glob_matches(b"*", b""));
        assert!(!glob_matches(b"a*b", b"acbc"));
        assert!(glob_matches(b"a*b*c", b"axxbyyc"));
    }

    #[test]
    fn parameters_are_stripped_outside_templates() {
        assert_eq!(strip_parameters("ns::f(int)"), Some("ns::f"));
        assert_eq!(
            strip_parameters("ns::g<void (*)(int)>(char) const"),
            Some("ns::g<void (*)(int)>")
        );
        assert_eq!(
            strip_parameters("S::operator()(int)"),
            Some("S::operator()")
        );
        assert_eq!(strip_parameters("main"), None);
    }

    #[test]
    fn parameter_lists_are_types() {
        let matches = |pattern: &str, spelling: &str| NamePattern::parse(pattern).matches(spelling);
        // `*` inside the list is a pointer, not a wildcard.
        assert!(matches("ns::f(char const*)", "ns::f(char const*)"));
        assert!(!matches(
            "ns::f(char const*)",
            "ns::f(char const*, unsigned long)"
        ));
        // The source's spelling, and spaces as one likes.
        assert!(matches("ns::f(const char*)", "ns::f(char const*)"));
        assert!(matches(
            "ns::f(const char *, unsigned long)",
            "ns::f(char const*, unsigned long)"
        ));
        assert!(matches("ns::f(int,long)", "ns::f(int, long)"));
        assert!(matches(
            "ns::f(const unsigned long&)",
            "ns::f(unsigned long const&)"
        ));
        assert!(matches(
            "ns::f(const std::vector<int, std::allocator<int>>&)",
            "ns::f(std::vector<int, std::allocator<int> > const&)"
        ));
        assert!(matches("S::get() const", "S::get() const"));
        assert!(!matches("S::get()", "S::get() const"));
        assert!(matches("S::operator()(int)", "S::operator()(int)"));
        assert!(!matches("ns::f(char*)", "ns::f(char const*)"));
        // A glob before the list still globs.
        assert!(matches("ns::*(int*)", "ns::g(int*)"));
        assert!(!matches("ns::*(int*)", "ns::g(int*, int)"));
        // The escape: `\(` makes the whole pattern a glob as before.
        assert!(matches(
            "ns::f\\(char*",
            "ns::f(char const*, unsigned long)"
        ));
        // A Go receiver is not a parameter list.
        assert!(matches("main.(*Server).*", "main.(*Server).Handle"));
        assert!(matches("*(*Server)*", "main.(*Server).Handle"));
    }

    #[test]
    fn return_types_are_stripped_from_template_functions() {
        assert_eq!(
            strip_return_type("int curve::sum<int>(int const*, int)"),
            Some("curve::sum<int>(int const*, int)")
        );
        assert_eq!(
            strip_return_type("std::pair<int, int> ns::mk<std::pair<int, int> >(int)"),
            Some("ns::mk<std::pair<int, int> >(int)")
        );
        assert_eq!(strip_return_type("ns::S::operator bool() const"), None);
        assert_eq!(
            strip_return_type("void* operator new(unsigned long)"),
            Some("operator new(unsigned long)")
        );
        assert_eq!(strip_return_type("ns::f(int)"), None);
        assert_eq!(strip_return_type("f(int) [clone .cold]"), None);
        let spelled: Vec<String> = spellings(b"_Z3sumIiET_PKS0_i")
            .map(|s| s.into_owned())
            .collect();
        assert!(spelled.contains(&"sum<int>".to_string()), "{spelled:?}");
        assert!(
            spelled.contains(&"int sum<int>(int const*, int)".to_string()),
            "{spelled:?}"
        );
    }

    #[test]
    fn merged_aliases_keep_the_answered_name() {
        let m = |name: &str, addr: u64, binding| SymbolMatch {
            name: name.to_string(),
            demangled: name.to_string(),
            addr: SymAddr::Virt(VirtAddr(addr)),
            size: 8,
            file_offset: None,
            kind: SymbolKind::Function,
            binding,
            version: None,
            version_hidden: false,
            found_in: FoundIn::Symtab,
            aliases: Vec::new(),
            kernel_module: None,
            file: PathBuf::from("f"),
        };
        let found = vec![
            m("__libc_malloc", 0x10, Binding::Local),
            m("other", 0x20, Binding::Global),
            m("malloc", 0x10, Binding::Global),
            m("__malloc", 0x10, Binding::Weak),
        ];
        let merged = merge_aliases(found.clone(), |_| None);
        let names: Vec<(&str, &[String])> = merged
            .iter()
            .map(|m| (m.name.as_str(), m.aliases.as_slice()))
            .collect();
        assert_eq!(
            names,
            vec![
                (
                    "malloc",
                    &["__libc_malloc".to_string(), "__malloc".to_string()][..]
                ),
                ("other", &[][..]),
            ]
        );
        let merged = merge_aliases(found, |m| (m.addr.raw() == 0x10).then_some("__libc_malloc"));
        assert_eq!(merged[0].name, "__libc_malloc");
        assert_eq!(merged[0].aliases, ["__malloc", "malloc"]);
    }

    #[test]
    fn required_identifier_is_the_function_name() {
        fn id(p: &str) -> Option<&str> {
            NamePattern::parse(p).required_identifier()
        }
        assert_eq!(id("curve::Demo::hello(std::string)"), Some("hello"));
        assert_eq!(id("*readline*"), None);
        assert_eq!(id("ns::*::get"), Some("get"));
        assert_eq!(id("S::operator()"), None);
    }
}
