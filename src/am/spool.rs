//! What CREATE INDEX sorts, within `maintenance_work_mem`, as nbtree's build is bounded.
//!
//! Rows (fingerprint, TID) are kept in memory while they and the one permuted copy the
//! writer sorts at a time (32 bytes a row) fit in `maintenance_work_mem`. The row that
//! would not fit switches the spool to external sorting: the layout is fixed then (from
//! the larger of the rows seen so far, doubled, and the planner's estimate of the table),
//! and every row, those already kept and all after, goes into one tuplesort per permuted
//! table, keyed by its permuted value. Each tuplesort gets an equal share of
//! `maintenance_work_mem` and spills to temporary files past it, so a 10 M-row build runs
//! in a 64 MB budget.
//!
//! A tuplesort of 64-bit fingerprints sorts `uuid` datums: 16 bytes compared as unsigned
//! bytes, which is exactly the order of (permuted key, block, offset) written big-endian.
//! Wide codes sort `bytea` datums of the same bytes followed by the rest of the code
//! (byte order too: equal keys and TIDs never occur in one table, so the rest never
//! decides).
//!
//! ```text
//!  sort key (uuid, or bytea for wide codes), big-endian
//!  +----------------------+--------------+------------+---------+---------------------+
//!  | key (u64)            | block (u32)  | offset u16 | 0 (u16) | rest (u64 × R) ...  |
//!  +----------------------+--------------+------------+---------+---------------------+
//! ```
//!
//! Rows with a NULL code are only TIDs (they go to the pending list) and stay in
//! memory, 8 bytes each.

use neardup_core::search::code_tables::{Code, Tables};
use neardup_core::search::index_page::{Entry, Rest, Tid};
use pgrx::pg_sys;

pub struct Spool<L: Tables> {
    max_rows: usize,
    mode: Mode<L>,
    pub nulls: Vec<Tid>,
    rows: u64,
}

enum Mode<L: Tables> {
    Memory(Vec<(Code<L::Rest>, Tid)>),
    Sorting {
        layout: L,
        sorts: Vec<*mut pg_sys::Tuplesortstate>,
    },
}

impl<L: Tables> Spool<L> {
    /// Bytes a row costs in memory: the row and the copy in a table's order being sorted.
    const BYTES_PER_ROW: usize =
        std::mem::size_of::<(Code<L::Rest>, Tid)>() + std::mem::size_of::<Entry<L::Rest>>();

    pub fn new() -> Spool<L> {
        // SAFETY: a GUC of this backend, read on its only thread.
        let budget = unsafe { pg_sys::maintenance_work_mem }.max(64) as usize * 1024;
        Spool {
            max_rows: budget / Self::BYTES_PER_ROW,
            mode: Mode::Memory(Vec::new()),
            nulls: Vec::new(),
            rows: 0,
        }
    }

    /// Rows with a code.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds a row; `layout_for` chooses the layout for a number of rows when the spool
    /// turns to external sorting.
    pub fn push(&mut self, code: Code<L::Rest>, tid: Tid, layout_for: impl FnOnce(u64) -> L) {
        self.rows += 1;
        match &mut self.mode {
            Mode::Memory(rows) if rows.len() < self.max_rows => {
                if rows.len() == rows.capacity() {
                    // Grow in steps that never pass the budget (doubling could take twice it).
                    let target = (rows.capacity() * 2).clamp(1024, self.max_rows);
                    rows.reserve_exact(target - rows.len());
                }
                rows.push((code, tid));
            }
            Mode::Memory(rows) => {
                let mut kept = std::mem::take(rows);
                let layout = layout_for(self.rows * 2);
                // SAFETY: only this backend's memory; the sorts are ended on drop.
                let sorts = unsafe { begin_sorts::<L::Rest>(layout.count()) };
                self.mode = Mode::Sorting { layout, sorts };
                // The kept rows move into the sorts as the sorts fill: give their memory
                // back as they go, an eighth at a time, not all at the end.
                let eighth = (kept.len() / 8).max(1);
                while let Some((code, tid)) = kept.pop() {
                    self.put(code, tid);
                    if kept.len() % eighth == 0 {
                        kept.shrink_to_fit();
                    }
                }
                self.put(code, tid);
            }
            Mode::Sorting { .. } => self.put(code, tid),
        }
    }

    fn put(&mut self, code: Code<L::Rest>, tid: Tid) {
        let Mode::Sorting { layout, sorts } = &self.mode else {
            unreachable!("put is for external sorting")
        };
        for (t, &sort) in sorts.iter().enumerate() {
            let (key, rest) = layout.order(t, code);
            let datum = SortDatum::new(&Entry::new(key, rest, tid));
            // SAFETY: tuplesort_putdatum copies the datum's bytes; they outlive the call.
            unsafe {
                pg_sys::tuplesort_putdatum(sort, datum.datum(), false);
            }
        }
    }

    /// The layout already fixed by external sorting, if the spool turned to it.
    pub fn fixed_layout(&self) -> Option<&L> {
        match &self.mode {
            Mode::Memory(_) => None,
            Mode::Sorting { layout, .. } => Some(layout),
        }
    }

    /// Calls `emit` with table `t`'s entries in (key, TID) order.
    pub fn sorted_table(&mut self, layout: &L, t: usize, mut emit: impl FnMut(Entry<L::Rest>)) {
        match &mut self.mode {
            Mode::Memory(rows) => {
                let mut ordered: Vec<Entry<L::Rest>> = rows
                    .iter()
                    .map(|&(code, tid)| {
                        let (key, rest) = layout.order(t, code);
                        Entry::new(key, rest, tid)
                    })
                    .collect();
                ordered.sort_unstable_by_key(Entry::order);
                ordered.into_iter().for_each(emit);
            }
            Mode::Sorting { sorts, .. } => {
                let sort = sorts[t];
                // SAFETY: the sort is this spool's; every datum returned is a palloc'd copy
                // of a sort datum, freed once decoded.
                unsafe {
                    pg_sys::tuplesort_performsort(sort);
                    let (mut datum, mut is_null) = (pg_sys::Datum::from(0), false);
                    while pg_sys::tuplesort_getdatum(
                        sort,
                        true,
                        #[cfg(not(feature = "pg15"))]
                        true, // a palloc'd copy, which is freed below (16 added the choice)
                        &mut datum,
                        &mut is_null,
                        std::ptr::null_mut(),
                    ) {
                        let entry = SortDatum::decode::<L::Rest>(datum);
                        pg_sys::pfree(datum.cast_mut_ptr());
                        emit(entry);
                    }
                    pg_sys::tuplesort_end(sort);
                }
                sorts[t] = std::ptr::null_mut();
            }
        }
    }
}

impl<L: Tables> Drop for Spool<L> {
    fn drop(&mut self) {
        if let Mode::Sorting { sorts, .. } = &self.mode {
            for &sort in sorts.iter().filter(|s| !s.is_null()) {
                // SAFETY: a sort not yet ended. While an ERROR unwinds, Rust frames are
                // dropped before PostgreSQL's abort cleanup, so its memory is still there.
                unsafe { pg_sys::tuplesort_end(sort) };
            }
        }
    }
}

/// The type a tuplesort of entries with rest `P` sorts: `uuid` for 64-bit fingerprints,
/// `bytea` for wider codes.
fn sort_type<P: Rest>() -> pg_sys::Oid {
    if P::WORDS == 0 {
        pg_sys::UUIDOID
    } else {
        pg_sys::BYTEAOID
    }
}

/// One tuplesort of sort datums per table, sharing `maintenance_work_mem`.
unsafe fn begin_sorts<P: Rest>(tables: usize) -> Vec<*mut pg_sys::Tuplesortstate> {
    unsafe {
        let work_mem_kb = (pg_sys::maintenance_work_mem / tables as i32).max(64);
        let less =
            (*pg_sys::lookup_type_cache(sort_type::<P>(), pg_sys::TYPECACHE_LT_OPR as i32)).lt_opr;
        (0..tables)
            .map(|_| {
                pg_sys::tuplesort_begin_datum(
                    sort_type::<P>(),
                    less,
                    pg_sys::InvalidOid,
                    false,
                    work_mem_kb,
                    std::ptr::null_mut(),
                    pg_sys::TUPLESORT_NONE as i32,
                )
            })
            .collect()
    }
}

/// An entry as a tuplesort datum (the layout drawn above): a `uuid`'s 16 bytes, or a
/// `bytea` (a 4-byte length header, then the bytes).
struct SortDatum {
    bytes: [u8; SortDatum::MAX],
}

impl SortDatum {
    const MAX: usize = 4 + 16 + 8 * 3;

    fn new<P: Rest>(entry: &Entry<P>) -> SortDatum {
        let mut bytes = [0u8; SortDatum::MAX];
        let at = if P::WORDS == 0 { 0 } else { 4 };
        let len = at + 16 + 8 * P::WORDS;
        if at == 4 {
            // A 4-byte varlena header: the length, header included, shifted left by two on
            // little-endian machines, as SET_VARSIZE writes it.
            let header = if cfg!(target_endian = "little") {
                (len as u32) << 2
            } else {
                len as u32 & 0x3FFF_FFFF
            };
            bytes[..4].copy_from_slice(&header.to_ne_bytes());
        }
        bytes[at..at + 8].copy_from_slice(&entry.key.to_be_bytes());
        bytes[at + 8..at + 12].copy_from_slice(&entry.tid.block.to_be_bytes());
        bytes[at + 12..at + 14].copy_from_slice(&entry.tid.offset.to_be_bytes());
        for (i, word) in entry.rest.words().iter().enumerate() {
            bytes[at + 16 + 8 * i..at + 24 + 8 * i].copy_from_slice(&word.to_be_bytes());
        }
        SortDatum { bytes }
    }

    fn datum(&self) -> pg_sys::Datum {
        pg_sys::Datum::from(self.bytes.as_ptr())
    }

    /// The entry of a datum a tuplesort returned.
    ///
    /// # Safety
    /// `datum` is a copy of a `SortDatum::new::<P>`'s datum.
    unsafe fn decode<P: Rest>(datum: pg_sys::Datum) -> Entry<P> {
        let at = if P::WORDS == 0 { 0 } else { 4 };
        // SAFETY: as the caller promises, at + 16 + 8 · P::WORDS bytes (a datum the tuplesort
        // copied whole: 4-byte header kept).
        let bytes = unsafe {
            std::slice::from_raw_parts(datum.cast_mut_ptr::<u8>(), at + 16 + 8 * P::WORDS)
        };
        let be64 = |i: usize| u64::from_be_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        Entry::new(
            be64(at),
            P::from_fn(|i| be64(at + 16 + 8 * i)),
            Tid {
                block: u32::from_be_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes")),
                offset: u16::from_be_bytes([bytes[at + 12], bytes[at + 13]]),
            },
        )
    }
}
