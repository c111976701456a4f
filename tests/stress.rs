//! Stress of one shared `Symbolizer`: 8 threads symbolize random addresses (source lines on)
//! with `max_open_files = 2` and caches of one process and one kallsyms, while
//!
//! - another thread truncates and rewrites, in place, two copies of testdata binaries that
//!   this test process has mapped (each time with the contents of one of two binaries), and
//!   the threads symbolize this process's addresses in those mappings;
//! - another starts short-lived processes (c-wait, which exits when its stdin closes) whose
//!   addresses are symbolized while they live and after they are gone.
//!
//! Every answer must equal a single-threaded run's answer for the same file contents (for a
//! rewritten copy: either binary's), or be a clean error (a copy read while it changed, a
//! process gone); no panic, no deadlock (the run ends within its time plus a margin), and
//! the cache never holds more than 2 files.
//!
//! Takes `STACKSYM_STRESS_SECS` seconds (default 8); set it high for a soak.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stacksym::elf::ElfFile;
use stacksym::process::Process;
use stacksym::NotFound;
use stacksym::{Input, Source, Symbolizer};

const THREADS: usize = 8;
const MAX_OPEN_FILES: usize = 2;
/// Addresses per file in the pool the threads draw from.
const PER_FILE: usize = 64;

fn bin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/bin")
        .join(name)
}

/// A tiny deterministic generator (xorshift64*), so a failure can be replayed by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// An answer, as compared: the name, the offset and every frame, or nothing.
fn shown_sym(sym: Option<stacksym::Sym<'_>>) -> Option<String> {
    sym.map(|s| format!("{}+{:#x} {:?}", s.name, s.offset, s.frames))
}

/// The answer at `index` of a process batch: as [`shown_sym`], or the error of a file that
/// could not be read.
fn shown_process_answer(
    results: &stacksym::Symbols,
    index: usize,
) -> Result<Option<String>, String> {
    match results.result(index) {
        Ok(sym) => Ok(shown_sym(Some(sym))),
        Err(NotFound::NoSymbol) => Ok(None),
        Err(NotFound::FileError(e)) => Err(e.to_string()),
        Err(other) => panic!("unexpected {other:?}"),
    }
}

/// The one façade call for a process's absolute addresses.
fn in_process(
    symbolizer: &Symbolizer,
    process: &Process,
    addrs: &[u64],
) -> stacksym::Result<stacksym::Symbols> {
    symbolizer.symbolize(
        &Source::process(process),
        Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(addrs)),
    )
}

/// File offsets in the executable segments of `path`, picked by `rng`.
fn offsets_in(path: &Path, rng: &mut Rng, count: usize) -> Vec<u64> {
    let elf = ElfFile::open(path).unwrap();
    let loads: Vec<_> = elf
        .segments()
        .loads()
        .iter()
        .filter(|s| s.executable && s.file_size > 0)
        .cloned()
        .collect();
    assert!(!loads.is_empty(), "{}: no code", path.display());
    (0..count)
        .map(|_| {
            let seg = &loads[rng.below(loads.len())];
            seg.file_offset.0 + rng.next() % seg.file_size
        })
        .collect()
}

/// The single-threaded answers of `path` at `offsets`, from a symbolizer of its own.
fn reference(path: &Path, offsets: &[u64]) -> Vec<Option<String>> {
    let symbolizer = Symbolizer::builder().build();
    let symbols = symbolizer
        .symbolize(
            &Source::Elf { path },
            Input::FileOffsets(stacksym::FileOffset::from_raw_slice(offsets)),
        )
        .unwrap();
    (0..offsets.len())
        .map(|i| shown_sym(symbols.get(i)))
        .collect()
}

/// A copy of a binary that this process maps (whole, from offset 0), and that the rewriting
/// thread rewrites in place with the contents of `versions[0]` or `versions[1]`.
struct RewrittenCopy {
    path: PathBuf,
    versions: [Vec<u8>; 2],
    /// Kept mapped (never read by this test: the rewrites would make it SIGBUS).
    map: memmap2::Mmap,
    offsets: Vec<u64>,
    /// Per version, the reference answers at `offsets`.
    want: [Vec<Option<String>>; 2],
}

fn duration() -> Duration {
    let secs = std::env::var("STACKSYM_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    Duration::from_secs(secs)
}

/// The system's libc, from `ldd` of c-wait (skipped if `ldd` is missing).
fn system_libc() -> Option<PathBuf> {
    let out = std::process::Command::new("ldd")
        .arg(bin("c-wait"))
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let (name, rest) = l.trim().split_once(" => ")?;
        let path = rest.split(" (").next()?.trim();
        name.starts_with("libc.so").then(|| PathBuf::from(path))
    })
}

#[test]
fn shared_symbolizer_under_stress() {
    let run_for = duration();
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    let scratch = tempfile::tempdir().unwrap();

    // ---- Files symbolized by path, and their single-threaded answers ---------------------
    let mut paths: Vec<PathBuf> = [
        "c-pie-g",
        "cpp-clang-O2-g",
        "c-gcc-O2-g-dwarf4",
        "rust-O2-g",
        "libversioned.so",
        "c-split-dwarf",
    ]
    .iter()
    .map(|n| bin(n))
    .collect();
    match system_libc() {
        Some(libc) => paths.push(libc),
        None => {
            assert!(std::env::var_os("CI").is_none(), "ldd is needed in CI");
            eprintln!("SKIPPED part: no libc found by ldd; testdata binaries only");
        }
    }
    let by_path: Vec<(PathBuf, Vec<u64>, Vec<Option<String>>)> = paths
        .into_iter()
        .map(|path| {
            let offsets = offsets_in(&path, &mut rng, PER_FILE);
            let want = reference(&path, &offsets);
            (path, offsets, want)
        })
        .collect();

    // ---- Copies this process maps, rewritten in place while symbolized --------------------
    let pairs = [
        ("c-pie-g", "c-gcc-O2-g-dwarf4"),
        ("cpp-clang-O2-g", "c-clang-O2-g"),
    ];
    let copies: Vec<RewrittenCopy> = pairs
        .iter()
        .enumerate()
        .map(|(i, (a, b))| {
            let versions = [
                std::fs::read(bin(a)).unwrap(),
                std::fs::read(bin(b)).unwrap(),
            ];
            let path = scratch.path().join(format!("copy-{i}"));
            std::fs::write(&path, &versions[0]).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            // SAFETY: read-only; this test never reads the mapping (it only gives the copy
            // addresses in this process), so truncating the file cannot fault here.
            let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
            let shorter = versions[0].len().min(versions[1].len()) as u64;
            let offsets: Vec<u64> = offsets_in(&bin(a), &mut rng, PER_FILE)
                .into_iter()
                .filter(|&o| o < shorter)
                .collect();
            let want = [reference(&bin(a), &offsets), reference(&bin(b), &offsets)];
            RewrittenCopy {
                path,
                versions,
                map,
                offsets,
                want,
            }
        })
        .collect();
    let copies = Arc::new(copies);

    let symbolizer = Arc::new(
        Symbolizer::builder()
            .max_open_files(NonZeroUsize::new(MAX_OPEN_FILES).unwrap())
            .max_cached_processes(NonZeroUsize::MIN)
            .max_cached_kallsyms(NonZeroUsize::MIN)
            .build(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let clean_errors = Arc::new(AtomicU64::new(0));
    let by_path = Arc::new(by_path);
    let me = Process::new(std::process::id());

    // ---- The rewriter --------------------------------------------------------------------
    let rewriter = {
        let (copies, stop) = (Arc::clone(&copies), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut rng = Rng(0x5eed_0000_0002);
            let mut rewrites = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let copy = &copies[rng.below(copies.len())];
                let version = &copy.versions[rng.below(2)];
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&copy.path)
                    .unwrap();
                file.set_len(0).unwrap();
                // Written in pieces, so readers meet half-written files too.
                for piece in version.chunks(64 * 1024) {
                    std::io::Write::write_all(&mut &file, piece).unwrap();
                }
                rewrites += 1;
                std::thread::sleep(Duration::from_millis(rng.below(5) as u64));
            }
            rewrites
        })
    };

    // ---- Short-lived processes -----------------------------------------------------------
    let spawner = {
        let (symbolizer, stop) = (Arc::clone(&symbolizer), Arc::clone(&stop));
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut lives = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut child = std::process::Command::new(bin("c-wait"))
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let stdout = child.stdout.take().unwrap();
                let mut lines = std::io::BufReader::new(stdout).lines();
                let target = lines.find_map(|l| {
                    let l = l.ok()?;
                    let hex = l.strip_prefix("wait_target 0x")?;
                    u64::from_str_radix(hex, 16).ok()
                });
                let process = Process::new(child.id());
                let addrs = [target.unwrap_or(0), target.unwrap_or(0) + 1];
                if let Ok(results) = in_process(&symbolizer, &process, &addrs) {
                    if let Some(sym) = results.get(0) {
                        assert_eq!(sym.name, "wait_target", "{sym:?}");
                    }
                }
                drop(child.stdin.take());
                child.wait().unwrap();
                // Gone now: an error or an answer from the cached maps, never a panic.
                if let Ok(results) = in_process(&symbolizer, &process, &addrs) {
                    if let Some(sym) = results.get(0) {
                        assert_eq!(sym.name, "wait_target", "{sym:?}");
                    }
                }
                lives += 1;
            }
            lives
        })
    };

    // ---- The 8 symbolizing threads -------------------------------------------------------
    let started = Instant::now();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let symbolizer = Arc::clone(&symbolizer);
            let (by_path, copies) = (Arc::clone(&by_path), Arc::clone(&copies));
            let (stop, checked, clean_errors) = (
                Arc::clone(&stop),
                Arc::clone(&checked),
                Arc::clone(&clean_errors),
            );
            let me = me.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(0x5eed_0000_1000 + t as u64);
                while !stop.load(Ordering::Relaxed) {
                    // A batch of up to 16 addresses of one source.
                    let batch = 1 + rng.below(16);
                    if rng.below(3) == 0 {
                        let copy = &copies[rng.below(copies.len())];
                        let picks: Vec<usize> =
                            (0..batch).map(|_| rng.below(copy.offsets.len())).collect();
                        let base = copy.map.as_ptr() as u64;
                        let addrs: Vec<u64> =
                            picks.iter().map(|&i| base + copy.offsets[i]).collect();
                        let results = in_process(&symbolizer, &me, &addrs).unwrap();
                        for (j, &i) in picks.iter().enumerate() {
                            match shown_process_answer(&results, j) {
                                Ok(got) => assert!(
                                    got == copy.want[0][i] || got == copy.want[1][i],
                                    "copy {} offset {:#x}: {got:?} is neither {:?} nor {:?}",
                                    copy.path.display(),
                                    copy.offsets[i],
                                    copy.want[0][i],
                                    copy.want[1][i]
                                ),
                                Err(_) => {
                                    clean_errors.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            checked.fetch_add(1, Ordering::Relaxed);
                        }
                    } else {
                        let (path, offsets, want) = &by_path[rng.below(by_path.len())];
                        let picks: Vec<usize> =
                            (0..batch).map(|_| rng.below(offsets.len())).collect();
                        let batch_offsets: Vec<u64> = picks.iter().map(|&i| offsets[i]).collect();
                        let symbols = symbolizer
                            .symbolize(
                                &Source::Elf { path },
                                Input::FileOffsets(stacksym::FileOffset::from_raw_slice(
                                    &batch_offsets,
                                )),
                            )
                            .unwrap();
                        for (j, &i) in picks.iter().enumerate() {
                            assert_eq!(
                                shown_sym(symbols.get(j)),
                                want[i],
                                "{} offset {:#x}",
                                path.display(),
                                offsets[i]
                            );
                            checked.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    let stats = symbolizer.stats();
                    assert!(stats.open_files <= MAX_OPEN_FILES, "{stats:?}");
                }
            })
        })
        .collect();

    std::thread::sleep(run_for);
    stop.store(true, Ordering::Relaxed);
    // No deadlock: everything ends soon after being told to.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut results = HashMap::new();
    for (i, worker) in workers.into_iter().enumerate() {
        while !worker.is_finished() {
            assert!(
                Instant::now() < deadline,
                "worker {i} did not end: deadlock?"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        worker.join().unwrap();
    }
    for (name, handle) in [("rewriter", rewriter), ("spawner", spawner)] {
        while !handle.is_finished() {
            assert!(Instant::now() < deadline, "{name} did not end: deadlock?");
            std::thread::sleep(Duration::from_millis(20));
        }
        results.insert(name, handle.join().unwrap());
    }
    let stats = symbolizer.stats();
    eprintln!(
        "stress: {:?}, {} answers checked ({} clean errors for copies read while rewritten), \
         {} rewrites, {} short-lived processes; {stats:?}",
        started.elapsed(),
        checked.load(Ordering::Relaxed),
        clean_errors.load(Ordering::Relaxed),
        results["rewriter"],
        results["spawner"],
    );
    assert!(checked.load(Ordering::Relaxed) > 0);
    assert!(stats.open_files <= MAX_OPEN_FILES);
    drop(copies);
}
