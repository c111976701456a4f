//! `perf report --stdio -g none --sort comm,dso,sym` for `stacksym perf` (src/perf/): the table of
//! (command, shared object, symbol) entries with their share of the event count, without
//! call graphs, in perf's layout: `--no-children` (each sample's period goes to the entry of
//! its sample address) or `--children` (also to every distinct entry of its callchain,
//! inlined functions included as perf lists them, `name (inlined)`), `--percent-limit`.
//!
//! An entry is what perf's sort keys tell apart: comm, the dso's short name, and the symbol
//! (`[.] name` in user space, `[k] name` in the kernel; an address without a symbol
//! `0x%016x`, its file offset in user space); an inlined function's entry is also told
//! apart by the symbol that holds it, as perf's are.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt::Write as _;

/// One table entry's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub comm: String,
    pub dso: String,
    /// `[.] name`, `[k] name`, `[.] 0x...`, `[.] name (inlined)`.
    pub sym: String,
    /// Where the symbol starts (for an inlined function: the symbol holding it); 0 without
    /// a symbol.
    pub holder: u64,
}

/// The table being filled.
#[derive(Default)]
pub struct Report {
    entries: HashMap<Key, (u64, u64)>,
    total: u64,
    samples: u64,
    /// The period of samples a filter (`--comms`) left out: perf's percentages are of every
    /// sample's (its default `--percentage absolute`).
    filtered_out: u64,
    /// The first key of each entry without a symbol, by that key less its `[k]`/`[.]` mark
    /// (see [`Report::first_of`]).
    symless: HashMap<Key, Key>,
}

impl Report {
    /// Adds a sample of `period`: `own` is the entry of its address, `chain` the entries of
    /// its callchain, innermost first (the first is usually `own` again).
    pub fn add(&mut self, period: u64, own: Option<Key>, chain: Vec<Key>) {
        let own = own.map(|key| self.first_of(key));
        let chain: Vec<Key> = chain.into_iter().map(|key| self.first_of(key)).collect();
        self.total += period;
        self.samples += 1;
        let mut seen: Vec<&Key> = Vec::with_capacity(chain.len());
        for key in &chain {
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            self.entries.entry(key.clone()).or_default().0 += period;
        }
        if let Some(own) = own {
            let entry = self.entries.entry(own.clone()).or_default();
            entry.1 += period;
            if !chain.contains(&own) {
                entry.0 += period;
            }
        }
    }

    /// perf's sort key of an entry without a symbol is its address (`sort__sym_cmp`), not
    /// its `[k]`/`[.]` mark: the same address marked apart in two samples (the `0` ending
    /// `--call-graph fp` chains of a sample in user space and one in the kernel) is one
    /// entry, shown with the mark it first came with.
    fn first_of(&mut self, key: Key) -> Key {
        let Some(address) = key.sym.get(4..).filter(|rest| is_address(rest)) else {
            return key;
        };
        let unmarked = Key {
            sym: address.to_string(),
            ..key.clone()
        };
        self.symless.entry(unmarked).or_insert(key).clone()
    }

    /// Counts a sample a filter left out (for the percentages' total).
    pub fn add_filtered_out(&mut self, period: u64) {
        self.filtered_out += period;
    }

    /// The table as `perf report --stdio` prints it.
    pub fn print(&self, children: bool, percent_limit: f64, event: &str) -> String {
        let all = self.total + self.filtered_out;
        let pct = |n: u64| 100.0 * n as f64 / all.max(1) as f64;
        let mut rows: Vec<(&Key, u64, u64)> = self
            .entries
            .iter()
            .map(|(key, &(with_children, own))| (key, with_children, own))
            .filter(|&(_, with_children, own)| if children { with_children > 0 } else { own > 0 })
            .collect();
        rows.sort_by(|a, b| {
            let (ka, kb) = if children { (a.1, b.1) } else { (a.2, b.2) };
            kb.cmp(&ka)
                .then_with(|| b.2.cmp(&a.2))
                .then_with(|| a.0.cmp(b.0))
        });
        let width = |f: fn(&Key) -> &str, title: &str| {
            rows.iter()
                .map(|(key, _, _)| f(key).len())
                .max()
                .unwrap_or(0)
                .max(title.len())
        };
        let comm_w = width(|k| &k.comm, "Command");
        let dso_w = width(|k| &k.dso, "Shared Object");
        let sym_w = width(|k| &k.sym, "Symbol");
        let mut out = String::new();
        let _ = writeln!(out, "# Samples: {} of event '{event}'", self.samples);
        let _ = writeln!(out, "# Event count (approx.): {}", self.total);
        out.push_str("#\n");
        let percent_titles = if children {
            "# Children      Self"
        } else {
            "# Overhead"
        };
        let _ = writeln!(
            out,
            "{percent_titles}  {:comm_w$}  {:dso_w$}  {:sym_w$}",
            "Command", "Shared Object", "Symbol"
        );
        let dots = |n: usize| ".".repeat(n);
        let _ = writeln!(
            out,
            "# ........{}  {}  {}  {}",
            if children { "  ........" } else { "" },
            dots(comm_w),
            dots(dso_w),
            dots(sym_w)
        );
        out.push_str("#\n");
        for (key, with_children, own) in rows {
            let shown = if children { with_children } else { own };
            if pct(shown) < percent_limit {
                continue;
            }
            if children {
                let _ = write!(out, "  {:7.2}%  {:7.2}%", pct(with_children), pct(own));
            } else {
                let _ = write!(out, "  {:7.2}%", pct(own));
            }
            let _ = writeln!(
                out,
                "  {:comm_w$}  {:dso_w$}  {}",
                key.comm, key.dso, key.sym
            );
        }
        out
    }
}

/// Whether a symbol column (less its mark) is an address, as perf prints one without a
/// symbol: `0x` and 16 hex digits, or 16 zeros.
fn is_address(sym: &str) -> bool {
    let digits = sym.strip_prefix("0x").unwrap_or(sym);
    digits.len() == 16 && digits.bytes().all(|b| b.is_ascii_hexdigit())
}
