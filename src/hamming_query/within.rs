//! `hamming_within(a, b, k)` = `hamming(a, b) <= k`, and its planner support function:
//! the selectivity estimate, and the index condition `indexed <@ hamming_ball(other, k)` for
//! an index of the `hamming` access method.

use super::catalog::{self, Catalog};
use super::estimate::{clause_selectivity, radius_of, Radius};
use super::nodes::{int4larger, list_nodes, node_list};
use super::rewrite::{GENERATED, INT4_LE};
use crate::simhash64::Simhash64;
use neardup_core::signatures::simhash::hamming;
use pgrx::pg_sys::{self, Node};
use pgrx::prelude::*;
use pgrx::{is_a, Internal};
use std::ffi::CStr;

/// True when `a` and `b` differ in at most `k` bits (false for any negative `k`).
#[pg_extern(
    immutable,
    strict,
    parallel_safe,
    name = "hamming_within",
    support = hamming_within_support
)]
fn hamming_within_simhash64(a: Simhash64, b: Simhash64, k: i32) -> bool {
    hamming(a.0, b.0) as i64 <= k as i64
}

/// The bigint overload: the 64 bits of each value, as `bigint::simhash64` reads them.
#[pg_extern(
    immutable,
    strict,
    parallel_safe,
    name = "hamming_within",
    support = hamming_within_support
)]
fn hamming_within_int8(a: i64, b: i64, k: i32) -> bool {
    hamming(a as u64, b as u64) as i64 <= k as i64
}

/// Planner support for both `hamming_within` overloads. Returns a NULL pointer (not an SQL
/// NULL, which the planner would reject) for requests it does not handle.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming_within_support(request: Internal) -> Internal {
    let unhandled = Internal::from(Some(pg_sys::Datum::from(0)));
    let Some(request) = request.unwrap() else {
        return unhandled;
    };
    let Some(catalog) = catalog::lookup() else {
        return unhandled;
    };
    let node = request.cast_mut_ptr::<Node>();
    // SAFETY: a support function is called with a pointer to a SupportRequest* node; its
    // tag says which struct it is.
    let answer: *mut std::ffi::c_void = unsafe {
        if is_a(node, pg_sys::NodeTag::T_SupportRequestSelectivity) {
            selectivity(&mut *node.cast(), &catalog)
        } else if is_a(node, pg_sys::NodeTag::T_SupportRequestIndexCondition) {
            index_condition(&mut *node.cast(), &catalog).cast()
        } else {
            std::ptr::null_mut()
        }
    };
    Internal::from(Some(pg_sys::Datum::from(answer)))
}

/// Fills in the selectivity and returns the request, or NULL if the call is not ours.
///
/// A call the planner hook built stands beside the bound it was built from, and PostgreSQL
/// multiplies the two estimates; so its estimate is divided by that bound's, and the product
/// is this estimate (or the bound's, when lower). See `rewrite.rs`.
unsafe fn selectivity(
    request: &mut pg_sys::SupportRequestSelectivity,
    catalog: &Catalog,
) -> *mut std::ffi::c_void {
    let Some(kind) = catalog.within_kind(request.funcid) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the planner's pre-simplified argument list of a 3-argument call, and its own
    // PlannerInfo and join description for estimating the bound.
    unsafe {
        let args: Vec<*mut Node> = list_nodes(request.args).collect();
        let [a, b, k] = args[..] else {
            return std::ptr::null_mut();
        };
        let var_relid = if request.is_join { 0 } else { request.varRelid };
        let estimate =
            clause_selectivity(request.root, &[a, b], radius_of(request.root, k), var_relid);
        request.selectivity = if request.inputcollid == GENERATED {
            let kept = pg_sys::clause_selectivity(
                request.root,
                bound_clause(catalog.objects(kind).hamming, a, b, k),
                request.varRelid,
                request.jointype,
                request.sjinfo,
            );
            if kept > estimate {
                estimate / kept
            } else {
                1.0
            }
        } else {
            estimate
        };
    }
    (request as *mut pg_sys::SupportRequestSelectivity).cast()
}

/// `hamming(a, b) <= k`: the bound a generated call was built from (a `<` bound has become
/// `<=` one less, the same rows).
unsafe fn bound_clause(
    hamming: pg_sys::Oid,
    a: *mut Node,
    b: *mut Node,
    k: *mut Node,
) -> *mut Node {
    // SAFETY: `hamming` takes (a, b) and returns integer; INT4_LE compares two integers.
    unsafe {
        let distance = pg_sys::makeFuncExpr(
            hamming,
            pg_sys::INT4OID,
            node_list(&[a, b]),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
            pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
        );
        let clause = pg_sys::make_opclause(
            INT4_LE,
            pg_sys::BOOLOID,
            false,
            distance.cast(),
            k.cast(),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
        );
        (*clause.cast::<pg_sys::OpExpr>()).opfuncid = pg_sys::Oid::from(pg_sys::F_INT4LE);
        clause.cast()
    }
}

/// `index_column <@ hamming_ball(other, k)` as a one-element List, or NIL when the index is not
/// one of ours or `other` / `k` cannot be computed before scanning the index's table.
unsafe fn index_condition(
    request: &mut pg_sys::SupportRequestIndexCondition,
    catalog: &Catalog,
) -> *mut pg_sys::List {
    let Some(kind) = catalog.within_kind(request.funcid) else {
        return std::ptr::null_mut();
    };
    let objects = catalog.objects(kind);
    // SAFETY: the planner passes the FuncExpr being matched, its IndexOptInfo and the
    // opfamily of the matched column; every node built below is palloc'd by PostgreSQL.
    unsafe {
        if !is_a(request.node, pg_sys::NodeTag::T_FuncExpr) || !is_hamming_am(request.index) {
            return std::ptr::null_mut();
        }
        // Membership of our operator is what makes the opfamily ours; it also rejects a
        // bigint overload matched through a binary-coercible cast of a simhash64 column.
        if !pg_sys::op_in_opfamily(objects.within_ball, request.opfamily) {
            return std::ptr::null_mut();
        }
        let call = &*request.node.cast::<pg_sys::FuncExpr>();
        let args: Vec<*mut Node> = list_nodes(call.args).collect();
        let (indexed, other, k) = match (request.indexarg, &args[..]) {
            (0, &[a, b, k]) => (a, b, k),
            (1, &[a, b, k]) => (b, a, k),
            _ => return std::ptr::null_mut(),
        };
        for expr in [other, k] {
            if !pg_sys::is_pseudo_constant_for_index(request.root, expr, request.index) {
                return std::ptr::null_mut();
            }
        }
        // A ball cannot have a negative radius (the constructor raises an ERROR), while
        // hamming_within is simply false then. A constant k (written so, or a parameter of a
        // custom plan, already substituted) is checked here and the index answer is exact.
        // Any other k can differ at each execution from what the planner could estimate (a
        // parameter of a generic plan, or a STABLE expression like
        // `current_setting('my.k')::int`, even in a custom plan): it is clamped to >= 0 and
        // the index answer rechecked against the original call (a popcount per row).
        let (radius, lossy) = if is_a(k, pg_sys::NodeTag::T_Const) {
            if let Radius::Known(r) = radius_of(request.root, k) {
                if r < 0 {
                    return std::ptr::null_mut();
                }
            }
            (k, false)
        } else {
            (int4larger(k, 0), true)
        };
        let ball = pg_sys::makeFuncExpr(
            objects.ball,
            catalog.ball_type,
            node_list(&[other, radius]),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
            pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
        );
        let clause = pg_sys::make_opclause(
            objects.within_ball,
            pg_sys::BOOLOID,
            false,
            indexed.cast(),
            ball.cast(),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
        );
        (*clause.cast::<pg_sys::OpExpr>()).opfuncid = pg_sys::get_opcode(objects.within_ball);
        request.lossy = lossy;
        node_list(&[clause.cast()])
    }
}

/// Whether the index belongs to the `hamming` access method (the one in `src/am`).
unsafe fn is_hamming_am(index: *mut pg_sys::IndexOptInfo) -> bool {
    // SAFETY: the planner's IndexOptInfo; get_am_name returns a palloc'd name or NULL.
    unsafe {
        let name = pg_sys::get_am_name((*index).relam);
        !name.is_null() && CStr::from_ptr(name) == c"hamming"
    }
}
