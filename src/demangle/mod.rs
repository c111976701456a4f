//! Demangling of C++ (Itanium) and Rust (legacy and v0) symbol names.
//!
//! Rust legacy names are also valid Itanium names, so Rust is tried first: a Rust v0 name
//! (`_R…`) by `rust_v0`'s one-pass printer, which prints what `rustc-demangle` prints for
//! the names it knows and leaves the others to it; then `rustc-demangle`, which recognizes
//! its own hash suffix and v0 prefix. The Rust hash (`::h0123…`) is dropped, as
//! perf and llvm-symbolizer do. Names that neither demangler accepts are returned unchanged.
//!
//! C++ goes through `cpp_demangle`, with two repairs where its output differs from
//! `c++filt`'s (measured on libstdc++ and libLLVM, see `tests/agreement.rs`):
//! - thunks (`_ZTh…`, `_ZTv…`, `_ZTc…`) print as `non-virtual thunk to f()`,
//!   `virtual thunk to f()` and `covariant return thunk to f()`;
//! - vtables and VTTs print as `vtable for T` and `VTT for T`, not `{vtable(T)}`;
//! - an empty template parameter pack leaves no empty argument (`Foo<int, >` becomes
//!   `Foo<int>`, a lone `&&` parameter goes; gimli-rs/cpp_demangle#132).
//!
//! Known differences left (cpp_demangle 0.5): a template parameter referenced twice in a
//! constructor can be dropped, a pack expansion can lose its `&&`, a pointer can attach
//! to the wrong part of a nested name, and a construction vtable (`_ZTC`) names its two
//! classes in the opposite order. They affect a few percent of libLLVM's names.

mod rust_v0;

use std::borrow::Cow;
use std::fmt::Write as _;

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
    if let Some(rust) = rust_v0::demangle(name) {
        return Some(rust);
    }
    // The test first: `try_demangle` looks for `.llvm.` in every name before it checks the
    // prefix (about 400 instructions for each C name of libc).
    if let Some(rust) = may_be_rust(name)
        .then(|| rustc_demangle::try_demangle(name).ok())
        .flatten()
    {
        // `{:#}` leaves out the hash. Sized up front: `format!` starts empty and grows
        // the string a few times for every name (a symbol table's worth of names).
        let mut text = String::with_capacity(name.len());
        return write!(text, "{rust:#}").ok().map(|()| text);
    }
    let encoding = name.strip_prefix("_Z")?;
    if let Some((kind, target)) = split_thunk(encoding) {
        return Some(format!(
            "{kind} to {}",
            demangle_cpp(&format!("_Z{target}"))?
        ));
    }
    demangle_cpp(name)
}

/// Whether `rustc_demangle::try_demangle` may take `name` for a Rust symbol: it reads legacy
/// names only after `_ZN`, `ZN` or `__ZN`, and v0 names only after `_R`, `R` or `__R`.
fn may_be_rust(name: &str) -> bool {
    let stem = name
        .strip_prefix("__")
        .or_else(|| name.strip_prefix('_'))
        .unwrap_or(name);
    stem.starts_with("ZN") || stem.starts_with('R')
}

fn demangle_cpp(name: &str) -> Option<String> {
    let symbol = cpp_demangle::Symbol::new(name).ok()?;
    let options = cpp_demangle::DemangleOptions::default();
    let demangled = symbol.demangle_with_options(&options).ok()?;
    Some(drop_empty_pack_artifacts(spell_special_names(demangled)))
}

/// cpp_demangle prints vtables and VTTs as `{vtable(T)}` and `{vtt(T)}`; c++filt and
/// llvm-symbolizer print `vtable for T` and `VTT for T`.
fn spell_special_names(demangled: String) -> String {
    for (braced, spelled) in [("{vtable(", "vtable for "), ("{vtt(", "VTT for ")] {
        if let Some(inner) = demangled
            .strip_prefix(braced)
            .and_then(|rest| rest.strip_suffix(")}"))
        {
            return format!("{spelled}{inner}");
        }
    }
    demangled
}

/// Splits a thunk's special name (`Th<offset>_`, `Tv<offset>_<offset>_`, `Tc<call-offset>
/// <call-offset>`, after `_Z`) into its kind and the encoding of the function it calls.
fn split_thunk(encoding: &str) -> Option<(&'static str, &str)> {
    let rest = encoding.strip_prefix('T')?;
    if let Some(covariant) = rest.strip_prefix('c') {
        let target = skip_call_offset(skip_call_offset(covariant)?)?;
        return Some(("covariant return thunk", target));
    }
    let kind = match rest.as_bytes().first()? {
        b'h' => "non-virtual thunk",
        b'v' => "virtual thunk",
        _ => return None,
    };
    Some((kind, skip_call_offset(rest)?))
}

/// Skips `h <number> _` or `v <number> _ <number> _`, where a number is `n`? digits.
fn skip_call_offset(s: &str) -> Option<&str> {
    let numbers = match s.as_bytes().first()? {
        b'h' => 1,
        b'v' => 2,
        _ => return None,
    };
    let mut rest = &s[1..];
    for _ in 0..numbers {
        let unsigned = rest.strip_prefix('n').unwrap_or(rest);
        let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = unsigned[digits..].strip_prefix('_')?;
    }
    Some(rest)
}

/// Removes what an empty parameter pack leaves in cpp_demangle's output: an empty last
/// template argument (`, >`) and a parameter that is only `&&` (`, &&)` or `(&&)`). Neither
/// can appear in a correct demangling: every argument and parameter has a type.
fn drop_empty_pack_artifacts(demangled: String) -> String {
    if !demangled.contains(", >") && !demangled.contains("&&)") && !demangled.contains("&&,") {
        return demangled;
    }
    demangled
        .replace(", >", ">")
        .replace(", &&)", ")")
        .replace("(&&)", "()")
        .replace("(&&, ", "(")
        .replace(", &&, ", ", ")
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
        // v0 names the one-pass printer leaves to rustc-demangle: punycode, a string.
        assert_eq!(demangle("_RNvC5crateu9bcher_kva"), "crate::bücher");
        assert_eq!(demangle("_RINvC5crate1fKRe616263_E"), "crate::f::<\"abc\">");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Z"), "_Z");
        assert_eq!(demangle("_Z3fooi@plt"), "foo(int)@plt");
    }

    #[test]
    fn names_not_tried_as_rust_are_names_rustc_demangle_refuses() {
        let bodies = [
            "ZN3std2io5stdio6_print17h1234567890abcdefE",
            "RNvCs1234_7mycrate4main",
            "ZN3foo3barE.llvm.1234ABCD",
            "Z3fooi",
            "main",
            "",
        ];
        let mut tried = 0;
        for prefix in ["", "_", "__", "___", "x", "_x", "R", "ZN"] {
            for body in bodies {
                let name = format!("{prefix}{body}");
                if super::may_be_rust(&name) {
                    tried += 1;
                } else {
                    assert!(rustc_demangle::try_demangle(&name).is_err(), "{name}");
                }
                // Either way, the answer is what asking rustc-demangle first would give.
                if let Ok(rust) = rustc_demangle::try_demangle(&name) {
                    if !name.contains("_R") && !name.starts_with('R') {
                        assert_eq!(demangle(&name), format!("{rust:#}"), "{name}");
                    }
                }
            }
        }
        assert!(tried > 10);
    }

    #[test]
    fn thunks_read_as_cxxfilt_prints_them() {
        // Expected strings are c++filt's (binutils 2.40) output for these names.
        assert_eq!(
            demangle("_ZThn16_NSt9strstreamD1Ev"),
            "non-virtual thunk to std::strstream::~strstream()"
        );
        assert_eq!(
            demangle("_ZTv0_n24_NSt13basic_fstreamIcSt11char_traitsIcEED1Ev"),
            "virtual thunk to std::basic_fstream<char, std::char_traits<char> >::~basic_fstream()"
        );
        assert_eq!(
            demangle("_ZTch0_h16_N1A1fEv"),
            "covariant return thunk to A::f()"
        );
        // Malformed offsets are not thunks; the name stays as it is.
        assert_eq!(demangle("_ZThx_N1A1fEv"), "_ZThx_N1A1fEv");
        assert_eq!(demangle("_ZTh"), "_ZTh");
    }

    #[test]
    fn vtables_read_as_cxxfilt_prints_them() {
        assert_eq!(
            demangle("_ZTVN13stacksym_demo4geom5ShapeE"),
            "vtable for stacksym_demo::geom::Shape"
        );
        assert_eq!(
            demangle("_ZTTSd"),
            "VTT for std::basic_iostream<char, std::char_traits<char> >"
        );
        assert_eq!(demangle("_ZTISt9exception"), "typeinfo for std::exception");
    }

    #[test]
    fn empty_parameter_packs_leave_nothing_behind() {
        // gimli-rs/cpp_demangle#132; c++filt prints `…::Invoke<>(void (*)())`.
        assert_eq!(
            demangle("_ZN4base8internal13FunctorTraitsIPFvvEvE6InvokeIJEEEvS3_DpOT_"),
            "void base::internal::FunctorTraits<void (*)(), void>::Invoke<>(void (*)())"
        );
    }
}
