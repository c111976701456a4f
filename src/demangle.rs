//! Demangling of C++ (Itanium) and Rust (legacy and v0) symbol names.
//!
//! Rust legacy names are also valid Itanium names, so Rust is tried first: `rustc-demangle`
//! recognizes its own hash suffix and v0 prefix. The Rust hash (`::h0123…`) is dropped, as
//! perf and llvm-symbolizer do. Names that neither demangler accepts are returned unchanged.

use std::borrow::Cow;

/// The largest name handed to a demangler. Real mangled names stay far below this; the cap
/// bounds the time and memory hostile input can cost.
const MAX_MANGLED_LEN: usize = 64 * 1024;

/// Demangles `name`, or returns it unchanged when it is not a mangled name. A suffix this
/// crate adds (`@plt`) is kept after the demangled name.
pub fn demangle(name: &str) -> Cow<'_, str> {
    let (stem, suffix) = match name.strip_suffix("@plt") {
        Some(stem) => (stem, "@plt"),
        None => (name, ""),
    };
    match demangle_stem(stem) {
        Some(demangled) => Cow::Owned(demangled + suffix),
        None => Cow::Borrowed(name),
    }
}

fn demangle_stem(name: &str) -> Option<String> {
    if name.len() > MAX_MANGLED_LEN {
        return None;
    }
    if let Ok(rust) = rustc_demangle::try_demangle(name) {
        // `{:#}` leaves out the hash.
        return Some(format!("{rust:#}"));
    }
    if name.starts_with("_Z") {
        let symbol = cpp_demangle::Symbol::new(name).ok()?;
        let options = cpp_demangle::DemangleOptions::default();
        return symbol.demangle_with_options(&options).ok();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn demangles_cpp_rust_and_keeps_the_rest() {
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(
            demangle("_ZN3std2io5stdio6_print17h1234567890abcdefE"),
            "std::io::stdio::_print"
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate4main"), "mycrate::main");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Z"), "_Z");
        assert_eq!(demangle("_Z3fooi@plt"), "foo(int)@plt");
    }
}
