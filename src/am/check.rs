//! `hamming_index_check(regclass)`, in the spirit of amcheck: every table sorted (within and
//! across pages), every table holding the same rows as table 0, and every row the table
//! would index present in the index with the same fingerprint (or as a NULL row). ERROR (XX002) on the first
//! disagreement; otherwise the number of rows checked.

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
        let mut reference: Option<Vec<(Option<u64>, Tid)>> = None;
        for (t, extent) in m.tables.iter().enumerate() {
            let table = &layout.tables()[t];
            let mut rows = Vec::new();
            let mut previous = 0u64;
            for p in 0..extent.pages {
                let locked =
                    Locked::read(rel, main, extent.first_block + p, pg_sys::BUFFER_LOCK_SHARE);
                if page::kind(locked.page()) != Kind::Table {
                    corrupt(format!(
                        "table {t}: block {} is not a table page",
                        extent.first_block + p
                    ));
                }
                for e in entries(page::contents(locked.page())) {
                    if e.key < previous {
                        corrupt(format!(
                            "table {t}: keys out of order at block {}",
                            extent.first_block + p
                        ));
                    }
                    previous = e.key;
                    rows.push((Some(table.invert(e.key)), e.tid));
                }
            }
            rows.sort_unstable_by_key(|&(fp, tid)| (tid, fp));
            match &reference {
                None => reference = Some(rows),
                Some(first) if *first != rows => {
                    corrupt(format!("table {t} does not hold the same rows as table 0"))
                }
                Some(_) => {}
            }
        }
        let mut indexed = reference.unwrap_or_default();
        let mut block = m.pending_head;
        while block != NO_BLOCK {
            let locked = Locked::read(rel, main, block, pg_sys::BUFFER_LOCK_SHARE);
            if page::kind(locked.page()) != Kind::Pending {
                corrupt(format!(
                    "block {block} in the pending list is not a pending page"
                ));
            }
            indexed.extend(
                entries(page::contents(locked.page())).map(|e| (e.fingerprint(), e.heap_tid())),
            );
            block = page::next(locked.page());
        }
        indexed.sort_unstable_by_key(|&(fp, tid)| (tid, fp));

        let (collected, _) = scan_table(heap, rel, pg_sys::BuildIndexInfo(rel), false);
        let in_heap = collected
            .rows
            .iter()
            .map(|&(fp, tid)| (Some(fp), tid))
            .chain(collected.nulls.iter().map(|&tid| (None, tid)));
        for (fp, tid) in in_heap {
            if indexed
                .binary_search_by_key(&(tid, fp), |&(f, t)| (t, f))
                .is_err()
            {
                corrupt(format!(
                    "heap tuple ({},{}) with fingerprint {} is missing from the index",
                    tid.block,
                    tid.offset,
                    fp.map_or("NULL".to_string(), |f| format!("{f:016x}"))
                ));
            }
        }
        pg_sys::table_close(heap, heap_lock());
        pg_sys::index_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        indexed.len() as i64
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
