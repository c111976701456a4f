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

use crate::dwarf::line_program::{self, RawRow};
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
    /// Runs `program` once and keeps its rows: with `line_program.rs`'s decoder, or where
    /// that declines, gimli's (which gives the same rows, or the error).
    pub(crate) fn read(
        program: gimli::IncompleteLineProgram<Reader>,
    ) -> Result<LineTable, gimli::Error> {
        let mut table = TableBuilder::default();
        if line_program::run(program.header(), &mut |row| table.push(row)).is_some() {
            return Ok(table.finish());
        }
        let mut table = TableBuilder::default();
        let mut program_rows = program.rows();
        while let Some((_, row)) = program_rows.next_row()? {
            table.push(RawRow::from_gimli(row));
        }
        Ok(table.finish())
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

/// A [`LineTable`] being filled, row by row, in the program's order.
#[derive(Default)]
struct TableBuilder {
    sequences: Vec<Sequence>,
    rows: Vec<Row>,
    /// Where the open sequence's rows start in `rows`.
    sequence_start_row: usize,
}

impl TableBuilder {
    fn push(&mut self, row: RawRow) {
        let address = row.address;
        if row.end_sequence {
            match self.rows.get(self.sequence_start_row) {
                Some(first) if first.address < address => self.sequences.push(Sequence {
                    start: first.address,
                    end: address,
                    first_row: self.sequence_start_row,
                    rows_end: self.rows.len(),
                }),
                // An empty sequence, or one that does not grow: not kept.
                _ => self.rows.truncate(self.sequence_start_row),
            }
            self.sequence_start_row = self.rows.len();
            return;
        }
        let new = Row {
            address,
            file: saturate(row.file),
            line: saturate(row.line),
            column: saturate(row.column),
            discriminator: saturate(row.discriminator),
        };
        let in_sequence = self.rows.len() > self.sequence_start_row;
        match self.rows.last_mut() {
            // A later row at the same address replaces this one.
            Some(last) if in_sequence && last.address == address => *last = new,
            _ => self.rows.push(new),
        }
    }

    fn finish(mut self) -> LineTable {
        // Rows of a sequence the program left open (no end_sequence) cover nothing.
        self.rows.truncate(self.sequence_start_row);
        self.sequences.sort_unstable_by_key(|s: &Sequence| s.start);
        LineTable {
            sequences: self.sequences.into_boxed_slice(),
            rows: self.rows.into_boxed_slice(),
        }
    }
}
