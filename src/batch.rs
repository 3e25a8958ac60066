//! Batch mode (Manku §3.3): every pair of rows of a table within a Hamming distance, in one
//! call, computed in memory by `neardup_core::permuted::all_pairs` (sort per permutation,
//! compare within runs of equal prefix, each pair reported once).

use crate::errors;
use crate::table_args::{checked_distance, quote_ident, relation_name};
use neardup_core::permuted::all_pairs;
use pgrx::prelude::*;

#[pg_extern(
    strict,
    stable,
    parallel_safe,
    sql = "
CREATE FUNCTION hamming_pairs(tbl regclass, key_column text, signature_column text, max_distance integer)
    RETURNS TABLE (a bigint, b bigint, distance integer)
    STRICT STABLE PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
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
    let max_distance = checked_distance(max_distance);
    let relation = relation_name("hamming_pairs", tbl);
    let query = format!(
        "SELECT {key}::bigint, {sig}::bigint FROM {relation} WHERE {sig} IS NOT NULL",
        key = quote_ident(key_column),
        sig = quote_ident(signature_column),
    );
    let (keys, fps): (Vec<i64>, Vec<u64>) = Spi::connect(|client| {
        let table = client
            .select(query.as_str(), None, &[])
            .unwrap_or_else(|e| error!("hamming_pairs: {e}"));
        table
            .map(|row| {
                let key = row.get::<i64>(1).ok().flatten();
                let fp = row
                    .get::<i64>(2)
                    .ok()
                    .flatten()
                    .expect("non-NULL signature") as u64;
                (
                    key.unwrap_or_else(|| {
                        errors::null_not_allowed("hamming_pairs: key column has NULLs")
                    }),
                    fp,
                )
            })
            .unzip()
    });
    let pairs = all_pairs(&fps, max_distance).unwrap_or_else(|e| errors::invalid_parameter(e.0));
    TableIterator::new(pairs.into_iter().map(move |(i, j, d)| {
        let (x, y) = (keys[i as usize], keys[j as usize]);
        (x.min(y), x.max(y), d as i32)
    }))
}
