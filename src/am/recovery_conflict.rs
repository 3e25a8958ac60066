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
//! waited for) before the record that recycles its pages is replayed. (Strictly, at most
//! the stamp unless a transaction takes the stamp's id or a later one and ends in the few
//! instructions between the stamp's read and the publication's record: nbtree's safexid,
//! read the same way, has the same window.)
//!
//! But replay resolves a conflict only for a horizon the standby's next transaction id has
//! reached: it takes a larger one for one from before a wraparound and skips it
//! (`ResolveRecoveryConflictWithSnapshotFullXid`). A stamp is a transaction id that may
//! not be in the WAL yet (assigned to a transaction that has written nothing), and one
//! run in five of the standby check on 18 met a reused page that way. Replay advances the
//! standby's next id past every id a record carries (its header's, a commit record's
//! subtransactions') before it replays the record, so a stamp is *reached* once it is at
//! most one past an id the WAL holds before the recycling's record ([`reached`]):
//! - the latest completed transaction's: its commit or abort record was written before it
//!   counted as completed (garbage older than every snapshot, which nbtree alone
//!   recycles, is always reached: the horizon it is older than is at most that id plus
//!   one);
//! - the recycler's own (sub)transaction's, which the record itself carries: a bulk load's
//!   merges recycle what they published, stamped one past the load's id;
//! - the largest id an earlier recycling record of this backend carried ([`CARRIED`]).
//!
//! Garbage no scan can read whose stamp is not reached (a transaction that took an id
//! after the recycler's is still running: an idle session's, a concurrent test's) is
//! recycled from a subtransaction given an id of its own, assigned after every stamp was
//! read and so at or above them all, which the record carries; that id is remembered, so
//! later stamps (taken after it) are reached with no other id until some other transaction
//! takes one. It is not taken in VACUUM (which must not take ids), in parallel mode, or
//! when this backend's cache of subtransaction ids is half full (so that recycling never
//! makes snapshots suboverflowed): that garbage waits for a later recycling. The
//! subtransaction is released on an ERROR as on success.
//!
//! Clamping the horizon instead (to one past the latest completed transaction's id) is
//! not safe: a standby snapshot taken after a commit record was replayed but before the
//! primary counted that transaction completed (it flushes, and may wait for a synchronous
//! standby, first) has an xmin above the clamp, and check_index_standby met a reused page
//! that way on 18. Until 0.6 every recycling outside VACUUM took a subtransaction id: its
//! stamps, taken after the previous recycling's id, were never reached otherwise, so a
//! 300,000-row load took 684 ids and made every snapshot in the cluster suboverflowed.

use pgrx::pg_sys;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// The largest transaction id a recycling record this backend inserted carried (0: none).
/// Valid for the backend's life: the record is in the WAL before any record this backend
/// inserts later, and a standby replays them in that order.
static CARRIED: AtomicU64 = AtomicU64::new(0);

/// The subtransaction ids a recycler may have in this backend's cache before it lets
/// garbage wait instead of taking one more: half of `PGPROC_MAX_CACHED_SUBXIDS`.
const SUBXIDS_LEFT_TO_OTHERS: u8 = (pg_sys::PGPROC_MAX_CACHED_SUBXIDS / 2) as u8;

/// The newest stamp whose garbage `index` may recycle with no transaction id of its own:
/// one past the latest completed transaction's id, this (sub)transaction's, or the largest
/// an earlier recycling record of this backend carried (see the module comment). `None`
/// when any stamp will do (nothing is logged for standbys).
pub fn reached(index: pg_sys::Relation) -> Option<u64> {
    if !logged(index) {
        return None;
    }
    // SAFETY: a read of a shared 64-bit counter (a stale value is only lower: safe), and of
    // this backend's own transaction state.
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg16"))]
        let completed = (*pg_sys::ShmemVariableCache).latestCompletedXid.value;
        #[cfg(not(any(feature = "pg15", feature = "pg16")))]
        let completed = (*pg_sys::TransamVariables).latestCompletedXid.value;
        let own = pg_sys::GetCurrentFullTransactionIdIfAny().value;
        Some(completed.max(own).max(CARRIED.load(Ordering::Relaxed)) + 1)
    }
}

/// Whether a recycling may take a subtransaction id of its own, to recycle garbage whose
/// stamp is not reached: not in VACUUM, not in parallel mode, and while this backend's
/// cache of subtransaction ids is less than half full.
pub fn may_take_xid() -> bool {
    // SAFETY: this backend's own state and PGPROC.
    unsafe {
        let cache = (*pg_sys::MyProc).subxidStatus;
        !in_vacuum()
            && !pg_sys::IsInParallelMode()
            && !cache.overflowed
            && cache.count < SUBXIDS_LEFT_TO_OTHERS
    }
}

/// Logs that pages of `index` read by snapshots with an xmin at or below `horizon` (a full
/// transaction id) are about to be reused, when a standby could be running such queries.
/// Called before the change that recycles them, by the holder of the merge lock. The
/// horizon is a stamp that [`reached`] allows, or with `take_xid` (only when
/// [`may_take_xid`]) any stamp read before: the record then comes from a subtransaction
/// given an id of its own, at or above every such stamp.
pub fn before_recycling(index: pg_sys::Relation, horizon: u64, block: u32, take_xid: bool) {
    if !logged(index) {
        return;
    }
    // SAFETY: an open index; the record is plain data copied by XLogInsert.
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
            // The id the record's header carries (XLogRecordAssemble's).
            let carried = pg_sys::GetCurrentFullTransactionIdIfAny().value;
            CARRIED.fetch_max(carried, Ordering::Relaxed);
        };
        if take_xid {
            in_subtransaction_with_xid(insert);
        } else {
            insert();
        }
    }
}

/// Runs `f` in an internal subtransaction given a transaction id, released (committed into
/// its parent) after `f`, or rolled back and released if `f` raises an ERROR, which then
/// goes on to the caller: an outer exception block (PL/pgSQL's) finds its own
/// subtransaction current, as PL/pgSQL leaves it around its own blocks. The memory context
/// and resource owner it changes are restored either way.
fn in_subtransaction_with_xid(f: impl FnOnce()) {
    // SAFETY: the subtransaction is begun and ended here, in the order PL/pgSQL's exception
    // blocks use (exec_stmt_block); an ERROR reaches the catch with the error state
    // already copied and flushed by pgrx.
    unsafe {
        let (context, owner) = (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner);
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        let body = std::panic::AssertUnwindSafe(|| {
            pg_sys::GetCurrentTransactionId();
            super::pause::at("recycle_xid");
            f();
            pg_sys::ReleaseCurrentSubTransaction();
            pg_sys::MemoryContextSwitchTo(context);
            pg_sys::CurrentResourceOwner = owner;
        });
        pgrx::PgTryBuilder::new(body)
            .catch_others(|error| {
                pg_sys::MemoryContextSwitchTo(context);
                pg_sys::RollbackAndReleaseCurrentSubTransaction();
                pg_sys::MemoryContextSwitchTo(context);
                pg_sys::CurrentResourceOwner = owner;
                error.rethrow()
            })
            .execute()
    }
}
