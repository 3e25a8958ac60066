//! Experiment 2: random unrelated pairs. Independent fingerprints differ in 32 ± 4 bits;
//! a config whose features are dominated by boilerplate shared across the corpus sits
//! lower, and any pair within `K` bits is a false positive.

use crate::configs::Config;
use crate::corpus::Corpus;
use crate::rng::Rng;
use crate::stats::{doc_distances, num, pct, Distances, Table, K};

const SEED: u64 = 2;
const PAIRS: usize = 20_000;
const MAX_JACCARD: f64 = 0.2;

pub fn run(corpus: &Corpus, configs: &[Config], fingerprints: &[Vec<u64>]) -> Vec<Distances> {
    println!("## 2. Unrelated pairs (random, 3-shingle Jaccard < {MAX_JACCARD})\n");
    let mut rng = Rng::new(SEED);
    let mut pairs = Vec::with_capacity(PAIRS);
    let mut rejected = 0;
    while pairs.len() < PAIRS {
        let (a, b) = (rng.below(corpus.docs.len()), rng.below(corpus.docs.len()));
        if a != b && corpus.jaccard(a, b) < MAX_JACCARD {
            pairs.push((a, b));
        } else {
            rejected += 1;
        }
    }
    println!("- {PAIRS} pairs ({rejected} draws rejected as too similar or the same)\n");
    let dists = doc_distances(fingerprints, &pairs);
    let mut table = Table::new(&["config", "mean bits", "std", &format!("<={K} bits (FP)")]);
    for (config, dist) in configs.iter().zip(&dists) {
        table.row(vec![
            config.name.to_string(),
            num(dist.mean(), 2),
            num(dist.std(), 2),
            pct(dist.within_k()),
        ]);
    }
    table.print();
    dists
}
