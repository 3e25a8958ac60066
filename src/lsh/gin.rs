//! The GIN operator class of `lsh_bands` for `&&`: every row is indexed under its band
//! keys, and a query looks up its own. Keys carry their band number, so a shared key is a
//! shared band: the index answer is exact and needs no recheck.

use super::LshBands;
use crate::shingling::gin::key_array;
use pgrx::fcinfo::{pg_getarg, pg_getarg_datum_raw};
use pgrx::prelude::*;
use pgrx::Internal;

#[pg_extern(sql = "
CREATE FUNCTION lsh_bands_gin_extract_value(lsh_bands, internal, internal)
    RETURNS internal IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["lsh_shell"])]
fn lsh_bands_gin_extract_value(fcinfo: pg_sys::FunctionCallInfo) -> Internal {
    // SAFETY: GIN calls extractValue(item, int32 *nkeys, bool **nullFlags) with a non-NULL
    // item; leaving nullFlags unset means no key is NULL.
    unsafe {
        let bands: LshBands = pg_getarg(fcinfo, 0).expect("STRICT");
        key_array(
            bands.0.keys(),
            pg_getarg_datum_raw(fcinfo, 1).cast_mut_ptr::<i32>(),
        )
    }
}

#[pg_extern(sql = "
CREATE FUNCTION lsh_bands_gin_extract_query(lsh_bands, internal, smallint, internal, internal, internal, internal)
    RETURNS internal IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["lsh_shell"])]
fn lsh_bands_gin_extract_query(fcinfo: pg_sys::FunctionCallInfo) -> Internal {
    // SAFETY: GIN calls extractQuery(query, int32 *nkeys, StrategyNumber, bool **pmatch,
    // Pointer **extra_data, bool **nullFlags, int32 *searchMode); the defaults of the
    // out-parameters (no partial match, no extra data, default search mode) are what we want.
    unsafe {
        let query: LshBands = pg_getarg(fcinfo, 0).expect("STRICT");
        key_array(
            query.0.keys(),
            pg_getarg_datum_raw(fcinfo, 1).cast_mut_ptr::<i32>(),
        )
    }
}

#[pg_extern(sql = "
CREATE FUNCTION lsh_bands_gin_consistent(internal, smallint, lsh_bands, integer, internal, internal, internal, internal)
    RETURNS boolean IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["lsh_shell"])]
fn lsh_bands_gin_consistent(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    // SAFETY: GIN calls consistent(bool check[], StrategyNumber, query, int32 nkeys,
    // Pointer extra_data[], bool *recheck, Datum queryKeys[], bool nullFlags[]).
    unsafe {
        let check = pg_getarg_datum_raw(fcinfo, 0).cast_mut_ptr::<bool>();
        let nkeys = pg_getarg_datum_raw(fcinfo, 3).value() as i32;
        let recheck = pg_getarg_datum_raw(fcinfo, 5).cast_mut_ptr::<bool>();
        *recheck = false;
        (0..nkeys as usize).any(|i| *check.add(i))
    }
}
