//! All pairs of a table whose rows are spread over nodes (Citus shards), paired on the nodes
//! in parts that each fit one node's memory: Manku's batch mode ([`Pairs`]) cut along its
//! permuted tables and their prefixes.
//!
//! Each row goes to one part per table of the layout: in table `t`, the part of its prefix
//! there ([`part_of`]). Rows sharing a table's prefix share its part, so a pair whose owner
//! table is `t` (the one table that reports it, [`Layout::owner_table`]) is found by pairing
//! the part of its prefix in `t`, and by no other part. A node that holds a part's rows,
//! from every shard, pairs them alone ([`pairs_of_part`]). The rows a part receives are
//! what `hamming_pairs` would compare in that table, so the parts together cost one
//! server's pass, plus moving each row once per table.
//!
//! A shard's rows of one part travel as one byte string (the `bytea` of
//! `hamming_pair_parts`):
//!
//! ```text
//!  byte 0       format, 1 (a change to the part of a row is a new format: the nodes of one
//!               call must cut alike, and a pairing refuses a mix)
//!  byte 1       max_distance
//!  byte 2       blocks of the layout
//!  byte 3       table of the layout
//!  bytes 4..8   parts per table (u32, little-endian)
//!  then each row: key (i64, little-endian), fingerprint (u64, little-endian): 16 bytes
//! ```

use super::permuted::{Layout, LayoutError, Pairs};
use std::collections::BTreeMap;

const FORMAT: u8 = 1;
const HEADER_BYTES: usize = 8;
const ROW_BYTES: usize = 16;

/// Bytes a node holds per row of a part while it pairs it: the row as received, its key
/// and fingerprint, and one sorted entry ([`Pairs::bytes_per_row`]).
pub const PAIRING_BYTES_PER_ROW: usize = ROW_BYTES + 8 + Pairs::bytes_per_row();

/// At least this many parts in all, so that a call's pairing spreads over the nodes'
/// shards (32 by default) even when one part would hold every row of a table.
pub const MIN_PARTS: u64 = 64;

/// The most parts per table: a part number is an `int4`, and a layout has at most 64 tables.
const MAX_PARTS_PER_TABLE: u64 = 1 << 24;

/// How the rows of one call are cut: the layout of `hamming_pairs` for all the rows, and
/// the parts of each of its tables. The same arguments give the same cut on every node.
#[derive(Debug, Clone)]
pub struct Cut {
    layout: Layout,
    parts_per_table: u32,
}

impl Cut {
    /// The cut for `rows` rows in all, at `max_distance`, into parts of at most about
    /// `part_bytes` each while paired (uniform rows; a prefix shared by more rows makes its
    /// part larger).
    pub fn new(rows: u64, max_distance: u32, part_bytes: u64) -> Result<Cut, LayoutError> {
        let layout = Layout::for_batch(rows, max_distance)?;
        let tables = layout.tables().len() as u64;
        let rows_per_part = (part_bytes / PAIRING_BYTES_PER_ROW as u64).max(1);
        let parts_per_table = MIN_PARTS
            .div_ceil(tables)
            .max(rows.div_ceil(rows_per_part))
            .min(MAX_PARTS_PER_TABLE);
        Ok(Cut {
            layout,
            parts_per_table: parts_per_table as u32,
        })
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn parts_per_table(&self) -> u32 {
        self.parts_per_table
    }

    /// The part of `fp` in table `table`: the table's number, then its prefix there mixed
    /// (SplitMix64's finalizer, fixed by the format) into one of the table's parts.
    pub fn part_of(&self, table: usize, fp: u64) -> u32 {
        let mut key = self.layout.join_key(table, fp);
        let mixed = crate::base::splitmix::splitmix64_next(&mut key);
        table as u32 * self.parts_per_table + (mixed % self.parts_per_table as u64) as u32
    }

    /// Cuts `rows` (key, fingerprint) into their parts: per part number, its byte string.
    pub fn split(&self, rows: impl IntoIterator<Item = (i64, u64)>) -> BTreeMap<u32, Vec<u8>> {
        let mut parts: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
        for (key, fp) in rows {
            for table in 0..self.layout.tables().len() {
                let bytes = parts
                    .entry(self.part_of(table, fp))
                    .or_insert_with(|| self.header(table));
                bytes.extend_from_slice(&key.to_le_bytes());
                bytes.extend_from_slice(&fp.to_le_bytes());
            }
        }
        parts
    }

    fn header(&self, table: usize) -> Vec<u8> {
        let mut bytes = vec![
            FORMAT,
            self.layout.max_distance as u8,
            self.layout.blocks() as u8,
            table as u8,
        ];
        bytes.extend_from_slice(&self.parts_per_table.to_le_bytes());
        bytes
    }
}

/// A byte string that is not a part of this format, or parts that were not cut alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartError(pub String);

/// The rows in the byte strings of one part (from every shard), checked to be cut alike:
/// `(layout, table, keys, fingerprints)`.
pub fn rows_of_part(parts: &[&[u8]]) -> Result<(Layout, usize, Vec<i64>, Vec<u64>), PartError> {
    let Some(first) = parts.first() else {
        return Err(PartError("no part given".into()));
    };
    let header = |bytes: &[u8]| -> Result<[u8; HEADER_BYTES], PartError> {
        let header: [u8; HEADER_BYTES] = bytes
            .get(..HEADER_BYTES)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| {
                PartError(format!(
                    "a part is {} bytes, shorter than its header",
                    bytes.len()
                ))
            })?;
        if header[0] != FORMAT {
            return Err(PartError(format!(
                "a part has format {}; this build reads format {FORMAT} (every node must run the same neardup)",
                header[0]
            )));
        }
        if !(bytes.len() - HEADER_BYTES).is_multiple_of(ROW_BYTES) {
            return Err(PartError(format!(
                "a part's rows are {} bytes, not a whole number of {ROW_BYTES}-byte rows",
                bytes.len() - HEADER_BYTES
            )));
        }
        Ok(header)
    };
    let h = header(first)?;
    let layout = Layout::new(h[2] as u32, h[1] as u32).map_err(|e| PartError(e.0))?;
    let table = h[3] as usize;
    if table >= layout.tables().len() {
        return Err(PartError(format!(
            "a part names table {table} of a layout of {} tables",
            layout.tables().len()
        )));
    }
    let rows: usize = parts
        .iter()
        .map(|p| p.len().saturating_sub(HEADER_BYTES) / ROW_BYTES)
        .sum();
    let (mut keys, mut fps) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for part in parts {
        if header(part)? != h {
            return Err(PartError(
                "the parts given were not cut alike (another table, layout or number of parts)"
                    .into(),
            ));
        }
        for row in part[HEADER_BYTES..].chunks_exact(ROW_BYTES) {
            keys.push(i64::from_le_bytes(row[..8].try_into().expect("8 bytes")));
            fps.push(u64::from_le_bytes(row[8..].try_into().expect("8 bytes")));
        }
    }
    Ok((layout, table, keys, fps))
}

/// The pairs within the layout's distance that the part's table owns, as (smaller key,
/// larger key, distance): each pair of the whole table comes from exactly one part.
pub fn pairs_of_part(
    layout: Layout,
    table: usize,
    keys: Vec<i64>,
    fps: Vec<u64>,
) -> impl Iterator<Item = (i64, i64, u32)> {
    Pairs::of_table(fps, layout, table).map(move |(i, j, d)| {
        let (x, y) = (keys[i as usize], keys[j as usize]);
        (x.min(y), x.max(y), d)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::splitmix::splitmix64_next;
    use crate::search::permuted::all_pairs;

    /// Clustered rows: random centers, each with copies a few bits off, and exact copies.
    fn rows(n: usize, seed: u64) -> Vec<(i64, u64)> {
        let mut state = seed;
        let mut out = Vec::new();
        while out.len() < n {
            let center = splitmix64_next(&mut state);
            for _ in 0..1 + splitmix64_next(&mut state) % 6 {
                let mut fp = center;
                for _ in 0..splitmix64_next(&mut state) % 5 {
                    fp ^= 1 << (splitmix64_next(&mut state) % 64);
                }
                out.push((out.len() as i64 * 7 - 300, fp));
            }
        }
        out.truncate(n);
        out
    }

    /// Pairing every part, each from the byte strings of several "shards", gives exactly
    /// the pairs of the whole table, each once.
    #[test]
    fn the_parts_pair_like_the_whole_table() {
        for (n, k, part_bytes, shards) in [
            (3000, 3, 1 << 20, 4),
            (2000, 5, 4000, 3),
            (500, 0, 100, 2),
            (1, 3, 1 << 20, 1),
        ] {
            let all = rows(n, n as u64 + k as u64);
            let cut = Cut::new(n as u64, k, part_bytes).unwrap();
            let mut by_part: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
            for shard in 0..shards {
                let mine = all.iter().copied().skip(shard).step_by(shards);
                for (part, bytes) in cut.split(mine) {
                    by_part.entry(part).or_default().push(bytes);
                }
            }
            let mut found = Vec::new();
            for blobs in by_part.values() {
                let slices: Vec<&[u8]> = blobs.iter().map(|b| &b[..]).collect();
                let (layout, table, keys, fps) = rows_of_part(&slices).unwrap();
                found.extend(pairs_of_part(layout, table, keys, fps));
            }
            found.sort_unstable();
            let fps: Vec<u64> = all.iter().map(|r| r.1).collect();
            let mut expected: Vec<(i64, i64, u32)> = all_pairs(&fps, k)
                .unwrap()
                .into_iter()
                .map(|(i, j, d)| {
                    let (x, y) = (all[i as usize].0, all[j as usize].0);
                    (x.min(y), x.max(y), d)
                })
                .collect();
            expected.sort_unstable();
            assert_eq!(found, expected, "n {n} k {k}");
            assert!(n < 100 || !expected.is_empty());
            let tables = cut.layout().tables().len() as u64;
            assert!(tables * cut.parts_per_table() as u64 >= MIN_PARTS);
        }
    }

    #[test]
    fn parts_are_sized_for_the_memory_given() {
        let cut = Cut::new(10_000_000, 3, 64 << 20).unwrap();
        let per_part = 10_000_000 / cut.parts_per_table() as u64;
        assert!(
            per_part * PAIRING_BYTES_PER_ROW as u64 <= 64 << 20,
            "{cut:?}"
        );
        assert!(Cut::new(100, 3, u64::MAX).unwrap().parts_per_table() >= 1);
        assert!(Cut::new(100, 64, 1 << 20).is_err());
    }

    /// The cut is part of the format: these part numbers may change only with it.
    #[test]
    fn golden_part_numbers() {
        let cut = Cut::new(1_000_000, 3, 64 << 20).unwrap();
        let fp = 0x0123_4567_89ab_cdef;
        let parts: Vec<u32> = (0..cut.layout().tables().len())
            .map(|t| cut.part_of(t, fp))
            .collect();
        assert_eq!(parts, vec![8, 31, 43, 57], "{cut:?}");
    }

    #[test]
    fn malformed_or_mixed_parts_are_refused() {
        let cut = Cut::new(1000, 3, 1 << 20).unwrap();
        let parts = cut.split([(1, 5), (2, 7)]);
        let (a, b): (Vec<u8>, Vec<u8>) = {
            let mut it = parts.values();
            (it.next().unwrap().clone(), it.next().unwrap().clone())
        };
        assert!(rows_of_part(&[&a]).is_ok());
        assert!(rows_of_part(&[]).is_err());
        assert!(rows_of_part(&[&a[..5]]).is_err());
        assert!(rows_of_part(&[&a[..a.len() - 3]]).is_err());
        let mut other_format = a.clone();
        other_format[0] = 2;
        assert!(rows_of_part(&[&other_format]).is_err());
        let mut bad_table = a.clone();
        bad_table[3] = 60;
        assert!(rows_of_part(&[&bad_table]).is_err());
        let mut bad_layout = a.clone();
        bad_layout[2] = 2; // fewer blocks than max_distance + 1
        assert!(rows_of_part(&[&bad_layout]).is_err());
        if a[3] != b[3] {
            assert!(rows_of_part(&[&a, &b]).is_err());
        }
    }
}
