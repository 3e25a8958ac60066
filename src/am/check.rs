//! `hamming_index_check(regclass)`, in the spirit of amcheck:
//! - every table of every run is sorted, within and across leaves; its directory leads to
//!   its leaves in order, each under a first key no larger than theirs; a small table's
//!   prefix bitmap has every key's bit; every page is of the right kind and owned by its
//!   run or list; the metapage's row count of each run is true;
//! - every row the table would index is in every table of one run with its code, or in a
//!   pending list or a run's NULL rows: a lookup cannot miss it;
//! - no TID is indexed twice (in two runs, or a run and a pending list);
//! - lookups through the scans' own plans, from codes of every run and list, find exactly
//!   the indexed rows within their balls (`check_lookups`): the structure can hold every row
//!   while a plan skips some;
//! - the registry's records parse, and every page of the garbage they name is still owned
//!   by it (no merge took it before no snapshot could read it);
//! - no entry names a live heap tuple with another code: a lookup cannot return a
//!   wrong row. Entries of dead tuples are allowed (VACUUM removes them; one interrupted by
//!   a crash may have cleaned some tables and not yet the others).
//!
//! ERROR (XX002) on the first violation; otherwise the number of heap rows verified.
//!
//! A page in use that the free space map lists is not a violation: the map is not
//! crash-safe (a merge that took a page before a crash may find it listed again after
//! recovery), so every merge checks a page before it takes it, and VACUUM's sweep takes
//! such pages out of the map.

use super::blocks;
use super::build::scan_table;
use super::codes::by_width;
use super::merge::MergeLock;
use super::meta;
use super::page::{self, Kind};
use super::registry::Registry;
use super::run;
use crate::support::memory::RowBudget;
use neardup_core::search::code_tables::{Code, Tables};
use neardup_core::search::index_page::{
    children, Dead, Entry, Leaf, Meta, Rest, Run, Tid, NO_BLOCK,
};
use neardup_core::search::prefix_bitmap::PrefixBitmap;
use neardup_core::search::table_parts::Parts;
use pgrx::pg_sys;
use pgrx::prelude::*;

fn corrupt(message: String) -> ! {
    ereport!(ERROR, PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED, message);
}

#[pg_extern(sql = "
CREATE FUNCTION hamming_index_check(index regclass) RETURNS bigint
    STRICT VOLATILE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
-- As amcheck's functions: it reads whole tables and takes a ShareLock on them, so only the
-- owner of the extension's objects runs it, and whoever that owner grants it to.
REVOKE ALL ON FUNCTION hamming_index_check(regclass) FROM PUBLIC;
")]
fn hamming_index_check(index: pg_sys::Oid) -> i64 {
    // SAFETY: the table is locked before the index (the order every other path takes, so
    // no deadlock with DML or VACUUM), both stay open for the whole check, and all pages
    // are read under share locks.
    unsafe {
        let heap_oid = pg_sys::IndexGetRelation(index, true);
        if heap_oid == pg_sys::InvalidOid {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
                "hamming_index_check: not an index"
            );
        }
        // Before any lock: a role that may not read the table may not make it wait.
        if pg_sys::pg_class_aclcheck(
            heap_oid,
            pg_sys::GetUserId(),
            pg_sys::ACL_SELECT as pg_sys::AclMode,
        ) != pg_sys::AclResult::ACLCHECK_OK
        {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "hamming_index_check: permission denied for the index's table"
            );
        }
        // The check counts every row it verifies: under row-level security that would say
        // how many rows the policies hide (an ERROR, as pg_stat's counts are not one).
        if pg_sys::check_enable_rls(heap_oid, pg_sys::InvalidOid, false)
            == pg_sys::CheckEnableRlsResult::RLS_ENABLED as i32
        {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "hamming_index_check: the index's table has row-level security enabled for the current user",
                "Run it as the table's owner or as a role that bypasses row-level security."
            );
        }
        // ShareLock on the table keeps writers out while the index and the table are compared
        // (as amcheck's parent check does); readers go on. A standby cannot take it, and
        // its only writer is WAL replay: there, check on a quiet primary's replica.
        let heap = pg_sys::table_open(heap_oid, heap_lock());
        let rel = pg_sys::index_open(index, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let am_name = std::ffi::CStr::from_ptr(pg_sys::get_am_name((*(*rel).rd_rel).relam));
        if am_name.to_bytes() != b"hamming" {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
                "hamming_index_check: not a hamming index"
            );
        }
        // The merge lock keeps merges out for the whole check: the table's ShareLock keeps
        // out inserts and VACUUM, but not the background merge workers, which lock the
        // index alone. (A standby merges nothing but by replay.)
        let _merges =
            (heap_lock() == pg_sys::ShareLock as pg_sys::LOCKMODE).then(|| MergeLock::wait(rel));
        let m = meta::read(rel);
        let rows = by_width!(rel, L => check::<L>(heap, rel, &m));
        check_registry(rel);
        pg_sys::index_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        pg_sys::table_close(heap, heap_lock());
        rows
    }
}

/// The code of an entry of a pending list or a run's NULL rows (`None`: NULL).
fn listed_code<P: Rest>(e: &Entry<P>) -> Option<Code<P>> {
    (!e.is_null()).then_some((e.key, e.rest))
}

/// A code as the hex digits of its words.
fn show<P: Rest>(code: Option<Code<P>>) -> String {
    code.map_or("NULL".to_string(), |(key, rest)| {
        std::iter::once(&key)
            .chain(rest.words())
            .map(|w| format!("{w:016x}"))
            .collect()
    })
}

/// Checks the runs and lists of the index `rel` of layout `L` against the heap; returns the
/// heap rows verified.
///
/// # Safety
/// `heap` and `rel` are open and locked as `hamming_index_check` locks them; `m` is the
/// index's metapage.
unsafe fn check<L: Tables>(heap: pg_sys::Relation, rel: pg_sys::Relation, m: &Meta) -> i64 {
    type Row<P> = (Tid, Option<Code<P>>);
    // SAFETY: as the caller promises.
    unsafe {
        // Rows of the pending lists and the runs' NULL rows.
        let mut listed: Vec<Row<L::Rest>> = Vec::new();
        for list in [&m.pending, &m.sealed].into_iter().filter(|l| l.id != 0) {
            let pages = blocks::chain_blocks(rel, Kind::Pending, list.id, list.head).len();
            if pages != list.pages as usize {
                corrupt(format!(
                    "pending list {} has {pages} pages, the metapage says {}",
                    list.id, list.pages
                ));
            }
            run::for_each_pending(rel, list.id, list.head, |e: Entry<L::Rest>| {
                listed.push((e.heap_tid(), listed_code(&e)))
            });
        }
        for r in &m.runs {
            run::for_each_pending(rel, r.id, r.nulls_head, |e: Entry<L::Rest>| {
                listed.push((e.heap_tid(), listed_code(&e)))
            });
        }

        let (collected, _) = scan_table::<L::Rest>(heap, rel, pg_sys::BuildIndexInfo(rel), false);
        let mut in_heap: Vec<Row<L::Rest>> = collected
            .rows
            .iter()
            .map(|&(code, tid)| (tid, Some(code)))
            .chain(collected.nulls.iter().map(|&tid| (tid, None)))
            .collect();
        drop(collected);
        in_heap.sort_unstable();
        let heap_rows = in_heap.len() as i64;
        // The heap rows (24 bytes), every indexed TID (16), one table's entries (16) and,
        // briefly, the build scan's copy; the rest of a wide code in the first three.
        let row_bytes = 64 + 3 * 8 * <L::Rest as Rest>::WORDS;
        RowBudget::maintenance("hamming_index_check", row_bytes)
            .admit(in_heap.len() + listed.len());
        let missing = |tid: Tid, fp: Option<Code<L::Rest>>| -> ! {
            corrupt(format!(
                "heap tuple ({},{}) with code {} is missing from the index",
                tid.block,
                tid.offset,
                show(fp)
            ))
        };
        let heap_fp = |tid: Tid| {
            let at = in_heap.partition_point(|&(t, _)| t < tid);
            in_heap[at..]
                .iter()
                .take_while(|&&(t, _)| t == tid)
                .map(|&(_, fp)| fp)
                .collect::<Vec<_>>()
        };
        let check_entry = |tid: Tid, fp: Option<Code<L::Rest>>| {
            let live = heap_fp(tid);
            if !live.is_empty() && !live.contains(&fp) {
                corrupt(format!(
                    "index entry ({},{}) has code {} but the heap tuple has {}",
                    tid.block,
                    tid.offset,
                    show(fp),
                    show(live[0])
                ));
            }
        };
        each_interruptibly(&listed, |&(tid, fp)| check_entry(tid, fp));
        // Codes of every run (or merge) and of the pending rows, for the lookups' check.
        let mut centers = spread(listed.iter().filter_map(|r| r.1), CENTERS_PER_PART);
        let mut indexed = listed;
        // Groups of runs that hold each row in every table once between them: each run
        // alone, but a merge table by table interrupted by a crash has the tables it wrote in
        // the new run and the others still in its inputs.
        let merging: Vec<&Run> = m.runs.iter().filter(|r| m.in_merge(r.id)).collect();
        let grouped = |r: &Run| merging.len() > 1 && merging.iter().any(|x| x.id == r.id);
        let mut groups: Vec<Vec<&Run>> = m
            .runs
            .iter()
            .filter(|r| !grouped(r))
            .map(|r| vec![r])
            .collect();
        if merging.len() > 1 {
            groups.push(merging.clone());
        }
        for group in groups {
            let layout: L = meta::layout(m, group[0]);
            let mut first: Vec<(Tid, Code<L::Rest>)> = Vec::new();
            for t in 0..layout.count() {
                let mut rows = Vec::new();
                for r in &group {
                    let parts = Parts::of_run(r.trees.len(), layout.count()).unwrap_or_else(|| {
                        corrupt(format!("run {} has {} trees", r.id, r.trees.len()))
                    });
                    let mut own = Vec::new();
                    for i in parts.trees_of(t) {
                        let keys = parts.range(parts.part_of(i));
                        own.extend(check_tree(rel, r, i, keys, |e: &Entry<L::Rest>| {
                            layout.code(t, (e.key, e.rest))
                        }));
                    }
                    // An input of an interrupted merge table by table gives its rows up
                    // with each tree of table 0, counting what the merge copied: a VACUUM
                    // that removed one of those meanwhile lowered its count too, so its
                    // count may be low until its table 0 is all merged, never high.
                    let wrong = if m.merge_inputs.contains(&r.id) {
                        r.rows > own.len() as u64
                    } else {
                        r.rows != own.len() as u64
                    };
                    if t == 0 && wrong {
                        corrupt(format!(
                            "run {} has {} rows, the metapage says {}",
                            r.id,
                            own.len(),
                            r.rows
                        ));
                    }
                    rows.extend(own);
                }
                rows.sort_unstable();
                if t == 0 {
                    first = rows;
                    each_interruptibly(&first, |&(tid, fp)| check_entry(tid, Some(fp)));
                } else {
                    // Each live row of the group is in every table of it.
                    each_interruptibly(&first, |&(tid, fp)| {
                        if heap_fp(tid).contains(&Some(fp))
                            && rows.binary_search(&(tid, fp)).is_err()
                        {
                            missing(tid, Some(fp));
                        }
                    });
                    each_interruptibly(&rows, |&(tid, fp)| check_entry(tid, Some(fp)));
                }
            }
            centers.extend(spread(first.iter().map(|r| r.1), CENTERS_PER_PART));
            indexed.extend(first.into_iter().map(|(tid, fp)| (tid, Some(fp))));
        }
        indexed.sort_unstable();
        each_interruptibly(indexed.windows(2), |pair| {
            if pair[0].0 == pair[1].0 {
                corrupt(format!(
                    "heap tuple ({},{}) is indexed twice",
                    pair[0].0.block, pair[0].0.offset
                ));
            }
        });
        each_interruptibly(&in_heap, |&(tid, fp)| {
            let at = indexed.partition_point(|&(t, _)| t < tid);
            if indexed.get(at) != Some(&(tid, fp)) {
                missing(tid, fp);
            }
        });
        if heap_lock() == pg_sys::ShareLock as pg_sys::LOCKMODE {
            centers.extend(spread(indexed.iter().filter_map(|r| r.1), CENTERS_OVERALL));
            centers.sort_unstable();
            centers.dedup();
            let live = |tid: Tid| !heap_fp(tid).is_empty();
            check_lookups(rel, m.max_distance, &indexed, &centers, live);
        }
        heap_rows
    }
}

/// Codes looked up from each run (a merge's runs together) and from the pending rows, and
/// from all the rows, by `check_lookups`.
const CENTERS_PER_PART: usize = 8;
const CENTERS_OVERALL: usize = 32;

/// Up to `n` of `codes`, spread evenly over them.
fn spread<C: Copy>(codes: impl Iterator<Item = C> + Clone, n: usize) -> Vec<C> {
    let count = codes.clone().count();
    let step = count.div_ceil(n).max(1);
    codes.step_by(step).collect()
}

/// Lookups through the scans' own plans find exactly the indexed rows within their balls,
/// each once: a row the structure holds but no plan reads (a run read whole in the middle
/// of a merge, say) is a miss the checks of the structure cannot see. Each of `centers`
/// is looked up at radius 0 and `max_distance` (and for wide codes at the radius of a
/// nearest-first scan's second pass, where more runs are read whole), each lookup with a
/// cache of its own, then again all sharing one cache as a nested loop's rescans do (past
/// `PASSES_BEFORE_SORTING` lookups, which compares the pending rows and small runs from
/// memory). Only where no merge can run meanwhile (not on a standby). Only `live` rows
/// (a heap tuple at the TID) are compared: a dead tuple's entry may be left in some tables
/// and not in others by a VACUUM a crash cut short, and a lookup may or may not return it.
fn check_lookups<P: Rest>(
    rel: pg_sys::Relation,
    max_distance: u32,
    indexed: &[(Tid, Option<Code<P>>)],
    centers: &[Code<P>],
    live: impl Fn(Tid) -> bool,
) {
    let distance = |a: &Code<P>, b: &Code<P>| -> u32 {
        let rest = a.1.words().iter().zip(b.1.words());
        (a.0 ^ b.0).count_ones() + rest.map(|(x, y)| (x ^ y).count_ones()).sum::<u32>()
    };
    let bits = 64 * (1 + P::WORDS as u32);
    let mut radii = vec![0, max_distance];
    if P::WORDS > 0 {
        radii.push(max_distance.saturating_mul(2).saturating_add(1).min(bits));
    }
    radii.dedup();
    let mut expected: Vec<Vec<Tid>> = vec![Vec::new(); centers.len() * radii.len()];
    each_interruptibly(indexed, |(tid, code)| {
        let Some(code) = code else { return };
        if !live(*tid) {
            return;
        }
        for (c, center) in centers.iter().enumerate() {
            let d = distance(center, code);
            for (i, &r) in radii.iter().enumerate() {
                if d <= r {
                    expected[c * radii.len() + i].push(*tid);
                }
            }
        }
    });
    let balls: Vec<(Vec<u64>, u32)> = centers
        .iter()
        .flat_map(|c| {
            let words: Vec<u64> = std::iter::once(c.0)
                .chain(c.1.words().iter().copied())
                .collect();
            radii.iter().map(move |&r| (words.clone(), r))
        })
        .collect();
    // Enough rescans to pass the point where a scan sorts what it compares into memory
    // (those within `max_distance`: past it a lookup reads what a fresh one reads).
    let near: Vec<usize> = (0..balls.len())
        .filter(|&i| balls[i].1 <= max_distance)
        .collect();
    let rounds = (super::scan::PASSES_BEFORE_SORTING as usize).div_ceil(near.len().max(1)) + 1;
    let shared: Vec<usize> = near
        .iter()
        .copied()
        .cycle()
        .take(rounds * near.len())
        .collect();
    let shared_balls: Vec<(Vec<u64>, u32)> = shared.iter().map(|&i| balls[i].clone()).collect();
    let found = super::scan::ball_lookups(rel, &balls, false)
        .into_iter()
        .zip((0..balls.len()).map(|i| (i, false)))
        .chain(
            super::scan::ball_lookups(rel, &shared_balls, true)
                .into_iter()
                .zip(shared.into_iter().map(|i| (i, true))),
        );
    for (mut tids, (i, rescanned)) in found {
        tids.retain(|&tid| live(tid));
        tids.sort_unstable();
        let (want, ball) = (&expected[i], &balls[i]);
        if tids != *want {
            let twice = tids.windows(2).any(|w| w[0] == w[1]);
            corrupt(format!(
                "a lookup within {} of {} finds {} rows, {} are within it{}{}",
                ball.1,
                ball.0
                    .iter()
                    .map(|w| format!("{w:016x}"))
                    .collect::<String>(),
                tids.len(),
                want.len(),
                if twice { " (some twice)" } else { "" },
                if rescanned { " (rescanned)" } else { "" },
            ));
        }
    }
}

/// Rows between two interrupt checks in the loops over every row (millions of them: a
/// cancel must not wait for a whole pass).
const INTERRUPT_EVERY: usize = 4096;

fn each_interruptibly<I: IntoIterator>(items: I, mut f: impl FnMut(I::Item)) {
    for (i, item) in items.into_iter().enumerate() {
        if i % INTERRUPT_EVERY == 0 {
            pgrx::check_for_interrupts!();
        }
        f(item);
    }
}

fn heap_lock() -> pg_sys::LOCKMODE {
    // SAFETY: a plain read of shared state.
    let lock = if unsafe { pg_sys::RecoveryInProgress() } {
        pg_sys::AccessShareLock
    } else {
        pg_sys::ShareLock
    };
    lock as pg_sys::LOCKMODE
}

/// Checks tree `t` of a run: its leaves, in chain order, hold keys in order, within `keys`
/// (its part of the key space); its directory leads to the same leaves in the same order,
/// each under a first key no larger than the leaf's; the prefix bitmap of a small tree's
/// root has the bit of every key. Returns its rows as (TID, code).
fn check_tree<P: Rest>(
    rel: pg_sys::Relation,
    r: &Run,
    t: usize,
    keys: (u64, u64),
    code: impl Fn(&Entry<P>) -> Code<P>,
) -> Vec<(Tid, Code<P>)> {
    let tree = &r.trees[t];
    let chain = blocks::chain_blocks(rel, Kind::Table, r.id, tree.first_leaf);
    if chain.len() != tree.leaves as usize {
        corrupt(format!(
            "run {} tree {t}: {} leaves, the metapage says {}",
            r.id,
            chain.len(),
            tree.leaves
        ));
    }
    // (child, first key) of the leaves, in directory order.
    let mut under: Vec<(u32, u64)> = Vec::new();
    let mut prefixes: Option<Vec<u8>> = None;
    let mut stack: Vec<(u32, u64)> = (tree.root != NO_BLOCK)
        .then_some((tree.root, 0))
        .into_iter()
        .collect();
    while let Some((block, _)) = stack.pop() {
        pgrx::check_for_interrupts!();
        let locked = page::read_owned(rel, block, Kind::Directory, r.id);
        // SAFETY: a locked directory page.
        let (kids, level) = unsafe {
            if block == tree.root {
                prefixes = page::prefix_bitmap(locked.page()).map(<[u8]>::to_vec);
            }
            (
                children(page::contents(locked.page())).collect::<Vec<_>>(),
                page::level(locked.page()),
            )
        };
        if kids.windows(2).any(|w| w[0].0 > w[1].0) {
            corrupt(format!(
                "run {} tree {t}: directory block {block} out of order",
                r.id
            ));
        }
        let kids = kids.into_iter().map(|(key, child)| (child, key));
        if level == 1 {
            under.extend(kids);
        } else {
            // Depth first, in key order: the last child is popped last.
            stack.extend(kids.rev());
        }
    }
    if under.iter().map(|&(b, _)| b).ne(chain.iter().copied()) {
        corrupt(format!(
            "run {} tree {t}: the directory and the leaf chain disagree",
            r.id
        ));
    }
    let mut rows = Vec::new();
    let mut previous = 0u64;
    for (block, bound) in under {
        let locked = page::read_owned(rel, block, Kind::Table, r.id);
        // SAFETY: a locked leaf of entries carrying `P`.
        let leaf: Leaf<P> = unsafe { page::leaf(locked.page()) };
        for e in leaf.entries() {
            if e.key < previous || e.key < bound {
                corrupt(format!(
                    "run {} tree {t}: keys out of order at block {block}",
                    r.id
                ));
            }
            if e.key < keys.0 || e.key > keys.1 {
                corrupt(format!(
                    "run {} tree {t}: a key at block {block} is outside the tree's part of the key space",
                    r.id
                ));
            }
            if prefixes
                .as_ref()
                .is_some_and(|p| !PrefixBitmap::may_hold(p, e.key, e.key))
            {
                corrupt(format!(
                    "run {} tree {t}: a key at block {block} lacks its bit in the root's prefix bitmap",
                    r.id
                ));
            }
            previous = e.key;
            rows.push((e.tid, code(&e)));
        }
    }
    rows.sort_unstable();
    rows
}

/// The registry parses, and the pages of every piece of garbage it names are still the
/// garbage's (of the right kind and owner: `run_blocks` reads each one).
fn check_registry(rel: pg_sys::Relation) {
    for g in Registry::load(rel).garbage() {
        match &g.dead {
            Dead::Run(r) => {
                blocks::run_blocks(rel, r);
            }
            Dead::List(l) => {
                blocks::chain_blocks(rel, Kind::Pending, l.id, l.head);
            }
        }
    }
}
