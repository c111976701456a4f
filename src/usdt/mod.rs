//! USDT probes: the static probe sites `sys/sdt.h` (`DTRACE_PROBE`, `STAP_PROBE`) records in an
//! ELF file's `.note.stapsdt` section, as bpftrace (`usdt:BIN:provider:name`), perf
//! (`sdt_provider:name`) and libbpf (`bpf_program__attach_usdt`) attach to them.
//!
//! Each note (`NT_STAPSDT`, owner `stapsdt`) holds three addresses of the file's address size
//! (the probe's location, the `.stapsdt.base` address as linked, the semaphore or 0) and three
//! NUL-terminated strings (provider, name, arguments). [`read_probes`] reads them all:
//! - the location is adjusted by the difference between the `.stapsdt.base` section's actual
//!   address and the note's base (a prelinked file moved its sections but not the notes'
//!   contents); the semaphore, when there is one, by the same difference (libbpf leaves it,
//!   systemtap and bcc adjust it: in files that were not prelinked the difference is 0);
//! - both are also given as file offsets (through the file's `PT_LOAD` segments): a uprobe
//!   attaches at the location's offset, and its `ref_ctr_offset` is the semaphore's;
//! - the argument string is kept and parsed ([`args`]); an argument string this crate cannot
//!   parse leaves the probe listed with [`Probe::args`] an error.
//!
//! A note that does not fit in its section, or whose strings lack their NUL, is an error
//! naming the file and the note's offset in the section: nothing of a hostile note is trusted,
//! and the work is linear in the section's size.

pub mod args;

use crate::addr::{FileOffset, VirtAddr};
use crate::elf::ElfFile;
use crate::error::{Result, SectionFault};

pub use args::{parse_args, Arg, ArgError, ArgProblem, ArgSyntax, Operand, Register};

/// The note type of a USDT probe (`NT_STAPSDT`).
const NT_STAPSDT: u32 = 3;
/// The section the notes are in.
pub const NOTE_SECTION: &str = ".note.stapsdt";
/// The section whose address the notes' base field records.
pub const BASE_SECTION: &str = ".stapsdt.base";

/// A probe's semaphore: a 2-byte counter the probe site tests (`PROVIDER_NAME_ENABLED()`), so
/// that its arguments are computed only while a tracer is attached; the kernel increments it
/// for a uprobe registered with its file offset as `ref_ctr_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Semaphore {
    /// Its virtual address (adjusted like the location).
    pub addr: VirtAddr,
    /// Its offset in the file: the uprobe's `ref_ctr_offset`. `None` when no segment's file
    /// bytes hold it.
    pub file_offset: Option<FileOffset>,
}

/// The three addresses as the note states them, before any adjustment: what `readelf -n`
/// prints as `Location`, `Base` and `Semaphore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NoteAddrs {
    /// The probe's location as linked.
    pub location: u64,
    /// The `.stapsdt.base` address as linked (0 when the file has no base).
    pub base: u64,
    /// The semaphore's address as linked, 0 for none.
    pub semaphore: u64,
}

/// One USDT probe site of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The provider (`python`, `postgresql`, `libstdcxx`).
    pub provider: String,
    /// The probe's name (`function__entry`, `query__start`, `throw`).
    pub name: String,
    /// The probe's virtual address (a `nop` in the code), adjusted by the `.stapsdt.base`
    /// difference.
    pub addr: VirtAddr,
    /// Its offset in the file: where a uprobe attaches. `None` when no segment holds it
    /// (a relocatable file).
    pub file_offset: Option<FileOffset>,
    /// The semaphore, if the probe has one.
    pub semaphore: Option<Semaphore>,
    /// The note's own addresses, unadjusted.
    pub note: NoteAddrs,
    /// The argument string as the note spells it (`-4@%edi 8@-16(%rbp)`).
    pub args_text: String,
    /// The arguments, parsed; an error when the string uses what [`args`] does not parse,
    /// or when the file's architecture is neither x86_64 nor aarch64.
    pub args: std::result::Result<Vec<Arg>, ArgError>,
}

/// Every USDT probe of `elf`, in note order; empty when it has no `.note.stapsdt`.
///
/// Errors name the file and say what was wrong: a note that does not fit in the section, an
/// owner or descriptor too short for its fields, a string without its NUL.
pub fn read_probes(elf: &ElfFile) -> Result<Vec<Probe>> {
    let Some(section) = elf.section_data(NOTE_SECTION)? else {
        return Ok(Vec::new());
    };
    let header = elf.header();
    let base = elf.section_address(BASE_SECTION)?;
    let malformed = |fault: SectionFault| fault.in_section(elf.path(), NOTE_SECTION);
    let layout = NoteLayout {
        big_endian: header.big_endian,
        address_size: if header.is_64 { 8 } else { 4 },
    };
    let syntax = ArgSyntax::of_machine(header.machine);
    let segments = elf.segments();
    let mut probes = Vec::new();
    for note in Notes::new(&section, layout.big_endian) {
        let note = note.map_err(malformed)?;
        if note.name != b"stapsdt" || note.kind != NT_STAPSDT {
            continue;
        }
        let fields = parse_descriptor(note.desc, layout).map_err(|what| {
            malformed(SectionFault::at(
                note.offset,
                format!("the probe note's descriptor: {what}"),
            ))
        })?;
        // The prelink difference: the section's address now, minus where it was linked.
        let delta = match base {
            Some(actual) if fields.addrs.base != 0 => actual.0.wrapping_sub(fields.addrs.base),
            _ => 0,
        };
        let addr = VirtAddr(fields.addrs.location.wrapping_add(delta));
        let semaphore = (fields.addrs.semaphore != 0).then(|| {
            let addr = VirtAddr(fields.addrs.semaphore.wrapping_add(delta));
            Semaphore {
                addr,
                file_offset: segments.virt_to_file_offset(addr),
            }
        });
        let args = match syntax {
            Some(syntax) => parse_args(fields.args, syntax, layout.address_size),
            None => Err(ArgError {
                index: 0,
                token: String::new(),
                problem: ArgProblem::UnsupportedMachine(header.machine),
            }),
        };
        probes.push(Probe {
            provider: String::from_utf8_lossy(fields.provider).into_owned(),
            name: String::from_utf8_lossy(fields.name).into_owned(),
            addr,
            file_offset: segments.virt_to_file_offset(addr),
            semaphore,
            note: fields.addrs,
            args_text: fields.args.to_string(),
            args,
        });
    }
    resolve_symbols(elf, &mut probes);
    Ok(probes)
}

/// Fills in the address of every [`Operand::Symbol`] the file's symbol tables name: one
/// pass over the tables for all probes (a lookup per argument would be quadratic in a
/// hostile file). A symbol neither table names stays `None` (a stripped executable).
fn resolve_symbols(elf: &ElfFile, probes: &mut [Probe]) {
    let symbol_operands = || {
        probes
            .iter()
            .filter_map(|p| p.args.as_ref().ok())
            .flatten()
            .filter_map(|arg| match &arg.operand {
                Operand::Symbol { name, .. } => Some(name.as_bytes().to_vec()),
                _ => None,
            })
    };
    let wanted: std::collections::HashSet<Vec<u8>> = symbol_operands().collect();
    if wanted.is_empty() {
        return;
    }
    let mut found: std::collections::HashMap<&[u8], VirtAddr> = std::collections::HashMap::new();
    let symbols = match elf.named_symbols() {
        Ok(symbols) => symbols,
        Err(err) => {
            log::debug!("USDT argument symbols of {}: {err}", elf.path().display());
            return;
        }
    };
    for symbol in &symbols {
        // The first definition wins: `.symtab` comes before `.dynsym`.
        if wanted.contains(symbol.name) {
            found.entry(symbol.name).or_insert(symbol.addr);
        }
    }
    for probe in probes.iter_mut() {
        let Ok(args) = probe.args.as_mut() else {
            continue;
        };
        for arg in args {
            if let Operand::Symbol { name, addr, .. } = &mut arg.operand {
                *addr = found.get(name.as_bytes()).copied();
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct NoteLayout {
    big_endian: bool,
    address_size: u8,
}

/// One note of a note section.
#[derive(Debug)]
struct Note<'a> {
    /// Its offset in the section, for messages.
    offset: usize,
    /// The owner's name without its NUL.
    name: &'a [u8],
    kind: u32,
    desc: &'a [u8],
}

/// The notes of a section, 4-byte aligned (`sys/sdt.h` aligns its notes so; 8-byte note
/// sections hold GNU properties, not probes). Stops after the first error.
struct Notes<'a> {
    data: &'a [u8],
    pos: usize,
    big_endian: bool,
    failed: bool,
}

impl<'a> Notes<'a> {
    fn new(data: &'a [u8], big_endian: bool) -> Self {
        Notes {
            data,
            pos: 0,
            big_endian,
            failed: false,
        }
    }

    fn next_note(&mut self) -> std::result::Result<Note<'a>, SectionFault> {
        let offset = self.pos;
        let data: &'a [u8] = self.data;
        let rest = &data[offset..];
        let header = rest.get(..12).ok_or_else(|| {
            SectionFault::at(
                offset,
                format!("{} bytes left, a note header needs 12", rest.len()),
            )
        })?;
        let word = |i: usize| read_uint(&header[i * 4..i * 4 + 4], self.big_endian) as usize;
        let (name_size, desc_size, kind) = (word(0), word(1), word(2) as u32);
        // The end of a part of `size` bytes starting at `start`, if it lies in the section.
        let end_of = |start: usize, size: usize, what: &str| {
            start
                .checked_add(size)
                .filter(|&end| end <= rest.len())
                .ok_or_else(|| {
                    SectionFault::at(
                        offset,
                        format!(
                            "the note's {what} ({size} bytes) is past the end of the section \
                             ({} bytes)",
                            data.len()
                        ),
                    )
                })
        };
        let name_end = end_of(12, name_size, "owner's name")?;
        let desc_start = align4(name_end);
        let desc_end = end_of(desc_start, desc_size, "descriptor")?;
        let name = &rest[12..name_end];
        // The owner's name is NUL-terminated; its size counts the NUL.
        let name = name.strip_suffix(&[0]).unwrap_or(name);
        // The next note starts aligned; a section may end without that padding.
        self.pos = offset + align4(desc_end).min(rest.len());
        Ok(Note {
            offset,
            name,
            kind,
            desc: &rest[desc_start..desc_end],
        })
    }
}

impl<'a> Iterator for Notes<'a> {
    type Item = std::result::Result<Note<'a>, SectionFault>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let note = self.next_note();
        self.failed = note.is_err();
        Some(note)
    }
}

fn align4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

/// A 4- or 8-byte unsigned integer.
fn read_uint(bytes: &[u8], big_endian: bool) -> u64 {
    let mut value = 0u64;
    if big_endian {
        for &b in bytes {
            value = value << 8 | u64::from(b);
        }
    } else {
        for &b in bytes.iter().rev() {
            value = value << 8 | u64::from(b);
        }
    }
    value
}

/// A probe note's descriptor, split.
struct Descriptor<'a> {
    addrs: NoteAddrs,
    provider: &'a [u8],
    name: &'a [u8],
    args: &'a str,
}

/// What is wrong with a probe note's descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DescriptorFault {
    /// Shorter than its three addresses: (its length, the address size).
    TooShort(usize, usize),
    /// The string named has no terminating NUL.
    NoNul(&'static str),
    /// The argument string is not UTF-8.
    NotUtf8(std::str::Utf8Error),
}

impl std::fmt::Display for DescriptorFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DescriptorFault::TooShort(len, size) => write!(
                f,
                "a {len}-byte descriptor, shorter than its three {size}-byte addresses"
            ),
            DescriptorFault::NoNul(what) => write!(f, "the {what} string has no terminating NUL"),
            DescriptorFault::NotUtf8(e) => write!(f, "the argument string is not UTF-8 ({e})"),
        }
    }
}

fn parse_descriptor(
    desc: &[u8],
    layout: NoteLayout,
) -> std::result::Result<Descriptor<'_>, DescriptorFault> {
    let size = usize::from(layout.address_size);
    let fixed = 3 * size;
    if desc.len() < fixed {
        return Err(DescriptorFault::TooShort(desc.len(), size));
    }
    let addr = |i: usize| read_uint(&desc[i * size..(i + 1) * size], layout.big_endian);
    let addrs = NoteAddrs {
        location: addr(0),
        base: addr(1),
        semaphore: addr(2),
    };
    let mut strings = &desc[fixed..];
    let provider = take_c_str(&mut strings, "provider")?;
    let name = take_c_str(&mut strings, "name")?;
    let args = take_c_str(&mut strings, "argument")?;
    let args = std::str::from_utf8(args).map_err(DescriptorFault::NotUtf8)?;
    Ok(Descriptor {
        addrs,
        provider,
        name,
        args,
    })
}

/// The NUL-terminated string at the start of `strings`, which is advanced past its NUL.
fn take_c_str<'d>(
    strings: &mut &'d [u8],
    what: &'static str,
) -> std::result::Result<&'d [u8], DescriptorFault> {
    let all: &'d [u8] = strings;
    let end = all
        .iter()
        .position(|&b| b == 0)
        .ok_or(DescriptorFault::NoNul(what))?;
    *strings = &all[end + 1..];
    Ok(&all[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const LE64: NoteLayout = NoteLayout {
        big_endian: false,
        address_size: 8,
    };

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(name);
        out.resize(align4(out.len()), 0);
        out.extend_from_slice(desc);
        out.resize(align4(out.len()), 0);
        out
    }

    fn desc(pc: u64, base: u64, sem: u64, strings: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in [pc, base, sem] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(strings);
        out
    }

    #[test]
    fn a_note_is_split_into_its_fields() {
        let d = desc(0x1130, 0x2000, 0x4010, b"prov\0name\0-4@%edi 8@$1\0");
        let section = note(b"stapsdt\0", NT_STAPSDT, &d);
        let notes: Vec<_> = Notes::new(&section, false).collect();
        assert_eq!(notes.len(), 1);
        let note = notes[0].as_ref().unwrap();
        assert_eq!(note.name, b"stapsdt");
        let fields = parse_descriptor(note.desc, LE64).unwrap();
        assert_eq!(fields.addrs.location, 0x1130);
        assert_eq!(fields.addrs.base, 0x2000);
        assert_eq!(fields.addrs.semaphore, 0x4010);
        assert_eq!(fields.provider, b"prov");
        assert_eq!(fields.name, b"name");
        assert_eq!(fields.args, "-4@%edi 8@$1");
    }

    #[test]
    fn hostile_notes_are_errors() {
        // A header cut short.
        let err = Notes::new(&[1, 0, 0, 0, 0], false)
            .next()
            .unwrap()
            .unwrap_err();
        assert!(err.what.contains("note header needs 12"), "{err:?}");
        // A descriptor claiming 4 GiB.
        let mut section = note(b"stapsdt\0", NT_STAPSDT, &[]);
        section[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = Notes::new(&section, false).next().unwrap().unwrap_err();
        assert!(err.what.contains("past the end of the section"), "{err:?}");
        // A name size past the end.
        let mut section = note(b"stapsdt\0", NT_STAPSDT, &[]);
        section[0..4].copy_from_slice(&1000u32.to_le_bytes());
        let err = Notes::new(&section, false).next().unwrap().unwrap_err();
        assert_eq!(err.offset, Some(0));
        assert!(err.what.contains("owner's name"), "{err:?}");
        // Strings without their NUL.
        let err = parse_descriptor(&desc(1, 0, 0, b"prov\0name\0args"), LE64)
            .err()
            .unwrap();
        assert_eq!(err, DescriptorFault::NoNul("argument"));
        assert!(
            err.to_string()
                .contains("argument string has no terminating NUL"),
            "{err}"
        );
        let err = parse_descriptor(&desc(1, 0, 0, b"prov"), LE64)
            .err()
            .unwrap();
        assert_eq!(err, DescriptorFault::NoNul("provider"));
        // Too short for the addresses.
        let err = parse_descriptor(&[0; 20], LE64).err().unwrap();
        assert_eq!(err, DescriptorFault::TooShort(20, 8));
        assert!(
            err.to_string()
                .contains("shorter than its three 8-byte addresses"),
            "{err}"
        );
        // After an error the iterator stops.
        let mut notes = Notes::new(&[0; 5], false);
        assert!(notes.next().unwrap().is_err());
        assert!(notes.next().is_none());
    }

    #[test]
    fn other_notes_and_padding_are_walked_over() {
        let mut section = note(b"GNU\0", 1, &[1, 2, 3]);
        section.extend(note(b"stapsdt\0", NT_STAPSDT, &desc(5, 0, 0, b"a\0b\0\0")));
        let notes: Vec<_> = Notes::new(&section, false).map(Result::unwrap).collect();
        assert_eq!(notes.len(), 2);
        assert_eq!(notes[0].name, b"GNU");
        assert_eq!(notes[1].kind, NT_STAPSDT);
        assert_eq!(parse_descriptor(notes[1].desc, LE64).unwrap().args, "");
    }

    #[test]
    fn big_endian_32_bit_addresses() {
        let layout = NoteLayout {
            big_endian: true,
            address_size: 4,
        };
        let mut d = Vec::new();
        for v in [0x1000u32, 0x2000, 0] {
            d.extend_from_slice(&v.to_be_bytes());
        }
        d.extend_from_slice(b"p\0n\0\0");
        let fields = parse_descriptor(&d, layout).unwrap();
        assert_eq!(fields.addrs.location, 0x1000);
        assert_eq!(fields.addrs.base, 0x2000);
    }
}
