//! One result, one allocation: a header, up to two arrays and the strings they point to,
//! laid out in a single `malloc` block that one `free` releases.
//!
//! A result is built in two steps. First the answers are flattened in Rust: strings and
//! byte strings go into a [`Pool`] (deduplicated, each NUL-terminated) and are referred to
//! by offsets ([`Str`], [`Bytes`]); the arrays' elements are counted. Then [`Block::new`]
//! allocates header + arrays + pool in one block and copies the pool in, and the caller
//! writes each element, now that the pool's and arrays' addresses are known ([`Bases`]).
//!
//! ```text
//! | header H | A[0] A[1] ... | B[0] B[1] ... | pool: "name\0path\0..." |
//! ```

use std::collections::HashMap;
use std::ffi::c_char;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::ptr::{self, NonNull};

use crate::error::CError;

/// A string in a [`Pool`]: its offset, or none (a NULL pointer in C).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Str(Option<usize>);

impl Str {
    /// No string: NULL.
    pub(crate) const NONE: Str = Str(None);
}

/// A byte string in a [`Pool`]: offset and length, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bytes(Option<(usize, usize)>);

impl Bytes {
    /// No bytes: NULL and length 0.
    pub(crate) const NONE: Bytes = Bytes(None);
}

/// The strings of one result, back to back, each NUL-terminated, each distinct string once
/// (a batch repeats its module paths and source files on every address).
#[derive(Debug, Default)]
pub(crate) struct Pool {
    bytes: Vec<u8>,
    seen: HashMap<Vec<u8>, usize>,
}

impl Pool {
    /// `text` as a C string. A C string ends at its first NUL, so the text is cut there
    /// (names, paths and messages hold none; a hostile file's bytes are still bounded).
    pub(crate) fn str(&mut self, text: impl AsRef<[u8]>) -> Str {
        let text = text.as_ref();
        let text = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())];
        Str(Some(self.intern(text)))
    }

    /// `text` as a C string, or NULL.
    pub(crate) fn opt_str<T: AsRef<[u8]>>(&mut self, text: Option<T>) -> Str {
        match text {
            Some(text) => self.str(text),
            None => Str::NONE,
        }
    }

    /// Bytes that may hold NULs (a build-id), with their length.
    pub(crate) fn bytes(&mut self, bytes: Option<&[u8]>) -> Bytes {
        match bytes {
            Some(bytes) => Bytes(Some((self.intern(bytes), bytes.len()))),
            None => Bytes::NONE,
        }
    }

    fn intern(&mut self, bytes: &[u8]) -> usize {
        if let Some(&offset) = self.seen.get(bytes) {
            return offset;
        }
        let offset = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        self.bytes.push(0);
        self.seen.insert(bytes.to_vec(), offset);
        offset
    }
}

/// Where the pool and the arrays of an allocated [`Block`] are, to turn [`Str`] and
/// [`Bytes`] into pointers and array indexes into pointers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bases<A, B> {
    pool: *const u8,
    a: *const A,
    b: *const B,
}

impl<A, B> Bases<A, B> {
    /// The C string `s` (NULL for none).
    pub(crate) fn str(&self, s: Str) -> *const c_char {
        match s.0 {
            // The offset lies inside the pool, which the block holds whole (`Block::new`),
            // so `wrapping_add` stays in the allocation and yields its true address.
            Some(offset) => self.pool.wrapping_add(offset).cast(),
            None => ptr::null(),
        }
    }

    /// The byte string `b`: pointer (NULL for none) and length.
    pub(crate) fn bytes(&self, b: Bytes) -> (*const u8, usize) {
        match b.0 {
            Some((offset, len)) => (self.pool.wrapping_add(offset), len),
            None => (ptr::null(), 0),
        }
    }

    /// The elements `start..` of the first array (`start` at most its length: then the
    /// pointer is one past its end, valid for a length of 0).
    pub(crate) fn a(&self, start: usize) -> *const A {
        self.a.wrapping_add(start)
    }

    /// The elements `start..` of the second array, as for [`Bases::a`].
    pub(crate) fn b(&self, start: usize) -> *const B {
        self.b.wrapping_add(start)
    }
}

/// A block being filled: the header `H`, `a_len` elements of `A`, `b_len` of `B`, then the
/// pool. Freed on drop unless [`Block::finish`] hands it to the caller, so an error or a
/// panic halfway leaks nothing.
pub(crate) struct Block<H, A, B> {
    base: NonNull<u8>,
    a: *mut A,
    b: *mut B,
    a_len: usize,
    b_len: usize,
    a_written: usize,
    b_written: usize,
    pool: *const u8,
    _types: PhantomData<(H, A, B)>,
}

/// `malloc`'s guaranteed alignment on the platforms this crate builds for (x86_64 and
/// aarch64 glibc and musl: 16 bytes, `max_align_t`).
const MALLOC_ALIGN: usize = 16;

/// `offset` rounded up to `align` (a power of two), or `None` on overflow.
fn align_up(offset: usize, align: usize) -> Option<usize> {
    Some(offset.checked_add(align - 1)? & !(align - 1))
}

impl<H, A, B> Block<H, A, B> {
    /// Allocates the block for `a_len` + `b_len` elements and `pool`, and copies the pool in.
    pub(crate) fn new(a_len: usize, b_len: usize, pool: &Pool) -> Result<Self, CError> {
        const {
            assert!(align_of::<H>() <= MALLOC_ALIGN);
            assert!(align_of::<A>() <= MALLOC_ALIGN);
            assert!(align_of::<B>() <= MALLOC_ALIGN);
            assert!(size_of::<H>() > 0);
        }
        let too_large = || CError::internal("a result too large for memory");
        let a_offset = align_up(size_of::<H>(), align_of::<A>()).ok_or_else(too_large)?;
        let a_end = size_of::<A>()
            .checked_mul(a_len)
            .and_then(|size| size.checked_add(a_offset))
            .ok_or_else(too_large)?;
        let b_offset = align_up(a_end, align_of::<B>()).ok_or_else(too_large)?;
        let pool_offset = size_of::<B>()
            .checked_mul(b_len)
            .and_then(|size| size.checked_add(b_offset))
            .ok_or_else(too_large)?;
        let total = pool_offset
            .checked_add(pool.bytes.len())
            .filter(|&total| total <= isize::MAX as usize)
            .ok_or_else(too_large)?;
        // SAFETY: malloc may be called with any size; `total` is at least `size_of::<H>()`,
        // which is not 0, so a non-NULL result is a fresh block of `total` bytes.
        let raw = unsafe { libc::malloc(total) };
        let base = NonNull::new(raw.cast::<u8>())
            .ok_or_else(|| CError::internal("out of memory for a result"))?;
        let at = |offset: usize| base.as_ptr().wrapping_add(offset);
        let pool_at = at(pool_offset);
        // SAFETY: the pool's bytes end at `total`, inside the block just allocated, which
        // nothing else refers to yet; the source is a Vec, which cannot overlap it.
        unsafe { ptr::copy_nonoverlapping(pool.bytes.as_ptr(), pool_at, pool.bytes.len()) };
        Ok(Block {
            base,
            // Offsets rounded up to the element's alignment from a base aligned to 16.
            a: at(a_offset).cast(),
            b: at(b_offset).cast(),
            a_len,
            b_len,
            a_written: 0,
            b_written: 0,
            pool: pool_at,
            _types: PhantomData,
        })
    }

    /// The addresses to build elements with.
    pub(crate) fn bases(&self) -> Bases<A, B> {
        Bases {
            pool: self.pool,
            a: self.a,
            b: self.b,
        }
    }

    /// Writes the next element of the first array.
    pub(crate) fn push_a(&mut self, value: A) -> Result<(), CError> {
        if self.a_written == self.a_len {
            return Err(CError::internal(
                "a result's element count changed while built",
            ));
        }
        // SAFETY: `a_written < a_len`, so the slot lies inside the array `new` sized, aligned
        // for `A`; it is written once (the count only grows) and never read before.
        unsafe { self.a.add(self.a_written).write(value) };
        self.a_written += 1;
        Ok(())
    }

    /// Writes the next element of the second array.
    pub(crate) fn push_b(&mut self, value: B) -> Result<(), CError> {
        if self.b_written == self.b_len {
            return Err(CError::internal(
                "a result's element count changed while built",
            ));
        }
        // SAFETY: as in `push_a`, for the second array.
        unsafe { self.b.add(self.b_written).write(value) };
        self.b_written += 1;
        Ok(())
    }

    /// Writes the header and hands the block to the caller, who frees it with `free`; every
    /// element must have been written.
    pub(crate) fn finish(self, header: H) -> Result<*mut H, CError> {
        if self.a_written != self.a_len || self.b_written != self.b_len {
            return Err(CError::internal("a result was handed out half built"));
        }
        let header_at = self.base.as_ptr().cast::<H>();
        // SAFETY: the header sits at the block's start, aligned (malloc's alignment is at
        // least H's, checked in `new`) and `size_of::<H>()` bytes long, not yet written.
        unsafe { header_at.write(header) };
        std::mem::forget(self);
        Ok(header_at)
    }
}

impl<H, A, B> Drop for Block<H, A, B> {
    fn drop(&mut self) {
        // The elements are plain C data (pointers, integers): nothing to drop but the block.
        // SAFETY: `base` came from malloc in `new` and was not handed out (`finish` forgets
        // the block instead of dropping it), so it is freed exactly once.
        unsafe { libc::free(self.base.as_ptr().cast()) };
    }
}

/// Frees a block `finish` handed out; NULL is ignored.
///
/// # Safety
/// `block` is NULL or a pointer [`Block::finish`] returned, not freed before.
pub(crate) unsafe fn free_block<H>(block: *mut H) {
    // SAFETY: by the contract, `block` is NULL (which free ignores) or the start of a live
    // malloc block.
    unsafe { libc::free(block.cast()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    struct Header {
        len: usize,
        items: *const Item,
    }

    #[repr(C)]
    struct Item {
        name: *const c_char,
        value: u32,
    }

    #[test]
    fn strings_are_interned_and_cut_at_nul() {
        let mut pool = Pool::default();
        let a = pool.str("libc.so.6");
        let b = pool.str(b"libc.so.6\0tail");
        assert_eq!(a, b);
        assert_eq!(pool.bytes, b"libc.so.6\0");
        assert_eq!(pool.opt_str(None::<&str>), Str::NONE);
    }

    #[test]
    fn a_block_holds_its_arrays_and_strings() {
        let mut pool = Pool::default();
        let names: Vec<Str> = ["main", "checksum", "main"]
            .iter()
            .map(|n| pool.str(n))
            .collect();
        let mut block = Block::<Header, Item, u8>::new(names.len(), 0, &pool).unwrap();
        let bases = block.bases();
        for (i, name) in names.iter().enumerate() {
            block
                .push_a(Item {
                    name: bases.str(*name),
                    value: i as u32,
                })
                .unwrap();
        }
        let header = block
            .finish(Header {
                len: names.len(),
                items: bases.a(0),
            })
            .unwrap();
        // SAFETY: `header` is the block just finished; its items are initialized.
        unsafe {
            let items = std::slice::from_raw_parts((*header).items, (*header).len);
            let name = |i: usize| std::ffi::CStr::from_ptr(items[i].name).to_str().unwrap();
            assert_eq!((name(0), name(1), name(2)), ("main", "checksum", "main"));
            assert_eq!(
                items[0].name, items[2].name,
                "one copy of a repeated string"
            );
            assert_eq!(items[2].value, 2);
            free_block(header);
        }
    }

    #[test]
    fn a_half_built_block_is_refused_and_freed() {
        let pool = Pool::default();
        let mut block = Block::<Header, Item, u8>::new(2, 0, &pool).unwrap();
        block
            .push_a(Item {
                name: ptr::null(),
                value: 0,
            })
            .unwrap();
        let items = block.bases().a(0);
        assert!(block.finish(Header { len: 2, items }).is_err());
        let mut block = Block::<Header, Item, u8>::new(0, 0, &pool).unwrap();
        assert!(block
            .push_a(Item {
                name: ptr::null(),
                value: 0
            })
            .is_err());
    }
}
