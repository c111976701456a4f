//! Helpers the unit tests share.

/// A fixed-seed stream of pseudo-random numbers (xorshift64, shifts 13, 7, 17): the same on
/// every run, so a failure can be reproduced. `seed` must not be 0.
pub(crate) fn xorshift64(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
