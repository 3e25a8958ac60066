//! The pure-Rust core of neardup: no PostgreSQL in here, so every piece is tested with
//! plain `cargo test` and can be fuzzed and benchmarked outside a backend.
//!
//! Pipeline: bytes → [`text::tokenizer`] (HTML stripped, entities decoded, Unicode case
//! folding, tokens of letters/marks/digits) → [`text::features`] (word shingles or character
//! n-grams, hashed with [`base::hash`]) → [`signatures::simhash`] (Charikar's 64-bit
//! fingerprint), or [`signatures::minhash`] (Broder's sketch of the shingle set) and its
//! [`signatures::supershingles`]. Bloom signatures take another path: the canonical text cut
//! into content-defined [`text::chunking`] chunks, each chunk an element
//! ([`signatures::chunk_set`]) of a [`signatures::bloom`] filter.
//!
//! The folders are layers: [`base`] (hashing, random streams, hex, interrupts), [`text`] (the
//! text pipeline), [`signatures`] (the signatures and their stored encodings), [`search`] (the
//! structures that find near signatures: permuted tables, index pages, LSH) and [`clusters`]
//! (the algorithms over found pairs), then [`images`] (image bytes to PDQ hashes). A layer
//! imports only the layers below it.

// The layers, lowest first; each imports only the layers listed before it.
pub mod base;
pub mod clusters;
pub mod images;
pub mod search;
pub mod signatures;
pub mod text;
