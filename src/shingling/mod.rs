//! Broder's shingling in SQL (Henzinger's Alg. B): `minhash_sketch`, `supershingle_vector`,
//! their functions, the B-similarity operator `%` and its GIN operator class (`gin`). The
//! sketches, supershingles, index keys and encodings are `neardup_core::{signatures::minhash,
//! supershingles}`; types, operators and the operator class are `sql/shingling.sql`.

pub(crate) mod gin;

use crate::support::errors;
use crate::support::stored_type::{rest_of_message, stored_type, StoredBytes};
use neardup_core::signatures::minhash::{jaccard, minhash_text, MinhashOptions, MinhashSketch};
use neardup_core::signatures::supershingles::{
    b_similarity, supershingles, SupershingleVector, MAX_SUPERSHINGLES,
};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;
use pgrx::Internal;
use std::ffi::{CStr, CString};

stored_type!(Minhash, MinhashSketch, "minhash_sketch");
stored_type!(Supershingles, SupershingleVector, "supershingle_vector");

impl StoredBytes for MinhashSketch {
    fn encode(&self) -> Vec<u8> {
        self.to_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        MinhashSketch::from_bytes(bytes).map_err(|e| e.to_string())
    }
}

impl StoredBytes for SupershingleVector {
    fn encode(&self) -> Vec<u8> {
        self.to_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        SupershingleVector::from_bytes(bytes).map_err(|e| e.to_string())
    }
}

/// `neardup.b_similarity_threshold`: how many equal supershingles make `a % b` true
/// (Henzinger's Alg. B uses 2), as `pg_trgm.similarity_threshold` sets `%` for trigrams.
pub static B_SIMILARITY_THRESHOLD: GucSetting<i32> = GucSetting::<i32>::new(2);

pub fn init() {
    GucRegistry::define_int_guc(
        c"neardup.b_similarity_threshold",
        c"Equal supershingles that make two supershingle vectors B-similar (the % operator).",
        c"Henzinger's Algorithm B calls two pages near-duplicates when their 6 supershingles agree in at least 2 positions.",
        &B_SIMILARITY_THRESHOLD,
        1,
        MAX_SUPERSHINGLES as i32,
        GucContext::Userset,
        GucFlags::default(),
    );
}

pgrx::extension_sql!(
    "CREATE TYPE minhash_sketch; CREATE TYPE supershingle_vector; -- shells, completed by sql/shingling.sql\n",
    name = "shingling_shells"
);

pgrx::extension_sql_file!(
    "../../sql/shingling.sql",
    name = "shingling_types",
    creates = [Type(Minhash), Type(Supershingles)],
    requires = [
        "shingling_shells",
        minhash_sketch_in,
        minhash_sketch_out,
        minhash_sketch_recv,
        minhash_sketch_send,
        supershingle_vector_in,
        supershingle_vector_out,
        supershingle_vector_recv,
        supershingle_vector_send,
        b_similar,
        gin::supershingle_gin_extract_value,
        gin::supershingle_gin_extract_query,
        gin::supershingle_gin_consistent,
    ]
);

#[pg_extern(immutable, strict, parallel_safe, requires = ["shingling_shells"])]
fn minhash_sketch_in(input: &CStr) -> Minhash {
    MinhashSketch::from_text(input.to_bytes())
        .map(Minhash)
        .unwrap_or_else(|e| errors::invalid_text("minhash_sketch", &input.to_string_lossy(), e))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["shingling_shells"])]
fn minhash_sketch_out(value: Minhash) -> CString {
    CString::new(value.0.to_string()).expect("the text form has no NUL")
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["shingling_shells"])]
fn minhash_sketch_recv(buf: Internal) -> Minhash {
    MinhashSketch::from_bytes(rest_of_message(buf))
        .map(Minhash)
        .unwrap_or_else(|e| errors::invalid_binary("minhash_sketch", e))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["shingling_shells"])]
fn minhash_sketch_send(value: Minhash) -> Vec<u8> {
    value.0.to_bytes()
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["shingling_shells"])]
fn supershingle_vector_in(input: &CStr) -> Supershingles {
    SupershingleVector::from_text(input.to_bytes())
        .map(Supershingles)
        .unwrap_or_else(|e| {
            errors::invalid_text("supershingle_vector", &input.to_string_lossy(), e)
        })
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["shingling_shells"])]
fn supershingle_vector_out(value: Supershingles) -> CString {
    CString::new(value.0.to_string()).expect("the text form has no NUL")
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["shingling_shells"])]
fn supershingle_vector_recv(buf: Internal) -> Supershingles {
    SupershingleVector::from_bytes(rest_of_message(buf))
        .map(Supershingles)
        .unwrap_or_else(|e| errors::invalid_binary("supershingle_vector", e))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["shingling_shells"])]
fn supershingle_vector_send(value: Supershingles) -> Vec<u8> {
    value.0.to_bytes()
}

fn minhash_options(num_hashes: i32, shingle: i32, ngram: i32) -> MinhashOptions {
    MinhashOptions::with_features(num_hashes, shingle, ngram)
        .unwrap_or_else(|e| errors::invalid_parameter(e.0))
}

/// Broder's minhash sketch of a text's word shingles: `num_hashes` minvalues of
/// `shingle`-word shingles (defaults from Henzinger's study: 84 and 8).
#[pg_extern(immutable, strict, parallel_safe)]
fn minhash(body: &str, num_hashes: default!(i32, 84), shingle: default!(i32, 8)) -> Minhash {
    Minhash(minhash_text(
        body.as_bytes(),
        &minhash_options(num_hashes, shingle, 0),
    ))
}

/// The same with `ngram` > 0: the minvalues of the text's character n-grams (for short
/// texts and texts without spaces between words). A separate function, with every argument
/// required: a defaulted `ngram` on the first would need it dropped, which views and
/// indexes over `minhash(...)` in 0.3.0 databases forbid, and a default on both would make
/// every call ambiguous.
#[pg_extern(sql = "
CREATE FUNCTION minhash(body text, num_hashes integer, shingle integer, ngram integer)
    RETURNS minhash_sketch IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION minhash(text, integer, integer, integer) IS
    'minhash sketch of the text''s word shingles, or with ngram > 0 of its character n-grams';
", requires = ["shingling_types"])]
fn minhash_features(body: &str, num_hashes: i32, shingle: i32, ngram: i32) -> Minhash {
    Minhash(minhash_text(
        body.as_bytes(),
        &minhash_options(num_hashes, shingle, ngram),
    ))
}

/// Estimated Jaccard resemblance of the shingle sets: the fraction of agreeing minvalues.
#[pg_extern(immutable, strict, parallel_safe, name = "jaccard")]
fn minhash_jaccard(a: Minhash, b: Minhash) -> f64 {
    jaccard(&a.0, &b.0).unwrap_or_else(|e| errors::invalid_parameter(e.0))
}

fn supershingles_of(sketch: &MinhashSketch) -> Supershingles {
    Supershingles(supershingles(sketch).unwrap_or_else(|e| errors::invalid_parameter(e.0)))
}

/// The supershingles of a sketch: one fingerprint per 14 consecutive minvalues.
#[pg_extern(immutable, strict, parallel_safe, name = "supershingles")]
fn supershingles_of_sketch(sketch: Minhash) -> Supershingles {
    supershingles_of(&sketch.0)
}

/// The supershingles of a text, from its default sketch (84 minvalues of 8-word
/// shingles → 6 supershingles).
#[pg_extern(immutable, strict, parallel_safe, name = "supershingles")]
fn supershingles_of_text(body: &str) -> Supershingles {
    supershingles_of(&minhash_text(body.as_bytes(), &MinhashOptions::DEFAULT))
}

/// B-similarity: the number of positions with equal supershingles.
#[pg_extern(immutable, strict, parallel_safe, name = "b_similarity")]
fn supershingle_b_similarity(a: Supershingles, b: Supershingles) -> i32 {
    b_similarity(&a.0, &b.0).unwrap_or_else(|e| errors::invalid_parameter(e.0)) as i32
}

/// `a % b`: B-similar at `neardup.b_similarity_threshold` (STABLE: it reads the setting).
#[pg_extern(stable, strict, parallel_safe, requires = ["shingling_shells"])]
fn b_similar(a: Supershingles, b: Supershingles) -> bool {
    supershingle_b_similarity(a, b) >= B_SIMILARITY_THRESHOLD.get()
}
