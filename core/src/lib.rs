//! The pure-Rust core of neardup: no PostgreSQL in here, so every piece is tested with
//! plain `cargo test` and can be fuzzed and benchmarked outside a backend.
//!
//! Pipeline: bytes → [`tokenizer`] (HTML stripped, entities decoded, Unicode case folding,
//! tokens of letters/marks/digits) → [`features`] (word shingles or character n-grams,
//! hashed with [`hash`]) → [`simhash`] (Charikar's 64-bit fingerprint).

pub mod chars;
pub mod cluster_plans;
pub mod components;
pub mod entities;
pub mod features;
pub mod hash;
pub mod hex;
pub mod index_page;
pub mod permuted;
pub mod simhash;
pub mod tokenizer;
