//! The table's header: which format the Go toolchain wrote, and where its sub-tables are.
//! Facts from Go's debug/gosym (pclntab.go) and runtime/symtab.go (`pcHeader`), for each
//! magic:
//!
//! | magic | Go | header after magic, pad, quantum, pointer size |
//! |---|---|---|
//! | `0xfffffffb` | 1.2–1.15 | nfunc; then the function table itself; names, files and pc tables are offsets from the table's start |
//! | `0xfffffffa` | 1.16–1.17 | nfunc, nfiles, then offsets of funcnametab, cutab, filetab, pctab, functab |
//! | `0xfffffff0` | 1.18–1.19 | nfunc, nfiles, textStart, then the same five offsets; function entries are 32-bit offsets from textStart |
//! | `0xfffffff1` | 1.20+ | as 1.18, with `startLine` in each function record and a shorter inline-tree record |
//!
//! Every field is pointer-sized; every offset is checked to lie inside the table here, so
//! that lookups only check their own reads.

use crate::error::SectionFault;

/// Which table format (and so which range of Go versions) wrote the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum GoTableVersion {
    /// Magic `0xfffffffb`: Go 1.2 to 1.15.
    Go1_2,
    /// Magic `0xfffffffa`: Go 1.16 and 1.17.
    Go1_16,
    /// Magic `0xfffffff0`: Go 1.18 and 1.19.
    Go1_18,
    /// Magic `0xfffffff1`: Go 1.20 and later.
    Go1_20,
}

/// The most functions a table may claim: far above the largest Go binaries (kubelet has
/// about 90,000), so that a hostile count is refused before it sizes anything.
pub(crate) const MAX_FUNCTIONS: u64 = 1 << 24;

/// A parsed, checked header. Offsets are from the table's start.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    pub(crate) version: GoTableVersion,
    pub(crate) big_endian: bool,
    pub(crate) quantum: u8,
    pub(crate) ptr_size: u8,
    pub(crate) nfunc: usize,
    /// The text start as the header states it (1.18+; 0 before). In a PIE the linker leaves
    /// it to a dynamic relocation: see `GoTable::text_start`.
    pub(crate) text_start: u64,
    pub(crate) funcnames: usize,
    pub(crate) cutab: usize,
    pub(crate) filetab: usize,
    pub(crate) pctab: usize,
    pub(crate) functab: usize,
}

/// Reads a little- or big-endian unsigned integer of `size` bytes (4 or 8) at `at`.
pub(crate) fn uint_at(data: &[u8], at: usize, size: u8, big_endian: bool) -> Option<u64> {
    let bytes = data.get(at..at.checked_add(usize::from(size))?)?;
    Some(match (size, big_endian) {
        (4, false) => u64::from(u32::from_le_bytes(bytes.try_into().ok()?)),
        (4, true) => u64::from(u32::from_be_bytes(bytes.try_into().ok()?)),
        (8, false) => u64::from_le_bytes(bytes.try_into().ok()?),
        (8, true) => u64::from_be_bytes(bytes.try_into().ok()?),
        (2, false) => u64::from(u16::from_le_bytes(bytes.try_into().ok()?)),
        (2, true) => u64::from(u16::from_be_bytes(bytes.try_into().ok()?)),
        _ => return None,
    })
}

/// The format a magic number names.
pub(crate) fn version_of(magic: u32) -> Option<GoTableVersion> {
    match magic {
        0xfffffffb => Some(GoTableVersion::Go1_2),
        0xfffffffa => Some(GoTableVersion::Go1_16),
        0xfffffff0 => Some(GoTableVersion::Go1_18),
        0xfffffff1 => Some(GoTableVersion::Go1_20),
        _ => None,
    }
}

/// The header's fixed first eight bytes, checked: (version from the magic, instruction size
/// quantum, pointer size).
fn fixed_fields(data: &[u8], big_endian: bool) -> Result<(GoTableVersion, u8, u8), SectionFault> {
    let magic = uint_at(data, 0, 4, big_endian).ok_or_else(|| {
        SectionFault::at(
            0,
            format!("{} bytes are too short for a header", data.len()),
        )
    })?;
    let version = version_of(magic as u32)
        .ok_or_else(|| SectionFault::at(0, format!("unknown magic {magic:#010x}")))?;
    let (pad, quantum, ptr_size) = match data.get(4..8) {
        Some(&[p1, p2, q, p]) => ((p1, p2), q, p),
        _ => return Err(SectionFault::at(4, "the header is truncated")),
    };
    if pad != (0, 0) {
        return Err(SectionFault::at(4, "the header's pad bytes are not zero"));
    }
    if !matches!(quantum, 1 | 2 | 4) {
        return Err(SectionFault::at(
            6,
            format!("instruction size quantum {quantum} is not 1, 2 or 4"),
        ));
    }
    if !matches!(ptr_size, 4 | 8) {
        return Err(SectionFault::at(
            7,
            format!("pointer size {ptr_size} is not 4 or 8"),
        ));
    }
    Ok((version, quantum, ptr_size))
}

impl Header {
    /// Parses and checks the header at the start of `data` (the table, or for a scan the
    /// bytes from a candidate to the end of its segment), in the byte order `big_endian`.
    /// `Err` says what does not check out.
    pub(crate) fn parse(data: &[u8], big_endian: bool) -> Result<Header, SectionFault> {
        let (version, quantum, ptr_size) = fixed_fields(data, big_endian)?;
        let field_at = |i: usize| 8 + i * usize::from(ptr_size);
        let field = |i: usize| -> Result<u64, SectionFault> {
            uint_at(data, field_at(i), ptr_size, big_endian)
                .ok_or_else(|| SectionFault::at(field_at(i), "the header is truncated"))
        };
        let offset = |i: usize, what: &str| -> Result<usize, SectionFault> {
            let value = field(i)?;
            usize::try_from(value)
                .ok()
                .filter(|&v| v <= data.len())
                .ok_or_else(|| {
                    SectionFault::at(
                        field_at(i),
                        format!(
                            "{what} offset {value:#x} is outside the table ({:#x} bytes)",
                            data.len()
                        ),
                    )
                })
        };
        let nfunc64 = field(0)?;
        if nfunc64 > MAX_FUNCTIONS {
            return Err(SectionFault::at(
                field_at(0),
                format!("the header claims {nfunc64} functions (at most {MAX_FUNCTIONS} are read)"),
            ));
        }
        let nfunc = nfunc64 as usize;
        let ptr = usize::from(ptr_size);
        let mut header = Header {
            version,
            big_endian,
            quantum,
            ptr_size,
            nfunc,
            text_start: 0,
            funcnames: 0,
            cutab: 0,
            filetab: 0,
            pctab: 0,
            functab: 8 + ptr,
        };
        match version {
            GoTableVersion::Go1_2 => {
                // functab: nfunc (entry, funcoff) pairs, the end PC, then the filetab's
                // offset as a u32.
                let end_pc = header.functab + nfunc * 2 * ptr;
                let filetab_at = end_pc + ptr;
                let filetab = uint_at(data, filetab_at, 4, big_endian).ok_or_else(|| {
                    SectionFault::new(format!(
                        "the header claims {nfunc} functions, but the table ({:#x} bytes) is \
                         too short for their function table",
                        data.len()
                    ))
                })? as usize;
                if filetab + 4 > data.len() {
                    return Err(SectionFault::at(
                        filetab_at,
                        format!("filetab offset {filetab:#x} is outside the table"),
                    ));
                }
                header.filetab = filetab;
            }
            GoTableVersion::Go1_16 => {
                header.funcnames = offset(2, "funcnametab")?;
                header.cutab = offset(3, "cutab")?;
                header.filetab = offset(4, "filetab")?;
                header.pctab = offset(5, "pctab")?;
                header.functab = offset(6, "functab")?;
            }
            GoTableVersion::Go1_18 | GoTableVersion::Go1_20 => {
                header.text_start = field(2)?;
                header.funcnames = offset(3, "funcnametab")?;
                header.cutab = offset(4, "cutab")?;
                header.filetab = offset(5, "filetab")?;
                header.pctab = offset(6, "pctab")?;
                header.functab = offset(7, "functab")?;
            }
        }
        // The function table holds nfunc + 1 entries (the last one's PC ends the text).
        let needed = header
            .entry_size()
            .checked_mul(nfunc + 1)
            .and_then(|n| n.checked_add(header.functab));
        if needed.is_none_or(|n| n > data.len()) {
            return Err(SectionFault::new(format!(
                "the header claims {nfunc} functions, but the table ({:#x} bytes) is too \
                 short for their function table at {:#x}",
                data.len(),
                header.functab
            )));
        }
        if nfunc == 0 {
            return Err(SectionFault::at(
                field_at(0),
                "the table lists no functions",
            ));
        }
        Ok(header)
    }

    /// Bytes per function-table entry.
    pub(crate) fn entry_size(&self) -> usize {
        match self.version {
            GoTableVersion::Go1_18 | GoTableVersion::Go1_20 => 8,
            _ => 2 * usize::from(self.ptr_size),
        }
    }
}
