//! Batch mode (Manku §3.3): every pair of rows of a table within a Hamming distance, in one
//! call. The rows are read in batches into memory bounded by `maintenance_work_mem`
//! (`support/memory.rs`); the pairs come one at a time from `neardup_core::search::permuted::Pairs` (sort
//! per permutation, compare within runs of equal prefix, each pair reported once), so a
//! table whose rows share one fingerprint streams its n²/2 pairs into the executor's
//! tuplestore, which spills to disk past `work_mem`, and the call can be cancelled at any
//! point.

use crate::support::errors;
use crate::support::memory::RowBudget;
use crate::support::table_args::{
    check_integer_key, checked_distance, for_each_row, quote_ident, relation_name,
};
use neardup_core::search::permuted::Pairs;
use pgrx::prelude::*;

#[pg_extern(
    strict,
    stable,
    parallel_restricted,
    sql = "
CREATE FUNCTION hamming_pairs(tbl regclass, key_column text, signature_column text, max_distance integer)
    RETURNS TABLE (a bigint, b bigint, distance integer)
    STRICT STABLE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION hamming_pairs(regclass, text, text, integer) IS
    'all pairs of rows whose signatures (simhash64 or bigint) are within max_distance bits, each once, a < b';
"
)]
fn hamming_pairs(
    tbl: pg_sys::Oid,
    key_column: &str,
    signature_column: &str,
    max_distance: i32,
) -> TableIterator<'static, (name!(a, i64), name!(b, i64), name!(distance, i32))> {
    let max_distance = checked_distance("hamming_pairs", max_distance);
    let relation = relation_name("hamming_pairs", tbl);
    check_integer_key("hamming_pairs", tbl, key_column);
    let query = format!(
        "SELECT {key}::bigint, {sig}::bigint FROM {relation} WHERE {sig} IS NOT NULL",
        key = quote_ident(key_column),
        sig = quote_ident(signature_column),
    );
    let budget = RowBudget::maintenance(
        "hamming_pairs",
        std::mem::size_of::<i64>() + Pairs::bytes_per_row(),
    );
    let (mut keys, mut fps): (Vec<i64>, Vec<u64>) = (Vec::new(), Vec::new());
    for_each_row("hamming_pairs", &query, |row| {
        budget.admit(keys.len() + 1);
        keys.push(
            row.get::<i64>(1)
                .ok()
                .flatten()
                .unwrap_or_else(|| errors::null_not_allowed("hamming_pairs: key column has NULLs")),
        );
        fps.push(
            row.get::<i64>(2)
                .ok()
                .flatten()
                .expect("non-NULL signature") as u64,
        );
    });
    let pairs = Pairs::new(fps, max_distance).unwrap_or_else(|e| errors::invalid_parameter(e.0));
    TableIterator::new(pairs.map(move |(i, j, d)| {
        let (x, y) = (keys[i as usize], keys[j as usize]);
        (x.min(y), x.max(y), d as i32)
    }))
}
