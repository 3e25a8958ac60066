//! Incremental maintenance of duplicate clusters (Zhu et al. §5), as pure plans: what a
//! statement's new rows join or merge, and how a cluster falls apart once rows leave it.
//! The database layer reads the inputs with queries and writes the plans back; keeping the
//! decisions here lets them be tested against a from-scratch clustering.
//!
//! A cluster's label is always its smallest member id, as the batch clustering labels it, so
//! an incrementally kept cluster table can be compared row for row with a rebuilt one.
//!
//! Two kinds of cluster are kept. *Components* (`plan_insert`, `plan_split`,
//! `plan_split_wide`, `plan_split_minhash`) are the connected components of the
//! near-duplicate pairs, simhash fingerprints or wide codes within a Hamming distance or
//! minhash sketches sharing an LSH band above a Jaccard threshold. *Stars* (`plan_representatives`) do not chain: each member is within
//! the threshold of its cluster's representative, as `crate::clusters::representatives` builds them in
//! one pass.

use crate::clusters::components::{near_duplicate_components, UnionFind};
use crate::search::lsh::{BandPairs, Banding, BandingError, SketchTable};
use crate::search::multi_index::{MultiIndex, PlanError};
use crate::signatures::wide_code::WideCode;
use std::collections::{BTreeMap, HashMap, HashSet};

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
    labelled_by_smallest_id(members.iter().map(|m| m.0), &mut components)
}

/// Distinct codes up to which [`plan_split_wide`] compares every pair: a multi-index
/// sets up directly addressed tables of up to 4 MB each whatever its rows, and a cluster
/// is mostly a few rows.
const PAIRWISE_SPLIT_CODES: usize = 2048;

/// [`plan_split`] for wide codes (`hash256`, `hash128`): the connected components of the
/// remaining members under Hamming distance ≤ `max_distance`, any distance below the width.
/// Equal codes are linked by a sort; the distinct ones are compared pair by pair, or
/// through multi-index hashing's pairs past `PAIRWISE_SPLIT_CODES`.
pub fn plan_split_wide<const W: usize>(
    members: &[(i64, Option<WideCode<W>>)],
    max_distance: u32,
) -> Result<Vec<(i64, i64)>, PlanError> {
    if max_distance >= WideCode::<W>::BITS {
        return Err(PlanError(format!(
            "a distance of {max_distance} bits links every {}-bit code",
            WideCode::<W>::BITS
        )));
    }
    let mut signed: Vec<(WideCode<W>, u32)> = (0..members.len() as u32)
        .filter_map(|m| members[m as usize].1.map(|code| (code, m)))
        .collect();
    signed.sort_unstable();
    let mut components = UnionFind::new(members.len());
    let mut distinct = Vec::new();
    for copies in signed.chunk_by(|a, b| a.0 == b.0) {
        for &(_, m) in &copies[1..] {
            components.union(copies[0].1, m);
        }
        distinct.push(copies[0]);
    }
    if distinct.len() <= PAIRWISE_SPLIT_CODES {
        let mut cancel_point = crate::base::interrupts::Every::<64>::default();
        for (i, (a, m)) in distinct.iter().enumerate() {
            cancel_point.tick();
            for (b, n) in &distinct[i + 1..] {
                if a.hamming(b) <= max_distance {
                    components.union(*m, *n);
                }
            }
        }
    } else {
        let index = MultiIndex::new(distinct.iter().map(|d| d.0).collect(), max_distance)?;
        for (a, b, _) in index.pairs() {
            components.union(distinct[a as usize].1, distinct[b as usize].1);
        }
    }
    Ok(labelled_by_smallest_id(
        members.iter().map(|m| m.0),
        &mut components,
    ))
}

/// [`plan_split`] for minhash sketches: the connected components of the remaining members
/// (`(id, sketch values)`) under "share a band of `banding_for(num_hashes)` and agree on at
/// least `threshold` of the minvalues", the pairs `minhash_pairs` and the batch clustering
/// find. Sketches of different sizes are never compared (the Jaccard estimate refuses them),
/// so each size is paired on its own.
pub fn plan_split_minhash(
    members: &[(i64, Option<Vec<u32>>)],
    threshold: f64,
    banding_for: impl Fn(usize) -> Banding,
) -> Result<Vec<(i64, i64)>, BandingError> {
    let mut by_size: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for (m, (_, sketch)) in members.iter().enumerate() {
        if let Some(values) = sketch.as_ref().filter(|v| !v.is_empty()) {
            by_size.entry(values.len()).or_default().push(m as u32);
        }
    }
    let mut components = UnionFind::new(members.len());
    for (num_hashes, rows) in by_size {
        let mut table = SketchTable::new(num_hashes);
        for &m in &rows {
            table.push(members[m as usize].1.as_deref().expect("signed"));
        }
        for (a, b, _) in BandPairs::new(table, banding_for(num_hashes), threshold)? {
            components.union(rows[a as usize], rows[b as usize]);
        }
    }
    Ok(labelled_by_smallest_id(
        members.iter().map(|m| m.0),
        &mut components,
    ))
}

/// `(id, label)` of every member, sorted by id, where a member's label is the smallest id of
/// its component.
fn labelled_by_smallest_id(
    ids: impl Iterator<Item = i64> + Clone,
    components: &mut UnionFind,
) -> Vec<(i64, i64)> {
    let mut label: HashMap<u32, i64> = HashMap::new();
    for (m, id) in ids.clone().enumerate() {
        let root = components.find(m as u32);
        label
            .entry(root)
            .and_modify(|l| *l = (*l).min(id))
            .or_insert(id);
    }
    let mut out: Vec<(i64, i64)> = ids
        .enumerate()
        .map(|(m, id)| (id, label[&components.find(m as u32)]))
        .collect();
    out.sort_unstable();
    out
}

/// The writes that bring a statement's new rows into star clusters.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StarPlan {
    /// Existing clusters whose label changes because a new member has a smaller id than
    /// all of theirs: `(old label, new label)`.
    pub relabel: Vec<(i64, i64)>,
    /// Every new row with its cluster's label and whether it is the representative.
    pub members: Vec<(i64, i64, bool)>,
}

/// Star clusters (method 'representatives'): the new rows, taken in priority order, each
/// join the cluster of the first representative in priority order within the threshold of
/// them, an existing one or a new row taken before them that became one; a new row near no
/// representative becomes the representative of a cluster of its own. Inserting every row
/// in priority order, in any split into statements, so gives the one-pass greedy clustering
/// (`crate::clusters::representatives::greedy_representatives`): there a row joins the first
/// representative before it that is near it, and the representatives before a row are all
/// in the table when it comes.
///
/// - `order`: every new row and every existing representative named in `links`, first by
///   priority (ties broken by id) first. New rows missing from it come after, by id.
/// - `new_rows`: the new rows' ids.
/// - `representatives`: existing representatives, `(id, label of their cluster)`.
/// - `links`: `(new row, neighbour)` within the threshold, where the neighbour is another
///   new row or an existing representative; others are ignored, as are duplicates.
pub fn plan_representatives(
    order: &[i64],
    new_rows: &[i64],
    representatives: &[(i64, i64)],
    links: &[(i64, i64)],
) -> StarPlan {
    let new: HashSet<i64> = new_rows.iter().copied().collect();
    let existing: HashMap<i64, i64> = representatives.iter().copied().collect();
    let mut position: HashMap<i64, usize> = HashMap::new();
    for &id in order {
        let next = position.len();
        position.entry(id).or_insert(next);
    }
    let mut late: Vec<i64> = new_rows
        .iter()
        .copied()
        .filter(|id| !position.contains_key(id))
        .collect();
    late.sort_unstable();
    late.dedup();
    for id in late {
        let next = position.len();
        position.insert(id, next);
    }
    // Neighbours of each new row that are, or may become, representatives.
    let mut near: HashMap<i64, Vec<i64>> = HashMap::new();
    for &(a, b) in links {
        if a == b || !new.contains(&a) {
            continue;
        }
        if new.contains(&b) {
            near.entry(a).or_default().push(b);
            near.entry(b).or_default().push(a);
        } else if existing.contains_key(&b) {
            near.entry(a).or_default().push(b);
        }
    }
    let mut taken: Vec<i64> = new.iter().copied().collect();
    taken.sort_unstable_by_key(|id| position[id]);
    // The representative of each new row, and the label of each cluster by representative.
    let mut representative_of: HashMap<i64, i64> = HashMap::new();
    let mut label: HashMap<i64, i64> = existing.clone();
    for &row in &taken {
        let best = near
            .get(&row)
            .into_iter()
            .flatten()
            .copied()
            .filter(|n| existing.contains_key(n) || representative_of.get(n) == Some(n))
            .filter(|n| position.contains_key(n))
            .min_by_key(|n| position[n]);
        let representative = best.unwrap_or(row);
        representative_of.insert(row, representative);
        label
            .entry(representative)
            .and_modify(|l| *l = (*l).min(row))
            .or_insert(row);
    }
    let mut plan = StarPlan::default();
    for (&representative, &old) in &existing {
        if label[&representative] != old {
            plan.relabel.push((old, label[&representative]));
        }
    }
    for &row in &taken {
        let representative = representative_of[&row];
        plan.members
            .push((row, label[&representative], representative == row));
    }
    plan.relabel.sort_unstable();
    plan.members.sort_unstable();
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::splitmix::splitmix64_next;
    use crate::signatures::simhash::hamming;

    /// Labels by brute force: every pair compared, relaxed until nothing changes.
    fn reference(rows: &[(i64, Option<u64>)], k: u32) -> Vec<(i64, i64)> {
        reference_by(rows, |a, b| hamming(*a, *b) <= k)
    }

    /// [`reference`] under any nearness of signatures.
    fn reference_by<S>(
        rows: &[(i64, Option<S>)],
        near: impl Fn(&S, &S) -> bool,
    ) -> Vec<(i64, i64)> {
        let mut label: Vec<i64> = rows.iter().map(|r| r.0).collect();
        loop {
            let mut changed = false;
            for i in 0..rows.len() {
                for j in 0..rows.len() {
                    if let (Some(a), Some(b)) = (&rows[i].1, &rows[j].1) {
                        if near(a, b) && label[j] < label[i] {
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

    /// 256-bit codes in a few families, each member a random number of its center's bits
    /// flipped (up to 20), with copies and rows without a code.
    fn clustered_codes(rng: &mut Rng, n: usize) -> Vec<(i64, Option<WideCode<4>>)> {
        let centers: Vec<WideCode<4>> = (0..3)
            .map(|_| WideCode([rng.next(), rng.next(), rng.next(), rng.next()]))
            .collect();
        let mut rows: Vec<(i64, Option<WideCode<4>>)> = Vec::new();
        for i in 0..n {
            let code = if rng.next().is_multiple_of(8) && !rows.is_empty() {
                rows[(rng.next() % rows.len() as u64) as usize].1
            } else {
                let mut code = centers[(rng.next() % 3) as usize];
                for _ in 0..rng.next() % 21 {
                    let bit = rng.next() % 256;
                    code.0[(bit / 64) as usize] ^= 1 << (bit % 64);
                }
                (!rng.next().is_multiple_of(10)).then_some(code)
            };
            rows.push((i as i64 * 7 % 1000 + 1, code));
        }
        rows
    }

    #[test]
    fn splitting_wide_codes_equals_clustering_the_remaining_rows() {
        let mut rng = Rng(23);
        let mut chained = 0;
        for round in 0..200 {
            // The last rounds have more distinct codes than are compared pair by pair.
            let n = if round >= 196 { 3000 } else { 1 + round % 40 };
            let rows = clustered_codes(&mut rng, n);
            let k = [0, 8, 16, 24, 31, 90][round % 6];
            let got = plan_split_wide(&rows, k).unwrap();
            assert_eq!(
                got,
                reference_by(&rows, |a, b| a.hamming(b) <= k),
                "round {round}"
            );
            // Members whose label's code is out of reach: linked only through others.
            let code = |id: i64| rows.iter().find(|r| r.0 == id).and_then(|r| r.1);
            chained += got
                .iter()
                .filter(|&&(id, label)| match (code(id), code(label)) {
                    (Some(a), Some(b)) => a.hamming(&b) > k,
                    _ => false,
                })
                .count();
        }
        assert!(chained > 0, "some components are chains");
        let err = plan_split_wide(&clustered_codes(&mut rng, 3), 256).unwrap_err();
        assert!(
            err.0.contains("256 bits links every 256-bit code"),
            "{}",
            err.0
        );
    }

    /// Minhash sketches as near-copies of a few originals: each row changes a random
    /// number of its originals' minvalues, so some pairs are above the threshold, some below,
    /// and some share a band without being verified.
    fn clustered_sketches(
        rng: &mut Rng,
        n: usize,
        num_hashes: usize,
    ) -> Vec<(i64, Option<Vec<u32>>)> {
        let originals: Vec<Vec<u32>> = (0..3)
            .map(|_| (0..num_hashes).map(|_| rng.next() as u32).collect())
            .collect();
        (0..n)
            .map(|i| {
                let mut v = originals[(rng.next() % 3) as usize].clone();
                for _ in 0..rng.next() % (num_hashes as u64 / 2) {
                    let at = (rng.next() % num_hashes as u64) as usize;
                    v[at] = rng.next() as u32;
                }
                let v = (!rng.next().is_multiple_of(10)).then_some(v);
                (i as i64 * 13 % 1000 + 1, v)
            })
            .collect()
    }

    /// Pairs by brute force: a shared band of `banding` and a Jaccard estimate of at least
    /// `threshold`.
    fn minhash_near(banding: &Banding, threshold: f64, a: &[u32], b: &[u32]) -> bool {
        let agree = a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64;
        (0..banding.bands()).any(|k| banding.band(a, k) == banding.band(b, k)) && agree >= threshold
    }

    #[test]
    fn splitting_minhash_equals_clustering_the_remaining_rows() {
        let mut rng = Rng(17);
        let mut linked_rounds = 0;
        for round in 0..200 {
            let rows = clustered_sketches(&mut rng, 1 + round % 30, 16);
            let banding = Banding::new(4, 4, 16).unwrap();
            let threshold = [0.5, 0.7, 0.9][round % 3];
            // The reference: every pair compared, labels relaxed to the smallest id.
            let mut label: Vec<i64> = rows.iter().map(|r| r.0).collect();
            loop {
                let mut changed = false;
                for i in 0..rows.len() {
                    for j in 0..rows.len() {
                        if let (Some(a), Some(b)) = (&rows[i].1, &rows[j].1) {
                            if minhash_near(&banding, threshold, a, b) && label[j] < label[i] {
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
            let mut expected: Vec<(i64, i64)> = rows.iter().map(|r| r.0).zip(label).collect();
            expected.sort_unstable();
            linked_rounds += usize::from(expected.iter().any(|&(id, l)| id != l));
            let got = plan_split_minhash(&rows, threshold, |m| {
                assert_eq!(m, 16);
                banding
            })
            .unwrap();
            assert_eq!(got, expected, "round {round}");
        }
        assert!(
            linked_rounds > 100,
            "rounds with a cluster: {linked_rounds}"
        );
        // Sketches of two sizes never pair, and a bad threshold is an error.
        let mixed = vec![
            (1, Some(vec![5; 16])),
            (2, Some(vec![5; 8])),
            (3, Some(vec![5; 8])),
        ];
        let got = plan_split_minhash(&mixed, 0.9, |m| Banding::new(2, (m / 2) as i64, m).unwrap());
        assert_eq!(got.unwrap(), vec![(1, 1), (2, 2), (3, 2)]);
        assert!(plan_split_minhash(&mixed, 1.5, |m| Banding::new(1, 1, m).unwrap()).is_err());
    }

    /// The one-pass greedy clustering by definition (rows in priority order): each row not
    /// yet taken becomes a representative and takes every row not yet taken near it.
    /// Returns `(id, label, is representative)` sorted by id.
    fn greedy_by_definition(
        rows: &[(i64, Option<u64>)],
        near: impl Fn(usize, usize) -> bool,
    ) -> Vec<(i64, i64, bool)> {
        let mut rep = vec![usize::MAX; rows.len()];
        for r in 0..rows.len() {
            if rep[r] == usize::MAX {
                for (m, slot) in rep.iter_mut().enumerate() {
                    if *slot == usize::MAX && (m == r || near(r, m)) {
                        *slot = r;
                    }
                }
            }
        }
        let mut label: HashMap<usize, i64> = HashMap::new();
        for (m, &r) in rep.iter().enumerate() {
            let l = label.entry(r).or_insert(rows[m].0);
            *l = (*l).min(rows[m].0);
        }
        let mut out: Vec<(i64, i64, bool)> = (0..rows.len())
            .map(|m| (rows[m].0, label[&rep[m]], rep[m] == m))
            .collect();
        out.sort_unstable();
        out
    }

    /// A model of the trigger for star clusters over fingerprints: the cluster table
    /// `id → (label, is representative)`, kept with [`plan_representatives`] as
    /// `cluster_tracking::maintain` keeps it (deleted representatives' members are taken
    /// out and inserted again).
    struct StarModel {
        fps: HashMap<i64, Option<u64>>,
        /// Priority: smaller first, then id.
        rank: HashMap<i64, u64>,
        clusters: HashMap<i64, (i64, bool)>,
        k: u32,
    }

    impl StarModel {
        fn near(&self, a: i64, b: i64) -> bool {
            match (self.fps[&a], self.fps[&b]) {
                (Some(x), Some(y)) => hamming(x, y) <= self.k,
                _ => false,
            }
        }

        fn insert(&mut self, rows: &[i64]) {
            let representatives: Vec<(i64, i64)> = self
                .clusters
                .iter()
                .filter(|(_, &(_, is_rep))| is_rep)
                .map(|(&id, &(l, _))| (id, l))
                .collect();
            let mut links = Vec::new();
            for &a in rows {
                for &b in rows.iter().chain(representatives.iter().map(|r| &r.0)) {
                    if a != b && self.near(a, b) {
                        links.push((a, b));
                    }
                }
            }
            let mut order: Vec<i64> = rows.to_vec();
            order.extend(links.iter().map(|l| l.1));
            order.sort_unstable_by_key(|id| (self.rank[id], *id));
            order.dedup();
            let plan = plan_representatives(&order, rows, &representatives, &links);
            for (old, new) in plan.relabel {
                for entry in self.clusters.values_mut() {
                    if entry.0 == old {
                        entry.0 = new;
                    }
                }
            }
            for (id, label, is_rep) in plan.members {
                self.clusters.insert(id, (label, is_rep));
            }
        }

        fn delete(&mut self, rows: &[i64]) {
            let mut orphaned_labels = Vec::new();
            let mut shrunk = Vec::new();
            for id in rows {
                self.fps.remove(id);
                if let Some((label, is_rep)) = self.clusters.remove(id) {
                    if is_rep {
                        orphaned_labels.push(label)
                    } else {
                        shrunk.push(label)
                    }
                }
            }
            // Clusters that kept their representative keep the smallest id as label.
            for label in shrunk.into_iter().filter(|l| !orphaned_labels.contains(l)) {
                let smallest = self
                    .clusters
                    .iter()
                    .filter(|(_, e)| e.0 == label)
                    .map(|(&id, _)| id)
                    .min();
                if let Some(smallest) = smallest {
                    for entry in self.clusters.values_mut() {
                        if entry.0 == label {
                            entry.0 = smallest;
                        }
                    }
                }
            }
            let orphans: Vec<i64> = self
                .clusters
                .iter()
                .filter(|(_, e)| orphaned_labels.contains(&e.0))
                .map(|(&id, _)| id)
                .collect();
            for id in &orphans {
                self.clusters.remove(id);
            }
            if !orphans.is_empty() {
                self.insert(&orphans);
            }
        }

        /// Every member is within the distance of its cluster's one representative, and
        /// labels are smallest ids.
        fn check(&self) {
            let mut reps: HashMap<i64, i64> = HashMap::new();
            let mut smallest: HashMap<i64, i64> = HashMap::new();
            for (&id, &(label, is_rep)) in &self.clusters {
                if is_rep {
                    assert!(
                        reps.insert(label, id).is_none(),
                        "one representative in {label}"
                    );
                }
                let s = smallest.entry(label).or_insert(id);
                *s = (*s).min(id);
            }
            assert_eq!(self.clusters.len(), self.fps.len());
            for (&id, &(label, _)) in &self.clusters {
                let rep = reps[&label];
                assert!(
                    rep == id || self.near(id, rep),
                    "{id} near its representative {rep}"
                );
                assert_eq!(smallest[&label], label);
            }
        }

        fn sorted(&self) -> Vec<(i64, i64, bool)> {
            let mut out: Vec<(i64, i64, bool)> = self
                .clusters
                .iter()
                .map(|(&id, &(l, r))| (id, l, r))
                .collect();
            out.sort_unstable();
            out
        }
    }

    #[test]
    fn stars_inserted_in_priority_order_equal_the_greedy_clustering() {
        let mut rng = Rng(23);
        let mut joined = 0;
        for round in 0..200 {
            let mut rows = clustered_rows(&mut rng, 2 + round % 40);
            rows.sort_unstable();
            rows.dedup_by_key(|r| r.0);
            let k = (round % 4) as u32;
            let rank: HashMap<i64, u64> = rows.iter().map(|r| (r.0, rng.next() % 4)).collect();
            rows.sort_unstable_by_key(|r| (rank[&r.0], r.0));
            let mut model = StarModel {
                fps: HashMap::new(),
                rank: rank.clone(),
                clusters: HashMap::new(),
                k,
            };
            let mut start = 0;
            while start < rows.len() {
                let end = (start + 1 + (rng.next() % 6) as usize).min(rows.len());
                let batch: Vec<i64> = rows[start..end].iter().map(|r| r.0).collect();
                // The statement's rows come in any order.
                let mut shuffled = batch.clone();
                shuffled.reverse();
                for r in &rows[start..end] {
                    model.fps.insert(r.0, r.1);
                }
                model.insert(&shuffled);
                model.check();
                start = end;
            }
            let expected = greedy_by_definition(&rows, |a, b| match (rows[a].1, rows[b].1) {
                (Some(x), Some(y)) => hamming(x, y) <= k,
                _ => false,
            });
            joined += expected.iter().filter(|r| !r.2).count();
            assert_eq!(model.sorted(), expected, "round {round}");
        }
        assert!(joined > 1000, "rows that joined a representative: {joined}");
    }

    #[test]
    fn stars_stay_within_the_threshold_through_inserts_and_deletes() {
        let mut rng = Rng(29);
        for round in 0..150 {
            let rows = clustered_rows(&mut rng, 60);
            let k = 1 + (round % 3) as u32;
            let mut model = StarModel {
                fps: HashMap::new(),
                rank: HashMap::new(),
                clusters: HashMap::new(),
                k,
            };
            let mut next = 0;
            for _ in 0..30 {
                if rng.next().is_multiple_of(3) && !model.fps.is_empty() {
                    // Delete representatives and members alike.
                    let mut present: Vec<i64> = model.fps.keys().copied().collect();
                    present.sort_unstable();
                    let gone: Vec<i64> = present
                        .into_iter()
                        .filter(|_| rng.next().is_multiple_of(4))
                        .collect();
                    model.delete(&gone);
                } else {
                    let end = (next + 1 + (rng.next() % 5) as usize).min(rows.len());
                    let batch: Vec<i64> = rows[next..end]
                        .iter()
                        .filter(|r| !model.fps.contains_key(&r.0))
                        .map(|r| r.0)
                        .collect();
                    for r in &rows[next..end] {
                        model.fps.insert(r.0, r.1);
                        model.rank.insert(r.0, rng.next() % 5);
                    }
                    model.insert(&batch);
                    next = end % rows.len();
                }
                model.check();
            }
        }
    }

    #[test]
    fn a_new_row_joins_the_first_representative_or_leads_its_own() {
        // 5 and 9 are representatives of clusters 2 and 9; new row 1 is near both and joins
        // 9, the first by priority, lowering its label; new row 3 comes after 1 and is near
        // only 1, which is no representative: it leads its own cluster.
        let plan = plan_representatives(
            &[9, 1, 5, 3],
            &[3, 1],
            &[(5, 2), (9, 9)],
            &[(1, 5), (1, 9), (3, 1)],
        );
        assert_eq!(plan.relabel, vec![(9, 1)]);
        assert_eq!(plan.members, vec![(1, 1, false), (3, 3, true)]);
        // A new row that becomes a representative takes a later new row of its statement.
        let plan = plan_representatives(&[4, 8], &[8, 4], &[], &[(8, 4)]);
        assert_eq!(plan.members, vec![(4, 4, true), (8, 4, false)]);
        assert!(plan.relabel.is_empty());
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
