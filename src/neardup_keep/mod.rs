//! `neardup_keep(id, signature, threshold ORDER BY rank)`: the ids of ranked results to show,
//! best first, each not a near-duplicate of a better one (the top-50 → top-10 refinement
//! Jain et al. and Broder describe). One aggregate per signature type:
//! - `simhash64`: a duplicate is within `max_distance` bits of a kept result;
//! - `supershingle_vector`: a duplicate has at least `min_b_similarity` equal supershingles;
//! - `bloom_signature`: a duplicate's content is in a kept result's, `bloom_match(candidate,
//!   kept) >= min_match`.
//!
//! The decision is `neardup_core::clusters::refinement`; this is the aggregate plumbing.

use crate::bloom_signature::Bloom;
use crate::shingling::Supershingles;
use crate::simhash64::Simhash64;
use crate::support::errors;
use neardup_core::clusters::refinement::Refinement;
use neardup_core::signatures::bloom::{bloom_match, BloomSignature};
use neardup_core::signatures::simhash::hamming;
use neardup_core::signatures::supershingles::{b_similarity, SupershingleVector};
use pgrx::fcinfo::{pg_arg_is_null, pg_getarg, pg_getarg_datum_raw};
use pgrx::prelude::*;
use pgrx::{Internal, PgMemoryContexts};

enum Signature {
    Simhash(u64),
    Supershingles(SupershingleVector),
    Bloom(BloomSignature),
}

#[derive(Clone, Copy, PartialEq)]
enum Threshold {
    MaxDistance(i32),
    MinBSimilarity(i32),
    MinMatch(f64),
}

#[derive(Default)]
struct KeepState {
    threshold: Option<Threshold>,
    refinement: Refinement<Signature>,
}

fn duplicate(
    candidate: &Signature,
    kept: &Signature,
    threshold: Threshold,
) -> Result<bool, String> {
    Ok(match (candidate, kept, threshold) {
        (Signature::Simhash(a), Signature::Simhash(b), Threshold::MaxDistance(k)) => {
            hamming(*a, *b) as i64 <= k as i64
        }
        (
            Signature::Supershingles(a),
            Signature::Supershingles(b),
            Threshold::MinBSimilarity(t),
        ) => b_similarity(a, b).map_err(|e| e.0)? as i64 >= t as i64,
        (Signature::Bloom(a), Signature::Bloom(b), Threshold::MinMatch(t)) => {
            bloom_match(a, b).map_err(|e| e.to_string())? >= t
        }
        _ => unreachable!("one aggregate, one signature type"),
    })
}

/// One transition: `(state, id, signature, threshold)`.
///
/// # Safety
/// `fcinfo` must be an aggregate transition call with those four arguments, the signature
/// of type `S`.
unsafe fn step<S: FromDatum>(
    fcinfo: pg_sys::FunctionCallInfo,
    signature: impl Fn(S) -> Signature,
    threshold: impl Fn(pg_sys::Datum) -> Threshold,
) -> Internal {
    // SAFETY: per the contract above; the state lives in the aggregate's memory context,
    // and Rust-owned parts of it are dropped when that context goes.
    unsafe {
        let mut aggregate_context: pg_sys::MemoryContext = std::ptr::null_mut();
        if pg_sys::AggCheckCallContext(fcinfo, &mut aggregate_context) == 0 {
            error!("neardup_keep transition called outside an aggregate");
        }
        let state = if pg_arg_is_null(fcinfo, 0) {
            PgMemoryContexts::For(aggregate_context).leak_and_drop_on_delete(KeepState::default())
        } else {
            pg_getarg_datum_raw(fcinfo, 0).cast_mut_ptr::<KeepState>()
        };
        let state = &mut *state;
        if pg_arg_is_null(fcinfo, 3) {
            errors::null_not_allowed("neardup_keep: the threshold must not be NULL");
        }
        let given = threshold(pg_getarg_datum_raw(fcinfo, 3));
        if matches!(given, Threshold::MinMatch(t) if t.is_nan()) {
            errors::invalid_parameter("neardup_keep: the threshold must be a number, not NaN");
        }
        match state.threshold {
            None => state.threshold = Some(given),
            Some(t) if t != given => errors::invalid_parameter(
                "neardup_keep: the threshold must be the same for every row",
            ),
            Some(_) => {}
        }
        if let Some(id) = pg_getarg::<i64>(fcinfo, 1) {
            let candidate = pg_getarg::<S>(fcinfo, 2).map(&signature);
            state
                .refinement
                .offer(id, candidate, |a, b| duplicate(a, b, given))
                .unwrap_or_else(|e| errors::invalid_parameter(e));
        }
        Internal::from(Some(pg_sys::Datum::from(state as *mut KeepState)))
    }
}

pgrx::extension_sql!(
    "
CREATE AGGREGATE neardup_keep(id bigint, signature simhash64, max_distance integer) (
    SFUNC = neardup_keep_simhash_step, STYPE = internal, FINALFUNC = neardup_keep_final,
    PARALLEL = SAFE);
CREATE AGGREGATE neardup_keep(id bigint, signature supershingle_vector, min_b_similarity integer) (
    SFUNC = neardup_keep_supershingles_step, STYPE = internal, FINALFUNC = neardup_keep_final,
    PARALLEL = SAFE);
CREATE AGGREGATE neardup_keep(id bigint, signature bloom_signature, min_match double precision) (
    SFUNC = neardup_keep_bloom_step, STYPE = internal, FINALFUNC = neardup_keep_final,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE neardup_keep(bigint, simhash64, integer) IS
    'ids in the aggregate''s ORDER BY, dropping each row within max_distance bits of a kept one';
COMMENT ON AGGREGATE neardup_keep(bigint, supershingle_vector, integer) IS
    'ids in the aggregate''s ORDER BY, dropping each row with at least min_b_similarity supershingles equal to a kept one';
COMMENT ON AGGREGATE neardup_keep(bigint, bloom_signature, double precision) IS
    'ids in the aggregate''s ORDER BY, dropping each row whose bloom_match with a kept one reaches min_match';
",
    name = "neardup_keep_aggregates",
    requires = [
        neardup_keep_simhash_step,
        neardup_keep_supershingles_step,
        neardup_keep_bloom_step,
        neardup_keep_final,
        "simhash64_type",
        "shingling_types",
        "bloom_signature_type",
    ]
);

#[pg_extern(sql = "
CREATE FUNCTION neardup_keep_simhash_step(internal, bigint, simhash64, integer) RETURNS internal
    IMMUTABLE PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["simhash64_type"])]
fn neardup_keep_simhash_step(fcinfo: pg_sys::FunctionCallInfo) -> Internal {
    // SAFETY: the aggregate declared above calls it with (state, id, simhash64, integer).
    unsafe {
        step(
            fcinfo,
            |s: Simhash64| Signature::Simhash(s.0),
            |d| Threshold::MaxDistance(d.value() as i32),
        )
    }
}

#[pg_extern(sql = "
CREATE FUNCTION neardup_keep_supershingles_step(internal, bigint, supershingle_vector, integer) RETURNS internal
    IMMUTABLE PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["shingling_types"])]
fn neardup_keep_supershingles_step(fcinfo: pg_sys::FunctionCallInfo) -> Internal {
    // SAFETY: the aggregate declared above calls it with (state, id, supershingle_vector,
    // integer).
    unsafe {
        step(
            fcinfo,
            |s: Supershingles| Signature::Supershingles(s.0),
            |d| Threshold::MinBSimilarity(d.value() as i32),
        )
    }
}

#[pg_extern(sql = "
CREATE FUNCTION neardup_keep_bloom_step(internal, bigint, bloom_signature, double precision) RETURNS internal
    IMMUTABLE PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
", requires = ["bloom_signature_type"])]
fn neardup_keep_bloom_step(fcinfo: pg_sys::FunctionCallInfo) -> Internal {
    // SAFETY: the aggregate declared above calls it with (state, id, bloom_signature,
    // double precision).
    unsafe {
        step(
            fcinfo,
            |s: Bloom| Signature::Bloom(s.0),
            |d| Threshold::MinMatch(f64::from_bits(d.value() as u64)),
        )
    }
}

#[pg_extern(sql = "
CREATE FUNCTION neardup_keep_final(internal) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
")]
fn neardup_keep_final(fcinfo: pg_sys::FunctionCallInfo) -> Vec<i64> {
    // SAFETY: STRICT, so the state is one a transition built.
    unsafe {
        let state = &*pg_getarg_datum_raw(fcinfo, 0).cast_mut_ptr::<KeepState>();
        state.refinement.kept_ids()
    }
}
