//! Stack unwinding: from a thread's registers and its stack memory to the chain of return
//! addresses, through DWARF CFI (`.eh_frame`, `.debug_frame`) or frame pointers, on x86_64
//! and aarch64.
//!
//! Inputs: the registers ([`RegsX86_64`], [`RegsAarch64`]; from a perf sample with
//! `from_perf`), the memory ([`StackCopy`]: a copy of the stack from the stack pointer up, as
//! perf and eBPF profilers capture it; [`ProcessMemory`]: a live process), and the
//! [`Modules`] mapped in the address space (each with its `Arc<ElfFile>`, the same one the
//! [`crate::Symbolizer`] caches: [`crate::Symbolizer::elf_file`]). Output: a [`Stack`] of
//! [`Frame`]s, the instruction pointer first and then the return addresses (look each up at
//! [`Frame::lookup_addr`]: `addr - 1` for a return address, the address itself for the
//! first frame, a signal trampoline and the code a signal interrupted; [`FrameKind`]), each
//! saying how it was recovered, and the [`StopReason`].
//!
//! Each frame's CFI row is compiled into a small `Copy` rule per architecture
//! (`RuleX86_64`, `RuleAarch64`) and kept in the caller's [`UnwindCache`] (bounded,
//! direct-mapped, keyed by file and address); rows the rules do not cover (expressions that
//! read memory, signal trampolines that restore every register) are evaluated in full each
//! time. Work is bounded on any input: [`UnwindOptions::max_frames`] frames, a stack pointer
//! that must grow, expressions of at most `expr::MAX_STEPS` operations.
//!
//! ```
//! use std::sync::Arc;
//! use stacksym::elf::ElfFile;
//! use stacksym::unwind::{Modules, RegsX86_64, StackCopy, StopReason, UnwindCache, Unwinder};
//! use stacksym::{AbsAddr, FileOffset};
//! # fn main() -> stacksym::Result<()> {
//! let elf = Arc::new(ElfFile::open("testdata/bin/c-nopie")?);
//! let mut modules = Modules::new();
//! modules.add(AbsAddr(0x400000)..AbsAddr(0x500000), FileOffset(0), elf);
//! let unwinder = Unwinder::new(modules);
//! // A frame-pointer chain on a copied stack: rbp → [saved rbp, return address].
//! let mut stack = vec![0u8; 32];
//! stack[16..24].copy_from_slice(&0u64.to_le_bytes()); // the outermost frame's rbp
//! stack[24..32].copy_from_slice(&0x401234u64.to_le_bytes());
//! let regs = RegsX86_64::new(0x401000, 0x7ff0, 0x8000);
//! let mut cache = UnwindCache::new();
//! let result = unwinder.unwind_frame_pointers(&regs, &StackCopy::new(AbsAddr(0x7ff0), &stack), &mut cache);
//! assert_eq!(result.frames.len(), 2);
//! assert_eq!(result.frames[1].kind, stacksym::unwind::FrameKind::ReturnAddress);
//! # Ok(())
//! # }
//! ```

mod aarch64;
mod arch;
mod cfi;
mod expr;
mod go;
mod jit;
mod memory;
mod module;
mod omitted_lsda;
mod prologue;
mod regs;
mod table;
mod x86_64;

pub use aarch64::RegsAarch64;
pub use arch::{UnwindArch, UnwindProblem};
pub use cfi::MODULE_RULE_SLOTS;
pub use memory::{Memory, ProcessMemory, StackCopy};
pub use module::{FileCfi, Module, Modules};
pub use regs::{Arch, Registers};
pub use x86_64::RegsX86_64;

use crate::addr::{AbsAddr, VirtAddr};

use arch::{apply_row, Applied};
use cfi::CfiContext;
use go::GoRuntimeFn;
use table::RuleTable;

/// How a frame's address was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Recovery {
    /// The instruction pointer of the registers given (the first frame).
    Registers,
    /// The CFI of the callee's code.
    Cfi,
    /// The callee's frame pointer chain (frame-pointer mode, or a callee without CFI).
    FramePointer,
    /// Where the call left the return address, before the callee saved anything: the link
    /// register (aarch64: the callee had not saved it, a leaf), or on x86_64 the word at the
    /// stack pointer, above what the callee pushed, when the first frame stops in the short
    /// prologue or epilogue of code without CFI that the unwinder decodes (a library's
    /// `_fini` called by the loader's `_dl_fini`: `sub $8, %rsp` ... `add $8, %rsp; ret`).
    LinkRegister,
    /// The registers the kernel saved when it delivered a signal (a trampoline known by its
    /// code, without CFI).
    SignalContext,
    /// A Go binary's own table (`.gopclntab`): the callee's stack-pointer delta at its PC
    /// (Go code has no CFI), which gives the return address's slot exactly, also in a
    /// prologue or a leaf that keeps no frame pointer (x86_64).
    GoTable,
    /// Across one of cgo's stack switches, from what the Go runtime saved where it switched
    /// (x86_64, Go 1.17+): a Go function called from C (`runtime.cgocallback`, on the
    /// goroutine's stack) to its C caller on the thread's system stack (through
    /// `g.m.g0.sched.sp`, else the frame pointer), and C called from Go
    /// (`runtime.asmcgocall`, on the system stack) to its Go caller on the goroutine's
    /// stack (through the goroutine and stack depth asmcgocall stored). The stack pointer
    /// may go down at such a step. Where the system stack cannot be read (a perf sample's
    /// copy of the goroutine's stack), the walk follows the goroutine's stack instead, as the
    /// Go runtime's traceback does, without the C frames (`Recovery::GoTable`, through
    /// `runtime.systemstack_switch`, an exact address).
    GoStackSwitch,
}

/// Why the walk stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The outermost frame: the CFI says the return address is undefined (`_start`,
    /// `clone`'s thread start), or the frame-pointer chain or return address ends in 0.
    Root,
    /// Memory the next step needed could not be read (outside the stack copy, unmapped).
    MemoryUnreadable {
        /// The address read.
        addr: AbsAddr,
    },
    /// No unwind information for this address: no module is mapped there, or its file has
    /// no CFI for it and there is no frame pointer to follow.
    NoUnwindInfo {
        /// The address looked up.
        addr: AbsAddr,
    },
    /// The frame pointer chain could not be followed (none, or it points below the stack
    /// pointer or is misaligned).
    NoFramePointer,
    /// The unwind information at this address could not be used.
    InvalidUnwindInfo {
        /// The instruction pointer of the frame.
        addr: AbsAddr,
        /// What was wrong.
        what: UnwindProblem,
    },
    /// The step made no progress (the stack pointer went down, or nothing changed): a loop.
    NoProgress,
    /// [`UnwindOptions::max_frames`] frames were found.
    DepthLimit,
}

/// What a frame's address is, which decides where to look it up ([`Frame::lookup_addr`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// An exact instruction pointer: the registers' own (the first frame), or where a
    /// signal interrupted the code (the frame after a [`FrameKind::SignalTrampoline`]).
    /// Looked up at the address itself.
    InstructionPointer,
    /// A return address: the call is the instruction before it (which may be the last of
    /// its function), so it is looked up at `addr - 1`, as perf and gdb do.
    ReturnAddress,
    /// The signal trampoline a signal handler returns to (glibc's `__restore_rt`, the
    /// vDSO's `__kernel_rt_sigreturn`): a return address, but one that points at the
    /// trampoline's first instruction, not after a call, so it is looked up at the address
    /// itself (at `addr - 1` it would name whatever precedes the trampoline). gdb prints it
    /// as `<signal handler called>`.
    SignalTrampoline,
}

/// One frame of a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// The instruction pointer (first frame, or where a signal interrupted the code), or a
    /// return address.
    pub addr: AbsAddr,
    /// What `addr` is: where to look it up.
    pub kind: FrameKind,
    /// How `addr` was found.
    pub recovered: Recovery,
}

impl Frame {
    /// The address to symbolize: `addr - 1` for a return address (inside the call
    /// instruction, which may be the last of its function), else `addr` (an exact
    /// instruction pointer, a signal trampoline). This is what perf prints for caller
    /// frames.
    pub fn lookup_addr(&self) -> AbsAddr {
        match self.kind {
            FrameKind::ReturnAddress => self.addr.wrapping_sub(1),
            FrameKind::InstructionPointer | FrameKind::SignalTrampoline => self.addr,
        }
    }

    /// Whether `addr` is a return address ([`FrameKind::ReturnAddress`] or
    /// [`FrameKind::SignalTrampoline`]), not an exact instruction pointer.
    pub fn is_return_address(&self) -> bool {
        self.kind != FrameKind::InstructionPointer
    }
}

/// The result of one unwind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    /// The frames, innermost first.
    pub frames: Vec<Frame>,
    /// Why the walk stopped after the last frame.
    pub stop: StopReason,
}

/// How to unwind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnwindOptions {
    /// Most frames returned (default 256; perf's default `max-stack` is 127).
    pub max_frames: usize,
    /// Follow the frame pointer where a frame's code has no CFI (default: on).
    pub frame_pointer_fallback: bool,
}

impl Default for UnwindOptions {
    fn default() -> Self {
        UnwindOptions {
            max_frames: 256,
            frame_pointer_fallback: true,
        }
    }
}

/// Compiled rules of recently seen addresses (and gimli's evaluation state), for one thread
/// of unwinding: a direct-mapped table keyed by (address space, absolute address), so that a
/// warm lookup is a hash and a compare, before any module is looked up. The table starts at
/// [`UnwindCache::INITIAL_SLOTS`] slots and doubles as it fills, up to its capacity
/// ([`UnwindCache::DEFAULT_SLOTS`] by default), so a cache made for a single stack costs
/// little. Keep one per thread and reuse it; it may serve several [`Unwinder`]s (each has its
/// own address-space tag, renewed when its modules change). A miss asks the file's own table
/// of compiled rules (shared by every cache, thread and process mapping the file, bounded:
/// [`MODULE_RULE_SLOTS`]) before it parses CFI.
pub struct UnwindCache<A: UnwindArch> {
    table: RuleTable<A::Rule>,
    ctx: Box<CfiContext>,
    hits: u64,
    misses: u64,
}

impl<A: UnwindArch> std::fmt::Debug for UnwindCache<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnwindCache")
            .field("capacity", &self.table.capacity())
            .field("slots", &self.table.len())
            .field("hits", &self.hits)
            .field("misses", &self.misses)
            .finish()
    }
}

impl<A: UnwindArch> Default for UnwindCache<A> {
    fn default() -> Self {
        UnwindCache::new()
    }
}

impl<A: UnwindArch> UnwindCache<A> {
    /// Most slots of a default cache (a power of two).
    pub const DEFAULT_SLOTS: usize = 4096;
    /// Slots allocated on first use: enough for one stack.
    pub const INITIAL_SLOTS: usize = RuleTable::<A::Rule>::INITIAL_SLOTS;

    /// An empty cache of at most [`UnwindCache::DEFAULT_SLOTS`] slots.
    pub fn new() -> Self {
        Self::with_slots(Self::DEFAULT_SLOTS)
    }

    /// An empty cache of at most `slots` slots (rounded up to a power of two, at least 1).
    pub fn with_slots(slots: usize) -> Self {
        UnwindCache {
            table: RuleTable::new(slots),
            ctx: Box::new(CfiContext::new()),
            hits: 0,
            misses: 0,
        }
    }

    /// Lookups answered from the cache, and lookups that were not (answered from the
    /// file's rules, or by parsing its CFI).
    pub fn stats(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }

    fn get(&mut self, space: u64, addr: u64) -> Option<Option<A::Rule>> {
        let found = self.table.get(space, addr);
        if found.is_some() {
            self.hits += 1;
        }
        found
    }

    fn insert(&mut self, space: u64, addr: u64, rule: Option<A::Rule>) {
        self.misses += 1;
        self.table.insert(space, addr, rule);
    }
}

/// The next address-space tag (0 marks an empty cache slot).
fn next_space_tag() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Unwinds stacks of one address space.
#[derive(Debug)]
pub struct Unwinder {
    modules: Modules,
    options: UnwindOptions,
    /// This address space's tag in [`UnwindCache`]s; a new one whenever the modules may
    /// have changed (a u64 counter: never reused).
    space: u64,
}

/// How one step went.
enum Step {
    /// The registers are the caller's.
    Caller {
        recovery: Recovery,
        /// The frame left was a signal trampoline: the caller's address is exact.
        signal: bool,
        /// The caller's address is exact, though no signal: the fake return address
        /// `runtime.systemstack_switch` the Go runtime leaves on a goroutine's stack.
        exact: bool,
        /// The caller is on another stack (cgo's switches): its stack pointer may be lower.
        switched: bool,
    },
    Stop(StopReason),
}

impl Step {
    /// An ordinary caller, at a return address on the same stack.
    fn caller(recovery: Recovery) -> Step {
        Step::Caller {
            recovery,
            signal: false,
            exact: false,
            switched: false,
        }
    }
}

impl Unwinder {
    /// An unwinder over `modules` with the default options.
    pub fn new(modules: Modules) -> Unwinder {
        Unwinder::with_options(modules, UnwindOptions::default())
    }

    /// An unwinder over `modules`.
    pub fn with_options(modules: Modules, options: UnwindOptions) -> Unwinder {
        Unwinder {
            modules,
            options,
            space: next_space_tag(),
        }
    }

    /// The modules.
    pub fn modules(&self) -> &Modules {
        &self.modules
    }

    /// The modules, to add mappings (perf's MMAP records arrive between samples).
    pub fn modules_mut(&mut self) -> &mut Modules {
        // Rules cached for the old mappings must not answer for the new ones.
        self.space = next_space_tag();
        &mut self.modules
    }

    /// Unwinds with CFI, falling back to the frame pointer for frames without CFI (unless
    /// [`UnwindOptions::frame_pointer_fallback`] is off).
    pub fn unwind<A: UnwindArch, M: Memory + ?Sized>(
        &self,
        regs: &A,
        memory: &M,
        cache: &mut UnwindCache<A>,
    ) -> Stack {
        self.walk(regs, memory, cache, false)
    }

    /// Unwinds along the frame-pointer chain only, as bpftrace, bcc and
    /// `perf --call-graph fp` do (no CFI read).
    pub fn unwind_frame_pointers<A: UnwindArch, M: Memory + ?Sized>(
        &self,
        regs: &A,
        memory: &M,
        cache: &mut UnwindCache<A>,
    ) -> Stack {
        self.walk(regs, memory, cache, true)
    }

    fn walk<A: UnwindArch, M: Memory + ?Sized>(
        &self,
        regs: &A,
        memory: &M,
        cache: &mut UnwindCache<A>,
        frame_pointers_only: bool,
    ) -> Stack {
        let (stack, forgot) = self.walk_once(regs, memory, cache, frame_pointers_only, false);
        // A frame's rule needed a register the walk had left unknown: compiled rules leave
        // the callee-saved registers their rows restore unknown (see arch.rs). Walk again,
        // those rows evaluated in full.
        let lost = matches!(
            stack.stop,
            StopReason::InvalidUnwindInfo {
                what: UnwindProblem::UnknownRegister(_)
                    | UnwindProblem::Expression(expr::ExprError::UnknownRegister(_)),
                ..
            }
        );
        if lost && forgot {
            log::trace!("{:?}: walking again, saved registers restored", stack.stop);
            return self.walk_once(regs, memory, cache, false, true).0;
        }
        stack
    }

    /// One walk; `full`: rows whose compiled rule forgets registers are evaluated in full.
    /// Also says whether a compiled rule forgot registers.
    fn walk_once<A: UnwindArch, M: Memory + ?Sized>(
        &self,
        regs: &A,
        memory: &M,
        cache: &mut UnwindCache<A>,
        frame_pointers_only: bool,
        full: bool,
    ) -> (Stack, bool) {
        let mut forgot = false;
        let mut regs = regs.clone();
        let mut frames = Vec::with_capacity(32.min(self.options.max_frames.max(1)));
        frames.push(Frame {
            addr: AbsAddr(regs.ip()),
            kind: FrameKind::InstructionPointer,
            recovered: Recovery::Registers,
        });
        let mut exact = true;
        let stop = loop {
            if frames.len() >= self.options.max_frames {
                break StopReason::DepthLimit;
            }
            let (ip, sp) = (regs.ip(), regs.sp());
            let lookup = AbsAddr(if exact { ip } else { ip.wrapping_sub(1) });
            let step = if frame_pointers_only {
                match regs.frame_pointer_step(memory) {
                    Ok(()) => Step::caller(Recovery::FramePointer),
                    Err(stop) => Step::Stop(stop),
                }
            } else {
                let (step, forgot_here) = self.cfi_step(&mut regs, lookup, memory, cache, full);
                forgot |= forgot_here;
                step
            };
            let (recovery, signal, exact_caller, switched) = match step {
                Step::Caller {
                    recovery,
                    signal,
                    exact,
                    switched,
                } => (recovery, signal, exact, switched),
                Step::Stop(stop) => break stop,
            };
            let new_ip = regs.ip();
            if new_ip == 0 {
                break StopReason::Root;
            }
            let new_sp = regs.sp();
            // The stack grows down, so a caller's stack pointer is above its callee's. A
            // signal handler may run on another stack (sigaltstack), and cgo's switches go
            // between a goroutine's stack and the thread's, so those frames are exempt;
            // nothing changing at all is a loop in any case.
            let went_down = matches!((sp, new_sp), (Some(old), Some(new)) if new < old);
            if (went_down && !signal && !switched) || (new_ip == ip && new_sp == sp) {
                break StopReason::NoProgress;
            }
            if signal {
                // The frame just left returned into a signal trampoline: its address is the
                // trampoline's first instruction, not a call's return address.
                if let Some(trampoline) = frames.last_mut() {
                    if trampoline.kind == FrameKind::ReturnAddress {
                        trampoline.kind = FrameKind::SignalTrampoline;
                    }
                }
            }
            frames.push(Frame {
                addr: AbsAddr(new_ip),
                kind: if signal || exact_caller {
                    FrameKind::InstructionPointer
                } else {
                    FrameKind::ReturnAddress
                },
                recovered: recovery,
            });
            exact = signal || exact_caller;
        };
        (Stack { frames, stop }, forgot)
    }

    /// The module mapped at the absolute address `addr`, its CFI and the ELF virtual
    /// address of `addr`.
    fn locate(&self, addr: AbsAddr) -> Option<(&Module, &cfi::ModuleCfi, VirtAddr)> {
        let module = self.modules.find(addr)?;
        let cfi = self.modules.cfi(module)?;
        Some((module, cfi, module.virt_addr(cfi.elf(), addr)?))
    }

    /// One step by CFI; the frame pointer or a signal frame's ucontext where there is none.
    /// `full`: a rule that restores registers its fast path forgets is evaluated in full;
    /// otherwise such a rule is applied fast, and the second value says that registers were
    /// forgotten (the walk is then done again in full if it needs them).
    fn cfi_step<A: UnwindArch, M: Memory + ?Sized>(
        &self,
        regs: &mut A,
        lookup: AbsAddr,
        memory: &M,
        cache: &mut UnwindCache<A>,
        full: bool,
    ) -> (Step, bool) {
        let ip = AbsAddr(regs.ip());
        match self.compiled_rule(lookup, ip, cache) {
            Err(stop) => (Step::Stop(stop), false),
            Ok(None) => (self.step_without_cfi(regs, lookup, ip, memory), false),
            Ok(Some(rule)) => self.apply_rule(regs, rule, lookup, ip, memory, cache, full),
        }
    }

    /// The compiled rule of `lookup` (`None`: no CFI there), from the cache when it is
    /// there: only a miss looks the module up and compiles its row, cached in the file's
    /// table and the unwinder's. CFI that cannot be read is no CFI when the frame-pointer
    /// fallback is on, else the walk's end.
    fn compiled_rule<A: UnwindArch>(
        &self,
        lookup: AbsAddr,
        ip: AbsAddr,
        cache: &mut UnwindCache<A>,
    ) -> Result<Option<A::Rule>, StopReason> {
        if let Some(rule) = cache.get(self.space, lookup.0) {
            return Ok(rule);
        }
        let rule = match self.locate(lookup) {
            // cgo's stack switches: the Go table's step, not Go's CFI.
            Some((_, cfi, virt)) if cfi.is_go_stack_switch(virt) => None,
            Some((_, cfi, virt)) => match cfi.cached_rule::<A::Rule>(virt) {
                Some(rule) => rule,
                None => match cfi.find_row(virt, &mut cache.ctx, |row| A::compile(row)) {
                    Ok(rule) => {
                        cfi.cache_rule(virt, rule);
                        rule
                    }
                    // CFI that cannot be read at this PC is no CFI: the frame pointer, as
                    // for code without any (libdw and framehop do the same). Not kept in the
                    // file's table, which unwinders without the fallback share.
                    Err(e) if self.options.frame_pointer_fallback => {
                        log::debug!("unwinding at {ip:#x}: {e}; frame pointer instead");
                        None
                    }
                    Err(e) => {
                        log::debug!("unwinding at {ip:#x}: {e}");
                        return Err(StopReason::InvalidUnwindInfo {
                            addr: ip,
                            what: UnwindProblem::MalformedCfi,
                        });
                    }
                },
            },
            None => None,
        };
        cache.insert(self.space, lookup.0, rule);
        Ok(rule)
    }

    /// The step where no CFI covers `lookup`: a signal trampoline known by its code (at the
    /// address itself: the handler returns to its first instruction), x86_64's short
    /// prologues and epilogues, Go's table, else the frame pointer.
    fn step_without_cfi<A: UnwindArch, M: Memory + ?Sized>(
        &self,
        regs: &mut A,
        lookup: AbsAddr,
        ip: AbsAddr,
        memory: &M,
    ) -> Step {
        let Some((module, cfi, _)) = self.locate(lookup) else {
            return self.fallback(regs, memory, lookup);
        };
        let elf = cfi.elf();
        let virt = module.virt_addr(elf, ip);
        let code = virt.map(|virt| elf.code_at(virt, 16)).unwrap_or_default();
        if A::is_sigreturn(&code) {
            return match regs.restore_signal_context(memory) {
                Ok(()) => Step::Caller {
                    recovery: Recovery::SignalContext,
                    signal: true,
                    exact: false,
                    switched: false,
                },
                Err(stop) => Step::Stop(stop),
            };
        }
        // The short prologue or epilogue of x86_64 code without CFI (`.init`, `.fini`,
        // hand-written entry points), in a frame whose registers are exact (the first, or one
        // a signal interrupted: `lookup` is the address itself): the return address is at the
        // stack pointer plus what the code pushed so far (see prologue.rs). The frame pointer
        // would skip the caller: glibc's `_dl_fini` calling libgmp's `_fini`, where framehop
        // finds `_dl_fini` and perf prints garbage (tests/perf_system_wide.rs).
        if lookup == ip && elf.header().machine == object::elf::EM_X86_64.0 {
            let height = virt.and_then(|virt| {
                let start = elf.code_start(virt)?;
                let offset = usize::try_from(virt.offset_from(start)?).ok()?;
                let code = elf.code_at(start, prologue::MAX_PROLOGUE);
                prologue::x86_64_stack_height(&code, offset)
            });
            if let Some(height) = height.and_then(|h| i32::try_from(h).ok()) {
                match regs.go_step(height, memory) {
                    Ok(true) => return Step::caller(Recovery::LinkRegister),
                    Ok(false) => {}
                    Err(stop) => return Step::Stop(stop),
                }
            }
        }
        // Go code: the table's SP delta at the PC, and cgo's stack switches.
        if let Some(go) = cfi.go_table() {
            if let Some(step) = Self::go_step(regs, lookup, memory, module, cfi, go) {
                return step;
            }
        }
        self.fallback(regs, memory, lookup)
    }

    /// Applies the compiled `rule`; a rule compiled to `Full` (or one that forgets registers,
    /// when `full`) is evaluated from its CFI row instead. The second value: registers were
    /// forgotten.
    #[allow(clippy::too_many_arguments)]
    fn apply_rule<A: UnwindArch, M: Memory + ?Sized>(
        &self,
        regs: &mut A,
        rule: A::Rule,
        lookup: AbsAddr,
        ip: AbsAddr,
        memory: &M,
        cache: &mut UnwindCache<A>,
        full: bool,
    ) -> (Step, bool) {
        let forgets = A::restores_others(&rule);
        let applied = match (full, forgets) {
            (true, true) => Ok(Applied::Full),
            (_, _) => regs.apply(rule, memory),
        };
        let forgot = forgets && !full;
        let applied = match applied {
            Ok(Applied::Full) => {
                let Some((_, cfi, virt)) = self.locate(lookup) else {
                    return (
                        Step::Stop(StopReason::NoUnwindInfo { addr: lookup }),
                        forgot,
                    );
                };
                let evaluated =
                    cfi.find_row(virt, &mut cache.ctx, |row| apply_row(regs, row, memory));
                match evaluated {
                    Ok(Some(applied)) => applied,
                    Ok(None) => Err(StopReason::NoUnwindInfo { addr: lookup }),
                    Err(e) => {
                        log::debug!("unwinding at {ip:#x}: {e}");
                        Err(StopReason::InvalidUnwindInfo {
                            addr: ip,
                            what: UnwindProblem::MalformedCfi,
                        })
                    }
                }
            }
            other => other,
        };
        let step = match applied {
            Ok(Applied::Caller { recovery, signal }) => Step::Caller {
                recovery,
                signal,
                exact: false,
                switched: false,
            },
            Ok(Applied::Root) => Step::Stop(StopReason::Root),
            Ok(Applied::Full) => Step::Stop(StopReason::InvalidUnwindInfo {
                addr: ip,
                what: UnwindProblem::UnsupportedRule,
            }),
            Err(stop) => Step::Stop(stop),
        };
        (step, forgot)
    }

    /// One step of Go code by the Go table (`None`: no table entry here, or the
    /// architecture has no Go step; the caller then tries the frame pointer). At cgo's stack
    /// switches, the runtime's saved state (see `go.rs`).
    fn go_step<A: UnwindArch, M: Memory + ?Sized>(
        regs: &mut A,
        lookup: AbsAddr,
        memory: &M,
        module: &Module,
        cfi: &cfi::ModuleCfi,
        go: &crate::gopclntab::GoTable,
    ) -> Option<Step> {
        let elf = cfi.elf();
        let virt = module.virt_addr(elf, lookup)?;
        let delta = match go.sp_delta(virt) {
            Ok(Some(delta)) => delta,
            Ok(None) => return None,
            Err(e) => {
                log::debug!("unwinding at {:#x}: {e}", regs.ip());
                return None;
            }
        };
        let runtime = cfi.go_runtime();
        // Whether an absolute address is in one of the runtime's functions `which`.
        let is = |which: GoRuntimeFn| {
            move |addr: u64| {
                module
                    .virt_addr(elf, AbsAddr(addr))
                    .is_some_and(|virt| runtime.and_then(|r| r.at(virt)) == Some(which))
            }
        };
        let plain = |regs: &mut A| match regs.go_step(delta, memory) {
            Ok(true) => Some(Step::caller(Recovery::GoTable)),
            Ok(false) => None,
            Err(stop) => Some(Step::Stop(stop)),
        };
        // The switches happen at the calls (a return address: `lookup` is `ip - 1`); a frame
        // stopped elsewhere in these functions has its SP delta right.
        let switch = Step::Caller {
            recovery: Recovery::GoStackSwitch,
            signal: false,
            exact: false,
            switched: true,
        };
        match runtime.and_then(|r| r.at(virt)) {
            Some(GoRuntimeFn::Goexit) => Some(Step::Stop(StopReason::Root)),
            // Stopped in morestack (a sample lands there whenever a goroutine grows its
            // stack or is asked to yield): on arm64 the caller's return address is in R3,
            // until morestack's own calls overwrite the link register with an address in
            // itself (then the SP delta's step, as anywhere).
            Some(GoRuntimeFn::Morestack)
                if lookup.0 == regs.ip()
                    && regs
                        .get(A::RA)
                        .is_some_and(|lr| !is(GoRuntimeFn::Morestack)(lr))
                    && regs.morestack_step() =>
            {
                Some(Step::caller(Recovery::GoTable))
            }
            Some(GoRuntimeFn::AsmCgoCall) if lookup.0 != regs.ip() => {
                let in_go = |addr: u64| {
                    module
                        .virt_addr(elf, AbsAddr(addr))
                        .is_some_and(|virt| go::in_go_code(go, virt))
                };
                Some(match go::asmcgocall_step(regs, memory, lookup, in_go) {
                    Ok(()) => switch,
                    Err(stop) => Step::Stop(stop),
                })
            }
            Some(GoRuntimeFn::CgoCallback) if lookup.0 != regs.ip() => {
                // Its calls of needm and dropm are on g0's stack already: the SP delta
                // leads to crosscall2.
                let mut on_g0 = regs.clone();
                if matches!(on_g0.go_step(delta, memory), Ok(true))
                    && is(GoRuntimeFn::Crosscall2)(on_g0.ip().wrapping_sub(1))
                {
                    *regs = on_g0;
                    return Some(Step::caller(Recovery::GoTable));
                }
                match go::cgocallback_step(regs, memory, delta, is(GoRuntimeFn::Crosscall2)) {
                    Ok(true) => return Some(switch),
                    Ok(false) => {}
                    Err(stop) => return Some(Step::Stop(stop)),
                }
                // Along the goroutine's stack, to the fake return address there: an exact
                // address (Go 1.19 stores systemstack_switch's entry, at `addr - 1` the
                // function before it).
                Some(match plain(regs)? {
                    Step::Caller { recovery, .. } => Step::Caller {
                        recovery,
                        signal: false,
                        exact: is(GoRuntimeFn::SystemstackSwitch)(regs.ip()),
                        switched: false,
                    },
                    stop => stop,
                })
            }
            _ => plain(regs),
        }
    }

    /// The frame-pointer step for a frame without CFI, if allowed.
    fn fallback<A: UnwindArch, M: Memory + ?Sized>(
        &self,
        regs: &mut A,
        memory: &M,
        lookup: AbsAddr,
    ) -> Step {
        if !self.options.frame_pointer_fallback {
            return Step::Stop(StopReason::NoUnwindInfo { addr: lookup });
        }
        match regs.frame_pointer_step(memory) {
            Ok(()) => Step::caller(Recovery::FramePointer),
            Err(StopReason::NoFramePointer) => {
                Step::Stop(StopReason::NoUnwindInfo { addr: lookup })
            }
            Err(stop) => Step::Stop(stop),
        }
    }
}

#[cfg(test)]
mod tests;
