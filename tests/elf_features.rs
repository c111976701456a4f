//! One test per ELF feature stacksym must handle, each on the testdata binary that has it
//! (see `testdata/README.md`).
//!
//! Expected addresses are read at test time from binutils (`readelf`, `nm`, `objdump`), never
//! from stacksym itself, so the tests survive a rebuild of the binaries by
//! `testdata/build.sh`; only names are hard-coded. `.ci/run` installs binutils.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

use stacksym::elf::{ElfFile, SymbolKind, SymbolOrigin};
use stacksym::symbolize::FileId;
use stacksym::NameOrigin;
use stacksym::{Input, Source, Symbolizer, VirtAddr};
use support::{bin, ALL_BINARIES};

// ------------------------------------------------------------------------------------------
// Helpers: the binaries, binutils' view of them, and owned copies of results.
// ------------------------------------------------------------------------------------------

/// Runs a binutils tool and returns its stdout; panics with a hint when it is missing.
fn tool(program: &str, args: &[&str], path: &Path) -> String {
    let output = Command::new(program)
        .args(args)
        .arg(path)
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `{program}` ({e}); these tests need binutils: apt-get install binutils"
            )
        });
    assert!(
        output.status.success(),
        "`{program} {args:?} {}` failed: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("binutils output is UTF-8")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Table {
    Symtab,
    Dynsym,
}

/// One line of `readelf -sW`.
#[derive(Debug, Clone)]
struct RSym {
    table: Table,
    index: usize,
    value: u64,
    size: u64,
    typ: String,
    bind: String,
    vis: String,
    /// `UND`, `ABS`, `COM` or a section number.
    ndx: String,
    /// As readelf prints it: `.dynsym` names carry `@VER` / `@@VER` from the version tables.
    name: String,
}

impl RSym {
    fn defined(&self) -> bool {
        !matches!(self.ndx.as_str(), "UND" | "ABS" | "COM")
    }
    /// The name without a version suffix.
    fn base_name(&self) -> &str {
        match self.name.find('@') {
            Some(0) | None => &self.name,
            Some(at) => &self.name[..at],
        }
    }
    fn is_func(&self) -> bool {
        self.typ == "FUNC" || self.typ == "IFUNC"
    }
}

fn parse_num(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
        None => s.parse().unwrap(),
    }
}

fn readelf_syms(path: &Path) -> Vec<RSym> {
    let text = tool("readelf", &["-sW"], path);
    let mut table = None;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("Symbol table '.symtab'") {
            table = Some(Table::Symtab);
            continue;
        }
        if line.starts_with("Symbol table '.dynsym'") {
            table = Some(Table::Dynsym);
            continue;
        }
        let Some(table) = table else { continue };
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.len() < 7 || !tokens[0].ends_with(':') {
            continue;
        }
        let Ok(index) = tokens[0].trim_end_matches(':').parse::<usize>() else {
            continue;
        };
        // Num: Value Size Type Bind Vis [other flags like [VARIANT_PCS]] Ndx Name
        let mut rest = tokens[6..].iter().copied();
        let mut ndx = rest.next().unwrap();
        while ndx.starts_with('[') {
            ndx = rest.next().unwrap_or("");
        }
        let name = rest.next().unwrap_or("").to_string();
        out.push(RSym {
            table,
            index,
            value: u64::from_str_radix(tokens[1], 16).unwrap(),
            size: parse_num(tokens[2]),
            typ: tokens[3].to_string(),
            bind: tokens[4].to_string(),
            vis: tokens[5].to_string(),
            ndx: ndx.to_string(),
            name,
        });
    }
    assert!(
        !out.is_empty(),
        "readelf found no symbols in {}",
        path.display()
    );
    out
}

/// The defined symbol called `name` (without version), preferring `.symtab`.
fn sym(syms: &[RSym], name: &str) -> RSym {
    let mut found: Vec<&RSym> = syms
        .iter()
        .filter(|s| s.defined() && s.base_name() == name)
        .collect();
    found.sort_by_key(|s| (s.table, s.index));
    found
        .first()
        .map(|s| (*s).clone())
        .unwrap_or_else(|| panic!("readelf shows no defined symbol {name}"))
}

/// `PT_LOAD` headers from `readelf -lW`: (p_offset, p_vaddr, p_filesz, p_memsz).
fn readelf_loads(path: &Path) -> Vec<(u64, u64, u64, u64)> {
    let text = tool("readelf", &["-lW"], path);
    let loads: Vec<_> = text
        .lines()
        .filter_map(|line| {
            let t: Vec<&str> = line.split_whitespace().collect();
            (t.first() == Some(&"LOAD")).then(|| {
                (
                    parse_num(t[1]),
                    parse_num(t[2]),
                    parse_num(t[4]),
                    parse_num(t[5]),
                )
            })
        })
        .collect();
    assert!(!loads.is_empty(), "no LOAD in {}", path.display());
    loads
}

/// `objdump -d -j SECTION` (or another objdump): the entries it labels `NAME@plt`, as
/// (address, NAME@plt).
fn objdump_plt(objdump: &str, path: &Path, section: &str) -> Vec<(u64, String)> {
    let text = tool(objdump, &["-d", "-j", section], path);
    text.lines()
        .filter_map(|line| {
            // "0000000000001040 <puts@plt>:"
            let (addr, rest) = line.split_once(" <")?;
            let label = rest.strip_suffix(">:")?;
            if !label.ends_with("@plt") || label.contains(['+', '-']) {
                return None;
            }
            Some((
                u64::from_str_radix(addr.trim(), 16).ok()?,
                label.to_string(),
            ))
        })
        .collect()
}

/// `(sh_addr, sh_size)` of the section called `name`, from `readelf -SW`.
fn readelf_section(path: &Path, name: &str) -> (u64, u64) {
    let text = tool("readelf", &["-SW"], path);
    text.lines()
        .find_map(|line| {
            let (_, rest) = line.split_once(']')?;
            let t: Vec<&str> = rest.split_whitespace().collect();
            (t.first() == Some(&name)).then(|| (parse_num_hex(t[2]), parse_num_hex(t[4])))
        })
        .unwrap_or_else(|| panic!("{}: no section {name}", path.display()))
}

fn parse_num_hex(s: &str) -> u64 {
    u64::from_str_radix(s, 16).unwrap()
}

/// The symbol names of the `.rela.plt` relocations, in order, from `readelf -rW`.
fn readelf_plt_relocs(path: &Path) -> Vec<String> {
    let text = tool("readelf", &["-rW"], path);
    let mut in_plt = false;
    let mut names = Vec::new();
    for line in text.lines() {
        if line.starts_with("Relocation section") {
            in_plt = line.contains("'.rela.plt'") || line.contains("'.rel.plt'");
            continue;
        }
        let t: Vec<&str> = line.split_whitespace().collect();
        if in_plt && t.len() >= 5 && t[2].contains("JUMP_SLOT") {
            names.push(t[4].split('@').next().unwrap().to_string());
        }
    }
    names
}

/// A result without borrows, to compare results of different calls.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    name: String,
    raw: Vec<u8>,
    version: Option<String>,
    version_hidden: bool,
    origin: SymbolOrigin,
    addr: u64,
    size: u64,
    offset: u64,
    kind: SymbolKind,
}

fn symbolize_with(symbolizer: &Symbolizer, path: &Path, input: Input<'_>) -> Vec<Option<Owned>> {
    let symbols = symbolizer
        .symbolize(&Source::Elf { path }, input)
        .unwrap_or_else(|e| panic!("symbolizing {}: {e}", path.display()));
    symbols
        .iter()
        .map(|s| {
            s.map(|s| {
                assert_eq!(s.module, path, "results name the path the caller gave");
                Owned {
                    name: s.name.to_string(),
                    raw: s.raw_name.to_vec(),
                    version: s.version.map(str::to_string),
                    version_hidden: s.version_hidden,
                    origin: match s.origin {
                        NameOrigin::Table(origin) => origin,
                        other => panic!("{}: a name from {other:?}, not a table", s.name),
                    },
                    addr: s.addr.raw(),
                    size: s.size,
                    offset: s.offset,
                    kind: s.kind,
                }
            })
        })
        .collect()
}

fn symbolize(path: &Path, addrs: &[u64]) -> Vec<Option<Owned>> {
    symbolize_with(
        &Symbolizer::default(),
        path,
        Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(addrs)),
    )
}

fn one(path: &Path, addr: u64) -> Owned {
    symbolize(path, &[addr])
        .pop()
        .unwrap()
        .unwrap_or_else(|| panic!("{}: no symbol at {addr:#x}", path.display()))
}

/// The documented alias rule (module docs of `src/elf/symbols.rs`), applied to readelf's view:
/// sized over unsized, GLOBAL/UNIQUE over WEAK over LOCAL, FUNC over IFUNC, default visibility,
/// `.symtab` over `.dynsym`, lower index.
fn alias_rank(s: &RSym) -> (bool, u8, bool, bool, Table, usize) {
    let binding = match s.bind.as_str() {
        "GLOBAL" | "UNIQUE" => 0,
        "WEAK" => 1,
        _ => 2,
    };
    (
        s.size == 0,
        binding,
        s.typ == "IFUNC",
        s.vis != "DEFAULT",
        s.table,
        s.index,
    )
}

// ------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------

/// c-pie-g (full `.symtab`) and c-stripped-dynsym (`.dynsym` only) both have
/// `demo_impl`/`demo_alias` (GLOBAL) and `demo_weak` (WEAK) at one address. The rule picks a
/// GLOBAL one with the lowest table index: `demo_impl` in c-pie-g's `.symtab`, `demo_alias`
/// in c-stripped-dynsym's `.dynsym` (where the linker ordered them differently). The answer
/// must be the same on every run, whoever opens the file.
#[test]
fn aliases_at_one_address_follow_the_documented_rule() {
    for (binary, expected_name) in [
        ("c-pie-g", "demo_impl"),
        ("c-stripped-dynsym", "demo_alias"),
    ] {
        let path = bin(binary);
        let syms = readelf_syms(&path);
        let addr = sym(&syms, "demo_impl").value;
        let mut aliases: Vec<&RSym> = syms
            .iter()
            .filter(|s| s.defined() && s.is_func() && s.value == addr)
            .collect();
        let names: Vec<&str> = aliases.iter().map(|s| s.base_name()).collect();
        for name in ["demo_impl", "demo_alias", "demo_weak"] {
            assert!(names.contains(&name), "{binary}: readelf shows {names:?}");
        }
        aliases.sort_by_key(|s| alias_rank(s));
        let by_rule = aliases[0].base_name().to_string();
        assert_eq!(
            by_rule, expected_name,
            "{binary}: the binaries changed; update the expected name"
        );

        let size = aliases[0].size;
        let addrs: Vec<u64> = (addr..addr + size).collect();
        let first = symbolize(&path, &addrs);
        for (i, got) in first.iter().enumerate() {
            let got = got.as_ref().expect("every byte of demo_impl is covered");
            assert_eq!(got.name, by_rule, "{binary} at {:#x}", addrs[i]);
            assert_eq!((got.addr, got.size, got.offset), (addr, size, i as u64));
            let origin = match aliases[0].table {
                Table::Symtab => SymbolOrigin::Symtab,
                Table::Dynsym => SymbolOrigin::Dynsym,
            };
            assert_eq!(got.origin, origin, "{binary}");
        }
        // Same answer on every run: fresh symbolizers and fresh ElfFiles.
        for _ in 0..10 {
            assert_eq!(symbolize(&path, &addrs), first, "{binary}");
            let elf = ElfFile::open(&path).unwrap();
            let s = elf.find_symbol(VirtAddr(addr)).unwrap().unwrap();
            assert_eq!(s.name, by_rule.as_bytes());
        }
    }
}

/// c-pie-g's `zero_size_fn` is a FUNC with `st_size == 0` (top-level asm): it covers up to
/// the next indexed function and reports size 0.
#[test]
fn zero_size_symbol_covers_up_to_the_next_symbol() {
    for binary in ["c-pie-g", "c-nopie", "c-i386"] {
        let path = bin(binary);
        let syms = readelf_syms(&path);
        let zero = sym(&syms, "zero_size_fn");
        assert_eq!(zero.size, 0, "{binary}: zero_size_fn has st_size 0");
        let next = syms
            .iter()
            .filter(|s| s.defined() && s.is_func() && s.value > zero.value)
            .min_by_key(|s| s.value)
            .expect("a function follows zero_size_fn");
        let addrs = [zero.value, zero.value + 1, next.value - 1, next.value];
        let got = symbolize(&path, &addrs);
        for (i, &a) in addrs[..3].iter().enumerate() {
            let g = got[i].as_ref().unwrap_or_else(|| panic!("{binary} {a:#x}"));
            assert_eq!(g.name, "zero_size_fn", "{binary} at {a:#x}");
            assert_eq!(g.size, 0, "the stated size is reported");
            assert_eq!(g.offset, a - zero.value);
        }
        let after = got[3].as_ref().expect("the next function");
        assert_eq!(after.name, next.base_name(), "{binary}");
        assert_eq!(after.offset, 0);
    }
}

/// c-pie-g, c-i386 and c-aarch64 have `process_value.cold` (a LOCAL FUNC in
/// `.text.unlikely`, far from the hot `process_value`): an address in it is named as itself,
/// not as the hot part nor as its neighbour `die_bad_value`.
#[test]
fn cold_fragment_is_named_as_itself() {
    for binary in ["c-pie-g", "c-i386", "c-aarch64"] {
        let path = bin(binary);
        let syms = readelf_syms(&path);
        let cold = sym(&syms, "process_value.cold");
        let hot = sym(&syms, "process_value");
        assert_ne!(cold.value, hot.value);
        let got = symbolize(&path, &[cold.value, cold.value + cold.size - 1, hot.value]);
        for g in &got[..2] {
            let g = g.as_ref().expect("cold fragment covered");
            assert_eq!(g.name, "process_value.cold", "{binary}");
            assert_eq!((g.addr, g.size), (cold.value, cold.size));
            assert_eq!(g.kind, SymbolKind::Function);
        }
        assert_eq!(got[2].as_ref().unwrap().name, "process_value", "{binary}");
    }
}

/// Turns the `.symtab` section header of an ELF64 little-endian file into `SHT_NULL`, as if
/// stripped, so only `.dynsym` remains.
fn without_symtab(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let (entsize, count) = (u16_at(0x3a), u16_at(0x3c));
    let mut patched = 0;
    for i in 0..count {
        let header = shoff + i * entsize;
        let sh_type = u32::from_le_bytes(bytes[header + 4..header + 8].try_into().unwrap());
        if sh_type == 2 {
            // SHT_SYMTAB -> SHT_NULL
            out[header + 4..header + 8].copy_from_slice(&0u32.to_le_bytes());
            patched += 1;
        }
    }
    assert_eq!(patched, 1, "exactly one .symtab");
    out
}

/// libversioned.so without its `.symtab`: both `vfunc`s are plain `vfunc` in `.dynsym`; the
/// version comes from `.gnu.version` + `.gnu.version_d`: VERS_2 (default) for one, VERS_1
/// with the hidden bit for the other; `vhelper` (version index 1, global) has none.
#[test]
fn dynsym_versions_come_from_the_version_tables() {
    let path = bin("libversioned.so");
    let syms = readelf_syms(&path);
    let dyn_named = |name: &str| {
        syms.iter()
            .find(|s| s.table == Table::Dynsym && s.name == name)
            .unwrap_or_else(|| panic!("readelf --dyn-syms shows {name}"))
            .value
    };
    let (v2, v1, helper) = (
        dyn_named("vfunc@@VERS_2"),
        dyn_named("vfunc@VERS_1"),
        dyn_named("vhelper"),
    );
    let stripped = without_symtab(&std::fs::read(&path).unwrap());

    let elf = ElfFile::from_bytes("libversioned-dynsym-only.so", stripped.clone()).unwrap();
    let s = elf.find_symbol(VirtAddr(v2)).unwrap().unwrap();
    assert_eq!(
        (s.name, s.version, s.version_hidden),
        (&b"vfunc"[..], Some(&b"VERS_2"[..]), false)
    );
    let s = elf.find_symbol(VirtAddr(v1)).unwrap().unwrap();
    assert_eq!(
        (s.name, s.version, s.version_hidden),
        (&b"vfunc"[..], Some(&b"VERS_1"[..]), true)
    );
    let s = elf.find_symbol(VirtAddr(helper)).unwrap().unwrap();
    assert_eq!((s.name, s.version), (&b"vhelper"[..], None));

    // The same through the Symbolizer, from a file on disk.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("libversioned.so");
    std::fs::write(&copy, &stripped).unwrap();
    let got = symbolize(&copy, &[v2, v1 + 1, helper]);
    let got: Vec<_> = got
        .iter()
        .map(|g| {
            let g = g.as_ref().unwrap();
            (
                g.name.as_str(),
                g.version.as_deref(),
                g.version_hidden,
                g.origin,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("vfunc", Some("VERS_2"), false, SymbolOrigin::Dynsym),
            ("vfunc", Some("VERS_1"), true, SymbolOrigin::Dynsym),
            ("vhelper", None, false, SymbolOrigin::Dynsym)
        ]
    );
}

/// libversioned.so as built: its `.symtab` holds the literal strings `vfunc@@VERS_2` and
/// `vfunc@VERS_1` (GLOBAL, so they beat the LOCAL `vfunc_v2`/`vfunc_v1` at the same
/// addresses); they are split into name + version, and the hidden `@` is told from `@@`.
#[test]
fn symtab_versioned_names_are_split() {
    let path = bin("libversioned.so");
    let syms = readelf_syms(&path);
    let in_symtab = |name: &str| {
        syms.iter()
            .find(|s| s.table == Table::Symtab && s.name == name)
            .unwrap_or_else(|| panic!(".symtab has the literal {name}"))
            .value
    };
    let (v2, v1) = (in_symtab("vfunc@@VERS_2"), in_symtab("vfunc@VERS_1"));
    let elf = ElfFile::open(&path).unwrap();
    let s = elf.find_symbol(VirtAddr(v2 + 2)).unwrap().unwrap();
    assert_eq!(
        (s.name, s.version, s.version_hidden, s.addr.0),
        (&b"vfunc"[..], Some(&b"VERS_2"[..]), false, v2)
    );
    let s = elf.find_symbol(VirtAddr(v1)).unwrap().unwrap();
    assert_eq!(
        (s.name, s.version, s.version_hidden, s.addr.0),
        (&b"vfunc"[..], Some(&b"VERS_1"[..]), true, v1)
    );
    let got = one(&path, v2);
    assert_eq!(
        (
            got.name.as_str(),
            got.raw.as_slice(),
            got.version.as_deref(),
            got.version_hidden,
            got.origin
        ),
        (
            "vfunc",
            &b"vfunc"[..],
            Some("VERS_2"),
            false,
            SymbolOrigin::Symtab
        )
    );
    let got = one(&path, v1);
    assert_eq!(
        (got.version.as_deref(), got.version_hidden),
        (Some("VERS_1"), true)
    );
}

/// c-pie-g has a classic `.plt` (PLT0 header, then 16-byte entries), c-ibt has IBT's
/// `.plt.sec`, c-i386 has an i386 `.plt` with `.rel.plt`. No ELF symbol covers them; every
/// entry objdump names `X@plt` must be named `X@plt` by stacksym too, in particular
/// `puts@plt`.
#[test]
fn plt_entries_are_named_target_at_plt() {
    for (binary, section) in [
        ("c-pie-g", ".plt"),
        ("c-ibt", ".plt.sec"),
        ("c-i386", ".plt"),
    ] {
        let path = bin(binary);
        let entries = objdump_plt("objdump", &path, section);
        assert!(
            entries.iter().any(|(_, n)| n == "puts@plt"),
            "{binary}: objdump shows {entries:?}"
        );
        let addrs: Vec<u64> = entries.iter().flat_map(|&(a, _)| [a, a + 15]).collect();
        let got = symbolize(&path, &addrs);
        for (i, (addr, name)) in entries.iter().enumerate() {
            for (j, g) in got[2 * i..2 * i + 2].iter().enumerate() {
                let g = g
                    .as_ref()
                    .unwrap_or_else(|| panic!("{binary} {section}: nothing at {addr:#x}"));
                assert_eq!(&g.name, name, "{binary} {section} at {addr:#x}");
                assert_eq!((g.addr, g.offset), (*addr, j as u64 * 15));
                assert_eq!(g.kind, SymbolKind::Function);
                assert_eq!(g.origin, SymbolOrigin::Plt);
            }
        }
    }
}

/// c-stripped-dynsym has no `.symtab`: `-rdynamic` exported the program's global functions
/// and data to `.dynsym`, and each of them is still named.
#[test]
fn dynsym_only_binary_still_names_exported_functions() {
    let path = bin("c-stripped-dynsym");
    let syms = readelf_syms(&path);
    assert!(syms.iter().all(|s| s.table == Table::Dynsym), "no .symtab");
    let exported: Vec<&RSym> = syms
        .iter()
        .filter(|s| s.defined() && (s.is_func() || s.typ == "OBJECT"))
        .collect();
    for name in [
        "main",
        "checksum",
        "process_value",
        "run_all",
        "zero_size_fn",
        "demo_global_table",
    ] {
        assert!(exported.iter().any(|s| s.name == name), "{name} exported");
    }
    let addrs: Vec<u64> = exported.iter().map(|s| s.value + s.size / 2).collect();
    let got = symbolize(&path, &addrs);
    for (s, g) in exported.iter().zip(&got) {
        let g = g.as_ref().unwrap_or_else(|| panic!("{} not found", s.name));
        // Aliases (demo_impl/demo_alias/demo_weak) resolve to one of them, by the rule.
        let best = exported
            .iter()
            .filter(|o| o.value == s.value && o.is_func() == s.is_func())
            .min_by_key(|o| alias_rank(o))
            .unwrap();
        assert_eq!(g.name, best.base_name(), "at {:#x}", s.value);
        assert_eq!(g.addr, s.value);
        let kind = if s.is_func() {
            SymbolKind::Function
        } else {
            SymbolKind::Data
        };
        assert_eq!(g.kind, kind, "{}", s.name);
        assert_eq!(g.origin, SymbolOrigin::Dynsym, "{}", s.name);
    }
}

/// Undefined symbols (c-pie-g's `vfunc@VERS_1`, `puts`, ...) and absolute ones
/// (libversioned.so's `VERS_1`/`VERS_2` version-definition symbols, value 0) name no address
/// of the file: no lookup may return them.
#[test]
fn undefined_and_absolute_symbols_are_never_returned() {
    for binary in ALL_BINARIES {
        let path = bin(binary);
        let syms = readelf_syms(&path);
        let defined: std::collections::HashSet<&str> = syms
            .iter()
            .filter(|s| s.defined())
            .map(|s| s.base_name())
            .collect();
        let never: Vec<&RSym> = syms
            .iter()
            .filter(|s| {
                matches!(s.ndx.as_str(), "UND" | "ABS")
                    && matches!(s.typ.as_str(), "FUNC" | "OBJECT" | "IFUNC")
                    && !s.base_name().is_empty()
                    && !defined.contains(s.base_name())
            })
            .collect();
        if *binary == "libversioned.so" {
            let abs: Vec<&str> = never
                .iter()
                .filter(|s| s.ndx == "ABS")
                .map(|s| s.base_name())
                .collect();
            assert!(
                abs.contains(&"VERS_1") && abs.contains(&"VERS_2"),
                "{abs:?}"
            );
        }
        // Their own values (mostly 0), and the first bytes of the file's address space.
        let mut addrs: Vec<u64> = never.iter().map(|s| s.value).collect();
        addrs.extend(0..64);
        let got = symbolize(&path, &addrs);
        for (addr, g) in addrs.iter().zip(&got) {
            if let Some(g) = g {
                assert!(
                    !never.iter().any(|s| s.base_name() == g.name),
                    "{binary}: {addr:#x} named by the undefined/absolute {}",
                    g.name
                );
            }
        }
        if *binary == "libversioned.so" || *binary == "c-pie-g" {
            assert!(
                got.iter().all(Option::is_none),
                "{binary}: nothing at 0..64"
            );
        }
    }
}

/// c-pie-g's `demo_global_table` (GLOBAL OBJECT, `.data`), `demo_local_table` (LOCAL
/// OBJECT) and `demo_global_counter` are named with kind Data and their stated sizes; the
/// same for the non-PIE c-nopie.
#[test]
fn data_objects_are_named_with_kind_data() {
    for binary in ["c-pie-g", "c-nopie", "c-i386", "c-aarch64"] {
        let path = bin(binary);
        let syms = readelf_syms(&path);
        for name in [
            "demo_global_table",
            "demo_local_table",
            "demo_global_counter",
        ] {
            let s = sym(&syms, name);
            assert_eq!(s.typ, "OBJECT");
            let got = symbolize(&path, &[s.value, s.value + s.size - 1, s.value + s.size]);
            for (i, g) in got[..2].iter().enumerate() {
                let g = g.as_ref().unwrap_or_else(|| panic!("{binary}: {name}"));
                assert_eq!(g.name, name, "{binary}");
                assert_eq!(g.kind, SymbolKind::Data, "{binary} {name}");
                assert_eq!((g.addr, g.size), (s.value, s.size));
                assert_eq!(g.offset, if i == 0 { 0 } else { s.size - 1 });
            }
            if let Some(g) = &got[2] {
                assert_ne!(g.name, name, "{binary}: one past the end of {name}");
            }
        }
    }
}

/// c-pie-g is `ET_DYN` linked at 0 (addresses relative to the load bias), c-nopie is
/// `ET_EXEC` at 0x400000 (absolute addresses). Each answers in its own address space only.
#[test]
fn pie_and_non_pie_answer_in_their_own_address_space() {
    let pie = bin("c-pie-g");
    let nopie = bin("c-nopie");
    assert_eq!(ElfFile::open(&pie).unwrap().header().file_type, 3);
    assert_eq!(ElfFile::open(&nopie).unwrap().header().file_type, 2);
    let pie_checksum = sym(&readelf_syms(&pie), "checksum");
    let nopie_checksum = sym(&readelf_syms(&nopie), "checksum");
    assert!(pie_checksum.value < 0x10_0000);
    assert!(nopie_checksum.value >= 0x40_0000);

    assert_eq!(one(&pie, pie_checksum.value + 4).name, "checksum");
    assert_eq!(one(&nopie, nopie_checksum.value + 4).name, "checksum");
    // An address of one is not an address of the other.
    assert_eq!(symbolize(&nopie, &[pie_checksum.value]), [None]);
    assert_eq!(symbolize(&pie, &[nopie_checksum.value]), [None]);
}

/// For every binary: file offsets computed from `readelf -lW` program headers (offset =
/// p_offset + vaddr - p_vaddr, for a vaddr in the file-backed part of a PT_LOAD) give the
/// same answers as the virtual addresses, through the Symbolizer and through ElfFile.
#[test]
fn file_offsets_give_the_same_answers_as_virtual_addresses() {
    for binary in ALL_BINARIES {
        let path = bin(binary);
        let loads = readelf_loads(&path);
        let syms = readelf_syms(&path);
        let mut vaddrs = Vec::new();
        let mut offsets = Vec::new();
        for s in syms
            .iter()
            .filter(|s| s.defined() && (s.is_func() || s.typ == "OBJECT"))
        {
            for vaddr in [s.value, s.value + s.size / 2] {
                let containing: Vec<_> = loads
                    .iter()
                    .filter(|&&(_, v, filesz, _)| vaddr >= v && vaddr - v < filesz)
                    .collect();
                let [&(off, v, _, _)] = containing[..] else {
                    continue; // .bss, or not loaded
                };
                let offset = off + (vaddr - v);
                // Skip offsets two segments load (ambiguous; the library picks one).
                let loaded_by = loads
                    .iter()
                    .filter(|&&(o, _, filesz, _)| offset >= o && offset - o < filesz)
                    .count();
                if loaded_by == 1 {
                    vaddrs.push(vaddr);
                    offsets.push(offset);
                }
            }
        }
        assert!(vaddrs.len() > 10, "{binary}: {} addresses", vaddrs.len());
        let symbolizer = Symbolizer::default();
        let by_vaddr = symbolize_with(
            &symbolizer,
            &path,
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&vaddrs)),
        );
        let by_offset = symbolize_with(
            &symbolizer,
            &path,
            Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&offsets)),
        );
        assert!(by_vaddr.iter().filter(|s| s.is_some()).count() > 10);
        for i in 0..vaddrs.len() {
            assert_eq!(
                by_vaddr[i], by_offset[i],
                "{binary}: vaddr {:#x} vs offset {:#x}",
                vaddrs[i], offsets[i]
            );
        }
        let elf = ElfFile::open(&path).unwrap();
        for (&vaddr, &offset) in vaddrs.iter().zip(&offsets) {
            let a = elf.find_symbol(VirtAddr(vaddr)).unwrap().map(|s| s.id);
            let b = elf
                .find_symbol_at_file_offset(stacksym::FileOffset(offset))
                .unwrap()
                .map(|s| s.id);
            assert_eq!(a, b, "{binary}: {vaddr:#x} / {offset:#x}");
        }
        // Offsets past the end of the file are in no segment.
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(
            symbolize_with(
                &symbolizer,
                &path,
                Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&[len, u64::MAX]))
            ),
            [None, None]
        );
    }
}

/// c-i386 is ELF32 (`ELFCLASS32`, `EM_386`): functions, data, aliases and the zero-size
/// `__x86.get_pc_thunk.*` from glibc's objects are found with 32-bit symbol entries.
#[test]
fn elf32_i386() {
    let path = bin("c-i386");
    let elf = ElfFile::open(&path).unwrap();
    let h = elf.header();
    assert!(!h.is_64 && !h.big_endian);
    assert_eq!(h.machine, 3);
    let syms = readelf_syms(&path);
    for name in ["main", "checksum", "mix", "leaf_hash", "run_all"] {
        let s = sym(&syms, name);
        let g = one(&path, s.value + s.size / 2);
        assert_eq!((g.name.as_str(), g.addr, g.size), (name, s.value, s.size));
    }
    let thunks: Vec<&RSym> = syms
        .iter()
        .filter(|s| s.name.starts_with("__x86.get_pc_thunk.") && s.size == 0 && s.defined())
        .collect();
    assert!(!thunks.is_empty(), "zero-size thunks");
    for t in thunks {
        let g = one(&path, t.value);
        assert_eq!((g.name.as_str(), g.size), (t.name.as_str(), 0));
    }
    assert_eq!(one(&path, sym(&syms, "demo_impl").value).name, "demo_impl");
}

/// c-s390x (`EM_S390`, ELF64 big-endian) is the one big-endian binary: every sized function
/// and object readelf lists is found at its start, middle and last byte with readelf's start
/// and size, so headers, symbols and segments are read in the file's byte order; its build-id
/// matches readelf's, and file offsets give the same answers as virtual addresses.
#[test]
fn big_endian_s390x() {
    let path = bin("c-s390x");
    let elf = ElfFile::open(&path).unwrap();
    let h = elf.header();
    assert!(h.is_64 && h.big_endian, "{h:?}");
    assert_eq!(h.machine, 22, "EM_S390");
    let syms = readelf_syms(&path);
    let sized: Vec<&RSym> = syms
        .iter()
        .filter(|s| s.defined() && s.size > 0 && (s.is_func() || s.typ == "OBJECT"))
        .collect();
    assert!(sized.len() >= 10, "c-s390x has its functions and objects");
    for s in &sized {
        for addr in [s.value, s.value + s.size / 2, s.value + s.size - 1] {
            let g = one(&path, addr);
            assert_eq!(
                (g.addr, g.size),
                (s.value, s.size),
                "{} at {addr:#x}",
                s.name
            );
        }
    }
    for name in ["checksum", "process_value", "demo_global_table"] {
        let s = sym(&syms, name);
        assert_eq!(one(&path, s.value).name, name);
    }
    let notes = tool("readelf", &["-n"], &path);
    let id = elf.build_id().expect("gcc writes a build-id");
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    assert!(notes.contains(&hex), "build-id {hex} not in readelf -n");
    let main = sym(&syms, "main").value;
    let offset = elf.segments().virt_to_file_offset(VirtAddr(main)).unwrap();
    let by_offset = symbolize_with(
        &Symbolizer::default(),
        &path,
        Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&[offset.0])),
    );
    assert_eq!(by_offset[0].as_ref().unwrap().name, "main");
}

/// c-aarch64 (`EM_AARCH64`, PIE, ELF64 LE) is only read: functions, local `vfunc`, data, and
/// the aarch64 `.plt` (32-byte PLT0) entries that objdump names.
#[test]
fn aarch64() {
    let path = bin("c-aarch64");
    let elf = ElfFile::open(&path).unwrap();
    let h = elf.header();
    assert!(h.is_64 && !h.big_endian);
    assert_eq!(h.machine, 183);
    assert_eq!(h.file_type, 3);
    let syms = readelf_syms(&path);
    for name in [
        "main",
        "checksum",
        "vfunc",
        "vfunc_old",
        "mix",
        "demo_global_table",
    ] {
        let s = sym(&syms, name);
        let g = one(&path, s.value + s.size / 2);
        assert_eq!((g.name.as_str(), g.addr, g.size), (name, s.value, s.size));
    }
    // The aarch64 PLT: a 32-byte PLT0, then one 16-byte entry per `.rela.plt` relocation,
    // in relocation order (the layout binutils' aarch64 objdump labels; it is not always
    // installed, so it is only a cross-check).
    let (plt_addr, plt_size) = readelf_section(&path, ".plt");
    let relocs = readelf_plt_relocs(&path);
    assert!(relocs.iter().any(|n| n == "puts"), "{relocs:?}");
    let plt: Vec<(u64, String)> = relocs
        .iter()
        .enumerate()
        .map(|(i, n)| (plt_addr + 32 + 16 * i as u64, format!("{n}@plt")))
        .collect();
    assert!(plt.last().unwrap().0 + 16 <= plt_addr + plt_size);
    for (addr, name) in &plt {
        for a in [*addr, addr + 15] {
            let g = one(&path, a);
            assert_eq!((&g.name, g.addr), (name, *addr), "at {a:#x}");
        }
    }
    if Command::new("aarch64-linux-gnu-objdump")
        .arg("--version")
        .output()
        .is_ok()
    {
        assert_eq!(objdump_plt("aarch64-linux-gnu-objdump", &path, ".plt"), plt);
    } else {
        eprintln!("aarch64-linux-gnu-objdump not installed: PLT layout not cross-checked");
    }
}

/// cpp-O2-g (Itanium mangling): template instances, overloads, a lambda, `operator+` and a
/// `[clone .cold]` come out demangled; with demangling off the raw mangled names come out.
/// The raw name is always the mangled one.
#[test]
fn cpp_demangling() {
    let path = bin("cpp-O2-g");
    let syms = readelf_syms(&path);
    let cases = [
        ("_ZN13stacksym_demo7sum_allIiEET_PKS1_j", "int stacksym_demo::sum_all<int>(int const*, unsigned int)"),
        ("_ZN13stacksym_demo7sum_allIdEET_PKS1_j", "double stacksym_demo::sum_all<double>(double const*, unsigned int)"),
        ("_ZNK13stacksym_demo4geom5Shape5scaleEi", "stacksym_demo::geom::Shape::scale(int) const"),
        ("_ZN13stacksym_demo4geom5Shape5scaleElPKc", "stacksym_demo::geom::Shape::scale(long, char const*)"),
        ("_ZZN13stacksym_demo10run_lambdaEiENKUliE_clEi", "stacksym_demo::run_lambda(int)::{lambda(int)#1}::operator()(int) const"),
        ("_ZN13stacksym_demo4geomplERKNS0_4Vec2ES3_", "stacksym_demo::geom::operator+(stacksym_demo::geom::Vec2 const&, stacksym_demo::geom::Vec2 const&)"),
        ("_ZN13stacksym_demo11checked_divEii.cold", "stacksym_demo::checked_div(int, int) [clone .cold]"),
        ("main", "main"),
    ];
    check_demangling(&path, &syms, &cases);
}

/// rust-v0 (`_R` mangling: generics, trait impls, closures) and rust-legacy (`_ZN...17h<hash>E`,
/// the hash dropped from the shown name).
#[test]
fn rust_demangling() {
    let v0 = bin("rust-v0");
    let syms = readelf_syms(&v0);
    let find = |suffix: &str| {
        syms.iter()
            .find(|s| {
                s.defined() && s.is_func() && s.name.starts_with("_R") && s.name.ends_with(suffix)
            })
            .unwrap_or_else(|| panic!("rust-v0 has a symbol ending in {suffix}"))
            .name
            .clone()
    };
    let cases = [
        (find("_4demo7largestlEB2_"), "demo::largest::<i32>"),
        (find("_4demo7largestdEB2_"), "demo::largest::<f64>"),
        (
            find("_4demoNtB2_6CircleNtB2_5Shape4area"),
            "<demo::Circle as demo::Shape>::area",
        ),
        (find("_4demo4main0B3_"), "demo::main::{closure#0}"),
        (
            find("_4demo5inner6deeper9nested_fn"),
            "demo::inner::deeper::nested_fn",
        ),
    ];
    let cases: Vec<(&str, &str)> = cases.iter().map(|(m, d)| (m.as_str(), *d)).collect();
    check_demangling(&v0, &syms, &cases);

    let legacy = bin("rust-legacy");
    let syms = readelf_syms(&legacy);
    let find = |prefix: &str| {
        syms.iter()
            .find(|s| s.defined() && s.is_func() && s.name.starts_with(prefix))
            .unwrap_or_else(|| panic!("rust-legacy has a symbol starting with {prefix}"))
            .name
            .clone()
    };
    let cases = [
        (find("_ZN4demo4main17h"), "demo::main"),
        (find("_ZN4demo10total_area17h"), "demo::total_area"),
        (
            find("_ZN4demo5inner6deeper9nested_fn17h"),
            "demo::inner::deeper::nested_fn",
        ),
        (
            find("_ZN4demo4main28_$u7b$$u7b$closure$u7d$$u7d$17h"),
            "demo::main::{{closure}}",
        ),
    ];
    let cases: Vec<(&str, &str)> = cases.iter().map(|(m, d)| (m.as_str(), *d)).collect();
    check_demangling(&legacy, &syms, &cases);
}

fn check_demangling(path: &Path, syms: &[RSym], cases: &[(&str, &str)]) {
    let addrs: Vec<u64> = cases
        .iter()
        .map(|(mangled, _)| {
            let s = syms
                .iter()
                .find(|s| s.defined() && s.name == *mangled)
                .unwrap_or_else(|| panic!("{}: no {mangled}", path.display()));
            s.value + s.size / 2
        })
        .collect();
    let on = symbolize_with(
        &Symbolizer::builder().demangle(true).build(),
        path,
        Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
    );
    let off = symbolize_with(
        &Symbolizer::builder().demangle(false).build(),
        path,
        Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&addrs)),
    );
    for (i, (mangled, demangled)) in cases.iter().enumerate() {
        let on = on[i].as_ref().unwrap();
        let off = off[i].as_ref().unwrap();
        assert_eq!(on.name, *demangled, "{mangled}");
        assert_eq!(on.raw, mangled.as_bytes());
        assert_eq!(off.name, *mangled, "demangling off gives the raw name");
        assert_eq!(off.raw, mangled.as_bytes());
        assert_eq!(
            (on.addr, on.size, on.offset),
            (off.addr, off.size, off.offset)
        );
        // No Rust hash survives.
        assert!(!looks_like_rust_hash(&on.name), "{}", on.name);
        assert_eq!(stacksym::demangle::demangle(mangled), *demangled);
    }
}

fn looks_like_rust_hash(name: &str) -> bool {
    name.split("::").any(|part| {
        part.len() == 17
            && part.starts_with('h')
            && part[1..].chars().all(|c| c.is_ascii_hexdigit())
    })
}

/// Every binary's build-id is the one `readelf -n` prints (all ten have one).
#[test]
fn build_id_matches_readelf() {
    for binary in ALL_BINARIES {
        let path = bin(binary);
        let text = tool("readelf", &["-n"], &path);
        let expected = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Build ID: "))
            .map(|hex| hex.trim().to_string());
        let elf = ElfFile::open(&path).unwrap();
        let got = elf
            .build_id()
            .map(|id| id.iter().map(|b| format!("{b:02x}")).collect::<String>());
        assert_eq!(got, expected, "{binary}");
        assert!(got.is_some(), "{binary} has a build-id");
    }
}

/// The same file symbolized twice is opened once: one miss, then hits; its mapping is
/// counted once.
#[test]
fn cache_hits_for_the_same_file() {
    let path = bin("c-pie-g");
    let addr = sym(&readelf_syms(&path), "checksum").value;
    let symbolizer = Symbolizer::default();
    let first = symbolize_with(
        &symbolizer,
        &path,
        Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[addr])),
    );
    let s = symbolizer.stats();
    assert_eq!((s.files.hits, s.files.misses, s.open_files), (0, 1, 1));
    let len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(s.bytes_mapped, len);
    for _ in 0..3 {
        assert_eq!(
            symbolize_with(
                &symbolizer,
                &path,
                Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[addr]))
            ),
            first
        );
    }
    let s = symbolizer.stats();
    assert_eq!((s.files.hits, s.files.misses, s.open_files), (3, 1, 1));
    assert_eq!(s.bytes_mapped, len);
    symbolizer.clear();
    assert_eq!(symbolizer.stats().open_files, 0);
}

/// A copy of c-pie-g in a tempdir is symbolized, then replaced by c-nopie, once by
/// overwriting in place (same inode, new size/mtime) and once by renaming a new file over it
/// (new inode): the symbolizer must notice and answer from the new contents.
#[test]
fn replaced_file_gives_new_answers() {
    let pie = bin("c-pie-g");
    let nopie = bin("c-nopie");
    let pie_addr = sym(&readelf_syms(&pie), "checksum").value;
    let nopie_addr = sym(&readelf_syms(&nopie), "run_all").value;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("prog");

    for replace_by_rename in [false, true] {
        std::fs::copy(&pie, &target).unwrap();
        let symbolizer = Symbolizer::default();
        let before = symbolize_with(
            &symbolizer,
            &target,
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[pie_addr, nopie_addr])),
        );
        assert_eq!(before[0].as_ref().unwrap().name, "checksum");
        assert_eq!(before[1], None);
        // No result of the old file is alive now (a mapped file must not be truncated under
        // a live reader, see src/elf/bytes.rs).
        if replace_by_rename {
            let tmp = dir.path().join("prog.new");
            std::fs::copy(&nopie, &tmp).unwrap();
            std::fs::rename(&tmp, &target).unwrap();
        } else {
            std::fs::write(&target, std::fs::read(&nopie).unwrap()).unwrap();
        }
        let after = symbolize_with(
            &symbolizer,
            &target,
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[pie_addr, nopie_addr])),
        );
        assert_eq!(after[0], None, "rename={replace_by_rename}: old answer");
        assert_eq!(
            after[1].as_ref().map(|s| s.name.as_str()),
            Some("run_all"),
            "rename={replace_by_rename}"
        );
        assert_eq!(symbolizer.stats().files.misses, 2);
        std::fs::remove_file(&target).unwrap();
    }
}

/// A copy of c-pie-g rewritten in place with contents of the same size (a rebuild that
/// changed a name but no length: `checksum` renamed `checksuM` in `.strtab`) must be read
/// again: the modification time differs even though inode and size do not. The pause makes
/// the new mtime differ even on filesystems with coarse timestamps.
#[test]
fn same_size_rewrite_gives_new_answers() {
    let pie = bin("c-pie-g");
    let addr = sym(&readelf_syms(&pie), "checksum").value;
    let original = std::fs::read(&pie).unwrap();
    let mut renamed = original.clone();
    let needle = b"\0checksum\0";
    let mut count = 0;
    for i in 0..renamed.len() - needle.len() {
        if &renamed[i..i + needle.len()] == needle {
            renamed[i + 8] = b'M';
            count += 1;
        }
    }
    assert!(count >= 1, "checksum is in a string table");
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("prog");
    std::fs::write(&target, &original).unwrap();
    let symbolizer = Symbolizer::default();
    let before = symbolize_with(
        &symbolizer,
        &target,
        Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[addr])),
    );
    assert_eq!(before[0].as_ref().unwrap().name, "checksum");
    std::thread::sleep(std::time::Duration::from_millis(50));
    std::fs::write(&target, &renamed).unwrap();
    let after = symbolize_with(
        &symbolizer,
        &target,
        Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[addr])),
    );
    assert_eq!(after[0].as_ref().unwrap().name, "checksuM");
    assert_eq!(symbolizer.stats().files.misses, 2);
}

/// A hard link and a symlink reach the same file: same FileId; a copy is another file. All
/// give the same answers, and each result names the path it was asked with.
#[test]
fn hard_link_shares_identity() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original");
    let hard = dir.path().join("hard");
    let soft = dir.path().join("soft");
    let copy = dir.path().join("copy");
    std::fs::copy(bin("c-pie-g"), &original).unwrap();
    std::fs::hard_link(&original, &hard).unwrap();
    std::os::unix::fs::symlink(&original, &soft).unwrap();
    std::fs::copy(&original, &copy).unwrap();
    let id = FileId::of_path(&original).unwrap();
    assert_eq!(FileId::of_path(&hard).unwrap(), id);
    assert_eq!(FileId::of_path(&soft).unwrap(), id);
    assert_ne!(FileId::of_path(&copy).unwrap(), id);

    let addr = sym(&readelf_syms(&original), "mix").value;
    let symbolizer = Symbolizer::default();
    let answers: Vec<_> = [&original, &hard, &soft, &copy]
        .iter()
        .map(|p| {
            symbolize_with(
                &symbolizer,
                p,
                Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[addr])),
            )
        })
        .collect();
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    assert_eq!(answers[0][0].as_ref().unwrap().name, "mix");
    // The original, the hard link and the symlink share one opened file; the copy is another.
    let stats = symbolizer.stats();
    assert_eq!((stats.files.misses, stats.files.hits), (2, 2), "{stats:?}");
    assert_eq!(stats.open_files, 2);
    // Each result names the path it was asked with, not the one that opened the file.
    for path in [&original, &hard, &soft] {
        let symbols = symbolizer
            .symbolize(
                &Source::Elf { path },
                Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[addr])),
            )
            .unwrap();
        assert_eq!(symbols.module(0), Some(path.as_path()));
        assert_eq!(symbols.get(0).unwrap().module, path.as_path());
    }

    let missing = dir.path().join("missing");
    let err = FileId::of_path(&missing).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}

/// One Symbolizer (with a small cache, so files are evicted and reopened) used from four
/// threads at once gives the answers a single thread gives.
#[test]
fn symbolizer_shared_between_threads_gives_identical_answers() {
    let jobs: Vec<(PathBuf, Vec<u64>)> = ALL_BINARIES
        .iter()
        .map(|b| {
            let path = bin(b);
            let syms = readelf_syms(&path);
            let mut addrs: Vec<u64> = syms
                .iter()
                .filter(|s| s.defined() && (s.is_func() || s.typ == "OBJECT"))
                .flat_map(|s| [s.value, s.value + s.size / 2, s.value + s.size])
                .collect();
            addrs.sort_unstable();
            addrs.dedup();
            (path, addrs)
        })
        .collect();
    let baseline: Vec<_> = jobs.iter().map(|(p, a)| symbolize(p, a)).collect();
    let shared = Symbolizer::builder()
        .max_open_files(std::num::NonZeroUsize::new(3).unwrap())
        .build();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (jobs, baseline, shared) = (&jobs, &baseline, &shared);
            scope.spawn(move || {
                for round in 0..3 {
                    for k in 0..jobs.len() {
                        // Each thread walks the files in its own order.
                        let j = (k * (t + 1) + round) % jobs.len();
                        let (path, addrs) = &jobs[j];
                        let got = symbolize_with(
                            shared,
                            path,
                            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(addrs)),
                        );
                        assert_eq!(&got, &baseline[j], "thread {t}, {}", path.display());
                    }
                }
            });
        }
    });
    let stats = shared.stats();
    assert!(stats.open_files <= 3);
    assert_eq!(
        stats.files.hits + stats.files.misses,
        4 * 3 * jobs.len() as u64
    );
}

/// Sections the loader does not map (`readelf -SW`: no `A` among the flags), by index.
fn unloaded_sections(path: &Path) -> std::collections::HashSet<String> {
    let text = tool("readelf", &["-SW"], path);
    let mut out = std::collections::HashSet::new();
    for line in text.lines() {
        let Some((index, rest)) = line
            .trim_start()
            .strip_prefix('[')
            .and_then(|l| l.split_once(']'))
        else {
            continue;
        };
        let Ok(index) = index.trim().parse::<usize>() else {
            continue;
        };
        // Name Type Address Off Size ES [Flg] Lk Inf Al: the flags are absent when empty.
        let tokens: Vec<&str> = rest.split_whitespace().collect();
        let flags = if tokens.len() == 10 { tokens[6] } else { "" };
        if index > 0 && !flags.contains('A') {
            out.insert(index.to_string());
        }
    }
    out
}

/// A symbol in a section the loader does not map names no address. The system's libc debug
/// file (libc6-dbg, found by build-id) has `__evoke_link_warning_*` OBJECT symbols in
/// `.gnu.warning.*` sections (no `A` flag), at values such as 0x1 that are no address of libc's
/// code or data; llvm-symbolizer and binutils name nothing there, and stacksym must not name
/// them (it answered `__evoke_link_warning_sigstack` for libc's 0x1). Which symbols: readelf's
/// view of the debug file.
#[test]
fn symbols_of_sections_not_loaded_name_nothing() {
    let test = "symbols_of_sections_not_loaded_name_nothing";
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    if !libc.is_file() {
        return support::skip_or_fail(test, "no /lib/x86_64-linux-gnu/libc.so.6");
    }
    let debug =
        match support::build_id_debug_file(Path::new("readelf"), libc, Path::new("/usr/lib/debug"))
        {
            Ok(debug) => debug,
            Err(why) => return support::skip_or_fail(test, &why),
        };
    let unloaded = unloaded_sections(&debug);
    let in_unloaded: Vec<RSym> = readelf_syms(&debug)
        .into_iter()
        .filter(|s| {
            s.table == Table::Symtab
                && (s.typ == "FUNC" || s.typ == "OBJECT")
                && unloaded.contains(&s.ndx)
                && !s.name.is_empty()
        })
        .collect();
    assert!(
        !in_unloaded.is_empty(),
        "{}: no FUNC/OBJECT symbol in a section without SHF_ALLOC; the test needs one",
        debug.display()
    );
    let mut addrs: Vec<u64> = in_unloaded.iter().map(|s| s.value).collect();
    addrs.sort_unstable();
    addrs.dedup();
    let ours = symbolize(libc, &addrs);
    let mut unnamed = 0;
    for (addr, answer) in addrs.iter().zip(&ours) {
        match answer {
            None => unnamed += 1,
            Some(sym) => assert!(
                !in_unloaded
                    .iter()
                    .any(|s| s.name.as_bytes() == sym.raw.as_slice()),
                "{addr:#x}: named {} from a section the loader does not map",
                sym.name
            ),
        }
    }
    support::writeln_stderr(format_args!(
        "{test}: {} symbols in {} unloaded sections of {}, at {} addresses: {unnamed} named \
         nothing, the rest by symbols of loaded sections",
        in_unloaded.len(),
        unloaded.len(),
        debug.display(),
        addrs.len()
    ));
}

/// A batch answers in input order while it looks up in address order, and reads each distinct
/// symbol back from one place: every address of a scattered batch (starts, middles and ends
/// of every function and object readelf lists, repeats, addresses between and beyond the
/// symbols, shuffled with a fixed seed) gets exactly the answer it gets alone. On every
/// testdata binary (`ALL_BINARIES`: PIE and not, i386 and aarch64, with and without
/// `.symtab`), through `iter`, `get` and `results`, for virtual addresses and file offsets.
#[test]
fn a_scattered_batch_answers_each_address_as_it_would_alone() {
    for name in ALL_BINARIES {
        let path = bin(name);
        let syms = readelf_syms(&path);
        let mut addrs: Vec<u64> = vec![0, 1, u64::MAX, u64::MAX - 1];
        for s in syms.iter().filter(|s| s.typ == "FUNC" || s.typ == "OBJECT") {
            let end = s.value.saturating_add(s.size);
            addrs.extend([
                s.value,
                s.value + s.size / 2,
                end.saturating_sub(1),
                end,
                end + 1,
            ]);
        }
        // Repeats, far apart in input order.
        let repeats: Vec<u64> = addrs.iter().step_by(3).copied().collect();
        addrs.extend(repeats);
        // Fisher-Yates with a fixed xorshift: the same order every run.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for i in (1..addrs.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            addrs.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let symbolizer = Symbolizer::default();
        let batch = symbolize_with(
            &symbolizer,
            &path,
            Input::VirtAddrs(VirtAddr::from_raw_slice(&addrs)),
        );
        let symbols = symbolizer
            .symbolize(
                &Source::Elf { path: &path },
                Input::VirtAddrs(VirtAddr::from_raw_slice(&addrs)),
            )
            .unwrap();
        let results: Vec<_> = symbols.results().map(Result::ok).collect();
        let mut found = 0;
        for (i, &addr) in addrs.iter().enumerate() {
            let alone = symbolize_with(
                &symbolizer,
                &path,
                Input::VirtAddrs(VirtAddr::from_raw_slice(&[addr])),
            )
            .pop()
            .unwrap();
            assert_eq!(batch[i], alone, "{name}: address {addr:#x} (index {i})");
            let got = symbols.get(i).map(|s| (s.name, s.addr, s.offset));
            let result = results[i].map(|s| (s.name, s.addr, s.offset));
            assert_eq!(got, result, "{name}: {i}");
            assert_eq!(got.map(|g| g.0.to_string()), alone.map(|a| a.name));
            found += usize::from(got.is_some());
        }
        assert!(
            found > addrs.len() / 3,
            "{name}: only {found} of {} found",
            addrs.len()
        );
        // File offsets, also one in no segment (answered `None`, its offset kept).
        let elf = ElfFile::open(&path).unwrap();
        let offsets: Vec<u64> = addrs
            .iter()
            .filter_map(|&a| elf.segments().virt_to_file_offset(VirtAddr(a)))
            .map(|o| o.0)
            .chain([u64::MAX - 7])
            .collect();
        let by_offset = symbolizer
            .symbolize(
                &Source::Elf { path: &path },
                Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&offsets)),
            )
            .unwrap();
        for (i, &offset) in offsets.iter().enumerate() {
            let alone = symbolizer
                .symbolize(
                    &Source::Elf { path: &path },
                    Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&[offset])),
                )
                .unwrap();
            let a = by_offset.get(i).map(|s| (s.name, s.addr, s.offset));
            let b = alone.get(0).map(|s| (s.name, s.addr, s.offset));
            assert_eq!(a, b, "{name}: file offset {offset:#x}");
            assert_eq!(
                by_offset.file_offset(i),
                alone.file_offset(0),
                "{name}: {offset:#x}"
            );
        }
        assert_eq!(
            by_offset.file_offset(offsets.len() - 1).map(|o| o.0),
            Some(u64::MAX - 7),
            "an offset in no segment keeps the offset it was given"
        );
    }
}
