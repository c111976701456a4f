//! Symbol names spelled as perf 6.1 prints them.
//!
//! Debian's perf 6.1 demangles C++ with libiberty's `cplus_demangle` and no options (no
//! `DMGL_PARAMS`, no `DMGL_VERBOSE`: `perf version --build-options` shows no libbfd), as
//! `c++filt -p` does but for `DMGL_VERBOSE`. cpp_demangle reads the same names and spells
//! some otherwise; [`perf_symbol_name`] demangles with it and rewrites those spellings
//! (`libiberty_spelling`), measured against the names `perf probe -F -x FILE --filter='*'`
//! lists for libjvm (Java 17), node 20 and libstdc++ (every function name of libjvm the
//! same; the differences left are listed at [`perf_symbol_name`]).

/// A symbol's name (as its table spells it) as perf 6.1 prints it: a C++ name demangled
/// without parameters and without the return type a template function's name carries
/// (libiberty without `DMGL_PARAMS`: `std::__introsort_loop<…>`, not
/// `void std::__introsort_loop<…>(…)`); another name as [`perf_name`] gives it.
///
/// Special names wrap a whole encoding, which libiberty prints with its parameters (only
/// the outermost encoding loses them): `non-virtual thunk to
/// LIRGenerator::block_do(BlockBegin*)`, `transaction clone for std::logic_error::what()
/// const`.
///
/// Left as cpp_demangle spells them: the address of a function template as a template
/// argument (libiberty adds the template's return type, `&(unsigned int
/// primitive_hash<long>(long const&))`, which the name without its return type cannot
/// give back).
pub(super) fn perf_symbol_name(raw: &str) -> String {
    if raw.starts_with("_Z") {
        if let Some(special) = special_name_with_encoding(raw) {
            return special;
        }
        let options = cpp_demangle::DemangleOptions::default()
            .no_params()
            .no_return_type();
        let demangle = |raw: &str| {
            cpp_demangle::Symbol::new(raw)
                .ok()
                .and_then(|symbol| symbol.demangle_with_options(&options).ok())
        };
        // Where cpp_demangle gives up on the whole name (a template argument expression
        // `sr…` in the return type of `_ZSt4swapIN3geo4Vec3IdEEENSt9enable_ifIXsr…`, which
        // libiberty reads), the longest prefix it reads is the function's name and some of
        // its types, and neither types nor parameters are printed here:
        // `std::swap<geo::Vec3<double> >`, as perf prints it. At most 512 prefixes.
        let found = demangle(raw).or_else(|| {
            (3..raw.len())
                .rev()
                .take(512)
                .filter(|&end| raw.is_char_boundary(end))
                .find_map(|end| demangle(&raw[..end]))
        });
        if let Some(mut name) = found {
            // cpp_demangle keeps a member function's qualifiers after the parameters it
            // leaves out (`operator() const`); libiberty drops them with the parameters.
            while let Some(head) = [" const", " volatile", " &&", " &"]
                .iter()
                .find_map(|q| name.strip_suffix(q))
            {
                name.truncate(head.len());
            }
            return libiberty_spelling(&name);
        }
    }
    perf_name(&stacksym::demangle::demangle(raw)).to_string()
}

/// A special name whose target is a function's whole encoding (`_ZTh`, `_ZTv`, `_ZTc`
/// thunks, `_ZGTt`/`_ZGTn` transaction clones, `_ZGA` hidden aliases), as libiberty prints
/// it: the kind, then the function with its parameters (and the return type of a template),
/// not cut down as a top-level name is.
fn special_name_with_encoding(raw: &str) -> Option<String> {
    let encoding = raw.strip_prefix("_Z")?;
    let kinds = [
        ("GTt", "transaction clone for "),
        ("GTn", "non-transaction clone for "),
        ("GA", "hidden alias for "),
    ];
    let demangled = if ["Th", "Tv", "Tc"].iter().any(|k| encoding.starts_with(k)) {
        // stacksym's demangler spells thunks as libiberty does (its own repair of
        // cpp_demangle's `{virtual override thunk(…)}`).
        let demangled = stacksym::demangle::demangle(raw);
        if demangled == raw {
            return None;
        }
        demangled.into_owned()
    } else {
        let (kind, target) = kinds
            .iter()
            .find_map(|&(code, kind)| Some((kind, encoding.strip_prefix(code)?)))?;
        let symbol = cpp_demangle::Symbol::new(format!("_Z{target}")).ok()?;
        let target = symbol
            .demangle_with_options(&cpp_demangle::DemangleOptions::default())
            .ok()?;
        format!("{kind}{target}")
    };
    // libiberty prints a clone suffix (`[clone .cold]`) with the parameters only.
    let mut demangled = demangled.as_str();
    while let Some(head) = demangled
        .strip_suffix(']')
        .and_then(|d| d.rfind(" [clone .").map(|at| &d[..at]))
    {
        demangled = head;
    }
    Some(libiberty_spelling(demangled))
}

/// cpp_demangle's spelling of a demangled name rewritten where libiberty's differs.
fn libiberty_spelling(name: &str) -> String {
    let name = literal_suffixes(name);
    // An empty template parameter pack as the last argument: libiberty takes back the
    // `, ` it wrote before it and, its last character still the space, closes the list
    // without the space it puts between two `>` (`AnalysisManager<llvm::Module>>`).
    let name = name.replace(", >", ">");
    let name = name.replace("decltype(nullptr)", "std::nullptr_t");
    let name = function_addresses(&name);
    let name = function_types(&name);
    full_std_abbreviations(name)
}

/// Integer literals of the types libiberty spells with a suffix: `1335366ul` where
/// cpp_demangle writes `(unsigned long)1335366`, `8192u` for `(unsigned int)8192`, `5`
/// for `(int)5` (libiberty's `D_PRINT_INT` … `D_PRINT_UNSIGNED_LONG_LONG`); other types
/// keep their cast, as in libiberty (`(char)97`, `(MEMFLAGS)5`).
fn literal_suffixes(name: &str) -> String {
    const SUFFIXES: [(&str, &str); 6] = [
        ("(unsigned long long)", "ull"),
        ("(unsigned long)", "ul"),
        ("(unsigned int)", "u"),
        ("(long long)", "ll"),
        ("(long)", "l"),
        ("(int)", ""),
    ];
    if !name.contains(")") {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    'scan: while let Some(at) = rest.find('(') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        for (cast, suffix) in SUFFIXES {
            let Some(value) = rest.strip_prefix(cast) else {
                continue;
            };
            let digits = value.strip_prefix('-').unwrap_or(value);
            let len = digits.bytes().take_while(u8::is_ascii_digit).count();
            let follows = digits.as_bytes().get(len).copied();
            // A literal, not a cast applied to an expression (`(long)(sizeof (T))`).
            if len > 0 && !follows.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'(') {
                let end = value.len() - digits.len() + len;
                out.push_str(&value[..end]);
                out.push_str(suffix);
                rest = &value[end..];
                continue 'scan;
            }
        }
        out.push('(');
        rest = &rest[1..];
    }
    out.push_str(rest);
    out
}

/// The index of the `)` that closes the `(` at `open`, if any.
fn closing_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The start of the name that ends at `end` (exclusive): back over identifier characters,
/// `::` and `(anonymous namespace)`, and over nothing in template arguments.
fn name_start(text: &str, end: usize) -> usize {
    let bytes = text.as_bytes();
    let mut start = end;
    while start > 0 {
        let b = bytes[start - 1];
        if b.is_ascii_alphanumeric() || b == b'_' || b == b':' || b == b'~' {
            start -= 1;
        } else if text[..start].ends_with("(anonymous namespace)") {
            start -= "(anonymous namespace)".len();
        } else {
            break;
        }
    }
    start
}

/// The address of a function as a template argument (`XadL_Z…E`): libiberty prints a
/// member's (a qualified name) without its parameters, `&JfrRecorderService::
/// safepoint_clear`, and any other inside parentheses, `&(compare_malloc_site(MallocSite
/// const&, MallocSite const&))`; cpp_demangle prints both as `&name(parameters)`. The
/// address of a function template is left alone (see [`perf_symbol_name`]).
fn function_addresses(name: &str) -> String {
    if !name.contains('&') {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len());
    let mut at = 0;
    while let Some(found) = name[at..].find('&') {
        let amp = at + found;
        out.push_str(&name[at..amp]);
        at = amp;
        let argument_start = name[..amp].ends_with('<') || name[..amp].ends_with(", ");
        let after = &name[amp + 1..];
        let name_len = after.len()
            - after
                .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                .len();
        let open = amp + 1 + name_len;
        let close = (argument_start && name_len > 0 && name[open..].starts_with('('))
            .then(|| closing_paren(name, open))
            .flatten();
        let Some(close) = close else {
            out.push('&');
            at += 1;
            continue;
        };
        let mut end = close + 1;
        for qualifier in [" const", " volatile"] {
            if name[end..].starts_with(qualifier) {
                end += qualifier.len();
            }
        }
        let function = &name[amp + 1..open];
        if function.contains("::") {
            out.push('&');
            out.push_str(function);
        } else {
            out.push_str("&(");
            out.push_str(&name[amp + 1..end]);
            out.push(')');
        }
        at = end;
    }
    out.push_str(&name[at..]);
    out
}

/// A function type as a template argument: libiberty puts a space between the return type
/// and the parameters (`std::function<int (char)>`), cpp_demangle none (`int(char)`). A
/// `(` is a function type's when it follows a type inside template arguments and what it
/// opens is not followed by `::` (a function's local entity: `f(int)::{lambda()#1}`), nor is
/// a lambda's, `decltype`'s or `sizeof`'s.
fn function_types(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut depth = 0usize;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth > 0 => {
                let head = &name[..i];
                // After a type: a name, a template's `>`, or either with `*` or `&`
                // (`int& (int)`); not `&` alone, an address (`<&(f(int))`).
                let bare = head.trim_end_matches(['*', '&']);
                let follows_type =
                    bare.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '_' || p == '>');
                let word_start = name_start(bare, bare.len());
                let word = &bare[word_start..];
                // The function of an address (`&(f(int))`, see `function_addresses`).
                let address =
                    bare[..word_start].ends_with('&') || bare[..word_start].ends_with("&(");
                let keyword = ["lambda", "decltype", "sizeof", "alignof", "noexcept"]
                    .contains(&word)
                    || word.contains("operator");
                let local = closing_paren(name, i).is_some_and(|close| {
                    let tail = &name[close + 1..];
                    tail.starts_with("::")
                        || tail.starts_with(" const::")
                        || tail.starts_with(" volatile::")
                });
                if follows_type && !keyword && !local && !address {
                    out.push(' ');
                }
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// libiberty prints the abbreviations `Ss`, `Si`, `So` and `Sd` (which the ABI requires
/// wherever these types occur) as `std::string`, `std::istream`, `std::ostream` and
/// `std::iostream` without `DMGL_VERBOSE`, but in full where a constructor or destructor
/// follows (`std::basic_string<char, std::char_traits<char>, std::allocator<char>
/// >::basic_string`). cpp_demangle writes `std::string::string`, and some of the others in
/// full everywhere (`std::basic_istream<char, std::char_traits<char> >::get`).
fn full_std_abbreviations(name: String) -> String {
    const ABBREVIATIONS: [(&str, &str, &str); 4] = [
        (
            "std::string",
            "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
            "basic_string",
        ),
        (
            "std::istream",
            "std::basic_istream<char, std::char_traits<char> >",
            "basic_istream",
        ),
        (
            "std::ostream",
            "std::basic_ostream<char, std::char_traits<char> >",
            "basic_ostream",
        ),
        (
            "std::iostream",
            "std::basic_iostream<char, std::char_traits<char> >",
            "basic_iostream",
        ),
    ];
    if !name.contains("std::") {
        return name;
    }
    let mut name = name;
    for (short, full, class) in ABBREVIATIONS {
        let short_class = &short["std::".len()..];
        let mut out = String::with_capacity(name.len());
        let mut rest = name.as_str();
        while let Some((at, len)) = [short, full]
            .iter()
            .filter_map(|form| Some((rest.find(form)?, form.len())))
            .min()
        {
            let after = &rest[at + len..];
            // Not a longer name that starts alike (`std::stringbuf`).
            if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                out.push_str(&rest[..at + len]);
                rest = after;
                continue;
            }
            out.push_str(&rest[..at]);
            let structor = ["", "~"].iter().find_map(|tilde| {
                let member = [short_class, class].iter().find_map(|c| {
                    after
                        .strip_prefix("::")?
                        .strip_prefix(tilde)?
                        .strip_prefix(c)
                })?;
                let ends = !member.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
                ends.then_some((*tilde, member))
            });
            match structor {
                Some((tilde, member)) => {
                    out.push_str(full);
                    out.push_str("::");
                    out.push_str(tilde);
                    out.push_str(class);
                    rest = member;
                }
                None => {
                    out.push_str(short);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        name = out;
    }
    name
}

/// A demangled symbol name as perf prints it: without its parameter list (perf demangles
/// without libiberty's `DMGL_PARAMS` unless `-v`): `ht_lookup`, not
/// `ht_lookup(ht*, unsigned char const*, unsigned long, ht_lookup_option)`. The first `(`
/// outside template arguments starts the list (`operator()` is a name).
pub(super) fn perf_name(name: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 => {
                let head = &name[..i];
                if head.ends_with("operator") && name[i..].starts_with("()") {
                    continue;
                }
                if head.is_empty() || name[i..].starts_with("(anonymous namespace)") {
                    continue;
                }
                // Go's pointer receivers (`runtime.(*mheap).allocSpan`), which perf prints
                // whole: a C++ parameter list never follows a `.`.
                if head.ends_with('.') {
                    continue;
                }
                return head;
            }
            _ => {}
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::perf_symbol_name;

    /// Symbols of real files and the names perf 6.1 gives them (`perf probe -F -x FILE
    /// --filter='*'`, which lists the names perf's symbol loader makes, and `perf script`
    /// for the thunk, where tests/perf_jit_java.rs met it in a sample): libjvm of Debian's
    /// openjdk-17-jre-headless, node 20, libstdc++.so.6 of gcc 12.
    const PERF_NAMES: &[(&str, &str)] = &[
        // libjvm: a thunk names its function with the parameters.
        (
            "_ZThn8_N12LIRGenerator8block_doEP10BlockBegin",
            "non-virtual thunk to LIRGenerator::block_do(BlockBegin*)",
        ),
        (
            "_ZThn40_N13VM_HeapDumper4workEj",
            "non-virtual thunk to VM_HeapDumper::work(unsigned int)",
        ),
        // libjvm: integer literals with libiberty's suffixes.
        (
            "_ZN14AccessInternal19PostRuntimeDispatchIN19CardTableBarrierSet13AccessBarrierILm1335366ES1_EELNS_11BarrierTypeE1ELm1335366EE18oop_access_barrierEP7oopDesclS7_",
            "AccessInternal::PostRuntimeDispatch<CardTableBarrierSet::AccessBarrier<1335366ul, \
             CardTableBarrierSet>, (AccessInternal::BarrierType)1, 1335366ul>::oop_access_barrier",
        ),
        (
            "_ZN16GenericTaskQueueI12ObjArrayTaskL8MEMFLAGS5ELj8192EE10pop_globalERS0_",
            "GenericTaskQueue<ObjArrayTask, (MEMFLAGS)5, 8192u>::pop_global",
        ),
        // libjvm: a function's address as a template argument.
        (
            "_ZN16SortedLinkedListI10MallocSiteXadL_Z19compare_malloc_siteRKS0_S2_EELN11ResourceObj15allocation_typeE2EL8MEMFLAGS11ELN17AllocFailStrategy13AllocFailEnumE1EE9find_nodeES2_",
            "SortedLinkedList<MallocSite, &(compare_malloc_site(MallocSite const&, MallocSite \
             const&)), (ResourceObj::allocation_type)2, (MEMFLAGS)11, \
             (AllocFailStrategy::AllocFailEnum)1>::find_node",
        ),
        (
            "_ZN14JfrVMOperationI18JfrRecorderServiceXadL_ZNS0_15safepoint_clearEvEEE4doitEv",
            "JfrVMOperation<JfrRecorderService, &JfrRecorderService::safepoint_clear>::doit",
        ),
        // node: empty parameter packs, a function type, a thunk of a `.cold` part.
        (
            "_ZN4node11SPrintFImplIPcJEEENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPKcOT_DpOT0_",
            "node::SPrintFImpl<char*>",
        ),
        (
            "_ZN2v88internal28CFunctionBuilderWithFunctionINS_16CTypeInfoBuilderIdJEEEJNS2_INS_5LocalINS_5ValueEEEJEEEEE5BuildEv",
            "v8::internal::CFunctionBuilderWithFunction<v8::CTypeInfoBuilder<double>, \
             v8::CTypeInfoBuilder<v8::Local<v8::Value>> >::Build",
        ),
        (
            "_ZNSt17_Function_handlerIFN2v88internal5TNodeINS1_6ObjectEEEvEZNS1_8compiler16JSGraphAssembler14JSCallRuntime1ENS1_7Runtime10FunctionIdES4_NS2_INS1_7ContextEEENS0_4base8OptionalINS6_10FrameStateEEENSC_5FlagsINS6_8Operator8PropertyEhEEEUlvE_E10_M_managerERSt9_Any_dataRKSM_St18_Manager_operation",
            "std::_Function_handler<v8::internal::TNode<v8::internal::Object> (), \
             v8::internal::compiler::JSGraphAssembler::JSCallRuntime1(v8::internal::Runtime::FunctionId, \
             v8::internal::TNode<v8::internal::Object>, v8::internal::TNode<v8::internal::Context>, \
             v8::base::Optional<v8::internal::compiler::FrameState>, \
             v8::base::Flags<v8::internal::compiler::Operator::Property, unsigned char>)::{lambda()#1}>::_M_manager",
        ),
        (
            "_ZThn56_N4node5http211Http2Stream8ReadStopEv.cold",
            "non-virtual thunk to node::http2::Http2Stream::ReadStop()",
        ),
        // libstdc++: std::string and the streams, short but before a constructor.
        (
            "_ZNSsC1Ev",
            "std::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string",
        ),
        ("_ZNKSi6gcountEv", "std::istream::gcount"),
        (
            "_ZNSo9_M_insertImEERSoT_",
            "std::ostream::_M_insert<unsigned long>",
        ),
        (
            "_ZTv0_n24_NSoD1Ev",
            "virtual thunk to std::basic_ostream<char, std::char_traits<char> >::~basic_ostream()",
        ),
        (
            "_ZGTtNKSt11logic_error4whatEv",
            "transaction clone for std::logic_error::what() const",
        ),
    ];

    #[test]
    fn cpp_names_are_spelled_as_perf_spells_them() {
        for (raw, perf) in PERF_NAMES {
            assert_eq!(perf_symbol_name(raw), *perf, "{raw}");
        }
    }

    #[test]
    fn casts_and_names_that_only_look_alike_stay() {
        assert_eq!(
            super::literal_suffixes("f<(long)(sizeof (T))>"),
            "f<(long)(sizeof (T))>"
        );
        assert_eq!(
            super::literal_suffixes("f<(char)97, (long)-3>"),
            "f<(char)97, -3l>"
        );
        assert_eq!(super::literal_suffixes("g<(int)5x>"), "g<(int)5x>");
        assert_eq!(
            super::full_std_abbreviations("std::stringbuf::stringbuf".into()),
            "std::stringbuf::stringbuf"
        );
        assert_eq!(super::function_addresses("a<b&>(c)"), "a<b&>(c)");
        assert_eq!(perf_symbol_name("_Z"), "_Z");
        assert_eq!(perf_symbol_name("main"), "main");
    }
}
