//! Normalization from C: [`stacksym_normalize`] turns absolute addresses of a process into
//! (build-id, file offset, virtual address, path), to symbolize later or elsewhere with
//! [`crate::stacksym_symbolize_build_id`].

use std::ffi::c_char;

use stacksym::process::{Normalized, Process};
use stacksym::AbsAddr;

use crate::block::{free_block, Block, Bytes, Pool, Str};
use crate::error::{guard, stacksym_err};
use crate::symbols::mapping_name;
use crate::{handle, name_of, out_slot, slice, stacksym_symbolizer};

/// What an address normalized to: `STACKSYM_NORM_*`.
pub type stacksym_norm_kind = u32;
/// The address is in a file mapping: `path`, `file_offset`, and where known `virt_addr` and
/// `build_id`.
pub const STACKSYM_NORM_FILE: stacksym_norm_kind = 0;
/// Mapped, but not from a file; `path` names the mapping (`[heap]`, `[vdso]`, ...).
pub const STACKSYM_NORM_NOT_IN_FILE: stacksym_norm_kind = 1;
/// No mapping holds the address.
pub const STACKSYM_NORM_UNMAPPED: stacksym_norm_kind = 2;

/// One normalized address.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_normalized_addr {
    /// The absolute address as it was given.
    pub input: u64,
    /// What it normalized to.
    pub kind: stacksym_norm_kind,
    /// The file's path as the process's maps name it (inside the process's root); for
    /// `STACKSYM_NORM_NOT_IN_FILE` the mapping's name; NULL when unmapped.
    pub path: *const c_char,
    /// The offset in the file.
    pub file_offset: u64,
    /// Whether `virt_addr` is known (the file was read and a segment holds the offset).
    pub has_virt_addr: bool,
    /// Whether the file was deleted or replaced after it was mapped.
    pub deleted: bool,
    /// The ELF virtual address at `file_offset`: what a debug file understands.
    pub virt_addr: u64,
    /// The file's GNU build-id (`build_id_len` bytes); NULL if none.
    pub build_id: *const u8,
    /// The length of `build_id`.
    pub build_id_len: usize,
}

/// The normalized addresses of one call, in input order; one block, freed by
/// stacksym_normalized_free().
#[repr(C)]
#[derive(Debug)]
pub struct stacksym_normalized {
    /// The number of `addrs` (the number of addresses given).
    pub len: usize,
    /// The normalized addresses.
    pub addrs: *const stacksym_normalized_addr,
}

/// Normalizes `len` absolute addresses of process `pid`: for each, the file it is in, the
/// offset in it, the ELF virtual address there and the file's build-id. On success `*out`
/// holds them (free with stacksym_normalized_free()); on failure `*out` is NULL:
/// STACKSYM_ERR_PROCESS_GONE when the process does not exist (any more).
///
/// Pointers: `symbolizer` is a live handle; `addrs` points to `len` values (or is NULL with `len`
/// 0); `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_normalize(
    symbolizer: *const stacksym_symbolizer,
    pid: u32,
    addrs: *const u64,
    len: usize,
    out: *mut *mut stacksym_normalized,
) -> stacksym_err {
    guard(|| {
        // SAFETY: by the contract, NULL (refused) or writable.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: by the contract, NULL (refused) or a live handle.
        let handle = unsafe { handle(symbolizer) }?;
        // SAFETY: by the contract, `len` values at `addrs`.
        let addrs = unsafe { slice(addrs, len, "addrs") }?;
        let normalized = handle
            .inner
            .normalize(&Process::new(pid), AbsAddr::from_raw_slice(addrs))?;
        struct Flat {
            kind: stacksym_norm_kind,
            path: Str,
            file_offset: u64,
            virt_addr: Option<u64>,
            deleted: bool,
            build_id: Bytes,
        }
        let mut pool = Pool::default();
        let flat: Vec<Flat> = normalized
            .iter()
            .map(|n| match n {
                Normalized::File(file) => Flat {
                    kind: STACKSYM_NORM_FILE,
                    path: pool.str(file.path.as_os_str().as_encoded_bytes()),
                    file_offset: file.file_offset.0,
                    virt_addr: file.virt_addr.map(|v| v.0),
                    deleted: file.deleted,
                    build_id: pool.bytes(file.build_id.as_deref()),
                },
                Normalized::NotInFile(kind) => Flat {
                    kind: STACKSYM_NORM_NOT_IN_FILE,
                    path: pool.str(mapping_name(kind)),
                    file_offset: 0,
                    virt_addr: None,
                    deleted: false,
                    build_id: Bytes::NONE,
                },
                Normalized::Unmapped => Flat {
                    kind: STACKSYM_NORM_UNMAPPED,
                    path: Str::NONE,
                    file_offset: 0,
                    virt_addr: None,
                    deleted: false,
                    build_id: Bytes::NONE,
                },
            })
            .collect();
        let mut block =
            Block::<stacksym_normalized, stacksym_normalized_addr, u8>::new(flat.len(), 0, &pool)?;
        let at = block.bases();
        for (n, &input) in flat.iter().zip(addrs) {
            let (build_id, build_id_len) = at.bytes(n.build_id);
            block.push_a(stacksym_normalized_addr {
                input,
                kind: n.kind,
                path: at.str(n.path),
                file_offset: n.file_offset,
                has_virt_addr: n.virt_addr.is_some(),
                deleted: n.deleted,
                virt_addr: n.virt_addr.unwrap_or(0),
                build_id,
                build_id_len,
            })?;
        }
        *out = block.finish(stacksym_normalized {
            len: flat.len(),
            addrs: at.a(0),
        })?;
        Ok(())
    })
}

/// Frees the result of stacksym_normalize() (NULL is ignored).
///
/// Pointers: `normalized` is NULL or a result of stacksym_normalize(), not freed before.
#[no_mangle]
pub unsafe extern "C" fn stacksym_normalized_free(normalized: *mut stacksym_normalized) {
    // SAFETY: by the contract, NULL or a block `Block::finish` handed out, freed once.
    unsafe { free_block(normalized) }
}

/// The name of a normalized address kind ("STACKSYM_NORM_FILE"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_norm_kind_name(kind: stacksym_norm_kind) -> *const c_char {
    name_of(
        kind,
        &[
            (STACKSYM_NORM_FILE, c"STACKSYM_NORM_FILE"),
            (STACKSYM_NORM_NOT_IN_FILE, c"STACKSYM_NORM_NOT_IN_FILE"),
            (STACKSYM_NORM_UNMAPPED, c"STACKSYM_NORM_UNMAPPED"),
        ],
    )
}
