//! PDQ image hashes (SQL `pdq`, `pdq_quality`, `pdq_with_quality`, `pdq_dihedral`): the same decoders and
//! algorithm as the server, through the core; the pixel limit is the server's default of
//! `neardup.pdq_max_pixels`, a parameter here. Hashes are the 32 bytes of `hash256`'s
//! binary form. Decoding and hashing run without the GIL.

use neardup_core::images::decode::{decode_luma, DecodeError};
use neardup_core::images::pdq::{self as algorithm, Dct16, DIHEDRAL, MIN_DIMENSION};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The server's default `neardup.pdq_max_pixels`.
const MAX_PIXELS: u64 = 25_000_000;

/// An image's width and height, and its DCT coefficients and quality (`None`: smaller than
/// PDQ hashes).
type Transformed = (u32, u32, Option<(Box<Dct16>, i32)>);

/// The image transformed, or the error the server raises, as a Python exception with its
/// message.
fn dct(py: Python<'_>, image: &[u8], max_pixels: u64) -> PyResult<Transformed> {
    let decoded = py.detach(|| {
        decode_luma(image, max_pixels).map(|mut luma| {
            let size = (luma.cols as u32, luma.rows as u32);
            (size, algorithm::dct(&mut luma))
        })
    });
    decoded
        .map(|((cols, rows), found)| (cols, rows, found))
        .map_err(|e| {
            let message = e.message("max_pixels");
            match e {
                DecodeError::TooLarge { .. } => PyMemoryError::new_err(message),
                _ => PyValueError::new_err(message),
            }
        })
}

/// The coefficients of an image PDQ hashes, or ValueError for a smaller one.
fn hashable(py: Python<'_>, image: &[u8], max_pixels: u64) -> PyResult<Box<Dct16>> {
    Ok(transformed(py, image, max_pixels)?.0)
}

/// The coefficients and quality of an image PDQ hashes, or ValueError for a smaller one.
fn transformed(py: Python<'_>, image: &[u8], max_pixels: u64) -> PyResult<(Box<Dct16>, i32)> {
    match dct(py, image, max_pixels)? {
        (_, _, Some(found)) => Ok(found),
        (cols, rows, None) => Err(PyValueError::new_err(format!(
            "image too small for PDQ: {cols} x {rows} pixels (PDQ hashes images of at least {MIN_DIMENSION} x {MIN_DIMENSION})"
        ))),
    }
}

/// Meta's PDQ hash of the encoded image (SQL `pdq`), as the 32 bytes of `hash256`.
#[pyfunction]
#[pyo3(signature = (image, max_pixels=MAX_PIXELS))]
pub fn pdq<'py>(py: Python<'py>, image: &[u8], max_pixels: u64) -> PyResult<Bound<'py, PyBytes>> {
    let coefficients = hashable(py, image, max_pixels)?;
    Ok(PyBytes::new(
        py,
        &algorithm::bits(&coefficients).to_be_bytes(),
    ))
}

/// PDQ's quality of the encoded image, 0 to 100 (SQL `pdq_quality`; 0 under 5 pixels).
#[pyfunction]
#[pyo3(signature = (image, max_pixels=MAX_PIXELS))]
pub fn pdq_quality(py: Python<'_>, image: &[u8], max_pixels: u64) -> PyResult<i32> {
    Ok(dct(py, image, max_pixels)?
        .2
        .map_or(0, |(_, quality)| quality))
}

/// The hash and the quality from one decode (SQL `pdq_with_quality`; the reference's
/// `compute`): ValueError under 5 pixels, as `pdq`.
#[pyfunction]
#[pyo3(signature = (image, max_pixels=MAX_PIXELS))]
pub fn pdq_with_quality<'py>(
    py: Python<'py>,
    image: &[u8],
    max_pixels: u64,
) -> PyResult<(Bound<'py, PyBytes>, i32)> {
    let (coefficients, quality) = transformed(py, image, max_pixels)?;
    let hash = PyBytes::new(py, &algorithm::bits(&coefficients).to_be_bytes());
    Ok((hash, quality))
}

/// The hashes of the image and its 7 rotations and mirrors in the reference's order (SQL
/// `pdq_dihedral`).
#[pyfunction]
#[pyo3(signature = (image, max_pixels=MAX_PIXELS))]
pub fn pdq_dihedral<'py>(
    py: Python<'py>,
    image: &[u8],
    max_pixels: u64,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let coefficients = hashable(py, image, max_pixels)?;
    Ok(DIHEDRAL
        .iter()
        .map(|&which| {
            PyBytes::new(
                py,
                &algorithm::bits(&algorithm::transform(&coefficients, which)).to_be_bytes(),
            )
        })
        .collect())
}
