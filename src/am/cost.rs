//! Cost estimate. A lookup within the index's max_distance reads, in each permuted table, a
//! binary-search descent and the pages of one prefix run (about rows / 2^prefix entries),
//! plus the pending pages. A radius beyond max_distance reads a whole table (and sorts it
//! for ORDER BY). ORDER BY without a radius is the lookup, then passes over table 0 and
//! the pending pages, each a distance test per entry and no sort (see scan.rs): the first
//! pass is in the startup cost, since with no row within max_distance (the usual case for a
//! new query) the first row needs it; a full order needs the passes `neardup_core::search::nearest`
//! predicts for random fingerprints. Selectivity comes from the operators' estimators
//! (genericcostestimate); pages already read by earlier loops of a nested loop are priced
//! as cached (index_pages_fetched), so parameterized joins through the index look as cheap
//! as they are.

use super::codes;
use super::meta;
use super::page;
use super::scan::{first_pass_share, pass_rows_cap, FIRST_PASS_ROWS, PASSES_BEFORE_SORTING};
use crate::hamming_query::estimate::{batch_parts, Radius};
use neardup_core::search::code_tables::SubstringTables;
use neardup_core::search::index_page::{self, Entry, Meta, Rest};
use neardup_core::search::multi_index::Substrings;
use neardup_core::search::nearest::passes_for_uniform;
use neardup_core::search::permuted::Layout;
use pgrx::prelude::*;
use pgrx::{pg_sys, PgList};

/// The cost of a path through an index this build cannot read: above a path disabled by
/// `enable_seqscan = off` (PostgreSQL adds 1e10 to those).
const UNREADABLE_COST: f64 = 1e15;

#[allow(clippy::too_many_arguments)]
#[pg_guard]
pub unsafe extern "C-unwind" fn amcostestimate(
    root: *mut pg_sys::PlannerInfo,
    path: *mut pg_sys::IndexPath,
    loop_count: f64,
    startup_cost: *mut pg_sys::Cost,
    total_cost: *mut pg_sys::Cost,
    selectivity: *mut pg_sys::Selectivity,
    correlation: *mut f64,
    pages: *mut f64,
) {
    // SAFETY: planner structures passed by PostgreSQL; the index is opened without a lock
    // as the planner already holds one.
    unsafe {
        let mut generic = pg_sys::GenericCosts::default();
        pg_sys::genericcostestimate(root, path, loop_count, &mut generic);
        let info = &*(*path).indexinfo;
        let index = pg_sys::index_open(info.indexoid, pg_sys::NoLock as pg_sys::LOCKMODE);
        let m = meta::read_if_readable(index);
        let words = codes::words(index);
        pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
        let Some(m) = m else {
            // An index of a format this build does not read (one an older release wrote,
            // until its REINDEX): costed past any other path, as PostgreSQL's disabled paths
            // are, so that a plan only takes it when nothing else can answer, and then its
            // scan reports the REINDEX it needs.
            *startup_cost = UNREADABLE_COST;
            *total_cost = UNREADABLE_COST;
            *selectivity = generic.indexSelectivity;
            *correlation = 0.0;
            *pages = 0.0;
            return;
        };
        let (mut random_page, mut seq_page) = (0.0, 0.0);
        pg_sys::get_tablespace_page_costs(info.reltablespace, &mut random_page, &mut seq_page);
        if words != 1 {
            let model = WideModel {
                meta: &m,
                words,
                random_page,
                seq_page,
            };
            let (index_pages, startup, total) = model.costs(root, path, loop_count);
            *startup_cost = startup;
            *total_cost = total;
            *selectivity = generic.indexSelectivity;
            *correlation = 0.0;
            *pages = index_pages;
            return;
        }

        let pending_pages = m.pending_pages() as f64;
        let pending_rows = pending_pages * page::ENTRIES_PER_PAGE as f64;
        let rows = m.run_rows() as f64 + pending_rows;
        let tuple_cost = pg_sys::cpu_index_tuple_cost + pg_sys::cpu_operator_cost;
        let probes = probes_of(root, path, 1);
        let ordered = !(*path).indexorderbys.is_null();

        // `probes` lookups within max_distance: per table of each run, a descent of its
        // directory and the leaves of one prefix; the pending rows, compared one by one
        // until a scan sorts them (after PASSES_BEFORE_SORTING probes).
        let lookup = |probes: f64| {
            let mut pages_read = pending_pages;
            let mut candidates = pending_rows * probes.min(PASSES_BEFORE_SORTING as f64)
                + probes * pending_rows.max(2.0).log2();
            for run in &m.runs {
                let layout: Layout = meta::layout(&m, run);
                let parts = meta::parts(&layout, run);
                for (t, table) in layout.tables().iter().enumerate() {
                    // A probe reads one part of the table (its prefix is in one).
                    let leaves = run.trees[parts.trees_of(t)]
                        .iter()
                        .map(|tree| tree.leaves as f64)
                        .sum::<f64>()
                        / parts.count() as f64;
                    let prefix = table.prefix_bits as i32;
                    let run_rows = run.rows as f64 / 2f64.powi(prefix);
                    let levels = levels(leaves);
                    pages_read +=
                        probes * (levels + (run_rows / page::ENTRIES_PER_PAGE as f64).ceil());
                    candidates += probes * run_rows;
                }
            }
            let fetched = pages_fetched(root, info, pages_read, loop_count);
            (pages_read, fetched * random_page + candidates * tuple_cost)
        };
        // Reading table 0 of every run (and sorting it, for ORDER BY).
        let one_table = m
            .runs
            .iter()
            .map(|r| {
                let parts = meta::parts(&meta::layout::<Layout>(&m, r), r);
                r.trees[parts.trees_of(0)]
                    .iter()
                    .map(|t| t.leaves as f64)
                    .sum::<f64>()
            })
            .sum::<f64>()
            + pending_pages;
        let sort = if ordered {
            rows * rows.max(2.0).log2() * pg_sys::cpu_operator_cost
        } else {
            0.0
        };
        let full_scan = one_table * seq_page + rows * tuple_cost + sort;

        let within = |radius: i64| radius <= m.max_distance as i64;
        let (index_pages, startup, total) = match probes {
            Probes::Ball(r) if within(r) => {
                let (pages, cost) = lookup(1.0);
                // Results are computed on the first fetch: nothing comes before the whole cost.
                (pages, cost, cost)
            }
            Probes::Batch { radius, balls } if within(radius) => {
                let (pages, cost) = lookup(balls);
                (pages, cost, cost)
            }
            Probes::None if ordered => {
                // ORDER BY alone: a lookup, then a pass per batch of farther rows. An entry
                // of a pass is one distance test: an operator, not an index tuple.
                // The first pass reads the largest run (or merge) by rings when they pay (`scan::ordered`).
                let (pages, cost) = lookup(1.0);
                let pass = one_table * seq_page + rows * pg_sys::cpu_operator_cost;
                let passes =
                    passes_for_uniform(rows, m.max_distance + 1, FIRST_PASS_ROWS, pass_rows_cap())
                        .max(1) as f64;
                let share = first_pass_share(&m);
                let first = pass * share;
                let rest = pass * (passes - 1.0);
                (pages + one_table * share, cost + first, cost + first + rest)
            }
            _ => (one_table, full_scan, full_scan),
        };
        *startup_cost = startup;
        *total_cost = total;
        *selectivity = generic.indexSelectivity;
        *correlation = 0.0;
        *pages = index_pages;
    }
}

/// The cost of a scan of an index of wide codes (`scan/wide.rs`): per run, a lookup reads,
/// for each value its substring tables are probed at, the leaves of the rows holding that
/// value (about rows / 2^width of them, each a distance test; the directory above them
/// once, as a scan keeps it), or table 0 whole when that reads less; then the pending
/// rows, each a distance test. An ORDER BY alone costs a lookup at `max_distance` first,
/// which is where the first rows come from.
struct WideModel<'a> {
    meta: &'a Meta,
    words: usize,
    random_page: f64,
    seq_page: f64,
}

impl WideModel<'_> {
    unsafe fn costs(
        &self,
        root: *mut pg_sys::PlannerInfo,
        path: *mut pg_sys::IndexPath,
        loop_count: f64,
    ) -> (f64, f64, f64) {
        // SAFETY: the planner's path and its index.
        unsafe {
            let info = &*(*path).indexinfo;
            let ordered = !(*path).indexorderbys.is_null();
            let (radius, lookups) = match probes_of(root, path, self.words) {
                Probes::Ball(r) => (Some(r.max(0) as u32), 1.0),
                // a batch: a lookup per center, at most a read of every row
                Probes::Batch { radius, balls } if !ordered => (Some(radius.max(0) as u32), balls),
                _ if ordered => (Some(self.meta.max_distance), 1.0),
                _ => (None, 1.0),
            };
            let lookup = |radius| {
                if self.words == 2 {
                    self.lookup::<[u64; 1]>(radius)
                } else {
                    self.lookup::<[u64; 3]>(radius)
                }
            };
            let (one_pages, one_candidates) = lookup(radius);
            let (every_pages, every_candidates) = lookup(None);
            let pages_read = (one_pages * lookups).min(every_pages);
            let candidates = (one_candidates * lookups).min(every_candidates);
            let fetched = pages_fetched(root, info, pages_read, loop_count);
            let page_cost = if radius.is_some() {
                self.random_page
            } else {
                self.seq_page
            };
            let tuple_cost = pg_sys::cpu_index_tuple_cost + pg_sys::cpu_operator_cost;
            let cost = fetched * page_cost + candidates * tuple_cost;
            // Results are computed a page at a time, the first pass of an ORDER BY whole.
            let startup = if ordered { cost } else { cost.min(page_cost) };
            (pages_read, startup, cost)
        }
    }

    /// Pages read and rows tested by a lookup within `radius` (`None`: every row).
    fn lookup<P: Rest>(&self, radius: Option<u32>) -> (f64, f64) {
        let size = Entry::<P>::SIZE;
        let per_page = (page::CONTENTS / size) as f64;
        let pending_rows = self
            .meta
            .pending
            .row_capacity(size)
            .saturating_add(self.meta.sealed.row_capacity(size)) as f64;
        let mut pages = self.meta.pending_pages() as f64;
        let mut candidates = pending_rows;
        for run in &self.meta.runs {
            let layout: SubstringTables<P> = meta::layout(self.meta, run);
            let parts = meta::parts(&layout, run);
            let leaves: f64 = run.trees[parts.trees_of(0)]
                .iter()
                .map(|t| t.leaves as f64)
                .sum();
            let whole = (leaves, run.rows as f64);
            let bits = SubstringTables::<P>::BITS;
            let probed = radius
                .and_then(|r| Substrings::new(bits, layout.substrings().count(), r).ok())
                .map(|cut| {
                    let levels = levels(leaves / parts.count() as f64);
                    let (mut pages, mut rows) = (0.0, 0.0);
                    for (k, probes) in cut.probes_per_table().enumerate() {
                        let width = cut.bounds(k as u32).1;
                        let under = run.rows as f64 / 2f64.powi(width as i32);
                        let probes = probes.unwrap_or(0.0);
                        // A scan keeps the directory pages it read: each is read once (the
                        // path of every level), each probe reads its own leaves.
                        pages += probes.min(1.0) * levels + probes * (under / per_page).ceil();
                        rows += probes * under;
                    }
                    (pages, rows)
                })
                .filter(|probed| probed.0 < whole.0);
            let (p, r) = probed.unwrap_or(whole);
            pages += p;
            candidates += r;
        }
        (pages, candidates)
    }
}

/// Directory levels above `leaves` leaves (at least one).
fn levels(leaves: f64) -> f64 {
    leaves
        .max(1.0)
        .log(index_page::CHILDREN_PER_PAGE as f64)
        .ceil()
        .max(1.0)
}

/// Distinct pages fetched per loop by `pages_read` reads a loop, as PostgreSQL models its
/// cache (`index_pages_fetched`).
unsafe fn pages_fetched(
    root: *mut pg_sys::PlannerInfo,
    info: &pg_sys::IndexOptInfo,
    pages_read: f64,
    loop_count: f64,
) -> f64 {
    // SAFETY: the planner's own structures.
    unsafe {
        pg_sys::index_pages_fetched(pages_read * loop_count, info.pages, info.pages as f64, root)
            / loop_count.max(1.0)
    }
}

/// The lookups a scan makes, as far as the planner sees them.
enum Probes {
    /// One per `<@ hamming_ball` clause; the smallest radius drives the scan.
    Ball(i64),
    /// One per fingerprint of a `<@@ hamming_batch` (when no ball drives).
    Batch { radius: i64, balls: f64 },
    /// No clause: an ORDER BY alone, or a full scan.
    None,
}

/// The path's probes: those of the smallest constant radius among its `<@ hamming_ball(q,
/// k)` clauses (a radius not known at plan time is priced as a lookup), else those of its
/// smallest batch.
unsafe fn probes_of(
    root: *mut pg_sys::PlannerInfo,
    path: *mut pg_sys::IndexPath,
    words: usize,
) -> Probes {
    let mut smallest: Option<i64> = None;
    let mut any_ball = false;
    let mut batch: Option<(i64, f64)> = None;
    unsafe {
        for clause in PgList::<pg_sys::IndexClause>::from_pg((*path).indexclauses).iter_ptr() {
            for rinfo in PgList::<pg_sys::RestrictInfo>::from_pg((*clause).indexquals).iter_ptr() {
                let expr = (*rinfo).clause;
                if let Some((radius, balls)) = batch_clause(root, expr) {
                    if batch.is_none_or(|(_, n)| balls < n) {
                        batch = Some((radius, balls));
                    }
                    continue;
                }
                any_ball = true;
                if let Some(r) = constant_radius(expr, words) {
                    smallest = Some(smallest.map_or(r, |s| s.min(r)));
                }
            }
        }
    }
    match (smallest, any_ball, batch) {
        (Some(r), _, _) => Probes::Ball(r),
        (None, true, _) => Probes::Ball(0),
        (None, false, Some((radius, balls))) => Probes::Batch { radius, balls },
        (None, false, None) => Probes::None,
    }
}

/// The radius and number of balls of `col <@@ batch` (a radius the planner cannot see is
/// priced as a lookup, 0); `None` for other clauses.
unsafe fn batch_clause(
    root: *mut pg_sys::PlannerInfo,
    expr: *mut pg_sys::Expr,
) -> Option<(i64, f64)> {
    unsafe {
        if (*(expr as *mut pg_sys::Node)).type_ != pg_sys::NodeTag::T_OpExpr {
            return None;
        }
        let args = PgList::<pg_sys::Node>::from_pg((*(expr as *mut pg_sys::OpExpr)).args);
        let batch = args.get_ptr(1)?;
        // Fingerprints and balls have a fixed length; a batch is a varlena.
        if pg_sys::get_typlen(pg_sys::exprType(batch)) != -1 {
            return None;
        }
        let (radius, balls) = batch_parts(root, batch);
        let radius = match radius {
            Radius::Known(r) => r as i64,
            Radius::Null => -1,
            Radius::Unknown => 0,
        };
        Some((radius, balls as f64))
    }
}

/// The radius of `col <@ ball` when the ball is a constant or `hamming_ball(x, <const>)`
/// (a ball is its center's `words` words, then the radius).
unsafe fn constant_radius(expr: *mut pg_sys::Expr, words: usize) -> Option<i64> {
    unsafe {
        if (*(expr as *mut pg_sys::Node)).type_ != pg_sys::NodeTag::T_OpExpr {
            return None;
        }
        let args = PgList::<pg_sys::Node>::from_pg((*(expr as *mut pg_sys::OpExpr)).args);
        let ball = args.get_ptr(1)?;
        match (*ball).type_ {
            pg_sys::NodeTag::T_Const => {
                let c = &*(ball as *mut pg_sys::Const);
                if c.constisnull {
                    return None;
                }
                let radius = c
                    .constvalue
                    .cast_mut_ptr::<u8>()
                    .add(8 * words)
                    .cast::<i32>();
                Some(radius.read_unaligned() as i64)
            }
            pg_sys::NodeTag::T_FuncExpr => {
                let fargs =
                    PgList::<pg_sys::Node>::from_pg((*(ball as *mut pg_sys::FuncExpr)).args);
                let radius = fargs.get_ptr(1)?;
                if (*radius).type_ != pg_sys::NodeTag::T_Const {
                    return None;
                }
                let c = &*(radius as *mut pg_sys::Const);
                (!c.constisnull).then(|| c.constvalue.value() as i32 as i64)
            }
            _ => None,
        }
    }
}
