//! Duplicate clusters (Zhu et al.): connected components of near-duplicate pairs, with a
//! deterministic label (the smallest id) and a representative chosen by priority.

use crate::errors;
use crate::table_args::{checked_distance, quote_ident, relation_name};
use neardup_core::components::UnionFind;
use neardup_core::permuted::all_pairs;
use pgrx::prelude::*;

#[pg_extern(sql = "
CREATE FUNCTION neardup_components(edges_sql text)
    RETURNS TABLE (node bigint, component bigint)
    STRICT VOLATILE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
COMMENT ON FUNCTION neardup_components(text) IS
    'connected components of the edges the query returns (its first two columns), labelled by their smallest node';
")]
fn neardup_components(
    edges_sql: &str,
) -> TableIterator<'static, (name!(node, i64), name!(component, i64))> {
    let query = format!("SELECT a::bigint, b::bigint FROM ({edges_sql}) AS edges (a, b) WHERE a IS NOT NULL AND b IS NOT NULL");
    let edges: Vec<(i64, i64)> = Spi::connect(|client| {
        let rows = client
            .select(query.as_str(), None, &[])
            .unwrap_or_else(|e| error!("neardup_components: {e}"));
        rows.map(|row| {
            (
                row.get::<i64>(1).ok().flatten().unwrap_or(0),
                row.get::<i64>(2).ok().flatten().unwrap_or(0),
            )
        })
        .collect()
    });
    // Dense indices in id order, so the smallest index of a component is its smallest id.
    let mut nodes: Vec<i64> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let index_of = |id: i64| nodes.binary_search(&id).expect("an endpoint") as u32;
    let mut components = UnionFind::new(nodes.len());
    for &(a, b) in &edges {
        components.union(index_of(a), index_of(b));
    }
    let smallest = components.smallest_members();
    TableIterator::new(
        nodes
            .clone()
            .into_iter()
            .zip(smallest)
            .map(move |(node, s)| (node, nodes[s as usize])),
    )
}

#[pg_extern(sql = "
CREATE FUNCTION neardup_clusters(tbl regclass, id_column text, signature_column text,
                                 max_distance integer, priority text DEFAULT NULL)
    RETURNS TABLE (id bigint, cluster_id bigint, is_representative boolean)
    VOLATILE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
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
    let max_distance = checked_distance(max_distance);
    let relation = relation_name("neardup_clusters", tbl);
    let id = quote_ident(id_column);
    let order = match priority {
        Some(p) => format!("{p}, {id}"),
        None => id.clone(),
    };
    // Rows in priority order: the first row of a cluster is its representative.
    let query = format!(
        "SELECT {id}::bigint, {sig}::bigint FROM {relation} ORDER BY {order}",
        sig = quote_ident(signature_column)
    );
    let rows: Vec<(i64, Option<i64>)> = Spi::connect(|client| {
        let table = client
            .select(query.as_str(), None, &[])
            .unwrap_or_else(|e| error!("neardup_clusters: {e}"));
        table
            .map(|row| {
                let key = row.get::<i64>(1).ok().flatten().unwrap_or_else(|| {
                    errors::null_not_allowed("neardup_clusters: the id column has NULLs")
                });
                (key, row.get::<i64>(2).ok().flatten())
            })
            .collect()
    });
    let signed: Vec<u32> = (0..rows.len() as u32)
        .filter(|&r| rows[r as usize].1.is_some())
        .collect();
    let fps: Vec<u64> = signed
        .iter()
        .map(|&r| rows[r as usize].1.expect("signed") as u64)
        .collect();
    let pairs = all_pairs(&fps, max_distance).unwrap_or_else(|e| errors::invalid_parameter(e.0));
    let mut components = UnionFind::new(rows.len());
    for (a, b, _) in pairs {
        components.union(signed[a as usize], signed[b as usize]);
    }
    // Per component root: its smallest id and its first row in priority order.
    let mut label = std::collections::HashMap::new();
    let mut representative = std::collections::HashMap::new();
    for (r, &(id, _)) in rows.iter().enumerate() {
        let root = components.find(r as u32);
        label
            .entry(root)
            .and_modify(|s: &mut i64| *s = (*s).min(id))
            .or_insert(id);
        representative.entry(root).or_insert(r);
    }
    let mut out: Vec<(i64, i64, bool)> = rows
        .iter()
        .enumerate()
        .map(|(r, &(id, _))| {
            let root = components.find(r as u32);
            (id, label[&root], representative[&root] == r)
        })
        .collect();
    out.sort_unstable();
    TableIterator::new(out)
}
