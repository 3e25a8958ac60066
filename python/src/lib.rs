//! `neardup._neardup`: the signatures of the PostgreSQL extension neardup for Python, from
//! the same core (`neardup-core`) and called exactly as the SQL functions call it (the
//! same parameters, defaults, checks and encodings), so a value computed here is bit for
//! bit the one the server computes. Each function names the SQL function it mirrors.

mod bloom;
mod images;
mod shingling;
mod stored;
mod text;

use neardup_core::base::hash::hash_bytes;
use neardup_core::signatures::simhash::{hamming as hamming64, simhash_text, simhash_weighted};
use neardup_core::signatures::wide_code::WideCode;
use neardup_core::text::features::FeatureOptions;
use neardup_core::text::tokenizer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyInt;
use std::borrow::Cow;
use text::{run, text_bytes};

/// Charikar's 64-bit simhash of a text's features (SQL `simhash(text, ...)`): word
/// shingles of `shingle` tokens, or character n-grams of the canonical form when `ngram`
/// > 0. Returned as an unsigned int, 0 to 2**64 - 1 (the `simhash64` value).
#[pyfunction]
#[pyo3(signature = (text, shingle=1, ngram=0, fold_case=true))]
fn simhash(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    shingle: i32,
    ngram: i32,
    fold_case: bool,
) -> PyResult<u64> {
    let text = text_bytes(text)?;
    let options =
        FeatureOptions::new(shingle, ngram, fold_case).map_err(|e| PyValueError::new_err(e.0))?;
    Ok(run(py, text.len(), || simhash_text(text, &options)))
}

/// Simhash of caller-chosen features, each voting with its weight (SQL `simhash(text[],
/// real[])`). A weight is a `real` there, so it is rounded to single precision here too.
#[pyfunction]
fn simhash_features(features: Vec<Bound<'_, PyAny>>, weights: Vec<f32>) -> PyResult<u64> {
    if features.len() != weights.len() {
        return Err(PyValueError::new_err(format!(
            "features and weights must have the same length ({} and {})",
            features.len(),
            weights.len()
        )));
    }
    let mut pairs = Vec::with_capacity(features.len());
    for (feature, w) in features.iter().zip(weights) {
        if !w.is_finite() {
            return Err(PyValueError::new_err(format!(
                "weight {w} is not a finite number"
            )));
        }
        pairs.push((hash_bytes(text_bytes(feature)?), w as f64));
    }
    Ok(simhash_weighted(pairs))
}

/// A code for `hamming`: an int is a `simhash64` (a negative one, as a `bigint` holds it,
/// is read in two's complement); bytes are the binary form of `simhash64` (8 bytes),
/// `hash128` (16) or `hash256` (32).
enum Code {
    Word(u64),
    Wide(Vec<u8>),
}

fn code(value: &Bound<'_, PyAny>) -> PyResult<Code> {
    if value.is_instance_of::<PyInt>() {
        return match value.extract::<u64>() {
            Ok(v) => Ok(Code::Word(v)),
            Err(_) => value
                .extract::<i64>()
                .map(|v| Code::Word(v as u64))
                .map_err(|_| PyValueError::new_err("an int code must fit in 64 bits")),
        };
    }
    value
        .extract::<Cow<[u8]>>()
        .map(|b| Code::Wide(b.into_owned()))
        .map_err(|_| {
            PyTypeError::new_err("hamming takes two ints or two bytes-like codes of one length")
        })
}

fn wide_hamming<const WORDS: usize>(a: &[u8], b: &[u8]) -> u32 {
    let code = |bytes| WideCode::<WORDS>::from_be_bytes(bytes).expect("length checked");
    code(a).hamming(&code(b))
}

/// Number of differing bits of two codes of one width (SQL `hamming` on `simhash64`,
/// `hash128` and `hash256`): two ints, or two bytes of 8, 16 or 32.
#[pyfunction]
fn hamming(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<u32> {
    match (code(a)?, code(b)?) {
        (Code::Word(a), Code::Word(b)) => Ok(hamming64(a, b)),
        (Code::Wide(a), Code::Wide(b)) if a.len() == b.len() => match a.len() {
            8 => Ok(wide_hamming::<1>(&a, &b)),
            16 => Ok(wide_hamming::<2>(&a, &b)),
            32 => Ok(wide_hamming::<4>(&a, &b)),
            n => Err(PyValueError::new_err(format!(
                "a code of {n} bytes is none of simhash64 (8), hash128 (16), hash256 (32)"
            ))),
        },
        (Code::Wide(a), Code::Wide(b)) => Err(PyValueError::new_err(format!(
            "codes of {} and {} bytes differ in width",
            a.len(),
            b.len()
        ))),
        _ => Err(PyTypeError::new_err(
            "hamming takes two ints or two bytes-like codes, not one of each",
        )),
    }
}

/// The canonical form of a text: its tokens joined by single spaces (SQL
/// `neardup_canonical`).
#[pyfunction]
#[pyo3(signature = (text, fold_case=true))]
fn canonical(py: Python<'_>, text: &Bound<'_, PyAny>, fold_case: bool) -> PyResult<String> {
    let text = text_bytes(text)?;
    Ok(run(py, text.len(), || {
        tokenizer::canonical(text, fold_case)
    }))
}

/// The tokens the signature functions see, in order (SQL `neardup_tokens`).
#[pyfunction]
#[pyo3(signature = (text, fold_case=true))]
fn tokens(py: Python<'_>, text: &Bound<'_, PyAny>, fold_case: bool) -> PyResult<Vec<String>> {
    let text = text_bytes(text)?;
    Ok(run(py, text.len(), || tokenizer::tokens(text, fold_case)))
}

#[pymodule]
fn _neardup(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simhash, m)?)?;
    m.add_function(wrap_pyfunction!(simhash_features, m)?)?;
    m.add_function(wrap_pyfunction!(hamming, m)?)?;
    m.add_function(wrap_pyfunction!(canonical, m)?)?;
    m.add_function(wrap_pyfunction!(tokens, m)?)?;
    m.add_function(wrap_pyfunction!(shingling::minhash, m)?)?;
    m.add_function(wrap_pyfunction!(shingling::jaccard_of, m)?)?;
    m.add_function(wrap_pyfunction!(shingling::supershingles_of, m)?)?;
    m.add_function(wrap_pyfunction!(shingling::b_similarity_of, m)?)?;
    m.add_function(wrap_pyfunction!(shingling::lsh_bands_of, m)?)?;
    m.add_function(wrap_pyfunction!(shingling::lsh_params, m)?)?;
    m.add_function(wrap_pyfunction!(bloom::bloomsig, m)?)?;
    m.add_function(wrap_pyfunction!(bloom::bloom_match_of, m)?)?;
    m.add_function(wrap_pyfunction!(bloom::bloom_similarity_of, m)?)?;
    m.add_function(wrap_pyfunction!(bloom::chunks, m)?)?;
    m.add_function(wrap_pyfunction!(images::pdq, m)?)?;
    m.add_function(wrap_pyfunction!(images::pdq_quality, m)?)?;
    m.add_function(wrap_pyfunction!(images::pdq_with_quality, m)?)?;
    m.add_function(wrap_pyfunction!(images::pdq_dihedral, m)?)?;
    m.add_class::<shingling::Sketch>()?;
    m.add_class::<shingling::Supershingles>()?;
    m.add_class::<shingling::LshBands>()?;
    m.add_class::<bloom::Bloom>()?;
    Ok(())
}
