//! Names to addresses, for probes: the functions matching a name or glob in a file, with the
//! file offset a uprobe attaches at (`perf probe -x FILE -a 0xOFFSET`, `uprobe:FILE:NAME`).
//!
//! ```text
//! cargo run --example probe_targets                                  # demo_* in testdata/bin/c-nopie
//! cargo run --example probe_targets -- /usr/lib/x86_64-linux-gnu/libc.so.6 'mall*'
//! ```
//!
//! Names match raw (`_ZN3foo3barEv`), demangled (`foo::bar()`) or demangled without the
//! parameter list (`foo::bar`), as bpftrace's and perf's users write them.

use std::path::PathBuf;

use stacksym::symbolize::NamePattern;
use stacksym::{Source, Symbolizer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().unwrap_or_else(|| "testdata/bin/c-nopie".into()));
    let pattern = args.next().unwrap_or_else(|| "demo_*".into());

    let symbolizer = Symbolizer::builder().build();
    let found =
        symbolizer.find_addresses(&Source::Elf { path: &path }, &NamePattern::parse(&pattern))?;
    if found.is_empty() {
        eprintln!("no function in {} matches {pattern}", path.display());
        std::process::exit(1);
    }
    for m in &found {
        let offset = m
            .file_offset
            .map_or("-".to_string(), |o| format!("{:#x}", o.0));
        println!(
            "{:#x} file offset {offset}: {} ({})",
            m.addr.raw(),
            m.demangled,
            m.name
        );
    }
    Ok(())
}
