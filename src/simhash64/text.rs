//! Signature functions over text, and the explainability functions that show exactly what
//! they hash.

use crate::simhash64::Simhash64;
use crate::support::errors;
use neardup_core::base::hash::hash_bytes;
use neardup_core::signatures::simhash::{simhash_text, simhash_weighted};
use neardup_core::text::features::FeatureOptions;
use neardup_core::text::tokenizer;
use pgrx::prelude::*;

fn feature_options(shingle: i32, ngram: i32, fold_case: bool) -> FeatureOptions {
    FeatureOptions::new(shingle, ngram, fold_case)
        .unwrap_or_else(|e| errors::invalid_parameter(e.0))
}

/// Charikar's 64-bit simhash of a text's features: word shingles of `shingle` tokens, or
/// character n-grams of the canonical form when `ngram` > 0. The default, single words,
/// was chosen by measurement on the Debian corpus (docs/tuning.md, "Choosing the features").
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash(
    body: &str,
    shingle: default!(i32, 1),
    ngram: default!(i32, 0),
    fold_case: default!(bool, true),
) -> Simhash64 {
    Simhash64(simhash_text(
        body.as_bytes(),
        &feature_options(shingle, ngram, fold_case),
    ))
}

/// Simhash of caller-chosen features, each voting with its weight (Manku §2). A feature is
/// hashed as given, so `simhash(neardup_tokens(t), <all 1>)` equals `simhash(t, shingle => 1)`.
#[pg_extern(immutable, strict, parallel_safe, name = "simhash")]
fn simhash_of_features(features: Array<&str>, weights: Array<f32>) -> Simhash64 {
    if features.len() != weights.len() {
        errors::invalid_parameter(format!(
            "features and weights must have the same length ({} and {})",
            features.len(),
            weights.len()
        ));
    }
    let pairs = features.iter().zip(weights.iter()).map(|(f, w)| {
        let (Some(f), Some(w)) = (f, w) else {
            errors::null_not_allowed("features and weights must not contain NULL");
        };
        if !w.is_finite() {
            errors::invalid_parameter(format!("weight {w} is not a finite number"));
        }
        (hash_bytes(f.as_bytes()), w as f64)
    });
    Simhash64(simhash_weighted(pairs))
}

/// The canonical form of a text: its tokens joined by single spaces.
#[pg_extern(immutable, strict, parallel_safe)]
fn neardup_canonical(body: &str, fold_case: default!(bool, true)) -> String {
    tokenizer::canonical(body.as_bytes(), fold_case)
}

/// The tokens the signature functions see, in order.
#[pg_extern(immutable, strict, parallel_safe)]
fn neardup_tokens(body: &str, fold_case: default!(bool, true)) -> Vec<String> {
    tokenizer::tokens(body.as_bytes(), fold_case)
}
