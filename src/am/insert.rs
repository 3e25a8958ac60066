//! INSERT after the build: the row's (fingerprint, TID) is appended to the pending pages,
//! an unsorted list that every scan reads in full (like GIN's fast-update list). Appends
//! are serialised by the metapage's exclusive lock; each is one GenericXLog record over the
//! metapage and the pages it touches. REINDEX folds the pending rows into the tables.

use super::build::tid_of;
use super::meta;
use super::page::{self, Kind, Locked, Xlog, META_BLOCK};
use neardup_core::index_page::{Entry, ENTRY_SIZE, NO_BLOCK};
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
    append_pending(index, entry);
    false
}

fn append_pending(index: pg_sys::Relation, entry: Entry) {
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let metapage = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    // SAFETY: all pages below are locked exclusively while edited through GenericXLog.
    unsafe {
        let mut m = meta::decode(metapage.page());
        let tail = (m.pending_tail != NO_BLOCK)
            .then(|| Locked::read(index, main, m.pending_tail, pg_sys::BUFFER_LOCK_EXCLUSIVE));
        let tail_has_room = tail
            .as_ref()
            .is_some_and(|t| page::contents(t.page()).len() + ENTRY_SIZE <= page::CONTENTS);
        let mut xlog = Xlog::start(index);
        let meta_copy = xlog.register(&metapage, false);
        let (target, _fresh) = if tail_has_room {
            (xlog.register(tail.as_ref().expect("tail"), false), None)
        } else {
            let fresh = Locked::extend(index, main);
            let target = xlog.register(&fresh, true);
            page::init(target, Kind::Pending, 0);
            if let Some(old) = &tail {
                page::set_next(xlog.register(old, false), fresh.block());
            } else {
                m.pending_head = fresh.block();
            }
            m.pending_tail = fresh.block();
            (target, Some(fresh))
        };
        let used = page::contents(target).len();
        entry.write(&mut page::contents_mut(target)[used..used + ENTRY_SIZE]);
        page::set_len(target, used + ENTRY_SIZE);
        m.pending_entries += 1;
        meta::encode(meta_copy, &m);
        xlog.finish();
    }
}
