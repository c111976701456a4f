//! Bounded work on any DWARF: hostile shapes written with gimli's `write` API into small ELF
//! files (object's `write` API), each of which must give a bounded answer or an error naming
//! the file, never a stack overflow, a hang or unbounded memory:
//!
//! - 100,000 nested `DW_TAG_inlined_subroutine` DIEs (the addr2line crate parses them
//!   recursively: one stack frame pair per level);
//! - `DW_AT_abstract_origin` / `DW_AT_specification` cycles, a DIE that is its own origin;
//! - a line program with 2,000,000 rows for one address;
//! - `DW_AT_sibling`s that point back (the walk jumps only forward over subtrees that hold
//!   no code);
//! - a `.debug_aranges` that lies (a unit offset past `.debug_info`, a range covering the
//!   whole address space, a unit that does not hold the range it is given).
//!
//! The same shapes, smaller, are the `dwarf_frames` fuzz target's seeds
//! (`testdata/fuzz/dwarf_frames/`): `STACKSYM_WRITE_SEEDS=1 cargo test --test dwarf_limits`
//! writes them, and `committed_seeds_are_the_generated_shapes` checks that they are current.
//! Each seed ends with the 8 bytes of the address to probe (the fuzz target probes addresses
//! taken from its input's last bytes; ELF readers ignore what follows the sections).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gimli::write::{
    Address, AttributeValue, DwarfUnit, EndianVec, LineProgram, LineString, Sections,
};
use gimli::{Encoding, Format, LineEncoding, RunTimeEndian};
use stacksym::dwarf::{DwarfInfo, DwarfSections, MAX_INLINED_DEPTH};
use stacksym::elf::ElfFile;
use stacksym::{Input, Source, Symbolizer, VirtAddr};

/// Where the code the DWARF describes lies.
const LOW: u64 = 0x1000;
const SIZE: u64 = 0x100;

fn encoding() -> Encoding {
    Encoding {
        format: Format::Dwarf32,
        version: 4,
        address_size: 8,
    }
}

/// A unit for `LOW..LOW+SIZE` with one subprogram `outer` covering it, built by `fill`
/// (given the unit and the subprogram), as an ELF file with `extra` sections added.
fn elf_with_unit(
    fill: impl FnOnce(&mut DwarfUnit, gimli::write::UnitEntryId),
    extra: &[(&str, Vec<u8>)],
) -> Vec<u8> {
    let mut named = unit_sections(fill);
    for (name, bytes) in extra {
        named.retain(|(n, _)| n != name);
        named.push((name.to_string(), bytes.clone()));
    }
    elf_with_sections(&named)
}

/// The DWARF sections of [`elf_with_unit`]'s unit, by name.
fn unit_sections(
    fill: impl FnOnce(&mut DwarfUnit, gimli::write::UnitEntryId),
) -> Vec<(String, Vec<u8>)> {
    let mut dwarf = DwarfUnit::new(encoding());
    let root = dwarf.unit.root();
    let cu = dwarf.unit.get_mut(root);
    cu.set(
        gimli::DW_AT_name,
        AttributeValue::String(b"hostile.c".to_vec()),
    );
    cu.set(
        gimli::DW_AT_low_pc,
        AttributeValue::Address(Address::Constant(LOW)),
    );
    cu.set(gimli::DW_AT_high_pc, AttributeValue::Udata(SIZE));
    let outer = dwarf.unit.add(root, gimli::DW_TAG_subprogram);
    let entry = dwarf.unit.get_mut(outer);
    entry.set(gimli::DW_AT_name, AttributeValue::String(b"outer".to_vec()));
    entry.set(
        gimli::DW_AT_low_pc,
        AttributeValue::Address(Address::Constant(LOW)),
    );
    entry.set(gimli::DW_AT_high_pc, AttributeValue::Udata(SIZE));
    fill(&mut dwarf, outer);
    let mut sections = Sections::new(EndianVec::new(RunTimeEndian::Little));
    dwarf.write(&mut sections).unwrap();
    let mut named: Vec<(String, Vec<u8>)> = Vec::new();
    sections
        .for_each(|id, data| {
            if !data.slice().is_empty() {
                named.push((id.name().to_string(), data.slice().to_vec()));
            }
            Ok::<_, gimli::write::Error>(())
        })
        .unwrap();
    named
}

/// Adds to `parent` an inlined copy of `origin` at `low..low+size`.
fn add_inlined_call(
    dwarf: &mut DwarfUnit,
    parent: gimli::write::UnitEntryId,
    origin: gimli::write::UnitEntryId,
    low: u64,
    size: u64,
) -> gimli::write::UnitEntryId {
    let call = dwarf.unit.add(parent, gimli::DW_TAG_inlined_subroutine);
    let entry = dwarf.unit.get_mut(call);
    entry.set(
        gimli::DW_AT_abstract_origin,
        AttributeValue::UnitRef(origin),
    );
    entry.set(
        gimli::DW_AT_low_pc,
        AttributeValue::Address(Address::Constant(low)),
    );
    entry.set(gimli::DW_AT_high_pc, AttributeValue::Udata(size));
    call
}

/// A relocatable x86_64 ELF file holding `sections` (non-allocated, as debug sections are).
fn elf_with_sections(sections: &[(String, Vec<u8>)]) -> Vec<u8> {
    use object::write::Object;
    use object::{Architecture, BinaryFormat, Endianness, SectionKind};
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    for (name, bytes) in sections {
        let id = obj.add_section(Vec::new(), name.as_bytes().to_vec(), SectionKind::Debug);
        obj.append_section_data(id, bytes, 1);
    }
    obj.write().unwrap()
}

/// `depth` `DW_TAG_inlined_subroutine` DIEs, each inside the one before, all covering the
/// whole range, each an inlined copy of `inl` (an abstract subprogram).
fn nested_inlines(depth: usize) -> Vec<u8> {
    // gimli's writer walks the tree recursively: give it room for 100,000 levels.
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            elf_with_unit(
                |dwarf, outer| {
                    let root = dwarf.unit.root();
                    let inl = dwarf.unit.add(root, gimli::DW_TAG_subprogram);
                    dwarf
                        .unit
                        .get_mut(inl)
                        .set(gimli::DW_AT_name, AttributeValue::String(b"inl".to_vec()));
                    let mut parent = outer;
                    for _ in 0..depth {
                        parent = add_inlined_call(dwarf, parent, inl, LOW, SIZE);
                    }
                },
                &[],
            )
        })
        .unwrap()
        .join()
        .unwrap()
}

/// Subprograms whose `DW_AT_specification` and `DW_AT_abstract_origin` go round in a cycle
/// (a → b → a) and one that is its own origin, none with a name; `outer` holds inlined
/// copies of each.
fn origin_cycles() -> Vec<u8> {
    elf_with_unit(
        |dwarf, outer| {
            let root = dwarf.unit.root();
            let a = dwarf.unit.add(root, gimli::DW_TAG_subprogram);
            let b = dwarf.unit.add(root, gimli::DW_TAG_subprogram);
            let own = dwarf.unit.add(root, gimli::DW_TAG_subprogram);
            dwarf
                .unit
                .get_mut(a)
                .set(gimli::DW_AT_specification, AttributeValue::UnitRef(b));
            dwarf
                .unit
                .get_mut(b)
                .set(gimli::DW_AT_abstract_origin, AttributeValue::UnitRef(a));
            dwarf
                .unit
                .get_mut(own)
                .set(gimli::DW_AT_abstract_origin, AttributeValue::UnitRef(own));
            // The outer function itself names its origin in the cycle too.
            dwarf
                .unit
                .get_mut(outer)
                .set(gimli::DW_AT_abstract_origin, AttributeValue::UnitRef(a));
            for (i, origin) in [a, b, own].into_iter().enumerate() {
                add_inlined_call(dwarf, outer, origin, LOW + 0x10 * i as u64, 0x10);
            }
        },
        &[],
    )
}

/// A C unit whose walk may jump over subtrees that hold no code (see
/// `src/dwarf/functions.rs`): `outer` holds a `DW_TAG_GNU_call_site` (with a parameter)
/// and, after it, an inlined copy of `inl` at `LOW..LOW+0x10`; after `outer` come a
/// structure with a member, then subprogram `later` at `LOW+SIZE..LOW+SIZE+0x10`. The call
/// site and the structure carry `DW_AT_sibling`. With `hostile`, those siblings point back
/// (the call site's at `outer`, the structure's at itself), which the walk must not follow.
fn sibling_jumps(hostile: bool) -> Vec<u8> {
    let mut sections = unit_sections(|dwarf, outer| {
        let root = dwarf.unit.root();
        let cu = dwarf.unit.get_mut(root);
        cu.set(
            gimli::DW_AT_language,
            AttributeValue::Language(gimli::DW_LANG_C99),
        );
        // The unit covers `later` too.
        cu.set(gimli::DW_AT_high_pc, AttributeValue::Udata(SIZE + 0x10));
        let inl = dwarf.unit.add(root, gimli::DW_TAG_subprogram);
        dwarf
            .unit
            .get_mut(inl)
            .set(gimli::DW_AT_name, AttributeValue::String(b"inl".to_vec()));
        let call_site = dwarf.unit.add(outer, gimli::DW_TAG_GNU_call_site);
        dwarf.unit.get_mut(call_site).set_sibling(true);
        dwarf
            .unit
            .add(call_site, gimli::DW_TAG_GNU_call_site_parameter);
        add_inlined_call(dwarf, outer, inl, LOW, 0x10);
        let structure = dwarf.unit.add(root, gimli::DW_TAG_structure_type);
        dwarf.unit.get_mut(structure).set_sibling(true);
        dwarf.unit.add(structure, gimli::DW_TAG_member);
        let later = dwarf.unit.add(root, gimli::DW_TAG_subprogram);
        let entry = dwarf.unit.get_mut(later);
        entry.set(gimli::DW_AT_name, AttributeValue::String(b"later".to_vec()));
        entry.set(
            gimli::DW_AT_low_pc,
            AttributeValue::Address(Address::Constant(LOW + SIZE)),
        );
        entry.set(gimli::DW_AT_high_pc, AttributeValue::Udata(0x10));
    });
    if hostile {
        let abbrev = sections
            .iter()
            .find(|(name, _)| name == ".debug_abbrev")
            .unwrap()
            .1
            .clone();
        let info = &mut sections
            .iter_mut()
            .find(|(name, _)| name == ".debug_info")
            .unwrap()
            .1;
        // Where each DIE is, and where its `DW_AT_sibling` (gimli writes it first, as a
        // `DW_FORM_ref4` after a one-byte abbreviation code) is in the section.
        let mut patches = Vec::new();
        {
            let read = gimli::DebugInfo::new(info, gimli::LittleEndian);
            let header = read.units().next().unwrap().unwrap();
            let abbrevs = header
                .abbreviations(&gimli::DebugAbbrev::new(&abbrev, gimli::LittleEndian))
                .unwrap();
            let mut outer = None;
            let mut entries = header.entries(&abbrevs);
            while let Some(entry) = entries.next_dfs().unwrap() {
                let at = entry.offset().to_debug_info_offset(&header).unwrap().0;
                let sibling = match entry.attr(gimli::DW_AT_sibling).map(|a| a.value()) {
                    Some(gimli::AttributeValue::UnitRef(ahead)) => Some(ahead.0),
                    _ => None,
                };
                match entry.tag() {
                    gimli::DW_TAG_subprogram if outer.is_none() => outer = Some(entry.offset()),
                    // The call site's sibling goes back to `outer`, the structure's to
                    // itself.
                    gimli::DW_TAG_GNU_call_site => patches.push((at, outer.unwrap(), sibling)),
                    gimli::DW_TAG_structure_type => patches.push((at, entry.offset(), sibling)),
                    _ => {}
                }
            }
        }
        assert_eq!(patches.len(), 2);
        for (at, target, sibling) in patches {
            let ahead = sibling.unwrap_or_else(|| panic!("no DW_AT_sibling at {at:#x}"));
            let value = at + 1;
            assert!(info[at] < 0x80, "a one-byte abbreviation code");
            let old = u32::from_le_bytes(info[value..value + 4].try_into().unwrap());
            assert_eq!(old as usize, ahead, "the sibling is the first attribute");
            info[value..value + 4].copy_from_slice(&(target.0 as u32).to_le_bytes());
        }
    }
    elf_with_sections(&sections)
}

/// A line program with `rows` rows, all at `LOW` (line 1, 2, ... `rows`), then the end of
/// the sequence at `LOW + SIZE`.
fn rows_at_one_address(rows: u32) -> Vec<u8> {
    elf_with_unit(
        |dwarf, _| {
            let line_encoding = LineEncoding::default();
            let mut program = LineProgram::new(
                encoding(),
                line_encoding,
                LineString::String(b"/src".to_vec()),
                None,
                LineString::String(b"hostile.c".to_vec()),
                None,
            );
            let dir = program.default_directory();
            let file = program.add_file(LineString::String(b"hostile.c".to_vec()), dir, None);
            program.begin_sequence(Some(Address::Constant(LOW)));
            for line in 1..=rows {
                let row = program.row();
                row.file = file;
                row.line = u64::from(line);
                row.address_offset = 0;
                program.generate_row();
            }
            program.end_sequence(SIZE);
            dwarf.unit.line_program = program;
            let root = dwarf.unit.root();
            // DW_AT_stmt_list is written for a unit with a line program.
            let _ = dwarf.unit.get(root);
        },
        &[],
    )
}

/// `.debug_aranges` sets (DWARF 2 format): each names a unit offset and address ranges.
fn aranges(sets: &[(u32, &[(u64, u64)])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (offset, ranges) in sets {
        let mut body = Vec::new();
        body.extend_from_slice(&2u16.to_le_bytes()); // version
        body.extend_from_slice(&offset.to_le_bytes()); // debug_info_offset
        body.push(8); // address_size
        body.push(0); // segment_selector_size
                      // The tuples start at a multiple of twice the address size from the set's start
                      // (4 bytes of length, then the 8 above: 12, padded to 16).
        body.extend_from_slice(&[0; 4]);
        for (start, len) in ranges.iter().chain(&[(0, 0)]) {
            body.extend_from_slice(&start.to_le_bytes());
            body.extend_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
    }
    out
}

/// A unit whose `.debug_aranges` lies: its set for the unit points past `.debug_info`, a
/// second set gives unit 0 the whole address space, a third gives it a range it does not
/// hold.
fn lying_aranges() -> Vec<u8> {
    let lies = aranges(&[
        (0x7fff_fff0, &[(LOW, SIZE)]),
        (0, &[(0, u64::MAX)]),
        (0, &[(0xdead_0000, 0x1000)]),
    ]);
    elf_with_unit(|_, _| {}, &[(".debug_aranges", lies)])
}

/// The DWARF of `bytes`, named `name`: `Ok(None)` without DWARF.
fn dwarf_of(name: &str, bytes: Vec<u8>) -> stacksym::Result<Option<DwarfInfo>> {
    let elf = Arc::new(ElfFile::from_bytes(name, bytes)?);
    match DwarfSections::load(&elf)? {
        Some(sections) => DwarfInfo::new(&sections).map(Some),
        None => Ok(None),
    }
}

/// The function names of the frames at `addr`, innermost first.
fn names(dwarf: &DwarfInfo, addr: u64) -> stacksym::Result<Option<Vec<Option<String>>>> {
    Ok(dwarf.frames(VirtAddr(addr))?.map(|frames| {
        frames
            .iter()
            .map(|f| f.function.as_ref().map(|n| n.demangled.clone()))
            .collect()
    }))
}

#[test]
fn nesting_within_the_limit_gives_every_frame() {
    // Proves the generator: 200 levels are 201 frames (200 inlined copies, then `outer`).
    let dwarf = dwarf_of("nested-200", nested_inlines(200))
        .unwrap()
        .unwrap();
    let frames = names(&dwarf, LOW + 4).unwrap().expect("covered");
    assert_eq!(frames.len(), 201);
    assert_eq!(frames[0].as_deref(), Some("inl"));
    assert_eq!(frames[200].as_deref(), Some("outer"));
}

#[test]
fn the_nesting_limit_is_exact() {
    // MAX_INLINED_DEPTH levels answer (one frame each, then `outer`); one more refuses.
    let at_limit = dwarf_of("nested-max", nested_inlines(MAX_INLINED_DEPTH))
        .unwrap()
        .unwrap();
    let frames = names(&at_limit, LOW + 4).unwrap().expect("covered");
    assert_eq!(frames.len(), MAX_INLINED_DEPTH + 1);
    let past = dwarf_of("nested-past", nested_inlines(MAX_INLINED_DEPTH + 1))
        .unwrap()
        .unwrap();
    let err = names(&past, LOW + 4).unwrap_err();
    assert!(err.to_string().contains("nested more than"), "{err}");
    // A limit of this crate's, not a malformed file; the message names the unit's offset.
    assert_eq!(err.kind(), stacksym::ErrorKind::Unsupported, "{err}");
    assert!(err.to_string().contains("DWARF unit at 0x0"), "{err}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    // The unit is read when an address in it is first asked about: that lookup, and every
    // later one in the unit, is the error.
    let deep = nested_inlines(100_000);
    let dwarf = dwarf_of("nested-100000", deep.clone())
        .unwrap()
        .expect("has DWARF");
    let err = dwarf.frames(VirtAddr(LOW + 4)).unwrap_err();
    let again = dwarf.frames(VirtAddr(LOW + 4)).unwrap_err();
    assert_eq!(err.to_string(), again.to_string());
    let shown = err.to_string();
    assert!(shown.starts_with("nested-100000: "), "{shown}");
    assert!(shown.contains("inlined"), "{shown}");

    // Through the façade: the DWARF is refused, the batch answers and says why.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested.o");
    std::fs::write(&path, deep).unwrap();
    let symbols = Symbolizer::builder()
        .build()
        .symbolize(
            &Source::Elf { path: &path },
            Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(&[LOW + 4])),
        )
        .unwrap();
    let why = symbols.debug_error().expect("the DWARF error is reported");
    assert!(why.to_string().contains("inlined"), "{why}");
}

#[test]
fn origin_and_specification_cycles_end() {
    let dwarf = dwarf_of("cycles", origin_cycles()).unwrap().unwrap();
    for addr in [LOW, LOW + 0x10, LOW + 0x20, LOW + 0x30] {
        // Names that only a cycle could give are absent; the frames are there.
        let frames = names(&dwarf, addr).unwrap().expect("covered");
        assert!(
            !frames.is_empty() && frames.len() <= 2,
            "{addr:#x}: {frames:?}"
        );
        assert_eq!(
            frames.last().unwrap().as_deref(),
            Some("outer"),
            "{addr:#x}"
        );
    }
}

#[test]
fn two_million_rows_for_one_address() {
    let rows = 2_000_000;
    let dwarf = dwarf_of("rows", rows_at_one_address(rows))
        .unwrap()
        .unwrap();
    let frames = dwarf.frames(VirtAddr(LOW + 8)).unwrap().expect("covered");
    // The last row for an address is the one that describes it (addr2line keeps one row
    // per address, so memory does not grow with the rows).
    assert_eq!(frames.last().unwrap().line, Some(rows));
    assert!(frames
        .last()
        .unwrap()
        .file
        .as_deref()
        .unwrap()
        .ends_with("hostile.c"));
}

#[test]
fn lying_aranges_give_answers_or_errors() {
    let dwarf = match dwarf_of("aranges", lying_aranges()) {
        Ok(dwarf) => dwarf.expect("has DWARF"),
        Err(e) => {
            assert!(e.to_string().starts_with("aranges: "), "{e}");
            return;
        }
    };
    for addr in [
        0,
        LOW,
        LOW + 4,
        0xdead_0000,
        0xdead_0fff,
        u64::MAX - 1,
        u64::MAX,
    ] {
        match names(&dwarf, addr) {
            Ok(Some(frames)) => assert!(frames.len() <= 2, "{addr:#x}: {frames:?}"),
            Ok(None) => {}
            Err(e) => assert!(e.to_string().starts_with("aranges: "), "{e}"),
        }
    }
    // Where the unit really is, it still answers.
    let at_low = names(&dwarf, LOW + 4).unwrap().expect("covered");
    assert_eq!(at_low.last().unwrap().as_deref(), Some("outer"));
}

#[test]
fn sibling_jumps_are_followed_only_forward() {
    // The walk jumps over the call site's parameters and the structure's members when
    // their siblings point ahead; pointing back (to `outer`, to the structure itself), they
    // are walked instead, and the answers are the same: the inlined call after the call site
    // is still inside `outer`, and `later` after the structure is still found.
    for hostile in [false, true] {
        let dwarf = dwarf_of("siblings", sibling_jumps(hostile))
            .unwrap()
            .unwrap();
        let inner = names(&dwarf, LOW + 4).unwrap().expect("covered");
        assert_eq!(
            inner,
            [Some("inl".to_string()), Some("outer".to_string())],
            "hostile: {hostile}"
        );
        let later = names(&dwarf, LOW + SIZE + 4).unwrap().expect("covered");
        assert_eq!(later, [Some("later".to_string())], "hostile: {hostile}");
        let middle = names(&dwarf, LOW + 0x20).unwrap().expect("covered");
        assert_eq!(middle, [Some("outer".to_string())], "hostile: {hostile}");
    }
}

/// The fuzz seeds: each shape, small enough for a fuzzer, with the address to probe
/// appended.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let with_probe = |mut bytes: Vec<u8>, addr: u64| {
        bytes.extend_from_slice(&addr.to_le_bytes());
        bytes
    };
    vec![
        (
            "nested-inlines-5000",
            with_probe(nested_inlines(5000), LOW + 4),
        ),
        ("origin-cycles", with_probe(origin_cycles(), LOW + 0x10)),
        (
            "rows-at-one-address-20000",
            with_probe(rows_at_one_address(20_000), LOW + 8),
        ),
        ("lying-aranges", with_probe(lying_aranges(), LOW + 4)),
        ("sibling-jumps", with_probe(sibling_jumps(false), LOW + 4)),
        ("sibling-back", with_probe(sibling_jumps(true), LOW + 4)),
    ]
}

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz/dwarf_frames")
}

#[test]
fn committed_seeds_are_the_generated_shapes() {
    let dir = seeds_dir();
    let write = std::env::var_os("STACKSYM_WRITE_SEEDS").is_some();
    for (name, bytes) in seeds() {
        let path = dir.join(name);
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; regenerate with STACKSYM_WRITE_SEEDS=1 cargo test --test dwarf_limits",
                path.display()
            )
        });
        assert!(
            committed == bytes,
            "{} is not what the generator writes now; regenerate with \
             STACKSYM_WRITE_SEEDS=1 cargo test --test dwarf_limits",
            path.display()
        );
        // Each seed is an answer or an error, as the fuzz target requires.
        if let Ok(Some(dwarf)) = dwarf_of(name, bytes.clone()) {
            let probe = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap());
            let _ = dwarf.frames(VirtAddr(probe));
        }
    }
}
