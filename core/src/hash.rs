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

/// Hash of a sequence of hashes (a word shingle): XXH3-64 of their little-endian bytes,
/// in order. Little-endian is spelled out so big-endian machines produce the same value.
#[inline]
pub fn hash_sequence(hashes: impl Iterator<Item = u64>) -> u64 {
    let mut buf = [0u8; 8 * crate::features::MAX_SHINGLE];
    let mut len = 0;
    for h in hashes {
        buf[len..len + 8].copy_from_slice(&h.to_le_bytes());
        len += 8;
    }
    hash_bytes(&buf[..len])
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
        let mut bytes = 1u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(&2u64.to_le_bytes());
        assert_eq!(ab, hash_bytes(&bytes));
    }
}
