//! JPEG decoding to the pixels Pillow gives (libjpeg-turbo with its defaults), so that
//! pdq() of a JPEG is the reference's hash bit for bit: the `image` crate's decoder
//! (zune-jpeg) rounds its IDCT, chroma upsampling and color conversion otherwise, which
//! moved a quarter of JPEG hashes by 2 to 87 bits.
//!
//! Baseline, extended (8-bit) and progressive Huffman-coded JPEGs, grayscale, YCbCr, RGB,
//! CMYK and YCCK, with any integral sampling factors. Refused: arithmetic coding, lossless
//! and hierarchical JPEGs, 12-bit samples (Pillow refuses those too). Not reproduced:
//! libjpeg's block smoothing of progressive files whose scans leave the first AC
//! coefficients unrefined (encoders write complete scans; a file cut short is refused
//! before this). The whole image's coefficients are held (2 bytes a sample), bounded by the
//! caller's allocation limit.

mod entropy;
mod pixels;

use crate::base::interrupts;
use crate::images::decode::DecodeError;
use entropy::{Bits, Huffman, Pass, Run, NATURAL};
use pixels::{Plane, Upsample};

/// A JPEG read up to its pixels: the header checked against the limits, every scan
/// decoded to coefficients.
pub struct Jpeg {
    frame: Frame,
    color: Color,
}

impl Jpeg {
    /// Reads `bytes`, refusing more than `max_pixels` pixels (from the frame header, before
    /// anything is allocated) and more than `max_alloc` bytes of coefficients and samples.
    pub fn read(bytes: &[u8], max_pixels: u64, max_alloc: u64) -> Result<Jpeg, DecodeError> {
        let mut state = State::default();
        state.read(bytes, max_pixels, max_alloc)?;
        let color = state.color()?;
        let frame = state
            .frame
            .filter(|_| state.scans > 0)
            .ok_or_else(|| invalid("no image data"))?;
        Ok(Jpeg { frame, color })
    }

    pub fn width(&self) -> usize {
        self.frame.width
    }

    pub fn height(&self) -> usize {
        self.frame.height
    }

    /// Hands each row of the image, top to bottom, to `row` as RGB (Pillow's
    /// `convert("RGB")` of it).
    pub fn rows(self, mut row: impl FnMut(&[u8])) -> Result<(), DecodeError> {
        self.frame.output(self.color, &mut row)
    }
}

fn invalid(what: &str) -> DecodeError {
    DecodeError::Invalid(format!("corrupt JPEG: {what}"))
}

struct Component {
    id: u8,
    h: usize,
    v: usize,
    table: usize,
    /// The quantization table, copied when the first scan of the component starts (as
    /// libjpeg latches it: a later DQT with the same number is for another component).
    quantizers: Option<[u16; 64]>,
    /// Samples of the component (its share of the image, rounded up).
    width: usize,
    height: usize,
    /// Blocks allocated: whole MCUs across and down.
    blocks_across: usize,
    coefficients: Vec<i16>,
    prediction: i32,
}

struct Frame {
    width: usize,
    height: usize,
    progressive: bool,
    components: Vec<Component>,
    max_h: usize,
    max_v: usize,
    mcus_across: usize,
    mcus_down: usize,
}

#[derive(Default)]
struct State {
    quantizers: [Option<[u16; 64]>; 4],
    dc: [Option<Huffman>; 4],
    ac: [Option<Huffman>; 4],
    restart_interval: usize,
    jfif: bool,
    adobe_transform: Option<u8>,
    frame: Option<Frame>,
    scans: usize,
}

/// The color space of the samples, chosen as libjpeg chooses it (jdapimin.c).
#[derive(Clone, Copy, PartialEq)]
enum Color {
    Gray,
    YCbCr,
    Rgb,
    Cmyk,
    Ycck,
}

impl State {
    fn read(&mut self, bytes: &[u8], max_pixels: u64, max_alloc: u64) -> Result<(), DecodeError> {
        if !bytes.starts_with(&[0xFF, 0xD8]) {
            return Err(invalid("no start of image"));
        }
        let mut pos = 2;
        loop {
            // The next marker: garbage before it skipped, as libjpeg skips it.
            while pos < bytes.len() && bytes[pos] != 0xFF {
                pos += 1;
            }
            while pos < bytes.len() && bytes[pos] == 0xFF {
                pos += 1;
            }
            let Some(&code) = bytes.get(pos) else {
                return Err(invalid("no end of image"));
            };
            pos += 1;
            match code {
                0xD9 => return Ok(()),
                0x01 | 0xD0..=0xD8 => continue,
                _ => {}
            }
            let length = match bytes.get(pos..pos + 2) {
                Some(b) => usize::from(u16::from_be_bytes([b[0], b[1]])),
                None => return Err(invalid("truncated marker segment")),
            };
            let segment = bytes
                .get(pos + 2..pos + length)
                .filter(|_| length >= 2)
                .ok_or_else(|| invalid("truncated marker segment"))?;
            pos += length;
            match code {
                0xC0..=0xC2 => self.frame(segment, code == 0xC2, max_pixels, max_alloc)?,
                0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                    return Err(DecodeError::Unsupported(
                        "JPEG with arithmetic coding, lossless or hierarchical".into(),
                    ))
                }
                0xC4 => self.huffman(segment)?,
                0xDB => self.quantization(segment)?,
                0xDD => {
                    let b = segment.get(..2).ok_or_else(|| invalid("short DRI"))?;
                    self.restart_interval = usize::from(u16::from_be_bytes([b[0], b[1]]));
                }
                0xDA => pos = self.scan(bytes, segment, pos)?,
                0xE0 if segment.starts_with(b"JFIF\0") => self.jfif = true,
                0xEE if segment.starts_with(b"Adobe") && segment.len() >= 12 => {
                    self.adobe_transform = Some(segment[11])
                }
                _ => {}
            }
        }
    }

    fn frame(
        &mut self,
        s: &[u8],
        progressive: bool,
        max_pixels: u64,
        max_alloc: u64,
    ) -> Result<(), DecodeError> {
        if self.frame.is_some() {
            return Err(invalid("two frames"));
        }
        if s.len() < 6 {
            return Err(invalid("short frame header"));
        }
        if s[0] != 8 {
            return Err(DecodeError::Unsupported(format!(
                "JPEG with {}-bit samples",
                s[0]
            )));
        }
        let height = usize::from(u16::from_be_bytes([s[1], s[2]]));
        let width = usize::from(u16::from_be_bytes([s[3], s[4]]));
        if width == 0 || height == 0 {
            return Err(invalid("no width or height"));
        }
        if (width as u64) * (height as u64) > max_pixels {
            return Err(DecodeError::TooLarge {
                width: width as u32,
                height: height as u32,
                limit: max_pixels,
            });
        }
        let count = usize::from(s[5]);
        if !matches!(count, 1 | 3 | 4) || s.len() < 6 + 3 * count {
            return Err(DecodeError::Unsupported(format!(
                "JPEG with {count} components"
            )));
        }
        let mut components = Vec::with_capacity(count);
        for c in s[6..6 + 3 * count].chunks_exact(3) {
            let (h, v) = (usize::from(c[1] >> 4), usize::from(c[1] & 15));
            if !(1..=4).contains(&h) || !(1..=4).contains(&v) || c[2] > 3 {
                return Err(invalid("bad sampling factors or table number"));
            }
            components.push(Component {
                id: c[0],
                h,
                v,
                table: usize::from(c[2]),
                quantizers: None,
                width: 0,
                height: 0,
                blocks_across: 0,
                coefficients: Vec::new(),
                prediction: 0,
            });
        }
        let max_h = components.iter().map(|c| c.h).max().unwrap_or(1);
        let max_v = components.iter().map(|c| c.v).max().unwrap_or(1);
        let mcus_across = width.div_ceil(8 * max_h);
        let mcus_down = height.div_ceil(8 * max_v);
        // The most bytes held at once: coefficients (2 a sample) until a component's
        // samples (1 a sample) are computed, component after component.
        let samples: Vec<u64> = components
            .iter()
            .map(|c| (mcus_across * c.h * mcus_down * c.v * 64) as u64)
            .collect();
        let peak = (0..samples.len())
            .map(|k| samples[k..].iter().sum::<u64>() * 2 + samples[..=k].iter().sum::<u64>())
            .max()
            .unwrap_or(0);
        if peak > max_alloc {
            return Err(DecodeError::TooLarge {
                width: 0,
                height: 0,
                limit: max_pixels,
            });
        }
        for c in &mut components {
            c.width = (width * c.h).div_ceil(max_h);
            c.height = (height * c.v).div_ceil(max_v);
            c.blocks_across = mcus_across * c.h;
            c.coefficients = vec![0; c.blocks_across * mcus_down * c.v * 64];
        }
        self.frame = Some(Frame {
            width,
            height,
            progressive,
            components,
            max_h,
            max_v,
            mcus_across,
            mcus_down,
        });
        Ok(())
    }

    fn huffman(&mut self, mut s: &[u8]) -> Result<(), DecodeError> {
        while !s.is_empty() {
            if s.len() < 17 {
                return Err(invalid("short Huffman table"));
            }
            let (class, number) = (s[0] >> 4, usize::from(s[0] & 15));
            let counts = &s[1..17];
            let total: usize = counts.iter().map(|&c| usize::from(c)).sum();
            let symbols = s
                .get(17..17 + total)
                .ok_or_else(|| invalid("short Huffman table"))?;
            if number > 3 || class > 1 {
                return Err(invalid("bad Huffman table number"));
            }
            let table = Some(Huffman::new(counts, symbols)?);
            if class == 0 {
                self.dc[number] = table;
            } else {
                self.ac[number] = table;
            }
            s = &s[17 + total..];
        }
        Ok(())
    }

    fn quantization(&mut self, mut s: &[u8]) -> Result<(), DecodeError> {
        while !s.is_empty() {
            let (wide, number) = (s[0] >> 4 != 0, usize::from(s[0] & 15));
            let size = if wide { 128 } else { 64 };
            let values = s
                .get(1..1 + size)
                .ok_or_else(|| invalid("short quantization table"))?;
            if number > 3 {
                return Err(invalid("bad quantization table number"));
            }
            let mut table = [0u16; 64];
            for k in 0..64 {
                table[NATURAL[k]] = if wide {
                    u16::from_be_bytes([values[2 * k], values[2 * k + 1]])
                } else {
                    u16::from(values[k])
                };
            }
            self.quantizers[number] = Some(table);
            s = &s[1 + size..];
        }
        Ok(())
    }

    /// Decodes the scan whose header is `s` and whose data starts at `pos`; returns the
    /// position of the marker after it.
    fn scan(&mut self, bytes: &[u8], s: &[u8], pos: usize) -> Result<usize, DecodeError> {
        let frame = self
            .frame
            .as_mut()
            .ok_or_else(|| invalid("scan before frame"))?;
        let count = usize::from(*s.first().ok_or_else(|| invalid("short scan header"))?);
        if count == 0 || count > 4 || s.len() < 1 + 2 * count + 3 {
            return Err(invalid("bad scan header"));
        }
        let mut members = Vec::with_capacity(count);
        for m in s[1..1 + 2 * count].chunks_exact(2) {
            let index = frame
                .components
                .iter()
                .position(|c| c.id == m[0])
                .ok_or_else(|| invalid("scan of an unknown component"))?;
            members.push((
                index,
                usize::from(m[1] >> 4) & 3,
                usize::from(m[1] & 15) & 3,
            ));
        }
        let p = &s[1 + 2 * count..];
        let (ss, se, ah, al) = (
            usize::from(p[0]),
            usize::from(p[1]),
            p[2] >> 4,
            u32::from(p[2] & 15),
        );
        let pass = if !frame.progressive {
            Pass::Sequential
        } else if se > 63 || ss > se || al > 13 || (ss == 0) != (se == 0) || (ss > 0 && count > 1) {
            return Err(invalid("bad progression"));
        } else {
            match (ss, ah) {
                (0, 0) => Pass::DcFirst { al },
                (0, _) => Pass::DcRefine { al },
                (_, 0) => Pass::AcFirst { ss, se, al },
                _ => Pass::AcRefine { ss, se, al },
            }
        };
        for &(index, _, _) in &members {
            let c = &mut frame.components[index];
            if c.quantizers.is_none() {
                c.quantizers = Some(
                    self.quantizers[c.table]
                        .ok_or_else(|| invalid("undefined quantization table"))?,
                );
            }
            c.prediction = 0;
        }
        self.scans += 1;
        let mut bits = Bits::new(bytes, pos);
        let mut run = Run::default();
        let (across, down) = if count == 1 {
            let c = &frame.components[members[0].0];
            (c.width.div_ceil(8), c.height.div_ceil(8))
        } else {
            (frame.mcus_across, frame.mcus_down)
        };
        let mut every = interrupts::Every::<64>::default();
        let mut mcu = 0usize;
        for y in 0..down {
            every.tick();
            for x in 0..across {
                if self.restart_interval > 0 && mcu > 0 && mcu.is_multiple_of(self.restart_interval)
                {
                    restart(&mut bits, bytes)?;
                    run = Run::default();
                    for &(index, _, _) in &members {
                        frame.components[index].prediction = 0;
                    }
                }
                mcu += 1;
                for &(index, dc, ac) in &members {
                    let c = &mut frame.components[index];
                    let (h, v) = if count == 1 { (1, 1) } else { (c.h, c.v) };
                    for by in 0..v {
                        for bx in 0..h {
                            let at = ((y * v + by) * c.blocks_across + x * h + bx) * 64;
                            entropy::block(
                                &mut bits,
                                pass,
                                &mut c.coefficients[at..at + 64],
                                self.dc[dc].as_ref(),
                                self.ac[ac].as_ref(),
                                &mut c.prediction,
                                &mut run,
                            )?;
                        }
                    }
                }
            }
        }
        Ok(bits.skip_to_marker())
    }

    fn color(&self) -> Result<Color, DecodeError> {
        let frame = self.frame.as_ref().ok_or_else(|| invalid("no frame"))?;
        let ids: Vec<u8> = frame.components.iter().map(|c| c.id).collect();
        Ok(match ids.len() {
            1 => Color::Gray,
            3 if self.jfif => Color::YCbCr,
            3 => match self.adobe_transform {
                Some(0) => Color::Rgb,
                Some(_) => Color::YCbCr,
                None if ids == b"RGB" => Color::Rgb,
                None => Color::YCbCr,
            },
            _ => match self.adobe_transform {
                Some(0) | None => Color::Cmyk,
                Some(_) => Color::Ycck,
            },
        })
    }
}

/// Past a restart marker: the bits of the interval before it dropped.
fn restart<'a>(bits: &mut Bits<'a>, bytes: &'a [u8]) -> Result<(), DecodeError> {
    let mut pos = bits.skip_to_marker();
    while bytes.get(pos) == Some(&0xFF) {
        pos += 1;
    }
    match bytes.get(pos) {
        Some(0xD0..=0xD7) => {
            *bits = Bits::new(bytes, pos + 1);
            Ok(())
        }
        _ => Err(invalid("missing restart marker")),
    }
}

impl Frame {
    /// The image's rows, each component's blocks turned to samples first (its
    /// coefficients dropped as soon as they are), then stretched to the image's size and
    /// converted to RGB row by row.
    fn output(mut self, color: Color, row: &mut impl FnMut(&[u8])) -> Result<(), DecodeError> {
        let mut every = interrupts::Every::<64>::default();
        let mut planes = Vec::with_capacity(self.components.len());
        let mut ways = Vec::with_capacity(self.components.len());
        for c in &mut self.components {
            let quantizers = c
                .quantizers
                .ok_or_else(|| invalid("a component without data"))?;
            let stride = c.blocks_across * 8;
            let blocks_down = self.mcus_down * c.v;
            let mut samples = vec![0u8; stride * blocks_down * 8];
            let coefficients = std::mem::take(&mut c.coefficients);
            for (by, rows) in samples.chunks_exact_mut(stride * 8).enumerate() {
                every.tick();
                for bx in 0..c.blocks_across {
                    let at = (by * c.blocks_across + bx) * 64;
                    pixels::idct(
                        &coefficients[at..at + 64],
                        &quantizers,
                        &mut rows[bx * 8..],
                        stride,
                    );
                }
            }
            drop(coefficients);
            planes.push(Plane {
                samples,
                stride,
                width: c.width,
                height: c.height,
            });
            ways.push(upsampling(self.max_h, self.max_v, c)?);
        }
        let width = self.width;
        let mut lines = vec![vec![0u8; width]; planes.len()];
        let mut scratch = Vec::new();
        let mut rgb = vec![0u8; width * 3];
        for y in 0..self.height {
            every.tick();
            for ((plane, &how), line) in planes.iter().zip(&ways).zip(&mut lines) {
                pixels::upsample(plane, how, y, line, &mut scratch);
            }
            convert(color, &lines, &mut rgb);
            row(&rgb);
        }
        Ok(())
    }
}

/// One row of samples (a line a component) to RGB.
fn convert(color: Color, lines: &[Vec<u8>], rgb: &mut [u8]) {
    let pixels = rgb.chunks_exact_mut(3);
    match color {
        Color::Gray => {
            for (out, &y) in pixels.zip(&lines[0]) {
                out.fill(y);
            }
        }
        Color::Rgb => {
            for (out, ((&r, &g), &b)) in pixels.zip(lines[0].iter().zip(&lines[1]).zip(&lines[2])) {
                out.copy_from_slice(&[r, g, b]);
            }
        }
        Color::YCbCr => {
            for (out, ((&y, &cb), &cr)) in pixels.zip(lines[0].iter().zip(&lines[1]).zip(&lines[2]))
            {
                out.copy_from_slice(&pixels::ycc_to_rgb(y, cb, cr));
            }
        }
        Color::Cmyk | Color::Ycck => {
            let samples = lines[0].iter().zip(&lines[1]).zip(&lines[2]).zip(&lines[3]);
            for (out, (((&c, &m), &y), &k)) in pixels.zip(samples) {
                let cmyk = if color == Color::Ycck {
                    pixels::ycck_to_cmyk(c, m, y, k)
                } else {
                    [c, m, y, k]
                };
                out.copy_from_slice(&pixels::cmyk_to_rgb(cmyk));
            }
        }
    }
}

/// libjpeg's upsampling of a component with sampling factors `c.h` x `c.v` (jdsample.c's
/// choice; fractional ratios are refused there and here).
fn upsampling(max_h: usize, max_v: usize, c: &Component) -> Result<Upsample, DecodeError> {
    if !max_h.is_multiple_of(c.h) || !max_v.is_multiple_of(c.v) {
        return Err(DecodeError::Unsupported(
            "JPEG with fractional sampling factors".into(),
        ));
    }
    Ok(match (max_h / c.h, max_v / c.v) {
        (1, 1) => Upsample::Full,
        (2, 1) => Upsample::H2V1,
        (1, 2) => Upsample::H1V2,
        (2, 2) => Upsample::H2V2,
        (h, v) => Upsample::Repeat { h, v },
    })
}
