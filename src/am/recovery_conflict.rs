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

/// Logs that pages of `index` read by snapshots with an xmin at or below `horizon` (a full
/// transaction id) are about to be reused, when a standby could be running such queries:
/// wal_level is at least `replica` (`XLogStandbyInfoActive`) and the index is WAL-logged.
/// Called before the change that recycles them, by the holder of the merge lock.
pub fn before_recycling(index: pg_sys::Relation, horizon: u64, block: u32) {
    // SAFETY: an open index; the record is plain data copied by XLogInsert.
    unsafe {
        let standby_info = pg_sys::wal_level >= pg_sys::WalLevel::WAL_LEVEL_REPLICA as i32;
        if !standby_info || !super::page::relation_needs_wal(index) {
            return;
        }
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
        pg_sys::XLogBeginInsert();
        pg_sys::XLogRegisterData(std::ptr::addr_of!(record) as _, RECORD_SIZE as _);
        pg_sys::XLogInsert(pg_sys::RmgrIds::RM_BTREE_ID as u8, XLOG_BTREE_REUSE_PAGE);
    }
}
