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
