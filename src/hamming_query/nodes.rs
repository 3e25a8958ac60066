//! Small helpers for reading and building planner nodes (all memory palloc'd by PostgreSQL in
//! the current context, as the planner expects).

use pgrx::pg_sys::{self, Node};

/// The elements of a `List` of nodes (nothing for NIL).
pub unsafe fn list_nodes<'a>(list: *mut pg_sys::List) -> impl Iterator<Item = *mut Node> + 'a {
    // SAFETY: a non-NIL List has `length` initialized cells at `elements`.
    let cells: &[pg_sys::ListCell] = unsafe {
        if list.is_null() {
            &[]
        } else {
            std::slice::from_raw_parts((*list).elements, (*list).length as usize)
        }
    };
    // SAFETY: the cells of a node list hold pointers.
    cells
        .iter()
        .map(|cell| unsafe { cell.ptr_value.cast::<Node>() })
}

/// A new `List` of the given nodes.
pub unsafe fn node_list(nodes: &[*mut Node]) -> *mut pg_sys::List {
    // SAFETY: lappend to NIL creates the list; it stores the pointers, not copies.
    nodes
        .iter()
        .fold(std::ptr::null_mut(), |list, &node| unsafe {
            pg_sys::lappend(list, node.cast())
        })
}

/// A non-NULL `integer` constant.
pub unsafe fn int4_const(value: i32) -> *mut Node {
    // SAFETY: int4 is 4 bytes, passed by value.
    unsafe {
        pg_sys::makeConst(
            pg_sys::INT4OID,
            -1,
            pg_sys::InvalidOid,
            4,
            pg_sys::Datum::from(value),
            false,
            true,
        )
        .cast()
    }
}

/// `int4larger(expr, floor)`, the built-in behind `GREATEST` for integers, but STRICT: a NULL
/// `expr` stays NULL, as every comparison it replaces would be.
pub unsafe fn int4larger(expr: *mut Node, floor: i32) -> *mut Node {
    // SAFETY: F_INT4LARGER is int4larger(int4, int4) returning int4.
    unsafe {
        pg_sys::makeFuncExpr(
            pg_sys::Oid::from(pg_sys::F_INT4LARGER),
            pg_sys::INT4OID,
            node_list(&[expr, int4_const(floor)]),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
            pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
        )
        .cast()
    }
}
