//! [`BandKeys`]: the LSH keys of one sketch ([`crate::search::lsh`]), as stored and indexed.
//!
//! - Binary, little-endian: version byte (1), a zero byte, rows per band (u16), number of
//!   bands (u16), then each key (u64): 6 + 8·bands bytes (62 for 7 bands).
//! - Text: `b<bands>r<rows>:` and then each key as 16 hex digits, most significant first,
//!   separated by `:` (`b7r12:0000…:0040…`). Printed lowercase; read in either case, with
//!   surrounding ASCII white space ignored.
//!
//! Decoding checks that key j carries band number j, so a value that did not come from
//! [`crate::search::lsh::band_keys`] (or the cast from supershingles) is refused.

use crate::search::lsh::{band_key, band_keys, band_of_key, Banding, MAX_BANDS};
use crate::signatures::codec::{hex_word, push_hex, DecodeError};
use crate::signatures::minhash::MAX_NUM_HASHES;
use crate::signatures::supershingles::{SupershingleVector, GROUP_LEN};
use std::fmt;

const FORMAT_VERSION: u8 = 1;
const HEADER_LEN: usize = 6;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandKeys {
    rows: u16,
    keys: Vec<u64>,
}

impl BandKeys {
    /// The keys of a sketch's values for a banding that fits them.
    pub fn of_sketch(values: &[u32], banding: &Banding) -> BandKeys {
        BandKeys {
            rows: banding.rows() as u16,
            keys: band_keys(values, banding),
        }
    }

    /// Supershingles are bands of 14 rows: the same keys as the sketch's `6 × 14` banding.
    pub fn of_supershingles(vector: &SupershingleVector) -> BandKeys {
        let keys = vector.values().iter().enumerate();
        BandKeys {
            rows: GROUP_LEN as u16,
            keys: keys.map(|(j, &v)| band_key(j, v)).collect(),
        }
    }

    pub fn rows(&self) -> usize {
        self.rows as usize
    }

    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    fn checked(rows: usize, keys: Vec<u64>) -> Result<BandKeys, DecodeError> {
        if keys.is_empty()
            || keys.len() > MAX_BANDS
            || rows == 0
            || rows * keys.len() > MAX_NUM_HASHES
        {
            return Err(DecodeError(format!(
                "{} bands of {rows} rows are out of range (1 to {MAX_NUM_HASHES} minvalues in all)",
                keys.len()
            )));
        }
        if let Some(j) = keys
            .iter()
            .enumerate()
            .position(|(j, &k)| band_of_key(k) != j)
        {
            return Err(DecodeError(format!(
                "band key {} does not belong to band {j}",
                j + 1
            )));
        }
        Ok(BandKeys {
            rows: rows as u16,
            keys,
        })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + 8 * self.keys.len());
        out.extend_from_slice(&[FORMAT_VERSION, 0]);
        out.extend_from_slice(&self.rows.to_le_bytes());
        out.extend_from_slice(&(self.keys.len() as u16).to_le_bytes());
        for k in &self.keys {
            out.extend_from_slice(&k.to_le_bytes());
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<BandKeys, DecodeError> {
        let error = |message: String| Err(DecodeError(message));
        let Some((&[version, zero, r0, r1, b0, b1], body)) = bytes.split_first_chunk() else {
            return error(format!(
                "band key data is truncated ({} bytes, the header alone has {HEADER_LEN})",
                bytes.len()
            ));
        };
        if version != FORMAT_VERSION || zero != 0 {
            return error(format!(
                "unsupported band key format version {version} (this build reads version {FORMAT_VERSION})"
            ));
        }
        let (rows, bands) = (u16::from_le_bytes([r0, r1]), u16::from_le_bytes([b0, b1]));
        if body.len() != 8 * bands as usize {
            return error(format!(
                "band key data has {} bytes, expected {} for {bands} bands",
                bytes.len(),
                HEADER_LEN + 8 * bands as usize
            ));
        }
        let keys = body
            .chunks_exact(8)
            .map(|k| u64::from_le_bytes(k.try_into().expect("chunks of 8")))
            .collect();
        BandKeys::checked(rows as usize, keys)
    }

    /// Reads the text form (see the module documentation).
    pub fn from_text(input: &[u8]) -> Result<BandKeys, DecodeError> {
        let malformed = || {
            DecodeError(
                "invalid band keys: expected \"b<bands>r<rows>:\" and keys of 16 hex digits separated by ':'"
                    .into(),
            )
        };
        let rest = input
            .trim_ascii()
            .strip_prefix(b"b")
            .ok_or_else(malformed)?;
        let number = |digits: &[u8]| -> Option<usize> {
            let text = std::str::from_utf8(digits).ok()?;
            (!digits.is_empty() && digits.len() <= 4 && digits.iter().all(u8::is_ascii_digit))
                .then(|| text.parse().ok())?
        };
        let r_at = rest.iter().position(|&b| b == b'r').ok_or_else(malformed)?;
        let colon = rest.iter().position(|&b| b == b':').ok_or_else(malformed)?;
        let (bands, rows) = (
            number(&rest[..r_at]).ok_or_else(malformed)?,
            number(rest.get(r_at + 1..colon).ok_or_else(malformed)?).ok_or_else(malformed)?,
        );
        if bands == 0 {
            return Err(DecodeError(
                "band keys need at least 1 band (got b0)".into(),
            ));
        }
        let body = &rest[colon + 1..];
        let words: Vec<&[u8]> = if body.is_empty() {
            Vec::new()
        } else {
            body.split(|&b| b == b':').collect()
        };
        if words.len() != bands {
            return Err(DecodeError(format!(
                "band key text has {} keys, its header says {bands}",
                words.len()
            )));
        }
        let keys = words
            .into_iter()
            .map(|w| {
                (w.len() == 16)
                    .then(|| hex_word(w))
                    .flatten()
                    .ok_or_else(malformed)
            })
            .collect::<Result<Vec<u64>, _>>()?;
        BandKeys::checked(rows, keys)
    }
}

impl fmt::Display for BandKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = format!("b{}r{}", self.keys.len(), self.rows);
        for &k in &self.keys {
            text.push(':');
            push_hex(&mut text, k, 16);
        }
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signatures::minhash::tests::sketch;
    use crate::signatures::supershingles::supershingles;

    #[test]
    fn forms_round_trip_and_supershingles_are_the_6_by_14_banding() {
        let s = sketch(
            "words enough for a few bands of a sketch, and then some more words",
            84,
            3,
        );
        let keys = BandKeys::of_sketch(s.values(), &Banding::new(7, 12, 84).unwrap());
        assert_eq!(keys.to_bytes().len(), 62);
        assert_eq!(BandKeys::from_bytes(&keys.to_bytes()), Ok(keys.clone()));
        let text = keys.to_string();
        assert!(
            text.starts_with("b7r12:") && text.len() == 6 + 7 * 17 - 1,
            "{text}"
        );
        assert_eq!(
            BandKeys::from_text(
                text.to_uppercase()
                    .replace('B', "b")
                    .replace('R', "r")
                    .as_bytes()
            ),
            Ok(keys.clone())
        );
        let six = BandKeys::of_sketch(s.values(), &Banding::new(6, 14, 84).unwrap());
        assert_eq!(BandKeys::of_supershingles(&supershingles(&s).unwrap()), six);
    }

    #[test]
    fn malformed_input_is_refused() {
        let keys = BandKeys::of_sketch(&[1, 2, 3, 4], &Banding::new(2, 2, 4).unwrap());
        let mut bytes = keys.to_bytes();
        assert!(BandKeys::from_bytes(&bytes[..10]).is_err());
        bytes[0] = 2;
        assert!(BandKeys::from_bytes(&bytes).is_err());
        // Keys swapped: each now names the other band.
        let swapped = format!("b2r2:{:016x}:{:016x}", keys.keys()[1], keys.keys()[0]);
        assert_eq!(
            BandKeys::from_text(swapped.as_bytes()).unwrap_err().0,
            "band key 1 does not belong to band 0"
        );
        assert_eq!(
            BandKeys::from_text(b"b0r1:").unwrap_err().0,
            "band keys need at least 1 band (got b0)"
        );
        assert_eq!(
            BandKeys::from_text(b"b2r2:").unwrap_err().0,
            "band key text has 0 keys, its header says 2"
        );
        for bad in [
            "",
            "b2r2",
            "b2r2:00",
            "b1r2:0000000000000000:0000000000000000",
            "x1r1:0000000000000000",
            "b1r0:0000000000000000",
            "b1r1025:0000000000000000",
            "b1r1:000000000000000g",
        ] {
            assert!(BandKeys::from_text(bad.as_bytes()).is_err(), "{bad}");
        }
        assert!(BandKeys::from_text(b" b1r1:0000000000000000 ").is_ok());
    }
}
