//! The C API of stacksym (`include/stacksym.h`, generated from this crate by cbindgen).
//!
//! - A handle, [`stacksym_symbolizer`], made by [`stacksym_symbolizer_new`] and freed by
//!   [`stacksym_symbolizer_free`]: the library's `Symbolizer`, thread-safe, with its caches.
//! - Calls that symbolize (an ELF file, a build-id, a process, the kernel, a mixed stack),
//!   normalize, find names, and unwind a process or a perf sample and symbolize its frames. Each returns a [`stacksym_err`] and hands its result out
//!   through an out pointer: one `malloc` block (`block.rs`) that one `*_free` call releases.
//! - Errors: a code, and the message per thread ([`stacksym_last_error`]).
//!
//! Every entry point checks its pointers and runs inside `error::guard` (no panic crosses
//! into C). Pointers the caller passes are borrowed for the call only.

#![deny(missing_docs)]
#![allow(non_camel_case_types)]

mod block;
mod error;
mod find;
mod normalize;
mod symbols;
mod unwind;

use std::ffi::{c_char, CStr, OsStr};
use std::num::NonZeroUsize;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use stacksym::kernel::KernelModules;
use stacksym::{KernelSource, Symbolizer};

pub use error::*;
pub use find::*;
pub use normalize::*;
pub use symbols::*;
pub use unwind::*;

use error::{guard, CError};

/// The symbolizer: caches of opened files, process maps and kallsyms. Thread-safe: one handle
/// may be used by any number of threads at once. Opaque; made by
/// [`stacksym_symbolizer_new`], freed by [`stacksym_symbolizer_free`].
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

/// How to build a symbolizer. Get the defaults from [`stacksym_options_default`] and change
/// what you need; a NULL options pointer means the defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_options {
    /// Demangle C++ and Rust names (default: true).
    pub demangle: bool,
    /// Read DWARF for source lines and inlined frames (default: true).
    pub source_lines: bool,
    /// Look for separate debug files (build-id dirs, `.gnu_debuglink`, dwz; default: true).
    pub debug_files: bool,
    /// The debug dirs, searched in order; NULL for the default (`/usr/lib/debug`).
    pub debug_dirs: *const *const c_char,
    /// How many `debug_dirs` there are.
    pub debug_dirs_len: usize,
    /// How many threads one large batch may use (0 or 1: the calling thread only).
    pub threads: u32,
    /// How many files stay open at most (0: the default, 64).
    pub max_open_files: u32,
}

/// The default options: demangling, source lines and debug files on, `/usr/lib/debug`, one
/// thread, 64 open files. Nothing is fetched over the network.
#[no_mangle]
pub extern "C" fn stacksym_options_default() -> stacksym_options {
    stacksym_options {
        demangle: true,
        source_lines: true,
        debug_files: true,
        debug_dirs: std::ptr::null(),
        debug_dirs_len: 0,
        threads: 1,
        max_open_files: 0,
    }
}

/// Makes a symbolizer with `options` (NULL: the defaults) into `*out`. On failure `*out` is
/// NULL and the code says why.
///
/// # Safety
/// `options` is NULL or points to a valid `stacksym_options` whose `debug_dirs` (if not
/// NULL) holds `debug_dirs_len` NUL-terminated strings; `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_symbolizer_new(
    options: *const stacksym_options,
    out: *mut *mut stacksym_symbolizer,
) -> stacksym_err {
    guard(|| {
        // SAFETY: by the contract, `out` is NULL (refused) or valid for a write.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: by the contract, `options` is NULL or valid for reads.
        let options = match unsafe { options.as_ref() } {
            Some(options) => *options,
            None => stacksym_options_default(),
        };
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
/// # Safety
/// `symbolizer` is NULL or a handle from [`stacksym_symbolizer_new`], not freed before and
/// not in use by another thread.
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
            kaslr_offset: self.kaslr_offset,
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
        // SAFETY (each `opt_path`): by the contract, the strings are NULL or NUL-terminated.
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

/// The paths of `len` C strings at `list` (`None` for a NULL list).
///
/// # Safety
/// `list` is NULL or holds `len` NUL-terminated strings.
unsafe fn path_list(
    list: *const *const c_char,
    len: usize,
) -> Result<Option<Vec<PathBuf>>, CError> {
    if list.is_null() {
        return Ok(None);
    }
    // SAFETY: by the contract, `len` pointers at `list`.
    let items = unsafe { slice(list, len, "debug_dirs") }?;
    items
        .iter()
        // SAFETY: by the contract, each is NUL-terminated (NULL is refused).
        .map(|&item| unsafe { path(item, "a debug dir") }.map(Path::to_path_buf))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}
