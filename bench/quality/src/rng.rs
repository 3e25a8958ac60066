//! SplitMix64 (Steele, Lea and Flood, 2014): a few lines, no dependency, and fully determined
//! by its seed, so every run of the evaluation draws exactly the same samples.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` by multiply-shift (Lemire); the bias, under n / 2^64, is immaterial.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "empty range");
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// `k` distinct items in random order (a partial Fisher–Yates shuffle of a copy).
    pub fn sample<T: Copy>(&mut self, items: &[T], k: usize) -> Vec<T> {
        let mut all = items.to_vec();
        let k = k.min(all.len());
        for i in 0..k {
            let j = i + self.below(all.len() - i);
            all.swap(i, j);
        }
        all.truncate(k);
        all
    }
}
