//! Writing the pending list as a run, merging runs, and giving their pages back (the
//! protocol, its locks and the page life cycle are in README.md in this folder).
//!
//! One backend at a time does any of this: the *merge lock* is a heavyweight lock on the
//! index's block 0 (as GIN locks its metapage for pending-list cleanup), taken without
//! waiting by an inserter that filled the pending list (it goes on inserting if another
//! backend holds it) and waited for by VACUUM's last steps. A merge reads its inputs under
//! share locks page by page, writes the new run into pages no scan can reach, and then
//! publishes it with one WAL-logged change of the metapage, so lookups and inserts go on
//! throughout.
//!
//! 1. *Seal*: the open pending list becomes the sealed list, which scans still read, and
//!    inserts start a new one (one metapage record).
//! 2. *Write*: the run's pages, owned by a new id and each WAL-logged whole, are written
//!    into free pages or new ones.
//! 3. *Publish*: one record swaps the inputs for the new run in the metapage and records
//!    the inputs in the registry as garbage, stamped with the next transaction id read
//!    under the metapage's lock (`registry::publish`).
//! 4. *Recycle*: garbage older than every snapshot (`GlobalVisCheckRemovableFullXid`, as
//!    nbtree recycles deleted pages; a standby's count with hot_standby_feedback) goes to
//!    the free space map.
//!
//! A crash or an ERROR before 3 leaves pages owned by an id nothing refers to; VACUUM's
//! sweep finds and frees them (`sweep`). The runs to merge are chosen by
//! `neardup_core::search::merge_policy`.

use super::build::layout_for;
use super::codes::{self, by_width};
use super::meta;
use super::options;
use super::page::{self, Kind, META_BLOCK};
use super::pause;
use super::registry::{self, REGISTRY_BLOCK};
use super::run::{self, InUse, PageWriter};
use super::spool::Spool;
use super::vacuum_delay_point;
use neardup_core::search::code_tables::{Code, Tables};
use neardup_core::search::index_page::{Dead, Entry, List, Meta, Rest, Run, Tid, Tree, NO_BLOCK};
use neardup_core::search::merge_policy::merge_from;
use pgrx::pg_sys;

fn merge_lock_mode() -> pg_sys::LOCKMODE {
    pg_sys::ExclusiveLock as pg_sys::LOCKMODE
}

/// The merge lock, held for as long as this lives.
pub struct MergeLock(pg_sys::Relation);

impl MergeLock {
    /// Waits for the lock (VACUUM).
    pub fn wait(index: pg_sys::Relation) -> MergeLock {
        // SAFETY: a lock tag on our own index; the wait is interruptible.
        unsafe { pg_sys::LockPage(index, META_BLOCK, merge_lock_mode()) };
        MergeLock(index)
    }

    /// The lock if no other backend holds it.
    pub fn try_take(index: pg_sys::Relation) -> Option<MergeLock> {
        // SAFETY: as in `wait`, without waiting.
        unsafe { pg_sys::ConditionalLockPage(index, META_BLOCK, merge_lock_mode()) }
            .then(|| MergeLock(index))
    }
}

impl Drop for MergeLock {
    fn drop(&mut self) {
        // SAFETY: taken in `wait` or `try_take`. While an ERROR unwinds, transaction abort
        // releases it too; releasing first is harmless.
        unsafe { pg_sys::UnlockPage(self.0, META_BLOCK, merge_lock_mode()) };
    }
}

/// Writes the pending list as a run (and merges) unless another backend is at it; returns
/// whether it did.
pub fn try_flush(index: pg_sys::Relation) -> bool {
    let Some(_lock) = MergeLock::try_take(index) else {
        return false;
    };
    flush_and_merge(index);
    true
}

/// Recycles what it can, writes the pending list as a run and merges runs until the policy
/// is satisfied. The caller holds the merge lock.
pub fn flush_and_merge(index: pg_sys::Relation) {
    flush_and_merge_until(index, &|| false);
}

/// `flush_and_merge`, stopping between the tables of a merge table by table and between
/// merges once `stop` says so (the background worker stops for a backend that waits for a
/// lock it holds); returns false if it stopped. A merge stopped between tables leaves a
/// consistent index, which the next merge finishes (as after a crash).
pub fn flush_and_merge_until(index: pg_sys::Relation, stop: &dyn Fn() -> bool) -> bool {
    by_width!(index, L => flush_and_merge_as::<L>(index, stop))
}

/// `flush_and_merge_until` of an index of layout `L`.
fn flush_and_merge_as<L: Tables>(index: pg_sys::Relation, stop: &dyn Fn() -> bool) -> bool {
    let m = meta::read(index);
    if m.merging != 0 {
        if m.runs.iter().any(|r| r.id == m.merging) {
            // A merge table by table that an ERROR or a crash interrupted after it
            // published a tree: finish it. The pages it had written of the next tree carry
            // the same owner and tree as those it is about to write, and would look in use
            // once that tree is published: stamp them free first.
            release_unwritten_tables(index, &m);
            if !continue_by_table::<L>(index, m.merging, stop) {
                return false;
            }
        } else {
            // Interrupted before it published anything: its pages are nobody's now, and
            // VACUUM's sweep frees them.
            meta::update(index, |m| {
                m.merging = 0;
                m.merge_inputs.clear();
            });
        }
    }
    registry::recycle(index);
    seal(index);
    let done = merge_while_needed::<L>(index, Goal::Policy, stop);
    refill_spare::<L::Rest>(index);
    done
}

/// What a background worker does with idle time: once inserts have stopped, merges the
/// pending list and every run into one, as a fresh build would leave the index, so that
/// lookups probe one run. Only when the smaller runs and the pending rows hold at least
/// `1 / COMPACT_FRACTION` of the largest run's rows, which bounds the rewriting: a row of
/// the largest run is rewritten once per that many new rows. Below that, if there are
/// several smaller runs, or one and pending rows, it folds them into one run beside the
/// largest (rewriting only those rows), so that lookups probe two runs and no pending rows.
/// A pending list under its limit beside the largest run alone stays as it is: comparing
/// its rows costs a lookup less than probing the tables of a run of them. Stops as
/// `flush_and_merge_until` does; returns false if it stopped.
pub fn compact_until(index: pg_sys::Relation, stop: &dyn Fn() -> bool) -> bool {
    by_width!(index, L => compact_as::<L>(index, stop))
}

/// `compact_until` of an index of layout `L`.
fn compact_as<L: Tables>(index: pg_sys::Relation, stop: &dyn Fn() -> bool) -> bool {
    pause::at("compaction");
    let m = meta::read(index);
    let limit = options::of(index).pending_limit as u64;
    let pending = |m: &Meta| m.pending.row_capacity(Entry::<L::Rest>::SIZE);
    if (m.merging != 0 || m.sealed.id != 0 || pending(&m) >= limit)
        && !flush_and_merge_as::<L>(index, stop)
    {
        return false;
    }
    let m = meta::read(index);
    let largest = m.runs.iter().map(|r| r.rows).max().unwrap_or(0);
    let rest = m.run_rows() + pending(&m) - largest;
    let goal = if rest == 0 {
        return true;
    } else if rest.saturating_mul(COMPACT_FRACTION) >= largest {
        Goal::OneRun
    } else if m.runs.len() > 2 || (m.runs.len() == 2 && m.pending.pages > 0) {
        Goal::TwoRuns
    } else {
        return true;
    };
    registry::recycle(index);
    seal(index);
    let done = merge_while_needed::<L>(index, goal, stop);
    refill_spare::<L::Rest>(index);
    done
}

/// See `compact_until`. A second run costs a lookup a leaf per table whose prefix it holds
/// (its root's prefix bitmap spares the others): measured at 2.4 M rows, a second run of
/// 36 k rows (which holds two thirds of the 15-bit prefixes) made 50 lookups 1.32–1.38× a
/// fresh index's. So compaction waits only for a little: a row of the largest run is
/// rewritten at most once per 1/128 of its rows inserted, and only with time the inserts
/// left idle.
const COMPACT_FRACTION: u64 = 128;

/// Seals the open pending list if it has rows and no list is sealed.
fn seal(index: pg_sys::Relation) {
    let m = meta::read(index);
    if m.sealed.id == 0 && m.pending.pages > 0 {
        meta::update(index, |m| {
            m.sealed = m.pending;
            m.pending = List::empty(m.take_id());
        });
        pause::at("after_seal");
    }
}

/// How far `merge_while_needed` merges.
#[derive(Clone, Copy, PartialEq)]
enum Goal {
    /// As the merge policy says.
    Policy,
    /// The largest run and at most one other (and no sealed list).
    TwoRuns,
    /// One run.
    OneRun,
}

/// Merges until `goal` is reached (true), or until `stop` (false).
fn merge_while_needed<L: Tables>(
    index: pg_sys::Relation,
    goal: Goal,
    stop: &dyn Fn() -> bool,
) -> bool {
    loop {
        if stop() {
            return false;
        }
        let m = meta::read(index);
        let sealed = (m.sealed.id != 0).then(|| read_list(index, &m.sealed));
        let mut sizes: Vec<(u64, Option<usize>)> = m
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.rows, Some(i)))
            .collect();
        if let Some(s) = &sealed {
            sizes.push((s.rows.len() as u64, None));
        }
        sizes.sort_by_key(|s| std::cmp::Reverse(s.0));
        let counts: Vec<u64> = sizes.iter().map(|s| s.0).collect();
        let from = if goal == Goal::OneRun || crowded::<L>(index, &m) {
            // Compacting, or the metapage has room for few more runs: all merge into one.
            Some(0).filter(|_| sizes.len() > 1)
        } else if goal == Goal::TwoRuns && sizes.len() > 2 {
            // Everything after the largest merges into one.
            Some(1)
        } else {
            merge_from(&counts)
        };
        let chosen: Vec<(u64, Option<usize>)> = match (from, &sealed) {
            (Some(from), _) => sizes[from..].to_vec(),
            (None, Some(s)) => vec![(s.rows.len() as u64, None)],
            (None, None) => return true,
        };
        let inputs: Vec<Run> = chosen
            .iter()
            .filter_map(|c| c.1)
            .map(|i| m.runs[i].clone())
            .collect();
        let with_sealed = chosen.iter().any(|c| c.1.is_none());
        let rows: u64 = chosen.iter().map(|c| c.0).sum();
        let done = if with_sealed && (inputs.is_empty() || rows <= SMALL_MERGE) {
            merge::<L>(index, &m, inputs, sealed)
        } else if with_sealed {
            // A large merge goes table by table, without the sealed list: write that alone.
            merge::<L>(index, &m, Vec::new(), sealed)
        } else {
            let layout: L = run_layout(index, m.max_distance, rows, m.run_rows());
            // Runs of an older format (one tree per table), or cut for another size of a
            // wide index, merge whole, once.
            let trees = meta::new_trees(&layout);
            if inputs
                .iter()
                .all(|r| r.blocks == layout.blocks() && r.trees.len() == trees)
            {
                match merge_by_table::<L>(index, &m, &inputs, stop) {
                    Some(finished) => finished,
                    None => return false,
                }
            } else {
                merge::<L>(index, &m, inputs, None)
            }
        };
        if !done {
            return true;
        }
    }
}

/// The layout of a run of `rows` rows written now, into an index that then holds
/// `index_rows`. A wide code's run is cut for the whole index's rows: runs written while the
/// index is about one size share their cut, so they merge table by table. Cut for its own
/// rows, a pending list's run (16 substrings of PDQ at 8 k rows) differs from a large run's
/// (13 at 1 M), and every merge into the large run rewrote it whole, needing room for a
/// second copy of it: the index stayed twice the size of a fresh one. 64-bit runs are laid
/// out for their own rows.
fn run_layout<L: Tables>(
    index: pg_sys::Relation,
    max_distance: u32,
    rows: u64,
    index_rows: u64,
) -> L {
    let rows = if codes::words(index) == 1 {
        rows
    } else {
        rows.max(index_rows)
    };
    layout_for(index, rows, max_distance)
}

/// Whether the metapage lacks room for two more runs as large as any the index may write
/// (a run from the pending list and a merge's output): past that, merges take every run,
/// so the metapage never overflows whatever the options and row counts.
fn crowded<L: Tables>(index: pg_sys::Relation, m: &Meta) -> bool {
    let rows = m.run_rows()
        + m.pending.row_capacity(Entry::<L::Rest>::SIZE)
        + m.sealed.row_capacity(Entry::<L::Rest>::SIZE);
    let trees = m
        .runs
        .iter()
        .map(|r| r.trees.len())
        .chain([meta::new_trees(&layout_for::<L>(
            index,
            rows,
            m.max_distance,
        ))])
        .max()
        .unwrap_or(0);
    let mut after = m.clone();
    for _ in 0..2 {
        after.runs.push(Run {
            id: 0,
            blocks: 0,
            rows: 0,
            nulls_head: NO_BLOCK,
            nulls_pages: 0,
            trees: vec![Tree::EMPTY; trees],
        });
        after.merge_inputs.push(0);
    }
    !meta::fits(&after)
}

/// Merges up to this many rows write the new run whole, with the sealed list; larger ones go
/// table by table (`merge_by_table`), so that the index needs room for one more table, not
/// one more run.
const SMALL_MERGE: u64 = 65536;

/// The rows of a pending list: codes, and the TIDs of NULL ones.
struct ListRows<P: Rest> {
    list: List,
    rows: Vec<(Code<P>, Tid)>,
    nulls: Vec<Tid>,
}

fn read_list<P: Rest>(index: pg_sys::Relation, list: &List) -> ListRows<P> {
    let mut out = ListRows {
        list: *list,
        rows: Vec::new(),
        nulls: Vec::new(),
    };
    run::for_each_pending(index, list.id, list.head, |e: Entry<P>| {
        if e.is_null() {
            out.nulls.push(e.heap_tid());
        } else {
            out.rows.push(((e.key, e.rest), e.tid));
        }
    });
    out
}

/// Merges `inputs` and `sealed` into one run and publishes it; false if the metapage has no
/// room for the result (it waits for the next merge, which takes more runs).
fn merge<L: Tables>(
    index: pg_sys::Relation,
    m: &Meta,
    inputs: Vec<Run>,
    sealed: Option<ListRows<L::Rest>>,
) -> bool {
    let sealed_rows = sealed.as_ref().map_or(0, |s| s.rows.len() as u64);
    let rows: u64 = inputs.iter().map(|r| r.rows).sum::<u64>() + sealed_rows;
    let layout: L = run_layout(index, m.max_distance, rows, m.run_rows() + sealed_rows);
    let mut after = m.clone();
    after.runs.retain(|r| !inputs.iter().any(|i| i.id == r.id));
    after.runs.push(Run {
        id: 0,
        blocks: layout.blocks(),
        rows,
        nulls_head: 0,
        nulls_pages: 0,
        trees: vec![Tree::EMPTY; meta::new_trees(&layout)],
    });
    if !meta::fits(&after) {
        return false;
    }
    // The id is recorded before any page carries it: ids are never given twice. It is
    // also named as the merge in progress (for monitoring, and so that the next merge
    // knows an interrupted one), unless this writes a pending list between the tables of
    // a merge table by table, which keeps that name.
    let mut id = 0;
    let named = m.merging == 0;
    meta::update(index, |m| {
        id = m.take_id();
        if named {
            m.merging = id;
        }
    });
    let mut out = PageWriter::for_merge(index);

    let mut nulls: Vec<Tid> = Vec::new();
    for r in &inputs {
        run::for_each_pending(index, r.id, r.nulls_head, |e: Entry<L::Rest>| {
            nulls.push(e.heap_tid())
        });
    }
    let no_rows = Vec::new();
    let (sealed_rows, sealed_list) = match &sealed {
        Some(s) => {
            nulls.extend_from_slice(&s.nulls);
            (&s.rows, Some(s.list))
        }
        None => (&no_rows, None),
    };
    // SAFETY: a GUC of this backend, read on its only thread.
    let budget = unsafe { pg_sys::maintenance_work_mem }.max(64) as u64 * 1024;
    // Bytes per row of an in-memory merge: one table's entry and the sort's scratch.
    let bytes_per_row = (std::mem::size_of::<Entry<L::Rest>>() * 3 / 2) as u64;
    let new_run = if rows * bytes_per_row <= budget {
        run::write_run(&mut out, id, &layout, &nulls, |t, emit| {
            for entry in in_memory_table(index, m, &inputs, sealed_rows, &layout, t) {
                emit(entry);
            }
        })
    } else {
        let mut spool = Spool::new();
        for_each_row::<L>(index, m, &inputs, sealed_rows, |code, tid| {
            spool.push(code, tid, |_| layout.clone())
        });
        run::write_run(&mut out, id, &layout, &nulls, |t, emit| {
            spool.sorted_table(&layout, t, &mut *emit)
        })
    };
    pause::at("before_publish");
    let mut dead: Vec<Dead> = inputs.iter().cloned().map(Dead::Run).collect();
    dead.extend(sealed_list.map(Dead::List));
    registry::publish(index, dead, Vec::new(), |m| {
        if named {
            m.merging = 0;
        }
        m.runs.retain(|r| !inputs.iter().any(|i| i.id == r.id));
        if new_run.rows > 0 || new_run.nulls_pages > 0 {
            m.runs.push(new_run);
        }
        m.runs.sort_by_key(|r| std::cmp::Reverse(r.rows));
        if sealed_list.is_some() {
            m.sealed = List::empty(0);
        }
    });
    pause::at("before_recycle");
    registry::recycle(index);
    true
}

/// Merges runs of one layout table by table, and each table part by part (`table_parts`):
/// each tree of the new run is a streaming merge of the inputs' same tree (already sorted:
/// no sort, a page per input in memory), and is published as soon as it is written, the
/// inputs' copies of it becoming garbage. Lookups stay exact in between: each key of each
/// table of each row is in exactly one run's tree, and a lookup reports a row only from its
/// owner table. Between trees, a pending list past its limit is written as a run, so that
/// inserts do not wait for the whole merge.
/// Returns whether it ran (false: no room in the metapage), or `None` if `stop` stopped it
/// between tables.
fn merge_by_table<L: Tables>(
    index: pg_sys::Relation,
    m: &Meta,
    inputs: &[Run],
    stop: &dyn Fn() -> bool,
) -> Option<bool> {
    let mut after = m.clone();
    after.merge_inputs = inputs.iter().map(|r| r.id).collect();
    after.runs.push(Run {
        trees: vec![Tree::EMPTY; inputs[0].trees.len()],
        ..inputs[0].clone()
    });
    if !meta::fits(&after) {
        return Some(false);
    }
    let mut id = 0;
    meta::update(index, |m| {
        id = m.take_id();
        m.merging = id;
        m.merge_inputs = inputs.iter().map(|r| r.id).collect();
    });
    continue_by_table::<L>(index, id, stop).then_some(true)
}

/// Writes and publishes the trees the merge `id` (recorded in the metapage) has not written
/// yet, one at a time (each a part of a table: `table_parts`); false if `stop` stopped it
/// between two trees.
fn continue_by_table<L: Tables>(index: pg_sys::Relation, id: u32, stop: &dyn Fn() -> bool) -> bool {
    loop {
        let m = meta::read(index);
        let inputs: Vec<&Run> = m
            .runs
            .iter()
            .filter(|r| m.merge_inputs.contains(&r.id))
            .collect();
        let trees = inputs.first().map_or(0, |r| r.trees.len());
        let next = (0..trees).find(|&t| inputs.iter().any(|r| r.trees[t] != Tree::EMPTY));
        let started = m.runs.iter().any(|r| r.id == id);
        let Some(t) = next.filter(|_| !inputs.is_empty()) else {
            meta::update(index, |m| {
                let inputs = std::mem::take(&mut m.merge_inputs);
                m.runs.retain(|r| !inputs.contains(&r.id));
                m.merging = 0;
            });
            return true;
        };
        // The trees of table 0 carry the rows' count: each moves its rows to the new run.
        let parts = meta::parts(&meta::layout::<L>(&m, inputs[0]), inputs[0]);
        let table_zero = parts.table_of(t) == 0;
        let mut out = PageWriter::for_merge(index);
        let mut tree = run::TreeWriter::<L::Rest>::new(id, t as u16);
        // Counted, not taken from the inputs' counts (see `run::write_run`).
        let mut written = 0u64;
        let mut moved = vec![0u64; inputs.len()];
        run::merge_sorted(index, &inputs, t, |input, entry| {
            tree.push(&mut out, entry);
            written += 1;
            moved[input] += 1;
        });
        let tree = tree.finish(&mut out);
        let nulls = (!started).then(|| {
            let mut nulls = Vec::new();
            for r in &inputs {
                run::for_each_pending(index, r.id, r.nulls_head, |e: Entry<L::Rest>| {
                    nulls.push(e.heap_tid())
                });
            }
            run::write_nulls::<L::Rest>(&mut out, id, &nulls)
        });
        // What each input gives up: its tree t, and with the first tree its NULL rows.
        let retired: Vec<Dead> = inputs
            .iter()
            .map(|r| {
                let mut retired = Run {
                    rows: 0,
                    nulls_head: NO_BLOCK,
                    nulls_pages: 0,
                    trees: vec![Tree::EMPTY; r.trees.len()],
                    ..(*r).clone()
                };
                retired.trees[t] = r.trees[t];
                if nulls.is_some() {
                    retired.nulls_head = r.nulls_head;
                    retired.nulls_pages = r.nulls_pages;
                }
                retired
            })
            .filter(|r| r.trees[t] != Tree::EMPTY || r.nulls_head != NO_BLOCK)
            .map(Dead::Run)
            .collect();
        let moved: Vec<(u32, u64)> = inputs.iter().map(|r| r.id).zip(moved).collect();
        registry::publish(index, retired, Vec::new(), |m| {
            let merging = m.merge_inputs.clone();
            for r in m.runs.iter_mut().filter(|r| merging.contains(&r.id)) {
                r.trees[t] = Tree::EMPTY;
                if table_zero {
                    let gone = moved.iter().find(|x| x.0 == r.id).map_or(0, |x| x.1);
                    r.rows = r.rows.saturating_sub(gone);
                    if r.trees[parts.trees_of(0)]
                        .iter()
                        .all(|tree| *tree == Tree::EMPTY)
                    {
                        // Its table 0 is all in the new run now: none of its rows is left,
                        // whatever a VACUUM stopped halfway left in its count.
                        r.rows = 0;
                    }
                }
                if nulls.is_some() {
                    // The NULL rows move to the new run with its first tree.
                    r.nulls_head = NO_BLOCK;
                    r.nulls_pages = 0;
                }
            }
            if let Some((nulls_head, nulls_pages)) = nulls {
                let blocks = m
                    .runs
                    .iter()
                    .find(|r| merging.contains(&r.id))
                    .map_or(0, |r| r.blocks);
                m.runs.push(Run {
                    id,
                    blocks,
                    rows: 0,
                    nulls_head,
                    nulls_pages,
                    trees: vec![Tree::EMPTY; trees],
                });
            }
            if let Some(r) = m.runs.iter_mut().find(|r| r.id == id) {
                r.trees[t] = tree;
                if table_zero {
                    r.rows += written;
                }
            }
            m.runs.sort_by_key(|r| std::cmp::Reverse(r.rows));
        });
        pause::at("merge_table");
        // The inputs' copies of the tree are reused at once for the next tree when no scan
        // can read them: the index needs room for one more tree, not one more run.
        registry::recycle(index);
        flush_pending_past_limit::<L>(index);
        if stop() {
            return false;
        }
    }
}

/// Writes the pending list as a run of its own if it holds `pending_limit` rows (between
/// the tables of a long merge, so that inserts never wait for all of it).
fn flush_pending_past_limit<L: Tables>(index: pg_sys::Relation) {
    let limit = options::of(index).pending_limit as u64;
    let m = meta::read(index);
    let rows = m.pending.row_capacity(Entry::<L::Rest>::SIZE);
    if m.sealed.id != 0 || rows < limit {
        return;
    }
    seal(index);
    let m = meta::read(index);
    let sealed = read_list(index, &m.sealed);
    merge::<L>(index, &m, Vec::new(), Some(sealed));
}

/// Table `t` of `layout` over the inputs, sorted. Inputs with the same layout give their
/// table `t`, already sorted, and the stable sort merges those runs in linear passes;
/// others give their table 0, ordered anew.
fn in_memory_table<L: Tables>(
    index: pg_sys::Relation,
    m: &Meta,
    inputs: &[Run],
    sealed: &[(Code<L::Rest>, Tid)],
    layout: &L,
    t: usize,
) -> Vec<Entry<L::Rest>> {
    let ordered = |code: Code<L::Rest>, tid: Tid| {
        let (key, rest) = layout.order(t, code);
        Entry::new(key, rest, tid)
    };
    let mut rows: Vec<Entry<L::Rest>> = Vec::new();
    for r in inputs {
        let own: L = meta::layout(m, r);
        let parts = meta::parts(&own, r);
        if r.blocks == layout.blocks() {
            run::for_each_table_entry(index, r, parts, t, |e| rows.push(e));
        } else {
            run::for_each_table_entry(index, r, parts, 0, |e: Entry<L::Rest>| {
                rows.push(ordered(own.code(0, (e.key, e.rest)), e.tid))
            });
        }
    }
    rows.extend(sealed.iter().map(|&(code, tid)| ordered(code, tid)));
    pgrx::check_for_interrupts!();
    rows.sort_by_key(Entry::order);
    rows
}

/// Every (code, TID) of the inputs.
fn for_each_row<L: Tables>(
    index: pg_sys::Relation,
    m: &Meta,
    inputs: &[Run],
    sealed: &[(Code<L::Rest>, Tid)],
    mut emit: impl FnMut(Code<L::Rest>, Tid),
) {
    for r in inputs {
        let own: L = meta::layout(m, r);
        run::for_each_table_entry(index, r, meta::parts(&own, r), 0, |e: Entry<L::Rest>| {
            emit(own.code(0, (e.key, e.rest)), e.tid)
        });
    }
    sealed.iter().for_each(|&(code, tid)| emit(code, tid));
}

/// Sets free pages aside for the pending list (inserts then reuse space without searching
/// the free space map, where a merge could take the same page).
fn refill_spare<P: Rest>(index: pg_sys::Relation) {
    let m = meta::read(index);
    let per_list =
        options::of(index).pending_limit as usize / (page::CONTENTS / Entry::<P>::SIZE) + 1;
    // Enough for the list to grow to where inserters wait for the merge (see `insert`).
    let want = ((STALL_AFTER_LIMITS as usize + 1) * per_list)
        .min(MAX_SPARE)
        .saturating_sub(m.spare.len());
    let mut out = PageWriter::for_merge(index);
    let blocks: Vec<u32> = (0..want).map_while(|_| out.take_free()).collect();
    if !blocks.is_empty() {
        meta::update(index, |m| {
            for &b in &blocks {
                m.spare.push(b);
                if !meta::fits(m) {
                    // Runs come first; the pages stay in the free space map.
                    m.spare.pop();
                    break;
                }
            }
        });
    }
}

/// A pending list this many times `pending_limit` makes inserters wait for a merge (see
/// `insert::stall`).
pub const STALL_AFTER_LIMITS: u64 = 4;

/// The most spare pages the metapage keeps.
const MAX_SPARE: usize = 256;

/// The pages to look at for reuse: all but the metapage and block 1 (the registry's).
fn reusable_blocks(index: pg_sys::Relation) -> std::ops::Range<u32> {
    // SAFETY: the index is open.
    let blocks =
        unsafe { pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM) };
    REGISTRY_BLOCK + 1..blocks
}

/// Frees the pages of the run `meta.merging` in trees it has not published (what an
/// interrupted merge table by table had written of its next tree), stamping each as free
/// (a WAL-logged page image) so that it cannot pass for a page of the table once written.
fn release_unwritten_tables(index: pg_sys::Relation, meta: &Meta) {
    let Some(run) = meta.runs.iter().find(|r| r.id == meta.merging) else {
        return;
    };
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    // We hold the merge lock, so no merge writes meanwhile.
    for block in reusable_blocks(index) {
        pgrx::check_for_interrupts!();
        let locked = page::Locked::read(index, main, block, pg_sys::BUFFER_LOCK_EXCLUSIVE);
        // SAFETY: a locked page of the index.
        let unwritten = unsafe {
            !page::is_new(locked.page()) && {
                let (owner, tree) = page::usage(locked.page());
                owner == run.id
                    && tree.is_some_and(|t| run.trees.get(t as usize) == Some(&Tree::EMPTY))
            }
        };
        if unwritten {
            let mut xlog = page::Xlog::start(index);
            // SAFETY: the GenericXLog copy of a page nothing refers to.
            unsafe { page::init(xlog.register(&locked, true), page::Role::new(Kind::Free, 0)) };
            xlog.finish();
            drop(locked);
            // SAFETY: a page nothing refers to.
            unsafe { pg_sys::RecordFreeIndexPage(index, block) };
        }
    }
    // SAFETY: the index is open.
    unsafe { pg_sys::IndexFreeSpaceMapVacuum(index) };
}

/// VACUUM's sweep: frees every page that neither the metapage nor the registry counts as in
/// use (left by a merge a crash or an ERROR interrupted, or already free), and takes pages
/// in use out of the free space map (which is not crash-safe: after a crash it may list a
/// page a merge took before); returns the pages free. The caller holds the merge lock, so
/// no merge is writing pages meanwhile; inserters only take spare pages or extend the
/// index, and hold the extension lock until the page they add is locked, so a new page is
/// waited for.
pub fn sweep(index: pg_sys::Relation) -> u32 {
    let in_use = InUse::read(index);
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let mut freed = 0;
    for block in reusable_blocks(index) {
        // SAFETY: may sleep and checks for interrupts; no lock of ours is held here.
        unsafe { vacuum_delay_point() };
        let free = |_: ()| {
            let locked = page::Locked::read(index, main, block, pg_sys::BUFFER_LOCK_SHARE);
            // SAFETY: a locked page of the index.
            unsafe { (!page::is_new(locked.page())).then(|| in_use.is_free(block, locked.page())) }
        };
        let is_free = match free(()) {
            Some(f) => f,
            None => {
                // A new page: maybe one an inserter is adding right now. Once it has the
                // extension lock, such a page is locked by its inserter until initialised.
                // SAFETY: as for Locked::extend.
                unsafe {
                    pg_sys::LockRelationForExtension(index, pg_sys::ExclusiveLock as _);
                    pg_sys::UnlockRelationForExtension(index, pg_sys::ExclusiveLock as _);
                }
                free(()).unwrap_or(true)
            }
        };
        // SAFETY: the index is open; the map is only advice, and every taker checks.
        unsafe {
            if is_free {
                pg_sys::RecordFreeIndexPage(index, block);
                freed += 1;
            } else if pg_sys::GetRecordedFreeSpace(index, block) > 0 {
                pg_sys::RecordUsedIndexPage(index, block);
            }
        }
    }
    // SAFETY: the index is open.
    unsafe { pg_sys::IndexFreeSpaceMapVacuum(index) };
    freed
}
