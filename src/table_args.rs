//! Arguments shared by the functions that read a whole table by name (`hamming_pairs`,
//! `neardup_clusters`): the table, its columns and a Hamming distance.

use crate::errors;
use pgrx::prelude::*;

/// Quotes an SQL identifier the way PostgreSQL's `quote_ident` does.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The table's name as it must be written in a query (schema-qualified and quoted when
/// needed), or ERROR 22023 when no such table exists.
pub fn relation_name(function: &str, tbl: pg_sys::Oid) -> String {
    Spi::get_one::<String>(&format!("SELECT {}::oid::regclass::text", tbl.to_u32()))
        .ok()
        .flatten()
        .unwrap_or_else(|| errors::invalid_parameter(format!("{function}: no such table")))
}

/// A Hamming distance a 64-bit batch can take (ERROR 22023 otherwise).
pub fn checked_distance(value: i32) -> u32 {
    if !(0..64).contains(&value) {
        errors::invalid_parameter(format!(
            "max_distance must be between 0 and 63 (got {value})"
        ));
    }
    value as u32
}
