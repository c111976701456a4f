//! Symbolization from C: the `stacksym_symbolize_*` calls and their result,
//! [`stacksym_syms`]: one [`stacksym_sym`] per input address, in input order, with its
//! [`stacksym_frame`]s (source lines, inlined calls), all in one block.

use std::ffi::c_char;

use stacksym::elf::{SymbolKind, SymbolOrigin};
use stacksym::process::{MappingKind, Process};
use stacksym::{
    AbsAddr, FileOffset, InlineFrame, Input, NameOrigin, NotFound, Source, Symbols, VirtAddr,
};

use crate::block::{free_block, Bases, Block, Bytes, Pool, Str};
use crate::error::{guard, stacksym_err, CError};
use crate::{handle, name_of, out_slot, slice, stacksym_kernel_source, stacksym_symbolizer};

/// The kind of addresses given for an ELF file or a build-id: `STACKSYM_ADDR_*`.
pub type stacksym_addr_kind = u32;
/// Virtual addresses as the ELF file states them (`st_value`; for a PIE or shared library:
/// the absolute address minus the load bias).
pub const STACKSYM_ADDR_VIRT: stacksym_addr_kind = 0;
/// Offsets into the file (`addr - map_start + map_offset`, as perf and `/proc/PID/maps`).
pub const STACKSYM_ADDR_FILE_OFFSET: stacksym_addr_kind = 1;

/// Whether an address was found, and if not, why: `STACKSYM_FOUND` or another
/// `STACKSYM_*` reason.
pub type stacksym_reason = u32;
/// A symbol (or a DWARF function) names the address.
pub const STACKSYM_FOUND: stacksym_reason = 0;
/// The address is in a file (or the kernel), but nothing there names it.
pub const STACKSYM_NO_SYMBOL: stacksym_reason = 1;
/// No mapping of the process holds the address.
pub const STACKSYM_UNMAPPED: stacksym_reason = 2;
/// Mapped, but not from a file (heap, stack, anonymous, the vDSO where nothing names it);
/// `reason_detail` names the mapping (`[heap]`, `[anon:NAME]`, "" for anonymous memory).
pub const STACKSYM_NOT_IN_FILE: stacksym_reason = 3;
/// The file at the address could not be read; `reason_detail` says which and why.
pub const STACKSYM_FILE_ERROR: stacksym_reason = 4;
/// A kernel address, and the kernel hides its addresses from this reader (kallsyms lists
/// every address as 0: kernel.kptr_restrict, no CAP_SYSLOG); `reason_detail` says how to
/// fix it. The call itself succeeds, so the batch's other addresses keep their answers;
/// stacksym_find_kernel(), with no answer per address, fails with
/// STACKSYM_ERR_PERMISSION_DENIED and the same message instead.
pub const STACKSYM_KERNEL_ADDRS_HIDDEN: stacksym_reason = 5;
/// A kernel address in a stack symbolized without a kernel source.
pub const STACKSYM_NO_KERNEL_SOURCE: stacksym_reason = 6;
/// Not found for a reason this version of the C API has no constant for (`reason_detail`).
pub const STACKSYM_NOT_FOUND_OTHER: stacksym_reason = 7;

/// Where a symbol's name comes from: `STACKSYM_ORIGIN_*`.
pub type stacksym_origin = u32;
/// Not found: no name.
pub const STACKSYM_ORIGIN_NONE: stacksym_origin = 0;
/// An ELF `.symtab` (of the file, its debug file or its MiniDebugInfo).
pub const STACKSYM_ORIGIN_SYMTAB: stacksym_origin = 1;
/// An ELF `.dynsym`.
pub const STACKSYM_ORIGIN_DYNSYM: stacksym_origin = 2;
/// A PLT entry (`target@plt`).
pub const STACKSYM_ORIGIN_PLT: stacksym_origin = 3;
/// DWARF alone (no symbol covers the address; `offset` is 0, `addr` the address).
pub const STACKSYM_ORIGIN_DWARF: stacksym_origin = 4;
/// A kallsyms file.
pub const STACKSYM_ORIGIN_KALLSYMS: stacksym_origin = 5;
/// A perf JIT map (`/tmp/perf-PID.map`).
pub const STACKSYM_ORIGIN_PERF_MAP: stacksym_origin = 6;
/// A source this version of the C API has no constant for.
pub const STACKSYM_ORIGIN_OTHER: stacksym_origin = 7;
/// A Go binary's own table (`.gopclntab`), for a Go function of a file without `.symtab`.
pub const STACKSYM_ORIGIN_GO_TABLE: stacksym_origin = 8;
/// A jitdump file (`jit-PID.dump`) the process maps: the code its JIT last loaded there.
pub const STACKSYM_ORIGIN_JIT_DUMP: stacksym_origin = 9;

/// One source location of an address, innermost first: the inlined calls, then the
/// function whose machine code it is. An outer frame's location is the call site of the
/// frame inside it, as llvm-symbolizer prints them.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_frame {
    /// The function, as llvm-symbolizer names it: an inlined frame by its DWARF name
    /// (demangled unless demangling is off), the outer frame of a found symbol by the
    /// symbol's `name`; NULL where DWARF names no function.
    pub function: *const c_char,
    /// The source file (joined with the compilation directory); NULL if unknown.
    pub file: *const c_char,
    /// The line; 0 if unknown.
    pub line: u32,
    /// The column; 0 if unknown.
    pub column: u32,
    /// The line-table discriminator of the innermost frame; 0 if none.
    pub discriminator: u32,
    /// Whether this frame's function was inlined into the next frame's.
    pub inlined: bool,
}

/// The answer for one address.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct stacksym_sym {
    /// The address as it was given.
    pub input: u64,
    /// `STACKSYM_FOUND`, or why nothing names the address.
    pub reason: stacksym_reason,
    /// Where the name comes from (`STACKSYM_ORIGIN_NONE` when not found).
    pub origin: stacksym_origin,
    /// For `STACKSYM_NOT_IN_FILE` the mapping's name; for `STACKSYM_FILE_ERROR`,
    /// `STACKSYM_KERNEL_ADDRS_HIDDEN` and `STACKSYM_NOT_FOUND_OTHER` the message; else NULL.
    pub reason_detail: *const c_char,
    /// The name to show (demangled unless demangling is off, without `@VERSION`); NULL when
    /// not found.
    pub name: *const c_char,
    /// The name as the file spells it (mangled); NULL when not found.
    pub raw_name: *const c_char,
    /// The symbol version (`GLIBC_2.2.5`); NULL if none.
    pub version: *const c_char,
    /// The symbol's start as its source states it (an ELF virtual address; for kallsyms and
    /// perf maps the absolute address).
    pub addr: u64,
    /// The symbol's size (0 if the table gives none).
    pub size: u64,
    /// How far into the symbol the address is.
    pub offset: u64,
    /// Whether the symbol is data (`STT_OBJECT`) rather than a function.
    pub is_data: bool,
    /// Whether the version is hidden (`name@VER`, not `name@@VER`).
    pub version_hidden: bool,
    /// Whether `file_offset` is known.
    pub has_file_offset: bool,
    /// The address's offset in `module`'s file.
    pub file_offset: u64,
    /// The file the address is in, as the caller, the process or the kernel names it
    /// (`[kernel.kallsyms]`, `[ext4]` for the kernel); also where nothing names the
    /// address, if known; else NULL.
    pub module: *const c_char,
    /// The file whose symbol table named the symbol (the file, its debug file, the
    /// kallsyms file, the perf map); NULL when not found.
    pub symbol_file: *const c_char,
    /// The GNU build-id of `module`'s file (`build_id_len` bytes); NULL if none.
    pub build_id: *const u8,
    /// The length of `build_id`.
    pub build_id_len: usize,
    /// For a kernel module's address, the module's name (`ext4`); else NULL.
    pub kernel_module: *const c_char,
    /// The source locations, innermost first (`frames_len` of them; also where no symbol
    /// names the address but DWARF has its line).
    pub frames: *const stacksym_frame,
    /// The number of `frames`.
    pub frames_len: usize,
}

/// The answers of one call, one per input address, in input order; one block, freed by
/// stacksym_syms_free().
#[repr(C)]
#[derive(Debug)]
pub struct stacksym_syms {
    /// The number of `syms` (the number of addresses given).
    pub len: usize,
    /// The answers.
    pub syms: *const stacksym_sym,
    /// The first problem with debug information seen (a debug file that could not be read,
    /// broken DWARF): the symbol tables still answered. NULL if none.
    pub debug_error: *const c_char,
}

/// A [`stacksym_sym`] before its block exists: strings as pool offsets, frames as a range.
pub(crate) struct FlatSym {
    input: u64,
    reason: stacksym_reason,
    origin: stacksym_origin,
    reason_detail: Str,
    name: Str,
    raw_name: Str,
    version: Str,
    addr: u64,
    size: u64,
    offset: u64,
    is_data: bool,
    version_hidden: bool,
    file_offset: Option<u64>,
    module: Str,
    symbol_file: Str,
    build_id: Bytes,
    kernel_module: Str,
    frames: (usize, usize),
}

/// A [`stacksym_frame`] before its block exists.
pub(crate) struct FlatFrame {
    function: Str,
    file: Str,
    line: u32,
    column: u32,
    discriminator: u32,
    inlined: bool,
}

/// The frames of one address into `frames`, named as llvm-symbolizer names them (the outer
/// frame of a found symbol by `outer_name`); returns their range.
fn flatten_frames(
    pool: &mut Pool,
    frames: &mut Vec<FlatFrame>,
    from: &[InlineFrame],
    outer_name: Option<Str>,
    demangle: bool,
) -> (usize, usize) {
    let start = frames.len();
    for frame in from {
        let function = match (frame.inlined, outer_name) {
            (false, Some(name)) => name,
            _ => pool.opt_str(frame.function.as_ref().map(|f| {
                if demangle {
                    f.demangled.as_str()
                } else {
                    f.raw.as_str()
                }
            })),
        };
        frames.push(FlatFrame {
            function,
            file: pool.opt_str(frame.file.as_deref()),
            line: frame.line.unwrap_or(0),
            column: frame.column.unwrap_or(0),
            discriminator: frame.discriminator.unwrap_or(0),
            inlined: frame.inlined,
        });
    }
    (start, frames.len() - start)
}

/// What a mapping not backed by a file is called, as `/proc/PID/maps` names it.
pub(crate) fn mapping_name(kind: &MappingKind) -> String {
    match kind {
        MappingKind::File { path, .. } => path.display().to_string(),
        MappingKind::Memfd { name } => format!("/memfd:{}", name.display()),
        MappingKind::Vdso => "[vdso]".to_string(),
        MappingKind::Vvar => "[vvar]".to_string(),
        MappingKind::Vsyscall => "[vsyscall]".to_string(),
        MappingKind::Heap => "[heap]".to_string(),
        MappingKind::Stack => "[stack]".to_string(),
        MappingKind::Anonymous => String::new(),
        MappingKind::AnonNamed(name) | MappingKind::Other(name) => name.clone(),
        other => format!("{other:?}"),
    }
}

fn origin_code(origin: NameOrigin) -> stacksym_origin {
    match origin {
        NameOrigin::Table(SymbolOrigin::Symtab) => STACKSYM_ORIGIN_SYMTAB,
        NameOrigin::Table(SymbolOrigin::Dynsym) => STACKSYM_ORIGIN_DYNSYM,
        NameOrigin::Table(SymbolOrigin::Plt) => STACKSYM_ORIGIN_PLT,
        NameOrigin::Dwarf => STACKSYM_ORIGIN_DWARF,
        NameOrigin::Kallsyms => STACKSYM_ORIGIN_KALLSYMS,
        NameOrigin::PerfMap => STACKSYM_ORIGIN_PERF_MAP,
        NameOrigin::GoTable => STACKSYM_ORIGIN_GO_TABLE,
        NameOrigin::JitDump => STACKSYM_ORIGIN_JIT_DUMP,
        // `NameOrigin` is non-exhaustive: an origin added later than this C API.
        _ => STACKSYM_ORIGIN_OTHER,
    }
}

/// The answers of one batch, flattened: one [`FlatSym`] per address and the frames they
/// refer to, their strings in the caller's [`Pool`].
pub(crate) struct FlatSyms {
    /// One per address, in input order.
    pub(crate) syms: Vec<FlatSym>,
    /// The frames of every address, back to back (each `FlatSym::frames` is a range).
    pub(crate) frames: Vec<FlatFrame>,
    /// [`Symbols::debug_error`]'s message.
    pub(crate) debug_error: Str,
}

/// `symbols`, the answers for `inputs`, flattened into `pool`.
pub(crate) fn flatten_syms(
    pool: &mut Pool,
    symbols: &Symbols,
    inputs: &[u64],
    demangle: bool,
) -> FlatSyms {
    let mut frames = Vec::new();
    let mut flat = Vec::with_capacity(symbols.len());
    for (i, result) in symbols.results().enumerate() {
        let input = inputs.get(i).copied().unwrap_or(0);
        let module = pool.opt_str(symbols.module(i).map(|p| p.as_os_str().as_encoded_bytes()));
        let file_offset = symbols.file_offset(i).map(|o| o.0);
        let entry = match result {
            Ok(sym) => {
                let name = pool.str(sym.name);
                let outer = (!matches!(sym.origin, NameOrigin::Dwarf)).then_some(name);
                FlatSym {
                    input,
                    reason: STACKSYM_FOUND,
                    origin: origin_code(sym.origin),
                    reason_detail: Str::NONE,
                    name,
                    raw_name: pool.str(sym.raw_name),
                    version: pool.opt_str(sym.version),
                    addr: sym.addr.raw(),
                    size: sym.size,
                    offset: sym.offset,
                    is_data: sym.kind == SymbolKind::Data,
                    version_hidden: sym.version_hidden,
                    file_offset: sym.file_offset().map(|o| o.0),
                    module: pool.str(sym.module.as_os_str().as_encoded_bytes()),
                    symbol_file: pool.str(sym.symbol_file.as_os_str().as_encoded_bytes()),
                    build_id: pool.bytes(sym.build_id),
                    kernel_module: pool.opt_str(sym.kernel_module),
                    frames: flatten_frames(pool, &mut frames, sym.frames, outer, demangle),
                }
            }
            Err(why) => {
                let (reason, detail) = match why {
                    NotFound::NoSymbol => (STACKSYM_NO_SYMBOL, None),
                    NotFound::Unmapped => (STACKSYM_UNMAPPED, None),
                    NotFound::NotInFile(kind) => (STACKSYM_NOT_IN_FILE, Some(mapping_name(kind))),
                    NotFound::FileError(e) => (STACKSYM_FILE_ERROR, Some(e.to_string())),
                    NotFound::KernelAddrsHidden(e) => {
                        (STACKSYM_KERNEL_ADDRS_HIDDEN, Some(e.to_string()))
                    }
                    NotFound::NoKernelSource => (STACKSYM_NO_KERNEL_SOURCE, None),
                    // `NotFound` is non-exhaustive: a reason added later than this C API.
                    other => (STACKSYM_NOT_FOUND_OTHER, Some(format!("{other:?}"))),
                };
                FlatSym {
                    input,
                    reason,
                    origin: STACKSYM_ORIGIN_NONE,
                    reason_detail: pool.opt_str(detail),
                    name: Str::NONE,
                    raw_name: Str::NONE,
                    version: Str::NONE,
                    addr: 0,
                    size: 0,
                    offset: 0,
                    is_data: false,
                    version_hidden: false,
                    file_offset,
                    module,
                    symbol_file: Str::NONE,
                    build_id: Bytes::NONE,
                    kernel_module: Str::NONE,
                    frames: flatten_frames(pool, &mut frames, symbols.lines(i), None, demangle),
                }
            }
        };
        flat.push(entry);
    }
    FlatSyms {
        syms: flat,
        frames,
        debug_error: pool.opt_str(symbols.debug_error().map(|e| e.to_string())),
    }
}

impl FlatFrame {
    /// The C frame, its strings in the block `at` describes.
    pub(crate) fn to_c<A>(&self, at: &Bases<A, stacksym_frame>) -> stacksym_frame {
        stacksym_frame {
            function: at.str(self.function),
            file: at.str(self.file),
            line: self.line,
            column: self.column,
            discriminator: self.discriminator,
            inlined: self.inlined,
        }
    }
}

impl FlatSym {
    /// The C answer, its strings and frames in the block `at` describes.
    pub(crate) fn to_c<A>(&self, at: &Bases<A, stacksym_frame>) -> stacksym_sym {
        let (build_id, build_id_len) = at.bytes(self.build_id);
        stacksym_sym {
            input: self.input,
            reason: self.reason,
            origin: self.origin,
            reason_detail: at.str(self.reason_detail),
            name: at.str(self.name),
            raw_name: at.str(self.raw_name),
            version: at.str(self.version),
            addr: self.addr,
            size: self.size,
            offset: self.offset,
            is_data: self.is_data,
            version_hidden: self.version_hidden,
            has_file_offset: self.file_offset.is_some(),
            file_offset: self.file_offset.unwrap_or(0),
            module: at.str(self.module),
            symbol_file: at.str(self.symbol_file),
            build_id,
            build_id_len,
            kernel_module: at.str(self.kernel_module),
            frames: at.b(self.frames.0),
            frames_len: self.frames.1,
        }
    }
}

/// `symbols` (the answers for `inputs`) as one block.
pub(crate) fn syms_block(
    symbols: &Symbols,
    inputs: &[u64],
    demangle: bool,
) -> Result<*mut stacksym_syms, CError> {
    let mut pool = Pool::default();
    let flat = flatten_syms(&mut pool, symbols, inputs, demangle);
    let mut block = Block::<stacksym_syms, stacksym_sym, stacksym_frame>::new(
        flat.syms.len(),
        flat.frames.len(),
        &pool,
    )?;
    let at = block.bases();
    for frame in &flat.frames {
        block.push_b(frame.to_c(&at))?;
    }
    for sym in &flat.syms {
        block.push_a(sym.to_c(&at))?;
    }
    block.finish(stacksym_syms {
        len: flat.syms.len(),
        syms: at.a(0),
        debug_error: at.str(flat.debug_error),
    })
}

/// The `Input` of `kind` over `addrs`.
fn elf_input(kind: stacksym_addr_kind, addrs: &[u64]) -> Result<Input<'_>, CError> {
    match kind {
        STACKSYM_ADDR_VIRT => Ok(Input::VirtAddrs(VirtAddr::from_raw_slice(addrs))),
        STACKSYM_ADDR_FILE_OFFSET => Ok(Input::FileOffsets(FileOffset::from_raw_slice(addrs))),
        other => Err(CError::invalid(format!(
            "address kind {other} is neither STACKSYM_ADDR_VIRT nor STACKSYM_ADDR_FILE_OFFSET"
        ))),
    }
}

/// The common body of the symbolize calls: checks the pointers, runs `symbolize` and hands
/// the block out through `out`.
///
/// # Safety
/// As each caller's contract: `symbolizer` NULL or live, `addrs` NULL or `len` values,
/// `out` NULL or writable.
unsafe fn symbolize_into(
    symbolizer: *const stacksym_symbolizer,
    addrs: *const u64,
    len: usize,
    out: *mut *mut stacksym_syms,
    symbolize: impl FnOnce(&stacksym_symbolizer, &[u64]) -> Result<Symbols, CError>,
) -> stacksym_err {
    guard(|| {
        // SAFETY: by the caller's contract, NULL (refused) or writable.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: by the caller's contract, NULL (refused) or a live handle.
        let handle = unsafe { handle(symbolizer) }?;
        // SAFETY: by the caller's contract, `len` values at `addrs`.
        let addrs = unsafe { slice(addrs, len, "addrs") }?;
        let symbols = symbolize(handle, addrs)?;
        *out = syms_block(&symbols, addrs, handle.demangle)?;
        Ok(())
    })
}

/// Symbolizes `len` addresses of the ELF file at `path` (an executable, a shared library,
/// a debug file), given as `kind` (`STACKSYM_ADDR_VIRT` or `STACKSYM_ADDR_FILE_OFFSET`).
/// On success `*out` holds one answer per address (free it with stacksym_syms_free());
/// on failure `*out` is NULL.
///
/// Pointers: `symbolizer` is a live handle; `path` a NUL-terminated string; `addrs` points to `len`
/// values (or is NULL with `len` 0); `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_symbolize_elf(
    symbolizer: *const stacksym_symbolizer,
    path: *const c_char,
    kind: stacksym_addr_kind,
    addrs: *const u64,
    len: usize,
    out: *mut *mut stacksym_syms,
) -> stacksym_err {
    let symbolize = |handle: &stacksym_symbolizer, addrs: &[u64]| -> Result<Symbols, CError> {
        // SAFETY: by the contract, `path` is NULL (refused) or NUL-terminated.
        let path = unsafe { crate::path(path, "path") }?;
        Ok(handle
            .inner
            .symbolize(&Source::Elf { path }, elf_input(kind, addrs)?)?)
    };
    // SAFETY: the caller's contract is symbolize_into's.
    unsafe { symbolize_into(symbolizer, addrs, len, out, symbolize) }
}

/// Symbolizes `len` addresses of the file with this GNU build-id (`build_id_len` bytes),
/// found in the debug dirs (`.build-id/xx/rest`, else `rest.debug`), given as `kind`. A debug
/// file takes virtual addresses only. Results and failure as stacksym_symbolize_elf().
///
/// Pointers: `symbolizer` is a live handle; `build_id` points to `build_id_len` bytes; `addrs` to
/// `len` values (or NULL with `len` 0); `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_symbolize_build_id(
    symbolizer: *const stacksym_symbolizer,
    build_id: *const u8,
    build_id_len: usize,
    kind: stacksym_addr_kind,
    addrs: *const u64,
    len: usize,
    out: *mut *mut stacksym_syms,
) -> stacksym_err {
    let symbolize = |handle: &stacksym_symbolizer, addrs: &[u64]| -> Result<Symbols, CError> {
        // SAFETY: by the contract, `build_id_len` bytes at `build_id`.
        let build_id = unsafe { slice(build_id, build_id_len, "build_id") }?;
        if build_id.is_empty() {
            return Err(CError::invalid("the build-id is empty"));
        }
        Ok(handle
            .inner
            .symbolize(&Source::BuildId { build_id }, elf_input(kind, addrs)?)?)
    };
    // SAFETY: the caller's contract is symbolize_into's.
    unsafe { symbolize_into(symbolizer, addrs, len, out, symbolize) }
}

/// Symbolizes `len` absolute addresses of the live process `pid` (a host pid; a process in
/// a container gets its own files, opened through `/proc/PID/root`). Its maps are read and
/// cached per process life. Results and failure as stacksym_symbolize_elf();
/// `STACKSYM_ERR_PROCESS_GONE` when the process does not exist (any more).
///
/// Pointers: `symbolizer` is a live handle; `addrs` points to `len` values (or is NULL with `len`
/// 0); `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_symbolize_process(
    symbolizer: *const stacksym_symbolizer,
    pid: u32,
    addrs: *const u64,
    len: usize,
    out: *mut *mut stacksym_syms,
) -> stacksym_err {
    let symbolize = |handle: &stacksym_symbolizer, addrs: &[u64]| -> Result<Symbols, CError> {
        let process = Process::new(pid);
        Ok(handle.inner.symbolize(
            &Source::process(&process),
            Input::AbsAddrs(AbsAddr::from_raw_slice(addrs)),
        )?)
    };
    // SAFETY: the caller's contract is symbolize_into's.
    unsafe { symbolize_into(symbolizer, addrs, len, out, symbolize) }
}

/// Symbolizes `len` kernel addresses through `kernel` (NULL: the running kernel's
/// `/proc/kallsyms` alone). Module addresses are named `[NAME]` in `module`, as perf names
/// them. Results and failure as stacksym_symbolize_elf().
///
/// Pointers: `symbolizer` is a live handle; `kernel` NULL or valid, its strings NULL or
/// NUL-terminated; `addrs` points to `len` values (or is NULL with `len` 0); `out` is a
/// valid pointer.
#[no_mangle]
pub unsafe extern "C" fn stacksym_symbolize_kernel(
    symbolizer: *const stacksym_symbolizer,
    kernel: *const stacksym_kernel_source,
    addrs: *const u64,
    len: usize,
    out: *mut *mut stacksym_syms,
) -> stacksym_err {
    let symbolize = |handle: &stacksym_symbolizer, addrs: &[u64]| -> Result<Symbols, CError> {
        // SAFETY: by the contract, `kernel` is NULL or valid with valid strings.
        let kernel = unsafe { handle.kernel_paths(kernel) }?;
        Ok(handle.inner.symbolize(
            &Source::Kernel(kernel.source()),
            Input::AbsAddrs(AbsAddr::from_raw_slice(addrs)),
        )?)
    };
    // SAFETY: the caller's contract is symbolize_into's.
    unsafe { symbolize_into(symbolizer, addrs, len, out, symbolize) }
}

/// Symbolizes a stack that mixes kernel and user addresses of process `pid`, as perf
/// samples and bpftrace's `kstack`/`ustack` give them: addresses with the top bit set go to
/// `kernel` (NULL: none, and they answer `STACKSYM_NO_KERNEL_SOURCE`), the others to the
/// process. Results and failure as stacksym_symbolize_elf().
///
/// Pointers: as stacksym_symbolize_kernel().
#[no_mangle]
pub unsafe extern "C" fn stacksym_symbolize_stack(
    symbolizer: *const stacksym_symbolizer,
    pid: u32,
    kernel: *const stacksym_kernel_source,
    addrs: *const u64,
    len: usize,
    out: *mut *mut stacksym_syms,
) -> stacksym_err {
    let symbolize = |handle: &stacksym_symbolizer, addrs: &[u64]| -> Result<Symbols, CError> {
        let process = Process::new(pid);
        let paths = if kernel.is_null() {
            None
        } else {
            // SAFETY: by the contract, `kernel` is valid with valid strings.
            Some(unsafe { handle.kernel_paths(kernel) }?)
        };
        let source = Source::Stack {
            process: &process,
            kernel: paths.as_ref().map(|p| p.source()),
        };
        Ok(handle
            .inner
            .symbolize(&source, Input::AbsAddrs(AbsAddr::from_raw_slice(addrs)))?)
    };
    // SAFETY: the caller's contract is symbolize_into's.
    unsafe { symbolize_into(symbolizer, addrs, len, out, symbolize) }
}

/// Frees the result of a `stacksym_symbolize_*` call (NULL is ignored).
///
/// Pointers: `syms` is NULL or a result of a `stacksym_symbolize_*` call, not freed before.
#[no_mangle]
pub unsafe extern "C" fn stacksym_syms_free(syms: *mut stacksym_syms) {
    // SAFETY: by the contract, NULL or a block `Block::finish` handed out, freed once.
    unsafe { free_block(syms) }
}

/// The name of an address kind ("STACKSYM_ADDR_VIRT"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_addr_kind_name(kind: stacksym_addr_kind) -> *const c_char {
    name_of(
        kind,
        &[
            (STACKSYM_ADDR_VIRT, c"STACKSYM_ADDR_VIRT"),
            (STACKSYM_ADDR_FILE_OFFSET, c"STACKSYM_ADDR_FILE_OFFSET"),
        ],
    )
}

/// The name of a not-found reason (or STACKSYM_FOUND) ("STACKSYM_FOUND"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_reason_name(reason: stacksym_reason) -> *const c_char {
    name_of(
        reason,
        &[
            (STACKSYM_FOUND, c"STACKSYM_FOUND"),
            (STACKSYM_NO_SYMBOL, c"STACKSYM_NO_SYMBOL"),
            (STACKSYM_UNMAPPED, c"STACKSYM_UNMAPPED"),
            (STACKSYM_NOT_IN_FILE, c"STACKSYM_NOT_IN_FILE"),
            (STACKSYM_FILE_ERROR, c"STACKSYM_FILE_ERROR"),
            (
                STACKSYM_KERNEL_ADDRS_HIDDEN,
                c"STACKSYM_KERNEL_ADDRS_HIDDEN",
            ),
            (STACKSYM_NO_KERNEL_SOURCE, c"STACKSYM_NO_KERNEL_SOURCE"),
            (STACKSYM_NOT_FOUND_OTHER, c"STACKSYM_NOT_FOUND_OTHER"),
        ],
    )
}

/// The name of a name origin ("STACKSYM_ORIGIN_NONE"), a static string; "unknown" for a value this
/// library does not know.
#[no_mangle]
pub extern "C" fn stacksym_origin_name(origin: stacksym_origin) -> *const c_char {
    name_of(
        origin,
        &[
            (STACKSYM_ORIGIN_NONE, c"STACKSYM_ORIGIN_NONE"),
            (STACKSYM_ORIGIN_SYMTAB, c"STACKSYM_ORIGIN_SYMTAB"),
            (STACKSYM_ORIGIN_DYNSYM, c"STACKSYM_ORIGIN_DYNSYM"),
            (STACKSYM_ORIGIN_PLT, c"STACKSYM_ORIGIN_PLT"),
            (STACKSYM_ORIGIN_DWARF, c"STACKSYM_ORIGIN_DWARF"),
            (STACKSYM_ORIGIN_KALLSYMS, c"STACKSYM_ORIGIN_KALLSYMS"),
            (STACKSYM_ORIGIN_PERF_MAP, c"STACKSYM_ORIGIN_PERF_MAP"),
            (STACKSYM_ORIGIN_OTHER, c"STACKSYM_ORIGIN_OTHER"),
            (STACKSYM_ORIGIN_GO_TABLE, c"STACKSYM_ORIGIN_GO_TABLE"),
            (STACKSYM_ORIGIN_JIT_DUMP, c"STACKSYM_ORIGIN_JIT_DUMP"),
        ],
    )
}
