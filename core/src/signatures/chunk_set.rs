//! A document as a set of chunks (Jain et al. §2.3): the elements a Bloom signature holds.
//!
//! A chunk's hash is [`hash_bytes`] (XXH3-64, seed 0) of its UTF-8 bytes. A document is a
//! multiset of chunks, and footnote 5 makes each copy of a repeated chunk a different
//! element, so that a text repeating a paragraph is not the same set as the paragraph once:
//! the first occurrence's element is the chunk hash itself, and occurrence `j` (counting
//! from 0) is `hash_bytes(le64(chunk hash) ‖ le64(j))` for `j ≥ 1`.
//!
//! The chunk hashes are collected and sorted to number the copies. Sorting finds the same
//! copies a counter in text order would (copies of a chunk are the same bytes, so which
//! copy gets which number does not matter), without a hash map, and the order of the
//! elements is that of the chunk hashes, whatever the layout of anything in memory.

use crate::base::hash::hash_bytes;
use crate::text::chunking::{for_each_chunk, ChunkSize};

/// The element of the `occurrence`-th copy (from 0) of the chunk with hash `chunk_hash`.
pub fn occurrence_element(chunk_hash: u64, occurrence: u64) -> u64 {
    if occurrence == 0 {
        return chunk_hash;
    }
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&chunk_hash.to_le_bytes());
    key[8..].copy_from_slice(&occurrence.to_le_bytes());
    hash_bytes(&key)
}

/// Calls `emit` with the element of each chunk of `text`, in the order of the chunk
/// hashes. They are all distinct (but for 64-bit hash collisions).
pub fn for_each_element(text: &[u8], size: ChunkSize, mut emit: impl FnMut(u64)) {
    let mut chunk_hashes = Vec::new();
    for_each_chunk(text, size, |chunk| chunk_hashes.push(hash_bytes(chunk)));
    chunk_hashes.sort_unstable();
    for copies in chunk_hashes.chunk_by(|a, b| a == b) {
        for occurrence in 0..copies.len() {
            emit(occurrence_element(copies[0], occurrence as u64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::chunking::chunks;

    fn elements(text: &str, size: i64) -> Vec<u64> {
        let mut out = Vec::new();
        for_each_element(text.as_bytes(), ChunkSize::new(size).unwrap(), |e| {
            out.push(e)
        });
        out
    }

    #[test]
    fn occurrence_rule() {
        let h = hash_bytes(b"chunk");
        assert_eq!(occurrence_element(h, 0), h);
        let mut key = h.to_le_bytes().to_vec();
        key.extend_from_slice(&2u64.to_le_bytes());
        assert_eq!(occurrence_element(h, 2), hash_bytes(&key));
        assert_ne!(occurrence_element(h, 1), occurrence_element(h, 2));
    }

    #[test]
    fn repeated_paragraphs_become_distinct_elements() {
        let paragraph = "Content defined chunking splits a document at positions chosen by \
                         its content, so that an edit moves only the boundaries near it. ";
        let text = paragraph.repeat(3);
        // The definition: copies of a chunk numbered in text order.
        let mut copies_so_far = std::collections::HashMap::new();
        let mut expected: Vec<u64> = chunks(text.as_bytes(), ChunkSize::new(32).unwrap())
            .iter()
            .map(|chunk| {
                let h = hash_bytes(chunk.as_bytes());
                let copies = copies_so_far.entry(h).or_insert(0);
                *copies += 1;
                occurrence_element(h, *copies - 1)
            })
            .collect();
        assert_eq!(copies_so_far.values().max(), Some(&3), "chunks repeat");
        let mut got = elements(&text, 32);
        got.sort_unstable();
        expected.sort_unstable();
        assert_eq!(got, expected);
        got.dedup();
        assert_eq!(got.len(), expected.len(), "every element is distinct");
    }

    #[test]
    fn single_chunk_element_is_its_hash() {
        assert_eq!(elements("Hello, World", 256), [hash_bytes(b"hello world")]);
        assert!(elements("", 256).is_empty());
    }
}
