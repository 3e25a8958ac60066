//! Image signatures computed in SQL: `pdq(bytea) → hash256`, `pdq_quality(bytea) → int`,
//! both from one decode by `pdq_with_quality(bytea) → (hash, quality)`, and
//! `pdq_dihedral(bytea) → hash256[]`, Meta's PDQ hash of the image the bytes encode, equal to
//! the reference's (`neardup_core::images`: the decoders, the pixels they give for alpha,
//! 16-bit and animated images, and the algorithm).
//!
//! The decoded pixels and the luminance planes are Rust allocations, outside PostgreSQL's
//! memory contexts: `neardup.pdq_max_pixels` bounds them (about 8 bytes a pixel at the peak),
//! checked from the image's header before any pixel is decoded. Reads of the bytes and the
//! filter passes check for a cancel; an ERROR there unwinds and frees them.

use crate::support::errors;
use crate::wide_codes::Hash256;
use neardup_core::images::decode::{decode_luma, DecodeError};
use neardup_core::images::pdq::{self, Dct16, Luma, DIHEDRAL, MIN_DIMENSION};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

/// `neardup.pdq_max_pixels`: the largest image (width × height) the PDQ functions decode.
/// 25 million pixels take about 200 MB while hashed; a superuser setting, since every
/// backend and parallel worker may hold that much at once.
pub static PDQ_MAX_PIXELS: GucSetting<i32> = GucSetting::<i32>::new(25_000_000);

pub fn init() {
    GucRegistry::define_int_guc(
        c"neardup.pdq_max_pixels",
        c"Largest image, in pixels (width times height), that pdq() and its siblings decode.",
        c"Decoding and hashing take about 8 bytes a pixel, outside PostgreSQL's memory contexts.",
        &PDQ_MAX_PIXELS,
        1,
        i32::MAX,
        GucContext::Suset,
        GucFlags::default(),
    );
}

/// The luminance plane of the image, or an ERROR saying why there is none.
fn luma(image: &[u8]) -> Luma {
    let limit = PDQ_MAX_PIXELS.get() as u64;
    decode_luma(image, limit).unwrap_or_else(|e| {
        let message = e.message("neardup.pdq_max_pixels");
        match e {
            DecodeError::Unsupported(_) => {
                errors::raise(PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED, message)
            }
            DecodeError::UnknownFormat | DecodeError::Invalid(_) => errors::raise(
                PgSqlErrorCode::ERRCODE_INVALID_BINARY_REPRESENTATION,
                message,
            ),
            DecodeError::TooLarge { .. } => errors::raise_with_hint(
                PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                message,
                "A superuser can raise neardup.pdq_max_pixels; hashing takes about 8 bytes a pixel.",
            ),
        }
    })
}

/// The DCT coefficients and quality, or an ERROR for an image PDQ does not hash.
fn dct(image: &[u8]) -> (Box<Dct16>, i32) {
    let mut luma = luma(image);
    match pdq::dct(&mut luma) {
        Some(found) => found,
        None => errors::invalid_parameter(format!(
            "image too small for PDQ: {} x {} pixels (PDQ hashes images of at least {MIN_DIMENSION} x {MIN_DIMENSION})",
            luma.cols, luma.rows
        )),
    }
}

/// Meta's PDQ hash of the image.
#[pg_extern(immutable, strict, parallel_safe)]
fn pdq(image: &[u8]) -> Hash256 {
    Hash256(pdq::bits(&dct(image).0))
}

/// PDQ's quality of the image, 0 to 100 (under 50: too flat for its hash to be trusted); 0
/// for an image under 5 pixels in either dimension, as the reference says.
#[pg_extern(immutable, strict, parallel_safe)]
fn pdq_quality(image: &[u8]) -> i32 {
    let mut luma = luma(image);
    pdq::dct(&mut luma).map_or(0, |(_, quality)| quality)
}

/// The hash and the quality together, as the reference's `compute` returns them: one row,
/// from one decode (`pdq` and `pdq_quality` called side by side decode the image twice). An
/// image under 5 pixels in either dimension is an ERROR, as for `pdq`.
#[pg_extern(immutable, strict, parallel_safe)]
fn pdq_with_quality(
    image: &[u8],
) -> TableIterator<'static, (name!(hash, Hash256), name!(quality, i32))> {
    let (coefficients, quality) = dct(image);
    TableIterator::once((Hash256(pdq::bits(&coefficients)), quality))
}

/// The hashes of the image and its 7 rotations and mirrors, from one transform, in the
/// reference's order: original, rotated 90°, 180°, 270° (counterclockwise), flipped upside
/// down, flipped left to right, transposed, flipped about the anti-diagonal.
#[pg_extern(immutable, strict, parallel_safe)]
fn pdq_dihedral(image: &[u8]) -> Vec<Hash256> {
    let (coefficients, _) = dct(image);
    DIHEDRAL
        .iter()
        .map(|&which| Hash256(pdq::bits(&pdq::transform(&coefficients, which))))
        .collect()
}
