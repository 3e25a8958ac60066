//! `hash256_batch` and `hash128_batch`: `hamming_batch` for wide codes. Many keyed balls of
//! one radius in one value, the right-hand side of `code <@@ batch` ("within the radius of
//! any of them"), which the `hamming` index answers with one scan probing every center
//! (strategy 3 of `hash256_hamming_ops` and `hash128_hamming_ops`); `hamming_batch_keys`
//! then says which balls a returned code is in. Built as the 64-bit batch is,
//! `hamming_batch(array_agg(id), array_agg(pdq), 31)`, and stored in the same binary form
//! with the code's bytes as centers (`neardup_core::search::ball_set`). A call site keeps
//! its lookup (the centers in multi-index substring tables) while the batch stays the
//! same, as `hamming_query::batch` does.

use super::{Hash128, Hash256};
use crate::hamming_query::batch::{array_elements, keyed_balls, with_lookup, words, BatchLookup};
use crate::support::errors;
use crate::support::stored_type::{rest_of_message, stored_type, StoredBytes};
use neardup_core::search::ball_set::{BallSet, WideBallLookup};
use neardup_core::signatures::codec::DecodeError;
use neardup_core::signatures::wide_code::WideCode;
use pgrx::fcinfo::pg_getarg_datum_raw;
use pgrx::prelude::*;
use pgrx::Internal;
use std::ffi::{CStr, CString};

impl<const W: usize> StoredBytes for BallSet<WideCode<W>> {
    fn encode(&self) -> Vec<u8> {
        self.to_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        BallSet::from_bytes(bytes).map_err(|e: DecodeError| e.0)
    }
}

/// Calls `f` with the lookup of the batch in argument `batch_at` (made once per call site
/// and batch) and the code in argument `code_at`.
///
/// # Safety
/// `fcinfo` is a STRICT call whose arguments at those places are a `W`-word code (a pointer
/// to its words) and a batch of that width.
unsafe fn with_code<const W: usize, R>(
    fcinfo: pg_sys::FunctionCallInfo,
    code_at: usize,
    batch_at: usize,
    f: impl FnOnce(&WideBallLookup<W>, &WideCode<W>) -> R,
) -> R
where
    WideBallLookup<W>: BatchLookup,
{
    // SAFETY: per the contract; a fixed-length code passed by reference points to its words.
    unsafe {
        let datum = pg_getarg_datum_raw(fcinfo, code_at);
        let code = WideCode(datum.cast_mut_ptr::<[u64; W]>().read_unaligned());
        with_lookup(fcinfo, batch_at, |l| f(l, &code))
    }
}

macro_rules! wide_batch {
    ($batch:ident, $code:ident, $words:literal, $sql:literal,
     $input:ident, $output:ident, $recv:ident, $send:ident,
     $make:ident, $make_sql:literal, $within:ident, $within_sql:literal,
     $contains:ident, $contains_sql:literal, $keys:ident, $keys_sql:literal) => {
        stored_type!($batch, BallSet<WideCode<$words>>, $sql);

        impl BatchLookup for WideBallLookup<$words> {
            unsafe fn of_datum(datum: pg_sys::Datum) -> Self {
                // SAFETY: per the contract, a non-NULL batch of this width.
                let batch =
                    unsafe { $batch::from_polymorphic_datum(datum, false, pg_sys::InvalidOid) };
                WideBallLookup::new(&batch.expect("not NULL").0)
            }
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = ["wide_batches_shell"])]
        fn $input(input: &CStr) -> $batch {
            BallSet::from_text(input.to_bytes())
                .map($batch)
                .unwrap_or_else(|e| errors::invalid_text($sql, &input.to_string_lossy(), e))
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = ["wide_batches_shell"])]
        fn $output(value: $batch) -> CString {
            CString::new(value.0.to_string()).expect("the text form has no NUL")
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = ["wide_batches_shell"])]
        fn $recv(buf: Internal) -> $batch {
            BallSet::from_bytes(rest_of_message(buf))
                .map($batch)
                .unwrap_or_else(|e| errors::invalid_binary($sql, e))
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = ["wide_batches_shell"])]
        fn $send(value: $batch) -> Vec<u8> {
            value.0.to_bytes()
        }

        /// `hamming_batch(keys, codes, radius)`: ball i is centered on codes[i] and known
        /// by keys[i] (NULLs as in the 64-bit batch).
        #[pg_extern(sql = $make_sql, requires = ["wide_batches_type"])]
        fn $make(fcinfo: pg_sys::FunctionCallInfo) -> $batch {
            // SAFETY: called as declared: STRICT, so no argument is NULL; the codes are an
            // array of this width's type, fixed length by reference.
            let (keys, codes, radius) = unsafe {
                let codes =
                    array_elements(pg_getarg_datum_raw(fcinfo, 1), "codes", 8 * $words, false);
                let codes = codes
                    .into_iter()
                    .map(|d| {
                        d.map(|d| {
                            $code::from_polymorphic_datum(d, false, pg_sys::InvalidOid)
                                .expect("not NULL")
                                .0
                        })
                    })
                    .collect();
                let keys = words(pg_getarg_datum_raw(fcinfo, 0), "keys");
                (keys, codes, pg_getarg_datum_raw(fcinfo, 2).value() as i32)
            };
            let (radius, balls) = keyed_balls(keys, codes, radius);
            BallSet::new(radius, balls)
                .map($batch)
                .unwrap_or_else(|e| errors::invalid_parameter(format!("hamming_batch: {e}")))
        }

        #[pg_extern(sql = $within_sql, requires = ["wide_batches_type"])]
        fn $within(fcinfo: pg_sys::FunctionCallInfo) -> bool {
            // SAFETY: STRICT (code, batch) of this width.
            unsafe { with_code(fcinfo, 0, 1, |l: &WideBallLookup<$words>, c| l.contains(c)) }
        }

        #[pg_extern(sql = $contains_sql, requires = ["wide_batches_type"])]
        fn $contains(fcinfo: pg_sys::FunctionCallInfo) -> bool {
            // SAFETY: STRICT (batch, code) of this width.
            unsafe { with_code(fcinfo, 1, 0, |l: &WideBallLookup<$words>, c| l.contains(c)) }
        }

        /// The distinct keys of the balls containing the code, ascending.
        #[pg_extern(sql = $keys_sql, requires = ["wide_batches_type"])]
        fn $keys(fcinfo: pg_sys::FunctionCallInfo) -> Vec<i64> {
            // SAFETY: STRICT (batch, code) of this width.
            unsafe {
                with_code(fcinfo, 1, 0, |l: &WideBallLookup<$words>, c| {
                    l.keys_containing(c)
                })
            }
        }
    };
}

// COST 40, as the 64-bit batch's: a check probes the batch's substring tables.
wide_batch!(
    Hash256Batch,
    Hash256,
    4,
    "hash256_batch",
    hash256_batch_in,
    hash256_batch_out,
    hash256_batch_recv,
    hash256_batch_send,
    hamming_batch_hash256,
    "CREATE FUNCTION hamming_batch(keys bigint[], codes hash256[], radius integer) RETURNS hash256_batch
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';",
    within_batch_hash256,
    "CREATE FUNCTION within_hamming_batch(hash256, hash256_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';",
    batch_contains_hash256,
    "CREATE FUNCTION hamming_batch_contains(hash256_batch, hash256) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';",
    batch_keys_hash256,
    "CREATE FUNCTION hamming_batch_keys(batch hash256_batch, code hash256) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';"
);
wide_batch!(
    Hash128Batch,
    Hash128,
    2,
    "hash128_batch",
    hash128_batch_in,
    hash128_batch_out,
    hash128_batch_recv,
    hash128_batch_send,
    hamming_batch_hash128,
    "CREATE FUNCTION hamming_batch(keys bigint[], codes hash128[], radius integer) RETURNS hash128_batch
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';",
    within_batch_hash128,
    "CREATE FUNCTION within_hamming_batch(hash128, hash128_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';",
    batch_contains_hash128,
    "CREATE FUNCTION hamming_batch_contains(hash128_batch, hash128) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';",
    batch_keys_hash128,
    "CREATE FUNCTION hamming_batch_keys(batch hash128_batch, code hash128) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';"
);

/// The lookup of a non-NULL wide batch datum of `words`-word codes (2 or 4), as the index
/// scan reads a strategy-3 key.
///
/// # Safety
/// `datum` must be a non-NULL batch of that width.
pub unsafe fn lookup_of(datum: pg_sys::Datum, words: usize) -> WideBatchLookup {
    // SAFETY: per the contract.
    unsafe {
        if words == 2 {
            WideBatchLookup::Narrow(WideBallLookup::of_datum(datum))
        } else {
            WideBatchLookup::Wide(WideBallLookup::of_datum(datum))
        }
    }
}

/// A wide batch's lookup, for either width, as an index scan holds it.
pub enum WideBatchLookup {
    Narrow(WideBallLookup<2>),
    Wide(WideBallLookup<4>),
}

impl WideBatchLookup {
    pub fn radius(&self) -> u32 {
        match self {
            WideBatchLookup::Narrow(l) => l.radius(),
            WideBatchLookup::Wide(l) => l.radius(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            WideBatchLookup::Narrow(l) => l.centers().len(),
            WideBatchLookup::Wide(l) => l.centers().len(),
        }
    }

    /// Center `i`, padded to 4 words.
    pub fn center(&self, i: usize) -> WideCode<4> {
        match self {
            WideBatchLookup::Narrow(l) => {
                let c = l.centers()[i].0;
                WideCode([c[0], c[1], 0, 0])
            }
            WideBatchLookup::Wide(l) => l.centers()[i],
        }
    }

    /// The first ball containing a code (padded to 4 words).
    pub fn first_containing(&self, code: &WideCode<4>) -> Option<usize> {
        // One search enumerates every value within its substrings' radii, thousands at a
        // radius the tables cut coarsely; a scan asks once per row it reads.
        pgrx::check_for_interrupts!();
        match self {
            WideBatchLookup::Narrow(l) => l.first_containing(&WideCode([code.0[0], code.0[1]])),
            WideBatchLookup::Wide(l) => l.first_containing(code),
        }
    }
}
