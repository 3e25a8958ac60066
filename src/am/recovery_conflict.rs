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
//! not be in the WAL yet (assigned to a transaction that has written nothing). So garbage
//! is recycled only once its stamp is at most one past an id the WAL holds before the
//! record ([`replayed_below`]): the latest completed transaction's (its commit or abort
//! record was written before it counted as completed), or the recycler's own, which the
//! record itself carries (replay advances the standby's next id past a record's id before
//! it replays the record). A bulk load's merges recycle what they published (stamped one
//! past the load's id); garbage stamped later waits for the transactions before its stamp
//! to end. The horizon stays the stamp: a lower one, such as the latest completed
//! transaction's id, misses standby snapshots taken after a commit record was replayed and
//! before the primary counted that transaction completed (it flushes the record first).
//!
//! Until 0.6 the record came from a subtransaction given an id of its own (above every
//! stamp), which burnt an id at every recycling: hundreds in one bulk load, enough to
//! overflow the backend's subtransaction cache and make every snapshot in the cluster
//! suboverflowed. No recycling takes a transaction id now.

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

/// Logs that pages of `index` read by snapshots with an xmin at or below the stamp `stamp`
/// (a full transaction id) are about to be reused, when a standby could be running such
/// queries. Called before the change that recycles them, by the holder of the merge lock.
pub fn before_recycling(index: pg_sys::Relation, stamp: u64, block: u32) {
    if !logged(index) {
        return;
    }
    // SAFETY: an open index; the record is plain data copied by XLogInsert.
    unsafe {
        let horizon = pg_sys::FullTransactionId { value: stamp };
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
        pg_sys::XLogBeginInsert();
        pg_sys::XLogRegisterData(std::ptr::addr_of!(record) as _, RECORD_SIZE as _);
        pg_sys::XLogInsert(pg_sys::RmgrIds::RM_BTREE_ID as u8, XLOG_BTREE_REUSE_PAGE);
    }
}

/// The newest stamp whose garbage `index` may recycle now (`None`: any, when nothing is
/// logged for standbys): one past the latest completed transaction's id or this
/// transaction's own, whichever is newer (see the module comment).
pub fn replayed_below(index: pg_sys::Relation) -> Option<u64> {
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
        Some(completed.max(own) + 1)
    }
}
