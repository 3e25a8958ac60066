//! Writing the pending list as a run, merging runs, and giving their pages back.
//!
//! One backend at a time does any of this: the *merge lock* is a heavyweight lock on the
//! index's block 0 (as GIN locks its metapage for pending-list cleanup), taken without
//! waiting by an inserter that filled the pending list (it goes on inserting if another
//! backend holds it) and waited for by VACUUM. Nothing else waits for it: a merge reads its
//! inputs under share locks page by page, writes the new run into pages no scan can reach,
//! and then publishes it with one WAL-logged change of the metapage, so lookups and inserts
//! go on throughout.
//!
//! 1. *Seal*: the open pending list becomes the sealed list, which scans still read, and
//!    inserts start a new one (one metapage record).
//! 2. *Write*: a new id is recorded in the metapage, then the run's pages, each owned by the
//!    id and WAL-logged whole, are written into free pages or new ones.
//! 3. *Publish*: the metapage swaps the inputs for the new run and keeps the inputs as
//!    garbage, stamped with the next transaction id.
//! 4. *Recycle*: garbage older than every snapshot (`GlobalVisCheckRemovableFullXid`, as
//!    nbtree recycles deleted pages) goes to the free space map.
//!
//! A crash or an ERROR before 3 leaves pages owned by an id nothing refers to; VACUUM's
//! sweep finds and frees them (`sweep`). The runs to merge are chosen by
//! `neardup_core::merge_policy`.

use super::build::choose_layout;
use super::meta;
use super::options;
use super::page::{self, Kind, META_BLOCK};
use super::run::{self, PageWriter};
use super::spool::Spool;
use neardup_core::index_page::{Dead, Entry, Garbage, List, Meta, Run, Tid, Tree};
use neardup_core::merge_policy::merge_from;
use neardup_core::permuted::Layout;
use pgrx::pg_sys;

fn merge_lock_mode() -> pg_sys::LOCKMODE {
    pg_sys::ExclusiveLock as pg_sys::LOCKMODE
}

/// Writes the pending list as a run (and merges) unless another backend is at it.
pub fn try_flush(index: pg_sys::Relation) {
    // SAFETY: a lock tag on our own index; released below or at transaction end.
    if unsafe { pg_sys::ConditionalLockPage(index, META_BLOCK, merge_lock_mode()) } {
        flush_and_merge(index);
        unsafe { pg_sys::UnlockPage(index, META_BLOCK, merge_lock_mode()) };
    }
}

/// Holds the merge lock for as long as it lives (VACUUM).
pub struct MergeLock(pg_sys::Relation);

impl MergeLock {
    pub fn wait(index: pg_sys::Relation) -> MergeLock {
        // SAFETY: as in try_flush; the wait is interruptible.
        unsafe { pg_sys::LockPage(index, META_BLOCK, merge_lock_mode()) };
        MergeLock(index)
    }
}

impl Drop for MergeLock {
    fn drop(&mut self) {
        // SAFETY: taken in `wait`. While an ERROR unwinds, transaction abort releases it too;
        // releasing first is harmless.
        unsafe { pg_sys::UnlockPage(self.0, META_BLOCK, merge_lock_mode()) };
    }
}

/// Recycles what it can, writes the pending list as a run and merges runs until the policy
/// is satisfied. The caller holds the merge lock.
pub fn flush_and_merge(index: pg_sys::Relation) {
    let m = meta::read(index);
    if m.merging != 0 {
        // Left by a merge an ERROR interrupted (we hold the merge lock: none is running);
        // its pages are nobody's now, and VACUUM's sweep frees them.
        meta::update(index, |m| m.merging = 0);
    }
    recycle(index);
    if m.sealed.id == 0 && m.pending.pages > 0 {
        meta::update(index, |m| {
            m.sealed = m.pending;
            m.pending = List::empty(m.take_id());
        });
    }
    merge_while_needed(index);
    refill_spare(index);
}

fn merge_while_needed(index: pg_sys::Relation) {
    loop {
        let m = meta::read(index);
        let sealed = (m.sealed.id != 0).then(|| read_list(index, &m.sealed));
        let mut sizes: Vec<(u64, Option<usize>)> = m
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.rows, Some(i)))
            .collect();
        if let Some(s) = &sealed {
            sizes.push((s.rows.len() as u64, None));
        }
        sizes.sort_by_key(|s| std::cmp::Reverse(s.0));
        let counts: Vec<u64> = sizes.iter().map(|s| s.0).collect();
        let chosen: Vec<Option<usize>> = match (merge_from(&counts), &sealed) {
            (Some(from), _) => sizes[from..].iter().map(|s| s.1).collect(),
            (None, Some(_)) => vec![None],
            (None, None) => return,
        };
        let inputs: Vec<Run> = chosen
            .iter()
            .flatten()
            .map(|&i| m.runs[i].clone())
            .collect();
        let sealed = if chosen.contains(&None) { sealed } else { None };
        if !merge(index, &m, inputs, sealed) {
            return;
        }
    }
}

/// The rows of a pending list: fingerprints, and the TIDs of NULL ones.
struct ListRows {
    list: List,
    rows: Vec<(u64, Tid)>,
    nulls: Vec<Tid>,
}

fn read_list(index: pg_sys::Relation, list: &List) -> ListRows {
    let mut out = ListRows {
        list: *list,
        rows: Vec::new(),
        nulls: Vec::new(),
    };
    run::for_each_pending(index, list.id, list.head, |e| match e.fingerprint() {
        Some(fp) => out.rows.push((fp, e.heap_tid())),
        None => out.nulls.push(e.heap_tid()),
    });
    out
}

/// Bytes per row of an in-memory merge: one permuted table (16) and the sort's scratch.
const MERGE_BYTES_PER_ROW: u64 = 24;

/// Merges `inputs` and `sealed` into one run and publishes it; false if the metapage has no
/// room for the result (the merge waits for garbage to be recycled).
fn merge(index: pg_sys::Relation, m: &Meta, inputs: Vec<Run>, sealed: Option<ListRows>) -> bool {
    let rows: u64 = inputs.iter().map(|r| r.rows).sum::<u64>()
        + sealed.as_ref().map_or(0, |s| s.rows.len() as u64);
    let layout = choose_layout(index, rows);
    let mut after = m.clone();
    after.runs.retain(|r| !inputs.iter().any(|i| i.id == r.id));
    after.runs.push(Run {
        id: 0,
        blocks: layout.blocks(),
        rows,
        nulls_head: 0,
        nulls_pages: 0,
        tables: vec![Tree::EMPTY; layout.tables().len()],
    });
    after.garbage.extend(inputs.iter().map(|r| Garbage {
        since: 0,
        dead: Dead::Run(r.clone()),
    }));
    if let Some(s) = &sealed {
        after.garbage.push(Garbage {
            since: 0,
            dead: Dead::List(s.list),
        });
    }
    if !meta::fits(&after) {
        return false;
    }
    let mut id = 0;
    let current = meta::update(index, |m| {
        id = m.take_id();
        m.merging = id;
    });
    let mut out = PageWriter::for_merge(index, &current);

    let mut nulls: Vec<Tid> = Vec::new();
    for r in &inputs {
        run::for_each_pending(index, r.id, r.nulls_head, |e| nulls.push(e.heap_tid()));
    }
    let no_rows = Vec::new();
    let (sealed_rows, sealed_list) = match &sealed {
        Some(s) => {
            nulls.extend_from_slice(&s.nulls);
            (&s.rows, Some(s.list))
        }
        None => (&no_rows, None),
    };
    // SAFETY: a GUC of this backend, read on its only thread.
    let budget = unsafe { pg_sys::maintenance_work_mem }.max(64) as u64 * 1024;
    let new_run = if rows * MERGE_BYTES_PER_ROW <= budget {
        run::write_run(&mut out, id, &layout, rows, &nulls, |t, emit| {
            for (key, tid) in in_memory_table(index, m, &inputs, sealed_rows, &layout, t) {
                emit(key, tid);
            }
        })
    } else {
        let mut spool = Spool::new();
        for_each_row(index, m, &inputs, sealed_rows, |fp, tid| {
            spool.push(fp, tid, |_| layout.clone())
        });
        run::write_run(&mut out, id, &layout, rows, &nulls, |t, emit| {
            spool.sorted_table(&layout, t, &mut *emit)
        })
    };
    // SAFETY: reading the transaction counter is always allowed.
    let since = unsafe { pg_sys::ReadNextFullTransactionId() }.value;
    meta::update(index, |m| {
        m.merging = 0;
        m.runs.retain(|r| !inputs.iter().any(|i| i.id == r.id));
        m.runs.push(new_run);
        m.runs.sort_by_key(|r| std::cmp::Reverse(r.rows));
        m.garbage.extend(inputs.iter().map(|r| Garbage {
            since,
            dead: Dead::Run(r.clone()),
        }));
        if let Some(list) = sealed_list {
            m.sealed = List::empty(0);
            m.garbage.push(Garbage {
                since,
                dead: Dead::List(list),
            });
        }
    });
    true
}

/// Table `t` of `layout` over the inputs, sorted. Inputs with the same layout give their
/// table `t`, already sorted, and the stable sort merges those runs in linear passes;
/// others give their table 0, permuted anew.
fn in_memory_table(
    index: pg_sys::Relation,
    m: &Meta,
    inputs: &[Run],
    sealed: &[(u64, Tid)],
    layout: &Layout,
    t: usize,
) -> Vec<(u64, Tid)> {
    let table = &layout.tables()[t];
    let mut rows: Vec<(u64, Tid)> = Vec::new();
    for r in inputs {
        if r.blocks == layout.blocks() {
            run::for_each_entry(index, r.id, &r.tables[t], |e: Entry| {
                rows.push((e.key, e.tid))
            });
        } else {
            let own = meta::layout(m, r);
            let first = &own.tables()[0];
            run::for_each_entry(index, r.id, &r.tables[0], |e: Entry| {
                rows.push((table.apply(first.invert(e.key)), e.tid))
            });
        }
    }
    rows.extend(sealed.iter().map(|&(fp, tid)| (table.apply(fp), tid)));
    pgrx::check_for_interrupts!();
    rows.sort();
    rows
}

/// Every (fingerprint, TID) of the inputs.
fn for_each_row(
    index: pg_sys::Relation,
    m: &Meta,
    inputs: &[Run],
    sealed: &[(u64, Tid)],
    mut emit: impl FnMut(u64, Tid),
) {
    for r in inputs {
        let own = meta::layout(m, r);
        let first = &own.tables()[0];
        run::for_each_entry(index, r.id, &r.tables[0], |e| {
            emit(first.invert(e.key), e.tid)
        });
    }
    sealed.iter().for_each(|&(fp, tid)| emit(fp, tid));
}

/// Puts the pages of garbage that no snapshot can still read into the free space map.
pub fn recycle(index: pg_sys::Relation) {
    let m = meta::read(index);
    let ready: Vec<&Garbage> = m
        .garbage
        .iter()
        .filter(|g| {
            // SAFETY: a read of the shared horizons; a NULL relation asks the most
            // conservative one (every database's snapshots).
            unsafe {
                pg_sys::GlobalVisCheckRemovableFullXid(
                    std::ptr::null_mut(),
                    pg_sys::FullTransactionId { value: g.since },
                )
            }
        })
        .collect();
    if ready.is_empty() {
        return;
    }
    for g in &ready {
        let blocks = match &g.dead {
            Dead::Run(r) => run::run_blocks(index, r),
            Dead::List(l) => run::chain_blocks(index, Kind::Pending, l.id, l.head),
        };
        for b in blocks {
            // SAFETY: an index page no scan can reach any more.
            unsafe { pg_sys::RecordFreeIndexPage(index, b) };
        }
    }
    let gone: Vec<u32> = ready.iter().map(|g| g.dead.id()).collect();
    meta::update(index, |m| {
        m.garbage.retain(|g| !gone.contains(&g.dead.id()))
    });
    // SAFETY: the index is open.
    unsafe { pg_sys::IndexFreeSpaceMapVacuum(index) };
}

/// Sets free pages aside for the pending list, enough for two lists of `pending_limit` rows
/// (inserts then reuse space without searching the free space map, where a merge could take
/// the same page).
fn refill_spare(index: pg_sys::Relation) {
    let m = meta::read(index);
    let per_list = options::of(index).pending_limit as usize / page::ENTRIES_PER_PAGE + 1;
    let want = (2 * per_list).min(MAX_SPARE).saturating_sub(m.spare.len());
    let mut out = PageWriter::for_merge(index, &m);
    let blocks: Vec<u32> = (0..want).map_while(|_| out.take_free()).collect();
    if !blocks.is_empty() {
        meta::update(index, |m| m.spare.extend(&blocks));
    }
}

/// The most spare pages the metapage keeps.
const MAX_SPARE: usize = 256;

/// VACUUM's sweep: frees every page no live id owns (left by a merge a crash or an ERROR
/// interrupted, or already free); returns how many. The caller holds the merge lock, so no
/// merge is writing pages meanwhile; inserters only extend the index, and hold the
/// extension lock until the page they add is locked, so a new page is waited for.
pub fn sweep(index: pg_sys::Relation) -> u32 {
    let m = meta::read(index);
    let live = m.live_ids();
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    // SAFETY: the index is open.
    let blocks = unsafe { pg_sys::RelationGetNumberOfBlocksInFork(index, main) };
    let mut freed = 0;
    // Spare pages are free but set aside; one an inserter takes meanwhile gets a live owner.
    for block in (1..blocks).filter(|b| !m.spare.contains(b)) {
        // SAFETY: may sleep and checks for interrupts; no lock of ours is held here.
        unsafe { pg_sys::vacuum_delay_point() };
        let free = |_: ()| {
            let locked = page::Locked::read(index, main, block, pg_sys::BUFFER_LOCK_SHARE);
            // SAFETY: a locked page of the index.
            unsafe {
                if page::is_new(locked.page()) {
                    None
                } else {
                    Some(live.binary_search(&page::owner(locked.page())).is_err())
                }
            }
        };
        let is_free = match free(()) {
            Some(f) => f,
            None => {
                // A new page: maybe one an inserter is adding right now. Once it has the
                // extension lock, such a page is locked by its inserter until initialised.
                // SAFETY: as for Locked::extend.
                unsafe {
                    pg_sys::LockRelationForExtension(index, pg_sys::ExclusiveLock as _);
                    pg_sys::UnlockRelationForExtension(index, pg_sys::ExclusiveLock as _);
                }
                free(()).unwrap_or(true)
            }
        };
        if is_free {
            // SAFETY: a page nothing refers to.
            unsafe { pg_sys::RecordFreeIndexPage(index, block) };
            freed += 1;
        }
    }
    // SAFETY: the index is open.
    unsafe { pg_sys::IndexFreeSpaceMapVacuum(index) };
    freed
}
