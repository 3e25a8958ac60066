//! `hamming_index_check(regclass)`, in the spirit of amcheck:
//! - every table is sorted, within and across pages, and every page is of the right kind;
//! - every row the table would index is in every permuted table with its fingerprint, or in
//!   the pending list (with its fingerprint, or as a NULL row): a lookup cannot miss it;
//! - no entry names a live heap tuple with another fingerprint: a lookup cannot return a
//!   wrong row. Entries of dead tuples are allowed (VACUUM removes them; one interrupted by
//!   a crash may have cleaned some tables and not yet the others).
//!
//! ERROR (XX002) on the first violation; otherwise the number of heap rows verified.

use super::build::scan_table;
use super::meta;
use super::page::{self, Kind, Locked};
use neardup_core::index_page::{entries, Tid, NO_BLOCK};
use pgrx::pg_sys;
use pgrx::prelude::*;

fn corrupt(message: String) -> ! {
    ereport!(ERROR, PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED, message);
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_index_check(index regclass) RETURNS bigint
    STRICT VOLATILE PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
")]
fn hamming_index_check(index: pg_sys::Oid) -> i64 {
    // SAFETY: the index is opened and locked for the duration of the check; all pages are
    // read under share locks.
    unsafe {
        let rel = pg_sys::index_open(index, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let am_name = std::ffi::CStr::from_ptr(pg_sys::get_am_name((*(*rel).rd_rel).relam));
        if am_name.to_bytes() != b"hamming" {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
                "hamming_index_check: not a hamming index"
            );
        }
        // ShareLock on the table keeps writers out while the index and the table are compared
        // (as amcheck's parent check does); readers go on. A standby cannot take it, and
        // its only writer is WAL replay: there, check on a quiet primary's replica.
        let heap = pg_sys::table_open((*(*rel).rd_index).indrelid, heap_lock());
        let m = meta::read(rel);
        let layout = meta::layout(&m);
        let main = pg_sys::ForkNumber::MAIN_FORKNUM;
        // Every table's (TID, fingerprint) pairs, sorted by TID.
        let mut tables: Vec<Vec<(Tid, u64)>> = Vec::with_capacity(m.tables.len());
        for (t, extent) in m.tables.iter().enumerate() {
            let table = &layout.tables()[t];
            let mut rows = Vec::new();
            let mut previous = 0u64;
            for p in 0..extent.pages {
                let block = extent.first_block + p;
                let locked = Locked::read(rel, main, block, pg_sys::BUFFER_LOCK_SHARE);
                if page::kind(locked.page()) != Kind::Table {
                    corrupt(format!("table {t}: block {block} is not a table page"));
                }
                for e in entries(page::contents(locked.page())) {
                    if e.key < previous {
                        corrupt(format!("table {t}: keys out of order at block {block}"));
                    }
                    previous = e.key;
                    rows.push((e.tid, table.invert(e.key)));
                }
            }
            rows.sort_unstable();
            tables.push(rows);
        }
        let mut pending: Vec<(Tid, Option<u64>)> = Vec::new();
        let mut block = m.pending_head;
        while block != NO_BLOCK {
            let locked = Locked::read(rel, main, block, pg_sys::BUFFER_LOCK_SHARE);
            if page::kind(locked.page()) != Kind::Pending {
                corrupt(format!(
                    "block {block} in the pending list is not a pending page"
                ));
            }
            pending.extend(
                entries(page::contents(locked.page())).map(|e| (e.heap_tid(), e.fingerprint())),
            );
            block = page::next(locked.page());
        }
        pending.sort_unstable();

        let (collected, _) = scan_table(heap, rel, pg_sys::BuildIndexInfo(rel), false);
        let mut in_heap: Vec<(Tid, Option<u64>)> = collected
            .rows
            .iter()
            .map(|&(fp, tid)| (tid, Some(fp)))
            .chain(collected.nulls.iter().map(|&tid| (tid, None)))
            .collect();
        in_heap.sort_unstable();
        let show = |fp: Option<u64>| fp.map_or("NULL".to_string(), |f| format!("{f:016x}"));
        for &(tid, fp) in &in_heap {
            let in_pending = pending.binary_search(&(tid, fp)).is_ok();
            let in_every_table = fp.is_some_and(|fp| {
                !tables.is_empty() && tables.iter().all(|t| t.binary_search(&(tid, fp)).is_ok())
            });
            if !in_pending && !in_every_table {
                corrupt(format!(
                    "heap tuple ({},{}) with fingerprint {} is missing from the index",
                    tid.block,
                    tid.offset,
                    show(fp)
                ));
            }
        }
        let heap_fp = |tid: Tid| {
            let at = in_heap.partition_point(|&(t, _)| t < tid);
            in_heap[at..]
                .iter()
                .take_while(|&&(t, _)| t == tid)
                .map(|&(_, fp)| fp)
                .collect::<Vec<_>>()
        };
        let entries_of_tables = tables.iter().flatten().map(|&(tid, fp)| (tid, Some(fp)));
        for (tid, fp) in entries_of_tables.chain(pending.iter().copied()) {
            let live = heap_fp(tid);
            if !live.is_empty() && !live.contains(&fp) {
                corrupt(format!(
                    "index entry ({},{}) has fingerprint {} but the heap tuple has {}",
                    tid.block,
                    tid.offset,
                    show(fp),
                    show(live[0])
                ));
            }
        }
        pg_sys::table_close(heap, heap_lock());
        pg_sys::index_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        in_heap.len() as i64
    }
}

fn heap_lock() -> pg_sys::LOCKMODE {
    // SAFETY: a plain read of shared state.
    let lock = if unsafe { pg_sys::RecoveryInProgress() } {
        pg_sys::AccessShareLock
    } else {
        pg_sys::ShareLock
    };
    lock as pg_sys::LOCKMODE
}
