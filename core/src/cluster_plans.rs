//! Incremental maintenance of duplicate clusters (Zhu et al. §5), as pure plans: what a
//! statement's new rows join or merge, and how a cluster falls apart once rows leave it.
//! The database layer reads the inputs with queries and writes the plans back; keeping the
//! decisions here lets them be tested against a from-scratch clustering.
//!
//! A cluster's label is always its smallest member id, as the batch clustering labels it, so
//! an incrementally kept cluster table can be compared row for row with a rebuilt one.

use crate::components::{near_duplicate_components, UnionFind};
use std::collections::HashMap;

/// Something a new row is a near-duplicate of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Neighbor {
    /// Another row inserted by the same statement (not in any cluster yet).
    NewRow(i64),
    /// A row already clustered, named by its cluster's label.
    Cluster(i64),
}

/// The writes that bring a statement's new rows into the clusters.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MergePlan {
    /// Existing clusters whose label changes because they merged: `(old label, new label)`.
    pub relabel: Vec<(i64, i64)>,
    /// Every new row with its cluster's label and whether it is alone in it (and so its own
    /// representative without asking for priorities).
    pub members: Vec<(i64, i64, bool)>,
    /// Labels of the clusters that gained members, whose representative must be chosen again.
    pub touched: Vec<i64>,
}

/// Joins the new rows to their neighbours' clusters, merging every cluster a new row (or a
/// chain of new rows) bridges. `links` pairs a new row with one neighbour; links to itself
/// are ignored and duplicates are harmless.
pub fn plan_insert(new_rows: &[i64], links: &[(i64, Neighbor)]) -> MergePlan {
    let mut nodes: HashMap<Neighbor, u32> = HashMap::new();
    let mut keys: Vec<Neighbor> = Vec::new();
    let mut node_of = |key: Neighbor| {
        *nodes.entry(key).or_insert_with(|| {
            keys.push(key);
            keys.len() as u32 - 1
        })
    };
    let new_nodes: Vec<u32> = new_rows
        .iter()
        .map(|&id| node_of(Neighbor::NewRow(id)))
        .collect();
    let link_nodes: Vec<(u32, u32)> = links
        .iter()
        .map(|&(id, neighbor)| (node_of(Neighbor::NewRow(id)), node_of(neighbor)))
        .collect();
    let mut components = UnionFind::new(keys.len());
    for &(a, b) in &link_nodes {
        components.union(a, b);
    }
    // A component's label is the smallest id in it: a cluster's label is already its
    // smallest member, so the minimum over labels and new ids is the minimum over members.
    let mut label: HashMap<u32, i64> = HashMap::new();
    let mut size: HashMap<u32, usize> = HashMap::new();
    for (node, key) in keys.iter().enumerate() {
        let root = components.find(node as u32);
        let id = match *key {
            Neighbor::NewRow(id) | Neighbor::Cluster(id) => id,
        };
        label
            .entry(root)
            .and_modify(|l| *l = (*l).min(id))
            .or_insert(id);
        *size.entry(root).or_default() += 1;
    }
    let mut plan = MergePlan::default();
    for (node, key) in keys.iter().enumerate() {
        let root = components.find(node as u32);
        if let Neighbor::Cluster(old) = *key {
            if old != label[&root] {
                plan.relabel.push((old, label[&root]));
            }
        }
    }
    for (&id, &node) in new_rows.iter().zip(&new_nodes) {
        let root = components.find(node);
        plan.members.push((id, label[&root], size[&root] == 1));
    }
    plan.touched = label
        .iter()
        .filter(|(root, _)| size[root] > 1)
        .map(|(_, &l)| l)
        .collect();
    plan.relabel.sort_unstable();
    plan.members.sort_unstable();
    plan.members.dedup();
    plan.touched.sort_unstable();
    plan
}

/// The clusters that what is left of one cluster falls into: the connected components of
/// its remaining members (`(id, fingerprint)`) under Hamming distance ≤ `max_distance`,
/// each labelled by its smallest id. Returns `(id, label)` for every member.
///
/// Members with equal fingerprints are linked without comparing them, so a cluster of many
/// exact copies costs a sort, not a quadratic number of pairs.
pub fn plan_split(members: &[(i64, Option<u64>)], max_distance: u32) -> Vec<(i64, i64)> {
    let signed: Vec<usize> = (0..members.len())
        .filter(|&m| members[m].1.is_some())
        .collect();
    let fps: Vec<u64> = signed.iter().filter_map(|&m| members[m].1).collect();
    let mut linked = near_duplicate_components(&fps, max_distance)
        .expect("a distance the cluster table was created with");
    // Members without a fingerprint are alone; the others follow their signed row's root.
    let mut components = UnionFind::new(members.len());
    for (s, &m) in signed.iter().enumerate() {
        components.union(signed[linked.find(s as u32) as usize] as u32, m as u32);
    }
    let mut label: HashMap<u32, i64> = HashMap::new();
    for (m, &(id, _)) in members.iter().enumerate() {
        let root = components.find(m as u32);
        label
            .entry(root)
            .and_modify(|l| *l = (*l).min(id))
            .or_insert(id);
    }
    let mut out: Vec<(i64, i64)> = members
        .iter()
        .enumerate()
        .map(|(m, &(id, _))| (id, label[&components.find(m as u32)]))
        .collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simhash::hamming;
    use crate::splitmix::splitmix64_next;

    /// Labels by brute force: every pair compared, relaxed until nothing changes.
    fn reference(rows: &[(i64, Option<u64>)], k: u32) -> Vec<(i64, i64)> {
        let mut label: Vec<i64> = rows.iter().map(|r| r.0).collect();
        loop {
            let mut changed = false;
            for i in 0..rows.len() {
                for j in 0..rows.len() {
                    if let (Some(a), Some(b)) = (rows[i].1, rows[j].1) {
                        if hamming(a, b) <= k && label[j] < label[i] {
                            label[i] = label[j];
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let mut out: Vec<(i64, i64)> = rows.iter().map(|r| r.0).zip(label).collect();
        out.sort_unstable();
        out
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            splitmix64_next(&mut self.0)
        }
    }

    /// Fingerprints in a few tight families, so chains, bridges and copies all occur.
    fn clustered_rows(rng: &mut Rng, n: usize) -> Vec<(i64, Option<u64>)> {
        let centers: Vec<u64> = (0..4).map(|_| rng.next()).collect();
        (0..n)
            .map(|i| {
                let mut fp = centers[(rng.next() % 4) as usize];
                for _ in 0..rng.next() % 4 {
                    fp ^= 1 << (rng.next() % 8);
                }
                let fp = (!rng.next().is_multiple_of(10)).then_some(fp);
                (i as i64 * 7 % 1000 + 1, fp)
            })
            .collect()
    }

    #[test]
    fn inserting_in_batches_equals_clustering_from_scratch() {
        let mut rng = Rng(11);
        for round in 0..200 {
            let rows = clustered_rows(&mut rng, 2 + round % 40);
            let k = (round % 4) as u32;
            let mut clusters: HashMap<i64, i64> = HashMap::new();
            let mut start = 0;
            while start < rows.len() {
                let end = (start + 1 + (rng.next() % 5) as usize).min(rows.len());
                let batch = &rows[start..end];
                let mut links = Vec::new();
                for &(id, fp) in batch {
                    for &(other, ofp) in &rows[..end] {
                        if let (Some(a), Some(b)) = (fp, ofp) {
                            if other != id && hamming(a, b) <= k {
                                links.push((
                                    id,
                                    match clusters.get(&other) {
                                        Some(&l) => Neighbor::Cluster(l),
                                        None => Neighbor::NewRow(other),
                                    },
                                ));
                            }
                        }
                    }
                }
                let ids: Vec<i64> = batch.iter().map(|r| r.0).collect();
                let plan = plan_insert(&ids, &links);
                for (old, new) in &plan.relabel {
                    for l in clusters.values_mut() {
                        if l == old {
                            *l = *new;
                        }
                    }
                }
                for &(id, l, alone) in &plan.members {
                    clusters.insert(id, l);
                    assert_eq!(alone, !plan.touched.contains(&l));
                }
                start = end;
            }
            let mut got: Vec<(i64, i64)> = clusters.into_iter().collect();
            got.sort_unstable();
            assert_eq!(got, reference(&rows, k), "round {round}");
        }
    }

    #[test]
    fn merging_two_clusters_takes_the_smaller_label() {
        let plan = plan_insert(
            &[50],
            &[(50, Neighbor::Cluster(7)), (50, Neighbor::Cluster(3))],
        );
        assert_eq!(plan.relabel, vec![(7, 3)]);
        assert_eq!(plan.members, vec![(50, 3, false)]);
        assert_eq!(plan.touched, vec![3]);
        let alone = plan_insert(&[2], &[(2, Neighbor::NewRow(2))]);
        assert_eq!(alone.members, vec![(2, 2, true)]);
        assert!(alone.relabel.is_empty() && alone.touched.is_empty());
    }

    #[test]
    fn splitting_equals_clustering_the_remaining_rows() {
        let mut rng = Rng(5);
        for round in 0..300 {
            let rows = clustered_rows(&mut rng, 1 + round % 30);
            let k = (round % 5) as u32;
            assert_eq!(plan_split(&rows, k), reference(&rows, k), "round {round}");
        }
    }

    #[test]
    fn removing_a_bridge_splits_a_chain() {
        // 1 — 2 — 3 at distance 2 each: without 2, rows 1 and 3 are 4 bits apart.
        let chain = [(1, Some(0b0000)), (3, Some(0b1111))];
        assert_eq!(plan_split(&chain, 2), vec![(1, 1), (3, 3)]);
        let copies: Vec<(i64, Option<u64>)> = (10..5000).map(|id| (id, Some(42))).collect();
        assert!(plan_split(&copies, 3).iter().all(|&(_, l)| l == 10));
    }
}
