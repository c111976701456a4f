//! Mixed stacks ([`crate::Source::Stack`]): one batch of kernel and user addresses, as perf
//! samples and bpftrace's `kstack`/`ustack` give them. Kernel addresses go to the kernel
//! source, user addresses to the process, and both batches are merged back in input order.

use crate::addr::AbsAddr;
use crate::error::Result;
use crate::process::Process;
use crate::symbolize::output::{Entry, NotFound};
use crate::symbolize::{KernelSource, Symbolizer, Symbols};

impl Symbolizer {
    /// Symbolizes a stack that mixes kernel and user addresses of `process`: kernel addresses
    /// through `kernel` ([`NotFound::NoKernelSource`] without it), user addresses through the
    /// process's (cached) maps. An error means the process's maps could not be read (it names
    /// the pid) or the kernel source failed; unreadable files only affect their addresses.
    pub(crate) fn symbolize_stack(
        &self,
        process: &Process,
        kernel: Option<&KernelSource<'_>>,
        addrs: &[u64],
    ) -> Result<Symbols> {
        let (kernel_at, user_at): (Vec<usize>, Vec<usize>) =
            (0..addrs.len()).partition(|&i| AbsAddr(addrs[i]).is_kernel());
        let mut symbols = Symbols::with_capacity(addrs.len(), self.demangle);
        for _ in addrs {
            symbols
                .entries
                .push(Entry::not_found(NotFound::NoKernelSource));
        }
        if !user_at.is_empty() {
            let user: Vec<u64> = user_at.iter().map(|&i| addrs[i]).collect();
            let maps = self.cached_maps(process, &user)?;
            let answers = self.symbolize_process_with(process, &maps, &user)?;
            symbols.merge_into(answers, |k| user_at.get(k).copied());
        }
        if let (Some(kernel), false) = (kernel, kernel_at.is_empty()) {
            let addrs: Vec<AbsAddr> = kernel_at.iter().map(|&i| AbsAddr(addrs[i])).collect();
            let answers = self.symbolize_kernel(kernel, &addrs)?;
            symbols.merge_into(answers, |k| kernel_at.get(k).copied());
        }
        Ok(symbols)
    }
}

#[cfg(test)]
mod tests {
    use crate::addr::AbsAddr;

    #[test]
    fn kernel_half_is_the_top_bit() {
        assert!(AbsAddr(0xffff_ffff_8100_0000).is_kernel()); // x86_64 kernel text
        assert!(AbsAddr(0xffff_8000_1000_0000).is_kernel()); // aarch64 kernel
        assert!(!AbsAddr(0x7fff_ffff_f000).is_kernel()); // top of x86_64 user space
        assert!(!AbsAddr(0x0000_ffff_ffff_f000).is_kernel()); // top of aarch64 user space
    }
}
