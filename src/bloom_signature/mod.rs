//! `bloom_signature` (Jain, Dahlin and Tewari): a Bloom filter of a text's content-defined
//! chunks, compared by bitwise AND. The filter, chunking and encodings are
//! `neardup_core::{text::chunking, signatures::chunk_set, signatures::bloom}`; this is their SQL face. The type,
//! operators and comments are `sql/bloom_signature.sql`.

use crate::support::errors;
use crate::support::stored_type::{rest_of_message, stored_type, StoredBytes};
use neardup_core::signatures::bloom::{
    bloom_match, bloom_similarity, BloomError, BloomParams, BloomSignature,
};
use neardup_core::signatures::bloom::{bloom_of, DEFAULT_BITS};
use neardup_core::text::chunking::{chunks, ChunkSize, DEFAULT_CHUNK_SIZE};
use pgrx::prelude::*;
use pgrx::Internal;
use std::ffi::{CStr, CString};

stored_type!(Bloom, BloomSignature, "bloom_signature");

impl StoredBytes for BloomSignature {
    fn encode(&self) -> Vec<u8> {
        self.to_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        BloomSignature::from_bytes(bytes).map_err(|e| e.to_string())
    }
}

pgrx::extension_sql!(
    "CREATE TYPE bloom_signature; -- shell, completed by sql/bloom_signature.sql\n",
    name = "bloom_signature_shell"
);

pgrx::extension_sql_file!(
    "../../sql/bloom_signature.sql",
    name = "bloom_signature_type",
    creates = [Type(Bloom)],
    requires = [
        "bloom_signature_shell",
        bloom_signature_in,
        bloom_signature_out,
        bloom_signature_recv,
        bloom_signature_send,
        bloom_and,
        bloom_or,
    ]
);

/// Parameters and comparisons that fail are the caller's arguments: 22023.
fn checked<T>(result: Result<T, BloomError>) -> T {
    result.unwrap_or_else(|e| errors::invalid_parameter(e.to_string()))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["bloom_signature_shell"])]
fn bloom_signature_in(input: &CStr) -> Bloom {
    match BloomSignature::from_text(input.to_bytes()) {
        Ok(v) => Bloom(v),
        Err(e) => errors::invalid_text("bloom_signature", &input.to_string_lossy(), e),
    }
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["bloom_signature_shell"])]
fn bloom_signature_out(value: Bloom) -> CString {
    CString::new(value.0.to_string()).expect("the text form has no NUL")
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["bloom_signature_shell"])]
fn bloom_signature_recv(buf: Internal) -> Bloom {
    BloomSignature::from_bytes(rest_of_message(buf))
        .map(Bloom)
        .unwrap_or_else(|e| errors::invalid_binary("bloom_signature", e))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["bloom_signature_shell"])]
fn bloom_signature_send(value: Bloom) -> Vec<u8> {
    value.0.to_bytes()
}

/// The Bloom signature of a text's content-defined chunks. `hashes` NULL takes the
/// default (6, the optimum for 8 bits per chunk): it must not follow the document's own
/// length, or a small document's bits would not be a subset of a page that contains it.
/// Not STRICT because of that NULL; a NULL body gives NULL.
#[pg_extern(immutable, parallel_safe)]
fn bloomsig(
    body: Option<&str>,
    bits: default!(Option<i32>, 2048),
    hashes: default!(Option<i32>, "NULL"),
    chunk_size: default!(Option<i32>, 256),
) -> Option<Bloom> {
    let body = body?;
    let (Some(bits), Some(chunk_size)) = (bits, chunk_size) else {
        errors::null_not_allowed("bloomsig: bits and chunk_size must not be NULL");
    };
    let params = checked(BloomParams::new(
        bits as i64,
        hashes.map(i64::from),
        chunk_size as i64,
    ));
    Some(Bloom(bloom_of(body.as_bytes(), params)))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["bloom_signature_shell"])]
fn bloom_and(a: Bloom, b: Bloom) -> Bloom {
    Bloom(checked(a.0.and(&b.0)))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["bloom_signature_shell"])]
fn bloom_or(a: Bloom, b: Bloom) -> Bloom {
    Bloom(checked(a.0.or(&b.0)))
}

/// Set bits of the filter.
#[pg_extern(immutable, strict, parallel_safe, name = "bit_count")]
fn bloom_bit_count(value: Bloom) -> i32 {
    value.0.bit_count() as i32
}

/// How much of `a`'s content is in `b`: set bits of `a & b` over set bits of `a` (the
/// paper's matched-bits ratio; 1.0 when `a`'s chunks are all in `b`).
#[pg_extern(immutable, strict, parallel_safe, name = "bloom_match")]
fn bloom_match_ratio(a: Bloom, b: Bloom) -> f64 {
    checked(bloom_match(&a.0, &b.0))
}

/// Symmetric resemblance: set bits of `a & b` over set bits of `a | b`.
#[pg_extern(immutable, strict, parallel_safe, name = "bloom_similarity")]
fn bloom_similarity_ratio(a: Bloom, b: Bloom) -> f64 {
    checked(bloom_similarity(&a.0, &b.0))
}

/// The chunks the signature is built from, in text order (explainability).
#[pg_extern(immutable, strict, parallel_safe)]
fn neardup_chunks(body: &str, chunk_size: default!(i32, 256)) -> SetOfIterator<'static, String> {
    let size = ChunkSize::new(chunk_size as i64)
        .unwrap_or_else(|e| errors::invalid_parameter(e.to_string()));
    SetOfIterator::new(chunks(body.as_bytes(), size))
}

const _: () = assert!(DEFAULT_BITS == 2048 && DEFAULT_CHUNK_SIZE == 256);
