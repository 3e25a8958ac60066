//! `hamming_batch`: many keyed balls of one radius in one value (`neardup_core::search::ball_set`),
//! the right-hand side of `fp <@@ batch`, "within the radius of any of them" (not `<@`,
//! which would make `fp <@ '(…)'` ambiguous between a ball and a batch). It is how a
//! batch check reaches a shard through postgres_fdw as one remote statement: the value is
//! a parameter of the shipped condition, and the shard's `hamming` index probes every
//! center (strategy 3 of its operator classes). `hamming_batch_keys(batch, fp)` then says
//! which balls a returned fingerprint is in.
//!
//! Built from two arrays, `hamming_batch(array_agg(id), array_agg(fp), 3)`, so everything
//! that grows with the batch is in PostgreSQL's memory until a lookup is made: a lookup
//! (the centers sorted into permuted tables) is made once per call site and batch, and
//! sorted whatever its size (see `lookup_budget`).

use crate::support::errors;
use crate::support::stored_type::{rest_of_message, stored_type, varlena_bytes, StoredBytes};
use neardup_core::search::ball_set::{header_of, BallLookup, BallSet};
use neardup_core::signatures::codec::DecodeError;
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

/// The elements of a one-dimensional array of a fixed-length, double-aligned type (bigint
/// and simhash64 by value; hash256 and hash128 by reference, `len` bytes), NULL ones as
/// `None`; a by-reference element points into the (detoasted) array.
///
/// # Safety
/// `datum` must be a non-NULL array of such a type.
pub unsafe fn array_elements(
    datum: pg_sys::Datum,
    what: &str,
    len: i16,
    by_value: bool,
) -> Vec<Option<pg_sys::Datum>> {
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
            len as i32,
            by_value,
            pg_sys::TYPALIGN_DOUBLE as std::ffi::c_char,
            &mut values,
            &mut nulls,
            &mut n,
        );
        (0..n as usize)
            .map(|i| (!*nulls.add(i)).then(|| *values.add(i)))
            .collect()
    }
}

/// The 8-byte elements of a one-dimensional array of bigint or simhash64.
///
/// # Safety
/// `datum` must be a non-NULL array of bigint or simhash64.
pub unsafe fn words(datum: pg_sys::Datum, what: &str) -> Vec<Option<u64>> {
    // SAFETY: per the contract.
    let elements = unsafe { array_elements(datum, what, 8, true) };
    elements
        .into_iter()
        .map(|d| d.map(|d| d.value() as u64))
        .collect()
}

/// The balls of `hamming_batch(keys, centers, radius)`'s arrays: ERROR 22023 for arrays of
/// different lengths or a negative radius, 22004 for a NULL key; a NULL center is near
/// nothing, so it adds no ball.
pub fn keyed_balls<C>(
    keys: Vec<Option<u64>>,
    centers: Vec<Option<C>>,
    radius: i32,
) -> (u32, Vec<(i64, C)>) {
    if keys.len() != centers.len() {
        errors::invalid_parameter(format!(
            "hamming_batch: keys and fingerprints must have the same length ({} and {})",
            keys.len(),
            centers.len()
        ));
    }
    let radius = u32::try_from(radius).unwrap_or_else(|_| {
        errors::invalid_parameter(format!(
            "hamming_batch: the radius must not be negative (got {radius})"
        ))
    });
    let mut balls = Vec::with_capacity(centers.len());
    for (key, center) in keys.into_iter().zip(centers) {
        let Some(key) = key else {
            errors::null_not_allowed("hamming_batch: keys must not be NULL");
        };
        if let Some(center) = center {
            balls.push((key as i64, center));
        }
    }
    (radius, balls)
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
    let (radius, balls) = keyed_balls(keys, fps, radius);
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

/// `fp <@@ batch`: within the radius of at least one center.
fn within(fcinfo: pg_sys::FunctionCallInfo, fp_at: usize, batch_at: usize) -> bool {
    // SAFETY: the operator functions below are STRICT with these argument positions.
    unsafe {
        let fp = fingerprint(fcinfo, fp_at);
        with_lookup(fcinfo, batch_at, |l: &BallLookup| l.contains(fp))
    }
}

// COST 40 (operator evaluations): a call binary-searches every permuted table of the batch,
// some 40 comparisons for thousands of balls. Measured on a shard of 1 M rows, a seq scan
// filtering each row this way takes about 1/130 of what one probe of the index takes
// (bench/shards.sh), which is the ratio the planner then sees between the two plans.
#[pg_extern(sql = "
CREATE FUNCTION within_hamming_batch(simhash64, hamming_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn within_batch_simhash64(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    within(fcinfo, 0, 1)
}

#[pg_extern(sql = "
CREATE FUNCTION within_hamming_batch(bigint, hamming_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn within_batch_int8(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    within(fcinfo, 0, 1)
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_batch_contains(hamming_batch, simhash64) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn batch_contains_simhash64(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    within(fcinfo, 1, 0)
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_batch_contains(hamming_batch, bigint) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn batch_contains_int8(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    within(fcinfo, 1, 0)
}

/// The distinct keys of the balls containing `fp`, ascending (empty when none does).
fn keys(fcinfo: pg_sys::FunctionCallInfo) -> Vec<i64> {
    // SAFETY: the functions below are STRICT: (batch, fingerprint).
    unsafe {
        let fp = fingerprint(fcinfo, 1);
        with_lookup(fcinfo, 0, |l: &BallLookup| l.keys_containing(fp))
    }
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_batch_keys(batch hamming_batch, fingerprint simhash64) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["hamming_batch_type", "simhash64_type"])]
fn batch_keys_simhash64(fcinfo: pg_sys::FunctionCallInfo) -> Vec<i64> {
    keys(fcinfo)
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_batch_keys(batch hamming_batch, fingerprint bigint) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
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

/// The bytes a batch's lookup may hold: no limit of its own. The lookup (the centers sorted
/// into the tables of a layout: 16 + 16 bytes a ball per table, 4 tables up to ~30 M
/// balls at radius 3) is a few times the batch itself, which is in memory already, so it
/// grows with the batch as the batch does; with it, a check costs a few binary searches
/// per row however large the batch. (A lookup bounded by `work_mem` compared each
/// row with every center: 113 k balls took 12.5 s through an index and over a minute as a
/// filter.)
pub fn lookup_budget() -> usize {
    usize::MAX
}

/// What names a batch datum without unpacking it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Identity {
    /// A value stored out of line: its TOAST pointer (table, value id) never changes.
    Toasted(pg_sys::Oid, pg_sys::Oid),
    /// A value compressed in line (at most a page): a hash of its compressed bytes.
    Compressed(u64, usize),
    /// A plain value: its header (radius, balls, checksum of the balls).
    Plain(u32, u32, u64),
}

impl Identity {
    /// The identity of a non-NULL hamming_batch datum, reading no more than its pointer or
    /// header (or the compressed bytes, which are in memory already).
    ///
    /// # Safety
    /// `datum` must be a non-NULL batch (of any centers).
    unsafe fn of(datum: pg_sys::Datum) -> Option<Identity> {
        use pgrx::varlena::{varatt_is_1b_e, varatt_is_4b_c, varsize_any, vartag_external};
        // SAFETY: per the contract; an on-disk TOAST pointer is followed by an unaligned
        // varatt_external (postgres.h's VARATT_EXTERNAL_GET_POINTER copies it out too).
        unsafe {
            let ptr = datum.cast_mut_ptr::<pg_sys::varlena>();
            if varatt_is_1b_e(ptr) {
                if vartag_external(ptr) as u32 != pg_sys::vartag_external::VARTAG_ONDISK {
                    return None; // expanded or indirect: never made for this type
                }
                let pointer = ptr.cast::<u8>().add(2).cast::<pg_sys::varatt_external>();
                let pointer = pointer.read_unaligned();
                return Some(Identity::Toasted(pointer.va_toastrelid, pointer.va_valueid));
            }
            if varatt_is_4b_c(ptr) {
                let bytes = std::slice::from_raw_parts(ptr.cast::<u8>(), varsize_any(ptr));
                return Some(Identity::Compressed(
                    neardup_core::base::hash::hash_bytes(bytes),
                    bytes.len(),
                ));
            }
            let (radius, balls, checksum) = header_of(varlena_bytes(datum))?;
            Some(Identity::Plain(radius, balls, checksum))
        }
    }
}

/// What answers "which balls contain this value?" for a batch type: made once per call site
/// and batch by [`with_lookup`].
pub trait BatchLookup: Sized {
    /// The lookup of a non-NULL batch datum of its type (ERROR for a corrupt one).
    ///
    /// # Safety
    /// `datum` is a non-NULL batch of the type this lookup answers for.
    unsafe fn of_datum(datum: pg_sys::Datum) -> Self;
}

impl BatchLookup for BallLookup {
    unsafe fn of_datum(datum: pg_sys::Datum) -> BallLookup {
        // SAFETY: per the contract.
        BallLookup::new(&unsafe { decode(datum) }, lookup_budget())
    }
}

/// A call site's lookup, and the batch it was made from.
struct CachedLookup<L> {
    identity: Identity,
    lookup: L,
}

/// Calls `f` with a lookup over the batch in argument `at`, made once per call site and
/// batch: a query passes the same batch with every row, and its identity (see
/// [`Identity`]) tells whether it is the same without unpacking it, even when it comes
/// compressed or out of line from a table.
///
/// # Safety
/// `fcinfo` is a STRICT call whose argument `at` is a batch of the type `L` answers for.
pub unsafe fn with_lookup<L: BatchLookup, R>(
    fcinfo: pg_sys::FunctionCallInfo,
    at: usize,
    f: impl FnOnce(&L) -> R,
) -> R {
    // SAFETY: flinfo is the call site's; fn_extra is ours to use and lives as long as
    // fn_mcxt, where the cached lookup is dropped.
    unsafe {
        let flinfo = (*fcinfo).flinfo;
        let datum = pg_getarg_datum_raw(fcinfo, at);
        let identity = Identity::of(datum);
        let cached = (*flinfo).fn_extra.cast::<CachedLookup<L>>();
        if let (Some(cached), Some(identity)) = (cached.as_ref(), identity) {
            if cached.identity == identity {
                return f(&cached.lookup);
            }
        }
        // decoding raises the ERROR for a batch too short to have a header
        let lookup = L::of_datum(datum);
        let Some(identity) = identity else {
            return f(&lookup);
        };
        if !cached.is_null() {
            (*cached).identity = identity;
            (*cached).lookup = lookup;
        } else {
            (*flinfo).fn_extra = PgMemoryContexts::For((*flinfo).fn_mcxt)
                .leak_and_drop_on_delete(CachedLookup { identity, lookup })
                .cast();
        }
        f(&(*(*flinfo).fn_extra.cast::<CachedLookup<L>>()).lookup)
    }
}

/// The radius and number of balls of a batch (of any centers), for the planner: read from
/// the header of a constant's bytes without decoding the balls.
///
/// # Safety
/// `datum` must be a non-NULL batch.
pub unsafe fn header(datum: pg_sys::Datum) -> Option<(u32, u64)> {
    // SAFETY: per the contract.
    let (radius, balls, _) = header_of(unsafe { varlena_bytes(datum) })?;
    Some((radius, balls as u64))
}
