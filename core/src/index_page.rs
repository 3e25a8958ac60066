//! Byte layouts of the `hamming` index's pages, independent of PostgreSQL's buffer
//! manager: the binding layer places these bytes after the standard page header.
//!
//! ```text
//!  every page (8 kB)
//!  +-----------------+----------------------------------+-------+--------------------+
//!  | PageHeaderData  | contents (grows up to pd_lower)   | free  | special: PageTail  |
//!  +-----------------+----------------------------------+-------+--------------------+
//!
//!  metapage (block 0) contents: Meta, little-endian
//!  +-------+---------+--------------+--------+--------+------------------------+
//!  | magic | version | max_distance | blocks | tables | (first block, pages)    |
//!  |  u32  |   u32   |     u32      |  u32   |  u32   | × tables, u32 + u32     |
//!  +-------+---------+--------------+--------+--------+------------------------+
//!  | pending head u32 | pending tail u32 | pending entries u64 | table entries u64 |
//!  +------------------+------------------+---------------------+-------------------+
//!
//!  table page / pending page contents: packed 14-byte entries, sorted by key on table
//!  pages (key = the fingerprint permuted for that table), in insertion order on pending
//!  pages (key = the fingerprint itself; a row whose fingerprint is NULL has key 0 and the
//!  NULL_ROW bit set in its offset, so ORDER BY scans can return it last)
//!  +---------+-----------+------------+---------+-----
//!  | key u64 | block u32 | offset u16 | key ... | ...
//!  +---------+-----------+------------+---------+-----
//! ```
//!
//! A table's pages are contiguous (`first block .. first block + pages`), written once
//! by the build; later rows go to the pending pages, a linked list starting at `pending
//! head`. Page kinds and the next-page link live in each page's special space.

pub const MAGIC: u32 = 0x4E44_5550; // "NDUP"
pub const VERSION: u32 = 1;
pub const ENTRY_SIZE: usize = 14;
pub const NO_BLOCK: u32 = u32::MAX;
/// Set in a pending entry's offset when the row's fingerprint is NULL. Heap offsets never
/// reach it (at most a few hundred tuples fit on a page).
pub const NULL_ROW: u16 = 0x8000;

/// A heap tuple's location, as PostgreSQL's ItemPointer (block, 1-based offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tid {
    pub block: u32,
    pub offset: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub key: u64,
    pub tid: Tid,
}

impl Entry {
    /// The pending entry of a row whose fingerprint is NULL.
    pub fn null_row(tid: Tid) -> Entry {
        Entry {
            key: 0,
            tid: Tid {
                block: tid.block,
                offset: tid.offset | NULL_ROW,
            },
        }
    }

    /// The row's fingerprint, `None` when it is NULL.
    pub fn fingerprint(&self) -> Option<u64> {
        (self.tid.offset & NULL_ROW == 0).then_some(self.key)
    }

    /// The heap tuple the entry points to.
    pub fn heap_tid(&self) -> Tid {
        Tid {
            block: self.tid.block,
            offset: self.tid.offset & !NULL_ROW,
        }
    }

    pub fn write(&self, out: &mut [u8]) {
        out[0..8].copy_from_slice(&self.key.to_le_bytes());
        out[8..12].copy_from_slice(&self.tid.block.to_le_bytes());
        out[12..14].copy_from_slice(&self.tid.offset.to_le_bytes());
    }

    pub fn read(bytes: &[u8]) -> Entry {
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        Entry {
            key: u64::from_le_bytes(bytes[0..8].try_into().expect("8 bytes")),
            tid: Tid {
                block: u32_at(8),
                offset: u16::from_le_bytes([bytes[12], bytes[13]]),
            },
        }
    }
}

/// The entries packed in a page's contents.
pub fn entries(contents: &[u8]) -> impl Iterator<Item = Entry> + '_ {
    contents.chunks_exact(ENTRY_SIZE).map(Entry::read)
}

/// Index of the first entry whose key is at least `key` (entries sorted by key).
pub fn lower_bound(contents: &[u8], key: u64) -> usize {
    let n = contents.len() / ENTRY_SIZE;
    let key_at = |i: usize| {
        u64::from_le_bytes(
            contents[i * ENTRY_SIZE..i * ENTRY_SIZE + 8]
                .try_into()
                .expect("8 bytes"),
        )
    };
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if key_at(mid) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableExtent {
    pub first_block: u32,
    pub pages: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub max_distance: u32,
    pub blocks: u32,
    pub tables: Vec<TableExtent>,
    pub pending_head: u32,
    pub pending_tail: u32,
    pub pending_entries: u64,
    pub table_entries: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaError(pub String);

impl Meta {
    pub fn encoded_len(tables: usize) -> usize {
        20 + 8 * tables + 24
    }

    pub fn write(&self, out: &mut [u8]) {
        let mut w = Writer { out, at: 0 };
        for v in [
            MAGIC,
            VERSION,
            self.max_distance,
            self.blocks,
            self.tables.len() as u32,
        ] {
            w.u32(v);
        }
        for t in &self.tables {
            w.u32(t.first_block);
            w.u32(t.pages);
        }
        w.u32(self.pending_head);
        w.u32(self.pending_tail);
        w.u64(self.pending_entries);
        w.u64(self.table_entries);
    }

    pub fn read(bytes: &[u8]) -> Result<Meta, MetaError> {
        let mut r = Reader { bytes, at: 0 };
        let (magic, version) = (r.u32()?, r.u32()?);
        if magic != MAGIC {
            return Err(MetaError(format!(
                "not a hamming index metapage (magic {magic:#x})"
            )));
        }
        if version != VERSION {
            return Err(MetaError(format!(
                "hamming index version {version}, this build reads {VERSION}: REINDEX it"
            )));
        }
        let (max_distance, blocks, count) = (r.u32()?, r.u32()?, r.u32()?);
        let tables = (0..count)
            .map(|_| {
                Ok(TableExtent {
                    first_block: r.u32()?,
                    pages: r.u32()?,
                })
            })
            .collect::<Result<_, MetaError>>()?;
        Ok(Meta {
            max_distance,
            blocks,
            tables,
            pending_head: r.u32()?,
            pending_tail: r.u32()?,
            pending_entries: r.u64()?,
            table_entries: r.u64()?,
        })
    }
}

struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn u32(&mut self, v: u32) {
        self.out[self.at..self.at + 4].copy_from_slice(&v.to_le_bytes());
        self.at += 4;
    }
    fn u64(&mut self, v: u64) {
        self.out[self.at..self.at + 8].copy_from_slice(&v.to_le_bytes());
        self.at += 8;
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], MetaError> {
        let slice = self
            .bytes
            .get(self.at..self.at + N)
            .ok_or_else(|| MetaError("truncated metapage".into()))?;
        self.at += N;
        Ok(slice.try_into().expect("N bytes"))
    }
    fn u32(&mut self) -> Result<u32, MetaError> {
        self.take::<4>().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64, MetaError> {
        self.take::<8>().map(u64::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_search() {
        let es: Vec<Entry> = (0..10u64)
            .map(|i| Entry {
                key: i * 10,
                tid: Tid {
                    block: i as u32 + 7,
                    offset: 3,
                },
            })
            .collect();
        let mut buf = vec![0u8; es.len() * ENTRY_SIZE];
        for (i, e) in es.iter().enumerate() {
            e.write(&mut buf[i * ENTRY_SIZE..]);
        }
        assert_eq!(entries(&buf).collect::<Vec<_>>(), es);
        assert_eq!(lower_bound(&buf, 0), 0);
        assert_eq!(lower_bound(&buf, 15), 2);
        assert_eq!(lower_bound(&buf, 20), 2);
        assert_eq!(lower_bound(&buf, 1000), 10);
    }

    #[test]
    fn null_rows_keep_their_tid() {
        let tid = Tid {
            block: 9,
            offset: 17,
        };
        let e = Entry::null_row(tid);
        assert_eq!(e.fingerprint(), None);
        assert_eq!(e.heap_tid(), tid);
        let plain = Entry { key: 5, tid };
        assert_eq!((plain.fingerprint(), plain.heap_tid()), (Some(5), tid));
    }

    #[test]
    fn meta_round_trips_and_rejects_garbage() {
        let m = Meta {
            max_distance: 3,
            blocks: 5,
            tables: (0..10)
                .map(|t| TableExtent {
                    first_block: 1 + t * 4,
                    pages: 4,
                })
                .collect(),
            pending_head: 41,
            pending_tail: 44,
            pending_entries: 1234,
            table_entries: 99,
        };
        let mut buf = vec![0u8; Meta::encoded_len(10)];
        m.write(&mut buf);
        assert_eq!(Meta::read(&buf), Ok(m));
        assert!(Meta::read(&[0u8; 64]).is_err());
        assert!(Meta::read(&buf[..30]).is_err());
    }
}
