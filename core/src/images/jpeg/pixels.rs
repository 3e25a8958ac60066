//! Quantized coefficients to samples as libjpeg-turbo computes them by default (Pillow's
//! decoder): the "islow" integer IDCT (jidctint.c: 13-bit constants, two passes, two
//! roundings), "fancy" triangular chroma upsampling (jdsample.c, with its alternating
//! rounding biases and the edge rows and columns repeated), and jdcolor.c's fixed-point
//! YCbCr to RGB. Every step is integer arithmetic, so the samples are libjpeg's exactly
//! (its SIMD paths give the C code's results; its tests hold them to the same checksums).

use std::num::Wrapping;

const CONST_BITS: u32 = 13;
const PASS1_BITS: u32 = 2;
// jidctint.c's FIX(x): x * 2^13, rounded.
const F_0_298: Wrapping<i32> = Wrapping(2446);
const F_0_390: Wrapping<i32> = Wrapping(3196);
const F_0_541: Wrapping<i32> = Wrapping(4433);
const F_0_765: Wrapping<i32> = Wrapping(6270);
const F_0_899: Wrapping<i32> = Wrapping(7373);
const F_1_175: Wrapping<i32> = Wrapping(9633);
const F_1_501: Wrapping<i32> = Wrapping(12299);
const F_1_847: Wrapping<i32> = Wrapping(15137);
const F_1_961: Wrapping<i32> = Wrapping(16069);
const F_2_053: Wrapping<i32> = Wrapping(16819);
const F_2_562: Wrapping<i32> = Wrapping(20995);
const F_3_072: Wrapping<i32> = Wrapping(25172);

#[inline]
fn descale(x: Wrapping<i32>, n: u32) -> i32 {
    (x + Wrapping(1 << (n - 1))).0 >> n
}

/// One 1-D pass over 8 values: the even and odd parts, then the four butterflies, each
/// output descaled by `shift` bits (rounded). In wrapping 32-bit arithmetic: a valid
/// file's values stay far inside it (libjpeg-turbo's SIMD code computes in 32 bits too),
/// and a corrupt one's cannot stop the decoder.
#[inline]
fn pass(i: [i32; 8], shift: u32) -> [i32; 8] {
    let i = i.map(Wrapping);
    let z1 = (i[2] + i[6]) * F_0_541;
    let tmp2 = z1 - i[6] * F_1_847;
    let tmp3 = z1 + i[2] * F_0_765;
    let tmp0 = (i[0] + i[4]) << CONST_BITS as usize;
    let tmp1 = (i[0] - i[4]) << CONST_BITS as usize;
    let (tmp10, tmp13) = (tmp0 + tmp3, tmp0 - tmp3);
    let (tmp11, tmp12) = (tmp1 + tmp2, tmp1 - tmp2);

    let (t0, t1, t2, t3) = (i[7], i[5], i[3], i[1]);
    let z5 = (t0 + t2 + t1 + t3) * F_1_175;
    let z1 = -(t0 + t3) * F_0_899;
    let z2 = -(t1 + t2) * F_2_562;
    let z3 = -(t0 + t2) * F_1_961 + z5;
    let z4 = -(t1 + t3) * F_0_390 + z5;
    let t0 = t0 * F_0_298 + z1 + z3;
    let t1 = t1 * F_2_053 + z2 + z4;
    let t2 = t2 * F_3_072 + z2 + z3;
    let t3 = t3 * F_1_501 + z1 + z4;
    [
        descale(tmp10 + t3, shift),
        descale(tmp11 + t2, shift),
        descale(tmp12 + t1, shift),
        descale(tmp13 + t0, shift),
        descale(tmp13 - t0, shift),
        descale(tmp12 - t1, shift),
        descale(tmp11 - t2, shift),
        descale(tmp10 - t3, shift),
    ]
}

/// The 8 x 8 samples of a block (natural order coefficients, natural order quantizers),
/// written to `out` rows `stride` apart. A column whose AC coefficients are all zero, a
/// row of the first pass's output whose AC terms are, and a block with only its DC term take
/// libjpeg's shortcuts, whose results the full passes give too (a constant, rounded once).
pub(super) fn idct(coefficients: &[i16], quantizers: &[u16; 64], out: &mut [u8], stride: usize) {
    let dequantized = |k: usize| i32::from(coefficients[k]) * i32::from(quantizers[k]);
    if coefficients[1..64].iter().all(|&c| c == 0) {
        let value = clamp(descale(
            Wrapping(dequantized(0)) << PASS1_BITS as usize,
            PASS1_BITS + 3,
        ));
        for row in out.chunks_mut(stride).take(8) {
            row[..8].fill(value);
        }
        return;
    }
    let mut work = [0i32; 64];
    for col in 0..8 {
        if (1..8).all(|row| coefficients[row * 8 + col] == 0) {
            let dc = dequantized(col).wrapping_shl(PASS1_BITS);
            for row in 0..8 {
                work[row * 8 + col] = dc;
            }
            continue;
        }
        let input = std::array::from_fn(|row| dequantized(row * 8 + col));
        for (row, value) in pass(input, CONST_BITS - PASS1_BITS).into_iter().enumerate() {
            work[row * 8 + col] = value;
        }
    }
    for (row, line) in out.chunks_mut(stride).take(8).enumerate() {
        let input: [i32; 8] = std::array::from_fn(|col| work[row * 8 + col]);
        if input[1..].iter().all(|&w| w == 0) {
            line[..8].fill(clamp(descale(Wrapping(input[0]), PASS1_BITS + 3)));
            continue;
        }
        let samples = pass(input, CONST_BITS + PASS1_BITS + 3);
        for (sample, value) in line[..8].iter_mut().zip(samples) {
            *sample = clamp(value);
        }
    }
}

/// A sample from the IDCT's output, centred on zero (libjpeg-turbo's SIMD saturates it;
/// only a corrupt file's coefficients reach past the range).
#[inline]
fn clamp(value: i32) -> u8 {
    (value.saturating_add(128)).clamp(0, 255) as u8
}

/// A component's samples: `width` x `height` of them, rows `stride` apart.
pub(super) struct Plane {
    pub(super) samples: Vec<u8>,
    pub(super) stride: usize,
    pub(super) width: usize,
    pub(super) height: usize,
}

impl Plane {
    fn row(&self, y: usize) -> &[u8] {
        let y = y.min(self.height - 1);
        &self.samples[y * self.stride..y * self.stride + self.width]
    }
}

/// How a component's samples are stretched to the image's: libjpeg's choice by the ratio
/// of its sampling factors to the largest ones.
#[derive(Clone, Copy)]
pub(super) enum Upsample {
    Full,
    /// Twice as wide (fancy when the component is more than 2 samples wide, else repeated).
    H2V1,
    /// Twice as tall (fancy).
    H1V2,
    /// Twice as wide and tall (fancy when more than 2 samples wide, else repeated).
    H2V2,
    /// Each sample repeated `h` times across and `v` times down.
    Repeat {
        h: usize,
        v: usize,
    },
}

/// Row `y` of the image from `plane`, stretched to `out` (the image's width); `scratch`
/// holds the column sums of the 2-D case.
pub(super) fn upsample(
    plane: &Plane,
    how: Upsample,
    y: usize,
    out: &mut [u8],
    scratch: &mut Vec<i32>,
) {
    let width = out.len();
    match how {
        Upsample::Full => out.copy_from_slice(&plane.row(y)[..width]),
        Upsample::Repeat { h, v } => {
            let row = plane.row(y / v);
            for (x, sample) in out.iter_mut().enumerate() {
                *sample = row[x / h];
            }
        }
        Upsample::H2V1 | Upsample::H2V2 if plane.width <= 2 => {
            let v = if matches!(how, Upsample::H2V2) { 2 } else { 1 };
            let row = plane.row(y / v);
            for (x, sample) in out.iter_mut().enumerate() {
                *sample = row[x / 2];
            }
        }
        Upsample::H2V1 => {
            scratch.clear();
            scratch.extend(plane.row(y).iter().map(|&s| i32::from(s) * 4));
            stretch(scratch, out, 4, 8);
        }
        Upsample::H1V2 => {
            let (near, far, bias) = vertical(plane, y);
            for (x, sample) in out.iter_mut().enumerate() {
                *sample = ((3 * i32::from(near[x]) + i32::from(far[x]) + bias) >> 2) as u8;
            }
        }
        Upsample::H2V2 => {
            let (near, far, _) = vertical(plane, y);
            scratch.clear();
            scratch.extend(
                near.iter()
                    .zip(far)
                    .map(|(&n, &f)| 3 * i32::from(n) + i32::from(f)),
            );
            stretch(scratch, out, 8, 7);
        }
    }
}

/// The nearest and the next nearest input rows of output row `y` (twice as many rows as
/// the plane; the plane's first and last rows repeated beyond its edges) and h1v2's bias.
fn vertical(plane: &Plane, y: usize) -> (&[u8], &[u8], i32) {
    let near = y / 2;
    if y.is_multiple_of(2) {
        (plane.row(near), plane.row(near.saturating_sub(1)), 1)
    } else {
        (plane.row(near), plane.row(near + 1), 2)
    }
}

/// Doubles the width of a row of 4x-scaled column sums (h2v1: samples times 4; h2v2: 3 x
/// near row + far row) by 3:1 weights with the neighbours, divided by 16 with the biases
/// libjpeg alternates (`left` for the left output of each input, `right` for the right);
/// the outer two outputs are the edge sample's own.
fn stretch(sums: &[i32], out: &mut [u8], left: i32, right: i32) {
    let last = sums.len() - 1;
    let mut put = |x: usize, value: i32| {
        if let Some(sample) = out.get_mut(x) {
            *sample = (value >> 4) as u8;
        }
    };
    put(0, sums[0] * 4 + left);
    put(1, sums[0] * 3 + sums[1] + right);
    for i in 1..last {
        put(2 * i, sums[i] * 3 + sums[i - 1] + left);
        put(2 * i + 1, sums[i] * 3 + sums[i + 1] + right);
    }
    put(2 * last, sums[last] * 3 + sums[last - 1] + left);
    put(2 * last + 1, sums[last] * 4 + right);
}

/// jdcolor.c's tables, by Cb or Cr sample: the red, green (two terms, one rounding for
/// their sum) and blue offsets, in 16-bit fixed point each rounded as its tables round.
struct YccTables {
    cr_r: [i32; 256],
    cb_b: [i32; 256],
    cr_g: [i32; 256],
    cb_g: [i32; 256],
}

const YCC: YccTables = {
    let mut t = YccTables {
        cr_r: [0; 256],
        cb_b: [0; 256],
        cr_g: [0; 256],
        cb_g: [0; 256],
    };
    let mut i = 0;
    while i < 256 {
        let x = i as i32 - 128;
        t.cr_r[i] = (91881 * x + 32768) >> 16;
        t.cb_b[i] = (116130 * x + 32768) >> 16;
        t.cr_g[i] = -46802 * x;
        t.cb_g[i] = -22554 * x + 32768;
        i += 1;
    }
    t
};

/// jdcolor.c's YCbCr to RGB.
#[inline]
pub(super) fn ycc_to_rgb(y: u8, cb: u8, cr: u8) -> [u8; 3] {
    let (y, cb, cr) = (i32::from(y), usize::from(cb), usize::from(cr));
    let r = y + YCC.cr_r[cr];
    let g = y + ((YCC.cb_g[cb] + YCC.cr_g[cr]) >> 16);
    let b = y + YCC.cb_b[cb];
    [r, g, b].map(|v| v.clamp(0, 255) as u8)
}

/// jdcolor.c's YCCK to CMYK: YCbCr to RGB, inverted; K as it is.
#[inline]
pub(super) fn ycck_to_cmyk(y: u8, cb: u8, cr: u8, k: u8) -> [u8; 4] {
    let [c, m, ye] = ycc_to_rgb(y, cb, cr).map(|v| 255 - v);
    [c, m, ye, k]
}

/// Pillow's reading of a CMYK JPEG as RGB: the samples inverted (it assumes Adobe's
/// polarity, "CMYK;I"), then its cmyk2rgb (Convert.c), each channel nk - c * nk / 255
/// rounded as its MULDIV255 rounds.
#[inline]
pub(super) fn cmyk_to_rgb(cmyk: [u8; 4]) -> [u8; 3] {
    let nk = i32::from(cmyk[3]);
    let channel = |c: u8| {
        let t = (255 - i32::from(c)) * nk + 128;
        (nk - (((t >> 8) + t) >> 8)).clamp(0, 255) as u8
    };
    [channel(cmyk[0]), channel(cmyk[1]), channel(cmyk[2])]
}
