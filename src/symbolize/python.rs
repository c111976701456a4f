//! Python frames of a live process through the symbolizer's files: the process's mapped
//! files (cached and opened confined, as [`crate::Source::Process`] opens them) searched for
//! `_PyRuntime`, its memory read through [`ProcessMemory`]; and a thread's native stack
//! (unwound as [`Symbolizer::unwind_process`] does) merged with its Python frames; the
//! same for every thread of a core ([`Symbolizer::python_merged_core`]).
//!
//! The reading itself is [`crate::python`]'s; this file only finds the files and threads.

use std::collections::HashSet;

use crate::addr::AbsAddr;
use crate::core::CoreFile;
use crate::error::{Error, Result};
use crate::process::Process;
use crate::python::{
    merge_native, LoadedFile, MixedFrame, PythonFrame, PythonRuntime, PythonStacks,
};
use crate::symbolize::{Input, Source, Symbolizer, Symbols};
use crate::unwind::{
    Frame, Modules, ProcessMemory, RegsAarch64, RegsX86_64, UnwindArch, UnwindCache, Unwinder,
};

/// A native frame of a merged stack ([`Symbolizer::python_merged_stack`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeFrame {
    /// The instruction pointer or return address.
    pub addr: AbsAddr,
    /// The function's name, when a symbol covers it.
    pub function: Option<String>,
}

impl Symbolizer {
    /// Every Python thread of a live CPython process (3.6-3.13) with its frames: the
    /// runtime found in the process's `libpython` or executable (the mapped files whose
    /// names contain `python` are searched first, then the executable; no other file is
    /// opened, so that a process without CPython is told so without reading every library
    /// it maps), its memory read with `process_vm_readv` (else `/proc/PID/mem`; needs
    /// ptrace access). Stop the process (`SIGSTOP`, ptrace) for a consistent answer: a
    /// running one changes under the walk.
    ///
    /// No CPython in the process is [`crate::ErrorKind::NotFound`] (also a CPython built
    /// into a library whose name does not say `python`); a version without a
    /// table is [`Error::Unsupported`]; an unreadable runtime is [`Error::Python`]. A
    /// thread whose frames cannot be read has its own error in [`crate::python::PythonThread::frames`].
    ///
    /// ```no_run
    /// use stacksym::process::Process;
    /// use stacksym::Symbolizer;
    /// # fn main() -> stacksym::Result<()> {
    /// let stacks = Symbolizer::builder().build().python_stacks(&Process::new(1234))?;
    /// println!("CPython {}", stacks.version);
    /// for thread in &stacks.threads {
    ///     println!("thread {:?}", thread.os_tid);
    ///     for frame in thread.frames.iter().flatten() {
    ///         println!("  {} ({}:{:?})", frame.function, frame.file, frame.line);
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn python_stacks(&self, process: &Process) -> Result<PythonStacks> {
        let memory = ProcessMemory::new(process.pid());
        self.python_runtime(process, &memory)?.read_process(process)
    }

    /// Where CPython's runtime is in `process`: see [`Symbolizer::python_stacks`].
    pub fn python_runtime(
        &self,
        process: &Process,
        memory: &ProcessMemory,
    ) -> Result<PythonRuntime> {
        let maps = self.process_maps(process)?;
        let executable = process.executable_id();
        let mut seen = HashSet::new();
        let mut first_pass = Vec::new();
        let mut second_pass = Vec::new();
        for mapping in maps.mappings() {
            if !mapping.is_file() || !seen.insert((mapping.dev, mapping.inode)) {
                continue;
            }
            let named_python = mapping
                .file_path()
                .and_then(|path| {
                    path.file_name()
                        .map(|n| n.to_string_lossy().contains("python"))
                })
                .unwrap_or(false);
            if named_python {
                first_pass.push(mapping);
            } else if executable == Some((mapping.dev, mapping.inode)) {
                // An executable linked with CPython whatever its name (an embedding
                // application, a renamed interpreter).
                second_pass.push(mapping);
            }
        }
        for pass in [first_pass, second_pass] {
            let mut opened = Vec::new();
            for mapping in pass {
                match self.process_file(process, mapping) {
                    Ok(Some(elf)) => opened.push((elf, mapping)),
                    Ok(None) => {}
                    Err(e) => log::debug!(
                        "process {}: not searched for _PyRuntime: {e}",
                        process.pid()
                    ),
                }
            }
            let paths: Vec<_> = opened
                .iter()
                .map(|(elf, mapping)| {
                    mapping
                        .file_path()
                        .unwrap_or_else(|| elf.path().to_path_buf())
                })
                .collect();
            let files: Vec<LoadedFile<'_>> = opened
                .iter()
                .zip(&paths)
                .map(|((elf, mapping), path)| LoadedFile {
                    elf,
                    path,
                    start: mapping.range.start,
                    file_offset: mapping.file_offset,
                })
                .collect();
            if let Some(runtime) = PythonRuntime::find(memory, &files)? {
                return Ok(runtime);
            }
        }
        Err(Error::NotFound {
            path: process.maps_path(),
            what: "neither the executable nor a mapped file named like CPython's \
                   (libpython3.X.so, python3.X) defines _PyRuntime: not a CPython process, or \
                   one whose interpreter has no symbol table"
                .to_string(),
        })
    }

    /// A stopped thread's native stack, unwound from `regs` (as
    /// [`Symbolizer::unwind_process`] does) and merged with its Python frames (`python`,
    /// innermost first, from [`Symbolizer::python_stacks`]) by [`merge_native`]: each
    /// native frame of the evaluation loop replaced by the Python frames it runs, as
    /// `py-spy dump --native` prints them.
    pub fn python_merged_stack<A: UnwindArch>(
        &self,
        process: &Process,
        regs: &A,
        python: &[PythonFrame],
    ) -> Result<Vec<MixedFrame<NativeFrame>>> {
        let (stack, symbols) = self.unwind_process(process, regs)?;
        Ok(merge_named(&stack.frames, &symbols, 0, python))
    }

    /// Every thread of a core, its native stack (unwound from the core's registers through
    /// the core's memory and matched files, as `pstack --core` unwinds them) merged with
    /// its Python frames from `python` ([`PythonStacks::from_core`] of the same core; a
    /// thread without a Python thread state, or whose frames could not be read, stays
    /// native). In the core's thread order.
    pub fn python_merged_core(
        &self,
        core: &CoreFile,
        python: &PythonStacks,
    ) -> Result<Vec<MergedThread>> {
        let unwinder = Unwinder::new(Modules::from_core(core, None));
        let mut x86 = UnwindCache::new();
        let mut arm = UnwindCache::new();
        let stacks: Vec<(u32, Vec<Frame>)> = core
            .threads()
            .iter()
            .map(|thread| {
                let frames = if let Some(regs) = RegsX86_64::from_core(&thread.registers) {
                    unwinder.unwind(&regs, core, &mut x86).frames
                } else if let Some(regs) = RegsAarch64::from_core_thread(thread) {
                    unwinder.unwind(&regs, core, &mut arm).frames
                } else {
                    log::debug!(
                        "{}: thread {}: registers of an unknown architecture",
                        core.path().display(),
                        thread.tid
                    );
                    Vec::new()
                };
                (thread.tid, frames)
            })
            .collect();
        let addrs: Vec<AbsAddr> = stacks
            .iter()
            .flat_map(|(_, frames)| frames.iter().map(|f| f.lookup_addr()))
            .collect();
        let symbols = self.symbolize(&Source::Core(core), Input::AbsAddrs(&addrs))?;
        let mut first = 0;
        let mut merged = Vec::with_capacity(stacks.len());
        for (tid, frames) in &stacks {
            let py: &[PythonFrame] = python
                .threads
                .iter()
                .find(|thread| thread.os_tid == Some(*tid))
                .and_then(|thread| thread.frames.as_deref().ok())
                .unwrap_or_default();
            merged.push(MergedThread {
                os_tid: *tid,
                frames: merge_named(frames, &symbols, first, py),
            });
            first += frames.len();
        }
        Ok(merged)
    }
}

/// One thread's merged stack ([`Symbolizer::python_merged_core`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedThread {
    /// The OS thread id.
    pub os_tid: u32,
    /// Its frames, innermost first.
    pub frames: Vec<MixedFrame<NativeFrame>>,
}

/// `frames` named by `symbols` (from index `first` on) and merged with `python`.
fn merge_named(
    frames: &[Frame],
    symbols: &Symbols,
    first: usize,
    python: &[PythonFrame],
) -> Vec<MixedFrame<NativeFrame>> {
    let native: Vec<(NativeFrame, Option<&str>)> = frames
        .iter()
        .enumerate()
        .map(|(i, frame)| {
            let name = symbols.get(first + i).map(|sym| sym.name);
            let native = NativeFrame {
                addr: frame.addr,
                function: name.map(str::to_string),
            };
            (native, name)
        })
        .collect();
    merge_native(&native, python)
}

impl PythonRuntime {
    /// Every thread's Python frames of the live `process` ([`PythonRuntime::read_stacks`]
    /// through its memory), each thread's [`crate::python::PythonThread::os_tid`] the id `/proc` (and
    /// ptrace) gives it: also for a process in a pid namespace of its own (a container),
    /// whose interpreter knows its threads by the namespace's ids. Stop the process first
    /// for a consistent answer.
    pub fn read_process(&self, process: &Process) -> Result<PythonStacks> {
        let memory = ProcessMemory::new(process.pid());
        let ids = process.thread_ids();
        let own: Vec<u32> = ids.iter().map(|&(_, own)| own).collect();
        let mut stacks = self.read_stacks(&memory, &own)?;
        if ids.iter().any(|&(tid, own)| tid != own) {
            for thread in &mut stacks.threads {
                thread.os_tid = thread
                    .os_tid
                    .and_then(|tid| ids.iter().find(|&&(_, own)| own == tid))
                    .map(|&(tid, _)| tid);
            }
        }
        Ok(stacks)
    }
}
