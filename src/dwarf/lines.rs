//! One unit's line table: its line program run once, kept as compact rows.
//!
//! Each row keeps what a frame shows (file, line, column) and what the addr2line crate's
//! tables drop: the discriminator and the column of a row of line 0, both of which
//! llvm-symbolizer prints on the innermost frame (` (discriminator 3)`, `demo.c:0:5`).
//! A row covers its address up to the next row of its sequence; among rows at one address
//! the last counts, as in llvm-symbolizer and the addr2line crate, so a program with
//! millions of rows at one address keeps one. Sequences whose addresses do not grow (start
//! at or past their end, as a discarded function's tombstoned sequence does) are dropped.
//! File names are rendered by the caller (`info.rs`), lazily, by index.

use crate::dwarf::reader::Reader;
use crate::dwarf::{range_order, saturate};

/// One row: where its code starts and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) address: u64,
    /// Index into the line program's file table (saturated to `u32::MAX`: no such file).
    pub(crate) file: u32,
    /// 0: no line (code the compiler made).
    pub(crate) line: u32,
    /// 0: no column (the left edge).
    pub(crate) column: u32,
    /// 0: none.
    pub(crate) discriminator: u32,
}

/// A sequence: a run of contiguous code, rows sorted by address.
#[derive(Debug)]
struct Sequence {
    start: u64,
    end: u64,
    /// Its rows: `LineTable::rows[first_row..rows_end]`.
    first_row: usize,
    rows_end: usize,
}

/// The rows of one unit's line program, by sequence.
#[derive(Debug, Default)]
pub(crate) struct LineTable {
    /// Sorted by start.
    sequences: Box<[Sequence]>,
    rows: Box<[Row]>,
}

impl LineTable {
    /// Runs `program` once and keeps its rows.
    pub(crate) fn read(
        program: gimli::IncompleteLineProgram<Reader>,
    ) -> Result<LineTable, gimli::Error> {
        let mut sequences = Vec::new();
        let mut rows: Vec<Row> = Vec::new();
        let mut sequence_start_row = 0;
        let mut program_rows = program.rows();
        while let Some((_, row)) = program_rows.next_row()? {
            let address = row.address();
            if row.end_sequence() {
                match rows.get(sequence_start_row) {
                    Some(first) if first.address < address => sequences.push(Sequence {
                        start: first.address,
                        end: address,
                        first_row: sequence_start_row,
                        rows_end: rows.len(),
                    }),
                    // An empty sequence, or one that does not grow: not kept.
                    _ => rows.truncate(sequence_start_row),
                }
                sequence_start_row = rows.len();
                continue;
            }
            let new = Row {
                address,
                file: saturate(row.file_index()),
                line: row.line().map_or(0, |line| saturate(line.get())),
                column: match row.column() {
                    gimli::ColumnType::LeftEdge => 0,
                    gimli::ColumnType::Column(column) => saturate(column.get()),
                },
                discriminator: saturate(row.discriminator()),
            };
            let in_sequence = rows.len() > sequence_start_row;
            match rows.last_mut() {
                // A later row at the same address replaces this one.
                Some(last) if in_sequence && last.address == address => *last = new,
                _ => rows.push(new),
            }
        }
        // Rows of a sequence the program left open (no end_sequence) cover nothing.
        rows.truncate(sequence_start_row);
        sequences.sort_unstable_by_key(|s: &Sequence| s.start);
        Ok(LineTable {
            sequences: sequences.into_boxed_slice(),
            rows: rows.into_boxed_slice(),
        })
    }

    /// The row covering `probe`, if a sequence holds it.
    pub(crate) fn row_at(&self, probe: u64) -> Option<&Row> {
        let sequence = self
            .sequences
            .binary_search_by(|s| range_order(s.start, s.end, probe))
            .ok()?;
        let sequence = self.sequences.get(sequence)?;
        let rows = self.rows.get(sequence.first_row..sequence.rows_end)?;
        let after = rows.partition_point(|row| row.address <= probe);
        rows.get(after.checked_sub(1)?)
    }

    /// The address ranges the sequences cover (for a unit that states none).
    pub(crate) fn ranges(&self) -> impl Iterator<Item = gimli::Range> + '_ {
        self.sequences.iter().map(|s| gimli::Range {
            begin: s.start,
            end: s.end,
        })
    }
}
