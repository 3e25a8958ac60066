//! Comparison (unsigned), Hamming distance and bitwise operators on `simhash64`.
//! The operators themselves and the operator classes are declared in `sql/simhash64.sql`.

use super::Simhash64;
use neardup_core::signatures::simhash::hamming as core_hamming;
use pgrx::prelude::*;

macro_rules! comparisons {
    ($($name:ident => $op:tt),* $(,)?) => {$(
        #[pg_extern(immutable, strict, parallel_safe)]
        fn $name(a: Simhash64, b: Simhash64) -> bool {
            a $op b
        }
    )*};
}

comparisons! {
    simhash64_eq => ==, simhash64_ne => !=, simhash64_lt => <,
    simhash64_le => <=, simhash64_gt => >, simhash64_ge => >=,
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_cmp(a: Simhash64, b: Simhash64) -> i32 {
    a.cmp(&b) as i32
}

/// Number of differing bits.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming(a: Simhash64, b: Simhash64) -> i32 {
    core_hamming(a.0, b.0) as i32
}

#[pg_extern(immutable, strict, parallel_safe)]
fn bit_count(a: Simhash64) -> i32 {
    a.0.count_ones() as i32
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_and(a: Simhash64, b: Simhash64) -> Simhash64 {
    Simhash64(a.0 & b.0)
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_or(a: Simhash64, b: Simhash64) -> Simhash64 {
    Simhash64(a.0 | b.0)
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_xor(a: Simhash64, b: Simhash64) -> Simhash64 {
    Simhash64(a.0 ^ b.0)
}

#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_not(a: Simhash64) -> Simhash64 {
    Simhash64(!a.0)
}
