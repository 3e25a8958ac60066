//! Broder's minhash sketch: m "minvalues" whose agreement estimates the Jaccard resemblance
//! of two texts' shingle sets (Henzinger 2006, Alg. B; defaults m = 84, 8-word shingles).
//!
//! # What is hashed
//!
//! The shingles are those of [`crate::features`]: runs of `shingle` consecutive tokens
//! (case folded), each hashed once to 64 bits. A text with fewer tokens than `shingle` (but
//! at least one) has a single shingle, all of its tokens, so identical short texts match.
//! Repeated shingles count once: a min does not see multiplicity.
//!
//! # The hash functions (part of the stored format)
//!
//! A shingle's key `x` is the low 32 bits of its 64-bit hash. Entry i of a sketch is
//! `min over shingles of h_i(x)`, with `h_i(x) = ((a_i · x + b_i) mod 2^64) >> 32`, in
//! place of Broder's random permutations: Dietzfelbinger's multiply-add-shift, strongly
//! universal from 32-bit keys to 32-bit values for uniform 64-bit `a_i`, `b_i` (Thorup,
//! "High speed hashing for integers and strings", 2015). The `(a_i, b_i)` are drawn from [`crate::splitmix`] seeded with
//! [`FAMILY_SEED`], in the order `a_0, b_0, a_1, b_1, …`, so a sketch of m hashes is the
//! first m entries of any longer one.
//!
//! 32-bit keys and values keep the per-shingle loop within 32 × 32-bit multiplies, which
//! the baseline x86-64 vector unit has, and make a sketch 84 × 4 = 336 bytes. What 32 bits
//! cost is accidental agreement: two different shingles share a key with probability
//! 2^-32, and two different minima agree with probability about n / 2^33 for texts of n
//! shingles (below 10^-5 for a 100,000-word text), negligible against the estimator's own
//! standard error of up to 1/(2·√m).
//!
//! # Texts without tokens
//!
//! The empty set has every entry `u32::MAX` (no shingle lowered it). Comparing entries,
//! two token-less texts agree everywhere: `jaccard(empty, empty) = 1.0`, as for any two
//! identical texts, and a token-less text agrees with a text that has tokens almost
//! nowhere.
//!
//! # Stored forms
//!
//! See [`crate::minhash_encoding`]: 340 bytes (binary) or `m84s8:` and 672 hex digits
//! (text) for the defaults.

use crate::features::{for_each_feature, FeatureKind, FeatureOptions, OptionError, MAX_SHINGLE};
use crate::splitmix::splitmix64_next;
use std::fmt;

pub const DEFAULT_NUM_HASHES: usize = 84;
pub const DEFAULT_SHINGLE: usize = 8;
/// Enough for a standard error of 1.6 % on the Jaccard estimate; the table of hash
/// functions is generated for this many.
pub const MAX_NUM_HASHES: usize = 1024;

/// Seed of the SplitMix64 stream that draws the hash functions: the ASCII bytes of
/// "neardup1", read big-endian.
pub const FAMILY_SEED: u64 = 0x6e65_6172_6475_7031;

/// Number of hashes and shingle size, validated once so that sketching cannot fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinhashOptions {
    num_hashes: usize,
    shingle: usize,
}

impl MinhashOptions {
    pub const DEFAULT: MinhashOptions = MinhashOptions {
        num_hashes: DEFAULT_NUM_HASHES,
        shingle: DEFAULT_SHINGLE,
    };

    /// Options from the SQL arguments.
    pub fn new(num_hashes: i32, shingle: i32) -> Result<Self, OptionError> {
        let in_range = |v: i32, max: usize| v >= 1 && v as usize <= max;
        if !in_range(num_hashes, MAX_NUM_HASHES) {
            return Err(OptionError(format!(
                "num_hashes must be between 1 and {MAX_NUM_HASHES}"
            )));
        }
        if !in_range(shingle, MAX_SHINGLE) {
            return Err(OptionError(format!(
                "shingle must be between 1 and {MAX_SHINGLE}"
            )));
        }
        Ok(MinhashOptions {
            num_hashes: num_hashes as usize,
            shingle: shingle as usize,
        })
    }

    pub fn num_hashes(&self) -> usize {
        self.num_hashes
    }

    pub fn shingle(&self) -> usize {
        self.shingle
    }
}

/// A minhash sketch: the shingle size it was computed with and its minvalues. Only built
/// by [`minhash_text`] or by decoding, so its sizes are always within the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinhashSketch {
    pub(crate) shingle: u8,
    pub(crate) values: Vec<u32>,
}

impl MinhashSketch {
    pub fn shingle(&self) -> usize {
        self.shingle as usize
    }

    pub fn num_hashes(&self) -> usize {
        self.values.len()
    }

    pub fn values(&self) -> &[u32] {
        &self.values
    }
}

/// The hash functions' parameters. Each multiplier is split into its 32-bit halves, kept
/// in 64-bit words: every product with a 32-bit key is then one 32 × 32 → 64-bit multiply,
/// which baseline x86-64 (SSE2) vectorizes, where a full 64-bit multiply it does not.
struct Family {
    a_lo: [u64; MAX_NUM_HASHES],
    a_hi: [u64; MAX_NUM_HASHES],
    b: [u64; MAX_NUM_HASHES],
}

/// Computed at compile time: the table is a constant of the stored format.
static FAMILY: Family = draw_family();

const fn draw_family() -> Family {
    let mut family = Family {
        a_lo: [0; MAX_NUM_HASHES],
        a_hi: [0; MAX_NUM_HASHES],
        b: [0; MAX_NUM_HASHES],
    };
    let mut state = FAMILY_SEED;
    let mut i = 0;
    while i < MAX_NUM_HASHES {
        let a = splitmix64_next(&mut state);
        family.a_lo[i] = a & LOW_HALF;
        family.a_hi[i] = a >> 32;
        family.b[i] = splitmix64_next(&mut state);
        i += 1;
    }
    family
}

const LOW_HALF: u64 = 0xffff_ffff;

/// Lowers each minvalue to the shingle's hash value where that is smaller: this loop is
/// the sketch's cost. Branch-free, and written four entries at a time so the compiler
/// fills whole vectors of four 32-bit values (left to itself it picks two 64-bit lanes).
#[inline]
fn lower_minvalues(minvalues: &mut [u32], x: u32) {
    const LANES: usize = 4;
    let n = minvalues.len();
    let (a_lo, a_hi, b) = (&FAMILY.a_lo[..n], &FAMILY.a_hi[..n], &FAMILY.b[..n]);
    let (vectors, rest) = minvalues.as_chunks_mut::<LANES>();
    let parameters = a_lo
        .as_chunks::<LANES>()
        .0
        .iter()
        .zip(a_hi.as_chunks::<LANES>().0)
        .zip(b.as_chunks::<LANES>().0);
    for (mins, ((a_lo, a_hi), b)) in vectors.iter_mut().zip(parameters) {
        let values: [u32; LANES] = std::array::from_fn(|k| hash_value(a_lo[k], a_hi[k], b[k], x));
        for (min, value) in mins.iter_mut().zip(values) {
            *min = (*min).min(value);
        }
    }
    let done = n - rest.len();
    for (i, min) in (done..n).zip(rest) {
        *min = (*min).min(hash_value(a_lo[i], a_hi[i], b[i], x));
    }
}

/// `((a·x + b) mod 2^64) >> 32` from the halves of `a`: `a·x = a_lo·x + 2^32·a_hi·x`.
/// The masks are no-ops on the table's values; they tell the compiler that each product
/// is 32 × 32 bits.
#[inline(always)]
fn hash_value(a_lo: u64, a_hi: u64, b: u64, x: u32) -> u32 {
    let x = x as u64;
    let low = (a_lo & LOW_HALF) * x;
    let high = ((a_hi & LOW_HALF) * x) << 32;
    (low.wrapping_add(b).wrapping_add(high) >> 32) as u32
}

/// The minhash sketch of a text's word shingles.
pub fn minhash_text(text: &[u8], options: &MinhashOptions) -> MinhashSketch {
    let features = FeatureOptions {
        kind: FeatureKind::WordShingles(options.shingle),
        fold_case: true,
    };
    let mut values = vec![u32::MAX; options.num_hashes];
    for_each_feature(text, &features, |h| lower_minvalues(&mut values, h as u32));
    MinhashSketch {
        shingle: options.shingle as u8,
        values,
    }
}

/// Two sketches that cannot be compared; the message says how they differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MismatchError(pub String);

impl fmt::Display for MismatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The estimated Jaccard resemblance: the fraction of entries on which the sketches agree.
/// Sketches of different sizes or shingle sizes estimate nothing and are an error.
pub fn jaccard(a: &MinhashSketch, b: &MinhashSketch) -> Result<f64, MismatchError> {
    if a.values.len() != b.values.len() {
        return Err(MismatchError(format!(
            "minhash sketches differ in size ({} and {} hashes)",
            a.values.len(),
            b.values.len()
        )));
    }
    if a.shingle != b.shingle {
        return Err(MismatchError(format!(
            "minhash sketches differ in shingle size ({} and {} words)",
            a.shingle, b.shingle
        )));
    }
    let agreeing = a.values.iter().zip(&b.values).filter(|(x, y)| x == y);
    Ok(agreeing.count() as f64 / a.values.len() as f64)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::hash::{hash_bytes, hash_sequence};

    pub(crate) fn sketch(text: &str, num_hashes: i32, shingle: i32) -> MinhashSketch {
        minhash_text(
            text.as_bytes(),
            &MinhashOptions::new(num_hashes, shingle).unwrap(),
        )
    }

    /// The i-th hash function's 64-bit parameters, redrawn from the seed.
    fn parameters(i: usize) -> (u64, u64) {
        let mut state = FAMILY_SEED;
        for _ in 0..i {
            splitmix64_next(&mut state);
            splitmix64_next(&mut state);
        }
        (splitmix64_next(&mut state), splitmix64_next(&mut state))
    }

    /// The sketch of a set of shingle hashes, by the definition.
    fn by_definition(hashes: &[u64], num_hashes: usize) -> Vec<u32> {
        (0..num_hashes)
            .map(|i| {
                let (a, b) = parameters(i);
                let h = |&x: &u64| (a.wrapping_mul(x as u32 as u64).wrapping_add(b) >> 32) as u32;
                hashes.iter().map(h).min().unwrap_or(u32::MAX)
            })
            .collect()
    }

    #[test]
    fn family_is_drawn_in_order() {
        for i in [0, 1, 83, MAX_NUM_HASHES - 1] {
            let (a, b) = parameters(i);
            assert_eq!(FAMILY.a_lo[i] | FAMILY.a_hi[i] << 32, a);
            assert!(FAMILY.a_lo[i] <= LOW_HALF && FAMILY.a_hi[i] <= LOW_HALF);
            assert_eq!(FAMILY.b[i], b);
        }
    }

    #[test]
    fn split_multiply_equals_the_64_bit_formula() {
        // Extreme parameters and keys, where a lost carry or an overflow would show.
        let extremes = [0, 1, LOW_HALF, 0x8000_0000_0000_0000, u64::MAX];
        for a in extremes.into_iter().chain([parameters(0).0]) {
            for b in extremes.into_iter().chain([parameters(0).1]) {
                for x in [0, 1, 0x8000_0000, u32::MAX] {
                    let expected = (a.wrapping_mul(x as u64).wrapping_add(b) >> 32) as u32;
                    let got = hash_value(a & LOW_HALF, a >> 32, b, x);
                    assert_eq!(got, expected, "a = {a:#x}, b = {b:#x}, x = {x:#x}");
                }
            }
        }
    }

    #[test]
    fn every_sketch_size_takes_the_vector_and_the_remainder_paths() {
        let text = "enough words here to make a few different shingles of two words";
        let hashes: Vec<u64> = {
            let mut out = Vec::new();
            let options = FeatureOptions {
                kind: FeatureKind::WordShingles(2),
                fold_case: true,
            };
            for_each_feature(text.as_bytes(), &options, |h| out.push(h));
            out
        };
        for n in (1..=9).chain([83, 84, 1023, 1024]) {
            let s = sketch(text, n as i32, 2);
            assert_eq!(s.values(), by_definition(&hashes, n), "n = {n}");
        }
    }

    #[test]
    fn sketch_is_the_min_of_hashed_shingle_keys() {
        let words = ["alpha", "beta", "gamma", "delta", "alpha", "beta", "gamma"];
        let h = |w: &[&str]| hash_sequence(w.iter().map(|t| hash_bytes(t.as_bytes())));
        let shingles: Vec<u64> = words.windows(3).map(h).collect();
        let s = sketch(&words.join(" "), 100, 3);
        assert_eq!(s.values(), by_definition(&shingles, 100));
        assert_eq!((s.num_hashes(), s.shingle()), (100, 3));
        // The repeated shingle "alpha beta gamma" counts once.
        let distinct = sketch("alpha beta gamma delta alpha beta", 100, 3);
        assert_eq!(s, distinct);
    }

    #[test]
    fn short_texts_are_one_shingle_and_empty_texts_the_empty_set() {
        let s = sketch("Just Three words", 84, 8);
        let whole = hash_sequence(
            ["just", "three", "words"]
                .map(|t| hash_bytes(t.as_bytes()))
                .into_iter(),
        );
        assert_eq!(s.values(), by_definition(&[whole], 84));
        assert_eq!(jaccard(&s, &sketch("just three WORDS!", 84, 8)), Ok(1.0));
        let empty = sketch(" <p> -- </p>", 84, 8);
        assert!(empty.values().iter().all(|&v| v == u32::MAX));
        assert_eq!(jaccard(&empty, &sketch("", 84, 8)), Ok(1.0));
        assert_eq!(jaccard(&empty, &s), Ok(0.0));
    }

    #[test]
    fn shorter_sketches_are_prefixes_of_longer_ones() {
        let text = "a text long enough to have several shingles of eight words each, or more";
        let long = sketch(text, 1024, 8);
        for n in [1, 84, 1000] {
            assert_eq!(sketch(text, n, 8).values(), &long.values()[..n as usize]);
        }
    }

    #[test]
    fn jaccard_counts_agreeing_entries_of_comparable_sketches() {
        let a = sketch("one two three four five six seven eight nine ten", 84, 2);
        let b = sketch("one two three four five six seven eight nine eleven", 84, 2);
        assert_eq!(jaccard(&a, &a), Ok(1.0));
        let agreeing = a.values().iter().zip(b.values()).filter(|(x, y)| x == y);
        let estimate = jaccard(&a, &b).unwrap();
        assert_eq!(estimate, agreeing.count() as f64 / 84.0);
        assert!(estimate > 0.5 && estimate < 1.0, "{estimate}");
        assert_eq!(
            jaccard(&a, &sketch("one", 100, 2)).unwrap_err().to_string(),
            "minhash sketches differ in size (84 and 100 hashes)"
        );
        assert_eq!(
            jaccard(&a, &sketch("one", 84, 3)).unwrap_err().to_string(),
            "minhash sketches differ in shingle size (2 and 3 words)"
        );
    }

    #[test]
    fn option_ranges() {
        assert!(MinhashOptions::new(0, 8).is_err());
        assert!(MinhashOptions::new(-84, 8).is_err());
        assert_eq!(
            MinhashOptions::new(1025, 8).unwrap_err().0,
            "num_hashes must be between 1 and 1024"
        );
        assert_eq!(
            MinhashOptions::new(84, 17).unwrap_err().0,
            "shingle must be between 1 and 16"
        );
        assert_eq!(MinhashOptions::new(84, 8), Ok(MinhashOptions::DEFAULT));
        assert!(MinhashOptions::new(1024, 1).is_ok());
    }
}
