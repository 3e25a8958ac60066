//! The two steps `hamming_pairs_distributed` runs on a Citus cluster's workers
//! (`neardup_core::search::pair_parts`): `hamming_pair_parts` cuts the rows of one table (a
//! shard) into their parts, one byte string per part; `hamming_part_pairs` pairs the byte
//! strings of one part, gathered from every shard, and returns the pairs that part owns.
//! Every pair of the whole table comes from exactly one part, and each part fits the memory
//! of the node that pairs it. Both work on any table, so they are tested without Citus.

use super::pairs::{narrow_rows, wide_code_type};
use crate::support::errors;
use crate::support::memory::RowBudget;
use crate::support::table_args::{check_integer_key, checked_distance, quote_ident, relation_name};
use neardup_core::search::pair_parts::{pairs_of_part, rows_of_part, Cut, PAIRING_BYTES_PER_ROW};
use pgrx::prelude::*;

#[pg_extern(
    strict,
    stable,
    parallel_restricted,
    sql = "
CREATE FUNCTION hamming_pair_parts(tbl regclass, key_column text, signature_column text, max_distance integer, total_rows bigint, part_bytes bigint)
    RETURNS TABLE (part integer, rows bytea)
    STRICT STABLE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION hamming_pair_parts(regclass, text, text, integer, bigint, bigint) IS
    'the rows of tbl (64-bit codes) cut into the parts that hamming_part_pairs pairs, for a table of total_rows rows whose parts are paired in part_bytes each; hamming_pairs_distributed runs it on every shard';
"
)]
fn hamming_pair_parts(
    tbl: pg_sys::Oid,
    key_column: &str,
    signature_column: &str,
    max_distance: i32,
    total_rows: i64,
    part_bytes: i64,
) -> TableIterator<'static, (name!(part, i32), name!(rows, Vec<u8>))> {
    const FUNCTION: &str = "hamming_pair_parts";
    let relation = relation_name(FUNCTION, tbl);
    check_integer_key(FUNCTION, tbl, key_column);
    if wide_code_type(tbl, signature_column).is_some() {
        errors::raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("{FUNCTION}: only 64-bit codes (simhash64, bigint) are cut into parts"),
        );
    }
    let max_distance = checked_distance(FUNCTION, max_distance);
    if total_rows < 0 || part_bytes <= 0 {
        errors::invalid_parameter(format!(
            "{FUNCTION}: total_rows must not be negative and part_bytes must be positive (got {total_rows} and {part_bytes})"
        ));
    }
    let cut = Cut::new(total_rows as u64, max_distance, part_bytes as u64)
        .unwrap_or_else(|e| errors::invalid_parameter(format!("{FUNCTION}: {}", e.0)));
    // a row as read (key and code), then once per table in the parts
    let row_bytes = 16 * (1 + cut.layout().tables().len());
    let budget = RowBudget::maintenance(FUNCTION, row_bytes);
    let (keys, fps) = narrow_rows(
        FUNCTION,
        &quote_ident(key_column),
        &quote_ident(signature_column),
        &relation,
        &budget,
    );
    let parts = cut.split(keys.into_iter().zip(fps));
    TableIterator::new(parts.into_iter().map(|(part, rows)| (part as i32, rows)))
}

#[pg_extern(
    strict,
    immutable,
    parallel_safe,
    sql = "
CREATE FUNCTION hamming_part_pairs(parts bytea[])
    RETURNS TABLE (a bigint, b bigint, distance integer)
    STRICT IMMUTABLE PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION hamming_part_pairs(bytea[]) IS
    'the pairs one part owns, from its rows as hamming_pair_parts cut them on every shard: each pair of the whole table from exactly one part, a < b';
"
)]
fn hamming_part_pairs(
    parts: Array<&[u8]>,
) -> TableIterator<'static, (name!(a, i64), name!(b, i64), name!(distance, i32))> {
    const FUNCTION: &str = "hamming_part_pairs";
    let parts: Vec<&[u8]> = parts
        .iter()
        .map(|p| {
            p.unwrap_or_else(|| errors::null_not_allowed(format!("{FUNCTION}: a part is NULL")))
        })
        .collect();
    if parts.is_empty() {
        return TableIterator::new(std::iter::empty());
    }
    let rows: usize = parts.iter().map(|p| p.len() / 16).sum();
    RowBudget::maintenance(FUNCTION, PAIRING_BYTES_PER_ROW).admit(rows);
    let (layout, table, keys, fps) = rows_of_part(&parts).unwrap_or_else(|e| {
        errors::raise(
            PgSqlErrorCode::ERRCODE_INVALID_BINARY_REPRESENTATION,
            format!("{FUNCTION}: {}", e.0),
        )
    });
    TableIterator::new(pairs_of_part(layout, table, keys, fps).map(|(a, b, d)| (a, b, d as i32)))
}
