//! Broder's minhash sketch: m "minvalues" whose agreement estimates the Jaccard resemblance
//! of two texts' shingle sets (Henzinger 2006, Alg. B; defaults m = 84, 8-word shingles).
//!
//! # What is hashed
//!
//! The features of [`crate::text::features`], each hashed once to 64 bits: by default word
//! shingles, runs of `shingle` consecutive tokens (case folded); or, for short texts and
//! texts without spaces between words (Chinese, Japanese), character n-grams of the
//! canonical form ([`FeatureKind::CharNgrams`], as simhash uses them). A text with fewer
//! tokens (characters) than the window, but at least one, has a single feature of all it
//! has, so identical short texts match. Repeated features count once: a min does not see
//! multiplicity.
//!
//! # The hash functions (part of the stored format)
//!
//! A shingle's key `x` is the low 32 bits of its 64-bit hash. Entry i of a sketch is
//! `min over shingles of h_i(x)`, with `h_i(x) = ((a_i · x + b_i) mod 2^64) >> 32`, in
//! place of Broder's random permutations: Dietzfelbinger's multiply-add-shift, strongly
//! universal from 32-bit keys to 32-bit values for uniform 64-bit `a_i`, `b_i` (Thorup,
//! "High speed hashing for integers and strings", 2015). The `(a_i, b_i)` are drawn from [`crate::base::splitmix`] seeded with
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
//! See [`crate::signatures::minhash_encoding`]: 340 bytes (binary) or `m84s8:` and 672 hex digits
//! (text) for the defaults; `m84c5:` for 5-character n-grams.
//!
//! # Compatibility
//!
//! Everything that decides a value is fixed: the features and their hashes, the family's
//! seed, generator and arithmetic, and which minvalue is which. The vector kernels (AVX2,
//! AVX-512, picked at run time) compute the portable kernel's values bit for bit, in
//! another order of the same min operations; the golden vectors in
//! `tests/golden_minhash.tsv` are checked against every kernel the CPU has. Character
//! n-grams were added without changing any word-shingle sketch.

use crate::base::splitmix::splitmix64_next;
use crate::text::features::{for_each_feature, FeatureKind, FeatureOptions, OptionError};
use std::fmt;

pub const DEFAULT_NUM_HASHES: usize = 84;
pub const DEFAULT_SHINGLE: usize = 8;
/// Enough for a standard error of 1.6 % on the Jaccard estimate; the table of hash
/// functions is generated for this many.
pub const MAX_NUM_HASHES: usize = 1024;

/// Seed of the SplitMix64 stream that draws the hash functions: the ASCII bytes of
/// "neardup1", read big-endian.
pub const FAMILY_SEED: u64 = 0x6e65_6172_6475_7031;

/// Number of hashes and features (word shingles or character n-grams), validated once
/// so that sketching cannot fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinhashOptions {
    num_hashes: usize,
    features: FeatureKind,
}

impl MinhashOptions {
    pub const DEFAULT: MinhashOptions = MinhashOptions {
        num_hashes: DEFAULT_NUM_HASHES,
        features: FeatureKind::WordShingles(DEFAULT_SHINGLE),
    };

    /// Word shingles of `shingle` tokens.
    pub fn new(num_hashes: i32, shingle: i32) -> Result<Self, OptionError> {
        Self::with_features(num_hashes, shingle, 0)
    }

    /// Options from the SQL arguments: character n-grams of `ngram` characters when
    /// `ngram` > 0 (then `shingle` is ignored), else word shingles of `shingle` tokens,
    /// as [`FeatureOptions::new`] reads them.
    pub fn with_features(num_hashes: i32, shingle: i32, ngram: i32) -> Result<Self, OptionError> {
        if !(1..=MAX_NUM_HASHES as i32).contains(&num_hashes) {
            return Err(OptionError(format!(
                "num_hashes must be between 1 and {MAX_NUM_HASHES}"
            )));
        }
        let features = FeatureOptions::new(shingle, ngram, true)?.kind;
        Ok(MinhashOptions {
            num_hashes: num_hashes as usize,
            features,
        })
    }

    pub fn num_hashes(&self) -> usize {
        self.num_hashes
    }

    pub fn features(&self) -> FeatureKind {
        self.features
    }

    /// Tokens per shingle, or characters per n-gram: see [`Self::features`].
    pub fn shingle(&self) -> usize {
        window(self.features)
    }
}

fn window(features: FeatureKind) -> usize {
    match features {
        FeatureKind::WordShingles(w) | FeatureKind::CharNgrams(w) => w,
    }
}

/// A minhash sketch: the features it was computed over and its minvalues. Only built by
/// [`minhash_text`] or by decoding, so its sizes are always within the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinhashSketch {
    pub(crate) features: FeatureKind,
    pub(crate) values: Vec<u32>,
}

impl MinhashSketch {
    pub fn features(&self) -> FeatureKind {
        self.features
    }

    /// Tokens per shingle, or characters per n-gram: see [`Self::features`].
    pub fn shingle(&self) -> usize {
        window(self.features)
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

/// Shingle keys collected before they lower the minvalues: the hash functions' parameters
/// and a vector of minvalues stay in registers for a whole batch, and the CPU check is
/// made once per batch.
const BATCH: usize = 64;

/// The minhash sketch of a text's word shingles or character n-grams.
pub fn minhash_text(text: &[u8], options: &MinhashOptions) -> MinhashSketch {
    sketch_with(text, options, lower_batch)
}

fn sketch_with(
    text: &[u8],
    options: &MinhashOptions,
    mut lower: impl FnMut(&mut [u32], &[u32]),
) -> MinhashSketch {
    let features = FeatureOptions {
        kind: options.features,
        fold_case: true,
    };
    // Padded to whole vectors (the table has MAX_NUM_HASHES, a multiple of the widest
    // vector, entries): the extra entries are computed and dropped.
    let n = options.num_hashes;
    let mut values = vec![u32::MAX; n.next_multiple_of(WIDEST)];
    let mut keys = [0u32; BATCH];
    let mut len = 0;
    for_each_feature(text, &features, |h| {
        keys[len] = h as u32;
        len += 1;
        if len == BATCH {
            lower(&mut values, &keys);
            len = 0;
        }
    });
    if len > 0 {
        lower(&mut values, &keys[..len]);
    }
    values.truncate(n);
    MinhashSketch {
        features: options.features,
        values,
    }
}

/// Vector width (in u32 lanes) of the widest kernel; `minvalues` are padded to it.
const WIDEST: usize = 8;

/// Lowers `minvalues` (a multiple of [`WIDEST`] entries) by every key of `keys`, with the
/// fastest kernel this CPU has.
fn lower_batch(minvalues: &mut [u32], keys: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    return x86::lower_batch(x86::detected(), minvalues, keys);
    #[cfg(not(target_arch = "x86_64"))]
    lower_batch_portable(minvalues, keys)
}

/// The reference kernel: any CPU, one key at a time over all minvalues.
fn lower_batch_portable(minvalues: &mut [u32], keys: &[u32]) {
    for &x in keys {
        lower_minvalues(minvalues, x);
    }
}

/// The vector kernels: the portable kernel's values, 8 or 16 hash functions per
/// instruction.
///
/// Per hash function, per key `x` (broadcast to all lanes): `hi32(a_lo·x + b) +
/// lo32(a_hi·x) (mod 2^32)`, which is [`hash_value`]: the second term only adds to the
/// high half of the 64-bit sum `a_lo·x + b + 2^32·a_hi·x`, and what it carries out of it
/// is dropped by the mod 2^64. The 32 × 32 → 64-bit multiply works on the even 32-bit
/// lanes, so the even and odd hash functions of a chunk go through one register each, and
/// a blend of their high halves puts the values back in order.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::FAMILY;
    use std::arch::x86_64::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// The best kernel of this CPU, detected once.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) enum Kernel {
        Portable,
        Avx2,
        Avx512,
    }

    const UNKNOWN: u8 = 0;
    static DETECTED: AtomicU8 = AtomicU8::new(UNKNOWN);

    pub(super) fn detected() -> Kernel {
        match DETECTED.load(Ordering::Relaxed) {
            1 => Kernel::Portable,
            2 => Kernel::Avx2,
            3 => Kernel::Avx512,
            _ => {
                let kernel = if is_x86_feature_detected!("avx512f") {
                    Kernel::Avx512
                } else if is_x86_feature_detected!("avx2") {
                    Kernel::Avx2
                } else {
                    Kernel::Portable
                };
                DETECTED.store(kernel as u8 + 1, Ordering::Relaxed);
                kernel
            }
        }
    }

    /// Lowers `minvalues` (a multiple of 8 entries) by `keys` with `kernel`. Panics if the
    /// CPU lacks the kernel's instructions.
    pub(super) fn lower_batch(kernel: Kernel, minvalues: &mut [u32], keys: &[u32]) {
        let supported = match kernel {
            Kernel::Portable => true,
            Kernel::Avx2 => is_x86_feature_detected!("avx2"),
            Kernel::Avx512 => is_x86_feature_detected!("avx512f"),
        };
        assert!(supported, "this CPU has no {kernel:?}");
        #[allow(unsafe_code)]
        // SAFETY: a `target_feature` function may only run on a CPU with its features,
        // and the assertion above has just checked that this one has them (`avx512f`
        // implies `avx2`).
        unsafe {
            match kernel {
                Kernel::Portable => super::lower_batch_portable(minvalues, keys),
                Kernel::Avx2 => lower_batch_avx2(minvalues, keys),
                Kernel::Avx512 => lower_batch_avx512(minvalues, keys),
            }
        }
    }

    #[target_feature(enable = "avx2")]
    fn lower_batch_avx2(minvalues: &mut [u32], keys: &[u32]) {
        let (chunks, rest) = minvalues.as_chunks_mut::<8>();
        debug_assert!(rest.is_empty());
        for (c, mins) in chunks.iter_mut().enumerate() {
            lower_8(mins, 8 * c, keys);
        }
    }

    /// Sixteen hash functions at a time, and the last eight, if any, with AVX2.
    #[target_feature(enable = "avx512f")]
    fn lower_batch_avx512(minvalues: &mut [u32], keys: &[u32]) {
        let (chunks, rest) = minvalues.as_chunks_mut::<16>();
        for (c, mins) in chunks.iter_mut().enumerate() {
            lower_16(mins, 16 * c, keys);
        }
        if let Some(mins) = rest.first_chunk_mut::<8>() {
            lower_8(mins, 16 * chunks.len(), keys);
        }
    }

    /// Hash functions `first..first + 8`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn lower_8(mins: &mut [u32; 8], first: usize, keys: &[u32]) {
        let at = |table: &[u64; super::MAX_NUM_HASHES]| -> [u64; 8] {
            *table[first..].first_chunk().expect("within the table")
        };
        let (a_lo, a_hi, b) = (at(&FAMILY.a_lo), at(&FAMILY.a_hi), at(&FAMILY.b));
        let a_lo = u32x8(a_lo.map(|v| v as u32));
        let a_hi = u32x8(a_hi.map(|v| v as u32));
        let (b0, b1) = (u64x4(&b[..4]), u64x4(&b[4..]));
        // [b0 b4 b2 b6] and [b1 b5 b3 b7], then each in order.
        let b_even = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_unpacklo_epi64(b0, b1));
        let b_odd = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_unpackhi_epi64(b0, b1));
        let a_lo_odd = _mm256_srli_epi64::<32>(a_lo);
        let mut m = u32x8(*mins);
        for &x in keys {
            let x = _mm256_set1_epi32(x as i32);
            let even = _mm256_add_epi64(_mm256_mul_epu32(a_lo, x), b_even);
            let odd = _mm256_add_epi64(_mm256_mul_epu32(a_lo_odd, x), b_odd);
            let high = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<32>(even), odd);
            m = _mm256_min_epu32(m, _mm256_add_epi32(high, _mm256_mullo_epi32(a_hi, x)));
        }
        *mins = u32x8_array(m);
    }

    /// Hash functions `first..first + 16`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn lower_16(mins: &mut [u32; 16], first: usize, keys: &[u32]) {
        let at = |table: &[u64; super::MAX_NUM_HASHES]| -> [u64; 16] {
            *table[first..].first_chunk().expect("within the table")
        };
        let (a_lo, a_hi, b) = (at(&FAMILY.a_lo), at(&FAMILY.a_hi), at(&FAMILY.b));
        let a_lo = u32x16(a_lo.map(|v| v as u32));
        let a_hi = u32x16(a_hi.map(|v| v as u32));
        let (b0, b1) = (u64x8(&b[..8]), u64x8(&b[8..]));
        let evens = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
        let odds = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
        let b_even = _mm512_permutex2var_epi64(b0, evens, b1);
        let b_odd = _mm512_permutex2var_epi64(b0, odds, b1);
        let a_lo_odd = _mm512_srli_epi64::<32>(a_lo);
        let mut m = u32x16(*mins);
        for &x in keys {
            let x = _mm512_set1_epi32(x as i32);
            let even = _mm512_add_epi64(_mm512_mul_epu32(a_lo, x), b_even);
            let odd = _mm512_add_epi64(_mm512_mul_epu32(a_lo_odd, x), b_odd);
            let high = _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64::<32>(even), odd);
            m = _mm512_min_epu32(m, _mm512_add_epi32(high, _mm512_mullo_epi32(a_hi, x)));
        }
        let (low, high) = (_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64::<1>(m));
        let (low, high) = (u32x8_array(low), u32x8_array(high));
        *mins = std::array::from_fn(|k| if k < 8 { low[k] } else { high[k - 8] });
    }

    // Conversions between arrays and vectors without pointers: the compiler turns them
    // into plain loads and stores.

    #[target_feature(enable = "avx2")]
    #[inline]
    fn u32x8(v: [u32; 8]) -> __m256i {
        let v = v.map(|x| x as i32);
        _mm256_setr_epi32(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7])
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn u64x4(v: &[u64]) -> __m256i {
        _mm256_setr_epi64x(v[0] as i64, v[1] as i64, v[2] as i64, v[3] as i64)
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn u32x8_array(v: __m256i) -> [u32; 8] {
        let (low, high) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        [
            _mm_extract_epi32::<0>(low),
            _mm_extract_epi32::<1>(low),
            _mm_extract_epi32::<2>(low),
            _mm_extract_epi32::<3>(low),
            _mm_extract_epi32::<0>(high),
            _mm_extract_epi32::<1>(high),
            _mm_extract_epi32::<2>(high),
            _mm_extract_epi32::<3>(high),
        ]
        .map(|x| x as u32)
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    fn u32x16(v: [u32; 16]) -> __m512i {
        let v = v.map(|x| x as i32);
        _mm512_setr_epi32(
            v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13],
            v[14], v[15],
        )
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    fn u64x8(v: &[u64]) -> __m512i {
        let v: [i64; 8] = std::array::from_fn(|k| v[k] as i64);
        _mm512_setr_epi64(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7])
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
/// Sketches of different sizes or of different features (word shingles and character
/// n-grams, or windows of different sizes) estimate nothing and are an error.
pub fn jaccard(a: &MinhashSketch, b: &MinhashSketch) -> Result<f64, MismatchError> {
    if a.values.len() != b.values.len() {
        return Err(MismatchError(format!(
            "minhash sketches differ in size ({} and {} hashes)",
            a.values.len(),
            b.values.len()
        )));
    }
    match (a.features, b.features) {
        (FeatureKind::WordShingles(x), FeatureKind::WordShingles(y)) if x != y => {
            return Err(MismatchError(format!(
                "minhash sketches differ in shingle size ({x} and {y} words)"
            )))
        }
        (FeatureKind::CharNgrams(x), FeatureKind::CharNgrams(y)) if x != y => {
            return Err(MismatchError(format!(
                "minhash sketches differ in n-gram size ({x} and {y} characters)"
            )))
        }
        (x, y) if x != y => {
            return Err(MismatchError(format!(
                "minhash sketches differ in features ({} and {})",
                describe(x),
                describe(y)
            )))
        }
        _ => {}
    }
    let agreeing = a.values.iter().zip(&b.values).filter(|(x, y)| x == y);
    Ok(agreeing.count() as f64 / a.values.len() as f64)
}

fn describe(features: FeatureKind) -> String {
    match features {
        FeatureKind::WordShingles(w) => format!("{w}-word shingles"),
        FeatureKind::CharNgrams(n) => format!("{n}-character n-grams"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::base::hash::{hash_bytes, hash_sequence};

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

    type Kernel = fn(&mut [u32], &[u32]);

    /// The kernels this CPU can run, the portable one first.
    fn kernels() -> Vec<(&'static str, Kernel)> {
        #[allow(unused_mut)]
        let mut kernels: Vec<(&'static str, Kernel)> = vec![("portable", lower_batch_portable)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                kernels.push(("avx2", |m, k| x86::lower_batch(x86::Kernel::Avx2, m, k)));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                kernels.push(("avx512", |m, k| x86::lower_batch(x86::Kernel::Avx512, m, k)));
            }
        }
        kernels
    }

    #[test]
    fn vector_kernels_give_the_portable_values() {
        let mut state = 1;
        let mut next = || splitmix64_next(&mut state);
        // Extreme keys, where a lost carry or a signed comparison would show, and random ones.
        let keys: Vec<u32> = [0, 1, 0x7fff_ffff, 0x8000_0000, u32::MAX]
            .into_iter()
            .chain((0..300).map(|_| next() as u32))
            .collect();
        for n in [8, 16, 24, 32, 88, 96, 1016, 1024] {
            // Start from arbitrary minvalues, not only u32::MAX: the kernels load them.
            let start: Vec<u32> = (0..n).map(|_| next() as u32 | 0xf000_0000).collect();
            let mut expected = start.clone();
            lower_batch_portable(&mut expected, &keys);
            assert_ne!(expected, start);
            for (name, kernel) in kernels() {
                for batch in [1, 7, BATCH, keys.len()] {
                    let mut got = start.clone();
                    keys.chunks(batch).for_each(|keys| kernel(&mut got, keys));
                    assert_eq!(got, expected, "{name}, {n} hashes, batches of {batch}");
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            assert_eq!(x86::detected(), x86::Kernel::Avx512);
        }
    }

    #[test]
    fn every_kernel_gives_the_golden_sketches() {
        // The golden file run through each kernel, the portable one included, whichever
        // `minhash_text` picks on this CPU.
        let golden = include_str!("../../../tests/golden_minhash.tsv");
        // The golden file's escapes: \n, \t and \\.
        let unescape = |s: &str| {
            let mut out = String::new();
            let mut chars = s.chars();
            while let Some(c) = chars.next() {
                let escaped = if c == '\\' { chars.next() } else { None };
                out.push(match escaped {
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some(other) => other,
                    None => c,
                });
            }
            out
        };
        let mut checked = 0;
        for line in golden.lines().filter(|l| !l.starts_with('#')) {
            let c: Vec<&str> = line.split('\t').collect();
            let (shingle, ngram) = match c[1].strip_prefix('c') {
                Some(n) => (8, n.parse().unwrap()),
                None => (c[1].parse().unwrap(), 0),
            };
            let options =
                MinhashOptions::with_features(c[0].parse().unwrap(), shingle, ngram).unwrap();
            for (name, kernel) in kernels() {
                let s = sketch_with(unescape(c[2]).as_bytes(), &options, kernel);
                assert_eq!(s.to_string(), c[3], "{name}: {line}");
            }
            checked += 1;
        }
        assert!(checked >= 66);
    }

    #[test]
    fn long_texts_span_several_batches() {
        let words: Vec<String> = (0..1000).map(|i| format!("w{}", i * 7919 % 1009)).collect();
        let text = words.join(" ");
        for shingle in [1, 8] {
            let mut hashes = Vec::new();
            let options = FeatureOptions {
                kind: FeatureKind::WordShingles(shingle),
                fold_case: true,
            };
            for_each_feature(text.as_bytes(), &options, |h| hashes.push(h));
            assert!(hashes.len() > 10 * BATCH);
            let s = sketch(&text, 1024, shingle as i32);
            assert_eq!(
                s.values(),
                by_definition(&hashes, 1024),
                "shingle {shingle}"
            );
        }
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
        let ngrams = |text: &str, n| {
            minhash_text(
                text.as_bytes(),
                &MinhashOptions::with_features(84, 8, n).unwrap(),
            )
        };
        assert_eq!(
            jaccard(&ngrams("one", 3), &ngrams("one", 5))
                .unwrap_err()
                .to_string(),
            "minhash sketches differ in n-gram size (3 and 5 characters)"
        );
        // Word shingles of 2 and character 2-grams: the same window size, other features.
        assert_eq!(
            jaccard(&a, &ngrams("one", 2)).unwrap_err().to_string(),
            "minhash sketches differ in features (2-word shingles and 2-character n-grams)"
        );
        assert_eq!(
            jaccard(&ngrams("one", 2), &a).unwrap_err().to_string(),
            "minhash sketches differ in features (2-character n-grams and 2-word shingles)"
        );
        assert_eq!(
            jaccard(&ngrams("one two", 3), &ngrams("ONE two!", 3)),
            Ok(1.0)
        );
    }

    #[test]
    fn ngram_sketches_are_the_min_of_hashed_ngram_keys() {
        // Japanese has no spaces between words: one token, but many character n-grams.
        let text = "吾輩は猫である。名前はまだ無い。";
        let chars: Vec<char> = crate::text::tokenizer::canonical(text.as_bytes(), true)
            .chars()
            .collect();
        for n in [1, 2, 3, 32] {
            let ngrams: Vec<u64> = chars
                .windows(n.min(chars.len()))
                .map(|w| hash_bytes(w.iter().collect::<String>().as_bytes()))
                .collect();
            let options = MinhashOptions::with_features(100, 8, n as i32).unwrap();
            let s = minhash_text(text.as_bytes(), &options);
            assert_eq!(s.values(), by_definition(&ngrams, 100), "n = {n}");
            assert_eq!(s.features(), FeatureKind::CharNgrams(n));
            assert_eq!((s.num_hashes(), s.shingle()), (100, n));
        }
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
        assert_eq!(
            MinhashOptions::with_features(84, 8, 0),
            Ok(MinhashOptions::DEFAULT)
        );
        let ngrams = MinhashOptions::with_features(84, 8, 32).unwrap();
        assert_eq!(ngrams.features(), FeatureKind::CharNgrams(32));
        assert_eq!(ngrams.shingle(), 32);
        // With n-grams, the shingle size is not used, so not checked.
        assert!(MinhashOptions::with_features(84, 99, 3).is_ok());
        for bad in [-1, 33] {
            assert_eq!(
                MinhashOptions::with_features(84, 8, bad).unwrap_err().0,
                "ngram must be between 1 and 32, or 0 for word shingles"
            );
        }
        assert_eq!(
            MinhashOptions::with_features(0, 8, 3).unwrap_err().0,
            "num_hashes must be between 1 and 1024"
        );
    }
}
