//! The queries that carry out a statement's cluster maintenance. Inputs are read with one
//! query per step, the decisions come from `neardup_core::clusters::cluster_plans`, and the writes
//! go back as set-based statements over arrays.
//!
//! The cluster table has the columns `(id bigint PRIMARY KEY, cluster_id bigint NOT NULL,
//! is_representative boolean NOT NULL)` and an index on `cluster_id`.
//!
//! Neighbours are searched with the condition `near` writes: `sig <@ hamming_ball(x, k)`
//! for simhash and wide codes, served by a `hamming` index; for minhash `lsh_bands(sig, t)
//! && lsh_bands(x, t) AND jaccard(sig, x) >= t`, served by a GIN index on the expression
//! `lsh_bands(sig, t)` (with `t` written as the trigger's threshold is). Without the index
//! every statement compares its rows with the whole table.

use super::{Method, Signatures, Threshold, TrackingArgs, ADVISORY_LOCK_SPACE};
use crate::hamming_query::wide_code_at;
use crate::shingling::Minhash;
use crate::support::errors;
use neardup_core::clusters::cluster_plans::{
    plan_insert, plan_representatives, plan_split, plan_split_minhash, plan_split_wide, Neighbor,
};
use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::spi::{OwnedPreparedStatement, SpiClient, SpiHeapTupleData, SpiTupleTable};
use pgrx::PgOid;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

/// Rows of a transition table: all of them, or those with the given ids; or rows of the
/// clustered table itself, by id.
pub enum Rows {
    All(String),
    Only(String, Vec<i64>),
    Table(Vec<i64>),
}

pub struct Maintainer {
    table: String,
    clusters: String,
    /// The extension's schema, quoted: the queries name its operator and functions through
    /// it, so they work under any search_path.
    schema: String,
    args: TrackingArgs,
}

impl Maintainer {
    /// Checks the arguments, resolves the names, and takes the lock that serializes cluster
    /// maintenance per cluster table until the transaction ends — in one query, as a
    /// single-row INSERT pays for every query its trigger runs.
    pub fn open(client: &mut SpiClient<'_>, table: pg_sys::Oid, args: &[String]) -> Maintainer {
        // SAFETY: reading a backend-local global set at transaction start.
        if unsafe { pg_sys::XactIsoLevel } >= pg_sys::XACT_REPEATABLE_READ as i32 {
            errors::raise_with_hint(
                pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                "neardup_track_clusters needs READ COMMITTED isolation".into(),
                "Under REPEATABLE READ or SERIALIZABLE a concurrent session's near-duplicates \
                 would stay invisible and clusters that should merge would not.",
            );
        }
        TrackingArgs::check_count(args);
        // The fifth column: the name of the signature column's type when it is one of the
        // extension's (or a domain over one, at any depth), which says how the threshold is
        // read and the signatures compared. In this query, not through the syscache, so a
        // single-row INSERT pays no catalog lookups of its own for it.
        let row = select(
            client,
            "SELECT c.oid::regclass::text, $2::oid::regclass::text,
                    (SELECT quote_ident(n.nspname) FROM pg_extension e
                     JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'neardup'),
                    pg_advisory_xact_lock($3, (c.oid::bigint - CASE WHEN c.oid::bigint > 2147483647
                                                             THEN 4294967296 ELSE 0 END)::int)::text,
                    (WITH RECURSIVE chain (oid, base) AS (
                         SELECT ty.oid, ty.typbasetype FROM pg_attribute a
                         JOIN pg_type ty ON ty.oid = a.atttypid
                         WHERE a.attrelid = $2 AND a.attname = $4 AND NOT a.attisdropped
                         UNION ALL
                         SELECT b.oid, b.typbasetype FROM chain JOIN pg_type b ON b.oid = chain.base)
                     SELECT ty.typname::text FROM chain
                     JOIN pg_type ty ON ty.oid = chain.oid
                     JOIN pg_extension e ON e.extname = 'neardup' AND e.extnamespace = ty.typnamespace
                     WHERE chain.base = 0)
             FROM (SELECT to_regclass($1)::oid AS oid) c",
            &[
                args[0].as_str().into(),
                table.into(),
                ADVISORY_LOCK_SPACE.into(),
                args[2].as_str().into(),
            ],
        )
        .first();
        let signatures = match row.get::<String>(5).ok().flatten().as_deref() {
            Some("minhash_sketch") => Signatures::Sketches,
            Some("hash256") => Signatures::Wide(4),
            Some("hash128") => Signatures::Wide(2),
            _ => Signatures::Fingerprints,
        };
        let args = TrackingArgs::parse(args, signatures);
        let Ok(Some(clusters)) = row.get::<String>(1) else {
            errors::invalid_parameter(format!(
                "neardup_track_clusters: cluster table \"{}\" does not exist",
                args.clusters
            ));
        };
        let table = row
            .get::<String>(2)
            .ok()
            .flatten()
            .expect("the trigger's table");
        let mut args = args;
        args.priority = args.priority.map(|p| checked_priority(&table, &p));
        Maintainer {
            clusters,
            table,
            schema: row.get::<String>(3).ok().flatten().unwrap_or_else(|| {
                error!("neardup_track_clusters: the neardup extension is not installed")
            }),
            args,
        }
    }

    pub fn truncate(&self, client: &mut SpiClient<'_>) {
        run(client, &format!("TRUNCATE {}", self.clusters), &[]);
    }

    /// The condition that the signature `indexed` (a column of the clustered table, which
    /// its index serves) is within the threshold of `probe`. NULL when either is NULL.
    fn near(&self, indexed: &str, probe: &str) -> String {
        near_condition(&self.schema, self.args.threshold, indexed, probe)
    }

    /// Whether two signatures are the same (both NULL included).
    fn same_signature(&self, a: &str, b: &str) -> String {
        let cast = match self.args.signatures {
            Signatures::Fingerprints => "bigint",
            Signatures::Wide(_) => "bytea",
            Signatures::Sketches => "text",
        };
        format!("{a}::{cast} IS NOT DISTINCT FROM {b}::{cast}")
    }

    pub fn insert(&self, client: &mut SpiClient<'_>, rows: &Rows) {
        match self.args.method {
            Method::Components => self.insert_components(client, rows),
            Method::Representatives => self.insert_stars(client, rows),
        }
    }

    pub fn delete(&self, client: &mut SpiClient<'_>, rows: &Rows) {
        match self.args.method {
            Method::Components => self.delete_components(client, rows),
            Method::Representatives => self.delete_stars(client, rows),
        }
    }

    pub fn update(&self, client: &mut SpiClient<'_>, old: &str, new: &str) {
        match self.args.method {
            Method::Components => self.update_components(client, old, new),
            Method::Representatives => self.update_stars(client, old, new),
        }
    }

    /// New rows join the clusters of their near-duplicates, merging the clusters they bridge.
    fn insert_components(&self, client: &mut SpiClient<'_>, rows: &Rows) {
        let source = self.source(rows);
        let links_query = format!(
            "SELECT s.id, t.{id}::bigint, c.cluster_id
             FROM ({source}) s
             LEFT JOIN {table} t ON {near} AND t.{id}::bigint <> s.id
             LEFT JOIN {clusters} c ON c.id = t.{id}",
            id = self.args.id,
            near = self.near(&format!("t.{}", self.args.signature), "s.fp"),
            table = self.table,
            clusters = self.clusters,
        );
        // One row per (new row, neighbour); a new row without neighbours comes once with
        // a NULL neighbour.
        let mut new_rows = Vec::new();
        let mut links: Vec<(i64, Neighbor)> = Vec::new();
        for row in select(client, &links_query, &[filter_arg(rows)]) {
            let new = self.id_of(row.get::<i64>(1));
            new_rows.push(new);
            let Some(other) = row.get::<i64>(2).ok().flatten() else {
                continue;
            };
            links.push(match row.get::<i64>(3).ok().flatten() {
                Some(label) => (new, Neighbor::Cluster(label)),
                None => (new, Neighbor::NewRow(other)),
            });
        }
        // A neighbour in no cluster and not new was never tracked: cluster it now, so every
        // label stays the id of a member.
        new_rows.extend(links.iter().filter_map(|&(_, n)| match n {
            Neighbor::NewRow(id) => Some(id),
            Neighbor::Cluster(_) => None,
        }));
        new_rows.sort_unstable();
        new_rows.dedup();
        let plan = plan_insert(&new_rows, &links);
        if !plan.relabel.is_empty() {
            let (old, new): (Vec<i64>, Vec<i64>) = plan.relabel.into_iter().unzip();
            self.set_labels(client, "cluster_id", old, new);
        }
        // A row alone in its cluster is its representative without asking for priorities.
        self.insert_members(client, plan.members);
        self.choose_representatives(client, plan.touched);
    }

    /// Stars: the new rows, in priority order, join the first representative within the
    /// threshold of them or become representatives (`plan_representatives`).
    fn insert_stars(&self, client: &mut SpiClient<'_>, rows: &Rows) {
        let source = self.source(rows);
        // Only representatives and rows in no cluster (the new ones) can be chosen; a new
        // row comes once with NULLs when it has no such neighbour.
        let links_query = format!(
            "SELECT s.id, n.id, n.cluster_id, n.is_representative
             FROM ({source}) s
             LEFT JOIN LATERAL (
                 SELECT t.{id}::bigint AS id, c.cluster_id, c.is_representative
                 FROM {table} t LEFT JOIN {clusters} c ON c.id = t.{id}
                 WHERE {near} AND t.{id}::bigint <> s.id
                   AND (c.is_representative OR c.id IS NULL)) n ON true",
            id = self.args.id,
            near = self.near(&format!("t.{}", self.args.signature), "s.fp"),
            table = self.table,
            clusters = self.clusters,
        );
        let mut new_rows = Vec::new();
        let mut links = Vec::new();
        let mut representatives = Vec::new();
        for row in select(client, &links_query, &[filter_arg(rows)]) {
            let new = self.id_of(row.get::<i64>(1));
            new_rows.push(new);
            let Some(other) = row.get::<i64>(2).ok().flatten() else {
                continue;
            };
            if row.get::<bool>(4).ok().flatten() == Some(true) {
                let label = row.get::<i64>(3).ok().flatten().expect("a clustered row");
                representatives.push((other, label));
            }
            links.push((new, other));
        }
        if new_rows.is_empty() {
            return;
        }
        new_rows.sort_unstable();
        new_rows.dedup();
        representatives.sort_unstable();
        representatives.dedup();
        // The priority order of the rows that may be chosen; with no links there is no
        // choice to make.
        let order: Vec<i64> = if links.is_empty() {
            Vec::new()
        } else {
            let mut involved = new_rows.clone();
            involved.extend(representatives.iter().map(|r| r.0));
            let order = match &self.args.priority {
                Some(p) => format!("{p}, {}", self.args.id),
                None => self.args.id.clone(),
            };
            select(
                client,
                &format!(
                    "SELECT {id}::bigint FROM {table} WHERE {id} = ANY($1) ORDER BY {order}",
                    id = self.args.id,
                    table = self.table
                ),
                &[involved.into()],
            )
            .map(|row| self.id_of(row.get::<i64>(1)))
            .collect()
        };
        let plan = plan_representatives(&order, &new_rows, &representatives, &links);
        if !plan.relabel.is_empty() {
            let (old, new): (Vec<i64>, Vec<i64>) = plan.relabel.into_iter().unzip();
            self.set_labels(client, "cluster_id", old, new);
        }
        self.insert_members(client, plan.members);
    }

    fn insert_members(&self, client: &mut SpiClient<'_>, members: Vec<(i64, i64, bool)>) {
        let mut ids = Vec::with_capacity(members.len());
        let mut labels = Vec::with_capacity(members.len());
        let mut flags = Vec::with_capacity(members.len());
        for (id, label, flag) in members {
            ids.push(id);
            labels.push(label);
            flags.push(flag);
        }
        run(
            client,
            &format!(
                "INSERT INTO {} (id, cluster_id, is_representative)
                 SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::boolean[])",
                self.clusters
            ),
            &[ids.into(), labels.into(), flags.into()],
        );
    }

    /// Stars: a deleted member leaves its cluster, which keeps its smallest remaining id as
    /// label; the members of a deleted representative are taken out and inserted again.
    fn delete_stars(&self, client: &mut SpiClient<'_>, rows: &Rows) {
        let mut orphaned = BTreeSet::new();
        let mut shrunk = BTreeSet::new();
        for row in select(
            client,
            &format!(
                "DELETE FROM {clusters} c USING ({source}) s WHERE c.id = s.id
                 RETURNING c.cluster_id, c.is_representative",
                clusters = self.clusters,
                source = self.source(rows)
            ),
            &[filter_arg(rows)],
        ) {
            let Some(label) = row.get::<i64>(1).ok().flatten() else {
                continue;
            };
            if row.get::<bool>(2).ok().flatten() == Some(true) {
                orphaned.insert(label);
            } else {
                shrunk.insert(label);
            }
        }
        let shrunk: Vec<i64> = shrunk.difference(&orphaned).copied().collect();
        if !shrunk.is_empty() {
            run(
                client,
                &format!(
                    "UPDATE {clusters} c SET cluster_id = m.smallest
                     FROM (SELECT cluster_id, min(id) AS smallest FROM {clusters}
                           WHERE cluster_id = ANY($1) GROUP BY cluster_id) m
                     WHERE c.cluster_id = m.cluster_id AND c.cluster_id = ANY($1)
                       AND m.smallest <> m.cluster_id",
                    clusters = self.clusters
                ),
                &[shrunk.into()],
            );
        }
        if orphaned.is_empty() {
            return;
        }
        let orphaned: Vec<i64> = orphaned.into_iter().collect();
        let orphans: Vec<i64> = select(
            client,
            &format!(
                "DELETE FROM {} WHERE cluster_id = ANY($1) RETURNING id",
                self.clusters
            ),
            &[orphaned.into()],
        )
        .map(|row| self.id_of(row.get::<i64>(1)))
        .collect();
        if !orphans.is_empty() {
            self.insert_stars(client, &Rows::Table(orphans));
        }
    }

    /// The statement's old and new rows as queries, the ids only the old rows have (gone)
    /// and the ids only the new rows have (to search like new rows).
    fn ids_changed(
        &self,
        client: &mut SpiClient<'_>,
        old: &str,
        new: &str,
    ) -> (String, String, Vec<i64>, Vec<i64>) {
        let old_all = self.source(&Rows::All(old.to_string()));
        let new_all = self.source(&Rows::All(new.to_string()));
        let mut only_in = |a: &str, b: &str| -> Vec<i64> {
            select(
                client,
                &format!("SELECT id FROM ({a}) x EXCEPT SELECT id FROM ({b}) y"),
                &[],
            )
            .map(|row| self.id_of(row.get::<i64>(1)))
            .collect()
        };
        let gone = only_in(&old_all, &new_all);
        let searched = only_in(&new_all, &old_all);
        (old_all, new_all, gone, searched)
    }

    /// Stars: a row whose signature or id changed is deleted and inserted again; other
    /// changes, the priority's included, leave the clusters as they are.
    fn update_stars(&self, client: &mut SpiClient<'_>, old: &str, new: &str) {
        let (old_all, new_all, mut gone, mut searched) = self.ids_changed(client, old, new);
        let kept_query = format!(
            "SELECT n.id, c.id IS NOT NULL, {same}
             FROM ({new_all}) n JOIN ({old_all}) o USING (id)
             LEFT JOIN {clusters} c ON c.id = n.id",
            same = self.same_signature("o.fp", "n.fp"),
            clusters = self.clusters,
        );
        for row in select(client, &kept_query, &[]) {
            let id = self.id_of(row.get::<i64>(1));
            let clustered = row.get::<bool>(2).ok().flatten() == Some(true);
            let unchanged = row.get::<bool>(3).ok().flatten() == Some(true);
            if !clustered {
                searched.push(id);
            } else if !unchanged {
                // Kept ids are in both tables: the old one names it for the delete.
                gone.push(id);
                searched.push(id);
            }
        }
        if !gone.is_empty() {
            self.delete_stars(client, &Rows::Only(old.to_string(), gone));
        }
        if !searched.is_empty() {
            self.insert_stars(client, &Rows::Only(new.to_string(), searched));
        }
    }

    /// Rows leave their clusters; what remains of each cluster is split into the parts
    /// that are still connected.
    fn delete_components(&self, client: &mut SpiClient<'_>, rows: &Rows) {
        let labels: BTreeSet<i64> = select(
            client,
            &format!(
                "DELETE FROM {clusters} c USING ({source}) s WHERE c.id = s.id RETURNING c.cluster_id",
                clusters = self.clusters,
                source = self.source(rows)
            ),
            &[filter_arg(rows)],
        )
        .filter_map(|row| row.get::<i64>(1).ok().flatten())
        .collect();
        if labels.is_empty() {
            return;
        }
        let labels: Vec<i64> = labels.into_iter().collect();
        let parts = match (self.args.signatures, self.args.threshold) {
            (Signatures::Fingerprints, Threshold::Hamming(k)) => self
                .members_by_cluster(client, labels, "::bigint", |row| {
                    row.get::<i64>(3).ok().flatten().map(|fp| fp as u64)
                })
                .map(|(label, rows)| (label, plan_split(&rows, k)))
                .collect(),
            (Signatures::Wide(4), Threshold::Hamming(k)) => self.split_wide::<4>(client, labels, k),
            (Signatures::Wide(_), Threshold::Hamming(k)) => self.split_wide::<2>(client, labels, k),
            (_, threshold) => {
                let Threshold::Jaccard(t) = threshold else {
                    unreachable!("sketches have a Jaccard threshold")
                };
                let banding = |m| crate::lsh::banding_for_threshold("neardup_track_clusters", t, m);
                self.members_by_cluster(client, labels, "", |row| {
                    let sketch = row.get::<Minhash>(3).ok().flatten();
                    sketch.map(|Minhash(s)| s.values().to_vec())
                })
                .map(|(label, rows)| {
                    let parts = plan_split_minhash(&rows, t, banding).unwrap_or_else(|e| {
                        errors::invalid_parameter(format!("neardup_track_clusters: {e}"))
                    });
                    (label, parts)
                })
                .collect::<Vec<_>>()
            }
        };
        let (mut moved, mut moved_to, mut remaining) = (Vec::new(), Vec::new(), Vec::new());
        for (label, split) in parts {
            for (id, part) in split {
                if part != label {
                    moved.push(id);
                    moved_to.push(part);
                }
                remaining.push(part);
            }
        }
        if !moved.is_empty() {
            self.set_labels(client, "id", moved, moved_to);
        }
        remaining.sort_unstable();
        remaining.dedup();
        self.choose_representatives(client, remaining);
    }

    /// The members of the clusters `labels` (id and signature, the clustered table's column
    /// with `cast` after it, read by `read`), grouped by cluster.
    fn members_by_cluster<S>(
        &self,
        client: &mut SpiClient<'_>,
        labels: Vec<i64>,
        cast: &str,
        read: impl Fn(&SpiHeapTupleData) -> Option<S>,
    ) -> impl Iterator<Item = (i64, Vec<(i64, Option<S>)>)> {
        let query = format!(
            "SELECT c.cluster_id, c.id, t.{sig}{cast} FROM {clusters} c JOIN {table} t ON t.{id} = c.id
             WHERE c.cluster_id = ANY($1)",
            sig = self.args.signature,
            id = self.args.id,
            clusters = self.clusters,
            table = self.table
        );
        let mut members: BTreeMap<i64, Vec<(i64, Option<S>)>> = BTreeMap::new();
        for row in select(client, &query, &[labels.into()]) {
            let label = self.id_of(row.get::<i64>(1));
            let id = self.id_of(row.get::<i64>(2));
            members.entry(label).or_default().push((id, read(&row)));
        }
        members.into_iter()
    }

    /// What the clusters `labels` of `W`-word codes fall into (see `plan_split_wide`).
    fn split_wide<const W: usize>(
        &self,
        client: &mut SpiClient<'_>,
        labels: Vec<i64>,
        max_distance: u32,
    ) -> Vec<(i64, Vec<(i64, i64)>)> {
        self.members_by_cluster(client, labels, "::bytea", |row| wide_code_at::<W>(row, 3))
            .map(|(label, rows)| {
                let parts = plan_split_wide(&rows, max_distance)
                    .expect("a distance the cluster table was created with");
                (label, parts)
            })
            .collect()
    }

    /// Updated rows: a changed id is a delete and an insert. A row whose signature changed
    /// stays in its cluster when the new signature is still within the distance of the
    /// cluster's representative (tier 1, no search); otherwise it leaves its cluster and is
    /// searched for like a new row (tier 2).
    fn update_components(&self, client: &mut SpiClient<'_>, old: &str, new: &str) {
        let (old_all, new_all, gone, mut searched) = self.ids_changed(client, old, new);
        if !gone.is_empty() {
            self.delete(client, &Rows::Only(old.to_string(), gone));
        }
        // Rows kept by id, with both signatures, their cluster, and the representative's
        // signature (its old one when the row is the representative itself).
        let kept_query = format!(
            "SELECT n.id, c.cluster_id,
                    CASE WHEN c.is_representative THEN {near_old} ELSE {near_representative} END,
                    EXISTS (SELECT 1 FROM {clusters} c2 WHERE c2.cluster_id = c.cluster_id AND c2.id <> c.id),
                    {same}
             FROM ({new_all}) n JOIN ({old_all}) o USING (id)
             LEFT JOIN {clusters} c ON c.id = n.id
             LEFT JOIN {clusters} r ON r.cluster_id = c.cluster_id AND r.is_representative
             LEFT JOIN {table} rt ON rt.{id} = r.id",
            near_old = self.near("o.fp", "n.fp"),
            near_representative = self.near(&format!("rt.{}", self.args.signature), "n.fp"),
            same = self.same_signature("o.fp", "n.fp"),
            id = self.args.id,
            clusters = self.clusters,
            table = self.table,
        );
        let mut stayed = Vec::new();
        let mut leaving = Vec::new();
        for row in select(client, &kept_query, &[]) {
            let id = self.id_of(row.get::<i64>(1));
            let clustered = row.get::<i64>(2).ok().flatten().is_some();
            let near_representative = row.get::<bool>(3).ok().flatten() == Some(true);
            let has_company = row.get::<bool>(4).ok().flatten() == Some(true);
            let unchanged = row.get::<bool>(5).ok().flatten() == Some(true);
            if !clustered {
                searched.push(id);
            } else if unchanged || (has_company && near_representative) {
                stayed.push(id);
            } else {
                leaving.push(id);
            }
        }
        if !leaving.is_empty() {
            self.delete(client, &Rows::Only(new.to_string(), leaving.clone()));
        }
        searched.extend(leaving);
        if !searched.is_empty() {
            self.insert(client, &Rows::Only(new.to_string(), searched));
        }
        if !stayed.is_empty() {
            // The priority may read columns the update changed.
            let labels: Vec<i64> = select(
                client,
                &format!(
                    "SELECT DISTINCT cluster_id FROM {} WHERE id = ANY($1)",
                    self.clusters
                ),
                &[stayed.into()],
            )
            .filter_map(|row| row.get::<i64>(1).ok().flatten())
            .collect();
            self.choose_representatives(client, labels);
        }
    }

    /// Gives the rows whose `key` column (`id` or `cluster_id`) holds `keys[i]` the label
    /// `labels[i]`. The `= ANY` condition lets the planner use the key's index whatever it
    /// thinks of the unnest's size.
    fn set_labels(&self, client: &mut SpiClient<'_>, key: &str, keys: Vec<i64>, labels: Vec<i64>) {
        run(
            client,
            &format!(
                "UPDATE {} c SET cluster_id = m.label FROM unnest($1::bigint[], $2::bigint[]) AS m(key, label)
                 WHERE c.{key} = m.key AND c.{key} = ANY($1)",
                self.clusters
            ),
            &[keys.into(), labels.into()],
        );
    }

    /// Marks the first member of each cluster by priority (then id) as its representative.
    fn choose_representatives(&self, client: &mut SpiClient<'_>, labels: Vec<i64>) {
        if labels.is_empty() {
            return;
        }
        let order = match &self.args.priority {
            Some(p) => format!("{p}, {}", self.args.id),
            None => "neardup_member".to_string(),
        };
        run(
            client,
            &format!(
                "UPDATE {clusters} c SET is_representative = (c.id = r.neardup_member)
                 FROM (SELECT DISTINCT ON (neardup_cluster) neardup_cluster, neardup_member
                       FROM (SELECT m.cluster_id AS neardup_cluster, m.id AS neardup_member, t.*
                             FROM {clusters} m JOIN {table} t ON t.{id} = m.id
                             WHERE m.cluster_id = ANY($1)) t
                       ORDER BY neardup_cluster, {order}) r
                 WHERE c.cluster_id = r.neardup_cluster AND c.cluster_id = ANY($1)
                   AND c.is_representative IS DISTINCT FROM (c.id = r.neardup_member)",
                clusters = self.clusters,
                table = self.table,
                id = self.args.id,
            ),
            &[labels.into()],
        );
    }

    /// The rows as `(id bigint, fp <signature type>)`; `$1` may hold the ids to keep.
    fn source(&self, rows: &Rows) -> String {
        let (table, filter) = match rows {
            Rows::All(t) => (t, ""),
            Rows::Only(t, _) => (t, " WHERE s.id = ANY($1)"),
            // The id column itself is compared, so its index serves the search.
            Rows::Table(_) => {
                return format!(
                    "SELECT {id}::bigint AS id, {sig} AS fp FROM {table} WHERE {id} = ANY($1)",
                    id = self.args.id,
                    sig = self.args.signature,
                    table = self.table
                )
            }
        };
        format!(
            "SELECT * FROM (SELECT {id}::bigint AS id, {sig} AS fp FROM {table}) s{filter}",
            id = self.args.id,
            sig = self.args.signature
        )
    }

    fn id_of(&self, value: pgrx::spi::Result<Option<i64>>) -> i64 {
        value.ok().flatten().unwrap_or_else(|| {
            errors::null_not_allowed(format!(
                "neardup_track_clusters: the id column {} has a NULL",
                self.args.id
            ))
        })
    }
}

/// The condition that the signature `indexed` (a column of the clustered table, which its
/// index serves) is within `threshold` of `probe`, with the extension's functions and
/// operators named through `schema`. NULL when either is NULL.
pub(crate) fn near_condition(
    schema: &str,
    threshold: Threshold,
    indexed: &str,
    probe: &str,
) -> String {
    match threshold {
        Threshold::Hamming(k) => {
            format!("{indexed} OPERATOR({schema}.<@) {schema}.hamming_ball({probe}, {k})")
        }
        // The constant is written as `lsh_bands(sig, 0.8)` in an index folds to, so the
        // planner matches the index expression. f64's Display is exact and never an
        // exponent.
        Threshold::Jaccard(t) => format!(
            "{schema}.lsh_bands({indexed}, '{t}'::double precision) OPERATOR({schema}.&&) \
             {schema}.lsh_bands({probe}, '{t}'::double precision) \
             AND {schema}.jaccard({indexed}, {probe}) >= '{t}'::double precision"
        ),
    }
}

/// The priority checked as sort keys of `table` (see `crate::clusters::priority`), once per backend
/// for each table and text: a single-row INSERT would otherwise pay for a parse and an
/// analysis on every statement.
fn checked_priority(table: &str, priority: &str) -> String {
    thread_local! {
        static CHECKED: RefCell<HashMap<(String, String), String>> = RefCell::new(HashMap::new());
    }
    let key = (table.to_string(), priority.to_string());
    if let Some(done) = CHECKED.with(|c| c.borrow().get(&key).cloned()) {
        return done;
    }
    let done = crate::clusters::priority::checked("neardup_track_clusters", table, priority);
    CHECKED.with(|c| c.borrow_mut().insert(key, done.clone()));
    done
}

fn filter_arg(rows: &Rows) -> DatumWithOid<'static> {
    match rows {
        Rows::All(_) => Vec::<i64>::new().into(),
        Rows::Only(_, ids) | Rows::Table(ids) => ids.clone().into(),
    }
}

thread_local! {
    /// The trigger's statements, planned once per backend (SPI_keepplan, revalidated by
    /// the plan cache after DDL): a single-row INSERT would otherwise spend most of its
    /// overhead parsing and planning. The text names the tables, so it is the key.
    static PLANS: RefCell<HashMap<String, Rc<OwnedPreparedStatement>>> = RefCell::new(HashMap::new());
}

fn select<'c>(
    client: &mut SpiClient<'c>,
    query: &str,
    args: &[DatumWithOid<'_>],
) -> SpiTupleTable<'c> {
    let fail = |e: pgrx::spi::SpiError| -> ! { error!("neardup_track_clusters: {e}") };
    // The plan is taken out of the map before it runs: its statement may fire triggers
    // that come back here.
    let plan = PLANS.with(|plans| plans.borrow().get(query).cloned());
    let plan = plan.unwrap_or_else(|| {
        let types: Vec<PgOid> = args.iter().map(|a| PgOid::from_untagged(a.oid())).collect();
        let plan = Rc::new(
            client
                .prepare_mut(query, &types)
                .unwrap_or_else(|e| fail(e))
                .keep(),
        );
        PLANS.with(|plans| plans.borrow_mut().insert(query.to_string(), plan.clone()));
        plan
    });
    client
        .update(&*plan, None, args)
        .unwrap_or_else(|e| fail(e))
}

fn run(client: &mut SpiClient<'_>, query: &str, args: &[DatumWithOid<'_>]) {
    select(client, query, args);
}
