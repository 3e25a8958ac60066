//! Minhash and supershingles on generated texts and vectors: the estimates behave as the
//! theory says, the index keys find exactly the vectors they should, and the stored forms
//! round-trip and reject malformed input without panicking.

use neardup_core::signatures::minhash::{jaccard, minhash_text, MinhashOptions, MinhashSketch};
use neardup_core::signatures::supershingles::{
    b_similarity, megashingles, position_keys, supershingles, SupershingleVector,
};
use neardup_core::text::features::{for_each_feature, FeatureKind, FeatureOptions};
use std::collections::HashSet;

mod common;
use common::Rng;

fn vocabulary(rng: &mut Rng, size: usize) -> Vec<String> {
    (0..size)
        .map(|_| {
            let len = 3 + rng.below(6);
            (0..len)
                .map(|_| (b'a' + rng.below(26) as u8) as char)
                .collect()
        })
        .collect()
}

fn random_words(rng: &mut Rng, vocabulary: &[String], len: usize) -> Vec<String> {
    (0..len)
        .map(|_| vocabulary[rng.below(vocabulary.len())].clone())
        .collect()
}

/// A copy of `words` with `edits` random word replacements, insertions and deletions.
fn edited(rng: &mut Rng, words: &[String], vocabulary: &[String], edits: usize) -> Vec<String> {
    let mut out = words.to_vec();
    for _ in 0..edits {
        let at = rng.below(out.len());
        let word = vocabulary[rng.below(vocabulary.len())].clone();
        match rng.below(3) {
            0 => out[at] = word,
            1 => out.insert(at, word),
            _ if out.len() > 1 => {
                out.remove(at);
            }
            _ => {}
        }
    }
    out
}

/// The exact Jaccard resemblance of the texts' shingle sets (64-bit shingle hashes).
fn exact_jaccard(a: &str, b: &str, shingle: usize) -> f64 {
    exact_feature_jaccard(a, b, FeatureKind::WordShingles(shingle))
}

/// The exact Jaccard resemblance of the texts' feature sets (64-bit feature hashes).
fn exact_feature_jaccard(a: &str, b: &str, kind: FeatureKind) -> f64 {
    let options = FeatureOptions {
        kind,
        fold_case: true,
    };
    let set = |text: &str| {
        let mut set = HashSet::new();
        for_each_feature(text.as_bytes(), &options, |h| {
            set.insert(h);
        });
        set
    };
    let (a, b) = (set(a), set(b));
    a.intersection(&b).count() as f64 / a.union(&b).count() as f64
}

struct Pair {
    exact: f64,
    a: MinhashSketch,
    b: MinhashSketch,
}

/// Pairs of a random text and an edited copy (from untouched to unrelated), sketched with
/// `num_hashes` and 8-word shingles.
fn pairs(seed: u64, count: usize, num_hashes: i32) -> Vec<Pair> {
    let mut rng = Rng(seed);
    let vocabulary = vocabulary(&mut rng, 3000);
    let options = MinhashOptions::new(num_hashes, 8).unwrap();
    (0..count)
        .map(|i| {
            let len = 60 + rng.below(400);
            let words = random_words(&mut rng, &vocabulary, len);
            let other = match i % 10 {
                0 => random_words(&mut rng, &vocabulary, words.len()),
                _ => {
                    let edits = rng.below(words.len() / 12 + 1);
                    edited(&mut rng, &words, &vocabulary, edits)
                }
            };
            let (a, b) = (words.join(" "), other.join(" "));
            Pair {
                exact: exact_jaccard(&a, &b, 8),
                a: minhash_text(a.as_bytes(), &options),
                b: minhash_text(b.as_bytes(), &options),
            }
        })
        .collect()
}

#[test]
fn jaccard_estimates_are_unbiased_with_the_binomial_spread() {
    let m = 84.0;
    let pairs = pairs(0x5eed_0001, 1500, 84);
    let (mut error_sum, mut squared_error_sum, mut variance_sum) = (0.0, 0.0, 0.0);
    for (i, p) in pairs.iter().enumerate() {
        let estimate = jaccard(&p.a, &p.b).unwrap();
        let variance = p.exact * (1.0 - p.exact) / m;
        let error = estimate - p.exact;
        assert!(
            error.abs() <= 5.0 * variance.sqrt() + 1.5 / m,
            "pair {i}: estimate {estimate}, exact {}",
            p.exact
        );
        error_sum += error;
        squared_error_sum += error * error;
        variance_sum += variance;
    }
    let n = pairs.len() as f64;
    let spread: Vec<f64> = pairs.iter().map(|p| p.exact).collect();
    assert!(spread.iter().any(|&j| j < 0.05) && spread.iter().any(|&j| (0.3..0.7).contains(&j)));
    assert!((error_sum / n).abs() < 0.005, "bias {}", error_sum / n);
    // Independent hash functions: the estimate is binomial(m, J) / m.
    let ratio = (squared_error_sum / variance_sum).sqrt();
    assert!(
        (0.9..1.1).contains(&ratio),
        "error / binomial spread = {ratio}"
    );
}

#[test]
fn ngram_estimates_are_unbiased_with_the_binomial_spread() {
    // Unsegmented text, as Chinese or Japanese is written: random runs of characters from
    // a small CJK alphabet, with punctuation, and edited copies (characters replaced,
    // inserted, deleted), sketched with 3-grams.
    let mut rng = Rng(0x5eed_0007);
    let alphabet: Vec<char> = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年。，"
        .chars()
        .collect();
    let options = MinhashOptions::with_features(84, 8, 3).unwrap();
    let (mut error_sum, mut squared_error_sum, mut variance_sum) = (0.0, 0.0, 0.0);
    let mut exacts = Vec::new();
    for i in 0..600 {
        let len = 20 + rng.below(300);
        let a: Vec<char> = (0..len)
            .map(|_| alphabet[rng.below(alphabet.len())])
            .collect();
        // Every fifth pair is two unrelated texts (their 3-grams still overlap).
        let mut b = if i % 5 == 0 {
            (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect()
        } else {
            a.clone()
        };
        for _ in 0..rng.below(1 + len / 2) {
            let at = rng.below(b.len());
            let c = alphabet[rng.below(alphabet.len())];
            match rng.below(3) {
                0 => b[at] = c,
                1 => b.insert(at, c),
                _ if b.len() > 1 => {
                    b.remove(at);
                }
                _ => {}
            }
        }
        let (a, b): (String, String) = (a.into_iter().collect(), b.into_iter().collect());
        let exact = exact_feature_jaccard(&a, &b, FeatureKind::CharNgrams(3));
        let sa = minhash_text(a.as_bytes(), &options);
        let sb = minhash_text(b.as_bytes(), &options);
        assert_eq!(sa.features(), FeatureKind::CharNgrams(3));
        let estimate = jaccard(&sa, &sb).unwrap();
        let variance = exact * (1.0 - exact) / 84.0;
        let error = estimate - exact;
        assert!(
            error.abs() <= 5.0 * variance.sqrt() + 1.5 / 84.0,
            "pair {i}: estimate {estimate}, exact {exact}"
        );
        error_sum += error;
        squared_error_sum += error * error;
        variance_sum += variance;
        exacts.push(exact);
    }
    let (low, high) = exacts
        .iter()
        .fold((1.0f64, 0.0f64), |(l, h), &j| (l.min(j), h.max(j)));
    assert!(
        low < 0.3 && high > 0.8,
        "exact Jaccard from {low} to {high}"
    );
    assert!(
        (error_sum / 600.0).abs() < 0.006,
        "bias {}",
        error_sum / 600.0
    );
    let ratio = (squared_error_sum / variance_sum).sqrt();
    assert!(
        (0.85..1.15).contains(&ratio),
        "error / binomial spread = {ratio}"
    );
}

#[test]
fn more_hashes_give_closer_estimates() {
    for (i, p) in pairs(0x5eed_0002, 100, 1024).iter().enumerate() {
        let estimate = jaccard(&p.a, &p.b).unwrap();
        assert!(
            (estimate - p.exact).abs() <= 0.08,
            "pair {i}: estimate {estimate}, exact {}",
            p.exact
        );
        assert_eq!(jaccard(&p.a, &p.a), Ok(1.0));
    }
}

#[test]
fn supershingles_agree_with_probability_j_to_the_fourteenth() {
    // Each of the 6 supershingles agrees when all of its 14 independent entries do.
    let pairs = pairs(0x5eed_0003, 1500, 84);
    let (mut observed, mut expected, mut variance) = (0.0, 0.0, 0.0);
    for p in &pairs {
        let (a, b) = (supershingles(&p.a).unwrap(), supershingles(&p.b).unwrap());
        let s = b_similarity(&a, &b).unwrap();
        assert_eq!(b_similarity(&b, &a), Ok(s));
        if p.exact == 0.0 {
            assert_eq!(s, 0);
        }
        let q = p.exact.powi(14);
        observed += s as f64;
        expected += 6.0 * q;
        variance += 6.0 * q * (1.0 - q);
    }
    assert!(expected > 500.0, "too few agreements to test: {expected}");
    let z = (observed - expected) / variance.sqrt();
    assert!(z.abs() < 5.0, "observed {observed}, expected {expected}");
}

/// A vector of `len` random values, and one that agrees with it exactly at `planted`.
fn planted_pair(
    rng: &mut Rng,
    len: usize,
    planted: &[usize],
) -> (SupershingleVector, SupershingleVector) {
    let a: Vec<u64> = (0..len).map(|_| rng.next()).collect();
    let b = (0..len)
        .map(|j| {
            if planted.contains(&j) {
                a[j]
            } else {
                a[j] ^ (1 + rng.next() % u64::MAX)
            }
        })
        .collect();
    let vector = |v| SupershingleVector::new(v).unwrap();
    (vector(a), vector(b))
}

fn shared(a: &[u64], b: &[u64]) -> usize {
    let a: HashSet<_> = a.iter().collect();
    b.iter().filter(|k| a.contains(k)).count()
}

#[test]
fn keys_are_shared_exactly_as_positions_agree() {
    let mut rng = Rng(0x5eed_0004);
    for _ in 0..20_000 {
        let len = [2, 3, 6, 6, 6, 10, 73][rng.below(7)];
        let planted: Vec<usize> = (0..len).filter(|_| rng.below(4) == 0).collect();
        let (a, b) = planted_pair(&mut rng, len, &planted);
        let s = planted.len();
        assert_eq!(b_similarity(&a, &b), Ok(s as u32));
        assert_eq!(b_similarity(&b, &a), Ok(s as u32));
        assert_eq!(shared(&position_keys(&a), &position_keys(&b)), s);
        let (mega_a, mega_b) = (megashingles(&a), megashingles(&b));
        assert_eq!(mega_a.len(), len * (len - 1) / 2);
        assert_eq!(shared(&mega_a, &mega_b), s * s.saturating_sub(1) / 2);
        // Keys of the two kinds never meet.
        assert_eq!(shared(&mega_a, &position_keys(&b)), 0);
    }
}

#[test]
fn stored_forms_round_trip() {
    let mut rng = Rng(0x5eed_0005);
    let vocabulary = vocabulary(&mut rng, 200);
    for _ in 0..2000 {
        let len = rng.below(40);
        let words = random_words(&mut rng, &vocabulary, len);
        // Word shingles or, half of the time, character n-grams.
        let ngram = if rng.below(2) == 0 {
            0
        } else {
            1 + rng.below(32)
        };
        let options = MinhashOptions::with_features(
            1 + rng.below(1024) as i32,
            1 + rng.below(16) as i32,
            ngram as i32,
        )
        .unwrap();
        let sketch = minhash_text(words.join(" ").as_bytes(), &options);
        assert_eq!(sketch.features(), options.features());
        assert_eq!(
            MinhashSketch::from_bytes(&sketch.to_bytes()),
            Ok(sketch.clone())
        );
        assert_eq!(
            MinhashSketch::from_text(sketch.to_string().as_bytes()),
            Ok(sketch.clone())
        );
        let len = 2 + rng.below(72);
        let vector = SupershingleVector::new((0..len).map(|_| rng.next()).collect()).unwrap();
        assert_eq!(
            SupershingleVector::from_bytes(&vector.to_bytes()),
            Ok(vector.clone())
        );
        assert_eq!(
            SupershingleVector::from_text(vector.to_string().as_bytes()),
            Ok(vector)
        );
    }
}

/// Decodes, and encodes what it decoded in the same form.
type Reencoder = fn(&[u8]) -> Option<Vec<u8>>;

/// Every prefix and many one-byte corruptions of valid encodings, and random bytes: each
/// decodes to a value whose encoding is the input again (the change was harmless), or is
/// an error. None panics.
#[test]
fn malformed_input_is_an_error_never_a_panic() {
    let mut rng = Rng(0x5eed_0006);
    let sketch = minhash_text(
        b"a few words to sketch, more than eight of them in all",
        &MinhashOptions::new(28, 3).unwrap(),
    );
    let vector = supershingles(&sketch).unwrap();
    let ngrams = minhash_text(
        "短い日本語の文章です。".as_bytes(),
        &MinhashOptions::with_features(14, 8, 5).unwrap(),
    );
    let forms = [
        sketch.to_bytes(),
        sketch.to_string().into_bytes(),
        ngrams.to_bytes(),
        ngrams.to_string().into_bytes(),
        vector.to_bytes(),
        vector.to_string().into_bytes(),
    ];
    let sketch_from_bytes: Reencoder = |b| MinhashSketch::from_bytes(b).ok().map(|s| s.to_bytes());
    let sketch_from_text: Reencoder = |b| {
        MinhashSketch::from_text(b)
            .ok()
            .map(|s| s.to_string().into_bytes())
    };
    let decoders: [Reencoder; 6] = [
        sketch_from_bytes,
        sketch_from_text,
        sketch_from_bytes,
        sketch_from_text,
        |b| SupershingleVector::from_bytes(b).ok().map(|v| v.to_bytes()),
        |b| {
            SupershingleVector::from_text(b)
                .ok()
                .map(|v| v.to_string().into_bytes())
        },
    ];
    let mut corrupted_but_valid = 0;
    for (form, decode) in forms.iter().zip(decoders) {
        assert_eq!(decode(form).as_ref(), Some(form));
        for len in 0..form.len() {
            assert_eq!(decode(&form[..len]), None, "prefix of {len} bytes decoded");
        }
        for _ in 0..20_000 {
            let mut bytes = form.clone();
            let at = rng.below(bytes.len());
            bytes[at] = rng.next() as u8;
            match decode(&bytes) {
                Some(reencoded) if reencoded == bytes => corrupted_but_valid += 1,
                Some(reencoded) => {
                    // Only a digit's case may differ: the text forms print lowercase.
                    assert_eq!(reencoded, bytes.to_ascii_lowercase(), "{bytes:?}");
                }
                None => {}
            }
        }
        for _ in 0..20_000 {
            let bytes: Vec<u8> = (0..rng.below(80)).map(|_| rng.next() as u8).collect();
            if let Some(reencoded) = decode(&bytes) {
                assert_eq!(reencoded, bytes);
            }
        }
    }
    assert!(corrupted_but_valid > 1000, "{corrupted_but_valid}");
}
