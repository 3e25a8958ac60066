//! neardup: near-duplicate detection inside PostgreSQL.
//!
//! This crate is only the binding layer: SQL types, functions and operators that call the
//! pure-Rust algorithms of `neardup-core`. Hand-written SQL (type definitions, casts,
//! operator classes) lives in `sql/` and is included below in dependency order.

#[cfg(any(test, feature = "pg_test"))]
use pgrx::prelude::*;

// A folder per SQL feature, and `support` for what they share (errors, memory bounds, stored
// varlena types, arguments naming a table); each folder's tests sit beside its code.
mod am;
mod bloom_signature;
mod cluster_tracking;
mod clusters;
mod hamming_query;
mod images;
mod lsh;
mod neardup_keep;
mod shingling;
mod simhash64;
mod support;
mod wide_codes;

::pgrx::pg_module_magic!(name, version);

#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // The core's long loops (batch pairs, components, the text pipeline) stop at the
    // next cancellation point once statement_timeout or a cancel request arrives.
    neardup_core::base::interrupts::set_handler(|| {
        pgrx::check_for_interrupts!();
    });
    am::options::init();
    am::init_pause_points();
    am::scan::init_ring_budget();
    am::merge_worker::init();
    hamming_query::init();
    images::init();
    shingling::init();
}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        // Every query of the suite that may run in a parallel worker does (PostgreSQL 15's
        // regress mode hides the Gather from EXPLAIN): a function labelled PARALLEL SAFE
        // that is not fails here. JIT is off: the brute-force side of a comparison runs with
        // seq scans disabled, whose cost would have LLVM compile every such query (on 15, that
        // compiling was four fifths of the suite's time).
        vec![
            "shared_preload_libraries = 'neardup'",
            "jit = off",
            #[cfg(feature = "pg15")]
            "force_parallel_mode = regress",
            #[cfg(not(feature = "pg15"))]
            "debug_parallel_query = regress",
        ]
    }
}

/// The setting that pushes queries into parallel workers to test them (renamed in 16).
#[cfg(any(test, feature = "pg_test"))]
pub(crate) const FORCE_PARALLEL: &str = if cfg!(feature = "pg15") {
    "force_parallel_mode"
} else {
    "debug_parallel_query"
};

/// SQL-level tests, run inside a real backend by `cargo pgrx test` (`#[pg_schema]` needs an
/// inline module, so the tests themselves live beside the code, in each folder's `tests.rs`).
#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    use pgrx::prelude::*;
    include!("simhash64/tests.rs");
    include!("am/sql_tests.rs");
    include!("am/merge_tests.rs");
    include!("am/interrupt_tests.rs");
    include!("am/option_tests.rs");
    include!("clusters/tests.rs");
    include!("cluster_tracking/tests.rs");
    include!("bloom_signature/tests.rs");
    include!("shingling/tests.rs");
    include!("lsh/tests.rs");
    include!("neardup_keep/tests.rs");
    include!("hamming_query/tests.rs");
    include!("hamming_query/batch_tests.rs");
    include!("hamming_query/volatile_tests.rs");
    include!("support/hardening_tests.rs");
    include!("wide_codes/tests.rs");
    include!("images/tests.rs");
}
