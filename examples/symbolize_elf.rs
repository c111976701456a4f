//! One ELF file: addresses in, function names, source lines and inlined frames out.
//!
//! ```text
//! cargo run --example symbolize_elf                                  # testdata/bin/c-pie-g 0x12c4
//! cargo run --example symbolize_elf -- /usr/lib/x86_64-linux-gnu/libc.so.6 0x27290 0x98940
//! ```
//!
//! Addresses are ELF virtual addresses, as `nm` and `readelf -s` print them
//! (`Input::FileOffsets` takes file offsets instead, as `/proc/PID/maps` gives them). DWARF
//! is read from the file or from its separate debug file (build-id directories under
//! `/usr/lib/debug`, `.gnu_debuglink`), the way gdb finds it.

use std::path::PathBuf;

use stacksym::{Input, Source, Symbolizer, VirtAddr};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().unwrap_or_else(|| "testdata/bin/c-pie-g".into()));
    let mut addrs = Vec::new();
    for arg in args {
        let hex = arg.trim_start_matches("0x");
        addrs.push(VirtAddr(u64::from_str_radix(hex, 16)?));
    }
    if addrs.is_empty() {
        addrs.push(VirtAddr(0x12c4)); // in checksum(), with scale() inlined into it
    }

    // One symbolizer per program: it caches opened files and parsed DWARF, and is Send + Sync.
    let symbolizer = Symbolizer::builder().build();
    let symbols = symbolizer.symbolize(&Source::Elf { path: &path }, Input::VirtAddrs(&addrs))?;

    // One answer per address, in input order.
    for (i, addr) in addrs.iter().enumerate() {
        let Some(sym) = symbols.get(i) else {
            // Why there is no symbol: no symbol covers it, the file is unreadable, ...
            println!("{:#x}: ?? ({:?})", addr.0, symbols.not_found(i));
            continue;
        };
        println!(
            "{:#x}: {}+{:#x} in {}",
            addr.0,
            sym.name,
            sym.offset,
            sym.module.display()
        );
        // Innermost first: an inlined callee, then the function it was inlined into.
        for frame in sym.frames {
            let file = frame.file.as_deref().unwrap_or("??");
            let line = frame.line.unwrap_or(0);
            println!("    {} at {file}:{line}", sym.frame_name(frame));
        }
    }
    Ok(())
}
