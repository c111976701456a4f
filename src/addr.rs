//! The kinds of addresses this crate deals with, as distinct types.
//!
//! A profiler sees absolute addresses in a process; an ELF file speaks in virtual addresses
//! (`st_value`, `p_vaddr`) and file offsets. Mixing them up is the classic symbolizer bug, so
//! each kind has its own type and the conversions live in one place: arithmetic within a kind
//! here (checked where it can overflow, wrapping where the modular result is the meaning, as
//! for a load bias), between a file's addresses and its offsets in [`crate::elf::Segments`],
//! between a process's addresses and a file's through a [`LoadBias`] or a mapping
//! ([`crate::process::Mapping::file_offset`]).
//!
//! Register values (a stack pointer, a frame pointer, a CFA) stay plain `u64`: they are data
//! the unwinder computes with, and only become an [`AbsAddr`] where they are answered as an
//! address (a frame's return address, where memory could not be read).

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

impl AbsAddr {
    /// Whether this is a kernel address: the top bit set. On x86_64 and aarch64 (and every
    /// 64-bit Linux port with a split address space) user space never has it set, and the
    /// kernel's half of the address space always does, whatever its virtual address size.
    /// [`crate::Source::Stack`] sends such addresses to the kernel.
    ///
    /// ```
    /// use stacksym::AbsAddr;
    /// assert!(AbsAddr(0xffff_ffff_8100_0000).is_kernel()); // x86_64 kernel text
    /// assert!(!AbsAddr(0x7fff_ffff_f000).is_kernel()); // top of x86_64 user space
    /// ```
    pub fn is_kernel(self) -> bool {
        self.0 & (1 << 63) != 0
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

/// Where a symbol starts, in the kind of address its source states: an answer from an ELF
/// file's symbol table or DWARF gives the file's virtual address, one from kallsyms, a perf
/// map or a jitdump gives the absolute address they list.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymAddr {
    /// An ELF virtual address of the file (`st_value`; vmlinux and a `.ko` at their layout
    /// address).
    Virt(VirtAddr),
    /// An absolute address in the process or the kernel (kallsyms, perf maps, jitdump).
    Abs(AbsAddr),
}

impl SymAddr {
    /// The address as a number, whatever its kind (for printing and the C API).
    #[inline]
    pub fn raw(self) -> u64 {
        match self {
            SymAddr::Virt(virt) => virt.0,
            SymAddr::Abs(abs) => abs.0,
        }
    }

    /// The virtual address, if the source states one.
    #[inline]
    pub fn virt(self) -> Option<VirtAddr> {
        match self {
            SymAddr::Virt(virt) => Some(virt),
            SymAddr::Abs(_) => None,
        }
    }

    /// The absolute address, if the source states one.
    #[inline]
    pub fn abs(self) -> Option<AbsAddr> {
        match self {
            SymAddr::Abs(abs) => Some(abs),
            SymAddr::Virt(_) => None,
        }
    }
}

impl fmt::Debug for SymAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymAddr::Virt(virt) => fmt::Debug::fmt(virt, f),
            SymAddr::Abs(abs) => fmt::Debug::fmt(abs, f),
        }
    }
}

impl fmt::LowerHex for SymAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.raw(), f)
    }
}

/// Arithmetic within one kind: an address plus or minus a distance is the same kind of
/// address; the distance between two addresses of one kind is a plain `u64`.
macro_rules! arithmetic {
    ($($kind:ident),*) => {$(
        impl $kind {
            /// `self + distance`, or `None` if that overflows.
            #[inline]
            pub fn checked_add(self, distance: u64) -> Option<$kind> {
                self.0.checked_add(distance).map($kind)
            }

            /// `self - distance`, or `None` if that goes below 0.
            #[inline]
            pub fn checked_sub(self, distance: u64) -> Option<$kind> {
                self.0.checked_sub(distance).map($kind)
            }

            /// `self + distance`, modulo 2^64.
            #[inline]
            pub fn wrapping_add(self, distance: u64) -> $kind {
                $kind(self.0.wrapping_add(distance))
            }

            /// `self - distance`, modulo 2^64 (a return address minus one is the call
            /// instruction's last byte; 0 minus one is no address anyone will find).
            #[inline]
            pub fn wrapping_sub(self, distance: u64) -> $kind {
                $kind(self.0.wrapping_sub(distance))
            }

            /// How far `self` is past `base`, or `None` if it is below `base`.
            #[inline]
            pub fn offset_from(self, base: $kind) -> Option<u64> {
                self.0.checked_sub(base.0)
            }
        }
    )*};
}

arithmetic!(VirtAddr, AbsAddr, FileOffset);

/// The difference between where a file is loaded and where it says it is: `absolute =
/// virtual + bias`, modulo 2^64 (a non-PIE executable has bias 0; a shared library the address
/// its first segment was mapped at; the kernel its KASLR offset). Both conversions wrap on
/// purpose: a bias computed from one pair of addresses converts every other address of the
/// same file exactly, whichever of the two is larger.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct LoadBias(pub u64);

impl LoadBias {
    /// The bias that puts `virt` at `abs`.
    #[inline]
    pub fn between(abs: AbsAddr, virt: VirtAddr) -> LoadBias {
        LoadBias(abs.0.wrapping_sub(virt.0))
    }

    /// The file's virtual address for an absolute address of it.
    #[inline]
    pub fn to_virt(self, abs: AbsAddr) -> VirtAddr {
        VirtAddr(abs.0.wrapping_sub(self.0))
    }

    /// The absolute address of a virtual address of the file.
    #[inline]
    pub fn to_abs(self, virt: VirtAddr) -> AbsAddr {
        AbsAddr(virt.0.wrapping_add(self.0))
    }
}

impl fmt::Debug for LoadBias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LoadBias({:#x})", self.0)
    }
}

impl fmt::LowerHex for LoadBias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_checked_or_wrapping_as_named() {
        assert_eq!(AbsAddr(u64::MAX).checked_add(1), None);
        assert_eq!(AbsAddr(0x1000).checked_add(0x10), Some(AbsAddr(0x1010)));
        assert_eq!(VirtAddr(0).checked_sub(1), None);
        assert_eq!(AbsAddr(0).wrapping_sub(1), AbsAddr(u64::MAX));
        assert_eq!(
            FileOffset(0x1010).offset_from(FileOffset(0x1000)),
            Some(0x10)
        );
        assert_eq!(FileOffset(0x1000).offset_from(FileOffset(0x1010)), None);
    }

    #[test]
    fn a_load_bias_converts_both_ways_whichever_is_larger() {
        // A shared library loaded high: absolute above virtual.
        let bias = LoadBias::between(AbsAddr(0x7f00_0000_1000), VirtAddr(0x1000));
        assert_eq!(bias.to_abs(VirtAddr(0x2345)), AbsAddr(0x7f00_0000_2345));
        assert_eq!(bias.to_virt(AbsAddr(0x7f00_0000_2345)), VirtAddr(0x2345));
        // A kernel symbol file linked above where the kernel runs (a negative KASLR offset).
        let bias = LoadBias::between(
            AbsAddr(0xffff_ffff_8100_0000),
            VirtAddr(0xffff_ffff_8200_0000),
        );
        assert_eq!(
            bias.to_abs(VirtAddr(0xffff_ffff_8200_0010)),
            AbsAddr(0xffff_ffff_8100_0010)
        );
        assert_eq!(
            bias.to_virt(AbsAddr(0xffff_ffff_8100_0010)),
            VirtAddr(0xffff_ffff_8200_0010)
        );
    }

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
