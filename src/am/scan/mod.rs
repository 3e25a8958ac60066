//! Index scans. Strategy 1, `fp <@ hamming_ball(q, k)`, and strategy 3, `fp <@@ batch`:
//! the rows the probes of the permuted tables find (`matches`), returned as they are found.
//! Strategy 2, `ORDER BY fp <~> q`: nearest first, a batch at a time (`ordered`). Results
//! are exact: no recheck. Neither holds more than a page's rows, a pass's cap or the
//! pending rows in memory, however many rows a scan returns.
//!
//! No scan holds a buffer lock between calls. A scan reads the metapage once, at its first
//! fetch, and reads what that copy names to its end; under an MVCC snapshot it also keeps
//! what it read for its rescans (a nested loop join rescans once per outer row): the
//! metapage, the pending rows and the directory pages it looked at (`cache`). Every page
//! is checked to belong to the run or list the scan's metapage names (`page::read_owned`).

mod cache;
mod matches;
mod ordered;
mod wide;

pub use cache::PASSES_BEFORE_SORTING;
pub use ordered::{first_pass_share, init as init_ring_budget, pass_rows_cap, FIRST_PASS_ROWS};

use super::build::item_pointer;
use super::codes;
use crate::hamming_query::batch;
use crate::hamming_query::HammingBall;
use cache::{Row, ScanCache};
use matches::Matches;
use neardup_core::search::ball_set::BallLookup;
use neardup_core::search::index_page::Tid;
use ordered::{distance, Hit, Ordered, NULL_DISTANCE};
use pgrx::prelude::*;
use pgrx::{pg_sys, PgMemoryContexts};
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

#[derive(Default)]
struct ScanState {
    /// A scan of wide codes (`wide`), which has its own state: the rest is unused then.
    wide: Option<Box<dyn wide::WideScan>>,
    query: Query,
    /// What finds the rows, from the first fetch on.
    producer: Option<Producer>,
    /// The batch being returned, and the next of it.
    results: Vec<Hit>,
    next: usize,
    /// Kept across rescans when the snapshot is MVCC.
    cache: Option<ScanCache>,
}

/// How a scan finds its rows.
enum Producer {
    Unordered(Matches),
    Ordered(Ordered),
}

/// Rows an unordered scan finds before it returns the first of them.
const BATCH_ROWS: usize = 1024;

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
        let words = codes::words(index);
        let state = PgMemoryContexts::CurrentMemoryContext.leak_and_drop_on_delete(ScanState {
            wide: (words != 1).then(|| wide::begin(words)),
            ..ScanState::default()
        });
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
        if let Some(wide) = state.wide.as_mut() {
            let query = wide::WideQuery::of(
                slice_or_empty(scan.keyData, scan.numberOfKeys),
                slice_or_empty(scan.orderByData, scan.numberOfOrderBys),
                codes::words(scan.indexRelation),
            );
            wide.rescan(query);
            return;
        }
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
        if let Some(wide) = state.wide.as_mut() {
            return wide_gettuple(scan, wide.as_mut(), mvcc);
        }
        if state.producer.is_none() {
            count_index_scan(index);
            let cache = ScanCache::for_scan(&mut state.cache, index, mvcc);
            state.producer = Some(if state.query.order_by.is_empty() {
                Producer::Unordered(Matches::new(&state.query, cache.meta.max_distance, true))
            } else {
                Producer::Ordered(Ordered::new())
            });
        }
        if state.next == state.results.len() {
            let cache = state.cache.as_mut().expect("read at the first fetch");
            state.results = Vec::new(); // freed before the next batch is read
            state.results = match state.producer.as_mut().expect("set above") {
                Producer::Unordered(matches) => {
                    let mut rows: Vec<Row> = Vec::new();
                    matches.fill(index, &state.query, cache, &mut rows, BATCH_ROWS);
                    rows.into_iter().map(|(fp, tid)| Hit { fp, tid }).collect()
                }
                Producer::Ordered(ordered) => ordered.next_batch(index, &state.query, cache),
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

/// amgettuple of a scan of wide codes: the next row, its ORDER BY distances and, for an
/// index-only scan, its code.
///
/// # Safety
/// `scan` is a scan of a wide index, set up by ambeginscan and amrescan.
unsafe fn wide_gettuple(
    scan: &mut pg_sys::IndexScanDescData,
    wide: &mut dyn wide::WideScan,
    mvcc: bool,
) -> bool {
    // SAFETY: as the caller promises; xs_orderbyvals is sized for the order-bys.
    unsafe {
        let index = scan.indexRelation;
        if !wide.started() {
            count_index_scan(index);
        }
        let Some(found) = wide.next(index, mvcc) else {
            return false;
        };
        scan.xs_heaptid = item_pointer(found.tid);
        scan.xs_recheck = false;
        if scan.xs_want_itup {
            set_wide_index_tuple(scan, found.code, codes::words(index));
        }
        for (i, q) in wide.query().order_by.iter().enumerate() {
            let d = wide::distance(&found, *q);
            *scan.xs_orderbyvals.add(i) = pg_sys::Datum::from(d.unwrap_or(0) as i32);
            *scan.xs_orderbynulls.add(i) = d.is_none();
        }
        scan.xs_recheckorderby = false;
        true
    }
}

/// The index tuple of an index-only scan of wide codes (see `set_index_tuple`).
unsafe fn set_wide_index_tuple(
    scan: &mut pg_sys::IndexScanDescData,
    code: Option<wide::Padded>,
    words: usize,
) {
    unsafe {
        if !scan.xs_itup.is_null() {
            pg_sys::pfree(scan.xs_itup.cast());
        }
        let words_of = code.map_or([0u64; 4], |c| c.0);
        let mut value = pg_sys::Datum::from(words_of[..words].as_ptr());
        let mut isnull = code.is_none();
        let old = pg_sys::MemoryContextSwitchTo(pg_sys::GetMemoryChunkContext(
            scan as *mut _ as *mut std::ffi::c_void,
        ));
        scan.xs_itup = pg_sys::index_form_tuple(scan.xs_itupdesc, &raw mut value, &raw mut isnull);
        pg_sys::MemoryContextSwitchTo(old);
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
            // 16 dropped the `t_` prefixes
            #[cfg(feature = "pg15")]
            {
                info.t_counts.t_numscans += 1;
            }
            #[cfg(not(feature = "pg15"))]
            {
                info.counts.numscans += 1;
            }
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
        scan.xs_itup = pg_sys::index_form_tuple(scan.xs_itupdesc, &raw mut value, &raw mut isnull);
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
        if let Some(wide) = state.wide.as_mut() {
            return wide.bitmap(scan.indexRelation, mvcc, tbm);
        }
        let cache = ScanCache::for_scan(&mut state.cache, scan.indexRelation, mvcc);
        // TIDs go to the bitmap a batch at a time as they are found: a wide radius matches
        // much of the index, which the bitmap (lossy past work_mem) can hold and a Vec
        // should not.
        let mut matches = Matches::new(&state.query, cache.meta.max_distance, false);
        let mut total = 0i64;
        loop {
            let mut rows: Vec<Row> = Vec::new();
            matches.fill(
                scan.indexRelation,
                &state.query,
                cache,
                &mut rows,
                BATCH_ROWS,
            );
            if rows.is_empty() {
                return total;
            }
            let mut tids = matches::item_pointers(&rows);
            pg_sys::tbm_add_tuples(tbm, tids.as_mut_ptr(), tids.len() as i32, false);
            total += tids.len() as i64;
        }
    }
}

/// The TIDs that lookups of `balls` (a code's words, a radius) find, a list per ball, each
/// through the plans an index scan of the ball makes, each TID as often as the scan returns
/// it (`hamming_index_check` compares them with every row's distance). With `rescans`, the
/// lookups share one cache as a nested loop's rescans do, which past
/// `PASSES_BEFORE_SORTING` lookups compares the pending rows and small runs from memory.
pub fn ball_lookups(
    index: pg_sys::Relation,
    balls: &[(Vec<u64>, u32)],
    rescans: bool,
) -> Vec<Vec<Tid>> {
    if codes::words(index) != 1 {
        return wide::ball_lookups(index, balls, rescans);
    }
    let mut shared: Option<ScanCache> = None;
    let found = balls
        .iter()
        .map(|(words, radius)| {
            let query = Query {
                balls: vec![(words[0], *radius)],
                ..Query::default()
            };
            let mut own = None;
            let cache =
                ScanCache::for_scan(if rescans { &mut shared } else { &mut own }, index, true);
            let mut matches = Matches::new(&query, cache.meta.max_distance, true);
            let mut tids = Vec::new();
            loop {
                let mut rows: Vec<Row> = Vec::new();
                matches.fill(index, &query, cache, &mut rows, BATCH_ROWS);
                if rows.is_empty() {
                    break;
                }
                tids.extend(rows.iter().map(|r| r.1));
            }
            if let Some(cache) = own.as_mut() {
                cache.release();
            }
            tids
        })
        .collect();
    if let Some(cache) = shared.as_mut() {
        cache.release();
    }
    found
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
        if let Some(wide) = state.wide.as_mut() {
            wide.release();
        }
        *state = ScanState::default();
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
