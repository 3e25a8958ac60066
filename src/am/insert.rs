//! INSERT: the row's (fingerprint, TID) is appended to the pending list, an unsorted chain of
//! pages that every scan reads (like GIN's fast-update list); a backend holds its rows back
//! until it has a page's worth or commits (`insert_buffer`), and appends them together.
//! Most appends lock the metapage in share mode, only to find the tail, and change the tail
//! page alone (one GenericXLog record, one page): concurrent inserters wait for each other
//! only for that append. An
//! append that needs a new page (a spare one a merge set aside, or a new block) takes the
//! metapage exclusively to link it; when that makes
//! the list reach `pending_limit` rows, the inserting backend writes it as a run and merges
//! runs (`merge`), unless another backend or VACUUM is already doing so (past four times the
//! limit, it waits for that one and then merges).

use super::build::tid_of;
use super::insert_buffer;
use super::merge;
use super::meta;
use super::options;
use super::page::{self, Kind, Locked, Role, Xlog, META_BLOCK};
use neardup_core::index_page::{Entry, List, Meta, ENTRY_SIZE, NO_BLOCK};
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
    // SAFETY: one key column; PostgreSQL passes valid pointers.
    let entry = unsafe {
        let tid = tid_of(&*heap_tid);
        if *isnull {
            // Kept so that ORDER BY scans return the row (last, as a seq scan would).
            Entry::null_row(tid)
        } else {
            Entry {
                key: (*values).value() as u64,
                tid,
            }
        }
    };
    if let Some(rows) = insert_buffer::hold(index, entry) {
        append(index, &rows);
    }
    false
}

/// Appends the rows this backend holds back for `index` (see `insert_buffer`).
pub fn append_held(index: pg_sys::Relation) {
    let rows = insert_buffer::take(index);
    append(index, &rows);
}

/// A pending list this many times `pending_limit` makes an inserter wait for the merge
/// running (as a log-structured store stalls writes): without it, a long merge lets the list
/// grow without bound under a steady stream of inserts.
pub const STALL_AFTER_LIMITS: u64 = 4;

/// Appends `rows` to the pending list; once it holds `pending_limit` rows, writes it as a
/// run (unless another backend is at it; past `STALL_AFTER_LIMITS` times the limit, after
/// waiting for it).
fn append(index: pg_sys::Relation, mut rows: &[Entry]) {
    while !rows.is_empty() {
        let n = append_to_tail(index, rows);
        if n > 0 {
            rows = &rows[n..];
            continue;
        }
        let (n, list) = append_to_new_page(index, rows);
        rows = &rows[n..];
        if let Some(list) = list {
            // A new page: the ones before it are full.
            let full_rows = (list.pages as u64 - 1) * page::ENTRIES_PER_PAGE as u64;
            let limit = options::of(index).pending_limit as u64;
            if full_rows >= STALL_AFTER_LIMITS * limit {
                // Inserts outrun the merges: wait for the one running, then merge, so that
                // the pending list (which every lookup reads) stays bounded.
                let _lock = merge::MergeLock::wait(index);
                merge::flush_and_merge(index);
            } else if full_rows >= limit {
                merge::try_flush(index);
            }
        }
    }
}

/// Appends what fits of `rows` to the tail page: the metapage in share mode (the list cannot
/// be sealed meanwhile), the tail exclusively. Returns how many rows went (0 when there is
/// no tail or it is full).
fn append_to_tail(index: pg_sys::Relation, rows: &[Entry]) -> usize {
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let metapage = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_SHARE);
    // SAFETY: block 0, locked; the tail is locked exclusively and edited through GenericXLog.
    unsafe {
        let list = pending_of(metapage.page());
        if list.tail == NO_BLOCK {
            return 0;
        }
        let tail = Locked::read(index, main, list.tail, pg_sys::BUFFER_LOCK_EXCLUSIVE);
        let n = room(tail.page()).min(rows.len());
        if n > 0 {
            let mut xlog = Xlog::start(index);
            write_rows(xlog.register(&tail, false), &rows[..n]);
            xlog.finish();
        }
        n
    }
}

/// Entries a pending page still has room for.
unsafe fn room(page: pg_sys::Page) -> usize {
    unsafe { (page::CONTENTS - page::contents(page).len()) / ENTRY_SIZE }
}

/// Appends under the metapage's exclusive lock, to a new page unless another inserter added
/// room meanwhile; returns how many rows went, and the list when a page was added. The new
/// page is a spare one (set aside by merges from the pages they freed) or, when there is
/// none, a new block.
fn append_to_new_page(index: pg_sys::Relation, rows: &[Entry]) -> (usize, Option<List>) {
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let metapage = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    // SAFETY: all pages below are locked exclusively while edited through GenericXLog.
    unsafe {
        let mut m = meta::decode(metapage.page());
        let tail = (m.pending.tail != NO_BLOCK)
            .then(|| Locked::read(index, main, m.pending.tail, pg_sys::BUFFER_LOCK_EXCLUSIVE));
        let mut xlog = Xlog::start(index);
        if let Some(t) = tail.as_ref().filter(|t| room(t.page()) > 0) {
            let n = room(t.page()).min(rows.len());
            write_rows(xlog.register(t, false), &rows[..n]);
            xlog.finish();
            return (n, None);
        }
        let fresh = match m.spare.pop() {
            Some(block) => Locked::read(index, main, block, pg_sys::BUFFER_LOCK_EXCLUSIVE),
            None => Locked::extend(index, main),
        };
        let target = xlog.register(&fresh, true);
        page::init(target, Role::new(Kind::Pending, m.pending.id));
        let n = page::ENTRIES_PER_PAGE.min(rows.len());
        write_rows(target, &rows[..n]);
        match &tail {
            Some(old) => page::set_next(xlog.register(old, false), fresh.block()),
            None => m.pending.head = fresh.block(),
        }
        m.pending.tail = fresh.block();
        m.pending.pages += 1;
        meta::encode(xlog.register(&metapage, false), &m);
        xlog.finish();
        (n, Some(m.pending))
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

/// Writes `rows` after the page's entries (the caller checked they fit).
unsafe fn write_rows(target: pg_sys::Page, rows: &[Entry]) {
    unsafe {
        let used = page::contents(target).len();
        let out = &mut page::contents_mut(target)[used..];
        for (i, e) in rows.iter().enumerate() {
            e.write(&mut out[i * ENTRY_SIZE..]);
        }
        page::set_len(target, used + rows.len() * ENTRY_SIZE);
    }
}
