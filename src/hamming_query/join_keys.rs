//! All pairs as an equi-join (`neardup_core::search::permuted`, "Manku's tables as an equi-join"):
//! `hamming_join_keys(fp, k, blocks)` gives a fingerprint's keys, one per permuted table;
//! `hamming_join_key(a, b, k, blocks)` the one key at which a pair within k bits is
//! reported. A table of (key, id, fp) joined with itself on the key, keeping the rows where
//! `hamming_join_key(a.fp, b.fp, k, blocks) = a.key`, gives every pair exactly once; hash-
//! partitioned on the key over postgres_fdw shards, that self-join runs partitionwise, each
//! shard joining its own keys.
//!
//! Every function is IMMUTABLE: the keys of (fp, k, blocks) are fixed by the layout's
//! definition, which the golden test of the core locks.

use crate::simhash64::Simhash64;
use crate::support::errors;
use crate::support::table_args::checked_distance;
use neardup_core::search::permuted::Layout;
use pgrx::prelude::*;
use std::cell::RefCell;

thread_local! {
    /// The layout of the last (max_distance, blocks): every row of a key table asks for
    /// the same one.
    static LAST_LAYOUT: RefCell<Option<(u32, u32, Layout)>> = const { RefCell::new(None) };
}

/// Calls `f` with the layout of `blocks` blocks for `max_distance`, or ERROR 22023.
fn with_layout<R>(
    function: &str,
    max_distance: i32,
    blocks: i32,
    f: impl FnOnce(&Layout) -> R,
) -> R {
    let k = checked_distance(function, max_distance);
    let blocks = u32::try_from(blocks).unwrap_or(0);
    LAST_LAYOUT.with_borrow_mut(|last| {
        if !matches!(last, Some((lk, lb, _)) if *lk == k && *lb == blocks) {
            let layout = Layout::new(blocks, k)
                .unwrap_or_else(|e| errors::invalid_parameter(format!("{function}: {}", e.0)));
            *last = Some((k, blocks, layout));
        }
        f(&last.as_ref().expect("set above").2)
    })
}

/// The join keys of a fingerprint: one per table of the layout with `blocks` blocks for
/// `max_distance` (C(blocks, max_distance) of them), in table order.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming_join_keys(fingerprint: Simhash64, max_distance: i32, blocks: i32) -> Vec<i64> {
    with_layout("hamming_join_keys", max_distance, blocks, |layout| {
        layout.join_keys(fingerprint.0).map(|k| k as i64).collect()
    })
}

/// The key at which the pair (a, b) is reported: the key both have in the first table
/// whose leading blocks they agree on; NULL when they are more than `max_distance` apart.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming_join_key(a: Simhash64, b: Simhash64, max_distance: i32, blocks: i32) -> Option<i64> {
    with_layout("hamming_join_key", max_distance, blocks, |layout| {
        layout.pair_key(a.0, b.0).map(|k| k as i64)
    })
}

/// The number of blocks for a key table of `rows` fingerprints: the fewest key rows plus
/// candidate pairs (`neardup_core::search::permuted::Layout::for_join`).
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming_join_blocks(rows: i64, max_distance: i32) -> i32 {
    let k = checked_distance("hamming_join_blocks", max_distance);
    if rows < 0 {
        errors::invalid_parameter(format!(
            "hamming_join_blocks: rows must not be negative (got {rows})"
        ));
    }
    Layout::for_join(rows as u64, k)
        .unwrap_or_else(|e| errors::invalid_parameter(format!("hamming_join_blocks: {}", e.0)))
        .blocks() as i32
}
