//! `--pid` and `--kernel`: absolute addresses of a live process and kernel addresses, looked
//! up through the library's process and kallsyms sources instead of an ELF file.

use stacksym::addr::AbsAddr;
use stacksym::kernel::{Kallsyms, KernelModules, Vmlinux};
use stacksym::process::Process;
use stacksym::symbolize::{KernelSources, ProcessSymbol};
use stacksym::Symbolizer;

use crate::output::{Answer, Origin};

/// Whether `addr` is a kernel address: the library's rule, the top bit set (the kernel half
/// of the address space on x86_64 and on aarch64, whatever its virtual address size).
pub fn is_kernel(addr: u64) -> bool {
    stacksym::symbolize::is_kernel_addr(addr)
}

/// Where a query goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// An ELF file: `--obj` or the query's module.
    Elf,
    /// kallsyms (`--kernel`).
    Kernel,
    /// The process of `--pid`.
    Process,
}

/// What one address resolved to through `--pid` or `--kernel`.
#[derive(Debug, Clone)]
pub enum Resolved {
    /// A symbol, and the module to report: the mapped file's path (process) or the kallsyms
    /// path (kernel).
    Found(Answer, String),
    /// No symbol; the module to report (empty when the address is not in a file).
    NotFound(String),
    /// The file mapped at the address cannot be read: its path and the error.
    Error(String, String),
}

/// The sources given by `--pid` and `--kernel` / `--kallsyms`.
#[derive(Default)]
pub struct Live {
    pub process: Option<Process>,
    pub kallsyms: Option<Kallsyms>,
    /// `--vmlinux`: names and source lines of the kernel image.
    pub vmlinux: Option<Vmlinux>,
    /// Modules' `.ko` files (`--modules-dir`, `--sys-module`): names, sizes and source lines
    /// of module addresses.
    pub modules: Option<KernelModules>,
}

impl Live {
    /// Whether `--pid` or `--kernel` was given (then queries name no module).
    pub fn is_active(&self) -> bool {
        self.process.is_some() || self.kallsyms.is_some()
    }

    /// With only `--kernel`, every address goes to kallsyms; with only `--pid`, to the
    /// process; with both, kernel addresses ([`is_kernel`]) to kallsyms, the others to the
    /// process.
    pub fn route(&self, addr: u64) -> Route {
        match (&self.process, &self.kallsyms) {
            (None, None) => Route::Elf,
            (Some(_), None) => Route::Process,
            (None, Some(_)) => Route::Kernel,
            (Some(_), Some(_)) if is_kernel(addr) => Route::Kernel,
            (Some(_), Some(_)) => Route::Process,
        }
    }

    /// The module name reported for a kernel query (the kallsyms path).
    pub fn kallsyms_name(&self) -> String {
        self.kallsyms
            .as_ref()
            .map(|k| k.path().to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Looks `addr` up in kallsyms (text symbols only, as a stack holds code addresses),
    /// with `--vmlinux` in vmlinux (names and source lines of the kernel image), and in the
    /// module's `.ko` when it is found and its load addresses are readable.
    pub fn kernel(&self, symbolizer: &Symbolizer, addr: u64, demangle: bool) -> Resolved {
        let module = self.kallsyms_name();
        let Some(kallsyms) = &self.kallsyms else {
            return Resolved::NotFound(module);
        };
        let sources = KernelSources {
            kallsyms,
            vmlinux: self.vmlinux.as_ref(),
            modules: self.modules.as_ref(),
        };
        match symbolizer.symbolize_kernel_with(&sources, &[addr]) {
            Ok(mut frames) => match frames.pop().flatten() {
                Some(sym) => Resolved::Found(
                    Answer {
                        start: addr.wrapping_sub(sym.offset),
                        size: sym.size,
                        offset: sym.offset,
                        version: None,
                        origin: match sym.module {
                            Some(m) => Origin::KernelModule(m),
                            None => Origin::KernelImage,
                        },
                        has_symbol: true,
                        // Lines where vmlinux or a .ko had DWARF; ??:0 with --vmlinux.
                        frames: (self.vmlinux.is_some() || !sym.frames.is_empty())
                            .then(|| crate::lines_of(&sym.frames, demangle)),
                        name: sym.name,
                    },
                    module,
                ),
                None => Resolved::NotFound(module),
            },
            Err(e) => Resolved::Error(module, e.to_string()),
        }
    }

    /// Looks absolute addresses of the `--pid` process up, with one library call. Fails
    /// only when the process cannot be inspected (gone, maps unreadable).
    pub fn process(
        &self,
        symbolizer: &Symbolizer,
        addrs: &[u64],
        demangle: bool,
    ) -> stacksym::Result<Vec<Resolved>> {
        let Some(process) = &self.process else {
            return Ok(vec![Resolved::NotFound(String::new()); addrs.len()]);
        };
        let abs: Vec<AbsAddr> = addrs.iter().map(|&a| AbsAddr(a)).collect();
        let results = symbolizer.symbolize_process(process, &abs)?;
        Ok(results
            .into_iter()
            .zip(addrs)
            .map(|(result, &addr)| match result {
                ProcessSymbol::Found(sym) => Resolved::Found(
                    Answer {
                        name: sym.name,
                        // The absolute start, so that it compares with the address asked.
                        start: addr.wrapping_sub(sym.offset),
                        size: sym.size,
                        offset: sym.offset,
                        version: None,
                        origin: Origin::Elf,
                        has_symbol: true,
                        frames: Some(crate::lines_of(&sym.frames, demangle)),
                    },
                    sym.path.to_string_lossy().into_owned(),
                ),
                ProcessSymbol::NoSymbol { path, .. } => {
                    Resolved::NotFound(path.to_string_lossy().into_owned())
                }
                ProcessSymbol::FileError(e) => {
                    Resolved::Error(e.path().to_string_lossy().into_owned(), e.to_string())
                }
                _ => Resolved::NotFound(String::new()),
            })
            .collect())
    }
}
