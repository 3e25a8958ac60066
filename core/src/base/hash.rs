//! The one hash function that feeds stored signatures.
//!
//! XXH3-64 (xxHash 0.8 specification, seed 0) over UTF-8 bytes. Its output is fixed by a
//! published specification and is the same on every CPU and endianness; the crate is pinned
//! exactly in Cargo.toml and the golden vectors in `tests/golden_simhash.tsv` lock it.

/// Hash of a byte string: XXH3-64 with seed 0.
#[inline]
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// [`hash_bytes`] of `window[..len]`. When `window` has at least 16 bytes and `len` is at
/// most 16, the bytes are loaded as two words, with no length-dependent memory access
/// (bytes of `window` past `len` are loaded but do not affect the result).
#[inline(always)] // once per token: a call would cost as much as the hash
pub fn hash_prefix(window: &[u8], len: usize) -> u64 {
    match window.first_chunk::<16>() {
        Some(first16) if (1..=16).contains(&len) => {
            let (lo, hi) = first16.split_at(8);
            let le = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
            xxh3_short(le(lo), le(hi), len)
        }
        _ => hash_long(&window[..len]),
    }
}

/// [`hash_bytes`] out of line, for the rare token [`hash_prefix`] cannot load as two words
/// (longer than 16 bytes, or without 16 bytes of window): keeps the whole XXH3 out of the
/// per-token loops that inline `hash_prefix`, so they stay small enough to inline too.
#[cold]
#[inline(never)]
fn hash_long(bytes: &[u8]) -> u64 {
    hash_bytes(bytes)
}

/// The first 72 bytes of XXH3's default secret (`kSecret`): all that inputs of up to 16
/// bytes use.
const SECRET: [u8; 72] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb,
];

const fn secret64(at: usize) -> u64 {
    let mut v = 0;
    let mut k = 8;
    while k > 0 {
        k -= 1;
        v = v << 8 | SECRET[at + k] as u64;
    }
    v
}

const PRIME64_2: u64 = 0xC2B2AE3D27D4EB4F;
const PRIME64_3: u64 = 0x165667B19E3779F9;
const PRIME_MX1: u64 = 0x165667919E3779F9;
const PRIME_MX2: u64 = 0x9FB21C651E98DF25;

/// XXH3-64 (seed 0) of 1 to 16 bytes, given as the little-endian words of its first 16
/// bytes (anything past `len`), following the specification's three length classes.
/// Words of up to 8 bytes, most of them, compute both of their classes and select one: a
/// couple of multiplies are cheaper than a mispredicted branch on the length of a word.
/// `hash_bytes` is the reference; the tests compare the two.
#[inline]
fn xxh3_short(lo: u64, hi: u64, len: usize) -> u64 {
    if len > 8 {
        return xxh3_9to16(lo, hi, len);
    }
    let (short, medium) = (xxh3_1to3(lo, len), xxh3_4to8(lo, len));
    if len >= 4 {
        medium
    } else {
        short
    }
}

/// First, middle and last byte with the length, through XXH64's avalanche.
#[inline]
fn xxh3_1to3(lo: u64, len: usize) -> u64 {
    let byte = |k: usize| (lo >> (8 * (k & 7))) & 0xff;
    let combo =
        byte(0) << 16 | byte(len >> 1) << 24 | byte(len.wrapping_sub(1)) | (len as u64) << 8;
    let mut h = combo ^ (secret64(0) as u32 ^ secret64(4) as u32) as u64;
    h = (h ^ h >> 33).wrapping_mul(PRIME64_2);
    h = (h ^ h >> 29).wrapping_mul(PRIME64_3);
    h ^ h >> 32
}

/// First and last four bytes, through rrmxmx.
#[inline]
fn xxh3_4to8(lo: u64, len: usize) -> u64 {
    let first4 = lo as u32 as u64;
    let last4 = (lo >> (8 * (len.wrapping_sub(4) & 7))) as u32 as u64;
    let mut h = last4.wrapping_add(first4 << 32) ^ (secret64(8) ^ secret64(16));
    h ^= h.rotate_left(49) ^ h.rotate_left(24);
    h = h.wrapping_mul(PRIME_MX2);
    h ^= (h >> 35).wrapping_add(len as u64);
    h = h.wrapping_mul(PRIME_MX2);
    h ^ h >> 28
}

/// First and last eight bytes, folded 128-bit product, XXH3's avalanche.
#[inline]
fn xxh3_9to16(lo: u64, hi: u64, len: usize) -> u64 {
    let both = (hi as u128) << 64 | lo as u128;
    let last8 = (both >> (8 * (len - 8))) as u64;
    let input_lo = lo ^ (secret64(24) ^ secret64(32));
    let input_hi = last8 ^ (secret64(40) ^ secret64(48));
    let product = input_lo as u128 * input_hi as u128;
    let mut h = (len as u64)
        .wrapping_add(input_lo.swap_bytes())
        .wrapping_add(input_hi)
        .wrapping_add(product as u64 ^ (product >> 64) as u64);
    h = (h ^ h >> 37).wrapping_mul(PRIME_MX1);
    h ^ h >> 32
}

/// Hash of a sequence of hashes (a word shingle), order-sensitive:
/// `h = t[0]; for each next t: h = (rotl(h, 27) ^ t) * 0x9E3779B97F4A7C15 (mod 2^64)`,
/// then `h ^ (h >> 32)`. The inputs are already XXH3 outputs, so a multiply-rotate chain is
/// enough to spread them, at a fraction of the cost of hashing their bytes again.
/// (Not linear in any one ring, so windows that overlap share no work.)
#[inline]
pub fn hash_sequence(hashes: impl Iterator<Item = u64>) -> u64 {
    let mut hashes = hashes;
    let first = hashes.next().unwrap_or(0);
    sequence_finish(hashes.fold(first, sequence_step))
}

/// One step of [`hash_sequence`]: the running value `h` takes in the next hash `t`.
#[inline(always)]
pub(crate) fn sequence_step(h: u64, t: u64) -> u64 {
    (h.rotate_left(27) ^ t).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The last step of [`hash_sequence`], once every hash has been taken in.
#[inline(always)]
pub(crate) fn sequence_finish(h: u64) -> u64 {
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh3_reference_values() {
        // Reference outputs of the XXH3-64 specification (xxhsum -H3), seed 0.
        assert_eq!(hash_bytes(b""), 0x2d06800538d394c2);
        assert_eq!(hash_bytes(b"a"), 0xe6c632b61e964e1f);
    }

    #[test]
    fn short_inputs_match_the_reference() {
        let mut x = 0x9E3779B97F4A7C15u64;
        let mut window = [0u8; 24];
        for round in 0..200_000 {
            for b in &mut window {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = if round % 2 == 0 {
                    x as u8
                } else {
                    b'a' + (x % 26) as u8
                };
            }
            for len in 0..=window.len() {
                assert_eq!(
                    hash_prefix(&window, len),
                    hash_bytes(&window[..len]),
                    "{:?}",
                    &window[..len]
                );
                assert_eq!(hash_prefix(&window[..len], len), hash_bytes(&window[..len]));
            }
        }
    }

    #[test]
    fn sequence_is_order_sensitive() {
        let ab = hash_sequence([1u64, 2].into_iter());
        let ba = hash_sequence([2u64, 1].into_iter());
        assert_ne!(ab, ba);
        let h = (1u64.rotate_left(27) ^ 2).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        assert_eq!(ab, h ^ (h >> 32));
        assert_ne!(
            hash_sequence([7u64, 7].into_iter()),
            hash_sequence([7u64, 7, 7].into_iter())
        );
    }
}
