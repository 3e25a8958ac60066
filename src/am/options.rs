//! Reloptions of a `hamming` index: `WITH (max_distance = 3, blocks = 0, pending_limit =
//! 8192)`. `max_distance` is frozen into the metapage at build time (changing it needs a
//! REINDEX); `blocks` applies to each run as it is written; `pending_limit` takes effect at
//! once (ALTER INDEX ... SET, which only takes a ShareUpdateExclusiveLock, as GIN's
//! `gin_pending_list_limit` does).
//!
//! What `max_distance` and `blocks` mean depends on the column's codes. For 64-bit
//! fingerprints, the distance the permuted tables answer by prefix lookups (Manku's k, at
//! most 8, default 3) and the blocks of a fingerprint (Manku's r, more than k). For wide
//! codes, which multi-index hashing searches at any radius, the radius the substring tables
//! are cut for (below the width; default 31 for `hash256`, PDQ's match threshold; 15 for
//! `hash128`) and the number of substrings (of at most 32 bits each, at most the width).
//!
//! Whether the options fit together, and fit the codes, is checked where a layout is chosen,
//! not here: `amoptions` is given the options alone, without the index (not at CREATE INDEX,
//! where the index has no width yet, nor at ALTER INDEX ... SET, where its metapage is not
//! seen). A build (CREATE INDEX, REINDEX, TRUNCATE, VACUUM FULL, CLUSTER) refuses options
//! that do not fit (`build::choose_layout`, ERROR 22023). A run written into a built index
//! (inserts filling the pending list, merges, VACUUM) never fails on an option: it takes the
//! metapage's `max_distance` and the `blocks` option, and lays the run out as with `blocks =
//! 0` when that option does not fit the frozen distance, for instance after `ALTER INDEX ...
//! SET (max_distance = 3, blocks = 4)` on an index built at 7 (`build::layout_for`).
//! `report_frozen` says so once per backend: a NOTICE for a `max_distance` that waits for a
//! REINDEX, a WARNING for a `blocks` set aside.
//!
//! `max_distance` takes 0 to 255 (the widest code's radii); its default depends on the
//! codes, so the reloption's default is the out-of-range `UNSET`, which `of` reads as the
//! codes' default and which a user cannot write (PostgreSQL checks bounds on values given,
//! not on the default).

use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};
use std::cell::RefCell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};

/// The reloption kind registered for this access method in `_PG_init`.
static KIND: AtomicU32 = AtomicU32::new(0);

pub const DEFAULT_MAX_DISTANCE: i32 = 3;
/// Distances beyond this need so many tables (C(r, k)) that a scan of one is better.
pub const MAX_MAX_DISTANCE: i32 = 8;
/// The default `max_distance` of an index of 256-bit codes (PDQ's match threshold) and of
/// 128-bit codes.
const DEFAULT_WIDE_MAX_DISTANCE: [i32; 2] = [31, 15];
/// What the reloption holds when the index has none: the default of the column's codes.
/// Below the option's range, so that no value a user writes means it.
const UNSET: i32 = -1;
/// Pending rows that make a run. A lookup compares each pending row (8 k rows: 15 pages and
/// a few microseconds), and each merge level rewrites its rows: larger lists mean fewer
/// merges and slower lookups.
pub const DEFAULT_PENDING_LIMIT: i32 = 8192;

#[repr(C)]
pub struct Options {
    vl_len: i32,
    /// The distance the permuted tables answer by prefix lookups (Manku's k).
    pub max_distance: i32,
    /// Blocks per fingerprint (Manku's r); 0 chooses from the row count at build time.
    pub blocks: i32,
    /// Rows the pending list holds before it is written as a run.
    pub pending_limit: i32,
}

/// The options of an index, with defaults filled in.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub max_distance: u32,
    pub blocks: u32,
    pub pending_limit: u32,
}

/// Registers the options; called once per backend from `_PG_init`.
pub fn init() {
    // SAFETY: _PG_init runs once, single-threaded, before any index of ours is opened.
    unsafe {
        let kind = pg_sys::add_reloption_kind();
        KIND.store(kind, Ordering::Relaxed);
        pg_sys::add_int_reloption(
            kind as pg_sys::bits32,
            c"max_distance".as_ptr(),
            c"Largest Hamming distance answered by prefix lookups (64-bit codes: 0 to 8, default 3), or the radius the substring tables are cut for (wide codes: below the width, default 31 for hash256, 15 for hash128)".as_ptr(),
            UNSET,
            0,
            255,
            pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE,
        );
        pg_sys::add_int_reloption(
            kind as pg_sys::bits32,
            c"blocks".as_ptr(),
            c"Blocks the 64 bits are split into, or substrings of a wide code (0: chosen from the row count)".as_ptr(),
            0,
            0,
            256,
            pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE,
        );
        pg_sys::add_int_reloption(
            kind as pg_sys::bits32,
            c"pending_limit".as_ptr(),
            c"Rows inserted into the pending list before it is sorted into a run".as_ptr(),
            DEFAULT_PENDING_LIMIT,
            1,
            i32::MAX,
            pg_sys::ShareUpdateExclusiveLock as pg_sys::LOCKMODE,
        );
    }
}

fn element(name: &'static CStr, offset: usize) -> pg_sys::relopt_parse_elt {
    pg_sys::relopt_parse_elt {
        optname: name.as_ptr(),
        opttype: pg_sys::relopt_type::RELOPT_TYPE_INT,
        offset: offset as i32,
        // 18 can record whether an option was set; 0 asks it not to (no field for that)
        #[cfg(feature = "pg18")]
        isset_offset: 0,
    }
}

#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn amoptions(
    reloptions: pg_sys::Datum,
    validate: bool,
) -> *mut pg_sys::bytea {
    let table = [
        element(c"max_distance", std::mem::offset_of!(Options, max_distance)),
        element(c"blocks", std::mem::offset_of!(Options, blocks)),
        element(
            c"pending_limit",
            std::mem::offset_of!(Options, pending_limit),
        ),
    ];
    // SAFETY: the table describes `Options` exactly; PostgreSQL allocates and fills it.
    unsafe {
        pg_sys::build_reloptions(
            reloptions,
            validate,
            KIND.load(Ordering::Relaxed),
            std::mem::size_of::<Options>(),
            table.as_ptr(),
            table.len() as i32,
        ) as *mut pg_sys::bytea
    }
}

/// The options of an open index (defaults when it has none). A `max_distance` too large
/// for 64-bit fingerprints is refused where a build chooses a layout (`build::choose_layout`).
/// An index given `max_distance = -1` before 0 was the option's least value still reads it
/// as the default (the relcache parses stored options without checking bounds).
pub fn of(index: pg_sys::Relation) -> Settings {
    // SAFETY: rd_options of a `hamming` index is NULL or the struct amoptions built.
    let (max_distance, blocks, pending_limit) = unsafe {
        let options = (*index).rd_options as *const Options;
        if options.is_null() {
            (UNSET, 0, DEFAULT_PENDING_LIMIT)
        } else {
            (
                (*options).max_distance,
                (*options).blocks,
                (*options).pending_limit,
            )
        }
    };
    let words = super::codes::words(index);
    let max_distance = match (max_distance, words) {
        (UNSET, 1) => DEFAULT_MAX_DISTANCE,
        (UNSET, 2) => DEFAULT_WIDE_MAX_DISTANCE[1],
        (UNSET, _) => DEFAULT_WIDE_MAX_DISTANCE[0],
        (d, _) => d,
    };
    Settings {
        max_distance: max_distance as u32,
        blocks: blocks as u32,
        pending_limit: pending_limit as u32,
    }
}

thread_local! {
    /// What `report_frozen` said in this backend: (index, option's `max_distance`,
    /// `blocks`, metapage's `max_distance`).
    static REPORTED: RefCell<Vec<(pg_sys::Oid, u32, u32, u32)>> = const { RefCell::new(Vec::new()) };
}

/// Says, once per backend for each index and set of options, that options of `index` do not
/// apply to the run being written: its `max_distance` option differs from `frozen`, the
/// metapage's (a NOTICE: it waits for a REINDEX, as documented), or its `blocks` option
/// does not fit `frozen` (`misfit`, the layout's complaint; a WARNING: the run is laid out
/// as with `blocks = 0`). Once, as inserts and merges write runs all the time; a WARNING
/// rather than an ERROR, as an insert or a VACUUM that fails on an option set earlier would
/// fail until a REINDEX (autovacuum too).
pub fn report_frozen(
    index: pg_sys::Relation,
    settings: &Settings,
    frozen: u32,
    misfit: Option<&str>,
) {
    if misfit.is_none() && settings.max_distance == frozen {
        return;
    }
    // SAFETY: an open index has its relation id.
    let key = (
        unsafe { (*index).rd_id },
        settings.max_distance,
        settings.blocks,
        frozen,
    );
    if REPORTED.with_borrow(|r| r.contains(&key)) {
        return;
    }
    REPORTED.with_borrow_mut(|r| r.push(key));
    // SAFETY: an open index has its pg_class row, whose name is NUL-terminated.
    let name =
        unsafe { CStr::from_ptr((*(*index).rd_rel).relname.data.as_ptr()) }.to_string_lossy();
    let waits = if settings.max_distance == frozen {
        String::new()
    } else {
        format!(
            " (its max_distance option, {}, waits for a REINDEX)",
            settings.max_distance
        )
    };
    match misfit {
        Some(misfit) => ErrorReport::new(
            PgSqlErrorCode::ERRCODE_WARNING,
            format!(
                "hamming index \"{name}\": blocks = {} does not fit max_distance {frozen}, which the index was built with{waits}: {misfit}; its runs are laid out as with blocks = 0",
                settings.blocks
            ),
            "neardup",
        )
        .set_hint("REINDEX the index to build it with its options, or ALTER INDEX ... RESET (blocks).")
        .report(PgLogLevel::WARNING),
        None => ErrorReport::new(
            PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
            format!(
                "hamming index \"{name}\" keeps max_distance {frozen}, which it was built with, until a REINDEX (its option says {})",
                settings.max_distance
            ),
            "neardup",
        )
        .report(PgLogLevel::NOTICE),
    }
}
