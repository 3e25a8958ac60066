//! The `priority` argument of `neardup_clusters` and cluster tracking: the sort keys that
//! choose each cluster's representative (`length(url), id`, `rank DESC`). It is written in
//! SQL over the table's columns, so before it goes into a query PostgreSQL's own parser
//! checks that it is exactly an ORDER BY list in that place and nothing more:
//!
//! - `SELECT 1 FROM <table> ORDER BY <priority>` (and a line break, which ends a trailing
//!   `--` comment) must parse as one plain SELECT whose only clauses are that FROM and that
//!   ORDER BY. Text that closes the list and adds anything — a `;` and another statement,
//!   `LIMIT`, `FOR UPDATE`, a set operation — is refused, ERROR 42601.
//! - Analysed against the table, the sort keys may not hold a subquery, a set-returning
//!   function, an aggregate or a window function (each would change the rows, not only
//!   their order), ERROR 0A000. Unknown columns and functions fail as in any query.
//!
//! Only then is the text used, in exactly the position it was checked in.

use crate::support::errors;
use pgrx::pg_sys::{self, NodeTag};
use pgrx::{is_a, PgSqlErrorCode, PgTryBuilder};
use std::ffi::CString;

/// `priority` checked as the ORDER BY list of `relation` (a quoted, qualified name); returns
/// the text to put after `ORDER BY`.
pub fn checked(function: &str, relation: &str, priority: &str) -> String {
    let refuse = |code: PgSqlErrorCode, why: &str| -> ! {
        errors::raise(code, format!("{function}: priority \"{priority}\" {why}"))
    };
    let list = format!("{priority}\n");
    let sql = CString::new(format!("SELECT 1 FROM {relation} ORDER BY {list}"))
        .unwrap_or_else(|_| refuse(PgSqlErrorCode::ERRCODE_SYNTAX_ERROR, "holds a NUL byte"));
    // SAFETY: raw_parser reads the C string and returns a palloc'd List of RawStmt; a
    // syntax error is caught and raised again as ours (the transaction aborts either way).
    let statements = PgTryBuilder::new(|| unsafe {
        pg_sys::raw_parser(sql.as_ptr(), pg_sys::RawParseMode::RAW_PARSE_DEFAULT)
    })
    .catch_others(|e| {
        let message = match &e {
            pgrx::pg_sys::panic::CaughtError::PostgresError(report)
            | pgrx::pg_sys::panic::CaughtError::ErrorReport(report) => report.message().to_string(),
            pgrx::pg_sys::panic::CaughtError::RustPanic { ereport, .. } => {
                ereport.message().to_string()
            }
        };
        refuse(
            PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
            &format!("is not a list of sort expressions ({message})"),
        )
    })
    .execute();
    // SAFETY: the parser's output: a List of RawStmt whose stmt fields are parse nodes.
    unsafe {
        let only_select = pgrx::PgList::<pg_sys::RawStmt>::from_pg(statements);
        let raw = match only_select.len() {
            1 => only_select.get_ptr(0).expect("one statement"),
            _ => refuse(
                PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
                "must be sort expressions only (it holds more than one statement)",
            ),
        };
        let stmt = (*raw).stmt;
        if !is_a(stmt, NodeTag::T_SelectStmt) {
            refuse(
                PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
                "must be sort expressions only",
            );
        }
        let select = &*stmt.cast::<pg_sys::SelectStmt>();
        let length = |list: *mut pg_sys::List| pgrx::PgList::<pg_sys::Node>::from_pg(list).len();
        let plain = select.op == pg_sys::SetOperation::SETOP_NONE
            && select.withClause.is_null()
            && select.intoClause.is_null()
            && select.distinctClause.is_null()
            && select.whereClause.is_null()
            && select.groupClause.is_null()
            && select.havingClause.is_null()
            && select.windowClause.is_null()
            && select.valuesLists.is_null()
            && select.limitOffset.is_null()
            && select.limitCount.is_null()
            && select.lockingClause.is_null()
            && length(select.targetList) == 1
            && length(select.fromClause) == 1
            && length(select.sortClause) >= 1;
        if !plain {
            refuse(
                PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
                "must be sort expressions only (no other clause may follow them)",
            );
        }
        let query = pg_sys::parse_analyze_fixedparams(
            raw,
            sql.as_ptr(),
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
        );
        let q = &*query;
        let unsupported = [
            (q.hasSubLinks, "may not contain a subquery"),
            (q.hasTargetSRFs, "may not contain a set-returning function"),
            (q.hasAggs, "may not contain an aggregate function"),
            (q.hasWindowFuncs, "may not contain a window function"),
        ];
        if let Some((_, why)) = unsupported.iter().find(|(found, _)| *found) {
            refuse(PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED, why);
        }
    }
    list
}
