//! # stacksym
//!
//! Turns raw addresses, as profilers and tracers capture them, into symbols.
//!
//! Layers, lowest first (see `ARCHITECTURE.md`):
//! - [`elf`]: one ELF file: segments, build-id, symbol index, lookups.
//! - [`symbolize`]: the [`Symbolizer`] façade with its caches, composing the layers below.
//!
//! ```
//! use stacksym::{Input, Source, Symbolizer, VirtAddr};
//! # fn main() -> stacksym::Result<()> {
//! let symbolizer = Symbolizer::builder().demangle(true).build();
//! let path = std::path::Path::new("testdata/bin/c-nopie");
//! let symbols = symbolizer.symbolize(&Source::Elf { path }, Input::VirtAddrs(&[VirtAddr(0x401000), VirtAddr(0x1)]))?;
//! assert_eq!(symbols.len(), 2);
//! assert!(symbols.get(1).is_none(), "0x1 is in no symbol");
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

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
mod radix;
pub mod symbolize;
pub mod unwind;
pub mod usdt;

#[cfg(test)]
mod test_support;

pub use addr::{AbsAddr, FileOffset, VirtAddr};
pub use dwarf::{FunctionName, InlineFrame};
pub use error::{Error, ErrorKind, Result};
pub use symbolize::{
    Input, KernelSource, NameOrigin, NotFound, OwnedSym, Source, Sym, Symbolizer,
    SymbolizerBuilder, Symbols,
};

/// The examples in README.md, run as doc tests so the README cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
