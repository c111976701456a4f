//! From a process's registers to named frames in one call: [`Symbolizer::unwind_process`],
//! or a [`ProcessUnwinder`] kept by the caller for many stacks of one process (a profiler's
//! samples), built from the symbolizer's cached maps and files (opened confined to the
//! process's root, shared with its symbolization batches) plus the process's vDSO; and
//! [`Symbolizer::symbolize_frames`], which looks each unwound frame up where its
//! [`FrameKind`](crate::unwind::FrameKind) says.
//!
//! It composes [`crate::unwind`] (registers, memory, CFI) with the symbolizer's caches; it
//! does not stop threads: a live thread's registers must come from a stopped thread (ptrace,
//! as `stacksym pstack` does) or from a sample with its stack copy ([`StackCopy`]).

use std::sync::Arc;

use crate::addr::{AbsAddr, FileOffset};
use crate::error::Result;
use crate::process::{MappingKind, Process, ProcessMaps};
use crate::symbolize::{Input, Source, Symbolizer, Symbols};
use crate::unwind::{
    Frame, Modules, ProcessMemory, Stack, StackCopy, UnwindArch, UnwindCache, UnwindOptions,
    Unwinder,
};

/// Unwinds stacks of one process, for as long as its mappings stay: the modules (every
/// mapped file's CFI, the vDSO's) are built once, the compiled rules cached across stacks.
/// Made by [`Symbolizer::process_unwinder`]; call [`ProcessUnwinder::refresh`] after the
/// process mapped new files (`dlopen`), or make a new one.
pub struct ProcessUnwinder<A: UnwindArch> {
    process: Process,
    unwinder: Unwinder,
    memory: ProcessMemory,
    cache: UnwindCache<A>,
}

impl<A: UnwindArch> std::fmt::Debug for ProcessUnwinder<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessUnwinder")
            .field("pid", &self.process.pid())
            .field("modules", &self.unwinder.modules().iter().count())
            .field("cache", &self.cache)
            .finish()
    }
}

impl<A: UnwindArch> ProcessUnwinder<A> {
    /// The process.
    pub fn process(&self) -> &Process {
        &self.process
    }

    /// The unwinder (its modules, to inspect or to add mappings to).
    pub fn unwinder(&mut self) -> &mut Unwinder {
        &mut self.unwinder
    }

    /// Unwinds a stopped thread of the live process from its registers, reading its stack
    /// through the process's memory (`process_vm_readv`, else `/proc/PID/mem`: needs ptrace
    /// access). The thread must be stopped while this runs, or the stack changes under it.
    pub fn unwind(&mut self, regs: &A) -> Stack {
        self.unwinder.unwind(regs, &self.memory, &mut self.cache)
    }

    /// Unwinds a stopped thread along the frame-pointer chain only, as bpftrace, bcc and
    /// `perf --call-graph fp` do (no CFI read).
    pub fn unwind_frame_pointers(&mut self, regs: &A) -> Stack {
        self.unwinder
            .unwind_frame_pointers(regs, &self.memory, &mut self.cache)
    }

    /// Unwinds a sample: the registers and the copy of the stack from the stack pointer up
    /// that perf (`--call-graph dwarf`) or an eBPF profiler captured. Reads nothing else.
    pub fn unwind_sample(&mut self, regs: &A, stack: &StackCopy<'_>) -> Stack {
        self.unwinder.unwind(regs, stack, &mut self.cache)
    }

    /// Builds the modules again from the process's current maps (after a `dlopen`); the
    /// cached rules of the old mappings no longer answer.
    pub fn refresh(&mut self, symbolizer: &Symbolizer) -> Result<()> {
        *self.unwinder.modules_mut() = symbolizer.process_modules(&self.process)?;
        Ok(())
    }
}

impl Symbolizer {
    /// A [`ProcessUnwinder`] for `process`: its mapped files' CFI from the symbolizer's
    /// cache of files (opened as [`Source::Process`] opens them; a file that cannot be used
    /// is left out with a `log::debug!`, its frames then follow the frame pointer), its
    /// vDSO's from its memory. Fails only when the process's maps cannot be read (it is gone:
    /// [`crate::ErrorKind::ProcessGone`]).
    pub fn process_unwinder<A: UnwindArch>(&self, process: &Process) -> Result<ProcessUnwinder<A>> {
        self.process_unwinder_with(process, UnwindOptions::default())
    }

    /// [`Symbolizer::process_unwinder`] with unwinding options.
    pub fn process_unwinder_with<A: UnwindArch>(
        &self,
        process: &Process,
        options: UnwindOptions,
    ) -> Result<ProcessUnwinder<A>> {
        let modules = self.process_modules(process)?;
        Ok(ProcessUnwinder {
            process: process.clone(),
            unwinder: Unwinder::with_options(modules, options),
            memory: ProcessMemory::new(process.pid()),
            cache: UnwindCache::new(),
        })
    }

    /// Unwinds a stopped thread of `process` from `regs` (see [`ProcessUnwinder::unwind`])
    /// and symbolizes its frames ([`Symbolizer::symbolize_frames`]): one call from registers
    /// to names. For many stacks of one process, keep a [`ProcessUnwinder`].
    ///
    /// ```no_run
    /// use stacksym::process::Process;
    /// use stacksym::unwind::RegsX86_64;
    /// use stacksym::Symbolizer;
    /// # fn main() -> stacksym::Result<()> {
    /// let symbolizer = Symbolizer::builder().build();
    /// # let (rip, rsp) = (0, 0);
    /// // Registers of a thread stopped with ptrace (PTRACE_GETREGS gives them all:
    /// // RegsX86_64::from_user_regs).
    /// let regs = RegsX86_64::from_ip_sp(rip, rsp);
    /// let (stack, symbols) = symbolizer.unwind_process(&Process::new(1234), &regs)?;
    /// for (i, frame) in stack.frames.iter().enumerate() {
    ///     let name = symbols.get(i).map_or("??", |sym| sym.name);
    ///     println!("#{i} {:#x} {name} ({:?})", frame.addr, frame.kind);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn unwind_process<A: UnwindArch>(
        &self,
        process: &Process,
        regs: &A,
    ) -> Result<(Stack, Symbols)> {
        let mut unwinder = self.process_unwinder::<A>(process)?;
        let stack = unwinder.unwind(regs);
        let symbols = self.symbolize_frames(process, &stack.frames)?;
        Ok((stack, symbols))
    }

    /// Symbolizes unwound frames of `process`, one answer per frame in order, each looked up
    /// at [`Frame::lookup_addr`] (a return address at `addr - 1`; the first frame, a signal
    /// trampoline and the code a signal interrupted at their own address).
    pub fn symbolize_frames(&self, process: &Process, frames: &[Frame]) -> Result<Symbols> {
        let addrs: Vec<AbsAddr> = frames.iter().map(|f| f.lookup_addr()).collect();
        self.symbolize(&Source::process(process), Input::AbsAddrs(&addrs))
    }

    /// The unwinder's modules of `process`: every file mapping whose file the symbolizer can
    /// open (cached, confined), and the vDSO.
    fn process_modules(&self, process: &Process) -> Result<Modules> {
        let maps = self.process_maps(process)?;
        let mut modules = Modules::from_process_maps(&maps, None, |mapping| {
            match self.process_file(process, mapping) {
                Ok(elf) => elf,
                Err(e) => {
                    log::debug!("process {}: no CFI from {e}", process.pid());
                    None
                }
            }
        });
        if let Some(vdso) = maps.mappings().iter().find(|m| m.kind == MappingKind::Vdso) {
            let image = match &self.cached_specials(process) {
                Some(specials) => specials.vdso(process, &maps),
                None => process.vdso(&maps).map(|vdso| vdso.map(Arc::new)),
            };
            match image {
                Ok(Some(elf)) => modules.add(vdso.range.clone(), FileOffset(0), elf),
                Ok(None) => {}
                Err(e) => log::debug!("process {}: no vDSO CFI: {e}", process.pid()),
            }
        }
        self.add_jit_code(process, &maps, &mut modules);
        Ok(modules)
    }

    /// Adds the generated code of the process's jitdump files that has unwind tables
    /// (`JIT_CODE_UNWINDING_INFO`, see [`Modules::add_jit_code`]), in each file's order so
    /// that the code there now wins where addresses were reused; only code in anonymous
    /// executable memory, where the JIT puts it (a load over a mapped file is not believed).
    fn add_jit_code(&self, process: &Process, maps: &ProcessMaps, modules: &mut Modules) {
        let jit_memory = |start: AbsAddr| {
            maps.find(start).is_some_and(|m| {
                m.perms.exec && matches!(m.kind, MappingKind::Anonymous | MappingKind::AnonNamed(_))
            })
        };
        if !maps.mappings().iter().any(|m| jit_memory(m.range.start)) {
            return;
        }
        let dumps = match &self.cached_specials(process) {
            Some(specials) => specials.jit_dumps(process, maps),
            None => process
                .jit_dumps(maps)
                .map(|dumps| Arc::new(dumps.into_iter().map(Arc::new).collect())),
        };
        let dumps = match dumps {
            Ok(dumps) => dumps,
            Err(e) => {
                log::debug!("process {}: no JIT unwind tables: {e}", process.pid());
                return;
            }
        };
        for dump in dumps.iter() {
            for code in dump.iter().filter(|code| jit_memory(code.start)) {
                modules.add_jit_code(&code);
            }
        }
    }
}
