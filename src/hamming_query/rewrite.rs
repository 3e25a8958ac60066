//! The planner hook: where an index of the `hamming` access method can serve an upper bound
//! on a Hamming distance, adds the `hamming_within` call whose support function can use it
//! and estimate its selectivity, keeping the bound as written beside it (or replacing it,
//! when an operand must be evaluated once).
//!
//! | written                          | planned                                             |
//! |----------------------------------|-----------------------------------------------------|
//! | `hamming(x, y) <= k`, `k >= ...` | `hamming(x, y) <= k AND hamming_within(x, y, k)`    |
//! | `hamming(x, y) < k`, `k > ...`   | `hamming(x, y) < k AND hamming_within(x, y, k - 1)` |
//! | the same, x, y or k volatile or  | `hamming_within(x, y, k)`, `hamming_within(x, y,    |
//! | holding a subquery               | k - 1)`: the bound replaced, not kept               |
//!
//! and the same with `x <~> y`, for `simhash64`, `bigint`, `hash256` and `hash128`. Only the built-in `integer`
//! comparison operators are matched, so nothing else changes. The rewrite is exact, NULLs
//! included: every function involved is STRICT, and both conjuncts evaluate the same three
//! expressions, so they are NULL, true or false together. For a `k` only known at run time,
//! `k - 1` is built as `int4larger(k, -1) - 1`, which cannot overflow where `k - 1` would
//! (k = -2147483648, where `hamming(x, y) < k` is simply false), and reads `k` once.
//!
//! **Evaluated once.** Keeping the bound copies x, y and k into the call, and each copy is
//! evaluated on its own: a volatile function would be called twice a row, and a subquery
//! planned twice, as two InitPlans that each pick their own row
//! (`hamming(fp, (SELECT fp FROM t ORDER BY random() LIMIT 1)) <= 0` found no row when the
//! index condition read one pick and the kept bound the other). So when an operand is
//! volatile or holds a subquery, the call alone, on the operands themselves, replaces the
//! bound, as the explicit `hamming_within` form would be planned. A subquery's InitPlan is
//! then computed once and still probes the index; a volatile probe cannot (the support
//! function, like PostgreSQL, gives an index condition only for a probe and radius that are
//! not volatile and do not read the indexed table). What the kept bound gives beyond the
//! call (below) is lost there, e.g. run-time partition pruning by a subquery's radius.
//!
//! **Only where it can help.** A bound is rewritten only when `x` or `y` is a column with a
//! `hamming` index: a Var of the query level of the bound (maybe under a RelabelType) of a
//! table with such an index on that column, or on the same column of one of its partitions
//! or inheritance children ([`catalog::has_hamming_index`]); or a Var of a subquery, view,
//! set operation or join whose output column is such a column in turn, since the planner
//! pulls those up or pushes quals down into them after this hook. Elsewhere the query is
//! planned exactly as written.
//!
//! **Nothing lost.** The bound is kept, so whatever PostgreSQL itself derives from it still
//! works: a btree index on the expression `hamming(fp, 0::bigint)`, a partial index whose
//! predicate is such a bound, constraint exclusion by a CHECK constraint and partition
//! pruning on a partition key `hamming(...)`. The cost is one more popcount per row that the
//! index returns (the kept bound is a filter there).
//!
//! **Selectivity.** PostgreSQL multiplies the selectivities of the two conjuncts, and the
//! kept bound's is the default guess for an inequality on an expression (1/3) unless
//! statistics on that very expression exist. So the hook marks a call it keeps the bound
//! beside (below, [`GENERATED`])
//! and the support function answers, for a marked call, its own estimate divided by the
//! kept bound's (at most 1): the product is then the support function's estimate, or the
//! kept bound's when that is lower (only for radii of about 30 bits and more, far above a
//! near-duplicate search's, when there are no statistics on the distance). The mark is the
//! call's input collation: the arguments are not collatable, so the parser leaves every
//! written call's at InvalidOid, no SQL can set it, and the function ignores it.
//!
//! The whole Query is walked, subqueries, CTEs, sublinks and join quals included, first
//! read-only (most queries have nothing to rewrite and are not copied), then with
//! `query_tree_mutator`, which copies the expression nodes it passes through in the
//! planner's memory context. Query nodes themselves are updated in place: the planner may
//! scribble on the Query it is given (the plan cache hands it a copy).
//!
//! One place is left alone: above a GROUP BY on the distance itself. In
//! `SELECT hamming(fp, q) <= 3 ... GROUP BY ROLLUP (hamming(fp, q))` the comparison reads the
//! grouped value, which is NULL in the rolled-up row; `hamming_within(fp, q, 3)` would read
//! `fp` of some row of the group instead. So in the target list and HAVING of a grouped
//! query, a bound whose distance is a grouping expression is kept. Nothing is lost: an index
//! or a selectivity estimate only matters below the grouping.

use super::catalog::{self, Catalog, Kind};
use super::nodes::{int4_const, int4larger, list_nodes, node_list};
use pgrx::pg_sys::{self, Node, Oid};
use pgrx::{is_a, pg_guard};
use std::ffi::c_void;

/// The input collation that marks a `hamming_within` call as built by this hook, beside the
/// bound it stands for (see the module comment).
pub const GENERATED: Oid = pg_sys::C_COLLATION_OID;

// The built-in `integer` operators (pg_operator.dat); a test checks them against regoperator.
const INT4_LT: Oid = Oid::from_u32(97);
const INT4_GT: Oid = Oid::from_u32(521);
pub const INT4_LE: Oid = Oid::from_u32(523);
const INT4_GE: Oid = Oid::from_u32(525);
const INT4_MINUS: Oid = Oid::from_u32(555);

// SAFETY (all accesses): a backend is single-threaded; written once by _PG_init.
static mut PREVIOUS_PLANNER: pg_sys::planner_hook_type = None;

pub fn install_planner_hook() {
    // SAFETY: _PG_init runs once per process, before any planning in it; chaining keeps any
    // hook installed by a library loaded earlier.
    unsafe {
        PREVIOUS_PLANNER = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(planner);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn planner(
    parse: *mut pg_sys::Query,
    query_string: *const std::ffi::c_char,
    cursor_options: std::ffi::c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    // SAFETY: `parse` is the planner's own Query (see the module comment); the previous hook
    // is a C function with the planner_hook signature, called behind an FFI guard so its
    // ERRORs unwind through this frame properly.
    unsafe {
        if let Some(catalog) = catalog::lookup() {
            rewrite_query(parse, &catalog);
        }
        match PREVIOUS_PLANNER {
            Some(previous) => pg_sys::ffi::pg_guard_ffi_boundary(|| {
                previous(parse, query_string, cursor_options, bound_params)
            }),
            None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params),
        }
    }
}

/// What the mutator carries down the tree.
struct Context {
    catalog: Catalog,
    /// The Query whose expressions are being rewritten (where its Vars point).
    query: *mut pg_sys::Query,
    /// The grouping expressions, while in the target list or HAVING of a grouped query.
    group_exprs: *mut pg_sys::List,
}

impl Context {
    fn as_ptr(&self) -> *mut c_void {
        (self as *const Context).cast_mut().cast()
    }

    /// Whether `bound` must stay as written (see the module comment).
    unsafe fn keeps(&self, bound: &Bound) -> bool {
        // SAFETY: group_exprs is NIL or a List of the query's grouping expressions.
        unsafe {
            list_nodes(self.group_exprs).any(|e| pg_sys::equal(e.cast(), bound.distance.cast()))
        }
    }
}

/// What the read-only walk carries down the tree.
struct Walk<'a> {
    catalog: &'a Catalog,
    /// The Query whose expressions are being walked.
    query: *mut pg_sys::Query,
}

impl Walk<'_> {
    fn as_ptr(&self) -> *mut c_void {
        (self as *const Self).cast_mut().cast()
    }
}

/// Rewrites `query` in place.
unsafe fn rewrite_query(query: *mut pg_sys::Query, catalog: &Catalog) {
    // SAFETY: the walk only reads its context through the pointer, which outlives it.
    unsafe {
        let walk = Walk { catalog, query };
        if !pg_sys::query_tree_walker(query, Some(find_bound), walk.as_ptr(), 0) {
            return;
        }
        let context = Context {
            catalog: *catalog,
            query,
            group_exprs: std::ptr::null_mut(),
        };
        rewrite_query_node(query, &context);
    }
}

/// Rewrites one Query node in place; `outer` is the context it was reached in.
unsafe fn rewrite_query_node(query: *mut pg_sys::Query, outer: &Context) {
    // A subquery's own grouping is all that matters in it: the parser lets a subquery use
    // only grouped Vars of an outer grouped query, not outer grouping expressions.
    let inner = Context {
        catalog: outer.catalog,
        query,
        group_exprs: std::ptr::null_mut(),
    };
    // SAFETY: `query` is a Query of the tree being planned; the target list and HAVING are
    // detached while the rest is mutated, then mutated with the grouping context and put
    // back. query_tree_mutator with QTW_DONT_COPY_QUERY assigns the query's fields in place.
    unsafe {
        let q = &mut *query;
        let grouped = !q.groupClause.is_null();
        let (target_list, having) = if grouped {
            (
                std::mem::replace(&mut q.targetList, std::ptr::null_mut()),
                std::mem::replace(&mut q.havingQual, std::ptr::null_mut()),
            )
        } else {
            (std::ptr::null_mut(), std::ptr::null_mut())
        };
        query_tree_mutator(query, inner.as_ptr());
        if grouped {
            let group_exprs = node_list(
                &list_nodes(q.groupClause)
                    .map(|clause| {
                        pg_sys::get_sortgroupclause_expr(clause.cast(), target_list).cast()
                    })
                    .collect::<Vec<_>>(),
            );
            let grouping = Context {
                group_exprs,
                ..inner
            };
            q.targetList = rewrite_node(target_list.cast(), grouping.as_ptr()).cast();
            q.havingQual = rewrite_node(having, grouping.as_ptr());
        }
    }
}

/// A bound on a distance: `hamming(x, y) <= k` (`strict` for `<`).
struct Bound {
    kind: Kind,
    /// The `hamming(x, y)` or `x <~> y` node.
    distance: *mut Node,
    x: *mut Node,
    y: *mut Node,
    k: *mut Node,
    strict: bool,
    location: i32,
}

/// The bound `node` is, whether or not rewriting it can help.
unsafe fn match_bound(node: *mut Node, catalog: &Catalog) -> Option<Bound> {
    // SAFETY: `node` is a valid node; an OpExpr's args is a List of its operands.
    unsafe {
        if !is_a(node, pg_sys::NodeTag::T_OpExpr) {
            return None;
        }
        let op = &*node.cast::<pg_sys::OpExpr>();
        let args: Vec<*mut Node> = list_nodes(op.args).collect();
        let [left, right] = args[..] else {
            return None;
        };
        let (distance, k, strict) = match op.opno {
            INT4_LE => (left, right, false),
            INT4_LT => (left, right, true),
            INT4_GE => (right, left, false),
            INT4_GT => (right, left, true),
            _ => return None,
        };
        let (kind, x, y) = match_distance(distance, catalog)?;
        Some(Bound {
            kind,
            distance,
            x,
            y,
            k,
            strict,
            location: op.location,
        })
    }
}

/// `hamming(x, y)` or `x <~> y` (whose function is `hamming`).
unsafe fn match_distance(
    node: *mut Node,
    catalog: &Catalog,
) -> Option<(Kind, *mut Node, *mut Node)> {
    // SAFETY: `node` is a valid node; FuncExpr and OpExpr args are Lists of expressions.
    unsafe {
        let (function, args) = if is_a(node, pg_sys::NodeTag::T_FuncExpr) {
            let call = &*node.cast::<pg_sys::FuncExpr>();
            (call.funcid, call.args)
        } else if is_a(node, pg_sys::NodeTag::T_OpExpr) {
            let op = &*node.cast::<pg_sys::OpExpr>();
            // The parser always fills opfuncid; nodes built elsewhere may leave it 0.
            let function = if op.opfuncid == pg_sys::InvalidOid {
                pg_sys::get_opcode(op.opno)
            } else {
                op.opfuncid
            };
            (function, op.args)
        } else {
            return None;
        };
        let kind = catalog.hamming_kind(function)?;
        let args: Vec<*mut Node> = list_nodes(args).collect();
        match args[..] {
            [x, y] => Some((kind, x, y)),
            _ => None,
        }
    }
}

/// Whether an index can serve `bound`, an expression of `query`: one of its sides is a column
/// with a `hamming` index.
unsafe fn helps(bound: &Bound, query: *mut pg_sys::Query, catalog: &Catalog) -> bool {
    // SAFETY: both sides are expressions of `query`.
    [bound.x, bound.y]
        .into_iter()
        .any(|side| unsafe { indexed_column(side, query, catalog) })
}

/// Whether `node`, an expression of `query`, is a column with a `hamming` index, directly or
/// through subqueries and joins (see the module comment).
unsafe fn indexed_column(node: *mut Node, query: *mut pg_sys::Query, catalog: &Catalog) -> bool {
    // SAFETY: a Var of `query`'s own level indexes its range table (from 1), and a range
    // table entry's fields are those of its kind.
    unsafe {
        let mut node = node;
        while is_a(node, pg_sys::NodeTag::T_RelabelType) {
            node = (*node.cast::<pg_sys::RelabelType>()).arg.cast();
        }
        if !is_a(node, pg_sys::NodeTag::T_Var) {
            return false;
        }
        let var = &*node.cast::<pg_sys::Var>();
        if var.varlevelsup != 0 || var.varattno <= 0 || var.varno <= 0 {
            return false;
        }
        let Some(entry) = list_nodes((*query).rtable).nth(var.varno as usize - 1) else {
            return false;
        };
        let entry = &*entry.cast::<pg_sys::RangeTblEntry>();
        match entry.rtekind {
            pg_sys::RTEKind::RTE_RELATION => {
                catalog::has_hamming_index(catalog, entry.relid, var.varattno)
            }
            pg_sys::RTEKind::RTE_SUBQUERY => {
                output_column_indexed(entry.subquery, var.varattno, catalog)
            }
            pg_sys::RTEKind::RTE_JOIN => list_nodes(entry.joinaliasvars)
                .nth(var.varattno as usize - 1)
                .is_some_and(|alias| indexed_column(alias, query, catalog)),
            _ => false,
        }
    }
}

/// Whether output column `column` of `query` is a column with a `hamming` index (of any of
/// its branches, for a set operation).
unsafe fn output_column_indexed(
    query: *mut pg_sys::Query,
    column: pg_sys::AttrNumber,
    catalog: &Catalog,
) -> bool {
    // SAFETY: `query` is a subquery of the tree being planned; the leaves of a set
    // operation are the subqueries of its range table, each with the same output columns.
    unsafe {
        pg_sys::check_stack_depth();
        let q = &*query;
        if !q.setOperations.is_null() {
            return list_nodes(q.rtable).any(|entry| {
                let entry = &*entry.cast::<pg_sys::RangeTblEntry>();
                entry.rtekind == pg_sys::RTEKind::RTE_SUBQUERY
                    && output_column_indexed(entry.subquery, column, catalog)
            });
        }
        list_nodes(q.targetList)
            .map(|target| &*target.cast::<pg_sys::TargetEntry>())
            .find(|target| target.resno == column && !target.resjunk)
            .is_some_and(|target| indexed_column(target.expr.cast(), query, catalog))
    }
}

/// Query-tree walker: is there any bound to rewrite?
#[pg_guard]
unsafe extern "C-unwind" fn find_bound(node: *mut Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    // SAFETY: `context` is the Walk of the enclosing Query; the walkers accept any node.
    unsafe {
        let walk = &*context.cast::<Walk>();
        if is_a(node, pg_sys::NodeTag::T_Query) {
            let inner = Walk {
                catalog: walk.catalog,
                query: node.cast(),
            };
            return pg_sys::query_tree_walker(node.cast(), Some(find_bound), inner.as_ptr(), 0);
        }
        if match_bound(node, walk.catalog).is_some_and(|b| helps(&b, walk.query, walk.catalog)) {
            return true;
        }
        pg_sys::expression_tree_walker(node, Some(find_bound), context)
    }
}

/// Query-tree mutator: the node with every bound in it rewritten.
#[pg_guard]
unsafe extern "C-unwind" fn rewrite_node(node: *mut Node, context: *mut c_void) -> *mut Node {
    if node.is_null() {
        return node;
    }
    // SAFETY: `context` is the Context of the walk; the mutators return palloc'd copies.
    unsafe {
        let ctx = &*context.cast::<Context>();
        if is_a(node, pg_sys::NodeTag::T_Query) {
            rewrite_query_node(node.cast(), ctx);
            return node;
        }
        if let Some(bound) = match_bound(node, &ctx.catalog) {
            if !ctx.keeps(&bound) && helps(&bound, ctx.query, &ctx.catalog) {
                return rewrite_bound(node, &ctx.catalog, context);
            }
        }
        expression_tree_mutator(node, context)
    }
}

/// The bound `node` rewritten: its operands rewritten in turn (they may hold sublinks with
/// bounds of their own), then `bound AND hamming_within(x, y, k)` on copies of them (the
/// planner expects no node to be reachable twice), or `hamming_within(x, y, k)` alone on
/// the operands themselves when one must be evaluated once (see the module comment).
unsafe fn rewrite_bound(node: *mut Node, catalog: &Catalog, context: *mut c_void) -> *mut Node {
    // SAFETY: the mutator copies the OpExpr and rewrites its operands, which leaves its shape
    // (a bound) unchanged; copyObjectImpl copies any node tree; the new nodes are palloc'd.
    unsafe {
        let kept = expression_tree_mutator(node, context);
        let Some(bound) = match_bound(kept, catalog) else {
            return kept;
        };
        let once = [bound.x, bound.y, bound.k]
            .into_iter()
            .any(|n| evaluated_once(n));
        let operand = |n: *mut Node| {
            if once {
                n
            } else {
                pg_sys::copyObjectImpl(n.cast()).cast::<Node>()
            }
        };
        let mut k = operand(bound.k);
        if bound.strict {
            k = minus_one(k);
        }
        // A wide code's hamming_within is SQL, inlined into the ball: no support function
        // reads the mark, and its estimate is the ball's. A call standing alone is unmarked:
        // there is no kept bound's estimate to divide out.
        let mark = if bound.kind.is_wide() || once {
            pg_sys::InvalidOid
        } else {
            GENERATED
        };
        let call = pg_sys::makeFuncExpr(
            catalog.objects(bound.kind).within,
            pg_sys::BOOLOID,
            node_list(&[operand(bound.x), operand(bound.y), k]),
            pg_sys::InvalidOid,
            mark,
            pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
        );
        (*call).location = bound.location;
        if once {
            return call.cast();
        }
        pg_sys::make_andclause(node_list(&[kept, call.cast()])).cast()
    }
}

/// Whether `operand` must not be copied: each copy of a volatile function would be called,
/// and each copy of a sublink planned as a subplan of its own, computed on its own (even a
/// non-volatile one need not give the same row twice: `LIMIT 1` without `ORDER BY`).
/// `contain_volatile_functions` looks inside sublinks' queries too.
unsafe fn evaluated_once(operand: *mut Node) -> bool {
    // SAFETY: `operand` is an expression tree; both walkers only read it.
    unsafe { pg_sys::contain_subplans(operand) || pg_sys::contain_volatile_functions(operand) }
}

/// `k - 1` for an integer expression, exact for every k (see the module comment).
unsafe fn minus_one(k: *mut Node) -> *mut Node {
    // SAFETY: `k` is an int4 expression; a non-NULL int4 Const holds its value in the Datum.
    unsafe {
        if is_a(k, pg_sys::NodeTag::T_Const) {
            let c = &*k.cast::<pg_sys::Const>();
            if c.constisnull {
                return k;
            }
            // saturating: below any distance either way.
            return int4_const((c.constvalue.value() as i32).saturating_sub(1));
        }
        let minus = pg_sys::make_opclause(
            INT4_MINUS,
            pg_sys::INT4OID,
            false,
            int4larger(k, -1).cast(),
            int4_const(1).cast(),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
        );
        (*minus.cast::<pg_sys::OpExpr>()).opfuncid = Oid::from(pg_sys::F_INT4MI);
        minus.cast()
    }
}

/// `expression_tree_mutator(node, rewrite_node, context)`.
unsafe fn expression_tree_mutator(node: *mut Node, context: *mut c_void) -> *mut Node {
    // SAFETY: as the caller's; rewrite_node is a tree mutator callback.
    unsafe {
        #[cfg(feature = "pg15")]
        return pg_sys::expression_tree_mutator(node, mutator_callback(), context);
        // 16 made the mutators macros over `_impl` functions with typed callbacks
        #[cfg(not(feature = "pg15"))]
        return pg_sys::expression_tree_mutator_impl(node, Some(rewrite_node), context);
    }
}

/// `query_tree_mutator(query, rewrite_node, context, QTW_DONT_COPY_QUERY)`: mutates the
/// query's fields in place.
unsafe fn query_tree_mutator(query: *mut pg_sys::Query, context: *mut c_void) {
    let flags = pg_sys::QTW_DONT_COPY_QUERY as i32;
    // SAFETY: as the caller's; rewrite_node is a tree mutator callback.
    unsafe {
        #[cfg(feature = "pg15")]
        pg_sys::query_tree_mutator(query, mutator_callback(), context, flags);
        #[cfg(not(feature = "pg15"))]
        pg_sys::query_tree_mutator_impl(query, Some(rewrite_node), context, flags);
    }
}

/// [`rewrite_node`] as PostgreSQL 15 declares mutator callbacks.
#[cfg(feature = "pg15")]
fn mutator_callback() -> Option<unsafe extern "C-unwind" fn() -> *mut Node> {
    type Mutator = unsafe extern "C-unwind" fn(*mut Node, *mut c_void) -> *mut Node;
    // SAFETY: PostgreSQL 15's headers declare the callback K&R-style, `Node *(*)()`, and call
    // it as `(Node *, void *)`, which is rewrite_node's real signature; only the pointer's
    // static type changes, never the call.
    Some(unsafe {
        std::mem::transmute::<Mutator, unsafe extern "C-unwind" fn() -> *mut Node>(rewrite_node)
    })
}
