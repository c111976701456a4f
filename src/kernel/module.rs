//! Kernel modules: a module's `.ko` file matched to where the running kernel loaded it.
//!
//! kallsyms names module code, but has no sizes, no source lines and no inlined frames; the
//! module's `.ko` (an `ET_REL` ELF file) has all three, in its own DWARF or in a separate
//! debug file found by build-id. The kernel loads each allocated section of a module on its
//! own (`.init.text` and `.exit.text` are even allocated apart from `.text`) and lists where
//! in `/sys/module/NAME/sections/<section>` (readable by root only). [`LoadedModule`] maps
//! a running address to the `.ko`'s layout address (see [`crate::elf::relocatable`]) through
//! those; [`KernelModules`] finds `.ko` files (`/lib/modules/$(uname -r)` or given
//! directories) and caches what it matched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::addr::{AbsAddr, VirtAddr};
use crate::elf::{hex, ElfFile};
use crate::error::{Error, Result};

/// Where the running kernel lists its modules' sections and notes.
pub const SYS_MODULE: &str = "/sys/module";

/// Where distributions install the running kernel's modules: `/lib/modules/<release>`.
pub const LIB_MODULES: &str = "/lib/modules";

/// How deep [`KernelModules`] looks for `.ko` files below a directory without a
/// `modules.dep` (`/lib/modules/<release>/kernel/drivers/net/ethernet/intel/e1000e` is 6).
const MAX_SEARCH_DEPTH: usize = 8;

/// How many directory entries one search reads at most (a distribution's module tree has
/// about 6,000 files): a directory given by mistake (`/`) is not walked to its end.
const MAX_SEARCH_ENTRIES: usize = 200_000;

/// How long a failed lookup of a module is remembered before it is tried again (a module
/// may be loaded, or a `.ko` installed, later).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The longest sysfs section file read (one address and a newline).
const MAX_SECTION_FILE: usize = 64;

/// Where the kernel loaded one module's sections, as `/sys/module/NAME/sections/` lists
/// them: one file per allocated section, named as the section (`.text`, `.init.text`),
/// holding its address (`0xffffffffc0a01000`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSections {
    module: String,
    /// `(section name, address)`, sorted by name.
    sections: Vec<(String, AbsAddr)>,
    /// The module's build-id from `/sys/module/NAME/notes/.note.gnu.build-id`, if readable.
    build_id: Option<Vec<u8>>,
}

impl ModuleSections {
    /// Reads `<sys_module>/<module>/sections/*` ([`SYS_MODULE`] for the running kernel) and
    /// the module's build-id note beside them. Fails, naming the directory, when it cannot
    /// be read (not loaded, or not root: the addresses are readable by root only) and,
    /// naming the file, when a section file does not hold one hex address.
    pub fn read(sys_module: &Path, module: &str) -> Result<ModuleSections> {
        let dir = sys_module.join(module).join("sections");
        let entries = std::fs::read_dir(&dir).map_err(|source| Error::KernelModule {
            path: dir.clone(),
            what: format!(
                "cannot list the module's section addresses ({source}): is {module} loaded, \
                 and is this process root? (sysfs shows them to root only)"
            ),
        })?;
        let mut sections = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue; // Section names are ASCII; a stray file is not a section.
            };
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let text = read_small(&path, MAX_SECTION_FILE)?;
            let addr = parse_address(&text).ok_or_else(|| Error::KernelModule {
                path: path.clone(),
                what: format!(
                    "expected a section address like 0xffffffffc0a01000, found {:?}",
                    String::from_utf8_lossy(&text[..text.len().min(MAX_SECTION_FILE)])
                ),
            })?;
            sections.push((name, AbsAddr(addr)));
        }
        let note = sys_module
            .join(module)
            .join("notes")
            .join(".note.gnu.build-id");
        let build_id = match std::fs::read(&note) {
            Ok(bytes) => gnu_build_id_note(&bytes),
            Err(_) => None,
        };
        Ok(ModuleSections::new(module, sections, build_id))
    }

    /// Section addresses known another way (a copy of sysfs taken on the traced machine, a
    /// tracer's own record); `build_id` is the loaded module's, if known.
    pub fn new(
        module: impl Into<String>,
        sections: impl IntoIterator<Item = (String, AbsAddr)>,
        build_id: Option<Vec<u8>>,
    ) -> ModuleSections {
        let mut sections: Vec<(String, AbsAddr)> = sections.into_iter().collect();
        sections.sort();
        ModuleSections {
            module: module.into(),
            sections,
            build_id,
        }
    }

    /// The module's name, as kallsyms and sysfs write it (`kmod_demo`).
    pub fn module(&self) -> &str {
        &self.module
    }

    /// The address of section `name`, if listed.
    pub fn address(&self, name: &str) -> Option<AbsAddr> {
        self.sections
            .binary_search_by(|(section, _)| section.as_str().cmp(name))
            .ok()
            .and_then(|at| self.sections.get(at))
            .map(|&(_, addr)| addr)
    }

    /// Every listed section and its address, by name.
    pub fn sections(&self) -> impl Iterator<Item = (&str, AbsAddr)> + '_ {
        self.sections
            .iter()
            .map(|(name, addr)| (name.as_str(), *addr))
    }

    /// The loaded module's build-id, when sysfs showed its note.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }
}

/// One loaded section: running addresses `start..start + size` are the `.ko`'s layout
/// addresses `layout..layout + size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LoadedRange {
    start: u64,
    size: u64,
    layout: u64,
}

/// A module's `.ko` file matched to where the kernel loaded its sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedModule {
    name: String,
    path: PathBuf,
    /// Sorted by `start`, not overlapping.
    ranges: Vec<LoadedRange>,
}

impl LoadedModule {
    /// Opens the `.ko` at `path` and matches its allocated sections to `sections` by name.
    /// Fails, naming the file, when it is not a relocatable ELF file, when its build-id
    /// differs from the loaded module's (when both are known: another build of the module
    /// would give wrong names), or when none of its sections with code was loaded.
    pub fn new(path: impl Into<PathBuf>, sections: &ModuleSections) -> Result<LoadedModule> {
        let path = path.into();
        let elf = ElfFile::open(&path)?;
        let problem = |what: String| Error::KernelModule {
            path: path.clone(),
            what,
        };
        if elf.relocatable_sections().is_empty() {
            return Err(problem(format!(
                "not a kernel module: ELF type {} is not ET_REL (1), or it has no allocated \
                 sections",
                elf.header().file_type
            )));
        }
        if let (Some(loaded), Some(file)) = (sections.build_id(), elf.build_id()) {
            if loaded != file {
                return Err(problem(format!(
                    "build-id {} differs from the loaded module {}'s {}: another build",
                    hex(file),
                    sections.module(),
                    hex(loaded)
                )));
            }
        }
        let mut ranges = Vec::new();
        let mut has_code = false;
        for section in elf.relocatable_sections() {
            let Some(start) = sections.address(&section.name) else {
                continue;
            };
            if section.size == 0 || start.checked_add(section.size).is_none() {
                continue;
            }
            has_code |= section.executable;
            ranges.push(LoadedRange {
                start: start.0,
                size: section.size,
                layout: section.addr.0,
            });
        }
        if !has_code {
            return Err(problem(format!(
                "none of its code sections is among the {} loaded sections of {} (another \
                 module's file?)",
                sections.sections.len(),
                sections.module()
            )));
        }
        ranges.sort_by_key(|range| range.start);
        if let Some(pair) = ranges
            .windows(2)
            .find(|pair| pair[0].start + pair[0].size > pair[1].start)
        {
            return Err(problem(format!(
                "the loaded sections overlap (at {:#x} and {:#x}): section addresses of \
                 another module, or of another build?",
                pair[0].start, pair[1].start
            )));
        }
        Ok(LoadedModule {
            name: sections.module().to_string(),
            path,
            ranges,
        })
    }

    /// The module's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `.ko` file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `.ko`'s layout address of the running address `kernel_addr` (what to give
    /// [`crate::Symbolizer::symbolize`] with the `.ko` as source), or `None` when no loaded
    /// section of the module holds it.
    pub fn layout_addr(&self, kernel_addr: AbsAddr) -> Option<VirtAddr> {
        let kernel_addr = kernel_addr.0;
        let at = self
            .ranges
            .partition_point(|range| range.start <= kernel_addr)
            .checked_sub(1)?;
        let range = self.ranges.get(at)?;
        let offset = kernel_addr - range.start; // start <= addr: partition_point's contract.
        (offset < range.size).then(|| VirtAddr(range.layout + offset))
    }
}

/// A module lookup's outcome, kept with when it was made.
#[derive(Debug)]
enum Lookup {
    Found(Arc<LoadedModule>, Instant),
    Failed(Error, Instant),
}

/// Finds kernel modules' `.ko` files and where they are loaded, and keeps what it found.
///
/// A module is looked for by its name as kallsyms writes it (`kmod_demo`; a file name may
/// use `-` where the name has `_`, as kbuild allows), as `NAME.ko` in each directory given,
/// in order: through the directory's `modules.dep` when it has one (what `modprobe` reads),
/// else by walking the directory (symbolic links not followed: `/lib/modules/*/build` leads
/// into a kernel source tree). Compressed modules (`.ko.xz`, `.ko.zst`, `.ko.gz`, as
/// distributions ship them) are decompressed into memory when opened
/// ([`ElfFile::open`]).
///
/// A found module is kept until [`KernelModules::clear`], or until an address of it falls
/// outside every section it was loaded at (it may have been unloaded and loaded again:
/// sysfs is read again, at most once a second); a failed lookup is tried again after a
/// second.
/// `Send + Sync`; share one between threads.
#[derive(Debug)]
pub struct KernelModules {
    dirs: Vec<PathBuf>,
    sys_module: PathBuf,
    /// Normalized module name -> `.ko` path, built on first use from all `dirs`.
    files: Mutex<Option<HashMap<String, PathBuf>>>,
    lookups: Mutex<HashMap<String, Lookup>>,
}

impl KernelModules {
    /// The running kernel's modules: [`KernelModules::running_kernel_dir`] and
    /// [`SYS_MODULE`].
    pub fn running_kernel() -> KernelModules {
        KernelModules::new(vec![KernelModules::running_kernel_dir()], SYS_MODULE)
    }

    /// Where the running kernel's modules are installed: `/lib/modules/<release>` (the
    /// release from `/proc/sys/kernel/osrelease`, as `uname -r` prints it).
    pub fn running_kernel_dir() -> PathBuf {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        Path::new(LIB_MODULES).join(release.trim())
    }

    /// Modules found in `dirs` (searched in order), loaded where `sys_module` (a directory
    /// laid out as [`SYS_MODULE`]: a copy, or the host's sysfs as a container sees it) says.
    pub fn new(dirs: Vec<PathBuf>, sys_module: impl Into<PathBuf>) -> KernelModules {
        KernelModules {
            dirs,
            sys_module: sys_module.into(),
            files: Mutex::new(None),
            lookups: Mutex::new(HashMap::new()),
        }
    }

    /// The module `name` as loaded now, for an address kallsyms places in it: the cached
    /// match while `kernel_addr` falls inside one of its sections, else (at most once a
    /// second) found and matched again. An error says why the module's file cannot be used
    /// (kallsyms' names still can).
    pub fn loaded(&self, name: &str, kernel_addr: AbsAddr) -> Result<Arc<LoadedModule>> {
        let mut lookups = self.lookups.lock().unwrap_or_else(PoisonError::into_inner);
        match lookups.get(name) {
            // An address outside every section of the match: the module may have been
            // loaded again elsewhere; sysfs is read again, at most once a second (an
            // address kallsyms places in a module but no listed section holds would
            // otherwise cost a read per batch).
            Some(Lookup::Found(module, at))
                if module.layout_addr(kernel_addr).is_some() || at.elapsed() < RETRY_AFTER =>
            {
                return Ok(Arc::clone(module))
            }
            Some(Lookup::Failed(error, at)) if at.elapsed() < RETRY_AFTER => {
                return Err(error.clone_for_cache())
            }
            _ => {}
        }
        // Found again under the lock: a second thread asking for the same module waits
        // for this answer instead of reading sysfs too.
        let found = self.find(name);
        let lookup = match &found {
            Ok(module) => Lookup::Found(Arc::clone(module), Instant::now()),
            Err(error) => Lookup::Failed(error.clone_for_cache(), Instant::now()),
        };
        lookups.insert(name.to_string(), lookup);
        found
    }

    /// The `.ko` file of module `name`, if one of the directories has it.
    pub fn file_of(&self, name: &str) -> Option<PathBuf> {
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        let files = files.get_or_insert_with(|| index_module_files(&self.dirs));
        files.get(&normalize(name)).cloned()
    }

    /// The modules whose file could not be used at their last lookup, and why (each also
    /// logged with `log::debug!` where it happened), sorted by name.
    pub fn problems(&self) -> Vec<(String, Error)> {
        let lookups = self.lookups.lock().unwrap_or_else(PoisonError::into_inner);
        let mut problems: Vec<(String, Error)> = lookups
            .iter()
            .filter_map(|(name, lookup)| match lookup {
                Lookup::Failed(error, _) => Some((name.clone(), error.clone_for_cache())),
                Lookup::Found(..) => None,
            })
            .collect();
        problems.sort_by(|a, b| a.0.cmp(&b.0));
        problems
    }

    /// Records that module `name`'s file failed when it was read (a malformed `.ko`), so
    /// that it is not read again for a while and [`KernelModules::problems`] says why.
    pub(crate) fn mark_failed(&self, name: &str, error: Error) {
        self.lookups
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_string(), Lookup::Failed(error, Instant::now()));
    }

    /// Forgets every module found and every file seen (the directories are read again).
    pub fn clear(&self) {
        self.lookups
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        *self.files.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn find(&self, name: &str) -> Result<Arc<LoadedModule>> {
        let path = self.file_of(name).ok_or_else(|| Error::KernelModule {
            path: self.dirs.first().cloned().unwrap_or_default(),
            what: format!(
                "no {name}.ko in {}",
                self.dirs
                    .iter()
                    .map(|dir| dir.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })?;
        let sections = ModuleSections::read(&self.sys_module, name)?;
        LoadedModule::new(path, &sections).map(Arc::new)
    }
}

/// Whether `name` is one of the kernel's pseudo-modules that kallsyms lists code under but
/// that have no file: `[bpf]` (BPF programs), `[__builtin__ftrace]`, `[__builtin__kprobes]`
/// (trampolines and probe slots).
pub fn is_pseudo_module(name: &str) -> bool {
    name == "bpf" || name.starts_with("__builtin__")
}

/// Module names treat `-` and `_` alike (kbuild turns `-` in file names into `_`).
fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

/// The module name a file name stands for (`kmod-demo.ko.xz` -> `kmod_demo`).
fn module_name_of(file_name: &str) -> Option<String> {
    [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
        .into_iter()
        .find_map(|ext| file_name.strip_suffix(ext))
        .filter(|stem| !stem.is_empty())
        .map(normalize)
}

/// Every module file of `dirs`: from `modules.dep` where a directory has one, else found by
/// walking it. The first directory that has a module wins.
fn index_module_files(dirs: &[PathBuf]) -> HashMap<String, PathBuf> {
    let mut files = HashMap::new();
    for dir in dirs {
        let mut found = Vec::new();
        match std::fs::read_to_string(dir.join("modules.dep")) {
            Ok(dep) => {
                for line in dep.lines() {
                    let Some((file, _)) = line.split_once(':') else {
                        continue;
                    };
                    found.push(dir.join(file.trim()));
                }
            }
            Err(_) => walk(dir, 0, &mut 0, &mut found),
        }
        for path in found {
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .and_then(module_name_of);
            if let Some(name) = name {
                files.entry(name).or_insert(path);
            }
        }
    }
    files
}

/// Collects module files below `dir` (see [`MAX_SEARCH_DEPTH`], [`MAX_SEARCH_ENTRIES`]).
fn walk(dir: &Path, depth: usize, seen: &mut usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        log::debug!("{}: cannot list it; no modules found there", dir.display());
        return;
    };
    for entry in entries.flatten() {
        *seen += 1;
        if *seen > MAX_SEARCH_ENTRIES {
            log::debug!(
                "{}: stopped looking for modules after {MAX_SEARCH_ENTRIES} entries",
                dir.display()
            );
            return;
        }
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if file_type.is_dir() && depth < MAX_SEARCH_DEPTH {
            walk(&path, depth + 1, seen, found);
        } else if file_type.is_file()
            && entry
                .file_name()
                .to_str()
                .and_then(module_name_of)
                .is_some()
        {
            found.push(path);
        }
    }
}

/// Reads at most `limit` bytes of a small file (a sysfs attribute).
fn read_small(path: &Path, limit: usize) -> Result<Vec<u8>> {
    use std::io::Read;
    let io_error = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io_error)?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    Ok(bytes)
}

/// `0xffffffffc0a01000` (with or without `0x`, surrounding whitespace allowed).
fn parse_address(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.trim();
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// The descriptor of the `NT_GNU_BUILD_ID` note in `notes` (ELF notes in this machine's
/// byte order, as sysfs shows a module's `.note.gnu.build-id`).
fn gnu_build_id_note(notes: &[u8]) -> Option<Vec<u8>> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let word = |at: usize| -> Option<u32> {
        let bytes = notes.get(at..at.checked_add(4)?)?;
        Some(u32::from_ne_bytes(bytes.try_into().ok()?))
    };
    let mut at = 0;
    while at < notes.len() {
        let name_size = usize::try_from(word(at)?).ok()?;
        let desc_size = usize::try_from(word(at + 4)?).ok()?;
        let kind = word(at + 8)?;
        let name_at = at.checked_add(12)?;
        let desc_at = name_at.checked_add(name_size.checked_next_multiple_of(4)?)?;
        let end = desc_at.checked_add(desc_size.checked_next_multiple_of(4)?)?;
        let name = notes.get(name_at..name_at + name_size)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return notes.get(desc_at..desc_at + desc_size).map(<[u8]>::to_vec);
        }
        at = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_addresses_parse_as_sysfs_writes_them() {
        assert_eq!(
            parse_address(b"0xffffffffc0a01000\n"),
            Some(0xffff_ffff_c0a0_1000)
        );
        assert_eq!(parse_address(b"c0a01000"), Some(0xc0a0_1000));
        assert_eq!(parse_address(b"0x"), None);
        assert_eq!(parse_address(b"0x1ffffffffffffffff"), None);
        assert_eq!(parse_address(b"zz"), None);
    }

    #[test]
    fn module_file_names_map_to_kallsyms_names() {
        assert_eq!(module_name_of("kmod-demo.ko").as_deref(), Some("kmod_demo"));
        assert_eq!(module_name_of("ext4.ko.zst").as_deref(), Some("ext4"));
        assert_eq!(module_name_of("ext4.o"), None);
        assert_eq!(module_name_of(".ko"), None);
    }

    #[test]
    fn build_id_notes_are_found_and_truncated_ones_are_not() {
        let mut note = Vec::new();
        for word in [4u32, 3, 3] {
            note.extend_from_slice(&word.to_ne_bytes());
        }
        note.extend_from_slice(b"GNU\0\xaa\xbb\xcc\0");
        assert_eq!(gnu_build_id_note(&note), Some(vec![0xaa, 0xbb, 0xcc]));
        for len in 0..note.len() - 1 {
            assert_eq!(gnu_build_id_note(&note[..len]), None, "{len}");
        }
    }
}
