//! CREATE INDEX / REINDEX: collect every (code, TID) of the table, sort each table in its
//! order and write the index as one run (`run`), without WAL; then log every page at once
//! (`log_newpage_range`) if the index is WAL-logged.

use super::codes::{self, by_width};
use super::meta;
use super::options;
use super::page::{self, Kind, Locked, Role};
use super::registry::REGISTRY_BLOCK;
use super::run::{self, PageWriter};
use super::spool::Spool;
use neardup_core::search::code_tables::{Code, Tables};
use neardup_core::search::index_page::{Meta, Rest, Tid};

/// What a build scan collects: codes with their TIDs, and the TIDs of NULL ones.
pub struct Collected<P: Rest> {
    pub rows: Vec<(Code<P>, Tid)>,
    pub nulls: Vec<Tid>,
}

/// Every (code, TID) the table would index, through the table AM's build scan.
///
/// # Safety
/// `heap` and `index` are open; `info` describes `index`, whose codes have rest `P`.
pub unsafe fn scan_table<P: Rest>(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    info: *mut pg_sys::IndexInfo,
    progress: bool,
) -> (Collected<P>, f64) {
    let mut collected = Collected {
        rows: Vec::new(),
        nulls: Vec::new(),
    };
    // SAFETY: as the caller promises.
    let heap_tuples = unsafe {
        for_each_indexed_row(heap, index, info, progress, |fp, tid| match fp {
            Some(fp) => collected.rows.push((fp, tid)),
            None => collected.nulls.push(tid),
        })
    };
    (collected, heap_tuples)
}

/// Calls `row` with the code (`None` when NULL) and TID of every row the table would index,
/// through the table AM's build scan; returns the heap tuples scanned.
///
/// # Safety
/// `heap` and `index` are open; `info` describes `index`, whose codes have rest `P`.
unsafe fn for_each_indexed_row<P: Rest, F: FnMut(Option<Code<P>>, Tid)>(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    info: *mut pg_sys::IndexInfo,
    progress: bool,
    mut row: F,
) -> f64 {
    #[pg_guard]
    unsafe extern "C-unwind" fn callback<P: Rest, F: FnMut(Option<Code<P>>, Tid)>(
        _index: pg_sys::Relation,
        tid: pg_sys::ItemPointer,
        values: *mut pg_sys::Datum,
        isnull: *mut bool,
        _alive: bool,
        state: *mut std::ffi::c_void,
    ) {
        // SAFETY: state is the closure passed to table_index_build_scan below; the index
        // has one key column.
        unsafe {
            let row = &mut *(state as *mut F);
            let code = (!*isnull).then(|| codes::code_of::<P>(*values));
            row(code, tid_of(&*tid));
        }
    }
    // SAFETY: `callback::<P, F>` matches the callback type and receives a pointer to `row`,
    // which outlives the scan.
    unsafe {
        pg_sys::table_index_build_scan(
            heap,
            index,
            info,
            true,
            progress,
            Some(callback::<P, F>),
            &mut row as *mut F as *mut _,
            std::ptr::null_mut(),
        )
    }
}
use pgrx::pg_sys;
use pgrx::prelude::*;

/// Progress subphases shown in pg_stat_progress_create_index.
const PHASE_SCANNING: i64 = 1;
const PHASE_WRITING: i64 = 2;

#[pg_guard]
pub unsafe extern "C-unwind" fn ambuildphasename(phase: i64) -> *mut std::ffi::c_char {
    let name: &std::ffi::CStr = match phase {
        PHASE_SCANNING => c"scanning table",
        PHASE_WRITING => c"sorting and writing tables",
        _ => return std::ptr::null_mut(),
    };
    name.as_ptr() as *mut std::ffi::c_char
}

pub fn tid_of(tid: &pg_sys::ItemPointerData) -> Tid {
    Tid {
        block: (tid.ip_blkid.bi_hi as u32) << 16 | tid.ip_blkid.bi_lo as u32,
        offset: tid.ip_posid,
    }
}

pub fn item_pointer(tid: Tid) -> pg_sys::ItemPointerData {
    pg_sys::ItemPointerData {
        ip_blkid: pg_sys::BlockIdData {
            bi_hi: (tid.block >> 16) as u16,
            bi_lo: tid.block as u16,
        },
        ip_posid: tid.offset,
    }
}

fn progress(param: u32, value: i64) {
    // SAFETY: reporting progress is always allowed; a no-op outside CREATE INDEX.
    unsafe { pg_sys::pgstat_progress_update_param(param as i32, value) }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn ambuild(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
) -> *mut pg_sys::IndexBuildResult {
    // SAFETY: the arguments come from PostgreSQL.
    let (heap_tuples, index_tuples) =
        by_width!(index, L => unsafe { build::<L>(heap, index, index_info) });
    // SAFETY: palloc'd result, as the AM API requires.
    unsafe {
        let result = pg_sys::palloc0(std::mem::size_of::<pg_sys::IndexBuildResult>())
            as *mut pg_sys::IndexBuildResult;
        (*result).heap_tuples = heap_tuples;
        (*result).index_tuples = index_tuples;
        result
    }
}

/// Builds the index; returns the heap tuples scanned and the rows indexed.
///
/// # Safety
/// As `ambuild`'s; `L` is the layout of the index's codes.
unsafe fn build<L: Tables>(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
) -> (f64, f64) {
    progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_SCANNING);
    let mut spool = Spool::<L>::new();
    // SAFETY: as the caller promises.
    let heap_tuples = unsafe {
        for_each_indexed_row(heap, index, index_info, true, |code, tid| match code {
            Some(code) => spool.push(code, tid, |rows| choose_layout(index, rows)),
            None => spool.nulls.push(tid),
        })
    };
    let layout = match spool.fixed_layout() {
        Some(layout) => layout.clone(),
        None => choose_layout(index, spool.rows()),
    };
    let index_tuples = (spool.rows() + spool.nulls.len() as u64) as f64;
    let blocks = write(index, pg_sys::ForkNumber::MAIN_FORKNUM, &layout, &mut spool);
    log_pages(index, pg_sys::ForkNumber::MAIN_FORKNUM, blocks);
    (heap_tuples, index_tuples)
}

/// The empty index of an unlogged table, in its init fork (copied over the main fork at
/// crash recovery).
#[pg_guard]
pub unsafe extern "C-unwind" fn ambuildempty(index: pg_sys::Relation) {
    let blocks = by_width!(index, L => {
        let layout: L = choose_layout(index, 0);
        write(
            index,
            pg_sys::ForkNumber::INIT_FORKNUM,
            &layout,
            &mut Spool::new(),
        )
    });
    log_pages(index, pg_sys::ForkNumber::INIT_FORKNUM, blocks);
}

/// The layout of a new index's run of `rows` rows (CREATE INDEX and every rebuild: REINDEX,
/// TRUNCATE, VACUUM FULL, CLUSTER): the options as they are, and an ERROR if they do not fit
/// together, as pgvector refuses an `ef_construction` below twice `m` at build. This is where
/// the options' combination is checked: `amoptions` sees them without the index, so not
/// its codes' width nor its metapage.
pub fn choose_layout<L: Tables>(index: pg_sys::Relation, rows: u64) -> L {
    let settings = options::of(index);
    if codes::words(index) == 1 && settings.max_distance > options::MAX_MAX_DISTANCE as u32 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "hamming index options: max_distance {} on 64-bit codes: at most {}",
                settings.max_distance,
                options::MAX_MAX_DISTANCE
            )
        );
    }
    let layout = if settings.blocks == 0 {
        L::for_rows(rows, settings.max_distance)
    } else {
        L::of_run(settings.blocks, settings.max_distance)
    };
    layout.unwrap_or_else(|e| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("hamming index options: {e}")
        );
    })
}

/// The layout of a run of `rows` rows written into a built index (a pending list's run, a
/// merge's), for the metapage's `max_distance`: the option's is frozen there at build, and
/// an `ALTER INDEX ... SET (max_distance = ...)` waits for a REINDEX, or the runs would be
/// written for one distance and read for another. The `blocks` option if it fits that
/// distance, else the layout chosen for the rows, as with `blocks = 0`: an option set by
/// ALTER INDEX (which cannot see the metapage) must not make every insert that fills the
/// pending list, and every VACUUM, fail until a REINDEX (`options::report_frozen` says so).
/// For 64-bit fingerprints the chosen layout is the fewest blocks that keep a probe to
/// about a page per table.
pub fn layout_for<L: Tables>(index: pg_sys::Relation, rows: u64, max_distance: u32) -> L {
    let settings = options::of(index);
    let fixed = (settings.blocks != 0).then(|| L::of_run(settings.blocks, max_distance));
    let misfit = fixed.as_ref().and_then(|f| f.as_ref().err());
    options::report_frozen(index, &settings, max_distance, misfit.map(String::as_str));
    match fixed {
        Some(Ok(layout)) => layout,
        // The metapage's distance was valid at build, so a chosen layout always exists.
        _ => L::for_rows(rows, max_distance)
            .unwrap_or_else(|e| pgrx::error!("hamming index metapage: {e}")),
    }
}

/// Writes the metapage and one run of every row; returns the number of blocks written.
fn write<L: Tables>(
    index: pg_sys::Relation,
    fork: pg_sys::ForkNumber::Type,
    layout: &L,
    spool: &mut Spool<L>,
) -> u32 {
    let rows = spool.rows();
    progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_WRITING);
    progress(
        pg_sys::PROGRESS_CREATEIDX_TUPLES_TOTAL,
        (rows as usize * layout.count()) as i64,
    );
    // Block 0 is reserved now and written last. Its buffer lock is not held meanwhile: a
    // held buffer lock holds off interrupts, and the sorts and writes take long.
    let metapage = Locked::extend(index, fork);
    assert_eq!(
        metapage.block(),
        page::META_BLOCK,
        "a new index starts empty"
    );
    drop(metapage);
    let registry = Locked::extend(index, fork);
    assert_eq!(registry.block(), REGISTRY_BLOCK);
    // SAFETY: block 1, new and exclusively locked; logged with the rest.
    unsafe {
        page::init(registry.page(), Role::new(Kind::Registry, 0));
        pg_sys::MarkBufferDirty(registry.buffer);
    }
    drop(registry);
    let mut meta = Meta::new(layout.max_distance());
    let id = meta.take_id();
    let mut out = PageWriter::for_build(index, fork);
    let mut written = 0i64;
    let nulls = std::mem::take(&mut spool.nulls);
    let run = run::write_run(&mut out, id, layout, &nulls, |t, emit| {
        spool.sorted_table(layout, t, |entry| {
            emit(entry);
            written += 1;
            if written % 65536 == 0 {
                progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, written);
            }
        })
    });
    if run.rows > 0 || run.nulls_pages > 0 {
        meta.runs.push(run);
    }
    let metapage = Locked::read(index, fork, page::META_BLOCK, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    // SAFETY: block 0, new and exclusively locked.
    unsafe {
        page::init(metapage.page(), Role::new(Kind::Meta, 0));
        meta::encode(metapage.page(), &meta);
        pg_sys::MarkBufferDirty(metapage.buffer);
    }
    // SAFETY: the relation is open and locked by CREATE INDEX.
    unsafe { pg_sys::RelationGetNumberOfBlocksInFork(index, fork) }
}

/// WAL-logs all pages of a freshly written fork, when the relation is WAL-logged (always
/// for the init fork, which crash recovery needs).
fn log_pages(index: pg_sys::Relation, fork: pg_sys::ForkNumber::Type, blocks: u32) {
    // SAFETY: rd_rel is valid for an open relation; the pages were just written.
    unsafe {
        let permanent = (*(*index).rd_rel).relpersistence
            == pg_sys::RELPERSISTENCE_PERMANENT as std::ffi::c_char;
        if permanent || fork == pg_sys::ForkNumber::INIT_FORKNUM {
            pg_sys::log_newpage_range(index, fork, 0, blocks, true);
        }
    }
}
