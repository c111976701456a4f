//! Symbol-table symbolization of the stable toolchain's `librustc_driver-*.so`: stacksym
//! against blazesym (ELF source, `debug_syms` off, `Input::VirtOffset`) and the addr2line
//! crate (`Loader::find_symbol`, names demangled with `addr2line::demangle_auto`).
//!
//! One run, the same 100,000 random in-function addresses for every peer (a sized `STT_FUNC`
//! symbol picked uniformly with a fixed-seed xorshift, then an offset inside it; the symbols
//! are read with the `object` crate, not through stacksym):
//! - cold: open + index + symbolize all (a new symbolizer / loader per iteration);
//! - warm: symbolize all again with the same symbolizer / loader;
//!
//! mangled and demangled. Every timed iteration reads each result's name (its length and last
//! byte, see [`consume`]) and drops the results, so lazy APIs pay for the names they hand out;
//! the warm `mangled-unread` mode takes only the lengths, to show the bare lookup cost.
//!
//! Before timing, stacksym's answers are compared with both peers' (same name; same symbol
//! start, for names that differ only in which alias of the same code is shown).
//!
//! Run with `cargo bench --bench symtab`; `-- --test` runs each benchmark once. After the
//! criterion groups, 11 interleaved rounds run every peer in turn (so that load from other
//! processes falls on all peers alike), and a summary prints per-address and cold times (the
//! median and minimum of the iterations criterion ran, and the interleaved medians), the
//! ratios against the targets (median of the per-round ratios), and the heap the index
//! takes, measured with a counting global allocator. Last comes the limit a warm pass is
//! measured against: a pass that only reads each address's name, in input order, with the
//! names in hand beforehand (see [`limit_pass`]), and how far stacksym is from it.
//!
//! The library is found through `rustc --print sysroot` with `RUSTUP_TOOLCHAIN=stable` (a
//! rustup proxy honours it; a plain rustc ignores it), falling back to the toolchain cargo
//! ran with; `STACKSYM_BENCH_LIB=/path/to/lib.so` overrides the search. Without the library
//! the bench prints why and does nothing. `STACKSYM_BENCH_NO_CHECK=1` leaves out the checks
//! and the summary (for profiling one benchmark with `--profile-time`).
//! `STACKSYM_BENCH_READ_FILES=1` makes stacksym read files into memory instead of mapping
//! them (`stacksym::elf::read_files_instead_of_mapping`; ARCHITECTURE.md, "SIGBUS").

use std::alloc::{GlobalAlloc, Layout, System};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};
use object::read::elf::Sym;
use object::{elf, Endianness};

/// How many addresses every peer symbolizes.
const ADDRESS_COUNT: usize = 100_000;
/// Fixed seed of the address generator, so every run uses the same addresses.
const SEED: u64 = 0x5eed_cafe_f00d_d00d;

// ---------------------------------------------------------------------------------------------
// Counting allocator: measures heap bytes held by an index, only while switched on.

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn count_alloc(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        let now = CURRENT.fetch_add(size as isize, Ordering::Relaxed) + size as isize;
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

fn count_dealloc(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        CURRENT.fetch_sub(size as isize, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to `System` unchanged; the counters have no effect on it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_alloc(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_alloc(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count_dealloc(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_dealloc(layout.size());
        count_alloc(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Heap bytes `f` leaves allocated (net) and the peak above the start while it ran. Frees of
/// memory allocated before the window would count negative; the measured code frees none.
fn heap_of<T>(f: impl FnOnce() -> T) -> (T, isize, isize) {
    CURRENT.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let value = f();
    COUNTING.store(false, Ordering::SeqCst);
    (
        value,
        CURRENT.load(Ordering::SeqCst),
        PEAK.load(Ordering::SeqCst),
    )
}

// ---------------------------------------------------------------------------------------------
// Finding the library and picking addresses.

fn find_library() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("STACKSYM_BENCH_LIB") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "STACKSYM_BENCH_LIB={} is not a file",
                path.display()
            ))
        };
    }
    let mut tried = Vec::new();
    // First the stable toolchain (the issue asks for it), then whatever `rustc` is here.
    for stable in [true, false] {
        let mut command = Command::new("rustc");
        command.args(["--print", "sysroot"]);
        if stable {
            command.env("RUSTUP_TOOLCHAIN", "stable");
        }
        let sysroot = match command.output() {
            Ok(out) if out.status.success() => {
                PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
            }
            Ok(out) => {
                tried.push(format!(
                    "`rustc --print sysroot`{} failed: {}",
                    if stable {
                        " (RUSTUP_TOOLCHAIN=stable)"
                    } else {
                        ""
                    },
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                continue;
            }
            Err(e) => {
                tried.push(format!("cannot run rustc: {e}"));
                continue;
            }
        };
        let lib = sysroot.join("lib");
        let found = std::fs::read_dir(&lib).ok().and_then(|entries| {
            entries.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("librustc_driver-") && n.ends_with(".so"))
            })
        });
        match found {
            Some(path) => return Ok(path),
            None => tried.push(format!("no librustc_driver-*.so in {}", lib.display())),
        }
    }
    Err(tried.join("; "))
}

/// xorshift64*: small, fast, good enough to spread addresses.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0), by widening multiplication.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// `(start, size)` of every defined `STT_FUNC` symbol with a size, read with the `object`
/// crate directly (not through stacksym): `.symtab`, or `.dynsym` if there is no `.symtab`.
fn function_ranges(data: &[u8]) -> Result<Vec<(u64, u64)>, String> {
    let file = object::read::elf::ElfFile64::<Endianness>::parse(data)
        .map_err(|e| format!("object cannot parse the library: {e}"))?;
    let endian = file.endian();
    let mut table = file.elf_symbol_table();
    if table.is_empty() {
        table = file.elf_dynamic_symbol_table();
    }
    let mut ranges: Vec<(u64, u64)> = table
        .symbols()
        .iter()
        .filter(|s| {
            // Not undefined, absolute or common (extended indexes do not occur here).
            s.st_type() == elf::STT_FUNC
                && s.st_size(endian) > 0
                && !s.st_shndx(endian).is_special()
        })
        .map(|s| (s.st_value(endian), s.st_size(endian)))
        .collect();
    // One range per start: aliases are one function. Sorted by (start, size), so the smallest
    // size is kept, and the address is inside every alias.
    ranges.sort_unstable();
    ranges.dedup_by_key(|&mut (start, _)| start);
    if ranges.is_empty() {
        return Err("the library has no sized FUNC symbols".into());
    }
    Ok(ranges)
}

/// How many of `ranges` the addresses fall in (each name is demangled once per symbol by a
/// peer that caches names, so this bounds the demangling work of a cold pass).
fn distinct_ranges(ranges: &[(u64, u64)], addrs: &[u64]) -> usize {
    let hit: HashSet<usize> = addrs
        .iter()
        .map(|&a| ranges.partition_point(|&(start, _)| start <= a) - 1)
        .collect();
    hit.len()
}

fn pick_addresses(ranges: &[(u64, u64)]) -> Vec<u64> {
    let mut rng = XorShift(SEED);
    (0..ADDRESS_COUNT)
        .map(|_| {
            let (start, size) = ranges[rng.below(ranges.len() as u64) as usize];
            start + rng.below(size)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The peers. Each "names" function symbolizes all addresses, reads every name, drops the
// results, and returns a checksum of the names (keeps the work observable).

/// What a caller does with a name, at the least: its length and its last byte. Reading a byte
/// makes every peer bring the name into the cache, as printing or hashing it would; a peer that
/// knows the length without reading the bytes is not credited for names nobody looks at. With
/// `read == false` only the length is taken (the [`UNREAD`] mode).
fn consume(name: &str, read: bool) -> usize {
    if read {
        name.len() + usize::from(name.as_bytes().last().copied().unwrap_or(0))
    } else {
        name.len()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Peer {
    Stacksym,
    Blazesym,
    Addr2line,
}

impl Peer {
    const ALL: [Peer; 3] = [Peer::Stacksym, Peer::Blazesym, Peer::Addr2line];

    fn name(self) -> &'static str {
        match self {
            Peer::Stacksym => "stacksym",
            Peer::Blazesym => "blazesym",
            Peer::Addr2line => "addr2line",
        }
    }
}

/// What a run asks for and what the caller does with the names.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Mode {
    demangle: bool,
    /// Read each name's bytes (see [`consume`]); else only its length.
    read_names: bool,
}

const MANGLED: Mode = Mode {
    demangle: false,
    read_names: true,
};
const DEMANGLED: Mode = Mode {
    demangle: true,
    read_names: true,
};
/// Mangled, the caller looking at each name's length only: what a lookup costs when the
/// peer need not touch the name.
const UNREAD: Mode = Mode {
    demangle: false,
    read_names: false,
};

impl Mode {
    fn name(self) -> &'static str {
        match (self.demangle, self.read_names) {
            (false, true) => "mangled",
            (true, true) => "demangled",
            (false, false) => "mangled-unread",
            (true, false) => "demangled-unread",
        }
    }
}

fn stacksym_new(demangle: bool) -> stacksym::Symbolizer {
    stacksym::Symbolizer::builder()
        .demangle(demangle)
        .source_lines(false) // as blazesym below: symbols only
        .debug_files(false)
        .build()
}

fn stacksym_symbolize(s: &stacksym::Symbolizer, path: &Path, addrs: &[u64]) -> stacksym::Symbols {
    s.symbolize(
        &stacksym::Source::Elf { path },
        stacksym::Input::VirtAddrs(stacksym::VirtAddr::from_raw_slice(addrs)),
    )
    .expect("stacksym symbolizes the library")
}

fn stacksym_names(s: &stacksym::Symbolizer, path: &Path, addrs: &[u64], read: bool) -> usize {
    stacksym_symbolize(s, path, addrs)
        .iter()
        .map(|sym| sym.map_or(0, |sym| consume(sym.name, read)))
        .sum()
}

fn blazesym_new(demangle: bool) -> blazesym::symbolize::Symbolizer {
    // No DWARF is read (debug_syms is off), so code info and inlined functions could not be
    // reported anyway; turning them off gives blazesym its leanest path.
    blazesym::symbolize::Symbolizer::builder()
        .enable_demangling(demangle)
        .enable_code_info(false)
        .enable_inlined_fns(false)
        .build()
}

fn blazesym_source(path: &Path) -> blazesym::symbolize::source::Source<'static> {
    let mut elf = blazesym::symbolize::source::Elf::new(path);
    elf.debug_syms = false;
    blazesym::symbolize::source::Source::Elf(elf)
}

/// `Input::VirtOffset` is blazesym's "address as it appears in the binary" (ELF `st_value`
/// space); `Input::AbsAddr` is a process address and is refused for an ELF source.
fn blazesym_symbolize<'s>(
    s: &'s blazesym::symbolize::Symbolizer,
    source: &blazesym::symbolize::source::Source<'_>,
    addrs: &[u64],
) -> Vec<blazesym::symbolize::Symbolized<'s>> {
    s.symbolize(source, blazesym::symbolize::Input::VirtOffset(addrs))
        .expect("blazesym symbolizes the library")
}

fn blazesym_names(
    s: &blazesym::symbolize::Symbolizer,
    source: &blazesym::symbolize::source::Source<'_>,
    addrs: &[u64],
    read: bool,
) -> usize {
    blazesym_symbolize(s, source, addrs)
        .iter()
        .map(|r| r.as_sym().map_or(0, |sym| consume(&sym.name, read)))
        .sum()
}

fn addr2line_new(path: &Path) -> addr2line::Loader {
    addr2line::Loader::new(path).expect("addr2line loads the library")
}

/// addr2line returns the raw symbol-table name; for the demangled mode each result is passed
/// to `addr2line::demangle_auto(name, None)` (Rust first, then C++; the Rust hash is left out,
/// as stacksym and blazesym do), once per address: the crate has no name cache.
fn addr2line_name(loader: &addr2line::Loader, addr: u64, demangle: bool) -> Option<Cow<'_, str>> {
    let name = loader.find_symbol(addr)?;
    Some(if demangle {
        addr2line::demangle_auto(Cow::Borrowed(name), None)
    } else {
        Cow::Borrowed(name)
    })
}

fn addr2line_names(loader: &addr2line::Loader, addrs: &[u64], mode: Mode) -> usize {
    addrs
        .iter()
        .map(|&a| {
            addr2line_name(loader, a, mode.demangle).map_or(0, |n| consume(&n, mode.read_names))
        })
        .sum()
}

/// One peer, opened and ready for warm runs.
#[allow(clippy::large_enum_variant)] // one value per benchmark, never moved on a timed path
enum Warm {
    Stacksym(stacksym::Symbolizer),
    Blazesym(
        blazesym::symbolize::Symbolizer,
        blazesym::symbolize::source::Source<'static>,
    ),
    Addr2line(addr2line::Loader),
}

struct Setup<'a> {
    path: &'a Path,
    addrs: &'a [u64],
}

impl Setup<'_> {
    /// Opens `peer` and symbolizes every address once, so the next run is warm.
    fn open_warm(&self, peer: Peer, mode: Mode) -> Warm {
        let warm = match peer {
            Peer::Stacksym => Warm::Stacksym(stacksym_new(mode.demangle)),
            Peer::Blazesym => {
                Warm::Blazesym(blazesym_new(mode.demangle), blazesym_source(self.path))
            }
            Peer::Addr2line => Warm::Addr2line(addr2line_new(self.path)),
        };
        black_box(self.run_warm(&warm, mode));
        warm
    }

    fn run_warm(&self, warm: &Warm, mode: Mode) -> usize {
        let read = mode.read_names;
        match warm {
            Warm::Stacksym(s) => stacksym_names(s, self.path, self.addrs, read),
            Warm::Blazesym(s, source) => blazesym_names(s, source, self.addrs, read),
            Warm::Addr2line(loader) => addr2line_names(loader, self.addrs, mode),
        }
    }

    /// One cold run: open, index, symbolize all, read the names. The time excludes dropping
    /// the symbolizer / loader (unmapping and freeing), which callers do not wait for.
    fn run_cold(&self, peer: Peer, mode: Mode) -> Duration {
        let read = mode.read_names;
        match peer {
            Peer::Stacksym => {
                let start = Instant::now();
                let s = stacksym_new(mode.demangle);
                black_box(stacksym_names(&s, self.path, self.addrs, read));
                let elapsed = start.elapsed();
                drop(s);
                elapsed
            }
            Peer::Blazesym => {
                let start = Instant::now();
                let s = blazesym_new(mode.demangle);
                let source = blazesym_source(self.path);
                black_box(blazesym_names(&s, &source, self.addrs, read));
                let elapsed = start.elapsed();
                drop(s);
                elapsed
            }
            Peer::Addr2line => {
                let start = Instant::now();
                let loader = addr2line_new(self.path);
                black_box(addr2line_names(&loader, self.addrs, mode));
                let elapsed = start.elapsed();
                drop(loader);
                elapsed
            }
        }
    }

    /// Every peer's `(symbol start, name)` for every address, for the agreement check.
    fn all_names(&self, peer: Peer, demangle: bool) -> Vec<Option<(u64, String)>> {
        match peer {
            Peer::Stacksym => {
                let s = stacksym_new(demangle);
                stacksym_symbolize(&s, self.path, self.addrs)
                    .iter()
                    .map(|sym| sym.map(|sym| (sym.addr.raw(), sym.name.to_owned())))
                    .collect()
            }
            Peer::Blazesym => {
                let s = blazesym_new(demangle);
                let source = blazesym_source(self.path);
                blazesym_symbolize(&s, &source, self.addrs)
                    .iter()
                    .map(|r| r.as_sym().map(|sym| (sym.addr, sym.name.to_string())))
                    .collect()
            }
            Peer::Addr2line => {
                let loader = addr2line_new(self.path);
                self.addrs
                    .iter()
                    .map(|&a| {
                        let sym = loader.find_symbol_info(a)?;
                        let name = if demangle {
                            addr2line::demangle_auto(Cow::Borrowed(sym.name()), None)
                        } else {
                            Cow::Borrowed(sym.name())
                        };
                        Some((sym.address(), name.into_owned()))
                    })
                    .collect()
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Timings recorded by the benchmark routines, for the summary.

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    Cold,
    Warm,
}

type Key = (Kind, Peer, Mode);

/// The modes each kind of run is measured in: cold runs read the names; warm runs also
/// measure lookups whose names are not read.
fn modes(kind: Kind) -> &'static [Mode] {
    match kind {
        Kind::Cold => &[MANGLED, DEMANGLED],
        Kind::Warm => &[MANGLED, DEMANGLED, UNREAD],
    }
}

#[derive(Default)]
struct Recorded(RefCell<BTreeMap<Key, Vec<Duration>>>);

impl Recorded {
    fn add(&self, key: Key, d: Duration) {
        self.0.borrow_mut().entry(key).or_default().push(d);
    }

    fn median(&self, key: Key) -> Option<Duration> {
        let map = self.0.borrow();
        let mut v = map.get(&key)?.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        Some(v[v.len() / 2])
    }

    fn min(&self, key: Key) -> Option<Duration> {
        self.0.borrow().get(&key)?.iter().min().copied()
    }

    /// The median over rounds of `theirs[i] / ours[i]` (runs recorded in the same order).
    fn paired_ratio(&self, ours: Key, theirs: Key) -> Option<f64> {
        let map = self.0.borrow();
        let (ours, theirs) = (map.get(&ours)?, map.get(&theirs)?);
        let mut ratios: Vec<f64> = ours
            .iter()
            .zip(theirs)
            .filter(|(o, _)| !o.is_zero())
            .map(|(o, t)| t.as_secs_f64() / o.as_secs_f64())
            .collect();
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_unstable_by(f64::total_cmp);
        Some(ratios[ratios.len() / 2])
    }

    fn count(&self, key: Key) -> usize {
        self.0.borrow().get(&key).map_or(0, Vec::len)
    }
}

// ---------------------------------------------------------------------------------------------

fn truncated(s: &str) -> String {
    if s.chars().count() > 70 {
        format!("{}…", s.chars().take(70).collect::<String>())
    } else {
        s.into()
    }
}

/// Compares stacksym's names with each peer's; returns a rough cold time per peer/mode
/// (including string copies) to size the measurement windows.
///
/// Where several symbols name the same code (identical-code folding, C++ D1/D2 aliases),
/// each peer picks one by its own rule, so names can differ while the symbol found is the
/// same; those are counted apart from real disagreements (another start, or not found).
fn check_agreement(setup: &Setup<'_>) -> BTreeMap<(Peer, bool), Duration> {
    let mut estimates = BTreeMap::new();
    for demangle in [false, true] {
        let mode = if demangle { "demangled" } else { "mangled" };
        let mut names = BTreeMap::new();
        for peer in Peer::ALL {
            let start = Instant::now();
            names.insert(peer, setup.all_names(peer, demangle));
            estimates.insert((peer, demangle), start.elapsed());
        }
        let ours = &names[&Peer::Stacksym];
        let total = ours.len();
        let percent = |n: usize| 100.0 * n as f64 / total as f64;
        for peer in Peer::ALL {
            let unresolved = names[&peer].iter().filter(|n| n.is_none()).count();
            if unresolved > 0 || peer == Peer::Stacksym {
                println!(
                    "check ({mode}): {} resolved {}/{total} addresses",
                    peer.name(),
                    total - unresolved
                );
            }
        }
        for peer in [Peer::Addr2line, Peer::Blazesym] {
            let theirs = &names[&peer];
            let mut alias = Vec::new();
            let mut differ = Vec::new();
            for i in 0..total {
                match (&ours[i], &theirs[i]) {
                    (a, b) if a == b => {}
                    (Some((a, _)), Some((b, _))) if a == b => alias.push(i),
                    _ => differ.push(i),
                }
            }
            let same_name = total - alias.len() - differ.len();
            let same_symbol = total - differ.len();
            println!(
                "check ({mode}): stacksym vs {}: same name {same_name}/{total} ({:.2}%){}; same symbol start {same_symbol}/{total} ({:.2}%){}; {} differ only in which alias of the same code is named",
                peer.name(),
                percent(same_name),
                if percent(same_name) >= 99.0 { "" } else { " -- below 99%" },
                percent(same_symbol),
                if percent(same_symbol) >= 99.0 { "" } else { " -- below 99%" },
                alias.len()
            );
            let show = |what: &str, indexes: &[usize]| {
                if indexes.is_empty() {
                    return;
                }
                println!(
                    "warning: {} addresses {what} ({}); e.g.:",
                    indexes.len(),
                    peer.name()
                );
                let mut shown = HashSet::new();
                for &i in indexes {
                    if shown.len() == 3 {
                        break;
                    }
                    let pair = (&ours[i], &theirs[i]);
                    if shown.insert(pair) {
                        let fmt = |n: &Option<(u64, String)>| match n {
                            Some((start, name)) => {
                                format!("{start:#x} {:?}", truncated(name))
                            }
                            None => "<none>".into(),
                        };
                        println!(
                            "  {:#x}: stacksym {} vs {} {}",
                            setup.addrs[i],
                            fmt(pair.0),
                            peer.name(),
                            fmt(pair.1)
                        );
                    }
                }
            };
            show("resolve to another symbol or to none", &differ);
            show("get another alias at the same start", &alias);
        }
    }
    estimates
}

struct IndexReport {
    symbols: usize,
    code: usize,
    data: usize,
    retained: isize,
    peak: isize,
    open: Duration,
    build: Duration,
    lookup_ns: f64,
}

/// Opens the file with the low-level API, builds its index under the counting allocator and
/// times `ElfFile::find_symbol` for every address (best of 5; the names are not read).
/// Opening and indexing are timed as the best of 3 fresh opens.
fn measure_index(setup: &Setup<'_>) -> IndexReport {
    let open_file =
        || stacksym::elf::ElfFile::open(setup.path).expect("stacksym opens the library");
    let (mut open, mut build) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        let start = Instant::now();
        let file = open_file();
        open = open.min(start.elapsed());
        let start = Instant::now();
        file.index_symbols().expect("stacksym indexes the library");
        build = build.min(start.elapsed());
    }
    let file = open_file();
    let (built, retained, peak) = heap_of(|| file.index_symbols());
    built.expect("stacksym indexes the library");
    let (code, data) = file.symbol_count().expect("indexed");
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        for &a in setup.addrs {
            black_box(file.find_symbol(stacksym::VirtAddr(a)).expect("indexed"));
        }
        best = best.min(start.elapsed().as_nanos() as f64 / setup.addrs.len() as f64);
    }
    IndexReport {
        symbols: code + data,
        code,
        data,
        retained,
        peak,
        open,
        build,
        lookup_ns: best,
    }
}

/// Heap each peer keeps after a cold run (symbolizer / loader alive, results dropped).
fn measure_retained(setup: &Setup<'_>, peer: Peer, mode: Mode) -> isize {
    let (warm, retained, _) = heap_of(|| setup.open_warm(peer, mode));
    drop(warm);
    retained
}

/// "OK" or "MISSED by …" for `ratio` against `target`; when `other` (the same ratio measured
/// another way) gives the other verdict, says so: the machine was busy, the verdict is weak.
fn verdict(ratio: f64, other: Option<f64>, target: f64, higher_is_better: bool) -> String {
    let meets = |r: f64| {
        if higher_is_better {
            r >= target
        } else {
            r <= target
        }
    };
    let text = if meets(ratio) {
        "OK".to_string()
    } else if higher_is_better {
        format!("MISSED by {:.2}x", target / ratio)
    } else {
        format!("MISSED by {:.2}x", ratio / target)
    };
    match other {
        Some(r) if meets(r) != meets(ratio) => {
            format!("{text} (but the criterion medians say otherwise: noisy run)")
        }
        _ => text,
    }
}

fn main() {
    // `STACKSYM_BENCH_READ_FILES=1`: stacksym reads files into memory instead of mapping
    // them (`read_files_instead_of_mapping`), to measure that choice (ARCHITECTURE.md, "SIGBUS").
    if std::env::var_os("STACKSYM_BENCH_READ_FILES").is_some() {
        stacksym::elf::read_files_instead_of_mapping();
    }
    let args: Vec<String> = std::env::args().collect();
    let listing = args.iter().any(|a| a == "--list");
    let quick = args.iter().any(|a| a == "--test") || !args.iter().any(|a| a == "--bench");

    let path = match find_library() {
        Ok(path) => path,
        Err(reason) => {
            println!("symtab bench skipped: librustc_driver-*.so not found ({reason})");
            return;
        }
    };
    // SAFETY: a read-only mapping of a toolchain file nobody rewrites while the bench runs.
    let data = match std::fs::File::open(&path).and_then(|f| unsafe { memmap2::Mmap::map(&f) }) {
        Ok(data) => data,
        Err(e) => {
            println!("symtab bench skipped: cannot read {}: {e}", path.display());
            return;
        }
    };
    let ranges = match function_ranges(&data) {
        Ok(r) => r,
        Err(reason) => {
            println!("symtab bench skipped: {}: {reason}", path.display());
            return;
        }
    };
    drop(data);
    let addrs = pick_addresses(&ranges);
    let setup = Setup {
        path: &path,
        addrs: &addrs,
    };

    let mut estimates = BTreeMap::new();
    let mut index = None;
    // For profiling one benchmark (`perf record ... --profile-time 5 warm/stacksym`), the
    // checks and the summary can be left out.
    let no_check = std::env::var_os("STACKSYM_BENCH_NO_CHECK").is_some();
    if !listing && !no_check {
        println!(
            "library: {} ({:.1} MB, {} sized FUNC symbols at distinct starts); {} addresses in {} of them, seed {SEED:#x}",
            path.display(),
            std::fs::metadata(&path).map_or(0.0, |m| m.len() as f64 / 1e6),
            ranges.len(),
            addrs.len(),
            distinct_ranges(&ranges, &addrs),
        );
        estimates = check_agreement(&setup);
        index = Some(measure_index(&setup));
    }

    let recorded = Recorded::default();
    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .nresamples(10_000)
        .without_plots()
        .configure_from_args();

    for kind in [Kind::Cold, Kind::Warm] {
        let mut group = criterion.benchmark_group(match kind {
            Kind::Cold => "cold",
            Kind::Warm => "warm",
        });
        // Each iteration is long (milliseconds to a second): one iteration per sample.
        group.sampling_mode(SamplingMode::Flat);
        for peer in Peer::ALL {
            for &mode in modes(kind) {
                // Ten samples of one iteration must fit, or criterion warns and stretches.
                let estimate = estimates
                    .get(&(peer, mode.demangle))
                    .copied()
                    .unwrap_or(Duration::from_millis(100));
                let window = (estimate * 20).clamp(Duration::from_secs(1), Duration::from_secs(15));
                group.measurement_time(window);
                let key = (kind, peer, mode);
                let recorded = &recorded;
                let setup = &setup;
                let mut warm: Option<Warm> = None;
                group.bench_function(BenchmarkId::new(peer.name(), mode.name()), |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        match kind {
                            Kind::Cold => {
                                for _ in 0..iters {
                                    let d = setup.run_cold(peer, mode);
                                    recorded.add(key, d);
                                    total += d;
                                }
                            }
                            Kind::Warm => {
                                let warm = warm.get_or_insert_with(|| setup.open_warm(peer, mode));
                                for _ in 0..iters {
                                    let start = Instant::now();
                                    black_box(setup.run_warm(warm, mode));
                                    let d = start.elapsed();
                                    recorded.add(key, d);
                                    total += d;
                                }
                            }
                        }
                        total
                    })
                });
            }
        }
        group.finish();
    }
    criterion.final_summary();

    if listing || no_check {
        return;
    }
    let Some(index) = index else { return };
    let (paired, limit) = interleaved(&setup, if quick { 1 } else { 11 });
    print_summary(&setup, &recorded, &paired, &index, quick);
    print_limit(&setup, &paired, &limit);
}

/// The limit ([`limit_pass`]) per address and how far stacksym's warm mangled pass is from
/// it (the median of the per-round ratios).
fn print_limit(setup: &Setup<'_>, paired: &Recorded, limit: &[Duration]) {
    let ours = paired
        .0
        .borrow()
        .get(&(Kind::Warm, Peer::Stacksym, MANGLED))
        .cloned()
        .unwrap_or_default();
    let mut distance: Vec<f64> = ours
        .iter()
        .zip(limit)
        .filter(|(_, l)| !l.is_zero())
        .map(|(o, l)| o.as_secs_f64() / l.as_secs_f64())
        .collect();
    distance.sort_unstable_by(f64::total_cmp);
    let mut sorted = limit.to_vec();
    sorted.sort_unstable();
    let (Some(median), Some(d)) = (
        sorted.get(sorted.len() / 2),
        distance.get(distance.len() / 2),
    ) else {
        return;
    };
    println!(
        "  limit: each address's name read (length and last byte) in input order, the names in hand beforehand: {:.1} ns/address (median of {} rounds); stacksym warm mangled takes {d:.2}x the limit (median of per-round ratios)",
        median.as_nanos() as f64 / setup.addrs.len() as f64,
        sorted.len()
    );
}

/// After criterion: `rounds` rounds in which every peer runs once per kind and mode, the
/// peers taking turns (the first one rotating), so load from other processes on the machine
/// falls on all peers alike; ratios are then taken round by round.
///
/// Also returns the time of [`limit_pass`] in each warm mangled round.
fn interleaved(setup: &Setup<'_>, rounds: usize) -> (Recorded, Vec<Duration>) {
    let recorded = Recorded::default();
    // The names every peer must at least read, borrowed from a stacksym batch held for it.
    let held_for_limit = stacksym_new(false);
    let held = stacksym_symbolize(&held_for_limit, setup.path, setup.addrs);
    let names: Vec<&str> = held.iter().map(|sym| sym.map_or("", |s| s.name)).collect();
    let mut limit = Vec::new();
    for kind in [Kind::Cold, Kind::Warm] {
        for &mode in modes(kind) {
            let warm: Vec<Option<Warm>> = Peer::ALL
                .iter()
                .map(|&peer| (kind == Kind::Warm).then(|| setup.open_warm(peer, mode)))
                .collect();
            for round in 0..rounds {
                for turn in 0..Peer::ALL.len() {
                    let i = (round + turn) % Peer::ALL.len();
                    let peer = Peer::ALL[i];
                    let d = match &warm[i] {
                        Some(warm) => {
                            // The other peers' passes evicted this one's data from the caches;
                            // an untimed pass brings it back, so "warm" means warm caches too.
                            black_box(setup.run_warm(warm, mode));
                            let start = Instant::now();
                            black_box(setup.run_warm(warm, mode));
                            start.elapsed()
                        }
                        None => setup.run_cold(peer, mode),
                    };
                    recorded.add((kind, peer, mode), d);
                }
                if (kind, mode) == (Kind::Warm, MANGLED) {
                    black_box(limit_pass(&names));
                    let start = Instant::now();
                    black_box(limit_pass(&names));
                    limit.push(start.elapsed());
                }
            }
        }
    }
    (recorded, limit)
}

/// The limit a warm mangled pass is measured against: every address's name already in
/// hand (a pointer and a length, in input order), a pass that only reads each (its length
/// and last byte, as [`consume`]). Every peer must at least do this; the rest of a peer's
/// time is its lookup.
fn limit_pass(names: &[&str]) -> usize {
    names.iter().map(|name| consume(name, true)).sum()
}

fn print_summary(
    setup: &Setup<'_>,
    recorded: &Recorded,
    paired: &Recorded,
    index: &IndexReport,
    quick: bool,
) {
    let n = setup.addrs.len() as f64;
    let per_addr = |d: Duration| d.as_nanos() as f64 / n;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let fmt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    // "median (minimum) | interleaved median" of one kind, peer and mode.
    let cell = |kind: Kind, peer: Peer, mode: Mode| {
        let f = |d: Duration| match kind {
            Kind::Warm => per_addr(d),
            Kind::Cold => ms(d),
        };
        let digits = match kind {
            Kind::Warm => 1,
            Kind::Cold => 2,
        };
        let key = (kind, peer, mode);
        if recorded.count(key) + paired.count(key) == 0 {
            return "-".to_string();
        }
        format!(
            "{} ({}) | {}",
            fmt(recorded.median(key).map(f), digits),
            fmt(recorded.min(key).map(f), digits),
            fmt(paired.median(key).map(f), digits)
        )
    };

    println!();
    println!(
        "=== symtab summary: {} addresses of {} ===",
        setup.addrs.len(),
        setup.path.display()
    );
    if quick {
        println!("(quick test mode: one iteration each, numbers are indicative only)");
    }
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        // Other work on the machine shows up as spread between medians and minimums.
        println!(
            "load average now: {} ({} CPUs)",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
    }
    let rounds = paired.count((Kind::Warm, Peer::Stacksym, MANGLED));
    println!(
        "criterion median (minimum) | median of {rounds} interleaved rounds; open+index = cold - warm (interleaved medians; below 0 when a warm pass is no faster than a cold one)"
    );
    println!(
        "{:<10} {:<15} {:>28} {:>28} {:>13}",
        "peer", "mode", "warm ns/address", "cold ms", "open+index ms"
    );
    for peer in Peer::ALL {
        for &mode in modes(Kind::Warm) {
            // The cold pass also computes names that the warm pass finds cached, so for peers
            // that cache names this includes that work.
            let open = match (
                paired.median((Kind::Warm, peer, mode)),
                paired.median((Kind::Cold, peer, mode)),
            ) {
                (Some(w), Some(c)) => format!("{:.2}", ms(c) - ms(w)),
                _ => "-".into(),
            };
            println!(
                "{:<10} {:<15} {:>28} {:>28} {:>13}",
                peer.name(),
                mode.name(),
                cell(Kind::Warm, peer, mode),
                cell(Kind::Cold, peer, mode),
                open,
            );
        }
    }

    println!();
    println!(
        "stacksym ElfFile: open {:.2} ms, index {:.2} ms (best of 3) for {} symbols ({} code, {} data); find_symbol {:.1} ns/address (best of 5, names not read)",
        index.open.as_secs_f64() * 1e3,
        index.build.as_secs_f64() * 1e3,
        index.symbols,
        index.code,
        index.data,
        index.lookup_ns,
    );
    let core = 16 * index.symbols as isize;
    println!(
        "stacksym index heap (counting allocator): {} bytes = {:.2} bytes/symbol; 16 x {} symbols = {core}, {} more (side tables: block summaries, PLT names, version tables); peak while building {:.1} MB",
        index.retained,
        index.retained as f64 / index.symbols.max(1) as f64,
        index.symbols,
        index.retained - core,
        index.peak as f64 / 1e6,
    );
    let mut held = Vec::new();
    for peer in Peer::ALL {
        for mode in [MANGLED, DEMANGLED] {
            let bytes = measure_retained(setup, peer, mode);
            held.push(format!(
                "{} {} {:.1} MB",
                peer.name(),
                mode.name(),
                bytes as f64 / 1e6
            ));
        }
    }
    println!(
        "heap held after one cold pass (symbolizer kept, results dropped, mapping excluded): {}",
        held.join(", ")
    );

    println!();
    println!(
        "targets (verdict on the median of per-round ratios of the interleaved runs; [ratio of criterion medians]):"
    );
    let ratio_line = |label: &str, ours: Key, theirs: Key, target: f64, higher: bool| {
        let median_ratio = |key: Key| Some(recorded.median(key)?.as_secs_f64());
        let crit = match (median_ratio(ours), median_ratio(theirs)) {
            (Some(o), Some(t)) if o > 0.0 => Some(t / o),
            _ => None,
        };
        let rel = if higher { ">=" } else { "<=" };
        match paired.paired_ratio(ours, theirs).or(crit) {
            Some(r) => println!(
                "  {label}: {r:.2}x [{}] (target {rel} {target}x) {}",
                crit.map_or("-".into(), |c| format!("{c:.2}x")),
                verdict(r, crit, target, higher)
            ),
            None => println!("  {label}: n/a (not run)"),
        }
    };
    for mode in [MANGLED, DEMANGLED, UNREAD] {
        let m = mode.name();
        let ours = |kind| (kind, Peer::Stacksym, mode);
        ratio_line(
            &format!("warm vs addr2line ({m})"),
            ours(Kind::Warm),
            (Kind::Warm, Peer::Addr2line, mode),
            3.0,
            true,
        );
        ratio_line(
            &format!("warm vs blazesym ({m})"),
            ours(Kind::Warm),
            (Kind::Warm, Peer::Blazesym, mode),
            20.0,
            true,
        );
        if modes(Kind::Cold).contains(&mode) {
            ratio_line(
                &format!("cold vs addr2line ({m})"),
                ours(Kind::Cold),
                (Kind::Cold, Peer::Addr2line, mode),
                1.5,
                true,
            );
            ratio_line(
                &format!("cold vs blazesym ({m})"),
                ours(Kind::Cold),
                (Kind::Cold, Peer::Blazesym, mode),
                4.0,
                true,
            );
        }
    }
    ratio_line(
        "stacksym warm demangled / mangled",
        (Kind::Warm, Peer::Stacksym, MANGLED),
        (Kind::Warm, Peer::Stacksym, DEMANGLED),
        1.5,
        false,
    );
    let per_symbol = index.retained as f64 / index.symbols.max(1) as f64;
    println!(
        "  stacksym index bytes/symbol (measured heap, beside the mapping): {per_symbol:.2} (target <= 16) {}",
        verdict(per_symbol, None, 16.0, false)
    );
}
