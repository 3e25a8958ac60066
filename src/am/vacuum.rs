//! VACUUM.
//!
//! `ambulkdelete` removes the entries of dead heap tuples from every leaf of every table of
//! every run, from the runs' NULL rows and from the pending lists: every table, not only
//! table 0, since a VACUUM interrupted by a crash may have cleaned some tables and not
//! others, and the next one must still find the leftovers before their TIDs are reused.
//! Pages are compacted in place, each in its own WAL record; sorted order is kept, so
//! lookups stay valid throughout, and a run's row count in the metapage goes down in the
//! record that removes the rows from its table 0 (from one of that table's trees).
//!
//! It does not hold the merge lock while it works, so inserts and merges go on. A merge
//! that read an input page before VACUUM cleaned it copies dead entries into its new run;
//! so VACUUM goes round again over whatever was published since it looked (new runs, new
//! tables of a run merged table by table), until a round finds nothing new. That last look
//! is taken under the merge lock, waiting for a merge in progress: with the lock held no
//! merge is running, so none holds entries it read before VACUUM cleaned them, and every
//! later merge reads clean inputs. Entries appended to a pending list after VACUUM began
//! are never dead to it (the heap scan that collected the dead tuples came first, and a
//! tuple's inserter appends before it commits or aborts). After `ROUNDS_UNLOCKED` rounds the
//! last one runs under the lock, so VACUUM ends even under a stream of merges.
//!
//! `amvacuumcleanup` then writes the pending list as a run and merges runs as the policy
//! says (as GIN folds its pending list in on VACUUM), recycles garbage no snapshot can read
//! any more, and sweeps the index for pages nothing owns (left by a merge a crash
//! interrupted).

use super::build::item_pointer;
use super::codes;
use super::merge::{self, MergeLock};
use super::meta;
use super::page::{self, Kind, Locked, Xlog, META_BLOCK};
use super::pause;
use super::registry;
use super::run;
use super::vacuum_delay_point;
use neardup_core::search::index_page::{
    self, rows_of_columns, write_columns, Dead, LeafLayout, List, Meta, Run, Tid, NO_BLOCK,
};
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;

/// Rounds VACUUM makes without the merge lock before it takes the lock for the last one.
const ROUNDS_UNLOCKED: u32 = 8;

/// A chain of pages holding TIDs, as VACUUM cleans it once: identified by what a merge
/// changes when it publishes a new one.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Chain {
    /// The leaves of tree `tree` of run `owner`, from `first_leaf`; `counts_rows` if the
    /// tree is a part of table 0, whose entries the run's row count counts.
    Table {
        owner: u32,
        tree: u16,
        first_leaf: u32,
        counts_rows: bool,
    },
    /// The NULL rows of run `owner`.
    Nulls { owner: u32, head: u32 },
    /// A pending list (open or sealed): its pages only ever grow at the tail, with entries
    /// that are not dead to this VACUUM.
    List { id: u32, head: u32 },
}

/// The chains a metapage of `index` names.
fn chains(index: pg_sys::Relation, m: &Meta) -> Vec<Chain> {
    let mut out = Vec::new();
    for r in &m.runs {
        let parts = codes::parts(index, m, r);
        for (t, tree) in r.trees.iter().enumerate() {
            if tree.first_leaf != NO_BLOCK {
                out.push(Chain::Table {
                    owner: r.id,
                    tree: t as u16,
                    first_leaf: tree.first_leaf,
                    counts_rows: parts.table_of(t) == 0,
                });
            }
        }
        if r.nulls_head != NO_BLOCK {
            out.push(Chain::Nulls {
                owner: r.id,
                head: r.nulls_head,
            });
        }
    }
    for list in lists(m) {
        if list.head != NO_BLOCK {
            out.push(Chain::List {
                id: list.id,
                head: list.head,
            });
        }
    }
    out
}

#[pg_guard]
pub unsafe extern "C-unwind" fn ambulkdelete(
    info: *mut pg_sys::IndexVacuumInfo,
    stats: *mut pg_sys::IndexBulkDeleteResult,
    callback: pg_sys::IndexBulkDeleteCallback,
    callback_state: *mut std::ffi::c_void,
) -> *mut pg_sys::IndexBulkDeleteResult {
    // SAFETY: standard AM protocol; the callback is PostgreSQL's.
    unsafe {
        let index = (*info).index;
        if !meta::maintained(index) {
            return stats;
        }
        let stats = stats_or_new(stats);
        let callback = callback.expect("bulk delete callback");
        let mut is_dead = |tid: Tid| {
            let mut ip = item_pointer(tid);
            callback(&mut ip, callback_state)
        };
        // What each chain kept, by chain.
        let mut done: HashMap<Chain, u64> = HashMap::new();
        let mut removed = 0u64;
        let mut round = 0;
        let rows = loop {
            let mut todo = new_chains(index, &meta::read(index), &done);
            let lock = if todo.is_empty() || round >= ROUNDS_UNLOCKED {
                pause::at("vacuum_pass");
                let lock = MergeLock::wait(index);
                todo = new_chains(index, &meta::read(index), &done);
                if !todo.is_empty() && round < ROUNDS_UNLOCKED {
                    continue;
                }
                Some(lock)
            } else {
                None
            };
            for chain in todo {
                let (kept, gone) = compact_chain(index, chain, &mut is_dead);
                removed += gone;
                done.insert(chain, kept);
            }
            round += 1;
            if lock.is_some() {
                drop_empty_runs(index, &done);
                // Counted under the lock: no merge recycles the pages meanwhile.
                break count_rows(index, &meta::read(index));
            }
        };
        (*stats).tuples_removed += removed as f64;
        (*stats).num_index_tuples = rows as f64;
        (*stats).num_pages = blocks(index);
        stats
    }
}

/// The chains of `m` VACUUM has not cleaned yet.
fn new_chains(index: pg_sys::Relation, m: &Meta, done: &HashMap<Chain, u64>) -> Vec<Chain> {
    chains(index, m)
        .into_iter()
        .filter(|c| !done.contains_key(c))
        .collect()
}

/// Records as garbage the runs VACUUM left with no row at all (only pages), unless a merge
/// table by table is moving them (its inputs may have no row left in table 0 by design).
/// The caller holds the merge lock.
fn drop_empty_runs(index: pg_sys::Relation, done: &HashMap<Chain, u64>) {
    let m = meta::read(index);
    let no_nulls = |r: &Run| {
        r.nulls_head == NO_BLOCK
            || done.get(&Chain::Nulls {
                owner: r.id,
                head: r.nulls_head,
            }) == Some(&0)
    };
    let empty: Vec<u32> = m
        .runs
        .iter()
        .filter(|r| r.rows == 0 && no_nulls(r))
        .filter(|r| !m.in_merge(r.id))
        .map(|r| r.id)
        .collect();
    if empty.is_empty() {
        return;
    }
    let dead = m
        .runs
        .iter()
        .filter(|r| empty.contains(&r.id))
        .cloned()
        .map(Dead::Run)
        .collect();
    registry::publish(index, dead, Vec::new(), |m| {
        m.runs.retain(|r| !empty.contains(&r.id))
    });
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amvacuumcleanup(
    info: *mut pg_sys::IndexVacuumInfo,
    stats: *mut pg_sys::IndexBulkDeleteResult,
) -> *mut pg_sys::IndexBulkDeleteResult {
    // SAFETY: standard AM protocol.
    unsafe {
        if (*info).analyze_only {
            return stats;
        }
        let index = (*info).index;
        if !meta::maintained(index) {
            return stats;
        }
        let had_stats = !stats.is_null();
        let stats = stats_or_new(stats);
        let _lock = MergeLock::wait(index);
        merge::flush_and_merge(index);
        (*stats).pages_free = merge::sweep(index);
        if !had_stats {
            (*stats).num_index_tuples = count_rows(index, &meta::read(index)) as f64;
        }
        (*stats).num_pages = blocks(index);
        stats
    }
}

fn blocks(index: pg_sys::Relation) -> u32 {
    // SAFETY: the index is open.
    unsafe { pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM) }
}

unsafe fn stats_or_new(
    stats: *mut pg_sys::IndexBulkDeleteResult,
) -> *mut pg_sys::IndexBulkDeleteResult {
    if stats.is_null() {
        unsafe { pg_sys::palloc0(std::mem::size_of::<pg_sys::IndexBulkDeleteResult>()) as *mut _ }
    } else {
        stats
    }
}

/// The pending lists: the open one and the sealed one, if any.
fn lists(m: &Meta) -> impl Iterator<Item = &List> {
    [&m.pending, &m.sealed].into_iter().filter(|l| l.id != 0)
}

/// Removes the dead entries from every page of `chain`; returns how many entries remain
/// and how many went. The walk ends early at a page that is no longer the chain's (merged
/// away and reused since VACUUM read the metapage: its entries are in the run that
/// replaced it, which VACUUM cleans in a later round).
fn compact_chain(
    index: pg_sys::Relation,
    chain: Chain,
    dead: &mut impl FnMut(Tid) -> bool,
) -> (u64, u64) {
    let (kind, owner, head, counted) = match chain {
        Chain::Table {
            owner,
            first_leaf,
            counts_rows,
            ..
        } => (Kind::Table, owner, first_leaf, counts_rows.then_some(owner)),
        Chain::Nulls { owner, head } => (Kind::Pending, owner, head, None),
        Chain::List { id, head } => (Kind::Pending, id, head, None),
    };
    let (mut kept, mut gone) = (0, 0);
    let mut block = head;
    let size = codes::entry_size(index);
    while block != NO_BLOCK {
        match compact(index, block, (kind, owner, size), dead, counted) {
            Some((k, g, next)) => {
                kept += k;
                gone += g;
                block = next;
            }
            None => break,
        }
    }
    (kept, gone)
}

/// Removes the entries `dead` names from one page, if it is still a page of `kind` owned by
/// `owner` (entries of `size` bytes); returns how many remain, how many went, and the next
/// block. For a page of a tree of table 0 of run `counted`, the run's row count in the
/// metapage goes down in the same WAL record, so that it stays true if VACUUM stops halfway.
fn compact(
    index: pg_sys::Relation,
    block: u32,
    (kind, owner, size): (Kind, u32, usize),
    dead: &mut impl FnMut(Tid) -> bool,
    counted: Option<u32>,
) -> Option<(u64, u64, u32)> {
    // A page's layout (pending pages hold rows) and the heap TIDs of its entries, in order
    // (NULL rows are only on pending pages); called on locked pages of ours.
    let layout = |p: pg_sys::Page| match kind {
        // SAFETY: a locked leaf.
        Kind::Table => unsafe { page::leaf_layout(p) },
        _ => LeafLayout::Rows,
    };
    let tids = |p: pg_sys::Page| {
        // SAFETY: a locked page.
        let contents = unsafe { page::contents(p) };
        (index_page::tids(contents, size, layout(p)))
            .map(Tid::heap)
            .collect::<Vec<_>>()
    };
    // SAFETY: vacuum_delay_point may sleep, and checks for interrupts; no lock of ours is
    // held here.
    unsafe { vacuum_delay_point() };
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let ours = |locked: &Locked| {
        // SAFETY: a locked page of the index.
        unsafe {
            !page::is_new(locked.page())
                && page::kind(locked.page()) == kind
                && page::owner(locked.page()) == owner
        }
    };
    // A look under a share lock first: most pages hold no dead entry, and need neither an
    // exclusive lock nor the metapage's.
    {
        let locked = Locked::read(index, main, block, pg_sys::BUFFER_LOCK_SHARE);
        if !ours(&locked) {
            return None;
        }
        let tids = tids(locked.page());
        // SAFETY: a locked page of ours.
        let next = unsafe { page::next(locked.page()) };
        if !tids.iter().copied().any(&mut *dead) {
            return Some((tids.len() as u64, 0, next));
        }
    }
    // The metapage before the page, as inserts lock them.
    let metapage =
        counted.map(|_| Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_EXCLUSIVE));
    let locked = Locked::read(index, main, block, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    if !ours(&locked) {
        return None;
    }
    // SAFETY: an exclusively locked page of ours.
    let next = unsafe { page::next(locked.page()) };
    let keep: Vec<bool> = tids(locked.page())
        .into_iter()
        .map(|tid| !dead(tid))
        .collect();
    let kept = keep.iter().filter(|&&k| k).count();
    let gone = keep.len() - kept;
    if gone > 0 {
        let mut xlog = Xlog::start(index);
        let copy = xlog.register(&locked, false);
        // SAFETY: GenericXLog copies of the same pages, locked exclusively.
        unsafe {
            let out = page::contents_mut(copy);
            // The entries kept, as rows (a leaf laid out as columns read back into rows),
            // then laid out as the page was.
            let (contents, layout) = (page::contents(locked.page()), layout(locked.page()));
            let rows = match layout {
                LeafLayout::Rows => Cow::Borrowed(contents),
                LeafLayout::Columns => Cow::Owned(rows_of_columns(contents, size)),
            };
            let kept_rows: Vec<u8> = (rows.chunks_exact(size).zip(&keep))
                .filter(|(_, &k)| k)
                .flat_map(|(bytes, _)| bytes.iter().copied())
                .collect();
            let out = &mut out[..kept_rows.len()];
            match layout {
                LeafLayout::Rows => out.copy_from_slice(&kept_rows),
                LeafLayout::Columns => write_columns(&kept_rows, size, out),
            }
            page::set_len(copy, kept * size);
            if let (Some(id), Some(metapage)) = (counted, &metapage) {
                let mut m = meta::decode(metapage.page());
                if let Some(r) = m.runs.iter_mut().find(|r| r.id == id) {
                    r.rows = r.rows.saturating_sub(gone as u64);
                    meta::encode(xlog.register(metapage, false), &m);
                }
            }
        }
        xlog.finish();
    }
    Some((kept as u64, gone as u64, next))
}

/// Rows in the index: the runs' rows (counted by the last VACUUM or merge), their NULL rows
/// and the pending rows.
fn count_rows(index: pg_sys::Relation, m: &Meta) -> u64 {
    let mut rows = m.run_rows();
    let size = codes::entry_size(index);
    let mut count = |owner: u32, head: u32| {
        let mut block = head;
        while block != NO_BLOCK {
            let (entries, next) =
                run::read_pending_page(index, owner, block, |contents| contents.len() / size);
            rows += entries as u64;
            block = next;
        }
    };
    for r in &m.runs {
        count(r.id, r.nulls_head);
    }
    for list in lists(m) {
        count(list.id, list.head);
    }
    rows
}
