//! The rows a scan's conditions select, found a page at a time, so that a scan returns
//! them as it goes in bounded memory (an index scan with a radius known only at run time
//! may select much of the index): [`Matches`] remembers where it stopped (which probe,
//! which table of which run, which leaf) and goes on from there.
//!
//! A *probe* is a center and a radius within max_distance: in every permuted table of every
//! run, the entries sharing the permuted center's leading blocks (a descent of the directory
//! of the table's part that holds them, to the first leaf that may hold them, then the
//! leaves in order), checked for
//! distance (exact by the pigeonhole argument, see `neardup_core::search::permuted`); then the
//! pending rows (on their pages at a scan's first probe, from memory from its second on)
//! and, once a scan's probes are many, the rows of the small runs from memory. A ball
//! makes one probe, a batch one per center (a row near several centers is reported by the
//! first ball that contains it). A radius beyond max_distance, or no
//! condition, reads table 0 of every run, the NULL rows and the pending rows instead.

use super::cache::{
    compared_from_memory, for_each_row_in, within_radius, DirectoryPage, Row, ScanCache,
    PASSES_BEFORE_SORTING,
};
use super::Query;
use crate::am::run;
use neardup_core::search::ball_set::BallLookup;
use neardup_core::search::index_page::{
    entries, Entry, Leaf, NoRest, Tid, ENTRIES_PER_PAGE, ENTRY_SIZE, NO_BLOCK,
};
use neardup_core::search::prefix_bitmap::PrefixBitmap;
use neardup_core::signatures::simhash::hamming;
use pgrx::pg_sys;
use std::rc::Rc;

/// What a scan probes.
enum Probes {
    /// The smallest ball within max_distance.
    Ball { center: u64, radius: u32 },
    /// The centers of the smallest batch whose radius is within max_distance.
    Batch(Rc<BallLookup>),
    /// Every row.
    All,
}

/// A place rows come from.
#[derive(Clone, Copy)]
enum Source {
    /// Table `table` of run `run` (positions in the scan's metapage), within the probe: the
    /// tree of it that holds the probe's prefix.
    Table { run: usize, table: usize },
    /// All of tree `tree` (a part of table 0) of run `run`.
    WholeTable { run: usize, tree: usize },
    /// The NULL rows of run `run`.
    Nulls { run: usize },
    /// The pending rows (from memory).
    Pending,
    /// The pending rows on their pages: the open list (0) or the sealed one (1). A scan's
    /// first lookup compares them there rather than copy them into memory for lookups that
    /// may never come (a single lookup cost 1.8 times a fresh index's with 8,000 pending
    /// rows read into memory).
    PendingPages { list: usize },
    /// The rows of the small runs (from memory).
    SmallRuns,
}

/// An unordered scan's position among the rows it selects.
pub struct Matches {
    probes: Probes,
    /// Probes started (the one being read is `probes_started - 1`).
    probes_started: usize,
    /// The sources of the probe being read, and the one being read.
    sources: Vec<Source>,
    source: usize,
    /// The next page of that source (`None` before its first).
    next: Option<u32>,
    /// The probe of the source being read: center and radius.
    center: u64,
    radius: u32,
    /// Whether a row near several centers of a batch must come once (an index scan), or may
    /// come from each (a bitmap scan, whose bitmap keeps each TID once): then a row found
    /// by a center's probe needs no test against the other centers.
    once: bool,
}

impl Matches {
    /// The rows within all of `query`'s balls and batches (every row, NULL ones too, when it
    /// has none). The probes are those of the smallest ball if it is within `max_distance`,
    /// or else those of the smallest batch's centers if its radius is. `once`: each TID at
    /// most once (see the field).
    pub fn new(query: &Query, max_distance: u32, once: bool) -> Matches {
        let ball = query.balls.iter().min_by_key(|b| b.1);
        let batch = query.batches.iter().min_by_key(|b| b.centers().len());
        let probes = match (ball, batch) {
            (Some(&(center, radius)), _) if radius <= max_distance => {
                Probes::Ball { center, radius }
            }
            (_, Some(batch)) if batch.radius() <= max_distance => Probes::Batch(batch.clone()),
            _ => Probes::All,
        };
        Matches {
            probes,
            probes_started: 0,
            sources: Vec::new(),
            source: 0,
            next: None,
            center: 0,
            radius: 0,
            once,
        }
    }

    /// Adds the next selected rows to `out`, each TID once over the whole scan, until `out`
    /// holds at least `want` rows or every row is found. Reads a page (or an in-memory
    /// source) at a time, so it may add up to a page more. Adds nothing only at the end.
    pub fn fill(
        &mut self,
        index: pg_sys::Relation,
        query: &Query,
        cache: &mut ScanCache,
        out: &mut Vec<Row>,
        want: usize,
    ) {
        if query.nothing {
            return;
        }
        while out.len() < want {
            if self.source == self.sources.len() && !self.start_probe(cache) {
                return;
            }
            if self.step(index, query, cache, out) {
                self.source += 1;
                self.next = None;
            }
        }
    }

    /// Starts the next probe; false when there is none.
    fn start_probe(&mut self, cache: &mut ScanCache) -> bool {
        let runs = cache.meta.runs.len();
        let (center, radius) = match &self.probes {
            Probes::All => {
                if self.probes_started > 0 {
                    return false;
                }
                let parts = &cache.parts;
                self.sources = (0..runs)
                    .flat_map(|run| {
                        parts[run]
                            .trees_of(0)
                            .map(move |tree| Source::WholeTable { run, tree })
                            .chain([Source::Nulls { run }])
                    })
                    .chain([Source::Pending])
                    .collect();
                (0, 0)
            }
            Probes::Ball { center, radius } if self.probes_started == 0 => (*center, *radius),
            Probes::Batch(batch) if self.probes_started < batch.centers().len() => {
                (batch.centers()[self.probes_started], batch.radius())
            }
            _ => return false,
        };
        if !matches!(self.probes, Probes::All) {
            // Once a scan's lookups (rescans, or centers) are many, the small runs are
            // sorted in memory rather than probed on disk table by table.
            let small_in_memory = cache.lookups >= PASSES_BEFORE_SORTING;
            let pending: &[Source] = if cache.lookups == 0 && !cache.has_pending_in_memory() {
                &[
                    Source::PendingPages { list: 0 },
                    Source::PendingPages { list: 1 },
                ]
            } else {
                &[Source::Pending]
            };
            cache.lookups += 1;
            let (meta, layouts) = (&cache.meta, &cache.layouts);
            self.sources = meta
                .runs
                .iter()
                .enumerate()
                .filter(|(_, r)| !(small_in_memory && compared_from_memory(meta, r)))
                .flat_map(|(run, _)| {
                    (0..layouts[run].tables().len()).map(move |table| Source::Table { run, table })
                })
                .chain(pending.iter().copied())
                .chain(small_in_memory.then_some(Source::SmallRuns))
                .collect();
        }
        self.probes_started += 1;
        self.source = 0;
        self.next = None;
        (self.center, self.radius) = (center, radius);
        true
    }

    /// Whether a row found by the current probe is returned: within every ball and batch
    /// (the probing batch's test is whether this center is the first that contains it).
    fn accepts(&self, query: &Query, fp: Option<u64>) -> bool {
        let Some(fp) = fp else {
            // Only an unconstrained scan returns NULL rows (the operators are strict).
            return query.balls.is_empty() && query.batches.is_empty();
        };
        let driver = match &self.probes {
            Probes::Batch(batch) => {
                let in_this_ball = if self.once {
                    batch.first_containing(fp) == Some(self.probes_started - 1)
                } else {
                    hamming(fp, self.center) <= self.radius
                };
                if !in_this_ball {
                    return false;
                }
                Some(batch)
            }
            _ => None,
        };
        query.balls.iter().all(|&(c, r)| hamming(fp, c) <= r)
            && query
                .batches
                .iter()
                .all(|b| driver.is_some_and(|d| Rc::ptr_eq(b, d)) || b.contains(fp))
    }

    /// Reads one page of the current source (all of it for an in-memory one) into `out`;
    /// true when the source is done.
    fn step(
        &mut self,
        index: pg_sys::Relation,
        query: &Query,
        cache: &mut ScanCache,
        out: &mut Vec<Row>,
    ) -> bool {
        let (center, radius) = (self.center, self.radius);
        match self.sources[self.source] {
            Source::Table { run, table } => {
                let owner = cache.meta.runs[run].id;
                let layout = &cache.layouts[run];
                let permutation = &layout.tables()[table];
                let q = permutation.apply(center);
                let (lo, hi) = permutation.prefix_range(q);
                let block = match self.next {
                    Some(block) => block,
                    None => {
                        let tree = cache.parts[run].tree_of(table, lo);
                        let tree = &cache.meta.runs[run].trees[tree];
                        let directory = &mut cache.directory;
                        if tree.root != NO_BLOCK {
                            let root = DirectoryPage::cached(directory, index, tree.root, owner);
                            if let Some(prefixes) = &root.prefixes {
                                if !PrefixBitmap::may_hold(prefixes, lo, hi) {
                                    return true;
                                }
                            }
                        }
                        let start = run::descend(tree, lo, |block, visit| {
                            let page = DirectoryPage::cached(directory, index, block, owner);
                            visit(&page.contents, page.level)
                        });
                        match start {
                            Some(block) => block,
                            None => return true,
                        }
                    }
                };
                let (more, next) = run::read_leaf(index, owner, block, |leaf: Leaf| {
                    for i in leaf.lower_bound(lo)..leaf.len() {
                        let key = leaf.key(i);
                        if key > hi {
                            return false;
                        }
                        if hamming(key, q) <= radius {
                            let (fp, tid) = (permutation.invert(key), leaf.entry(i).tid);
                            // A row sharing a prefix in several tables is found in each:
                            // only its owner table (the first whose leading blocks all
                            // agree) reports it.
                            if layout.owner_table(layout.equal_blocks(fp, center)) == Some(table)
                                && self.accepts(query, Some(fp))
                            {
                                out.push((Some(fp), tid));
                            }
                        }
                    }
                    true
                });
                self.continue_at(more, next)
            }
            Source::WholeTable { run, tree } => {
                let r = &cache.meta.runs[run];
                let permutation = &cache.layouts[run].tables()[0];
                let block = self.next.unwrap_or(r.trees[tree].first_leaf);
                if block == NO_BLOCK {
                    return true;
                }
                let (_, next) = run::read_leaf(index, r.id, block, |leaf: Leaf| {
                    for e in leaf.entries() {
                        let fp = Some(permutation.invert(e.key));
                        if self.accepts(query, fp) {
                            out.push((fp, e.tid));
                        }
                    }
                });
                self.continue_at(true, next)
            }
            Source::Nulls { run } => {
                let r = &cache.meta.runs[run];
                let block = self.next.unwrap_or(r.nulls_head);
                if block == NO_BLOCK {
                    return true;
                }
                let (_, next) = run::read_pending_page(index, r.id, block, |contents| {
                    for e in entries::<NoRest>(contents) {
                        if self.accepts(query, e.fingerprint()) {
                            out.push((e.fingerprint(), e.heap_tid()));
                        }
                    }
                });
                self.continue_at(true, next)
            }
            Source::PendingPages { list } => {
                let list = [&cache.meta.pending, &cache.meta.sealed][list];
                let block = self.next.unwrap_or(list.head);
                if list.id == 0 || block == NO_BLOCK {
                    return true;
                }
                let (_, next) = run::read_pending_page(index, list.id, block, |contents| {
                    let mut keys = [0u64; ENTRIES_PER_PAGE];
                    let keys = &mut keys[..contents.len() / ENTRY_SIZE];
                    for (key, bytes) in keys.iter_mut().zip(contents.chunks_exact(ENTRY_SIZE)) {
                        *key = Entry::<NoRest>::read(bytes).key;
                    }
                    within_radius(keys, center, radius, |i| {
                        let e = Entry::<NoRest>::read(&contents[i * ENTRY_SIZE..]);
                        if self.accepts(query, e.fingerprint()) {
                            out.push((e.fingerprint(), e.heap_tid()));
                        }
                    });
                });
                self.continue_at(true, next)
            }
            Source::Pending | Source::SmallRuns => {
                let rows = match self.sources[self.source] {
                    Source::Pending => cache.pending(index),
                    _ => cache.small_runs(index),
                };
                let mut found = Vec::new();
                if matches!(self.probes, Probes::All) {
                    for_each_row_in(&rows.rows, |row| found.push(row));
                } else {
                    rows.probe(center, radius, |row| found.push(row));
                }
                out.extend(found.into_iter().filter(|row| self.accepts(query, row.0)));
                true
            }
        }
    }

    /// Goes on at `next` if the source has more (`more`, and a next page); true when done.
    fn continue_at(&mut self, more: bool, next: u32) -> bool {
        if more && next != NO_BLOCK {
            self.next = Some(next);
            false
        } else {
            true
        }
    }
}

/// The TIDs of `rows`, for a bitmap.
pub fn item_pointers(rows: &[Row]) -> Vec<pg_sys::ItemPointerData> {
    rows.iter()
        .map(|&(_, tid): &(Option<u64>, Tid)| crate::am::build::item_pointer(tid))
        .collect()
}
