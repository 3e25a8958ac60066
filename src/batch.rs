//! Batch mode (Manku §3.3): every pair of rows of a table within a Hamming distance, in one
//! call, computed in memory by `neardup_core::permuted::all_pairs` (sort per permutation,
//! compare within runs of equal prefix, each pair reported once).

use crate::errors;
use neardup_core::permuted::all_pairs;
use pgrx::prelude::*;

/// Quotes an SQL identifier the way PostgreSQL's `quote_ident` does.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

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
    if !(0..64).contains(&max_distance) {
        errors::invalid_parameter(format!(
            "max_distance must be between 0 and 63 (got {max_distance})"
        ));
    }
    let relation = Spi::get_one::<String>(&format!("SELECT {}::oid::regclass::text", tbl.to_u32()))
        .ok()
        .flatten()
        .unwrap_or_else(|| errors::invalid_parameter("hamming_pairs: no such table"));
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
    let pairs =
        all_pairs(&fps, max_distance as u32).unwrap_or_else(|e| errors::invalid_parameter(e.0));
    TableIterator::new(pairs.into_iter().map(move |(i, j, d)| {
        let (x, y) = (keys[i as usize], keys[j as usize]);
        (x.min(y), x.max(y), d as i32)
    }))
}
