//! Every document pair with 3-shingle Jaccard at or above a threshold, exactly: the
//! prefix-filter all-pairs join (Bayardo et al., WWW 2007) that count_near_dups.py runs.
//!
//! Shingle ids are ranked rarest first, so each set's prefix holds its rarest shingles. Two
//! sets with Jaccard >= t share at least ceil(t·|x|) shingles (x the larger), so the first
//! |x| − ceil(t·|x|) + 1 of x must meet the other's: only prefixes go into the inverted
//! index, and each candidate gets an exact Jaccard check.

use crate::corpus::{jaccard, Doc};

pub struct Pair {
    pub a: usize,
    pub b: usize,
    pub jaccard: f64,
}

pub fn similar_pairs(docs: &[Doc], t: f64) -> Vec<Pair> {
    let mut by_size: Vec<usize> = (0..docs.len()).collect();
    by_size.sort_by_key(|&d| docs[d].shingles.len());
    let ids = docs.iter().filter_map(|d| d.shingles.last()).max();
    let mut index: Vec<Vec<usize>> = vec![Vec::new(); ids.map_or(0, |&id| id as usize + 1)];
    // The document whose candidates last included each document: dedupes candidates
    // without clearing a set per document.
    let mut seen_by = vec![usize::MAX; docs.len()];
    let mut candidates = Vec::new();
    let mut pairs = Vec::new();
    // Documents come smallest first, so the indexed ones are never larger than `x`.
    for &d in &by_size {
        let x = &docs[d].shingles;
        let min_size = t * x.len() as f64 - 1e-9;
        candidates.clear();
        for &g in &x[..prefix_len(x.len(), t)] {
            let g = g as usize;
            for &e in &index[g] {
                if seen_by[e] != d && docs[e].shingles.len() as f64 >= min_size {
                    seen_by[e] = d;
                    candidates.push(e);
                }
            }
            index[g].push(d);
        }
        for &e in &candidates {
            let j = jaccard(x, &docs[e].shingles);
            if j >= t - 1e-12 {
                pairs.push(Pair {
                    a: e.min(d),
                    b: e.max(d),
                    jaccard: j,
                });
            }
        }
    }
    pairs
}

fn prefix_len(size: usize, t: f64) -> usize {
    let overlap = (t * size as f64 - 1e-9).ceil() as usize;
    size - overlap.max(1) + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn matches_all_pairs_by_brute_force() {
        let mut rng = Rng::new(3);
        let docs: Vec<Doc> = (0..300)
            .map(|row| {
                let mut shingles: Vec<u32> = (0..1 + rng.below(12))
                    .map(|_| rng.below(20) as u32)
                    .collect();
                shingles.sort_unstable();
                shingles.dedup();
                Doc {
                    row,
                    tokens: shingles.len(),
                    shingles,
                }
            })
            .collect();
        for t in [0.3, 0.5, 0.9] {
            let mut found: Vec<(usize, usize)> =
                similar_pairs(&docs, t).iter().map(|p| (p.a, p.b)).collect();
            found.sort_unstable();
            let expected: Vec<(usize, usize)> = (0..docs.len())
                .flat_map(|a| (a + 1..docs.len()).map(move |b| (a, b)))
                .filter(|&(a, b)| jaccard(&docs[a].shingles, &docs[b].shingles) >= t - 1e-12)
                .collect();
            assert_eq!(found, expected, "t = {t}");
        }
    }
}
