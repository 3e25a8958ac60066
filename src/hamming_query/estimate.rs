//! Selectivity of "within k bits": `hamming_within(a, b, k)` (through its support function)
//! and `a <@ hamming_ball(b, k)` (through the operator's RESTRICT and JOIN estimators).
//!
//! Two independent uniform fingerprints are within k bits with probability
//! P[Bin(64, 1/2) <= k], about 2e-15 for k = 3. Real fingerprints are not independent:
//! the same document stored twice has the same fingerprint, and near-duplicate search is run
//! precisely because such clusters exist. So the estimate never goes below that of an
//! equality, 1 / (number of distinct values), as `eqsel` and `eqjoinsel` would give without
//! most-common-value statistics. A radius the planner cannot see (a parameter of a generic
//! plan) is treated as small: the equality estimate.

use super::catalog::{self, Catalog};
use super::nodes::list_nodes;
use pgrx::pg_sys::{self, Node};
use pgrx::prelude::*;
use pgrx::{is_a, Internal};

/// P[Bin(bits, 1/2) <= k], for codes of 64, 128 or 256 bits.
fn binomial_tail(bits: i32, k: i32) -> f64 {
    if k < 0 {
        return 0.0;
    }
    if k >= bits {
        return 1.0; // exactly, not the rounded sum
    }
    let mut term = 1.0_f64; // C(bits, i), at most C(256, 128) ≈ 5.8e75
    let mut sum = 0.0;
    for i in 0..=k {
        sum += term;
        term = term * f64::from(bits - i) / f64::from(i + 1);
    }
    // Rounding can push the sum a few ulps past 1 for k near `bits`.
    (sum / 2.0_f64.powi(bits)).min(1.0)
}

/// The radius `k` of a clause as the planner sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Radius {
    Known(i32),
    /// A NULL constant: the clause is never true.
    Null,
    /// Only known at execution time.
    Unknown,
}

/// Selectivity of "within `radius` bits" on codes of `bits` bits when the codes involved
/// have `ndistinct` distinct values (the larger side's for a join).
fn selectivity(radius: Radius, ndistinct: f64, bits: i32) -> f64 {
    let equality = 1.0 / ndistinct.max(1.0);
    let estimate = match radius {
        Radius::Null => 0.0,
        Radius::Known(k) if k < 0 => 0.0,
        Radius::Known(k) if k >= bits => 1.0,
        Radius::Known(k) => binomial_tail(bits, k).max(equality),
        Radius::Unknown => equality,
    };
    estimate.clamp(0.0, 1.0)
}

/// `k` folded as far as the planner can (a bound parameter of a custom plan becomes a Const).
pub unsafe fn radius_of(root: *mut pg_sys::PlannerInfo, k: *mut Node) -> Radius {
    // SAFETY: `k` is a valid int4 expression of the clause; estimate_expression_value returns
    // either a Const of the same type or another expression.
    unsafe {
        let k = pg_sys::estimate_expression_value(root, k);
        if !is_a(k, pg_sys::NodeTag::T_Const) {
            return Radius::Unknown;
        }
        let k = &*k.cast::<pg_sys::Const>();
        if k.constisnull {
            Radius::Null
        } else {
            Radius::Known(k.constvalue.value() as i32)
        }
    }
}

/// The largest number of distinct values among the expressions that involve table columns
/// (the statistics' estimate, PostgreSQL's default of 200 without them).
unsafe fn ndistinct(root: *mut pg_sys::PlannerInfo, exprs: &[*mut Node], var_relid: i32) -> f64 {
    let mut most = 0.0_f64;
    for &expr in exprs.iter().filter(|e| !e.is_null()) {
        // SAFETY: examine_variable fills `data` for any expression; the statistics tuple it
        // may hold is released with the function it names (selfuncs.h ReleaseVariableStats).
        unsafe {
            if !pg_sys::contain_var_clause(expr) {
                continue;
            }
            let mut data = pg_sys::VariableStatData::default();
            pg_sys::examine_variable(root, expr, var_relid, &mut data);
            let mut is_default = false;
            most = most.max(pg_sys::get_variable_numdistinct(&mut data, &mut is_default));
            if let (false, Some(free)) = (data.statsTuple.is_null(), data.freefunc) {
                free(data.statsTuple);
            }
        }
    }
    if most > 0.0 {
        most
    } else {
        f64::from(pg_sys::DEFAULT_NUM_DISTINCT)
    }
}

/// Selectivity of `hamming_within(a, b, k)`-like clauses: `fingerprints` are the two compared
/// expressions (either may be a constant; the first is never NULL). Their type's length
/// says the codes' width: 8 bytes (simhash64, bigint), 16 (hash128) or 32 (hash256).
pub unsafe fn clause_selectivity(
    root: *mut pg_sys::PlannerInfo,
    fingerprints: &[*mut Node],
    radius: Radius,
    var_relid: i32,
) -> f64 {
    // SAFETY: forwarded from the caller, who holds the planner's own expressions.
    unsafe {
        let bits = match pg_sys::get_typlen(pg_sys::exprType(fingerprints[0])) {
            32 => 256,
            16 => 128,
            _ => 64,
        };
        selectivity(radius, ndistinct(root, fingerprints, var_relid), bits)
    }
}

/// `<@` / `@>` clauses: the fingerprint side, and the ball's radius and center as far as the
/// planner can see them (a constant ball, or a `hamming_ball(center, k)` call).
unsafe fn ball_clause_selectivity(
    root: *mut pg_sys::PlannerInfo,
    args: *mut pg_sys::List,
    var_relid: i32,
) -> f64 {
    let Some(catalog) = catalog::lookup() else {
        return pg_sys::DEFAULT_EQ_SEL;
    };
    // SAFETY: the planner passes the operator's two argument expressions.
    unsafe {
        let args: Vec<*mut Node> = list_nodes(args).collect();
        let [left, right] = args[..] else {
            return pg_sys::DEFAULT_EQ_SEL;
        };
        let (value, ball) = if ball_words(pg_sys::exprType(left), &catalog).is_some() {
            (right, left)
        } else {
            (left, right)
        };
        let (radius, center) = ball_parts(root, ball, &catalog);
        clause_selectivity(root, &[value, center], radius, var_relid)
    }
}

/// The words of the center of a ball type: 1 for `hamming_ball`, 2 and 4 for the wide
/// balls (the types their constructors return); `None` for any other type.
unsafe fn ball_words(ty: pg_sys::Oid, catalog: &Catalog) -> Option<usize> {
    if ty == catalog.ball_type {
        return Some(1);
    }
    // SAFETY: a syscache lookup of this extension's own constructors.
    let returned = |kind| unsafe { pg_sys::get_func_rettype(catalog.objects(kind).ball) };
    [(catalog::Kind::Hash128, 2), (catalog::Kind::Hash256, 4)]
        .into_iter()
        .find(|&(kind, _)| returned(kind) == ty)
        .map(|(_, words)| words)
}

/// Radius and center of a ball expression; the center is a NULL pointer when not visible
/// (then it does not count for the number of distinct values).
unsafe fn ball_parts(
    root: *mut pg_sys::PlannerInfo,
    ball: *mut Node,
    catalog: &Catalog,
) -> (Radius, *mut Node) {
    // SAFETY: `ball` is a ball expression; a non-NULL ball Const points at its center's
    // words, then the radius (HammingBall, and the wide balls' layout), and the constructor
    // calls take (center, radius).
    unsafe {
        let ball = pg_sys::estimate_expression_value(root, ball);
        if is_a(ball, pg_sys::NodeTag::T_Const) {
            let c = &*ball.cast::<pg_sys::Const>();
            if c.constisnull {
                return (Radius::Null, std::ptr::null_mut());
            }
            let Some(words) = ball_words(c.consttype, catalog) else {
                return (Radius::Unknown, std::ptr::null_mut());
            };
            let radius = c
                .constvalue
                .cast_mut_ptr::<u8>()
                .add(8 * words)
                .cast::<i32>()
                .read_unaligned();
            return (Radius::Known(radius), std::ptr::null_mut());
        }
        if is_a(ball, pg_sys::NodeTag::T_FuncExpr) {
            let call = &*ball.cast::<pg_sys::FuncExpr>();
            let args: Vec<*mut Node> = list_nodes(call.args).collect();
            if let (Some(_), [center, k]) = (catalog.ball_kind(call.funcid), &args[..]) {
                let (center, k) = (*center, *k);
                return (radius_of(root, k), center);
            }
        }
        (Radius::Unknown, std::ptr::null_mut())
    }
}

/// The estimate of `clause` over the planner's arguments, or an equality's default when
/// PostgreSQL passes none.
fn estimate_with(
    root: Internal,
    args: Internal,
    var_relid: i32,
    clause: unsafe fn(*mut pg_sys::PlannerInfo, *mut pg_sys::List, i32) -> f64,
) -> f64 {
    let (Some(root), Some(args)) = (root.unwrap(), args.unwrap()) else {
        return pg_sys::DEFAULT_EQ_SEL;
    };
    // SAFETY: an estimator is called with the PlannerInfo and the operator's argument list.
    unsafe { clause(root.cast_mut_ptr(), args.cast_mut_ptr(), var_relid) }
}

/// RESTRICT estimator of `<@` and `@>`.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming_ball_restrict(
    root: Internal,
    _operator: pg_sys::Oid,
    args: Internal,
    var_relid: i32,
) -> f64 {
    estimate_with(root, args, var_relid, ball_clause_selectivity)
}

/// JOIN estimator of `<@` and `@>`.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming_ball_join(
    root: Internal,
    _operator: pg_sys::Oid,
    args: Internal,
    _join_type: i16,
    _sjinfo: Internal,
) -> f64 {
    estimate_with(root, args, 0, ball_clause_selectivity)
}

/// Balls assumed in a batch the planner cannot see (a parameter of a generic plan, a value
/// computed while the query runs): a batch is many.
pub const UNSEEN_BATCH_BALLS: u64 = 1000;

/// What the planner sees of a `hamming_batch` expression: its radius and number of balls.
pub unsafe fn batch_parts(root: *mut pg_sys::PlannerInfo, batch: *mut Node) -> (Radius, u64) {
    // SAFETY: `batch` is a hamming_batch expression; a non-NULL Const of it is a varlena.
    unsafe {
        let batch = pg_sys::estimate_expression_value(root, batch);
        if !is_a(batch, pg_sys::NodeTag::T_Const) {
            return (Radius::Unknown, UNSEEN_BATCH_BALLS);
        }
        let c = &*batch.cast::<pg_sys::Const>();
        if c.constisnull {
            return (Radius::Null, 0);
        }
        match super::batch::header(c.constvalue) {
            Some((radius, balls)) => (Radius::Known(radius as i32), balls),
            None => (Radius::Unknown, UNSEEN_BATCH_BALLS),
        }
    }
}

/// `<@@ batch` / `batch @@>` clauses: a row matches if it is within the radius of any of the
/// batch's fingerprints, each an independent chance of "within radius" (a batch of n
/// balls selects 1 − (1 − s)^n).
unsafe fn batch_clause_selectivity(
    root: *mut pg_sys::PlannerInfo,
    args: *mut pg_sys::List,
    var_relid: i32,
) -> f64 {
    // SAFETY: the planner passes the operator's two argument expressions; the batch is
    // the variable-length one (fingerprints are 8 bytes by value).
    unsafe {
        let args: Vec<*mut Node> = list_nodes(args).collect();
        let [left, right] = args[..] else {
            return pg_sys::DEFAULT_EQ_SEL;
        };
        let (value, batch) = if pg_sys::get_typlen(pg_sys::exprType(left)) == -1 {
            (right, left)
        } else {
            (left, right)
        };
        let (radius, balls) = batch_parts(root, batch);
        let one = clause_selectivity(root, &[value], radius, var_relid);
        (-(balls as f64 * (-one).ln_1p()).exp_m1()).clamp(0.0, 1.0)
    }
}

/// RESTRICT estimator of `<@@ hamming_batch` and `hamming_batch @@>`.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming_batch_restrict(
    root: Internal,
    _operator: pg_sys::Oid,
    args: Internal,
    var_relid: i32,
) -> f64 {
    estimate_with(root, args, var_relid, batch_clause_selectivity)
}

/// JOIN estimator of `<@@ hamming_batch` and `hamming_batch @@>`.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming_batch_join(
    root: Internal,
    _operator: pg_sys::Oid,
    args: Internal,
    _join_type: i16,
    _sjinfo: Internal,
) -> f64 {
    estimate_with(root, args, 0, batch_clause_selectivity)
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn binomial_tail_matches_exact_counts() {
        // C(64,0..=3) = 1 + 64 + 2016 + 41664.
        assert_eq!(binomial_tail(64, 3), 43745.0 / 2.0_f64.powi(64));
        assert_eq!(binomial_tail(64, -1), 0.0);
        assert_eq!(binomial_tail(64, 64), 1.0);
        // Symmetry about 32, and P[X = 32] = C(64, 32) / 2^64 = 0.0993.
        assert!((binomial_tail(64, 31) + binomial_tail(64, 32) - 1.0).abs() < 1e-12);
        assert!((binomial_tail(64, 32) - binomial_tail(64, 31) - 0.0993).abs() < 1e-4);
        // Increasing (strictly until the remaining mass drops below f64's resolution near 1).
        assert!((1..=64).all(|k| binomial_tail(64, k) >= binomial_tail(64, k - 1)));
        assert!((1..=50).all(|k| binomial_tail(64, k) > binomial_tail(64, k - 1)));
        // Wide codes: C(256, 0..=1) = 257; symmetric about 128 (P[X = 128] = 0.0498).
        assert_eq!(binomial_tail(256, 1), 257.0 / 2.0_f64.powi(256));
        assert!((binomial_tail(256, 127) + binomial_tail(256, 128) - 1.0).abs() < 1e-12);
        assert!((binomial_tail(256, 128) - binomial_tail(256, 127) - 0.0498).abs() < 1e-4);
        assert!((binomial_tail(128, 63) + binomial_tail(128, 64) - 1.0).abs() < 1e-12);
        assert_eq!(binomial_tail(256, 256), 1.0);
    }

    #[test]
    fn selectivity_has_an_equality_floor_and_stays_a_probability() {
        assert_eq!(selectivity(Radius::Known(3), 10_000.0, 64), 1e-4);
        assert_eq!(selectivity(Radius::Unknown, 200.0, 64), 0.005);
        assert!(selectivity(Radius::Known(40), 10_000.0, 64) > 0.9);
        assert_eq!(selectivity(Radius::Known(64), 10.0, 64), 1.0);
        assert_eq!(selectivity(Radius::Known(i32::MAX), 10.0, 64), 1.0);
        assert_eq!(selectivity(Radius::Known(-1), 1.0, 64), 0.0);
        assert_eq!(selectivity(Radius::Known(i32::MIN), 1.0, 64), 0.0);
        assert_eq!(selectivity(Radius::Null, 1.0, 64), 0.0);
        assert_eq!(selectivity(Radius::Known(0), 0.0, 64), 1.0);
        // PDQ's match radius on 256 bits selects what an equality would, not 40 % of 64 bits'.
        assert_eq!(selectivity(Radius::Known(31), 10_000.0, 256), 1e-4);
        assert!(selectivity(Radius::Known(120), 10_000.0, 256) > 0.1);
        assert_eq!(selectivity(Radius::Known(200), 10.0, 128), 1.0);
    }
}
