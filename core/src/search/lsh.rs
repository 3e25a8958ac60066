//! Locality-sensitive hashing of minhash sketches by banding (Indyk–Motwani; Leskovec,
//! Rajaraman and Ullman, *Mining of Massive Datasets* §3.4), for finding the pairs of texts
//! above a Jaccard threshold without comparing every pair.
//!
//! # Bands
//!
//! The first `bands × rows` minvalues of a sketch are cut into `bands` bands of `rows`
//! consecutive values. Two texts of resemblance s agree on a whole band with probability
//! s^rows, so they share at least one band with probability 1 − (1 − s^rows)^bands: an
//! S-curve that is low below its threshold and near 1 above it. Pairs sharing a band are
//! *candidates*; a candidate is *verified* when the Jaccard estimate of the whole sketches
//! is at least the threshold.
//!
//! # Band keys (part of the stored format)
//!
//! Band j's *value* is XXH3-64 ([`hash_bytes`]) of its `rows` minvalues as little-endian
//! u32s, so with rows = 14 the values are exactly the supershingles of
//! [`crate::signatures::supershingles`]. Its *key* puts the band number in the top [`BAND_BITS`] bits
//! and the value's top 54 bits below: `j << 54 | value >> 10`. Keys of different bands
//! therefore never collide, and two key vectors share a key exactly when they share a key at
//! the same position.
//!
//! # Parameters from a threshold
//!
//! [`params_for_threshold`] picks (bands, rows) as datasketch's `MinHashLSH` does: among all
//! bands × rows ≤ m, the pair minimizing `w_fp · FP + w_fn · FN`, where FP is the area under
//! the S-curve below the threshold and FN the area above the curve from the threshold to 1.

use crate::base::hash::hash_bytes;
use crate::base::interrupts;
use crate::signatures::minhash::MAX_NUM_HASHES;
use std::fmt;

/// Bits of a key that hold its band number: enough for [`MAX_NUM_HASHES`] bands of one row.
pub const BAND_BITS: u32 = 10;
const VALUE_BITS: u32 = 64 - BAND_BITS;
pub const MAX_BANDS: usize = 1 << BAND_BITS;
const _: () = assert!(MAX_BANDS >= MAX_NUM_HASHES);

/// Weights of false positives and false negatives when candidates are verified: a false
/// positive then costs one sketch comparison, a false negative a lost pair.
pub const VERIFIED_WEIGHTS: (f64, f64) = (0.1, 0.9);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandingError(pub String);

impl fmt::Display for BandingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A number of bands and of rows per band, validated against a sketch size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Banding {
    bands: usize,
    rows: usize,
}

impl Banding {
    /// `bands × rows` must fit in the sketch's `num_hashes` minvalues.
    pub fn new(bands: i64, rows: i64, num_hashes: usize) -> Result<Banding, BandingError> {
        if bands < 1 || rows < 1 {
            return Err(BandingError(format!(
                "bands and rows must be at least 1, not {bands} and {rows}"
            )));
        }
        if bands.saturating_mul(rows) > num_hashes as i64 {
            return Err(BandingError(format!(
                "{bands} bands of {rows} rows need {} minvalues, the sketch has {num_hashes}",
                bands.saturating_mul(rows)
            )));
        }
        Ok(Banding {
            bands: bands as usize,
            rows: rows as usize,
        })
    }

    pub fn bands(&self) -> usize {
        self.bands
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Band `band` of a sketch's values.
    #[inline]
    pub fn band<'a>(&self, values: &'a [u32], band: usize) -> &'a [u32] {
        &values[band * self.rows..(band + 1) * self.rows]
    }

    /// The probability that two texts of resemblance `s` share at least one band.
    pub fn candidate_probability(&self, s: f64) -> f64 {
        1.0 - (1.0 - s.powi(self.rows as i32)).powi(self.bands as i32)
    }

    /// The area under the S-curve from 0 to `threshold`: how much of the dissimilar range
    /// still becomes candidates.
    pub fn false_positive_area(&self, threshold: f64) -> f64 {
        integrate(|s| self.candidate_probability(s), 0.0, threshold)
    }

    /// The area above the S-curve from `threshold` to 1: how much of the similar range
    /// is missed.
    pub fn false_negative_area(&self, threshold: f64) -> f64 {
        integrate(|s| 1.0 - self.candidate_probability(s), threshold, 1.0)
    }
}

/// A banding chosen for a threshold, with its error areas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChosenBanding {
    pub banding: Banding,
    pub false_positive: f64,
    pub false_negative: f64,
}

/// The (bands, rows) with bands × rows ≤ `num_hashes` minimizing the weighted error areas
/// at `threshold` (datasketch's `_optimal_param`; ties keep the fewest bands, then rows).
pub fn params_for_threshold(
    threshold: f64,
    num_hashes: usize,
    false_positive_weight: f64,
    false_negative_weight: f64,
) -> Result<ChosenBanding, BandingError> {
    check_threshold(threshold)?;
    if !(1..=MAX_NUM_HASHES).contains(&num_hashes) {
        return Err(BandingError(format!(
            "num_hashes must be between 1 and {MAX_NUM_HASHES}"
        )));
    }
    let weight_ok = |w: f64| w.is_finite() && w >= 0.0;
    if !weight_ok(false_positive_weight)
        || !weight_ok(false_negative_weight)
        || false_positive_weight + false_negative_weight <= 0.0
    {
        return Err(BandingError(
            "the weights must be finite, non-negative and not both 0".into(),
        ));
    }
    let mut best: Option<(f64, ChosenBanding)> = None;
    for bands in 1..=num_hashes {
        interrupts::check();
        for rows in 1..=num_hashes / bands {
            let banding = Banding { bands, rows };
            let false_positive = banding.false_positive_area(threshold);
            let false_negative = banding.false_negative_area(threshold);
            let error =
                false_positive_weight * false_positive + false_negative_weight * false_negative;
            if best.as_ref().is_none_or(|(least, _)| error < *least) {
                let chosen = ChosenBanding {
                    banding,
                    false_positive,
                    false_negative,
                };
                best = Some((error, chosen));
            }
        }
    }
    Ok(best.expect("num_hashes >= 1 gives one candidate").1)
}

pub fn check_threshold(threshold: f64) -> Result<(), BandingError> {
    if threshold.is_finite() && threshold > 0.0 && threshold <= 1.0 {
        Ok(())
    } else {
        Err(BandingError(format!(
            "the Jaccard threshold must be greater than 0 and at most 1, not {threshold}"
        )))
    }
}

/// Adaptive Simpson quadrature to an absolute error of about 1e-12: the S-curve of many rows
/// is a steep step that a fixed grid would blur.
fn integrate(f: impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    /// A point of the curve: (s, f(s)).
    type Point = (f64, f64);
    /// Simpson's rule on [left, right] with midpoint `mid`, refined until the halves agree.
    fn step(
        f: &impl Fn(f64) -> f64,
        left: Point,
        mid: Point,
        right: Point,
        whole: f64,
        tolerance: f64,
        depth: u32,
    ) -> f64 {
        let half = |p: Point, q: Point, r: Point| (r.0 - p.0) / 6.0 * (p.1 + 4.0 * q.1 + r.1);
        let point = |s: f64| (s, f(s));
        let (left_mid, right_mid) = (
            point(0.5 * (left.0 + mid.0)),
            point(0.5 * (mid.0 + right.0)),
        );
        let (l, r) = (half(left, left_mid, mid), half(mid, right_mid, right));
        let delta = l + r - whole;
        if depth == 0 || delta.abs() <= 15.0 * tolerance {
            return l + r + delta / 15.0;
        }
        step(f, left, left_mid, mid, l, tolerance / 2.0, depth - 1)
            + step(f, mid, right_mid, right, r, tolerance / 2.0, depth - 1)
    }
    if b <= a {
        return 0.0;
    }
    // Start from 16 pieces so that a step narrower than the first Simpson samples is seen.
    const PIECES: usize = 16;
    let width = (b - a) / PIECES as f64;
    (0..PIECES)
        .map(|i| {
            let (x0, x1) = (a + i as f64 * width, a + (i + 1) as f64 * width);
            let (left, mid, right) = (
                (x0, f(x0)),
                (0.5 * (x0 + x1), f(0.5 * (x0 + x1))),
                (x1, f(x1)),
            );
            let whole = (x1 - x0) / 6.0 * (left.1 + 4.0 * mid.1 + right.1);
            step(&f, left, mid, right, whole, 1e-12 / PIECES as f64, 40)
        })
        .sum()
}

/// Band j's value: XXH3-64 of its minvalues as little-endian u32s (a supershingle when the
/// band has 14 rows).
#[inline]
pub fn band_value(band: &[u32]) -> u64 {
    // Bands of up to 32 rows (every banding chosen for 256 minvalues or fewer) are encoded
    // on the stack: this runs once per row and band.
    const STACK_ROWS: usize = 32;
    let encode = |bytes: &mut [u8]| {
        // Through arrays of 4, so each value is one store rather than a call to memcpy.
        let (chunks, _) = bytes.as_chunks_mut::<4>();
        for (chunk, v) in chunks.iter_mut().zip(band) {
            *chunk = v.to_le_bytes();
        }
    };
    if band.len() <= STACK_ROWS {
        let mut bytes = [0u8; 4 * STACK_ROWS];
        let bytes = &mut bytes[..4 * band.len()];
        encode(bytes);
        hash_bytes(bytes)
    } else {
        let mut bytes = vec![0u8; 4 * band.len()];
        encode(&mut bytes);
        hash_bytes(&bytes)
    }
}

/// The key of band `band` with value `value`: the band number above the value's top bits.
#[inline]
pub fn band_key(band: usize, value: u64) -> u64 {
    debug_assert!(band < MAX_BANDS);
    (band as u64) << VALUE_BITS | value >> BAND_BITS
}

/// The band number a key belongs to.
#[inline]
pub fn band_of_key(key: u64) -> usize {
    (key >> VALUE_BITS) as usize
}

/// The keys of a sketch's bands, band 0 first.
pub fn band_keys(values: &[u32], banding: &Banding) -> Vec<u64> {
    (0..banding.bands)
        .map(|j| band_key(j, band_value(banding.band(values, j))))
        .collect()
}

/// Whether two key vectors share a key. Keys are tagged with their band, so only equal
/// positions can match; vectors of different lengths are compared on their common bands.
pub fn share_a_band(a: &[u64], b: &[u64]) -> bool {
    first_shared_key(a, b).is_some()
}

/// The key of the lowest band two key vectors share, if any: where a join of band keys
/// (each key a row) reports a pair that shares several bands, so that it reports it once.
pub fn first_shared_key(a: &[u64], b: &[u64]) -> Option<u64> {
    a.iter().zip(b).find(|(x, y)| x == y).map(|(&key, _)| key)
}

/// Minhash sketches of equal size, one after another in one vector.
pub struct SketchTable {
    num_hashes: usize,
    values: Vec<u32>,
}

impl SketchTable {
    pub fn new(num_hashes: usize) -> SketchTable {
        assert!(num_hashes >= 1);
        SketchTable {
            num_hashes,
            values: Vec::new(),
        }
    }

    /// Bytes held per sketch.
    pub fn bytes_per_row(num_hashes: usize) -> usize {
        4 * num_hashes
    }

    pub fn push(&mut self, values: &[u32]) {
        assert_eq!(values.len(), self.num_hashes);
        self.values.extend_from_slice(values);
    }

    pub fn len(&self) -> usize {
        self.values.len() / self.num_hashes
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn num_hashes(&self) -> usize {
        self.num_hashes
    }

    #[inline]
    pub fn row(&self, i: u32) -> &[u32] {
        let start = i as usize * self.num_hashes;
        &self.values[start..start + self.num_hashes]
    }

    /// The Jaccard estimate of two rows, as [`crate::signatures::minhash::jaccard`] computes it.
    #[inline]
    pub fn jaccard(&self, i: u32, j: u32) -> f64 {
        let agreeing = self.row(i).iter().zip(self.row(j)).filter(|(x, y)| x == y);
        agreeing.count() as f64 / self.num_hashes as f64
    }

    /// Every row's (value of band `band`, row) into `sorted`, in order of value (rows of one
    /// value in any order: each pair of them is compared once either way).
    pub fn sort_band(&self, banding: &Banding, band: usize, sorted: &mut Vec<(u64, u32)>) {
        sorted.clear();
        sorted.extend(
            (0..self.len() as u32).map(|i| (band_value(banding.band(self.row(i), band)), i)),
        );
        sorted.sort_unstable_by_key(|&(value, _)| value);
    }

    /// Whether rows `i` and `j` first agree on a whole band at band `band`: pairs sharing
    /// several bands are then reported by the first only. Values are compared, not keys,
    /// so a collision of band hashes makes no candidate.
    #[inline]
    fn first_shared_band(&self, banding: &Banding, i: u32, j: u32, band: usize) -> bool {
        let (a, b) = (self.row(i), self.row(j));
        banding.band(a, band) == banding.band(b, band)
            && (0..band).all(|k| banding.band(a, k) != banding.band(b, k))
    }
}

/// Every verified pair of a [`SketchTable`] once: (i, j, Jaccard estimate) with i < j,
/// sharing a band and with an estimate of at least the threshold. One band is sorted at a
/// time (12 bytes a row beside the sketches), and a cancellation point follows each row's
/// comparisons with the rest of its run, so even a table of one repeated text streams its
/// n²/2 pairs.
pub struct BandPairs {
    sketches: SketchTable,
    banding: Banding,
    threshold: f64,
    band: usize,
    /// The band being read: (key, row) in order.
    sorted: Vec<(u64, u32)>,
    /// The run of equal keys being compared ends at `run_end`; (i, j) are the positions
    /// compared last.
    run_end: usize,
    i: usize,
    j: usize,
}

impl BandPairs {
    pub const fn bytes_per_row() -> usize {
        std::mem::size_of::<(u64, u32)>()
    }

    pub fn new(
        sketches: SketchTable,
        banding: Banding,
        threshold: f64,
    ) -> Result<BandPairs, BandingError> {
        check_threshold(threshold)?;
        Banding::new(
            banding.bands as i64,
            banding.rows as i64,
            sketches.num_hashes,
        )?;
        let mut pairs = BandPairs {
            sorted: Vec::with_capacity(sketches.len()),
            sketches,
            banding,
            threshold,
            band: 0,
            run_end: 0,
            i: 0,
            j: 0,
        };
        pairs.sort_band();
        Ok(pairs)
    }

    fn sort_band(&mut self) {
        interrupts::check();
        self.sketches
            .sort_band(&self.banding, self.band, &mut self.sorted);
        (self.run_end, self.i, self.j) = (0, 0, 0);
    }

    /// Moves to the next run of two or more rows with one band value, sorting the next
    /// band when this one is done; false when every band is.
    fn next_run(&mut self) -> bool {
        loop {
            let start = self.run_end;
            if start + 1 >= self.sorted.len() {
                if self.band + 1 == self.banding.bands {
                    return false;
                }
                self.band += 1;
                self.sort_band();
                continue;
            }
            let key = self.sorted[start].0;
            let len = self.sorted[start..]
                .iter()
                .take_while(|(k, _)| *k == key)
                .count();
            self.run_end = start + len;
            if len >= 2 {
                (self.i, self.j) = (start, start);
                return true;
            }
        }
    }
}

impl Iterator for BandPairs {
    type Item = (u32, u32, f64);

    fn next(&mut self) -> Option<(u32, u32, f64)> {
        loop {
            self.j += 1;
            if self.j >= self.run_end {
                self.i += 1;
                self.j = self.i + 1;
                interrupts::check();
                if self.j >= self.run_end {
                    if !self.next_run() {
                        return None;
                    }
                    continue;
                }
            }
            let (a, b) = (self.sorted[self.i].1, self.sorted[self.j].1);
            if !self
                .sketches
                .first_shared_band(&self.banding, a, b, self.band)
            {
                continue;
            }
            let estimate = self.sketches.jaccard(a, b);
            if estimate >= self.threshold {
                return Some((a.min(b), a.max(b), estimate));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::splitmix::splitmix64_next;
    use crate::signatures::minhash::tests::sketch;
    use crate::signatures::supershingles::supershingles;

    #[test]
    fn keys_carry_their_band_and_14_rows_are_supershingles() {
        let s = sketch(
            "a text with quite a few words in it, enough for several shingles",
            84,
            2,
        );
        let keys = band_keys(s.values(), &Banding::new(6, 14, 84).unwrap());
        let ss = supershingles(&s).unwrap();
        for (j, (&key, &value)) in keys.iter().zip(ss.values()).enumerate() {
            assert_eq!(band_of_key(key), j);
            assert_eq!(key, band_key(j, value));
        }
        // Identical bands at different positions give different keys.
        let same = vec![7u32; 8];
        let keys = band_keys(&same, &Banding::new(4, 2, 8).unwrap());
        assert_eq!(keys.len(), 4);
        assert!(keys.windows(2).all(|w| w[0] != w[1]));
        assert!(keys
            .iter()
            .all(|&k| k << BAND_BITS == band_value(&[7, 7]) >> BAND_BITS << BAND_BITS));
    }

    #[test]
    fn the_first_shared_key_is_of_the_lowest_band_both_share() {
        // (a band value's top bits are what its key keeps)
        let key = |band: usize, value: u64| band_key(band, value << 40);
        let a = [key(0, 1), key(1, 2), key(2, 3), key(3, 4)];
        let b = [key(0, 9), key(1, 2), key(2, 9), key(3, 4)];
        assert_eq!(first_shared_key(&a, &b), Some(key(1, 2)));
        assert_eq!(first_shared_key(&b, &a), Some(key(1, 2)));
        assert!(share_a_band(&a, &b));
        let c = [key(0, 8), key(1, 8), key(2, 8), key(3, 8)];
        assert_eq!(first_shared_key(&a, &c), None);
        assert!(!share_a_band(&a, &c));
        // different lengths: compared on the common bands
        assert_eq!(first_shared_key(&a[..1], &a), Some(key(0, 1)));
        assert_eq!(first_shared_key(&[], &a), None);
    }

    #[test]
    fn band_values_hash_little_endian_minvalues_of_any_length() {
        for len in [1u32, 14, 32, 33, 100] {
            let band: Vec<u32> = (0..len)
                .map(|i| 0x0102_0304u32.wrapping_mul(i + 1))
                .collect();
            let bytes: Vec<u8> = band.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(band_value(&band), hash_bytes(&bytes), "{len} rows");
        }
    }

    #[test]
    fn banding_limits() {
        assert!(Banding::new(0, 5, 84).is_err());
        assert!(Banding::new(5, -1, 84).is_err());
        assert_eq!(
            Banding::new(9, 10, 84).unwrap_err().0,
            "9 bands of 10 rows need 90 minvalues, the sketch has 84"
        );
        assert!(Banding::new(i64::MAX, i64::MAX, 84).is_err());
        assert_eq!(Banding::new(1024, 1, 1024).unwrap().bands(), 1024);
    }

    #[test]
    fn integrals_match_closed_forms() {
        // One band of one row: the curve is s, so FP = t²/2 and FN = (1 − t)²/2.
        let one = Banding::new(1, 1, 1).unwrap();
        assert!((one.false_positive_area(0.8) - 0.32).abs() < 1e-12);
        assert!((one.false_negative_area(0.8) - 0.02).abs() < 1e-12);
        // One band of r rows: ∫₀ᵗ s^r = t^(r+1)/(r+1), a steep curve for r = 200.
        let steep = Banding::new(1, 200, 200).unwrap();
        let expected = 0.99f64.powi(201) / 201.0;
        assert!((steep.false_positive_area(0.99) - expected).abs() < 1e-10);
    }

    /// datasketch 2.0's `_optimal_param(t, m, 0.5, 0.5)` (scipy's quad), for these inputs.
    #[test]
    fn parameters_match_datasketch() {
        for (t, m, bands, rows) in [
            (0.5, 84, 16, 5),
            (0.7, 84, 10, 8),
            (0.8, 84, 7, 12),
            (0.9, 84, 4, 21),
            (0.5, 128, 25, 5),
            (0.7, 128, 14, 9),
            (0.8, 128, 9, 13),
            (0.9, 128, 5, 25),
            (0.5, 256, 42, 6),
            (0.8, 256, 17, 15),
        ] {
            let chosen = params_for_threshold(t, m, 0.5, 0.5).unwrap();
            assert_eq!(
                (chosen.banding.bands(), chosen.banding.rows()),
                (bands, rows),
                "t = {t}, m = {m}"
            );
        }
        // Favouring recall: with verification, 0.9 on 84 minvalues is Alg. B's 6 × 14.
        let chosen = params_for_threshold(0.9, 84, 0.1, 0.9).unwrap();
        assert_eq!((chosen.banding.bands(), chosen.banding.rows()), (6, 14));
        assert!((chosen.false_positive - 0.0624).abs() < 1e-4);
        assert!((chosen.false_negative - 0.00494).abs() < 1e-4);
    }

    #[test]
    fn parameter_errors() {
        for t in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            assert!(params_for_threshold(t, 84, 0.5, 0.5).is_err(), "{t}");
        }
        assert!(params_for_threshold(0.8, 0, 0.5, 0.5).is_err());
        assert!(params_for_threshold(0.8, 1025, 0.5, 0.5).is_err());
        assert!(params_for_threshold(0.8, 84, 0.0, 0.0).is_err());
        assert!(params_for_threshold(0.8, 84, -1.0, 1.0).is_err());
        let exact = params_for_threshold(1.0, 84, 0.5, 0.5).unwrap();
        assert_eq!(exact.false_negative, 0.0);
    }

    /// Sketches of random texts drawn as near-copies of a few originals.
    fn clustered_sketches(rows: usize, num_hashes: usize, seed: u64) -> SketchTable {
        let mut state = seed;
        let mut table = SketchTable::new(num_hashes);
        let originals: Vec<Vec<u32>> = (0..rows / 20 + 1)
            .map(|_| {
                (0..num_hashes)
                    .map(|_| splitmix64_next(&mut state) as u32)
                    .collect()
            })
            .collect();
        for _ in 0..rows {
            let base = &originals[(splitmix64_next(&mut state) % originals.len() as u64) as usize];
            let changed = splitmix64_next(&mut state) % (num_hashes as u64 / 2);
            let mut v = base.clone();
            for _ in 0..changed {
                let at = (splitmix64_next(&mut state) % num_hashes as u64) as usize;
                v[at] = splitmix64_next(&mut state) as u32 % 4;
            }
            table.push(&v);
        }
        table
    }

    fn brute_force(table: &SketchTable, banding: &Banding, threshold: f64) -> Vec<(u32, u32, f64)> {
        let mut out = Vec::new();
        for i in 0..table.len() as u32 {
            for j in i + 1..table.len() as u32 {
                let shares = (0..banding.bands())
                    .any(|k| banding.band(table.row(i), k) == banding.band(table.row(j), k));
                let estimate = table.jaccard(i, j);
                if shares && estimate >= threshold {
                    out.push((i, j, estimate));
                }
            }
        }
        out
    }

    #[test]
    fn band_pairs_are_the_verified_candidates_each_once() {
        for (seed, threshold, bands, rows) in [(1, 0.5, 16, 5), (2, 0.8, 7, 12), (3, 0.3, 42, 2)] {
            let table = clustered_sketches(300, 84, seed);
            let banding = Banding::new(bands, rows, 84).unwrap();
            let expected = brute_force(&table, &banding, threshold);
            assert!(
                expected.len() > 200,
                "a test with pairs: {}",
                expected.len()
            );
            let mut got: Vec<_> = BandPairs::new(table, banding, threshold).unwrap().collect();
            got.sort_by(|a, b| a.partial_cmp(b).unwrap());
            assert_eq!(got, expected, "seed {seed}");
        }
    }

    #[test]
    fn one_repeated_sketch_gives_every_pair_once() {
        let mut table = SketchTable::new(16);
        for _ in 0..50 {
            table.push(&[3; 16]);
        }
        let pairs: Vec<_> = BandPairs::new(table, Banding::new(4, 4, 16).unwrap(), 1.0)
            .unwrap()
            .collect();
        assert_eq!(pairs.len(), 50 * 49 / 2);
        assert!(pairs.iter().all(|&(i, j, e)| i < j && e == 1.0));
    }

    #[test]
    fn empty_and_single_tables_have_no_pairs() {
        let banding = Banding::new(2, 2, 4).unwrap();
        assert_eq!(
            BandPairs::new(SketchTable::new(4), banding, 0.5)
                .unwrap()
                .count(),
            0
        );
        let mut one = SketchTable::new(4);
        one.push(&[1, 2, 3, 4]);
        assert_eq!(BandPairs::new(one, banding, 0.5).unwrap().count(), 0);
        assert!(BandPairs::new(SketchTable::new(4), Banding { bands: 3, rows: 2 }, 0.5).is_err());
    }
}
