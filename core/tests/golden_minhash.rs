//! Golden vectors: (num_hashes, shingle, text) → minhash sketch and supershingles that must
//! never change. Sketches and supershingle vectors are stored, and compared with sketches
//! computed years later: if this test fails, a change altered the tokenizer, the shingle
//! hashes, the hash family (seed, generator, arithmetic) or the supershingle hash, and every
//! stored value is silently wrong. That is a breaking change, not a test to update.
//!
//! Format of `tests/golden_minhash.tsv` (repository root), tab-separated: num_hashes,
//! shingle (a number of words, or `c<n>` for character n-grams of n characters), text
//! (with `\n`, `\t` and `\\` escaped), the sketch's text form, and the supershingles'
//! text form, or `-` where the sketch size has none.

use neardup_core::signatures::minhash::{minhash_text, MinhashOptions, MinhashSketch};
use neardup_core::signatures::supershingles::{supershingles, SupershingleVector};
use neardup_core::text::features::FeatureKind;

mod golden_text;
use golden_text::{rows, unescape};

const GOLDEN: &str = include_str!("../../tests/golden_minhash.tsv");

#[test]
fn golden_vectors_are_unchanged() {
    let mut checked = 0;
    for cols in rows(GOLDEN, 5) {
        let num_hashes = cols[0].parse().unwrap();
        let options = match cols[1].strip_prefix('c') {
            Some(n) => MinhashOptions::with_features(num_hashes, 8, n.parse().unwrap()),
            None => MinhashOptions::new(num_hashes, cols[1].parse().unwrap()),
        }
        .unwrap();
        let text = unescape(cols[2]);
        let sketch = minhash_text(text.as_bytes(), &options);
        assert_eq!(
            sketch.to_string(),
            cols[3],
            "minhash changed for {:?} with {options:?}",
            cols[2]
        );
        assert_eq!(
            MinhashSketch::from_text(cols[3].as_bytes()),
            Ok(sketch.clone())
        );
        // The binary form's features byte: the shingle size, or 0x80 | n for n-grams.
        let bytes = sketch.to_bytes();
        let features_byte = match sketch.features() {
            FeatureKind::WordShingles(w) => w as u8,
            FeatureKind::CharNgrams(n) => 0x80 | n as u8,
        };
        assert_eq!(bytes[..2], [1, features_byte]);
        assert_eq!(MinhashSketch::from_bytes(&bytes), Ok(sketch.clone()));
        match supershingles(&sketch) {
            Ok(vector) => {
                assert_eq!(
                    vector.to_string(),
                    cols[4],
                    "supershingles changed for {:?}",
                    cols[2]
                );
                assert_eq!(
                    SupershingleVector::from_text(cols[4].as_bytes()),
                    Ok(vector)
                );
            }
            Err(_) => assert_eq!(cols[4], "-", "no supershingles for {options:?}"),
        }
        checked += 1;
    }
    assert!(checked >= 66, "only {checked} golden vectors");
}
