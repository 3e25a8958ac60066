//! `hamming_batch`: many keyed balls of one radius in one value (`neardup_core::ball_set`),
//! the right-hand side of `fp <@ batch`, "within the radius of any of them". It is how a
//! batch check reaches a shard through postgres_fdw as one remote statement: the value is
//! a parameter of the shipped condition, and the shard's `hamming` index probes every
//! center (strategy 3 of its operator classes). `hamming_batch_keys(batch, fp)` then says
//! which balls a returned fingerprint is in.
//!
//! Built from two arrays, `hamming_batch(array_agg(id), array_agg(fp), 3)`, so everything
//! that grows with the batch is in PostgreSQL's memory until a lookup is made: a lookup
//! (the centers sorted into permuted tables) is made once per call site and batch, and
//! sorted only within `work_mem` (past it, each call compares with every center).

use crate::errors;
use crate::stored_type::{rest_of_message, stored_type, varlena_bytes, StoredBytes};
use neardup_core::ball_set::BallLookup;
use neardup_core::ball_set::BallSet;
use neardup_core::codec::DecodeError;
use pgrx::fcinfo::pg_getarg_datum_raw;
use pgrx::prelude::*;
use pgrx::Internal;
use pgrx::PgMemoryContexts;
use std::ffi::{CStr, CString};

stored_type!(HammingBatch, BallSet, "hamming_batch");

impl StoredBytes for BallSet {
    fn encode(&self) -> Vec<u8> {
        self.to_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        BallSet::from_bytes(bytes).map_err(|e: DecodeError| e.0)
    }
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["hamming_batch_shell"])]
fn hamming_batch_in(input: &CStr) -> HammingBatch {
    BallSet::from_text(input.to_bytes())
        .map(HammingBatch)
        .unwrap_or_else(|e| errors::invalid_text("hamming_batch", &input.to_string_lossy(), e))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["hamming_batch_shell"])]
fn hamming_batch_out(value: HammingBatch) -> CString {
    CString::new(value.0.to_string()).expect("the text form has no NUL")
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["hamming_batch_shell"])]
fn hamming_batch_recv(buf: Internal) -> HammingBatch {
    BallSet::from_bytes(rest_of_message(buf))
        .map(HammingBatch)
        .unwrap_or_else(|e| errors::invalid_binary("hamming_batch", e))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["hamming_batch_shell"])]
fn hamming_batch_send(value: HammingBatch) -> Vec<u8> {
    value.0.to_bytes()
}

/// The 8-byte elements of a one-dimensional array of bigint or simhash64 (both 8 bytes by
/// value, double-aligned), NULL ones as `None`.
///
/// # Safety
/// `datum` must be a non-NULL array of bigint or simhash64.
unsafe fn words(datum: pg_sys::Datum, what: &str) -> Vec<Option<u64>> {
    // SAFETY: per the contract; deconstruct_array reads elements of the given layout, and
    // its output arrays are palloc'd in the current context.
    unsafe {
        let array = pg_sys::pg_detoast_datum(datum.cast_mut_ptr()).cast::<pg_sys::ArrayType>();
        if (*array).ndim > 1 {
            errors::invalid_parameter(format!(
                "hamming_batch: {what} must be a one-dimensional array"
            ));
        }
        let mut values: *mut pg_sys::Datum = std::ptr::null_mut();
        let mut nulls: *mut bool = std::ptr::null_mut();
        let mut n = 0;
        pg_sys::deconstruct_array(
            array,
            (*array).elemtype,
            8,
            true,
            pg_sys::TYPALIGN_DOUBLE as std::ffi::c_char,
            &mut values,
            &mut nulls,
            &mut n,
        );
        (0..n as usize)
            .map(|i| (!*nulls.add(i)).then(|| (*values.add(i)).value() as u64))
            .collect()
    }
}

/// `hamming_batch(keys, fingerprints, radius)`: ball i is centered on fingerprints[i] and
/// known by keys[i]. A NULL fingerprint is near nothing, so it adds no ball; a NULL key is
/// an error (the caller could not tell its matches apart).
#[pg_extern(sql = "
CREATE FUNCTION hamming_batch(keys bigint[], fingerprints simhash64[], radius integer)
    RETURNS hamming_batch IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn hamming_batch_of_arrays(fcinfo: pg_sys::FunctionCallInfo) -> HammingBatch {
    // SAFETY: called as declared above: STRICT, so no argument is NULL.
    let (keys, fps, radius) = unsafe {
        (
            words(pg_getarg_datum_raw(fcinfo, 0), "keys"),
            words(pg_getarg_datum_raw(fcinfo, 1), "fingerprints"),
            pg_getarg_datum_raw(fcinfo, 2).value() as i32,
        )
    };
    if keys.len() != fps.len() {
        errors::invalid_parameter(format!(
            "hamming_batch: keys and fingerprints must have the same length ({} and {})",
            keys.len(),
            fps.len()
        ));
    }
    let radius = u32::try_from(radius).unwrap_or_else(|_| {
        errors::invalid_parameter(format!(
            "hamming_batch: the radius must not be negative (got {radius})"
        ))
    });
    let mut balls = Vec::with_capacity(fps.len());
    for (key, fp) in keys.into_iter().zip(fps) {
        let Some(key) = key else {
            errors::null_not_allowed("hamming_batch: keys must not be NULL");
        };
        if let Some(fp) = fp {
            balls.push((key as i64, fp));
        }
    }
    BallSet::new(radius, balls)
        .map(HammingBatch)
        .unwrap_or_else(|e| errors::invalid_parameter(format!("hamming_batch: {e}")))
}

/// The fingerprint argument of a `(fingerprint, batch)` call.
///
/// # Safety
/// `fcinfo` is a STRICT call whose argument 0 is a simhash64 or a bigint.
unsafe fn fingerprint(fcinfo: pg_sys::FunctionCallInfo, at: usize) -> u64 {
    unsafe { pg_getarg_datum_raw(fcinfo, at).value() as u64 }
}

/// `fp <@ batch`: within the radius of at least one center.
fn within(fcinfo: pg_sys::FunctionCallInfo, fp_at: usize, batch_at: usize) -> bool {
    // SAFETY: the operator functions below are STRICT with these argument positions.
    unsafe {
        let fp = fingerprint(fcinfo, fp_at);
        with_lookup(fcinfo, batch_at, |l| l.contains(fp))
    }
}

#[pg_extern(sql = "
CREATE FUNCTION within_hamming_batch(simhash64, hamming_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 10 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn within_batch_simhash64(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    within(fcinfo, 0, 1)
}

#[pg_extern(sql = "
CREATE FUNCTION within_hamming_batch(bigint, hamming_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 10 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn within_batch_int8(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    within(fcinfo, 0, 1)
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_batch_contains(hamming_batch, simhash64) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 10 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn batch_contains_simhash64(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    within(fcinfo, 1, 0)
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_batch_contains(hamming_batch, bigint) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 10 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn batch_contains_int8(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    within(fcinfo, 1, 0)
}

/// The distinct keys of the balls containing `fp`, ascending (empty when none does).
fn keys(fcinfo: pg_sys::FunctionCallInfo) -> Vec<i64> {
    // SAFETY: the functions below are STRICT: (batch, fingerprint).
    unsafe {
        let fp = fingerprint(fcinfo, 1);
        with_lookup(fcinfo, 0, |l| l.keys_containing(fp))
    }
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_batch_keys(batch hamming_batch, fingerprint simhash64) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 10 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn batch_keys_simhash64(fcinfo: pg_sys::FunctionCallInfo) -> Vec<i64> {
    keys(fcinfo)
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_batch_keys(batch hamming_batch, fingerprint bigint) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 10 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn batch_keys_int8(fcinfo: pg_sys::FunctionCallInfo) -> Vec<i64> {
    keys(fcinfo)
}

/// The decoded batch of a non-NULL hamming_batch datum.
///
/// # Safety
/// `datum` must be a non-NULL hamming_batch.
pub unsafe fn decode(datum: pg_sys::Datum) -> BallSet {
    // SAFETY: per the contract.
    unsafe { HammingBatch::from_polymorphic_datum(datum, false, pg_sys::InvalidOid) }
        .expect("not NULL")
        .0
}

/// The bytes a batch's lookup may hold: `work_mem`, as a sort or a hash would.
pub fn lookup_budget() -> usize {
    // SAFETY: a GUC variable of this backend, read on its only thread.
    (unsafe { pg_sys::work_mem }).max(64) as usize * 1024
}

/// A call site's lookup, and the header of the batch it was made from.
struct CachedLookup {
    header: (u32, u32, u64),
    lookup: BallLookup,
}

/// Calls `f` with a lookup over the batch in argument `at`, made once per call site and
/// batch: a query passes the same batch with every row, and the batch's header (radius,
/// number of balls, checksum of the balls) tells whether it is the same, at no cost.
///
/// # Safety
/// `fcinfo` is a STRICT call whose argument `at` is a hamming_batch.
unsafe fn with_lookup<R>(
    fcinfo: pg_sys::FunctionCallInfo,
    at: usize,
    f: impl FnOnce(&BallLookup) -> R,
) -> R {
    // SAFETY: flinfo is the call site's; fn_extra is ours to use and lives as long as
    // fn_mcxt, where the cached lookup is dropped.
    unsafe {
        let flinfo = (*fcinfo).flinfo;
        let datum = pg_getarg_datum_raw(fcinfo, at);
        let header = BallSet::header_of(varlena_bytes(datum));
        let cached = (*flinfo).fn_extra.cast::<CachedLookup>();
        if let (Some(cached), Some(header)) = (cached.as_ref(), header) {
            if cached.header == header {
                return f(&cached.lookup);
            }
        }
        // decode raises the ERROR for a batch too short to have a header
        let lookup = BallLookup::new(&decode(datum), lookup_budget());
        let header = header.expect("decoded, so whole");
        if !cached.is_null() {
            (*cached).header = header;
            (*cached).lookup = lookup;
        } else {
            (*flinfo).fn_extra = PgMemoryContexts::For((*flinfo).fn_mcxt)
                .leak_and_drop_on_delete(CachedLookup { header, lookup })
                .cast();
        }
        f(&(*(*flinfo).fn_extra.cast::<CachedLookup>()).lookup)
    }
}

/// The radius and number of balls of a batch, for the planner: read from the header of a
/// constant's bytes without decoding the balls.
///
/// # Safety
/// `datum` must be a non-NULL hamming_batch.
pub unsafe fn header(datum: pg_sys::Datum) -> Option<(u32, u64)> {
    // SAFETY: per the contract.
    let (radius, balls, _) = BallSet::header_of(unsafe { varlena_bytes(datum) })?;
    Some((radius, balls as u64))
}
