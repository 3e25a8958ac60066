//! Index scans. Strategy 1, `fp <@ hamming_ball(q, k)`: in every permuted table of every
//! run, the entries sharing the permuted query's leading blocks (a descent of the table's
//! directory to the first leaf that may hold them), checked for distance (exact by the
//! pigeonhole argument, see `neardup_core::permuted`), plus the pending pages; a radius
//! beyond the index's max_distance reads table 0 of every run instead. Strategy 2, `ORDER
//! BY fp <~> q`: first every row within max_distance, nearest first, then, only if the scan
//! goes on, passes over each run's table 0 and the pending rows that each keep the next few
//! thousand nearest rows (`neardup_core::nearest`): no pass sorts or holds the whole index.
//! Results are exact: no recheck.
//!
//! Several ORDER BY distances sort lexicographically; rows whose fingerprint is NULL (kept
//! in the pending pages) come last with NULL distances, as a seq scan would sort them.
//!
//! An ordered scan computes one batch of TIDs at a time and hands it out from memory; a
//! bitmap scan adds its TIDs to the bitmap as it finds them. No scan holds buffer pins
//! between calls. Under an MVCC snapshot a scan keeps what it read for its rescans (a
//! nested loop join rescans once per outer row): the metapage, the pending rows and the
//! directory pages it looked at, see [`ScanCache`]. Every page is checked to belong to the
//! run or list the scan's metapage names (see `page::read_owned`).

use super::build::item_pointer;
use super::meta;
use super::page::{self, Kind};
use super::registry;
use super::run;
use crate::hamming_query::batch;
use crate::hamming_query::HammingBall;
use neardup_core::ball_set::BallLookup;
use neardup_core::index_page::{entries, lower_bound, Entry, Meta, Run, Tid, ENTRY_SIZE};
use neardup_core::nearest::{pass_target, NearestPass};
use neardup_core::permuted::{Layout, Permutation, SortedTables};
use neardup_core::simhash::hamming;
use pgrx::prelude::*;
use pgrx::{pg_sys, PgMemoryContexts};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

/// Strategy 1 of the operator classes (`<@ hamming_ball`); strategy 2 (`<~>`) only ever
/// orders; strategy 3 is `<@@ hamming_batch`.
pub const STRATEGY_WITHIN: u16 = 1;
pub const STRATEGY_WITHIN_BATCH: u16 = 3;

/// What a scan looks for, from its scan keys.
#[derive(Default, Clone)]
struct Query {
    balls: Vec<(u64, u32)>,
    /// Rows must be within the radius of some center of each batch.
    batches: Vec<Rc<BallLookup>>,
    /// The ORDER BY queries; `None` for a NULL argument (every distance NULL).
    order_by: Vec<Option<u64>>,
    /// A NULL argument to `<@`: a strict operator matches nothing.
    nothing: bool,
}

/// A row of the index: its fingerprint (`None` when NULL) and heap TID.
type Row = (Option<u64>, Tid);

/// A row to return. Its sort key (one distance per ORDER BY) is computed when compared:
/// a popcount per key costs less than a heap-allocated key per row.
#[derive(Clone, Copy)]
struct Hit {
    fp: Option<u64>,
    tid: Tid,
}

/// What an unconstrained ORDER BY reads after the rows within max_distance.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Later {
    /// A pass for the nearest rows from this distance on.
    FarRows {
        from: u32,
    },
    NullRows,
}

/// The first pass keeps about this many rows: enough for any usual LIMIT, small enough to
/// cost nothing but the read. Each further pass doubles it, up to work_mem.
pub const FIRST_PASS_ROWS: usize = 4096;

/// The most rows a pass keeps (apart from its farthest bucket): work_mem's worth.
pub fn pass_rows_cap() -> usize {
    // SAFETY: a GUC variable, read in the backend's only thread.
    let work_mem_kb = unsafe { pg_sys::work_mem }.max(64) as usize;
    (work_mem_kb * 1024 / std::mem::size_of::<Hit>()).max(FIRST_PASS_ROWS)
}

#[derive(Default)]
struct ScanState {
    query: Query,
    started: bool,
    /// In the order to return them.
    results: Vec<Hit>,
    next: usize,
    later: Option<Later>,
    /// Passes made for the rows beyond max_distance.
    passes: u32,
    /// Kept across rescans when the snapshot is MVCC.
    cache: Option<ScanCache>,
}

/// The pending rows in memory. The first probes compare them all; a scan rescanned more
/// often (a nested loop join) sorts them into the layout's permuted tables, so each further
/// probe costs a few binary searches instead of a pass over every pending row.
struct PendingRows {
    rows: Vec<Row>,
    /// The layout the rows are sorted into once rescans are many.
    layout: Layout,
    /// The fingerprints of `rows`, packed for the distance test (0 for NULL ones, which the
    /// test skips).
    fps: Vec<u64>,
    passes: u32,
    tables: Option<SortedTables>,
}

/// Passes over every pending row before they are sorted: sorting 16 k rows into 4 tables
/// costs about as much as this many passes with the popcount instruction.
pub const PASSES_BEFORE_SORTING: u32 = 256;

impl PendingRows {
    fn read(index: pg_sys::Relation, meta: &Meta) -> PendingRows {
        let mut rows = Vec::new();
        for_each_pending(index, meta, |fp, tid| rows.push((fp, tid)));
        PendingRows::new(rows, meta.max_distance)
    }

    fn new(rows: Vec<Row>, max_distance: u32) -> PendingRows {
        let fps = rows.iter().map(|r| r.0.unwrap_or(0)).collect();
        let layout = Layout::for_rows(rows.len() as u64, max_distance)
            .unwrap_or_else(|e| pgrx::error!("hamming index metapage: {}", e.0));
        PendingRows {
            rows,
            layout,
            fps,
            passes: 0,
            tables: None,
        }
    }

    /// Calls `emit` with the rows within `radius` of `center` (and maybe others: the caller
    /// checks every ball), each at least once.
    fn probe(&mut self, center: u64, radius: u32, mut emit: impl FnMut(Row)) {
        let layout = &self.layout;
        if self.tables.is_none() && self.passes >= PASSES_BEFORE_SORTING {
            let items: Vec<(u64, u32)> = (0..self.rows.len() as u32)
                .filter_map(|i| self.rows[i as usize].0.map(|fp| (fp, i)))
                .collect();
            self.tables = Some(SortedTables::new(layout, &items));
            pgrx::check_for_interrupts!();
        }
        match &self.tables {
            Some(tables) => {
                // A row sharing a prefix in several tables comes once per table.
                let mut found = Vec::new();
                tables.probe(layout, center, radius, |i| found.push(i));
                found.sort_unstable();
                found.dedup();
                found.into_iter().for_each(|i| emit(self.rows[i as usize]));
            }
            None => {
                for (chunk, fps) in self.rows.chunks(4096).zip(self.fps.chunks(4096)) {
                    pgrx::check_for_interrupts!();
                    within_radius(fps, center, radius, |i| {
                        if chunk[i].0.is_some() {
                            emit(chunk[i])
                        }
                    });
                }
                self.passes += 1;
            }
        }
    }
}

/// Calls `emit` with the position of each of `fps` within `radius` of `center`, with the
/// CPU's popcount instruction where it has one (see `offer_page`).
fn within_radius(fps: &[u64], center: u64, radius: u32, emit: impl FnMut(usize)) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has the instruction the function is compiled for.
        return unsafe { within_radius_popcnt(fps, center, radius, emit) };
    }
    within_radius_portable(fps, center, radius, emit)
}

#[inline(always)]
fn within_radius_portable(fps: &[u64], center: u64, radius: u32, mut emit: impl FnMut(usize)) {
    for (i, &fp) in fps.iter().enumerate() {
        if (fp ^ center).count_ones() <= radius {
            emit(i);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn within_radius_popcnt(fps: &[u64], center: u64, radius: u32, emit: impl FnMut(usize)) {
    within_radius_portable(fps, center, radius, emit)
}

/// Calls `emit` with each of `rows`, checking for interrupts every few thousand.
fn for_each_row_in(rows: &[Row], mut emit: impl FnMut(Row)) {
    for chunk in rows.chunks(4096) {
        pgrx::check_for_interrupts!();
        chunk.iter().copied().for_each(&mut emit);
    }
}

/// What a scan read once and its rescans reuse. Under an MVCC snapshot that is safe:
/// - a row inserted after the first read belongs to a transaction or command the snapshot
///   cannot see, and a row VACUUM has removed since was dead to it;
/// - runs merged away after the first read keep their pages until no snapshot as old as the
///   scan's exists;
/// - directory pages never change once written (VACUUM only removes leaf entries, so the
///   first keys they hold stay lower bounds: a descent cannot skip a match).
struct ScanCache {
    /// Block 1, pinned before the metapage was read and for as long as the scan may read
    /// what this copy of it names: a merge recycles garbage before the horizon allows only
    /// when no scan pins it (`registry::no_scan_holds_an_older_metapage`). Released by
    /// `release` (amendscan, or a non-MVCC fetch that reads the metapage anew); after an
    /// ERROR, the resource owner releases it.
    pin: pg_sys::Buffer,
    meta: Meta,
    /// The layout of each run.
    layouts: Vec<Layout>,
    pending: Option<PendingRows>,
    /// The rows of the small runs, read whole at the first rescan: comparing them costs
    /// less than probing each of their tables (see `SMALL_RUN_ROWS`).
    small_runs: Option<PendingRows>,
    /// Lookups this cache has served.
    lookups: u32,
    /// Directory pages read: contents and level.
    directory: HashMap<u32, (Vec<u8>, u16)>,
}

impl ScanCache {
    fn new(index: pg_sys::Relation) -> ScanCache {
        let pin = registry::pin(index);
        let meta = meta::read(index);
        let layouts = meta.runs.iter().map(|r| meta::layout(&meta, r)).collect();
        ScanCache {
            pin,
            meta,
            layouts,
            pending: None,
            small_runs: None,
            lookups: 0,
            directory: HashMap::new(),
        }
    }

    /// The cache a fetch uses: the kept one under an MVCC snapshot, else a fresh one.
    fn for_fetch(kept: &mut Option<ScanCache>, index: pg_sys::Relation, mvcc: bool) -> &mut Self {
        if !mvcc {
            if let Some(old) = kept {
                old.release();
            }
            *kept = None;
        }
        kept.get_or_insert_with(|| ScanCache::new(index))
    }

    fn release(&mut self) {
        if self.pin != pg_sys::InvalidBuffer as pg_sys::Buffer {
            // SAFETY: the pin taken in `new`, released once.
            unsafe { pg_sys::ReleaseBuffer(self.pin) };
            self.pin = pg_sys::InvalidBuffer as pg_sys::Buffer;
        }
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn ambeginscan(
    index: pg_sys::Relation,
    nkeys: i32,
    norderbys: i32,
) -> pg_sys::IndexScanDesc {
    // SAFETY: standard AM protocol; the state lives in the scan's memory context and is
    // dropped when that context goes.
    unsafe {
        let scan = pg_sys::RelationGetIndexScan(index, nkeys, norderbys);
        // The AM owns the arrays the executor reads ORDER BY distances from.
        if norderbys > 0 {
            let n = norderbys as usize;
            (*scan).xs_orderbyvals =
                pg_sys::palloc0(n * std::mem::size_of::<pg_sys::Datum>()) as *mut pg_sys::Datum;
            (*scan).xs_orderbynulls = pg_sys::palloc0(n * std::mem::size_of::<bool>()) as *mut bool;
        }
        // An index-only scan reads the fingerprint from the index tuple amgettuple forms.
        (*scan).xs_itupdesc = (*index).rd_att;
        let state =
            PgMemoryContexts::CurrentMemoryContext.leak_and_drop_on_delete(ScanState::default());
        (*scan).opaque = state as *mut std::ffi::c_void;
        scan
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amrescan(
    scan: pg_sys::IndexScanDesc,
    keys: pg_sys::ScanKey,
    nkeys: i32,
    orderbys: pg_sys::ScanKey,
    norderbys: i32,
) {
    // SAFETY: keyData/orderByData were sized by RelationGetIndexScan for these counts.
    unsafe {
        let scan = &mut *scan;
        if !keys.is_null() && nkeys > 0 {
            std::ptr::copy(keys, scan.keyData, nkeys as usize);
        }
        if !orderbys.is_null() && norderbys > 0 {
            std::ptr::copy(orderbys, scan.orderByData, norderbys as usize);
        }
        let state = &mut *(scan.opaque as *mut ScanState);
        *state = ScanState {
            query: query_of(scan),
            cache: state.cache.take(),
            ..ScanState::default()
        };
    }
}

unsafe fn query_of(scan: &pg_sys::IndexScanDescData) -> Query {
    let mut query = Query::default();
    unsafe {
        let keys = slice_or_empty(scan.keyData, scan.numberOfKeys);
        for key in keys {
            if key.sk_flags & pg_sys::SK_ISNULL as i32 != 0 {
                query.nothing = true;
            } else if key.sk_strategy == STRATEGY_WITHIN {
                let ball = &*(key.sk_argument.cast_mut_ptr::<HammingBall>());
                if ball.radius < 0 {
                    query.nothing = true;
                } else {
                    query.balls.push((ball.center, ball.radius as u32));
                }
            } else if key.sk_strategy == STRATEGY_WITHIN_BATCH {
                let set = batch::decode(key.sk_argument);
                query
                    .batches
                    .push(Rc::new(BallLookup::new(&set, batch::lookup_budget())));
            }
        }
        let orderbys = slice_or_empty(scan.orderByData, scan.numberOfOrderBys);
        query.order_by = orderbys
            .iter()
            .map(|key| {
                (key.sk_flags & pg_sys::SK_ISNULL as i32 == 0)
                    .then(|| key.sk_argument.value() as u64)
            })
            .collect();
    }
    query
}

/// The scan keys as a slice (PostgreSQL leaves the pointer NULL when there are none).
unsafe fn slice_or_empty<'a>(keys: pg_sys::ScanKey, n: i32) -> &'a [pg_sys::ScanKeyData] {
    if keys.is_null() || n <= 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(keys, n as usize) }
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amgettuple(
    scan: pg_sys::IndexScanDesc,
    _direction: pg_sys::ScanDirection::Type,
) -> bool {
    // SAFETY: opaque was set by ambeginscan; xs_orderbyvals is sized for the order-bys.
    unsafe {
        let scan = &mut *scan;
        let index = scan.indexRelation;
        let mvcc = is_mvcc(scan.xs_snapshot);
        let state = &mut *(scan.opaque as *mut ScanState);
        if !state.started {
            state.started = true;
            count_index_scan(index);
            let cache = ScanCache::for_fetch(&mut state.cache, index, mvcc);
            (state.results, state.later) = first_results(index, &state.query, cache);
        }
        while state.next == state.results.len() {
            let Some(phase) = state.later.take() else {
                break;
            };
            let cache = ScanCache::for_fetch(&mut state.cache, index, mvcc);
            state.results = Vec::new(); // freed before the next batch is read
            (state.results, state.later) = match phase {
                Later::FarRows { from } => {
                    let target = pass_target(state.passes, FIRST_PASS_ROWS, pass_rows_cap());
                    state.passes += 1;
                    nearest_pass(index, &state.query.order_by, cache, from, target)
                }
                Later::NullRows => (null_rows(index, cache), None),
            };
            state.next = 0;
        }
        let Some(&hit) = state.results.get(state.next) else {
            return false;
        };
        state.next += 1;
        scan.xs_heaptid = item_pointer(hit.tid);
        scan.xs_recheck = false;
        if scan.xs_want_itup {
            set_index_tuple(scan, hit.fp);
        }
        for (i, q) in state.query.order_by.iter().enumerate() {
            let d = distance(hit.fp, *q);
            *scan.xs_orderbyvals.add(i) = pg_sys::Datum::from(d as i32);
            *scan.xs_orderbynulls.add(i) = d == NULL_DISTANCE;
        }
        scan.xs_recheckorderby = false;
        true
    }
}

/// One more scan in the index's statistics (`pg_stat_user_indexes.idx_scan`), as
/// PostgreSQL's `pgstat_count_index_scan` macro counts them for btree and GIN: once per
/// scan or rescan that reads the index.
unsafe fn count_index_scan(index: pg_sys::Relation) {
    // SAFETY: an open relation; pgstat_assoc_relation sets pgstat_info when counting is on.
    unsafe {
        if (*index).pgstat_info.is_null() && (*index).pgstat_enabled {
            pg_sys::pgstat_assoc_relation(index);
        }
        if let Some(info) = (*index).pgstat_info.as_mut() {
            info.t_counts.t_numscans += 1;
        }
    }
}

/// The index tuple of an index-only scan: the row's fingerprint (or NULL). The access method
/// does not claim to return columns (no amcanreturn), but PostgreSQL still plans an
/// index-only scan when a query needs no column at all (`SELECT count(*)`), and then wants
/// a tuple. Each replaces the last, in the scan's memory context.
unsafe fn set_index_tuple(scan: &mut pg_sys::IndexScanDescData, fp: Option<u64>) {
    unsafe {
        if !scan.xs_itup.is_null() {
            pg_sys::pfree(scan.xs_itup.cast());
        }
        let mut value = pg_sys::Datum::from(fp.unwrap_or(0) as i64);
        let mut isnull = fp.is_none();
        let old = pg_sys::MemoryContextSwitchTo(pg_sys::GetMemoryChunkContext(
            scan as *mut _ as *mut std::ffi::c_void,
        ));
        scan.xs_itup = pg_sys::index_form_tuple(scan.xs_itupdesc, &mut value, &mut isnull);
        pg_sys::MemoryContextSwitchTo(old);
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amgetbitmap(
    scan: pg_sys::IndexScanDesc,
    tbm: *mut pg_sys::TIDBitmap,
) -> i64 {
    // SAFETY: as in amgettuple; the bitmap is PostgreSQL's.
    unsafe {
        let scan = &mut *scan;
        let mvcc = is_mvcc(scan.xs_snapshot);
        let state = &mut *(scan.opaque as *mut ScanState);
        count_index_scan(scan.indexRelation);
        let cache = ScanCache::for_fetch(&mut state.cache, scan.indexRelation, mvcc);
        // TIDs go to the bitmap a chunk at a time as they are found: a wide radius matches
        // much of the index, which the bitmap (lossy past work_mem) can hold and a Vec
        // should not.
        const CHUNK: usize = 1024;
        let mut chunk: Vec<pg_sys::ItemPointerData> = Vec::with_capacity(CHUNK);
        let mut total = 0i64;
        let add = |chunk: &mut Vec<pg_sys::ItemPointerData>| {
            pg_sys::tbm_add_tuples(tbm, chunk.as_mut_ptr(), chunk.len() as i32, false);
            chunk.clear();
        };
        matches(scan.indexRelation, &state.query, cache, |(_, tid)| {
            chunk.push(item_pointer(tid));
            total += 1;
            if chunk.len() == CHUNK {
                add(&mut chunk);
            }
        });
        add(&mut chunk);
        total
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amendscan(scan: pg_sys::IndexScanDesc) {
    // SAFETY: opaque was set by ambeginscan. The state itself is freed with the scan's
    // memory context; the pin is released here, not on drop (after an ERROR the resource
    // owner has released it before the context goes), and what the scan read goes now.
    unsafe {
        let state = &mut *((*scan).opaque as *mut ScanState);
        if let Some(cache) = state.cache.as_mut() {
            cache.release();
        }
        *state = ScanState::default();
    }
}

/// The sort key of a NULL distance: after every real one.
const NULL_DISTANCE: u64 = u64::MAX;

fn distance(fp: Option<u64>, q: Option<u64>) -> u64 {
    match (fp, q) {
        (Some(fp), Some(q)) => hamming(fp, q) as u64,
        _ => NULL_DISTANCE,
    }
}

/// The order of the results: by each ORDER BY distance in turn, then by TID.
fn compare(a: &Hit, b: &Hit, order_by: &[Option<u64>]) -> Ordering {
    order_by
        .iter()
        .map(|&q| distance(a.fp, q).cmp(&distance(b.fp, q)))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| a.tid.cmp(&b.tid))
}

/// `rows` as hits in result order.
fn sorted_hits(rows: Vec<Row>, order_by: &[Option<u64>]) -> Vec<Hit> {
    let mut hits: Vec<Hit> = rows.into_iter().map(|(fp, tid)| Hit { fp, tid }).collect();
    hits.sort_unstable_by(|a, b| compare(a, b, order_by));
    hits
}

/// The results a scan returns first, and the phase to read after them. An ORDER BY
/// without a ball reads the rows within max_distance of its first query through the tables,
/// then, only if the scan goes on, the farther rows and the NULL rows.
fn first_results(
    index: pg_sys::Relation,
    query: &Query,
    cache: &mut ScanCache,
) -> (Vec<Hit>, Option<Later>) {
    let mut rows = Vec::new();
    match query.order_by.first() {
        Some(&Some(q)) if query.balls.is_empty() && query.batches.is_empty() && !query.nothing => {
            let near = Query {
                balls: vec![(q, cache.meta.max_distance)],
                ..query.clone()
            };
            matches(index, &near, cache, |row| rows.push(row));
            let from = cache.meta.max_distance + 1;
            (
                sorted_hits(rows, &query.order_by),
                Some(Later::FarRows { from }),
            )
        }
        _ => {
            matches(index, query, cache, |row| rows.push(row));
            (sorted_hits(rows, &query.order_by), None)
        }
    }
}

/// One pass over each run's table 0 and the pending rows for the nearest rows at distances
/// from `from` on (`target` of them, give or take the farthest distance's), in result order,
/// and the phase after them. The distance is taken on the permuted key against the permuted
/// query (a permutation keeps distances), so only the rows kept are permuted back.
fn nearest_pass(
    index: pg_sys::Relation,
    order_by: &[Option<u64>],
    cache: &mut ScanCache,
    from: u32,
    target: usize,
) -> (Vec<Hit>, Option<Later>) {
    let q = order_by[0].expect("passes follow a non-NULL ORDER BY query");
    let mut pass = NearestPass::new(from, target);
    for (run, layout) in cache.meta.runs.iter().zip(&cache.layouts) {
        let table = &layout.tables()[0];
        let permuted_q = table.apply(q);
        if let Some(tree) = run.tables.first() {
            run::walk_leaves(index, run.id, tree.first_leaf, |contents| {
                offer_page(&mut pass, contents, permuted_q, table);
                true
            });
        }
    }
    let mut offer = |fp: Option<u64>, tid: Tid| {
        if let Some(fp) = fp {
            pass.offer(hamming(fp, q), || Hit { fp: Some(fp), tid });
        }
    };
    match &cache.pending {
        Some(pending) => for_each_row_in(&pending.rows, |(fp, tid)| offer(fp, tid)),
        None => for_each_pending(index, &cache.meta, offer),
    }
    let selected = pass.finish();
    let later = selected
        .next_from()
        .map_or(Later::NullRows, |from| Later::FarRows { from });
    (
        selected.into_order(|a, b| compare(a, b, order_by)),
        Some(later),
    )
}

/// Offers a table page's entries to a pass, with the CPU's popcount instruction where it
/// has one: the distance test is nearly the whole cost of a pass, and the portable build
/// (the x86-64 baseline) counts bits in a dozen instructions.
fn offer_page(pass: &mut NearestPass<Hit>, contents: &[u8], permuted_q: u64, table: &Permutation) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has the instruction the function is compiled for.
        return unsafe { offer_page_popcnt(pass, contents, permuted_q, table) };
    }
    offer_page_portable(pass, contents, permuted_q, table)
}

#[inline(always)]
fn offer_page_portable(
    pass: &mut NearestPass<Hit>,
    contents: &[u8],
    permuted_q: u64,
    table: &Permutation,
) {
    pass.offer_entries(contents, permuted_q, |e| Hit {
        fp: Some(table.invert(e.key)),
        tid: e.tid,
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn offer_page_popcnt(
    pass: &mut NearestPass<Hit>,
    contents: &[u8],
    permuted_q: u64,
    table: &Permutation,
) {
    offer_page_portable(pass, contents, permuted_q, table)
}

/// The rows whose fingerprint is NULL (in the runs' NULL chains and the pending rows), by
/// TID.
fn null_rows(index: pg_sys::Relation, cache: &ScanCache) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut keep = |fp: Option<u64>, tid: Tid| {
        if fp.is_none() {
            hits.push(Hit { fp, tid });
        }
    };
    for_each_run_null(index, &cache.meta, &mut keep);
    match &cache.pending {
        Some(pending) => for_each_row_in(&pending.rows, |(fp, tid)| keep(fp, tid)),
        None => for_each_pending(index, &cache.meta, keep),
    }
    hits.sort_unstable_by_key(|h| h.tid);
    hits
}

/// Calls `emit` with every row within all of the query's balls and batches (every row,
/// NULL ones too, when it has none), each TID once. The probes are those of the smallest
/// ball if it is within max_distance, or else those of the smallest batch's centers if its
/// radius is (a row found near several centers is reported by the first that contains
/// it); with neither, every row is tested.
fn matches(
    index: pg_sys::Relation,
    query: &Query,
    cache: &mut ScanCache,
    mut emit: impl FnMut(Row),
) {
    if query.nothing {
        return;
    }
    // Within every ball and every batch but `driver`, whose probes found the row and whose
    // test the caller makes itself.
    let within_rest = |fp: u64, driver: Option<&BallLookup>| {
        query.balls.iter().all(|&(c, r)| hamming(fp, c) <= r)
            && query
                .batches
                .iter()
                .all(|b| driver.is_some_and(|d| std::ptr::eq(&**b, d)) || b.contains(fp))
    };
    let within_all = |fp: u64| within_rest(fp, None);
    let max_distance = cache.meta.max_distance;
    let ball = query.balls.iter().min_by_key(|b| b.1);
    let batch = query.batches.iter().min_by_key(|b| b.centers().len());
    match (ball, batch) {
        (Some(&(center, radius)), _) if radius <= max_distance => {
            lookup(index, cache, center, radius, |row| {
                if row.0.is_some_and(within_all) {
                    emit(row);
                }
            });
        }
        (_, Some(batch)) if batch.radius() <= max_distance => {
            for (i, &center) in batch.centers().iter().enumerate() {
                pgrx::check_for_interrupts!();
                lookup(index, cache, center, batch.radius(), |row| {
                    if row.0.is_some_and(|fp| {
                        batch.first_containing(fp) == Some(i) && within_rest(fp, Some(batch))
                    }) {
                        emit(row);
                    }
                });
            }
        }
        _ => for_each_row(index, cache, |fp, tid| {
            let unconstrained = query.balls.is_empty() && query.batches.is_empty();
            if fp.map_or(unconstrained, within_all) {
                emit((fp, tid));
            }
        }),
    }
}

/// Calls `emit` with every row within `radius` ≤ max_distance of `center`, each once,
/// through the permuted tables of every run and the pending rows.
fn lookup(
    index: pg_sys::Relation,
    cache: &mut ScanCache,
    center: u64,
    radius: u32,
    mut emit: impl FnMut(Row),
) {
    let small_in_memory = cache.lookups > 0;
    cache.lookups += 1;
    for (run, layout) in cache.meta.runs.iter().zip(&cache.layouts) {
        if small_in_memory && compared_from_memory(&cache.meta, run) {
            continue;
        }
        for (t, tree) in run.tables.iter().enumerate() {
            probe(
                index,
                run,
                tree,
                &layout.tables()[t],
                &mut cache.directory,
                center,
                radius,
                |fp, tid| {
                    // A row sharing a prefix in several tables is found in each: only its
                    // owner table (the first whose leading blocks all agree) reports it.
                    if layout.owner_table(layout.equal_blocks(fp, center)) == Some(t) {
                        emit((Some(fp), tid));
                    }
                },
            );
        }
    }
    let meta = &cache.meta;
    let mut lists = vec![cache
        .pending
        .get_or_insert_with(|| PendingRows::read(index, meta))];
    if small_in_memory {
        let layouts = &cache.layouts;
        lists.push(
            cache
                .small_runs
                .get_or_insert_with(|| read_small_runs(index, meta, layouts)),
        );
    }
    for rows in lists {
        rows.probe(center, radius, &mut emit);
    }
}

/// Runs of at most this many rows are compared row by row from a scan's second lookup on,
/// from memory: a pass over 16 k fingerprints with the popcount instruction costs about as
/// much as reading one leaf, and probing a run reads one per table.
const SMALL_RUN_ROWS: u64 = 16384;

/// Whether a run's rows are compared from memory on rescans: a small run, unless a merge
/// table by table is moving it (its table 0 may be in the new run already, and its other
/// tables still hold rows that must be probed there).
fn compared_from_memory(meta: &Meta, run: &Run) -> bool {
    run.rows <= SMALL_RUN_ROWS && run.id != meta.merging && !meta.merge_inputs.contains(&run.id)
}

/// The rows of the runs compared from memory (their table 0, permuted back).
fn read_small_runs(index: pg_sys::Relation, meta: &Meta, layouts: &[Layout]) -> PendingRows {
    let mut rows = Vec::new();
    for (run, layout) in meta.runs.iter().zip(layouts) {
        if compared_from_memory(meta, run) {
            let table = &layout.tables()[0];
            if let Some(tree) = run.tables.first() {
                run::for_each_entry(index, run.id, tree, |e: Entry| {
                    rows.push((Some(table.invert(e.key)), e.tid))
                });
            }
        }
    }
    PendingRows::new(rows, meta.max_distance)
}

/// Calls `emit` with the rows of one table of a run whose permuted value shares the query's
/// prefix and lies within `radius`. `directory` keeps the directory pages read.
#[allow(clippy::too_many_arguments)]
fn probe(
    index: pg_sys::Relation,
    run: &Run,
    tree: &neardup_core::index_page::Tree,
    table: &Permutation,
    directory: &mut HashMap<u32, (Vec<u8>, u16)>,
    center: u64,
    radius: u32,
    mut emit: impl FnMut(u64, Tid),
) {
    let q = table.apply(center);
    let (lo, hi) = table.prefix_range(q);
    let start = run::descend(tree, lo, |block, visit| {
        let (contents, level) = directory.entry(block).or_insert_with(|| {
            let locked = page::read_owned(index, block, Kind::Directory, run.id);
            // SAFETY: a locked directory page.
            unsafe {
                (
                    page::contents(locked.page()).to_vec(),
                    page::level(locked.page()),
                )
            }
        });
        visit(contents, *level)
    });
    let Some(start) = start else { return };
    run::walk_leaves(index, run.id, start, |contents| {
        for e in entries(&contents[lower_bound(contents, lo) * ENTRY_SIZE..]) {
            if e.key > hi {
                return false;
            }
            if hamming(e.key, q) <= radius {
                emit(table.invert(e.key), e.tid);
            }
        }
        true
    });
}

/// Every indexed row once: each run's table 0, permuted back into fingerprints, and NULL
/// rows, then the pending rows.
fn for_each_row(
    index: pg_sys::Relation,
    cache: &ScanCache,
    mut emit: impl FnMut(Option<u64>, Tid),
) {
    for (run, layout) in cache.meta.runs.iter().zip(&cache.layouts) {
        let table = &layout.tables()[0];
        if let Some(tree) = run.tables.first() {
            run::for_each_entry(index, run.id, tree, |e: Entry| {
                emit(Some(table.invert(e.key)), e.tid)
            });
        }
    }
    for_each_run_null(index, &cache.meta, &mut emit);
    match &cache.pending {
        Some(pending) => for_each_row_in(&pending.rows, |(fp, tid)| emit(fp, tid)),
        None => for_each_pending(index, &cache.meta, emit),
    }
}

/// The rows of the runs whose fingerprint is NULL.
fn for_each_run_null(
    index: pg_sys::Relation,
    meta: &Meta,
    emit: &mut impl FnMut(Option<u64>, Tid),
) {
    for r in &meta.runs {
        run::for_each_pending(index, r.id, r.nulls_head, |e| {
            emit(e.fingerprint(), e.heap_tid())
        });
    }
}

/// The pending rows: the open list and the sealed one being written as a run.
fn for_each_pending(index: pg_sys::Relation, meta: &Meta, mut emit: impl FnMut(Option<u64>, Tid)) {
    for list in [&meta.pending, &meta.sealed] {
        if list.id != 0 {
            run::for_each_pending(index, list.id, list.head, |e| {
                emit(e.fingerprint(), e.heap_tid())
            });
        }
    }
}

/// `IsMVCCSnapshot()`: only such a snapshot lets a scan reuse what it read for its rescans.
fn is_mvcc(snapshot: pg_sys::Snapshot) -> bool {
    // SAFETY: the executor sets xs_snapshot before fetching; a NULL one is not MVCC.
    unsafe { snapshot.as_ref() }.is_some_and(|s| {
        matches!(
            s.snapshot_type,
            pg_sys::SnapshotType::SNAPSHOT_MVCC | pg_sys::SnapshotType::SNAPSHOT_HISTORIC_MVCC
        )
    })
}
