//! CPython's interpreter stacks read from a process's memory: every thread's Python frames
//! (function, file, line), from a live process or a core, for CPython 3.6-3.13.
//!
//! The input is memory ([`crate::unwind::Memory`]: a live process's
//! [`crate::unwind::ProcessMemory`], a [`crate::core::CoreFile`]) and where `_PyRuntime` is
//! ([`PythonRuntime`], found in the ELF symbol tables of the executable or `libpython`
//! mapped in the process by [`PythonRuntime::find`], or given by a caller that knows it).
//! From there the walk follows `_PyRuntime.interpreters.head` to each interpreter, its
//! thread states and their frames (`PyFrameObject` chains before 3.11, `_PyInterpreterFrame`
//! chains from 3.11), and names each frame from its code object. The fields' offsets are
//! data, per version ([`offsets`](self) with the generator that computed them from CPython's
//! headers); from 3.13 the process's own `_Py_DebugOffsets` table is read instead.
//!
//! Nothing the target's memory says is trusted: every chain is bounded
//! ([`MAX_FRAMES`] frames, [`MAX_THREADS`] threads, [`MAX_INTERPRETERS`] interpreters) and
//! checked for cycles, strings and tables have size caps, objects are checked against their
//! type where CPython exports it (`PyCode_Type`, `PyUnicode_Type`, `PyBytes_Type`), and a
//! thread whose frames cannot be read gets its own error while the others are answered.
//! It does not stop threads (a live process should be stopped while it is read, or frames
//! change under the walk) and does not unwind native stacks: merging with native frames is
//! [`merge_native`], over a native stack the caller unwound
//! ([`crate::Symbolizer::python_merged_stack`] does both for a live thread).

mod lines;
mod offsets;
mod reader;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use crate::addr::{AbsAddr, FileOffset, VirtAddr};
use crate::core::CoreFile;
use crate::elf::ElfFile;
use crate::error::{Error, Result};
use crate::unwind::Memory;

pub use reader::{MAX_FRAMES, MAX_INTERPRETERS, MAX_THREADS};

/// A CPython version, as found in the process (`Py_Version`, else the file name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PythonVersion {
    /// 3.
    pub major: u8,
    /// 6 to 13.
    pub minor: u8,
    /// The micro (patch) version, when it was read (`Py_Version`, 3.11+); `None` when the
    /// version came from a file name.
    pub micro: Option<u8>,
}

impl std::fmt::Display for PythonVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.micro {
            Some(micro) => write!(f, "{}.{}.{micro}", self.major, self.minor),
            None => write!(f, "{}.{}", self.major, self.minor),
        }
    }
}

/// One Python frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonFrame {
    /// The function's qualified name (`co_qualname`, 3.11+: `Class.method`,
    /// `outer.<locals>.inner`), else its name (`co_name`): what `py-spy dump` prints.
    pub function: String,
    /// The code's file name (`co_filename`), as the interpreter has it.
    pub file: String,
    /// The line being run, from the instruction offset through the code's line table;
    /// `None` where the table says the instruction has no line.
    pub line: Option<u32>,
    /// Whether this is the outermost Python frame of one call of the evaluation loop
    /// (`_PyEval_EvalFrameDefault`): the frames from the innermost down to and including an
    /// entry frame belong to the innermost native evaluation frame (3.11+ runs Python calls
    /// without a native call; before 3.11 every frame is an entry frame).
    pub is_entry: bool,
    /// The code object's address.
    pub code: AbsAddr,
}

/// One Python thread state and its frames.
#[derive(Debug)]
pub struct PythonThread {
    /// The OS thread id (Linux tid): CPython's `native_thread_id` (3.11+), else read from
    /// the C library's thread descriptor that `thread_id` points to and checked against the
    /// process's threads. `None` when it could not be told. For a live process, the id
    /// `/proc` and ptrace give the thread, also when the process runs in a pid namespace of
    /// its own, whose ids its interpreter keeps.
    pub os_tid: Option<u32>,
    /// CPython's `thread_id` (`threading.get_ident()`, glibc's `pthread_t`): an opaque id.
    pub thread_id: u64,
    /// Where the thread state (`PyThreadState`) is.
    pub thread_state: AbsAddr,
    /// Its frames, innermost first, or why they could not be read.
    pub frames: Result<Vec<PythonFrame>>,
}

/// Every Python thread of a process.
#[derive(Debug)]
pub struct PythonStacks {
    /// The interpreter's version.
    pub version: PythonVersion,
    /// Where `_PyRuntime` is.
    pub runtime: AbsAddr,
    /// Whether the offsets came from the process's own `_Py_DebugOffsets` (3.13+) rather
    /// than this crate's table.
    pub debug_offsets: bool,
    /// The threads of every interpreter, in the interpreters' order, each interpreter's
    /// threads as CPython lists them (newest first).
    pub threads: Vec<PythonThread>,
}

/// Where a CPython runtime is in a process, and how to read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonRuntime {
    /// The interpreter's version.
    pub version: PythonVersion,
    /// Where `_PyRuntime` is.
    pub runtime: AbsAddr,
    /// The file that defines it (the executable or `libpython`).
    pub file: PathBuf,
    /// Where `PyCode_Type`, `PyUnicode_Type` and `PyBytes_Type` are, when the file exports
    /// them: objects whose type is another are refused (a freed code object, a lie).
    pub types: PythonTypes,
}

/// The addresses of the type objects checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PythonTypes {
    /// `PyCode_Type`.
    pub code: Option<AbsAddr>,
    /// `PyUnicode_Type`.
    pub unicode: Option<AbsAddr>,
    /// `PyBytes_Type`.
    pub bytes: Option<AbsAddr>,
}

/// A file mapped in the process, with where it is loaded: the input of
/// [`PythonRuntime::find`].
#[derive(Debug, Clone, Copy)]
pub struct LoadedFile<'a> {
    /// The file.
    pub elf: &'a ElfFile,
    /// The path the process knows it by (for version detection by name, and messages).
    pub path: &'a Path,
    /// The lowest address the file is mapped at.
    pub start: AbsAddr,
    /// The file offset mapped there.
    pub file_offset: FileOffset,
}

impl LoadedFile<'_> {
    /// The absolute address of the file's virtual address `virt`, also in `.bss` (which has
    /// no file bytes, so the segments' file offsets alone cannot place it): the mapping's
    /// load bias applied.
    fn abs(&self, virt: VirtAddr) -> Option<AbsAddr> {
        let mapped_virt = self.elf.segments().file_offset_to_virt(self.file_offset)?;
        let bias = self.start.0.wrapping_sub(mapped_virt.0);
        Some(AbsAddr(virt.0.wrapping_add(bias)))
    }

    fn symbol(&self, name: &str) -> Result<Option<AbsAddr>> {
        Ok(self
            .elf
            .symbol_value_by_name(name)?
            .and_then(|virt| self.abs(virt)))
    }
}

impl PythonRuntime {
    /// Finds the runtime in the files of a process: the first of `files` whose symbol
    /// tables define `_PyRuntime` (else, 3.13+, that has a `.PyRuntime` section), its version
    /// from `Py_Version` (3.11+, read from `memory`) else from the file's name
    /// (`libpython3.X.so`, `python3.X`). `Ok(None)` when no file defines `_PyRuntime`: no
    /// CPython there. A version outside 3.6-3.13 is [`Error::Unsupported`].
    pub fn find<M: Memory + ?Sized>(
        memory: &M,
        files: &[LoadedFile<'_>],
    ) -> Result<Option<PythonRuntime>> {
        for file in files {
            let runtime = match file.symbol("_PyRuntime")? {
                Some(addr) => addr,
                None => match file.elf.section_address(".PyRuntime")? {
                    Some(virt) if virt.0 != 0 => match file.abs(virt) {
                        Some(addr) => addr,
                        None => continue,
                    },
                    // 3.6 has no `_PyRuntime`: its interpreters' list starts at pystate.c's
                    // static `interp_head` (in `.symtab` only), taken as the runtime.
                    _ => match file.symbol("interp_head")? {
                        Some(addr)
                            if version_from_name(file.path)
                                .is_some_and(|v| (v.major, v.minor) == (3, 6)) =>
                        {
                            addr
                        }
                        _ => continue,
                    },
                },
            };
            let version = match file.symbol("Py_Version")? {
                Some(at) => match read_py_version(memory, at) {
                    Some(version) => version,
                    None => {
                        log::debug!(
                            "{}: Py_Version at {:#x} unreadable or not 3.x; using the file name",
                            file.path.display(),
                            at.0
                        );
                        version_from_name(file.path).ok_or_else(|| unsupported(file.path))?
                    }
                },
                None => version_from_name(file.path).ok_or_else(|| unsupported(file.path))?,
            };
            if offsets::layout(u32::from(version.minor)).is_none() || version.major != 3 {
                return Err(Error::Unsupported {
                    path: file.path.to_path_buf(),
                    what: format!(
                        "CPython {version}: Python frames are read for 3.{}-3.{} only",
                        offsets::SUPPORTED.0,
                        offsets::SUPPORTED.1
                    ),
                });
            }
            let types = PythonTypes {
                code: file.symbol("PyCode_Type")?,
                unicode: file.symbol("PyUnicode_Type")?,
                bytes: file.symbol("PyBytes_Type")?,
            };
            return Ok(Some(PythonRuntime {
                version,
                runtime,
                file: file.path.to_path_buf(),
                types,
            }));
        }
        Ok(None)
    }

    /// Reads every thread's Python frames from `memory`. `os_tids` are the process's threads
    /// as it knows them itself, in its own pid namespace (to match thread states to them;
    /// empty: unmatched before 3.11); each thread's `os_tid` is given in those ids
    /// (`Symbolizer::python_stacks` and `PythonRuntime::read_process` give the host's for
    /// a live process in a container). Fails only when the
    /// runtime itself cannot be read (its memory, or a 3.13 runtime whose `_Py_DebugOffsets`
    /// cookie is wrong); a thread whose frames cannot be read has its own error.
    pub fn read_stacks<M: Memory + ?Sized>(
        &self,
        memory: &M,
        os_tids: &[u32],
    ) -> Result<PythonStacks> {
        reader::read_stacks(self, memory, os_tids)
    }
}

impl PythonStacks {
    /// Every Python thread of the process a core file was written of, with its frames: the
    /// runtime found in the core's mapped files (as [`crate::core::CoreFile`] matched them
    /// to files here), its memory read from the core (and from those files for pages the
    /// core did not dump). Threads are matched to the core's threads. No CPython in the
    /// core is [`crate::ErrorKind::NotFound`].
    pub fn from_core(core: &CoreFile) -> Result<PythonStacks> {
        let mut lowest: Vec<Option<&crate::core::CoreMapping>> = vec![None; core.files().len()];
        for mapping in core.mappings() {
            let Some(slot) = mapping.file.and_then(|i| lowest.get_mut(i)) else {
                continue;
            };
            if slot.is_none_or(|m| mapping.range.start < m.range.start) {
                *slot = Some(mapping);
            }
        }
        let mut files: Vec<LoadedFile<'_>> = Vec::new();
        for (file, mapping) in core.files().iter().zip(&lowest) {
            let (Ok((elf, _)), Some(mapping)) = (&file.file, mapping) else {
                continue;
            };
            files.push(LoadedFile {
                elf,
                path: &file.path,
                start: mapping.range.start,
                file_offset: mapping.file_offset,
            });
        }
        // Files named like an interpreter first: the symbol tables of the others are only
        // scanned when those do not define `_PyRuntime`.
        files.sort_by_key(|file| {
            !file
                .path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().contains("python"))
        });
        let runtime = PythonRuntime::find(core, &files)?.ok_or_else(|| Error::NotFound {
            path: core.path().to_path_buf(),
            what: "no mapped file of the core defines _PyRuntime (or none could be opened \
                   here): not a CPython process"
                .to_string(),
        })?;
        let tids: Vec<u32> = core.threads().iter().map(|thread| thread.tid).collect();
        runtime.read_stacks(core, &tids)
    }
}

fn unsupported(path: &Path) -> Error {
    Error::Unsupported {
        path: path.to_path_buf(),
        what: "defines _PyRuntime, but its CPython version cannot be told: no Py_Version \
               symbol and no version in the file name"
            .to_string(),
    }
}

/// `Py_Version` (`PY_VERSION_HEX`, an `unsigned long`): `0xMMmmuuRS`, major, minor, micro,
/// release level and serial.
fn read_py_version<M: Memory + ?Sized>(memory: &M, at: AbsAddr) -> Option<PythonVersion> {
    let hex = memory.read_u64(at)?;
    let [_release, micro, minor, major, ..] = hex.to_le_bytes();
    (major == 3).then_some(PythonVersion {
        major,
        minor,
        micro: Some(micro),
    })
}

/// `3.X` from a file name like `libpython3.11.so.1.0`, `libpython3.13d.so`, `python3.8`.
fn version_from_name(path: &Path) -> Option<PythonVersion> {
    let name = path.file_name()?.to_str()?;
    let rest = &name[name.find("python")? + "python".len()..];
    let (major, rest) = rest.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some(PythonVersion {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        micro: None,
    })
}

/// One frame of a merged stack: a native frame or a Python frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MixedFrame<N> {
    /// A native frame, as the caller gave it.
    Native(N),
    /// A Python frame, in place of the evaluation loop's native frame that runs it.
    Python(PythonFrame),
}

/// Whether a native function is CPython's evaluation loop, whose frames the Python frames
/// replace in a merged stack: `_PyEval_EvalFrameDefault` (3.6+; also its `.cold`/`.lto_priv`
/// clones), `PyEval_EvalFrameEx` (before 3.6).
pub fn is_eval_frame(function: &str) -> bool {
    let base = function.split('.').next().unwrap_or(function);
    base == "_PyEval_EvalFrameDefault" || base == "PyEval_EvalFrameEx"
}

/// Merges a thread's native frames (innermost first, each with its function name) and its
/// Python frames (innermost first), as `py-spy dump --native` does: each native frame of
/// the evaluation loop ([`is_eval_frame`]) is replaced by the Python frames it runs, those
/// from the next one down to and including the next entry frame
/// ([`PythonFrame::is_entry`]). Python frames left over when the native frames run out
/// (a native stack cut short) are appended; an evaluation frame with no Python frame left
/// stays native.
pub fn merge_native<N: Clone>(
    native: &[(N, Option<&str>)],
    python: &[PythonFrame],
) -> Vec<MixedFrame<N>> {
    let mut merged = Vec::with_capacity(native.len() + python.len());
    let mut python = python.iter().peekable();
    for (frame, name) in native {
        if name.is_some_and(is_eval_frame) && python.peek().is_some() {
            for py in python.by_ref() {
                merged.push(MixedFrame::Python(py.clone()));
                if py.is_entry {
                    break;
                }
            }
        } else {
            merged.push(MixedFrame::Native(frame.clone()));
        }
    }
    merged.extend(python.cloned().map(MixedFrame::Python));
    merged
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn versions_from_file_names() {
        let v = |name: &str| version_from_name(Path::new(name)).map(|v| (v.major, v.minor));
        assert_eq!(v("/usr/lib/libpython3.11.so.1.0"), Some((3, 11)));
        assert_eq!(v("/x/libpython3.13d.so"), Some((3, 13)));
        assert_eq!(v("/usr/bin/python3.8"), Some((3, 8)));
        assert_eq!(v("/usr/bin/python"), None);
        assert_eq!(v("/usr/bin/python3"), None);
    }

    fn py(name: &str, is_entry: bool) -> PythonFrame {
        PythonFrame {
            function: name.to_string(),
            file: "f.py".to_string(),
            line: Some(1),
            is_entry,
            code: AbsAddr(0),
        }
    }

    #[test]
    fn merge_replaces_each_eval_frame_by_its_python_frames() {
        let native = [
            (1, Some("poll")),
            (2, Some("_PyEval_EvalFrameDefault")),
            (3, Some("PyObject_Call")),
            (4, Some("_PyEval_EvalFrameDefault.cold")),
            (5, Some("main")),
        ];
        let python = [py("c", false), py("b", true), py("a", true)];
        let names: Vec<String> = merge_native(&native, &python)
            .into_iter()
            .map(|f| match f {
                MixedFrame::Native(n) => format!("native {n}"),
                MixedFrame::Python(p) => format!("py {}", p.function),
            })
            .collect();
        assert_eq!(
            names,
            ["native 1", "py c", "py b", "native 3", "py a", "native 5"]
        );
    }
}
