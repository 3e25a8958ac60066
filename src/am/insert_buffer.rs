//! Rows a backend inserted and has not yet appended to the index's pending list: up to a
//! page of them per index, appended together, so that the WAL record of an append (whose
//! GenericXLog delta compares the whole used part of the page) is paid once a page, not once
//! a row.
//!
//! Held back rows are invisible to other backends, which cannot see the uncommitted rows
//! anyway; this backend's own scans read them (`for_each`). They are appended when a page's
//! worth is held, before the transaction commits or prepares (an ERROR then aborts it), and
//! before `hamming_index_check` reads the index. Rows of an aborted subtransaction are
//! dropped: VACUUM cannot see held back rows, and could otherwise free their TIDs for reuse
//! before they are appended. Rows held for an index that was rebuilt, truncated or dropped
//! since are dropped too (the relfilenode tells).

use neardup_core::index_page::{Entry, ENTRIES_PER_PAGE};
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::RefCell;

struct Held {
    index: pg_sys::Oid,
    file: pg_sys::RelFileNode,
    rows: Vec<(Entry, pg_sys::SubTransactionId)>,
}

thread_local! {
    /// PostgreSQL runs a backend on one thread: this is per backend.
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

fn same_file(a: &pg_sys::RelFileNode, b: &pg_sys::RelFileNode) -> bool {
    a.spcNode == b.spcNode && a.dbNode == b.dbNode && a.relNode == b.relNode
}

/// Registers the transaction callbacks; called once per backend from `_PG_init`.
pub fn init() {
    // SAFETY: plain function pointers, registered once.
    unsafe {
        pg_sys::RegisterXactCallback(Some(at_transaction_event), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(at_subtransaction_event), std::ptr::null_mut());
    }
}

/// Holds `entry` back; returns the rows to append now when a page's worth is held.
pub fn hold(index: pg_sys::Relation, entry: Entry) -> Option<Vec<Entry>> {
    // SAFETY: an open relation.
    let (oid, file) = unsafe { ((*index).rd_id, (*index).rd_node) };
    // SAFETY: a plain read of this backend's transaction state.
    let subxact = unsafe { pg_sys::GetCurrentSubTransactionId() };
    HELD.with_borrow_mut(|held| {
        let at = match held.iter().position(|h| h.index == oid) {
            Some(at) => at,
            None => {
                held.push(Held {
                    index: oid,
                    file,
                    rows: Vec::with_capacity(ENTRIES_PER_PAGE),
                });
                held.len() - 1
            }
        };
        let h = &mut held[at];
        if !same_file(&h.file, &file) {
            // Rebuilt or truncated in this transaction: what was held is for the old file.
            h.rows.clear();
            h.file = file;
        }
        h.rows.push((entry, subxact));
        (h.rows.len() >= ENTRIES_PER_PAGE).then(|| h.rows.drain(..).map(|(e, _)| e).collect())
    })
}

/// Takes the rows held for `index` (to append them).
pub fn take(index: pg_sys::Relation) -> Vec<Entry> {
    // SAFETY: an open relation.
    let (oid, file) = unsafe { ((*index).rd_id, (*index).rd_node) };
    HELD.with_borrow_mut(|held| {
        let Some(at) = held.iter().position(|h| h.index == oid) else {
            return Vec::new();
        };
        let h = held.swap_remove(at);
        if same_file(&h.file, &file) {
            h.rows.into_iter().map(|(e, _)| e).collect()
        } else {
            Vec::new()
        }
    })
}

/// Calls `emit` with the rows held for `index`.
pub fn for_each(index: pg_sys::Relation, mut emit: impl FnMut(Entry)) {
    // SAFETY: an open relation.
    let (oid, file) = unsafe { ((*index).rd_id, (*index).rd_node) };
    HELD.with_borrow(|held| {
        for h in held
            .iter()
            .filter(|h| h.index == oid && same_file(&h.file, &file))
        {
            h.rows.iter().for_each(|&(e, _)| emit(e));
        }
    })
}

#[pg_guard]
unsafe extern "C-unwind" fn at_transaction_event(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::XactEvent::*;
    match event {
        XACT_EVENT_PRE_COMMIT | XACT_EVENT_PRE_PREPARE => append_all(),
        XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT | XACT_EVENT_COMMIT | XACT_EVENT_PREPARE => {
            HELD.with_borrow_mut(|held| held.clear())
        }
        _ => {}
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn at_subtransaction_event(
    event: pg_sys::SubXactEvent::Type,
    subxact: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    if event == pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        // Subtransactions started later are this one's descendants (it was still open).
        HELD.with_borrow_mut(|held| {
            for h in held.iter_mut() {
                h.rows.retain(|&(_, s)| s < subxact);
            }
        });
    }
}

/// Appends every row held, before the transaction commits.
fn append_all() {
    let indexes: Vec<pg_sys::Oid> = HELD.with_borrow(|held| held.iter().map(|h| h.index).collect());
    for oid in indexes {
        // SAFETY: the inserting statement locked the index and the lock is held to the end
        // of the transaction; a dropped index gives NULL, and its rows go with it.
        unsafe {
            let index = pg_sys::try_relation_open(oid, pg_sys::NoLock as pg_sys::LOCKMODE);
            if index.is_null() {
                HELD.with_borrow_mut(|held| held.retain(|h| h.index != oid));
                continue;
            }
            super::insert::append_held(index);
            pg_sys::relation_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
        }
    }
}
