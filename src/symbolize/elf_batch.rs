//! One batch of addresses of one ELF file (a file the caller names, or a file mapped in a
//! process or a core): each address's symbol (the file's own table, its debug companion's,
//! MiniDebugInfo's, a Go binary's own table) and frames (DWARF, else the Go table).
//!
//! The steps, in [`Symbolizer::symbolize_loaded`]'s order: the batch's sources (debug state,
//! DWARF locked once, the answer's module and part), the addresses in address order
//! ([`address_order`]), the walk in that order ([`AddressWalk`]: the symbol, then the
//! frames, of each address), the answers handed back in input order ([`in_input_order`]),
//! and the names computed on threads ([`compute_names_on_threads`]). Address order is what
//! makes a batch cheap: a run of addresses inside one function costs one symbol search,
//! neighbouring addresses share line-table rows and function ranges (which stay in the CPU
//! caches), and a profile's repeated addresses cost one DWARF lookup.
//!
//! The steps are functions for the reader; they are inlined into one loop (`#[inline(always)]`)
//! because this is the hot path of every symbol lookup: called out of line, they cost 66
//! instructions an address (`.ci/icount`'s symtab-warm, +11 %), mostly tuples returned
//! through memory.

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, PoisonError};

use super::loaded::LoadedElf;
use super::output::{Answer, ElfPart, Entry, FoundSym, ModuleName, Part};
use super::{Input, Symbolizer, Symbols};
use crate::addr::{FileOffset, VirtAddr};
use crate::confine::ConfinedRoot;
use crate::dwarf::{DwarfInfo, InlineFrame};
use crate::elf::{Segments, SymbolId, SymbolRuns};
use crate::error::{Error, Result};
use crate::gopclntab::GoTable;
use crate::radix::sorted_by_key;

impl Symbolizer {
    /// Symbolizes addresses of `file` (shown as `path`); `root`: the root of the process the
    /// file is mapped in, whose debug dirs are searched first, confined to it.
    pub(super) fn symbolize_loaded(
        &self,
        file: &Arc<LoadedElf>,
        path: &Path,
        input: Input<'_>,
        root: Option<&ConfinedRoot>,
    ) -> Result<Symbols> {
        let debug = file.debug_state(|| match root {
            Some(root) => self.debug.inside(root),
            None => self.debug.clone(),
        });
        let symbol_file = file.symbol_file(debug);
        // One lock for the whole batch: the DWARF's lazily parsed units are not `Sync`.
        let dwarf = match &debug.dwarf {
            Ok(Some(dwarf)) => Some(dwarf.lock().unwrap_or_else(PoisonError::into_inner)),
            _ => None,
        };
        let segments = file.elf.segments();
        let given = GivenAddrs {
            raw: input.raw(),
            as_offsets: matches!(input, Input::FileOffsets(_)),
        };
        let mini = debug.mini.as_ref();
        let mut symbols = Symbols::with_capacity(given.raw.len(), self.demangle);
        let module = symbols.add_module(ModuleName {
            shown: path.to_path_buf(),
            opened_as: None,
            kernel_module: None,
        });
        let part = symbols.add_part(Part::Elf(ElfPart {
            file: Arc::clone(symbol_file),
            mini: mini.cloned(),
            go: debug.go.clone(),
            build_id: file.elf.build_id().map(Box::from),
            debug_file: debug.companion.as_ref().map(|c| c.elf.path().to_path_buf()),
            debug_error: None,
            segments: segments.clone(),
        }));
        let order = address_order(&given, segments);
        if let Some(dwarf) = &dwarf {
            symbols.frames.reserve(order.len() + order.len() / 4);
            if self.threads > 1 {
                let bias = debug.dwarf_bias;
                let addrs = order
                    .iter()
                    .map(|&(addr, _)| VirtAddr(addr.wrapping_sub(bias)));
                dwarf.prepare(addrs, self.threads);
            }
        }
        let mut walk = AddressWalk {
            symbol_file,
            mini,
            go: debug.go.as_deref(),
            dwarf: dwarf.as_deref(),
            dwarf_bias: debug.dwarf_bias,
            source_lines: self.debug.source_lines,
            demangle: self.demangle,
            threads: self.threads,
            part,
            own_symbols: SymbolRuns::new(&symbol_file.elf),
            mini_symbols: mini.map(|mini| SymbolRuns::new(&mini.elf)),
            last_found: None,
            to_name: Vec::new(),
            previous_frames: None,
            go_hint: 0,
            debug_error: debug
                .dwarf
                .as_ref()
                .err()
                .or(debug.error.as_ref())
                .map(|e| e.clone_for_cache()),
        };
        // The answers in address order, written one after another; put in input order below.
        let mut in_address_order: Vec<Entry> = Vec::with_capacity(order.len());
        for &(addr, i) in &order {
            let addr = VirtAddr(addr);
            let (named, go_function) = walk.symbol(addr, &mut symbols)?;
            let mut file_offset = given.raw.get(i).and_then(|&raw| given.offset(raw));
            if matches!(named, Named::Nothing) && file_offset.is_none() {
                file_offset = segments.virt_to_file_offset(addr);
            }
            let (frames, names_a_function) = walk.frames(addr, go_function, &mut symbols.frames);
            // A DWARF function names an address no symbol covers.
            let named = match named {
                Named::Nothing if names_a_function => Named::DwarfOnly,
                named => named,
            };
            in_address_order.push(Entry {
                answer: named.answer(part, addr),
                module,
                file_offset,
                frames,
            });
        }
        let AddressWalk {
            to_name,
            debug_error,
            ..
        } = walk;
        drop(dwarf);
        in_input_order(
            &order,
            in_address_order,
            &given,
            module,
            &mut symbols.entries,
        );
        compute_names_on_threads(symbol_file, mini, &to_name, self.threads)?;
        if let Some(Part::Elf(elf)) = symbols.parts.get_mut(part as usize) {
            elf.debug_error = debug_error;
        }
        Ok(symbols)
    }
}

/// A batch's addresses as the caller gave them: virtual addresses, or file offsets (each
/// kept, and turned into a virtual address through the file's segments).
struct GivenAddrs<'i> {
    raw: &'i [u64],
    as_offsets: bool,
}

impl GivenAddrs<'_> {
    /// The file offset `raw` was given as, if the batch is of file offsets.
    #[inline(always)]
    fn offset(&self, raw: u64) -> Option<FileOffset> {
        self.as_offsets.then_some(FileOffset(raw))
    }

    /// `raw`'s virtual address; `None` for a file offset in no segment.
    #[inline(always)]
    fn virt(&self, raw: u64, segments: &Segments) -> Option<VirtAddr> {
        match self.offset(raw) {
            Some(offset) => segments.file_offset_to_virt(offset),
            None => Some(VirtAddr(raw)),
        }
    }
}

/// `(virtual address, input index)` of the addresses that have a virtual address, in
/// address order. The file offset of a virtual address is derived only where no symbol
/// answers (for found ones `Symbols` derives it when read: see `Entry::file_offset`).
#[inline(always)]
fn address_order(given: &GivenAddrs<'_>, segments: &Segments) -> Vec<(u64, usize)> {
    let mut order: Vec<(u64, usize)> = Vec::with_capacity(given.raw.len());
    for (i, &raw) in given.raw.iter().enumerate() {
        if let Some(addr) = given.virt(raw, segments) {
            order.push((addr.0, i));
        }
    }
    sorted_by_key(order)
}

/// The walk of a batch's addresses in address order, and what it carries from one address
/// to the next.
struct AddressWalk<'b> {
    /// The file whose symbols answer (the file, or its debug companion).
    symbol_file: &'b Arc<LoadedElf>,
    /// The file's MiniDebugInfo, which names what `.dynsym` does not.
    mini: Option<&'b Arc<LoadedElf>>,
    /// A Go binary's own table.
    go: Option<&'b GoTable>,
    /// The DWARF, locked for the batch.
    dwarf: Option<&'b DwarfInfo>,
    /// What to subtract from an address to look it up in `dwarf` (see `DebugState`).
    dwarf_bias: u64,
    /// Whether frames (source lines) are asked for: the Go table's are read only then.
    source_lines: bool,
    demangle: bool,
    threads: usize,
    /// The batch's part of this file.
    part: u32,
    own_symbols: SymbolRuns<'b>,
    mini_symbols: Option<SymbolRuns<'b>>,
    /// The last distinct symbol hit, `(in_mini, id, index in `symbols.found`)`: in address
    /// order, the addresses inside one symbol come one after another and share it.
    last_found: Option<(bool, SymbolId, u32)>,
    /// With threads, the symbols whose names to compute (each first hit: `(in_mini, id)`),
    /// computed after the walk on several threads.
    to_name: Vec<(bool, SymbolId)>,
    /// The previous address and its frames: a repeated address reuses them.
    previous_frames: Option<(VirtAddr, Range<u32>)>,
    /// The Go table's function of the previous address: the batch ascends, so the next
    /// search starts there.
    go_hint: usize,
    /// The first error of a debug source (DWARF, MiniDebugInfo, the Go table) in this batch:
    /// its addresses are answered from what else there is, and the batch reports it once.
    debug_error: Option<Error>,
}

impl<'b> AddressWalk<'b> {
    /// Which answer names `addr` (a symbol of the file or MiniDebugInfo, else the Go
    /// table's function), and the Go table's function holding it, by index.
    #[inline(always)]
    fn symbol(&mut self, addr: VirtAddr, symbols: &mut Symbols) -> Result<(Named, Option<usize>)> {
        let own = self.own_symbols.find(addr)?;
        // MiniDebugInfo names what `.dynsym` does not: the nearer symbol wins.
        let from_mini = match &mut self.mini_symbols {
            Some(runs) => runs.find(addr)?,
            None => None,
        };
        let (file, hit, in_mini) = match (own, from_mini) {
            (Some(own), Some(theirs)) if theirs.1 > own.1 => (self.mini, Some(theirs), true),
            (None, Some(theirs)) => (self.mini, Some(theirs), true),
            (own, _) => (Some(self.symbol_file), own, false),
        };
        // A Go binary's own table names what no symbol does, and wins over a farther
        // `.dynsym` symbol (cgo binaries export a few); `.symtab` names the same entries.
        let go_function = self.go_function(addr);
        let hit = match (hit, go_function) {
            (Some((_, start)), Some((_, entry))) if entry > start => None,
            (hit, _) => hit,
        };
        let go_index = go_function.map(|(index, _)| index);
        let Some((id, _)) = hit else {
            let named = if go_index.is_some() {
                Named::Go
            } else {
                Named::Nothing
            };
            return Ok((named, go_index));
        };
        // `in_mini` only where `mini_symbols`, and so `mini`, is there.
        let Some(file) = file else {
            return Ok((Named::Nothing, go_index));
        };
        let found = match self.last_found {
            Some((was_mini, was, found)) if (was_mini, was) == (in_mini, id) => Some(found),
            _ => self.first_hit(file, in_mini, id, symbols)?,
        };
        Ok((found.map_or(Named::Nothing, Named::Elf), go_index))
    }

    /// A symbol's first hit in the batch: its answer added to `symbols.found` (its index
    /// returned) and its shown name computed now, or after the walk with threads.
    fn first_hit(
        &mut self,
        file: &LoadedElf,
        in_mini: bool,
        id: SymbolId,
        symbols: &mut Symbols,
    ) -> Result<Option<u32>> {
        // The id came from this file's own index (built once): it has spans.
        let Some(spans) = file.elf.symbol_spans(id)? else {
            return Ok(None);
        };
        if self.demangle {
            if self.threads > 1 {
                self.to_name.push((in_mini, id));
            } else {
                file.compute_shown_name(id)?;
            }
        }
        let found = symbols.add_found(FoundSym {
            part: self.part,
            in_mini,
            spans,
            demangled: self.demangle,
        });
        self.last_found = Some((in_mini, id, found));
        Ok(Some(found))
    }

    /// `(index, entry)` of the Go function holding `addr`, for a Go binary; a malformed
    /// table is the batch's debug error and names nothing.
    #[inline(always)]
    fn go_function(&mut self, addr: VirtAddr) -> Option<(usize, VirtAddr)> {
        let go = self.go?;
        let found = go
            .index_from(addr.0, self.go_hint)
            .and_then(|index| match index {
                Some(index) => Ok(Some((index, go.entry_of(index)?))),
                None => Ok(None),
            });
        match found {
            Ok(found) => {
                if let Some((index, _)) = found {
                    self.go_hint = index;
                }
                found
            }
            Err(e) => {
                log::debug!("{e}");
                self.debug_error.get_or_insert(e);
                None
            }
        }
    }

    /// `addr`'s frames appended to `frames` (DWARF's; without DWARF, the Go table's when
    /// source lines are asked for), as their range there; and whether DWARF names the
    /// function holding `addr`.
    #[inline(always)]
    fn frames(
        &mut self,
        addr: VirtAddr,
        go_function: Option<usize>,
        frames: &mut Vec<InlineFrame>,
    ) -> (Range<u32>, bool) {
        let Some(dwarf) = self.dwarf else {
            let (Some(go), Some(index), true) = (self.go, go_function, self.source_lines) else {
                return (0..0, false);
            };
            let first = frames.len();
            if let Err(e) = go.append_frames_of(index, addr, frames) {
                log::debug!("{e}");
                frames.truncate(first);
                self.debug_error.get_or_insert(e);
            }
            return (frame_index(first)..frame_index(frames.len()), false);
        };
        let range = match &self.previous_frames {
            Some((seen, range)) if *seen == addr => range.clone(),
            _ => {
                let first = frames.len();
                let in_dwarf = VirtAddr(addr.0.wrapping_sub(self.dwarf_bias));
                if let Err(e) = dwarf.append_frames(in_dwarf, frames) {
                    // Malformed DWARF at this address: answer from symbols alone, and say
                    // so once per batch.
                    log::debug!("{e}");
                    self.debug_error.get_or_insert(e);
                }
                let range = frame_index(first)..frame_index(frames.len());
                self.previous_frames = Some((addr, range.clone()));
                range
            }
        };
        let names_a_function = frames
            .get(range.start as usize..range.end as usize)
            .and_then(<[InlineFrame]>::last)
            .is_some_and(|frame| frame.function.is_some());
        (range, names_a_function)
    }
}

/// A frame's index in a batch's frames: they number fewer than u32::MAX (each is over 40
/// bytes: more would not fit in memory); saturating keeps it checked.
#[inline(always)]
fn frame_index(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The answers, in address order (`order`, the walk's), pushed onto `entries` in input
/// order: each address takes its answer from its place in address order; an address
/// without a virtual address (a file offset in no segment) answers nothing.
///
/// Walking the answers in address order and writing each to its input place would miss the
/// cache on every write of a large random batch, inside the long walk where few misses
/// overlap; this short loop reads them back with many misses in flight.
#[inline(always)]
fn in_input_order(
    order: &[(u64, usize)],
    mut in_address_order: Vec<Entry>,
    given: &GivenAddrs<'_>,
    module: u32,
    entries: &mut Vec<Entry>,
) {
    let mut place = vec![u32::MAX; given.raw.len()];
    for (k, &(_, i)) in order.iter().enumerate() {
        if let Some(place) = place.get_mut(i) {
            // A batch has fewer than u32::MAX addresses (see `Symbols::add_module`).
            *place = u32::try_from(k).unwrap_or(u32::MAX);
        }
    }
    entries.reserve(given.raw.len());
    for (&raw, &k) in given.raw.iter().zip(&place) {
        let entry = match in_address_order.get_mut(k as usize) {
            Some(entry) => std::mem::replace(entry, Entry::no_symbol()),
            None => Entry {
                answer: Answer::NoSymbol,
                module,
                file_offset: given.offset(raw),
                frames: 0..0,
            },
        };
        entries.push(entry);
    }
}

/// Computes the shown (demangled) names of `ids` (`(in_mini, id)`: a symbol of `symbol_file`,
/// or of `mini` when `in_mini`) on up to `threads` threads, the caller's among them; names
/// already computed cost a look. Demangling is most of a symbols-only batch's time on a
/// large Rust or C++ library, and every name is independent of the others.
fn compute_names_on_threads(
    symbol_file: &LoadedElf,
    mini: Option<&Arc<LoadedElf>>,
    ids: &[(bool, SymbolId)],
    threads: usize,
) -> Result<()> {
    /// Fewer names than this per thread are not worth a thread's start.
    const MIN_NAMES_PER_THREAD: usize = 256;
    let compute = |names: &[(bool, SymbolId)]| -> Result<()> {
        for &(in_mini, id) in names {
            match (in_mini, mini) {
                (true, Some(mini)) => mini.compute_shown_name(id)?,
                _ => symbol_file.compute_shown_name(id)?,
            }
        }
        Ok(())
    };
    let threads = threads.min(ids.len() / MIN_NAMES_PER_THREAD).max(1);
    if threads == 1 {
        return compute(ids);
    }
    let chunk = ids.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let mut chunks = ids.chunks(chunk);
        let own = chunks.next().unwrap_or_default();
        let helpers: Vec<_> = chunks
            .map(|names| scope.spawn(move || compute(names)))
            .collect();
        let mut result = compute(own);
        for helper in helpers {
            // A helper that panicked (a bug) left its names uncomputed: they read as no name.
            let helper_result = helper.join().unwrap_or_else(|_| {
                log::error!("a name-computing thread panicked");
                Ok(())
            });
            result = result.and(helper_result);
        }
        result
    })
}

/// Which answer names an address, while the walk chooses it: plain data, since choosing
/// among `Answer`s by assigning them would run `Answer`'s drop glue (its `NotFound` variant
/// holds an `Error`) at every assignment, out of line (the icount guard caught it: 9
/// instructions an address).
#[derive(Clone, Copy)]
enum Named {
    Nothing,
    Go,
    /// Its index in the batch's found symbols.
    Elf(u32),
    DwarfOnly,
}

impl Named {
    /// The answer for `addr` of the batch's `part`.
    #[inline(always)]
    fn answer(self, part: u32, addr: VirtAddr) -> Answer {
        match self {
            Named::Nothing => Answer::NoSymbol,
            Named::Go => Answer::Go { part, addr },
            Named::Elf(found) => Answer::Elf { found, addr },
            Named::DwarfOnly => Answer::DwarfOnly { part, addr },
        }
    }
}
