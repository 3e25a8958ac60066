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

use super::cache::{for_each_row_in, DirectoryPage, Row, ScanCache};
use super::matches::Matches;
use super::Query;
use crate::am::run::{self, RecentLeaves};
use neardup_core::search::index_page::{Entry, Leaf, Meta, Tid, NO_BLOCK};
use neardup_core::search::nearest::{pass_target, NearestPass, Start, NULL_BUCKET};
use neardup_core::search::permuted::{Layout, Permutation};
use neardup_core::search::prefix_bitmap::PrefixBitmap;
use neardup_core::search::rings::{expected_rings, pass_cost, ring_cost, Rings};
use neardup_core::search::table_parts::Parts;
use neardup_core::signatures::simhash::hamming;
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
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

/// The first pass's target when the largest run is read by rings (`rings`): a pass that
/// keeps fewer rows ends nearer, where fewer rings bound it (over 10 M random codes a
/// target of 32 ends near 15 bits, which rings 0 to 3 bound; 256 near 16, which takes ring
/// 4, 2.6 times as many prefixes). The passes after it take the targets of passes that
/// read whole tables, so a deeper order is not read in more passes than before.
pub const FIRST_RING_PASS_ROWS: usize = 32;

/// `neardup.ring_budget`: how much of a pass over a run's table 0 the rings of a pass may
/// cost (as estimated for the run's size) before the run is read whole instead.
pub static RING_BUDGET: GucSetting<f64> = GucSetting::<f64>::new(0.5);

pub fn init() {
    GucRegistry::define_float_guc(
        c"neardup.ring_budget",
        c"Share of a whole pass over a hamming index's run that a nearest-first pass may spend reading it by rings.",
        c"0 reads every run whole; a large value reads by rings whatever they cost.",
        &RING_BUDGET,
        0.0,
        1e12,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The runs (positions in the metapage) that rings read as one: each run alone, and the
/// runs of a merge table by table together. During that merge each key of each table of
/// each row is in exactly one of their trees (the new run's once published, an input's
/// until then), and they share a layout and their tables' parts, so their trees of one
/// part read together hold one run's: rings find each row once, from its home table,
/// whichever of them holds that table's key now, and their table 0 trees read together
/// hold each row once. Read one by one, a row whose table 0 had moved to the new run and
/// whose home table had not was missed or found twice. Runs of a merge whose layouts
/// differ (never written so) are in no unit: they are read whole.
pub fn ring_units(meta: &Meta, layouts: &[Layout], parts: &[Parts]) -> Vec<Vec<usize>> {
    let (merge, alone): (Vec<usize>, Vec<usize>) =
        (0..meta.runs.len()).partition(|&r| meta.in_merge(meta.runs[r].id));
    let mut units: Vec<Vec<usize>> = alone.into_iter().map(|r| vec![r]).collect();
    let alike = |a: usize, b: usize| layouts[a] == layouts[b] && parts[a] == parts[b];
    if !merge.is_empty() && merge.windows(2).all(|w| alike(w[0], w[1])) {
        units.push(merge);
    }
    units
}

/// The rows of the runs of `unit`.
fn unit_rows(meta: &Meta, unit: &[usize]) -> u64 {
    unit.iter().map(|&r| meta.runs[r].rows).sum()
}

/// The layout of the runs of `unit` (of `ring_units`, which share one): its first run's.
fn unit_layout<'c>(cache: &'c ScanCache, unit: &[usize]) -> &'c Layout {
    &cache.layouts[unit[0]]
}

/// Whether a pass over the runs of `cache` from distance `from` keeping `target` rows reads
/// the runs of `unit` (of `ring_units`) by rings.
fn by_rings(cache: &ScanCache, unit: &[usize], from: u32, target: usize) -> bool {
    let pass = (cache.meta.run_rows(), from, target);
    let rows = unit_rows(&cache.meta, unit);
    expected_rings(unit_layout(cache, unit), rows, pass, RING_BUDGET.get()).is_some()
}

/// What a scan's first pass over the runs of `meta` costs, as a share of a pass over every
/// run's table 0, when its largest unit of runs (`ring_units`) is read by rings: for the
/// cost model.
pub fn first_pass_share(meta: &Meta) -> f64 {
    let (layouts, parts) = crate::am::meta::layouts::<Layout>(meta);
    let units = ring_units(meta, &layouts, &parts);
    let Some(largest) = units.iter().max_by_key(|u| unit_rows(meta, u)) else {
        return 1.0;
    };
    let (total, rows) = (meta.run_rows(), unit_rows(meta, largest));
    let pass = (total, meta.max_distance + 1, FIRST_RING_PASS_ROWS);
    match expected_rings(&layouts[largest[0]], rows, pass, RING_BUDGET.get()) {
        Some((_, cost)) => (cost + pass_cost(total - rows)) / pass_cost(total),
        None => 1.0,
    }
}

/// The target of pass number `pass` (from 0) of a scan over the runs of `cache`.
fn target_of_pass(cache: &ScanCache, pass: u32, start: u32) -> usize {
    let cap = pass_rows_cap();
    let units = ring_units(&cache.meta, &cache.layouts, &cache.parts);
    let largest = units.iter().max_by_key(|u| unit_rows(&cache.meta, u));
    if pass == 0 && largest.is_some_and(|u| by_rings(cache, u, start, FIRST_RING_PASS_ROWS)) {
        return pass_target(0, FIRST_RING_PASS_ROWS, cap);
    }
    pass_target(pass, FIRST_PASS_ROWS, cap)
}

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
                    let target = target_of_pass(cache, self.passes, start.distance);
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
    let from = start.distance;
    let mut pass = NearestPass::new(start, target, |a: &Hit, b: &Hit| {
        compare(a, b, within_distance)
    });
    // Without conditions, the large runs may be read by rings, after the rest has narrowed
    // the pass's cutoff.
    let plain_q = q.filter(|_| !conditions);
    let ring_units: Vec<Vec<usize>> = match plain_q {
        Some(_) => ring_units(&cache.meta, &cache.layouts, &cache.parts)
            .into_iter()
            .filter(|unit| by_rings(cache, unit, from, target))
            .collect(),
        None => Vec::new(),
    };
    let ring_runs: Vec<usize> = ring_units.concat();
    let runs = cache.meta.runs.iter().zip(&cache.layouts).zip(&cache.parts);
    let mut recent = RecentLeaves::take(index);
    for (i, ((run, layout), parts)) in runs.enumerate() {
        let table = &layout.tables()[0];
        let trees = if ring_runs.contains(&i) {
            &[]
        } else {
            &run.trees[parts.trees_of(0)]
        };
        for tree in trees {
            let mut block = tree.first_leaf;
            while block != NO_BLOCK {
                let ((), next) =
                    recent.read_leaf(index, run.id, block, |leaf: Leaf| match plain_q {
                        Some(q) => offer_leaf(&mut pass, leaf, table.apply(q), table, |_| true),
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
    if let Some(q) = plain_q {
        let mut reader = RingReader {
            index,
            cache,
            recent: &mut recent,
            pass: &mut pass,
            q,
        };
        reader.offer_by_rings(&ring_units);
    }
    let selected = pass.finish();
    (selected.rows, selected.next)
}

/// A pass reading runs by rings: what each of its steps reads and offers to.
struct RingReader<'a, C> {
    index: pg_sys::Relation,
    cache: &'a mut ScanCache,
    recent: &'a mut RecentLeaves,
    pass: &'a mut NearestPass<Hit, C>,
    q: u64,
}

impl<C: Fn(&Hit, &Hit) -> Ordering> RingReader<'_, C> {
    /// Offers the rows of each unit of runs of `units` (of `ring_units`) ring by ring
    /// (`neardup_core::search::rings`: every table's prefixes 0, 1, 2 … bits from `q`'s)
    /// until the pass's cutoff is nearer than every row not read yet. A unit whose rings
    /// come to cost more than `neardup.ring_budget` passes over its table 0 (a query far
    /// from every row) is read whole instead, skipping the rows its rings offered, so a
    /// pass costs at most about 1.5 whole reads.
    fn offer_by_rings(&mut self, units: &[Vec<usize>]) {
        let rows: Vec<u64> = units
            .iter()
            .map(|u| unit_rows(&self.cache.meta, u))
            .collect();
        let rings: Vec<Rings> = (units.iter())
            .map(|u| Rings::new(unit_layout(self.cache, u), self.q))
            .collect();
        let mut spent = vec![0.0; units.len()];
        // Positions in `units` still read ring by ring.
        let mut reading: Vec<usize> = (0..units.len()).collect();
        for e in 0..=64u32 {
            if e > 0 {
                let unread = reading.iter().map(|&i| rings[i].unread_from(e - 1)).min();
                match unread {
                    None => return,
                    Some(nearest) if self.pass.cutoff() < nearest => {
                        self.pass.unread_beyond();
                        return;
                    }
                    Some(_) => {}
                }
            }
            let mut still = Vec::with_capacity(reading.len());
            for i in reading {
                let layout = unit_layout(self.cache, &units[i]);
                let widest = layout.tables().iter().map(|t| t.prefix_bits).max();
                if widest.is_some_and(|w| e > w) {
                    continue; // every row was read
                }
                spent[i] += ring_cost(layout, rows[i], e);
                if spent[i] > RING_BUDGET.get() * pass_cost(rows[i]) {
                    for &run in &units[i] {
                        self.offer_unread(run, &rings[i], e);
                    }
                } else {
                    for &run in &units[i] {
                        self.offer_ring(run, &rings[i], e);
                    }
                    still.push(i);
                }
            }
            reading = still;
        }
    }

    /// Offers the rows of ring `e` of every table of run `run` whose home it is (and whose
    /// key that table of this run holds: `ring_units`).
    fn offer_ring(&mut self, run: usize, rings: &Rings, e: u32) {
        let RingReader {
            index,
            cache,
            recent,
            pass,
            q,
        } = self;
        let ScanCache {
            meta,
            layouts,
            parts,
            directory,
            ..
        } = cache;
        let (index, r, layout) = (*index, &meta.runs[run], &layouts[run]);
        for (t, table) in layout.tables().iter().enumerate() {
            let key_q = table.apply(*q);
            for (lo, hi) in rings.ranges(t, e) {
                let tree = &r.trees[parts[run].tree_of(t, lo)];
                if tree.root != NO_BLOCK {
                    let root = DirectoryPage::cached(directory, index, tree.root, r.id);
                    if let Some(prefixes) = &root.prefixes {
                        if !PrefixBitmap::may_hold(prefixes, lo, hi) {
                            continue;
                        }
                    }
                }
                let start = run::descend(tree, lo, |block, visit| {
                    let page = DirectoryPage::cached(directory, index, block, r.id);
                    visit(&page.contents, page.level)
                });
                let mut block = start.unwrap_or(NO_BLOCK);
                while block != NO_BLOCK {
                    let (more, next) = recent.read_leaf(index, r.id, block, |leaf: Leaf| {
                        for i in leaf.lower_bound(lo)..leaf.len() {
                            let key = leaf.key(i);
                            if key > hi {
                                return false;
                            }
                            let d = hamming(key, key_q);
                            if d > pass.cutoff() {
                                pass.unread_beyond();
                                continue;
                            }
                            // A row within the cutoff is offered from its home only.
                            let fp = table.invert(key);
                            if rings.is_home(t, e, fp) {
                                pass.offer(d, || Hit {
                                    fp: Some(fp),
                                    tid: leaf.entry(i).tid,
                                });
                            }
                        }
                        true
                    });
                    block = if more { next } else { NO_BLOCK };
                }
            }
        }
    }

    /// Offers the rows of run `run`'s table 0 that rings `0..e` did not offer (from
    /// whichever run of its unit held their home table).
    fn offer_unread(&mut self, run: usize, rings: &Rings, e: u32) {
        let (r, layout) = (&self.cache.meta.runs[run], &self.cache.layouts[run]);
        let table = &layout.tables()[0];
        let key_q = table.apply(self.q);
        let fresh = |key: u64| rings.home(table.invert(key)).1 >= e;
        let (recent, pass) = (&mut *self.recent, &mut *self.pass);
        for tree in &r.trees[self.cache.parts[run].trees_of(0)] {
            let mut block = tree.first_leaf;
            while block != NO_BLOCK {
                let ((), next) = recent.read_leaf(self.index, r.id, block, |leaf: Leaf| {
                    offer_leaf(pass, leaf, key_q, table, fresh)
                });
                block = next;
            }
        }
    }
}

/// Offers a leaf's entries that pass `fresh` (their stored keys) to a pass, with AVX2 or
/// the CPU's popcount instruction where it has them: the distance test is nearly the whole
/// cost of a pass, and the portable build (the x86-64 baseline) counts bits in a dozen
/// instructions.
fn offer_leaf<C: Fn(&Hit, &Hit) -> Ordering, F: Fn(u64) -> bool>(
    pass: &mut NearestPass<Hit, C>,
    leaf: Leaf,
    permuted_q: u64,
    table: &Permutation,
    fresh: F,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU has the instructions the function is compiled for.
            return unsafe { offer_leaf_avx2(pass, leaf, permuted_q, table, fresh) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: as above.
            return unsafe { offer_leaf_popcnt(pass, leaf, permuted_q, table, fresh) };
        }
    }
    offer_leaf_portable(pass, leaf, permuted_q, table, fresh)
}

#[inline(always)]
fn offer_leaf_portable<C: Fn(&Hit, &Hit) -> Ordering, F: Fn(u64) -> bool>(
    pass: &mut NearestPass<Hit, C>,
    leaf: Leaf,
    permuted_q: u64,
    table: &Permutation,
    fresh: F,
) {
    pass.offer_leaf_where(leaf, permuted_q, fresh, |e| Hit {
        fp: Some(table.invert(e.key)),
        tid: e.tid,
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn offer_leaf_popcnt<C: Fn(&Hit, &Hit) -> Ordering, F: Fn(u64) -> bool>(
    pass: &mut NearestPass<Hit, C>,
    leaf: Leaf,
    permuted_q: u64,
    table: &Permutation,
    fresh: F,
) {
    offer_leaf_portable(pass, leaf, permuted_q, table, fresh)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn offer_leaf_avx2<C: Fn(&Hit, &Hit) -> Ordering, F: Fn(u64) -> bool>(
    pass: &mut NearestPass<Hit, C>,
    leaf: Leaf,
    permuted_q: u64,
    table: &Permutation,
    fresh: F,
) {
    offer_leaf_portable(pass, leaf, permuted_q, table, fresh)
}
