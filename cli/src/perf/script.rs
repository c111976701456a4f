//! How `perf script` (perf 6.1) lays out a sample, for `stacksym perf` (src/perf/): the fields
//! (`-F`), the header line and the callchain lines, byte for byte.
//!
//! The header is perf's `perf_sample__fprintf_start`: `comm ` (unpadded when the callchain
//! follows), `%5d/%-5d ` pid/tid, `[%03d] ` cpu, `%12s: ` time as `sec.usec`, then
//! `%10u ` period and `%*s: ` the event name (padded to the longest name). A callchain line
//! (`sample__fprintf_callchain`) is `\t%16x` (a file offset for user frames, the address for
//! the kernel's), ` name+0xoff` (`[unknown]` without an offset), ` (dso)` — or ` (inlined)`
//! after the name for a frame perf made from an inlined function — and `\n  file:line` for
//! `srcline`. A blank line ends the sample.
#![allow(dead_code)] // the fuzz target and the bench take parts

use std::fmt::Write as _;

/// One field of `-F`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Comm,
    Tid,
    Pid,
    Cpu,
    Time,
    Period,
    Event,
    Ip,
    Sym,
    SymOff,
    Dso,
    SrcLine,
}

const NAMES: [(&str, Field); 12] = [
    ("comm", Field::Comm),
    ("tid", Field::Tid),
    ("pid", Field::Pid),
    ("cpu", Field::Cpu),
    ("time", Field::Time),
    ("period", Field::Period),
    ("event", Field::Event),
    ("ip", Field::Ip),
    ("sym", Field::Sym),
    ("symoff", Field::SymOff),
    ("dso", Field::Dso),
    ("srcline", Field::SrcLine),
];

/// The set of fields to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fields(u32);

impl Fields {
    pub fn has(self, field: Field) -> bool {
        self.0 & (1 << field as u32) != 0
    }

    fn set(&mut self, field: Field, on: bool) {
        if on {
            self.0 |= 1 << field as u32;
        } else {
            self.0 &= !(1 << field as u32);
        }
    }

    /// perf's default for a sampled (hardware or software) event: comm, tid, cpu, time,
    /// period, event, ip, sym, symoff, dso — less those the event does not record.
    pub fn perf_default(time: bool, cpu: bool, period: bool) -> Fields {
        let mut fields = Fields::default();
        for field in [
            Field::Comm,
            Field::Tid,
            Field::Event,
            Field::Ip,
            Field::Sym,
            Field::SymOff,
            Field::Dso,
        ] {
            fields.set(field, true);
        }
        fields.set(Field::Time, time);
        fields.set(Field::Cpu, cpu);
        fields.set(Field::Period, period);
        fields
    }

    /// `-F`'s argument: a list (`comm,tid,ip,sym`) replaces `default`; a list of `+field`
    /// and `-field` changes it, as perf's `-F +srcline` does.
    pub fn parse(spec: &str, default: Fields) -> Result<Fields, String> {
        let items: Vec<&str> = spec.split(',').map(str::trim).collect();
        let relative = items
            .first()
            .is_some_and(|item| item.starts_with('+') || item.starts_with('-'));
        let mut fields = if relative { default } else { Fields::default() };
        for item in items {
            let (on, name) = match item.as_bytes().first() {
                Some(b'+') => (true, &item[1..]),
                Some(b'-') => (false, &item[1..]),
                _ => (true, item),
            };
            let field = NAMES
                .iter()
                .find(|(known, _)| *known == name)
                .map(|&(_, field)| field)
                .ok_or_else(|| {
                    format!(
                        "-F: unknown field '{name}' (known: {})",
                        NAMES.map(|(known, _)| known).join(",")
                    )
                })?;
            fields.set(field, on);
        }
        Ok(fields)
    }
}

/// What the header of one sample shows.
pub struct Header<'a> {
    pub comm: &'a str,
    pub pid: i32,
    pub tid: i32,
    pub cpu: Option<u32>,
    pub time: Option<u64>,
    pub period: Option<u64>,
    pub event: &'a str,
    /// The longest event name of the recording (perf pads to it).
    pub event_width: usize,
}

/// Appends the header line (without its newline) as perf prints it.
pub fn header(out: &mut String, fields: Fields, h: &Header<'_>) {
    if fields.has(Field::Comm) {
        if fields.has(Field::Ip) {
            let _ = write!(out, "{} ", h.comm);
        } else {
            let _ = write!(out, "{:>16} ", h.comm);
        }
    }
    match (fields.has(Field::Pid), fields.has(Field::Tid)) {
        (true, true) => {
            let _ = write!(out, "{:5}/{:<5} ", h.pid, h.tid);
        }
        (true, false) => {
            let _ = write!(out, "{:5} ", h.pid);
        }
        (false, true) => {
            let _ = write!(out, "{:5} ", h.tid);
        }
        (false, false) => {}
    }
    if fields.has(Field::Cpu) {
        let _ = write!(out, "[{:03}] ", h.cpu.unwrap_or(0));
    }
    if fields.has(Field::Time) {
        let t = h.time.unwrap_or(0);
        let stamp = format!("{}.{:06}", t / 1_000_000_000, t % 1_000_000_000 / 1_000);
        let _ = write!(out, "{stamp:>12}: ");
    }
    if fields.has(Field::Period) {
        let _ = write!(out, "{:10} ", h.period.unwrap_or(0));
    }
    if fields.has(Field::Event) {
        let _ = write!(out, "{:>width$}: ", h.event, width = h.event_width);
    }
}

/// One callchain line.
pub struct Line<'a> {
    /// What perf prints in the address column: the file offset of a user frame, the
    /// address itself for the kernel's and for one in no mapping.
    pub ip: u64,
    /// The symbol and the offset into it; `None` prints `[unknown]`.
    pub sym: Option<(&'a str, u64)>,
    /// The dso; `None` for a frame of an inlined function (perf prints ` (inlined)`).
    pub dso: Option<&'a str>,
    pub srcline: Option<&'a str>,
}

/// Appends one callchain line, newline included.
pub fn line(out: &mut String, fields: Fields, l: &Line<'_>) {
    if fields.has(Field::Ip) {
        out.push('\t');
        push_hex(out, l.ip, 16);
    }
    if fields.has(Field::Sym) {
        out.push(' ');
        match l.sym {
            Some((name, offset)) => {
                out.push_str(name);
                if fields.has(Field::SymOff) {
                    out.push_str("+0x");
                    push_hex(out, offset, 0);
                }
            }
            None => out.push_str("[unknown]"),
        }
    }
    if fields.has(Field::Dso) {
        if let Some(dso) = l.dso {
            out.push_str(" (");
            out.push_str(dso);
            out.push(')');
        }
    }
    if fields.has(Field::SrcLine) {
        if let Some(srcline) = l.srcline {
            out.push_str("\n  ");
            out.push_str(srcline);
        }
    }
    if l.dso.is_none() && l.sym.is_some() {
        out.push_str(" (inlined)");
    }
    out.push('\n');
}

/// Appends `value` in lowercase hex, right-aligned in `width` columns, as
/// `{value:width$x}` formats it, without `core::fmt` (whose padding and hex digits took
/// several per cent of the naming thread: most of the output's numbers are these).
fn push_hex(out: &mut String, value: u64, width: usize) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [b'0'; 16];
    let mut len = 0;
    let mut rest = value;
    while let Some(slot) = buf
        .len()
        .checked_sub(len + 1)
        .and_then(|at| buf.get_mut(at))
    {
        *slot = DIGITS[(rest & 15) as usize];
        len += 1;
        rest >>= 4;
        if rest == 0 {
            break;
        }
    }
    for _ in len..width {
        out.push(' ');
    }
    let digits = buf.get(buf.len() - len..).unwrap_or_default();
    // ASCII digits.
    out.push_str(std::str::from_utf8(digits).unwrap_or_default());
}
