//! VACUUM.
//!
//! `ambulkdelete` removes the entries of dead heap tuples from every page of every run and
//! pending list: every table, not only table 0, since a VACUUM interrupted by a crash may
//! have cleaned some tables and not others, and the next one must still find the leftovers
//! before their TIDs are reused. Pages are compacted in place, each in its own GenericXLog
//! record; sorted order is kept, so lookups stay valid throughout. It holds the merge lock,
//! so that no merge copies an entry it is removing; the runs' row counts in the metapage are
//! set to what remains, and runs with no row left become garbage.
//!
//! `amvacuumcleanup` then writes the pending list as a run and merges runs as the policy
//! says (as GIN folds its pending list in on VACUUM), gives the pages of garbage no snapshot
//! can read any more to the free space map, and sweeps the index for pages nothing owns
//! (left by a merge a crash interrupted).

use super::build::item_pointer;
use super::merge::{self, MergeLock};
use super::meta;
use super::page::{self, Kind, Locked, Xlog, META_BLOCK};
use super::run;
use neardup_core::index_page::{entries, Dead, Garbage, List, Meta, Run, Tid, ENTRY_SIZE};
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
        let _lock = MergeLock::wait(index);
        let m = meta::read(index);
        let mut is_dead = |tid: Tid| {
            let mut ip = item_pointer(tid);
            callback(&mut ip, callback_state)
        };
        let (mut kept, mut removed) = (0u64, 0u64);
        let mut run_rows = Vec::with_capacity(m.runs.len());
        for r in &m.runs {
            // Rows are counted on the pages that hold each once: table 0 and the NULL rows.
            let mut in_tables = 0;
            for (t, tree) in r.tables.iter().enumerate() {
                let counted = (t == 0).then_some(r.id);
                for block in run::chain_blocks(index, Kind::Table, r.id, tree.first_leaf) {
                    let (k, gone) = compact(index, block, &mut is_dead, counted);
                    if t == 0 {
                        in_tables += k;
                        removed += gone;
                    }
                }
            }
            kept += in_tables;
            let mut nulls = 0;
            for block in run::chain_blocks(index, Kind::Pending, r.id, r.nulls_head) {
                let (k, gone) = compact(index, block, &mut is_dead, None);
                nulls += k;
                removed += gone;
            }
            kept += nulls;
            run_rows.push((r.id, in_tables, nulls));
        }
        for list in lists(&m) {
            for block in run::chain_blocks(index, Kind::Pending, list.id, list.head) {
                let (k, gone) = compact(index, block, &mut is_dead, None);
                kept += k;
                removed += gone;
            }
        }
        super::pause::at("vacuum_pass");
        // SAFETY: reading the transaction counter is always allowed.
        let since = pg_sys::ReadNextFullTransactionId().value;
        meta::update(index, |m| {
            for r in &mut m.runs {
                if let Some(&(_, rows, _)) = run_rows.iter().find(|(id, ..)| *id == r.id) {
                    r.rows = rows;
                }
            }
            // A run left with no row at all is only pages: garbage (not during a merge
            // table by table, whose inputs may have no row left in table 0 by design).
            let empty = |r: &Run| {
                run_rows
                    .iter()
                    .any(|&(id, rows, nulls)| id == r.id && rows == 0 && nulls == 0)
                    && r.id != m.merging
                    && !m.merge_inputs.contains(&r.id)
            };
            let (gone, runs): (Vec<Run>, Vec<Run>) = std::mem::take(&mut m.runs)
                .into_iter()
                .partition(|r| empty(r));
            m.runs = runs;
            m.garbage.extend(gone.into_iter().map(|r| Garbage {
                since,
                dead: Dead::Run(r),
            }));
        });
        (*stats).tuples_removed += removed as f64;
        (*stats).num_index_tuples = kept as f64;
        (*stats).num_pages = blocks(index);
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
        let had_stats = !stats.is_null();
        let stats = stats_or_new(stats);
        let _lock = MergeLock::wait(index);
        merge::flush_and_merge(index);
        (*stats).pages_free = merge::sweep(index);
        if !had_stats {
            // Counted under the merge lock: no merge recycles the pages meanwhile.
            (*stats).num_index_tuples = count_rows(index, &meta::read(index)) as f64;
        }
        (*stats).num_pages = blocks(index);
        stats
    }
}

fn blocks(index: pg_sys::Relation) -> u32 {
    // SAFETY: the index is open.
    unsafe { pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM) }
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

/// The pending lists: the open one and the sealed one, if any.
fn lists(m: &Meta) -> impl Iterator<Item = &List> {
    [&m.pending, &m.sealed].into_iter().filter(|l| l.id != 0)
}

/// Removes the entries `dead` names from one page; returns how many remain and how many
/// went. For a page of table 0 of run `counted`, the run's row count in the metapage goes
/// down in the same WAL record, so that it stays true if VACUUM stops halfway.
fn compact(
    index: pg_sys::Relation,
    block: u32,
    dead: &mut impl FnMut(Tid) -> bool,
    counted: Option<u32>,
) -> (u64, u64) {
    // SAFETY: vacuum_delay_point may sleep, and checks for interrupts; no lock of ours is
    // held here.
    unsafe { pg_sys::vacuum_delay_point() };
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    // The metapage before the page, as inserts lock them.
    let metapage =
        counted.map(|_| Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_EXCLUSIVE));
    let locked = Locked::read(index, main, block, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    // SAFETY: an exclusively locked page of ours.
    let contents = unsafe { page::contents(locked.page()) };
    let keep: Vec<bool> = entries(contents).map(|e| !dead(e.heap_tid())).collect();
    let kept = keep.iter().filter(|&&k| k).count();
    let gone = keep.len() - kept;
    if gone > 0 {
        let mut xlog = Xlog::start(index);
        let copy = xlog.register(&locked, false);
        // SAFETY: GenericXLog copies of the same pages, locked exclusively.
        unsafe {
            let out = page::contents_mut(copy);
            let mut n = 0;
            for (i, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
                out.copy_within(i * ENTRY_SIZE..(i + 1) * ENTRY_SIZE, n * ENTRY_SIZE);
                n += 1;
            }
            page::set_len(copy, n * ENTRY_SIZE);
            if let (Some(id), Some(metapage)) = (counted, &metapage) {
                let mut m = meta::decode(metapage.page());
                if let Some(r) = m.runs.iter_mut().find(|r| r.id == id) {
                    r.rows = r.rows.saturating_sub(gone as u64);
                }
                meta::encode(xlog.register(metapage, false), &m);
            }
        }
        xlog.finish();
    }
    (kept as u64, gone as u64)
}

/// Rows in the index: the runs' rows (counted by the last VACUUM or merge), their NULL rows
/// and the pending rows.
fn count_rows(index: pg_sys::Relation, m: &Meta) -> u64 {
    let mut rows = m.run_rows();
    let mut count =
        |owner: u32, head: u32| run::for_each_pending(index, owner, head, |_| rows += 1);
    for r in &m.runs {
        count(r.id, r.nulls_head);
    }
    for list in lists(m) {
        count(list.id, list.head);
    }
    rows
}
