//! The tables of a run of the `hamming` index, whatever its codes: each table holds every
//! row's code moved so that the bits a lookup of that table matches come first, and sorts
//! by them. The index's pages, runs, merges and VACUUM only need this much of a layout:
//! how many tables, what the metapage records of it, and the code in each table's order
//! and back.
//!
//! - 64-bit fingerprints: Manku's permuted tables ([`Layout`]); a table's key is the whole
//!   permuted fingerprint, with no rest.
//! - Wide codes (128 or 256 bits): multi-index hashing's substring tables
//!   ([`SubstringTables`]); table `k` holds each code rotated left to substring `k`'s first
//!   bit, so that its key begins with that substring's value, and keeps the other words as
//!   the entry's rest.

use crate::search::index_page::Rest;
use crate::search::multi_index::Substrings;
use crate::search::permuted::Layout;

/// A code as an index entry holds it: its first 64 bits and the rest.
pub type Code<P> = (u64, P);

pub trait Tables: Clone {
    /// The words of a code after its first.
    type Rest: Rest;

    /// The layout a run records as `blocks` (its `Run::blocks`) for `max_distance`.
    fn of_run(blocks: u32, max_distance: u32) -> Result<Self, String>;
    /// The layout of a new run of `rows` rows.
    fn for_rows(rows: u64, max_distance: u32) -> Result<Self, String>;
    /// What the metapage records of the layout (`Run::blocks`).
    fn blocks(&self) -> u32;
    fn max_distance(&self) -> u32;
    fn count(&self) -> usize;
    /// `code` in table `t`'s order.
    fn order(&self, t: usize, code: Code<Self::Rest>) -> Code<Self::Rest>;
    /// The code of an entry of table `t`.
    fn code(&self, t: usize, ordered: Code<Self::Rest>) -> Code<Self::Rest>;
}

impl Tables for Layout {
    type Rest = [u64; 0];

    fn of_run(blocks: u32, max_distance: u32) -> Result<Layout, String> {
        Layout::new(blocks, max_distance).map_err(|e| e.0)
    }

    fn for_rows(rows: u64, max_distance: u32) -> Result<Layout, String> {
        Layout::for_rows(rows, max_distance).map_err(|e| e.0)
    }

    fn blocks(&self) -> u32 {
        Layout::blocks(self)
    }

    fn max_distance(&self) -> u32 {
        self.max_distance
    }

    fn count(&self) -> usize {
        self.tables().len()
    }

    #[inline]
    fn order(&self, t: usize, code: Code<[u64; 0]>) -> Code<[u64; 0]> {
        (self.tables()[t].apply(code.0), [])
    }

    #[inline]
    fn code(&self, t: usize, ordered: Code<[u64; 0]>) -> Code<[u64; 0]> {
        (self.tables()[t].invert(ordered.0), [])
    }
}

/// Widest substring of an index's tables. `Substrings::choose` models a table in memory,
/// where a probe costs about as much as testing a row; in an index a probe is a descent and
/// a leaf read through the buffer manager, which cost about 175 row tests at 10 M rows
/// (measured: PDQ's radius 31 at 10 M, 13 substrings of 20 bits, 1,413 probes of about 10
/// rows, took 3.0 ms a lookup at the median, 16 of 16 bits, 272 probes of about 150 rows,
/// 0.78 ms). Past 16 bits the probes multiply (`C(width, radius)`) while each still reads
/// a leaf, so the index keeps its substrings at most this wide, as Meta's PDQ index does.
pub const WIDEST_PAGED_SUBSTRING: u32 = 16;

/// Multi-index hashing's tables over codes of `64 · (1 + P::WORDS)` bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubstringTables<P: Rest> {
    substrings: Substrings,
    rest: std::marker::PhantomData<P>,
}

impl<P: Rest> SubstringTables<P> {
    pub const BITS: u32 = 64 * (1 + P::WORDS as u32);

    pub fn substrings(&self) -> &Substrings {
        &self.substrings
    }

    fn new(substrings: Substrings) -> SubstringTables<P> {
        SubstringTables {
            substrings,
            rest: std::marker::PhantomData,
        }
    }

    /// The code's words rotated left by `bits`.
    fn rotate(code: Code<P>, bits: u32) -> Code<P> {
        let n = 1 + P::WORDS;
        let word = |i: usize| {
            if i == 0 {
                code.0
            } else {
                code.1.words()[i - 1]
            }
        };
        let (skip, shift) = ((bits / 64) as usize, bits % 64);
        let rotated = |i: usize| {
            let (hi, lo) = (word((i + skip) % n), word((i + skip + 1) % n));
            if shift == 0 {
                hi
            } else {
                hi << shift | lo >> (64 - shift)
            }
        };
        (rotated(0), P::from_fn(|i| rotated(i + 1)))
    }
}

impl<P: Rest> Tables for SubstringTables<P> {
    type Rest = P;

    fn of_run(blocks: u32, max_distance: u32) -> Result<Self, String> {
        Substrings::new(Self::BITS, blocks, max_distance)
            .map(Self::new)
            .map_err(|e| e.0)
    }

    fn for_rows(rows: u64, max_distance: u32) -> Result<Self, String> {
        Substrings::choose_up_to(Self::BITS, rows, max_distance, WIDEST_PAGED_SUBSTRING)
            .map(Self::new)
            .map_err(|e| e.0)
    }

    fn blocks(&self) -> u32 {
        self.substrings.count()
    }

    fn max_distance(&self) -> u32 {
        self.substrings.radius()
    }

    fn count(&self) -> usize {
        self.substrings.count() as usize
    }

    fn order(&self, t: usize, code: Code<P>) -> Code<P> {
        Self::rotate(code, self.substrings.bounds(t as u32).0)
    }

    fn code(&self, t: usize, ordered: Code<P>) -> Code<P> {
        let start = self.substrings.bounds(t as u32).0;
        Self::rotate(ordered, (Self::BITS - start) % Self::BITS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signatures::wide_code::WideCode;

    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Every table's key begins with its substring's value, and the code comes back.
    fn substring_tables_lead_with_their_substring<const W: usize, P: Rest>(max_distance: u32) {
        let mut next = rng(W as u64 * 7919 + max_distance as u64);
        for rows in [0u64, 1000, 10_000_000] {
            let tables = SubstringTables::<P>::for_rows(rows, max_distance).unwrap();
            let again = SubstringTables::<P>::of_run(tables.blocks(), max_distance).unwrap();
            assert_eq!(tables, again);
            for _ in 0..200 {
                let words: [u64; W] = std::array::from_fn(|_| next());
                let code: Code<P> = (words[0], P::from_fn(|i| words[i + 1]));
                for t in 0..tables.count() {
                    let (start, width) = tables.substrings().bounds(t as u32);
                    let ordered = tables.order(t, code);
                    assert_eq!(
                        (ordered.0 >> (64 - width)) as u32,
                        WideCode(words).substring(start, width)
                    );
                    assert_eq!(tables.code(t, ordered), code);
                    let ones = |c: Code<P>| {
                        c.0.count_ones() + c.1.words().iter().map(|w| w.count_ones()).sum::<u32>()
                    };
                    assert_eq!(ones(ordered), ones(code));
                }
            }
        }
    }

    #[test]
    fn an_index_cuts_pdq_into_sixteen_substrings_from_ten_thousand_rows() {
        for rows in [10_000, 100_000, 1_000_000, 10_000_000] {
            let pdq = SubstringTables::<[u64; 3]>::for_rows(rows, 31).unwrap();
            assert_eq!(pdq.count(), 16, "{rows} rows");
            let narrow = SubstringTables::<[u64; 1]>::for_rows(rows, 15).unwrap();
            assert!(narrow.count() >= 8, "{rows} rows");
            for tables in [pdq.substrings(), narrow.substrings()] {
                assert!((0..tables.count()).all(|k| tables.bounds(k).1 <= WIDEST_PAGED_SUBSTRING));
            }
        }
        // few rows: more, narrower substrings (fewer probes), as in memory
        assert_eq!(
            SubstringTables::<[u64; 3]>::for_rows(1000, 31)
                .unwrap()
                .count(),
            32
        );
    }

    #[test]
    fn substring_tables_of_wide_codes_lead_with_their_substring() {
        substring_tables_lead_with_their_substring::<4, [u64; 3]>(31);
        substring_tables_lead_with_their_substring::<4, [u64; 3]>(7);
        substring_tables_lead_with_their_substring::<2, [u64; 1]>(16);
    }

    #[test]
    fn permuted_tables_order_as_their_permutations() {
        let layout = <Layout as Tables>::for_rows(1_000_000, 3).unwrap();
        let mut next = rng(5);
        for _ in 0..1000 {
            let fp = next();
            for t in 0..Tables::count(&layout) {
                let ordered = layout.order(t, (fp, []));
                assert_eq!(ordered.0, layout.tables()[t].apply(fp));
                assert_eq!(layout.code(t, ordered), (fp, []));
            }
        }
    }
}
