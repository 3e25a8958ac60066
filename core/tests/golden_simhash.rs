//! Golden vectors: (options, text) → simhash that must never change. Signatures are stored
//! for years; if this test fails, a change altered stored values and is a breaking change.
//! The same file is checked through SQL by the extension's tests.
//!
//! Format of `tests/golden_simhash.tsv` (repository root): shingle, ngram, fold_case, text
//! (with `\n`, `\t` and `\\` escaped), expected hex.

use neardup_core::base::hex::format_hex64;
use neardup_core::signatures::simhash::simhash_text;
use neardup_core::text::features::FeatureOptions;

mod golden_text;
use golden_text::{rows, unescape};

const GOLDEN: &str = include_str!("../../tests/golden_simhash.tsv");

#[test]
fn golden_vectors_are_unchanged() {
    let mut checked = 0;
    for cols in rows(GOLDEN, 5) {
        let options = FeatureOptions::new(
            cols[0].parse().unwrap(),
            cols[1].parse().unwrap(),
            cols[2] == "t",
        )
        .unwrap();
        let text = unescape(cols[3]);
        let got = format_hex64(simhash_text(text.as_bytes(), &options));
        assert_eq!(
            got, cols[4],
            "simhash changed for {:?} with {options:?}",
            cols[3]
        );
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} golden vectors");
}
