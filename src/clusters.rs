//! Duplicate clusters (Zhu et al.): connected components of near-duplicate pairs, with a
//! deterministic label (the smallest id) and a representative chosen by priority. Neither
//! function holds the pairs: components are merged as the edges stream in, and
//! `neardup_clusters` links equal fingerprints by a sort and the others as the batch
//! search finds them (`neardup_core::components::near_duplicate_components`). What they do
//! hold, a few bytes per row, is bounded by `maintenance_work_mem`.

use crate::errors;
use crate::memory::RowBudget;
use crate::priority;
use crate::table_args::{checked_distance, for_each_row, quote_ident, relation_name};
use neardup_core::components::{
    near_duplicate_components, near_duplicate_components_bytes_per_row, UnionFind,
};
use pgrx::prelude::*;
use pgrx::spi::SpiHeapTupleData;
use pgrx::PgSqlErrorCode;
use std::collections::HashMap;

#[pg_extern(sql = "
CREATE FUNCTION neardup_components(edges_sql text)
    RETURNS TABLE (node bigint, component bigint)
    STRICT VOLATILE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION neardup_components(text) IS
    'connected components of the edges the query returns (its first two columns, of an integer type), labelled by their smallest node';
")]
fn neardup_components(
    edges_sql: &str,
) -> TableIterator<'static, (name!(node, i64), name!(component, i64))> {
    // Per node: its id, its map entry (with the map's spare room), the union-find, the output.
    let budget = RowBudget::maintenance("neardup_components", 8 + 2 * 16 + 8 + 16);
    let mut index_of: HashMap<i64, u32> = HashMap::new();
    let mut ids: Vec<i64> = Vec::new();
    let mut edges = UnionFind::new(0);
    let mut node = |id: i64, edges: &mut UnionFind| -> u32 {
        *index_of.entry(id).or_insert_with(|| {
            budget.admit(ids.len() + 1);
            ids.push(id);
            edges.push()
        })
    };
    // The query runs as given (SPI refuses anything but one query returning rows).
    for_each_row("neardup_components", edges_sql, |row| {
        let (Some(a), Some(b)) = (integer_at(row, 1), integer_at(row, 2)) else {
            return;
        };
        let (a, b) = (node(a, &mut edges), node(b, &mut edges));
        edges.union(a, b);
    });
    let mut order: Vec<u32> = (0..ids.len() as u32).collect();
    order.sort_unstable_by_key(|&i| ids[i as usize]);
    // Walking nodes by id, a component's first node is its smallest.
    let mut smallest: HashMap<u32, i64> = HashMap::new();
    let out: Vec<(i64, i64)> = order
        .into_iter()
        .map(|i| {
            let id = ids[i as usize];
            (id, *smallest.entry(edges.find(i)).or_insert(id))
        })
        .collect();
    TableIterator::new(out)
}

/// Column `ordinal` of an edge: an integer of any width, else ERROR 42804 (a fraction would
/// otherwise be rounded into another node).
fn integer_at(row: &SpiHeapTupleData, ordinal: usize) -> Option<i64> {
    let column = row.get_datum_by_ordinal(ordinal).unwrap_or_else(|_| {
        errors::raise(
            PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            "neardup_components: the edges query must return two columns".into(),
        )
    });
    let value = match column.oid() {
        pg_sys::INT8OID => column.value::<i64>(),
        pg_sys::INT4OID => column.value::<i32>().map(|v| v.map(i64::from)),
        pg_sys::INT2OID => column.value::<i16>().map(|v| v.map(i64::from)),
        other => errors::raise(
            PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            format!(
                "neardup_components: column {ordinal} of the edges query is of type {}, not an integer type",
                type_name(other)
            ),
        ),
    };
    value.ok().flatten()
}

fn type_name(oid: pg_sys::Oid) -> String {
    // SAFETY: format_type_be returns a palloc'd name for any OID.
    unsafe { std::ffi::CStr::from_ptr(pg_sys::format_type_be(oid)) }
        .to_string_lossy()
        .into_owned()
}

#[pg_extern(sql = "
CREATE FUNCTION neardup_clusters(tbl regclass, id_column text, signature_column text,
                                 max_distance integer, priority text DEFAULT NULL)
    RETURNS TABLE (id bigint, cluster_id bigint, is_representative boolean)
    STABLE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION neardup_clusters(regclass, text, text, integer, text) IS
    'every row of the table with its cluster (smallest id among rows linked by near-duplicate pairs) and whether it is the cluster''s representative (first by priority, else smallest id)';
")]
fn neardup_clusters(
    tbl: Option<pg_sys::Oid>,
    id_column: Option<&str>,
    signature_column: Option<&str>,
    max_distance: Option<i32>,
    priority: Option<&str>,
) -> TableIterator<
    'static,
    (
        name!(id, i64),
        name!(cluster_id, i64),
        name!(is_representative, bool),
    ),
> {
    let (Some(tbl), Some(id_column), Some(signature_column), Some(max_distance)) =
        (tbl, id_column, signature_column, max_distance)
    else {
        errors::null_not_allowed("neardup_clusters: only priority may be NULL");
    };
    let max_distance = checked_distance("neardup_clusters", max_distance);
    let relation = relation_name("neardup_clusters", tbl);
    let id = quote_ident(id_column);
    let order = match priority {
        Some(p) => format!(
            "{}, {id}",
            priority::checked("neardup_clusters", &relation, p)
        ),
        None => id.clone(),
    };
    // Rows in priority order: the first row of a cluster is its representative.
    let query = format!(
        "SELECT {id}::bigint, {sig}::bigint FROM {relation} ORDER BY {order}",
        sig = quote_ident(signature_column)
    );
    // Per row with a fingerprint: its id and fingerprint, then the components' working set,
    // then (with the fingerprint gone) its root, label, representative and output slot.
    // Rows without one are clusters of their own: only their id is kept.
    let budget = RowBudget::maintenance(
        "neardup_clusters",
        8 + 8 + near_duplicate_components_bytes_per_row(),
    );
    let (mut ids, mut fps, mut alone) = (Vec::new(), Vec::new(), Vec::new());
    for_each_row("neardup_clusters", &query, |row| {
        budget.admit(ids.len() + alone.len() + 1);
        let id = row.get::<i64>(1).ok().flatten().unwrap_or_else(|| {
            errors::null_not_allowed("neardup_clusters: the id column has NULLs")
        });
        match row.get::<i64>(2).ok().flatten() {
            Some(fp) => {
                ids.push(id);
                fps.push(fp as u64);
            }
            None => alone.push(id),
        }
    });
    let mut components = near_duplicate_components(&fps, max_distance)
        .unwrap_or_else(|e| errors::invalid_parameter(e.0));
    drop(fps);
    // Per component root: its smallest id and its first row in priority order.
    let rows = ids.len();
    let mut label = vec![i64::MAX; rows];
    let mut representative = vec![u32::MAX; rows];
    let roots: Vec<u32> = (0..rows as u32).map(|r| components.find(r)).collect();
    drop(components);
    for (r, &root) in roots.iter().enumerate() {
        let root = root as usize;
        label[root] = label[root].min(ids[r]);
        if representative[root] == u32::MAX {
            representative[root] = r as u32;
        }
    }
    let mut by_id: Vec<u32> = (0..rows as u32).collect();
    by_id.sort_unstable_by_key(|&r| ids[r as usize]);
    alone.sort_unstable();
    let clustered = by_id.into_iter().map(move |r| {
        let root = roots[r as usize] as usize;
        (ids[r as usize], label[root], representative[root] == r)
    });
    let alone = alone.into_iter().map(|id| (id, id, true));
    let mut previous = None;
    TableIterator::new(merge_by_id(clustered, alone).inspect(move |&(id, _, _)| {
        if previous == Some(id) {
            errors::raise_with_hint(
                PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
                format!("neardup_clusters: id {id} appears more than once in the id column"),
                "Cluster by a column with unique values, such as the primary key.",
            );
        }
        previous = Some(id);
    }))
}

/// Two streams of rows sorted by id, as one.
fn merge_by_id(
    a: impl Iterator<Item = (i64, i64, bool)>,
    b: impl Iterator<Item = (i64, i64, bool)>,
) -> impl Iterator<Item = (i64, i64, bool)> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if y.0 < x.0 => b.next(),
        (Some(_), _) => a.next(),
        (None, _) => b.next(),
    })
}
