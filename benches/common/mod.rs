//! What the benches share: the fixed-seed address generator, the way results are read, the
//! median of interleaved rounds, and the command-line mode. `mod common;` in each bench.
#![allow(dead_code)]

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
