//! VACUUM: remove the entries of dead heap tuples. Every entry of every table is put to the
//! callback, not only table 0's: a VACUUM interrupted by a crash may have cleaned some
//! tables and not others, and the next one must still find the leftovers before their
//! TIDs are reused. Pages are compacted in place, each in its own GenericXLog record;
//! sorted order is kept, so lookups stay valid throughout.

use super::build::item_pointer;
use super::meta;
use super::page::{self, Locked, Xlog};
use neardup_core::index_page::{entries, Meta, Tid, ENTRY_SIZE, NO_BLOCK};
use pgrx::pg_sys;
use pgrx::prelude::*;

#[pg_guard]
pub unsafe extern "C-unwind" fn ambulkdelete(
    info: *mut pg_sys::IndexVacuumInfo,
    stats: *mut pg_sys::IndexBulkDeleteResult,
    callback: pg_sys::IndexBulkDeleteCallback,
    callback_state: *mut std::ffi::c_void,
) -> *mut pg_sys::IndexBulkDeleteResult {
    // SAFETY: standard AM protocol; the callback is PostgreSQL's.
    unsafe {
        let index = (*info).index;
        let stats = stats_or_new(stats);
        let callback = callback.expect("bulk delete callback");
        let m = meta::read(index);
        let mut is_dead = |tid: Tid| {
            let mut ip = item_pointer(tid);
            callback(&mut ip, callback_state)
        };
        // Rows are counted on the pages that hold each once: table 0 and the pending list.
        let (mut kept, mut removed) = (0u64, 0u64);
        for block in owner_pages(index, &m) {
            let (k, r) = compact(index, block, &mut is_dead);
            kept += k;
            removed += r;
        }
        for block in other_table_pages(&m) {
            compact(index, block, &mut is_dead);
        }
        (*stats).tuples_removed += removed as f64;
        (*stats).num_index_tuples = kept as f64;
        (*stats).num_pages =
            pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM);
        stats
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amvacuumcleanup(
    info: *mut pg_sys::IndexVacuumInfo,
    stats: *mut pg_sys::IndexBulkDeleteResult,
) -> *mut pg_sys::IndexBulkDeleteResult {
    // SAFETY: standard AM protocol.
    unsafe {
        if (*info).analyze_only {
            return stats;
        }
        let index = (*info).index;
        let m = meta::read(index);
        advise_reindex(index, &m);
        if !stats.is_null() {
            return stats; // ambulkdelete already counted
        }
        let stats = stats_or_new(stats);
        (*stats).num_index_tuples = count_rows(index, &m) as f64;
        (*stats).num_pages =
            pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM);
        stats
    }
}

/// Pending rows are read by every scan and only REINDEX folds them into the tables: say so
/// when they have grown past a tenth of the index (a NOTICE, so autovacuum stays quiet).
fn advise_reindex(index: pg_sys::Relation, m: &neardup_core::index_page::Meta) {
    if m.pending_entries > 1000 && m.pending_entries > m.table_entries / 10 {
        // SAFETY: the relation is open; its name is a NUL-terminated NameData.
        let name = unsafe { std::ffi::CStr::from_ptr((*(*index).rd_rel).relname.data.as_ptr()) };
        pgrx::notice!(
            "hamming index \"{}\" has {} rows in its pending list ({} in its tables); REINDEX INDEX CONCURRENTLY folds them in and speeds up lookups",
            name.to_string_lossy(),
            m.pending_entries,
            m.table_entries
        );
    }
}

unsafe fn stats_or_new(
    stats: *mut pg_sys::IndexBulkDeleteResult,
) -> *mut pg_sys::IndexBulkDeleteResult {
    if stats.is_null() {
        unsafe { pg_sys::palloc0(std::mem::size_of::<pg_sys::IndexBulkDeleteResult>()) as *mut _ }
    } else {
        stats
    }
}

/// Pages holding each row exactly once: table 0 and the pending list.
fn owner_pages(index: pg_sys::Relation, m: &Meta) -> Vec<u32> {
    let mut blocks: Vec<u32> = m.tables.first().map_or(Vec::new(), |t| {
        (t.first_block..t.first_block + t.pages).collect()
    });
    blocks.extend(pending_blocks(index, m));
    blocks
}

fn other_table_pages(m: &Meta) -> impl Iterator<Item = u32> + '_ {
    m.tables
        .iter()
        .skip(1)
        .flat_map(|t| t.first_block..t.first_block + t.pages)
}

/// The pending list's blocks, following the links (each page read under a share lock).
/// The list is only ever appended to, so the chain read link by link stays consistent.
fn pending_blocks(index: pg_sys::Relation, m: &Meta) -> Vec<u32> {
    let mut blocks = Vec::new();
    let mut block = m.pending_head;
    while block != NO_BLOCK {
        pgrx::check_for_interrupts!();
        blocks.push(block);
        let locked = Locked::read(
            index,
            pg_sys::ForkNumber::MAIN_FORKNUM,
            block,
            pg_sys::BUFFER_LOCK_SHARE,
        );
        // SAFETY: a locked pending page.
        block = unsafe { page::next(locked.page()) };
    }
    blocks
}

/// Removes the entries `dead` names from one page; returns how many remain and how many
/// went.
fn compact(index: pg_sys::Relation, block: u32, dead: &mut impl FnMut(Tid) -> bool) -> (u64, u64) {
    // SAFETY: vacuum_delay_point may sleep, and checks for interrupts; no lock of ours is
    // held here.
    unsafe { pg_sys::vacuum_delay_point() };
    let locked = Locked::read(
        index,
        pg_sys::ForkNumber::MAIN_FORKNUM,
        block,
        pg_sys::BUFFER_LOCK_EXCLUSIVE,
    );
    // SAFETY: an exclusively locked page of ours.
    let contents = unsafe { page::contents(locked.page()) };
    let keep: Vec<bool> = entries(contents).map(|e| !dead(e.heap_tid())).collect();
    let kept = keep.iter().filter(|&&k| k).count();
    if kept < keep.len() {
        let mut xlog = Xlog::start(index);
        let copy = xlog.register(&locked, false);
        // SAFETY: the GenericXLog copy of the same page.
        unsafe {
            let out = page::contents_mut(copy);
            let mut n = 0;
            for (i, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
                out.copy_within(i * ENTRY_SIZE..(i + 1) * ENTRY_SIZE, n * ENTRY_SIZE);
                n += 1;
            }
            page::set_len(copy, n * ENTRY_SIZE);
        }
        xlog.finish();
    }
    (kept as u64, (keep.len() - kept) as u64)
}

/// Rows in the index: table 0's entries plus the pending ones.
pub fn count_rows(index: pg_sys::Relation, m: &Meta) -> u64 {
    owner_pages(index, m)
        .into_iter()
        .map(|block| {
            pgrx::check_for_interrupts!();
            let locked = Locked::read(
                index,
                pg_sys::ForkNumber::MAIN_FORKNUM,
                block,
                pg_sys::BUFFER_LOCK_SHARE,
            );
            // SAFETY: a locked page of ours.
            (unsafe { page::contents(locked.page()) }.len() / ENTRY_SIZE) as u64
        })
        .sum()
}
