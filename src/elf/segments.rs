//! The loadable segments of an ELF file, and the one place where file offsets and ELF virtual
//! addresses are converted into each other.

use crate::addr::{FileOffset, VirtAddr};

/// One `PT_LOAD` program header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment {
    /// Where the segment's bytes start in the file (`p_offset`).
    pub file_offset: FileOffset,
    /// How many bytes come from the file (`p_filesz`).
    pub file_size: u64,
    /// Where the segment starts in memory, as the file states it (`p_vaddr`).
    pub virt_addr: VirtAddr,
    /// How many bytes it occupies in memory (`p_memsz`, at least `p_filesz` for sane files).
    pub mem_size: u64,
    /// Whether the segment is executable (`PF_X`).
    pub executable: bool,
}

/// All `PT_LOAD` segments of a file, in program-header order.
#[derive(Debug, Clone, Default)]
pub struct Segments {
    loads: Vec<LoadSegment>,
}

impl Segments {
    pub(crate) fn new(loads: Vec<LoadSegment>) -> Self {
        Segments { loads }
    }

    /// The `PT_LOAD` segments.
    pub fn loads(&self) -> &[LoadSegment] {
        &self.loads
    }

    /// The virtual address at which the byte at `offset` of the file is loaded, or `None` if no
    /// segment loads that byte. When segments overlap in the file (the same page mapped twice,
    /// as some linkers do), an executable segment wins, since callers symbolize code.
    pub fn file_offset_to_virt(&self, offset: FileOffset) -> Option<VirtAddr> {
        let containing = |seg: &&LoadSegment| {
            offset.0 >= seg.file_offset.0 && offset.0 - seg.file_offset.0 < seg.file_size
        };
        let seg = self
            .loads
            .iter()
            .filter(containing)
            .find(|seg| seg.executable)
            .or_else(|| self.loads.iter().find(containing))?;
        Some(VirtAddr(
            seg.virt_addr.0.wrapping_add(offset.0 - seg.file_offset.0),
        ))
    }

    /// The file offset of the byte loaded at `addr`, or `None` if `addr` is not backed by the
    /// file (outside every segment, or in the zero-filled `.bss` tail of one).
    pub fn virt_to_file_offset(&self, addr: VirtAddr) -> Option<FileOffset> {
        let seg = self
            .loads
            .iter()
            .find(|seg| addr.0 >= seg.virt_addr.0 && addr.0 - seg.virt_addr.0 < seg.file_size)?;
        // A hostile p_offset near u64::MAX would overflow; such a byte is in no file.
        seg.file_offset
            .0
            .checked_add(addr.0 - seg.virt_addr.0)
            .map(FileOffset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(off: u64, filesz: u64, vaddr: u64, x: bool) -> LoadSegment {
        LoadSegment {
            file_offset: FileOffset(off),
            file_size: filesz,
            virt_addr: VirtAddr(vaddr),
            mem_size: filesz,
            executable: x,
        }
    }

    #[test]
    fn converts_both_ways_through_the_right_segment() {
        // The layout of a typical PIE: r--, r-x, r--, rw- with the data segment shifted.
        let segs = Segments::new(vec![
            seg(0, 0x600, 0, false),
            seg(0x1000, 0x200, 0x1000, true),
            seg(0x2df0, 0x220, 0x3df0, false),
        ]);
        assert_eq!(
            segs.file_offset_to_virt(FileOffset(0x1010)),
            Some(VirtAddr(0x1010))
        );
        assert_eq!(
            segs.file_offset_to_virt(FileOffset(0x2e00)),
            Some(VirtAddr(0x3e00))
        );
        assert_eq!(segs.file_offset_to_virt(FileOffset(0x1200)), None);
        assert_eq!(
            segs.virt_to_file_offset(VirtAddr(0x3e00)),
            Some(FileOffset(0x2e00))
        );
        assert_eq!(segs.virt_to_file_offset(VirtAddr(0x5000)), None);
    }

    #[test]
    fn offsets_past_u64_max_are_in_no_file() {
        let segs = Segments::new(vec![seg(u64::MAX - 4, 0x100, 0x1000, true)]);
        assert_eq!(segs.virt_to_file_offset(VirtAddr(0x1010)), None);
    }

    #[test]
    fn executable_segment_wins_when_file_ranges_overlap() {
        let segs = Segments::new(vec![
            seg(0, 0x2000, 0x400000, false),
            seg(0, 0x2000, 0x600000, true),
        ]);
        assert_eq!(
            segs.file_offset_to_virt(FileOffset(0x10)),
            Some(VirtAddr(0x600010))
        );
    }
}
