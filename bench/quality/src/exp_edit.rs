//! Experiment 1: one-word edits of long descriptions. The issue's requirement: "a one-word
//! edit of a 300-word description stays within 3 bits in >= 95% of cases".

use crate::configs::Config;
use crate::corpus::Corpus;
use crate::edits::{replace_random_word, Vocabulary};
use crate::rng::Rng;
use crate::stats::{num, pct, text_distances, Distances, Table, K};

const SEED: u64 = 1;
const MIN_TOKENS: usize = 300;
/// Below this many documents of `MIN_TOKENS`, shorter buckets are reported as well.
const ENOUGH_DOCS: usize = 200;
const SHORTER: [usize; 2] = [150, 100];
/// Documents per bucket are capped, to bound the run time; each gets several edits.
const MAX_DOCS: usize = 2_000;
const EDITS_PER_DOC: usize = 5;

/// Returns the distances of the `MIN_TOKENS` bucket, per config.
pub fn run(corpus: &Corpus, configs: &[Config], vocabulary: &Vocabulary) -> Vec<Distances> {
    println!("## 1. One-word edit (a word replaced by a vocabulary word drawn by frequency)\n");
    let mut thresholds = vec![MIN_TOKENS];
    if corpus.docs_with_tokens(MIN_TOKENS..).len() < ENOUGH_DOCS {
        thresholds.extend(SHORTER);
    }
    let mut rng = Rng::new(SEED);
    let buckets: Vec<Vec<Distances>> = thresholds
        .iter()
        .map(|&min| bucket(corpus, configs, vocabulary, min, &mut rng))
        .collect();
    println!();
    let mut header = vec!["config".to_string()];
    for min in &thresholds {
        header.push(format!(">={min} tok: <={K} bits"));
        header.push("mean bits".to_string());
    }
    let mut table = Table::new(&header.iter().map(String::as_str).collect::<Vec<_>>());
    for (c, config) in configs.iter().enumerate() {
        let mut row = vec![config.name.to_string()];
        for dist in &buckets {
            row.push(pct(dist[c].within_k()));
            row.push(num(dist[c].mean(), 2));
        }
        table.row(row);
    }
    table.print();
    buckets.into_iter().next().expect("the MIN_TOKENS bucket")
}

fn bucket(
    corpus: &Corpus,
    configs: &[Config],
    vocabulary: &Vocabulary,
    min_tokens: usize,
    rng: &mut Rng,
) -> Vec<Distances> {
    let eligible = corpus.docs_with_tokens(min_tokens..);
    let sample = rng.sample(&eligible, MAX_DOCS);
    let mut pairs = Vec::new();
    for &d in &sample {
        let body = corpus.body(d);
        for _ in 0..EDITS_PER_DOC {
            let edited = replace_random_word(body, vocabulary, rng).expect("long texts have words");
            pairs.push((body.to_vec(), edited));
        }
    }
    println!(
        "- >={min_tokens} tokens: {} distinct descriptions, {} sampled, {} edits",
        eligible.len(),
        sample.len(),
        pairs.len()
    );
    text_distances(configs, &pairs)
}
