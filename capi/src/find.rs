//! Names → addresses from C: `stacksym_find_*` list the symbols whose names match a
//! pattern (a name as the source writes it, a mangled name, or a glob), with the file
//! offsets uprobes take.

use std::ffi::{c_char, CStr};

use stacksym::elf::{Binding, SymbolKind};
use stacksym::symbolize::{FindOptions, FoundIn, NamePattern, SymbolMatch};
use stacksym::Source;

use crate::block::{free_block, Block, Pool, Str};
use crate::error::{guard, stacksym_err, CError};
use crate::{handle, name_of, out_slot, slice, stacksym_kernel_source, stacksym_symbolizer};

/// How a `stacksym_find_*` call reports what matched: 0, or `STACKSYM_FIND_*` flags or-ed.
pub type stacksym_find_flags = u32;
/// One match per address: where several names of one address match (libc's `malloc`,
/// `__libc_malloc`, `__malloc`), the match is the name `stacksym_symbolize_*` answers for
/// the address when it is among them, else the first by binding (global, weak, local), then
/// table order; the other names are its `aliases`. What a prober wants: one uprobe per
/// address. Without it, one match per matching name.
pub const STACKSYM_FIND_MERGE_ALIASES: stacksym_find_flags = 1;

/// The [`FindOptions`] of `flags`, or an error for an unknown flag.
fn find_options(flags: stacksym_find_flags) -> Result<FindOptions, CError> {
    let unknown = flags & !STACKSYM_FIND_MERGE_ALIASES;
    if unknown != 0 {
        return Err(CError::invalid(format!(
            "unknown find flags {unknown:#x} (known: STACKSYM_FIND_MERGE_ALIASES)"
        )));
    }
    Ok(FindOptions::default().merge_aliases(flags & STACKSYM_FIND_MERGE_ALIASES != 0))
}

/// A symbol's binding: `STACKSYM_BINDING_*`.
pub type stacksym_binding = u32;
/// `STB_GLOBAL` (and `STB_GNU_UNIQUE`).
pub const STACKSYM_BINDING_GLOBAL: stacksym_binding = 0;
/// `STB_WEAK`.
pub const STACKSYM_BINDING_WEAK: stacksym_binding = 1;
/// `STB_LOCAL`: a static function.
pub const STACKSYM_BINDING_LOCAL: stacksym_binding = 2;

/// Which table a match was found in: `STACKSYM_FOUND_IN_*`.
pub type stacksym_found_in = u32;
/// The file's `.symtab`.
pub const STACKSYM_FOUND_IN_SYMTAB: stacksym_found_in = 0;
/// The file's `.dynsym`.
pub const STACKSYM_FOUND_IN_DYNSYM: stacksym_found_in = 1;
/// The `.symtab` of the file's separate debug file.
pub const STACKSYM_FOUND_IN_DEBUG_FILE: stacksym_found_in = 2;
/// The file's MiniDebugInfo (`.gnu_debugdata`).
pub const STACKSYM_FOUND_IN_MINIDEBUGINFO: stacksym_found_in = 3;
/// A kallsyms file.
pub const STACKSYM_FOUND_IN_KALLSYMS: stacksym_found_in = 4;
/// A table this version of the C API has no constant for.
pub const STACKSYM_FOUND_IN_OTHER: stacksym_found_in = 5;
/// A Go binary's own table (`.gopclntab`).
pub const STACKSYM_FOUND_IN_GO_TABLE: stacksym_found_in = 6;

/// One symbol whose name matched.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_match {
    /// The name as the table spells it (mangled, without `@VERSION`): what `nm` prints and
    /// what a probe by name takes.
    pub name: *const c_char,
    /// The demangled name (the same as `name` for C).
    pub demangled: *const c_char,
    /// The symbol's start: its ELF virtual address; for the kernel, kallsyms' address.
    pub addr: u64,
    /// Its size (for the kernel: the distance to the next symbol).
    pub size: u64,
    /// Whether `file_offset` is known (not for the kernel).
    pub has_file_offset: bool,
    /// Whether the symbol is data (`STT_OBJECT`) rather than a function.
    pub is_data: bool,
    /// Whether the version is hidden (`name@VER`, not `name@@VER`).
    pub version_hidden: bool,
    /// The start's offset in the file: what `perf probe -x FILE -a OFFSET` and a uprobe's
    /// `PATH:OFFSET` take.
    pub file_offset: u64,
    /// Global, weak or local.
    pub binding: stacksym_binding,
    /// Which table listed it.
    pub found_in: stacksym_found_in,
    /// The symbol version (`GLIBC_2.2.5`); NULL if none.
    pub version: *const c_char,
    /// The other names at the same address, sorted (`aliases_len` of them).
    pub aliases: *const *const c_char,
    /// The number of `aliases`.
    pub aliases_len: usize,
    /// For a kernel module's symbol, the module's name; else NULL.
    pub kernel_module: *const c_char,
    /// The file whose table listed it (the file, its debug file, the kallsyms file).
    pub file: *const c_char,
}

/// The matches of one call, in table order; one block, freed by stacksym_matches_free().
#[repr(C)]
#[derive(Debug)]
pub struct stacksym_matches {
    /// The number of `matches` (0 when nothing matched: not an error).
    pub len: usize,
    /// The matches.
    pub matches: *const stacksym_match,
}

/// `found` as one block.
fn matches_block(found: &[SymbolMatch]) -> Result<*mut stacksym_matches, CError> {
    struct Flat {
        name: Str,
        demangled: Str,
        version: Str,
        aliases: (usize, usize),
        kernel_module: Str,
        file: Str,
    }
    let mut pool = Pool::default();
    let mut aliases = Vec::new();
    let flat: Vec<Flat> = found
        .iter()
        .map(|m| {
            let start = aliases.len();
            aliases.extend(m.aliases.iter().map(|a| pool.str(a)));
            Flat {
                name: pool.str(&m.name),
                demangled: pool.str(&m.demangled),
                version: pool.opt_str(m.version.as_deref()),
                aliases: (start, aliases.len() - start),
                kernel_module: pool.opt_str(m.kernel_module.as_deref()),
                file: pool.str(m.file.as_os_str().as_encoded_bytes()),
            }
        })
        .collect();
    let mut block = Block::<stacksym_matches, stacksym_match, *const c_char>::new(
        flat.len(),
        aliases.len(),
        &pool,
    )?;
    let at = block.bases();
    for alias in &aliases {
        block.push_b(at.str(*alias))?;
    }
    for (m, f) in found.iter().zip(&flat) {
        block.push_a(stacksym_match {
            name: at.str(f.name),
            demangled: at.str(f.demangled),
            addr: m.addr.raw(),
            size: m.size,
            has_file_offset: m.file_offset.is_some(),
            is_data: m.kind == SymbolKind::Data,
            version_hidden: m.version_hidden,
            file_offset: m.file_offset.map_or(0, |o| o.0),
            binding: match m.binding {
                Binding::Global => STACKSYM_BINDING_GLOBAL,
                Binding::Weak => STACKSYM_BINDING_WEAK,
                Binding::Local => STACKSYM_BINDING_LOCAL,
            },
            found_in: match m.found_in {
                FoundIn::Symtab => STACKSYM_FOUND_IN_SYMTAB,
                FoundIn::Dynsym => STACKSYM_FOUND_IN_DYNSYM,
                FoundIn::DebugFile => STACKSYM_FOUND_IN_DEBUG_FILE,
                FoundIn::MiniDebugInfo => STACKSYM_FOUND_IN_MINIDEBUGINFO,
                FoundIn::Kallsyms => STACKSYM_FOUND_IN_KALLSYMS,
                FoundIn::GoTable => STACKSYM_FOUND_IN_GO_TABLE,
                // `FoundIn` is non-exhaustive: a table added later than this C API.
                _ => STACKSYM_FOUND_IN_OTHER,
            },
            version: at.str(f.version),
            aliases: at.b(f.aliases.0),
            aliases_len: f.aliases.1,
            kernel_module: at.str(f.kernel_module),
            file: at.str(f.file),
        })?;
    }
    block.finish(stacksym_matches {
        len: flat.len(),
        matches: at.a(0),
    })
}

/// The common body of the find calls.
///
/// # Safety
/// `symbolizer` NULL or live, `pattern` NULL or NUL-terminated, `out` NULL or writable.
unsafe fn find_into(
    symbolizer: *const stacksym_symbolizer,
    pattern: *const c_char,
    flags: stacksym_find_flags,
    out: *mut *mut stacksym_matches,
    find: impl FnOnce(
        &stacksym_symbolizer,
        &NamePattern<'_>,
        FindOptions,
    ) -> Result<Vec<SymbolMatch>, CError>,
) -> stacksym_err {
    guard(|| {
        // SAFETY: by the caller's contract, NULL (refused) or writable.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: by the caller's contract, NULL (refused) or a live handle.
        let handle = unsafe { handle(symbolizer) }?;
        if pattern.is_null() {
            return Err(CError::invalid("the pattern is NULL"));
        }
        // SAFETY: by the caller's contract, a NUL-terminated string (not NULL: checked).
        let pattern = unsafe { CStr::from_ptr(pattern) }
            .to_str()
            .map_err(|_| CError::invalid("the pattern is not UTF-8"))?;
        let options = find_options(flags)?;
        let found = find(handle, &NamePattern::parse(pattern), options)?;
        *out = matches_block(&found)?;
        Ok(())
    })
}

/// The functions and data objects of the ELF file at `path` whose names match `pattern`:
/// a name as the source writes it (`ns::Class::method`, a Rust `my_crate::module::function`, with or
/// without parameters; a template function with or without its return type), the mangled
/// name, or a glob (`*` and `?`); `flags`: 0 or `STACKSYM_FIND_*` flags. On success `*out` holds
/// the matches (none is not an error; free with stacksym_matches_free()); on failure
/// `*out` is NULL.
///
/// A C++ parameter list ending the pattern (`ns::f(const char*, int) const`) is types, not a
/// glob: inside it `*` and `&` are the type's, `const T` is `T const` and spaces are free
/// (`ns::f(const char *)` is `ns::f(char const*)`, which `ns::f(char const*, unsigned long)`
/// is not); what precedes it may still glob (`*::f(int*)`). A backslash before the `(`
/// (`ns::f\(char*`, in a C string `"ns::f\\(char*"`) turns that off: the whole pattern is
/// one glob again.
///
/// Pointers: `symbolizer` is a live handle; `path` and `pattern` NUL-terminated strings; `out` a
/// valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_find_elf(
    symbolizer: *const stacksym_symbolizer,
    path: *const c_char,
    pattern: *const c_char,
    flags: stacksym_find_flags,
    out: *mut *mut stacksym_matches,
) -> stacksym_err {
    let find = |handle: &stacksym_symbolizer,
                pattern: &NamePattern<'_>,
                options: FindOptions|
     -> Result<Vec<SymbolMatch>, CError> {
        // SAFETY: by the contract, NULL (refused) or NUL-terminated.
        let path = unsafe { crate::path(path, "path") }?;
        Ok(handle
            .inner
            .find_addresses_with(&Source::Elf { path }, pattern, options)?)
    };
    // SAFETY: the caller's contract is find_into's.
    unsafe { find_into(symbolizer, pattern, flags, out, find) }
}

/// As stacksym_find_elf(), in the file with this GNU build-id (`build_id_len` bytes) in
/// the debug dirs.
///
/// Pointers: `symbolizer` is a live handle; `build_id` points to `build_id_len` bytes; `pattern` is
/// NUL-terminated; `out` a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_find_build_id(
    symbolizer: *const stacksym_symbolizer,
    build_id: *const u8,
    build_id_len: usize,
    pattern: *const c_char,
    flags: stacksym_find_flags,
    out: *mut *mut stacksym_matches,
) -> stacksym_err {
    let find = |handle: &stacksym_symbolizer,
                pattern: &NamePattern<'_>,
                options: FindOptions|
     -> Result<Vec<SymbolMatch>, CError> {
        // SAFETY: by the contract, `build_id_len` bytes at `build_id`.
        let build_id = unsafe { slice(build_id, build_id_len, "build_id") }?;
        if build_id.is_empty() {
            return Err(CError::invalid("the build-id is empty"));
        }
        Ok(handle
            .inner
            .find_addresses_with(&Source::BuildId { build_id }, pattern, options)?)
    };
    // SAFETY: the caller's contract is find_into's.
    unsafe { find_into(symbolizer, pattern, flags, out, find) }
}

/// As stacksym_find_elf(), over the kernel's kallsyms (`kernel`: NULL for
/// `/proc/kallsyms`; only its `kallsyms` is used): kprobe targets, aliases each listed.
/// STACKSYM_ERR_PERMISSION_DENIED when the kernel hides its addresses (every kallsyms
/// address 0), where stacksym_symbolize_kernel() answers each address
/// STACKSYM_KERNEL_ADDRS_HIDDEN.
///
/// Pointers: `symbolizer` is a live handle; `kernel` NULL or valid, its strings NULL or
/// NUL-terminated; `pattern` NUL-terminated; `out` a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_find_kernel(
    symbolizer: *const stacksym_symbolizer,
    kernel: *const stacksym_kernel_source,
    pattern: *const c_char,
    flags: stacksym_find_flags,
    out: *mut *mut stacksym_matches,
) -> stacksym_err {
    let find = |handle: &stacksym_symbolizer,
                pattern: &NamePattern<'_>,
                options: FindOptions|
     -> Result<Vec<SymbolMatch>, CError> {
        // SAFETY: by the contract, NULL or valid with valid strings.
        let kernel = unsafe { handle.kernel_paths(kernel) }?;
        Ok(handle
            .inner
            .find_addresses_with(&Source::Kernel(kernel.source()), pattern, options)?)
    };
    // SAFETY: the caller's contract is find_into's.
    unsafe { find_into(symbolizer, pattern, flags, out, find) }
}

/// Frees the result of a `stacksym_find_*` call (NULL is ignored).
///
/// Pointers: `matches` is NULL or a result of a `stacksym_find_*` call, not freed before.
#[no_mangle]
pub unsafe extern "C" fn stacksym_matches_free(matches: *mut stacksym_matches) {
    // SAFETY: by the contract, NULL or a block `Block::finish` handed out, freed once.
    unsafe { free_block(matches) }
}

/// The name of a binding ("STACKSYM_BINDING_GLOBAL"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_binding_name(binding: stacksym_binding) -> *const c_char {
    name_of(
        binding,
        &[
            (STACKSYM_BINDING_GLOBAL, c"STACKSYM_BINDING_GLOBAL"),
            (STACKSYM_BINDING_WEAK, c"STACKSYM_BINDING_WEAK"),
            (STACKSYM_BINDING_LOCAL, c"STACKSYM_BINDING_LOCAL"),
        ],
    )
}

/// The name of a found-in table ("STACKSYM_FOUND_IN_SYMTAB"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_found_in_name(found_in: stacksym_found_in) -> *const c_char {
    name_of(
        found_in,
        &[
            (STACKSYM_FOUND_IN_SYMTAB, c"STACKSYM_FOUND_IN_SYMTAB"),
            (STACKSYM_FOUND_IN_DYNSYM, c"STACKSYM_FOUND_IN_DYNSYM"),
            (
                STACKSYM_FOUND_IN_DEBUG_FILE,
                c"STACKSYM_FOUND_IN_DEBUG_FILE",
            ),
            (
                STACKSYM_FOUND_IN_MINIDEBUGINFO,
                c"STACKSYM_FOUND_IN_MINIDEBUGINFO",
            ),
            (STACKSYM_FOUND_IN_KALLSYMS, c"STACKSYM_FOUND_IN_KALLSYMS"),
            (STACKSYM_FOUND_IN_OTHER, c"STACKSYM_FOUND_IN_OTHER"),
            (STACKSYM_FOUND_IN_GO_TABLE, c"STACKSYM_FOUND_IN_GO_TABLE"),
        ],
    )
}
