//! Golden vectors of MinHash LSH, which stored `lsh_bands` values and their indexes depend
//! on: (sketch, bands, rows) → band keys (`tests/golden_lsh.tsv`), and (threshold,
//! num_hashes) → the banding `lsh_bands(sketch, threshold)` uses
//! (`tests/golden_lsh_params.tsv`). A row stored as `lsh_bands(mh, 0.8)` is only found by a
//! query computing the same keys: if this test fails, the band hash, the key layout or the
//! choice of bands changed, which is a breaking change, not a test to update.

use neardup_core::search::lsh::{params_for_threshold, Banding, VERIFIED_WEIGHTS};
use neardup_core::search::lsh_encoding::BandKeys;
use neardup_core::signatures::minhash::MinhashSketch;

// Shared with the other golden tests; this one reads no escaped text.
#[allow(dead_code)]
mod golden_text;
use golden_text::rows;

#[test]
fn band_keys_are_unchanged() {
    let mut checked = 0;
    for cols in rows(include_str!("../../tests/golden_lsh.tsv"), 4) {
        let sketch = MinhashSketch::from_text(cols[0].as_bytes()).unwrap();
        let (bands, rows): (i64, i64) = (cols[1].parse().unwrap(), cols[2].parse().unwrap());
        let banding = Banding::new(bands, rows, sketch.num_hashes()).unwrap();
        let keys = BandKeys::of_sketch(sketch.values(), &banding);
        assert_eq!(keys.to_string(), cols[3], "{} as {bands} x {rows}", cols[0]);
        assert_eq!(BandKeys::from_text(cols[3].as_bytes()), Ok(keys));
        checked += 1;
    }
    assert!(checked >= 20);
}

#[test]
fn bandings_chosen_for_thresholds_are_unchanged() {
    let mut checked = 0;
    for cols in rows(include_str!("../../tests/golden_lsh_params.tsv"), 4) {
        let (threshold, num_hashes): (f64, usize) =
            (cols[0].parse().unwrap(), cols[1].parse().unwrap());
        let (fp, fn_) = VERIFIED_WEIGHTS;
        let chosen = params_for_threshold(threshold, num_hashes, fp, fn_)
            .unwrap()
            .banding;
        let expected = (cols[2].parse().unwrap(), cols[3].parse().unwrap());
        assert_eq!(
            (chosen.bands(), chosen.rows()),
            expected,
            "t = {threshold}, m = {num_hashes}"
        );
        checked += 1;
    }
    assert!(checked >= 40);
}

/// Prints the golden files' rows from the golden minhash sketches: how they were made.
#[test]
#[ignore = "generates tests/golden_lsh*.tsv once; never regenerate to make a test pass"]
fn generate() {
    for cols in rows(include_str!("../../tests/golden_minhash.tsv"), 5) {
        let sketch = MinhashSketch::from_text(cols[3].as_bytes()).unwrap();
        let m = sketch.num_hashes();
        if m > 128 {
            continue; // the file stays readable; longer sketches band the same way
        }
        for (bands, rows) in [(1, 1), (6, 14), (10, 8), (9, 13), (14, 9), (32, 4)] {
            if let Ok(banding) = Banding::new(bands, rows, m) {
                let keys = BandKeys::of_sketch(sketch.values(), &banding);
                println!("LSH\t{}\t{bands}\t{rows}\t{keys}", cols[3]);
            }
        }
    }
    for m in [16, 28, 64, 84, 100, 128, 200, 256, 512] {
        for t in [0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0] {
            let (fp, fn_) = VERIFIED_WEIGHTS;
            let b = params_for_threshold(t, m, fp, fn_).unwrap().banding;
            println!("PARAMS\t{t}\t{m}\t{}\t{}", b.bands(), b.rows());
        }
    }
}
