//! Scans of an index of wide codes (`hash128`, `hash256`): multi-index hashing's lookups
//! in the substring tables of each run (`neardup_core::search::code_tables`).
//!
//! A ball (center, radius r) is cut as each run's tables are (m substrings): a code within
//! r bits of the center agrees within its substring's search radius with the center on one
//! of them (Norouzi et al.'s pigeonhole, `Substrings`). For each substring and each value
//! within that radius of the center's, the table's entries whose key begins with the value
//! are read (a descent, then the leaves of that key range), verified on the whole code
//! (the entry holds it), and reported only from their *witness*, the first substring
//! within its radius: each row once. A run whose probes would read more leaves than its
//! table 0 holds is read whole instead (table 0 only); the runs of a merge table by table
//! are weighed, and read, together (`whole_leaves`). The pending rows are compared one by
//! one.
//!
//! `ORDER BY code <~> q` goes nearest first by widening the radius (MIH's k-nearest
//! search): a pass returns the rows whose distance is in (the last pass's radius, this
//! pass's], sorted; the first pass's radius is the index's `max_distance`, each next one
//! twice the last plus one, until every distance is covered, then the rows whose code is
//! NULL. A pass keeps at most `pass_rows_cap()` rows: one that would hold more is read
//! again over half its band. Once probing would cost more than reading a run whole (a probe
//! weighed as a few leaves read in order), a pass reads every row instead and keeps the
//! nearest few thousand (`Nearest::next_batch`).
//!
//! `code <@@ batch` (no ball in the query): each center of the batch is looked up in turn,
//! a row reported only from the first center whose ball holds it (the batch's own lookup
//! says which), so each row once. A run whose probes for all the centers would read more
//! leaves than its table 0 holds is read whole once, before the centers, with the pending
//! rows.
//!
//! An unordered scan returns its rows a leaf page at a time, as the 64-bit scans do.

use super::cache::{DirectoryPage, MetaPin};
use super::ordered::{pass_rows_cap, FIRST_PASS_ROWS};
use super::{STRATEGY_WITHIN, STRATEGY_WITHIN_BATCH};
use crate::am::meta;
use crate::am::page::Ahead;
use crate::am::run::{self, RecentLeaves};
use crate::wide_codes::batch::{lookup_of, WideBatchLookup};
use neardup_core::search::code_tables::{Code, SubstringTables, Tables};
use neardup_core::search::index_page::{entries, Entry, Leaf, Meta, Rest, Run, Tid, NO_BLOCK};
use neardup_core::search::multi_index::Substrings;
use neardup_core::search::nearest::pass_target;
use neardup_core::search::table_parts::Parts;
use neardup_core::signatures::wide_code::WideCode;
use pgrx::pg_sys;
use std::collections::HashMap;
use std::rc::Rc;

/// A code padded to 256 bits (a 128-bit code in its first two words, the others zero):
/// what `Substrings` cuts, with the same distances.
pub type Padded = WideCode<4>;

fn padded<P: Rest>(key: u64, rest: &P) -> Padded {
    let mut words = [0u64; 4];
    words[0] = key;
    words[1..1 + P::WORDS].copy_from_slice(rest.words());
    WideCode(words)
}

/// What a scan of a wide index looks for, from its scan keys.
#[derive(Default, Clone)]
pub struct WideQuery {
    balls: Vec<(Padded, u32)>,
    /// Rows must be within the radius of some center of each batch.
    batches: Vec<Rc<WideBatchLookup>>,
    /// The ORDER BY queries; `None` for a NULL argument (every distance NULL).
    pub order_by: Vec<Option<Padded>>,
    /// A NULL argument or a negative radius: a strict operator matches nothing.
    nothing: bool,
}

/// The words of a wide code datum (`words` of them), padded.
///
/// # Safety
/// `datum` points to a code of `words` words.
unsafe fn code_at(datum: pg_sys::Datum, words: usize) -> Padded {
    let mut out = [0u64; 4];
    // SAFETY: as the caller promises.
    unsafe {
        let p = datum.cast_mut_ptr::<u64>();
        for (i, w) in out.iter_mut().enumerate().take(words) {
            *w = p.add(i).read_unaligned();
        }
    }
    WideCode(out)
}

impl WideQuery {
    /// The query of a scan's keys, for codes of `words` words. A wide ball is the center's
    /// words, then the radius (`wide_codes::ball`).
    ///
    /// # Safety
    /// The keys are those of a scan of a wide index of `words`-word codes.
    pub unsafe fn of(
        keys: &[pg_sys::ScanKeyData],
        orderbys: &[pg_sys::ScanKeyData],
        words: usize,
    ) -> WideQuery {
        let mut query = WideQuery::default();
        for key in keys {
            if key.sk_flags & pg_sys::SK_ISNULL as i32 != 0 {
                query.nothing = true;
            } else if key.sk_strategy == STRATEGY_WITHIN {
                // SAFETY: a ball of this width (the operator class's strategy 1).
                let (center, radius) = unsafe {
                    let radius = key
                        .sk_argument
                        .cast_mut_ptr::<u8>()
                        .add(8 * words)
                        .cast::<i32>()
                        .read_unaligned();
                    (code_at(key.sk_argument, words), radius)
                };
                match u32::try_from(radius) {
                    Ok(radius) => query.balls.push((center, radius)),
                    Err(_) => query.nothing = true,
                }
            } else if key.sk_strategy == STRATEGY_WITHIN_BATCH {
                // SAFETY: a batch of this width (the operator class's strategy 3).
                let batch = unsafe { lookup_of(key.sk_argument, words) };
                query.batches.push(Rc::new(batch));
            }
        }
        query.order_by = orderbys
            .iter()
            // SAFETY: a code of this width (strategy 2's right argument).
            .map(|key| {
                (key.sk_flags & pg_sys::SK_ISNULL as i32 == 0)
                    .then(|| unsafe { code_at(key.sk_argument, words) })
            })
            .collect();
        query
    }

    fn accepts(&self, code: &Padded) -> bool {
        self.balls.iter().all(|(c, r)| c.hamming(code) <= *r)
            && self
                .batches
                .iter()
                .all(|b| b.first_containing(code).is_some())
    }
}

/// A row a scan returns: its TID and code (`None`: NULL).
#[derive(Clone, Copy, Debug)]
pub struct Found {
    pub tid: Tid,
    pub code: Option<Padded>,
}

/// The index as a scan read it: the metapage (block 1 pinned), each run's tables, and what
/// it read for its rescans under an MVCC snapshot (the directory pages, the pending rows).
pub struct WideCache<P: Rest> {
    pin: MetaPin,
    meta: Meta,
    layouts: Vec<SubstringTables<P>>,
    parts: Vec<Parts>,
    directory: HashMap<u32, DirectoryPage>,
    pending: Option<Vec<Found>>,
}

impl<P: Rest> WideCache<P> {
    pub fn new(index: pg_sys::Relation) -> WideCache<P> {
        let (pin, meta) = MetaPin::read(index);
        let (layouts, parts) = meta::layouts(&meta);
        WideCache {
            pin,
            meta,
            layouts,
            parts,
            directory: HashMap::new(),
            pending: None,
        }
    }

    pub fn release(&mut self) {
        self.pin.release();
    }

    pub fn max_distance(&self) -> u32 {
        self.meta.max_distance
    }

    /// The pending rows (open and sealed lists), read at the first use.
    fn pending(&mut self, index: pg_sys::Relation) -> &[Found] {
        let meta = &self.meta;
        self.pending.get_or_insert_with(|| {
            let mut rows = Vec::new();
            for list in [&meta.pending, &meta.sealed]
                .into_iter()
                .filter(|l| l.id != 0)
            {
                run::for_each_pending(index, list.id, list.head, |e: Entry<P>| {
                    rows.push(Found {
                        tid: e.heap_tid(),
                        code: (!e.is_null()).then(|| padded(e.key, &e.rest)),
                    })
                });
            }
            rows
        })
    }
}

/// How a lookup reads one run.
enum RunPlan {
    /// Per table, the values of its substring to read; rows reported from their witness.
    Probes {
        cut: Substrings,
        values: Vec<Vec<u32>>,
    },
    /// Table 0 whole.
    Whole,
    /// Not read by this lookup (a batch's other lookup reads it).
    Skip,
}

/// Where a lookup stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Run `run`, table `table`, the `value`-th value to read; the next leaf of it
    /// (`None` before its descent).
    Table {
        run: usize,
        table: usize,
        value: usize,
        leaf: Option<u32>,
    },
    /// The NULL rows of run `run` (a lookup of every row), from `block`.
    Nulls {
        run: usize,
        block: Option<u32>,
    },
    Pending,
    Done,
}

/// The rows within `radius` of `center` that the query accepts (every row, NULL ones too,
/// when `center` is `None`), found a leaf page at a time.
pub struct Lookup {
    center: Option<Padded>,
    radius: u32,
    plans: Vec<RunPlan>,
    /// Whether it reads the NULL rows (a lookup of every row) and the pending rows.
    nulls: bool,
    pending: bool,
    /// For a lookup of a batch's center `i`: report only rows whose first center is `i`.
    witness: Option<(Rc<WideBatchLookup>, usize)>,
    step: Step,
    /// For a pass that reads every row: the buffers where the backend last found the
    /// leaves it reads.
    recent: Option<RecentLeaves>,
}

/// Leaves of a run's table 0: what reading the run whole costs.
fn table_leaves(run: &Run, parts: &Parts) -> u64 {
    run.trees[parts.trees_of(0)]
        .iter()
        .map(|t| t.leaves as u64)
        .sum()
}

/// Per run, the leaves of table 0 that reading it whole reads, and so what its probes are
/// weighed against. The runs of a merge table by table share them: between two trees each
/// of their rows has its table 0 in one of them and its other tables maybe in another (an
/// input whose table 0 is all merged holds no leaf of it, but the rest of its tables), so
/// reading one of them whole (table 0) and probing another would miss the rows whose first
/// agreeing substring is in a table the whole read skips. They are read whole together,
/// or probed together, which finds each of their rows once either way.
fn whole_leaves(meta: &Meta, parts: &[Parts]) -> Vec<u64> {
    let own: Vec<u64> = meta
        .runs
        .iter()
        .zip(parts)
        .map(|(run, parts)| table_leaves(run, parts))
        .collect();
    let merging: u64 = meta
        .runs
        .iter()
        .zip(&own)
        .filter(|(run, _)| meta.in_merge(run.id))
        .map(|(_, leaves)| leaves)
        .sum();
    meta.runs
        .iter()
        .zip(own)
        .map(|(run, leaves)| {
            if meta.in_merge(run.id) {
                merging
            } else {
                leaves
            }
        })
        .collect()
}

/// Where every lookup starts: run 0, table 0, before its descent.
const START: Step = Step::Table {
    run: 0,
    table: 0,
    value: 0,
    leaf: None,
};

/// What a probe weighs in leaves read in order when a nearest-first pass chooses between
/// probing its band and reading every row (which keeps the next rows of the order either
/// way). A probe, a descent and a leaf out of the way, costs about four (11,152 probes of a
/// band at 63 bits took about 60 ms, reading the 46,500 leaves of table 0 in order about
/// 70, 10 M uniform codes, bench/wide_codes_10m.sh), and a band that holds too few rows is
/// followed by a pass that reads every row anyway (there, 132 ms in all): twice that.
const PROBE_LEAVES_IN_A_PASS: f64 = 8.0;

/// How a lookup within `radius` of `center` reads each run (whole when `center` is `None`,
/// or when its probes would cost more than its leaves, a probe costing `probe_leaves`);
/// the runs `read` refuses are skipped, not planned.
fn plans<P: Rest>(
    cache: &WideCache<P>,
    center: Option<Padded>,
    radius: u32,
    probe_leaves: f64,
    read: impl Fn(usize) -> bool,
) -> Vec<RunPlan> {
    let bits = SubstringTables::<P>::BITS;
    let whole_leaves = whole_leaves(&cache.meta, &cache.parts);
    cache
        .layouts
        .iter()
        .zip(whole_leaves)
        .enumerate()
        .map(|(i, (layout, leaves))| {
            if !read(i) {
                return RunPlan::Skip;
            }
            let Some(center) = center else {
                return RunPlan::Whole;
            };
            let Ok(cut) = Substrings::new(bits, layout.substrings().count(), radius) else {
                return RunPlan::Whole; // a radius of every code
            };
            // Counted before any is enumerated: far past the radius the tables are cut for,
            // on wide substrings, the probes are beyond counting one by one (32-bit
            // substrings at r = 120 on hash256: 8 times C(32, <= 15), 53 s with no check
            // for interrupts, for a run of 1,000 rows read whole in the end).
            if cut.probe_count() * probe_leaves > leaves as f64 {
                return RunPlan::Whole;
            }
            let mut values = vec![Vec::new(); cut.count() as usize];
            cut.for_each_probe(&center, |k, value| values[k as usize].push(value));
            RunPlan::Probes { cut, values }
        })
        .collect()
}

impl Lookup {
    pub fn new<P: Rest>(cache: &WideCache<P>, center: Option<Padded>, radius: u32) -> Lookup {
        Lookup {
            center,
            radius,
            plans: plans(cache, center, radius, 1.0, |_| true),
            nulls: center.is_none(),
            pending: true,
            witness: None,
            step: START,
            recent: None,
        }
    }

    /// A lookup that reads every run whole (table 0) for the codes within a radius of `q`
    /// that `narrow` may lower as it goes: a nearest-first pass that reads every row.
    fn every_around<P: Rest>(index: pg_sys::Relation, cache: &WideCache<P>, q: Padded) -> Lookup {
        Lookup {
            center: Some(q),
            radius: SubstringTables::<P>::BITS,
            plans: plans(cache, None, 0, 1.0, |_| true),
            nulls: false,
            pending: true,
            witness: None,
            step: START,
            recent: Some(RecentLeaves::take(index)),
        }
    }

    /// From the next page on, reports only rows within `radius` (at most the current one).
    fn narrow(&mut self, radius: u32) {
        self.radius = self.radius.min(radius);
    }

    fn done(&self) -> bool {
        self.step == Step::Done
    }

    /// Adds the next rows to `out` until it holds at least `want` or every row is found;
    /// reads a page (or the pending rows) at a time. Adds nothing only at the end.
    pub fn fill<P: Rest>(
        &mut self,
        index: pg_sys::Relation,
        query: &WideQuery,
        cache: &mut WideCache<P>,
        out: &mut Vec<Found>,
        want: usize,
    ) {
        while out.len() < want && self.step != Step::Done {
            // A page's rows may each be tested against every center of a large batch.
            pgrx::check_for_interrupts!();
            self.step = self.advance(index, query, cache, out);
        }
    }

    fn accepts(&self, query: &WideQuery, code: &Padded) -> bool {
        self.center.is_none_or(|c| c.hamming(code) <= self.radius)
            && query.accepts(code)
            && self
                .witness
                .as_ref()
                .is_none_or(|(batch, i)| batch.first_containing(code) == Some(*i))
    }

    /// Reads one page (or the pending rows) from `self.step`; returns the next step.
    fn advance<P: Rest>(
        &mut self,
        index: pg_sys::Relation,
        query: &WideQuery,
        cache: &mut WideCache<P>,
        out: &mut Vec<Found>,
    ) -> Step {
        let runs = cache.meta.runs.len();
        match self.step {
            Step::Table { run, .. } if run >= runs => {
                if self.nulls {
                    Step::Nulls {
                        run: 0,
                        block: None,
                    }
                } else {
                    Step::Pending
                }
            }
            Step::Table {
                run,
                table,
                value,
                leaf,
            } => {
                let next_run = Step::Table {
                    run: run + 1,
                    table: 0,
                    value: 0,
                    leaf: None,
                };
                let r = &cache.meta.runs[run];
                let (layout, parts) = (&cache.layouts[run], cache.parts[run]);
                match &self.plans[run] {
                    RunPlan::Skip => next_run,
                    RunPlan::Whole => {
                        // Table 0's trees one after the other (`table` counts them), each
                        // from its first leaf.
                        let trees = parts.trees_of(0);
                        let tree = trees.start + table;
                        if tree >= trees.end {
                            return next_run;
                        }
                        let block = leaf.unwrap_or(r.trees[tree].first_leaf);
                        if block == NO_BLOCK {
                            return Step::Table {
                                run,
                                table: table + 1,
                                value: 0,
                                leaf: None,
                            };
                        }
                        // Only the distance is tested on the page, and the near entries
                        // copied off it (a pass nearest first reads every page of the
                        // index and keeps a few rows: copying whole pages cost as much as
                        // reading them); the query's own tests come after, unlocked, as a
                        // batch's test of a row may take long and a buffer lock holds off
                        // the interrupts that would stop it.
                        let read = |leaf: Leaf<P>, next_leaf: Ahead| {
                            let mut near = Vec::new();
                            match self.center {
                                Some(center) => {
                                    let center = layout.order(0, code_of(&center));
                                    let ahead = |line| next_leaf.contents(line);
                                    entries_within(
                                        &leaf,
                                        0,
                                        u64::MAX,
                                        center,
                                        self.radius,
                                        ahead,
                                        |e| near.push(e),
                                    );
                                }
                                None => near.extend(leaf.entries()),
                            }
                            near
                        };
                        let (near, next) = match &mut self.recent {
                            Some(recent) => recent.read_leaf_then_next(index, r.id, block, read),
                            None => {
                                run::read_leaf(index, r.id, block, |leaf| read(leaf, Ahead::NONE))
                            }
                        };
                        for e in near {
                            let code = padded_code(layout, 0, &e);
                            if self.accepts(query, &code) {
                                out.push(Found {
                                    tid: e.tid,
                                    code: Some(code),
                                });
                            }
                        }
                        Step::Table {
                            run,
                            table,
                            value: 0,
                            leaf: Some(next),
                        }
                    }
                    RunPlan::Probes { cut, values } => {
                        if table >= values.len() {
                            return next_run;
                        }
                        let Some(&v) = values[table].get(value) else {
                            return Step::Table {
                                run,
                                table: table + 1,
                                value: 0,
                                leaf: None,
                            };
                        };
                        let next_value = Step::Table {
                            run,
                            table,
                            value: value + 1,
                            leaf: None,
                        };
                        let width = cut.bounds(table as u32).1;
                        let lo = (v as u64) << (64 - width);
                        let hi = lo | (u64::MAX >> width);
                        let block = match leaf {
                            Some(b) => b,
                            None => {
                                let tree = &r.trees[parts.trees_of(table).start + parts.of_key(lo)];
                                let directory = &mut cache.directory;
                                match run::descend(tree, lo, |b, read| {
                                    let page = DirectoryPage::cached(directory, index, b, r.id);
                                    read(&page.contents, page.level)
                                }) {
                                    Some(b) => b,
                                    None => return next_value,
                                }
                            }
                        };
                        if block == NO_BLOCK {
                            return next_value;
                        }
                        let center = self.center.expect("a lookup with probes has a center");
                        let ordered = layout.order(table, code_of(&center));
                        let ((c, leaf_layout), next) =
                            run::read_leaf(index, r.id, block, |leaf: Leaf<P>| {
                                let (c, leaf_layout) = leaf.contents();
                                (c.to_vec(), leaf_layout)
                            });
                        let more = {
                            let leaf = Leaf::<P>::new(&c, leaf_layout);
                            let start = leaf.lower_bound(lo);
                            entries_within(
                                &leaf,
                                start,
                                hi,
                                ordered,
                                self.radius,
                                |_| {},
                                |e: Entry<P>| {
                                    let code = padded_code(layout, table, &e);
                                    if self.accepts(query, &code)
                                        && cut.witness(&center, &code) == Some(table as u32)
                                    {
                                        out.push(Found {
                                            tid: e.tid,
                                            code: Some(code),
                                        });
                                    }
                                },
                            )
                        };
                        if more {
                            Step::Table {
                                run,
                                table,
                                value,
                                leaf: Some(next),
                            }
                        } else {
                            next_value
                        }
                    }
                }
            }
            Step::Nulls { run, block } => {
                let Some(r) = cache.meta.runs.get(run) else {
                    return Step::Pending;
                };
                let block = block.unwrap_or(r.nulls_head);
                if block == NO_BLOCK {
                    return Step::Nulls {
                        run: run + 1,
                        block: None,
                    };
                }
                let ((), next) = run::read_pending_page(index, r.id, block, |c| {
                    out.extend(entries::<P>(c).map(|e| Found {
                        tid: e.heap_tid(),
                        code: None,
                    }))
                });
                Step::Nulls {
                    run,
                    block: Some(next),
                }
            }
            Step::Pending if !self.pending => Step::Done,
            Step::Pending => {
                let all = self.nulls;
                for (i, row) in cache.pending(index).iter().enumerate() {
                    if i % 1024 == 0 {
                        pgrx::check_for_interrupts!();
                    }
                    let keep = match &row.code {
                        Some(code) => self.accepts(query, code),
                        None => all,
                    };
                    if keep {
                        out.push(*row);
                    }
                }
                Step::Done
            }
            Step::Done => Step::Done,
        }
    }
}

/// `Leaf::entries_within`, with the CPU's popcount instruction when it has one (a lookup
/// within 31 bits at 10 M rows tests about 40,000 entries).
fn entries_within<P: Rest>(
    leaf: &Leaf<P>,
    from: usize,
    last_key: u64,
    center: Code<P>,
    radius: u32,
    ahead: impl FnMut(usize),
    emit: impl FnMut(Entry<P>),
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has the instruction the function is compiled for.
        return unsafe { entries_within_popcnt(leaf, from, last_key, center, radius, ahead, emit) };
    }
    leaf.entries_within(from, last_key, center, radius, ahead, emit)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn entries_within_popcnt<P: Rest>(
    leaf: &Leaf<P>,
    from: usize,
    last_key: u64,
    center: Code<P>,
    radius: u32,
    ahead: impl FnMut(usize),
    emit: impl FnMut(Entry<P>),
) -> bool {
    leaf.entries_within(from, last_key, center, radius, ahead, emit)
}

/// A padded code as a table entry's words (the first `1 + P::WORDS`).
fn code_of<P: Rest>(code: &Padded) -> Code<P> {
    (code.0[0], P::from_fn(|i| code.0[1 + i]))
}

/// The code of an entry of table `t`, padded.
fn padded_code<P: Rest>(layout: &SubstringTables<P>, t: usize, e: &Entry<P>) -> Padded {
    let (key, rest) = layout.code(t, (e.key, e.rest));
    padded(key, &rest)
}

/// An unordered scan, or a nearest-first one.
pub enum WideProducer {
    Unordered(Unordered),
    Ordered(Nearest),
}

/// Where a nearest-first scan stands: the distances returned so far are at most `done`
/// (`None` before the first pass); once every distance is covered, the NULL rows remain.
pub struct Nearest {
    done: Option<u32>,
    nulls_returned: bool,
    /// Passes that read every row so far (each keeps twice the rows of the last).
    full_passes: u32,
}

impl Nearest {
    pub fn new() -> Nearest {
        Nearest {
            done: None,
            nulls_returned: false,
            full_passes: 0,
        }
    }

    /// The next pass's rows, sorted by their ORDER BY distances, then TID; empty at the end.
    ///
    /// A pass over the band of distances (`done`, r] probes the tables at radius r: the
    /// first r is `max_distance`, each next one twice the last plus one. Once probing at r
    /// would cost more than reading a run whole (`PROBE_LEAVES_IN_A_PASS`), a pass reads
    /// every row instead, keeping those up to the
    /// distance where about `pass_target` rows are reached (`full_pass`), which costs what
    /// one probe pass at r would and returns rows in bounded memory, however far the
    /// nearest rows are.
    pub fn next_batch<P: Rest>(
        &mut self,
        index: pg_sys::Relation,
        query: &WideQuery,
        cache: &mut WideCache<P>,
    ) -> Vec<Found> {
        let bits = SubstringTables::<P>::BITS;
        let q = query.order_by.first().copied().flatten();
        loop {
            let lo = self.done;
            let Some(q) = q.filter(|_| lo.is_none_or(|d| d < bits)) else {
                if self.nulls_returned {
                    return Vec::new();
                }
                self.nulls_returned = true;
                let rows = null_distances(index, query, cache, q.is_none());
                if rows.is_empty() {
                    continue;
                }
                return rows;
            };
            let hi = match lo {
                None => cache.max_distance().min(bits),
                Some(d) => d.saturating_mul(2).saturating_add(1).min(bits),
            };
            let probe = plans(cache, Some(q), hi, PROBE_LEAVES_IN_A_PASS, |_| true);
            let mut rows = if probe.iter().any(|p| matches!(p, RunPlan::Whole)) {
                let target = pass_target(self.full_passes, FIRST_PASS_ROWS, pass_rows_cap());
                self.full_passes += 1;
                let (rows, upto) = full_pass(index, query, cache, q, lo, target);
                self.done = Some(upto);
                rows
            } else {
                let (rows, upto) = band_pass(index, query, cache, q, lo, hi);
                self.done = Some(upto);
                rows
            };
            if rows.is_empty() {
                continue;
            }
            rows.sort_by_cached_key(|f| {
                let distances: Vec<u32> = query
                    .order_by
                    .iter()
                    .map(|o| match (o, f.code) {
                        (Some(o), Some(c)) => o.hamming(&c),
                        _ => u32::MAX,
                    })
                    .collect();
                (distances, f.tid)
            });
            return rows;
        }
    }
}

/// The rows whose distance is above `lo` (any, for `None`) and at most `hi`, by probes; a
/// band that would hold more than `pass_rows_cap()` rows is read again over its lower half
/// (a band of one distance is read whole, however many rows it holds). Returns them and
/// the distance they reach.
fn band_pass<P: Rest>(
    index: pg_sys::Relation,
    query: &WideQuery,
    cache: &mut WideCache<P>,
    q: Padded,
    lo: Option<u32>,
    mut hi: u32,
) -> (Vec<Found>, u32) {
    let cap = pass_rows_cap();
    let floor = lo.map_or(0, |d| d + 1);
    loop {
        let mut lookup = Lookup::new(cache, Some(q), hi);
        let mut rows = Vec::new();
        let mut full = false;
        while lookup.step != Step::Done {
            lookup.fill(index, query, cache, &mut rows, cap + 1);
            rows.retain(|f| f.code.is_some_and(|c| c.hamming(&q) >= floor));
            if rows.len() > cap && hi > floor {
                full = true;
                break;
            }
        }
        if full {
            hi = floor + (hi - floor) / 2;
            continue;
        }
        return (rows, hi);
    }
}

/// A pass that reads every row once: the rows whose distance is above `lo`, up to the first
/// distance at which they number `target` or more (every row at that distance: a
/// distance shared by more rows than that is returned whole), and the distance reached.
/// The cut-off distance only falls as rows come, so a row at or below the final one is
/// never dropped; the rows kept are cut back to it as they grow.
fn full_pass<P: Rest>(
    index: pg_sys::Relation,
    query: &WideQuery,
    cache: &mut WideCache<P>,
    q: Padded,
    lo: Option<u32>,
    target: usize,
) -> (Vec<Found>, u32) {
    let floor = lo.map_or(0, |d| d + 1);
    let mut upto = SubstringTables::<P>::BITS;
    // Rows at each distance from `floor` to `upto`, and their sum.
    let mut counts = vec![0usize; upto as usize + 1];
    let mut within = 0usize;
    let mut rows: Vec<(u32, Found)> = Vec::new();
    // Cut back at twice the target, or twice what a cut kept (ties at the cut-off distance
    // can keep more): each cut halves the rows, so cutting costs linear time in all.
    let mut cut_at = 2 * target.max(1);
    // Table 0 of every run whole, and the pending rows; only rows within the cut-off as it
    // stands at each page are copied off it.
    let mut every = Lookup::every_around(index, cache, q);
    let mut batch = Vec::new();
    loop {
        batch.clear();
        every.fill(index, query, cache, &mut batch, BATCH_ROWS);
        if batch.is_empty() {
            break;
        }
        for f in &batch {
            let Some(d) = f.code.map(|c| c.hamming(&q)) else {
                continue; // not read: the lookup reads no NULL rows
            };
            if d < floor || d > upto {
                continue;
            }
            counts[d as usize] += 1;
            within += 1;
            rows.push((d, *f));
            while upto > floor && within - counts[upto as usize] >= target {
                within -= counts[upto as usize];
                upto -= 1;
            }
            if rows.len() >= cut_at {
                rows.retain(|&(d, _)| d <= upto);
                cut_at = cut_at.max(2 * rows.len());
            }
        }
        every.narrow(upto);
    }
    rows.retain(|&(d, _)| d <= upto);
    (rows.into_iter().map(|(_, f)| f).collect(), upto)
}

/// The rows whose distance is NULL, in TID order: those with a NULL code (in the runs' NULL
/// rows and the pending lists), or every row when the ORDER BY argument is NULL (`all`).
fn null_distances<P: Rest>(
    index: pg_sys::Relation,
    query: &WideQuery,
    cache: &mut WideCache<P>,
    all: bool,
) -> Vec<Found> {
    let mut rows = Vec::new();
    let mut every = Lookup::new(cache, None, SubstringTables::<P>::BITS);
    if !all {
        every.step = Step::Nulls {
            run: 0,
            block: None,
        };
    }
    every.fill(index, query, cache, &mut rows, usize::MAX);
    rows.retain(|f| all || f.code.is_none());
    rows.sort_by_key(|f| f.tid);
    rows
}

/// The distance of a row to an ORDER BY argument (`None`: NULL).
pub fn distance(found: &Found, q: Option<Padded>) -> Option<u32> {
    Some(found.code?.hamming(&q?))
}

/// The rows of `code <@@ batch` when no ball drives the scan: the runs that the centers'
/// probes would read more of than the whole are read once (with the pending rows), then
/// each center is looked up in the other runs, reporting a row only from its first center.
pub struct BatchLookup {
    batch: Rc<WideBatchLookup>,
    /// Per run, whether it is read whole.
    whole: Vec<bool>,
    next_center: usize,
    current: Lookup,
}

impl BatchLookup {
    fn new<P: Rest>(cache: &WideCache<P>, batch: Rc<WideBatchLookup>) -> BatchLookup {
        let bits = SubstringTables::<P>::BITS;
        let centers = batch.len() as f64;
        let whole: Vec<bool> = cache
            .layouts
            .iter()
            .zip(whole_leaves(&cache.meta, &cache.parts))
            .map(|(layout, leaves)| {
                match Substrings::new(bits, layout.substrings().count(), batch.radius()) {
                    Ok(cut) => cut.probe_count() * centers > leaves as f64,
                    Err(_) => true, // a radius of every code
                }
            })
            .collect();
        // the runs read whole, and the pending rows
        let current = Lookup {
            center: None,
            radius: bits,
            plans: plans(cache, None, bits, 1.0, |run| whole[run]),
            nulls: false,
            pending: true,
            witness: None,
            step: START,
            recent: None,
        };
        // when every run is read whole, the centers have nothing left to probe
        let next_center = if whole.iter().all(|&w| w) {
            batch.len()
        } else {
            0
        };
        BatchLookup {
            batch,
            whole,
            next_center,
            current,
        }
    }

    fn fill<P: Rest>(
        &mut self,
        index: pg_sys::Relation,
        query: &WideQuery,
        cache: &mut WideCache<P>,
        out: &mut Vec<Found>,
        want: usize,
    ) {
        loop {
            self.current.fill(index, query, cache, out, want);
            if !self.current.done() || self.next_center == self.batch.len() {
                return;
            }
            pgrx::check_for_interrupts!();
            let i = self.next_center;
            self.next_center += 1;
            let (center, radius) = (Some(self.batch.center(i)), self.batch.radius());
            self.current = Lookup {
                center,
                radius,
                plans: plans(cache, center, radius, 1.0, |run| !self.whole[run]),
                nulls: false,
                pending: false,
                witness: Some((Rc::clone(&self.batch), i)),
                step: START,
                recent: None,
            };
        }
    }
}

/// The rows of an unordered scan: one lookup, or a batch's.
pub enum Unordered {
    One(Lookup),
    Batch(BatchLookup),
}

impl Unordered {
    /// Adds the next rows to `out` until it holds at least `want` or every row is found.
    pub fn fill<P: Rest>(
        &mut self,
        index: pg_sys::Relation,
        query: &WideQuery,
        cache: &mut WideCache<P>,
        out: &mut Vec<Found>,
        want: usize,
    ) {
        match self {
            Unordered::One(lookup) => lookup.fill(index, query, cache, out, want),
            Unordered::Batch(batch) => batch.fill(index, query, cache, out, want),
        }
    }
}

/// A lookup of the smallest ball of `query`, else of its batch of fewest centers, else of
/// every row.
pub fn lookup<P: Rest>(query: &WideQuery, cache: &WideCache<P>) -> Unordered {
    let ball = query.balls.iter().min_by_key(|b| b.1);
    let batch = query.batches.iter().min_by_key(|b| b.len());
    let mut lookup = match (ball, batch) {
        (Some(&(center, radius)), _) => Lookup::new(cache, Some(center), radius),
        (None, Some(batch)) if !query.nothing => {
            return Unordered::Batch(BatchLookup::new(cache, Rc::clone(batch)));
        }
        _ => Lookup::new(cache, None, SubstringTables::<P>::BITS),
    };
    if query.nothing {
        lookup.step = Step::Done;
    }
    Unordered::One(lookup)
}

/// `super::ball_lookups` on a wide index.
pub fn ball_lookups(
    index: pg_sys::Relation,
    balls: &[(Vec<u64>, u32)],
    rescans: bool,
) -> Vec<Vec<Tid>> {
    fn of<P: Rest>(
        index: pg_sys::Relation,
        balls: &[(Vec<u64>, u32)],
        rescans: bool,
    ) -> Vec<Vec<Tid>> {
        let mut shared: Option<WideCache<P>> = None;
        let found = balls
            .iter()
            .map(|(words, radius)| {
                let mut center = [0u64; 4];
                center[..words.len()].copy_from_slice(words);
                let query = WideQuery {
                    balls: vec![(WideCode(center), *radius)],
                    ..WideQuery::default()
                };
                let mut own = None;
                let cache = if rescans { &mut shared } else { &mut own }
                    .get_or_insert_with(|| WideCache::new(index));
                let mut lookup = lookup(&query, cache);
                let mut tids = Vec::new();
                loop {
                    let mut rows = Vec::new();
                    lookup.fill(index, &query, cache, &mut rows, BATCH_ROWS);
                    if rows.is_empty() {
                        break;
                    }
                    tids.extend(rows.iter().map(|f| f.tid));
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
    if crate::am::codes::words(index) == 2 {
        of::<[u64; 1]>(index, balls, rescans)
    } else {
        of::<[u64; 3]>(index, balls, rescans)
    }
}

/// A scan of a wide index, whatever its width: what the access method's callbacks call.
pub trait WideScan {
    /// New scan keys (a rescan): the query, and a fresh start.
    fn rescan(&mut self, query: WideQuery);
    /// The next row, or `None` at the end.
    fn next(&mut self, index: pg_sys::Relation, mvcc: bool) -> Option<Found>;
    /// Adds every row to `tbm`; returns how many.
    fn bitmap(&mut self, index: pg_sys::Relation, mvcc: bool, tbm: *mut pg_sys::TIDBitmap) -> i64;
    fn query(&self) -> &WideQuery;
    /// Whether the scan (or rescan) fetched already.
    fn started(&self) -> bool;
    /// Releases the pin on block 1 (amendscan).
    fn release(&mut self);
}

/// Rows an unordered scan finds before it returns the first of them.
const BATCH_ROWS: usize = 1024;

struct WideScanState<P: Rest> {
    query: WideQuery,
    producer: Option<WideProducer>,
    results: Vec<Found>,
    next: usize,
    /// Kept across rescans when the snapshot is MVCC.
    cache: Option<WideCache<P>>,
}

/// The scan of an index of `words`-word codes (2 or 4).
pub fn begin(words: usize) -> Box<dyn WideScan> {
    fn state<P: Rest>() -> Box<dyn WideScan> {
        Box::new(WideScanState::<P> {
            query: WideQuery::default(),
            producer: None,
            results: Vec::new(),
            next: 0,
            cache: None,
        })
    }
    if words == 2 {
        state::<[u64; 1]>()
    } else {
        state::<[u64; 3]>()
    }
}

impl<P: Rest> WideScanState<P> {
    /// The cache a scan uses from its first fetch to its end: the one kept from before
    /// under an MVCC snapshot, else a fresh one.
    fn cache(&mut self, index: pg_sys::Relation, mvcc: bool) -> &mut WideCache<P> {
        if !mvcc {
            if let Some(old) = self.cache.as_mut() {
                old.release();
            }
            self.cache = None;
        }
        self.cache.get_or_insert_with(|| WideCache::new(index))
    }
}

impl<P: Rest> WideScan for WideScanState<P> {
    fn rescan(&mut self, query: WideQuery) {
        self.query = query;
        self.producer = None;
        self.results = Vec::new();
        self.next = 0;
    }

    fn next(&mut self, index: pg_sys::Relation, mvcc: bool) -> Option<Found> {
        if self.producer.is_none() {
            let query = self.query.clone();
            let cache = self.cache(index, mvcc);
            self.producer = Some(if query.order_by.is_empty() {
                WideProducer::Unordered(lookup(&query, cache))
            } else {
                WideProducer::Ordered(Nearest::new())
            });
        }
        if self.next == self.results.len() {
            let cache = self.cache.as_mut().expect("read above");
            self.results = Vec::new(); // freed before the next batch is read
            self.results = match self.producer.as_mut().expect("set above") {
                WideProducer::Unordered(lookup) => {
                    let mut rows = Vec::new();
                    lookup.fill(index, &self.query, cache, &mut rows, BATCH_ROWS);
                    rows
                }
                WideProducer::Ordered(_) if self.query.nothing => Vec::new(),
                WideProducer::Ordered(nearest) => nearest.next_batch(index, &self.query, cache),
            };
            self.next = 0;
        }
        let found = *self.results.get(self.next)?;
        self.next += 1;
        Some(found)
    }

    fn bitmap(&mut self, index: pg_sys::Relation, mvcc: bool, tbm: *mut pg_sys::TIDBitmap) -> i64 {
        let query = self.query.clone();
        let cache = self.cache(index, mvcc);
        let mut lookup = lookup(&query, cache);
        let mut total = 0i64;
        loop {
            let mut rows = Vec::new();
            lookup.fill(index, &query, cache, &mut rows, BATCH_ROWS);
            if rows.is_empty() {
                return total;
            }
            let mut tids: Vec<pg_sys::ItemPointerData> = rows
                .iter()
                .map(|f| crate::am::build::item_pointer(f.tid))
                .collect();
            // SAFETY: PostgreSQL's bitmap; the TIDs are copied in.
            unsafe { pg_sys::tbm_add_tuples(tbm, tids.as_mut_ptr(), tids.len() as i32, false) };
            total += tids.len() as i64;
        }
    }

    fn query(&self) -> &WideQuery {
        &self.query
    }

    fn started(&self) -> bool {
        self.producer.is_some()
    }

    fn release(&mut self) {
        if let Some(cache) = self.cache.as_mut() {
            cache.release();
        }
        self.cache = None;
    }
}
