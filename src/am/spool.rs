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
//! A tuplesort sorts `uuid` datums: 16 bytes compared as unsigned bytes, which is exactly
//! the order of (permuted key, block, offset) written big-endian.
//!
//! ```text
//!  uuid sort key (16 bytes, big-endian)
//!  +----------------------+--------------+------------+---------+
//!  | permuted key (u64)   | block (u32)  | offset u16 | 0 (u16) |
//!  +----------------------+--------------+------------+---------+
//! ```
//!
//! Rows with a NULL fingerprint are only TIDs (they go to the pending list) and stay in
//! memory, 8 bytes each.

use neardup_core::search::index_page::Tid;
use neardup_core::search::permuted::Layout;
use pgrx::pg_sys;

/// Bytes a row costs in memory: the row and the permuted copy being sorted.
const BYTES_PER_ROW: usize = 2 * std::mem::size_of::<(u64, Tid)>();

pub struct Spool {
    max_rows: usize,
    mode: Mode,
    pub nulls: Vec<Tid>,
    rows: u64,
}

enum Mode {
    Memory(Vec<(u64, Tid)>),
    Sorting {
        layout: Layout,
        sorts: Vec<*mut pg_sys::Tuplesortstate>,
    },
}

impl Spool {
    pub fn new() -> Spool {
        // SAFETY: a GUC of this backend, read on its only thread.
        let budget = unsafe { pg_sys::maintenance_work_mem }.max(64) as usize * 1024;
        Spool {
            max_rows: budget / BYTES_PER_ROW,
            mode: Mode::Memory(Vec::new()),
            nulls: Vec::new(),
            rows: 0,
        }
    }

    /// Rows with a fingerprint.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds a row; `layout_for` chooses the layout for a number of rows when the spool
    /// turns to external sorting.
    pub fn push(&mut self, fp: u64, tid: Tid, layout_for: impl FnOnce(u64) -> Layout) {
        self.rows += 1;
        match &mut self.mode {
            Mode::Memory(rows) if rows.len() < self.max_rows => {
                if rows.len() == rows.capacity() {
                    // Grow in steps that never pass the budget (doubling could take twice it).
                    let target = (rows.capacity() * 2).clamp(1024, self.max_rows);
                    rows.reserve_exact(target - rows.len());
                }
                rows.push((fp, tid));
            }
            Mode::Memory(rows) => {
                let mut kept = std::mem::take(rows);
                let layout = layout_for(self.rows * 2);
                // SAFETY: only this backend's memory; the sorts are ended on drop.
                let sorts = unsafe { begin_sorts(layout.tables().len()) };
                self.mode = Mode::Sorting { layout, sorts };
                // The kept rows move into the sorts as the sorts fill: give their memory
                // back as they go, an eighth at a time, not all at the end.
                let eighth = (kept.len() / 8).max(1);
                while let Some((fp, tid)) = kept.pop() {
                    self.put(fp, tid);
                    if kept.len() % eighth == 0 {
                        kept.shrink_to_fit();
                    }
                }
                self.put(fp, tid);
            }
            Mode::Sorting { .. } => self.put(fp, tid),
        }
    }

    fn put(&mut self, fp: u64, tid: Tid) {
        let Mode::Sorting { layout, sorts } = &self.mode else {
            unreachable!("put is for external sorting")
        };
        for (table, &sort) in layout.tables().iter().zip(sorts) {
            let key = encode(table.apply(fp), tid);
            // SAFETY: tuplesort_putdatum copies the 16 bytes; the array outlives the call.
            unsafe {
                pg_sys::tuplesort_putdatum(sort, pg_sys::Datum::from(key.as_ptr()), false);
            }
        }
    }

    /// The layout already fixed by external sorting, if the spool turned to it.
    pub fn fixed_layout(&self) -> Option<&Layout> {
        match &self.mode {
            Mode::Memory(_) => None,
            Mode::Sorting { layout, .. } => Some(layout),
        }
    }

    /// Calls `emit` with table `t`'s (permuted key, TID) in order.
    pub fn sorted_table(&mut self, layout: &Layout, t: usize, mut emit: impl FnMut(u64, Tid)) {
        match &mut self.mode {
            Mode::Memory(rows) => {
                let table = &layout.tables()[t];
                let mut permuted: Vec<(u64, Tid)> = rows
                    .iter()
                    .map(|&(fp, tid)| (table.apply(fp), tid))
                    .collect();
                permuted.sort_unstable();
                permuted.into_iter().for_each(|(key, tid)| emit(key, tid));
            }
            Mode::Sorting { sorts, .. } => {
                let sort = sorts[t];
                // SAFETY: the sort is this spool's; every datum returned is a palloc'd uuid,
                // freed once decoded.
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
                        let bytes = &*datum.cast_mut_ptr::<[u8; 16]>();
                        let (key, tid) = decode(bytes);
                        pg_sys::pfree(datum.cast_mut_ptr());
                        emit(key, tid);
                    }
                    pg_sys::tuplesort_end(sort);
                }
                sorts[t] = std::ptr::null_mut();
            }
        }
    }
}

impl Drop for Spool {
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

/// One tuplesort of `uuid` datums per table, sharing `maintenance_work_mem`.
unsafe fn begin_sorts(tables: usize) -> Vec<*mut pg_sys::Tuplesortstate> {
    unsafe {
        let work_mem_kb = (pg_sys::maintenance_work_mem / tables as i32).max(64);
        let less =
            (*pg_sys::lookup_type_cache(pg_sys::UUIDOID, pg_sys::TYPECACHE_LT_OPR as i32)).lt_opr;
        (0..tables)
            .map(|_| {
                pg_sys::tuplesort_begin_datum(
                    pg_sys::UUIDOID,
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

fn encode(key: u64, tid: Tid) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&key.to_be_bytes());
    bytes[8..12].copy_from_slice(&tid.block.to_be_bytes());
    bytes[12..14].copy_from_slice(&tid.offset.to_be_bytes());
    bytes
}

fn decode(bytes: &[u8; 16]) -> (u64, Tid) {
    let key = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
    let block = u32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes"));
    let offset = u16::from_be_bytes(bytes[12..14].try_into().expect("2 bytes"));
    (key, Tid { block, offset })
}
