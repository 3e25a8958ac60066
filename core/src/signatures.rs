//! The signatures computed from text (simhash, minhash, supershingles, Bloom signatures over
//! chunk sets) and their stored encodings. Imports `base` and `text`.

pub mod bloom;
pub mod bloom_analysis;
pub mod bloom_encoding;
pub mod chunk_set;
pub mod codec;
pub mod minhash;
pub mod minhash_encoding;
pub mod simhash;
pub mod supershingles;
pub mod wide_code;
