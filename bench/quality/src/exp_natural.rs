//! Experiment 3: the corpus's own near-duplicates (sibling packages sharing most of a
//! text) and hard negatives (pairs sharing a lot but differing in substance), found
//! exactly by 3-shingle Jaccard.

use crate::configs::Config;
use crate::corpus::Corpus;
use crate::join::{similar_pairs, Pair};
use crate::stats::{doc_distances, num, pct, Distances, Table, K};

/// Jaccard bands, as half-open ranges [low, high).
const BANDS: [(f64, f64); 3] = [(0.8, 0.9), (0.9, 0.95), (0.95, 1.0)];
const NEAR_DUPLICATES: (f64, f64) = (0.9, 1.0);
const HARD_NEGATIVES: (f64, f64) = (0.3, 0.6);

pub struct Natural {
    pub recall: Vec<Distances>,
    pub hard_negatives: Vec<Distances>,
}

pub fn run(corpus: &Corpus, configs: &[Config], fingerprints: &[Vec<u64>]) -> Natural {
    println!("## 3. Natural near-duplicates and hard negatives (exact 3-shingle Jaccard)\n");
    let pairs = similar_pairs(&corpus.docs, HARD_NEGATIVES.0);
    let in_band = |(low, high): (f64, f64)| -> Vec<(usize, usize)> {
        pairs
            .iter()
            .filter(|p| p.jaccard >= low - 1e-12 && p.jaccard < high - 1e-12)
            .map(|p| (p.a, p.b))
            .collect()
    };
    print_counts(&pairs);
    let bands: Vec<Vec<(usize, usize)>> = BANDS.iter().map(|&band| in_band(band)).collect();
    let positives = in_band(NEAR_DUPLICATES);
    let negatives = in_band(HARD_NEGATIVES);
    for (&band, band_pairs) in BANDS.iter().zip(&bands) {
        print_band("J", band, band_pairs);
    }
    print_band("near-duplicates: J", NEAR_DUPLICATES, &positives);
    print_band("hard negatives: J", HARD_NEGATIVES, &negatives);
    println!();
    let by_band: Vec<Vec<Distances>> = bands
        .iter()
        .map(|b| doc_distances(fingerprints, b))
        .collect();
    let natural = Natural {
        recall: doc_distances(fingerprints, &positives),
        hard_negatives: doc_distances(fingerprints, &negatives),
    };
    print_table(configs, &by_band, &natural);
    natural
}

/// Pair counts at the thresholds count_near_dups.py reports, as a cross-check (its words
/// are Python's `[^\W_]+`, not neardup tokens, so small differences are expected).
fn print_counts(pairs: &[Pair]) {
    let at_least = |t: f64| pairs.iter().filter(|p| p.jaccard >= t - 1e-12).count();
    println!(
        "- distinct-body pairs with J >= {}: {}; J >= 0.8: {} (of which J = 1: {})",
        HARD_NEGATIVES.0,
        pairs.len(),
        at_least(0.8),
        at_least(1.0)
    );
}

/// How many pairs, and over how many documents: a few large families of sibling packages
/// (cross toolchains, localisations) contribute most pairs.
fn print_band(label: &str, (low, high): (f64, f64), pairs: &[(usize, usize)]) {
    let mut docs: Vec<usize> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
    docs.sort_unstable();
    docs.dedup();
    println!(
        "- {label} in [{low}, {high}): {} pairs over {} documents",
        pairs.len(),
        docs.len()
    );
}

fn print_table(configs: &[Config], by_band: &[Vec<Distances>], natural: &Natural) {
    let mut header: Vec<String> = vec!["config".into()];
    header.extend(BANDS.iter().map(|(l, h)| format!("[{l},{h}) <={K}")));
    header.push(format!(
        "recall [{},{})",
        NEAR_DUPLICATES.0, NEAR_DUPLICATES.1
    ));
    header.push("mean bits".into());
    header.push(format!(
        "hard-neg FP [{},{})",
        HARD_NEGATIVES.0, HARD_NEGATIVES.1
    ));
    header.push("mean bits".into());
    let mut table = Table::new(&header.iter().map(String::as_str).collect::<Vec<_>>());
    for (c, config) in configs.iter().enumerate() {
        let mut row = vec![config.name.to_string()];
        row.extend(by_band.iter().map(|band| pct(band[c].within_k())));
        row.push(pct(natural.recall[c].within_k()));
        row.push(num(natural.recall[c].mean(), 2));
        row.push(pct(natural.hard_negatives[c].within_k()));
        row.push(num(natural.hard_negatives[c].mean(), 2));
        table.row(row);
    }
    table.print();
}
