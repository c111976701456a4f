//! Mixed stacks: one call for a stack of kernel and user addresses, as perf samples and
//! bpftrace's `kstack`/`ustack` give them. Kernel addresses go to a [`Kallsyms`], user
//! addresses to the process ([`Symbolizer::symbolize_process_with`]), and the frames come back
//! in input order.

use crate::addr::AbsAddr;
use crate::dwarf::Frame;
use crate::error::Result;
use std::collections::BTreeMap;

use crate::kernel::{is_pseudo_module, Kallsyms, KernelModules, KernelSym, Vmlinux};
use crate::process::Process;
use crate::symbolize::{Input, ProcessSymbol, Source, Sym, Symbolizer};

/// Whether `addr` is a kernel address: the top bit set. On x86_64 and aarch64 (and every
/// 64-bit Linux port with a split address space) user space never has it set, and the
/// kernel's half of the address space always does.
pub fn is_kernel_addr(addr: u64) -> bool {
    addr & (1 << 63) != 0
}

/// A kernel frame, owning its strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFrame {
    /// The symbol, as kallsyms names it (or, for the kernel image with a vmlinux given, as
    /// vmlinux's symbol table names it).
    pub name: String,
    /// How far into the symbol the address is.
    pub offset: u64,
    /// The symbol's size: vmlinux's `st_size`, or kallsyms' bound (the distance to the
    /// next symbol, see [`Kallsyms`]).
    pub size: u64,
    /// The module (`ext4`); `None` for the kernel image.
    pub module: Option<String>,
    /// Source lines and inlined frames from vmlinux's DWARF, innermost first (as
    /// [`crate::Sym::frames`]); empty without a vmlinux, for modules, or where its DWARF
    /// does not cover the address.
    pub frames: Vec<Frame>,
}

impl KernelFrame {
    /// The frame of a symbol of an ELF file of the kernel (vmlinux, a module's `.ko`).
    fn of_elf_symbol(sym: &Sym<'_>, module: Option<&str>) -> KernelFrame {
        KernelFrame {
            name: sym.name.to_string(),
            offset: sym.offset,
            size: sym.size,
            module: module.map(str::to_string),
            frames: sym.frames.to_vec(),
        }
    }
}

/// One frame of a mixed stack.
#[derive(Debug)]
#[non_exhaustive]
pub enum StackFrame {
    /// A kernel address: its symbol, or `None` when kallsyms has no text symbol covering it
    /// (or no kallsyms was given).
    Kernel(Option<KernelFrame>),
    /// A user address of the process.
    User(ProcessSymbol),
}

impl Symbolizer {
    /// Symbolizes a stack that mixes kernel and user addresses of `process` (see
    /// [`is_kernel_addr`]): kernel frames through `kallsyms` (when given; without it they are
    /// `Kernel(None)`), user frames through the process's maps (cached, as for
    /// [`Symbolizer::symbolize_process`]). [`Symbolizer::symbolize_stack_with`] adds a
    /// vmlinux and modules' files for the kernel frames.
    /// One frame per address, in input order. An error means the process's maps could not be
    /// read (it names the pid) or `kallsyms` failed; unreadable files only affect their frames.
    pub fn symbolize_stack(
        &self,
        process: &Process,
        kallsyms: Option<&Kallsyms>,
        addrs: &[u64],
    ) -> Result<Vec<StackFrame>> {
        let kernel = kallsyms.map(KernelSources::new);
        self.symbolize_stack_with(process, kernel.as_ref(), addrs)
    }

    /// Like [`Symbolizer::symbolize_stack`], with kernel frames symbolized as
    /// [`Symbolizer::symbolize_kernel_with`] does (a vmlinux's and modules' `.ko` files'
    /// names and source lines where given).
    pub fn symbolize_stack_with(
        &self,
        process: &Process,
        kernel_sources: Option<&KernelSources<'_>>,
        addrs: &[u64],
    ) -> Result<Vec<StackFrame>> {
        let user: Vec<AbsAddr> = addrs
            .iter()
            .filter(|&&a| !is_kernel_addr(a))
            .map(|&a| AbsAddr(a))
            .collect();
        let mut user_frames = if user.is_empty() {
            Vec::new()
        } else {
            let maps = self.cached_maps(process, &user)?;
            self.symbolize_process_with(process, &maps, &user)?
        }
        .into_iter();
        let kernel: Vec<u64> = addrs
            .iter()
            .copied()
            .filter(|&a| is_kernel_addr(a))
            .collect();
        let mut kernel_frames = match kernel_sources {
            Some(sources) if !kernel.is_empty() => self.symbolize_kernel_with(sources, &kernel)?,
            _ => Vec::new(),
        }
        .into_iter();
        let mut frames = Vec::with_capacity(addrs.len());
        for &addr in addrs {
            if is_kernel_addr(addr) {
                // One result per kernel address, in order (as for user addresses below).
                frames.push(StackFrame::Kernel(kernel_frames.next().flatten()));
            } else {
                // One result per user address, in the same order: `user` was built from
                // `addrs` by the same test, so the iterator yields exactly one here.
                let frame = user_frames.next().unwrap_or(ProcessSymbol::Unmapped);
                frames.push(StackFrame::User(frame));
            }
        }
        Ok(frames)
    }
}

/// The files kernel addresses are symbolized with: kallsyms always; a vmlinux for the
/// kernel image's names, source lines and inlined frames; modules' `.ko` files for theirs.
#[derive(Debug, Clone, Copy)]
pub struct KernelSources<'a> {
    /// The running kernel's symbols (`/proc/kallsyms` or a copy), which also say which
    /// module an address belongs to.
    pub kallsyms: &'a Kallsyms,
    /// The kernel image, matched to `kallsyms` (its KASLR offset).
    pub vmlinux: Option<&'a Vmlinux>,
    /// Where modules' `.ko` files and load addresses are found.
    pub modules: Option<&'a KernelModules>,
}

impl<'a> KernelSources<'a> {
    /// kallsyms alone: names, offsets, modules.
    pub fn new(kallsyms: &'a Kallsyms) -> Self {
        KernelSources {
            kallsyms,
            vmlinux: None,
            modules: None,
        }
    }
}

impl Symbolizer {
    /// Symbolizes kernel addresses with `kallsyms` and, when given, `vmlinux`: see
    /// [`Symbolizer::symbolize_kernel_with`] (this is it without module files).
    pub fn symbolize_kernel(
        &self,
        kallsyms: &Kallsyms,
        vmlinux: Option<&Vmlinux>,
        addrs: &[u64],
    ) -> Result<Vec<Option<KernelFrame>>> {
        let sources = KernelSources {
            vmlinux,
            ..KernelSources::new(kallsyms)
        };
        self.symbolize_kernel_with(&sources, addrs)
    }

    /// Symbolizes kernel addresses: text symbols of `sources.kallsyms`; with a `vmlinux`,
    /// addresses of the kernel image are named from vmlinux's symbol table with its DWARF's
    /// source lines and inlined frames ([`KernelFrame::frames`]), after subtracting its
    /// KASLR offset; with `modules`, addresses of a module whose `.ko` is found and whose
    /// load addresses are readable the same from the `.ko` (and its debug file, found by
    /// build-id in the debug dirs), at the address the `.ko`'s layout gives it
    /// ([`LoadedModule::layout_addr`](crate::kernel::LoadedModule::layout_addr)). Both go
    /// through the same file cache as ELF sources.
    ///
    /// An address vmlinux or the `.ko` does not cover keeps kallsyms' answer; so does every
    /// address of a module whose file cannot be used (the reason is logged with
    /// `log::debug!` and kept: [`KernelModules::problems`]). One result per address, in
    /// input order; `None` where no text symbol covers it. An error means `kallsyms` failed
    /// or vmlinux could not be read (it names the file).
    pub fn symbolize_kernel_with(
        &self,
        sources: &KernelSources<'_>,
        addrs: &[u64],
    ) -> Result<Vec<Option<KernelFrame>>> {
        let kallsyms = sources.kallsyms;
        let image = match sources.vmlinux {
            Some(vmlinux) => {
                let virt: Vec<u64> = addrs.iter().map(|&a| vmlinux.virt_addr(a).0).collect();
                let symbols = self.symbolize(
                    &Source::Elf {
                        path: vmlinux.path(),
                    },
                    Input::VirtAddrs(&virt),
                )?;
                Some(symbols)
            }
            None => None,
        };
        // In address order: the index and the names are read front to back.
        let from_kallsyms = kallsyms.find_symbols(addrs)?;
        let mut frames: Vec<Option<KernelFrame>> = match sources.modules {
            Some(modules) => self.module_frames(modules, &from_kallsyms, addrs),
            None => vec![None; addrs.len()],
        };
        for (i, from_kallsyms) in from_kallsyms.iter().enumerate() {
            let Some(frame) = frames.get_mut(i).filter(|frame| frame.is_none()) else {
                continue; // Named from the module's file.
            };
            let in_module = from_kallsyms.is_some_and(|sym| sym.module.is_some());
            let from_image = image
                .as_ref()
                .filter(|_| !in_module)
                .and_then(|symbols| symbols.get(i));
            *frame = match (from_image, from_kallsyms) {
                (Some(sym), _) => Some(KernelFrame::of_elf_symbol(&sym, None)),
                (None, Some(sym)) => Some(KernelFrame {
                    name: sym.name.to_string(),
                    offset: sym.offset,
                    size: sym.size,
                    module: sym.module.map(str::to_string),
                    frames: Vec::new(),
                }),
                (None, None) => None,
            };
        }
        Ok(frames)
    }

    /// Frames from modules' `.ko` files for the addresses kallsyms places in a module;
    /// `None` for the rest, and for every address of a module whose file cannot be used.
    fn module_frames(
        &self,
        modules: &KernelModules,
        from_kallsyms: &[Option<KernelSym<'_>>],
        addrs: &[u64],
    ) -> Vec<Option<KernelFrame>> {
        let mut frames = vec![None; addrs.len()];
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
            let placed: Vec<(usize, u64)> = indexes
                .iter()
                .filter_map(|&i| Some((i, module.layout_addr(addrs[i])?.0)))
                .collect();
            let layout: Vec<u64> = placed.iter().map(|&(_, addr)| addr).collect();
            let source = Source::Elf {
                path: module.path(),
            };
            let symbols = match self.symbolize(&source, Input::VirtAddrs(&layout)) {
                Ok(symbols) => symbols,
                Err(e) => {
                    log::debug!("module {name}: kallsyms names only: {e}");
                    modules.mark_failed(name, e);
                    continue;
                }
            };
            if let Some(e) = symbols.debug_error() {
                log::debug!("module {name}: no source lines: {e}");
            }
            for (k, &(i, _)) in placed.iter().enumerate() {
                let (Some(sym), Some(slot)) = (symbols.get(k), frames.get_mut(i)) else {
                    continue;
                };
                *slot = Some(KernelFrame::of_elf_symbol(&sym, Some(name)));
            }
        }
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::is_kernel_addr;

    #[test]
    fn kernel_half_is_the_top_bit() {
        assert!(is_kernel_addr(0xffff_ffff_8100_0000)); // x86_64 kernel text
        assert!(is_kernel_addr(0xffff_8000_1000_0000)); // aarch64 kernel
        assert!(!is_kernel_addr(0x7fff_ffff_f000)); // top of x86_64 user space
        assert!(!is_kernel_addr(0x0000_ffff_ffff_f000)); // top of aarch64 user space
    }
}
