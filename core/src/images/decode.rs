//! Image bytes to the luminance plane PDQ hashes, with the `image` crate's decoders (JPEG, PNG,
//! GIF, WebP, BMP, TIFF), bounded before the pixels are allocated.
//!
//! The pixels are those the reference pipeline hashes: `pdqhash` over Pillow's
//! `Image.open(f).convert("RGB")`:
//!
//! ```text
//!  alpha        dropped, not composited (Pillow's RGBA → RGB)
//!  grayscale    R = G = B = gray
//!  16 bits      the high byte of each sample (Pillow's reading of 16-bit RGB PNGs; for
//!               16-bit grayscale Pillow clips to 255 instead, so those differ from it)
//!  animations   the first frame (GIF, WebP), as Pillow opens them
//!  orientation  EXIF orientation is not applied: Pillow's open does not apply it either, so
//!               a rotated camera JPEG hashes as stored (pdq_dihedral covers the rotations)
//!  CMYK JPEG    Pillow's conversion to RGB (inverted samples, its cmyk2rgb)
//! ```
//!
//! JPEGs are decoded by [`crate::images::jpeg`], to libjpeg-turbo's pixels exactly (the
//! `image` crate's JPEG decoder rounds otherwise, and its hashes were off by up to 87 bits).

use crate::base::interrupts;
use crate::images::jpeg::Jpeg;
use crate::images::pdq::{luminance, Luma};
use image::{DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, Limits};
use std::io::{BufRead, Cursor, Read, Seek, SeekFrom};

/// Why some bytes gave no luminance plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes start with no signature of a supported format.
    UnknownFormat,
    /// A format recognized but not built in (AVIF, ...), or a variant the decoder lacks.
    Unsupported(String),
    /// Truncated or corrupt data.
    Invalid(String),
    /// More pixels than the caller allows (width and height 0 when a decoder refused on its
    /// allocation limit before it reported them).
    TooLarge { width: u32, height: u32, limit: u64 },
}

impl DecodeError {
    /// What went wrong, in the words the SQL functions and the Python module both use;
    /// `limit` names the setting that holds `max_pixels` there.
    pub fn message(&self, limit: &str) -> String {
        match self {
            DecodeError::UnknownFormat => {
                "invalid image: the bytes are not a JPEG, PNG, GIF, WebP, BMP or TIFF image".into()
            }
            DecodeError::Unsupported(detail) => format!("unsupported image: {detail}"),
            DecodeError::Invalid(detail) => format!("invalid image: {detail}"),
            DecodeError::TooLarge {
                width: 0,
                limit: max,
                ..
            } => {
                format!(
                    "image too large: decoding it needs more memory than {limit} ({max}) allows"
                )
            }
            DecodeError::TooLarge {
                width,
                height,
                limit: max,
            } => format!(
                "image too large: {width} x {height} = {} pixels, more than {limit} ({max})",
                u64::from(*width) * u64::from(*height)
            ),
        }
    }
}

/// The bytes each pixel may take at most while decoding (RGBA with 16-bit samples); the
/// decoders' allocation limit is this times the pixel limit, plus room for their tables.
const MAX_BYTES_PER_PIXEL: u64 = 8;
const DECODER_SLACK: u64 = 16 << 20;

/// The luminance plane of an image of at most `max_pixels` pixels.
pub fn decode_luma(bytes: &[u8], max_pixels: u64) -> Result<Luma, DecodeError> {
    let reader = ImageReader::new(Interruptible::new(bytes))
        .with_guessed_format()
        .map_err(|e| DecodeError::Invalid(e.to_string()))?;
    match reader.format() {
        None => return Err(DecodeError::UnknownFormat),
        Some(ImageFormat::Jpeg) if !jpeg_complete(bytes) => {
            return Err(DecodeError::Invalid(
                "truncated JPEG: no end of image after its last scan".into(),
            ))
        }
        Some(ImageFormat::Jpeg) => return jpeg_luma(bytes, max_pixels),
        Some(_) => {}
    }
    let side = u32::try_from(max_pixels).unwrap_or(u32::MAX);
    let mut limits = Limits::default();
    limits.max_image_width = Some(side);
    limits.max_image_height = Some(side);
    limits.max_alloc = Some(max_alloc(max_pixels));
    let mut reader = reader;
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(|e| classify(e, max_pixels))?;
    let (width, height) = decoder.dimensions();
    if u64::from(width) * u64::from(height) > max_pixels {
        return Err(DecodeError::TooLarge {
            width,
            height,
            limit: max_pixels,
        });
    }
    let image = DynamicImage::from_decoder(decoder).map_err(|e| classify(e, max_pixels))?;
    Ok(luma_of(&image))
}

fn max_alloc(max_pixels: u64) -> u64 {
    max_pixels
        .saturating_mul(MAX_BYTES_PER_PIXEL)
        .saturating_add(DECODER_SLACK)
}

fn jpeg_luma(bytes: &[u8], max_pixels: u64) -> Result<Luma, DecodeError> {
    let jpeg = Jpeg::read(bytes, max_pixels, max_alloc(max_pixels))?;
    let (cols, rows) = (jpeg.width(), jpeg.height());
    let mut data = Vec::with_capacity(cols * rows);
    jpeg.rows(|row| data.extend(row.chunks_exact(3).map(|p| luminance(p[0], p[1], p[2]))))?;
    Ok(Luma { rows, cols, data })
}

/// Whether an end-of-image marker follows the last start-of-scan: the JPEG decoder reads
/// the missing data of a truncated file as zero bits, as libjpeg does (Pillow refuses it:
/// "image file is truncated"). Inside a scan's entropy-coded data a 0xFF byte is always
/// followed by 0x00 or a restart marker, so the first FF D9 after the last FF DA is the
/// image's end (an EXIF thumbnail's markers come before the main image's scans).
fn jpeg_complete(bytes: &[u8]) -> bool {
    let last_scan = bytes.windows(2).rposition(|m| m == [0xFF, 0xDA]);
    last_scan.is_some_and(|at| bytes[at..].windows(2).any(|m| m == [0xFF, 0xD9]))
}

fn classify(error: ImageError, max_pixels: u64) -> DecodeError {
    match error {
        ImageError::Limits(_) => DecodeError::TooLarge {
            width: 0,
            height: 0,
            limit: max_pixels,
        },
        ImageError::Unsupported(e) => DecodeError::Unsupported(e.to_string()),
        other => DecodeError::Invalid(other.to_string()),
    }
}

/// Luminance from the decoded samples, reduced to 8-bit RGB as Pillow reduces them.
fn luma_of(image: &DynamicImage) -> Luma {
    let (cols, rows) = (image.width() as usize, image.height() as usize);
    let data: Vec<f32> = match image {
        DynamicImage::ImageLuma8(p) => p.pixels().map(|p| luminance(p[0], p[0], p[0])).collect(),
        DynamicImage::ImageLumaA8(p) => p.pixels().map(|p| luminance(p[0], p[0], p[0])).collect(),
        DynamicImage::ImageRgb8(p) => p.pixels().map(|p| luminance(p[0], p[1], p[2])).collect(),
        DynamicImage::ImageRgba8(p) => p.pixels().map(|p| luminance(p[0], p[1], p[2])).collect(),
        DynamicImage::ImageLuma16(p) => p.pixels().map(|p| gray16(p[0])).collect(),
        DynamicImage::ImageLumaA16(p) => p.pixels().map(|p| gray16(p[0])).collect(),
        DynamicImage::ImageRgb16(p) => p.pixels().map(|p| rgb16(p[0], p[1], p[2])).collect(),
        DynamicImage::ImageRgba16(p) => p.pixels().map(|p| rgb16(p[0], p[1], p[2])).collect(),
        // Float samples (TIFF): the crate's clamped conversion to 8 bits.
        other => other
            .to_rgb8()
            .pixels()
            .map(|p| luminance(p[0], p[1], p[2]))
            .collect(),
    };
    Luma { rows, cols, data }
}

fn high(sample: u16) -> u8 {
    (sample >> 8) as u8
}

fn gray16(v: u16) -> f32 {
    luminance(high(v), high(v), high(v))
}

fn rgb16(r: u16, g: u16, b: u16) -> f32 {
    luminance(high(r), high(g), high(b))
}

/// The input bytes, read through a check for a cancel every few reads: a long decode (a
/// large PNG or TIFF) stops when the query is cancelled.
struct Interruptible<'a> {
    inner: Cursor<&'a [u8]>,
    every: interrupts::Every<64>,
}

impl<'a> Interruptible<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Interruptible {
            inner: Cursor::new(bytes),
            every: Default::default(),
        }
    }
}

impl Read for Interruptible<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.every.tick();
        self.inner.read(buf)
    }
}

impl BufRead for Interruptible<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.every.tick();
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount)
    }
}

impl Seek for Interruptible<'_> {
    fn seek(&mut self, position: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(position)
    }
}
