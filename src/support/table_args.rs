//! Arguments shared by the functions that read a whole table by name (`hamming_pairs`,
//! `neardup_clusters`): the table, its columns and a Hamming distance, and the batched read
//! of its rows.

use crate::support::errors;
use neardup_core::search::permuted::MAX_BATCH_DISTANCE;
use pgrx::prelude::*;
use pgrx::spi::SpiHeapTupleData;

/// Quotes an SQL identifier the way PostgreSQL's `quote_ident` does.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The table's name as it must be written in a query: schema-qualified and quoted always,
/// so it means the same table whatever the search_path. ERROR 42P01 when no such table
/// exists, 42501 when the caller may not read it.
pub fn relation_name(function: &str, tbl: pg_sys::Oid) -> String {
    // SAFETY: syscache lookups by OID; NULL results are checked.
    unsafe {
        let relname = pg_sys::get_rel_name(tbl);
        if relname.is_null() {
            errors::raise(
                PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
                format!("{function}: no table with OID {}", tbl.to_u32()),
            );
        }
        if pg_sys::pg_class_aclcheck(
            tbl,
            pg_sys::GetUserId(),
            pg_sys::ACL_SELECT as pg_sys::AclMode,
        ) != pg_sys::AclResult::ACLCHECK_OK
        {
            errors::raise(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!(
                    "{function}: permission denied for table {}",
                    std::ffi::CStr::from_ptr(relname).to_string_lossy()
                ),
            );
        }
        let schema = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(tbl));
        format!(
            "{}.{}",
            quote_ident(&std::ffi::CStr::from_ptr(schema).to_string_lossy()),
            quote_ident(&std::ffi::CStr::from_ptr(relname).to_string_lossy())
        )
    }
}

/// A Hamming distance the batch search (`neardup_core::search::permuted::Pairs`) takes: 0 to 15
/// (ERROR 22023 otherwise).
pub fn checked_distance(function: &str, value: i32) -> u32 {
    if !(0..=MAX_BATCH_DISTANCE as i32).contains(&value) {
        errors::invalid_parameter(format!(
            "{function}: max_distance must be between 0 and {MAX_BATCH_DISTANCE} (got {value})"
        ));
    }
    value as u32
}

/// Runs `query` and calls `each` with every row, fetching through a cursor in batches so
/// that only one batch of tuples is in memory at a time.
pub fn for_each_row(function: &str, query: &str, mut each: impl FnMut(&SpiHeapTupleData)) {
    const BATCH: i64 = 10_000;
    Spi::connect(|client| {
        let mut cursor = client
            .try_open_cursor(query, &[])
            .unwrap_or_else(|e| error!("{function}: {e}"));
        loop {
            let batch = cursor
                .fetch(BATCH)
                .unwrap_or_else(|e| error!("{function}: {e}"));
            let fetched = batch.len();
            for row in batch {
                each(&row);
            }
            // SAFETY: the batch was just consumed; SPI keeps every fetched table until
            // SPI_finish unless it is freed.
            unsafe { pg_sys::SPI_freetuptable(pg_sys::SPI_tuptable) };
            pgrx::check_for_interrupts!();
            if fetched < BATCH as usize {
                break;
            }
        }
    });
}

/// Checks that `column` of table `tbl` (whose privileges `relation_name` checked) has an
/// integer type, which the function reads its keys as: ERROR 42804 naming the column and
/// its type otherwise (rather than a cast's "invalid input syntax for type bigint" on some
/// row), 42703 when there is no such column.
pub fn check_integer_key(function: &str, tbl: pg_sys::Oid, column: &str) {
    let Ok(name) = std::ffi::CString::new(column) else {
        errors::raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
            format!("{function}: no column {}", quote_ident(column)),
        );
    };
    // SAFETY: syscache lookups by OID and name; the results are checked.
    unsafe {
        let attnum = pg_sys::get_attnum(tbl, name.as_ptr());
        if attnum == pg_sys::InvalidAttrNumber as i16 {
            errors::raise(
                PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
                format!("{function}: no column {}", quote_ident(column)),
            );
        }
        let ty = pg_sys::get_atttype(tbl, attnum);
        if ![pg_sys::INT2OID, pg_sys::INT4OID, pg_sys::INT8OID].contains(&ty) {
            let type_name = std::ffi::CStr::from_ptr(pg_sys::format_type_be(ty)).to_string_lossy();
            errors::raise(
                PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                format!(
                    "{function}: the key column {} has type {type_name}; keys must be of an integer type (smallint, integer or bigint)",
                    quote_ident(column)
                ),
            );
        }
    }
}
