//! One unit's file table (the directories and files of its line program header), kept
//! compact after the line program has run: what `info.rs` needs to render a file name by
//! index, and nothing else.
//!
//! gimli keeps the header's entries as `FileEntry` values of 176 bytes each (with this
//! crate's reader; timestamps, sizes, MD5s, a reader per string), and a parsed unit keeps its
//! header until it is dropped: for the 1,920 units of libc's debug file, 6 MB of the heap at
//! a cold batch's peak, more than the line rows themselves. An entry here is 24 bytes: where
//! its strings are, not the strings; they are read when a name is first rendered.

use gimli::{Reader as _, Section as _};

use crate::dwarf::reader::Reader;

/// Where one string of the file table is (see `value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Text {
    /// `DW_FORM_string` inside the line program header: `.debug_line[start..start + len]`.
    InLine { start: usize, len: u32 },
    /// `DW_FORM_strp`: an offset into `.debug_str`.
    Str(usize),
    /// `DW_FORM_line_strp`: an offset into `.debug_line_str`.
    LineStr(usize),
    /// `DW_FORM_strp_sup`: an offset into the supplementary file's `.debug_str`.
    StrSup(usize),
    /// `DW_FORM_strx*`: an index into the unit's string offsets.
    StrIndex(usize),
    /// The unit's `DW_AT_comp_dir` (directory 0 of a DWARF 4 table).
    CompDir,
    /// The unit's `DW_AT_name` (file 0 of a DWARF 4 table).
    CompName,
    /// Not a string form, or an inline string this table cannot place: no text, as gimli's
    /// `attr_string` gives none for it.
    Unreadable,
}

/// One file of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileEntry {
    /// Its directory's index in the table (see [`FileTable::directory`]).
    pub(crate) directory: u64,
    path: Text,
}

impl FileEntry {
    /// Its path string, as an attribute value for `unit` (the table's) to read.
    pub(crate) fn path(
        self,
        unit: &gimli::UnitRef<'_, Reader>,
    ) -> Option<gimli::AttributeValue<Reader>> {
        value(unit, self.path)
    }
}

/// A unit's file table, numbered as gimli's `LineProgramHeader::file` and `directory`
/// number them (DWARF 4 counts files from 1 and directories from the compilation directory
/// at 0; DWARF 5 counts both from 0).
#[derive(Debug)]
pub(crate) struct FileTable {
    version: u16,
    /// In `LineProgramHeader::directory` order.
    directories: Box<[Text]>,
    /// In `LineProgramHeader::file` order (for DWARF 4, slot 0 is the unit's own file).
    files: Box<[Option<FileEntry>]>,
}

impl FileTable {
    /// The table of `header`, the line program header of `unit`.
    pub(crate) fn new(
        unit: &gimli::Unit<Reader>,
        debug_line: &gimli::DebugLine<Reader>,
        header: &gimli::LineProgramHeader<Reader>,
    ) -> FileTable {
        let places = Places {
            section: debug_line.reader().bytes(),
            comp_dir: unit.comp_dir.as_ref().map(|dir| dir.bytes()),
            comp_name: unit.name.as_ref().map(|name| name.bytes()),
        };
        let version = header.version();
        let entry = |file: &gimli::FileEntry<Reader>| FileEntry {
            directory: file.directory_index(),
            path: places.text(&file.path_name()),
        };
        // DWARF 4's directory 0 and file 0 are the unit's own, not listed in the header.
        let numbered_from_1 = version <= 4;
        let directories = numbered_from_1
            .then_some(Text::CompDir)
            .into_iter()
            .chain(header.include_directories().iter().map(|d| places.text(d)));
        let files = numbered_from_1
            .then(|| header.file(0).map(entry))
            .into_iter()
            .chain(header.file_names().iter().map(|f| Some(entry(f))));
        FileTable {
            version,
            directories: directories.collect(),
            files: files.collect(),
        }
    }

    /// The header's DWARF version.
    pub(crate) fn version(&self) -> u16 {
        self.version
    }

    /// How many files the header lists (DWARF 4's file 0 is not listed).
    pub(crate) fn len(&self) -> usize {
        self.files.len() - usize::from(self.version <= 4)
    }

    /// File `index`, as `LineProgramHeader::file` numbers it.
    pub(crate) fn file(&self, index: u64) -> Option<FileEntry> {
        *self.files.get(usize::try_from(index).ok()?)?
    }

    /// Directory `index`, as `LineProgramHeader::directory` numbers it, as an attribute
    /// value for `unit` to read.
    pub(crate) fn directory(
        &self,
        unit: &gimli::UnitRef<'_, Reader>,
        index: u64,
    ) -> Option<gimli::AttributeValue<Reader>> {
        value(unit, *self.directories.get(usize::try_from(index).ok()?)?)
    }
}

/// What a header's inline strings may point into, to say which one a string is.
struct Places<'a> {
    section: &'a [u8],
    comp_dir: Option<&'a [u8]>,
    comp_name: Option<&'a [u8]>,
}

impl Places<'_> {
    fn text(&self, value: &gimli::AttributeValue<Reader>) -> Text {
        use gimli::AttributeValue as V;
        match value {
            V::String(string) => self.inline(string.bytes()),
            V::DebugStrRef(offset) => Text::Str(offset.0),
            V::DebugLineStrRef(offset) => Text::LineStr(offset.0),
            V::DebugStrRefSup(offset) => Text::StrSup(offset.0),
            V::DebugStrOffsetsIndex(index) => Text::StrIndex(index.0),
            _ => Text::Unreadable,
        }
    }

    /// An inline string: inside the header (in `.debug_line`), or the unit's compilation
    /// directory or name, which gimli hands out as the DWARF 4 directory 0 and file 0.
    fn inline(&self, bytes: &[u8]) -> Text {
        let same = |other: Option<&[u8]>| {
            other.is_some_and(|o| o.as_ptr() == bytes.as_ptr() && o.len() == bytes.len())
        };
        if same(self.comp_dir) {
            return Text::CompDir;
        }
        if same(self.comp_name) {
            return Text::CompName;
        }
        let base = self.section.as_ptr() as usize;
        let start = (bytes.as_ptr() as usize).wrapping_sub(base);
        match u32::try_from(bytes.len()) {
            Ok(len) if start <= self.section.len() && bytes.len() <= self.section.len() - start => {
                Text::InLine { start, len }
            }
            _ => Text::Unreadable,
        }
    }
}

/// `text` as the attribute value gimli's `attr_string` reads (`None`: no text).
fn value(unit: &gimli::UnitRef<'_, Reader>, text: Text) -> Option<gimli::AttributeValue<Reader>> {
    use gimli::AttributeValue as V;
    Some(match text {
        Text::InLine { start, len } => {
            let mut section = unit.dwarf.debug_line.reader().clone();
            section.skip(start).ok()?;
            V::String(section.split(len as usize).ok()?)
        }
        Text::Str(offset) => V::DebugStrRef(gimli::DebugStrOffset(offset)),
        Text::LineStr(offset) => V::DebugLineStrRef(gimli::DebugLineStrOffset(offset)),
        Text::StrSup(offset) => V::DebugStrRefSup(gimli::DebugStrOffset(offset)),
        Text::StrIndex(index) => V::DebugStrOffsetsIndex(gimli::DebugStrOffsetsIndex(index)),
        Text::CompDir => V::String(unit.comp_dir.clone()?),
        Text::CompName => V::String(unit.name.clone()?),
        Text::Unreadable => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_stay_small() {
        // The point of this table (see the module docs): 24 bytes a file, not gimli's 176.
        assert_eq!(std::mem::size_of::<Text>(), 16);
        assert_eq!(std::mem::size_of::<Option<FileEntry>>(), 24);
    }
}
