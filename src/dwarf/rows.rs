//! What a line-table row says beyond the file, line and column the addr2line crate keeps:
//! its discriminator, and the column of a row of line 0.
//!
//! llvm-symbolizer prints both on the innermost frame (` (discriminator 3)` in its GNU
//! style, `"Discriminator"` in JSON; `demo.c:0:5` for code the compiler made, which clang
//! marks often). The addr2line crate drops them while it builds its per-unit line tables, so
//! [`RowExtras::read`] runs a unit's line program once more, the first time an address of
//! that unit is asked about, and keeps only the rows that add something (in optimized code
//! a small part of them). An engine that runs line programs itself can keep the two numbers
//! with its own rows instead; [`crate::dwarf::Frame`] is where either engine puts them.
//!
//! A row covers its address up to the next row of its sequence; among rows at one address
//! the last counts, as in llvm-symbolizer and the addr2line crate (so the row agrees with
//! the line the frame reports).

use std::num::NonZeroU64;

use crate::dwarf::reader::Reader;

/// What one row adds to a location; all 0 when nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RowExtra {
    /// The row's discriminator (0: none).
    pub(crate) discriminator: u32,
    /// For a row of line 0, its column (0: none, or the row's line is not 0).
    pub(crate) line0_column: u32,
}

/// The address ranges of one line program whose rows add something, sorted by start.
#[derive(Debug, Default)]
pub(crate) struct RowExtras {
    ranges: Box<[(u64, u64, RowExtra)]>,
}

impl RowExtras {
    /// Runs `program` (a unit's line program) and keeps the ranges of its rows that have a
    /// discriminator or are of line 0 with a column. Sequences whose addresses do not grow
    /// (start at or past their end) are skipped, as the addr2line crate skips them.
    pub(crate) fn read(
        program: gimli::IncompleteLineProgram<Reader>,
    ) -> Result<RowExtras, gimli::Error> {
        let mut ranges = Vec::new();
        // The current sequence's rows that add something, and the row before the current
        // one: (address, what it adds).
        let mut sequence: Vec<(u64, u64, RowExtra)> = Vec::new();
        let mut previous: Option<(u64, RowExtra)> = None;
        let mut sequence_start: Option<u64> = None;
        let mut rows = program.rows();
        while let Some((_, row)) = rows.next_row()? {
            let address = row.address();
            if let Some((start, extra)) = previous {
                if address > start && extra != RowExtra::default() {
                    sequence.push((start, address, extra));
                }
            }
            if row.end_sequence() {
                if sequence_start.is_some_and(|start| start < address) {
                    ranges.append(&mut sequence);
                }
                sequence.clear();
                sequence_start = None;
                previous = None;
                continue;
            }
            sequence_start.get_or_insert(address);
            let line0_column = match (row.line(), row.column()) {
                (None, gimli::ColumnType::Column(column)) => saturate(column),
                _ => 0,
            };
            let discriminator = u32::try_from(row.discriminator()).unwrap_or(u32::MAX);
            // A later row at the same address replaces this one (`address > start` above).
            previous = Some((
                address,
                RowExtra {
                    discriminator,
                    line0_column,
                },
            ));
        }
        ranges.sort_unstable_by_key(|&(start, _, _)| start);
        Ok(RowExtras {
            ranges: ranges.into_boxed_slice(),
        })
    }

    /// What the row covering `addr` adds; all 0 when nothing (or no row covers it).
    pub(crate) fn at(&self, addr: u64) -> RowExtra {
        let i = self.ranges.partition_point(|&(start, _, _)| start <= addr);
        match i.checked_sub(1).and_then(|i| self.ranges.get(i)) {
            Some(&(_, end, extra)) if addr < end => extra,
            _ => RowExtra::default(),
        }
    }
}

fn saturate(value: NonZeroU64) -> u32 {
    u32::try_from(value.get()).unwrap_or(u32::MAX)
}
