//! Kernel addresses ([`crate::Source::Kernel`]): text symbols from a kallsyms file (cached by
//! the symbolizer), and where given, the kernel image's names, sizes and source lines from a
//! vmlinux (matched to kallsyms by its KASLR offset, cached too) and modules' from their `.ko`
//! files ([`KernelModules`]), both through the symbolizer's ELF path and file cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::addr::{AbsAddr, LoadBias, VirtAddr};
use crate::error::{Error, Result};
use crate::kernel::{is_pseudo_module, KernelModules, KernelSym, PROC_KALLSYMS};
use crate::symbolize::output::{Answer, Entry, ModuleName, NotFound, Part};
use crate::symbolize::{Input, Source, Symbolizer, Symbols};

/// The module name perf gives the kernel image's addresses.
const KERNEL_IMAGE: &str = "[kernel.kallsyms]";

/// Where kernel addresses are looked up. `KernelSource::default()` is the running kernel's
/// `/proc/kallsyms` alone.
///
/// ```
/// use std::path::Path;
/// use stacksym::{AbsAddr, Input, KernelSource, Source, Symbolizer};
/// # fn main() -> stacksym::Result<()> {
/// let symbolizer = Symbolizer::builder().build();
/// let kernel = KernelSource {
///     kallsyms: Some(Path::new("testdata/kallsyms/synthetic.txt")),
///     ..KernelSource::default()
/// };
/// let symbols = symbolizer.symbolize(&Source::Kernel(kernel), Input::AbsAddrs(&[AbsAddr(0xffffffff81000010)]))?;
/// let sym = symbols.get(0).expect("in _stext");
/// assert_eq!((sym.name, sym.offset), ("_stext", 0x10));
/// assert_eq!(sym.module, Path::new("[kernel.kallsyms]"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelSource<'a> {
    /// The kallsyms file: `None` for the running kernel's ([`PROC_KALLSYMS`]; reading real
    /// addresses needs root or `kernel.kptr_restrict=0`). Parsed once and cached; read again
    /// when an address is covered by no text symbol and the copy is older than
    /// [`crate::symbolize::KALLSYMS_MIN_AGE`] (a module may have been loaded since), or the
    /// file was replaced.
    pub kallsyms: Option<&'a Path>,
    /// A vmlinux (a debug package's `/usr/lib/debug/boot/vmlinux-*`, a build tree's) for the
    /// kernel image's names, sizes, source lines and inlined frames. It is matched to the
    /// kallsyms file by an anchor symbol ([`crate::kernel::Vmlinux::new`]) once, unless
    /// `kaslr_offset` is given.
    pub vmlinux: Option<&'a Path>,
    /// The KASLR offset of the running kernel against `vmlinux` (running minus linked; `0`
    /// for `nokaslr`), when it is known rather than to be computed.
    pub kaslr_offset: Option<LoadBias>,
    /// Where modules' `.ko` files and load addresses are found, for modules' names, sizes
    /// and source lines ([`KernelModules::running_kernel`] for this machine's).
    pub modules: Option<&'a KernelModules>,
}

impl KernelSource<'_> {
    /// The kallsyms file read.
    pub fn kallsyms_path(&self) -> &Path {
        self.kallsyms.unwrap_or(Path::new(PROC_KALLSYMS))
    }
}

impl Symbolizer {
    /// Symbolizes kernel addresses: text symbols of the kallsyms file; addresses of the
    /// kernel image from the vmlinux when given (after subtracting its KASLR offset), with
    /// its DWARF's source lines; addresses of a module whose `.ko` is found and whose load
    /// addresses are readable from the `.ko` (and its debug file, found by build-id in the
    /// debug dirs), at the address the `.ko`'s layout gives it. An address vmlinux or the
    /// `.ko` does not cover keeps kallsyms' answer; so does every address of a module whose
    /// file cannot be used (the reason is logged with `log::debug!` and kept:
    /// [`KernelModules::problems`]).
    ///
    /// Kallsyms with every address 0 (hidden) gives [`NotFound::KernelAddrsHidden`] for every
    /// address; another kallsyms problem, or a vmlinux that cannot be read or matched, is an
    /// error naming the file.
    pub(crate) fn symbolize_kernel(
        &self,
        source: &KernelSource<'_>,
        addrs: &[AbsAddr],
    ) -> Result<Symbols> {
        let mut symbols = Symbols::with_capacity(addrs.len(), self.demangle);
        let cached = match self.cached_kallsyms(source.kallsyms_path(), addrs) {
            Ok(cached) => cached,
            Err(e @ Error::KernelAddrsHidden { .. }) => {
                for _ in addrs {
                    let e = e.clone_for_cache();
                    symbols
                        .entries
                        .push(Entry::not_found(NotFound::KernelAddrsHidden(e)));
                }
                return Ok(symbols);
            }
            Err(e) => return Err(e),
        };
        let kallsyms = Arc::clone(cached.kallsyms());
        let vmlinux = match source.vmlinux {
            Some(path) => Some(cached.vmlinux(path, source.kaslr_offset)?),
            None => None,
        };
        // In address order: the index and the names are read front to back.
        let from_kallsyms = kallsyms.find_symbols(addrs)?;
        let part = symbols.add_part(Part::Kallsyms(Arc::clone(&kallsyms)));
        let mut module_names: BTreeMap<Option<&str>, u32> = BTreeMap::new();
        for (i, sym) in from_kallsyms.iter().enumerate() {
            let entry = match sym {
                Some(sym) => {
                    let module = sym.module;
                    let module = *module_names
                        .entry(module)
                        .or_insert_with(|| symbols.add_module(kernel_module_name(module, None)));
                    Entry {
                        answer: Answer::Kallsyms {
                            part,
                            addr: addrs[i],
                        },
                        module,
                        file_offset: None,
                        frames: 0..0,
                    }
                }
                None => Entry::no_symbol(),
            };
            symbols.entries.push(entry);
        }
        if let Some(vmlinux) = vmlinux {
            let virt: Vec<VirtAddr> = addrs.iter().map(|&a| vmlinux.virt_addr(a)).collect();
            let source = Source::Elf {
                path: vmlinux.path(),
            };
            let mut image = self.symbolize(&source, Input::VirtAddrs(&virt))?;
            image.rename_modules(kernel_module_name(None, Some(vmlinux.path())));
            // Only the image's addresses that vmlinux names: kallsyms answers the rest.
            let in_module = |i: usize| from_kallsyms[i].is_some_and(|sym| sym.module.is_some());
            let named: Vec<bool> = (0..addrs.len())
                .map(|i| !in_module(i) && image.get(i).is_some())
                .collect();
            symbols.merge_into(image, |k| named[k].then_some(k));
        }
        if let Some(modules) = source.modules {
            self.module_answers(modules, &from_kallsyms, addrs, &mut symbols);
        }
        Ok(symbols)
    }

    /// Answers from modules' `.ko` files for the addresses kallsyms places in a module whose
    /// file can be used, merged into `symbols` (the others keep kallsyms' answers).
    fn module_answers(
        &self,
        modules: &KernelModules,
        from_kallsyms: &[Option<KernelSym<'_>>],
        addrs: &[AbsAddr],
        symbols: &mut Symbols,
    ) {
        let mut by_module: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, sym) in from_kallsyms.iter().enumerate() {
            let module = sym.and_then(|sym| sym.module);
            if let Some(module) = module.filter(|&name| !is_pseudo_module(name)) {
                by_module.entry(module).or_default().push(i);
            }
        }
        for (name, indexes) in by_module {
            // Matched (or matched again, when it moved) for the first address; any other
            // address outside its sections keeps kallsyms' name.
            let Some(&first) = indexes.first() else {
                continue;
            };
            let module = match modules.loaded(name, addrs[first]) {
                Ok(module) => module,
                Err(e) => {
                    log::debug!("module {name}: kallsyms names only: {e}");
                    continue;
                }
            };
            let placed: Vec<(usize, VirtAddr)> = indexes
                .iter()
                .filter_map(|&i| Some((i, module.layout_addr(addrs[i])?)))
                .collect();
            let layout: Vec<VirtAddr> = placed.iter().map(|&(_, addr)| addr).collect();
            let source = Source::Elf {
                path: module.path(),
            };
            let mut from_file = match self.symbolize(&source, Input::VirtAddrs(&layout)) {
                Ok(symbols) => symbols,
                Err(e) => {
                    log::debug!("module {name}: kallsyms names only: {e}");
                    modules.mark_failed(name, e);
                    continue;
                }
            };
            if let Some(e) = from_file.debug_error() {
                log::debug!("module {name}: no source lines: {e}");
            }
            from_file.rename_modules(kernel_module_name(Some(name), Some(module.path())));
            let named: Vec<Option<usize>> = placed
                .iter()
                .enumerate()
                .map(|(k, &(i, _))| from_file.get(k).is_some().then_some(i))
                .collect();
            symbols.merge_into(from_file, |k| named.get(k).copied().flatten());
        }
    }
}

/// How perf names a kernel address's module: `[kernel.kallsyms]`, or `[NAME]` for a module;
/// `file`: the vmlinux or `.ko` that answered, if one did.
fn kernel_module_name(module: Option<&str>, file: Option<&Path>) -> ModuleName {
    ModuleName {
        shown: match module {
            Some(name) => PathBuf::from(format!("[{name}]")),
            None => PathBuf::from(KERNEL_IMAGE),
        },
        opened_as: file.map(Path::to_path_buf),
        kernel_module: module.map(str::to_string),
    }
}
