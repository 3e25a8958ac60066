//! Single-thread throughput of `minhash_text` (m = 84, 8-word shingles) over the Debian
//! descriptions, next to the shingling alone, so the cost of the 84 permutations shows;
//! and with 5-character n-grams. The vector kernel is the best this CPU has (AVX-512 or
//! AVX2; the portable loop elsewhere).
//! A measurement, not a check, hence ignored by default:
//!
//! ```sh
//! CARGO_TARGET_DIR=/tmp/target-minhash cargo test -p neardup-core --release \
//!     --test minhash_throughput -- --ignored --nocapture
//! ```
//!
//! Reads `pg_test_data/full/debian_descriptions.tsv` when it has been built, else the
//! committed sample.

use neardup_core::signatures::minhash::{minhash_text, MinhashOptions};
use neardup_core::signatures::supershingles::supershingles;
use neardup_core::text::features::{for_each_feature, FeatureOptions};
use std::hint::black_box;
use std::time::Instant;

mod debian_corpus;

/// MB/s of `f` over all bodies: the best of seven passes, so a descheduled moment on a
/// shared machine does not decide the figure.
fn megabytes_per_second(bodies: &[Vec<u8>], mut f: impl FnMut(&[u8])) -> f64 {
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    let best = (0..7)
        .map(|_| {
            let start = Instant::now();
            bodies.iter().for_each(|b| f(b));
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    bytes as f64 / 1e6 / best
}

#[test]
#[ignore = "a measurement; run with --ignored --nocapture"]
fn minhash_throughput() {
    let bodies = debian_corpus::bodies(true);
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    println!("{} rows, {bytes} bytes of body text", bodies.len());

    let options = MinhashOptions::DEFAULT;
    let shingles = FeatureOptions {
        kind: options.features(),
        fold_case: true,
    };
    let mut count = 0usize;
    for b in &bodies {
        for_each_feature(b, &shingles, |_| count += 1);
    }
    let shingling = megabytes_per_second(&bodies, |b| {
        let mut sum = 0u64;
        for_each_feature(b, &shingles, |h| sum = sum.wrapping_add(h));
        black_box(sum);
    });
    let sketching = megabytes_per_second(&bodies, |b| {
        black_box(minhash_text(b, &options));
    });
    let with_supershingles = megabytes_per_second(&bodies, |b| {
        black_box(supershingles(&minhash_text(b, &options)).expect("84 hashes"));
    });
    let ngram_options = MinhashOptions::with_features(84, 8, 5).unwrap();
    let ngrams = FeatureOptions {
        kind: ngram_options.features(),
        fold_case: true,
    };
    let ngram_hashing = megabytes_per_second(&bodies, |b| {
        let mut sum = 0u64;
        for_each_feature(b, &ngrams, |h| sum = sum.wrapping_add(h));
        black_box(sum);
    });
    let ngram_sketching = megabytes_per_second(&bodies, |b| {
        black_box(minhash_text(b, &ngram_options));
    });
    let per_shingle = |mb_per_s: f64| bytes as f64 / (mb_per_s * 1e6) / count as f64 * 1e9;
    let sketch_ns = per_shingle(sketching) - per_shingle(shingling);
    println!(
        "{count} shingles, {:.1} bytes each",
        bytes as f64 / count as f64
    );
    println!("8-word shingles, hashed only       {shingling:7.1} MB/s");
    println!("minhash_text, m = 84               {sketching:7.1} MB/s");
    println!("minhash_text + supershingles       {with_supershingles:7.1} MB/s");
    println!("84 hash values and mins per shingle {sketch_ns:6.1} ns");
    println!("5-character n-grams, hashed only   {ngram_hashing:7.1} MB/s");
    println!("minhash_text, m = 84, ngram = 5    {ngram_sketching:7.1} MB/s");
    assert!(sketching > 0.0 && sketching <= shingling * 1.2);
}
