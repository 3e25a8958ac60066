//! The entropy-coded data of a JPEG scan (Huffman coding, baseline and progressive) to
//! quantized DCT coefficients, as libjpeg's jdhuff.c and jdphuff.c read them: when the data
//! of a scan ends early (a marker where more bits were due), zero bits are read instead,
//! as libjpeg does (with a warning that Pillow does not turn into an error).

use crate::images::decode::DecodeError;

/// Zigzag position to natural (row-major) position, with libjpeg's 16 extra entries so that
/// a corrupt run past the last coefficient lands on it instead of out of bounds.
pub(super) const NATURAL: [usize; 80] = {
    let zigzag: [usize; 64] = [
        0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27,
        20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
        58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
    ];
    let mut table = [63; 80];
    let mut k = 0;
    while k < 64 {
        table[k] = zigzag[k];
        k += 1;
    }
    table
};

const LOOKUP_BITS: u32 = 9;

/// A Huffman table: codes of up to 9 bits from one lookup, longer ones by their length.
pub(super) struct Huffman {
    /// (code length, symbol) by the next 9 bits; length 0 where the code is longer.
    lookup: Vec<(u8, u8)>,
    /// For each length 1..=16: the largest code of that length (-1 if none) and the index
    /// in `symbols` of its smallest code minus that code.
    max_code: [i32; 17],
    offset: [i32; 17],
    symbols: Vec<u8>,
}

impl Huffman {
    /// From a DHT segment's 16 counts and its symbols.
    pub(super) fn new(counts: &[u8], symbols: &[u8]) -> Result<Huffman, DecodeError> {
        let mut lookup = vec![(0u8, 0u8); 1 << LOOKUP_BITS];
        let (mut max_code, mut offset) = ([-1i32; 17], [0i32; 17]);
        let (mut code, mut index) = (0i32, 0usize);
        for length in 1..=16usize {
            let count = usize::from(counts[length - 1]);
            if count > 0 {
                offset[length] = index as i32 - code;
                for _ in 0..count {
                    // a code past the last of its length: the table over-subscribes it
                    // (checked before the code indexes the lookup)
                    if code >= 1 << length {
                        return Err(bad_table());
                    }
                    let symbol = *symbols.get(index).ok_or_else(bad_table)?;
                    if length as u32 <= LOOKUP_BITS {
                        let shift = LOOKUP_BITS - length as u32;
                        let first = (code as usize) << shift;
                        for entry in &mut lookup[first..first + (1 << shift)] {
                            *entry = (length as u8, symbol);
                        }
                    }
                    code += 1;
                    index += 1;
                }
                max_code[length] = code - 1;
            }
            code <<= 1;
        }
        Ok(Huffman {
            lookup,
            max_code,
            offset,
            symbols: symbols[..index].to_vec(),
        })
    }
}

fn bad_table() -> DecodeError {
    DecodeError::Invalid("corrupt JPEG: bad Huffman table".into())
}

/// The scan's bits, most significant first, with the 0xFF 0x00 stuffing removed.
pub(super) struct Bits<'a> {
    data: &'a [u8],
    pub(super) pos: usize,
    acc: u64,
    count: u32,
    /// A marker (or the end of the data) was reached: only zero bits follow.
    at_marker: bool,
}

impl<'a> Bits<'a> {
    pub(super) fn new(data: &'a [u8], pos: usize) -> Self {
        Bits {
            data,
            pos,
            acc: 0,
            count: 0,
            at_marker: false,
        }
    }

    fn fill(&mut self) {
        while self.count <= 56 {
            let byte = if self.at_marker {
                0
            } else {
                match self.data.get(self.pos) {
                    None => {
                        self.at_marker = true;
                        0
                    }
                    Some(&0xFF) => {
                        let mut next = self.pos + 1;
                        while self.data.get(next) == Some(&0xFF) {
                            next += 1;
                        }
                        if self.data.get(next) == Some(&0) {
                            self.pos = next + 1;
                            0xFF
                        } else {
                            self.at_marker = true;
                            0
                        }
                    }
                    Some(&byte) => {
                        self.pos += 1;
                        byte
                    }
                }
            };
            self.acc |= u64::from(byte) << (56 - self.count);
            self.count += 8;
        }
    }

    /// `n` (0..=16) bits as an unsigned number.
    #[inline]
    fn bits(&mut self, n: u32) -> i32 {
        if n == 0 {
            return 0;
        }
        if self.count < n {
            self.fill();
        }
        let value = (self.acc >> (64 - n)) as i32;
        self.acc <<= n;
        self.count -= n;
        value
    }

    #[inline]
    fn bit(&mut self) -> bool {
        self.bits(1) != 0
    }

    /// The next `n` bits as a signed coefficient (JPEG's "EXTEND").
    #[inline]
    fn receive(&mut self, n: u32) -> i32 {
        let value = self.bits(n);
        if n > 0 && value < 1 << (n - 1) {
            value - (1 << n) + 1
        } else {
            value
        }
    }

    #[inline]
    fn decode(&mut self, table: &Huffman) -> Result<u8, DecodeError> {
        if self.count < 16 {
            self.fill();
        }
        let (length, symbol) = table.lookup[(self.acc >> (64 - LOOKUP_BITS)) as usize];
        if length > 0 {
            self.acc <<= length;
            self.count -= u32::from(length);
            return Ok(symbol);
        }
        for length in LOOKUP_BITS + 1..=16 {
            let code = (self.acc >> (64 - length)) as i32;
            if code <= table.max_code[length as usize] {
                self.acc <<= length;
                self.count -= length;
                let index = (table.offset[length as usize] + code) as usize;
                return table.symbols.get(index).copied().ok_or_else(bad_code);
            }
        }
        Err(bad_code())
    }

    /// Past the rest of this stretch of entropy-coded data, to the marker that ends it;
    /// the bits still buffered are dropped (a restart, or the scan's end).
    pub(super) fn skip_to_marker(&mut self) -> usize {
        if !self.at_marker {
            while self.pos < self.data.len() {
                if self.data[self.pos] == 0xFF {
                    let mut next = self.pos + 1;
                    while self.data.get(next) == Some(&0xFF) {
                        next += 1;
                    }
                    if self.data.get(next) != Some(&0) {
                        break;
                    }
                    self.pos = next + 1;
                } else {
                    self.pos += 1;
                }
            }
        }
        self.acc = 0;
        self.count = 0;
        self.at_marker = false;
        self.pos
    }
}

fn bad_code() -> DecodeError {
    DecodeError::Invalid("corrupt JPEG: bad Huffman code".into())
}

/// What a scan codes: a sequential scan's whole blocks, or one of the progressive passes.
#[derive(Clone, Copy)]
pub(super) enum Pass {
    Sequential,
    DcFirst { al: u32 },
    DcRefine { al: u32 },
    AcFirst { ss: usize, se: usize, al: u32 },
    AcRefine { ss: usize, se: usize, al: u32 },
}

/// The state a scan carries from block to block; reset at each restart.
#[derive(Default)]
pub(super) struct Run {
    pub(super) eob_run: u32,
}

/// Decodes one block of the scan into `block` (natural order, still quantized).
#[inline]
pub(super) fn block(
    bits: &mut Bits,
    pass: Pass,
    block: &mut [i16],
    dc: Option<&Huffman>,
    ac: Option<&Huffman>,
    prediction: &mut i32,
    run: &mut Run,
) -> Result<(), DecodeError> {
    let missing =
        || DecodeError::Invalid("corrupt JPEG: a scan uses an undefined Huffman table".into());
    match pass {
        Pass::Sequential => {
            let (dc, ac) = (dc.ok_or_else(missing)?, ac.ok_or_else(missing)?);
            let size = u32::from(bits.decode(dc)?);
            *prediction = prediction.wrapping_add(bits.receive(size.min(16)));
            block[0] = *prediction as i16;
            let mut k = 1;
            while k < 64 {
                let rs = bits.decode(ac)?;
                let (r, s) = (usize::from(rs >> 4), u32::from(rs & 15));
                if s != 0 {
                    k += r;
                    block[NATURAL[k]] = bits.receive(s) as i16;
                    k += 1;
                } else if r == 15 {
                    k += 16;
                } else {
                    break;
                }
            }
        }
        Pass::DcFirst { al } => {
            let size = u32::from(bits.decode(dc.ok_or_else(missing)?)?);
            *prediction = prediction.wrapping_add(bits.receive(size.min(16)));
            block[0] = prediction.wrapping_shl(al) as i16;
        }
        Pass::DcRefine { al } => {
            if bits.bit() {
                block[0] |= 1 << al;
            }
        }
        Pass::AcFirst { ss, se, al } => {
            if run.eob_run > 0 {
                run.eob_run -= 1;
                return Ok(());
            }
            let ac = ac.ok_or_else(missing)?;
            let mut k = ss;
            while k <= se {
                let rs = bits.decode(ac)?;
                let (r, s) = (u32::from(rs >> 4), u32::from(rs & 15));
                if s != 0 {
                    k += r as usize;
                    block[NATURAL[k]] = bits.receive(s).wrapping_shl(al) as i16;
                } else if r == 15 {
                    k += 15;
                } else {
                    run.eob_run = (1 << r) + bits.bits(r) as u32 - 1;
                    break;
                }
                k += 1;
            }
        }
        Pass::AcRefine { ss, se, al } => {
            refine(bits, block, ac.ok_or_else(missing)?, run, ss, se, al)?
        }
    }
    Ok(())
}

/// A progressive AC refinement pass over one block (jdphuff.c's decode_mcu_AC_refine):
/// a correction bit for each coefficient already nonzero, newly nonzero ones of ±1 << al.
fn refine(
    bits: &mut Bits,
    block: &mut [i16],
    ac: &Huffman,
    run: &mut Run,
    ss: usize,
    se: usize,
    al: u32,
) -> Result<(), DecodeError> {
    let (p1, m1) = (1i16 << al, (-1i16) << al);
    let correct = |bits: &mut Bits, coef: &mut i16| {
        if bits.bit() && *coef & p1 == 0 {
            *coef += if *coef >= 0 { p1 } else { m1 };
        }
    };
    let mut k = ss;
    if run.eob_run == 0 {
        while k <= se {
            let rs = bits.decode(ac)?;
            let (mut r, s) = (i32::from(rs >> 4), rs & 15);
            let mut value = 0;
            if s != 0 {
                value = if bits.bit() { p1 } else { m1 };
            } else if r != 15 {
                run.eob_run = (1 << r) + bits.bits(r as u32) as u32;
                break;
            }
            while k <= se {
                let coef = &mut block[NATURAL[k]];
                if *coef != 0 {
                    correct(bits, coef);
                } else {
                    r -= 1;
                    if r < 0 {
                        break;
                    }
                }
                k += 1;
            }
            if value != 0 {
                block[NATURAL[k]] = value;
            }
            k += 1;
        }
    }
    if run.eob_run > 0 {
        while k <= se {
            let coef = &mut block[NATURAL[k]];
            if *coef != 0 {
                correct(bits, coef);
            }
            k += 1;
        }
        run.eob_run -= 1;
    }
    Ok(())
}
