//! Kernel addresses: the running kernel's symbol table as `/proc/kallsyms` lists it.
//!
//! [`Kallsyms`] reads `/proc/kallsyms` (or a copy of it, or bytes already in memory), indexes
//! its `ADDR TYPE NAME [MODULE]` lines by address (`ADDR` in hex without `0x`, `TYPE` one
//! character as `nm` prints it, `[MODULE]` bracketed, e.g. `[ext4]`, absent for the kernel
//! image), and names kernel addresses as perf's and
//! bpftrace's `kstack` give them: the symbol, the offset into it, and the module it belongs
//! to (`None` for the kernel image itself).
//!
//! [`Vmlinux`] matches a kernel image with symbols and DWARF to kallsyms (the KASLR offset);
//! `Symbolizer::symbolize` with `Source::Kernel` then gives the image's addresses names and
//! source lines from it. Module addresses get kallsyms' names, or, with [`KernelModules`], names, source
//! lines and inlined frames from the module's `.ko` file, matched to where the kernel loaded
//! each of its sections (`/sys/module/NAME/sections/`).
//!
//! ```
//! use stacksym::kernel::Kallsyms;
//! use stacksym::AbsAddr;
//! # fn main() -> stacksym::Result<()> {
//! let text = b"ffffffff81000000 T _stext\n\
//!              ffffffff81000100 t helper\n\
//!              ffffffffc0001000 t ext4_fill_super\t[ext4]\n\
//!              ffffffffc0001200 T ext4_init\t[ext4]\n".to_vec();
//! let kallsyms = Kallsyms::from_bytes("my-kallsyms", text)?;
//! let sym = kallsyms.find_symbol(AbsAddr(0xffffffff81000010))?.expect("inside _stext");
//! assert_eq!((sym.name, sym.offset, sym.module), ("_stext", 0x10, None));
//! let sym = kallsyms.find_symbol(AbsAddr(0xffffffffc0001004))?.expect("inside a module symbol");
//! assert_eq!((sym.name, sym.module), ("ext4_fill_super", Some("ext4")));
//! # Ok(())
//! # }
//! ```

mod kallsyms;
mod module;
mod vmlinux;

pub use kallsyms::{Kallsyms, KernelSym, PROC_KALLSYMS};
pub use module::{
    is_pseudo_module, KernelModules, LoadedModule, ModuleSections, LIB_MODULES, SYS_MODULE,
};
pub use vmlinux::{Vmlinux, KASLR_ANCHORS};
