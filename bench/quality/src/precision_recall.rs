//! Precision and recall of reported pairs against the exact-Jaccard ground truth, at each
//! resemblance threshold τ.

use crate::stats::pct;

/// A pair is a true near-duplicate at τ when the exact Jaccard of its shingle sets is at
/// least τ.
pub const THRESHOLDS: [f64; 3] = [0.95, 0.9, 0.8];

/// The lowest threshold: the ground-truth join must find every pair at or above it.
pub const LOWEST: f64 = THRESHOLDS[THRESHOLDS.len() - 1];

/// Whether `jaccard` reaches `threshold`. Jaccard is a ratio of integers computed in
/// floating point, so the join's rounding tolerance applies here too.
pub fn reaches(jaccard: f64, threshold: f64) -> bool {
    jaccard >= threshold - 1e-12
}

/// How many pairs were reported, and how many of them reach each threshold.
#[derive(Clone, Copy)]
pub struct Tally {
    pub reported: usize,
    pub correct: [usize; THRESHOLDS.len()],
}

impl Tally {
    /// The tally of distinct pairs with these exact Jaccard values.
    pub fn of(jaccards: impl IntoIterator<Item = f64>) -> Tally {
        let mut tally = Tally {
            reported: 0,
            correct: [0; THRESHOLDS.len()],
        };
        for j in jaccards {
            tally.reported += 1;
            for (correct, &t) in tally.correct.iter_mut().zip(&THRESHOLDS) {
                *correct += usize::from(reaches(j, t));
            }
        }
        tally
    }

    pub fn precision(&self, threshold: usize) -> String {
        ratio(self.correct[threshold], self.reported)
    }

    /// The share of `reference`'s correct pairs found: recall when `reference` is the ground
    /// truth, Henzinger's R when it is Alg. B.
    pub fn recall(&self, threshold: usize, reference: &Tally) -> String {
        ratio(self.correct[threshold], reference.correct[threshold])
    }
}

/// A percentage, or a dash when there is nothing to divide by.
fn ratio(part: usize, whole: usize) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        pct(part as f64 / whole as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_pairs_per_threshold() {
        let truth = Tally::of([1.0, 0.95, 0.9, 0.85, 0.8]);
        assert_eq!(truth.correct, [2, 3, 5]);
        let found = Tally::of([1.0, 0.85, 0.5, 0.2]);
        assert_eq!((found.reported, found.correct), (4, [1, 1, 2]));
        assert_eq!(found.precision(2), "50.00%");
        assert_eq!(found.recall(0, &truth), "50.00%");
        assert_eq!(Tally::of([]).precision(0), "-");
    }
}
