//! The embedder's API as issue 27 asks for it: error kinds a caller can match, typed
//! addresses end to end, names for probes with and without a template's return type and with
//! aliases merged, and one call from a live thread's registers to named frames.
//!
//! Binaries: testdata/bin/c-nopie (non-PIE C, .symtab), cpp-O2-g (C++ templates:
//! `stacksym_demo::sum_all<int>`), c-wait (a PIE that blocks in `getchar`, for the live
//! process), libversioned.so; the system libc for aliases (`malloc`'s several names).

mod support;

use std::path::Path;

use stacksym::process::{Normalized, Process};
use stacksym::symbolize::{FindOptions, NamePattern};
use stacksym::unwind::FrameKind;
use stacksym::{AbsAddr, ErrorKind, FileOffset, Input, Source, SymAddr, Symbolizer, VirtAddr};
use support::bin;

#[test]
fn errors_have_kinds_a_caller_can_match() {
    let symbolizer = Symbolizer::builder().build();
    let path = bin("c-nopie");
    let elf = Source::Elf { path: &path };

    // A misuse: absolute addresses are not for a file.
    let err = symbolizer
        .symbolize(&elf, Input::AbsAddrs(&[AbsAddr(0x401000)]))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err}");
    assert_eq!(err.path(), path);

    // No file with this build-id: not found, not "unsupported".
    let err = symbolizer
        .symbolize(
            &Source::BuildId {
                build_id: &[0xde, 0xad, 0xbe, 0xef],
            },
            Input::VirtAddrs(&[VirtAddr(0x1000)]),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");

    // A missing file, a file that is not ELF.
    let missing = Path::new("/nonexistent/stacksym/file");
    let err = symbolizer
        .symbolize(
            &Source::Elf { path: missing },
            Input::VirtAddrs(&[VirtAddr(1)]),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    let text = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let err = symbolizer
        .symbolize(
            &Source::Elf { path: &text },
            Input::VirtAddrs(&[VirtAddr(1)]),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Malformed, "{err}");

    // A process that is gone: routine for a profiler, told apart from malformed maps.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let err = symbolizer
        .symbolize(
            &Source::process(&Process::new(pid)),
            Input::AbsAddrs(&[AbsAddr(0x1000)]),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProcessGone, "{err}");
    assert!(
        err.to_string().contains(&format!("process {pid} ")),
        "{err}"
    );
}

#[test]
fn typed_inputs_view_raw_buffers_without_copying() {
    let symbolizer = Symbolizer::builder().build();
    let path = bin("c-nopie");
    let source = Source::Elf { path: &path };
    let raw = [0x401000u64, 0x1];
    let by_view = symbolizer
        .symbolize(&source, Input::VirtAddrs(VirtAddr::from_raw_slice(&raw)))
        .unwrap();
    let by_value = symbolizer
        .symbolize(
            &source,
            Input::VirtAddrs(&[VirtAddr(0x401000), VirtAddr(0x1)]),
        )
        .unwrap();
    assert_eq!(
        by_view.get(0).map(|s| s.name),
        by_value.get(0).map(|s| s.name)
    );
    assert!(by_view.get(0).is_some() && by_view.get(1).is_none());
    // The same address as a file offset (non-PIE: text at 0x401000 from offset 0x1000).
    let offsets = symbolizer
        .symbolize(&source, Input::FileOffsets(&[FileOffset(0x1000)]))
        .unwrap();
    assert_eq!(
        offsets.get(0).map(|s| s.name),
        by_value.get(0).map(|s| s.name)
    );
}

#[test]
fn template_functions_match_without_their_return_type() {
    let symbolizer = Symbolizer::builder().build();
    let path = bin("cpp-O2-g");
    let source = Source::Elf { path: &path };
    // `nm -C` prints `int stacksym_demo::sum_all<int>(int const*, unsigned int)`; perf probe
    // -F and a user write it without the return type.
    for pattern in [
        "stacksym_demo::sum_all<int>",
        "stacksym_demo::sum_all<int>(int const*, unsigned int)",
        "int stacksym_demo::sum_all<int>(int const*, unsigned int)",
    ] {
        let found = symbolizer
            .find_addresses(&source, &NamePattern::parse(pattern))
            .unwrap();
        let names: Vec<&str> = found.iter().map(|m| m.demangled.as_str()).collect();
        assert_eq!(
            names,
            ["int stacksym_demo::sum_all<int>(int const*, unsigned int)"],
            "{pattern}"
        );
        assert_eq!(
            found[0].addr,
            SymAddr::Virt(VirtAddr(support::nm_addr(&path, &found[0].name)))
        );
    }
    let both = symbolizer
        .find_addresses(&source, &NamePattern::parse("stacksym_demo::sum_all<*>"))
        .unwrap();
    assert_eq!(both.len(), 2, "int and double: {both:?}");
}

/// libc's `malloc` has several names at one address (`malloc`, `__libc_malloc`, …): merged,
/// one match per address, named as symbolize names the address.
#[test]
fn aliases_merge_into_one_match_per_address() {
    let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
    if !libc.exists() {
        support::skip_or_fail("aliases_merge_into_one_match_per_address", "no x86_64 libc");
        return;
    }
    let symbolizer = Symbolizer::builder().build();
    let source = Source::Elf { path: libc };
    let pattern = NamePattern::parse("*malloc");
    let all = symbolizer.find_addresses(&source, &pattern).unwrap();
    let merged = symbolizer
        .find_addresses_with(
            &source,
            &pattern,
            FindOptions::default().merge_aliases(true),
        )
        .unwrap();
    let mut addrs: Vec<u64> = all.iter().map(|m| m.addr.raw()).collect();
    addrs.sort();
    addrs.dedup();
    assert_eq!(merged.len(), addrs.len(), "one match per address");
    assert!(
        merged.len() < all.len(),
        "libc has aliases among *malloc: {all:?}"
    );
    let malloc_addr = all
        .iter()
        .find(|m| m.name == "malloc")
        .expect("malloc")
        .addr
        .virt()
        .expect("an ELF symbol's virtual address");
    let at_malloc = merged
        .iter()
        .find(|m| m.addr.virt() == Some(malloc_addr))
        .unwrap();
    let named = symbolizer
        .symbolize(&source, Input::VirtAddrs(&[malloc_addr]))
        .unwrap();
    assert_eq!(Some(at_malloc.name.as_str()), named.get(0).map(|s| s.name));
    assert!(
        at_malloc.aliases.iter().any(|a| a == "malloc") || at_malloc.name == "malloc",
        "{at_malloc:?}"
    );
}

/// A mapping turns a file's virtual address into the process's absolute address, the
/// inverse of normalization.
#[test]
fn virtual_addresses_map_back_to_absolute_ones() {
    let waiter = support::waiter::Waiter::spawn(&bin("c-wait"));
    let process = Process::new(waiter.pid);
    let target = AbsAddr(waiter.addr("wait_target"));
    let symbolizer = Symbolizer::builder().build();
    let normalized = symbolizer.normalize(&process, &[target]).unwrap();
    let Normalized::File(addr) = &normalized[0] else {
        panic!("{normalized:?}")
    };
    let virt = addr.virt_addr.expect("in a segment");
    let maps = symbolizer.process_maps(&process).unwrap();
    let elf = stacksym::elf::ElfFile::open(bin("c-wait")).unwrap();
    // Only c-wait's own mappings map its addresses (libc's would map the same file
    // offset to an address of libc).
    let exe = std::fs::canonicalize(bin("c-wait")).unwrap();
    let back: Vec<AbsAddr> = maps
        .mappings()
        .iter()
        .filter(|m| m.file_path().as_deref() == Some(exe.as_path()))
        .filter_map(|m| m.virt_to_abs(&elf, virt))
        .collect();
    assert_eq!(back, [target]);
}

/// One call from a stopped thread's registers to named frames: c-wait blocks in `getchar`
/// (a `read` syscall); its stack runs from libc through `main` to `_start`.
#[test]
#[cfg(target_arch = "x86_64")]
fn one_call_from_registers_to_names() {
    let waiter = support::waiter::Waiter::spawn(&bin("c-wait"));
    let pid = waiter.pid as libc::pid_t;
    let Some(words) = support::waiter::stopped_registers(pid) else {
        support::skip_or_fail(
            "one_call_from_registers_to_names",
            "cannot ptrace the child (kernel.yama.ptrace_scope, no CAP_SYS_PTRACE)",
        );
        return;
    };
    let regs = stacksym::unwind::RegsX86_64::from_user_regs(&words);
    let symbolizer = Symbolizer::builder().build();
    let process = Process::new(waiter.pid);
    let result = symbolizer.unwind_process(&process, &regs);
    support::waiter::detach(pid);
    let (stack, symbols) = result.unwrap();
    let names: Vec<&str> = (0..stack.frames.len())
        .map(|i| symbols.get(i).map_or("??", |s| s.name))
        .collect();
    assert_eq!(stack.frames[0].kind, FrameKind::InstructionPointer);
    assert!(stack.frames[1..]
        .iter()
        .all(|f| f.kind == FrameKind::ReturnAddress));
    assert!(names.contains(&"main"), "{names:?}");
    assert_eq!(names.last(), Some(&"_start"), "{names:?} {:?}", stack.stop);
    assert_eq!(stack.stop, stacksym::unwind::StopReason::Root);

    // The same through a ProcessUnwinder kept for many stacks.
    let pid2 = pid;
    let words = support::waiter::stopped_registers(pid2).expect("stopped again");
    let mut unwinder = symbolizer
        .process_unwinder::<stacksym::unwind::RegsX86_64>(&process)
        .unwrap();
    let again = unwinder.unwind(&stacksym::unwind::RegsX86_64::from_user_regs(&words));
    support::waiter::detach(pid2);
    assert_eq!(again.frames.len(), stack.frames.len());
}
