//! Mixed stacks: one call for a stack of kernel and user addresses, as perf samples and
//! bpftrace's `kstack`/`ustack` give them. Kernel addresses go to a [`Kallsyms`], user
//! addresses to the process ([`Symbolizer::symbolize_process_with`]), and the frames come back
//! in input order.

use crate::addr::AbsAddr;
use crate::dwarf::Frame;
use crate::error::Result;
use crate::kernel::{Kallsyms, Vmlinux};
use crate::process::Process;
use crate::symbolize::{Input, ProcessSymbol, Source, Symbolizer};

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
    /// [`Symbolizer::symbolize_process`]).
    /// One frame per address, in input order. An error means the process's maps could not be
    /// read (it names the pid) or `kallsyms` failed; unreadable files only affect their frames.
    pub fn symbolize_stack(
        &self,
        process: &Process,
        kallsyms: Option<&Kallsyms>,
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
        let mut kernel_frames = match kallsyms {
            Some(kallsyms) if !kernel.is_empty() => {
                self.symbolize_kernel(kallsyms, None, &kernel)?
            }
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

impl Symbolizer {
    /// Symbolizes kernel addresses: text symbols of `kallsyms`; with a `vmlinux`, addresses
    /// of the kernel image (not of modules) are named from vmlinux's symbol table with its
    /// DWARF's source lines and inlined frames ([`KernelFrame::frames`]), through the same
    /// file cache as ELF sources, after subtracting its KASLR offset. An address vmlinux
    /// does not cover keeps kallsyms' answer. One result per address, in input order;
    /// `None` where no text symbol covers it. An error means `kallsyms` failed or vmlinux
    /// could not be read (it names the file).
    pub fn symbolize_kernel(
        &self,
        kallsyms: &Kallsyms,
        vmlinux: Option<&Vmlinux>,
        addrs: &[u64],
    ) -> Result<Vec<Option<KernelFrame>>> {
        let image = match vmlinux {
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
        let mut frames = Vec::with_capacity(addrs.len());
        for (i, &addr) in addrs.iter().enumerate() {
            let from_kallsyms = kallsyms.find_symbol(addr)?;
            let in_module = from_kallsyms.is_some_and(|sym| sym.module.is_some());
            let from_image = image
                .as_ref()
                .filter(|_| !in_module)
                .and_then(|symbols| symbols.get(i));
            frames.push(match (from_image, from_kallsyms) {
                (Some(sym), _) => Some(KernelFrame {
                    name: sym.name.to_string(),
                    offset: sym.offset,
                    size: sym.size,
                    module: None,
                    frames: sym.frames.to_vec(),
                }),
                (None, Some(sym)) => Some(KernelFrame {
                    name: sym.name.to_string(),
                    offset: sym.offset,
                    size: sym.size,
                    module: sym.module.map(str::to_string),
                    frames: Vec::new(),
                }),
                (None, None) => None,
            });
        }
        Ok(frames)
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
