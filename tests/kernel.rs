//! Kernel symbols from kallsyms: the committed fixtures (`testdata/kallsyms/`), bad input, and,
//! when this machine's `/proc/kallsyms` is readable with real addresses (root), the live file
//! against a reference computed here, naively, from the same text.

mod support;

use std::path::Path;

use stacksym::kernel::{Kallsyms, KernelSym, PROC_KALLSYMS};
use stacksym::{AbsAddr, Error};
use support::writeln_stderr;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/kallsyms");

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(FIXTURES).join(name)
}

/// (name, offset, module) of a text symbol found at an address.
type Found = Option<(String, u64, Option<String>)>;

/// (name, offset, module) of the text symbol at `addr`.
fn text_at(k: &Kallsyms, addr: u64) -> Found {
    let sym = k.find_symbol(AbsAddr(addr)).expect("lookups do not fail")?;
    assert!(sym.is_text());
    assert_eq!(sym.addr.0 + sym.offset, addr);
    Some((
        sym.name.to_string(),
        sym.offset,
        sym.module.map(str::to_string),
    ))
}

fn named(name: &str, offset: u64, module: Option<&str>) -> Found {
    Some((name.to_string(), offset, module.map(str::to_string)))
}

#[test]
fn synthetic_fixture() {
    let k = Kallsyms::open(fixture("synthetic.txt")).unwrap();
    assert_eq!(k.skipped_lines(), 0);
    // 25 lines, 6 of them at an address another line already has.
    assert_eq!(k.len(), 25 - 6);
    assert_eq!(k.modules().collect::<Vec<_>>(), ["ext4", "xfs", "bpf"]);

    let cases: &[(u64, Found)] = &[
        // Four names at _stext's address: text over data, global over local, then file order.
        (0xffffffff81000000, named("_stext", 0, None)),
        (0xffffffff8100003f, named("_stext", 0x3f, None)),
        (0xffffffff81000040, named("entry_SYSCALL_64", 0, None)),
        // __pfx_do_work is 16 bytes of padding before do_work.
        (0xffffffff810000f0, named("__pfx_do_work", 0, None)),
        (0xffffffff810000ff, named("__pfx_do_work", 0xf, None)),
        (0xffffffff81000100, named("do_work", 0, None)),
        (0xffffffff81000150, named("do_work", 0x50, None)),
        // Weak over local.
        (0xffffffff81000181, named("weak_func", 1, None)),
        // Same binding: the name without __pfx_ wins.
        (0xffffffff810001c4, named("end_marker", 4, None)),
        (0xffffffff810001d4, named("after", 4, None)),
        (0xffffffff81000300, named("_etext", 0x100, None)),
        // Module symbols; ext4 and xfs interleave: ext4_init ends at ext4_exit, not xfs_mount.
        (
            0xffffffffc0001000,
            named("ext4_fill_super", 0, Some("ext4")),
        ),
        (
            0xffffffffc00011ff,
            named("ext4_fill_super", 0x1ff, Some("ext4")),
        ),
        (0xffffffffc0001f00, named("ext4_init", 0xd00, Some("ext4"))),
        (0xffffffffc0002010, named("xfs_mount", 0x10, Some("xfs"))),
        // The last xfs symbol ends at the next symbol of any module.
        (0xffffffffc00020ff, named("xfs_fs_fill", 0x7f, Some("xfs"))),
        (0xffffffffc0002100, named("ext4_exit", 0, Some("ext4"))),
        // ext4's last symbol ends at the next symbol, [bpf]'s.
        (0xffffffffc0002fff, named("ext4_exit", 0xeff, Some("ext4"))),
        // The very last symbol ends at its page's end.
        (
            0xffffffffc0003fff,
            named(
                "bpf_prog_6deef7357e7b4530_sd_fw_ingress",
                0xfff,
                Some("bpf"),
            ),
        ),
        (0xffffffffc0004000, None),
        // Data is not text.
        (0xffffffff82000000, None),
        (0x10, None),
        (0xffffffff80ffffff, None),
        (u64::MAX, None),
    ];
    for (addr, want) in cases {
        assert_eq!(&text_at(&k, *addr), want, "at {addr:#x}");
    }

    // Data symbols are named by find_any_symbol.
    let data = |addr| {
        k.find_any_symbol(addr)
            .unwrap()
            .map(|s: KernelSym<'_>| (s.name, s.offset, s.type_char))
    };
    assert_eq!(data(AbsAddr(0x10)), Some(("fixed_percpu_data", 0x10, 'A')));
    assert_eq!(data(AbsAddr(0x1010)), Some(("cpu_number", 0x10, 'D')));
    assert_eq!(
        data(AbsAddr(0xffffffff82000010)),
        Some(("init_task", 0x10, 'D'))
    );
    assert_eq!(
        data(AbsAddr(0xffffffff82000110)),
        Some(("local_data", 0x10, 'd'))
    );
    // The kernel image's last symbol ends at its page's end (before the first module).
    assert_eq!(
        data(AbsAddr(0xffffffff82000fff)),
        Some(("__bss_start", 0xdff, 'B'))
    );
    assert_eq!(data(AbsAddr(0xffffffff82001000)), None);
    assert_eq!(
        data(AbsAddr(0xffffffff81000150)),
        Some(("do_work", 0x50, 'T'))
    );

    // symbols(): by address, one per address.
    let all: Vec<_> = k.symbols().collect();
    assert_eq!(all.len(), k.len());
    assert!(all.windows(2).all(|w| w[0].addr < w[1].addr));
    assert_eq!(all[2].name, "_stext");
    assert_eq!(all[2].size, 0x40);
}

#[test]
fn zeroed_file_says_kptr_restrict() {
    let path = fixture("zeroed.txt");
    let err = Kallsyms::open(&path).unwrap_err();
    assert!(matches!(err, Error::KernelAddrsHidden { .. }), "{err:?}");
    assert_eq!(err.path(), path);
    let shown = err.to_string();
    for needed in ["zeroed.txt", "are 0", "kptr_restrict", "CAP_SYSLOG", "root"] {
        assert!(shown.contains(needed), "{needed:?} missing in: {shown}");
    }
}

#[test]
fn malformed_lines_are_skipped_and_counted() {
    let k = Kallsyms::open(fixture("malformed.txt")).unwrap();
    assert_eq!(k.skipped_lines(), 9);
    let names: Vec<_> = k.symbols().map(|s| (s.name, s.module)).collect();
    assert_eq!(
        names,
        [
            ("_stext", None),
            ("good_one", Some("mod_a")),
            ("good_two", None),
            ("last_good", None)
        ]
    );
    assert_eq!(
        text_at(&k, 0xffffffff81000a10),
        named("good_two", 0x10, None)
    );
    // _stext runs over the skipped lines' addresses to the next good one.
    assert_eq!(
        text_at(&k, 0xffffffff81000300),
        named("_stext", 0x300, None)
    );
}

#[test]
fn nothing_parses_is_an_error() {
    let cases: &[(&str, &[u8], &str)] = &[
        ("empty", b"", "empty"),
        ("blank", b"\n  \n\t\n", "empty"),
        (
            "text",
            b"hello world\nthis is not kallsyms\n",
            "none of its 2",
        ),
        ("non-utf8", b"\xff\xfe\xfd\n\xc3", "not UTF-8"),
    ];
    for &(name, bytes, needed) in cases {
        let err = Kallsyms::from_bytes(name, bytes).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with(&format!("{name}: ")), "{shown}");
        assert!(shown.contains(needed), "{needed:?} missing in: {shown}");
    }
}

#[test]
fn not_a_file() {
    let err = Kallsyms::open(FIXTURES).unwrap_err();
    assert!(matches!(err, Error::NotAFile { .. }), "{err}");
    let err = Kallsyms::open(fixture("does-not-exist")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
}

/// Fixed-seed xorshift64: no rand dependency, the same numbers every run.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[test]
fn garbage_never_panics() {
    let mut rng = XorShift(0x9e3779b97f4a7c15);
    let alphabet = b"0123456789abcdefABCDEF xyzTtWwDdBbRr[]_\t\n\r\xff\xc3";
    let synthetic = std::fs::read(fixture("synthetic.txt")).unwrap();
    let mut parsed = 0;
    for round in 0..300 {
        let len = rng.below(4000) as usize;
        let bytes: Vec<u8> = if round % 3 == 0 {
            (0..len).map(|_| rng.next() as u8).collect()
        } else if round % 3 == 1 {
            // The synthetic fixture with a few bytes changed and maybe cut short.
            let mut bytes = synthetic.clone();
            for _ in 0..rng.below(8) {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] = alphabet[rng.below(alphabet.len() as u64) as usize];
            }
            bytes.truncate(rng.below(bytes.len() as u64 + 1) as usize);
            bytes
        } else {
            // Mostly kallsyms-shaped characters, so some lines parse.
            (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect()
        };
        match Kallsyms::from_bytes("garbage", bytes) {
            Err(e) => assert!(e.to_string().starts_with("garbage: "), "{e}"),
            Ok(k) => {
                parsed += 1;
                for _ in 0..50 {
                    let addr = rng.next();
                    if let Some(sym) = k.find_any_symbol(AbsAddr(addr)).unwrap() {
                        assert_eq!(sym.addr.0 + sym.offset, addr);
                        assert!(sym.offset < sym.size);
                    }
                }
                for sym in k.symbols() {
                    let hit = k.find_any_symbol(sym.addr).unwrap();
                    assert!(sym.size == 0 || hit.map(|s| s.name) == Some(sym.name));
                }
            }
        }
    }
    assert!(parsed >= 50, "only {parsed} of 300 inputs parsed");
}

/// The reference: every line split on whitespace, sorted, one symbol per address by the
/// documented rule, ends at the next symbol of the same module, else at the next symbol of
/// any module but at most at the end of the 4 KiB page. Written for clarity, not speed.
struct Reference {
    /// (address, end, name, module, type) by address.
    syms: Vec<(u64, u64, String, String, char)>,
}

impl Reference {
    fn new(text: &str) -> Reference {
        let mut lines = Vec::new();
        for (line_no, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (addr, kind, name, module) = match fields[..] {
                [a, t, n] => (a, t, n, ""),
                [a, t, n, m] => (a, t, n, m),
                _ => continue,
            };
            let addr = u64::from_str_radix(addr, 16).unwrap();
            let kind = kind.chars().next().unwrap();
            let text_rank = if "tTwW".contains(kind) {
                0
            } else if "dDbBrRvVgGsSu".contains(kind) {
                1
            } else {
                2
            };
            let binding = if "wWvV".contains(kind) {
                1
            } else if kind.is_ascii_uppercase() {
                0
            } else {
                2
            };
            let prefixed = name.starts_with("__pfx_") || name.starts_with("__cfi_");
            let module = module.trim_start_matches('[').trim_end_matches(']');
            let key = (addr, text_rank, binding, prefixed, line_no);
            lines.push((key, name.to_string(), module.to_string(), kind));
        }
        lines.sort_by_key(|l| l.0);
        lines.dedup_by(|later, first| later.0 .0 == first.0 .0);
        let mut syms = Vec::new();
        for (i, (key, name, module, kind)) in lines.iter().enumerate() {
            let addr = key.0;
            let same_module_next = lines[i + 1..].iter().find(|l| &l.2 == module);
            let end = match same_module_next {
                Some(next) => next.0 .0,
                None => {
                    let page_end = (addr / 4096 + 1) * 4096;
                    lines.get(i + 1).map_or(page_end, |n| n.0 .0.min(page_end))
                }
            };
            syms.push((addr, end, name.clone(), module.clone(), *kind));
        }
        Reference { syms }
    }

    /// The text symbol's (name, offset, module) at `addr`, by a plain search.
    fn text_at(&self, addr: u64) -> Found {
        let i = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let (start, end, name, module, kind) = &self.syms[i];
        if addr >= *end || !"tTwW".contains(*kind) {
            return None;
        }
        let module = (!module.is_empty()).then(|| module.clone());
        Some((name.clone(), addr - start, module))
    }
}

/// 10,000 addresses: most inside random text symbols, some anywhere in the text's span.
fn agree_with_reference(k: &Kallsyms, text: &str, seed: u64) {
    let reference = Reference::new(text);
    assert_eq!(k.len(), reference.syms.len());
    let text_syms: Vec<_> = reference
        .syms
        .iter()
        .filter(|s| "tTwW".contains(s.4) && s.1 > s.0)
        .collect();
    assert!(!text_syms.is_empty());
    let low = text_syms.first().unwrap().0;
    let high = text_syms.last().unwrap().1;
    let mut rng = XorShift(seed);
    let mut found = 0;
    let mut addrs = Vec::new();
    for round in 0..10_000 {
        let addr = if round % 10 == 9 {
            low + rng.below(high - low)
        } else {
            let s = text_syms[rng.below(text_syms.len() as u64) as usize];
            s.0 + rng.below(s.1 - s.0)
        };
        let want = reference.text_at(addr);
        found += usize::from(want.is_some());
        assert_eq!(text_at(k, addr), want, "at {addr:#x}");
        addrs.push(addr);
    }
    assert!(found >= 9_000, "only {found} of 10,000 found");
    // The batch lookup answers as one lookup per address, in input order; also with
    // addresses below the first symbol, past the last, repeated, and in any order.
    addrs.extend([
        0,
        1,
        low.saturating_sub(1),
        high,
        u64::MAX,
        addrs[0],
        addrs[1],
    ]);
    for batch in [&addrs[..], &addrs[..1], &addrs[addrs.len() - 7..], &[]] {
        let one_by_one: Vec<_> = batch
            .iter()
            .map(|&a| k.find_symbol(AbsAddr(a)).unwrap())
            .collect();
        assert_eq!(
            k.find_symbols(AbsAddr::from_raw_slice(batch)).unwrap(),
            one_by_one
        );
    }
}

#[test]
fn real_excerpt_agrees_with_reference() {
    let path = fixture("real-excerpt.txt");
    let k = Kallsyms::open(&path).unwrap();
    assert_eq!(k.skipped_lines(), 0);
    assert_eq!(k.modules().collect::<Vec<_>>(), ["__builtin__ftrace"]);
    let text = std::fs::read_to_string(&path).unwrap();
    agree_with_reference(&k, &text, 0x2545f4914f6cdd1d);
}

#[test]
fn synthetic_agrees_with_reference() {
    let path = fixture("synthetic.txt");
    let k = Kallsyms::open(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    agree_with_reference(&k, &text, 7);
}

/// Needs root (CAP_SYSLOG and kptr_restrict < 2) for real addresses; skipped otherwise.
#[test]
fn live_proc_kallsyms_agrees_with_reference() {
    let text = match std::fs::read_to_string(PROC_KALLSYMS) {
        Ok(text) => text,
        Err(e) => {
            writeln_stderr(format_args!(
                "skipped: {PROC_KALLSYMS} is not readable: {e}"
            ));
            return;
        }
    };
    let k = match Kallsyms::open(PROC_KALLSYMS) {
        Ok(k) => k,
        Err(e) if e.to_string().contains("kptr_restrict") => {
            writeln_stderr(format_args!("skipped: {e}"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    // The file is read twice; a module loaded in between would change it.
    if std::fs::read_to_string(PROC_KALLSYMS).ok().as_ref() != Some(&text) {
        writeln_stderr(format_args!(
            "skipped: {PROC_KALLSYMS} changed while the test read it"
        ));
        return;
    }
    assert_eq!(k.skipped_lines(), 0);
    agree_with_reference(&k, &text, 0x853c49e6748fea9b);
}

/// A vmlinux with symbols and DWARF, matched to kallsyms by its `_stext`: `c-pie-g` plays
/// vmlinux (`support::fake_vmlinux`), the kallsyms text lists its functions moved by a
/// made-up KASLR offset into the kernel half, plus one module's symbols.
#[test]
fn vmlinux_names_and_source_lines_after_the_kaslr_offset() {
    use stacksym::kernel::Vmlinux;
    let test = "vmlinux_names_and_source_lines_after_the_kaslr_offset";
    let offset: u64 = 0xffff_ffff_8000_0000 + 0x1e0_0000;
    let Some((_dir, vmlinux_path, mut text)) = support::fake_vmlinux(test, offset) else {
        return;
    };
    text += "ffffffffc0001000 t mod_fn\t[mymod]\nffffffffc0001100 t mod_end\t[mymod]\n";
    let kallsyms = Kallsyms::from_bytes("kallsyms-for-vmlinux", text.clone()).expect("parses");
    let vmlinux = Vmlinux::new(&vmlinux_path, &kallsyms).expect("matched by _stext");
    assert_eq!(vmlinux.anchor(), Some("_stext"));
    assert_eq!(vmlinux.kaslr_offset(), stacksym::LoadBias(offset));
    let kallsyms_path = vmlinux_path.with_file_name("kallsyms");
    std::fs::write(&kallsyms_path, &text).unwrap();

    let checksum = support::nm_addr(&vmlinux_path, "checksum");
    let addrs = [
        0x12c4 + offset,
        checksum + 2 + offset,
        0xffff_ffff_c000_1004,
        0xffff_ffff_ff00_0000,
    ];
    let symbolizer = stacksym::Symbolizer::builder().build();
    fn kernel<'a>(
        kallsyms: &'a Path,
        vmlinux: Option<&'a Path>,
        kaslr_offset: Option<u64>,
    ) -> stacksym::Source<'a> {
        stacksym::Source::Kernel(stacksym::KernelSource {
            kallsyms: Some(kallsyms),
            vmlinux,
            kaslr_offset: kaslr_offset.map(stacksym::LoadBias),
            modules: None,
        })
    }
    let frames = symbolizer
        .symbolize(
            &kernel(&kallsyms_path, Some(&vmlinux_path), None),
            stacksym::Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&addrs)),
        )
        .expect("symbolized");
    let inlined = frames.get(0).expect("0x12c4 is in checksum");
    assert_eq!(inlined.name, "checksum");
    assert_eq!(inlined.kernel_module, None);
    assert_eq!(inlined.module, Path::new("[kernel.kallsyms]"));
    assert_eq!(inlined.opened_as, Some(vmlinux_path.as_path()));
    let names: Vec<_> = inlined
        .frames
        .iter()
        .map(|f| f.function.as_ref().map(|n| n.raw.as_str()))
        .collect();
    assert_eq!(names, [Some("scale"), Some("checksum")], "{inlined:?}");
    let plain = frames.get(1).expect("checksum+2");
    assert_eq!((plain.name, plain.offset), ("checksum", 2));
    assert!(plain
        .frames
        .last()
        .and_then(|f| f.file.as_deref())
        .is_some_and(|f| f.ends_with("demo.c")));
    let module = frames.get(2).expect("a module symbol");
    assert_eq!(
        (module.name, module.kernel_module),
        ("mod_fn", Some("mymod"))
    );
    assert_eq!(module.module, Path::new("[mymod]"));
    assert!(module.frames.is_empty(), "modules have no vmlinux lines");
    assert!(
        matches!(frames.not_found(3), Some(stacksym::NotFound::NoSymbol)),
        "nothing covers it"
    );
    // The offset given rather than computed: the same answers.
    let given = symbolizer
        .symbolize(
            &kernel(&kallsyms_path, Some(&vmlinux_path), Some(offset)),
            stacksym::Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&addrs)),
        )
        .expect("symbolized");
    assert_eq!(given.get(0), frames.get(0));

    // Without vmlinux: kallsyms names, no lines.
    let frames = symbolizer
        .symbolize(
            &kernel(&kallsyms_path, None, None),
            stacksym::Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&addrs[..1])),
        )
        .expect("symbolized");
    let only = frames.get(0).expect("kallsyms names it");
    assert_eq!(only.name, "checksum");
    assert_eq!(only.origin, stacksym::NameOrigin::Kallsyms);
    assert!(only.frames.is_empty());

    // A vmlinux that cannot be matched: an error naming it.
    let err = symbolizer
        .symbolize(
            &kernel(&kallsyms_path, Some(&support::bin("c-pie-g")), None),
            stacksym::Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&addrs)),
        )
        .expect_err("no _stext");
    assert!(err.to_string().contains("c-pie-g"), "{err}");

    // A file with no anchor: an error naming it.
    let err = Vmlinux::new(support::bin("c-pie-g"), &kallsyms).expect_err("no _stext");
    assert!(err.to_string().contains("c-pie-g"), "{err}");
    assert_eq!(
        Vmlinux::with_kaslr_offset(&vmlinux_path, stacksym::LoadBias(offset))
            .virt_addr(AbsAddr(0x12c4 + offset))
            .0,
        0x12c4
    );
}

/// The symbolizer parses a kallsyms file once and keeps it; it reads it again when an
/// address it is asked about is in no symbol and its copy is older than `KALLSYMS_MIN_AGE`,
/// as when a module is loaded (`/proc/kallsyms` keeps size 0 and one mtime, so only unknown
/// addresses tell). Simulated with a regular file rewritten to the same length and given back
/// its old mtime, so its identity does not change either.
#[test]
fn symbolizer_caches_kallsyms_and_rereads_for_unknown_addresses() {
    use stacksym::{Input, KernelSource, NotFound, Source};
    let dir = tempfile::tempdir().expect("a temporary dir");
    let path = dir.path().join("kallsyms");
    let before = "ffffffff81000000 T _stext\nffffffff81000100 T do_work\n\
                  ffffffffc0001000 t old_fn\t[modaa]\nffffffffc0001100 t old_end\t[modaa]\n";
    let after = "ffffffff81000000 T _stext\nffffffff81000100 T do_work\n\
                 ffffffffc0009000 t new_fn\t[modbb]\nffffffffc0009100 t new_end\t[modbb]\n";
    assert_eq!(before.len(), after.len());
    std::fs::write(&path, before).unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();

    let symbolizer = stacksym::Symbolizer::builder().build();
    let source = Source::Kernel(KernelSource {
        kallsyms: Some(&path),
        ..KernelSource::default()
    });
    let known = [0xffff_ffff_8100_0104u64];
    for _ in 0..2 {
        let symbols = symbolizer
            .symbolize(
                &source,
                Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&known)),
            )
            .unwrap();
        assert_eq!(symbols.get(0).map(|s| s.name), Some("do_work"));
    }
    let stats = symbolizer.stats().kallsyms;
    assert_eq!((stats.hits, stats.misses), (1, 1), "parsed once");

    // A module is loaded: same size, same mtime.
    std::fs::write(&path, after).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let new_module = [0xffff_ffff_c000_9004u64];
    let young = symbolizer
        .symbolize(
            &source,
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&new_module)),
        )
        .unwrap();
    assert!(
        matches!(young.not_found(0), Some(NotFound::NoSymbol)),
        "not read again before KALLSYMS_MIN_AGE: {young:?}"
    );
    std::thread::sleep(stacksym::symbolize::KALLSYMS_MIN_AGE);
    let fresh = symbolizer
        .symbolize(
            &source,
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&new_module)),
        )
        .unwrap();
    assert_eq!(
        fresh.get(0).map(|f| (f.name, f.kernel_module)),
        Some(("new_fn", Some("modbb"))),
        "read again"
    );
    symbolizer.clear();
    assert_eq!(
        symbolizer.stats().kallsyms.hits,
        3,
        "each call after the first found it"
    );
}

/// Hidden kernel addresses (kptr_restrict: every address 0) are a reason per address, not a
/// failed batch: a tracer's user frames of the same stack still answer.
#[test]
fn hidden_kernel_addresses_are_a_reason_per_address() {
    use stacksym::{Input, KernelSource, NotFound, Source};
    let path = fixture("zeroed.txt");
    let source = Source::Kernel(KernelSource {
        kallsyms: Some(&path),
        ..KernelSource::default()
    });
    let symbols = stacksym::Symbolizer::builder()
        .build()
        .symbolize(
            &source,
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&[
                0xffff_ffff_8100_0104,
                0xffff_ffff_8100_0000,
            ])),
        )
        .unwrap();
    for i in 0..2 {
        let Some(NotFound::KernelAddrsHidden(e)) = symbols.not_found(i) else {
            panic!("{symbols:?}")
        };
        assert!(e.to_string().contains("kptr_restrict"), "{e}");
    }
}

// ----------------------------------------------------------------------------------------
// Kernel modules' .ko files. Source lines are compared with llvm-symbolizer in tests/dwarf.rs
// (`module_addresses_from_kallsyms_and_sysfs_agree_with_llvm_symbolizer`); these tests are
// about finding the file and falling back when it cannot be used.

mod modules {
    use std::path::{Path, PathBuf};

    use stacksym::kernel::{Kallsyms, KernelModules, ModuleSections};
    use stacksym::InlineFrame;
    use stacksym::{AbsAddr, Error, Input, KernelSource, Source, Symbolizer};

    const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");

    /// `kmod_demo` as testdata/kallsyms/kmod-demo.kallsyms lists it (the kmod-demo.ko
    /// fixture loaded at testdata/kmod/sys/module/kmod_demo/sections/).
    fn kallsyms() -> Kallsyms {
        Kallsyms::open(Path::new(TESTDATA).join("kallsyms/kmod-demo.kallsyms")).unwrap()
    }

    fn sysfs() -> PathBuf {
        Path::new(TESTDATA).join("kmod/sys/module")
    }

    /// Running addresses of every `kmod_demo` text symbol, 3 bytes in.
    fn module_addrs(kallsyms: &Kallsyms) -> Vec<u64> {
        let addrs: Vec<u64> = kallsyms
            .symbols()
            .filter(|sym| sym.module == Some("kmod_demo") && sym.is_text())
            .map(|sym| sym.addr.0 + 3)
            .collect();
        assert!(addrs.len() >= 5, "the fixture lists the module's functions");
        addrs
    }

    /// What these tests compare of a kernel answer (not the paths it was opened through,
    /// which differ between the stripped and unstripped fixtures' dirs).
    #[derive(Debug, PartialEq)]
    struct KernelFrame {
        name: String,
        offset: u64,
        size: u64,
        module: Option<String>,
        frames: Vec<InlineFrame>,
    }

    fn symbolize(
        symbolizer: &Symbolizer,
        _kallsyms: &Kallsyms,
        modules: &KernelModules,
        addrs: &[u64],
    ) -> Vec<KernelFrame> {
        let kallsyms = Path::new(TESTDATA).join("kallsyms/kmod-demo.kallsyms");
        let source = Source::Kernel(KernelSource {
            kallsyms: Some(&kallsyms),
            modules: Some(modules),
            ..KernelSource::default()
        });
        let symbols = symbolizer
            .symbolize(
                &source,
                Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(addrs)),
            )
            .unwrap();
        symbols
            .iter()
            .map(|sym| {
                let sym = sym.expect("kallsyms names every module text address");
                KernelFrame {
                    name: sym.name.to_string(),
                    offset: sym.offset,
                    size: sym.size,
                    module: sym.kernel_module.map(str::to_string),
                    frames: sym.frames.to_vec(),
                }
            })
            .collect()
    }

    /// A directory holding `files` (name, bytes).
    fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        dir
    }

    fn ko(name: &str) -> Vec<u8> {
        std::fs::read(Path::new(TESTDATA).join("bin").join(name)).unwrap()
    }

    #[test]
    fn module_file_gives_sizes_and_lines_kallsyms_has_not() {
        let kallsyms = kallsyms();
        let text = std::fs::read_to_string(Path::new(TESTDATA).join("kallsyms/kmod-demo.kallsyms"))
            .unwrap();
        let addrs = module_addrs(&kallsyms);
        let modules = KernelModules::new(vec![Path::new(TESTDATA).join("bin")], sysfs());
        let frames = symbolize(&Symbolizer::builder().build(), &kallsyms, &modules, &addrs);
        assert!(modules.problems().is_empty(), "{:?}", modules.problems());
        for (frame, addr) in frames.iter().zip(&addrs) {
            assert_eq!(frame.module.as_deref(), Some("kmod_demo"));
            assert_eq!(frame.offset, 3, "{addr:#x} {frame:?}");
            // st_size from the .ko (kallsyms only bounds a symbol by the next one).
            assert!(frame.size > 3 && frame.size < 0x1000, "{addr:#x} {frame:?}");
            assert!(!frame.frames.is_empty(), "{addr:#x}: no lines: {frame:?}");
            let file = frame.frames[0].file.as_deref().unwrap_or_default();
            assert!(file.contains("src/kmod/"), "{addr:#x}: file {file}");
            // kallsyms' own name for the address, or another name the file lists at the
            // same start (its index keeps one: `kmod_demo_exit`, the .ko's index the
            // global `cleanup_module`).
            let from_kallsyms = kallsyms.find_symbol(AbsAddr(*addr)).unwrap().unwrap();
            let start = format!("{:016x} ", from_kallsyms.addr);
            let names_at_start: Vec<&str> = text
                .lines()
                .filter(|line| line.starts_with(&start))
                .filter_map(|line| line.split_whitespace().nth(2))
                .collect();
            assert!(
                names_at_start.contains(&frame.name.as_str()),
                "{addr:#x}: {} is not among kallsyms' {names_at_start:?}",
                frame.name
            );
        }
    }

    #[test]
    fn unreadable_sections_keep_kallsyms_names_and_say_why() {
        let kallsyms = kallsyms();
        let addrs = module_addrs(&kallsyms);
        let no_sysfs = tempfile::tempdir().unwrap();
        let modules = KernelModules::new(vec![Path::new(TESTDATA).join("bin")], no_sysfs.path());
        let frames = symbolize(&Symbolizer::builder().build(), &kallsyms, &modules, &addrs);
        for (frame, addr) in frames.iter().zip(&addrs) {
            let from_kallsyms = kallsyms.find_symbol(AbsAddr(*addr)).unwrap().unwrap();
            assert_eq!(frame.name, from_kallsyms.name);
            assert!(frame.frames.is_empty());
        }
        let problems = modules.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        let (name, error) = &problems[0];
        assert_eq!(name, "kmod_demo");
        assert!(matches!(error, Error::KernelModule { .. }), "{error:?}");
        assert!(error.to_string().contains("root"), "{error}");
    }

    #[test]
    fn module_of_another_build_is_refused() {
        // The loaded module's build-id note (sysfs notes/) differs from the file's.
        let mut sections = ModuleSections::read(&sysfs(), "kmod_demo").unwrap();
        assert!(sections.build_id().is_some(), "the fixture has the note");
        let listed: Vec<(String, AbsAddr)> = sections
            .sections()
            .map(|(name, addr)| (name.to_string(), addr))
            .collect();
        sections = ModuleSections::new("kmod_demo", listed, Some(vec![0xab; 20]));
        let err = stacksym::kernel::LoadedModule::new(
            Path::new(TESTDATA).join("bin/kmod-demo.ko"),
            &sections,
        )
        .unwrap_err();
        assert!(err.to_string().contains("build-id"), "{err}");
    }

    #[test]
    fn stripped_module_takes_lines_from_its_debug_file() {
        let kallsyms = kallsyms();
        let addrs = module_addrs(&kallsyms);
        // As distributions ship it: debug info stripped, the DWARF under .build-id/.
        let dir = dir_with(&[("kernel/extra/kmod_demo.ko", &ko("kmod-demo.stripped.ko"))]);
        let modules = KernelModules::new(vec![dir.path().to_path_buf()], sysfs());
        let without = symbolize(&Symbolizer::builder().build(), &kallsyms, &modules, &addrs);
        assert!(without.iter().all(|f| f.frames.is_empty() && f.size > 0));
        let symbolizer = Symbolizer::builder()
            .debug_dirs(vec![Path::new(TESTDATA).join("debug")])
            .build();
        let with = symbolize(&symbolizer, &kallsyms, &modules, &addrs);
        assert!(with.iter().all(|f| !f.frames.is_empty()), "{with:?}");
        // The same names and lines as the unstripped module.
        let unstripped = KernelModules::new(vec![Path::new(TESTDATA).join("bin")], sysfs());
        let reference = symbolize(
            &Symbolizer::builder().build(),
            &kallsyms,
            &unstripped,
            &addrs,
        );
        assert_eq!(with, reference);
    }

    #[test]
    fn modules_dep_names_the_file_and_compressed_files_are_read() {
        let kallsyms = kallsyms();
        let addrs = module_addrs(&kallsyms);
        let dir = dir_with(&[
            ("modules.dep", b"kernel/fs/kmod-demo.ko:\n" as &[u8]),
            ("kernel/fs/kmod-demo.ko", &ko("kmod-demo.ko")),
            // Not listed in modules.dep, so not used.
            ("kernel/other/kmod_demo.ko", b"not an ELF file"),
        ]);
        let modules = KernelModules::new(vec![dir.path().to_path_buf()], sysfs());
        assert_eq!(
            modules.file_of("kmod_demo"),
            Some(dir.path().join("kernel/fs/kmod-demo.ko"))
        );
        let frames = symbolize(&Symbolizer::builder().build(), &kallsyms, &modules, &addrs);
        assert!(frames.iter().all(|f| !f.frames.is_empty()));

        // Compressed whole, as distributions ship modules: read as the plain file.
        for (tool, ext) in [("xz", "xz"), ("zstd", "zst"), ("gzip", "gz")] {
            let Some(tool) = super::support::require_tool(
                "modules_dep_names_the_file_and_compressed_files_are_read",
                tool,
                tool,
            ) else {
                continue;
            };
            let out = std::process::Command::new(tool)
                .arg("-c")
                .arg(Path::new(TESTDATA).join("bin/kmod-demo.ko"))
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let name = format!("kernel/fs/kmod_demo.ko.{ext}");
            let dir = dir_with(&[(&name, &out.stdout)]);
            let modules = KernelModules::new(vec![dir.path().to_path_buf()], sysfs());
            let compressed = symbolize(&Symbolizer::builder().build(), &kallsyms, &modules, &addrs);
            assert!(
                modules.problems().is_empty(),
                "{ext}: {:?}",
                modules.problems()
            );
            assert_eq!(compressed, frames, "{ext}");
            // Damaged: the same error as for any unusable file.
            let mut damaged = out.stdout.clone();
            let middle = damaged.len() / 2;
            damaged.truncate(middle);
            let dir = dir_with(&[(&name, &damaged)]);
            let modules = KernelModules::new(vec![dir.path().to_path_buf()], sysfs());
            let names_only = symbolize(&Symbolizer::builder().build(), &kallsyms, &modules, &addrs);
            assert!(names_only.iter().all(|f| f.frames.is_empty()), "{ext}");
            let problems = modules.problems();
            assert!(
                problems[0].1.to_string().contains("does not decompress"),
                "{ext}: {problems:?}"
            );
        }

        let bad = dir_with(&[("kmod_demo.ko", b"\x7fELF garbage" as &[u8])]);
        let modules = KernelModules::new(vec![bad.path().to_path_buf()], sysfs());
        let frames = symbolize(&Symbolizer::builder().build(), &kallsyms, &modules, &addrs);
        assert!(frames.iter().all(|f| f.frames.is_empty()));
        assert_eq!(modules.problems().len(), 1);
    }

    /// A module unloaded and loaded elsewhere: an address outside every section of the
    /// cached match makes `KernelModules` read sysfs again, once the match is a second old.
    #[test]
    fn module_loaded_again_elsewhere_is_matched_again() {
        let sysfs = tempfile::tempdir().unwrap();
        let sections = sysfs.path().join("kmod_demo/sections");
        std::fs::create_dir_all(&sections).unwrap();
        let write_text_at = |addr: u64| {
            std::fs::write(sections.join(".text"), format!("{addr:#x}\n")).unwrap();
        };
        write_text_at(0xffff_ffff_c0a0_1000);
        let modules = KernelModules::new(vec![Path::new(TESTDATA).join("bin")], sysfs.path());
        let first = modules
            .loaded("kmod_demo", AbsAddr(0xffff_ffff_c0a0_1080))
            .unwrap();
        let layout = first.layout_addr(AbsAddr(0xffff_ffff_c0a0_1080)).unwrap();

        write_text_at(0xffff_ffff_c0c0_0000);
        let moved = 0xffff_ffff_c0c0_0080;
        // Within the second: the old match, which does not hold the address.
        let cached = modules.loaded("kmod_demo", AbsAddr(moved)).unwrap();
        assert_eq!(cached.layout_addr(AbsAddr(moved)), None);
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let again = modules.loaded("kmod_demo", AbsAddr(moved)).unwrap();
        assert_eq!(again.layout_addr(AbsAddr(moved)), Some(layout));
        assert_eq!(again.layout_addr(AbsAddr(0xffff_ffff_c0a0_1080)), None);
    }
}
