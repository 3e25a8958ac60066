//! Text arguments as the server receives them, and running long work without the GIL.

use pyo3::exceptions::{PyTypeError, PyUnicodeDecodeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// Texts at least this long are processed with the GIL released. Taking it back waits for
/// whichever thread holds it then, up to Python's switch interval (5 ms) when that thread
/// is busy, so a short text, a few microseconds of work, keeps it; this length is some
/// hundreds of microseconds of work.
const DETACH_AT: usize = 64 * 1024;

/// The UTF-8 bytes of a text argument: a `str`, or `bytes` that are valid UTF-8. These are
/// exactly the texts a PostgreSQL `text` value can hold, so every text accepted here has
/// the signature the server computes, and every other is refused as the server refuses it:
/// a `str` with lone surrogates cannot be encoded (`UnicodeEncodeError`), invalid UTF-8
/// `bytes` raise `UnicodeDecodeError` (the server: "invalid byte sequence for encoding
/// UTF8"), and a NUL character raises `ValueError` (the server cannot store one). A `str`'s
/// UTF-8 is borrowed, not copied.
pub fn text_bytes<'a>(text: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    let bytes = if let Ok(s) = text.cast::<PyString>() {
        s.to_str()?.as_bytes()
    } else if let Ok(b) = text.cast::<PyBytes>() {
        let bytes = b.as_bytes();
        if let Err(e) = std::str::from_utf8(bytes) {
            let error = PyUnicodeDecodeError::new_utf8(text.py(), bytes, e)?;
            return Err(PyErr::from_value(error.into_any()));
        }
        bytes
    } else {
        return Err(PyTypeError::new_err(format!(
            "expected str or bytes, not {}",
            text.get_type().name()?
        )));
    };
    if let Some(at) = memchr::memchr(0, bytes) {
        return Err(PyValueError::new_err(format!(
            "the text has a NUL character at byte {at}, which PostgreSQL text cannot hold"
        )));
    }
    Ok(bytes)
}

/// Runs `work` over a text of `len` bytes, without the GIL when the text is long, so other
/// threads run Python meanwhile (a thread pool of crawlers or a Dask worker's threads).
pub fn run<T: Send>(py: Python<'_>, len: usize, work: impl FnOnce() -> T + Send) -> T {
    if len >= DETACH_AT {
        py.detach(work)
    } else {
        work()
    }
}
