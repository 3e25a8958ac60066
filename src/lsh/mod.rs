//! MinHash LSH in SQL: the `lsh_bands` type (a sketch's band keys, `neardup_core::search::lsh`),
//! `lsh_params`, the functions that band a sketch, the operator `&&` ("share at least one
//! band") with its GIN operator class (`gin`), and the whole-table `minhash_pairs`
//! (`pairs`). Type, operator, cast and operator class are `sql/lsh.sql`.

mod gin;
pub(crate) mod pairs;

use crate::shingling::{Minhash, Supershingles};
use crate::support::errors;
use crate::support::stored_type::{rest_of_message, stored_type, StoredBytes};
use neardup_core::search::lsh::{
    first_shared_key, params_for_threshold, share_a_band, Banding, VERIFIED_WEIGHTS,
};
use neardup_core::search::lsh_encoding::BandKeys;
use pgrx::prelude::*;
use pgrx::Internal;
use std::cell::Cell;
use std::ffi::{CStr, CString};

stored_type!(LshBands, BandKeys, "lsh_bands");

impl StoredBytes for BandKeys {
    fn encode(&self) -> Vec<u8> {
        self.to_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        BandKeys::from_bytes(bytes).map_err(|e| e.to_string())
    }
}

pgrx::extension_sql!(
    "CREATE TYPE lsh_bands; -- shell, completed by sql/lsh.sql\n",
    name = "lsh_shell"
);

pgrx::extension_sql_file!(
    "../../sql/lsh.sql",
    name = "lsh_types",
    creates = [Type(LshBands)],
    requires = [
        "lsh_shell",
        "shingling_types",
        lsh_bands_in,
        lsh_bands_out,
        lsh_bands_recv,
        lsh_bands_send,
        lsh_share_band,
        lsh_bands_of_supershingles,
        gin::lsh_bands_gin_extract_value,
        gin::lsh_bands_gin_extract_query,
        gin::lsh_bands_gin_consistent,
    ]
);

#[pg_extern(immutable, strict, parallel_safe, requires = ["lsh_shell"])]
fn lsh_bands_in(input: &CStr) -> LshBands {
    BandKeys::from_text(input.to_bytes())
        .map(LshBands)
        .unwrap_or_else(|e| errors::invalid_text("lsh_bands", &input.to_string_lossy(), e))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["lsh_shell"])]
fn lsh_bands_out(value: LshBands) -> CString {
    CString::new(value.0.to_string()).expect("the text form has no NUL")
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["lsh_shell"])]
fn lsh_bands_recv(buf: Internal) -> LshBands {
    BandKeys::from_bytes(rest_of_message(buf))
        .map(LshBands)
        .unwrap_or_else(|e| errors::invalid_binary("lsh_bands", e))
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["lsh_shell"])]
fn lsh_bands_send(value: LshBands) -> Vec<u8> {
    value.0.to_bytes()
}

fn banding(bands: i64, rows: i64, num_hashes: usize) -> Banding {
    Banding::new(bands, rows, num_hashes).unwrap_or_else(|e| errors::invalid_parameter(e.0))
}

/// The band keys of a sketch's first `bands × rows` minvalues.
// COST: a hash per band, which the planner should weigh when it could use an index on
// the expression instead of computing it for every row of a join.
#[pg_extern(immutable, strict, parallel_safe, cost = 50, name = "lsh_bands", requires = ["lsh_shell", "shingling_types"])]
fn lsh_bands_of_sketch(sketch: Minhash, bands: i32, rows: i32) -> LshBands {
    let values = sketch.0.values();
    LshBands(BandKeys::of_sketch(
        values,
        &banding(bands.into(), rows.into(), values.len()),
    ))
}

thread_local! {
    /// The banding chosen last, by (threshold bits, num_hashes): `lsh_bands(sketch,
    /// threshold)` is called once per row with the same two, and choosing takes a
    /// millisecond.
    static LAST_CHOICE: Cell<Option<(u64, usize, Banding)>> = const { Cell::new(None) };
}

/// The banding `lsh_bands(sketch, threshold)` and `minhash_pairs` use for a threshold:
/// the least weighted error with false negatives weighted 9:1, since every candidate is
/// verified.
pub(crate) fn banding_for_threshold(function: &str, threshold: f64, num_hashes: usize) -> Banding {
    if let Some((bits, m, banding)) = LAST_CHOICE.get() {
        if bits == threshold.to_bits() && m == num_hashes {
            return banding;
        }
    }
    let (fp, fn_) = VERIFIED_WEIGHTS;
    let chosen = params_for_threshold(threshold, num_hashes, fp, fn_)
        .unwrap_or_else(|e| errors::invalid_parameter(format!("{function}: {e}")))
        .banding;
    LAST_CHOICE.set(Some((threshold.to_bits(), num_hashes, chosen)));
    chosen
}

/// The band keys of a sketch for a Jaccard threshold: the bands × rows `lsh_params` picks
/// with false negatives weighted 0.9 and false positives 0.1.
#[pg_extern(immutable, strict, parallel_safe, cost = 50, name = "lsh_bands", requires = ["lsh_shell", "shingling_types"])]
fn lsh_bands_for_threshold(sketch: Minhash, threshold: f64) -> LshBands {
    let values = sketch.0.values();
    let banding = banding_for_threshold("lsh_bands", threshold, values.len());
    LshBands(BandKeys::of_sketch(values, &banding))
}

/// Supershingles are the banding 6 × 14 of the default sketch (the cast
/// `supershingle_vector::lsh_bands`).
#[pg_extern(immutable, strict, parallel_safe, requires = ["lsh_shell", "shingling_types"])]
fn lsh_bands_of_supershingles(vector: Supershingles) -> LshBands {
    LshBands(BandKeys::of_supershingles(&vector.0))
}

/// The band keys as `bigint[]`, band 0 first (a key's top bits are its band, so keys of
/// different bands never collide): the rows of a band key table, such as one distributed by
/// key on Citus (`minhash_pairs_distributed`).
#[pg_extern(immutable, strict, parallel_safe, requires = ["lsh_shell"])]
fn lsh_band_keys(bands: LshBands) -> Vec<i64> {
    // the key's 64 bits as PostgreSQL's bigint, as the text form's hex digits read back
    bands.0.keys().iter().map(|&key| key as i64).collect()
}

/// The key of the lowest band two sets of band keys share, NULL if they share none: a self-
/// join of band keys keeps a pair only at this key, so that a pair sharing several bands is
/// reported once.
#[pg_extern(immutable, strict, parallel_safe, requires = ["lsh_shell"])]
fn lsh_first_shared_key(a: LshBands, b: LshBands) -> Option<i64> {
    first_shared_key(a.0.keys(), b.0.keys()).map(|key| key as i64)
}

pgrx::extension_sql_file!(
    "../../sql/minhash_pairs_distributed.sql",
    name = "minhash_pairs_distributed",
    requires = [
        "lsh_types",
        pairs::minhash_pairs,
        lsh_bands_for_threshold,
        lsh_bands_of_sketch,
        lsh_band_keys,
        lsh_first_shared_key,
    ]
);

/// `a && b`: the sketches share at least one band.
#[pg_extern(immutable, strict, parallel_safe, requires = ["lsh_shell"])]
fn lsh_share_band(a: LshBands, b: LshBands) -> bool {
    share_a_band(a.0.keys(), b.0.keys())
}

/// The bands × rows that minimize the weighted areas of false positives and false
/// negatives under the S-curve at a threshold, as datasketch's `MinHashLSH` chooses them.
#[pg_extern(immutable, strict, parallel_safe)]
fn lsh_params(
    threshold: f64,
    num_hashes: default!(i32, 84),
    false_positive_weight: default!(f64, 0.5),
    false_negative_weight: default!(f64, 0.5),
) -> TableIterator<
    'static,
    (
        name!(bands, i32),
        name!(rows, i32),
        name!(false_positive, f64),
        name!(false_negative, f64),
    ),
> {
    let num_hashes = usize::try_from(num_hashes).unwrap_or(0);
    let chosen = params_for_threshold(
        threshold,
        num_hashes,
        false_positive_weight,
        false_negative_weight,
    )
    .unwrap_or_else(|e| errors::invalid_parameter(format!("lsh_params: {e}")));
    TableIterator::once((
        chosen.banding.bands() as i32,
        chosen.banding.rows() as i32,
        chosen.false_positive,
        chosen.false_negative,
    ))
}
