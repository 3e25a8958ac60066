//! `minhash_pairs`: every verified LSH pair of a table in one call. The sketches are read
//! into memory bounded by `maintenance_work_mem`; the pairs come one at a time from
//! `neardup_core::search::lsh::BandPairs` (one band sorted at a time, candidates verified by the
//! Jaccard estimate, each pair reported by the first band it shares), so a table of one
//! repeated text streams its n²/2 pairs into the executor's tuplestore, which spills past
//! `work_mem`, and the call can be cancelled at any point.

use super::banding_for_threshold;
use crate::shingling::Minhash;
use crate::support::errors;
use crate::support::memory::RowBudget;
use crate::support::stored_type::type_is_named;
use crate::support::table_args::{check_integer_key, for_each_row, quote_ident, relation_name};
use neardup_core::search::lsh::{BandPairs, Banding, SketchTable};
use neardup_core::signatures::minhash::{jaccard, MinhashSketch};
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

/// The sketches of a table's rows and their keys, read by `for_each_row`.
pub(crate) struct TableSketches {
    pub keys: Vec<i64>,
    pub sketches: SketchTable,
    /// The keys of rows whose sketch is NULL.
    pub without_sketch: Vec<i64>,
}

/// Reads `(key, sketch)` rows of `query` (keys non-NULL, sketches all of one shape),
/// checking each against `maintenance_work_mem` at `extra_bytes_per_row(num_hashes)` more
/// than the key and sketch.
pub(crate) fn read_sketches(
    function: &'static str,
    tbl: pg_sys::Oid,
    query: &str,
    extra_bytes_per_row: impl Fn(usize) -> usize,
) -> TableSketches {
    let mut keys = Vec::new();
    let mut without_sketch = Vec::new();
    let mut first: Option<MinhashSketch> = None;
    let mut sketches = SketchTable::new(1);
    let mut budget: Option<RowBudget> = None;
    for_each_row(function, query, |row| {
        let key = row.get::<i64>(1).ok().flatten().unwrap_or_else(|| {
            errors::null_not_allowed(format!("{function}: the key column has NULLs"))
        });
        // Every row has the column's type: checked once, with the first.
        if keys.is_empty() && without_sketch.is_empty() {
            let column_type = row.get_datum_by_ordinal(2).map(|c| c.oid());
            if !column_type.is_ok_and(|oid| type_is_named(oid, "minhash_sketch")) {
                errors::raise(
                    PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                    format!("{function}: the sketch column must be of type minhash_sketch"),
                );
            }
        }
        let sketch = row.get::<Minhash>(2).expect("a minhash_sketch column");
        let Some(Minhash(sketch)) = sketch else {
            return without_sketch.push(key);
        };
        let first = first.get_or_insert_with(|| {
            let m = sketch.num_hashes();
            sketches = SketchTable::new(m);
            budget = Some(RowBudget::maintenance(
                function,
                8 + SketchTable::bytes_per_row(m) + extra_bytes_per_row(m),
            )
            .on_citus(
                tbl,
                "The rows of a Citus table are read through the coordinator. minhash_pairs_distributed(tbl, key_column, sketch_column, threshold) pairs them on the workers.",
            ));
            sketch.clone()
        });
        // Sketches of one shape compare; only a different shape needs jaccard's message.
        let shape = |s: &MinhashSketch| (s.num_hashes(), s.features());
        if shape(first) != shape(&sketch) {
            if let Err(e) = jaccard(first, &sketch) {
                errors::invalid_parameter(format!(
                    "{function}: the sketch of key {key} cannot be compared with the others: {e}"
                ));
            }
        }
        let budget = budget.as_ref().expect("set with the first row");
        budget.admit(keys.len() + without_sketch.len() + 1);
        keys.push(key);
        sketches.push(sketch.values());
    });
    TableSketches {
        keys,
        sketches,
        without_sketch,
    }
}

/// The banding of `bands` and `rows` if both are given, else the one for the threshold.
pub(crate) fn chosen_banding(
    function: &str,
    threshold: f64,
    bands: Option<i32>,
    rows: Option<i32>,
    num_hashes: usize,
) -> Banding {
    match (bands, rows) {
        (None, None) => banding_for_threshold(function, threshold, num_hashes),
        (Some(b), Some(r)) => Banding::new(b.into(), r.into(), num_hashes)
            .unwrap_or_else(|e| errors::invalid_parameter(format!("{function}: {e}"))),
        _ => errors::invalid_parameter(format!(
            "{function}: give both bands and rows, or neither to choose them from the threshold"
        )),
    }
}

#[pg_extern(
    stable,
    parallel_restricted,
    sql = "
CREATE FUNCTION minhash_pairs(tbl regclass, key_column text, sketch_column text, threshold double precision,
                              bands integer DEFAULT NULL, \"rows\" integer DEFAULT NULL)
    RETURNS TABLE (a bigint, b bigint, jaccard double precision)
    STABLE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION minhash_pairs(regclass, text, text, double precision, integer, integer) IS
    'all pairs of rows whose minhash sketches share an LSH band and agree on at least threshold of their minvalues, each once, a < b';
"
)]
fn minhash_pairs(
    tbl: Option<pg_sys::Oid>,
    key_column: Option<&str>,
    sketch_column: Option<&str>,
    threshold: Option<f64>,
    bands: Option<i32>,
    rows: Option<i32>,
) -> TableIterator<'static, (name!(a, i64), name!(b, i64), name!(jaccard, f64))> {
    // NULL in any of the first four arguments returns nothing, as STRICT would.
    let (Some(tbl), Some(key_column), Some(sketch_column), Some(threshold)) =
        (tbl, key_column, sketch_column, threshold)
    else {
        return TableIterator::new(Vec::new());
    };
    if let Err(e) = neardup_core::search::lsh::check_threshold(threshold) {
        errors::invalid_parameter(format!("minhash_pairs: {e}"));
    }
    let relation = relation_name("minhash_pairs", tbl);
    check_integer_key("minhash_pairs", tbl, key_column);
    let query = format!(
        "SELECT {key}::bigint, {sig} FROM {relation} WHERE {sig} IS NOT NULL",
        key = quote_ident(key_column),
        sig = quote_ident(sketch_column),
    );
    let TableSketches { keys, sketches, .. } =
        read_sketches("minhash_pairs", tbl, &query, |_| BandPairs::bytes_per_row());
    if sketches.is_empty() {
        return TableIterator::new(Vec::new());
    }
    let banding = chosen_banding(
        "minhash_pairs",
        threshold,
        bands,
        rows,
        sketches.num_hashes(),
    );
    let pairs = BandPairs::new(sketches, banding, threshold)
        .unwrap_or_else(|e| errors::invalid_parameter(format!("minhash_pairs: {e}")));
    TableIterator::new(pairs.map(move |(i, j, estimate)| {
        let (x, y) = (keys[i as usize], keys[j as usize]);
        (x.min(y), x.max(y), estimate)
    }))
}
