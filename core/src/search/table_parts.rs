//! How a run of the `hamming` index stores each permuted table: as a few trees, one per
//! equal part of the key space, so that a merge table by table can replace a run one part
//! at a time.
//!
//! A merge table by table writes a table of the new run while the inputs' copy of it is
//! still read, then publishes it and reuses the copy's pages for the next. The index so
//! needs room for one table more than its runs: with the 4 tables of k = 3 on 64 bits a
//! quarter of the largest run, which kept a grown index at 1.25–1.35× a fresh build. With
//! each table stored as 4 trees, a merge replaces one tree at a time and needs room for a
//! sixteenth.
//!
//! ```text
//!  run.tables (the metapage's trees of a run), T tables of P parts each:
//!  +---------------+---------------+-----+---------------+-----+-------------------+
//!  | table 0 part 0| table 0 part 1| ... | table 1 part 0| ... | table T-1 part P-1|
//!  +---------------+---------------+-----+---------------+-----+-------------------+
//!  tree i is part i % P of table i / P, and holds the keys whose top log2(P) bits are i % P
//! ```
//!
//! P is a power of two. A lookup reads one key prefix of a table, at least as long as the
//! part's bits in every layout (the shortest leading block is 4 bits), so it reads one tree;
//! a walk of a whole table reads its parts in order, which is key order. Runs written before
//! format 4 have one tree per table (P = 1) and are read the same way.

/// The most parts a table is stored in.
pub const MAX_PARTS: usize = 4;

/// Trees a run's table is split into, so that one is at most this fraction of the run.
const TREES_PER_RUN: usize = 16;

/// The parts of each table of a run: their count, and which keys each holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    count: usize,
}

impl Parts {
    /// Parts per table for a new run of `tables` tables: the fewest (a power of two, at most
    /// [`MAX_PARTS`]) that make a tree at most 1/16 of the run.
    pub fn for_tables(tables: usize) -> Parts {
        Parts {
            count: TREES_PER_RUN
                .div_ceil(tables.max(1))
                .next_power_of_two()
                .min(MAX_PARTS),
        }
    }

    /// The parts of a run of `trees` trees over `tables` tables; `None` if the counts do
    /// not fit (a corrupt metapage).
    pub fn of_run(trees: usize, tables: usize) -> Option<Parts> {
        let count = trees / tables.max(1);
        (tables > 0 && trees == count * tables && count.is_power_of_two() && count <= MAX_PARTS)
            .then_some(Parts { count })
    }

    pub fn count(self) -> usize {
        self.count
    }

    /// The part of a table that holds `key`.
    pub fn of_key(self, key: u64) -> usize {
        match self.count {
            1 => 0,
            n => (key >> (64 - n.ilog2())) as usize,
        }
    }

    /// The keys part `part` holds, inclusive.
    pub fn range(self, part: usize) -> (u64, u64) {
        if self.count == 1 {
            return (0, u64::MAX);
        }
        let shift = 64 - self.count.ilog2();
        let lo = (part as u64) << shift;
        (lo, lo | ((1u64 << shift) - 1))
    }

    /// The table tree `tree` is a part of.
    pub fn table_of(self, tree: usize) -> usize {
        tree / self.count
    }

    /// The part of its table tree `tree` is.
    pub fn part_of(self, tree: usize) -> usize {
        tree % self.count
    }

    /// The trees of table `table`, in key order.
    pub fn trees_of(self, table: usize) -> std::ops::Range<usize> {
        table * self.count..(table + 1) * self.count
    }

    /// The tree of table `table` that holds `key`, and with it every key of its prefix (a
    /// prefix has at least as many bits as pick the part).
    pub fn tree_of(self, table: usize, key: u64) -> usize {
        table * self.count + self.of_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::permuted::{Layout, MAX_BLOCKS};

    #[test]
    fn a_run_is_cut_into_sixteen_trees_or_fewer_parts_when_tables_are_many() {
        let counts: Vec<usize> = [1, 4, 5, 6, 8, 10, 16, 20, 64]
            .iter()
            .map(|&t| Parts::for_tables(t).count())
            .collect();
        assert_eq!(counts, vec![4, 4, 4, 4, 2, 2, 1, 1, 1]);
    }

    #[test]
    fn the_parts_cover_the_key_space_in_order_and_each_key_is_in_its_part() {
        for count in [1, 2, 4] {
            let parts = Parts { count };
            let mut next = 0u64;
            for p in 0..count {
                let (lo, hi) = parts.range(p);
                assert_eq!(lo, next);
                assert_eq!(parts.of_key(lo), p);
                assert_eq!(parts.of_key(hi), p);
                next = hi.wrapping_add(1);
            }
            assert_eq!(next, 0, "the last part ends at u64::MAX");
        }
    }

    #[test]
    fn trees_map_to_tables_and_parts() {
        let parts = Parts::of_run(16, 4).unwrap();
        assert_eq!(parts.count(), 4);
        assert_eq!((parts.table_of(6), parts.part_of(6)), (1, 2));
        assert_eq!(parts.trees_of(2), 8..12);
        assert_eq!(parts.tree_of(1, 0x8000_0000_0000_0000), 6);
        assert_eq!(parts.tree_of(3, u64::MAX), 15);
    }

    #[test]
    fn every_prefix_a_lookup_reads_is_in_one_part() {
        // The shortest prefix of any layout (the narrowest leading block) has at least the
        // bits that pick a part, so all keys of a prefix are in the part of its first key.
        let part_bits = MAX_PARTS.ilog2();
        for blocks in 1..=MAX_BLOCKS as u32 {
            for distance in 0..blocks {
                if let Ok(layout) = Layout::new(blocks, distance) {
                    assert!(
                        layout.min_prefix_bits() >= part_bits,
                        "{blocks} blocks, k = {distance}"
                    );
                }
            }
        }
    }

    #[test]
    fn runs_whose_tree_count_does_not_fit_are_refused() {
        assert_eq!(Parts::of_run(4, 4).map(Parts::count), Some(1));
        assert_eq!(Parts::of_run(8, 4).map(Parts::count), Some(2));
        assert_eq!(Parts::of_run(12, 4), None);
        assert_eq!(Parts::of_run(32, 4), None);
        assert_eq!(Parts::of_run(6, 4), None);
        assert_eq!(Parts::of_run(0, 0), None);
    }
}
