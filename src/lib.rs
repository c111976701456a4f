//! # stacksym
//!
//! Turns raw addresses, as profilers and tracers capture them, into symbols, source lines and
//! call stacks. One [`Symbolizer`] (`Send + Sync`, bounded caches) answers for every source
//! with one call, [`Symbolizer::symbolize`]`(&`[`Source`]`, `[`Input`]`) -> `[`Symbols`]: one
//! answer per input address, in input order, a [`Sym`] (name, offset, size, the file, inlined
//! frames with source lines) or the [`NotFound`] reason there is none. "Not found" is never an
//! error; a malformed or unreadable file is an [`Error`] that names it.
//!
//! ```
//! use stacksym::{Input, Source, Symbolizer, VirtAddr};
//! # fn main() -> stacksym::Result<()> {
//! let symbolizer = Symbolizer::builder().demangle(true).build();
//! let path = std::path::Path::new("testdata/bin/c-pie-g");
//! let symbols = symbolizer.symbolize(&Source::Elf { path }, Input::VirtAddrs(&[VirtAddr(0x12c4), VirtAddr(0x1)]))?;
//! let sym = symbols.get(0).expect("0x12c4 is in checksum");
//! assert_eq!(sym.name, "checksum");
//! // Innermost first: scale() was inlined into checksum().
//! let names: Vec<_> = sym.frames.iter().map(|f| sym.frame_name(f)).collect();
//! assert_eq!(names, ["scale", "checksum"]);
//! assert!(symbols.get(1).is_none(), "0x1 is in no symbol");
//! # Ok(())
//! # }
//! ```
//!
//! ## Sources
//!
//! | [`Source`] | addresses ([`Input`]) | what answers |
//! |---|---|---|
//! | `Elf { path }` | [`VirtAddr`]s as the file states them, or [`FileOffset`]s | `.symtab`, `.dynsym`, MiniDebugInfo, a Go binary's `.gopclntab`; DWARF of the file or of its debug file (build-id dirs, `.gnu_debuglink` CRC-checked, dwz, split DWARF, debuginfod) |
//! | `BuildId { build_id }` | the same | the file with that build-id in the debug dirs (or a debuginfod server) |
//! | `Process { process, maps }` | [`AbsAddr`]s | the files a live process maps (`/proc/PID/maps`, opened confined to the process's root: containers), its vDSO, its perf map |
//! | `Kernel(`[`KernelSource`]`)` | [`AbsAddr`]s | kallsyms; a vmlinux (KASLR matched) and modules' `.ko` for source lines |
//! | `Core(&`[`core::CoreFile`]`)` | [`AbsAddr`]s | the files a core file maps, matched by build-id |
//! | `Stack { process, kernel }` | [`AbsAddr`]s, kernel and user mixed | as bpftrace's `kstack`/`ustack` give them |
//!
//! Names to addresses, for probes: [`Symbolizer::find_addresses`](symbolize::Symbolizer::find_addresses)
//! (exact, demangled or glob; file offsets for uprobes) and
//! [`Symbolizer::find_usdt`](symbolize::Symbolizer::find_usdt) (USDT probes, their semaphores and
//! arguments). Remote symbolization: [`Symbolizer::normalize`](symbolize::Symbolizer::normalize)
//! gives build-id and file offset where addresses are captured, `Source::BuildId` names them
//! elsewhere.
//!
//! ## Unwinding
//!
//! [`unwind`] turns registers plus stack memory into return addresses: DWARF CFI (`.eh_frame`,
//! `.debug_frame`), frame pointers where a file has none, signal frames, Go's own tables, for
//! x86_64 ([`unwind::RegsX86_64`]) and aarch64 ([`unwind::RegsAarch64`]). Memory is a perf or
//! eBPF stack copy ([`unwind::StackCopy`]), a live process ([`unwind::ProcessMemory`]) or a core
//! file. [`symbolize::ProcessUnwinder`] and
//! [`Symbolizer::unwind_process`](symbolize::Symbolizer::unwind_process) unwind a stopped thread
//! of a live process and name its frames in one call.
//!
//! ## Layers
//!
//! Lowest first (`ARCHITECTURE.md` in the repository draws them and says which may call which):
//! [`elf`] (one ELF file: segments, build-id, the symbol index), [`dwarf`] (source lines and
//! inlined frames of one file), [`debuginfo`] (finding a file's debug companion),
//! [`gopclntab`], [`usdt`], [`kernel`], [`process`], [`core`], then [`symbolize`] (the façade,
//! its caches and result types) with [`unwind`] beside it. Addresses have a type per kind:
//! [`VirtAddr`], [`AbsAddr`], [`FileOffset`].
//!
//! ## Features
//!
//! - `minidebuginfo` (default): read `.gnu_debugdata` (xz) with a pure-Rust decoder.
//! - `debuginfod` (off): fetch missing debug files from debuginfod servers
//!   (`debuginfo::DebuginfodConfig`), into the cache gdb and elfutils share. Nothing touches
//!   the network, and the environment is not read, unless the caller configures it.
//!
//! The default build is offline and needs no C compiler.
//!
//! ## Beyond Rust
//!
//! The repository also holds `stacksym-capi`, the C API (`capi/include/stacksym.h`: the same
//! sources and the unwinder from C, C++ or Python's ctypes), and `stacksym-cli`, the
//! `stacksym` tool (`symbolize` with llvm-symbolizer's flags, `perf` with `perf script`'s and
//! `perf report`'s layouts, `pstack` for processes and core files).

// What is true of the library stays true: every public item documented and printable with
// `{:?}`, every `unsafe` block with the reason it is sound.
#![deny(
    missing_docs,
    missing_debug_implementations,
    clippy::undocumented_unsafe_blocks
)]

pub mod addr;
mod confine;
pub mod core;
pub mod debuginfo;
pub mod demangle;
pub mod dwarf;
pub mod elf;
mod error;
pub mod gopclntab;
pub mod kernel;
pub mod process;
pub mod python;
mod radix;
pub mod symbolize;
pub mod unwind;
pub mod usdt;

#[cfg(test)]
mod test_support;

pub use addr::{AbsAddr, FileOffset, LoadBias, SymAddr, VirtAddr};
pub use dwarf::{FunctionName, InlineFrame};
pub use error::{DecompressError, Error, ErrorKind, Result};
pub use symbolize::{
    Input, KernelSource, NameOrigin, NotFound, OwnedSym, Source, Sym, Symbolizer,
    SymbolizerBuilder, Symbols,
};

/// The examples in README.md, run as doc tests so the README cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
