//! Named pause points in the index's protocol, for tests of interleavings (PostgreSQL 15
//! has no injection points). A superuser sets `neardup.pause_at` to a point's name; a
//! backend that reaches that point then waits for the advisory lock `PAUSE_KEY`
//! (`pg_advisory_lock(4711)` in another session holds it) and goes on once it is free.
//! The wait is a heavyweight lock wait, so isolationtester sees the backend as blocked and
//! steps the other sessions meanwhile. Points are reached with no buffer lock held.
//!
//! `neardup.error_at` names a point where the backend raises the ERROR a cancel raises
//! there (SQLSTATE 57014) instead: what `statement_timeout` or `pg_cancel_backend` does to
//! a merge stopped at that step, made deterministic for tests of interrupted merges.
//!
//! | point            | where                                                          |
//! |------------------|----------------------------------------------------------------|
//! | `after_seal`     | a merge sealed the pending list, before writing its run        |
//! | `before_publish` | a merge wrote its run, before the metapage names it            |
//! | `before_recycle` | a merge published, before garbage goes to the free space map  |
//! | `merge_table`    | a merge table by table published one table, before the next    |
//! | `compaction`     | a worker's compaction took the merge lock, before it looks     |
//! | `vacuum_pass`    | VACUUM compacted every run and list once, before its last check|
//! | `recycle_xid`    | a recycling took a subtransaction id, before it logs its record |
//! | `ordered_pass`   | an ordered scan's pass read the runs, before the pending rows   |

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::pg_sys;
use std::ffi::CString;

/// The advisory lock (bigint key) a paused backend waits for.
pub const PAUSE_KEY: i64 = 4711;

static PAUSE_AT: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static ERROR_AT: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

pub fn init() {
    GucRegistry::define_string_guc(
        c"neardup.pause_at",
        c"For tests: the point of the hamming index protocol where this backend waits for advisory lock 4711.",
        c"Empty (the default) pauses nowhere.",
        &PAUSE_AT,
        GucContext::Suset,
        GucFlags::NO_SHOW_ALL,
    );
    GucRegistry::define_string_guc(
        c"neardup.error_at",
        c"For tests: the point of the hamming index protocol where this backend raises the ERROR of a cancel.",
        c"Empty (the default) raises nowhere.",
        &ERROR_AT,
        GucContext::Suset,
        GucFlags::NO_SHOW_ALL,
    );
}

fn names(setting: &GucSetting<Option<CString>>, point: &str) -> bool {
    setting
        .get()
        .is_some_and(|p| p.to_bytes() == point.as_bytes())
}

/// Waits at `point` while another session holds the advisory lock `PAUSE_KEY`, if
/// `neardup.pause_at` names it; raises a cancel's ERROR there if `neardup.error_at` does.
pub fn at(point: &str) {
    if names(&ERROR_AT, point) {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_QUERY_CANCELED,
            format!("canceling statement at {point} (neardup.error_at)")
        );
    }
    if !names(&PAUSE_AT, point) {
        return;
    }
    // SAFETY: the advisory lock tag of pg_advisory_lock(bigint), taken and released at once
    // (transaction-level, so an ERROR while waiting releases it too).
    unsafe {
        let tag = pg_sys::LOCKTAG {
            locktag_field1: pg_sys::MyDatabaseId.to_u32(),
            locktag_field2: (PAUSE_KEY >> 32) as u32,
            locktag_field3: PAUSE_KEY as u32,
            locktag_field4: 1,
            locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
            locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
        };
        let mode = pg_sys::ExclusiveLock as pg_sys::LOCKMODE;
        pg_sys::LockAcquire(&tag, mode, false, false);
        pg_sys::LockRelease(&tag, mode, false);
    }
}
