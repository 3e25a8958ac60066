//! The GIN operator class of `supershingle_vector` for `%` (B-similar at
//! `neardup.b_similarity_threshold` = t).
//!
//! Every vector is indexed under two kinds of bigint keys (`neardup_core::signatures::supershingles`):
//! one *position key* per supershingle (hash of position and value) and one *megashingle*
//! per pair of positions (hash of both positions and values). Two vectors that agree in s
//! positions share exactly s position keys and C(s, 2) megashingles, up to 64-bit hash
//! collisions. So a query looks up
//! - its position keys when t = 1 (a row qualifies with ≥ 1 shared key), or
//! - its megashingles when t ≥ 2 (a row qualifies with ≥ C(t, 2) shared keys: C(s, 2) ≥
//!   C(t, 2) exactly when s ≥ t),
//!
//! and the candidates are exactly the B-similar rows plus, with negligible probability,
//! collisions, which the recheck with `b_similarity` removes. Megashingles also make the
//! posting lists short: a row is found through pairs of agreeing positions, not through one
//! common supershingle such as that of an empty text.

use super::{Supershingles, B_SIMILARITY_THRESHOLD};
use neardup_core::signatures::supershingles::{megashingles, position_keys};
use pgrx::fcinfo::{pg_getarg, pg_getarg_datum_raw};
use pgrx::prelude::*;
use pgrx::Internal;

/// A palloc'd array of int8 key datums, and its length through `nkeys`.
///
/// # Safety
/// `nkeys` must point to an int32 the caller reads.
pub(crate) unsafe fn key_array(keys: &[u64], nkeys: *mut i32) -> Internal {
    // SAFETY: writes within the palloc'd array and the caller's counter.
    unsafe {
        *nkeys = keys.len() as i32;
        let array = pg_sys::palloc(keys.len().max(1) * std::mem::size_of::<pg_sys::Datum>())
            as *mut pg_sys::Datum;
        for (i, &k) in keys.iter().enumerate() {
            *array.add(i) = pg_sys::Datum::from(k as i64);
        }
        Internal::from(Some(pg_sys::Datum::from(array)))
    }
}

/// Whether the query uses megashingles (threshold ≥ 2) or position keys (threshold 1).
fn uses_megashingles(threshold: i32) -> bool {
    threshold >= 2
}

#[pg_extern(sql = "
CREATE FUNCTION supershingle_gin_extract_value(supershingle_vector, internal, internal)
    RETURNS internal IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["shingling_shells"])]
fn supershingle_gin_extract_value(fcinfo: pg_sys::FunctionCallInfo) -> Internal {
    // SAFETY: GIN calls extractValue(item, int32 *nkeys, bool **nullFlags) with a non-NULL
    // item; leaving nullFlags unset means no key is NULL.
    unsafe {
        let vector: Supershingles = pg_getarg(fcinfo, 0).expect("STRICT");
        let nkeys = pg_getarg_datum_raw(fcinfo, 1).cast_mut_ptr::<i32>();
        let mut keys = position_keys(&vector.0);
        keys.extend(megashingles(&vector.0));
        key_array(&keys, nkeys)
    }
}

#[pg_extern(sql = "
CREATE FUNCTION supershingle_gin_extract_query(supershingle_vector, internal, smallint, internal, internal, internal, internal)
    RETURNS internal IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["shingling_shells"])]
fn supershingle_gin_extract_query(fcinfo: pg_sys::FunctionCallInfo) -> Internal {
    // SAFETY: GIN calls extractQuery(query, int32 *nkeys, StrategyNumber, bool **pmatch,
    // Pointer **extra_data, bool **nullFlags, int32 *searchMode); the defaults of the
    // out-parameters (no partial match, no extra data, default search mode) are what we want.
    unsafe {
        let query: Supershingles = pg_getarg(fcinfo, 0).expect("STRICT");
        let nkeys = pg_getarg_datum_raw(fcinfo, 1).cast_mut_ptr::<i32>();
        let threshold = B_SIMILARITY_THRESHOLD.get();
        // A threshold above the vector's length matches nothing: no keys, default mode.
        if threshold as usize > query.0.values().len() {
            return key_array(&[], nkeys);
        }
        let keys = if uses_megashingles(threshold) {
            megashingles(&query.0)
        } else {
            position_keys(&query.0)
        };
        key_array(&keys, nkeys)
    }
}

#[pg_extern(sql = "
CREATE FUNCTION supershingle_gin_consistent(internal, smallint, supershingle_vector, integer, internal, internal, internal, internal)
    RETURNS boolean IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["shingling_shells"])]
fn supershingle_gin_consistent(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    // SAFETY: GIN calls consistent(bool check[], StrategyNumber, query, int32 nkeys,
    // Pointer extra_data[], bool *recheck, Datum queryKeys[], bool nullFlags[]).
    unsafe {
        let check = pg_getarg_datum_raw(fcinfo, 0).cast_mut_ptr::<bool>();
        let nkeys = pg_getarg_datum_raw(fcinfo, 3).value() as i32;
        let recheck = pg_getarg_datum_raw(fcinfo, 5).cast_mut_ptr::<bool>();
        let shared = (0..nkeys as usize).filter(|&i| *check.add(i)).count();
        // Hash collisions could add a shared key: b_similarity decides.
        *recheck = true;
        let t = B_SIMILARITY_THRESHOLD.get() as usize;
        let needed = if uses_megashingles(t as i32) {
            t * (t - 1) / 2
        } else {
            t
        };
        shared >= needed
    }
}
