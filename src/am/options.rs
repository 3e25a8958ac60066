//! Reloptions of a `hamming` index: `WITH (max_distance = 3, blocks = 0, pending_limit =
//! 8192)`. `max_distance` is frozen into the metapage at build time (changing it needs a
//! REINDEX); `blocks` applies to each run as it is written; `pending_limit` takes effect at
//! once (ALTER INDEX ... SET, which only takes a ShareUpdateExclusiveLock, as GIN's
//! `gin_pending_list_limit` does).

use pgrx::pg_sys;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};

/// The reloption kind registered for this access method in `_PG_init`.
static KIND: AtomicU32 = AtomicU32::new(0);

pub const DEFAULT_MAX_DISTANCE: i32 = 3;
/// Distances beyond this need so many tables (C(r, k)) that a scan of one is better.
pub const MAX_MAX_DISTANCE: i32 = 8;
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
            c"Largest Hamming distance answered by prefix lookups in the permuted tables".as_ptr(),
            DEFAULT_MAX_DISTANCE,
            0,
            MAX_MAX_DISTANCE,
            pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE,
        );
        pg_sys::add_int_reloption(
            kind as pg_sys::bits32,
            c"blocks".as_ptr(),
            c"Blocks the 64 bits are split into (0: chosen from the row count at build)".as_ptr(),
            0,
            0,
            neardup_core::search::permuted::MAX_BLOCKS as i32,
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

/// The options of an open index (defaults when it has none).
pub fn of(index: pg_sys::Relation) -> Settings {
    // SAFETY: rd_options of a `hamming` index is NULL or the struct amoptions built.
    unsafe {
        let options = (*index).rd_options as *const Options;
        if options.is_null() {
            Settings {
                max_distance: DEFAULT_MAX_DISTANCE as u32,
                blocks: 0,
                pending_limit: DEFAULT_PENDING_LIMIT as u32,
            }
        } else {
            Settings {
                max_distance: (*options).max_distance as u32,
                blocks: (*options).blocks as u32,
                pending_limit: (*options).pending_limit as u32,
            }
        }
    }
}
