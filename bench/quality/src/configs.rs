//! The simhash configurations under evaluation, all with case folding on.

use crate::corpus::Corpus;
use crate::prehashed::PreHashedMap;
use neardup_core::base::hash::hash_bytes;
use neardup_core::signatures::simhash::{simhash_text, simhash_weighted};
use neardup_core::text::features::{for_each_feature, FeatureOptions};
use neardup_core::text::tokenizer::for_each_token;
use std::time::Instant;

enum Method<'a> {
    /// `simhash_text`: every feature occurrence votes once, as the extension computes it.
    Counted(FeatureOptions),
    /// Each distinct feature votes once, however often it occurs.
    Distinct(FeatureOptions),
    /// Every feature of each of several feature options, all voting together.
    Combined(Vec<FeatureOptions>),
    /// Unigrams, each occurrence voting with its token's IDF (so tf × idf per token).
    IdfUnigrams(&'a Idf),
}

pub struct Config<'a> {
    pub name: &'static str,
    method: Method<'a>,
}

impl Config<'_> {
    pub fn fingerprint(&self, text: &[u8]) -> u64 {
        match &self.method {
            Method::Counted(options) => simhash_text(text, options),
            Method::Distinct(options) => {
                let mut features = Vec::new();
                for_each_feature(text, options, |h| features.push(h));
                features.sort_unstable();
                features.dedup();
                simhash_weighted(features.into_iter().map(|h| (h, 1.0)))
            }
            Method::Combined(options) => {
                let mut counter = neardup_core::signatures::simhash::SimhashCounter::default();
                for o in options {
                    for_each_feature(text, o, |h| counter.add(h));
                }
                counter.finish()
            }
            Method::IdfUnigrams(idf) => {
                let mut features = Vec::new();
                for_each_token(text, true, |t| {
                    let h = hash_bytes(t);
                    features.push((h, idf.weight(h)));
                });
                simhash_weighted(features)
            }
        }
    }
}

pub fn all(idf: &Idf) -> Vec<Config<'_>> {
    let words = |n| FeatureOptions::new(n, 0, true).expect("valid shingle");
    let chars = |n| FeatureOptions::new(0, n, true).expect("valid ngram");
    let counted = |name, options| Config {
        name,
        method: Method::Counted(options),
    };
    vec![
        counted("word-1", words(1)),
        counted("word-2", words(2)),
        counted("word-3", words(3)),
        counted("word-4", words(4)),
        counted("char-4", chars(4)),
        counted("char-5", chars(5)),
        Config {
            name: "word-1 idf",
            method: Method::IdfUnigrams(idf),
        },
        Config {
            name: "word-3 set",
            method: Method::Distinct(words(3)),
        },
        Config {
            name: "word-1 set",
            method: Method::Distinct(words(1)),
        },
        Config {
            name: "word-1+2",
            method: Method::Combined(vec![words(1), words(2)]),
        },
    ]
}

/// Inverse document frequency of tokens, log(N / df) over the distinct bodies.
pub struct Idf {
    weights: PreHashedMap<f64>,
    /// For a token the corpus never has (an edit can create one): weighted as the rarest.
    unseen: f64,
}

impl Idf {
    pub fn new(corpus: &Corpus) -> Idf {
        let mut df = PreHashedMap::<u32>::default();
        let mut in_doc = Vec::new();
        for d in 0..corpus.docs.len() {
            in_doc.clear();
            for_each_token(corpus.body(d), true, |t| in_doc.push(hash_bytes(t)));
            in_doc.sort_unstable();
            in_doc.dedup();
            for &h in &in_doc {
                *df.entry(h).or_default() += 1;
            }
        }
        let n = corpus.docs.len() as f64;
        Idf {
            weights: df
                .into_iter()
                .map(|(h, df)| (h, (n / df as f64).ln()))
                .collect(),
            unseen: n.ln(),
        }
    }

    fn weight(&self, token: u64) -> f64 {
        self.weights.get(&token).copied().unwrap_or(self.unseen)
    }
}

/// Fingerprints of every document under every config (`[config][doc]`), and each config's
/// single-thread throughput over all corpus rows in MB/s (best of a few passes, so a
/// descheduled moment does not decide the figure).
pub fn fingerprint_corpus(corpus: &Corpus, configs: &[Config]) -> (Vec<Vec<u64>>, Vec<f64>) {
    const PASSES: usize = 3;
    let megabytes = corpus.total_bytes() as f64 / 1e6;
    configs
        .iter()
        .map(|config| {
            let mut best = f64::INFINITY;
            let mut by_row = Vec::new();
            for _ in 0..PASSES {
                let start = Instant::now();
                by_row = corpus
                    .bodies
                    .iter()
                    .map(|b| config.fingerprint(b))
                    .collect();
                best = best.min(start.elapsed().as_secs_f64());
            }
            let by_doc = corpus.docs.iter().map(|d| by_row[d.row]).collect();
            (by_doc, megabytes / best)
        })
        .unzip()
}
