//! What the benches share: the fixed-seed address generator, the way results are read, the
//! median of interleaved rounds, the command-line mode, and the system libc with its debug
//! file. `mod common;` in each bench.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use object::{Object, ObjectSymbol, SymbolKind};

/// The system libc, whose DWARF is in libc6-dbg's debug file.
pub const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";
/// Where libc6-dbg puts it.
pub const DEBUG_DIR: &str = "/usr/lib/debug";

/// libc's debug file, by the build-id of libc.so.6 (read with the object crate).
pub fn libc_debug_file() -> Result<PathBuf, String> {
    let bytes = std::fs::read(LIBC).map_err(|e| format!("{LIBC}: {e}"))?;
    let file = object::File::parse(&*bytes).map_err(|e| format!("{LIBC}: {e}"))?;
    let id = file
        .build_id()
        .ok()
        .flatten()
        .ok_or_else(|| format!("{LIBC} has no build-id"))?;
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let path = PathBuf::from(format!(
        "{DEBUG_DIR}/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} does not exist (apt-get install libc6-dbg)",
            path.display()
        ))
    }
}

/// `count` random addresses inside sized FUNC symbols of `path`'s symbol tables: a
/// function picked uniformly (fixed-seed xorshift), then an offset inside it.
pub fn function_addresses(path: &Path, count: usize, seed: u64) -> Result<Vec<u64>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = object::File::parse(&*bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut funcs: Vec<(u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.is_definition())
        .map(|s| (s.address(), s.size()))
        .collect();
    funcs.sort_unstable();
    funcs.dedup();
    if funcs.is_empty() {
        return Err(format!("{} has no sized functions", path.display()));
    }
    let mut rng = XorShift(seed);
    Ok((0..count)
        .map(|_| {
            let (start, size) = funcs[(rng.next() % funcs.len() as u64) as usize];
            start + rng.next() % size
        })
        .collect())
}

/// Fixed-seed xorshift64 (the same seed gives the same addresses in every run).
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Reads a name as printing would: its length and last byte (so a peer that could answer
/// without touching the bytes is not credited for it).
pub fn consume(name: &str) -> usize {
    name.len() + usize::from(name.as_bytes().last().copied().unwrap_or(0))
}

/// The median of `values` (the upper one of an even count); `None` when there are none.
pub fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> Option<T> {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    values.get(values.len() / 2).copied()
}

/// How the bench was started: `(listing, quick)`. `cargo bench -- --list` lists and runs
/// nothing; `--test` (and a plain `cargo test` run of the bench target) runs each part once.
pub fn mode() -> (bool, bool) {
    let args: Vec<String> = std::env::args().collect();
    let listing = args.iter().any(|a| a == "--list");
    let quick = args.iter().any(|a| a == "--test") || !args.iter().any(|a| a == "--bench");
    (listing, quick)
}

/// What a summary line says about a quick run (`--test`): its one round is indicative only.
pub fn quick_note(quick: bool) -> &'static str {
    if quick {
        ", quick run: indicative only"
    } else {
        ""
    }
}

/// The benches' criterion settings: 10 samples, 300 ms of warm-up, `measurement` per
/// function, no plots; the command line's options on top.
pub fn criterion(measurement: std::time::Duration) -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(10)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(measurement)
        .without_plots()
        .configure_from_args()
}

/// The `stacksym` tool (the workspace crate `cli/`), built in this bench's profile (release
/// under `cargo bench`, debug under `cargo test --benches`): `target/<profile>/stacksym`.
/// Its subcommand (`symbolize`, `perf`, `pstack`) is the caller's first argument.
pub fn build_tool() -> Result<PathBuf, String> {
    let bench_exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // target/<profile>/deps/BENCH-HASH -> target/<profile>
    let profile_dir = bench_exe
        .parent()
        .and_then(Path::parent)
        .ok_or("the bench is not in target/<profile>/deps")?;
    let profile: &[&str] = if profile_dir.file_name() == Some(std::ffi::OsStr::new("debug")) {
        &[]
    } else {
        &["--release"]
    };
    let status = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "stacksym-cli",
            "--bin",
            "stacksym",
        ])
        .args(profile)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    let exe = profile_dir.join("stacksym");
    if !status.success() || !exe.is_file() {
        return Err(format!(
            "cargo build -p stacksym-cli --bin stacksym {}: {status}",
            profile.join(" ")
        ));
    }
    Ok(exe)
}
