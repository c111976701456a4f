//! Symbolizing absolute addresses of a live process ([`crate::Source::Process`]): the
//! façade's composition of the `process` layer (maps, the paths that open a process's files)
//! with its own ELF symbolizing. Addresses are grouped by the file mapped at them, each file is
//! symbolized once with its file offsets, and each file's batch is merged into the process's
//! (zero-copy: the result borrows names from the files it holds).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::addr::{AbsAddr, FileOffset};
use crate::elf::ElfFile;
use crate::error::{Error, Result};
use crate::process::{FileKey, Mapping, MappingKind, Normalized, PerfMap, Process, ProcessMaps};
use crate::symbolize::maps_cache::ProcessKey;
use crate::symbolize::output::{Answer, Entry, ModuleName, NotFound, Part, NO_MODULE};
use crate::symbolize::specials_cache::{JitDumps, ProcessSpecials};
use crate::symbolize::{Input, Symbolizer, Symbols};

impl Symbolizer {
    /// Normalizes absolute addresses of a process: per address its file's build-id, the
    /// offset in the file, the ELF virtual address there and the path as the process names
    /// it ([`Normalized`]), with the process's maps cached as for [`crate::Source::Process`].
    /// Cheap (no symbol table is read), so a host can capture (build-id, file offset) pairs
    /// and send them to where the binaries or their debug files are, to be symbolized there
    /// with [`crate::Source::BuildId`]:
    ///
    /// ```no_run
    /// use stacksym::process::{Normalized, Process};
    /// use stacksym::{AbsAddr, Input, Source, Symbolizer};
    /// # fn main() -> stacksym::Result<()> {
    /// // On the host: capture.
    /// let symbolizer = Symbolizer::builder().build();
    /// let normalized = symbolizer.normalize(&Process::new(1234), &[AbsAddr(0x5566_7788_99aa)])?;
    /// // Later, elsewhere (debug files by build-id in the debug dirs): symbolize.
    /// if let Normalized::File(addr) = &normalized[0] {
    ///     if let (Some(build_id), Some(virt)) = (&addr.build_id, addr.virt_addr) {
    ///         let source = Source::BuildId { build_id };
    ///         let symbols = symbolizer.symbolize(&source, Input::VirtAddrs(&[virt]))?;
    ///         println!("{:?}", symbols.get(0).map(|sym| sym.name));
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn normalize(&self, process: &Process, addrs: &[AbsAddr]) -> Result<Vec<Normalized>> {
        let maps = self.cached_maps(process, AbsAddr::as_raw_slice(addrs))?;
        Ok(process.normalize_with(&maps, addrs))
    }

    /// The ELF file behind `mapping` of `process`, opened as [`crate::Source::Process`]
    /// opens it ([`Process::open_mapped`]: `map_files`, else its path confined to the
    /// process's root and checked against the maps line; read into memory) and cached: the
    /// same `Arc<ElfFile>` later batches of the process symbolize with, to share with its
    /// unwinder (`unwind::Modules::from_process_maps`). `Ok(None)` for a mapping not backed
    /// by a file; an error names the file and why it cannot be used.
    pub fn process_file(
        &self,
        process: &Process,
        mapping: &Mapping,
    ) -> Result<Option<Arc<ElfFile>>> {
        let Some(opened) = process.open_mapped(mapping) else {
            return Ok(None);
        };
        let (file, path) = opened?;
        let loaded = self.open_process_file(&file, &path, &process.root())?;
        Ok(Some(Arc::clone(&loaded.elf)))
    }

    /// Symbolizes absolute addresses of `process` with `maps`. Each mapped file is
    /// symbolized with one ELF batch for all its addresses, opened through
    /// [`Process::open_mapped`] (`map_files`, else its path confined to the process's root and
    /// checked against the maps line) and read into memory; its debug files are searched
    /// inside the root first, confined. A file that cannot be read gives
    /// [`NotFound::FileError`] for its addresses; if that is because the process has exited,
    /// the whole call fails with [`Error::Process`] naming the pid.
    pub(crate) fn symbolize_process_with(
        &self,
        process: &Process,
        maps: &ProcessMaps,
        addrs: &[u64],
    ) -> Result<Symbols> {
        let mut results = Symbols::with_capacity(addrs.len(), self.demangle);
        // Per file opened: its addresses' indices in `addrs`, their file offsets, the mapping.
        let mut groups: Vec<Group> = Vec::new();
        let mut group_of_file: HashMap<FileKey, usize> = HashMap::new();
        // Where each mapping's addresses go, decided on its first address: the path and the
        // file's identity are computed once per mapping, not once per address.
        let mut route_of_mapping: Vec<Option<Route>> = vec![None; maps.mappings.len()];
        let mut special = Special {
            cached: self.cached_specials(process),
            ..Special::default()
        };
        for (index, &addr) in addrs.iter().enumerate() {
            let addr = AbsAddr(addr);
            let Some(mapping_index) = maps.find_index(addr) else {
                results.entries.push(Entry::not_found(NotFound::Unmapped));
                continue;
            };
            let mapping = &maps.mappings[mapping_index];
            let route = *route_of_mapping[mapping_index].get_or_insert_with(|| {
                if !mapping.is_file() {
                    return Route::Special;
                }
                let next = groups.len();
                let group = *group_of_file.entry(FileKey::of(mapping)).or_insert(next);
                if group == next {
                    // Opened through the first mapping of the file met.
                    groups.push(Group {
                        first_mapping: mapping_index,
                        indices: Vec::new(),
                        offsets: Vec::new(),
                        mappings: Vec::new(),
                    });
                }
                Route::File(group)
            });
            let (Route::File(group), Some(file_offset)) = (route, mapping.file_offset(addr)) else {
                // The vDSO (from the process's memory) and JIT code (from its perf map).
                let entry = special.symbolize(process, maps, mapping, addr, &mut results)?;
                results.entries.push(entry);
                continue;
            };
            // A placeholder, replaced below.
            results.entries.push(Entry::not_found(NotFound::Unmapped));
            let group = &mut groups[group];
            group.indices.push(index);
            group.offsets.push(file_offset.0);
            group.mappings.push(mapping_index);
        }

        let root = process.root();
        for group in groups {
            let mapping = &maps.mappings[group.first_mapping];
            // Groups hold file mappings only (`is_file` above), which have a file to open.
            let opened = process.open_mapped(mapping).unwrap_or_else(|| {
                Err(Error::Process {
                    path: process.maps_path(),
                    what: "a file mapping without a file to open".to_string(),
                })
            });
            let mut open_path = PathBuf::new();
            let mut symbols = match opened.and_then(|(file, path)| {
                let loaded = self.open_process_file(&file, &path, &root)?;
                open_path = path;
                self.symbolize_loaded(
                    &loaded,
                    &open_path,
                    Input::FileOffsets(FileOffset::from_raw_slice(&group.offsets)),
                    Some(&root),
                )
            }) {
                Ok(symbols) => symbols,
                Err(e) => {
                    if process.is_gone() {
                        return Err(process.gone(&format!("(while reading its files: {e})")));
                    }
                    log::debug!("process {}: {e}", process.pid());
                    for &index in &group.indices {
                        if let Some(entry) = results.entries.get_mut(index) {
                            *entry = Entry::not_found(NotFound::FileError(e.clone_for_cache()));
                        }
                    }
                    continue;
                }
            };
            // The file as the process names it, per mapping (the hard links of one file
            // mapped under two names keep their own names); one module entry per name.
            symbols.modules.clear();
            let mut module_of_mapping: HashMap<usize, u32> = HashMap::new();
            for (j, entry) in symbols.entries.iter_mut().enumerate() {
                let Some(&mapping) = group.mappings.get(j) else {
                    continue;
                };
                entry.module = *module_of_mapping.entry(mapping).or_insert_with(|| {
                    let shown = maps.mappings[mapping].file_path().unwrap_or_default();
                    let opened_as = (shown != open_path).then(|| open_path.clone());
                    symbols.modules.push(ModuleName {
                        shown,
                        opened_as,
                        kernel_module: None,
                    });
                    u32::try_from(symbols.modules.len() - 1).unwrap_or(NO_MODULE)
                });
            }
            results.merge_into(symbols, |k| group.indices.get(k).copied());
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
    /// The mapping (index in the maps) the file is opened through: the first met.
    first_mapping: usize,
    indices: Vec<usize>,
    offsets: Vec<u64>,
    mappings: Vec<usize>,
}

/// The vDSO and the perf map of the process in one batch, each taken on first need from the
/// symbolizer's cache of them (`specials_cache.rs`; not cached when the process's start time
/// cannot be read), and their parts in the batch.
#[derive(Default)]
struct Special {
    cached: Option<Arc<ProcessSpecials>>,
    vdso: Option<Result<Option<Arc<ElfFile>>>>,
    perf_map: Option<Result<Option<Arc<PerfMap>>>>,
    jit_dumps: Option<Result<JitDumps>>,
    /// The parts and module names added to the batch for the vDSO, the perf map and each
    /// jitdump (by its index in `jit_dumps`).
    vdso_part: Option<(u32, u32)>,
    perf_map_part: Option<(u32, u32)>,
    jit_parts: HashMap<usize, (u32, u32)>,
}

impl Special {
    /// An address in a mapping that is not a file: in `[vdso]`, symbolized from the vDSO read
    /// from the process's memory (module `[vdso]`, file offset the offset in its image); in
    /// anonymous executable memory, from the jitdump files the process maps (the last code
    /// loaded there, with its source line as the answer's frame), else from the perf map if
    /// the process has one (module the dump's or the map's path, file offset the offset in
    /// the mapping). Otherwise, and where neither covers
    /// the address (no vDSO symbol, no perf-map line), `NotInFile`. A vDSO or perf map that
    /// cannot be read is a `FileError` for its addresses; only a process that is gone fails
    /// the call.
    fn symbolize(
        &mut self,
        process: &Process,
        maps: &ProcessMaps,
        mapping: &Mapping,
        addr: AbsAddr,
        batch: &mut Symbols,
    ) -> Result<Entry> {
        let not_in_file = || Ok(Entry::not_found(NotFound::NotInFile(mapping.kind.clone())));
        let offset = FileOffset(addr.0 - mapping.range.start.0);
        let failed = |e: &Error| {
            if process.is_gone() {
                return Err(process.gone(&format!("({e})")));
            }
            log::debug!("process {}: {e}", process.pid());
            Ok(Entry::not_found(NotFound::FileError(e.clone_for_cache())))
        };
        let found = |answer: Answer, module: u32| {
            Ok(Entry {
                answer,
                module,
                file_offset: Some(offset),
                frames: 0..0,
            })
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
                    Ok(Some(_)) => {
                        let (part, module) = *self.vdso_part.get_or_insert_with(|| {
                            let part = batch.add_part(Part::Vdso(Arc::clone(elf)));
                            let module = batch.add_module(ModuleName {
                                shown: PathBuf::from("[vdso]"),
                                opened_as: None,
                                kernel_module: None,
                            });
                            (part, module)
                        });
                        found(Answer::Vdso { part, offset }, module)
                    }
                },
            },
            MappingKind::Anonymous | MappingKind::AnonNamed(_) if mapping.perms.exec => {
                let dumps = self.jit_dumps.get_or_insert_with(|| match &self.cached {
                    Some(cached) => cached.jit_dumps(process, maps),
                    None => process
                        .jit_dumps(maps)
                        .map(|dumps| Arc::new(dumps.into_iter().map(Arc::new).collect())),
                });
                let dumps = match dumps {
                    Ok(dumps) => Arc::clone(dumps),
                    Err(e) => return failed(e),
                };
                let hit = dumps
                    .iter()
                    .enumerate()
                    .find_map(|(i, dump)| dump.find(addr).map(|code| (i, dump, code)));
                if let Some((i, dump, code)) = hit {
                    let (part, module) = *self.jit_parts.entry(i).or_insert_with(|| {
                        let part = batch.add_part(Part::JitDump(Arc::clone(dump)));
                        let module = batch.add_module(ModuleName {
                            shown: dump.path().to_path_buf(),
                            opened_as: None,
                            kernel_module: None,
                        });
                        (part, module)
                    });
                    let first = batch.frames.len();
                    if let Some(line) = code.line() {
                        batch.frames.push(crate::dwarf::InlineFrame {
                            function: None,
                            file: Some(Arc::from(line.file)),
                            line: (line.line != 0).then_some(line.line),
                            column: None,
                            discriminator: (line.discriminator != 0).then_some(line.discriminator),
                            inlined: false,
                        });
                    }
                    let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                    return Ok(Entry {
                        answer: Answer::JitDump { part, addr },
                        module,
                        file_offset: Some(offset),
                        frames: to_u32(first)..to_u32(batch.frames.len()),
                    });
                }
                let loaded = self.perf_map.get_or_insert_with(|| match &self.cached {
                    Some(cached) => cached.perf_map(process),
                    None => process.perf_map().map(|map| map.map(Arc::new)),
                });
                match loaded {
                    Err(e) => failed(e),
                    Ok(None) => not_in_file(),
                    Ok(Some(map)) => match map.find(addr) {
                        None => not_in_file(),
                        Some(_) => {
                            let (part, module) = *self.perf_map_part.get_or_insert_with(|| {
                                let part = batch.add_part(Part::PerfMap(Arc::clone(map)));
                                let module = batch.add_module(ModuleName {
                                    shown: map.path().to_path_buf(),
                                    opened_as: None,
                                    kernel_module: None,
                                });
                                (part, module)
                            });
                            found(Answer::PerfMap { part, addr }, module)
                        }
                    },
                }
            }
            _ => not_in_file(),
        }
    }
}

impl Symbolizer {
    /// The symbolizer's cached vDSO and perf map of `process` (`specials_cache.rs`), shared
    /// by symbolization and the process unwinder; `None` when the process cannot be keyed
    /// (its start time unreadable: then nothing of it is cached).
    pub(crate) fn cached_specials(&self, process: &Process) -> Option<Arc<ProcessSpecials>> {
        let key = ProcessKey::of(process)?;
        self.specials
            .get_or_load(&key, || Ok(ProcessSpecials::default()))
            .ok()
    }
}
