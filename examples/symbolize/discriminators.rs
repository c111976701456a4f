//! Line-table discriminators, and the columns of line-0 rows, read here because the library's
//! `dwarf::Frame` does not carry them (a workaround: the library would give them with each
//! frame's location; the addr2line crate it builds on drops both).
//!
//! llvm-symbolizer prints the discriminator of the line-table row at an address on the
//! innermost frame: ` (discriminator N)` in the GNU style, `"Discriminator"` in JSON; and for
//! a row of line 0 (code the compiler made, which clang marks often) it still prints the
//! row's column (`demo.c:0:5`). This module reads the `.debug_line` of the file that has the
//! DWARF (the module itself, else the separate debug file the library found) once per file,
//! and keeps the address ranges of the rows whose discriminator is not 0 or whose line is 0. A row covers its address up to the next row's
//! in its sequence; among rows at one address the last counts, as in llvm-symbolizer and
//! the addr2line crate (so the row agrees with the line the library reports).
//! A file whose line table cannot be read gives no discriminators (noted on stderr once).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};

/// What a line-table row adds to the library's location.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowExtra {
    /// The row's discriminator (0: none).
    pub discriminator: u32,
    /// For a row of line 0, its column (0: none).
    pub line0_column: u32,
}

/// Rows with something to add: `(start, end, extra)`, sorted by start.
type Table = Vec<(u64, u64, RowExtra)>;

/// The discriminator tables of the files read so far.
#[derive(Default)]
pub struct Discriminators {
    tables: HashMap<PathBuf, Table>,
}

impl Discriminators {
    /// What the row at `addr` in `module` adds (whose separate debug file, if the library
    /// used one, is `debug_file`); all 0 when nothing.
    pub fn at(&mut self, module: &Path, debug_file: Option<&Path>, addr: u64) -> RowExtra {
        let table = self
            .tables
            .entry(module.to_path_buf())
            .or_insert_with(|| load(module, debug_file));
        let i = table.partition_point(|&(start, _, _)| start <= addr);
        match i.checked_sub(1).map(|i| table[i]) {
            Some((_, end, extra)) if addr < end => extra,
            _ => RowExtra::default(),
        }
    }
}

/// The table of `module`'s own line table, else of `debug_file`'s.
fn load(module: &Path, debug_file: Option<&Path>) -> Table {
    for path in std::iter::once(module).chain(debug_file) {
        match read_table(path) {
            Ok(Some(table)) => return table,
            Ok(None) => {}
            Err(err) => {
                eprintln!(
                    "symbolize: {}: cannot read line-table discriminators: {err}",
                    path.display()
                );
                return Table::new();
            }
        }
    }
    Table::new()
}

/// `Ok(None)` when the file has no `.debug_line`.
fn read_table(path: &Path) -> Result<Option<Table>, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
    if file.section_by_name(".debug_line").is_none() {
        return Ok(None);
    }
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let sections = gimli::DwarfSections::load(|id| -> Result<Cow<'_, [u8]>, String> {
        match file.section_by_name(id.name()) {
            Some(section) => section.uncompressed_data().map_err(|e| e.to_string()),
            None => Ok(Cow::Borrowed(&[])),
        }
    })?;
    let dwarf = sections.borrow(|section| gimli::EndianSlice::new(section, endian));
    let mut table = Table::new();
    let mut units = dwarf.units();
    while let Some(header) = units.next().map_err(|e| e.to_string())? {
        let unit = dwarf.unit(header).map_err(|e| e.to_string())?;
        let Some(program) = unit.line_program.clone() else {
            continue;
        };
        let mut rows = program.rows();
        let mut previous: Option<(u64, RowExtra)> = None;
        while let Some((_, row)) = rows.next_row().map_err(|e| e.to_string())? {
            let addr = row.address();
            if let Some((start, extra)) = previous {
                if addr > start && extra != RowExtra::default() {
                    table.push((start, addr, extra));
                }
            }
            let line0_column = match (row.line(), row.column()) {
                (None, gimli::ColumnType::Column(column)) => {
                    u32::try_from(column.get()).unwrap_or(u32::MAX)
                }
                _ => 0,
            };
            let extra = RowExtra {
                discriminator: u32::try_from(row.discriminator()).unwrap_or(u32::MAX),
                line0_column,
            };
            previous = (!row.end_sequence()).then_some((addr, extra));
        }
    }
    table.sort_unstable();
    Ok(Some(table))
}
