//! Cancels the standby queries that could still read pages the primary is about to
//! recycle, through PostgreSQL's own recovery-conflict mechanism.
//!
//! A standby's scans pin nothing on the primary, so without hot_standby_feedback the
//! primary recycles garbage they may still read. nbtree solves the same problem for the
//! deleted pages it reuses: before reusing one it logs `XLOG_BTREE_REUSE_PAGE`, whose
//! replay does nothing but `ResolveRecoveryConflictWithSnapshotFullXid` — it waits up to
//! `max_standby_streaming_delay` for the standby queries whose snapshot's xmin is at or
//! below the horizon, then cancels them ("canceling statement due to conflict with
//! recovery", SQLSTATE 40001, counted in `pg_stat_database_conflicts.confl_snapshot`).
//! The record touches no page and names the relation only for its database, so it serves
//! our index as well as a btree, on a standby that has no neardup library at all (a
//! custom resource manager would need the library preloaded there to replay anything).
//! `pg_waldump` shows it as `Btree REUSE_PAGE` with the index's relfilenode.
//!
//! The horizon is the stamp of the garbage: the next transaction id when it was published.
//! A standby scan that read the metapage before that publication was replayed took its
//! snapshot earlier still, so its xmin is at most the stamp, and it is cancelled (or
//! waited for) before the record that recycles its pages is replayed.
//!
//! But replay resolves a conflict only for a horizon the standby's next transaction id has
//! reached: it takes a larger one for one from before a wraparound and skips it
//! (`ResolveRecoveryConflictWithSnapshotFullXid`). A stamp is a transaction id that may
//! not be in the WAL yet (assigned to a transaction that has written nothing), and one
//! run in five of the standby check on 18 met a reused page that way. So the record is
//! logged from a subtransaction given an id of its own, assigned after every stamp was read
//! and so above them all: replay advances the standby's next id past a record's id before
//! it replays the record. VACUUM takes no transaction id; it recycles only garbage whose
//! stamp the standby has surely reached ([`replayed_below`]).

use pgrx::pg_sys;

/// `XLOG_BTREE_REUSE_PAGE` (access/nbtxlog.h, the same from 13 to 18).
const XLOG_BTREE_REUSE_PAGE: u8 = 0xD0;

/// `xl_btree_reuse_page` of 15.
#[cfg(feature = "pg15")]
#[repr(C)]
struct ReusePage {
    node: pg_sys::RelFileNode,
    block: pg_sys::BlockNumber,
    horizon: pg_sys::FullTransactionId,
}

/// `xl_btree_reuse_page` of 16 to 18: the relation is a locator, and logical decoding on a
/// standby wants to know whether it is a catalog's (ours never is).
#[cfg(not(feature = "pg15"))]
#[repr(C)]
struct ReusePage {
    locator: pg_sys::RelFileLocator,
    block: pg_sys::BlockNumber,
    horizon: pg_sys::FullTransactionId,
    is_catalog_rel: bool,
}

/// The bytes of the record PostgreSQL reads (`SizeOfBtreeReusePage`): 16+ stops after the
/// flag, without the struct's trailing padding.
#[cfg(feature = "pg15")]
const RECORD_SIZE: usize = std::mem::size_of::<ReusePage>();
#[cfg(not(feature = "pg15"))]
const RECORD_SIZE: usize = std::mem::offset_of!(ReusePage, is_catalog_rel) + 1;

/// Whether recyclings of `index` are logged for standbys: wal_level is at least `replica`
/// (`XLogStandbyInfoActive`) and the index is WAL-logged.
fn logged(index: pg_sys::Relation) -> bool {
    // SAFETY: a GUC read and an open relation.
    unsafe {
        pg_sys::wal_level >= pg_sys::WalLevel::WAL_LEVEL_REPLICA as i32
            && super::page::relation_needs_wal(index)
    }
}

/// Whether this backend runs VACUUM (which must not take a transaction id).
fn in_vacuum() -> bool {
    // SAFETY: this backend's own PGPROC.
    unsafe { u32::from((*pg_sys::MyProc).statusFlags) & pg_sys::PROC_IN_VACUUM != 0 }
}

/// Logs that pages of `index` read by snapshots with an xmin at or below `horizon` (a full
/// transaction id) are about to be reused, when a standby could be running such queries.
/// Called before the change that recycles them, by the holder of the merge lock; outside
/// VACUUM, from a subtransaction with an id of its own (see the module comment).
pub fn before_recycling(index: pg_sys::Relation, horizon: u64, block: u32) {
    if !logged(index) {
        return;
    }
    // SAFETY: an open index; the record is plain data copied by XLogInsert. The
    // subtransaction is begun and released here, and the memory context and resource
    // owner it changes are restored, as PL/pgSQL does around its exception blocks.
    unsafe {
        let horizon = pg_sys::FullTransactionId { value: horizon };
        #[cfg(feature = "pg15")]
        let record = ReusePage {
            node: (*index).rd_node,
            block,
            horizon,
        };
        #[cfg(not(feature = "pg15"))]
        let record = ReusePage {
            locator: (*index).rd_locator,
            block,
            horizon,
            is_catalog_rel: false,
        };
        let insert = || {
            pg_sys::XLogBeginInsert();
            pg_sys::XLogRegisterData(std::ptr::addr_of!(record) as _, RECORD_SIZE as _);
            pg_sys::XLogInsert(pg_sys::RmgrIds::RM_BTREE_ID as u8, XLOG_BTREE_REUSE_PAGE);
        };
        if in_vacuum() {
            insert();
        } else {
            let (context, owner) = (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner);
            pg_sys::BeginInternalSubTransaction(std::ptr::null());
            pg_sys::GetCurrentTransactionId();
            insert();
            pg_sys::ReleaseCurrentSubTransaction();
            pg_sys::MemoryContextSwitchTo(context);
            pg_sys::CurrentResourceOwner = owner;
        }
    }
}

/// When VACUUM recycles garbage of `index` that is logged for standbys: a bound that a
/// standby's next transaction id has reached when it replays the record, so that a horizon
/// at or below it is resolved; the record follows the commit or abort record of the latest
/// completed transaction. `None` when any stamp will do: no standby, an unlogged index, or
/// a recycler outside VACUUM (its record carries an id above every stamp).
pub fn replayed_below(index: pg_sys::Relation) -> Option<u64> {
    if !logged(index) || !in_vacuum() {
        return None;
    }
    // SAFETY: a read of a shared 64-bit counter (a stale value is only lower: safe).
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg16"))]
        let completed = (*pg_sys::ShmemVariableCache).latestCompletedXid.value;
        #[cfg(not(any(feature = "pg15", feature = "pg16")))]
        let completed = (*pg_sys::TransamVariables).latestCompletedXid.value;
        Some(completed + 1)
    }
}
