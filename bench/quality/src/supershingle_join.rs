//! Every pair of supershingle vectors that agree on at least one position, with its
//! B-similarity: Alg. B's candidates, found as a GIN index on the position keys would find
//! them. Vectors are grouped by equal value at each position; a pair is emitted only at
//! the first position where it agrees, so each pair comes out once without a set to
//! dedupe millions of pairs (a family of 2,000 sibling packages shares all six positions).

use neardup_core::signatures::supershingles::{b_similarity, SupershingleVector};

/// `(a, b, B-similarity)` with `a < b`, B-similarity at least 1.
pub fn agreeing_pairs(vectors: &[SupershingleVector]) -> Vec<(u32, u32, u32)> {
    let positions = vectors.first().map_or(0, |v| v.values().len());
    let mut pairs = Vec::new();
    let mut by_value: Vec<(u64, u32)> = Vec::with_capacity(vectors.len());
    for j in 0..positions {
        by_value.clear();
        by_value.extend(
            vectors
                .iter()
                .enumerate()
                .map(|(i, v)| (v.values()[j], i as u32)),
        );
        by_value.sort_unstable();
        for group in by_value.chunk_by(|x, y| x.0 == y.0) {
            for (k, &(_, a)) in group.iter().enumerate() {
                for &(_, b) in &group[k + 1..] {
                    let (va, vb) = (&vectors[a as usize], &vectors[b as usize]);
                    let agreed_before = (0..j).any(|i| va.values()[i] == vb.values()[i]);
                    if !agreed_before {
                        let s = b_similarity(va, vb).expect("vectors of one length");
                        pairs.push((a, b, s));
                    }
                }
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn matches_all_pairs_by_brute_force() {
        let mut rng = Rng::new(5);
        // Few distinct values per position, so that pairs agree on 0 to 6 positions.
        let vectors: Vec<SupershingleVector> = (0..200)
            .map(|_| {
                let values = (0..6).map(|_| rng.below(4) as u64).collect();
                SupershingleVector::new(values).unwrap()
            })
            .collect();
        let mut found = agreeing_pairs(&vectors);
        found.sort_unstable();
        let expected: Vec<(u32, u32, u32)> = (0..vectors.len())
            .flat_map(|a| (a + 1..vectors.len()).map(move |b| (a, b)))
            .map(|(a, b)| {
                let s = b_similarity(&vectors[a], &vectors[b]).unwrap();
                (a as u32, b as u32, s)
            })
            .filter(|&(_, _, s)| s > 0)
            .collect();
        assert_eq!(found, expected);
    }
}
