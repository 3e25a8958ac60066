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
use crate::memory::RowBudget;
use neardup_core::index_page::{entries, Tid, NO_BLOCK};
use pgrx::pg_sys;
use pgrx::prelude::*;

fn corrupt(message: String) -> ! {
    ereport!(ERROR, PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED, message);
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_index_check(index regclass) RETURNS bigint
    STRICT VOLATILE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
-- As amcheck's functions: it reads whole tables and takes a ShareLock on them, so only the
-- owner of the extension's objects runs it, and whoever that owner grants it to.
REVOKE ALL ON FUNCTION hamming_index_check(regclass) FROM PUBLIC;
")]
fn hamming_index_check(index: pg_sys::Oid) -> i64 {
    // SAFETY: the table is locked before the index (the order every other path takes, so
    // no deadlock with DML or VACUUM), both stay open for the whole check, and all pages
    // are read under share locks.
    unsafe {
        let heap_oid = pg_sys::IndexGetRelation(index, true);
        if heap_oid == pg_sys::InvalidOid {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
                "hamming_index_check: not an index"
            );
        }
        // Before any lock: a role that may not read the table may not make it wait.
        if pg_sys::pg_class_aclcheck(
            heap_oid,
            pg_sys::GetUserId(),
            pg_sys::ACL_SELECT as pg_sys::AclMode,
        ) != pg_sys::AclResult::ACLCHECK_OK
        {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "hamming_index_check: permission denied for the index's table"
            );
        }
        // ShareLock on the table keeps writers out while the index and the table are compared
        // (as amcheck's parent check does); readers go on. A standby cannot take it, and
        // its only writer is WAL replay: there, check on a quiet primary's replica.
        let heap = pg_sys::table_open(heap_oid, heap_lock());
        let rel = pg_sys::index_open(index, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let am_name = std::ffi::CStr::from_ptr(pg_sys::get_am_name((*(*rel).rd_rel).relam));
        if am_name.to_bytes() != b"hamming" {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
                "hamming_index_check: not a hamming index"
            );
        }
        let m = meta::read(rel);
        let layout = meta::layout(&m);
        let main = pg_sys::ForkNumber::MAIN_FORKNUM;

        let mut pending: Vec<(Tid, Option<u64>)> = Vec::new();
        let mut block = m.pending_head;
        while block != NO_BLOCK {
            pgrx::check_for_interrupts!();
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
        drop(collected);
        in_heap.sort_unstable();
        // The heap rows (24 bytes), those not pending (16), one table's entries (16) and,
        // briefly, the build scan's copy.
        RowBudget::maintenance("hamming_index_check", 64).admit(in_heap.len() + pending.len());
        let show = |fp: Option<u64>| fp.map_or("NULL".to_string(), |f| format!("{f:016x}"));
        let missing = |tid: Tid, fp: Option<u64>| -> ! {
            corrupt(format!(
                "heap tuple ({},{}) with fingerprint {} is missing from the index",
                tid.block,
                tid.offset,
                show(fp)
            ))
        };
        // Rows only the pending list holds: NULL ones, and those inserted since the build.
        let tabled: Vec<(Tid, u64)> = in_heap
            .iter()
            .filter(|&&(tid, fp)| pending.binary_search(&(tid, fp)).is_err())
            .map(|&(tid, fp)| (tid, fp.unwrap_or_else(|| missing(tid, fp))))
            .collect();
        let heap_fp = |tid: Tid| {
            let at = in_heap.partition_point(|&(t, _)| t < tid);
            in_heap[at..]
                .iter()
                .take_while(|&&(t, _)| t == tid)
                .map(|&(_, fp)| fp)
                .collect::<Vec<_>>()
        };
        let check_entry = |tid: Tid, fp: Option<u64>| {
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
        };
        for &(tid, fp) in &pending {
            check_entry(tid, fp);
        }
        // One permuted table at a time: (TID, fingerprint) of its entries, sorted by TID.
        for (t, extent) in m.tables.iter().enumerate() {
            let table = &layout.tables()[t];
            let mut rows: Vec<(Tid, u64)> = Vec::new();
            let mut previous = 0u64;
            for p in 0..extent.pages {
                pgrx::check_for_interrupts!();
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
            for &(tid, fp) in &tabled {
                if rows.binary_search(&(tid, fp)).is_err() {
                    missing(tid, Some(fp));
                }
            }
            for &(tid, fp) in &rows {
                check_entry(tid, Some(fp));
            }
        }
        pg_sys::index_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        pg_sys::table_close(heap, heap_lock());
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
