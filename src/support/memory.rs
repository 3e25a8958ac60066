//! Memory the batch functions may take: they hold a few bytes per row of the table in Rust
//! vectors (the permuted tables are sorted in memory), so before each row is admitted the
//! total is checked against `maintenance_work_mem`, as CREATE INDEX is bounded by it. Past
//! the limit the function stops with ERROR 53200 and says what to set, instead of letting
//! the allocation grow until the allocator fails or the OOM killer takes the backend (and
//! with it every session of the cluster).

use pgrx::{pg_sys, PgSqlErrorCode};

pub struct RowBudget {
    function: &'static str,
    bytes_per_row: usize,
    max_rows: usize,
    /// The ERROR's hint when it is not "raise the setting" ([`RowBudget::on_citus`]).
    hint: Option<&'static str>,
}

impl RowBudget {
    /// The rows `maintenance_work_mem` holds at `bytes_per_row` each.
    pub fn maintenance(function: &'static str, bytes_per_row: usize) -> RowBudget {
        RowBudget {
            function,
            bytes_per_row,
            max_rows: maintenance_work_mem_bytes() / bytes_per_row,
            hint: None,
        }
    }

    /// When `tbl` is a Citus table, the ERROR's hint is `hint`: its rows come to the
    /// coordinator, whose memory bounds the call however many workers hold them, so the hint
    /// names the way that keeps them on the workers.
    pub fn on_citus(mut self, tbl: pg_sys::Oid, hint: &'static str) -> RowBudget {
        if crate::hamming_query::is_citus_table(tbl) {
            self.hint = Some(hint);
        }
        self
    }

    /// ERROR 53200 when `rows` rows would not fit.
    pub fn admit(&self, rows: usize) {
        if rows > self.max_rows {
            let needed_mb = (rows * 2 * self.bytes_per_row).div_ceil(1 << 20);
            crate::support::errors::raise_with_hint(
                PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
                format!(
                    "{}: more than {} rows do not fit in maintenance_work_mem ({} kB, {} bytes a row)",
                    self.function,
                    self.max_rows,
                    maintenance_work_mem_bytes() / 1024,
                    self.bytes_per_row
                ),
                &self.hint.map(str::to_owned).unwrap_or_else(|| format!(
                    "Raise it for this session, e.g. SET maintenance_work_mem = '{needed_mb}MB', or run on a subset of the table."
                )),
            );
        }
    }
}

fn maintenance_work_mem_bytes() -> usize {
    // SAFETY: a GUC variable of this backend, read on its only thread.
    (unsafe { pg_sys::maintenance_work_mem }).max(64) as usize * 1024
}
