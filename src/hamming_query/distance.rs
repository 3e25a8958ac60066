//! `hamming(bigint, bigint)`: the distance on the bigint columns perceptual hashes are often
//! already stored in (the `simhash64` overload lives in `simhash64/operators.rs`).

use neardup_core::signatures::simhash::hamming;
use pgrx::prelude::*;

#[pg_extern(immutable, strict, parallel_safe, name = "hamming")]
fn hamming_int8(a: i64, b: i64) -> i32 {
    hamming(a as u64, b as u64) as i32
}
