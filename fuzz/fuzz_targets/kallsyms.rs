//! Arbitrary bytes as a kallsyms file: index them, look up addresses taken from the input and
//! from the symbols found, one by one and as a batch, and check what comes back is consistent.
//!
//! Run from the repository root, seeded with the fixtures (the corpus dir must exist):
//!   mkdir -p fuzz/corpus/kallsyms
//!   cargo +nightly fuzz run kallsyms fuzz/corpus/kallsyms testdata/kallsyms -- -max_total_time=60

#![no_main]

use libfuzzer_sys::fuzz_target;
use stacksym::kernel::Kallsyms;
use stacksym::AbsAddr;

/// Most symbols probed in one input, to keep each run fast.
const MAX_PROBES: usize = 256;

fuzz_target!(|data: &[u8]| {
    let kallsyms = match Kallsyms::from_bytes("fuzz-input", data) {
        Ok(kallsyms) => kallsyms,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz-input: "));
            return;
        }
    };
    assert!(!kallsyms.is_empty());
    let _ = kallsyms.modules().map(str::len).sum::<usize>();

    // Addresses chosen by the input itself: its last 32 bytes as four u64s.
    let mut addrs: Vec<AbsAddr> = data
        .rchunks_exact(8)
        .take(4)
        .map(|c| AbsAddr(u64::from_le_bytes(c.try_into().unwrap_or_default())))
        .collect();
    for sym in kallsyms.symbols().take(MAX_PROBES) {
        assert!(!sym.name.is_empty());
        addrs.extend([
            sym.addr,
            sym.addr.wrapping_sub(1),
            sym.addr.wrapping_add(sym.size / 2),
            sym.addr.wrapping_add(sym.size),
        ]);
        if sym.size > 0 {
            let hit = kallsyms.find_any_symbol(sym.addr).ok().flatten();
            assert_eq!(hit.map(|s| (s.name, s.addr)), Some((sym.name, sym.addr)));
        }
    }
    // The batch lookup answers as one lookup per address, in input order.
    let one_by_one: Vec<_> = addrs
        .iter()
        .map(|&addr| kallsyms.find_symbol(addr).ok().flatten())
        .collect();
    assert_eq!(kallsyms.find_symbols(&addrs).ok(), Some(one_by_one));
    for addr in addrs {
        let any = kallsyms.find_any_symbol(addr).ok().flatten();
        if let Some(sym) = any {
            assert_eq!(sym.addr.wrapping_add(sym.offset), addr);
            assert!(sym.offset < sym.size);
        }
        let text = kallsyms.find_symbol(addr).ok().flatten();
        assert_eq!(text, any.filter(|s| s.is_text()));
    }
});
