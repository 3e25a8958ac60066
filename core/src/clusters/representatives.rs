//! Clusters that do not chain: every member is within the threshold of its representative.
//!
//! Connected components link two documents through any chain of near-duplicate steps, so
//! boilerplate shared a little differently by each of many siblings can join documents that
//! have nothing else in common. Here, as Zhu et al. choose their winners, rows are taken in
//! priority order: the first row not yet in a cluster becomes a representative and takes
//! every row not yet in a cluster that is within the threshold of *it*. A cluster is then a
//! star around its representative; a row near two representatives joins the one of higher
//! priority.
//!
//! The neighbours come from the same exact searches as the pairs: permuted tables for
//! simhash ([`SimhashNeighbors`]), bands for minhash ([`MinhashNeighbors`]), held in memory
//! for the whole clustering.

use crate::base::interrupts;
use crate::search::lsh::{band_value, Banding, SketchTable};
use crate::search::permuted::{GroupedTables, Layout, LayoutError};

/// The representative of every row, as a row number, for rows `0..rows` in priority order.
/// `neighbors(r, emit)` must emit every row within the threshold of row `r` (possibly more
/// than once, and possibly `r` itself).
pub fn greedy_representatives(
    rows: usize,
    mut neighbors: impl FnMut(u32, &mut dyn FnMut(u32)),
) -> Vec<u32> {
    const NONE: u32 = u32::MAX;
    let mut representative = vec![NONE; rows];
    for r in 0..rows as u32 {
        if representative[r as usize] != NONE {
            continue;
        }
        interrupts::check();
        representative[r as usize] = r;
        neighbors(r, &mut |member| {
            let slot = &mut representative[member as usize];
            if *slot == NONE {
                *slot = r;
            }
        });
    }
    representative
}

/// Rows within a Hamming distance of a fingerprint, through permuted tables in memory.
pub struct SimhashNeighbors {
    layout: Layout,
    tables: GroupedTables,
    fps: Vec<u64>,
    max_distance: u32,
}

impl SimhashNeighbors {
    pub fn new(fps: Vec<u64>, max_distance: u32) -> Result<SimhashNeighbors, LayoutError> {
        let layout = Layout::for_rows(fps.len() as u64, max_distance)?;
        let items: Vec<(u64, u32)> = fps.iter().zip(0..).map(|(&fp, i)| (fp, i)).collect();
        let tables = GroupedTables::new(&layout, &items);
        Ok(SimhashNeighbors {
            layout,
            tables,
            fps,
            max_distance,
        })
    }

    /// Bytes held per row for `max_distance`, at the peak of `new`: the fingerprint, the
    /// (fingerprint, row) item the tables are grouped from, and the tables' share
    /// (`GroupedTables::bytes_for`: 12 bytes, and per table a position and at most one
    /// bucket offset, 8 bytes).
    pub fn bytes_per_row(rows: u64, max_distance: u32) -> Result<usize, LayoutError> {
        let tables = Layout::for_rows(rows, max_distance)?.tables().len();
        Ok(8 + std::mem::size_of::<(u64, u32)>() + 12 + 8 * tables)
    }

    pub fn emit(&self, row: u32, emit: &mut dyn FnMut(u32)) {
        let center = self.fps[row as usize];
        self.tables
            .probe(&self.layout, center, self.max_distance, emit);
    }
}

/// Rows sharing a band with a sketch and verified at a Jaccard threshold, through one
/// sorted (band value, row) array per band.
pub struct MinhashNeighbors {
    sketches: SketchTable,
    banding: Banding,
    threshold: f64,
    bands: Vec<Vec<(u64, u32)>>,
}

impl MinhashNeighbors {
    pub fn new(sketches: SketchTable, banding: Banding, threshold: f64) -> MinhashNeighbors {
        let bands = (0..banding.bands())
            .map(|k| {
                interrupts::check();
                let mut sorted = Vec::with_capacity(sketches.len());
                sketches.sort_band(&banding, k, &mut sorted);
                sorted
            })
            .collect();
        MinhashNeighbors {
            sketches,
            banding,
            threshold,
            bands,
        }
    }

    /// Bytes held per row beside its sketch: one entry per band.
    pub fn bytes_per_row(banding: &Banding) -> usize {
        banding.bands() * std::mem::size_of::<(u64, u32)>()
    }

    pub fn emit(&self, row: u32, emit: &mut dyn FnMut(u32)) {
        let sketch = self.sketches.row(row);
        for (k, sorted) in self.bands.iter().enumerate() {
            let band = self.banding.band(sketch, k);
            let value = band_value(band);
            let start = sorted.partition_point(|&(v, _)| v < value);
            for &(_, other) in sorted[start..].iter().take_while(|&&(v, _)| v == value) {
                let same_band = self.banding.band(self.sketches.row(other), k) == band;
                if same_band && self.sketches.jaccard(row, other) >= self.threshold {
                    emit(other);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signatures::simhash::hamming;

    #[test]
    fn simhash_neighbors_hold_no_more_than_their_estimate() {
        for rows in [1_000u64, 65_536, 1 << 20] {
            for max_distance in [0, 3, 7, 15] {
                let layout = Layout::for_rows(rows, max_distance).unwrap();
                let held = GroupedTables::bytes_for(&layout, rows as usize) + 24 * rows as usize;
                let estimate = SimhashNeighbors::bytes_per_row(rows, max_distance).unwrap();
                // (a table's bucket offsets are one more than its buckets)
                let tables = layout.tables().len();
                assert!(
                    held <= estimate * rows as usize + 4 * tables,
                    "{rows} rows, distance {max_distance}"
                );
                // and, at the usual distances, not much more: the old estimate (16 bytes a
                // table) was up to 2.3 times it
                assert!(
                    max_distance > 3 || estimate * rows as usize <= held * 4 / 3,
                    "{rows} rows, distance {max_distance}"
                );
            }
        }
    }

    /// The definition, by brute force: each unclustered row in order takes every
    /// unclustered row within the threshold.
    fn by_definition(rows: usize, near: impl Fn(usize, usize) -> bool) -> Vec<u32> {
        let mut rep = vec![u32::MAX; rows];
        for r in 0..rows {
            if rep[r] == u32::MAX {
                for (m, slot) in rep.iter_mut().enumerate() {
                    if *slot == u32::MAX && (m == r || near(r, m)) {
                        *slot = r as u32;
                    }
                }
            }
        }
        rep
    }

    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn simhash_stars_match_the_definition_and_never_chain() {
        let mut next = xorshift(11);
        // Chains: each fingerprint one bit from the previous, so components would join
        // all of a chain; plus copies and random rows.
        let mut fps = Vec::new();
        for _ in 0..40 {
            let mut fp = next();
            for _ in 0..12 {
                fps.push(fp);
                fp ^= 1 << (next() % 64);
            }
        }
        fps.extend((0..100).map(|_| next()));
        fps.extend(fps[..50].to_vec());
        let neighbors = SimhashNeighbors::new(fps.clone(), 3).unwrap();
        let got = greedy_representatives(fps.len(), |r, emit| neighbors.emit(r, emit));
        let expected = by_definition(fps.len(), |a, b| hamming(fps[a], fps[b]) <= 3);
        assert_eq!(got, expected);
        for (m, &r) in got.iter().enumerate() {
            assert!(hamming(fps[m], fps[r as usize]) <= 3);
        }
        // Chains of 12 one-bit steps cannot be one star of radius 3.
        assert!(got.iter().filter(|&&r| got[r as usize] == r).count() > 80);
    }

    #[test]
    fn minhash_stars_match_the_definition() {
        let mut next = xorshift(5);
        let mut sketches = SketchTable::new(32);
        let mut rows = Vec::new();
        for _ in 0..30 {
            let base: Vec<u32> = (0..32).map(|_| next() as u32).collect();
            for step in 0..8 {
                let mut v = base.clone();
                for i in 0..(step * 3).min(32) {
                    v[(i * 7) % 32] = next() as u32 % 3;
                }
                rows.push(v);
            }
        }
        rows.push(vec![9; 32]);
        rows.push(vec![9; 32]);
        for v in &rows {
            sketches.push(v);
        }
        let banding = Banding::new(8, 4, 32).unwrap();
        let jaccard =
            |a: &[u32], b: &[u32]| a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / 32.0;
        let shares =
            |a: &[u32], b: &[u32]| (0..8).any(|k| banding.band(a, k) == banding.band(b, k));
        let neighbors = MinhashNeighbors::new(sketches, banding, 0.6);
        let got = greedy_representatives(rows.len(), |r, emit| neighbors.emit(r, emit));
        let expected = by_definition(rows.len(), |a, b| {
            shares(&rows[a], &rows[b]) && jaccard(&rows[a], &rows[b]) >= 0.6
        });
        assert_eq!(got, expected);
        let stars = got
            .iter()
            .enumerate()
            .filter(|&(m, &r)| m as u32 != r)
            .count();
        assert!(stars > 50, "{stars} rows joined a representative");
    }
}
