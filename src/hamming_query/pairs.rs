//! Batch mode (Manku §3.3): every pair of rows of a table within a Hamming distance, in one
//! call. The rows are read in batches into memory bounded by `maintenance_work_mem`
//! (`support/memory.rs`); the pairs come one at a time from `neardup_core::search::permuted::Pairs` (sort
//! per permutation, compare within runs of equal prefix, each pair reported once), so a
//! table whose rows share one fingerprint streams its n²/2 pairs into the executor's
//! tuplestore, which spills to disk past `work_mem`, and the call can be cancelled at any
//! point.
//!
//! On the wide codes (`hash256`, `hash128`) the pairs come from
//! `neardup_core::search::multi_index` (Norouzi et al.'s multi-index hashing), at any
//! distance below the code's width, one code's pairs at a time.

use super::catalog::extension_type;
use crate::support::errors;
use crate::support::memory::RowBudget;
use crate::support::table_args::{
    check_integer_key, checked_distance, for_each_row, quote_ident, relation_name,
};
use neardup_core::search::multi_index::MultiIndex;
use neardup_core::search::permuted::Pairs;
use neardup_core::signatures::wide_code::WideCode;
use pgrx::prelude::*;
use pgrx::spi::SpiHeapTupleData;

type PairRows = TableIterator<'static, (name!(a, i64), name!(b, i64), name!(distance, i32))>;

#[pg_extern(
    strict,
    stable,
    parallel_restricted,
    sql = "
CREATE FUNCTION hamming_pairs(tbl regclass, key_column text, signature_column text, max_distance integer)
    RETURNS TABLE (a bigint, b bigint, distance integer)
    STRICT STABLE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION hamming_pairs(regclass, text, text, integer) IS
    'all pairs of rows whose signatures (simhash64, bigint, hash256 or hash128) are within max_distance bits, each once, a < b';
"
)]
fn hamming_pairs(
    tbl: pg_sys::Oid,
    key_column: &str,
    signature_column: &str,
    max_distance: i32,
) -> TableIterator<'static, (name!(a, i64), name!(b, i64), name!(distance, i32))> {
    let relation = relation_name("hamming_pairs", tbl);
    check_integer_key("hamming_pairs", tbl, key_column);
    let key = quote_ident(key_column);
    let sig = quote_ident(signature_column);
    match wide_code_type(tbl, signature_column) {
        Some("hash256") => wide_pairs::<4>(&key, &sig, &relation, max_distance),
        Some("hash128") => wide_pairs::<2>(&key, &sig, &relation, max_distance),
        _ => narrow_pairs(tbl, &key, &sig, &relation, max_distance),
    }
}

/// `hash256` or `hash128` when the column has one of this extension's wide types, or a
/// domain over one.
pub(crate) fn wide_code_type(tbl: pg_sys::Oid, column: &str) -> Option<&'static str> {
    let name = std::ffi::CString::new(column).ok()?;
    // SAFETY: syscache lookups by OID and name, as check_integer_key's.
    let ty = unsafe {
        let attnum = pg_sys::get_attnum(tbl, name.as_ptr());
        if attnum == pg_sys::InvalidAttrNumber as i16 {
            return None;
        }
        pg_sys::getBaseType(pg_sys::get_atttype(tbl, attnum))
    };
    [(c"hash256", "hash256"), (c"hash128", "hash128")]
        .into_iter()
        .find(|(type_name, _)| extension_type(type_name) == Some(ty))
        .map(|(_, name)| name)
}

/// What a Citus table's 64-bit pairs past the coordinator's memory need.
pub(crate) const DISTRIBUTED_HINT: &str = "The rows of a Citus table are read through the coordinator. hamming_pairs_distributed(tbl, key_column, signature_column, max_distance) pairs them on the workers instead, each within its own work_mem.";

/// The 64-bit pairs: simhash64 or bigint, Manku's permuted tables.
fn narrow_pairs(
    tbl: pg_sys::Oid,
    key: &str,
    sig: &str,
    relation: &str,
    max_distance: i32,
) -> PairRows {
    let max_distance = checked_distance("hamming_pairs", max_distance);
    let budget = RowBudget::maintenance(
        "hamming_pairs",
        std::mem::size_of::<i64>() + Pairs::bytes_per_row(),
    )
    .on_citus(tbl, DISTRIBUTED_HINT);
    let (keys, fps) = narrow_rows("hamming_pairs", key, sig, relation, &budget);
    let pairs = Pairs::new(fps, max_distance).unwrap_or_else(|e| errors::invalid_parameter(e.0));
    keyed(keys, pairs)
}

/// The keys and 64-bit codes of the rows of `relation` whose code is not NULL, each row
/// admitted by `budget`; ERROR 22004 at a NULL key. `key` and `sig` are quoted names.
pub(crate) fn narrow_rows(
    function: &str,
    key: &str,
    sig: &str,
    relation: &str,
    budget: &RowBudget,
) -> (Vec<i64>, Vec<u64>) {
    let query =
        format!("SELECT {key}::bigint, {sig}::bigint FROM {relation} WHERE {sig} IS NOT NULL");
    let mut keys = Vec::new();
    let mut fps = Vec::new();
    for_each_row(function, &query, |row| {
        budget.admit(keys.len() + 1);
        keys.push(row_key(function, row));
        fps.push(
            row.get::<i64>(2)
                .ok()
                .flatten()
                .expect("non-NULL signature") as u64,
        );
    });
    (keys, fps)
}

/// The wide pairs: the codes read through the cast to bytea (found by type, so whatever
/// schema holds the extension), multi-index hashing.
fn wide_pairs<const W: usize>(key: &str, sig: &str, relation: &str, max_distance: i32) -> PairRows {
    let radius = wide_radius::<W>("hamming_pairs", max_distance);
    let query =
        format!("SELECT {key}::bigint, {sig}::bytea FROM {relation} WHERE {sig} IS NOT NULL");
    let budget = RowBudget::maintenance(
        "hamming_pairs",
        std::mem::size_of::<i64>() + MultiIndex::<W>::bytes_per_row(),
    );
    let mut keys = Vec::new();
    let mut codes = Vec::new();
    for_each_row("hamming_pairs", &query, |row| {
        budget.admit(keys.len() + 1);
        keys.push(row_key("hamming_pairs", row));
        codes.push(wide_code_at::<W>(row, 2).expect("non-NULL signature"));
    });
    let index = MultiIndex::new(codes, radius)
        .unwrap_or_else(|e| errors::invalid_parameter(format!("hamming_pairs: {e}")));
    keyed(keys, index.pairs())
}

/// `max_distance` as a radius for `W`-word codes: 0 to the width less one, else ERROR 22023.
pub(crate) fn wide_radius<const W: usize>(function: &str, max_distance: i32) -> u32 {
    let bits = WideCode::<W>::BITS as i32;
    if !(0..bits).contains(&max_distance) {
        errors::invalid_parameter(format!(
            "{function}: max_distance must be between 0 and {} for {bits}-bit codes (got {max_distance})",
            bits - 1
        ));
    }
    max_distance as u32
}

/// The code in column `ordinal` of a row, read as `bytea` (`None` when NULL).
pub(crate) fn wide_code_at<const W: usize>(
    row: &SpiHeapTupleData,
    ordinal: usize,
) -> Option<WideCode<W>> {
    let bytes = row.get::<&[u8]>(ordinal).ok().flatten()?;
    Some(WideCode::<W>::from_be_bytes(bytes).expect("a code's own length"))
}

fn row_key(function: &str, row: &SpiHeapTupleData) -> i64 {
    row.get::<i64>(1)
        .ok()
        .flatten()
        .unwrap_or_else(|| errors::null_not_allowed(format!("{function}: key column has NULLs")))
}

/// Pairs of row numbers as pairs of keys, the smaller first.
fn keyed(keys: Vec<i64>, pairs: impl Iterator<Item = (u32, u32, u32)> + 'static) -> PairRows {
    TableIterator::new(pairs.map(move |(i, j, d)| {
        let (x, y) = (keys[i as usize], keys[j as usize]);
        (x.min(y), x.max(y), d as i32)
    }))
}
