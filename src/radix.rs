//! A stable radix sort of `(u64 key, value)` pairs, for the sorts on the hot paths: a batch's
//! addresses (each with its place in the input) and a symbol table's candidates.
//!
//! Lookups in address order share the index blocks, line-table rows and function ranges of
//! neighbouring addresses and answer a repeated address once; the kernel's batches
//! (`Kallsyms::find_symbols`) and an ELF file's (`Symbolizer::symbolize`) are walked so. The
//! sort is LSD over the keys less the smallest, 11 bits a pass over only the bits that
//! differ: one file's addresses share their high bits, so 20,000 random libc addresses take
//! 2 passes and 100,000 of a kernel's 30-odd MB of text 3, where a comparison sort makes ~15
//! comparisons per item.

/// Bits per digit: 2,048 buckets, whose counts fit in L1.
const RADIX_BITS: u32 = 11;

/// Below this many items a comparison sort is as quick and needs no second buffer.
const RADIX_FROM: usize = 256;

/// `items` in ascending order of their keys; items with equal keys keep their order.
pub(crate) fn sorted_by_key<T: Copy>(mut items: Vec<(u64, T)>) -> Vec<(u64, T)> {
    if items.len() < RADIX_FROM {
        items.sort_by_key(|&(key, _)| key);
        return items;
    }
    let (mut min, mut max) = (u64::MAX, 0);
    for &(key, _) in &items {
        min = min.min(key);
        max = max.max(key);
    }
    let bits = u64::BITS - (max - min).leading_zeros();
    let mut spare = items.clone();
    let buckets = 1usize << RADIX_BITS;
    let digit = |key: u64, shift: u32| ((key - min) >> shift) as usize & (buckets - 1);
    let mut counts = vec![0usize; buckets];
    let mut shift = 0;
    while shift < bits {
        counts.fill(0);
        for &(key, _) in &items {
            if let Some(count) = counts.get_mut(digit(key, shift)) {
                *count += 1;
            }
        }
        // Each digit's first place in the output.
        let mut next = 0;
        for count in counts.iter_mut() {
            let here = *count;
            *count = next;
            next += here;
        }
        for &item in &items {
            // The counts sum to `items.len()`, so every place is inside `spare`.
            if let Some(place) = counts.get_mut(digit(item.0, shift)) {
                if let Some(to) = spare.get_mut(*place) {
                    *to = item;
                }
                *place += 1;
            }
        }
        std::mem::swap(&mut items, &mut spare);
        shift += RADIX_BITS;
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(keys: Vec<u64>) {
        let items: Vec<(u64, usize)> = keys.iter().copied().zip(0..).collect();
        let mut expected = items.clone();
        expected.sort_by_key(|&(key, _)| key);
        assert_eq!(sorted_by_key(items), expected);
    }

    #[test]
    fn sorts_like_a_stable_sort_by_key() {
        let mut random = crate::test_support::xorshift64(0x2545_f491_4f6c_dd1d);
        for n in [0, 1, 255, 256, 257, 5_000] {
            // Full 64-bit spread (both ends included), a file's narrow spread with repeats
            // (profiles repeat addresses; equal ones keep input order), one address only.
            let mut wide: Vec<u64> = (0..n).map(|_| random()).collect();
            if n > 2 {
                wide[0] = u64::MAX;
                wide[1] = 0;
            }
            check(wide);
            check(
                (0..n)
                    .map(|_| 0x7f00_0000_0000 + random() % 0x3000)
                    .collect(),
            );
            check(vec![0xffff_ffff_8100_0000; n]);
        }
    }
}
