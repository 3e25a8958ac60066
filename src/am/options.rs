//! Reloptions of a `hamming` index: `WITH (max_distance = 3, blocks = 0, pending_limit =
//! 8192)`. `max_distance` is frozen into the metapage at build time (changing it needs a
//! REINDEX); `blocks` applies to each run as it is written; `pending_limit` takes effect at
//! once (ALTER INDEX ... SET, which only takes a ShareUpdateExclusiveLock, as GIN's
//! `gin_pending_list_limit` does).
//!
//! What `max_distance` and `blocks` mean depends on the column's codes. For 64-bit
//! fingerprints, the distance the permuted tables answer by prefix lookups (Manku's k, at
//! most 8, default 3) and the blocks of a fingerprint (Manku's r). For wide codes, which
//! multi-index hashing searches at any radius, the radius the substring tables are cut
//! for (default 31 for `hash256`, PDQ's match threshold; 15 for `hash128`) and the number
//! of substrings.

use pgrx::pg_sys;
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
            c"Largest Hamming distance answered by prefix lookups (64-bit codes), or the radius the substring tables are cut for (wide codes)".as_ptr(),
            UNSET,
            UNSET,
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
/// for 64-bit fingerprints is refused where a layout is chosen (`build::choose_layout`).
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
