//! The one table compiled rules are cached in: direct-mapped (a slot per hash, the newer
//! entry wins), keyed by a tag and an address, starting small and doubling as it fills up to
//! a fixed number of slots. The caller's [`super::UnwindCache`] keys it by (address space,
//! absolute address); each file's [`super::cfi::ModuleCfi`] by its ELF virtual addresses.

/// A cached rule table of at most `capacity` slots.
pub(crate) struct RuleTable<R> {
    slots: Vec<Slot<R>>,
    /// Slots in use (for growing the table).
    filled: usize,
    capacity: usize,
}

#[derive(Clone, Copy)]
struct Slot<R> {
    /// The key's tag; 0 marks an empty slot.
    tag: u64,
    addr: u64,
    /// `None`: no CFI covers the address.
    rule: Option<R>,
}

impl<R: Copy> RuleTable<R> {
    /// Slots allocated on first use (a power of two): enough for one stack.
    pub(crate) const INITIAL_SLOTS: usize = 64;

    /// An empty table of at most `capacity` slots (rounded up to a power of two); nothing is
    /// allocated before the first insert.
    pub(crate) fn new(capacity: usize) -> Self {
        RuleTable {
            slots: Vec::new(),
            filled: 0,
            capacity: capacity.max(1).next_power_of_two(),
        }
    }

    /// The most slots the table grows to.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slots allocated now.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The slot of (`tag`, `addr`) in a table of `len` slots (a power of two).
    fn slot_index(len: usize, tag: u64, addr: u64) -> usize {
        let hash = (addr ^ tag.rotate_left(40)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (hash >> 40) as usize & len.wrapping_sub(1)
    }

    /// The rule cached for (`tag`, `addr`); `tag` must not be 0.
    pub(crate) fn get(&self, tag: u64, addr: u64) -> Option<Option<R>> {
        let slot = self
            .slots
            .get(Self::slot_index(self.slots.len(), tag, addr))?;
        (slot.tag == tag && slot.addr == addr).then_some(slot.rule)
    }

    /// Caches `rule` for (`tag`, `addr`); `tag` must not be 0.
    pub(crate) fn insert(&mut self, tag: u64, addr: u64, rule: Option<R>) {
        if self.slots.is_empty()
            || (self.filled * 2 > self.slots.len() && self.slots.len() < self.capacity)
        {
            self.grow();
        }
        let index = Self::slot_index(self.slots.len(), tag, addr);
        if let Some(slot) = self.slots.get_mut(index) {
            if slot.tag == 0 {
                self.filled += 1;
            }
            *slot = Slot { tag, addr, rule };
        }
    }

    /// Doubles the table (or makes the first one), keeping what it holds.
    fn grow(&mut self) {
        let len = if self.slots.is_empty() {
            Self::INITIAL_SLOTS.min(self.capacity)
        } else {
            (self.slots.len() * 2).min(self.capacity)
        };
        let empty = Slot {
            tag: 0,
            addr: 0,
            rule: None,
        };
        let old = std::mem::replace(&mut self.slots, vec![empty; len]);
        self.filled = 0;
        for slot in old.into_iter().filter(|slot| slot.tag != 0) {
            let index = Self::slot_index(len, slot.tag, slot.addr);
            if let Some(new) = self.slots.get_mut(index) {
                if new.tag == 0 {
                    self.filled += 1;
                }
                *new = slot;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RuleTable;

    #[test]
    fn grows_keeping_entries_up_to_its_capacity() {
        let mut table = RuleTable::<u32>::new(1000);
        assert_eq!((table.len(), table.capacity()), (0, 1024));
        assert_eq!(table.get(1, 0x1000), None);
        table.insert(1, 0x1000, Some(7));
        table.insert(2, 0x1000, None);
        assert_eq!(table.len(), RuleTable::<u32>::INITIAL_SLOTS);
        assert_eq!(table.get(1, 0x1000), Some(Some(7)));
        assert_eq!(
            table.get(2, 0x1000),
            Some(None),
            "another tag, its own entry"
        );
        for addr in 0..5000u64 {
            table.insert(3, addr * 16, Some(addr as u32));
        }
        assert_eq!(table.len(), 1024, "bounded");
        // The last entries inserted are there (a direct-mapped table keeps the newest).
        assert_eq!(table.get(3, 4999 * 16), Some(Some(4999)));
        let kept = (0..5000u64)
            .filter(|&a| table.get(3, a * 16) == Some(Some(a as u32)))
            .count();
        assert!(kept > 500 && kept <= 1024, "{kept}");
    }
}
