//! Charikar's simhash, 64 bits (Manku et al. §2).
//!
//! Each feature hash votes on every bit: +1 where its bit is set, −1 where it is clear (or
//! ± its weight). Bit i of the fingerprint is 1 when the sum for bit i is positive. A text
//! without features therefore has fingerprint 0 (`0000000000000000`).
//!
//! The unweighted count runs bit-sliced across the 64 bit positions: `planes[j]` holds bit j
//! of all 64 counters, so adding a feature is a handful of word-wide logic operations, not 64
//! additions. Features are added 16 at a time with a Harley–Seal carry-save adder tree
//! (about 5 operations per feature); the final comparison with half the feature count is a
//! bit-sliced comparison too.

use crate::text::features::{for_each_feature, FeatureOptions};

/// Features are folded in groups of this size by one carry-save adder tree.
const GROUP: usize = 16;

pub struct SimhashCounter {
    group: [u64; GROUP],
    in_group: usize,
    /// Bit-sliced counters: bit i of `planes[j]` is bit j of the number of features folded
    /// in so far that have bit i set.
    planes: [u64; 64],
    /// Groups folded in so far (the count's planes above the lowest four hold at most this).
    groups: u64,
    features: u64,
}

impl Default for SimhashCounter {
    fn default() -> Self {
        SimhashCounter {
            group: [0; GROUP],
            in_group: 0,
            planes: [0; 64],
            groups: 0,
            features: 0,
        }
    }
}

/// Carry-save adder: adds three bit-sliced one-bit numbers, giving (carry, sum) slices.
#[inline(always)]
fn csa(a: u64, b: u64, c: u64) -> (u64, u64) {
    let u = a ^ b;
    ((a & b) | (u & c), u ^ c)
}

impl SimhashCounter {
    #[inline]
    pub fn add(&mut self, feature: u64) {
        self.group[self.in_group] = feature;
        self.in_group += 1;
        if self.in_group == GROUP {
            self.fold_group();
        }
    }

    /// Adds the 16 features of the group (Harley–Seal): the lowest four planes absorb them
    /// through a tree of carry-save adders, and what overflows them (one sixteen per bit at
    /// most) is added to the planes above with a ripple carry.
    fn fold_group(&mut self) {
        let d = &self.group;
        let [mut ones, mut twos, mut fours, mut eights] = [0, 1, 2, 3].map(|j| self.planes[j]);
        let mut eights_out = [0u64; 2];
        for (half, eights_half) in d.chunks_exact(8).zip(eights_out.iter_mut()) {
            let mut fours_out = [0u64; 2];
            for (quarter, fours_quarter) in half.chunks_exact(4).zip(fours_out.iter_mut()) {
                let (twos_a, o) = csa(ones, quarter[0], quarter[1]);
                let (twos_b, o) = csa(o, quarter[2], quarter[3]);
                ones = o;
                let (f, t) = csa(twos, twos_a, twos_b);
                twos = t;
                *fours_quarter = f;
            }
            let (e, f) = csa(fours, fours_out[0], fours_out[1]);
            fours = f;
            *eights_half = e;
        }
        let (mut carry, e) = csa(eights, eights_out[0], eights_out[1]);
        eights = e;
        self.planes[..4].copy_from_slice(&[ones, twos, fours, eights]);
        self.groups += 1;
        // The planes above the lowest four count sixteens, at most `groups` of them.
        let used = 64 - self.groups.leading_zeros() as usize;
        for plane in &mut self.planes[4..4 + used] {
            (*plane, carry) = (*plane ^ carry, *plane & carry);
        }
        self.features += self.in_group as u64;
        self.in_group = 0;
    }

    pub fn finish(mut self) -> u64 {
        let features = self.features + self.in_group as u64;
        if self.in_group > 0 {
            // Zero features vote for no bit: padding the last group changes no counter.
            self.group[self.in_group..].fill(0);
            self.fold_group();
        }
        // Bit i is set when its counter exceeds half the features, ⌊features / 2⌋:
        // compare all 64 counters with that bound at once, from the top plane down.
        let bound = features / 2;
        let used = 4 + (64 - self.groups.leading_zeros() as usize);
        let (mut greater, mut equal) = (0u64, u64::MAX);
        for j in (0..used.min(64)).rev() {
            let bound_bit = if bound >> j & 1 == 1 { u64::MAX } else { 0 };
            greater |= equal & self.planes[j] & !bound_bit;
            equal &= !(self.planes[j] ^ bound_bit);
        }
        greater
    }
}

/// The simhash of a text under the given feature options.
pub fn simhash_text(text: &[u8], options: &FeatureOptions) -> u64 {
    let mut counter = SimhashCounter::default();
    for_each_feature(text, options, |h| counter.add(h));
    counter.finish()
}

/// The simhash of weighted feature hashes: bit i is 1 when the weights of features with
/// bit i set outweigh those with it clear.
pub fn simhash_weighted(features: impl IntoIterator<Item = (u64, f64)>) -> u64 {
    let mut sums = [0f64; 64];
    for (h, w) in features {
        for (i, sum) in sums.iter_mut().enumerate() {
            *sum += if h >> i & 1 == 1 { w } else { -w };
        }
    }
    (0..64)
        .filter(|&i| sums[i] > 0.0)
        .fold(0, |fp, i| fp | 1 << i)
}

#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(features: &[u64]) -> u64 {
        simhash_weighted(features.iter().map(|&h| (h, 1.0)))
    }

    #[test]
    fn counter_matches_naive_vote() {
        let mut x = 0x9E3779B97F4A7C15u64;
        for n in [0usize, 1, 2, 3, 254, 255, 256, 1000, 4097] {
            let hs: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                })
                .collect();
            let mut c = SimhashCounter::default();
            hs.iter().for_each(|&h| c.add(h));
            assert_eq!(c.finish(), naive(&hs), "n = {n}");
        }
    }

    #[test]
    fn ties_and_empty_give_zero_bits() {
        assert_eq!(SimhashCounter::default().finish(), 0);
        let mut c = SimhashCounter::default();
        c.add(u64::MAX);
        c.add(0);
        assert_eq!(c.finish(), 0);
        let mut c = SimhashCounter::default();
        c.add(0xF0);
        assert_eq!(c.finish(), 0xF0);
    }

    #[test]
    fn weights_decide() {
        assert_eq!(simhash_weighted([(0b01, 2.0), (0b10, 1.0)]), 0b01);
        assert_eq!(simhash_weighted([(0b01, 1.0), (0b10, 2.0)]), 0b10);
        assert_eq!(simhash_weighted([(0b01, -1.0)]), !0b01);
        assert_eq!(hamming(0b1011, 0b0110), 3);
    }
}
