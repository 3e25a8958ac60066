//! How far minhash's Jaccard estimate lands from the exact Jaccard, by band of exact J, next
//! to the binomial model: with min-wise independent hash functions the number of agreeing
//! entries of an m-entry sketch is Binomial(m, J), so the estimate's standard deviation is
//! sqrt(J(1 − J)/m) and its expected absolute error E|X/m − J| (computed exactly here).
//! The core's hash family (multiply-add-shift on 32-bit keys) is only approximately
//! min-wise independent; a gap between measured and expected error would show that.

use crate::corpus::Doc;
use crate::precision_recall::reaches;
use crate::rng::Rng;
use crate::stats::{num, Table};
use std::collections::HashSet;

/// Bands of exact J, half-open except the last, which includes 1.
const BANDS: [(f64, f64); 4] = [(0.0, 0.2), (0.2, 0.5), (0.5, 0.8), (0.8, 1.0)];

/// A pair's exact Jaccard and minhash's estimate of it.
pub struct Estimate {
    pub exact: f64,
    pub estimate: f64,
}

#[derive(Default)]
struct Errors {
    pairs: usize,
    sum_exact: f64,
    sum_abs: f64,
    sum_squared: f64,
    sum_signed: f64,
    sum_expected_abs: f64,
    sum_variance: f64,
}

impl Errors {
    fn add(&mut self, e: &Estimate, num_hashes: usize) {
        let error = e.estimate - e.exact;
        self.pairs += 1;
        self.sum_exact += e.exact;
        self.sum_abs += error.abs();
        self.sum_squared += error * error;
        self.sum_signed += error;
        self.sum_expected_abs += expected_abs_error(e.exact, num_hashes);
        self.sum_variance += e.exact * (1.0 - e.exact) / num_hashes as f64;
    }

    fn row(&self, label: String) -> Vec<String> {
        let mean = |sum: f64| sum / self.pairs as f64;
        vec![
            label,
            self.pairs.to_string(),
            num(mean(self.sum_exact), 3),
            num(mean(self.sum_abs), 4),
            num(mean(self.sum_expected_abs), 4),
            num(mean(self.sum_squared).sqrt(), 4),
            num(mean(self.sum_variance).sqrt(), 4),
            num(mean(self.sum_signed), 4),
        ]
    }
}

/// Per band and overall. Pairs with J = 0 belong to no band: the estimate is 0 unless
/// two 32-bit minima collide, which the caller reports on its own.
pub fn print_table(estimates: &[Estimate], num_hashes: usize) {
    let mut bands: Vec<Errors> = BANDS.iter().map(|_| Errors::default()).collect();
    let mut overall = Errors::default();
    for e in estimates {
        let band = BANDS
            .iter()
            .rposition(|&(low, _)| reaches(e.exact, low))
            .expect("J >= 0");
        bands[band].add(e, num_hashes);
        overall.add(e, num_hashes);
    }
    let mut table = Table::new(&[
        "exact J",
        "pairs",
        "mean J",
        "MAE",
        "expected MAE",
        "RMSE",
        &format!("sqrt(J(1-J)/{num_hashes})"),
        "bias (est - J)",
    ]);
    for (&(low, high), errors) in BANDS.iter().zip(&bands) {
        let close = if high == 1.0 { ']' } else { ')' };
        table.row(errors.row(format!("[{low}, {high}{close}")));
    }
    table.row(overall.row("all".to_string()));
    table.print();
}

/// E|X/m − p| for X ~ Binomial(m, p).
fn expected_abs_error(p: f64, m: usize) -> f64 {
    // Symmetric under p ↔ 1 − p. From the side p <= 1/2, the first term (1 − p)^m is at
    // least 2^-m, no underflow at the sketch sizes evaluated.
    let p = p.min(1.0 - p);
    if p <= 0.0 {
        return 0.0;
    }
    let mut pmf = (1.0 - p).powi(m as i32);
    let mut sum = 0.0;
    for k in 0..=m {
        sum += pmf * (k as f64 / m as f64 - p).abs();
        pmf *= (m - k) as f64 / (k + 1) as f64 * p / (1.0 - p);
    }
    sum
}

/// Up to `count` distinct pairs (a < b) sharing at least one shingle: a random unit, a
/// random shingle of it, a random other unit holding that shingle. The draw favours pairs
/// sharing many shingles, which is what spreads the sample over the J range: uniform pairs
/// sharing a shingle would almost all share one piece of boilerplate.
pub fn shared_shingle_pairs(docs: &[Doc], count: usize, rng: &mut Rng) -> Vec<(u32, u32)> {
    let postings = Postings::new(docs);
    let mut pairs = HashSet::with_capacity(count);
    // Bounded, in case the corpus has fewer such pairs than asked for.
    for _ in 0..count * 100 {
        if pairs.len() == count {
            break;
        }
        let a = rng.below(docs.len()) as u32;
        let holders = postings.of(rng.pick(&docs[a as usize].shingles));
        if holders.len() < 2 {
            continue;
        }
        let b = rng.pick(holders);
        if b != a {
            pairs.insert((a.min(b), a.max(b)));
        }
    }
    let mut pairs: Vec<(u32, u32)> = pairs.into_iter().collect();
    // HashSet order differs between runs; the sample must not.
    pairs.sort_unstable();
    pairs
}

/// The units holding each shingle id, in one flat array (millions of small lists).
struct Postings {
    /// `units[starts[g]..starts[g + 1]]` hold shingle `g`.
    starts: Vec<usize>,
    units: Vec<u32>,
}

impl Postings {
    fn new(docs: &[Doc]) -> Postings {
        let ids = docs.iter().filter_map(|d| d.shingles.last()).max();
        let mut starts = vec![0; ids.map_or(0, |&id| id as usize + 1) + 1];
        for &g in docs.iter().flat_map(|d| &d.shingles) {
            starts[g as usize + 1] += 1;
        }
        for g in 1..starts.len() {
            starts[g] += starts[g - 1];
        }
        let mut filled = starts.clone();
        let mut units = vec![0; starts[starts.len() - 1]];
        for (u, d) in docs.iter().enumerate() {
            for &g in &d.shingles {
                units[filled[g as usize]] = u as u32;
                filled[g as usize] += 1;
            }
        }
        Postings { starts, units }
    }

    fn of(&self, shingle: u32) -> &[u32] {
        let g = shingle as usize;
        &self.units[self.starts[g]..self.starts[g + 1]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_abs_error_of_a_binomial() {
        assert_eq!(expected_abs_error(0.0, 84), 0.0);
        assert_eq!(expected_abs_error(1.0, 84), 0.0);
        // X ~ Binomial(2, 1/2): |X/2 − 1/2| is 1/2, 0, 1/2 with probabilities 1/4, 1/2, 1/4.
        assert!((expected_abs_error(0.5, 2) - 0.25).abs() < 1e-12);
        assert!((expected_abs_error(0.3, 84) - expected_abs_error(0.7, 84)).abs() < 1e-12);
        // Near the normal approximation sqrt(2/π)·σ for m = 84, p = 1/2.
        let normal = (2.0 / std::f64::consts::PI).sqrt() * (0.25f64 / 84.0).sqrt();
        assert!((expected_abs_error(0.5, 84) / normal - 1.0).abs() < 0.05);
    }

    #[test]
    fn sampled_pairs_share_a_shingle() {
        let doc = |row, shingles: &[u32]| Doc {
            row,
            tokens: shingles.len(),
            shingles: shingles.to_vec(),
        };
        let docs = [doc(0, &[0, 1]), doc(1, &[1, 2]), doc(2, &[3]), doc(3, &[0])];
        let pairs = shared_shingle_pairs(&docs, 10, &mut Rng::new(1));
        assert_eq!(pairs, vec![(0, 1), (0, 3)]);
    }
}
