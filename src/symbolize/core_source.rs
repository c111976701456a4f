//! Symbolizing absolute addresses of a core file's process ([`crate::Source::Core`]): as for a
//! live process (`process.rs`), addresses are grouped by the file mapped at them and each
//! file is symbolized once with its file offsets; the files are those the core matched by
//! build-id ([`crate::core::MappedFile`]), and the vDSO is the image in the core's memory.
//! A mapping whose file could not be matched answers [`NotFound::FileError`] with the
//! core's reason (another build: both build-ids), never a symbol of another file.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::addr::{AbsAddr, FileOffset};
use crate::core::CoreFile;
use crate::error::Result;
use crate::process::MappingKind;
use crate::symbolize::cache::FileId;
use crate::symbolize::loaded::LoadedElf;
use crate::symbolize::output::{Answer, Entry, ModuleName, NotFound, Part, NO_MODULE};
use crate::symbolize::{Input, Symbolizer, Symbols};

/// The addresses of one mapped file in a batch.
struct Group {
    file: usize,
    indices: Vec<usize>,
    offsets: Vec<FileOffset>,
}

impl Symbolizer {
    pub(crate) fn symbolize_core(&self, core: &CoreFile, addrs: &[AbsAddr]) -> Result<Symbols> {
        let mut results = Symbols::with_capacity(addrs.len(), self.demangle);
        let mut groups: Vec<Group> = Vec::new();
        let mut group_of_file: HashMap<usize, usize> = HashMap::new();
        let mut vdso_part: Option<(u32, u32)> = None;
        for (index, &addr) in addrs.iter().enumerate() {
            let Some(mapping) = core.mapping_at(addr) else {
                let entry = match core.vdso() {
                    Some((range, elf)) if range.contains(&addr) => {
                        let offset = FileOffset(addr.0 - range.start.0);
                        match elf.find_symbol_at_file_offset(offset) {
                            Ok(Some(_)) => {
                                let (part, module) = *vdso_part.get_or_insert_with(|| {
                                    let part = results.add_part(Part::Vdso(Arc::clone(elf)));
                                    let module = results.add_module(ModuleName {
                                        shown: PathBuf::from("[vdso]"),
                                        opened_as: None,
                                        kernel_module: None,
                                    });
                                    (part, module)
                                });
                                Entry {
                                    answer: Answer::Vdso { part, offset },
                                    module,
                                    file_offset: Some(offset),
                                    frames: 0..0,
                                }
                            }
                            Ok(None) => Entry::not_found(NotFound::NotInFile(MappingKind::Vdso)),
                            Err(e) => Entry::not_found(NotFound::FileError(e)),
                        }
                    }
                    _ if core.is_mapped(addr) => {
                        Entry::not_found(NotFound::NotInFile(MappingKind::Anonymous))
                    }
                    _ => Entry::not_found(NotFound::Unmapped),
                };
                results.entries.push(entry);
                continue;
            };
            let (Some(file), Some(offset)) = (mapping.file, mapping.file_offset(addr)) else {
                results.entries.push(Entry::no_symbol());
                continue;
            };
            let next = groups.len();
            let group = *group_of_file.entry(file).or_insert(next);
            if group == next {
                groups.push(Group {
                    file,
                    indices: Vec::new(),
                    offsets: Vec::new(),
                });
            }
            // A placeholder, replaced below.
            results.entries.push(Entry::not_found(NotFound::Unmapped));
            let group = &mut groups[group];
            group.indices.push(index);
            group.offsets.push(offset);
        }

        for group in groups {
            let Some(mapped) = core.files().get(group.file) else {
                continue;
            };
            let symbols = match &mapped.file {
                Ok((elf, _)) => {
                    let loaded = self.core_file(elf)?;
                    self.symbolize_loaded(
                        &loaded,
                        &mapped.path,
                        Input::FileOffsets(&group.offsets),
                        elf.root(),
                    )
                }
                Err(e) => Err(e.clone_for_cache()),
            };
            let mut symbols = match symbols {
                Ok(symbols) => symbols,
                Err(e) => {
                    for &index in &group.indices {
                        if let Some(entry) = results.entries.get_mut(index) {
                            *entry = Entry::not_found(NotFound::FileError(e.clone_for_cache()));
                            entry.module = NO_MODULE;
                        }
                    }
                    continue;
                }
            };
            // Named as the core names the file; opened as the file matched.
            symbols.modules.clear();
            let opened = match &mapped.file {
                Ok((elf, _)) => elf.path().to_path_buf(),
                Err(_) => mapped.path.clone(),
            };
            let module = symbols.add_module(ModuleName {
                shown: mapped.path.clone(),
                opened_as: (opened != mapped.path).then_some(opened),
                kernel_module: None,
            });
            for entry in &mut symbols.entries {
                entry.module = module;
            }
            results.merge_into(symbols, |k| group.indices.get(k).copied());
        }
        Ok(results)
    }

    /// The symbolizer's cached file for `elf` (a core's matched file): the entry of the same
    /// file on disk if the cache has it (its demangled names and DWARF are kept), else
    /// `elf` itself, cached.
    fn core_file(&self, elf: &Arc<crate::elf::ElfFile>) -> Result<Arc<LoadedElf>> {
        match FileId::of_path(elf.path()) {
            Ok(id) => self
                .files
                .get_or_load(&id, || Ok(LoadedElf::from_arc(Arc::clone(elf)))),
            Err(_) => Ok(Arc::new(LoadedElf::from_arc(Arc::clone(elf)))),
        }
    }
}
