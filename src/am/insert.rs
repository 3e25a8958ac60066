//! INSERT: the row's (code, TID) is appended to the pending list, an unsorted chain of
//! pages that every scan reads (like GIN's fast-update list), at once and in the index's
//! pages: nothing is held back in the backend, so every scan of every backend and parallel
//! worker, TRUNCATE, REINDEX, SET TABLESPACE and savepoints see the index as PostgreSQL's
//! own indexes are seen (see README.md in this folder).
//!
//! An append locks the metapage in share mode, only to find the tail, and changes the tail
//! page alone, logged by a record built for appends (`page::append_logged`): concurrent
//! inserters wait for each other only for that append. An append that needs a new page (a
//! spare one a merge set aside, or a new block) takes the metapage exclusively to link it.
//! Once the list holds `pending_limit` rows (checked at every append, so a lowered limit
//! acts at the next insert), the inserting backend writes it as a run and merges runs
//! (`merge`), unless another backend is already doing so; past `STALL_AFTER_LIMITS` times
//! the limit it waits (see `stall`).

use super::build::tid_of;
use super::codes::{self, by_width};
use super::merge::{self, STALL_AFTER_LIMITS};
use super::merge_worker;
use super::meta;
use super::options;
use super::page::{self, Kind, Locked, Role, Xlog, META_BLOCK};
use neardup_core::search::code_tables::Tables;
use neardup_core::search::index_page::{Entry, List, Meta, Rest, NO_BLOCK};
use pgrx::pg_sys;
use pgrx::prelude::*;

#[allow(clippy::too_many_arguments)]
#[pg_guard]
pub unsafe extern "C-unwind" fn aminsert(
    index: pg_sys::Relation,
    values: *mut pg_sys::Datum,
    isnull: *mut bool,
    heap_tid: pg_sys::ItemPointer,
    _heap: pg_sys::Relation,
    _check_unique: pg_sys::IndexUniqueCheck::Type,
    _index_unchanged: bool,
    _index_info: *mut pg_sys::IndexInfo,
) -> bool {
    if !meta::maintained(index) {
        return false;
    }
    by_width!(index, L => {
        // SAFETY: one key column; PostgreSQL passes valid pointers.
        let entry = unsafe {
            let tid = tid_of(&*heap_tid);
            if *isnull {
                // Kept so that ORDER BY scans return the row (last, as a seq scan would).
                Entry::null_row(tid)
            } else {
                let (key, rest) = codes::code_of::<<L as Tables>::Rest>(*values);
                Entry::new(key, rest, tid)
            }
        };
        append(index, entry)
    });
    false
}

/// Appends `entry` to the pending list; once the list holds `pending_limit` rows, writes it
/// as a run (unless another backend is at it; past `STALL_AFTER_LIMITS` times the limit,
/// after waiting for it).
fn append<P: Rest>(index: pg_sys::Relation, entry: Entry<P>) {
    let mut bytes = [0u8; super::run::MAX_ENTRY_SIZE];
    let bytes = &mut bytes[..Entry::<P>::SIZE];
    entry.write(bytes);
    let rows = match append_to_tail(index, bytes) {
        Some(rows) => rows,
        None => append_to_new_page(index, bytes),
    };
    let limit = options::of(index).pending_limit as u64;
    if rows < limit || merge_worker::hand_off(index, rows, limit) {
        return;
    }
    if rows >= STALL_AFTER_LIMITS * limit {
        stall::<P>(index, limit);
    } else {
        merge::try_flush(index);
    }
}

/// Inserts outrun the merges (the pending list, which every lookup reads, holds
/// `STALL_AFTER_LIMITS` times the limit): waits until the merge lock is free, then writes
/// the list as a run itself, or until the backend holding the lock has sealed the list
/// (a merge table by table does so between tables). It polls rather than queue for the
/// lock, so that it never waits for a whole VACUUM, and never makes the deadlock detector
/// cancel an autovacuum that holds the lock; the wait shows in pg_stat_activity as
/// wait_event_type `Extension`.
fn stall<P: Rest>(index: pg_sys::Relation, limit: u64) {
    loop {
        if merge::try_flush(index) {
            return;
        }
        let m = meta::read(index);
        if m.pending.row_capacity(Entry::<P>::SIZE) < STALL_AFTER_LIMITS * limit {
            return;
        }
        // SAFETY: this backend's latch; the wait is interruptible and ends with the
        // postmaster.
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                STALL_POLL_MS,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
        pgrx::check_for_interrupts!();
    }
}

/// How often a stalled inserter looks again.
const STALL_POLL_MS: i64 = 10;

/// Rows of a pending list whose tail page holds `on_tail` entries of `size` bytes.
fn list_rows(list: &List, size: usize, on_tail: usize) -> u64 {
    (list.pages.saturating_sub(1) as u64) * (page::CONTENTS / size) as u64 + on_tail as u64
}

/// Appends `bytes` to the tail page if it has room: the metapage in share mode (the list
/// cannot be sealed meanwhile), the tail exclusively. Returns the rows the list then holds,
/// or `None` when there is no tail or it is full.
fn append_to_tail(index: pg_sys::Relation, bytes: &[u8]) -> Option<u64> {
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let metapage = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_SHARE);
    // SAFETY: block 0, locked; the tail is locked exclusively while changed.
    unsafe {
        let list = pending_of(metapage.page());
        if list.tail == NO_BLOCK {
            return None;
        }
        let tail = Locked::read(index, main, list.tail, pg_sys::BUFFER_LOCK_EXCLUSIVE);
        let used = page::contents(tail.page()).len() / bytes.len();
        if used >= page::CONTENTS / bytes.len() {
            return None;
        }
        page::append_logged(index, &tail, bytes);
        Some(list_rows(&list, bytes.len(), used + 1))
    }
}

/// Appends under the metapage's exclusive lock, to a new page unless another inserter added
/// room meanwhile; returns the rows the list then holds. The new page is a spare one (set
/// aside by merges from the pages they freed) or, when there is none, a new block.
fn append_to_new_page(index: pg_sys::Relation, bytes: &[u8]) -> u64 {
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let metapage = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    // SAFETY: all pages below are locked exclusively while changed.
    unsafe {
        let mut m = meta::decode(metapage.page());
        let tail = (m.pending.tail != NO_BLOCK)
            .then(|| Locked::read(index, main, m.pending.tail, pg_sys::BUFFER_LOCK_EXCLUSIVE));
        if let Some(t) = &tail {
            let used = page::contents(t.page()).len() / bytes.len();
            if used < page::CONTENTS / bytes.len() {
                page::append_logged(index, t, bytes);
                return list_rows(&m.pending, bytes.len(), used + 1);
            }
        }
        let fresh = match m.spare.pop() {
            Some(block) => Locked::read(index, main, block, pg_sys::BUFFER_LOCK_EXCLUSIVE),
            None => Locked::extend(index, main),
        };
        let mut xlog = Xlog::start(index);
        let target = xlog.register(&fresh, true);
        page::init(target, Role::new(Kind::Pending, m.pending.id));
        page::contents_mut(target)[..bytes.len()].copy_from_slice(bytes);
        page::set_len(target, bytes.len());
        match &tail {
            Some(old) => page::set_next(xlog.register(old, false), fresh.block()),
            None => m.pending.head = fresh.block(),
        }
        m.pending.tail = fresh.block();
        m.pending.pages += 1;
        meta::encode(xlog.register(&metapage, false), &m);
        xlog.finish();
        list_rows(&m.pending, bytes.len(), 1)
    }
}

unsafe fn pending_of(metapage: pg_sys::Page) -> List {
    unsafe {
        if page::kind(metapage) != Kind::Meta {
            pgrx::error!("hamming index block 0 is not a metapage");
        }
        Meta::read_pending(page::contents(metapage)).unwrap_or_else(|e| pgrx::error!("{}", e.0))
    }
}
