//! Nearest-first passes that read only part of a large run: multi-index search (Norouzi,
//! Punjani and Fleet, 2014) over Manku's permuted tables.
//!
//! Each table of a layout leads with `r − k` of its `r` blocks (`permuted`). A row's *group
//! distance* in a table is its distance to the query on that table's leading blocks alone.
//! *Ring* `e` of a table is the rows whose group distance there is exactly `e`: the key
//! ranges of the C(w, e) prefixes of `w` bits that differ from the query's in `e` bits. A
//! row is offered from its *home* only: the first table where its group distance is
//! smallest, at the ring of that distance. So reading rings `0..=e` of every table offers
//! each row whose smallest group distance is at most `e`, exactly once.
//!
//! A row not offered yet differs from the query in at least `e + 1` bits on the leading
//! blocks of every table, so also on the `r − k` blocks where it differs least (they lead
//! some table); each of the other `k` blocks differs at least as much as the average of
//! those, so the row is at least ⌈(e + 1)·r / (r − k)⌉ bits away ([`Rings::unread_from`]).
//! Once a pass's cutoff is below that, the rings read hold every row the pass keeps, and
//! the rest of the run is beyond it. At 10 M rows and 4 tables of 16-bit prefixes, rings
//! 0 to 3 (697 prefixes, 1 % of each table) bound the unread rows at 16 bits, where a
//! LIMIT 10 pass over random codes ends near 14: 4 % of one table's keys are tested
//! instead of all of them, in 2,800 short ranges.

use crate::search::index_page::ENTRIES_PER_PAGE;
use crate::search::nearest::uniform_cutoff;
use crate::search::permuted::Layout;

/// The query's prefix in one table.
struct TableRing {
    /// The bits of the table's leading blocks, in the fingerprint's own order.
    leading_mask: u64,
    /// Their number, `w`.
    prefix_bits: u32,
    /// The query's permuted value's leading `w` bits.
    prefix: u64,
}

/// The rings of the tables of one layout around one query.
pub struct Rings {
    query: u64,
    tables: Vec<TableRing>,
    blocks: u32,
    leading_blocks: u32,
}

impl Rings {
    pub fn new(layout: &Layout, query: u64) -> Rings {
        let tables = layout
            .tables()
            .iter()
            .map(|t| TableRing {
                leading_mask: t.leading_mask(),
                prefix_bits: t.prefix_bits,
                prefix: t.leading_bits(query, t.prefix_bits),
            })
            .collect();
        Rings {
            query,
            tables,
            blocks: layout.blocks(),
            leading_blocks: layout.blocks() - layout.max_distance,
        }
    }

    /// The key ranges (first key, last key, in `table`'s order) of ring `e` of `table`,
    /// ascending, so that a reader goes through the table's leaves in order.
    pub fn ranges(&self, table: usize, e: u32) -> Vec<(u64, u64)> {
        let t = &self.tables[table];
        let w = t.prefix_bits;
        let low_bits = 64 - w;
        let low_mask = if low_bits == 0 {
            0
        } else {
            (1u64 << low_bits) - 1
        };
        let mut ranges: Vec<(u64, u64)> = Vec::with_capacity(ring_len(w, e) as usize);
        for_each_flip(w, e, |flip| {
            let prefix = t.prefix ^ flip;
            let first = if w == 0 { 0 } else { prefix << low_bits };
            ranges.push((first, first | low_mask));
        });
        ranges.sort_unstable();
        ranges
    }

    /// The distance between `fp` and the query on the leading blocks of `table`.
    #[inline]
    pub fn group_distance(&self, table: usize, fp: u64) -> u32 {
        ((fp ^ self.query) & self.tables[table].leading_mask).count_ones()
    }

    /// `fp`'s home: the first table where its group distance is smallest, and that
    /// distance (the ring it is offered from).
    pub fn home(&self, fp: u64) -> (usize, u32) {
        (0..self.tables.len())
            .map(|t| (t, self.group_distance(t, fp)))
            .min_by_key(|&(t, d)| (d, t))
            .expect("a layout has a table")
    }

    /// Whether a row found in ring `e` of `table` is offered there: that is its home.
    #[inline]
    pub fn is_home(&self, table: usize, e: u32, fp: u64) -> bool {
        self.home(fp) == (table, e)
    }

    /// The least distance of a row not offered by rings `0..=e` of every table.
    pub fn unread_from(&self, e: u32) -> u32 {
        unread_from(self.blocks, self.leading_blocks, e)
    }
}

/// ⌈(e + 1)·r / (r − k)⌉ for `blocks` r and `leading` r − k (see the module comment).
fn unread_from(blocks: u32, leading: u32, e: u32) -> u32 {
    ((e + 1) * blocks).div_ceil(leading)
}

/// Calls `f` with every `w`-bit value with `e` bits set (`e <= w <= 64`), in increasing
/// order (Gosper's hack).
fn for_each_flip(w: u32, e: u32, mut f: impl FnMut(u64)) {
    if e > w {
        return;
    }
    if e == 0 {
        f(0);
        return;
    }
    let last: u128 = ((1u128 << e) - 1) << (w - e);
    let mut x: u128 = (1u128 << e) - 1;
    loop {
        f(x as u64);
        if x == last {
            return;
        }
        let low = x & x.wrapping_neg();
        let ripple = x + low;
        x = ripple | (((x ^ ripple) >> 2) / low);
    }
}

/// C(w, e): the prefixes in ring `e` of a table with `w`-bit prefixes.
fn ring_len(w: u32, e: u32) -> f64 {
    if e > w {
        return 0.0;
    }
    (0..e).fold(1.0, |acc, i| acc * (w - i) as f64 / (i + 1) as f64)
}

/// What reading costs, in units of a key tested by a pass over a table (measured over
/// 10 M random fingerprints, bench/knn.sh): a leaf read whole about 150 keys' worth (the
/// buffer's pin and lock, its tail's cache misses); a key range looked up about 1,300 (a
/// descent of the cached directory, the leaf, a binary search in it, each mostly cache
/// misses).
const LEAF_COST: f64 = 150.0;
const RANGE_COST: f64 = 1300.0;

/// The cost of a pass over table 0 of a run of `rows` rows.
pub fn pass_cost(rows: u64) -> f64 {
    rows as f64 * (1.0 + LEAF_COST / ENTRIES_PER_PAGE as f64)
}

/// The cost of reading ring `e` of every table of a run of `rows` rows laid out as
/// `layout` (its rows spread over the prefixes as uniformly random ones are).
pub fn ring_cost(layout: &Layout, rows: u64, e: u32) -> f64 {
    layout
        .tables()
        .iter()
        .map(|t| {
            let per_prefix = rows as f64 / 2f64.powi(t.prefix_bits as i32);
            ring_len(t.prefix_bits, e) * (per_prefix + RANGE_COST)
        })
        .sum()
}

/// The rings a pass is expected to read in a run of `rows` rows laid out as `layout`, and
/// what they cost: the pass keeps `target` rows from distance `from` on out of `total`
/// (every run's), and rings `0..=e` suffice once they bound its cutoff, for uniformly
/// random rows (rows near one another end a pass sooner). `None` when they would cost
/// more than `budget` passes over the run's table 0.
pub fn expected_rings(
    layout: &Layout,
    rows: u64,
    (total, from, target): (u64, u32, usize),
    budget: f64,
) -> Option<(u32, f64)> {
    let cutoff = uniform_cutoff(total, from, target);
    let affordable = budget * pass_cost(rows);
    let mut cost = 0.0;
    for e in 0..=64 {
        cost += ring_cost(layout, rows, e);
        if cost > affordable {
            return None;
        }
        if unread_from(layout.blocks(), layout.blocks() - layout.max_distance, e) > cutoff {
            return Some((e, cost));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::splitmix::splitmix64_next;
    use crate::signatures::simhash::hamming;

    #[test]
    fn a_ring_holds_every_prefix_that_many_bits_away_once_in_order() {
        for (w, e) in [
            (16, 0),
            (16, 1),
            (16, 3),
            (13, 2),
            (26, 2),
            (5, 5),
            (64, 1),
            (64, 0),
        ] {
            let mut flips = Vec::new();
            for_each_flip(w, e, |x| flips.push(x));
            assert_eq!(flips.len() as f64, ring_len(w, e), "w {w} e {e}");
            assert!(flips.windows(2).all(|p| p[0] < p[1]));
            assert!(flips
                .iter()
                .all(|x| x.count_ones() == e && (w == 64 || x >> w == 0)));
        }
        assert_eq!(ring_len(16, 17), 0.0);
    }

    /// Reading rings 0..=e of every table and offering each row from its home finds each
    /// row with smallest group distance at most e once, and every row nearer than
    /// `unread_from(e)`, for every layout of 64-bit fingerprints up to 8 blocks.
    #[test]
    fn rings_offer_each_row_once_and_every_row_nearer_than_their_bound() {
        let mut state = 7;
        let mut rng = move || splitmix64_next(&mut state);
        for blocks in 2..=8 {
            for k in 0..blocks {
                let Ok(layout) = Layout::new(blocks, k) else {
                    continue;
                };
                let q = rng();
                // rows near the query (few bits flipped) and random ones
                let fps: Vec<u64> = (0..3000)
                    .map(|i| {
                        let mut fp = if i % 3 == 0 { rng() } else { q };
                        for _ in 0..(i % 29) {
                            fp ^= 1 << (rng() % 64);
                        }
                        fp
                    })
                    .collect();
                let rings = Rings::new(&layout, q);
                let tables: Vec<Vec<u64>> = layout
                    .tables()
                    .iter()
                    .map(|t| {
                        let mut keys: Vec<u64> = fps.iter().map(|&fp| t.apply(fp)).collect();
                        keys.sort_unstable();
                        keys
                    })
                    .collect();
                let mut offered = vec![0u32; fps.len()];
                let mut seen = std::collections::HashMap::<u64, Vec<usize>>::new();
                for (i, &fp) in fps.iter().enumerate() {
                    seen.entry(fp).or_default().push(i);
                }
                for e in 0..=4 {
                    let mut copies = std::collections::HashMap::<u64, u32>::new();
                    for (t, keys) in tables.iter().enumerate() {
                        for (lo, hi) in rings.ranges(t, e) {
                            let from = keys.partition_point(|&k| k < lo);
                            for &key in keys[from..].iter().take_while(|&&k| k <= hi) {
                                let fp = layout.tables()[t].invert(key);
                                assert_eq!(rings.group_distance(t, fp), e);
                                if rings.is_home(t, e, fp) {
                                    *copies.entry(fp).or_default() += 1;
                                }
                            }
                        }
                    }
                    for (fp, n) in copies {
                        assert_eq!(n as usize, seen[&fp].len(), "each row once");
                        for &i in &seen[&fp] {
                            offered[i] += 1;
                        }
                    }
                    let bound = rings.unread_from(e);
                    for (i, &fp) in fps.iter().enumerate() {
                        let home = rings.home(fp).1;
                        assert_eq!(offered[i], u32::from(home <= e), "blocks {blocks} k {k}");
                        if hamming(fp, q) < bound {
                            assert_eq!(offered[i], 1, "a row nearer than the bound is read");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn rings_are_expected_to_pay_for_large_runs_and_small_targets_only() {
        let large = Layout::for_rows(10_000_000, 3).unwrap();
        let pass = (10_000_000, 0, 32);
        let (e, cost) = expected_rings(&large, 10_000_000, pass, 0.5).unwrap();
        assert_eq!(e, 3);
        assert!(cost < 0.5 * pass_cost(10_000_000));
        assert!(expected_rings(&large, 10_000_000, (10_000_000, 0, 100_000), 0.5).is_none());
        assert!(expected_rings(&large, 10_000_000, pass, 0.0).is_none());
        let small = Layout::for_rows(100_000, 3).unwrap();
        assert!(expected_rings(&small, 100_000, (100_000, 0, 32), 0.5).is_none());
        assert!(expected_rings(&small, 100_000, (100_000, 0, 32), 1e9).is_some());
    }
}
