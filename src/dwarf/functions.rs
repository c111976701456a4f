//! One unit's functions and inlined calls, from one walk of its DIE tree.
//!
//! The walk reads the attributes of `DW_TAG_subprogram` and `DW_TAG_inlined_subroutine`
//! DIEs and skips every other DIE's, without recursion: the DIEs open around the current one
//! are an explicit stack, so a crafted unit nested 100,000 deep costs memory in proportion
//! to its size, not stack. Inlined calls nested deeper than [`MAX_INLINED_DEPTH`] refuse the
//! unit (every such level would be a frame of one address).
//!
//! What is kept, per unit: the ranges of every subprogram with code, sorted by start; per
//! subprogram, the ranges of the inlined calls inside it (nested subprograms excluded, they
//! are functions of their own) sorted by call depth then start, so the chain at an address is
//! found one depth at a time by binary search; and per function or call, its DIE offset
//! (names are read when first asked for) and its call site. This is the addr2line crate's
//! model (its `Functions` and `Function`), built in one pass instead of one pass over the
//! unit plus one recursive pass per function asked about.

use crate::dwarf::reader::Reader;
use crate::dwarf::{range_order, saturate};

/// The deepest nesting of `DW_TAG_inlined_subroutine` DIEs accepted in a unit. Real code
/// nests inlined calls a few dozen deep (the deepest in testdata: 10, libstdc++'s
/// `std::sort`); each level is a frame of the addresses inside it.
pub const MAX_INLINED_DEPTH: usize = 256;

/// A subprogram with code, or an inlined call inside one. Compact (28 bytes): a large unit
/// holds tens of thousands.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FunctionDie {
    /// Where the DIE is in its unit (its name and declaration are read from there).
    die: u32,
    /// For an inlined call: `DW_AT_call_file` (a file index of the unit's line table);
    /// `u32::MAX`: none.
    call_file: u32,
    /// For an inlined call: `DW_AT_call_line`, 0 when absent.
    call_line: u32,
    /// For an inlined call: `DW_AT_call_column`, 0 when absent.
    call_column: u32,
    /// For an inlined call: `DW_AT_GNU_discriminator`, the discriminator of its call site
    /// (as LLVM writes it and llvm-symbolizer prints it on the caller's frame); 0: none.
    call_discriminator: u32,
    /// For a subprogram: its inlined calls' ranges, `inlined[inlined_start..inlined_end]`.
    inlined_start: u32,
    inlined_end: u32,
}

impl FunctionDie {
    /// Where the DIE is in its unit.
    pub(crate) fn die(&self) -> gimli::UnitOffset<usize> {
        gimli::UnitOffset(self.die as usize)
    }

    /// For an inlined call: the file index of its call site.
    pub(crate) fn call_file(&self) -> Option<u64> {
        (self.call_file != u32::MAX).then_some(u64::from(self.call_file))
    }

    /// For an inlined call: the line of its call site.
    pub(crate) fn call_line(&self) -> Option<u32> {
        (self.call_line != 0).then_some(self.call_line)
    }

    /// For an inlined call: the column of its call site.
    pub(crate) fn call_column(&self) -> Option<u32> {
        (self.call_column != 0).then_some(self.call_column)
    }

    /// For an inlined call: the discriminator of its call site.
    pub(crate) fn call_discriminator(&self) -> Option<u32> {
        (self.call_discriminator != 0).then_some(self.call_discriminator)
    }
}

/// An address range of a function or inlined call: `[begin, end)`, and the index of its
/// [`FunctionDie`].
#[derive(Debug, Clone, Copy)]
struct Span {
    begin: u64,
    end: u64,
    function: u32,
}

/// An inlined call's range, with the subprogram it belongs to and how many inlined calls
/// enclose it there (0: called from the subprogram's own code).
#[derive(Debug, Clone, Copy)]
struct InlinedSpan {
    owner: u32,
    depth: u32,
    span: Span,
}

/// The functions of one unit (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct FunctionTable {
    functions: Box<[FunctionDie]>,
    /// Subprograms' ranges, sorted by start.
    subprograms: Box<[Span]>,
    /// Inlined calls' ranges, by owner, then depth, then start.
    inlined: Box<[InlinedSpan]>,
}

/// Why a unit's functions could not be read.
#[derive(Debug, Clone)]
pub(crate) enum FunctionsError {
    Dwarf(gimli::Error),
    TooDeep,
    /// More than `u32::MAX` functions in one unit, or a unit over 4 GiB.
    TooMany,
}

impl From<gimli::Error> for FunctionsError {
    fn from(e: gimli::Error) -> Self {
        FunctionsError::Dwarf(e)
    }
}

impl std::fmt::Display for FunctionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FunctionsError::Dwarf(e) => write!(f, "{e}"),
            FunctionsError::TooDeep => write!(
                f,
                "inlined subroutines nested more than {MAX_INLINED_DEPTH} deep; unit refused"
            ),
            FunctionsError::TooMany => {
                write!(f, "a unit over 4 GiB or with over {} functions", u32::MAX)
            }
        }
    }
}

/// A DIE open around the walk's current position that matters to it.
struct Open {
    /// The DIE's depth in the tree.
    depth: isize,
    /// The subprogram (a `functions` index) whose inlined calls the DIEs below belong to;
    /// `None` below a subprogram without code or an inlined call outside any subprogram.
    owner: Option<u32>,
    /// Inlined calls between `owner` and the DIEs below.
    inlined_depth: u32,
}

/// A DIE's address ranges, as read from its attributes.
#[derive(Default)]
pub(crate) struct RangeAttributes {
    low_pc: Option<u64>,
    high_pc: Option<u64>,
    size: Option<u64>,
    ranges: Option<gimli::RangeListsOffset<usize>>,
}

impl RangeAttributes {
    /// Reads a range attribute into `self`; false for any other attribute.
    fn read(
        &mut self,
        unit: &gimli::UnitRef<'_, Reader>,
        attr: &gimli::Attribute<Reader>,
    ) -> Result<bool, gimli::Error> {
        use gimli::AttributeValue;
        match (attr.name(), attr.value()) {
            (gimli::DW_AT_low_pc, AttributeValue::Addr(value)) => self.low_pc = Some(value),
            (gimli::DW_AT_low_pc, AttributeValue::DebugAddrIndex(index)) => {
                self.low_pc = Some(unit.address(index)?);
            }
            (gimli::DW_AT_high_pc, AttributeValue::Addr(value)) => self.high_pc = Some(value),
            (gimli::DW_AT_high_pc, AttributeValue::DebugAddrIndex(index)) => {
                self.high_pc = Some(unit.address(index)?);
            }
            (gimli::DW_AT_high_pc, AttributeValue::Udata(size)) => self.size = Some(size),
            (gimli::DW_AT_ranges, value) => self.ranges = unit.attr_ranges_offset(value)?,
            (gimli::DW_AT_low_pc | gimli::DW_AT_high_pc, _) => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Calls `add` with each non-empty range; true if there was one.
    pub(crate) fn for_each(
        &self,
        unit: &gimli::UnitRef<'_, Reader>,
        mut add: impl FnMut(u64, u64),
    ) -> Result<bool, gimli::Error> {
        let mut any = false;
        let mut push = |begin: u64, end: u64| {
            if begin < end {
                add(begin, end);
                any = true;
            }
        };
        if let Some(offset) = self.ranges {
            let mut ranges = unit.ranges(offset)?;
            while let Some(range) = ranges.next()? {
                push(range.begin, range.end);
            }
        } else if let (Some(begin), Some(end)) = (self.low_pc, self.high_pc) {
            push(begin, end);
        } else if let (Some(begin), Some(size)) = (self.low_pc, self.size) {
            // A tombstone `low_pc` of -1 wraps and is dropped by `push`.
            push(begin, begin.wrapping_add(size));
        }
        Ok(any)
    }
}

/// The range attributes of `unit`'s root DIE; `None` when the unit has no DIE.
pub(crate) fn root_range_attributes(
    unit: &gimli::UnitRef<'_, Reader>,
) -> Result<Option<RangeAttributes>, gimli::Error> {
    let mut entries = unit.entries_raw(None)?;
    let Some(abbrev) = entries.read_abbreviation()? else {
        return Ok(None);
    };
    let mut ranges = RangeAttributes::default();
    for spec in abbrev.attributes() {
        let attr = entries.read_attribute(*spec)?;
        ranges.read(unit, &attr)?;
    }
    Ok(Some(ranges))
}

/// Whether the walk reads attribute `name` of a subprogram or inlined call (the others are
/// skipped unread).
fn is_read(name: gimli::DwAt) -> bool {
    matches!(
        name,
        gimli::DW_AT_low_pc
            | gimli::DW_AT_high_pc
            | gimli::DW_AT_ranges
            | gimli::DW_AT_call_file
            | gimli::DW_AT_call_line
            | gimli::DW_AT_call_column
            | gimli::DW_AT_GNU_discriminator
    )
}

/// Whether the children of a DIE tagged `tag` can hold no subprogram with code and no
/// inlined call, so that the walk may jump over them to the DIE's `DW_AT_sibling`. About
/// 40 % of libc's DIEs are below such DIEs: call sites' parameters, enumerators, array
/// bounds, prototypes' parameters and, in C, structure and union members.
///
/// Structures and unions are jumped over only in C units: in C++ and Rust a member function
/// may be defined inside its class's DIE.
fn holds_no_code(tag: gimli::DwTag, language_c: bool) -> bool {
    match tag {
        gimli::DW_TAG_call_site
        | gimli::DW_TAG_GNU_call_site
        | gimli::DW_TAG_enumeration_type
        | gimli::DW_TAG_array_type
        | gimli::DW_TAG_subroutine_type => true,
        gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type => language_c,
        _ => false,
    }
}

/// Reads the attributes of a unit's root DIE; true when its `DW_AT_language` is C.
fn unit_language_is_c(
    entries: &mut gimli::EntriesRaw<'_, Reader>,
    abbrev: &gimli::Abbreviation,
) -> Result<bool, gimli::Error> {
    let mut language_c = false;
    for spec in abbrev.attributes() {
        let attr = entries.read_attribute(*spec)?;
        if let gimli::AttributeValue::Language(language) = attr.value() {
            language_c = matches!(
                language,
                gimli::DW_LANG_C89
                    | gimli::DW_LANG_C
                    | gimli::DW_LANG_C99
                    | gimli::DW_LANG_C11
                    | gimli::DW_LANG_C17
            );
        }
    }
    Ok(language_c)
}

/// Reads the attributes of the DIE at `die` up to its `DW_AT_sibling`, and returns that
/// sibling if it lies after the DIE (the rest of its attributes are then left unread: the
/// walk goes on from the sibling). A sibling that does not lie ahead is not followed, so a
/// crafted one cannot loop the walk; the DIE's children are then walked as usual.
fn read_forward_sibling(
    entries: &mut gimli::EntriesRaw<'_, Reader>,
    abbrev: &gimli::Abbreviation,
    die: gimli::UnitOffset<usize>,
) -> Result<Option<gimli::UnitOffset<usize>>, gimli::Error> {
    let specs = abbrev.attributes();
    let Some(at) = specs.iter().position(|s| s.name() == gimli::DW_AT_sibling) else {
        entries.skip_attributes(specs)?;
        return Ok(None);
    };
    // Skipping is cheaper than reading: gimli sums the sizes of fixed-size forms.
    let (before, from) = specs.split_at(at);
    entries.skip_attributes(before)?;
    let Some((sibling_spec, after)) = from.split_first() else {
        return Ok(None);
    };
    if let gimli::AttributeValue::UnitRef(sibling) = entries.read_attribute(*sibling_spec)?.value()
    {
        if sibling > die {
            return Ok(Some(sibling));
        }
    }
    entries.skip_attributes(after)?;
    Ok(None)
}

/// Where an inlined call was made from (`DW_AT_call_*`); unset for a subprogram.
struct CallSite {
    /// The file's index in the line program's table; `u32::MAX` when there is none.
    file: u32,
    line: u32,
    column: u32,
    discriminator: u32,
}

/// Reads the attributes of a subprogram or inlined call (its abbreviation `abbrev`, at
/// `entries`) into its `ranges` and its `call` site (filled in, not returned: returned, the
/// two were copied for every DIE, +2.4 % of icount's dwarf-cold). Attributes nobody reads here (names, types,
/// declarations) are skipped in runs: gimli sums the sizes of fixed-size forms instead of
/// decoding each.
fn read_function_attributes(
    unit: &gimli::UnitRef<'_, Reader>,
    entries: &mut gimli::EntriesRaw<'_, Reader>,
    abbrev: &gimli::Abbreviation,
    version: u16,
    ranges: &mut RangeAttributes,
    call: &mut CallSite,
) -> Result<(), gimli::Error> {
    let mut specs = abbrev.attributes();
    while !specs.is_empty() {
        let unread = specs.iter().take_while(|s| !is_read(s.name())).count();
        let (skip, rest) = specs.split_at(unread);
        entries.skip_attributes(skip)?;
        let Some((spec, rest)) = rest.split_first() else {
            break;
        };
        specs = rest;
        let attr = entries.read_attribute(*spec)?;
        if ranges.read(unit, &attr)? {
            continue;
        }
        match attr.name() {
            gimli::DW_AT_call_file => {
                // DWARF 5 numbers files from 0; before, 0 meant "no file".
                if let gimli::AttributeValue::FileIndex(index) = attr.value() {
                    if index > 0 || version >= 5 {
                        call.file = u32::try_from(index).unwrap_or(u32::MAX);
                    }
                }
            }
            gimli::DW_AT_call_line => call.line = attr.udata_value().map_or(0, saturate),
            gimli::DW_AT_call_column => call.column = attr.udata_value().map_or(0, saturate),
            gimli::DW_AT_GNU_discriminator => {
                call.discriminator = attr.udata_value().map_or(0, saturate);
            }
            _ => {}
        }
    }
    Ok(())
}

impl FunctionTable {
    /// Walks `unit`'s DIEs once (see the module docs).
    pub(crate) fn read(unit: &gimli::UnitRef<'_, Reader>) -> Result<FunctionTable, FunctionsError> {
        let mut functions: Vec<FunctionDie> = Vec::new();
        let mut subprograms: Vec<Span> = Vec::new();
        let mut inlined: Vec<InlinedSpan> = Vec::new();
        let mut open: Vec<Open> = Vec::new();
        let version = unit.header.version();
        let mut entries = unit.entries_raw(None)?;
        // After a jump to a `DW_AT_sibling`, `entries` counts depths from the DIE jumped
        // to; `base_depth` is that DIE's depth in the unit.
        let mut base_depth = 0;
        let mut language_c = false;
        while !entries.is_empty() {
            let die = entries.next_offset();
            let depth = base_depth + entries.next_depth();
            let Some(abbrev) = entries.read_abbreviation()? else {
                continue;
            };
            // Every DIE at or above an open one's depth closes it (a sibling of an inlined
            // call that is a lexical block must close the call).
            while open.last().is_some_and(|o| o.depth >= depth) {
                open.pop();
            }
            let tag = abbrev.tag();
            if tag != gimli::DW_TAG_subprogram && tag != gimli::DW_TAG_inlined_subroutine {
                if depth == 0 {
                    language_c = unit_language_is_c(&mut entries, abbrev)?;
                } else if abbrev.has_children() && holds_no_code(tag, language_c) {
                    if let Some(sibling) = read_forward_sibling(&mut entries, abbrev, die)? {
                        entries = unit.entries_raw(Some(sibling))?;
                        base_depth = depth;
                    }
                } else {
                    entries.skip_attributes(abbrev.attributes())?;
                }
                continue;
            }
            let mut ranges = RangeAttributes::default();
            let mut call = CallSite {
                file: u32::MAX,
                line: 0,
                column: 0,
                discriminator: 0,
            };
            read_function_attributes(unit, &mut entries, abbrev, version, &mut ranges, &mut call)?;
            let index = u32::try_from(functions.len()).map_err(|_| FunctionsError::TooMany)?;
            // A subprogram has no call site: its call fields stay unset.
            let entry = FunctionDie {
                // A unit over 4 GiB: refused rather than misread.
                die: u32::try_from(die.0).map_err(|_| FunctionsError::TooMany)?,
                call_file: call.file,
                call_line: call.line,
                call_column: call.column,
                call_discriminator: call.discriminator,
                inlined_start: 0,
                inlined_end: 0,
            };
            if tag == gimli::DW_TAG_subprogram {
                // A subprogram, nested or not, is a function of its own; without code it
                // owns nothing (an abstract instance, a declaration).
                let has_code = ranges.for_each(unit, |begin, end| {
                    subprograms.push(Span {
                        begin,
                        end,
                        function: index,
                    });
                })?;
                if has_code {
                    functions.push(entry);
                }
                open.push(Open {
                    depth,
                    owner: has_code.then_some(index),
                    inlined_depth: 0,
                });
                continue;
            }
            // An inlined call: it belongs to the subprogram around it, if any.
            let (owner, inlined_depth) = match open.last() {
                Some(&Open {
                    owner: Some(owner),
                    inlined_depth,
                    ..
                }) => (owner, inlined_depth),
                _ => {
                    open.push(Open {
                        depth,
                        owner: None,
                        inlined_depth: 0,
                    });
                    continue;
                }
            };
            if usize::try_from(inlined_depth).map_or(true, |d| d >= MAX_INLINED_DEPTH) {
                return Err(FunctionsError::TooDeep);
            }
            functions.push(entry);
            ranges.for_each(unit, |begin, end| {
                inlined.push(InlinedSpan {
                    owner,
                    depth: inlined_depth,
                    span: Span {
                        begin,
                        end,
                        function: index,
                    },
                });
            })?;
            open.push(Open {
                depth,
                owner: Some(owner),
                inlined_depth: inlined_depth + 1,
            });
        }
        Ok(FunctionTable::sorted(functions, subprograms, inlined))
    }

    /// The table of a walk's results: spans sorted, each subprogram given its slice of the
    /// inlined calls.
    fn sorted(
        mut functions: Vec<FunctionDie>,
        mut subprograms: Vec<Span>,
        mut inlined: Vec<InlinedSpan>,
    ) -> FunctionTable {
        subprograms.sort_unstable_by_key(|span| span.begin);
        inlined.sort_unstable_by_key(|i| (i.owner, i.depth, i.span.begin));
        // Each subprogram's slice of `inlined`.
        let mut start = 0;
        while let Some(first) = inlined.get(start) {
            let owner = first.owner;
            let end = start + inlined[start..].partition_point(|i| i.owner == owner);
            if let Some(function) = functions.get_mut(owner as usize) {
                function.inlined_start = u32::try_from(start).unwrap_or(u32::MAX);
                function.inlined_end = u32::try_from(end).unwrap_or(u32::MAX);
            }
            start = end;
        }
        FunctionTable {
            functions: functions.into_boxed_slice(),
            subprograms: subprograms.into_boxed_slice(),
            inlined: inlined.into_boxed_slice(),
        }
    }

    /// The subprogram whose code holds `probe`, and the inlined calls there, outermost
    /// first, appended to `chain` (cleared first). False when no subprogram holds `probe`.
    pub(crate) fn chain_at(&self, probe: u64, chain: &mut Vec<u32>) -> bool {
        chain.clear();
        let Ok(found) = self
            .subprograms
            .binary_search_by(|span| range_order(span.begin, span.end, probe))
        else {
            return false;
        };
        let Some(&Span { function, .. }) = self.subprograms.get(found) else {
            return false;
        };
        chain.push(function);
        let Some(owner) = self.functions.get(function as usize) else {
            return true;
        };
        let mut inlined = self
            .inlined
            .get(owner.inlined_start as usize..owner.inlined_end as usize)
            .unwrap_or_default();
        // Sorted by depth, then start: at each depth, binary search for the call holding
        // `probe`; the next depth's calls lie after it.
        for depth in 0u32.. {
            let search = inlined.binary_search_by(|i| {
                i.depth
                    .cmp(&depth)
                    .then_with(|| range_order(i.span.begin, i.span.end, probe))
            });
            let Ok(at) = search else { break };
            let Some(found) = inlined.get(at) else { break };
            chain.push(found.span.function);
            inlined = inlined.get(at + 1..).unwrap_or_default();
        }
        true
    }

    /// The function or call at `index` (from [`FunctionTable::chain_at`]).
    pub(crate) fn get(&self, index: u32) -> Option<&FunctionDie> {
        self.functions.get(index as usize)
    }

    /// How many functions and calls the table holds (the size of a per-entry cache).
    pub(crate) fn len(&self) -> usize {
        self.functions.len()
    }
}
