//! Mixed stacks: one call for a stack of kernel and user addresses, as perf samples and
//! bpftrace's `kstack`/`ustack` give them. Kernel addresses go to a [`Kallsyms`], user
//! addresses to the process ([`Symbolizer::symbolize_process_with`]), and the frames come back
//! in input order.

use crate::addr::AbsAddr;
use crate::error::Result;
use crate::kernel::Kallsyms;
use crate::process::Process;
use crate::symbolize::{ProcessSymbol, Symbolizer};

/// Whether `addr` is a kernel address: the top bit set. On x86_64 and aarch64 (and every
/// 64-bit Linux port with a split address space) user space never has it set, and the
/// kernel's half of the address space always does.
pub fn is_kernel_addr(addr: u64) -> bool {
    addr & (1 << 63) != 0
}

/// A kernel frame, owning its strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFrame {
    /// The symbol, as kallsyms names it.
    pub name: String,
    /// How far into the symbol the address is.
    pub offset: u64,
    /// The module (`ext4`); `None` for the kernel image.
    pub module: Option<String>,
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
        let mut frames = Vec::with_capacity(addrs.len());
        for &addr in addrs {
            if is_kernel_addr(addr) {
                let frame = match kallsyms {
                    Some(kallsyms) => kallsyms.find_symbol(addr)?.map(|sym| KernelFrame {
                        name: sym.name.to_string(),
                        offset: sym.offset,
                        module: sym.module.map(str::to_string),
                    }),
                    None => None,
                };
                frames.push(StackFrame::Kernel(frame));
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
