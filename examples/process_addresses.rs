//! A live process: absolute addresses (instruction pointers a profiler captured) named through
//! the process's `/proc/PID/maps` and the files it maps.
//!
//! ```text
//! cargo run --example process_addresses                   # this process, its own main()
//! cargo run --example process_addresses -- PID 0x7f3a1c2b4567 0x55d1c0a1b2c3
//! ```
//!
//! The files are opened as the process sees them (through `/proc/PID/map_files`, else confined
//! to `/proc/PID/root`: a process in a container is read in its own root); heap, stack and
//! anonymous memory answer with the reason they have no symbol. Another user's process needs
//! root (or `CAP_SYS_PTRACE`), as `perf` and `gdb` do.

use stacksym::process::Process;
use stacksym::{AbsAddr, Input, Source, Symbolizer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (pid, addrs) = match args.split_first() {
        Some((pid, addrs)) => {
            let mut parsed = Vec::new();
            for addr in addrs {
                parsed.push(AbsAddr(u64::from_str_radix(
                    addr.trim_start_matches("0x"),
                    16,
                )?));
            }
            (pid.parse()?, parsed)
        }
        // This process: the address of main, and one on the stack (no symbol: not a file).
        None => {
            let on_stack = 0u8;
            let addrs = vec![
                AbsAddr(main as *const () as u64),
                AbsAddr(&on_stack as *const u8 as u64),
            ];
            (std::process::id(), addrs)
        }
    };

    let symbolizer = Symbolizer::builder().demangle(true).build();
    let process = Process::new(pid);
    let symbols = symbolizer.symbolize(&Source::process(&process), Input::AbsAddrs(&addrs))?;
    for (i, addr) in addrs.iter().enumerate() {
        match symbols.get(i) {
            Some(sym) => println!(
                "{:#x}: {}+{:#x} ({})",
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
