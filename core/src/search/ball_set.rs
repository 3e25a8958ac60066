//! [`BallSet`]: a batch of keyed Hamming balls of one radius, "is this fingerprint within
//! `radius` bits of any of these?", and [`BallLookup`], the set sorted into permuted tables
//! to answer that for many fingerprints. The balls' centers are 64-bit fingerprints or wide
//! codes ([`Center`]); a batch of wide codes is answered by [`WideBallLookup`], the centers
//! in the substring tables of multi-index hashing.
//!
//! A batch crosses to a shard as one value (Manku §3.3 broadcasts the query set to every
//! machine): the shard's index probes every center, and the caller maps what comes back to
//! the keys of the balls that contain it.
//!
//! Stored forms:
//! - Binary, little-endian: version byte (1), a zero byte, the radius (u16, at most 64),
//!   the number of balls (u32), the checksum (u64: XXH3-64 of the balls' bytes), then per
//!   ball its key (i64) and center: a fingerprint as a u64 (16 + 16·balls bytes), a wide
//!   code in its own binary form, most significant byte first (16 + 40·balls bytes for
//!   256 bits). The checksum names the batch: a function called once per row with the
//!   same batch keeps its lookup while the checksum stays the same (see
//!   [`header_of`]), and decoding checks it.
//! - Text: `r<radius>:` then `<key>=<center>` per ball, the center as 16 hex digits (64 for
//!   256 bits), balls separated by `,` (`r3:17=0123456789abcdef,-2=fedcba9876543210`; `r3:`
//!   is empty). Printed lowercase; read in either case, with surrounding ASCII white space
//!   ignored.

use crate::base::hash::hash_bytes;
use crate::search::multi_index::MultiIndex;
use crate::search::permuted::{GroupedTables, Layout};
use crate::signatures::codec::{hex_word, push_hex, DecodeError};
use crate::signatures::simhash::hamming;
use crate::signatures::wide_code::WideCode;
use std::fmt;

const FORMAT_VERSION: u8 = 1;
const HEADER_LEN: usize = 16;
const KEY_LEN: usize = 8;
/// The most balls a batch holds: its binary form stays under PostgreSQL's 1 GB varlena
/// limit with room to spare (16 M balls are 256 MB).
pub const MAX_BALLS: usize = 1 << 24;

/// What a ball is centered on: a 64-bit fingerprint, or a wide code.
pub trait Center: Copy + Eq + fmt::Debug {
    const BITS: u32;
    /// Bytes of a center in the binary form.
    const BYTES: usize;
    fn write(&self, out: &mut Vec<u8>);
    /// The center of exactly `BYTES` bytes.
    fn read(bytes: &[u8]) -> Self;
    fn push_hex(&self, text: &mut String);
    /// The center of exactly `BITS / 4` hex digits, else `None`.
    fn parse_hex(digits: &[u8]) -> Option<Self>;
}

impl Center for u64 {
    const BITS: u32 = 64;
    const BYTES: usize = 8;

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }

    fn read(bytes: &[u8]) -> u64 {
        u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
    }

    fn push_hex(&self, text: &mut String) {
        push_hex(text, *self, 16);
    }

    fn parse_hex(digits: &[u8]) -> Option<u64> {
        (digits.len() == 16).then(|| hex_word(digits)).flatten()
    }
}

impl<const W: usize> Center for WideCode<W> {
    const BITS: u32 = WideCode::<W>::BITS;
    const BYTES: usize = WideCode::<W>::BYTES;

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes());
    }

    fn read(bytes: &[u8]) -> WideCode<W> {
        WideCode::from_be_bytes(bytes).expect("a code's bytes")
    }

    fn push_hex(&self, text: &mut String) {
        text.push_str(&self.to_hex());
    }

    fn parse_hex(digits: &[u8]) -> Option<WideCode<W>> {
        let plain = digits.len() == 16 * W && digits.iter().all(u8::is_ascii_hexdigit);
        plain.then(|| WideCode::parse_hex(digits).ok()).flatten()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BallSet<C: Center = u64> {
    radius: u32,
    /// (key, center), in the order given.
    balls: Vec<(i64, C)>,
}

impl<C: Center> BallSet<C> {
    const BALL_LEN: usize = KEY_LEN + C::BYTES;

    /// The batch, or why not: a radius above the centers' bits, more than [`MAX_BALLS`]
    /// balls.
    pub fn new(radius: u32, balls: Vec<(i64, C)>) -> Result<BallSet<C>, DecodeError> {
        if radius > C::BITS {
            return Err(DecodeError(format!(
                "a Hamming radius on {0} bits is at most {0} (got {radius})",
                C::BITS
            )));
        }
        if balls.len() > MAX_BALLS {
            return Err(DecodeError(format!(
                "a batch holds at most {MAX_BALLS} fingerprints (got {})",
                balls.len()
            )));
        }
        Ok(BallSet { radius, balls })
    }

    pub fn radius(&self) -> u32 {
        self.radius
    }

    pub fn balls(&self) -> &[(i64, C)] {
        &self.balls
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + Self::BALL_LEN * self.balls.len());
        out.extend_from_slice(&[FORMAT_VERSION, 0]);
        out.extend_from_slice(&(self.radius as u16).to_le_bytes());
        out.extend_from_slice(&(self.balls.len() as u32).to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        for (key, center) in &self.balls {
            out.extend_from_slice(&key.to_le_bytes());
            center.write(&mut out);
        }
        let checksum = hash_bytes(&out[HEADER_LEN..]);
        out[8..16].copy_from_slice(&checksum.to_le_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<BallSet<C>, DecodeError> {
        let error = |message: String| Err(DecodeError(message));
        let Some((&[version, zero, r0, r1, n0, n1, n2, n3, c0, c1, c2, c3, c4, c5, c6, c7], body)) =
            bytes.split_first_chunk()
        else {
            return error(format!(
                "Hamming batch data is truncated ({} bytes, the header alone has {HEADER_LEN})",
                bytes.len()
            ));
        };
        if version != FORMAT_VERSION {
            return error(format!(
                "unsupported Hamming batch format version {version} (this build reads version {FORMAT_VERSION})"
            ));
        }
        if zero != 0 {
            return error(format!(
                "Hamming batch header byte 1 must be 0 (got {zero}): the data is not a Hamming batch"
            ));
        }
        let radius = u16::from_le_bytes([r0, r1]) as u32;
        let count = u32::from_le_bytes([n0, n1, n2, n3]) as usize;
        let ball_len = Self::BALL_LEN as u64;
        if body.len() as u64 != ball_len * count as u64 {
            return error(format!(
                "Hamming batch data has {} bytes, expected {} for {count} balls",
                bytes.len(),
                HEADER_LEN as u64 + ball_len * count as u64
            ));
        }
        if hash_bytes(body) != u64::from_le_bytes([c0, c1, c2, c3, c4, c5, c6, c7]) {
            return error("Hamming batch data does not match its checksum".into());
        }
        let balls = body
            .chunks_exact(Self::BALL_LEN)
            .map(|b| {
                let key = i64::from_le_bytes(b[..KEY_LEN].try_into().expect("8 bytes"));
                (key, C::read(&b[KEY_LEN..]))
            })
            .collect();
        BallSet::new(radius, balls)
    }

    /// Reads the text form (see the module documentation).
    pub fn from_text(input: &[u8]) -> Result<BallSet<C>, DecodeError> {
        let malformed = || {
            DecodeError(format!(
                "invalid Hamming batch: expected \"r<radius>:\" then <key>=<{} hex digits> separated by ','",
                C::BITS / 4
            ))
        };
        let rest = input
            .trim_ascii()
            .strip_prefix(b"r")
            .ok_or_else(malformed)?;
        let colon = rest.iter().position(|&b| b == b':').ok_or_else(malformed)?;
        if rest[..colon].starts_with(b"-") && decimal(&rest[1..colon], 19).is_some() {
            return Err(DecodeError(
                "a Hamming batch radius must not be negative".into(),
            ));
        }
        let radius = decimal(&rest[..colon], 19).ok_or_else(malformed)?;
        if radius > C::BITS as u64 {
            return Err(DecodeError(format!(
                "a Hamming radius on {0} bits is at most {0} (got {radius})",
                C::BITS
            )));
        }
        let body = &rest[colon + 1..];
        let balls = if body.is_empty() {
            Vec::new()
        } else {
            body.split(|&b| b == b',')
                .map(|ball| {
                    let eq = ball.iter().position(|&b| b == b'=')?;
                    let (key, center) = (&ball[..eq], &ball[eq + 1..]);
                    let key = match key.strip_prefix(b"-") {
                        Some(digits) => decimal(digits, 19)
                            .and_then(|v| i64::try_from(v).ok().map(|v| -v))
                            .or_else(|| (digits == b"9223372036854775808").then_some(i64::MIN))?,
                        None => i64::try_from(decimal(key, 19)?).ok()?,
                    };
                    C::parse_hex(center).map(|c| (key, c))
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(malformed)?
        };
        BallSet::new(radius as u32, balls)
    }
}

/// (radius, balls, checksum) from the header of a batch's binary form (of any centers),
/// without reading the balls; `None` when the header is incomplete.
pub fn header_of(bytes: &[u8]) -> Option<(u32, u32, u64)> {
    let header: &[u8; HEADER_LEN] = bytes.first_chunk()?;
    let radius = u16::from_le_bytes([header[2], header[3]]);
    let balls = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    let checksum = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
    Some((radius as u32, balls, checksum))
}

/// The value of 1 to `max_digits` decimal digits.
fn decimal(digits: &[u8], max_digits: usize) -> Option<u64> {
    if digits.is_empty() || digits.len() > max_digits || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

impl<C: Center> fmt::Display for BallSet<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = C::BITS as usize / 4;
        let mut text = String::with_capacity(4 + self.balls.len() * (8 + digits));
        text.push_str(&format!("r{}:", self.radius));
        for (i, (key, center)) in self.balls.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&key.to_string());
            text.push('=');
            center.push_hex(&mut text);
        }
        f.write_str(&text)
    }
}

/// Below this many balls a fingerprint is compared with every center (a pass with popcount
/// costs less than sorting the tables and binary-searching them).
const SORT_FROM_BALLS: usize = 64;

/// A batch made ready for many "which balls contain this fingerprint?" questions: its
/// centers grouped into the permuted tables of a layout for its radius, or, for a small
/// batch or a radius beyond what tables support, compared one by one.
pub struct BallLookup {
    radius: u32,
    centers: Vec<u64>,
    keys: Vec<i64>,
    tables: Option<(Layout, GroupedTables)>,
}

impl BallLookup {
    /// The lookup, sorted into tables unless the batch is small, its radius too wide for
    /// them, or the tables would hold more than `max_bytes`.
    pub fn new(set: &BallSet, max_bytes: usize) -> BallLookup {
        let centers: Vec<u64> = set.balls.iter().map(|b| b.1).collect();
        let keys = set.balls.iter().map(|b| b.0).collect();
        let tables = (centers.len() >= SORT_FROM_BALLS)
            .then(|| Layout::for_rows(centers.len() as u64, set.radius).ok())
            .flatten()
            .filter(|layout| Self::bytes_for(centers.len(), layout) <= max_bytes)
            .map(|layout| {
                let items: Vec<(u64, u32)> = centers
                    .iter()
                    .enumerate()
                    .map(|(i, &c)| (c, i as u32))
                    .collect();
                let grouped = GroupedTables::new(&layout, &items);
                (layout, grouped)
            });
        BallLookup {
            radius: set.radius,
            centers,
            keys,
            tables,
        }
    }

    /// The lookup that compares a fingerprint with every center (no tables to build).
    pub fn linear(set: &BallSet) -> BallLookup {
        BallLookup::new(set, 0)
    }

    /// Bytes held for `balls` balls in the tables of `layout`: the center, the key and the
    /// tables' entries and bucket offsets.
    fn bytes_for(balls: usize, layout: &Layout) -> usize {
        balls * 16 + GroupedTables::bytes_for(layout, balls)
    }

    pub fn radius(&self) -> u32 {
        self.radius
    }

    pub fn centers(&self) -> &[u64] {
        &self.centers
    }

    /// Calls `found` with the position of balls containing `fp` (a ball may come more than
    /// once, from several tables) until it returns true; whether it did.
    fn find(&self, fp: u64, mut found: impl FnMut(usize) -> bool) -> bool {
        match &self.tables {
            Some((layout, sorted)) => sorted.find(layout, fp, self.radius, |i| found(i as usize)),
            None => self
                .centers
                .iter()
                .enumerate()
                .any(|(i, &c)| hamming(fp, c) <= self.radius && found(i)),
        }
    }

    /// The position of the first ball containing `fp`.
    pub fn first_containing(&self, fp: u64) -> Option<usize> {
        let mut first: Option<usize> = None;
        self.find(fp, |i| {
            first = Some(first.map_or(i, |f| f.min(i)));
            false
        });
        first
    }

    pub fn contains(&self, fp: u64) -> bool {
        self.find(fp, |_| true)
    }

    /// The distinct keys of the balls containing `fp`, in increasing order.
    pub fn keys_containing(&self, fp: u64) -> Vec<i64> {
        let mut keys = Vec::new();
        self.find(fp, |i| {
            keys.push(self.keys[i]);
            false
        });
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

/// A batch of wide codes made ready for many "which balls contain this code?" questions:
/// its centers in the substring tables of multi-index hashing, or, for a small batch or a
/// radius the tables cannot cut, compared one by one.
pub struct WideBallLookup<const W: usize> {
    radius: u32,
    keys: Vec<i64>,
    centers: Vec<WideCode<W>>,
    tables: Option<MultiIndex<W>>,
}

impl<const W: usize> WideBallLookup<W> {
    pub fn new(set: &BallSet<WideCode<W>>) -> WideBallLookup<W> {
        let centers: Vec<WideCode<W>> = set.balls.iter().map(|b| b.1).collect();
        let tables = (centers.len() >= SORT_FROM_BALLS)
            .then(|| MultiIndex::new(centers.clone(), set.radius).ok())
            .flatten();
        WideBallLookup {
            radius: set.radius,
            keys: set.balls.iter().map(|b| b.0).collect(),
            centers,
            tables,
        }
    }

    pub fn radius(&self) -> u32 {
        self.radius
    }

    pub fn centers(&self) -> &[WideCode<W>] {
        &self.centers
    }

    /// Calls `found` with the position of every ball containing `code`, each once.
    fn find(&self, code: &WideCode<W>, mut found: impl FnMut(usize)) {
        match &self.tables {
            Some(tables) => tables.search(code, |i, _| found(i as usize)),
            None => {
                for (i, c) in self.centers.iter().enumerate() {
                    if c.hamming(code) <= self.radius {
                        found(i);
                    }
                }
            }
        }
    }

    /// The position of the first ball containing `code`.
    pub fn first_containing(&self, code: &WideCode<W>) -> Option<usize> {
        if self.tables.is_none() {
            // In order: the first ball found is the first (a radius the tables cannot cut
            // holds most codes in its first few balls).
            return self
                .centers
                .iter()
                .position(|c| c.hamming(code) <= self.radius);
        }
        let mut first: Option<usize> = None;
        self.find(code, |i| first = Some(first.map_or(i, |f| f.min(i))));
        first
    }

    pub fn contains(&self, code: &WideCode<W>) -> bool {
        self.first_containing(code).is_some()
    }

    /// The distinct keys of the balls containing `code`, in increasing order.
    pub fn keys_containing(&self, code: &WideCode<W>) -> Vec<i64> {
        let mut keys = Vec::new();
        self.find(code, |i| keys.push(self.keys[i]));
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::splitmix::splitmix64_next;

    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || splitmix64_next(&mut state)
    }

    fn batch(radius: u32, n: usize, seed: u64) -> BallSet {
        let mut next = rng(seed);
        let balls = (0..n).map(|i| (i as i64 * 7 - 50, next())).collect();
        BallSet::new(radius, balls).unwrap()
    }

    #[test]
    fn forms_round_trip() {
        for set in [
            batch(3, 0, 1),
            batch(0, 1, 2),
            batch(64, 5, 3),
            BallSet::new(7, vec![(i64::MIN, 0), (i64::MAX, u64::MAX), (-1, 0xabc)]).unwrap(),
        ] {
            assert_eq!(BallSet::from_bytes(&set.to_bytes()).unwrap(), set);
            let text = set.to_string();
            assert_eq!(BallSet::from_text(text.as_bytes()).unwrap(), set, "{text}");
        }
        let set = BallSet::new(3, vec![(17, 0x0123456789abcdef), (-2, 0xfedcba9876543210)]);
        assert_eq!(
            set.unwrap().to_string(),
            "r3:17=0123456789abcdef,-2=fedcba9876543210"
        );
        assert_eq!(
            BallSet::from_text(b"  r3:17=0123456789ABCDEF ").unwrap(),
            BallSet::new(3, vec![(17, 0x0123456789abcdef)]).unwrap()
        );
        let bytes = batch(2, 3, 9).to_bytes();
        assert_eq!(bytes.len(), HEADER_LEN + 3 * 16);
        let (radius, balls, checksum) = header_of(&bytes).unwrap();
        assert_eq!((radius, balls), (2, 3));
        assert_eq!(checksum, hash_bytes(&bytes[HEADER_LEN..]));
        assert_ne!(checksum, header_of(&batch(2, 3, 10).to_bytes()).unwrap().2);
    }

    #[test]
    fn malformed_input_is_refused() {
        for text in [
            "",
            "3:",
            "r:",
            "r65:",
            "r3",
            "r3:1",
            "r3:1=",
            "r3:1=0123",
            "r3:x=0123456789abcdef",
            "r3:1=0123456789abcdeg",
            "r3:1=0123456789abcdef,",
            "r3:9223372036854775808=0123456789abcdef",
            "r3:--1=0123456789abcdef",
        ] {
            assert!(
                BallSet::<u64>::from_text(text.as_bytes()).is_err(),
                "{text:?}"
            );
        }
        assert_eq!(
            BallSet::from_text(b"r3:-9223372036854775808=0000000000000000").unwrap(),
            BallSet::new(3, vec![(i64::MIN, 0)]).unwrap()
        );
        let good = batch(3, 2, 4).to_bytes();
        assert!(BallSet::<u64>::from_bytes(&good[..good.len() - 1]).is_err());
        assert!(BallSet::<u64>::from_bytes(&good[..5]).is_err());
        let mut bad = good.clone();
        bad[0] = 2;
        assert!(BallSet::<u64>::from_bytes(&bad).is_err());
        let mut bad = good.clone();
        bad[2] = 65;
        assert!(BallSet::<u64>::from_bytes(&bad).is_err());
        let mut bad = good.clone();
        bad[4] = 3; // three balls announced, two present
        assert!(BallSet::<u64>::from_bytes(&bad).is_err());
        let mut bad = good.clone();
        bad[HEADER_LEN] ^= 1; // a key changed, the checksum not
        assert!(BallSet::<u64>::from_bytes(&bad).is_err());
        // The messages say what is wrong.
        let message = |r: Result<BallSet, DecodeError>| r.unwrap_err().0;
        let mut bad = good.clone();
        bad[0] = 7;
        assert!(message(BallSet::from_bytes(&bad)).contains("format version 7"));
        let mut bad = good;
        bad[1] = 1;
        assert!(message(BallSet::from_bytes(&bad)).contains("byte 1 must be 0 (got 1)"));
        assert_eq!(
            message(BallSet::from_text(b"r-1:1=0123456789abcdef")),
            "a Hamming batch radius must not be negative"
        );
        assert!(message(BallSet::from_text(b"r99:")).contains("at most 64 (got 99)"));
    }

    /// The lookup against comparing with every center, for small and large batches, radii
    /// inside and beyond what permuted tables support, and fingerprints near, on and far
    /// from the centers (with centers repeated, and keys repeated).
    #[test]
    fn lookup_equals_brute_force() {
        let mut next = rng(42);
        for (n, radius) in [(0, 3), (10, 3), (200, 0), (500, 3), (2000, 6), (300, 20)] {
            let mut balls: Vec<(i64, u64)> = (0..n)
                .map(|i| ((i % 97) as i64, next() >> (i % 3 * 20)))
                .collect();
            let repeated: Vec<(i64, u64)> = balls.iter().take(n / 10).cloned().collect();
            balls.extend(repeated);
            let set = BallSet::new(radius, balls.clone()).unwrap();
            let lookups = [BallLookup::new(&set, usize::MAX), BallLookup::linear(&set)];
            for probe in 0..1500 {
                let fp = match (probe % 3, balls.is_empty()) {
                    (0, false) => {
                        let c = balls[probe % balls.len()].1;
                        (0..probe % 8).fold(c, |fp, _| fp ^ 1 << (next() % 64))
                    }
                    (1, false) => balls[probe % balls.len()].1 ^ (next() >> 40),
                    _ => next(),
                };
                let mut expected: Vec<i64> = balls
                    .iter()
                    .filter(|b| hamming(b.1, fp) <= radius)
                    .map(|b| b.0)
                    .collect();
                expected.sort_unstable();
                expected.dedup();
                let first = balls.iter().position(|b| hamming(b.1, fp) <= radius);
                for lookup in &lookups {
                    assert_eq!(lookup.keys_containing(fp), expected, "n={n} r={radius}");
                    assert_eq!(lookup.contains(fp), !expected.is_empty());
                    assert_eq!(lookup.first_containing(fp), first);
                }
            }
        }
    }

    fn wide(next: &mut impl FnMut() -> u64) -> WideCode<4> {
        WideCode([next(), next(), next(), next()])
    }

    #[test]
    fn wide_forms_round_trip_and_refuse_what_is_not_a_batch_of_their_width() {
        let mut next = rng(7);
        let balls: Vec<(i64, WideCode<4>)> = (0..5).map(|i| (i - 2, wide(&mut next))).collect();
        for set in [
            BallSet::new(31, balls.clone()).unwrap(),
            BallSet::new(256, Vec::new()).unwrap(),
            BallSet::new(0, vec![(i64::MIN, WideCode([u64::MAX; 4]))]).unwrap(),
        ] {
            let bytes = set.to_bytes();
            assert_eq!(bytes.len(), HEADER_LEN + 40 * set.balls().len());
            assert_eq!(BallSet::from_bytes(&bytes).unwrap(), set);
            let text = set.to_string();
            assert_eq!(BallSet::from_text(text.as_bytes()).unwrap(), set, "{text}");
        }
        // the center in the code's own binary form, most significant byte first
        let one = BallSet::new(3, vec![(9, WideCode([0x0102030405060708, 0, 0, 0xff]))]).unwrap();
        let bytes = one.to_bytes();
        assert_eq!(bytes[HEADER_LEN + 8..HEADER_LEN + 12], [1, 2, 3, 4]);
        assert_eq!(bytes[bytes.len() - 1], 0xff);
        assert_eq!(
            one.to_string(),
            format!("r3:9=0102030405060708{}00000000000000ff", "0".repeat(32))
        );
        let code128 = "0123456789abcdef0123456789abcdef";
        let narrow = BallSet::<WideCode<2>>::from_text(format!("r15:1={code128}").as_bytes());
        assert_eq!(narrow.unwrap().balls()[0].1 .0[1], 0x0123456789abcdef);
        let message = |r: Result<BallSet<WideCode<4>>, DecodeError>| r.unwrap_err().0;
        assert!(
            message(BallSet::from_text(b"r257:")).contains("on 256 bits is at most 256 (got 257)")
        );
        for text in [
            format!("r3:1={code128}"), // a 128-bit center in a 256-bit batch
            format!("r3:1=0x{code128}{code128}"),
            format!("r3:1= {code128}{code128}"),
            "r3:1=0123456789abcdef".to_string(),
        ] {
            assert!(
                message(BallSet::from_text(text.as_bytes())).contains("<64 hex digits>"),
                "{text}"
            );
        }
        let good = BallSet::new(31, balls).unwrap().to_bytes();
        assert!(BallSet::<WideCode<4>>::from_bytes(&good[..good.len() - 8]).is_err());
        // a 64-bit batch's bytes are not a wide batch's
        assert!(BallSet::<WideCode<4>>::from_bytes(&batch(3, 5, 1).to_bytes()).is_err());
    }

    /// The wide lookup against comparing with every center: small batches (compared one
    /// by one) and large ones (substring tables), radii that the tables cut and one they
    /// cannot, codes near, on and far from the centers, centers and keys repeated.
    #[test]
    fn wide_lookup_equals_brute_force() {
        let mut next = rng(11);
        for (n, radius) in [
            (0, 31),
            (10, 31),
            (200, 0),
            (900, 31),
            (1000, 31),
            (3000, 20),
            (300, 100),
            (70, 256),
        ] {
            let mut balls: Vec<(i64, WideCode<4>)> =
                (0..n).map(|i| ((i % 89) as i64, wide(&mut next))).collect();
            let repeated: Vec<(i64, WideCode<4>)> = balls.iter().take(n / 10).cloned().collect();
            balls.extend(repeated);
            let set = BallSet::new(radius, balls.clone()).unwrap();
            let lookup = WideBallLookup::new(&set);
            // (a radius of every code has no cut: compared one by one)
            let cut = n >= SORT_FROM_BALLS && radius < 256;
            assert_eq!(lookup.tables.is_some(), cut, "n={n} r={radius}");
            for probe in 0..600 {
                let code = match (probe % 3, balls.is_empty()) {
                    (0, false) => {
                        let mut c = balls[probe % balls.len()].1;
                        for _ in 0..probe % 40 {
                            c.0[(next() % 4) as usize] ^= 1 << (next() % 64);
                        }
                        c
                    }
                    (1, false) => balls[probe % balls.len()].1,
                    _ => wide(&mut next),
                };
                let mut expected: Vec<i64> = balls
                    .iter()
                    .filter(|b| b.1.hamming(&code) <= radius)
                    .map(|b| b.0)
                    .collect();
                expected.sort_unstable();
                expected.dedup();
                let first = balls.iter().position(|b| b.1.hamming(&code) <= radius);
                assert_eq!(lookup.keys_containing(&code), expected, "n={n} r={radius}");
                assert_eq!(lookup.contains(&code), !expected.is_empty());
                assert_eq!(lookup.first_containing(&code), first);
            }
        }
    }
}
