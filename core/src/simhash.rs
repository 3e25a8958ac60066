//! Charikar's simhash, 64 bits (Manku et al. §2).
//!
//! Each feature hash votes on every bit: +1 where its bit is set, −1 where it is clear (or
//! ± its weight). Bit i of the fingerprint is 1 when the sum for bit i is positive. A text
//! without features therefore has fingerprint 0 (`0000000000000000`).
//!
//! The unweighted count runs bit-sliced: each of 8 lanes holds eight 8-bit counters (one
//! per bit of a hash byte), incremented by a table lookup per byte and spilled into wide
//! counters every 255 features, so a feature costs 8 lookups and 8 additions, not 64.

use crate::features::{for_each_feature, FeatureOptions};

/// Spreads the 8 bits of a byte into the low bit of 8 bytes.
static SPREAD: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut bit = 0;
        while bit < 8 {
            if byte & (1 << bit) != 0 {
                table[byte] |= 1 << (8 * bit);
            }
            bit += 1;
        }
        byte += 1;
    }
    table
};

/// Features are buffered and counted a batch at a time, so the lane counters of the batch
/// loop stay in registers; a batch of 255 cannot overflow an 8-bit lane counter.
const BATCH: usize = 255;

pub struct SimhashCounter {
    batch: [u64; BATCH],
    in_batch: usize,
    ones: [u64; 64],
    features: u64,
}

impl Default for SimhashCounter {
    fn default() -> Self {
        SimhashCounter {
            batch: [0; BATCH],
            in_batch: 0,
            ones: [0; 64],
            features: 0,
        }
    }
}

impl SimhashCounter {
    #[inline]
    pub fn add(&mut self, feature: u64) {
        self.batch[self.in_batch] = feature;
        self.in_batch += 1;
        if self.in_batch == BATCH {
            self.count_batch();
        }
    }

    fn count_batch(&mut self) {
        let mut lanes = [0u64; 8];
        for &feature in &self.batch[..self.in_batch] {
            for (k, lane) in lanes.iter_mut().enumerate() {
                *lane += SPREAD[((feature >> (8 * k)) & 0xff) as usize];
            }
        }
        for (k, lane) in lanes.iter().enumerate() {
            for j in 0..8 {
                self.ones[8 * k + j] += (lane >> (8 * j)) & 0xff;
            }
        }
        self.features += self.in_batch as u64;
        self.in_batch = 0;
    }

    pub fn finish(mut self) -> u64 {
        self.count_batch();
        (0..64)
            .filter(|&i| 2 * self.ones[i] > self.features)
            .fold(0, |fp, i| fp | 1 << i)
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
