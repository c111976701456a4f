//! Kernel addresses named through a kallsyms file, as `perf` and bpftrace's `kstack` name
//! them (`[kernel.kallsyms]`, a module's `[name]`).
//!
//! ```text
//! cargo run --example kernel_addresses                          # testdata/kallsyms/synthetic.txt
//! sudo cargo run --example kernel_addresses -- /proc/kallsyms ffffffff81000010
//! ```
//!
//! Reading the running kernel's real addresses needs root or `kernel.kptr_restrict=0`;
//! without either, kallsyms lists zeros and the answer says the addresses are hidden.
//! A vmlinux with DWARF (and modules' `.ko` files) add source lines: see `KernelSource`.

use std::path::PathBuf;

use stacksym::{AbsAddr, Input, KernelSource, Source, Symbolizer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let kallsyms = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "testdata/kallsyms/synthetic.txt".into()),
    );
    let mut addrs = Vec::new();
    for arg in args {
        addrs.push(AbsAddr(u64::from_str_radix(
            arg.trim_start_matches("0x"),
            16,
        )?));
    }
    if addrs.is_empty() {
        addrs.push(AbsAddr(0xffffffff81000010));
    }

    let symbolizer = Symbolizer::builder().build();
    let kernel = KernelSource {
        kallsyms: Some(&kallsyms),
        ..KernelSource::default()
    };
    let symbols = symbolizer.symbolize(&Source::Kernel(kernel), Input::AbsAddrs(&addrs))?;
    for (i, addr) in addrs.iter().enumerate() {
        match symbols.get(i) {
            Some(sym) => println!(
                "{:#x}: {}+{:#x} {}",
                addr.0,
                sym.name,
                sym.offset,
                sym.module.display()
            ),
            None => println!("{:#x}: {:?}", addr.0, symbols.not_found(i)),
        }
    }
    Ok(())
}
