//! `ORDER BY fp <~> q`: the rows nearest first, a batch at a time, in bounded memory.
//!
//! First, when the rows within max_distance of `q` are few (at most a pass's cap), they come
//! from a probe of the tables (`Matches`), sorted. Then, only if the scan goes on, passes
//! over each run's table 0, the NULL rows and the pending rows each keep the next nearest
//! rows (`neardup_core::search::nearest`: a pass ends where it has kept its target, inside a
//! crowded distance if need be, and the next one starts just after it), so no pass sorts or
//! holds the whole index. A scan with conditions (`<@` balls, `<@@` batches) sorts what
//! they select when it is few, and otherwise makes the same passes over the rows that pass
//! the conditions.
//!
//! Several ORDER BY distances sort lexicographically, then by TID; rows whose fingerprint
//! is NULL come last with NULL distances, as a seq scan would sort them.

use super::cache::{for_each_row_in, Row, ScanCache};
use super::matches::Matches;
use super::Query;
use crate::am::run::{self, RecentLeaves};
use neardup_core::search::index_page::{Entry, Leaf, Tid, NO_BLOCK};
use neardup_core::search::nearest::{pass_target, NearestPass, Start, NULL_BUCKET};
use neardup_core::search::permuted::Permutation;
use neardup_core::signatures::simhash::hamming;
use pgrx::pg_sys;
use std::cmp::Ordering;

/// A row to return. Its sort key (one distance per ORDER BY) is computed when compared:
/// a popcount per key costs less than a heap-allocated key per row.
#[derive(Clone, Copy, Debug)]
pub struct Hit {
    pub fp: Option<u64>,
    pub tid: Tid,
}

/// The first pass keeps about this many rows: enough for a LIMIT 10 or 100, small enough
/// to cost little but the read. Each further pass takes `PASS_GROWTH` times more, up to
/// work_mem. A pass keeps every row nearer than its cutoff when it reads it, and the
/// cutoff narrows as the pass reads on, so a larger target keeps (and then drops) many
/// more rows, about target × ln(rows / target): over 1 M random codes a LIMIT 10 query
/// took 1.57 ms at 256 and 1.90 ms at 1,024 (bench/knn.sh), which had taken a third less
/// than 4,096.
pub const FIRST_PASS_ROWS: usize = 256;

/// The most rows a pass keeps: work_mem's worth (half of it, as a pass may hold twice its
/// target before it cuts).
pub fn pass_rows_cap() -> usize {
    // SAFETY: a GUC variable, read in the backend's only thread.
    let work_mem_kb = unsafe { pg_sys::work_mem }.max(64) as usize;
    (work_mem_kb * 1024 / 2 / std::mem::size_of::<Hit>()).max(FIRST_PASS_ROWS)
}

/// The sort key of a NULL distance: after every real one.
pub const NULL_DISTANCE: u64 = u64::MAX;

pub fn distance(fp: Option<u64>, q: Option<u64>) -> u64 {
    match (fp, q) {
        (Some(fp), Some(q)) => hamming(fp, q) as u64,
        _ => NULL_DISTANCE,
    }
}

/// The order of the results: by each ORDER BY distance in turn, then by TID.
fn compare(a: &Hit, b: &Hit, order_by: &[Option<u64>]) -> Ordering {
    order_by
        .iter()
        .map(|&q| distance(a.fp, q).cmp(&distance(b.fp, q)))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| a.tid.cmp(&b.tid))
}

/// What an ordered scan reads next.
enum Phase {
    /// The probe, or the sorted selection of the conditions, if they are few.
    Few,
    /// A pass from this point of the order on.
    Pass(Start<Hit>),
    Done,
}

pub struct Ordered {
    phase: Phase,
    passes: u32,
}

impl Ordered {
    pub fn new() -> Ordered {
        Ordered {
            phase: Phase::Few,
            passes: 0,
        }
    }

    /// The next results in order; empty only once every row is returned.
    pub fn next_batch(
        &mut self,
        index: pg_sys::Relation,
        query: &Query,
        cache: &mut ScanCache,
    ) -> Vec<Hit> {
        if query.nothing {
            return Vec::new();
        }
        loop {
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return Vec::new(),
                Phase::Few => {
                    let (few, then) = few_first(index, query, cache);
                    self.phase = then;
                    if let Some(hits) = few.filter(|h| !h.is_empty()) {
                        return hits;
                    }
                }
                Phase::Pass(start) => {
                    let target = pass_target(self.passes, FIRST_PASS_ROWS, pass_rows_cap());
                    self.passes += 1;
                    let (hits, next) = pass(index, query, cache, start, target);
                    self.phase = next.map_or(Phase::Done, Phase::Pass);
                    if !hits.is_empty() {
                        return hits;
                    }
                }
            }
        }
    }
}

/// The rows a probe or the conditions select, sorted, if they are at most a pass's cap
/// (`None` if more), and the phase after them: with conditions, none (they were all), or
/// passes from the start; without, passes beyond max_distance (a probe found every row
/// within it).
fn few_first(
    index: pg_sys::Relation,
    query: &Query,
    cache: &mut ScanCache,
) -> (Option<Vec<Hit>>, Phase) {
    let conditions = !query.balls.is_empty() || !query.batches.is_empty();
    let q = query.order_by.first().copied().flatten();
    let max_distance = cache.meta.max_distance;
    let (probe, after) = match q {
        _ if conditions => (query.clone(), Phase::Done),
        Some(q) => (
            Query {
                balls: vec![(q, max_distance)],
                ..query.clone()
            },
            Phase::Pass(Start::at(max_distance + 1)),
        ),
        // Every distance is NULL: the passes take the rows by TID.
        None => return (None, Phase::Pass(Start::at(0))),
    };
    let cap = pass_rows_cap();
    let mut rows: Vec<Row> = Vec::new();
    Matches::new(&probe, max_distance, true).fill(index, &probe, cache, &mut rows, cap + 1);
    if rows.len() > cap {
        return (None, Phase::Pass(Start::at(0)));
    }
    let mut hits: Vec<Hit> = rows.into_iter().map(|(fp, tid)| Hit { fp, tid }).collect();
    hits.sort_unstable_by(|a, b| compare(a, b, &query.order_by));
    (Some(hits), after)
}

/// One pass over each run's table 0, the runs' NULL rows and the pending rows, keeping the
/// next `target` rows of the order from `start` on that pass the conditions; returns them
/// in order, and where the next pass starts.
fn pass(
    index: pg_sys::Relation,
    query: &Query,
    cache: &mut ScanCache,
    start: Start<Hit>,
    target: usize,
) -> (Vec<Hit>, Option<Start<Hit>>) {
    let order_by = &query.order_by;
    let q = order_by.first().copied().flatten();
    let conditions = !query.balls.is_empty() || !query.batches.is_empty();
    let accepts = |fp: u64| {
        query.balls.iter().all(|&(c, r)| hamming(fp, c) <= r)
            && query.batches.iter().all(|b| b.contains(fp))
    };
    let bucket = |fp: Option<u64>| match (fp, q) {
        (Some(fp), Some(q)) => hamming(fp, q),
        _ => NULL_BUCKET,
    };
    // The pass orders rows of one distance to the first ORDER BY: by the others, then TID.
    let within_distance = order_by.get(1..).unwrap_or_default();
    let mut pass = NearestPass::new(start, target, |a: &Hit, b: &Hit| {
        compare(a, b, within_distance)
    });
    let runs = cache.meta.runs.iter().zip(&cache.layouts).zip(&cache.parts);
    let mut recent = RecentLeaves::take(index);
    for ((run, layout), parts) in runs {
        let table = &layout.tables()[0];
        for tree in &run.trees[parts.trees_of(0)] {
            let mut block = tree.first_leaf;
            while block != NO_BLOCK {
                let ((), next) = recent.read_leaf(index, run.id, block, |leaf: Leaf| {
                    match q.filter(|_| !conditions) {
                        Some(q) => offer_leaf(&mut pass, leaf, table.apply(q), table),
                        None => {
                            for e in leaf.entries() {
                                let fp = table.invert(e.key);
                                if accepts(fp) {
                                    pass.offer(bucket(Some(fp)), || Hit {
                                        fp: Some(fp),
                                        tid: e.tid,
                                    });
                                }
                            }
                        }
                    }
                });
                block = next;
            }
        }
        if !conditions {
            run::for_each_pending(index, run.id, run.nulls_head, |e: Entry| {
                pass.offer(NULL_BUCKET, || Hit {
                    fp: None,
                    tid: e.heap_tid(),
                })
            });
        }
    }
    crate::am::pause::at("ordered_pass");
    for_each_row_in(&cache.pending(index).rows, |(fp, tid)| {
        if fp.map_or(!conditions, accepts) {
            pass.offer(bucket(fp), || Hit { fp, tid });
        }
    });
    let selected = pass.finish();
    (selected.rows, selected.next)
}

/// Offers a leaf's entries to a pass, with AVX2 or the CPU's popcount instruction
/// where it has them: the distance test is nearly the whole cost of a pass, and the
/// portable build (the x86-64 baseline) counts bits in a dozen instructions.
fn offer_leaf<C: Fn(&Hit, &Hit) -> Ordering>(
    pass: &mut NearestPass<Hit, C>,
    leaf: Leaf,
    permuted_q: u64,
    table: &Permutation,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU has the instructions the function is compiled for.
            return unsafe { offer_leaf_avx2(pass, leaf, permuted_q, table) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: as above.
            return unsafe { offer_leaf_popcnt(pass, leaf, permuted_q, table) };
        }
    }
    offer_leaf_portable(pass, leaf, permuted_q, table)
}

#[inline(always)]
fn offer_leaf_portable<C: Fn(&Hit, &Hit) -> Ordering>(
    pass: &mut NearestPass<Hit, C>,
    leaf: Leaf,
    permuted_q: u64,
    table: &Permutation,
) {
    pass.offer_leaf(leaf, permuted_q, |e| Hit {
        fp: Some(table.invert(e.key)),
        tid: e.tid,
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn offer_leaf_popcnt<C: Fn(&Hit, &Hit) -> Ordering>(
    pass: &mut NearestPass<Hit, C>,
    leaf: Leaf,
    permuted_q: u64,
    table: &Permutation,
) {
    offer_leaf_portable(pass, leaf, permuted_q, table)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn offer_leaf_avx2<C: Fn(&Hit, &Hit) -> Ordering>(
    pass: &mut NearestPass<Hit, C>,
    leaf: Leaf,
    permuted_q: u64,
    table: &Permutation,
) {
    offer_leaf_portable(pass, leaf, permuted_q, table)
}
