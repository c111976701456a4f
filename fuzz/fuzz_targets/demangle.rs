//! Arbitrary bytes as a symbol name: demangling never panics, and a Rust v0 name (`_R…`)
//! demangles exactly as `rustc-demangle` prints it with `{:#}` (or stays as it is where
//! `rustc-demangle` refuses it), whether stacksym's own v0 printer or its fallback answered.
//!
//! Run from the repository root, seeded with real names (the corpus dir must exist):
//!   mkdir -p fuzz/corpus/demangle
//!   cargo +nightly fuzz run demangle fuzz/corpus/demangle testdata/fuzz/demangle -- -max_total_time=60

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(name) = std::str::from_utf8(data) else {
        return;
    };
    let ours = stacksym::demangle::demangle(name);
    // stacksym keeps an `@plt` suffix and leaves names over 64 KiB alone.
    if name.starts_with("_R") && !name.ends_with("@plt") && name.len() <= 64 * 1024 {
        let theirs = match rustc_demangle::try_demangle(name) {
            Ok(demangled) => format!("{demangled:#}"),
            Err(_) => name.to_string(),
        };
        assert_eq!(ours, theirs, "{name}");
    }
});
