//! Exact nearest-first order by Hamming distance in bounded memory, for `ORDER BY fp <~> q`
//! past the distances an index answers by lookup.
//!
//! Distances between 64-bit fingerprints take only 65 values (and NULL, kept in a bucket of
//! its own after them), so ordering by distance needs no comparison sort: one pass over the
//! rows drops each into the bucket of its distance. Keeping every bucket would hold the
//! whole table, though, and a `LIMIT 10` consumer reads only the first few. A
//! [`NearestPass`] therefore keeps the buckets from a starting point up to the first one at
//! which a running count reaches a target, and only counts the rows beyond: as rows arrive,
//! the largest kept bucket is dropped whenever the buckets below it already hold the
//! target. The farthest kept bucket may still hold many rows at one distance (duplicates):
//! past twice what the pass needs of it, it keeps only the first rows in the caller's order
//! within a distance (the TID), and the pass ends inside that distance. What a pass keeps
//! is complete up to where it ends, so the caller returns it and, only if the consumer
//! wants more, makes another pass starting just after it. Memory stays under twice the
//! target.

use crate::search::index_page::{Entry, Leaf};
use crate::search::within;
use crate::signatures::simhash::hamming;
use std::cmp::Ordering;

/// The largest Hamming distance between two 64-bit fingerprints.
pub const MAX_DISTANCE: u32 = 64;

/// The bucket of rows whose distance is NULL (a NULL fingerprint or query): after all.
pub const NULL_BUCKET: u32 = MAX_DISTANCE + 1;

/// A bucket is cut to what the pass needs of it once it holds twice that, and at least this
/// many rows (sorting a bucket of a few rows again and again would cost more than it saves).
const FEWEST_TO_CUT: usize = 64;

/// Keys of a page compared at once by `NearestPass::offer_leaf` (a few KB of stack).
const KEYS_AT_ONCE: usize = 256;

/// Where a pass starts: at `distance`, after the row `after` of that distance (in the
/// pass's order within a distance) when an earlier pass ended inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start<T> {
    pub distance: u32,
    pub after: Option<T>,
}

impl<T> Start<T> {
    /// The start of a distance's bucket.
    pub fn at(distance: u32) -> Start<T> {
        Start {
            distance,
            after: None,
        }
    }
}

/// One pass's selection of the rows nearest to a query from its start on (nearer ones
/// were returned by earlier passes and are ignored). `order` orders rows of one distance.
pub struct NearestPass<T, C> {
    start: Start<T>,
    /// The largest distance still kept; only shrinks during a pass.
    cutoff: u32,
    /// When the cutoff's bucket was cut: its last row kept (rows after it are not).
    bound: Option<T>,
    target: usize,
    /// Indexed by distance; only `start.distance..=cutoff` ever hold rows.
    buckets: Vec<Vec<T>>,
    /// Rows kept at distances below `cutoff`.
    below_cutoff: usize,
    /// Rows after where the pass ends: offered past it, or dropped with a bucket.
    beyond: u64,
    order: C,
}

impl<T: Clone, C: Fn(&T, &T) -> Ordering> NearestPass<T, C> {
    /// A pass keeping the rows from `start` on until about `target` are kept (`target` 0
    /// counts as 1).
    pub fn new(start: Start<T>, target: usize, order: C) -> NearestPass<T, C> {
        NearestPass {
            cutoff: NULL_BUCKET.max(start.distance),
            start,
            bound: None,
            target: target.max(1),
            buckets: (0..=NULL_BUCKET).map(|_| Vec::new()).collect(),
            below_cutoff: 0,
            beyond: 0,
            order,
        }
    }

    /// Offers a row at `distance` (`NULL_BUCKET` for a NULL one); `row` is called only if
    /// the row may be kept, so a caller can skip decoding the rows most passes reject.
    #[inline]
    pub fn offer(&mut self, distance: u32, row: impl FnOnce() -> T) {
        if distance < self.start.distance {
            return;
        }
        if distance > self.cutoff {
            self.beyond += 1;
            return;
        }
        let row = row();
        if distance == self.start.distance
            && self
                .start
                .after
                .as_ref()
                .is_some_and(|after| (self.order)(&row, after) != Ordering::Greater)
        {
            return;
        }
        if distance == self.cutoff
            && self
                .bound
                .as_ref()
                .is_some_and(|bound| (self.order)(&row, bound) == Ordering::Greater)
        {
            self.beyond += 1;
            return;
        }
        self.buckets[distance as usize].push(row);
        if distance < self.cutoff {
            self.below_cutoff += 1;
        }
        // The buckets below the cutoff suffice: the cutoff's own is no longer needed.
        while self.cutoff > self.start.distance && self.below_cutoff >= self.target {
            let dropped = &mut self.buckets[self.cutoff as usize];
            self.beyond += dropped.len() as u64;
            *dropped = Vec::new();
            self.bound = None;
            self.cutoff -= 1;
            self.below_cutoff -= self.buckets[self.cutoff as usize].len();
        }
        self.cut_the_cutoff_bucket();
    }

    /// Keeps only the first rows of the cutoff's bucket that the pass needs, once it holds
    /// twice that many: the pass then ends inside that distance.
    fn cut_the_cutoff_bucket(&mut self) {
        let need = self.target.saturating_sub(self.below_cutoff).max(1);
        let bucket = &mut self.buckets[self.cutoff as usize];
        if bucket.len() < 2 * need.max(FEWEST_TO_CUT) {
            return;
        }
        // A selection, not a sort: the rows kept are sorted once, when the pass ends, and a
        // crowded distance may be cut again and again while the pass reads on.
        let (_, last, _) = bucket.select_nth_unstable_by(need - 1, &self.order);
        self.bound = Some(last.clone());
        self.beyond += (bucket.len() - need) as u64;
        bucket.truncate(need);
    }

    /// Offers every entry of a leaf (see [`crate::search::index_page`]). The distance is
    /// taken on the key as stored, against `key_query`: the query permuted as the keys are
    /// (a permutation of bits keeps distances), so only the entries kept are decoded by
    /// `row`. Always inlined, so that a caller compiled for the popcount instruction or
    /// AVX2 gets them here: this loop is nearly the whole cost of a pass, and it is bound
    /// by the bytes it reads (a leaf laid out as columns gives it the keys alone). The keys
    /// are gathered `KEYS_AT_ONCE` at a time and compared with the cutoff without a branch
    /// (`within::count_within_radius`); only the few within it are offered (a pass's cutoff
    /// soon narrows to the distance of its target's row).
    #[inline(always)]
    pub fn offer_leaf(&mut self, leaf: Leaf, key_query: u64, row: impl FnMut(Entry) -> T) {
        self.offer_leaf_where(leaf, key_query, |_| true, row)
    }

    /// `offer_leaf` for the entries whose stored keys pass `fresh` only: the others were
    /// offered before (see `rings`). `fresh` is asked only of the entries within the
    /// cutoff.
    #[inline(always)]
    pub fn offer_leaf_where(
        &mut self,
        leaf: Leaf,
        key_query: u64,
        fresh: impl Fn(u64) -> bool,
        mut row: impl FnMut(Entry) -> T,
    ) {
        if let Some(words) = leaf.key_words() {
            for (chunk, keys) in words.chunks(KEYS_AT_ONCE).enumerate() {
                let from = chunk * KEYS_AT_ONCE;
                self.offer_keys(keys, from, leaf, key_query, &fresh, &mut row);
            }
            return;
        }
        let mut keys = [0u64; KEYS_AT_ONCE];
        for from in (0..leaf.len()).step_by(KEYS_AT_ONCE) {
            let keys = &mut keys[..KEYS_AT_ONCE.min(leaf.len() - from)];
            leaf.copy_keys(from, keys);
            self.offer_keys(keys, from, leaf, key_query, &fresh, &mut row);
        }
    }

    /// Offers the entries `from..` of `leaf` whose keys are `keys` and pass `fresh`.
    #[inline(always)]
    fn offer_keys(
        &mut self,
        keys: &[u64],
        from: usize,
        leaf: Leaf,
        key_query: u64,
        fresh: &impl Fn(u64) -> bool,
        row: &mut impl FnMut(Entry) -> T,
    ) {
        // The cutoff only narrows: a row beyond it now is beyond the pass.
        let mut within = 0;
        within::count_within_radius(keys, key_query, self.cutoff, |i| {
            within += 1;
            if fresh(keys[i]) {
                self.offer(hamming(keys[i], key_query), || row(leaf.entry(from + i)));
            }
        });
        self.beyond += (keys.len() - within) as u64;
    }

    /// The largest distance the pass still keeps: a row farther is beyond it.
    pub fn cutoff(&self) -> u32 {
        self.cutoff
    }

    /// Notes that rows the pass was not offered lie beyond it (a pass reading rings learns
    /// they are farther than its cutoff without reading them), so that another pass
    /// follows this one.
    pub fn unread_beyond(&mut self) {
        self.beyond += 1;
    }

    /// Ends the pass: the rows it kept, in order.
    pub fn finish(self) -> Selected<T> {
        let from = self.start.distance;
        let to = self.cutoff;
        let order = self.order;
        let rows = self
            .buckets
            .into_iter()
            .skip(from as usize)
            .take((to + 1).saturating_sub(from) as usize)
            .flat_map(|mut bucket| {
                bucket.sort_unstable_by(&order);
                bucket
            })
            .collect();
        let next = match self.bound {
            Some(after) => Some(Start {
                distance: to,
                after: Some(after),
            }),
            None => (self.beyond > 0).then(|| Start::at(to + 1)),
        };
        Selected { rows, next }
    }
}

/// What a pass kept, nearest first, and where the next pass starts if any row is left.
pub struct Selected<T> {
    pub rows: Vec<T>,
    pub next: Option<Start<T>>,
}

/// The target of pass number `pass` (from 0): `first`, times `PASS_GROWTH` at every pass
/// up to `cap`. A `LIMIT n` consumer usually needs only the first, small pass; one that
/// reads on pays a whole pass over the table for each further one, so they grow fast: a
/// few passes reach any usual LIMIT, and a full order takes a few dozen without holding
/// more than `cap` rows.
pub fn pass_target(pass: u32, first: usize, cap: usize) -> usize {
    let growth = PASS_GROWTH.checked_pow(pass).unwrap_or(usize::MAX);
    first
        .max(1)
        .saturating_mul(growth)
        .min(cap.max(first).max(1))
}

/// How much each pass's target exceeds the one before.
pub const PASS_GROWTH: usize = 4;

/// The passes an order over `rows` uniformly random fingerprints from distance `from` to
/// the end takes (the cost model's estimate of a full order): the distances of random
/// fingerprints follow the binomial law B(64, ½).
pub fn passes_for_uniform(rows: f64, from: u32, first: usize, cap: usize) -> u32 {
    let expected: Vec<f64> = (0..=MAX_DISTANCE)
        .map(|d| rows * binomial_probability(d))
        .collect();
    let mut from = from;
    let mut passes = 0;
    while from <= MAX_DISTANCE && expected[from as usize..].iter().sum::<f64>() >= 0.5 {
        let target = pass_target(passes, first, cap) as f64;
        let mut kept = 0.0;
        let mut to = from;
        // As in NearestPass: the cutoff is the first distance at which the count reaches
        // the target.
        while to < MAX_DISTANCE {
            kept += expected[to as usize];
            if kept >= target {
                break;
            }
            to += 1;
        }
        passes += 1;
        from = to + 1;
    }
    passes
}

/// The distance at which a pass from distance `from` keeping `target` rows out of `rows`
/// uniformly random fingerprints is expected to end: the first at which the expected count
/// from `from` on reaches the target.
pub fn uniform_cutoff(rows: u64, from: u32, target: usize) -> u32 {
    let mut expected = 0.0;
    for d in from..=MAX_DISTANCE {
        expected += rows as f64 * binomial_probability(d);
        if expected >= target as f64 {
            return d;
        }
    }
    MAX_DISTANCE
}

/// C(64, d) / 2^64: the chance that a random fingerprint lies `d` bits from a given one.
fn binomial_probability(d: u32) -> f64 {
    (0..d).fold(1.0, |acc, i| acc * (64 - i) as f64 / (i + 1) as f64) / 2f64.powi(64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::splitmix::splitmix64_next;
    use crate::search::index_page::{write_columns, LeafLayout, NoRest, Tid, ENTRY_SIZE};

    /// Random fingerprints with clusters near the query and duplicates, so buckets vary
    /// from empty to crowded.
    fn fingerprints(seed: u64, n: usize, q: u64) -> Vec<u64> {
        let mut state = seed;
        let mut rng = move || splitmix64_next(&mut state);
        let mut fps: Vec<u64> = (0..n).map(|_| rng()).collect();
        for i in 0..n / 10 {
            let bits = (rng() % 20) as u32;
            let mut fp = q;
            for _ in 0..bits {
                fp ^= 1 << (rng() % 64);
            }
            fps[i * 7 % n] = fp;
        }
        for i in 0..n / 20 {
            fps[i * 3 % n] = fps[i * 11 % n];
        }
        fps
    }

    /// The whole order through passes of the given targets, checking after every row that
    /// a pass holds at most twice its target (and its cut's minimum).
    fn order_by_passes(
        fps: &[u64],
        q: u64,
        from: u32,
        first: usize,
        cap: usize,
    ) -> Vec<(u32, u32)> {
        let mut order = Vec::new();
        let mut next = Some(Start::at(from));
        let mut pass_number = 0;
        while let Some(start) = next {
            let target = pass_target(pass_number, first, cap);
            let mut pass = NearestPass::new(start, target, |a: &(u32, u32), b| a.1.cmp(&b.1));
            for (i, &fp) in fps.iter().enumerate() {
                pass.offer(hamming(fp, q), || (hamming(fp, q), i as u32));
                let kept: usize = pass.buckets.iter().map(Vec::len).sum();
                assert!(kept <= 2 * target.max(FEWEST_TO_CUT) + pass.below_cutoff);
                assert!(pass.below_cutoff < target || pass.cutoff == pass.start.distance);
            }
            let selected = pass.finish();
            next = selected.next;
            order.extend(selected.rows);
            pass_number += 1;
            assert!(pass_number <= 70 + fps.len() as u32, "passes never end");
        }
        order
    }

    fn brute_force(fps: &[u64], q: u64, from: u32) -> Vec<(u32, u32)> {
        let mut all: Vec<(u32, u32)> = fps
            .iter()
            .enumerate()
            .map(|(i, &fp)| (hamming(fp, q), i as u32))
            .filter(|&(d, _)| d >= from)
            .collect();
        all.sort_unstable();
        all
    }

    #[test]
    fn passes_give_the_brute_force_order() {
        for seed in 0..6u64 {
            let q = splitmix64_next(&mut (seed ^ 0xabc));
            let fps = fingerprints(seed, 3000, q);
            for from in [0, 4, 9, 40, 64] {
                let expected = brute_force(&fps, q, from);
                for (first, cap) in [(1, 1), (3, 50), (100, 100), (64, 4096), (10_000, 10_000)] {
                    let order = order_by_passes(&fps, q, from, first, cap);
                    assert_eq!(
                        order, expected,
                        "seed {seed} from {from} first {first} cap {cap}"
                    );
                }
            }
        }
    }

    #[test]
    fn crowded_distances_are_cut_and_taken_up_where_a_pass_ended() {
        // 5000 duplicates of one fingerprint at distance 2, 3000 at distance 0, a few
        // others: every bucket is far larger than a pass may keep.
        let q = 0u64;
        let mut fps = vec![0b11u64; 5000];
        fps.extend(std::iter::repeat_n(0u64, 3000));
        fps.extend([1, u64::MAX, 0b111]);
        let expected = brute_force(&fps, q, 0);
        for (first, cap) in [(1, 1), (10, 100), (500, 500)] {
            assert_eq!(
                order_by_passes(&fps, q, 0, first, cap),
                expected,
                "{first} {cap}"
            );
        }
    }

    #[test]
    fn a_pass_keeps_the_nearest_buckets_and_counts_the_rest() {
        let q = 0u64;
        // 5 rows at distance 1, 5 at 2, 5 at 3, 1 at 64.
        let fps: Vec<u64> = (0..5)
            .map(|i| 1 << i)
            .chain((0..5).map(|i| 3 << (2 * i + 10)))
            .chain((0..5).map(|i| 7 << (3 * i + 30)))
            .chain([u64::MAX])
            .collect();
        let by_index = |a: &usize, b: &usize| b.cmp(a);
        let mut pass = NearestPass::new(Start::at(1), 7, by_index);
        for (i, &fp) in fps.iter().enumerate() {
            pass.offer(hamming(fp, q), || i);
        }
        assert_eq!((pass.cutoff, pass.beyond), (2, 6));
        let selected = pass.finish();
        // 5 rows at distance 1 are below the target of 7, so distance 2 is kept too.
        assert_eq!(selected.next, Some(Start::at(3)));
        assert_eq!(selected.rows, vec![4, 3, 2, 1, 0, 9, 8, 7, 6, 5]);
        // Rows nearer than the start are ignored, not counted.
        let mut pass = NearestPass::new(Start::at(3), 1, usize::cmp);
        for (i, &fp) in fps.iter().enumerate() {
            pass.offer(hamming(fp, q), || i);
        }
        assert_eq!((pass.cutoff, pass.beyond), (3, 1));
        let selected = pass.finish();
        assert_eq!(selected.rows, vec![10, 11, 12, 13, 14]);
        // A start inside a distance skips the rows up to its row.
        let mut pass = NearestPass::new(
            Start {
                distance: 3,
                after: Some(12),
            },
            1,
            usize::cmp,
        );
        for (i, &fp) in fps.iter().enumerate() {
            pass.offer(hamming(fp, q), || i);
        }
        assert_eq!(pass.finish().rows, vec![13, 14]);
    }

    #[test]
    fn an_empty_or_finished_pass_needs_no_other() {
        let pass = NearestPass::<u32, _>::new(Start::at(5), 10, u32::cmp);
        let selected = pass.finish();
        assert_eq!(selected.next, None);
        assert!(selected.rows.is_empty());
        let mut pass = NearestPass::new(Start::at(64), 1, u32::cmp);
        pass.offer(64, || 1u32);
        pass.offer(64, || 2u32);
        pass.offer(12, || 3u32);
        let selected = pass.finish();
        assert_eq!((selected.rows, selected.next), (vec![1, 2], None));
        // NULL distances come after every other.
        let mut pass = NearestPass::new(Start::at(0), 10, u32::cmp);
        pass.offer(NULL_BUCKET, || 1u32);
        pass.offer(64, || 2u32);
        assert_eq!(pass.finish().rows, vec![2, 1]);
    }

    /// A position in `bytes` one past an 8-byte boundary.
    fn aligned_past(bytes: &[u8]) -> usize {
        (8 - bytes.as_ptr() as usize % 8) % 8 + 1
    }

    #[test]
    fn leaf_entries_are_offered_by_their_stored_keys_in_either_layout() {
        let q = 0x0123_4567_89ab_cdefu64;
        let fps = fingerprints(7, 2500, q);
        let tid = |i: usize| Tid {
            block: i as u32 / 7,
            offset: i as u16 % 7 + 1,
        };
        let mut rows = vec![0u8; fps.len() * ENTRY_SIZE];
        for (i, (&fp, bytes)) in fps
            .iter()
            .zip(rows.chunks_exact_mut(ENTRY_SIZE))
            .enumerate()
        {
            Entry::new(fp, [], tid(i)).write(bytes);
        }
        let mut columns = vec![0u8; rows.len()];
        write_columns(&rows, ENTRY_SIZE, &mut columns);
        let by_tid = |x: &(u32, Tid), y: &(u32, Tid)| x.1.cmp(&y.1);
        let mut one_by_one = NearestPass::new(Start::at(3), 40, by_tid);
        for (i, &fp) in fps.iter().enumerate() {
            one_by_one.offer(hamming(fp, q), || (hamming(fp, q), tid(i)));
        }
        let expected = one_by_one.finish();
        assert!(expected.rows.len() >= 40 && expected.next.is_some());
        // The columns at an aligned place (keys read in place) and one byte past it (keys
        // copied).
        let mut room = vec![0u8; columns.len() + 9];
        let aligned = (8 - room.as_ptr() as usize % 8) % 8;
        room[aligned..aligned + columns.len()].copy_from_slice(&columns);
        let in_place = &room[aligned..aligned + columns.len()];
        assert_eq!(
            Leaf::<NoRest>::new(in_place, LeafLayout::Columns)
                .key_words()
                .is_some(),
            cfg!(target_endian = "little")
        );
        let mut room_past = vec![0u8; columns.len() + 9];
        let past = aligned_past(&room_past);
        room_past[past..past + columns.len()].copy_from_slice(&columns);
        let copied = &room_past[past..past + columns.len()];
        assert_eq!(
            Leaf::<NoRest>::new(copied, LeafLayout::Columns).key_words(),
            None
        );
        for (contents, layout) in [
            (&rows[..], LeafLayout::Rows),
            (in_place, LeafLayout::Columns),
            (copied, LeafLayout::Columns),
        ] {
            let mut by_leaf = NearestPass::new(Start::at(3), 40, by_tid);
            let leaf = Leaf::new(contents, layout);
            by_leaf.offer_leaf(leaf, q, |e| (hamming(e.key, q), e.tid));
            let got = by_leaf.finish();
            assert_eq!(
                (&got.rows, &got.next),
                (&expected.rows, &expected.next),
                "{layout:?}"
            );
        }
    }

    #[test]
    fn targets_grow_up_to_the_cap() {
        let targets: Vec<usize> = (0..5).map(|p| pass_target(p, 1000, 100_000)).collect();
        assert_eq!(targets, vec![1000, 4000, 16_000, 64_000, 100_000]);
        assert_eq!(pass_target(200, 4096, 1 << 20), 1 << 20);
        assert_eq!(pass_target(0, 0, 0), 1);
    }

    #[test]
    fn uniform_passes_follow_the_binomial_law() {
        let total: f64 = (0..=MAX_DISTANCE).map(binomial_probability).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        // A million rows: the first pass (4096 rows) reaches past distance 20, a full
        // order needs a pass per crowded bucket once the cap is reached.
        let first_only = passes_for_uniform(1e6, 4, usize::MAX, usize::MAX);
        assert_eq!(first_only, 1);
        let passes = passes_for_uniform(1e6, 4, 4096, 174_762);
        assert!((8..=40).contains(&passes), "{passes}");
        assert!(passes_for_uniform(1e6, 4, 1, 1) > passes);
        assert_eq!(passes_for_uniform(0.0, 4, 4096, 4096), 0);
    }
}
