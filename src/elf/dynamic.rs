//! The dynamic symbol table of a file without section headers, found through `PT_DYNAMIC`.
//!
//! `sstrip`, packers and some embedded and Go toolchains leave no section headers, but the
//! dynamic loader needs none: `PT_DYNAMIC` gives the addresses of the dynamic symbol table
//! (`DT_SYMTAB`, entries of `DT_SYMENT` bytes) and its strings (`DT_STRTAB`, `DT_STRSZ`
//! bytes). How many symbols there are is not stated anywhere; it is read from the hash table
//! the loader uses (`DT_HASH`: its chain count; else `DT_GNU_HASH`: the end of its longest
//! chain), as elfutils and LLVM do. Without either, the table is taken to end where the
//! string table starts when that follows it (the layout every linker writes). Addresses are
//! turned into file offsets through the `PT_LOAD` segments.

use std::ops::Range;
use std::path::Path;

use object::read::elf::{Dyn, FileHeader, GnuHashTable, HashTable, ProgramHeader};
use object::{elf, Endianness};

use crate::error::{Error, Result};

/// Where a file's dynamic symbol table and its strings lie in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DynamicTables {
    /// The symbol entries, `count` of them (the first is the null symbol).
    pub(crate) symbols: Range<usize>,
    pub(crate) count: usize,
    pub(crate) strings: Range<usize>,
}

/// The most symbols read from a table whose count came from a hash table (a hostile hash
/// table could claim 2^32); the count is also bounded by the file's size.
const MAX_DYNAMIC_SYMBOLS: usize = 1 << 24;

/// The dynamic symbol table of `path` (its bytes `data`), from its program headers;
/// `Ok(None)` without a `PT_DYNAMIC` segment or without `DT_SYMTAB`/`DT_STRTAB`.
pub(crate) fn dynamic_tables<Elf: FileHeader<Endian = Endianness>>(
    path: &Path,
    endian: Endianness,
    data: &[u8],
    program_headers: &[Elf::ProgramHeader],
) -> Result<Option<DynamicTables>> {
    let malformed = |what: String| Error::MalformedElf {
        path: path.to_path_buf(),
        what,
    };
    let mut entries = None;
    for ph in program_headers {
        if let Some(dynamic) = ph
            .dynamic(endian, data)
            .map_err(|e| malformed(format!("PT_DYNAMIC: {e}")))?
        {
            entries = Some(dynamic);
            break;
        }
    }
    let Some(entries) = entries else {
        return Ok(None);
    };
    let (mut symtab, mut strtab, mut strsz, mut syment, mut hash, mut gnu_hash) =
        (None, None, None, None, None, None);
    for entry in entries {
        let value = entry.val(endian);
        match entry.tag(endian) {
            elf::DT_NULL => break,
            elf::DT_SYMTAB => symtab = Some(value),
            elf::DT_STRTAB => strtab = Some(value),
            elf::DT_STRSZ => strsz = Some(value),
            elf::DT_SYMENT => syment = Some(value),
            elf::DT_HASH => hash = Some(value),
            elf::DT_GNU_HASH => gnu_hash = Some(value),
            _ => {}
        }
    }
    let (Some(symtab), Some(strtab)) = (symtab, strtab) else {
        return Ok(None);
    };
    let entry_size = std::mem::size_of::<Elf::Sym>();
    if let Some(stated) = syment.filter(|&s| s != entry_size as u64) {
        return Err(malformed(format!(
            "DT_SYMENT is {stated}, not the {entry_size} bytes of a symbol of this class"
        )));
    }
    let file_offset = |addr: u64, what: &str| {
        file_offset_of::<Elf>(endian, program_headers, addr)
            .filter(|&offset| offset < data.len())
            .ok_or_else(|| {
                malformed(format!(
                    "{what} at {addr:#x} is not in the file's loaded bytes"
                ))
            })
    };
    let symbols_at = file_offset(symtab, "DT_SYMTAB")?;
    let strings_at = file_offset(strtab, "DT_STRTAB")?;
    let strings_len = strsz.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let strings = strings_at..strings_at.saturating_add(strings_len).min(data.len());
    if u32::try_from(strings.len()).is_err() {
        return Err(Error::Unsupported {
            path: path.to_path_buf(),
            what: format!(
                "the dynamic string table is {} bytes; at most 4 GiB are supported",
                strings.len()
            ),
        });
    }

    // The count: from a hash table, else up to the strings when they follow the symbols.
    let mut count = None;
    if let Some(addr) = hash {
        let at = file_offset(addr, "DT_HASH")?;
        let table = HashTable::<Elf>::parse(endian, &data[at..])
            .map_err(|e| malformed(format!("DT_HASH at {addr:#x}: {e}")))?;
        count = Some(table.symbol_table_length() as usize);
    } else if let Some(addr) = gnu_hash {
        let at = file_offset(addr, "DT_GNU_HASH")?;
        let table = GnuHashTable::<Elf>::parse(endian, &data[at..])
            .map_err(|e| malformed(format!("DT_GNU_HASH at {addr:#x}: {e}")))?;
        // An empty table's symbols are all below its base (the unhashed local ones).
        count = Some(
            table
                .symbol_table_length(endian)
                .unwrap_or(table.symbol_base()) as usize,
        );
    } else if strings_at > symbols_at {
        count = Some((strings_at - symbols_at) / entry_size);
    }
    let Some(count) = count else {
        return Err(malformed(
            "no DT_HASH or DT_GNU_HASH to count the dynamic symbols by".to_string(),
        ));
    };
    let fit = (data.len() - symbols_at) / entry_size;
    let count = count.min(fit).min(MAX_DYNAMIC_SYMBOLS);
    Ok(Some(DynamicTables {
        symbols: symbols_at..symbols_at + count * entry_size,
        count,
        strings,
    }))
}

/// The file offset of virtual address `addr`, through the `PT_LOAD` segment whose file bytes
/// hold it.
fn file_offset_of<Elf: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    program_headers: &[Elf::ProgramHeader],
    addr: u64,
) -> Option<usize> {
    program_headers
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .find_map(|ph| {
            let start: u64 = ph.p_vaddr(endian).into();
            let size: u64 = ph.p_filesz(endian).into();
            let delta = addr.checked_sub(start).filter(|&d| d < size)?;
            let offset: u64 = ph.p_offset(endian).into();
            usize::try_from(offset.checked_add(delta)?).ok()
        })
}

/// The `PT_LOAD` segment holding `addr` (in memory): its end, and whether it is executable.
pub(crate) fn load_segment_of<Elf: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    program_headers: &[Elf::ProgramHeader],
    addr: u64,
) -> Option<(u64, bool)> {
    program_headers
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .find_map(|ph| {
            let start: u64 = ph.p_vaddr(endian).into();
            let size: u64 = ph.p_memsz(endian).into();
            addr.checked_sub(start).filter(|&d| d < size)?;
            let executable = ph.p_flags(endian).0 & elf::PF_X.0 != 0;
            Some((start.saturating_add(size), executable))
        })
}
