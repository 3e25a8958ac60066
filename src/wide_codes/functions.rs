//! The functions behind each wide type: text and binary I/O, comparison (the order of the
//! text form), hashing, Hamming distance, the casts from `bytea` and `bit`, and the keys of
//! multi-index hashing for a GIN index (`hamming_keys`, `hamming_probe_keys`). One macro
//! writes both widths, so `hash128` can never drift from `hash256`.

use super::{Hash128, Hash256};
use crate::hamming_query::wide_radius;
use crate::support::errors;
use neardup_core::base::hash::{hash_bytes, hash_sequence};
use neardup_core::search::multi_index::Substrings;
use neardup_core::signatures::wide_code::WideCode;
use pgrx::prelude::*;
use pgrx::Internal;
use std::ffi::{CStr, CString};

/// The core's specified hash of the binary form (stable across machines and releases: hash
/// indexes and hash partitions store it), mixed with the seed unless it is 0.
fn seeded_hash(bytes: &[u8], seed: i64) -> u64 {
    let hash = hash_bytes(bytes);
    if seed == 0 {
        hash
    } else {
        hash_sequence([hash, seed as u64].into_iter())
    }
}

macro_rules! wide_functions {
    ($ty:ident, $words:literal, $sql:literal,
     $input:ident, $output:ident, $recv:ident, $send:ident,
     $eq:ident, $ne:ident, $lt:ident, $le:ident, $gt:ident, $ge:ident, $cmp:ident,
     $hash:ident, $hash_extended:ident, $hamming:ident,
     $from_bytea:ident, $from_bit:ident, $keys:ident, $probe_keys:ident) => {
        #[pg_extern(immutable, strict, parallel_safe, requires = ["wide_codes_shell"])]
        fn $input(input: &CStr) -> $ty {
            match WideCode::<$words>::parse_hex(input.to_bytes()) {
                Ok(code) => $ty(code),
                Err(e) => errors::invalid_text($sql, &input.to_string_lossy(), e),
            }
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = ["wide_codes_shell"])]
        fn $output(value: $ty) -> CString {
            CString::new(value.0.to_hex()).expect("hex has no NUL")
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = ["wide_codes_shell"])]
        fn $recv(mut buf: Internal) -> $ty {
            // SAFETY: a type's receive function is always called with a StringInfo.
            let buf = unsafe { buf.get_mut::<pg_sys::StringInfoData>() }.expect("receive buffer");
            let mut bytes = [0u8; 8 * $words];
            // SAFETY: pq_copymsgbytes ERRORs unless the message holds that many bytes.
            unsafe { pg_sys::pq_copymsgbytes(buf, bytes.as_mut_ptr().cast(), bytes.len() as _) };
            $ty(WideCode::from_be_bytes(&bytes).expect("fixed length"))
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = ["wide_codes_shell"])]
        fn $send(value: $ty) -> Vec<u8> {
            value.0.to_be_bytes()
        }

        #[pg_extern(immutable, strict, parallel_safe)]
        fn $eq(a: $ty, b: $ty) -> bool {
            a == b
        }

        #[pg_extern(immutable, strict, parallel_safe)]
        fn $ne(a: $ty, b: $ty) -> bool {
            a != b
        }

        #[pg_extern(immutable, strict, parallel_safe)]
        fn $lt(a: $ty, b: $ty) -> bool {
            a < b
        }

        #[pg_extern(immutable, strict, parallel_safe)]
        fn $le(a: $ty, b: $ty) -> bool {
            a <= b
        }

        #[pg_extern(immutable, strict, parallel_safe)]
        fn $gt(a: $ty, b: $ty) -> bool {
            a > b
        }

        #[pg_extern(immutable, strict, parallel_safe)]
        fn $ge(a: $ty, b: $ty) -> bool {
            a >= b
        }

        #[pg_extern(immutable, strict, parallel_safe)]
        fn $cmp(a: $ty, b: $ty) -> i32 {
            a.cmp(&b) as i32
        }

        /// The low 32 bits of the extended hash with seed 0, as hash operator classes need.
        #[pg_extern(immutable, strict, parallel_safe)]
        fn $hash(a: $ty) -> i32 {
            seeded_hash(&a.0.to_be_bytes(), 0) as i32
        }

        #[pg_extern(immutable, strict, parallel_safe)]
        fn $hash_extended(a: $ty, seed: i64) -> i64 {
            seeded_hash(&a.0.to_be_bytes(), seed) as i64
        }

        /// Number of differing bits.
        #[pg_extern(immutable, strict, parallel_safe, name = "hamming")]
        fn $hamming(a: $ty, b: $ty) -> i32 {
            a.0.hamming(&b.0) as i32
        }

        /// The cast from `bytea`: exactly the bytes of the binary form (else 22026, as a bit
        /// string of the wrong length).
        #[pg_extern(immutable, strict, parallel_safe)]
        fn $from_bytea(bytes: &[u8]) -> $ty {
            match WideCode::<$words>::from_be_bytes(bytes) {
                Ok(code) => $ty(code),
                Err(e) => errors::raise(
                    PgSqlErrorCode::ERRCODE_STRING_DATA_LENGTH_MISMATCH,
                    format!(
                        "{} bytes do not make a {}, which is {} bytes",
                        e.0,
                        $sql,
                        8 * $words
                    ),
                ),
            }
        }

        /// The cast from `bit`, given the bit string's binary form (its length, then its
        /// bytes): exactly as many bits as the code has.
        #[pg_extern(immutable, strict, parallel_safe)]
        fn $from_bit(sent: &[u8]) -> $ty {
            let bits = sent
                .get(..4)
                .map(|n| i32::from_be_bytes(n.try_into().unwrap()));
            if bits != Some(64 * $words) {
                errors::raise(
                    PgSqlErrorCode::ERRCODE_STRING_DATA_LENGTH_MISMATCH,
                    format!(
                        "{} bits do not make a {}, which is {} bits",
                        bits.unwrap_or(0),
                        $sql,
                        64 * $words
                    ),
                );
            }
            $from_bytea(&sent[4..])
        }

        /// The GIN keys of a code cut into `substrings` substrings, one a substring. Its
        /// cost (100 operators) is what keeps plans sane: PostgreSQL's estimate of `&&`
        /// against a probe's hundreds of keys is most of the table, and at the default cost
        /// a sequential scan is chosen and tests `&&` (16 × 272 comparisons) before the
        /// distance on every row, 250 times slower than testing the distance alone.
        #[pg_extern(immutable, strict, parallel_safe, cost = 100, name = "hamming_keys")]
        fn $keys(code: $ty, substrings: i32) -> Vec<i64> {
            cut::<$words>("hamming_keys", substrings, 0).keys(&code.0)
        }

        /// The GIN keys a code within `max_distance` of `code` has one of.
        #[pg_extern(immutable, strict, parallel_safe, name = "hamming_probe_keys")]
        fn $probe_keys(code: $ty, max_distance: i32, substrings: i32) -> Vec<i64> {
            probe_keys(&code.0, max_distance, substrings)
        }
    };
}

/// The most keys `hamming_probe_keys` returns: a GIN lookup of a million keys takes
/// seconds, beyond which a sequential scan is as fast.
const MAX_PROBE_KEYS: usize = 1 << 20;

/// The cut of a `W`-word code into `substrings` substrings (1 to 32 bits each) for a radius
/// of `max_distance` (0 to the width less one), else ERROR 22023.
fn cut<const W: usize>(function: &str, substrings: i32, max_distance: i32) -> Substrings {
    let radius = wide_radius::<W>(function, max_distance);
    let count = u32::try_from(substrings).unwrap_or(0);
    Substrings::new(WideCode::<W>::BITS, count, radius)
        .unwrap_or_else(|e| errors::invalid_parameter(format!("{function}: {e}")))
}

fn probe_keys<const W: usize>(code: &WideCode<W>, max_distance: i32, substrings: i32) -> Vec<i64> {
    cut::<W>("hamming_probe_keys", substrings, max_distance)
        .probe_keys(code, MAX_PROBE_KEYS)
        .unwrap_or_else(|e| {
            errors::raise_with_hint(
                PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                format!("hamming_probe_keys: {e}"),
                "Index the codes cut into more substrings (hamming_keys), or scan them.",
            )
        })
}

wide_functions!(
    Hash256,
    4,
    "hash256",
    hash256_in,
    hash256_out,
    hash256_recv,
    hash256_send,
    hash256_eq,
    hash256_ne,
    hash256_lt,
    hash256_le,
    hash256_gt,
    hash256_ge,
    hash256_cmp,
    hash256_hash,
    hash256_hash_extended,
    hash256_hamming,
    hash256_from_bytea,
    hash256_from_bit_bytes,
    hash256_hamming_keys,
    hash256_hamming_probe_keys
);
wide_functions!(
    Hash128,
    2,
    "hash128",
    hash128_in,
    hash128_out,
    hash128_recv,
    hash128_send,
    hash128_eq,
    hash128_ne,
    hash128_lt,
    hash128_le,
    hash128_gt,
    hash128_ge,
    hash128_cmp,
    hash128_hash,
    hash128_hash_extended,
    hash128_hamming,
    hash128_from_bytea,
    hash128_from_bit_bytes,
    hash128_hamming_keys,
    hash128_hamming_probe_keys
);
