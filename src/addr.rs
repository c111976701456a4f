//! The kinds of addresses this crate deals with, as distinct types.
//!
//! A profiler sees absolute addresses in a process; an ELF file speaks in virtual addresses
//! (`st_value`, `p_vaddr`) and file offsets. Mixing them up is the classic symbolizer bug, so
//! each kind has its own type and the conversions live in one place
//! ([`crate::elf::Segments`]).

use std::fmt;

/// A virtual address as the ELF file states it (`st_value`, `p_vaddr`): for a PIE or shared
/// library this is relative to the load bias, for a non-PIE executable it is absolute.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct VirtAddr(pub u64);

/// An absolute address in a process's address space, as a profiler or tracer captures it
/// (an instruction pointer, a return address). Converted to a [`FileOffset`] through the
/// mapping that covers it ([`crate::process::Mapping::file_offset`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct AbsAddr(pub u64);

/// An offset into the file's bytes, as `/proc/PID/maps` offsets and perf's `pgoff` give them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct FileOffset(pub u64);

impl fmt::Debug for VirtAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VirtAddr({:#x})", self.0)
    }
}

impl fmt::Debug for FileOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileOffset({:#x})", self.0)
    }
}

impl fmt::LowerHex for VirtAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

impl fmt::LowerHex for FileOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

impl fmt::Debug for AbsAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AbsAddr({:#x})", self.0)
    }
}

impl fmt::LowerHex for AbsAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

/// Zero-copy views between raw `u64` slices and slices of one address kind (each kind is
/// `#[repr(transparent)]` over `u64`), so that a profiler's buffer of captured addresses is
/// given its kind without a copy: `Input::AbsAddrs(AbsAddr::from_raw_slice(&ips))`.
macro_rules! raw_slices {
    ($($kind:ident),*) => {$(
        impl $kind {
            /// Views raw addresses as this kind, without copying.
            pub fn from_raw_slice(raw: &[u64]) -> &[$kind] {
                // SAFETY: the type is `#[repr(transparent)]` over `u64`: same size, alignment
                // and validity, so a `[u64]` is a valid `[Self]` of the same length.
                unsafe { std::slice::from_raw_parts(raw.as_ptr().cast::<$kind>(), raw.len()) }
            }

            /// Views addresses of this kind as raw `u64`s, without copying.
            pub fn as_raw_slice(addrs: &[$kind]) -> &[u64] {
                // SAFETY: as in `from_raw_slice`, the other way round.
                unsafe { std::slice::from_raw_parts(addrs.as_ptr().cast::<u64>(), addrs.len()) }
            }
        }

        impl From<u64> for $kind {
            fn from(raw: u64) -> $kind {
                $kind(raw)
            }
        }

        impl From<$kind> for u64 {
            fn from(addr: $kind) -> u64 {
                addr.0
            }
        }
    )*};
}

raw_slices!(VirtAddr, AbsAddr, FileOffset);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_slices_round_trip_without_copying() {
        let raw = [1u64, 0xffff_ffff_ffff_ffff, 0x401000];
        let abs = AbsAddr::from_raw_slice(&raw);
        assert_eq!(abs, &[AbsAddr(1), AbsAddr(u64::MAX), AbsAddr(0x401000)]);
        assert_eq!(AbsAddr::as_raw_slice(abs).as_ptr(), raw.as_ptr());
        assert_eq!(VirtAddr::from_raw_slice(&raw)[2], VirtAddr(0x401000));
        assert_eq!(
            FileOffset::as_raw_slice(FileOffset::from_raw_slice(&raw)),
            &raw
        );
    }
}
