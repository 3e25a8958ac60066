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

/// Hash of a sequence of hashes (a word shingle), order-sensitive:
/// `h = t[0]; for each next t: h = (rotl(h, 27) ^ t) * 0x9E3779B97F4A7C15 (mod 2^64)`,
/// then `h ^ (h >> 32)`. The inputs are already XXH3 outputs, so a multiply-rotate chain is
/// enough to spread them, at a fraction of the cost of hashing their bytes again.
#[inline]
pub fn hash_sequence(hashes: impl Iterator<Item = u64>) -> u64 {
    let mut hashes = hashes;
    let first = hashes.next().unwrap_or(0);
    let h = hashes.fold(first, |h, t| {
        (h.rotate_left(27) ^ t).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    });
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
