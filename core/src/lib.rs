//! The pure-Rust core of neardup: no PostgreSQL in here, so every piece is tested with
//! plain `cargo test` and can be fuzzed and benchmarked outside a backend.
//!
//! Pipeline: bytes → [`tokenizer`] (HTML stripped, entities decoded, Unicode case folding,
//! tokens of letters/marks/digits) → [`features`] (word shingles or character n-grams,
//! hashed with [`hash`]) → [`simhash`] (Charikar's 64-bit fingerprint), or [`minhash`]
//! (Broder's sketch of the shingle set) and its [`supershingles`].
//! Bloom signatures take another path: the canonical text cut into content-defined
//! [`chunking`] chunks, each chunk an element ([`chunk_set`]) of a [`bloom`] filter.

pub mod ball_set;
pub mod bloom;
pub mod bloom_analysis;
pub mod bloom_encoding;
pub mod chars;
pub mod chunk_set;
pub mod chunking;
pub mod cluster_plans;
pub mod codec;
pub mod components;
pub mod entities;
pub mod features;
pub mod hash;
pub mod hex;
pub mod index_page;
pub mod interrupts;
pub mod lsh;
pub mod lsh_encoding;
pub mod merge_policy;
pub mod minhash;
pub mod minhash_encoding;
pub mod nearest;
pub mod permuted;
pub mod refinement;
pub mod representatives;
pub mod simhash;
pub mod splitmix;
pub mod supershingles;
pub mod tokenizer;
