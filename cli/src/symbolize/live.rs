//! `--pid` and `--kernel`: absolute addresses of a live process and kernel addresses, looked
//! up through the library's process and kallsyms sources instead of an ELF file.

use std::path::PathBuf;

use stacksym::kernel::KernelModules;
use stacksym::process::Process;
use stacksym::{Input, KernelSource, NotFound, Source, Symbolizer, Symbols};

use crate::symbolize::output::{Answer, Origin};

/// Whether `addr` is a kernel address: the library's rule, the top bit set (the kernel half
/// of the address space on x86_64 and on aarch64, whatever its virtual address size).
pub fn is_kernel(addr: u64) -> bool {
    stacksym::AbsAddr(addr).is_kernel()
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
    Found(Answer<'static>, String),
    /// No symbol; the module to report (empty when the address is not in a file).
    NotFound(String),
    /// The file mapped at the address cannot be read: its path and the error.
    Error(String, String),
}

/// The sources given by `--pid` and `--kernel` / `--kallsyms`.
#[derive(Default)]
pub struct Live {
    pub process: Option<Process>,
    /// The kallsyms file (`--kernel`: /proc/kallsyms; `--kallsyms FILE`).
    pub kallsyms: Option<PathBuf>,
    /// `--vmlinux`: names and source lines of the kernel image.
    pub vmlinux: Option<PathBuf>,
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
            .map(|k| k.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The kernel source of `--kernel`, `--vmlinux` and the module flags.
    pub fn kernel_source(&self) -> Option<KernelSource<'_>> {
        Some(KernelSource {
            kallsyms: Some(self.kallsyms.as_deref()?),
            vmlinux: self.vmlinux.as_deref(),
            kaslr_offset: None,
            modules: self.modules.as_ref(),
        })
    }

    /// Looks `addr` up in kallsyms (text symbols only, as a stack holds code addresses),
    /// with `--vmlinux` in vmlinux (names and source lines of the kernel image), and in the
    /// module's `.ko` when it is found and its load addresses are readable.
    pub fn kernel(&self, symbolizer: &Symbolizer, addr: u64, demangle: bool) -> Resolved {
        let module = self.kallsyms_name();
        let Some(kernel) = self.kernel_source() else {
            return Resolved::NotFound(module);
        };
        match symbolizer.symbolize(
            &Source::Kernel(kernel),
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(&[addr])),
        ) {
            Ok(symbols) => match symbols.get(0) {
                Some(sym) => Resolved::Found(
                    Answer {
                        start: addr.wrapping_sub(sym.offset),
                        size: sym.size,
                        offset: sym.offset,
                        version: None,
                        origin: match sym.kernel_module {
                            Some(m) => Origin::KernelModule(m.to_string()),
                            None => Origin::KernelImage,
                        },
                        has_symbol: true,
                        // Lines where vmlinux or a .ko had DWARF; ??:0 with --vmlinux.
                        frames: (self.vmlinux.is_some() || !sym.frames.is_empty())
                            .then(|| crate::symbolize::owned_lines(sym.frames, demangle)),
                        name: sym.name.to_string().into(),
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
        let results = symbolizer.symbolize(
            &Source::process(process),
            Input::AbsAddrs(stacksym::AbsAddr::from_raw_slice(addrs)),
        )?;
        Ok((0..addrs.len())
            .map(|i| resolved(&results, i, addrs[i], demangle))
            .collect())
    }
}

/// The `i`-th answer of a process batch for `addr`.
fn resolved(results: &Symbols, i: usize, addr: u64, demangle: bool) -> Resolved {
    let module = || {
        results
            .module(i)
            .map(|m| m.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    match results.result(i) {
        Ok(sym) => Resolved::Found(
            Answer {
                name: sym.name.to_string().into(),
                // The absolute start, so that it compares with the address asked.
                start: addr.wrapping_sub(sym.offset),
                size: sym.size,
                offset: sym.offset,
                version: None,
                origin: Origin::Elf,
                has_symbol: true,
                frames: Some(crate::symbolize::owned_lines(sym.frames, demangle)),
            },
            module(),
        ),
        Err(NotFound::FileError(e)) => {
            Resolved::Error(e.path().to_string_lossy().into_owned(), e.to_string())
        }
        Err(_) => Resolved::NotFound(module()),
    }
}
