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
use super::scan::{pass_rows_cap, FIRST_PASS_ROWS, PASSES_BEFORE_SORTING};
use crate::hamming_query::estimate::{batch_parts, Radius};
use neardup_core::search::index_page;
use neardup_core::search::nearest::passes_for_uniform;
use neardup_core::search::permuted::Layout;
use pgrx::prelude::*;
use pgrx::{pg_sys, PgList};

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
        let m = meta::read(index);
        let wide = codes::words(index) != 1;
        pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
        if wide {
            // Not searched yet (`scan::ambeginscan`): a path the planner never takes (the
            // cost of a disabled plan node).
            *startup_cost = 1.0e10;
            *total_cost = 1.0e10;
            *selectivity = 1.0;
            *correlation = 0.0;
            *pages = 0.0;
            return;
        }

        let (mut random_page, mut seq_page) = (0.0, 0.0);
        pg_sys::get_tablespace_page_costs(info.reltablespace, &mut random_page, &mut seq_page);
        let pending_pages = m.pending_pages() as f64;
        let pending_rows = pending_pages * page::ENTRIES_PER_PAGE as f64;
        let rows = m.run_rows() as f64 + pending_rows;
        let tuple_cost = pg_sys::cpu_index_tuple_cost + pg_sys::cpu_operator_cost;
        let probes = probes_of(root, path);
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
                    let levels = leaves
                        .max(1.0)
                        .log(index_page::CHILDREN_PER_PAGE as f64)
                        .ceil()
                        .max(1.0);
                    pages_read +=
                        probes * (levels + (run_rows / page::ENTRIES_PER_PAGE as f64).ceil());
                    candidates += probes * run_rows;
                }
            }
            let fetched = pg_sys::index_pages_fetched(
                pages_read * loop_count,
                info.pages,
                info.pages as f64,
                root,
            ) / loop_count.max(1.0);
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
                let (pages, cost) = lookup(1.0);
                let pass = one_table * seq_page + rows * pg_sys::cpu_operator_cost;
                let passes =
                    passes_for_uniform(rows, m.max_distance + 1, FIRST_PASS_ROWS, pass_rows_cap())
                        .max(1) as f64;
                (pages + one_table, cost + pass, cost + pass * passes)
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
unsafe fn probes_of(root: *mut pg_sys::PlannerInfo, path: *mut pg_sys::IndexPath) -> Probes {
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
                if let Some(r) = constant_radius(expr) {
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

/// The radius of `col <@ ball` when the ball is a constant or `hamming_ball(x, <const>)`.
unsafe fn constant_radius(expr: *mut pg_sys::Expr) -> Option<i64> {
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
                Some(
                    (*(c.constvalue
                        .cast_mut_ptr::<crate::hamming_query::HammingBall>()))
                    .radius as i64,
                )
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
