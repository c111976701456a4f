//! The order a batch is answered in: its addresses sorted, each with its place in the input.
//!
//! A radix sort over just the bytes in which the batch's addresses differ: the addresses of
//! one file share their high bytes (libc's fit in 3 bytes, a kernel's differ in the low 4),
//! so a batch of 20,000 takes 3 counting passes where a comparison sort needs ~14
//! comparisons per address (callgrind, 20,000 libc addresses: 170 instructions per address
//! for `sort_unstable_by_key`).

use crate::addr::VirtAddr;

/// Below this many addresses a comparison sort is as quick and needs no second buffer.
const RADIX_FROM: usize = 256;

/// `items` sorted by address; items with equal addresses stay in their input order.
pub(super) fn sorted_by_address<T: Copy>(mut items: Vec<(VirtAddr, T)>) -> Vec<(VirtAddr, T)> {
    if items.len() < RADIX_FROM {
        items.sort_by_key(|&(addr, _)| addr);
        return items;
    }
    let (mut all_ones, mut any_ones) = (u64::MAX, 0u64);
    for (addr, _) in &items {
        all_ones &= addr.0;
        any_ones |= addr.0;
    }
    let varying = all_ones ^ any_ones;
    let mut other = items.clone();
    for shift in (0..64).step_by(8) {
        if (varying >> shift) & 0xff == 0 {
            // Every address has the same byte here: this pass would keep the order.
            continue;
        }
        let digit = |addr: VirtAddr| ((addr.0 >> shift) & 0xff) as usize;
        // Where each digit's items start in the output.
        let mut next = [0usize; 256];
        for (addr, _) in &items {
            next[digit(*addr)] += 1;
        }
        let mut start = 0;
        for slot in &mut next {
            let count = *slot;
            *slot = start;
            start += count;
        }
        for &item in &items {
            let slot = &mut next[digit(item.0)];
            // `next` counted every item, so its slot is inside `other` (same length).
            if let Some(place) = other.get_mut(*slot) {
                *place = item;
            }
            *slot += 1;
        }
        std::mem::swap(&mut items, &mut other);
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(addrs: Vec<u64>) {
        let items: Vec<(VirtAddr, usize)> = addrs
            .iter()
            .enumerate()
            .map(|(i, &a)| (VirtAddr(a), i))
            .collect();
        let mut expected = items.clone();
        expected.sort_by_key(|&(addr, _)| addr);
        assert_eq!(sorted_by_address(items), expected);
    }

    #[test]
    fn sorts_like_a_stable_sort_by_address() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for n in [0, 1, 255, 256, 257, 5_000] {
            // Full 64-bit spread, a file's narrow spread with repeats (profiles repeat
            // addresses; equal ones must keep input order), and one address only.
            check((0..n).map(|_| random()).collect());
            check(
                (0..n)
                    .map(|_| 0x7f00_0000_0000 + random() % 0x3000)
                    .collect(),
            );
            check(vec![0xffff_ffff_8100_0000; n]);
        }
    }
}
