//! The `hamming` index access method: Manku et al.'s permuted tables in PostgreSQL pages.
//! One file per callback family, as contrib/bloom lays them out: `build` (ambuild,
//! ambuildempty), `insert`, `scan`, `vacuum`, `cost`, `options`; `page` and `meta` hold the
//! page layouts and the buffer/WAL helpers; `run` writes and walks the sorted runs the
//! index is made of, `merge` turns pending rows into runs and merges them; `check`
//! verifies an index.

mod blocks;
mod build;
mod check;
mod codes;
mod cost;
mod insert;
mod merge;
pub mod merge_worker;
mod meta;
pub mod options;
mod page;
mod pause;
mod recovery_conflict;
pub(crate) mod registry;
pub use pause::init as init_pause_points;
mod run;
pub mod scan;
mod spool;
mod vacuum;

use pgrx::prelude::*;
use pgrx::{pg_sys, Internal};

#[pg_extern(sql = "
CREATE FUNCTION hamming_amhandler(internal) RETURNS index_am_handler
    PARALLEL SAFE IMMUTABLE STRICT LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
CREATE ACCESS METHOD hamming TYPE INDEX HANDLER hamming_amhandler;
COMMENT ON ACCESS METHOD hamming IS 'exact Hamming-distance search on 64-bit fingerprints (permuted prefix tables)';
")]
fn hamming_amhandler(_fcinfo: pg_sys::FunctionCallInfo) -> Internal {
    // SAFETY: a palloc'd, zeroed node of the right tag, filled below.
    unsafe {
        let am = pg_sys::palloc0(std::mem::size_of::<pg_sys::IndexAmRoutine>())
            as *mut pg_sys::IndexAmRoutine;
        let r = &mut *am;
        r.type_ = pg_sys::NodeTag::T_IndexAmRoutine;
        r.amstrategies = 3;
        r.amsupport = 0;
        r.amoptsprocnum = 0;
        r.amcanorder = false;
        r.amcanorderbyop = true;
        r.amcanbackward = false;
        r.amcanunique = false;
        r.amcanmulticol = false;
        r.amoptionalkey = true;
        r.amsearcharray = false;
        r.amsearchnulls = false;
        r.amstorage = false;
        r.amclusterable = false;
        r.ampredlocks = false;
        r.amcanparallel = false;
        r.amcaninclude = false;
        r.amusemaintenanceworkmem = true;
        r.amparallelvacuumoptions = pg_sys::VACUUM_OPTION_PARALLEL_BULKDEL as u8;
        r.amkeytype = pg_sys::InvalidOid;
        // What later majors ask too: the index is no summary (a HOT update still inserts),
        // builds in one backend, keeps no per-statement insert state, has no tree height to
        // report, and its operators are no hash or btree equality or ordering.
        #[cfg(not(feature = "pg15"))]
        {
            r.amsummarizing = false;
        }
        #[cfg(any(feature = "pg17", feature = "pg18"))]
        {
            r.amcanbuildparallel = false;
            r.aminsertcleanup = None;
        }
        #[cfg(feature = "pg18")]
        {
            r.amgettreeheight = None;
            r.amcanhash = false;
            r.amconsistentequality = false;
            r.amconsistentordering = false;
            r.amtranslatestrategy = None;
            r.amtranslatecmptype = None;
        }
        r.ambuild = Some(build::ambuild);
        r.ambuildempty = Some(build::ambuildempty);
        r.aminsert = Some(insert::aminsert);
        r.ambulkdelete = Some(vacuum::ambulkdelete);
        r.amvacuumcleanup = Some(vacuum::amvacuumcleanup);
        r.amcostestimate = Some(cost::amcostestimate);
        r.amoptions = Some(options::amoptions);
        r.ambuildphasename = Some(build::ambuildphasename);
        r.amvalidate = Some(amvalidate);
        r.ambeginscan = Some(scan::ambeginscan);
        r.amrescan = Some(scan::amrescan);
        r.amgettuple = Some(scan::amgettuple);
        r.amgetbitmap = Some(scan::amgetbitmap);
        r.amendscan = Some(scan::amendscan);
        Internal::from(Some(pg_sys::Datum::from(am)))
    }
}

pgrx::extension_sql_file!(
    "../../sql/hamming_am.sql",
    name = "hamming_am_opclasses",
    requires = [
        hamming_amhandler,
        "hamming_query_operators",
        "hamming_batch_operators"
    ]
);

/// Operator classes are ours alone (sql/hamming_am.sql) and need no support functions.
#[pg_guard]
unsafe extern "C-unwind" fn amvalidate(_opclass: pg_sys::Oid) -> bool {
    true
}

/// `vacuum_delay_point()`: sleeps if cost-based vacuum delay asks it to, and checks for
/// interrupts (18 added whether the caller is ANALYZE).
unsafe fn vacuum_delay_point() {
    // SAFETY: callers hold no buffer lock.
    unsafe {
        #[cfg(feature = "pg18")]
        pg_sys::vacuum_delay_point(false);
        #[cfg(not(feature = "pg18"))]
        pg_sys::vacuum_delay_point();
    }
}

/// Calls `read` with an index of ours, by name, opened for the call (for the SQL tests).
#[cfg(any(test, feature = "pg_test"))]
fn with_index<R>(index: &str, read: impl FnOnce(pg_sys::Relation) -> R) -> R {
    let oid = Spi::get_one::<pg_sys::Oid>(&format!("SELECT '{index}'::regclass::oid"))
        .unwrap()
        .unwrap();
    // SAFETY: an index of ours, opened and closed here.
    unsafe {
        let rel = pg_sys::index_open(oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let result = read(rel);
        pg_sys::index_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        result
    }
}

/// The metapage of an index, by name (for the SQL tests).
#[cfg(any(test, feature = "pg_test"))]
pub fn meta_of(index: &str) -> neardup_core::search::index_page::Meta {
    with_index(index, meta::read)
}

/// What a merge worker does once inserts pause (`merge::compact_until`), to an index by
/// name, under the merge lock (for the SQL tests).
#[cfg(any(test, feature = "pg_test"))]
pub fn compact(index: &str) -> bool {
    with_index(index, |rel| {
        let _lock = merge::MergeLock::wait(rel);
        merge::compact_until(rel, &|| false)
    })
}

/// What VACUUM does to an index, by name, after its bulk deletion (`amvacuumcleanup`:
/// the pending list written as a run, merges, recycling, the sweep), which a test cannot
/// run as a statement inside its transaction; returns the rows it counts (for the SQL tests).
#[cfg(any(test, feature = "pg_test"))]
pub fn vacuum_cleanup(index: &str) -> f64 {
    with_index(index, |rel| {
        // SAFETY: an open index; the fields left zero are those a cleanup without an
        // ANALYZE and without a buffer strategy has.
        unsafe {
            let mut info: pg_sys::IndexVacuumInfo = std::mem::zeroed();
            info.index = rel;
            info.message_level = pg_sys::DEBUG2 as i32;
            let stats = vacuum::amvacuumcleanup(&mut info, std::ptr::null_mut());
            (*stats).num_index_tuples
        }
    })
}

/// The garbage in an index's registry, by name (for the SQL tests).
#[cfg(any(test, feature = "pg_test"))]
pub fn garbage_of(index: &str) -> Vec<neardup_core::search::index_page::Garbage> {
    with_index(index, |rel| registry::Registry::load(rel).garbage())
}

/// How many pages of an index, by name, the free space map lists (for the SQL tests).
#[cfg(any(test, feature = "pg_test"))]
pub fn free_pages_of(index: &str) -> u32 {
    with_index(index, |rel| {
        // SAFETY: an open index; the free space map is read without a lock of ours.
        unsafe {
            let blocks =
                pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM);
            (0..blocks)
                .filter(|&b| pg_sys::GetRecordedFreeSpace(rel, b) > 0)
                .count() as u32
        }
    })
}

/// Records every page of an index but its first two as free in the free space map, as a
/// crash can leave it (for the SQL tests); returns how many.
#[cfg(any(test, feature = "pg_test"))]
pub fn list_every_page_free(index: &str) -> u32 {
    with_index(index, |rel| {
        // SAFETY: an open index; the map is only advice, which every taker checks.
        unsafe {
            let blocks =
                pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM);
            for b in 2..blocks {
                pg_sys::RecordFreeIndexPage(rel, b);
            }
            pg_sys::IndexFreeSpaceMapVacuum(rel);
            blocks.saturating_sub(2)
        }
    })
}
