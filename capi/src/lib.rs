//! The C API of stacksym (`include/stacksym.h`, generated from this crate by cbindgen).
//!
//! - A handle, [`stacksym_symbolizer`], made by [`stacksym_symbolizer_new`] and freed by
//!   [`stacksym_symbolizer_free`]: the library's `Symbolizer`, thread-safe, with its caches.
//! - Calls that symbolize (an ELF file, a build-id, a process, the kernel, a mixed stack),
//!   normalize, find names, unwind a process or a perf sample and symbolize its frames,
//!   and merge a CPython thread's native frames with its Python frames
//!   ([`stacksym_python_unwind_process`]). Each returns a [`stacksym_err`] and hands its result out
//!   through an out pointer: one `malloc` block (`block.rs`) that one `*_free` call releases.
//! - Errors: a code, and the message per thread ([`stacksym_last_error`]).
//! - The version (`STACKSYM_VERSION_*`, [`stacksym_version`]) and the name of every constant
//!   of every code type (`stacksym_*_name`).
//!
//! Every entry point checks its pointers and runs inside `error::guard` (no panic crosses
//! into C). Pointers the caller passes are borrowed for the call only.
//!
//! The doc comments of exported items are the header's comments (cbindgen copies them), so
//! they are written for C readers: no intra-doc links, no `# Safety` headings, no Rust paths.
//! Each function's pointer contract is its doc's last paragraph, starting "Pointers:".

// As in the library: every public item documented and printable with `{:?}`, every `unsafe`
// block with the reason it is sound.
#![deny(
    missing_docs,
    missing_debug_implementations,
    clippy::undocumented_unsafe_blocks
)]
#![allow(non_camel_case_types)]
// The header is the documentation of these functions, and a `# Safety` heading would be Rust
// syntax in it: each unsafe entry point states its contract in its "Pointers:" paragraph.
#![allow(clippy::missing_safety_doc)]

mod block;
mod error;
mod find;
mod normalize;
mod python;
mod symbols;
mod unwind;

use std::ffi::{c_char, CStr, OsStr};
use std::num::NonZeroUsize;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use stacksym::kernel::KernelModules;
use stacksym::{KernelSource, LoadBias, Symbolizer};

pub use error::*;
pub use find::*;
pub use normalize::*;
pub use python::*;
pub use symbols::*;
pub use unwind::*;

use error::{guard, CError};

/// The major version of this header: STACKSYM_VERSION_MAJOR.MINOR.PATCH is the version a
/// program was compiled with; stacksym_version() is the version of the library it runs with. A 0.x library keeps its ABI within one minor
/// version (its SONAME is libstacksym.so.0.MINOR).
pub const STACKSYM_VERSION_MAJOR: u32 = 0;
/// The minor version (see STACKSYM_VERSION_MAJOR).
pub const STACKSYM_VERSION_MINOR: u32 = 1;
/// The patch version (see STACKSYM_VERSION_MAJOR).
pub const STACKSYM_VERSION_PATCH: u32 = 0;

/// The version of the library the program runs with, as "MAJOR.MINOR.PATCH" ("0.1.0", what
/// `pkg-config --modversion stacksym` prints): a static string, never freed. Compare it with
/// the STACKSYM_VERSION_* macros of the header the program was compiled with.
#[no_mangle]
pub extern "C" fn stacksym_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The package version with a NUL; the STACKSYM_VERSION_* constants are checked against it
/// (cbindgen needs literals for the header's macros).
const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => panic!("the package version holds no NUL"),
    };

/// The symbolizer: caches of opened files, process maps and kallsyms. Thread-safe: one handle
/// may be used by any number of threads at once. Opaque; made by stacksym_symbolizer_new(),
/// freed by stacksym_symbolizer_free().
#[derive(Debug)]
pub struct stacksym_symbolizer {
    inner: Symbolizer,
    /// Whether names are demangled (which DWARF spelling frames get).
    demangle: bool,
    /// Kernel module finders by (modules dir, sys module dir): each caches the `.ko` files it
    /// matched, so it lives as long as the handle. A few at most (one per kernel source).
    modules: Mutex<Vec<(ModulesKey, Arc<KernelModules>)>>,
}

// C threads share one handle: it must stay Send and Sync (checked when this compiles).
const _: fn() = || {
    fn shared_by_threads<T: Send + Sync>() {}
    shared_by_threads::<stacksym_symbolizer>();
};

/// Which modules a [`stacksym_kernel_source`] asks for: `None` for the running kernel's.
type ModulesKey = Option<(PathBuf, PathBuf)>;

/// At most this many module finders are kept (the oldest is dropped).
const MAX_MODULE_FINDERS: usize = 8;

/// How to build a symbolizer. Fill it with stacksym_options_init(&options, sizeof options),
/// then change what you need:
///
/// ```c
/// stacksym_options options;
/// stacksym_options_init(&options, sizeof options);
/// options.debug_dirs = dirs;
/// options.debug_dirs_len = 2;
/// err = stacksym_symbolizer_new(&options, &symbolizer);
/// ```
///
/// The struct may grow at its end in a later version: `size` tells the library which fields
/// the program knows (the others keep their defaults), so a program built with this header
/// keeps working with a later library.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_options {
    /// sizeof(stacksym_options) as the program was compiled; stacksym_options_init() sets it.
    pub size: usize,
    /// Demangle C++ and Rust names (default: true).
    pub demangle: bool,
    /// Read DWARF for source lines and inlined frames (default: true).
    pub source_lines: bool,
    /// Look for separate debug files (build-id dirs, .gnu_debuglink, dwz; default: true).
    pub debug_files: bool,
    /// The debug dirs, searched in order; NULL (with debug_dirs_len 0) for the default,
    /// /usr/lib/debug.
    pub debug_dirs: *const *const c_char,
    /// How many debug_dirs there are.
    pub debug_dirs_len: usize,
    /// How many threads one large batch may use (0 or 1: the calling thread only).
    pub threads: u32,
    /// How many files stay open at most (0: the default, 64).
    pub max_open_files: u32,
}

/// The size of the first stacksym_options (this version's): the smallest `size` accepted.
const OPTIONS_SIZE_V1: usize = std::mem::size_of::<stacksym_options>();

/// A `size` larger than this is no struct's size but a field left unset.
const OPTIONS_SIZE_MAX: usize = 4096;

impl stacksym_options {
    fn defaults() -> stacksym_options {
        stacksym_options {
            size: std::mem::size_of::<stacksym_options>(),
            demangle: true,
            source_lines: true,
            debug_files: true,
            debug_dirs: std::ptr::null(),
            debug_dirs_len: 0,
            threads: 1,
            max_open_files: 0,
        }
    }
}

/// Fills `*options` (`size` bytes: pass sizeof(stacksym_options)) with the defaults and sets
/// its `size`: demangling, source lines and debug files on, /usr/lib/debug, one thread, 64
/// open files. Nothing is fetched over the network. Bytes past the fields this library
/// knows (a program built with a later header) are zeroed. STACKSYM_ERR_INVALID_ARGUMENT for
/// a NULL `options` or a `size` smaller than this version's struct.
///
/// Pointers: `options` points to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn stacksym_options_init(
    options: *mut stacksym_options,
    size: usize,
) -> stacksym_err {
    guard(|| {
        check_options_size(size)?;
        if options.is_null() {
            return Err(CError::invalid("options is NULL"));
        }
        let mut defaults = stacksym_options::defaults();
        defaults.size = size;
        let bytes = options.cast::<u8>();
        // SAFETY: by the contract, `size` (at least OPTIONS_SIZE_V1, checked) writable bytes
        // at `options`; the struct is plain data (`repr(C)`, no drop), copied as bytes, and
        // the rest (a later header's fields) zeroed; byte copies need no alignment.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&raw const defaults).cast::<u8>(),
                bytes,
                OPTIONS_SIZE_V1,
            );
            std::ptr::write_bytes(bytes.add(OPTIONS_SIZE_V1), 0, size - OPTIONS_SIZE_V1);
        }
        Ok(())
    })
}

fn check_options_size(size: usize) -> Result<(), CError> {
    if !(OPTIONS_SIZE_V1..=OPTIONS_SIZE_MAX).contains(&size) {
        return Err(CError::invalid(format!(
            "options size is {size}, not sizeof(stacksym_options) ({OPTIONS_SIZE_V1} in \
             stacksym {}): fill the options with stacksym_options_init(&options, sizeof options)",
            env!("CARGO_PKG_VERSION")
        )));
    }
    Ok(())
}

/// The options at `options` (`None` for NULL): this version's fields; the bytes a later
/// header added must be zero (an option this library cannot honour is refused, not ignored).
///
/// # Safety
/// `options` is NULL or points to `options->size` readable bytes.
unsafe fn read_options(options: *const stacksym_options) -> Result<stacksym_options, CError> {
    if options.is_null() {
        return Ok(stacksym_options::defaults());
    }
    // SAFETY: by the contract, the struct starts with its size (a size_t: aligned as the
    // struct is); read before the rest, whose length it gives.
    let size = unsafe { options.cast::<usize>().read() };
    check_options_size(size)?;
    // SAFETY: by the contract, `size` readable bytes, at least this version's struct (checked).
    let options_v1 = unsafe { options.read() };
    // SAFETY: as above: bytes OPTIONS_SIZE_V1..size are the caller's.
    let later = unsafe {
        std::slice::from_raw_parts(
            options.cast::<u8>().add(OPTIONS_SIZE_V1),
            size - OPTIONS_SIZE_V1,
        )
    };
    if let Some(at) = later.iter().position(|&b| b != 0) {
        return Err(CError::invalid(format!(
            "options byte {} is set, past the fields stacksym {} knows (sizeof \
             stacksym_options is {OPTIONS_SIZE_V1} here): an option of a later version",
            OPTIONS_SIZE_V1 + at,
            env!("CARGO_PKG_VERSION")
        )));
    }
    Ok(options_v1)
}

/// Makes a symbolizer with `options` (NULL: the defaults) into `*out`. On failure `*out` is
/// NULL and the code says why: STACKSYM_ERR_INVALID_ARGUMENT for options whose `size` is not
/// set (see stacksym_options_init()), or whose debug_dirs is NULL with a length, or holds a
/// NULL.
///
/// Pointers: `options` is NULL or points to stacksym_options filled by
/// stacksym_options_init(), whose `debug_dirs` (if not NULL) holds `debug_dirs_len`
/// NUL-terminated strings; `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_symbolizer_new(
    options: *const stacksym_options,
    out: *mut *mut stacksym_symbolizer,
) -> stacksym_err {
    guard(|| {
        // SAFETY: by the contract, `out` is NULL (refused) or valid for a write.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: by the contract, `options` is NULL or holds `options->size` bytes.
        let options = unsafe { read_options(options) }?;
        // SAFETY: by the contract, `debug_dirs` holds `debug_dirs_len` C strings.
        let debug_dirs = unsafe { path_list(options.debug_dirs, options.debug_dirs_len) }?;
        let mut builder = Symbolizer::builder()
            .demangle(options.demangle)
            .source_lines(options.source_lines)
            .debug_files(options.debug_files)
            .threads(options.threads.max(1) as usize);
        if let Some(dirs) = debug_dirs {
            builder = builder.debug_dirs(dirs);
        }
        if let Some(count) = NonZeroUsize::new(options.max_open_files as usize) {
            builder = builder.max_open_files(count);
        }
        let handle = Box::new(stacksym_symbolizer {
            inner: builder.build(),
            demangle: options.demangle,
            modules: Mutex::new(Vec::new()),
        });
        *out = Box::into_raw(handle);
        Ok(())
    })
}

/// Frees a symbolizer (NULL is ignored). Results it handed out stay valid: they are blocks
/// of their own.
///
/// Pointers: `symbolizer` is NULL or a handle from stacksym_symbolizer_new(), not freed
/// before and not in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn stacksym_symbolizer_free(symbolizer: *mut stacksym_symbolizer) {
    let _ = guard(|| {
        if !symbolizer.is_null() {
            // SAFETY: by the contract, a live handle made by `Box::into_raw`, freed once.
            drop(unsafe { Box::from_raw(symbolizer) });
        }
        Ok(())
    });
}

/// Where kernel addresses are looked up. Zero-initialize it (`{0}`) for the running kernel:
/// `/proc/kallsyms`, no vmlinux, no modules' files.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_kernel_source {
    /// A kallsyms file; NULL for `/proc/kallsyms` (real addresses need root or
    /// `kernel.kptr_restrict=0`).
    pub kallsyms: *const c_char,
    /// A vmlinux with symbols (and DWARF, for source lines); NULL for none.
    pub vmlinux: *const c_char,
    /// The KASLR offset against `vmlinux`, when known (else it is computed from kallsyms).
    pub kaslr_offset: u64,
    /// Whether `kaslr_offset` is given.
    pub has_kaslr_offset: bool,
    /// Read modules' `.ko` files (names, sizes, source lines) of the running kernel:
    /// `/lib/modules/$(uname -r)` and `/sys/module`. Ignored when `modules_dir` is given.
    pub running_kernel_modules: bool,
    /// A directory to find modules' `.ko` files in (through its `modules.dep`, else a
    /// bounded walk); NULL for none.
    pub modules_dir: *const c_char,
    /// With `modules_dir`: where the modules' load addresses are (a copy of
    /// `/sys/module`); NULL for `/sys/module`.
    pub sys_module_dir: *const c_char,
}

/// Borrowed paths of a [`stacksym_kernel_source`], and its modules finder.
struct KernelPaths<'a> {
    kallsyms: Option<&'a Path>,
    vmlinux: Option<&'a Path>,
    kaslr_offset: Option<u64>,
    modules: Option<Arc<KernelModules>>,
}

impl KernelPaths<'_> {
    fn source(&self) -> KernelSource<'_> {
        KernelSource {
            kallsyms: self.kallsyms,
            vmlinux: self.vmlinux,
            kaslr_offset: self.kaslr_offset.map(LoadBias),
            modules: self.modules.as_deref(),
        }
    }
}

impl stacksym_symbolizer {
    /// The kernel source `kernel` describes (NULL: the running kernel, kallsyms only).
    ///
    /// # Safety
    /// `kernel` is NULL or valid for reads, its strings NULL or NUL-terminated, for `'a`.
    unsafe fn kernel_paths<'a>(
        &self,
        kernel: *const stacksym_kernel_source,
    ) -> Result<KernelPaths<'a>, CError> {
        // SAFETY: by the contract, NULL or valid for reads.
        let Some(kernel) = (unsafe { kernel.as_ref() }) else {
            return Ok(KernelPaths {
                kallsyms: None,
                vmlinux: None,
                kaslr_offset: None,
                modules: None,
            });
        };
        // SAFETY: by the contract, the strings are NULL or NUL-terminated (each `opt_path`
        // below).
        let modules_dir = unsafe { opt_path(kernel.modules_dir) };
        let modules_key = match modules_dir {
            Some(dir) => {
                // SAFETY: as above.
                let sys = unsafe { opt_path(kernel.sys_module_dir) };
                Some(Some((
                    dir.to_path_buf(),
                    sys.unwrap_or(Path::new("/sys/module")).to_path_buf(),
                )))
            }
            None if kernel.running_kernel_modules => Some(None),
            None => None,
        };
        Ok(KernelPaths {
            // SAFETY: as above.
            kallsyms: unsafe { opt_path(kernel.kallsyms) },
            // SAFETY: as above.
            vmlinux: unsafe { opt_path(kernel.vmlinux) },
            kaslr_offset: kernel.has_kaslr_offset.then_some(kernel.kaslr_offset),
            modules: modules_key.map(|key| self.modules_for(key)),
        })
    }

    /// The module finder for `key`, made on first use and kept.
    fn modules_for(&self, key: ModulesKey) -> Arc<KernelModules> {
        let mut finders = self.modules.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, found)) = finders.iter().find(|(k, _)| *k == key) {
            return Arc::clone(found);
        }
        let made = Arc::new(match &key {
            Some((dir, sys)) => KernelModules::new(vec![dir.clone()], sys.clone()),
            None => KernelModules::running_kernel(),
        });
        if finders.len() == MAX_MODULE_FINDERS {
            finders.remove(0);
        }
        finders.push((key, Arc::clone(&made)));
        made
    }
}

/// The name of `code` in `names` (one code type's constants and their names, which the
/// `stacksym_*_name` functions list beside the constants), or "unknown".
fn name_of(code: u32, names: &[(u32, &'static CStr)]) -> *const c_char {
    names
        .iter()
        .find(|(value, _)| *value == code)
        .map_or(c"unknown", |(_, name)| name)
        .as_ptr()
}

/// The handle behind `symbolizer`, or an error for NULL.
///
/// # Safety
/// `symbolizer` is NULL or a live handle, for `'a`.
unsafe fn handle<'a>(
    symbolizer: *const stacksym_symbolizer,
) -> Result<&'a stacksym_symbolizer, CError> {
    // SAFETY: by the contract, NULL or a live handle (shared use is fine: it is Sync).
    unsafe { symbolizer.as_ref() }.ok_or_else(|| CError::invalid("the symbolizer is NULL"))
}

/// The out pointer `out`, set to NULL, or an error for NULL.
///
/// # Safety
/// `out` is NULL or valid for writes of a pointer, for `'a`.
unsafe fn out_slot<'a, T>(out: *mut *mut T) -> Result<&'a mut *mut T, CError> {
    // SAFETY: by the contract, NULL or valid for writes.
    let slot = unsafe { out.as_mut() }.ok_or_else(|| CError::invalid("the out pointer is NULL"))?;
    *slot = std::ptr::null_mut();
    Ok(slot)
}

/// The array `(data, len)`, or an error for NULL with a length.
///
/// # Safety
/// `data` is NULL or points to `len` initialized values, for `'a`.
unsafe fn slice<'a, T>(data: *const T, len: usize, what: &str) -> Result<&'a [T], CError> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(CError::invalid(format!(
            "{what} is NULL with a length of {len}"
        )));
    }
    // SAFETY: by the contract, `len` values at `data`, which is not NULL (and aligned, as
    // any C pointer to T is).
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// The path a C string names, or `None` for NULL.
///
/// # Safety
/// `text` is NULL or a NUL-terminated string, for `'a`.
unsafe fn opt_path<'a>(text: *const c_char) -> Option<&'a Path> {
    if text.is_null() {
        return None;
    }
    // SAFETY: by the contract, a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(text) }.to_bytes();
    Some(Path::new(OsStr::from_bytes(bytes)))
}

/// The path a C string names, or an error naming `what` for NULL.
///
/// # Safety
/// As [`opt_path`].
unsafe fn path<'a>(text: *const c_char, what: &str) -> Result<&'a Path, CError> {
    // SAFETY: by the contract.
    unsafe { opt_path(text) }.ok_or_else(|| CError::invalid(format!("{what} is NULL")))
}

/// The paths of `len` C strings at `list` (`None` for a NULL list of length 0).
///
/// # Safety
/// `list` is NULL or holds `len` NUL-terminated strings. NULL with a length is an error (the
/// header calls it invalid), not the default.
unsafe fn path_list(
    list: *const *const c_char,
    len: usize,
) -> Result<Option<Vec<PathBuf>>, CError> {
    if list.is_null() && len == 0 {
        return Ok(None);
    }
    // SAFETY: by the contract, `len` pointers at `list` (NULL with a length is refused).
    let items = unsafe { slice(list, len, "debug_dirs") }?;
    items
        .iter()
        // SAFETY: by the contract, each is NUL-terminated (NULL is refused).
        .map(|&item| unsafe { path(item, "a debug dir") }.map(Path::to_path_buf))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}
