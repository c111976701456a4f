//! What perf 6.1 names an address in a file's PLT, for `stacksym perf` (src/perf/).
//!
//! stacksym names a PLT entry `TARGET@plt`, as objdump, gdb and llvm-symbolizer do. perf
//! 6.1 makes up such names too (`dso__synthesize_plt_symbols`, util/symbol-elf.c: one
//! `TARGET@plt` per `.rela.plt` relocation, in relocation order, over `.plt` after its
//! header, sized by `.plt`'s `sh_entsize` on x86), but only after it has read the file's
//! symbol table and given every symbol without a size its end at the next symbol
//! (`symbols__fixup_end`): `_init` (size 0 in glibc's `crti.o`, at the start of `.init`)
//! then reaches over `.plt`, `.plt.got` and `.plt.sec` to the first symbol of `.text`, and
//! the made-up symbols overlap it. perf's lookup (`symbols__find`) walks its red-black tree
//! of symbols from the root and answers the first node whose range holds the address, so
//! the entry's own symbol answers only where its node is reached before `_init`'s: which
//! one is a matter of the tree's shape, that is of every symbol the file has and the order
//! they were inserted in. Samples in one PLT entry come out `raise@plt+0x0` in one file and
//! `_init+0x30` in another; in `.plt.sec` (IBT), where perf makes up nothing, they are
//! `_init+OFF` or, where the walk passes `_init` by, `[unknown]`.
//!
//! So the tree is rebuilt here as perf builds it, and asked as perf asks it:
//! 1. the function, object and label symbols of the table perf reads (`dso__load_sym`:
//!    `.symtab`, else `.dynsym`), in table order, each at its start with its size;
//! 2. `symbols__fixup_end`, then `symbols__fixup_duplicate` (one symbol per address, by
//!    `choose_best_symbol`; the others erased from the tree);
//! 3. the made-up PLT symbols, inserted without any fixup;
//! 4. `symbols__find`.
//!
//! The tree is Linux's `lib/rbtree.c` (an equal start goes right); its insert and erase
//! rebalance exactly as the textbook red-black tree does, which is what is written here.
//! Addresses are ELF virtual ones (perf's are file offsets: in the one segment that holds
//! `.init`, `.plt` and `.text` the order is the same).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::Endianness;
use stacksym::elf::ElfFile;

/// The name perf gives an address in a PLT section, and the offset into that symbol; `None`
/// where perf's walk finds no symbol (it prints `[unknown]`).
pub type PerfAnswer = Option<(String, u64)>;

/// perf's symbol tree per file, built on the first question about one of its PLT addresses.
#[derive(Default)]
pub struct PerfPlt {
    trees: HashMap<PathBuf, Option<Tree>>,
}

impl PerfPlt {
    /// What perf names `virt` of `binary` (the file mapped), if `virt` lies in a PLT section
    /// (`.plt`, `.plt.sec`, `.plt.got`) of `binary`; `symbols` gives the file whose symbol
    /// table perf reads (the binary itself, or the debug file perf finds first), asked once
    /// per binary. `None` when `virt` is elsewhere, or when the files cannot be read as perf
    /// reads them (the caller keeps stacksym's answer then).
    pub fn name(
        &mut self,
        binary: &ElfFile,
        virt: u64,
        symbols: impl FnOnce() -> Option<PathBuf>,
    ) -> Option<PerfAnswer> {
        let key = binary.path();
        if !self.trees.contains_key(key) {
            let tree = build(symbols(), binary);
            self.trees.insert(key.to_path_buf(), tree);
        }
        let tree = self.trees.get(key)?.as_ref()?;
        if !tree.plt_sections.iter().any(|r| r.contains(&virt)) {
            return None;
        }
        Some(
            tree.find(virt)
                .map(|node| (node.name.clone(), virt.saturating_sub(node.start))),
        )
    }
}

/// All of `elf`'s bytes. An `ElfFile` hands out its bytes by range only, an empty slice for
/// a range past its end: its length is the longest range it gives (a binary search).
fn whole_file(elf: &ElfFile) -> &[u8] {
    let (mut fits, mut too_long) = (0usize, 1usize << 40);
    while too_long - fits > 1 {
        let mid = fits + (too_long - fits) / 2;
        if elf.bytes_in(0..mid).is_empty() {
            too_long = mid;
        } else {
            fits = mid;
        }
    }
    elf.bytes_in(0..fits)
}

/// `path`'s bytes, mapped.
fn map(path: &Path) -> Option<memmap2::Mmap> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: read only, for as long as the tree is built; a file truncated meanwhile by
    // another process would fault, a risk this tool accepts as `symbols.rs` does (the
    // library guards its own maps, see src/elf/sigbus.rs).
    unsafe { memmap2::Mmap::map(&file) }.ok()
}

/// perf's tree for `binary`, its symbols from the debug file `symbols` if given.
fn build(symbols: Option<PathBuf>, binary: &ElfFile) -> Option<Tree> {
    let runtime = whole_file(binary);
    let table = match symbols {
        Some(path) => Some(map(&path)?),
        None => None,
    };
    let table_bytes: &[u8] = table.as_deref().unwrap_or(runtime);
    match object::FileKind::parse(runtime).ok()? {
        object::FileKind::Elf64 => {
            build_from::<elf::FileHeader64<Endianness>>(table_bytes, runtime)
        }
        object::FileKind::Elf32 => {
            build_from::<elf::FileHeader32<Endianness>>(table_bytes, runtime)
        }
        _ => None,
    }
}

fn build_from<Elf: FileHeader<Endian = Endianness>>(table: &[u8], runtime: &[u8]) -> Option<Tree> {
    let (t_header, r_header) = (Elf::parse(table).ok()?, Elf::parse(runtime).ok()?);
    let (endian, r_endian) = (t_header.endian().ok()?, r_header.endian().ok()?);
    let t_sections = t_header.sections(endian, table).ok()?;
    let r_sections = r_header.sections(r_endian, runtime).ok()?;
    let machine = r_header.e_machine(r_endian);
    let arm = machine == elf::EM_ARM || machine == elf::EM_AARCH64;

    let mut tree = Tree::default();
    let mut symtab = t_sections.symbols(endian, table, elf::SHT_SYMTAB).ok()?;
    if symtab.is_empty() {
        symtab = t_sections.symbols(endian, table, elf::SHT_DYNSYM).ok()?;
    }
    for sym in symtab.iter() {
        let kind = sym.st_type();
        let (shndx, name_at) = (sym.st_shndx(endian), sym.st_name(endian));
        let defined = name_at != 0 && shndx != elf::SHN_UNDEF;
        let visibility = sym.st_visibility();
        let label = kind == elf::STT_NOTYPE
            && defined
            && shndx != elf::SHN_ABS
            && visibility != elf::STV_HIDDEN
            && visibility != elf::STV_INTERNAL;
        let function_or_object =
            matches!(kind, elf::STT_FUNC | elf::STT_GNU_IFUNC | elf::STT_OBJECT) && defined;
        if !label && !function_or_object {
            continue;
        }
        let raw = sym.name(endian, symtab.strings()).ok()?;
        if arm && raw.first() == Some(&b'$') && raw.get(1).is_some_and(|c| b"adtx".contains(c)) {
            continue;
        }
        if shndx == elf::SHN_ABS {
            continue;
        }
        // perf gives up the whole table on a section it cannot get (`goto out_elf_end`).
        let index = object::SectionIndex(usize::from(shndx.0));
        let mut section = t_sections.section(index).ok()?;
        if section.sh_type(endian) == elf::SHT_NOBITS {
            section = r_sections.section(index).ok()?;
        }
        if section.sh_flags(endian).0 & elf::SHF_ALLOC.0 == 0 {
            continue;
        }
        if label {
            // Section names from the runtime file's string table, as perf reads them.
            let name = r_sections
                .section_name(r_endian, section)
                .unwrap_or_default();
            let has = |word: &[u8]| name.windows(word.len()).any(|w| w == word);
            if !has(b"text") && !has(b"data") {
                continue;
            }
        }
        let mut start: u64 = sym.st_value(endian).into();
        if machine == elf::EM_ARM && kind == elf::STT_FUNC {
            start &= !1;
        }
        let size: u64 = sym.st_size(endian).into();
        tree.insert(Node::new(start, size, sym.st_bind(), perf_demangled(raw)));
    }
    if tree.len == 0 {
        return None;
    }
    tree.fixup_end();
    tree.fixup_duplicate();

    // dso__synthesize_plt_symbols, over the runtime file.
    let mut plt_sections = Vec::new();
    for name in [&b".plt"[..], b".plt.sec", b".plt.got"] {
        if let Some((_, section)) = r_sections.section_by_name(r_endian, name) {
            let start: u64 = section.sh_addr(r_endian).into();
            let size: u64 = section.sh_size(r_endian).into();
            plt_sections.push(start..start.saturating_add(size));
        }
    }
    tree.plt_sections = plt_sections;
    synthesize_plt(&mut tree, r_header, r_endian, runtime, &r_sections);
    Some(tree)
}

/// perf 6.1's `dso__synthesize_plt_symbols`: nothing when the runtime file lacks a
/// `SHT_DYNSYM` `.dynsym`, `.rela.plt`/`.rel.plt` linked to it, or `.plt`.
fn synthesize_plt<Elf: FileHeader<Endian = Endianness>>(
    tree: &mut Tree,
    header: &Elf,
    endian: Endianness,
    data: &[u8],
    sections: &object::read::elf::SectionTable<'_, Elf>,
) -> Option<()> {
    let dynsym_index = sections
        .iter()
        .position(|s| s.sh_type(endian) == elf::SHT_DYNSYM)?;
    let dynsym = sections.symbols(endian, data, elf::SHT_DYNSYM).ok()?;
    let (_, rel) = sections
        .section_by_name(endian, b".rela.plt")
        .or_else(|| sections.section_by_name(endian, b".rel.plt"))?;
    if rel.sh_link(endian) as usize != dynsym_index {
        return None;
    }
    let (_, plt) = sections.section_by_name(endian, b".plt")?;
    let entsize: u64 = plt.sh_entsize(endian).into();
    let (header_size, entry_size) = match header.e_machine(endian) {
        elf::EM_ARM => (20, 12),
        elf::EM_AARCH64 => (32, 16),
        elf::EM_SPARC => (48, 12),
        elf::EM_SPARCV9 => (128, 32),
        _ => (entsize, entsize),
    };
    let rel_entsize: u64 = rel.sh_entsize(endian).into();
    if rel_entsize == 0 {
        return None;
    }
    let rel_size: u64 = rel.sh_size(endian).into();
    let count = rel_size / rel_entsize;
    let bytes = rel.data(endian, data).ok()?;
    let plt_start: u64 = plt.sh_addr(endian).into();
    let mut at = plt_start.saturating_add(header_size);
    let is_64 = header.is_class_64();
    for i in 0..count {
        // r_info: the symbol index is its high 32 bits (64-bit files) or 24 (32-bit).
        let offset = usize::try_from(i.checked_mul(rel_entsize)?).ok()?;
        let symbol = if is_64 {
            let info = read_u64(bytes, offset.checked_add(8)?, endian)?;
            (info >> 32) as usize
        } else {
            let info = read_u32(bytes, offset.checked_add(4)?, endian)?;
            (info >> 8) as usize
        };
        let name = dynsym
            .symbol(object::SymbolIndex(symbol))
            .ok()
            .and_then(|s| s.name(endian, dynsym.strings()).ok())
            .unwrap_or_default();
        let name = format!("{}@plt", perf_demangled(name));
        tree.insert(Node::new(at, entry_size, elf::STB_GLOBAL, name));
        at = at.saturating_add(entry_size);
    }
    Some(())
}

fn read_u64(bytes: &[u8], at: usize, endian: Endianness) -> Option<u64> {
    let raw: [u8; 8] = bytes.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(match endian {
        Endianness::Little => u64::from_le_bytes(raw),
        Endianness::Big => u64::from_be_bytes(raw),
    })
}

fn read_u32(bytes: &[u8], at: usize, endian: Endianness) -> Option<u32> {
    let raw: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(match endian {
        Endianness::Little => u32::from_le_bytes(raw),
        Endianness::Big => u32::from_be_bytes(raw),
    })
}

/// A symbol's name as perf keeps it: demangled without parameters.
fn perf_demangled(raw: &[u8]) -> String {
    let raw = String::from_utf8_lossy(raw);
    let demangled = stacksym::demangle::demangle(&raw);
    super::spelling::perf_name(&demangled).to_string()
}

/// One symbol of perf's tree (`struct symbol` with its `rb_node`).
struct Node {
    start: u64,
    /// Exclusive, except that a symbol of size 0 holds its start (`symbols__find`).
    end: u64,
    binding: elf::SymbolBind,
    name: String,
    left: Option<usize>,
    right: Option<usize>,
    parent: Option<usize>,
    red: bool,
}

impl Node {
    fn new(start: u64, size: u64, binding: elf::SymbolBind, name: String) -> Node {
        Node {
            start,
            end: start.saturating_add(size),
            binding,
            name,
            left: None,
            right: None,
            parent: None,
            red: true,
        }
    }
}

/// perf's `rb_root_cached` of symbols, nodes in an arena (erased ones stay, unlinked).
#[derive(Default)]
struct Tree {
    nodes: Vec<Node>,
    root: Option<usize>,
    /// Nodes in the tree.
    len: usize,
    /// The runtime file's `.plt`, `.plt.sec` and `.plt.got`, where perf's answer is asked.
    plt_sections: Vec<std::ops::Range<u64>>,
}

/// Which side of its parent a node hangs on.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Left,
    Right,
}

impl Tree {
    fn child(&self, n: usize, side: Side) -> Option<usize> {
        match side {
            Side::Left => self.nodes[n].left,
            Side::Right => self.nodes[n].right,
        }
    }

    fn set_child(&mut self, n: usize, side: Side, child: Option<usize>) {
        match side {
            Side::Left => self.nodes[n].left = child,
            Side::Right => self.nodes[n].right = child,
        }
    }

    /// The side of `parent` that `child` hangs on (a missing child: the side that has none),
    /// and the other side.
    fn sides(&self, parent: usize, child: Option<usize>) -> (Side, Side) {
        if self.nodes[parent].left == child {
            (Side::Left, Side::Right)
        } else {
            (Side::Right, Side::Left)
        }
    }

    fn is_red(&self, n: Option<usize>) -> bool {
        n.is_some_and(|n| self.nodes[n].red)
    }

    /// Puts `new` where `old` hangs (under `old`'s parent, or as the root).
    fn replace_child(&mut self, old: usize, new: Option<usize>, parent: Option<usize>) {
        match parent {
            None => self.root = new,
            Some(p) => {
                if self.nodes[p].left == Some(old) {
                    self.nodes[p].left = new;
                } else {
                    self.nodes[p].right = new;
                }
            }
        }
        if let Some(n) = new {
            self.nodes[n].parent = parent;
        }
    }

    /// Rotates `x` down to `side` (its child on the other side comes up).
    fn rotate(&mut self, x: usize, side: Side) {
        let other = match side {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        };
        let Some(y) = self.child(x, other) else {
            return;
        };
        let inner = self.child(y, side);
        self.set_child(x, other, inner);
        if let Some(i) = inner {
            self.nodes[i].parent = Some(x);
        }
        let parent = self.nodes[x].parent;
        self.replace_child(x, Some(y), parent);
        self.set_child(y, side, Some(x));
        self.nodes[x].parent = Some(y);
    }

    /// `__symbols__insert`: down from the root, left when the start is below the node's,
    /// else right; then `rb_insert_color`.
    fn insert(&mut self, node: Node) {
        let n = self.nodes.len();
        let start = node.start;
        self.nodes.push(node);
        self.len += 1;
        let mut parent = None;
        let mut at = self.root;
        let mut side = Side::Left;
        while let Some(p) = at {
            parent = Some(p);
            side = if start < self.nodes[p].start {
                Side::Left
            } else {
                Side::Right
            };
            at = self.child(p, side);
        }
        self.nodes[n].parent = parent;
        match parent {
            None => self.root = Some(n),
            Some(p) => self.set_child(p, side, Some(n)),
        }
        self.insert_fixup(n);
    }

    fn insert_fixup(&mut self, mut n: usize) {
        while let Some(p) = self.nodes[n].parent.filter(|&p| self.nodes[p].red) {
            // A red node is never the root: it has a parent.
            let Some(g) = self.nodes[p].parent else { break };
            let (side, other) = self.sides(g, Some(p));
            let uncle = self.child(g, other);
            if self.is_red(uncle) {
                if let Some(u) = uncle {
                    self.nodes[u].red = false;
                }
                self.nodes[p].red = false;
                self.nodes[g].red = true;
                n = g;
                continue;
            }
            let mut p = p;
            if self.child(p, other) == Some(n) {
                self.rotate(p, side);
                p = n;
            }
            self.nodes[p].red = false;
            self.nodes[g].red = true;
            self.rotate(g, other);
            break;
        }
        if let Some(root) = self.root {
            self.nodes[root].red = false;
        }
    }

    fn first(&self) -> Option<usize> {
        let mut n = self.root?;
        while let Some(l) = self.nodes[n].left {
            n = l;
        }
        Some(n)
    }

    /// `rb_next`: the in-order successor.
    fn next(&self, n: usize) -> Option<usize> {
        if let Some(mut r) = self.nodes[n].right {
            while let Some(l) = self.nodes[r].left {
                r = l;
            }
            return Some(r);
        }
        let mut n = n;
        while let Some(p) = self.nodes[n].parent {
            if self.nodes[p].left == Some(n) {
                return Some(p);
            }
            n = p;
        }
        None
    }

    /// `symbols__fixup_end` (6.1): a symbol of size 0 ends where the next one starts; the
    /// last one, if of size 0, at the page after the one it starts in.
    fn fixup_end(&mut self) {
        let Some(mut prev) = self.first() else { return };
        while let Some(curr) = self.next(prev) {
            if self.nodes[prev].end == self.nodes[prev].start {
                self.nodes[prev].end = self.nodes[curr].start;
            }
            prev = curr;
        }
        let last = &mut self.nodes[prev];
        if last.end == last.start {
            last.end = (last.start.saturating_add(4095) & !4095).saturating_add(4096);
        }
    }

    /// `symbols__fixup_duplicate`: of neighbours with one start, the one
    /// `choose_best_symbol` does not keep is erased.
    fn fixup_duplicate(&mut self) {
        let mut nd = self.first();
        while let Some(curr) = nd {
            loop {
                nd = self.next(curr);
                let Some(next) = nd else { return };
                if self.nodes[curr].start != self.nodes[next].start {
                    break;
                }
                if self.first_stays(curr, next) {
                    self.erase(next);
                    continue;
                }
                nd = self.next(curr);
                self.erase(curr);
                break;
            }
        }
    }

    /// perf's `choose_best_symbol(a, b) == SYMBOL_A`.
    fn first_stays(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.nodes[a], &self.nodes[b]);
        let (size_a, size_b) = (a.end - a.start, b.end - b.start);
        if size_b == 0 && size_a > 0 {
            return true;
        }
        if size_a == 0 && size_b > 0 {
            return false;
        }
        let (weak_a, weak_b) = (a.binding == elf::STB_WEAK, b.binding == elf::STB_WEAK);
        if weak_a != weak_b {
            return weak_b;
        }
        let (global_a, global_b) = (a.binding == elf::STB_GLOBAL, b.binding == elf::STB_GLOBAL);
        if global_a != global_b {
            return global_a;
        }
        let underscores = |name: &str| name.bytes().take_while(|&c| c == b'_').count();
        let (u_a, u_b) = (underscores(&a.name), underscores(&b.name));
        if u_a != u_b {
            return u_b > u_a;
        }
        a.name.len() >= b.name.len()
    }

    /// `rb_erase`: a node with two children is replaced by its successor, which takes its
    /// colour; a black node taken out is made up for by `erase_fixup`.
    fn erase(&mut self, z: usize) {
        self.len -= 1;
        let (left, right, parent) = (
            self.nodes[z].left,
            self.nodes[z].right,
            self.nodes[z].parent,
        );
        let (x, x_parent, removed_red) = match (left, right) {
            (None, _) | (_, None) => {
                let child = left.or(right);
                self.replace_child(z, child, parent);
                (child, parent, self.nodes[z].red)
            }
            (Some(l), Some(r)) => {
                let mut y = r;
                while let Some(yl) = self.nodes[y].left {
                    y = yl;
                }
                let y_red = self.nodes[y].red;
                let x = self.nodes[y].right;
                let x_parent;
                if y == r {
                    x_parent = Some(y);
                } else {
                    x_parent = self.nodes[y].parent;
                    if let Some(yp) = x_parent {
                        self.nodes[yp].left = x;
                    }
                    if let Some(xn) = x {
                        self.nodes[xn].parent = x_parent;
                    }
                    self.nodes[y].right = Some(r);
                    self.nodes[r].parent = Some(y);
                }
                self.replace_child(z, Some(y), parent);
                self.nodes[y].left = Some(l);
                self.nodes[l].parent = Some(y);
                self.nodes[y].red = self.nodes[z].red;
                (x, x_parent, y_red)
            }
        };
        let node = &mut self.nodes[z];
        (node.left, node.right, node.parent) = (None, None, None);
        if !removed_red {
            self.erase_fixup(x, x_parent);
        }
    }

    fn erase_fixup(&mut self, mut x: Option<usize>, mut parent: Option<usize>) {
        while x != self.root && !self.is_red(x) {
            let Some(p) = parent else { break };
            let (side, other) = self.sides(p, x);
            // A black node taken out leaves its former sibling subtree non-empty.
            let Some(mut w) = self.child(p, other) else {
                break;
            };
            if self.nodes[w].red {
                self.nodes[w].red = false;
                self.nodes[p].red = true;
                self.rotate(p, side);
                let Some(sibling) = self.child(p, other) else {
                    break;
                };
                w = sibling;
            }
            let (near, far) = (self.child(w, side), self.child(w, other));
            if !self.is_red(near) && !self.is_red(far) {
                self.nodes[w].red = true;
                x = Some(p);
                parent = self.nodes[p].parent;
                continue;
            }
            if !self.is_red(far) {
                if let Some(n) = near {
                    self.nodes[n].red = false;
                }
                self.nodes[w].red = true;
                self.rotate(w, other);
                let Some(sibling) = self.child(p, other) else {
                    break;
                };
                w = sibling;
            }
            self.nodes[w].red = self.nodes[p].red;
            self.nodes[p].red = false;
            if let Some(f) = self.child(w, other) {
                self.nodes[f].red = false;
            }
            self.rotate(p, side);
            x = self.root;
            parent = None;
        }
        if let Some(n) = x {
            self.nodes[n].red = false;
        }
    }

    /// `symbols__find`: down from the root, left below a node's start, right past its end
    /// (or at its end, unless the node has size 0), else this node.
    fn find(&self, ip: u64) -> Option<&Node> {
        let mut at = self.root;
        while let Some(n) = at {
            let node = &self.nodes[n];
            if ip < node.start {
                at = node.left;
            } else if ip > node.end || (ip == node.end && ip != node.start) {
                at = node.right;
            } else {
                return Some(node);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::PerfPlt;

    /// testdata/unwind/plt-stubs (testdata/build-unwind.sh): what perf 6.1 prints for its PLT
    /// addresses, as tests/perf_plt.rs sees it print them in a recording (`_init+0x30` for
    /// the first entry, `ffsl@plt`; `abs@plt+0x0` for the second), and the `.plt.got` entry
    /// (`__cxa_finalize`, never sampled there), where perf's walk finds nothing.
    #[test]
    fn plt_stubs_answers() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/unwind/plt-stubs");
        let elf = stacksym::elf::ElfFile::open(path).expect("testdata/unwind/plt-stubs");
        let mut plt = PerfPlt::default();
        let mut name = |virt: u64| {
            plt.name(&elf, virt, || None).map(|answer| {
                answer.map_or("[unknown]".to_string(), |(n, o)| format!("{n}+{o:#x}"))
            })
        };
        assert_eq!(name(0x1030).as_deref(), Some("_init+0x30"));
        assert_eq!(name(0x1036).as_deref(), Some("_init+0x36"));
        assert_eq!(name(0x1040).as_deref(), Some("abs@plt+0x0"));
        assert_eq!(name(0x10a6).as_deref(), Some("ffsll@plt+0x6"));
        assert_eq!(name(0x10b0).as_deref(), Some("[unknown]"));
        // Outside the PLT sections: not asked (stacksym's answer stands).
        assert_eq!(name(0x1000), None);
        assert_eq!(name(0x10c0), None);
    }
}
