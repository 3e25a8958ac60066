//! Golden vectors: (chunk size, bits, hashes, text) → chunk boundaries and Bloom signature,
//! which must never change. Signatures are stored, and compared with signatures computed
//! years later; if this test fails, a change altered the chunking, the chunk hashes, the
//! occurrence rule, the bit positions or the text form, and is a breaking change.
//!
//! Format of `tests/golden_bloom.tsv` (repository root): chunk size, bits, hashes (or
//! `default`), text (with `\n`, `\t` and `\\` escaped), the chunk lengths in bytes
//! (comma-separated), the signature's text form.

use neardup_core::signatures::bloom::{bloom_text, BloomSignature};
use neardup_core::text::chunking::{chunks, ChunkSize};

mod golden_text;
use golden_text::{rows, unescape};

const GOLDEN: &str = include_str!("../../tests/golden_bloom.tsv");

#[test]
fn golden_vectors_are_unchanged() {
    let mut checked = 0;
    for cols in rows(GOLDEN, 6) {
        let chunk_size: i64 = cols[0].parse().unwrap();
        let bits: i64 = cols[1].parse().unwrap();
        let hashes = match cols[2] {
            "default" => None,
            k => Some(k.parse().unwrap()),
        };
        let text = unescape(cols[3]);
        let what = format!("chunk size {chunk_size}, {bits} bits, text {:?}", cols[3]);

        let lengths: Vec<String> = chunks(text.as_bytes(), ChunkSize::new(chunk_size).unwrap())
            .iter()
            .map(|c| c.len().to_string())
            .collect();
        assert_eq!(lengths.join(","), cols[4], "chunks changed: {what}");

        let signature = bloom_text(text.as_bytes(), bits, hashes, chunk_size).unwrap();
        assert_eq!(signature.to_string(), cols[5], "signature changed: {what}");
        assert_eq!(BloomSignature::from_text(cols[5].as_bytes()), Ok(signature));
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} golden vectors");
}
