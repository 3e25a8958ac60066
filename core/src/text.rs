//! The text pipeline: characters, HTML entities, the tokenizer, features (word shingles,
//! character n-grams) and content-defined chunking. Imports only `base`.

pub mod chars;
pub mod chunking;
pub mod entities;
pub mod features;
pub mod tokenizer;
