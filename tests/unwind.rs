//! The unwinder on real code: this test process unwinds its own stack (registers read at a
//! known point, memory read live through `process_vm_readv`, and as a copied stack like
//! perf's) through the CFI of the test binary, libc and libgcc, and the return addresses
//! are compared with those libgcc's own unwinder (`_Unwind_Backtrace`, independent of
//! stacksym) finds from the same point. Then the frames are symbolized through the
//! symbolizer whose cached files the unwinder shares.

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::ffi::c_void;

use stacksym::process::Process;
use stacksym::unwind::{
    Memory, Modules, ProcessMemory, Recovery, Registers, RegsX86_64, StackCopy, StopReason,
    UnwindCache, Unwinder,
};
use stacksym::{AbsAddr, Input, Source, Symbolizer};

type TraceFn = extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> i32;

extern "C" {
    fn _Unwind_Backtrace(trace: TraceFn, arg: *mut c_void) -> i32;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
}

extern "C" fn collect(ctx: *mut c_void, arg: *mut c_void) -> i32 {
    // SAFETY: `arg` is the `Vec<u64>` `reference_return_addresses` passed, alive for the
    // whole `_Unwind_Backtrace` call; `ctx` is the context libgcc hands its callback.
    let ips = unsafe { &mut *arg.cast::<Vec<u64>>() };
    ips.push(unsafe { _Unwind_GetIP(ctx) } as u64);
    0
}

/// The return addresses libgcc finds from here (its own frames first).
#[inline(never)]
fn reference_return_addresses() -> Vec<u64> {
    let mut ips: Vec<u64> = Vec::new();
    // SAFETY: `collect` only pushes to the vector behind `arg`.
    unsafe { _Unwind_Backtrace(collect, (&mut ips as *mut Vec<u64>).cast()) };
    ips
}

/// Reads the registers at a point in this function, asks libgcc for the return addresses
/// from here, and hands both to `check` while this frame (and its callers) are still on the
/// stack.
#[inline(never)]
fn capture(check: &dyn Fn(RegsX86_64, &[u64])) {
    let (rip, rsp, rbp): (u64, u64, u64);
    // SAFETY: reads three registers into outputs; no memory is touched.
    unsafe {
        std::arch::asm!(
            "lea {rip}, [rip]",
            "mov {rsp}, rsp",
            "mov {rbp}, rbp",
            rip = out(reg) rip,
            rsp = out(reg) rsp,
            rbp = out(reg) rbp,
        );
    }
    let reference = reference_return_addresses();
    check(RegsX86_64::new(rip, rsp, rbp), &reference);
    std::hint::black_box(&reference);
}

#[inline(never)]
fn level3(check: &dyn Fn(RegsX86_64, &[u64])) {
    capture(check);
    std::hint::black_box(());
}

#[inline(never)]
fn level2(check: &dyn Fn(RegsX86_64, &[u64])) {
    level3(check);
    std::hint::black_box(());
}

#[inline(never)]
fn level1(check: &dyn Fn(RegsX86_64, &[u64])) {
    level2(check);
    std::hint::black_box(());
}

fn own_modules(symbolizer: &Symbolizer) -> Modules {
    let process = Process::new(std::process::id());
    let maps = process.read_maps().expect("own maps");
    Modules::from_process_maps(&maps, None, |mapping| {
        let path = process.open_path(mapping)?;
        symbolizer.elf_file(&path).ok()
    })
}

/// Our return addresses from `capture`'s caller on must be libgcc's from the same caller
/// (libgcc's list starts inside `reference_return_addresses`).
fn check_against_libgcc(frames: &[u64], reference: &[u64]) {
    let caller = frames[1];
    let at = reference
        .iter()
        .position(|&ip| ip == caller)
        .unwrap_or_else(|| panic!("{caller:#x} (capture's return address) not in {reference:x?}"));
    // libgcc reports the outermost frame's undefined return address as a last 0.
    let end = reference
        .iter()
        .rposition(|&ip| ip != 0)
        .map_or(0, |i| i + 1);
    let expected = &reference[at..end.max(at)];
    let ours = &frames[1..];
    assert!(expected.len() >= 4, "libgcc {expected:x?}");
    assert_eq!(ours, expected, "ours vs libgcc");
}

/// The names of the frames, through the symbolizer (callers at return address − 1).
fn names(
    symbolizer: &Symbolizer,
    modules: &Modules,
    frames: &[stacksym::unwind::Frame],
) -> Vec<String> {
    frames
        .iter()
        .map(|frame| {
            let addr = frame.lookup_addr();
            let Some(module) = modules.find(addr) else {
                return "[unknown]".to_string();
            };
            let Some(elf) = modules.elf(module) else {
                return "[unknown]".to_string();
            };
            let path = elf.path();
            let offset = module.file_offset_of(addr).expect("found in this module").0;
            let symbols = symbolizer
                .symbolize(
                    &Source::Elf { path },
                    Input::FileOffsets(stacksym::FileOffset::from_raw_slice(&[offset])),
                )
                .expect("a mapped file symbolizes");
            symbols
                .get(0)
                .map_or("[unknown]".to_string(), |sym| sym.name.to_string())
        })
        .collect()
}

#[test]
fn own_stack_matches_libgcc_live_and_copied_and_symbolizes() {
    let symbolizer = Symbolizer::builder().source_lines(false).build();
    let unwinder = Unwinder::new(own_modules(&symbolizer));
    let check = |regs: RegsX86_64, reference: &[u64]| {
        let memory = ProcessMemory::new(std::process::id());
        let mut cache = UnwindCache::new();
        let live = unwinder.unwind(&regs, &memory, &mut cache);
        let addrs: Vec<u64> = live.frames.iter().map(|f| f.addr.0).collect();
        check_against_libgcc(&addrs, reference);
        assert_eq!(live.stop, StopReason::Root, "{live:?}");
        assert!(live.frames[1..].iter().all(|f| f.is_return_address()));
        assert!(
            live.frames[1..]
                .iter()
                .all(|f| f.recovered == Recovery::Cfi),
            "{live:x?}"
        );

        // The same from a copy of the stack, as perf records it (all of it here).
        let sp = regs.sp().expect("captured");
        let mut copy = Vec::new();
        let mut page = [0u8; 4096];
        while copy.len() < (1 << 20)
            && memory.read_exact(AbsAddr(sp + copy.len() as u64), &mut page)
        {
            copy.extend_from_slice(&page);
        }
        let copied = unwinder.unwind(
            &regs,
            &StackCopy::new(AbsAddr(sp), &copy),
            &mut UnwindCache::new(),
        );
        assert_eq!(copied, live);
        // A copy cut short stops with the read it could not make.
        let short = unwinder.unwind(&regs, &StackCopy::new(AbsAddr(sp), &copy[..64]), &mut cache);
        assert!(
            matches!(short.stop, StopReason::MemoryUnreadable { .. }),
            "{short:?}"
        );
        assert!(memory.read_u64(AbsAddr(sp)).is_some());

        let names = names(&symbolizer, unwinder.modules(), &live.frames);
        let chain: Vec<&str> = names.iter().map(String::as_str).collect();
        let find = |name: &str| {
            chain
                .iter()
                .position(|n| n.contains(name))
                .unwrap_or_else(|| panic!("{name} not in {chain:?}"))
        };
        assert_eq!(find("capture"), 0, "{chain:?}");
        assert!(find("level3") < find("level2") && find("level2") < find("level1"));
        assert!(
            chain.last().is_some_and(|n| n.contains("clone")),
            "{chain:?}"
        );
    };
    level1(&check);
}
