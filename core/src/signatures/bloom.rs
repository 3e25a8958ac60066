//! Bloom signatures (Jain et al. §2.3): the chunks of a document ([`crate::signatures::chunk_set`]) as
//! a Bloom filter of `m` bits with `k` hash functions, compared by bitwise AND.
//!
//! Bit positions of an element `e`: the first `k` outputs `z_1..z_k` of SplitMix64 seeded
//! with `e` ([`splitmix64_next`]), each mapped to `⌊z_i · m / 2^64⌋` (the high half of the
//! 128-bit product: uniform over `0..m` for any `m`, no division). These are `k`
//! independent hash functions as the paper's analysis assumes; two of them may pick the
//! same bit. Bit `i` of the filter is bit `i % 8` (least significant first) of byte `i / 8`.
//!
//! The default `k` is [`DEFAULT_HASHES`] = 6, whatever the document: the optimum
//! `k = (m/n) ln 2` at the paper's design point (§3.1.1: `m` is 8 bits per expected chunk
//! of the largest document, so `m/n = 8`, and `8 ln 2 = 5.55`; 6 is also the integer `k`
//! that minimizes the false-match probability `(1 − e^{−kn/m})^k` there). It must not
//! follow each document's own chunk count: containment is a test that the bits of one
//! filter are among the bits of another, which only holds when both set the same bits for
//! the same chunk, i.e. use the same `m`, `k` and chunk size. Signatures carry all three,
//! and combining two that differ is an error ([`BloomError::Mismatch`]).
//!
//! Empty filters (documents without a token): [`bloom_match`] of an empty filter is 1.0
//! against another empty filter and 0.0 against any other, and [`bloom_similarity`] of two
//! empty filters is 1.0. An empty text is the same text as another empty text, but it is
//! not evidence that a page contains a fragment, so empty fragments never rank first.
//!
//! What to expect from [`bloom_match`] for unrelated documents: about the fraction of bits
//! set in the second filter, `1 − e^{−k n_b / m}`, not the paper's 3 % at `m = 8n` (see
//! [`crate::signatures::bloom_analysis`]).

use crate::base::splitmix::splitmix64_next;
use crate::signatures::chunk_set::for_each_element;
use crate::text::chunking::{ChunkSize, ChunkSizeError};
use std::fmt;

/// The paper's filter size (§3.1.1): 8 bits per expected chunk of a 64 KB document.
pub const DEFAULT_BITS: u32 = 2048;
pub const MIN_BITS: u32 = 64;
pub const MAX_BITS: u32 = 65536;
/// `round(8 ln 2)`: see the module documentation.
pub const DEFAULT_HASHES: u8 = 6;
pub const MAX_HASHES: u8 = 16;

/// What a signature was built with; only signatures with equal parameters compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomParams {
    bits: u32,
    hashes: u8,
    chunk_size: ChunkSize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BloomError {
    /// `bits` is not a multiple of 8 in `MIN_BITS..=MAX_BITS`.
    Bits(i64),
    /// `hashes` is not in `1..=MAX_HASHES`.
    Hashes(i64),
    ChunkSize(ChunkSizeError),
    /// Two signatures built with different parameters.
    Mismatch(BloomParams, BloomParams),
    /// An encoded signature that cannot be read back; says why.
    Malformed(String),
}

impl fmt::Display for BloomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BloomError::Bits(bits) => write!(
                f,
                "bits must be a multiple of 8 between {MIN_BITS} and {MAX_BITS}, got {bits}"
            ),
            BloomError::Hashes(k) => {
                write!(f, "hashes must be between 1 and {MAX_HASHES}, got {k}")
            }
            BloomError::ChunkSize(e) => e.fmt(f),
            BloomError::Mismatch(a, b) => write!(
                f,
                "Bloom signatures built with different parameters ({a} and {b}) cannot be \
                 compared"
            ),
            BloomError::Malformed(why) => write!(f, "malformed Bloom signature: {why}"),
        }
    }
}

impl From<ChunkSizeError> for BloomError {
    fn from(e: ChunkSizeError) -> Self {
        BloomError::ChunkSize(e)
    }
}

/// The header of the text form, e.g. `m=2048:k=6:chunk=256`.
impl fmt::Display for BloomParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "m={}:k={}:chunk={}",
            self.bits,
            self.hashes,
            self.chunk_size.get()
        )
    }
}

impl BloomParams {
    /// Checks the SQL arguments (any integer, so nothing is cast unchecked); `hashes`
    /// `None` takes [`DEFAULT_HASHES`].
    pub fn new(bits: i64, hashes: Option<i64>, chunk_size: i64) -> Result<Self, BloomError> {
        if !(MIN_BITS as i64..=MAX_BITS as i64).contains(&bits) || bits % 8 != 0 {
            return Err(BloomError::Bits(bits));
        }
        let hashes = hashes.unwrap_or(DEFAULT_HASHES as i64);
        if !(1..=MAX_HASHES as i64).contains(&hashes) {
            return Err(BloomError::Hashes(hashes));
        }
        Ok(BloomParams {
            bits: bits as u32,
            hashes: hashes as u8,
            chunk_size: ChunkSize::new(chunk_size)?,
        })
    }

    /// `m`
    pub fn bits(self) -> u32 {
        self.bits
    }

    /// `k`
    pub fn hashes(self) -> u8 {
        self.hashes
    }

    pub fn chunk_size(self) -> ChunkSize {
        self.chunk_size
    }
}

/// A Bloom filter of chunk elements, with the parameters it was built with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BloomSignature {
    params: BloomParams,
    /// `m / 8` bytes; bit `i` is bit `i % 8` of byte `i / 8`.
    bits: Vec<u8>,
}

/// A signature borrowed, from a [`BloomSignature`] or straight from its binary encoding
/// ([`BloomView::from_bytes`]), so that comparing stored signatures copies nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomView<'a> {
    params: BloomParams,
    bits: &'a [u8],
}

impl BloomSignature {
    /// The filter of the empty set.
    pub fn empty(params: BloomParams) -> Self {
        BloomSignature {
            params,
            bits: vec![0; params.bits as usize / 8],
        }
    }

    pub fn params(&self) -> BloomParams {
        self.params
    }

    pub fn insert(&mut self, element: u64) {
        for bit in bit_positions(element, self.params) {
            self.bits[bit / 8] |= 1 << (bit % 8);
        }
    }

    /// Whether all `k` bits of `element` are set: certainly for an inserted element, with
    /// the false-positive probability otherwise.
    pub fn contains(&self, element: u64) -> bool {
        bit_positions(element, self.params).all(|bit| self.bits[bit / 8] >> (bit % 8) & 1 == 1)
    }

    /// Number of bits set.
    pub fn bit_count(&self) -> u32 {
        self.view().bit_count()
    }

    /// Bitwise AND: a filter of (at least) the elements both contain.
    pub fn and(&self, other: &Self) -> Result<Self, BloomError> {
        self.combine(other, |a, b| a & b)
    }

    /// Bitwise OR: exactly the filter of the union of both sets.
    pub fn or(&self, other: &Self) -> Result<Self, BloomError> {
        self.combine(other, |a, b| a | b)
    }

    fn combine(&self, other: &Self, op: impl Fn(u8, u8) -> u8) -> Result<Self, BloomError> {
        same_params(self.view(), other.view())?;
        Ok(BloomSignature {
            params: self.params,
            bits: self
                .bits
                .iter()
                .zip(&other.bits)
                .map(|(&a, &b)| op(a, b))
                .collect(),
        })
    }

    /// The `m / 8` bytes of the bit array (bit `i` in byte `i / 8`, least significant
    /// bit first).
    pub fn bit_bytes(&self) -> &[u8] {
        &self.bits
    }

    /// The inverse of [`Self::bit_bytes`]; the length must be `m / 8`.
    pub fn from_bit_bytes(params: BloomParams, bytes: &[u8]) -> Result<Self, BloomError> {
        Ok(BloomView::new(params, bytes)?.to_signature())
    }

    pub fn view(&self) -> BloomView<'_> {
        BloomView {
            params: self.params,
            bits: &self.bits,
        }
    }
}

impl<'a> BloomView<'a> {
    /// Parameters and the `m / 8` bytes of a bit array.
    pub fn new(params: BloomParams, bits: &'a [u8]) -> Result<Self, BloomError> {
        let expected = params.bits as usize / 8;
        if bits.len() != expected {
            return Err(BloomError::Malformed(format!(
                "{params} needs {expected} bytes of bits, got {}",
                bits.len()
            )));
        }
        Ok(BloomView { params, bits })
    }

    pub fn params(self) -> BloomParams {
        self.params
    }

    pub fn bit_bytes(self) -> &'a [u8] {
        self.bits
    }

    pub fn bit_count(self) -> u32 {
        popcounts(self.bits, self.bits, |a, _| a, |_, _| 0).0
    }

    pub fn to_signature(self) -> BloomSignature {
        BloomSignature {
            params: self.params,
            bits: self.bits.to_vec(),
        }
    }
}

impl<'a> From<&'a BloomSignature> for BloomView<'a> {
    fn from(signature: &'a BloomSignature) -> Self {
        signature.view()
    }
}

/// The `k` bit positions of `element` (see the module documentation).
fn bit_positions(element: u64, params: BloomParams) -> impl Iterator<Item = usize> {
    let mut state = element;
    (0..params.hashes).map(move |_| {
        let z = splitmix64_next(&mut state);
        ((z as u128 * params.bits as u128) >> 64) as usize
    })
}

fn same_params(a: BloomView, b: BloomView) -> Result<(), BloomError> {
    if a.params == b.params {
        Ok(())
    } else {
        Err(BloomError::Mismatch(a.params, b.params))
    }
}

/// `(Σ popcount(first(x, y)), Σ popcount(second(x, y)))` over the 64-bit little-endian
/// words `x`, `y` of two bit arrays of the same length (a shorter last word is zero
/// padded). Plain word loops: the compiler unrolls and vectorizes them.
#[inline]
fn popcounts(
    a: &[u8],
    b: &[u8],
    first: impl Fn(u64, u64) -> u64,
    second: impl Fn(u64, u64) -> u64,
) -> (u32, u32) {
    let add = |(s, t): (u32, u32), (x, y): (u64, u64)| {
        (s + first(x, y).count_ones(), t + second(x, y).count_ones())
    };
    let word = |eight: &[u8]| u64::from_le_bytes(eight.try_into().expect("8 bytes"));
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_tail, b_tail) = (a_words.remainder(), b_words.remainder());
    let whole = a_words
        .zip(b_words)
        .map(|(x, y)| (word(x), word(y)))
        .fold((0, 0), add);
    let tail = a_tail
        .iter()
        .zip(b_tail)
        .map(|(&x, &y)| (x as u64, y as u64))
        .fold((0, 0), add);
    (whole.0 + tail.0, whole.1 + tail.1)
}

/// The Bloom signature of the chunks of `text` (`bloom_text(text, bits, hashes,
/// chunk_size)`).
pub fn bloom_text(
    text: &[u8],
    bits: i64,
    hashes: Option<i64>,
    chunk_size: i64,
) -> Result<BloomSignature, BloomError> {
    Ok(bloom_of(text, BloomParams::new(bits, hashes, chunk_size)?))
}

/// The Bloom signature of the chunks of `text` under checked parameters.
pub fn bloom_of(text: &[u8], params: BloomParams) -> BloomSignature {
    let mut signature = BloomSignature::empty(params);
    for_each_element(text, params.chunk_size, |e| signature.insert(e));
    signature
}

/// How much of `a` is in `b`: the fraction of `a`'s bits also set in `b`,
/// `|a AND b| / |a|` (1.0 when `a`'s document is contained in `b`'s). Asymmetric. An empty
/// `a` gives 1.0 if `b` is empty too, else 0.0 (see the module documentation).
/// Takes `&BloomSignature` or [`BloomView`].
pub fn bloom_match<'a, 'b>(
    a: impl Into<BloomView<'a>>,
    b: impl Into<BloomView<'b>>,
) -> Result<f64, BloomError> {
    let (a, b) = (a.into(), b.into());
    same_params(a, b)?;
    let (both, in_a) = popcounts(a.bits, b.bits, |x, y| x & y, |x, _| x);
    Ok(match in_a {
        0 if b.bit_count() == 0 => 1.0,
        0 => 0.0,
        _ => both as f64 / in_a as f64,
    })
}

/// Symmetric resemblance of the two filters: `|a AND b| / |a OR b|` (1.0 for two empty
/// filters: two empty texts are the same text). Takes `&BloomSignature` or [`BloomView`].
pub fn bloom_similarity<'a, 'b>(
    a: impl Into<BloomView<'a>>,
    b: impl Into<BloomView<'b>>,
) -> Result<f64, BloomError> {
    let (a, b) = (a.into(), b.into());
    same_params(a, b)?;
    let (both, either) = popcounts(a.bits, b.bits, |x, y| x & y, |x, y| x | y);
    Ok(if either == 0 {
        1.0
    } else {
        both as f64 / either as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(bits: i64, hashes: i64, chunk_size: i64) -> BloomParams {
        BloomParams::new(bits, Some(hashes), chunk_size).unwrap()
    }

    #[test]
    fn parameters_are_checked() {
        let p = BloomParams::new(2048, None, 256).unwrap();
        assert_eq!((p.bits(), p.hashes(), p.chunk_size().get()), (2048, 6, 256));
        assert_eq!(p.to_string(), "m=2048:k=6:chunk=256");
        for bad in [0, 56, 63, 65, 100, 65544, -8, i64::MAX] {
            let err = BloomParams::new(bad, None, 256).unwrap_err();
            assert_eq!(err, BloomError::Bits(bad));
            assert_eq!(
                err.to_string(),
                format!("bits must be a multiple of 8 between 64 and 65536, got {bad}")
            );
        }
        assert!(BloomParams::new(64, None, 256).is_ok());
        assert!(BloomParams::new(65536, None, 256).is_ok());
        assert!(BloomParams::new(72, None, 256).is_ok());
        for bad in [0, 17, -1, 256] {
            assert_eq!(
                BloomParams::new(2048, Some(bad), 256),
                Err(BloomError::Hashes(bad))
            );
        }
        assert!(BloomParams::new(2048, Some(1), 256).is_ok());
        assert!(BloomParams::new(2048, Some(16), 256).is_ok());
        assert_eq!(
            BloomParams::new(2048, None, 8).unwrap_err().to_string(),
            "chunk size must be between 16 and 65536 bytes, got 8"
        );
    }

    #[test]
    fn default_hashes_is_the_optimum_at_eight_bits_per_chunk() {
        let bits_per_chunk = 8.0;
        assert_eq!((bits_per_chunk * std::f64::consts::LN_2).round(), 6.0);
        let false_match = |k: f64| (1.0 - (-k / bits_per_chunk).exp()).powf(k);
        let best = (1..=MAX_HASHES)
            .min_by(|&a, &b| false_match(a as f64).total_cmp(&false_match(b as f64)))
            .unwrap();
        assert_eq!(best, DEFAULT_HASHES);
    }

    #[test]
    fn bit_positions_follow_the_specification() {
        let p = params(1000, 3, 256);
        let mut state = 42u64;
        let expected: Vec<usize> = (0..3)
            .map(|_| ((splitmix64_next(&mut state) as u128 * 1000) >> 64) as usize)
            .collect();
        assert_eq!(bit_positions(42, p).collect::<Vec<_>>(), expected);
        let mut s = BloomSignature::empty(p);
        s.insert(42);
        let mut bits: Vec<usize> = (0..1000)
            .filter(|&i| s.bit_bytes()[i / 8] >> (i % 8) & 1 == 1)
            .collect();
        let mut unique = expected.clone();
        unique.sort_unstable();
        unique.dedup();
        bits.sort_unstable();
        assert_eq!(bits, unique);
        assert!(s.contains(42));
    }

    #[test]
    fn positions_cover_all_bits_evenly() {
        // m not a multiple of 64: the last word is partly used, and must be reached.
        let p = params(72, 16, 256);
        let mut hits = [0u32; 72];
        for e in 0..10_000u64 {
            bit_positions(e, p).for_each(|bit| hits[bit] += 1);
        }
        let mean = 10_000.0 * 16.0 / 72.0;
        assert!(
            hits.iter().all(|&h| (h as f64 - mean).abs() < 0.1 * mean),
            "{hits:?}"
        );
    }

    #[test]
    fn set_operations_and_ratios() {
        let p = params(256, 4, 64);
        let filter = |elements: &[u64]| {
            let mut s = BloomSignature::empty(p);
            elements.iter().for_each(|&e| s.insert(e));
            s
        };
        let a = filter(&[1, 2, 3]);
        let b = filter(&[1, 2, 3, 4, 5, 6]);
        let empty = BloomSignature::empty(p);
        assert_eq!(a.or(&b).unwrap(), b);
        assert_eq!(a.and(&b).unwrap(), a);
        assert_eq!(bloom_match(&a, &b), Ok(1.0));
        let ratio = a.bit_count() as f64 / b.bit_count() as f64;
        assert_eq!(bloom_match(&b, &a), Ok(ratio));
        assert_eq!(bloom_similarity(&a, &b), Ok(ratio));
        assert_eq!(bloom_similarity(&b, &a), Ok(ratio));
        assert_eq!(bloom_match(&empty, &empty), Ok(1.0));
        assert_eq!(bloom_match(&empty, &a), Ok(0.0));
        assert_eq!(bloom_match(&a, &empty), Ok(0.0));
        assert_eq!(bloom_similarity(&empty, &empty), Ok(1.0));
        assert_eq!(bloom_similarity(&empty, &a), Ok(0.0));
        assert_eq!(empty.bit_count(), 0);
        assert!((1..=4).contains(&filter(&[9]).bit_count()));
    }

    #[test]
    fn different_parameters_do_not_mix() {
        let a = BloomSignature::empty(params(256, 4, 64));
        for other in [params(512, 4, 64), params(256, 5, 64), params(256, 4, 128)] {
            let b = BloomSignature::empty(other);
            let mismatch = BloomError::Mismatch(a.params(), other);
            assert_eq!(bloom_match(&a, &b), Err(mismatch.clone()));
            assert_eq!(bloom_similarity(&a, &b), Err(mismatch.clone()));
            assert_eq!(a.and(&b), Err(mismatch.clone()));
            assert_eq!(a.or(&b), Err(mismatch));
        }
        assert_eq!(
            BloomError::Mismatch(params(256, 4, 64), params(512, 4, 64)).to_string(),
            "Bloom signatures built with different parameters (m=256:k=4:chunk=64 and \
             m=512:k=4:chunk=64) cannot be compared"
        );
    }

    #[test]
    fn bit_bytes_round_trip() {
        let p = params(72, 6, 256);
        let mut s = BloomSignature::empty(p);
        (0..5).for_each(|e| s.insert(e));
        let bytes = s.bit_bytes().to_vec();
        assert_eq!(bytes.len(), 9);
        assert_eq!(BloomSignature::from_bit_bytes(p, &bytes), Ok(s));
        assert_eq!(
            BloomSignature::from_bit_bytes(p, &bytes[..8]),
            Err(BloomError::Malformed(
                "m=72:k=6:chunk=256 needs 9 bytes of bits, got 8".into()
            ))
        );
    }

    #[test]
    fn text_signature_defaults() {
        let s = bloom_text(b"Hello world", 2048, None, 256).unwrap();
        assert_eq!(s.params(), BloomParams::new(2048, Some(6), 256).unwrap());
        assert!((1..=6).contains(&s.bit_count()));
        assert_eq!(bloom_text(b"", 2048, None, 256).unwrap().bit_count(), 0);
        assert_eq!(
            bloom_text(b"x", 2048, None, 15),
            Err(BloomError::ChunkSize(ChunkSizeError(15)))
        );
    }
}
