//! The notes of an ELF core file (`PT_NOTE` contents), I/O-free: every count, size and
//! offset is checked against the bytes it claims, so a hostile or truncated note yields
//! what is whole and a problem in words, never a panic or an allocation it asked for.
//!
//! Layouts (Linux, 64-bit little-endian; the same on x86_64 and aarch64 except `pr_reg`):
//! `struct elf_prstatus` (`pr_pid` at 32, `pr_reg` at 112), `struct elf_prpsinfo`
//! (`pr_pid` at 24, `pr_fname[16]` at 40, `pr_psargs[80]` at 56), `siginfo_t` (`si_signo`,
//! `si_errno`, `si_code`, then `si_addr` at 16 for faults), `NT_AUXV` (pairs of words),
//! `NT_FILE` (count, page size, count × (start, end, page offset), then count paths).

use std::ffi::OsStr;
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::addr::AbsAddr;

/// `NT_PRSTATUS`: one thread's status and general registers.
pub(crate) const NT_PRSTATUS: u32 = 1;
/// `NT_PRPSINFO`: the process's command and arguments.
pub(crate) const NT_PRPSINFO: u32 = 3;
/// `NT_AUXV`: the auxiliary vector.
pub(crate) const NT_AUXV: u32 = 6;
/// `NT_SIGINFO` ("SIGI"): the signal that ended the process.
pub(crate) const NT_SIGINFO: u32 = 0x5349_4749;
/// `NT_FILE` ("FILE"): the file mappings.
pub(crate) const NT_FILE: u32 = 0x4649_4c45;
/// `NT_ARM_PAC_MASK`: aarch64's pointer-authentication masks (data, instruction).
pub(crate) const NT_ARM_PAC_MASK: u32 = 0x406;

/// `e_machine` of x86_64.
pub(crate) const EM_X86_64: u16 = 62;
/// `e_machine` of aarch64.
pub(crate) const EM_AARCH64: u16 = 183;

/// Offset of `pr_reg` in `struct elf_prstatus` (64-bit).
const PR_REG: usize = 112;
/// x86_64 `user_regs_struct`: 27 words.
const X86_64_REGS: usize = 27;
/// aarch64 `user_pt_regs`: x0–x30, sp, pc, pstate.
const AARCH64_REGS: usize = 34;

/// Most `NT_FILE` entries read (the kernel's own limit on mappings is 65,530 by default;
/// a larger count is refused, not allocated).
pub(crate) const MAX_FILE_ENTRIES: u64 = 1 << 20;
/// Most threads read (Linux's `threads-max` is at most about 4 M; a core holds one note per
/// thread, so the bytes bound them too).
pub(crate) const MAX_THREADS: usize = 1 << 20;

/// One thread's general registers, as the kernel saved them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreRegisters {
    /// x86_64 `user_regs_struct`, in its order: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax
    /// rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs.
    X86_64(Box<[u64; X86_64_REGS]>),
    /// aarch64 `user_pt_regs`.
    Aarch64 {
        /// x0–x30 (x29 the frame pointer, x30 the link register).
        regs: Box<[u64; 31]>,
        /// The stack pointer.
        sp: u64,
        /// The program counter.
        pc: u64,
        /// The processor state.
        pstate: u64,
    },
}

impl CoreRegisters {
    /// The instruction pointer (`rip`, `pc`).
    pub fn ip(&self) -> u64 {
        match self {
            CoreRegisters::X86_64(regs) => regs[16],
            CoreRegisters::Aarch64 { pc, .. } => *pc,
        }
    }

    /// The stack pointer (`rsp`, `sp`).
    pub fn sp(&self) -> u64 {
        match self {
            CoreRegisters::X86_64(regs) => regs[19],
            CoreRegisters::Aarch64 { sp, .. } => *sp,
        }
    }

    /// x86_64's registers in DWARF order (rax rdx rcx rbx rsi rdi rbp rsp r8–r15) and rip;
    /// `None` on aarch64.
    pub fn x86_64_dwarf(&self) -> Option<([u64; 16], u64)> {
        let CoreRegisters::X86_64(r) = self else {
            return None;
        };
        Some((
            [
                r[10], r[12], r[11], r[5], r[13], r[14], r[4], r[19], r[9], r[8], r[7], r[6], r[3],
                r[2], r[1], r[0],
            ],
            r[16],
        ))
    }
}

/// One thread of the core (`NT_PRSTATUS`, and the notes after it until the next).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreThread {
    /// The thread id (`pr_pid`).
    pub tid: u32,
    /// The signal it was taking when the core was written (`pr_cursig`; 0: none).
    pub signal: u16,
    /// Its general registers.
    pub registers: CoreRegisters,
    /// aarch64: the instruction pointer-authentication mask (`NT_ARM_PAC_MASK`'s second
    /// word): the bits of a signed return address that hold its code, not the address.
    pub pac_mask: Option<u64>,
}

/// The process (`NT_PRPSINFO`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreProcess {
    /// Its pid (`pr_pid`).
    pub pid: u32,
    /// The command, as the kernel names it (`pr_fname`: at most 15 bytes).
    pub command: String,
    /// The command line (`pr_psargs`: at most 80 bytes, arguments separated by spaces).
    pub args: String,
}

/// The signal that ended the process (`NT_SIGINFO`; without one, the signal the first
/// thread was taking, from its `NT_PRSTATUS`, with no fault address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreSignal {
    /// The signal number (`si_signo`: 11 is SIGSEGV).
    pub signal: i32,
    /// `si_code` (why: e.g. 1 `SEGV_MAPERR`; 0 or less: sent by a process). From a core
    /// without `NT_SIGINFO` (qemu-user's), `NT_PRSTATUS`'s `pr_info.si_code`, which
    /// Linux and qemu leave 0.
    pub code: i32,
    /// The faulting address (`si_addr`), for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGTRAP
    /// raised by the kernel (`si_code` > 0).
    pub fault_addr: Option<AbsAddr>,
}

impl CoreSignal {
    /// The signal's name (`SIGSEGV`), or `signal N`.
    pub fn name(&self) -> String {
        signal_name(self.signal)
    }
}

/// The conventional name of a Linux signal number (x86_64 and aarch64 share them).
pub fn signal_name(signal: i32) -> String {
    const NAMES: [&str; 32] = [
        "",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match usize::try_from(signal).ok().and_then(|i| NAMES.get(i)) {
        Some(name) if !name.is_empty() => (*name).to_string(),
        _ => format!("signal {signal}"),
    }
}

/// One file mapping (`NT_FILE` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// The absolute addresses mapped.
    pub range: Range<u64>,
    /// The file offset mapped at `range.start`.
    pub file_offset: u64,
    /// The path, as the process saw it.
    pub path: PathBuf,
}

/// Everything read from the notes.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    pub(crate) threads: Vec<CoreThread>,
    pub(crate) process: Option<CoreProcess>,
    pub(crate) signal: Option<CoreSignal>,
    pub(crate) auxv: Vec<(u64, u64)>,
    pub(crate) files: Vec<FileEntry>,
    /// The first thread's `pr_info` (`si_signo`, `si_code`) from `NT_PRSTATUS`: the signal
    /// when the core has no `NT_SIGINFO`.
    first_pr_info: Option<(i32, i32)>,
    /// The page size `NT_FILE` states.
    pub(crate) page_size: Option<u64>,
    /// What was wrong, in words (a note cut short, a count larger than its bytes).
    pub(crate) problems: Vec<String>,
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let word = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(word.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let word = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(word.try_into().ok()?))
}

fn i32_at(bytes: &[u8], at: usize) -> Option<i32> {
    u32_at(bytes, at).map(|v| v as i32)
}

/// A fixed-size C string field: up to its first NUL, lossily UTF-8.
fn c_field(bytes: &[u8], range: Range<usize>) -> String {
    let field = bytes.get(range).unwrap_or_default();
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end])
        .trim_end()
        .to_string()
}

/// One note: (name without its NUL, type, descriptor).
struct Note<'a> {
    name: &'a [u8],
    kind: u32,
    desc: &'a [u8],
}

/// The notes in `data` (one `PT_NOTE` segment's bytes): 4-byte aligned as Linux writes
/// them in cores. Stops at the first note that does not fit, saying so in `problems`.
fn each_note<'a>(mut data: &'a [u8], problems: &mut Vec<String>) -> Vec<Note<'a>> {
    let mut notes = Vec::new();
    while data.len() >= 12 {
        let (Some(namesz), Some(descsz), Some(kind)) =
            (u32_at(data, 0), u32_at(data, 4), u32_at(data, 8))
        else {
            break;
        };
        let name_end = 12usize.checked_add(namesz as usize);
        let desc_start = name_end.and_then(|end| end.checked_next_multiple_of(4));
        let desc_end = desc_start.and_then(|start| start.checked_add(descsz as usize));
        let (Some(name_end), Some(desc_start), Some(desc_end)) = (name_end, desc_start, desc_end)
        else {
            problems.push("a note whose sizes overflow".to_string());
            break;
        };
        let (Some(name), Some(desc)) = (data.get(12..name_end), data.get(desc_start..desc_end))
        else {
            problems.push(format!(
                "a note (type {kind:#x}) runs past the end of its segment ({} bytes left, \
                 {desc_end} claimed): the core is truncated or corrupt",
                data.len()
            ));
            break;
        };
        let name = name.strip_suffix(b"\0").unwrap_or(name);
        notes.push(Note { name, kind, desc });
        let next = desc_end.checked_next_multiple_of(4).unwrap_or(usize::MAX);
        data = data.get(next..).unwrap_or_default();
    }
    notes
}

impl Notes {
    /// Reads the notes of the `PT_NOTE` segments `segments` (their bytes, as far as the file
    /// holds them) of a core for `machine`.
    pub(crate) fn read(segments: &[&[u8]], machine: u16) -> Notes {
        let mut out = Notes::default();
        for segment in segments {
            let mut problems = Vec::new();
            for note in each_note(segment, &mut problems) {
                out.note(&note, machine);
            }
            out.problems.extend(problems);
        }
        // Without NT_SIGINFO (qemu-user writes none; Linux before 3.7): the signal the
        // first thread was taking, from its NT_PRSTATUS, which has no fault address.
        if out.signal.is_none() {
            let cursig = out.threads.first().map_or(0, |t| i32::from(t.signal));
            let (signo, code) = out.first_pr_info.unwrap_or((0, 0));
            let signal = if signo > 0 { signo } else { cursig };
            if signal > 0 {
                out.signal = Some(CoreSignal {
                    signal,
                    code,
                    fault_addr: None,
                });
            }
        }
        out
    }

    fn note(&mut self, note: &Note<'_>, machine: u16) {
        match (note.name, note.kind) {
            (b"CORE", NT_PRSTATUS) => {
                if self.threads.len() >= MAX_THREADS {
                    return;
                }
                if self.threads.is_empty() {
                    if let (Some(signo), Some(code)) = (i32_at(note.desc, 0), i32_at(note.desc, 4))
                    {
                        self.first_pr_info = Some((signo, code));
                    }
                }
                match prstatus(note.desc, machine) {
                    Some(thread) => self.threads.push(thread),
                    None => self.problems.push(format!(
                        "an NT_PRSTATUS note of {} bytes, too short for its registers",
                        note.desc.len()
                    )),
                }
            }
            (b"CORE", NT_PRPSINFO) => {
                if note.desc.len() < 136 {
                    self.problems.push(format!(
                        "an NT_PRPSINFO note of {} bytes (136 expected)",
                        note.desc.len()
                    ));
                    return;
                }
                if self.process.is_none() {
                    self.process = Some(CoreProcess {
                        pid: u32_at(note.desc, 24).unwrap_or(0),
                        command: c_field(note.desc, 40..56),
                        args: c_field(note.desc, 56..136),
                    });
                }
            }
            (b"CORE", NT_SIGINFO) => {
                let (Some(signal), Some(code)) = (i32_at(note.desc, 0), i32_at(note.desc, 8))
                else {
                    self.problems
                        .push("an NT_SIGINFO note too short".to_string());
                    return;
                };
                // SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV raised by the kernel for a fault.
                let is_fault = matches!(signal, 4 | 5 | 7 | 8 | 11) && code > 0;
                let fault_addr = if is_fault {
                    u64_at(note.desc, 16).map(AbsAddr)
                } else {
                    None
                };
                if self.signal.is_none() {
                    self.signal = Some(CoreSignal {
                        signal,
                        code,
                        fault_addr,
                    });
                }
            }
            (b"CORE", NT_AUXV) if self.auxv.is_empty() => {
                for pair in note.desc.chunks_exact(16) {
                    let (Some(key), Some(value)) = (u64_at(pair, 0), u64_at(pair, 8)) else {
                        break;
                    };
                    if key == 0 {
                        break;
                    }
                    self.auxv.push((key, value));
                }
            }
            (b"CORE", NT_FILE) if self.files.is_empty() => self.file_note(note.desc),
            (b"LINUX", NT_ARM_PAC_MASK) => {
                if let (Some(thread), Some(mask)) = (self.threads.last_mut(), u64_at(note.desc, 8))
                {
                    thread.pac_mask = Some(mask);
                }
            }
            _ => {}
        }
    }

    fn file_note(&mut self, desc: &[u8]) {
        let (Some(count), Some(page_size)) = (u64_at(desc, 0), u64_at(desc, 8)) else {
            self.problems
                .push("an NT_FILE note too short for its header".to_string());
            return;
        };
        // Each entry takes 24 bytes and at least one for its path's NUL.
        let fits = (desc.len().saturating_sub(16) / 25) as u64;
        if count > fits || count > MAX_FILE_ENTRIES {
            self.problems.push(format!(
                "an NT_FILE note claims {count} mappings, its {} bytes hold at most {fits}",
                desc.len()
            ));
            return;
        }
        if page_size == 0 || !page_size.is_power_of_two() {
            self.problems
                .push(format!("an NT_FILE note with page size {page_size}"));
            return;
        }
        self.page_size = Some(page_size);
        // `count` fits in the bytes, so these do not overflow.
        let count = count as usize;
        let table_end = 16 + count * 24;
        let mut names = desc.get(table_end..).unwrap_or_default().split(|&b| b == 0);
        for i in 0..count {
            let at = 16 + i * 24;
            let (Some(start), Some(end), Some(pages)) = (
                u64_at(desc, at),
                u64_at(desc, at + 8),
                u64_at(desc, at + 16),
            ) else {
                break;
            };
            let Some(name) = names.next() else {
                self.problems
                    .push(format!("an NT_FILE note with {i} of {count} paths"));
                break;
            };
            let Some(file_offset) = pages.checked_mul(page_size) else {
                self.problems
                    .push(format!("an NT_FILE entry at page offset {pages:#x}"));
                continue;
            };
            if start >= end {
                self.problems
                    .push(format!("an NT_FILE entry {start:#x}-{end:#x}"));
                continue;
            }
            self.files.push(FileEntry {
                range: start..end,
                file_offset,
                path: PathBuf::from(OsStr::from_bytes(name)),
            });
        }
        self.files.sort_by_key(|file| file.range.start);
    }
}

/// A thread from its `NT_PRSTATUS` descriptor.
fn prstatus(desc: &[u8], machine: u16) -> Option<CoreThread> {
    let tid = u32_at(desc, 32)?;
    let signal = u16::from_le_bytes(desc.get(12..14)?.try_into().ok()?);
    let word = |i: usize| u64_at(desc, PR_REG + i * 8);
    let registers = match machine {
        EM_X86_64 => {
            let mut regs = Box::new([0u64; X86_64_REGS]);
            for (i, reg) in regs.iter_mut().enumerate() {
                *reg = word(i)?;
            }
            CoreRegisters::X86_64(regs)
        }
        EM_AARCH64 => {
            let mut regs = Box::new([0u64; 31]);
            for (i, reg) in regs.iter_mut().enumerate() {
                *reg = word(i)?;
            }
            CoreRegisters::Aarch64 {
                regs,
                sp: word(31)?,
                pc: word(32)?,
                pstate: word(AARCH64_REGS - 1)?,
            }
        }
        _ => return None,
    };
    Some(CoreThread {
        tid,
        signal,
        registers,
        pac_mask: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(name.len() as u32 + 1).to_le_bytes());
        out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(name);
        out.push(0);
        while out.len() % 4 != 0 {
            out.push(0);
        }
        out.extend_from_slice(desc);
        while out.len() % 4 != 0 {
            out.push(0);
        }
        out
    }

    #[test]
    fn file_note_with_an_absurd_count_is_refused_without_allocating() {
        let mut desc = Vec::new();
        desc.extend_from_slice(&u64::MAX.to_le_bytes());
        desc.extend_from_slice(&4096u64.to_le_bytes());
        let notes = Notes::read(&[&note(b"CORE", NT_FILE, &desc)], EM_X86_64);
        assert!(notes.files.is_empty());
        assert!(notes.problems[0].contains("claims"), "{:?}", notes.problems);
    }

    #[test]
    fn file_note_reads_entries_and_paths() {
        let mut desc = Vec::new();
        for v in [2u64, 4096, 0x1000, 0x3000, 0, 0x5000, 0x6000, 2] {
            desc.extend_from_slice(&v.to_le_bytes());
        }
        desc.extend_from_slice(b"/bin/a\0/lib/b\0");
        let notes = Notes::read(&[&note(b"CORE", NT_FILE, &desc)], EM_X86_64);
        assert_eq!(notes.files.len(), 2, "{:?}", notes.problems);
        assert_eq!(notes.files[1].file_offset, 0x2000);
        assert_eq!(notes.files[1].path, PathBuf::from("/lib/b"));
    }

    #[test]
    fn truncated_note_keeps_what_is_whole() {
        let mut status = vec![0u8; 336];
        status[32..36].copy_from_slice(&42u32.to_le_bytes());
        let mut data = note(b"CORE", NT_PRSTATUS, &status);
        data.extend_from_slice(&note(b"CORE", NT_PRSTATUS, &status)[..100]);
        let notes = Notes::read(&[&data], EM_X86_64);
        assert_eq!(notes.threads.len(), 1);
        assert_eq!(notes.threads[0].tid, 42);
        assert!(
            notes.problems[0].contains("truncated"),
            "{:?}",
            notes.problems
        );
    }

    #[test]
    fn without_siginfo_the_signal_is_the_first_threads() {
        // qemu-user's cores: NT_PRSTATUS with pr_info.si_signo and pr_cursig, no NT_SIGINFO.
        let mut status = vec![0u8; 336];
        status[0..4].copy_from_slice(&11u32.to_le_bytes());
        status[12..14].copy_from_slice(&11u16.to_le_bytes());
        let notes = Notes::read(&[&note(b"CORE", NT_PRSTATUS, &status)], EM_X86_64);
        assert_eq!(
            notes.signal,
            Some(CoreSignal {
                signal: 11,
                code: 0,
                fault_addr: None
            })
        );
        // A thread taking no signal (gcore of a live process): no signal invented.
        let notes = Notes::read(&[&note(b"CORE", NT_PRSTATUS, &[0u8; 336])], EM_X86_64);
        assert_eq!(notes.signal, None);
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(6), "SIGABRT");
        assert_eq!(signal_name(40), "signal 40");
        assert_eq!(signal_name(-1), "signal -1");
    }
}
