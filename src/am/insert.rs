//! INSERT: the row's (fingerprint, TID) is appended to the pending list, an unsorted chain of
//! pages that every scan reads (like GIN's fast-update list). Most appends lock the metapage
//! in share mode, only to find the tail, and change the tail page alone (one GenericXLog
//! record, one page): concurrent inserters wait for each other only for that append. An
//! append that needs a new page (a spare one a merge set aside, or a new block) takes the
//! metapage exclusively to link it; when that makes
//! the list reach `pending_limit` rows, the inserting backend writes it as a run and merges
//! runs (`merge`), unless another backend or VACUUM is already doing so.

use super::build::tid_of;
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
    if !append_to_tail(index, entry) {
        let list = append_to_new_page(index, entry);
        // A new page: the ones before it are full.
        let full_rows = (list.pages as u64 - 1) * page::ENTRIES_PER_PAGE as u64;
        if full_rows >= options::of(index).pending_limit as u64 {
            merge::try_flush(index);
        }
    }
    false
}

/// Appends to the tail page if it has room: the metapage in share mode (the list cannot be
/// sealed meanwhile), the tail exclusively. False when there is no tail or it is full.
fn append_to_tail(index: pg_sys::Relation, entry: Entry) -> bool {
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let metapage = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_SHARE);
    // SAFETY: block 0, locked; the tail is locked exclusively and edited through GenericXLog.
    unsafe {
        let list = pending_of(metapage.page());
        if list.tail == NO_BLOCK {
            return false;
        }
        let tail = Locked::read(index, main, list.tail, pg_sys::BUFFER_LOCK_EXCLUSIVE);
        if page::contents(tail.page()).len() + ENTRY_SIZE > page::CONTENTS {
            return false;
        }
        let mut xlog = Xlog::start(index);
        append(xlog.register(&tail, false), entry);
        xlog.finish();
        true
    }
}

/// Appends under the metapage's exclusive lock, to a new page unless another inserter added
/// one meanwhile; returns the list as it is now. The new page is a spare one (set aside by
/// merges from the pages they freed) or, when there is none, a new block.
fn append_to_new_page(index: pg_sys::Relation, entry: Entry) -> List {
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let metapage = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    // SAFETY: all pages below are locked exclusively while edited through GenericXLog.
    unsafe {
        let mut m = meta::decode(metapage.page());
        let tail = (m.pending.tail != NO_BLOCK)
            .then(|| Locked::read(index, main, m.pending.tail, pg_sys::BUFFER_LOCK_EXCLUSIVE));
        let mut xlog = Xlog::start(index);
        if let Some(t) = tail
            .as_ref()
            .filter(|t| page::contents(t.page()).len() + ENTRY_SIZE <= page::CONTENTS)
        {
            append(xlog.register(t, false), entry);
            xlog.finish();
            return m.pending;
        }
        let fresh = match m.spare.pop() {
            Some(block) => Locked::read(index, main, block, pg_sys::BUFFER_LOCK_EXCLUSIVE),
            None => Locked::extend(index, main),
        };
        let target = xlog.register(&fresh, true);
        page::init(target, Role::new(Kind::Pending, m.pending.id));
        append(target, entry);
        match &tail {
            Some(old) => page::set_next(xlog.register(old, false), fresh.block()),
            None => m.pending.head = fresh.block(),
        }
        m.pending.tail = fresh.block();
        m.pending.pages += 1;
        meta::encode(xlog.register(&metapage, false), &m);
        xlog.finish();
        m.pending
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

unsafe fn append(target: pg_sys::Page, entry: Entry) {
    unsafe {
        let used = page::contents(target).len();
        entry.write(&mut page::contents_mut(target)[used..used + ENTRY_SIZE]);
        page::set_len(target, used + ENTRY_SIZE);
    }
}
