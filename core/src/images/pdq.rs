//! Meta's PDQ image hash (ThreatExchange `hashing.pdf`), computed the way the reference C++
//! computes it, down to the order of its single-precision operations, so that a hash made
//! here equals the reference's bit for bit:
//!
//! ```text
//!  luminance  Y = 0.299 R + 0.587 G + 0.114 B (f64, rounded to f32: what the `pdqhash`
//!             package, the reference's Python binding, does before calling the C++)
//!  blur       Jarosz tent filter: two passes of a box along rows then along columns, each
//!             window (old + 127) / 128 pixels wide (the reference's window for 64 outputs)
//!  decimate   64 × 64 samples, at the centres of a 64-way split of each dimension
//!  quality    the sum of the 64 × 64 image's quantized gradients / 90, at most 100
//!  DCT        the 16 × 16 lowest non-DC coefficients of the 64 × 64 DCT-II (D A Dᵀ, with
//!             the reference's f32 matrix and summation order)
//!  bits       bit 16 i + j is set when coefficient (i, j) exceeds the median (Torben's)
//! ```
//!
//! A 64 × 64 image is taken as already downsampled (no blur), as the reference does; an image
//! under 5 pixels in either dimension has no hash (the reference returns zeros and quality 0,
//! which [`hash`] reports as `None` instead).
//!
//! Every f32 expression below keeps the reference's operand order: floating point addition
//! is not associative, and one ulp can move a coefficient across the median.

use crate::base::interrupts::Every;
use crate::signatures::wide_code::{Code256, WideCode};
use std::sync::OnceLock;

/// The smallest width and height the reference hashes.
pub const MIN_DIMENSION: usize = 5;

/// A luminance plane, row-major.
pub struct Luma {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

/// One pixel's luminance from 8-bit RGB, as `pdqhash` computes it (numpy, in f64, left to
/// right, then rounded to f32).
#[inline]
pub fn luminance(r: u8, g: u8, b: u8) -> f32 {
    (f64::from(r) * 0.299 + f64::from(g) * 0.587 + f64::from(b) * 0.114) as f32
}

/// The 16 × 16 DCT coefficients a hash thresholds, row-major (`[i][j]` is bit 16 i + j).
pub type Dct16 = [[f32; 16]; 16];

/// The hash of an image and its quality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pdq {
    pub hash: Code256,
    pub quality: i32,
}

/// The eight rotations and mirrors, in the order the reference returns them.
pub const DIHEDRAL: [Dihedral; 8] = [
    Dihedral::Original,
    Dihedral::Rotate90,
    Dihedral::Rotate180,
    Dihedral::Rotate270,
    Dihedral::FlipX,
    Dihedral::FlipY,
    Dihedral::FlipPlus1,
    Dihedral::FlipMinus1,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dihedral {
    Original,
    /// A quarter turn counterclockwise (numpy's `rot90`).
    Rotate90,
    Rotate180,
    Rotate270,
    /// Upside down (rows reversed).
    FlipX,
    /// Left to right (columns reversed).
    FlipY,
    /// Transposed (about the main diagonal).
    FlipPlus1,
    /// About the anti-diagonal.
    FlipMinus1,
}

/// The DCT coefficients and quality of a luminance plane (blurred in place), or `None` when
/// the image is smaller than [`MIN_DIMENSION`] in either dimension.
pub fn dct(luma: &mut Luma) -> Option<(Box<Dct16>, i32)> {
    if luma.rows < MIN_DIMENSION || luma.cols < MIN_DIMENSION {
        return None;
    }
    let mut small = [[0f32; 64]; 64];
    if luma.rows == 64 && luma.cols == 64 {
        for (row, chunk) in small.iter_mut().zip(luma.data.chunks_exact(64)) {
            row.copy_from_slice(chunk);
        }
    } else {
        jarosz(luma);
        decimate(luma, &mut small);
    }
    let quality = quality(&small);
    Some((dct64_to_16(&small), quality))
}

/// The hash and quality of a luminance plane (see [`dct`]).
pub fn hash(luma: &mut Luma) -> Option<Pdq> {
    dct(luma).map(|(coefficients, quality)| Pdq {
        hash: bits(&coefficients),
        quality,
    })
}

/// The hash of the transformed image, from the original's coefficients: the DCT of a rotated
/// or mirrored image is the original's, transposed and with alternate signs flipped.
pub fn transform(a: &Dct16, which: Dihedral) -> Dct16 {
    let mut b = [[0f32; 16]; 16];
    for i in 0..16 {
        for j in 0..16 {
            let v = a[i][j];
            let odd_i = i & 1 == 1;
            let odd_j = j & 1 == 1;
            let odd_sum = (i + j) & 1 == 1;
            match which {
                Dihedral::Original => b[i][j] = v,
                Dihedral::Rotate90 => b[j][i] = if odd_j { v } else { -v },
                Dihedral::Rotate180 => b[i][j] = if odd_sum { -v } else { v },
                Dihedral::Rotate270 => b[j][i] = if odd_i { v } else { -v },
                Dihedral::FlipX => b[i][j] = if odd_i { v } else { -v },
                Dihedral::FlipY => b[i][j] = if odd_j { v } else { -v },
                Dihedral::FlipPlus1 => b[j][i] = v,
                Dihedral::FlipMinus1 => b[j][i] = if odd_sum { -v } else { v },
            }
        }
    }
    b
}

/// Bit 16 i + j is set when coefficient (i, j) exceeds the median; bit k is bit k of the
/// 256-bit number the hex form spells (ThreatExchange's 16-bit words, highest first).
pub fn bits(coefficients: &Dct16) -> Code256 {
    let median = torben(coefficients.as_flattened());
    let mut words = [0u64; 4];
    for (i, row) in coefficients.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            if v > median {
                let k = i * 16 + j;
                words[3 - k / 64] |= 1 << (k % 64);
            }
        }
    }
    WideCode(words)
}

/// The reference's window for shrinking `old` samples to `new`: ceil(old / (2 new)).
fn window_size(old: usize, new: usize) -> usize {
    old.div_ceil(2 * new)
}

/// Two passes of a box along rows, then along columns: a tent filter (Jarosz).
fn jarosz(luma: &mut Luma) {
    let along_rows = window_size(luma.cols, 64);
    let along_cols = window_size(luma.rows, 64);
    let mut other = vec![0f32; luma.data.len()];
    for _ in 0..2 {
        box_rows(&luma.data, &mut other, luma.cols, along_rows);
        box_cols(&other, &mut luma.data, luma.cols, along_cols);
    }
}

/// The reference's 1-D box: the window grows from half its width at the start and shrinks
/// at the end, each output the running sum over the current count (sum kept in f32).
fn box_rows(input: &[f32], output: &mut [f32], cols: usize, window: usize) {
    let half = (window + 2) / 2;
    let mut interrupts = Every::<64>::default();
    for (inp, out) in input.chunks_exact(cols).zip(output.chunks_exact_mut(cols)) {
        interrupts.tick();
        let mut sum = 0f32;
        let mut count = 0usize;
        let (mut li, mut ri, mut oi) = (0, 0, 0);
        for _ in 0..half - 1 {
            sum += inp[ri];
            count += 1;
            ri += 1;
        }
        for _ in 0..window - half + 1 {
            sum += inp[ri];
            count += 1;
            out[oi] = sum / count as f32;
            ri += 1;
            oi += 1;
        }
        for _ in 0..cols - window {
            sum += inp[ri];
            sum -= inp[li];
            out[oi] = sum / count as f32;
            li += 1;
            ri += 1;
            oi += 1;
        }
        for _ in 0..half - 1 {
            sum -= inp[li];
            count -= 1;
            out[oi] = sum / count as f32;
            li += 1;
            oi += 1;
        }
    }
}

/// The same box down every column: the columns advance together a row at a time (one
/// running sum per column, each with the reference's operations in its order), so the
/// reads stay sequential in memory.
fn box_cols(input: &[f32], output: &mut [f32], cols: usize, window: usize) {
    let rows = input.len() / cols;
    let half = (window + 2) / 2;
    let row = |i: usize| &input[i * cols..(i + 1) * cols];
    let mut sums = vec![0f32; cols];
    let mut count = 0usize;
    let (mut li, mut ri, mut oi) = (0, 0, 0);
    let mut interrupts = Every::<64>::default();
    let mut emit = |oi: usize, sums: &[f32], count: usize| {
        interrupts.tick();
        for (out, &sum) in output[oi * cols..(oi + 1) * cols].iter_mut().zip(sums) {
            *out = sum / count as f32;
        }
    };
    for _ in 0..half - 1 {
        sums.iter_mut().zip(row(ri)).for_each(|(s, &v)| *s += v);
        count += 1;
        ri += 1;
    }
    for _ in 0..window - half + 1 {
        sums.iter_mut().zip(row(ri)).for_each(|(s, &v)| *s += v);
        count += 1;
        emit(oi, &sums, count);
        ri += 1;
        oi += 1;
    }
    for _ in 0..rows - window {
        sums.iter_mut().zip(row(ri)).for_each(|(s, &v)| *s += v);
        sums.iter_mut().zip(row(li)).for_each(|(s, &v)| *s -= v);
        emit(oi, &sums, count);
        li += 1;
        ri += 1;
        oi += 1;
    }
    for _ in 0..half - 1 {
        sums.iter_mut().zip(row(li)).for_each(|(s, &v)| *s -= v);
        count -= 1;
        emit(oi, &sums, count);
        li += 1;
        oi += 1;
    }
}

/// The 64 × 64 samples at ((i + 0.5) rows / 64, (j + 0.5) cols / 64), in f64 as the
/// reference computes the positions.
fn decimate(luma: &Luma, out: &mut [[f32; 64]; 64]) {
    let at = |k: usize, n: usize| (((k as f64 + 0.5) * n as f64) / 64.0) as usize;
    for (i, row) in out.iter_mut().enumerate() {
        let source = at(i, luma.rows) * luma.cols;
        for (j, v) in row.iter_mut().enumerate() {
            *v = luma.data[source + at(j, luma.cols)];
        }
    }
}

/// The reference's heuristic: vertical and horizontal differences, each scaled to 0..100
/// and truncated (only significant gradients count), summed and divided by 90.
fn quality(small: &[[f32; 64]; 64]) -> i32 {
    let step = |u: f32, v: f32| ((((u - v) * 100.0) / 255.0) as i32).abs();
    let mut sum = 0i32;
    for pair in small.windows(2) {
        for (&u, &v) in pair[0].iter().zip(&pair[1]) {
            sum += step(u, v);
        }
    }
    for row in small.iter() {
        for pair in row.windows(2) {
            sum += step(pair[0], pair[1]);
        }
    }
    (sum / 90).min(100)
}

/// Rows 1 to 16 of the 64-point DCT-II matrix, scaled by sqrt(2 / 64): the reference's f32
/// matrix (each entry an f64 product rounded once).
fn dct_matrix() -> &'static [[f32; 64]; 16] {
    static MATRIX: OnceLock<[[f32; 64]; 16]> = OnceLock::new();
    MATRIX.get_or_init(|| {
        let scale = (2.0f64 / 64.0).sqrt() as f32;
        let mut m = [[0f32; 64]; 16];
        for (i, row) in m.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                let angle =
                    (std::f64::consts::PI / 2.0 / 64.0) * (i + 1) as f64 * (2 * j + 1) as f64;
                *v = (f64::from(scale) * angle.cos()) as f32;
            }
        }
        m
    })
}

/// B = D A Dᵀ through T = D A, each sum accumulated in f32 from k = 0 up, as the reference.
fn dct64_to_16(a: &[[f32; 64]; 64]) -> Box<Dct16> {
    let d = dct_matrix();
    let mut t = [[0f32; 64]; 16];
    for (i, t_row) in t.iter_mut().enumerate() {
        for (j, t_ij) in t_row.iter_mut().enumerate() {
            let mut sum = 0f32;
            for k in 0..64 {
                sum += d[i][k] * a[k][j];
            }
            *t_ij = sum;
        }
    }
    let mut b = Box::new([[0f32; 16]; 16]);
    for (i, b_row) in b.iter_mut().enumerate() {
        for (j, b_ij) in b_row.iter_mut().enumerate() {
            let mut sum = 0f32;
            for k in 0..64 {
                sum += t[i][k] * d[j][k];
            }
            *b_ij = sum;
        }
    }
    b
}

/// Torben's median (no sorting, no copy), exactly as the reference selects it: for an even
/// count, the lower of the two middle values.
fn torben(m: &[f32]) -> f32 {
    let n = m.len();
    let half = n.div_ceil(2);
    let (mut min, mut max) = (m[0], m[0]);
    for &v in &m[1..] {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    loop {
        let guess = (min + max) / 2.0;
        let (mut less, mut greater, mut equal) = (0, 0, 0);
        let (mut max_lt, mut min_gt) = (min, max);
        for &v in m {
            if v < guess {
                less += 1;
                if v > max_lt {
                    max_lt = v;
                }
            } else if v > guess {
                greater += 1;
                if v < min_gt {
                    min_gt = v;
                }
            } else {
                equal += 1;
            }
        }
        if less <= half && greater <= half {
            return if less >= half {
                max_lt
            } else if less + equal >= half {
                guess
            } else {
                min_gt
            };
        } else if less > greater {
            max = max_lt;
        } else {
            min = min_gt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torben_is_the_lower_middle() {
        assert_eq!(torben(&[3.0, 1.0, 2.0, 4.0]), 2.0);
        assert_eq!(torben(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(torben(&[7.0; 6]), 7.0);
    }

    #[test]
    fn window_sizes_are_the_references() {
        assert_eq!(window_size(64, 64), 1);
        assert_eq!(window_size(128, 64), 1);
        assert_eq!(window_size(129, 64), 2);
        assert_eq!(window_size(1000, 64), 8);
    }

    #[test]
    fn too_small_has_no_hash() {
        let mut luma = Luma {
            rows: 4,
            cols: 100,
            data: vec![1.0; 400],
        };
        assert!(hash(&mut luma).is_none());
    }

    #[test]
    fn transforms_are_a_group() {
        let mut a = [[0f32; 16]; 16];
        for (i, row) in a.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = (i * 16 + j) as f32 + 1.0;
            }
        }
        let r90 = transform(&a, Dihedral::Rotate90);
        let r180 = transform(&a, Dihedral::Rotate180);
        assert_eq!(transform(&r90, Dihedral::Rotate90), r180);
        let r270 = transform(&a, Dihedral::Rotate270);
        assert_eq!(transform(&r180, Dihedral::Rotate90), r270);
        assert_eq!(transform(&r270, Dihedral::Rotate90), a);
        for flip in [
            Dihedral::FlipX,
            Dihedral::FlipY,
            Dihedral::FlipPlus1,
            Dihedral::FlipMinus1,
        ] {
            assert_eq!(transform(&transform(&a, flip), flip), a, "{flip:?}");
        }
    }
}
