//! The reader on tables written here, in every format, by the rules of Go's linker
//! (cmd/link/internal/ld/pcln.go): the formats the installed Go toolchain cannot write
//! (1.2–1.17, 1.20+) and hostile tables. Real binaries are tested in tests/gopclntab.rs.

use std::sync::Arc;

use super::pcvalue::tests::encode;
use super::*;

const TEXT_ADDR: u64 = 0x401000;
const TABLE_ADDR: u64 = 0x402000;
const DATA_ADDR: u64 = 0x403000;

/// (value, pc delta) runs of a pc-value table.
type Runs = Vec<(i32, u64)>;
/// An inline tree: (name, parentPc) per entry.
type InlineTree = Vec<(&'static str, u32)>;

/// One function of a synthetic table.
struct Func {
    name: &'static str,
    /// Offset from TEXT_ADDR and size.
    start: u64,
    size: u64,
    /// (value, pc delta) runs.
    pcsp: Vec<(i32, u64)>,
    pcfile: Vec<(i32, u64)>,
    pcln: Vec<(i32, u64)>,
    /// Inline-index runs and the tree: (name, parentPc).
    inline: Option<(Runs, InlineTree)>,
}

const FILES: [&str; 2] = ["/src/main.go", "/src/util.go"];

fn funcs() -> Vec<Func> {
    vec![
        Func {
            name: "main.main",
            start: 0,
            size: 0x40,
            pcsp: vec![(0, 4), (8, 0x3c)],
            pcfile: vec![(0, 0x40)],
            pcln: vec![(10, 0x10), (11, 0x10), (12, 0x20)],
            inline: None,
        },
        Func {
            name: "main.(*Server).Handle",
            start: 0x40,
            size: 0x30,
            pcsp: vec![(0, 0x30)],
            // 0x40..0x50 main.go; 0x50..0x60 util.go (inlined helper); then main.go.
            pcfile: vec![(0, 0x10), (1, 0x10), (0, 0x10)],
            pcln: vec![(20, 0x10), (5, 0x10), (22, 0x10)],
            // 0x50..0x60 inside inlined main.helper (tree entry 0), whose call site is
            // at entry + 0x08 (line 20 of main.go).
            inline: Some((
                vec![(-1, 0x10), (0, 0x10), (-1, 0x10)],
                vec![("main.helper", 0x08)],
            )),
        },
    ]
}

fn put_uint(out: &mut Vec<u8>, value: u64, size: usize) {
    out.extend_from_slice(&value.to_le_bytes()[..size]);
}

fn set_u32(out: &mut [u8], at: usize, value: u32) {
    out[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Writes a table of `version` (little-endian, 64-bit) for `funcs`, and the inline trees
/// and module data it points at (the data segment's bytes).
fn write_table(version: GoTableVersion, funcs: &[Func]) -> (Vec<u8>, Vec<u8>) {
    let ptr = 8usize;
    let magic: u32 = match version {
        GoTableVersion::Go1_2 => 0xfffffffb,
        GoTableVersion::Go1_16 => 0xfffffffa,
        GoTableVersion::Go1_18 => 0xfffffff0,
        GoTableVersion::Go1_20 => 0xfffffff1,
    };
    let new = version >= GoTableVersion::Go1_16;
    let mut t = Vec::new();
    t.extend_from_slice(&magic.to_le_bytes());
    t.extend_from_slice(&[0, 0, 1, ptr as u8]);
    let header_words = match version {
        GoTableVersion::Go1_2 => 1,
        GoTableVersion::Go1_16 => 7,
        _ => 8,
    };
    let header_at = t.len();
    t.resize(t.len() + header_words * ptr, 0);
    // For 1.2, the function table must follow the header; everything else goes after it.
    let old_functab = t.len();
    if !new {
        t.resize(t.len() + funcs.len() * 2 * ptr + ptr + 4, 0);
    }
    // Names.
    let funcnames = t.len();
    let mut name_offs = Vec::new();
    let mut tree_name_offs = Vec::new();
    let base = if new { funcnames } else { 0 };
    for f in funcs {
        name_offs.push((t.len() - base) as u32);
        t.extend_from_slice(f.name.as_bytes());
        t.push(0);
        let mut offs = Vec::new();
        for (name, _) in f.inline.iter().flat_map(|(_, tree)| tree) {
            offs.push((t.len() - base) as u32);
            t.extend_from_slice(name.as_bytes());
            t.push(0);
        }
        tree_name_offs.push(offs);
    }
    // Files: strings, then cutab (new) or filetab (1.2: count, then offsets; index 0 unused).
    let filetab = t.len();
    let mut file_offs = Vec::new();
    for f in FILES {
        file_offs.push((t.len() - if new { filetab } else { 0 }) as u32);
        t.extend_from_slice(f.as_bytes());
        t.push(0);
    }
    while t.len() % 4 != 0 {
        t.push(0);
    }
    let cutab = t.len();
    if new {
        for off in &file_offs {
            put_uint(&mut t, u64::from(*off), 4);
        }
    } else {
        put_uint(&mut t, FILES.len() as u64 + 1, 4);
        for off in &file_offs {
            put_uint(&mut t, u64::from(*off), 4);
        }
    }
    // pc tables; offset 0 means "none", so the area starts with a byte.
    let pctab = t.len();
    t.push(0);
    let pbase = if new { pctab } else { 0 };
    let mut tables = Vec::new();
    for f in funcs {
        let file_shift = if new { 0 } else { 1 };
        let pcfile: Vec<_> = f.pcfile.iter().map(|&(v, d)| (v + file_shift, d)).collect();
        let mut offs = Vec::new();
        for runs in [&f.pcsp, &pcfile, &f.pcln] {
            offs.push((t.len() - pbase) as u32);
            t.extend(encode(runs, 1));
        }
        let inline = f.inline.as_ref().map(|(runs, _)| {
            let off = (t.len() - pbase) as u32;
            t.extend(encode(runs, 1));
            off
        });
        tables.push((offs, inline));
    }
    // Data segment: inline trees, then module data.
    let mut data = Vec::new();
    let gofunc = DATA_ADDR;
    let mut trees = Vec::new();
    for (f, names) in funcs.iter().zip(&tree_name_offs) {
        let Some((_, tree)) = &f.inline else {
            trees.push(None);
            continue;
        };
        trees.push(Some(DATA_ADDR + data.len() as u64));
        for ((_, parent_pc), name_off) in tree.iter().zip(names) {
            if version == GoTableVersion::Go1_20 {
                data.extend_from_slice(&[0, 0, 0, 0]);
                put_uint(&mut data, u64::from(*name_off), 4);
                put_uint(&mut data, u64::from(*parent_pc), 4);
                put_uint(&mut data, 1, 4);
            } else {
                data.extend_from_slice(&[0xff, 0xff, 0, 0]);
                put_uint(&mut data, 0, 4);
                put_uint(&mut data, 0, 4);
                put_uint(&mut data, u64::from(*name_off), 4);
                put_uint(&mut data, u64::from(*parent_pc), 4);
            }
        }
    }
    while t.len() % 8 != 0 {
        t.push(0);
    }
    // Function table and records.
    let functab = if new { t.len() } else { old_functab };
    let entry_size = if version >= GoTableVersion::Go1_18 {
        8
    } else {
        2 * ptr
    };
    if new {
        t.resize(t.len() + (funcs.len() + 1) * entry_size, 0);
    }
    let rbase = if new { functab } else { 0 };
    let mut records = Vec::new();
    for (i, f) in funcs.iter().enumerate() {
        while t.len() % 8 != 0 {
            t.push(0);
        }
        records.push(t.len() - rbase);
        let entry = TEXT_ADDR + f.start;
        match version {
            GoTableVersion::Go1_18 | GoTableVersion::Go1_20 => put_uint(&mut t, f.start, 4),
            _ => put_uint(&mut t, entry, ptr),
        }
        let (offs, inline) = &tables[i];
        put_uint(&mut t, u64::from(name_offs[i]), 4);
        put_uint(&mut t, 0, 4); // args
        put_uint(&mut t, 0, 4); // deferreturn
        for off in offs {
            put_uint(&mut t, u64::from(*off), 4);
        }
        let npcdata = if inline.is_some() { 3 } else { 0 };
        put_uint(&mut t, npcdata, 4);
        if new {
            put_uint(&mut t, 0, 4); // cuOffset
        }
        if version == GoTableVersion::Go1_20 {
            put_uint(&mut t, 1, 4); // startLine
        }
        let nfuncdata = if inline.is_some() { 4u8 } else { 0 };
        t.extend_from_slice(&[0, 0, 0, nfuncdata]);
        if let Some(off) = inline {
            put_uint(&mut t, 0, 4);
            put_uint(&mut t, 0, 4);
            put_uint(&mut t, u64::from(*off), 4);
            let tree = trees[i].unwrap_or(0);
            if version >= GoTableVersion::Go1_18 {
                for _ in 0..3 {
                    put_uint(&mut t, u64::from(u32::MAX), 4);
                }
                put_uint(&mut t, tree - gofunc, 4);
            } else {
                while t.len() % 8 != 0 {
                    t.push(0);
                }
                for _ in 0..3 {
                    put_uint(&mut t, 0, ptr);
                }
                put_uint(&mut t, tree, ptr);
            }
        }
    }
    // Function table entries and the end.
    let last = funcs.last().map_or(0, |f| f.start + f.size);
    for i in 0..=funcs.len() {
        let at = functab + i * entry_size;
        let start = funcs.get(i).map_or(last, |f| f.start);
        let record = records.get(i).copied().unwrap_or(0) as u64;
        if version >= GoTableVersion::Go1_18 {
            set_u32(&mut t, at, start as u32);
            set_u32(&mut t, at + 4, record as u32);
        } else {
            t[at..at + 8].copy_from_slice(&(TEXT_ADDR + start).to_le_bytes());
            if i < funcs.len() {
                t[at + 8..at + 16].copy_from_slice(&record.to_le_bytes());
            } else if !new {
                set_u32(&mut t, at + 8, cutab as u32);
            }
        }
    }
    // Header fields.
    let mut words = vec![funcs.len() as u64];
    match version {
        GoTableVersion::Go1_2 => {}
        GoTableVersion::Go1_16 => {
            words.extend([FILES.len() as u64, funcnames as u64, cutab as u64]);
            words.extend([filetab as u64, pctab as u64, functab as u64]);
        }
        _ => {
            words.extend([FILES.len() as u64, TEXT_ADDR, funcnames as u64]);
            words.extend([cutab as u64, filetab as u64, pctab as u64, functab as u64]);
        }
    }
    for (i, w) in words.iter().enumerate() {
        let at = header_at + i * ptr;
        t[at..at + 8].copy_from_slice(&w.to_le_bytes());
    }
    // Module data (1.18+): pcHeader, funcnametab's pointer, ..., rodata, gofunc.
    while data.len() % 8 != 0 {
        data.push(0);
    }
    let mut moduledata = vec![0u64; 48];
    moduledata[0] = TABLE_ADDR;
    moduledata[1] = TABLE_ADDR + funcnames as u64;
    let gofunc_word = if version == GoTableVersion::Go1_20 {
        40
    } else {
        38
    };
    moduledata[gofunc_word - 1] = DATA_ADDR;
    moduledata[gofunc_word] = gofunc;
    for w in moduledata {
        put_uint(&mut data, w, 8);
    }
    (t, data)
}

/// A little-endian ELF64 executable: text at TEXT_ADDR, the table at TABLE_ADDR, data at
/// DATA_ADDR; with section headers (`.text`, `.gopclntab`) unless `headerless`.
pub(super) fn write_elf(table: &[u8], data: &[u8], headerless: bool) -> Vec<u8> {
    let page = 0x1000usize;
    let table_off = 2 * page;
    let data_off = (table_off + table.len()).next_multiple_of(page);
    let sh_off = (data_off + data.len()).next_multiple_of(8);
    let mut out = vec![0u8; sh_off];
    out[..4].copy_from_slice(b"\x7fELF");
    out[4] = 2; // ELFCLASS64
    out[5] = 1; // little-endian
    out[6] = 1;
    let h = |out: &mut Vec<u8>, at: usize, v: u64, size: usize| {
        out[at..at + size].copy_from_slice(&v.to_le_bytes()[..size]);
    };
    h(&mut out, 16, 2, 2); // ET_EXEC
    h(&mut out, 18, 62, 2); // x86_64
    h(&mut out, 20, 1, 4);
    h(&mut out, 24, TEXT_ADDR, 8);
    h(&mut out, 32, 64, 8); // e_phoff
    h(&mut out, 52, 64, 2); // e_ehsize
    h(&mut out, 54, 56, 2); // e_phentsize
    h(&mut out, 56, 3, 2); // e_phnum
    h(&mut out, 58, 64, 2); // e_shentsize
    let phdrs = [
        (5u64, page, TEXT_ADDR, page),
        (4, table_off, TABLE_ADDR, table.len()),
        (6, data_off, DATA_ADDR, data.len()),
    ];
    for (i, (flags, off, vaddr, size)) in phdrs.into_iter().enumerate() {
        let at = 64 + i * 56;
        h(&mut out, at, 1, 4); // PT_LOAD
        h(&mut out, at + 4, flags, 4);
        h(&mut out, at + 8, off as u64, 8);
        h(&mut out, at + 16, vaddr, 8);
        h(&mut out, at + 24, vaddr, 8);
        h(&mut out, at + 32, size as u64, 8);
        h(&mut out, at + 40, size as u64, 8);
        h(&mut out, at + 48, page as u64, 8);
    }
    out[page..page + 4].copy_from_slice(&[0xc3; 4]);
    out[table_off..table_off + table.len()].copy_from_slice(table);
    out[data_off..data_off + data.len()].copy_from_slice(data);
    if headerless {
        return out;
    }
    // Section headers: null, .text, .gopclntab, .shstrtab.
    let names = b"\0.text\0.gopclntab\0.shstrtab\0";
    let strtab_off = out.len();
    out.extend_from_slice(names);
    let sh_start = out.len().next_multiple_of(8);
    out.resize(sh_start + 4 * 64, 0);
    let sections = [
        (1u64, 1u64, 6u64, TEXT_ADDR, page, page),
        (7, 1, 2, TABLE_ADDR, table_off, table.len()),
        (18, 3, 0, 0, strtab_off, names.len()),
    ];
    for (i, (name, kind, flags, addr, off, size)) in sections.into_iter().enumerate() {
        let at = sh_start + (i + 1) * 64;
        h(&mut out, at, name, 4);
        h(&mut out, at + 4, kind, 4);
        h(&mut out, at + 8, flags, 8);
        h(&mut out, at + 16, addr, 8);
        h(&mut out, at + 24, off as u64, 8);
        h(&mut out, at + 32, size as u64, 8);
        h(&mut out, at + 48, 1, 8);
    }
    h(&mut out, 40, sh_start as u64, 8); // e_shoff
    h(&mut out, 60, 4, 2); // e_shnum
    h(&mut out, 62, 3, 2); // e_shstrndx
    out
}

fn open(version: GoTableVersion, headerless: bool) -> GoTable {
    let (table, data) = write_table(version, &funcs());
    let elf = ElfFile::from_bytes("synthetic", write_elf(&table, &data, headerless)).unwrap();
    GoTable::find(&Arc::new(elf)).unwrap().expect("a Go table")
}

const VERSIONS: [GoTableVersion; 4] = [
    GoTableVersion::Go1_2,
    GoTableVersion::Go1_16,
    GoTableVersion::Go1_18,
    GoTableVersion::Go1_20,
];

type FrameKey = (String, Option<String>, Option<u32>, bool);

fn key(name: &str, file: &str, line: u32, inlined: bool) -> FrameKey {
    (
        name.to_string(),
        Some(file.to_string()),
        Some(line),
        inlined,
    )
}

fn frames_at(table: &GoTable, addr: u64) -> Vec<FrameKey> {
    let mut frames = Vec::new();
    table.append_frames(VirtAddr(addr), &mut frames).unwrap();
    frames
        .into_iter()
        .map(|f| {
            let name = f.function.map(|n| n.raw.clone()).unwrap_or_default();
            (name, f.file.map(|f| f.to_string()), f.line, f.inlined)
        })
        .collect()
}

#[test]
fn every_format_names_lines_and_sp() {
    for version in VERSIONS {
        for headerless in [false, true] {
            let table = open(version, headerless);
            assert_eq!(table.version(), version);
            let expected_by = if headerless {
                GoTableFoundBy::Scan
            } else {
                GoTableFoundBy::Section
            };
            assert_eq!(table.found_by(), expected_by, "{version:?}");
            assert_eq!(table.function_count(), 2);
            let f = table
                .find_function(VirtAddr(TEXT_ADDR + 0x45))
                .unwrap()
                .unwrap();
            assert_eq!(f.name, "main.(*Server).Handle", "{version:?}");
            assert_eq!((f.entry.0, f.end.0), (TEXT_ADDR + 0x40, TEXT_ADDR + 0x70));
            assert_eq!(
                table.find_function(VirtAddr(TEXT_ADDR + 0x70)).unwrap(),
                None
            );
            assert_eq!(table.find_function(VirtAddr(TEXT_ADDR - 1)).unwrap(), None);
            let main = frames_at(&table, TEXT_ADDR + 0x12);
            assert_eq!(main, vec![key("main.main", "/src/main.go", 11, false)]);
            assert_eq!(table.sp_delta(VirtAddr(TEXT_ADDR + 2)).unwrap(), Some(0));
            assert_eq!(table.sp_delta(VirtAddr(TEXT_ADDR + 4)).unwrap(), Some(8));
            let names: Vec<_> = table.functions().map(|f| f.unwrap().name).collect();
            assert_eq!(names, ["main.main", "main.(*Server).Handle"]);
        }
    }
}

/// The forward search of a sorted batch finds what the whole-table search finds, from any
/// hint: behind, at, or past the address's function, and outside the table.
#[test]
fn forward_search_equals_binary_search() {
    // 41 functions of sizes 1 to 41 bytes, back to back.
    let mut start = 0;
    let many: Vec<Func> = (1..=41u64)
        .map(|size| {
            let func = Func {
                name: "main.f",
                start,
                size,
                pcsp: vec![(0, size)],
                pcfile: vec![(0, size)],
                pcln: vec![(1, size)],
                inline: None,
            };
            start += size;
            func
        })
        .collect();
    for version in VERSIONS {
        let (table, data) = write_table(version, &many);
        let elf = ElfFile::from_bytes("synthetic", write_elf(&table, &data, false)).unwrap();
        let table = GoTable::find(&Arc::new(elf)).unwrap().unwrap();
        let n = table.function_count();
        assert_eq!(n, many.len());
        let mut previous = 0;
        for pc in TEXT_ADDR - 2..TEXT_ADDR + start + 2 {
            let expected = table.index_of(pc).unwrap();
            for hint in [0, previous, n / 2, n - 1, n, n + 7] {
                assert_eq!(
                    table.index_from(pc, hint).unwrap(),
                    expected,
                    "{version:?}: pc {pc:#x} from {hint}"
                );
            }
            previous = expected.unwrap_or(previous);
        }
    }
}

#[test]
fn inlined_frames_innermost_first() {
    for version in VERSIONS {
        for headerless in [false, true] {
            let table = open(version, headerless);
            let frames = frames_at(&table, TEXT_ADDR + 0x55);
            if version == GoTableVersion::Go1_2 {
                // No inline tree read before 1.16: the function, at the innermost line.
                assert_eq!(frames.len(), 1);
                continue;
            }
            assert_eq!(
                frames,
                vec![
                    key("main.helper", "/src/util.go", 5, true),
                    key("main.(*Server).Handle", "/src/main.go", 20, false),
                ],
                "{version:?} headerless {headerless}"
            );
            // Outside the inlined range: just the function.
            let frames = frames_at(&table, TEXT_ADDR + 0x65);
            assert_eq!(
                frames,
                vec![key("main.(*Server).Handle", "/src/main.go", 22, false)]
            );
        }
    }
}

/// Every truncation of every format's table, and every single corrupted byte of the 1.20
/// one, gives answers or errors, never a panic.
#[test]
fn hostile_tables_never_panic() {
    for version in VERSIONS {
        let (table, data) = write_table(version, &funcs());
        for len in 0..table.len() {
            let elf = ElfFile::from_bytes("cut", write_elf(&table[..len], &data, false)).unwrap();
            if let Ok(Some(t)) = GoTable::find(&Arc::new(elf)) {
                for pc in (TEXT_ADDR..TEXT_ADDR + 0x80).step_by(3) {
                    let _ = t.append_frames(VirtAddr(pc), &mut Vec::new());
                    let _ = t.sp_delta(VirtAddr(pc));
                }
                let _ = t.functions().count();
            }
        }
        for at in 0..table.len() {
            for byte in [0x00, 0x7f, 0x80, 0xff] {
                let mut bad = table.clone();
                bad[at] = byte;
                let elf = ElfFile::from_bytes("bad", write_elf(&bad, &data, at % 2 == 0)).unwrap();
                if let Ok(Some(t)) = GoTable::find(&Arc::new(elf)) {
                    for pc in (TEXT_ADDR..TEXT_ADDR + 0x80).step_by(5) {
                        let _ = t.append_frames(VirtAddr(pc), &mut Vec::new());
                    }
                    let _ = t.functions().count();
                }
            }
        }
    }
}

#[test]
fn hostile_headers_are_named() {
    let (table, data) = write_table(GoTableVersion::Go1_20, &funcs());
    let find = |table: &[u8]| {
        let elf = ElfFile::from_bytes("bad", write_elf(table, &data, false)).unwrap();
        GoTable::find(&Arc::new(elf)).map(|t| t.map(|_| ()))
    };
    // A huge function count: refused before anything is sized.
    let mut huge = table.clone();
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    let e = find(&huge).unwrap_err().to_string();
    assert!(e.contains("claims") && e.contains("functions"), "{e}");
    // More functions than the function table holds.
    let mut many = table.clone();
    many[8..16].copy_from_slice(&100_000u64.to_le_bytes());
    let e = find(&many).unwrap_err().to_string();
    assert!(e.contains("too short"), "{e}");
    // An offset outside the table.
    let mut outside = table.clone();
    outside[32..40].copy_from_slice(&0x10_0000u64.to_le_bytes());
    let e = find(&outside).unwrap_err().to_string();
    assert!(e.contains("outside the table") && e.contains("bad"), "{e}");
    // A pc table that never ends: an error at lookup, not a loop.
    let mut endless = table.clone();
    let pctab = u64::from_le_bytes(endless[56..64].try_into().unwrap()) as usize;
    let functab = u64::from_le_bytes(endless[64..72].try_into().unwrap()) as usize;
    for b in &mut endless[pctab + 1..functab] {
        *b = 0x80;
    }
    let elf = ElfFile::from_bytes("endless", write_elf(&endless, &data, false)).unwrap();
    let t = GoTable::find(&Arc::new(elf)).unwrap().unwrap();
    let e = t
        .append_frames(VirtAddr(TEXT_ADDR + 8), &mut Vec::new())
        .unwrap_err();
    assert!(e.to_string().contains("varint"), "{e}");
}

#[test]
fn not_a_go_binary() {
    // A `.gopclntab` section that is not a table: an error that says why.
    let elf = ElfFile::from_bytes("plain", write_elf(&[1, 2, 3, 4], &[], false)).unwrap();
    let e = GoTable::find(&Arc::new(elf)).unwrap_err().to_string();
    assert!(e.contains("plain") && e.contains("magic"), "{e}");
    // No section headers and nothing that checks out: not a Go binary.
    let elf = ElfFile::from_bytes("plain", write_elf(&[1, 2, 3, 4], &[], true)).unwrap();
    assert!(GoTable::find(&Arc::new(elf)).unwrap().is_none());
}

/// Writes the synthetic tables as the `gopclntab` fuzz target's seeds (testdata/fuzz/
/// gopclntab/), when `STACKSYM_WRITE_SEEDS=1`: every format, with and without section
/// headers, and the hostile headers above.
#[test]
fn write_seeds() {
    if std::env::var_os("STACKSYM_WRITE_SEEDS").is_none() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz/gopclntab");
    std::fs::create_dir_all(&dir).unwrap();
    for version in VERSIONS {
        let (table, data) = write_table(version, &funcs());
        for headerless in [false, true] {
            let name = format!("{version:?}{}", if headerless { "-headerless" } else { "" });
            std::fs::write(dir.join(name), write_elf(&table, &data, headerless)).unwrap();
        }
    }
    let (table, data) = write_table(GoTableVersion::Go1_20, &funcs());
    let mut huge = table.clone();
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(dir.join("huge-count"), write_elf(&huge, &data, false)).unwrap();
    let mut endless = table;
    let pctab = u64::from_le_bytes(endless[56..64].try_into().unwrap()) as usize;
    let functab = u64::from_le_bytes(endless[64..72].try_into().unwrap()) as usize;
    for b in &mut endless[pctab + 1..functab] {
        *b = 0x80;
    }
    std::fs::write(dir.join("endless-varint"), write_elf(&endless, &data, true)).unwrap();
}
