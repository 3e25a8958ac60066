//! The units of the shingling experiment: distinct canonical texts (case-folded tokens
//! joined by single spaces), with their 8-word shingle sets, the features of the minhash.
//!
//! Rows with identical canonical text are exact duplicates: they have identical features,
//! so every method gives them identical signatures (simhash distance 0, B-similarity 6,
//! estimated Jaccard 1) and finds them all. Counted as pairs they would swamp precision
//! and recall (one text under a hundred package names is 4,950 pairs), so they are
//! collapsed into one unit and counted on their own.

use crate::corpus::{jaccard, rank_by_frequency, shingle_set, token_count, Corpus, Doc};
use neardup_core::signatures::minhash::DEFAULT_SHINGLE;
use neardup_core::text::features::{FeatureKind, FeatureOptions};
use neardup_core::text::tokenizer::canonical;
use std::collections::HashMap;

/// The minhash's features: 8-word shingles, case folded. A text of 1 to 7 tokens has a
/// single shingle of all its tokens (`for_each_feature` does that, as in the core).
pub const SHINGLES: FeatureOptions = FeatureOptions {
    kind: FeatureKind::WordShingles(DEFAULT_SHINGLE),
    fold_case: true,
};

pub struct Units {
    /// One per distinct canonical text: its first row, token count and shingle ids.
    pub docs: Vec<Doc>,
    pub rows_with_tokens: usize,
    /// Rows without a token: no feature to compare, so not evaluated.
    pub rows_without_tokens: usize,
    /// Row pairs with identical canonical text, each unordered pair once.
    pub exact_duplicate_pairs: u64,
    /// Of those, the pairs whose bodies are byte-identical.
    pub identical_body_pairs: u64,
}

impl Units {
    pub fn new(corpus: &Corpus) -> Units {
        let mut first_row_of: HashMap<String, usize> = HashMap::new();
        let mut rows_per_text: Vec<u64> = Vec::new();
        let mut rows_per_body: HashMap<&[u8], u64> = HashMap::new();
        let mut unit_rows = Vec::new();
        let mut rows_without_tokens = 0;
        for (row, body) in corpus.bodies.iter().enumerate() {
            let text = canonical(body, true);
            if text.is_empty() {
                rows_without_tokens += 1;
                continue;
            }
            *rows_per_body.entry(body).or_default() += 1;
            let unit = *first_row_of.entry(text).or_insert_with(|| {
                unit_rows.push(row);
                rows_per_text.push(0);
                unit_rows.len() - 1
            });
            rows_per_text[unit] += 1;
        }
        let pairs = |n: &u64| n * (n - 1) / 2;
        Units {
            docs: shingled_docs(corpus, &unit_rows),
            rows_with_tokens: corpus.bodies.len() - rows_without_tokens,
            rows_without_tokens,
            exact_duplicate_pairs: rows_per_text.iter().map(pairs).sum(),
            identical_body_pairs: rows_per_body.values().map(pairs).sum(),
        }
    }

    pub fn body<'a>(&self, corpus: &'a Corpus, unit: usize) -> &'a [u8] {
        &corpus.bodies[self.docs[unit].row]
    }

    /// Exact Jaccard resemblance of two units' shingle sets.
    pub fn jaccard(&self, a: u32, b: u32) -> f64 {
        jaccard(
            &self.docs[a as usize].shingles,
            &self.docs[b as usize].shingles,
        )
    }
}

fn shingled_docs(corpus: &Corpus, rows: &[usize]) -> Vec<Doc> {
    let sets: Vec<Vec<u64>> = rows
        .iter()
        .map(|&r| shingle_set(&corpus.bodies[r], &SHINGLES))
        .collect();
    let rank = rank_by_frequency(&sets);
    rows.iter()
        .zip(sets)
        .map(|(&row, set)| {
            let mut shingles: Vec<u32> = set.iter().map(|h| rank[h]).collect();
            shingles.sort_unstable();
            Doc {
                row,
                tokens: token_count(&corpus.bodies[row]),
                shingles,
            }
        })
        .collect()
}
