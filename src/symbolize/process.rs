//! Symbolizing absolute addresses of a live process: the façade's composition of the
//! `process` layer (maps, the paths that open a process's files) with its own ELF symbolizing.
//! Addresses are grouped by the file mapped at them, each file is symbolized once with its file
//! offsets, and the results come back in input order, owning their names.
//!
//! A first pass: results own their strings (one `String` per found address). A zero-copy
//! version would keep each file's [`crate::Symbols`] and a (file, index) slot per address.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::addr::{AbsAddr, FileOffset, VirtAddr};
use crate::dwarf::Frame;
use crate::elf::ElfFile;
use crate::error::{Error, Result};
use crate::process::{FileKey, Mapping, MappingKind, PerfMap, Process, ProcessMaps};
use crate::symbolize::maps_cache::ProcessKey;
use crate::symbolize::specials_cache::ProcessSpecials;
use crate::symbolize::{Input, Symbolizer};

/// A symbol an absolute address resolved to. Owns its strings, so it outlives the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSym {
    /// The name to show (demangled if the symbolizer demangles), as in [`crate::Sym::name`].
    pub name: String,
    /// How far into the symbol the address is.
    pub offset: u64,
    /// The start of the symbol, as an ELF virtual address of its file.
    pub sym_addr: VirtAddr,
    /// The size the file states (0 if unsized).
    pub size: u64,
    /// The file, as the process's maps name it (`/memfd:NAME` for a memfd); `[vdso]` for the
    /// vDSO; the perf map's path for JIT code (then `sym_addr` is the absolute start the map
    /// states).
    pub path: PathBuf,
    /// The address's offset in that file (in the vDSO image; for JIT code, in its mapping).
    pub file_offset: FileOffset,
    /// Source lines and inlined frames, innermost first, as in [`crate::Sym::frames`]
    /// (shared, cheap clones); empty without DWARF, and for the vDSO and JIT code.
    pub frames: Vec<Frame>,
}

/// What one absolute address of a process resolved to.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProcessSymbol {
    /// A symbol covers the address.
    Found(ProcessSym),
    /// The address is in a file, but no symbol of the file covers it.
    NoSymbol {
        /// The file, as the process's maps name it.
        path: PathBuf,
        /// The address's offset in it.
        file_offset: FileOffset,
    },
    /// The address is mapped, but not from a file (vDSO, heap, stack, anonymous memory, ...).
    NotInFile(MappingKind),
    /// No mapping contains the address.
    Unmapped,
    /// The file mapped at the address could not be read (not ELF, malformed, no permission):
    /// the error names the path it was opened through. The other addresses are unaffected.
    FileError(Error),
}

impl ProcessSymbol {
    /// The symbol, if one was found.
    pub fn sym(&self) -> Option<&ProcessSym> {
        match self {
            ProcessSymbol::Found(sym) => Some(sym),
            _ => None,
        }
    }
}

impl Symbolizer {
    /// Symbolizes absolute addresses of a process; one result per address, in input order.
    /// The process's maps are cached (per pid and start time, so a reused pid is not
    /// confused) and read again when an address falls outside every mapping known. See
    /// [`Symbolizer::symbolize_process_with`] to pass maps of your own.
    ///
    /// ```no_run
    /// use stacksym::process::Process;
    /// use stacksym::{addr::AbsAddr, Symbolizer};
    /// # fn main() -> stacksym::Result<()> {
    /// let symbolizer = Symbolizer::builder().build();
    /// let process = Process::new(1234);
    /// let results = symbolizer.symbolize_process(&process, &[AbsAddr(0x7f00_1234_5678)])?;
    /// if let Some(sym) = results[0].sym() {
    ///     println!("{}+{:#x} in {}", sym.name, sym.offset, sym.path.display());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn symbolize_process(
        &self,
        process: &Process,
        addrs: &[AbsAddr],
    ) -> Result<Vec<ProcessSymbol>> {
        // Cached per process life; read again when an address is outside every known mapping.
        let maps = self.cached_maps(process, addrs)?;
        self.symbolize_process_with(process, &maps, addrs)
    }

    /// Symbolizes absolute addresses of `process` with maps read before. Each mapped file is
    /// symbolized with one [`Symbolizer::symbolize`] call for all its addresses, opened through
    /// [`Process::open_path`]. A file that cannot be read gives [`ProcessSymbol::FileError`]
    /// for its addresses; if that is because the process has exited, the whole call fails
    /// with [`Error::Process`] naming the pid.
    pub fn symbolize_process_with(
        &self,
        process: &Process,
        maps: &ProcessMaps,
        addrs: &[AbsAddr],
    ) -> Result<Vec<ProcessSymbol>> {
        let mut results: Vec<ProcessSymbol> = Vec::with_capacity(addrs.len());
        // Per file opened: its addresses' indices in `addrs`, their file offsets, the mapping.
        let mut groups: Vec<Group> = Vec::new();
        let mut group_of_file: HashMap<FileKey, usize> = HashMap::new();
        // Where each mapping's addresses go, decided on its first address: the path and the
        // file's identity are computed once per mapping, not once per address.
        let mut route_of_mapping: Vec<Option<Route>> = vec![None; maps.mappings.len()];
        let mut special = Special {
            cached: ProcessKey::of(process).and_then(|key| {
                self.specials
                    .get_or_load(&key, || Ok(ProcessSpecials::default()))
                    .ok()
            }),
            ..Special::default()
        };
        for (index, &addr) in addrs.iter().enumerate() {
            let Some(mapping_index) = maps.find_index(addr) else {
                results.push(ProcessSymbol::Unmapped);
                continue;
            };
            let mapping = &maps.mappings[mapping_index];
            let route = *route_of_mapping[mapping_index].get_or_insert_with(|| {
                match process.open_path(mapping) {
                    Some(open_path) => {
                        let next = groups.len();
                        let group = *group_of_file.entry(FileKey::of(mapping)).or_insert(next);
                        if group == next {
                            // Opened through the path of the first mapping of the file met.
                            groups.push(Group {
                                open_path,
                                indices: Vec::new(),
                                offsets: Vec::new(),
                                mappings: Vec::new(),
                            });
                        }
                        Route::File(group)
                    }
                    None => Route::Special,
                }
            });
            let (Route::File(group), Some(file_offset)) = (route, mapping.file_offset(addr)) else {
                // The vDSO (from the process's memory) and JIT code (from its perf map).
                results.push(special.symbolize(process, maps, mapping, addr)?);
                continue;
            };
            // A placeholder, replaced below.
            results.push(ProcessSymbol::Unmapped);
            let group = &mut groups[group];
            group.indices.push(index);
            group.offsets.push(file_offset.0);
            group.mappings.push(mapping_index);
        }

        let root = process.root_dir();
        for group in groups {
            let symbols = match self.symbolize_elf(
                &group.open_path,
                Input::FileOffsets(&group.offsets),
                Some(&root),
            ) {
                Ok(symbols) => symbols,
                Err(e) => {
                    if process.is_gone() {
                        return Err(process.gone(&format!("(while reading its files: {e})")));
                    }
                    log::debug!("process {}: {e}", process.pid());
                    for &index in &group.indices {
                        results[index] = ProcessSymbol::FileError(e.clone_for_cache());
                    }
                    continue;
                }
            };
            for (j, &index) in group.indices.iter().enumerate() {
                let path = maps.mappings[group.mappings[j]]
                    .file_path()
                    .unwrap_or_default();
                let file_offset = FileOffset(group.offsets[j]);
                results[index] = match symbols.get(j) {
                    Some(sym) => ProcessSymbol::Found(ProcessSym {
                        name: sym.name.to_string(),
                        offset: sym.offset,
                        sym_addr: sym.addr,
                        size: sym.size,
                        path,
                        file_offset,
                        frames: sym.frames.to_vec(),
                    }),
                    None => ProcessSymbol::NoSymbol { path, file_offset },
                };
            }
        }
        Ok(results)
    }
}

/// Where the addresses of one mapping go.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// To the file group at this index.
    File(usize),
    /// Not a file: the vDSO or JIT code (see [`Special`]).
    Special,
}

/// The addresses of one file in a batch.
struct Group {
    /// Where the file is opened from.
    open_path: PathBuf,
    indices: Vec<usize>,
    offsets: Vec<u64>,
    mappings: Vec<usize>,
}

/// The vDSO and the perf map of the process in one batch, each taken on first need from the
/// symbolizer's cache of them (`specials_cache.rs`; not cached when the process's start time
/// cannot be read).
#[derive(Default)]
struct Special {
    cached: Option<Arc<ProcessSpecials>>,
    vdso: Option<Result<Option<Arc<ElfFile>>>>,
    perf_map: Option<Result<Option<Arc<PerfMap>>>>,
}

impl Special {
    /// An address in a mapping that is not a file: in `[vdso]`, symbolized from the vDSO read
    /// from the process's memory (`path` "[vdso]", `file_offset` the offset in its image,
    /// `sym_addr` the vDSO's virtual address); in anonymous executable memory, from the perf
    /// map if the process has one (`path` the map's, `file_offset` the offset in the mapping,
    /// `sym_addr` the absolute start the map states). Otherwise, and where neither covers the
    /// address (no vDSO symbol, no perf-map line), `NotInFile`. A vDSO or perf map that
    /// cannot be read is a `FileError` for its addresses; only a process that is gone fails
    /// the call.
    fn symbolize(
        &mut self,
        process: &Process,
        maps: &ProcessMaps,
        mapping: &Mapping,
        addr: AbsAddr,
    ) -> Result<ProcessSymbol> {
        let not_in_file = || Ok(ProcessSymbol::NotInFile(mapping.kind.clone()));
        let offset = FileOffset(addr.0 - mapping.range.start.0);
        let failed = |e: &Error| {
            if process.is_gone() {
                return Err(process.gone(&format!("({e})")));
            }
            log::debug!("process {}: {e}", process.pid());
            Ok(ProcessSymbol::FileError(e.clone_for_cache()))
        };
        match &mapping.kind {
            MappingKind::Vdso => match self.vdso.get_or_insert_with(|| match &self.cached {
                Some(cached) => cached.vdso(process, maps),
                None => process.vdso(maps).map(|vdso| vdso.map(Arc::new)),
            }) {
                Err(e) => failed(e),
                Ok(None) => not_in_file(),
                Ok(Some(elf)) => match elf.find_symbol_at_file_offset(offset) {
                    Err(e) => failed(&e),
                    Ok(None) => not_in_file(),
                    Ok(Some(sym)) => {
                        let virt = elf
                            .segments()
                            .file_offset_to_virt(offset)
                            .unwrap_or(sym.addr);
                        Ok(ProcessSymbol::Found(ProcessSym {
                            name: String::from_utf8_lossy(sym.name).into_owned(),
                            offset: virt.0.wrapping_sub(sym.addr.0),
                            sym_addr: sym.addr,
                            size: sym.size,
                            path: "[vdso]".into(),
                            file_offset: offset,
                            frames: Vec::new(),
                        }))
                    }
                },
            },
            MappingKind::Anonymous | MappingKind::AnonNamed(_) if mapping.perms.exec => {
                let loaded = self.perf_map.get_or_insert_with(|| match &self.cached {
                    Some(cached) => cached.perf_map(process),
                    None => process.perf_map().map(|map| map.map(Arc::new)),
                });
                match loaded {
                    Err(e) => failed(e),
                    Ok(None) => not_in_file(),
                    Ok(Some(map)) => match map.find(addr) {
                        None => not_in_file(),
                        Some(sym) => Ok(ProcessSymbol::Found(ProcessSym {
                            name: sym.name.to_string(),
                            offset: sym.offset,
                            sym_addr: VirtAddr(sym.start.0),
                            size: sym.size,
                            path: map.path().to_path_buf(),
                            file_offset: offset,
                            frames: Vec::new(),
                        })),
                    },
                }
            }
            _ => not_in_file(),
        }
    }
}
