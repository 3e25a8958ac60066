//! Duplicate clusters (Zhu et al.): connected components of near-duplicate pairs, or stars
//! around representatives (`method => 'representatives'`, which do not chain), of simhash
//! fingerprints or wide codes (`hash256`, `hash128`) within a Hamming distance or minhash
//! sketches above a Jaccard threshold,
//! with a deterministic label (the smallest id) and a representative chosen by priority. Neither
//! function holds the pairs: components are merged as the edges stream in, and
//! `neardup_clusters` links equal fingerprints by a sort and the others as the batch
//! search finds them (`neardup_core::clusters::components::near_duplicate_components`). What they do
//! hold, a few bytes per row, is bounded by `maintenance_work_mem`.

pub(crate) mod priority;

use crate::hamming_query::{wide_code_at, wide_code_type, wide_radius};
use crate::lsh::banding_for_threshold;
use crate::lsh::pairs::{read_sketches, TableSketches};
use crate::support::errors;
use crate::support::memory::RowBudget;
use crate::support::table_args::{
    check_integer_key, checked_distance, for_each_row, quote_ident, relation_name,
};
use neardup_core::clusters::components::{
    near_duplicate_components, near_duplicate_components_bytes_per_row, UnionFind,
};
use neardup_core::clusters::representatives::{
    greedy_representatives, MinhashNeighbors, SimhashNeighbors,
};
use neardup_core::search::lsh::{check_threshold, BandPairs};
use neardup_core::search::multi_index::MultiIndex;
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

/// The rows of a cluster-table output: (id, cluster label, is the representative).
type ClusterRows = TableIterator<
    'static,
    (
        name!(id, i64),
        name!(cluster_id, i64),
        name!(is_representative, bool),
    ),
>;

/// How `neardup_clusters` groups near-duplicates.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    /// Connected components of the near-duplicate pairs (which chain).
    Components,
    /// Stars: each member within the threshold of its representative
    /// (`neardup_core::clusters::representatives`).
    Representatives,
}

/// The method named `name`; NULL is the default, components.
fn method(function: &str, name: Option<&str>) -> Method {
    match name.unwrap_or("components") {
        "components" => Method::Components,
        "representatives" => Method::Representatives,
        other => errors::invalid_parameter(format!(
            "{function}: method must be 'components' or 'representatives', not '{other}'"
        )),
    }
}

/// `SELECT id, signature FROM table ORDER BY priority, id`, with the columns checked and
/// quoted; the signature as `signature_sql` writes it.
fn rows_in_priority_order(
    relation: &str,
    id_column: &str,
    signature_sql: &str,
    priority: Option<&str>,
) -> String {
    let id = quote_ident(id_column);
    let order = match priority {
        Some(p) => format!(
            "{}, {id}",
            priority::checked("neardup_clusters", relation, p)
        ),
        None => id.clone(),
    };
    format!("SELECT {id}::bigint, {signature_sql} FROM {relation} ORDER BY {order}")
}

/// The row in priority order that represents each row's component: its first.
fn first_of_each_component(components: &mut UnionFind, rows: usize) -> Vec<u32> {
    let mut first = vec![u32::MAX; rows];
    (0..rows as u32)
        .map(|r| {
            let root = components.find(r) as usize;
            if first[root] == u32::MAX {
                first[root] = r;
            }
            first[root]
        })
        .collect()
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
    simhash_clusters(
        tbl,
        id_column,
        signature_column,
        max_distance,
        priority,
        Method::Components,
    )
}

// A second function rather than a defaulted argument of the first: 0.3.0 databases have
// views over the five-argument one, which an upgrade cannot drop, and a default on both
// would make every call ambiguous.
#[pg_extern(sql = "
CREATE FUNCTION neardup_clusters(tbl regclass, id_column text, signature_column text,
                                 max_distance integer, priority text, method text)
    RETURNS TABLE (id bigint, cluster_id bigint, is_representative boolean)
    STABLE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION neardup_clusters(regclass, text, text, integer, text, text) IS
    'neardup_clusters with a method: ''components'' (the pairs'' connected components) or ''representatives'' (every member within max_distance of its representative)';
")]
fn neardup_clusters_by_method(
    tbl: Option<pg_sys::Oid>,
    id_column: Option<&str>,
    signature_column: Option<&str>,
    max_distance: Option<i32>,
    priority: Option<&str>,
    method: Option<&str>,
) -> TableIterator<
    'static,
    (
        name!(id, i64),
        name!(cluster_id, i64),
        name!(is_representative, bool),
    ),
> {
    let method = self::method("neardup_clusters", method);
    simhash_clusters(
        tbl,
        id_column,
        signature_column,
        max_distance,
        priority,
        method,
    )
}

fn simhash_clusters(
    tbl: Option<pg_sys::Oid>,
    id_column: Option<&str>,
    signature_column: Option<&str>,
    max_distance: Option<i32>,
    priority: Option<&str>,
    method: Method,
) -> ClusterRows {
    let (Some(tbl), Some(id_column), Some(signature_column), Some(max_distance)) =
        (tbl, id_column, signature_column, max_distance)
    else {
        errors::null_not_allowed("neardup_clusters: only priority may be NULL");
    };
    let relation = relation_name("neardup_clusters", tbl);
    check_integer_key("neardup_clusters", tbl, id_column);
    let wide = (id_column, signature_column, max_distance, priority, method);
    match wide_code_type(tbl, signature_column) {
        Some("hash256") => return wide_clusters::<4>(&relation, wide),
        Some("hash128") => return wide_clusters::<2>(&relation, wide),
        _ => {}
    }
    let max_distance = checked_distance("neardup_clusters", max_distance);
    let signature = format!("{}::bigint", quote_ident(signature_column));
    let query = rows_in_priority_order(&relation, id_column, &signature, priority);
    // Per row with a fingerprint: its id and fingerprint, then the search's working set,
    // which covers (with the fingerprint gone) its representative, label and output slot.
    // Rows without one are clusters of their own: only their id is kept.
    let working_set = match method {
        Method::Components => near_duplicate_components_bytes_per_row(),
        Method::Representatives => SimhashNeighbors::bytes_per_row(u32::MAX.into(), max_distance)
            .unwrap_or_else(|e| errors::invalid_parameter(e.0)),
    };
    let budget = RowBudget::maintenance("neardup_clusters", 8 + 8 + working_set).on_citus(
        tbl,
        "The rows of a Citus table are read through the coordinator. neardup_components('SELECT a, b FROM hamming_pairs_distributed(tbl, id_column, signature_column, max_distance)') gives the clusters of more than one row from pairs found on the workers.",
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
    let rows = ids.len();
    let representative = match method {
        Method::Components => {
            let mut components = near_duplicate_components(&fps, max_distance)
                .unwrap_or_else(|e| errors::invalid_parameter(e.0));
            drop(fps);
            first_of_each_component(&mut components, rows)
        }
        Method::Representatives => {
            let neighbors = SimhashNeighbors::new(fps, max_distance)
                .unwrap_or_else(|e| errors::invalid_parameter(e.0));
            greedy_representatives(rows, |r, emit| neighbors.emit(r, emit))
        }
    };
    cluster_rows(ids, alone, representative)
}

/// `neardup_clusters`' arguments beside the table: id and signature columns, distance,
/// priority, method.
type ClusterArgs<'a> = (&'a str, &'a str, i32, Option<&'a str>, Method);

/// `neardup_clusters` of a wide code column (`hash256`, `hash128`): the same clusters, at
/// any distance below the width, with the pairs and neighbours of multi-index hashing
/// (`neardup_core::search::multi_index`), which holds every code in memory.
fn wide_clusters<const W: usize>(
    relation: &str,
    (id_column, signature_column, max_distance, priority, method): ClusterArgs,
) -> ClusterRows {
    let radius = wide_radius::<W>("neardup_clusters", max_distance);
    let signature = format!("{}::bytea", quote_ident(signature_column));
    let query = rows_in_priority_order(relation, id_column, &signature, priority);
    // Per row with a code: its id and the multi-index's share (the code included), then the
    // union-find or the representatives, the labels and the output slot.
    let budget = RowBudget::maintenance(
        "neardup_clusters",
        8 + MultiIndex::<W>::bytes_per_row() + 16,
    );
    let (mut ids, mut codes, mut alone) = (Vec::new(), Vec::new(), Vec::new());
    for_each_row("neardup_clusters", &query, |row| {
        budget.admit(ids.len() + alone.len() + 1);
        let id = row.get::<i64>(1).ok().flatten().unwrap_or_else(|| {
            errors::null_not_allowed("neardup_clusters: the id column has NULLs")
        });
        match wide_code_at::<W>(row, 2) {
            Some(code) => {
                ids.push(id);
                codes.push(code);
            }
            None => alone.push(id),
        }
    });
    let rows = ids.len();
    let index = MultiIndex::new(codes, radius)
        .unwrap_or_else(|e| errors::invalid_parameter(format!("neardup_clusters: {e}")));
    let representative = match method {
        Method::Components => {
            let mut components = UnionFind::new(rows);
            for (a, b, _) in index.pairs() {
                components.union(a, b);
            }
            first_of_each_component(&mut components, rows)
        }
        Method::Representatives => greedy_representatives(rows, |r, emit| {
            index.search(&index.code(r), |member, _| emit(member))
        }),
    };
    cluster_rows(ids, alone, representative)
}

#[pg_extern(
    name = "neardup_clusters",
    sql = "
CREATE FUNCTION neardup_clusters(tbl regclass, id_column text, signature_column text,
                                 min_jaccard double precision, priority text DEFAULT NULL,
                                 method text DEFAULT 'components')
    RETURNS TABLE (id bigint, cluster_id bigint, is_representative boolean)
    STABLE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION neardup_clusters(regclass, text, text, double precision, text, text) IS
    'every row of the table with its cluster of minhash near-duplicates (pairs sharing an LSH band with a Jaccard estimate of at least min_jaccard, as minhash_pairs finds them), labelled by its smallest id, and whether it is the cluster''s representative; method ''components'' or ''representatives'' as for simhash';
"
)]
fn neardup_clusters_minhash(
    tbl: Option<pg_sys::Oid>,
    id_column: Option<&str>,
    signature_column: Option<&str>,
    min_jaccard: Option<f64>,
    priority: Option<&str>,
    method: Option<&str>,
) -> TableIterator<
    'static,
    (
        name!(id, i64),
        name!(cluster_id, i64),
        name!(is_representative, bool),
    ),
> {
    let (Some(tbl), Some(id_column), Some(signature_column), Some(min_jaccard)) =
        (tbl, id_column, signature_column, min_jaccard)
    else {
        errors::null_not_allowed("neardup_clusters: only priority may be NULL");
    };
    let method = self::method("neardup_clusters", method);
    if let Err(e) = check_threshold(min_jaccard) {
        errors::invalid_parameter(format!("neardup_clusters: {e}"));
    }
    let relation = relation_name("neardup_clusters", tbl);
    check_integer_key("neardup_clusters", tbl, id_column);
    let query = rows_in_priority_order(
        &relation,
        id_column,
        &quote_ident(signature_column),
        priority,
    );
    // Beside the id and sketch: the union-find and one band's sort, or every band's sort;
    // then the representative and output slot.
    let working_set = |num_hashes: usize| {
        let banding = banding_for_threshold("neardup_clusters", min_jaccard, num_hashes);
        8 + match method {
            Method::Components => 8 + BandPairs::bytes_per_row(),
            Method::Representatives => MinhashNeighbors::bytes_per_row(&banding),
        }
    };
    let TableSketches {
        keys,
        sketches,
        without_sketch,
    } = read_sketches("neardup_clusters", tbl, &query, working_set);
    let rows = keys.len();
    let representative = if rows == 0 {
        Vec::new()
    } else {
        let banding = banding_for_threshold("neardup_clusters", min_jaccard, sketches.num_hashes());
        match method {
            Method::Components => {
                let mut components = UnionFind::new(rows);
                let pairs = BandPairs::new(sketches, banding, min_jaccard)
                    .unwrap_or_else(|e| errors::invalid_parameter(e.0));
                for (a, b, _) in pairs {
                    components.union(a, b);
                }
                first_of_each_component(&mut components, rows)
            }
            Method::Representatives => {
                let neighbors = MinhashNeighbors::new(sketches, banding, min_jaccard);
                greedy_representatives(rows, |r, emit| neighbors.emit(r, emit))
            }
        }
    };
    cluster_rows(keys, without_sketch, representative)
}

/// The output of `neardup_clusters`: rows with a signature, each with its representative
/// (a row number), and rows without one (clusters of their own), all in id order; a
/// cluster's label is its smallest id. ERROR 23505 when an id repeats.
fn cluster_rows(ids: Vec<i64>, mut alone: Vec<i64>, representative: Vec<u32>) -> ClusterRows {
    let rows = ids.len();
    let mut label = vec![i64::MAX; rows];
    for (r, &rep) in representative.iter().enumerate() {
        label[rep as usize] = label[rep as usize].min(ids[r]);
    }
    let mut by_id: Vec<u32> = (0..rows as u32).collect();
    by_id.sort_unstable_by_key(|&r| ids[r as usize]);
    alone.sort_unstable();
    let clustered = by_id.into_iter().map(move |r| {
        let rep = representative[r as usize];
        (ids[r as usize], label[rep as usize], rep == r)
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
