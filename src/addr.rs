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
pub struct VirtAddr(pub u64);

/// An absolute address in a process's address space, as a profiler or tracer captures it
/// (an instruction pointer, a return address). Converted to a [`FileOffset`] through the
/// mapping that covers it ([`crate::process::Mapping::file_offset`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct AbsAddr(pub u64);

/// An offset into the file's bytes, as `/proc/PID/maps` offsets and perf's `pgoff` give them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
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
