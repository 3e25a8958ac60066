//! Which key prefixes a small table of the `hamming` index holds, so that a lookup can skip
//! the table without reading a leaf.
//!
//! A lookup in a permuted table reads the leaves of one key prefix (a 16-bit block at
//! distance 3 on 4 blocks). A run written by a merge of recent inserts is small next to the
//! index's largest run, yet each lookup still reads one leaf per table of it: a run of 10 k
//! rows beside one of 790 k made 50 lookups cost 1.23–1.34× a fresh index's. Such a run's
//! keys cover few prefixes (10 k keys cover 26 % of the 32,768 15-bit ones), so its root
//! directory page carries a bitmap of them, in the room its few children leave:
//!
//! ```text
//!  root directory page of a table of at most CHILDREN_BESIDE_BITMAP leaves
//!  +--------+--------------------------+------ free ------+---------------------+---------+
//!  | header | children (12 bytes each) |                  | bitmap, 4,096 bytes | special |
//!  +--------+--------------------------+------------------+---------------------+---------+
//!           ^ contents                 ^ pd_lower         ^ pd_upper
//!  bit p (byte p / 8, bit p % 8, least significant first) is set when some key of the
//!  table has p as its top PREFIX_BITS bits; pd_upper marks that the page carries it
//! ```
//!
//! The bitmap is written with the table and never changed: VACUUM only removes entries, so
//! a set bit may outlive its keys (a wasted leaf read) but a key never lacks its bit. Pages
//! without it (larger tables, and indexes written before it) are read as before, and older
//! builds, which read a directory page only up to pd_lower, ignore it.

/// Bits of the key the bitmap is over: 15, so that the bitmap takes half a page.
pub const PREFIX_BITS: u32 = 15;
/// Bytes of the bitmap.
pub const BITMAP_BYTES: usize = 1 << (PREFIX_BITS - 3);
const SHIFT: u32 = 64 - PREFIX_BITS;

/// Children a root directory page holds beside the bitmap (338 leaves: 197 k entries).
pub const CHILDREN_BESIDE_BITMAP: usize =
    (super::index_page::PAGE_CONTENTS - BITMAP_BYTES) / super::index_page::CHILD_SIZE;

/// The prefixes of a table's keys, built as the table is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixBitmap {
    bytes: Vec<u8>,
}

impl Default for PrefixBitmap {
    fn default() -> Self {
        PrefixBitmap {
            bytes: vec![0; BITMAP_BYTES],
        }
    }
}

impl PrefixBitmap {
    pub fn insert(&mut self, key: u64) {
        let p = (key >> SHIFT) as usize;
        self.bytes[p / 8] |= 1 << (p % 8);
    }

    /// The bitmap as stored in the page.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether a table whose stored bitmap is `bytes` may hold a key in `lo..=hi`.
    pub fn may_hold(bytes: &[u8], lo: u64, hi: u64) -> bool {
        debug_assert_eq!(bytes.len(), BITMAP_BYTES);
        if lo > hi {
            return false;
        }
        let (first, last) = ((lo >> SHIFT) as usize, (hi >> SHIFT) as usize);
        let mask = |byte: usize| {
            let from = if byte == first / 8 { first % 8 } else { 0 };
            let to = if byte == last / 8 { last % 8 } else { 7 };
            (0xFFu16 << from) as u8 & (0xFFu16 >> (7 - to)) as u8
        };
        (first / 8..=last / 8).any(|byte| bytes[byte] & mask(byte) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::splitmix::splitmix64_next;

    fn prefix(p: u64) -> u64 {
        p << SHIFT
    }

    #[test]
    fn it_takes_half_a_page_beside_a_few_hundred_children() {
        assert_eq!(BITMAP_BYTES, 4096);
        assert_eq!(CHILDREN_BESIDE_BITMAP, 338);
    }

    #[test]
    fn a_key_is_held_and_its_neighbouring_prefixes_are_not() {
        let mut b = PrefixBitmap::default();
        let key = prefix(12345) | 0x1_2345_6789;
        b.insert(key);
        let bytes = b.bytes();
        assert!(PrefixBitmap::may_hold(bytes, key, key));
        assert!(PrefixBitmap::may_hold(
            bytes,
            prefix(12345),
            prefix(12346) - 1
        ));
        assert!(!PrefixBitmap::may_hold(
            bytes,
            prefix(12344),
            prefix(12345) - 1
        ));
        assert!(!PrefixBitmap::may_hold(bytes, prefix(12346), u64::MAX));
        assert!(PrefixBitmap::may_hold(bytes, 0, u64::MAX));
        assert!(!PrefixBitmap::may_hold(bytes, key + 1, key));
    }

    #[test]
    fn ranges_agree_with_a_bit_by_bit_reading() {
        let mut state = 7u64;
        let mut next = || splitmix64_next(&mut state);
        for keys in [0usize, 1, 100, 10_000, 200_000] {
            let mut b = PrefixBitmap::default();
            let mut held = vec![false; 1 << PREFIX_BITS];
            for _ in 0..keys {
                let key = next();
                b.insert(key);
                held[(key >> SHIFT) as usize] = true;
            }
            for _ in 0..2000 {
                let (x, y) = (next() >> SHIFT, next() % 40);
                let (first, last) = (x, (x + y).min((1 << PREFIX_BITS) - 1));
                let expected = (first..=last).any(|p| held[p as usize]);
                let (lo, hi) = (prefix(first) | (next() >> PREFIX_BITS), prefix(last));
                let hi = hi | (u64::MAX >> PREFIX_BITS);
                assert_eq!(
                    PrefixBitmap::may_hold(b.bytes(), lo, hi),
                    expected,
                    "{first}..={last}"
                );
            }
        }
    }
}
