//! Broder's shingling and MinHash LSH, as `src/shingling` and `src/lsh` give them to SQL:
//! `minhash_sketch`, `supershingle_vector` and `lsh_bands`, with the functions over them.

use crate::stored::stored_class;
use crate::text::{run, text_bytes};
use neardup_core::search::lsh::{params_for_threshold, share_a_band, Banding, VERIFIED_WEIGHTS};
use neardup_core::search::lsh_encoding::BandKeys;
use neardup_core::signatures::minhash::{jaccard, minhash_text, MinhashOptions, MinhashSketch};
use neardup_core::signatures::supershingles::{b_similarity, supershingles, SupershingleVector};
use neardup_core::text::features::FeatureKind;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::cell::Cell;

stored_class!(Sketch, MinhashSketch, "MinhashSketch", "minhash_sketch");
stored_class!(
    Supershingles,
    SupershingleVector,
    "SupershingleVector",
    "supershingle_vector"
);
stored_class!(LshBands, BandKeys, "LshBands", "lsh_bands");

fn invalid(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

thread_local! {
    /// The banding chosen last, by (threshold bits, num_hashes), as the server keeps it:
    /// a loop bands every sketch at one threshold, and choosing takes up to milliseconds.
    static LAST_CHOICE: Cell<Option<(u64, usize, Banding)>> = const { Cell::new(None) };
}

/// The banding SQL `lsh_bands(sketch, threshold)` uses: the least weighted error with false
/// negatives weighted 9:1, since every candidate is verified.
fn banding_for_threshold(threshold: f64, num_hashes: usize) -> PyResult<Banding> {
    if let Some((bits, m, banding)) = LAST_CHOICE.get() {
        if bits == threshold.to_bits() && m == num_hashes {
            return Ok(banding);
        }
    }
    let (fp, fn_) = VERIFIED_WEIGHTS;
    let chosen = params_for_threshold(threshold, num_hashes, fp, fn_)
        .map_err(|e| PyValueError::new_err(format!("lsh_bands: {e}")))?
        .banding;
    LAST_CHOICE.set(Some((threshold.to_bits(), num_hashes, chosen)));
    Ok(chosen)
}

#[pymethods]
impl Sketch {
    /// Number of minvalues.
    #[getter]
    fn num_hashes(&self) -> usize {
        self.0.num_hashes()
    }

    /// Words per shingle, or None for a sketch of character n-grams (see `ngram`).
    #[getter]
    fn shingle(&self) -> Option<usize> {
        match self.0.features() {
            FeatureKind::WordShingles(w) => Some(w),
            FeatureKind::CharNgrams(_) => None,
        }
    }

    /// Characters per n-gram, or 0 for a sketch of word shingles.
    #[getter]
    fn ngram(&self) -> usize {
        match self.0.features() {
            FeatureKind::WordShingles(_) => 0,
            FeatureKind::CharNgrams(n) => n,
        }
    }

    /// The minvalues, in hash-function order.
    #[getter]
    fn values(&self) -> Vec<u32> {
        self.0.values().to_vec()
    }

    fn __len__(&self) -> usize {
        self.0.num_hashes()
    }

    /// Estimated Jaccard resemblance: the fraction of agreeing minvalues (SQL `jaccard`).
    fn jaccard(&self, other: &Sketch) -> PyResult<f64> {
        jaccard(&self.0, &other.0).map_err(invalid)
    }

    /// One fingerprint per 14 consecutive minvalues (SQL `supershingles(minhash_sketch)`).
    fn supershingles(&self) -> PyResult<Supershingles> {
        supershingles(&self.0).map(Supershingles).map_err(invalid)
    }

    /// The band keys of the sketch (SQL `lsh_bands`): for a Jaccard `threshold`, the
    /// banding `lsh_params` picks with false negatives weighted 0.9; or exactly `bands` ×
    /// `rows` of the first minvalues.
    #[pyo3(signature = (threshold=None, *, bands=None, rows=None))]
    fn lsh_bands(
        &self,
        threshold: Option<f64>,
        bands: Option<i32>,
        rows: Option<i32>,
    ) -> PyResult<LshBands> {
        let values = self.0.values();
        let banding = match (threshold, bands, rows) {
            (Some(threshold), None, None) => banding_for_threshold(threshold, values.len())?,
            (None, Some(bands), Some(rows)) => {
                Banding::new(bands.into(), rows.into(), values.len()).map_err(invalid)?
            }
            _ => {
                return Err(PyTypeError::new_err(
                    "lsh_bands takes a threshold, or bands= and rows=",
                ))
            }
        };
        Ok(LshBands(BandKeys::of_sketch(values, &banding)))
    }
}

#[pymethods]
impl Supershingles {
    #[getter]
    fn values(&self) -> Vec<u64> {
        self.0.values().to_vec()
    }

    fn __len__(&self) -> usize {
        self.0.values().len()
    }

    /// Number of positions with equal supershingles (SQL `b_similarity`).
    fn b_similarity(&self, other: &Supershingles) -> PyResult<u32> {
        b_similarity(&self.0, &other.0).map_err(invalid)
    }

    /// The supershingles as band keys: the banding 6 × 14 of the default sketch (the SQL
    /// cast `supershingle_vector::lsh_bands`).
    fn lsh_bands(&self) -> LshBands {
        LshBands(BandKeys::of_supershingles(&self.0))
    }
}

#[pymethods]
impl LshBands {
    /// Rows (minvalues) per band.
    #[getter]
    fn rows(&self) -> usize {
        self.0.rows()
    }

    /// The band keys, one per band (each carries its band's number in its top bits).
    #[getter]
    fn keys(&self) -> Vec<u64> {
        self.0.keys().to_vec()
    }

    fn __len__(&self) -> usize {
        self.0.keys().len()
    }

    /// Whether the two share at least one band (SQL `a && b`).
    fn shares_band(&self, other: &LshBands) -> bool {
        share_a_band(self.0.keys(), other.0.keys())
    }
}

/// Broder's minhash sketch of a text's word shingles: `num_hashes` minvalues of
/// `shingle`-word shingles, or with `ngram` > 0 of its character n-grams (SQL `minhash`).
#[pyfunction]
#[pyo3(signature = (text, num_hashes=84, shingle=8, ngram=0))]
pub fn minhash(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    num_hashes: i32,
    shingle: i32,
    ngram: i32,
) -> PyResult<Sketch> {
    let text = text_bytes(text)?;
    let options = MinhashOptions::with_features(num_hashes, shingle, ngram).map_err(invalid)?;
    Ok(Sketch(run(py, text.len(), || minhash_text(text, &options))))
}

/// The estimated Jaccard resemblance of two sketches (SQL `jaccard`).
#[pyfunction(name = "jaccard")]
pub fn jaccard_of(a: &Sketch, b: &Sketch) -> PyResult<f64> {
    a.jaccard(b)
}

/// The supershingles of a sketch, or of a text's default sketch (84 minvalues of 8-word
/// shingles → 6 supershingles), as SQL `supershingles` takes either.
#[pyfunction(name = "supershingles")]
pub fn supershingles_of(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Supershingles> {
    if let Ok(sketch) = value.cast::<Sketch>() {
        return sketch.get().supershingles();
    }
    let text = text_bytes(value)?;
    let sketch = run(py, text.len(), || {
        minhash_text(text, &MinhashOptions::DEFAULT)
    });
    Sketch(sketch).supershingles()
}

/// Number of positions with equal supershingles (SQL `b_similarity`).
#[pyfunction(name = "b_similarity")]
pub fn b_similarity_of(a: &Supershingles, b: &Supershingles) -> PyResult<u32> {
    a.b_similarity(b)
}

/// The band keys of a sketch (SQL `lsh_bands`): see `MinhashSketch.lsh_bands`.
#[pyfunction(name = "lsh_bands")]
#[pyo3(signature = (sketch, threshold=None, *, bands=None, rows=None))]
pub fn lsh_bands_of(
    sketch: &Sketch,
    threshold: Option<f64>,
    bands: Option<i32>,
    rows: Option<i32>,
) -> PyResult<LshBands> {
    sketch.lsh_bands(threshold, bands, rows)
}

/// The bands × rows that minimize the weighted areas of false positives and false
/// negatives under the S-curve at a threshold (SQL `lsh_params`): `(bands, rows,
/// false_positive, false_negative)`.
#[pyfunction]
#[pyo3(signature = (threshold, num_hashes=84, false_positive_weight=0.5, false_negative_weight=0.5))]
pub fn lsh_params(
    threshold: f64,
    num_hashes: i32,
    false_positive_weight: f64,
    false_negative_weight: f64,
) -> PyResult<(usize, usize, f64, f64)> {
    let num_hashes = usize::try_from(num_hashes).unwrap_or(0);
    let chosen = params_for_threshold(
        threshold,
        num_hashes,
        false_positive_weight,
        false_negative_weight,
    )
    .map_err(|e| PyValueError::new_err(format!("lsh_params: {e}")))?;
    Ok((
        chosen.banding.bands(),
        chosen.banding.rows(),
        chosen.false_positive,
        chosen.false_negative,
    ))
}
