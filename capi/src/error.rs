//! Errors across the C boundary: a code ([`stacksym_err`]) returned by every call, and the
//! message kept per thread ([`stacksym_last_error`]). Every entry point runs inside
//! [`guard`], so a panic (a bug) becomes [`STACKSYM_ERR_INTERNAL`] instead of unwinding into
//! C, which would be undefined behaviour.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What every call returns: STACKSYM_OK (0), or one of the STACKSYM_ERR_* codes, one per
/// condition; the message is then stacksym_last_error()'s.
#[allow(non_camel_case_types)]
pub type stacksym_err = i32;

/// Success.
pub const STACKSYM_OK: stacksym_err = 0;
/// A NULL pointer where one is required, an unknown constant, a length without its array,
/// or a request that does not fit its source (file offsets for a debug file found by
/// build-id).
pub const STACKSYM_ERR_INVALID_ARGUMENT: stacksym_err = 1;
/// A file does not exist, or no file with the build-id asked for is in the debug dirs. (A
/// process that does not exist is STACKSYM_ERR_PROCESS_GONE.)
pub const STACKSYM_ERR_NOT_FOUND: stacksym_err = 2;
/// The operating system refused: a file, a process's maps or memory, /sys/module without
/// root; or the kernel hides its addresses (kernel.kptr_restrict, no CAP_SYSLOG) from
/// stacksym_find_kernel(), whose answers would all be 0. (stacksym_symbolize_kernel() and
/// stacksym_symbolize_stack() succeed then, each kernel address answering
/// STACKSYM_KERNEL_ADDRS_HIDDEN with the same message: the other addresses of the batch
/// still get their answers.)
pub const STACKSYM_ERR_PERMISSION_DENIED: stacksym_err = 3;
/// The process does not exist: it exited before or while it was read (routine for a
/// profiler), or never existed: what a call given a pid answers when it must read a process
/// that is not there (never STACKSYM_ERR_NOT_FOUND).
pub const STACKSYM_ERR_PROCESS_GONE: stacksym_err = 4;
/// The input is malformed: not an ELF file, a broken ELF or DWARF structure, a maps or
/// kallsyms file that does not parse. The message names the file and what was wrong.
pub const STACKSYM_ERR_MALFORMED: stacksym_err = 5;
/// A well-formed file uses something this library does not read, or the path is not a
/// regular file.
pub const STACKSYM_ERR_UNSUPPORTED: stacksym_err = 6;
/// A debuginfod server could not be used.
pub const STACKSYM_ERR_NETWORK: stacksym_err = 7;
/// Another I/O error (the message has the operating system's words), or a failure this
/// version of the C API has no code for.
pub const STACKSYM_ERR_IO: stacksym_err = 8;
/// A bug in stacksym (a panic, caught at the boundary) or no memory for a result.
pub const STACKSYM_ERR_INTERNAL: stacksym_err = 9;

/// An error on its way to C: a code and a message.
#[derive(Debug)]
pub(crate) struct CError {
    pub(crate) code: stacksym_err,
    pub(crate) message: String,
}

impl CError {
    pub(crate) fn invalid(message: impl Into<String>) -> CError {
        CError {
            code: STACKSYM_ERR_INVALID_ARGUMENT,
            message: message.into(),
        }
    }

    pub(crate) fn internal(message: impl Into<String>) -> CError {
        CError {
            code: STACKSYM_ERR_INTERNAL,
            message: message.into(),
        }
    }
}

impl From<stacksym::Error> for CError {
    fn from(error: stacksym::Error) -> CError {
        CError {
            code: code_of(&error),
            message: error.to_string(),
        }
    }
}

/// The code of a library error: its [`stacksym::ErrorKind`], one code per kind.
fn code_of(error: &stacksym::Error) -> stacksym_err {
    use stacksym::ErrorKind;
    match error.kind() {
        ErrorKind::ProcessGone => STACKSYM_ERR_PROCESS_GONE,
        ErrorKind::PermissionDenied => STACKSYM_ERR_PERMISSION_DENIED,
        ErrorKind::NotFound => STACKSYM_ERR_NOT_FOUND,
        ErrorKind::Malformed => STACKSYM_ERR_MALFORMED,
        ErrorKind::Unsupported => STACKSYM_ERR_UNSUPPORTED,
        ErrorKind::InvalidRequest => STACKSYM_ERR_INVALID_ARGUMENT,
        ErrorKind::Network => STACKSYM_ERR_NETWORK,
        ErrorKind::Io => STACKSYM_ERR_IO,
        // `ErrorKind` is non-exhaustive: a kind added later than this C API answers as
        // another failure until it gets a code of its own; the message still says what.
        _ => STACKSYM_ERR_IO,
    }
}

thread_local! {
    /// The message of this thread's last failed call.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn set_last_error(message: String) {
    // A message holds no NUL (paths and the library's words); cut at one to be sure.
    let message = match CString::new(message) {
        Ok(message) => message,
        Err(e) => {
            let nul = e.nul_position();
            let mut bytes = e.into_vec();
            bytes.truncate(nul);
            CString::new(bytes).unwrap_or_default()
        }
    };
    // `try_with`: during thread teardown the slot may be gone; the code still tells.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = Some(message));
}

/// Runs an entry point's body: its error becomes a code and this thread's message, a panic
/// becomes [`STACKSYM_ERR_INTERNAL`] (it never unwinds into C).
pub(crate) fn guard(body: impl FnOnce() -> Result<(), CError>) -> stacksym_err {
    // AssertUnwindSafe: after a panic nothing the body touched is used again by this call,
    // and the library's shared state (caches behind mutexes) recovers from poisoning.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => STACKSYM_OK,
        Ok(Err(error)) => {
            set_last_error(error.message);
            error.code
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            set_last_error(format!("internal error in stacksym (a bug): {what}"));
            STACKSYM_ERR_INTERNAL
        }
    }
}

/// The message of this thread's last failed call (the file and what was wrong), or NULL if
/// no call failed on this thread yet. Valid until the next failed call on this thread; a
/// successful call leaves it as it was (as errno).
#[no_mangle]
pub extern "C" fn stacksym_last_error() -> *const c_char {
    catch_unwind(|| {
        LAST_ERROR
            .try_with(|slot| {
                slot.borrow()
                    .as_ref()
                    .map_or(std::ptr::null(), |m| m.as_ptr())
            })
            .unwrap_or(std::ptr::null())
    })
    .unwrap_or(std::ptr::null())
}

/// The name of an error code ("STACKSYM_ERR_NOT_FOUND"), a static string; "unknown" for a
/// code this library does not return.
#[no_mangle]
pub extern "C" fn stacksym_err_name(code: stacksym_err) -> *const c_char {
    let name: &'static [u8] = match code {
        STACKSYM_OK => b"STACKSYM_OK\0",
        STACKSYM_ERR_INVALID_ARGUMENT => b"STACKSYM_ERR_INVALID_ARGUMENT\0",
        STACKSYM_ERR_NOT_FOUND => b"STACKSYM_ERR_NOT_FOUND\0",
        STACKSYM_ERR_PERMISSION_DENIED => b"STACKSYM_ERR_PERMISSION_DENIED\0",
        STACKSYM_ERR_PROCESS_GONE => b"STACKSYM_ERR_PROCESS_GONE\0",
        STACKSYM_ERR_MALFORMED => b"STACKSYM_ERR_MALFORMED\0",
        STACKSYM_ERR_UNSUPPORTED => b"STACKSYM_ERR_UNSUPPORTED\0",
        STACKSYM_ERR_NETWORK => b"STACKSYM_ERR_NETWORK\0",
        STACKSYM_ERR_IO => b"STACKSYM_ERR_IO\0",
        STACKSYM_ERR_INTERNAL => b"STACKSYM_ERR_INTERNAL\0",
        _ => b"unknown\0",
    };
    name.as_ptr().cast()
}
