//! Bloom signatures of content-defined chunks (Jain, Dahlin and Tewari), as
//! `src/bloom_signature` gives them to SQL: `bloomsig`, `bloom_match`, `bloom_similarity`,
//! `bit_count`, `&` and `|`, and `neardup_chunks`.

use crate::stored::stored_class;
use crate::text::{run, text_bytes};
use neardup_core::signatures::bloom::{
    bloom_match, bloom_of, bloom_similarity, BloomError, BloomParams, BloomSignature, DEFAULT_BITS,
};
use neardup_core::text::chunking::{chunks as core_chunks, ChunkSize, DEFAULT_CHUNK_SIZE};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

stored_class!(Bloom, BloomSignature, "BloomSignature", "bloom_signature");

/// Wrong parameters and comparisons of unlike signatures are the caller's arguments, as
/// the server's 22023.
fn checked<T>(result: Result<T, BloomError>) -> PyResult<T> {
    result.map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymethods]
impl Bloom {
    /// `m`: bits of the filter.
    #[getter]
    fn bits(&self) -> u32 {
        self.0.params().bits()
    }

    /// `k`: bits set per chunk.
    #[getter]
    fn hashes(&self) -> u8 {
        self.0.params().hashes()
    }

    /// Expected chunk size in bytes.
    #[getter]
    fn chunk_size(&self) -> usize {
        self.0.params().chunk_size().get()
    }

    /// Set bits of the filter (SQL `bit_count`).
    #[getter]
    fn bit_count(&self) -> u32 {
        self.0.bit_count()
    }

    /// How much of this signature's content is in `other` (SQL `bloom_match`).
    fn match_ratio(&self, other: &Bloom) -> PyResult<f64> {
        checked(bloom_match(&self.0, &other.0))
    }

    /// Symmetric resemblance (SQL `bloom_similarity`).
    fn similarity(&self, other: &Bloom) -> PyResult<f64> {
        checked(bloom_similarity(&self.0, &other.0))
    }

    fn __and__(&self, other: &Bloom) -> PyResult<Bloom> {
        checked(self.0.and(&other.0)).map(Bloom)
    }

    fn __or__(&self, other: &Bloom) -> PyResult<Bloom> {
        checked(self.0.or(&other.0)).map(Bloom)
    }
}

/// The Bloom signature of a text's content-defined chunks (SQL `bloomsig`). `hashes`
/// None takes the default, 6, whatever the text's length, so that a small document's bits
/// stay a subset of those of a page that contains it.
#[pyfunction]
#[pyo3(signature = (text, bits=DEFAULT_BITS as i32, hashes=None, chunk_size=DEFAULT_CHUNK_SIZE as i32))]
pub fn bloomsig(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    bits: i32,
    hashes: Option<i32>,
    chunk_size: i32,
) -> PyResult<Bloom> {
    let text = text_bytes(text)?;
    let params = checked(BloomParams::new(
        bits.into(),
        hashes.map(i64::from),
        chunk_size.into(),
    ))?;
    Ok(Bloom(run(py, text.len(), || bloom_of(text, params))))
}

/// How much of `a`'s content is in `b`: set bits of `a & b` over set bits of `a`.
#[pyfunction(name = "bloom_match")]
pub fn bloom_match_of(a: &Bloom, b: &Bloom) -> PyResult<f64> {
    a.match_ratio(b)
}

/// Symmetric resemblance: set bits of `a & b` over set bits of `a | b`.
#[pyfunction(name = "bloom_similarity")]
pub fn bloom_similarity_of(a: &Bloom, b: &Bloom) -> PyResult<f64> {
    a.similarity(b)
}

/// The chunks a Bloom signature is built from, in text order (SQL `neardup_chunks`).
#[pyfunction]
#[pyo3(signature = (text, chunk_size=DEFAULT_CHUNK_SIZE as i32))]
pub fn chunks(py: Python<'_>, text: &Bound<'_, PyAny>, chunk_size: i32) -> PyResult<Vec<String>> {
    let text = text_bytes(text)?;
    let size =
        ChunkSize::new(chunk_size.into()).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(run(py, text.len(), || core_chunks(text, size)))
}
