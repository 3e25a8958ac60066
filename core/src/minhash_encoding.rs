//! Stored forms of a [`MinhashSketch`].
//!
//! - Binary, little-endian: version byte (1), shingle size (u8), number of hashes (u16),
//!   then the values (u32 each): 4 + 4m bytes, 340 for the defaults.
//! - Text: `m<hashes>s<shingle>:` and then each value as 8 hex digits, most significant
//!   first (`m84s8:` + 672 digits). Printed lowercase; read in either case, with
//!   surrounding ASCII white space ignored.
//!
//! Both carry the sizes, so a sketch is never compared with one of another shape; decoding
//! checks them against the limits of [`crate::minhash`].

use crate::codec::{hex_word, push_hex, DecodeError};
use crate::features::MAX_SHINGLE;
use crate::minhash::{MinhashSketch, MAX_NUM_HASHES};
use std::fmt;

const FORMAT_VERSION: u8 = 1;
const HEADER_LEN: usize = 4;

impl MinhashSketch {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + 4 * self.values.len());
        out.push(FORMAT_VERSION);
        out.push(self.shingle);
        out.extend_from_slice(&(self.values.len() as u16).to_le_bytes());
        for v in &self.values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let error = |message: String| Err(DecodeError(message));
        let Some((&[version, shingle, n_lo, n_hi], body)) = bytes.split_first_chunk() else {
            return error(format!(
                "minhash data is truncated ({} bytes, the header alone has {HEADER_LEN})",
                bytes.len()
            ));
        };
        if version != FORMAT_VERSION {
            return error(format!(
                "unsupported minhash format version {version} (this build reads version {FORMAT_VERSION})"
            ));
        }
        let num_hashes = u16::from_le_bytes([n_lo, n_hi]) as usize;
        check_sizes(num_hashes, shingle as usize)?;
        if body.len() != 4 * num_hashes {
            return error(format!(
                "minhash data has {} bytes, expected {} for {num_hashes} hashes",
                bytes.len(),
                HEADER_LEN + 4 * num_hashes
            ));
        }
        let values = body
            .chunks_exact(4)
            .map(|v| u32::from_le_bytes(v.try_into().expect("chunks of 4")))
            .collect();
        Ok(MinhashSketch { shingle, values })
    }

    /// Reads the text form (see the module documentation).
    pub fn from_text(input: &[u8]) -> Result<Self, DecodeError> {
        let input = input.trim_ascii();
        let malformed = || {
            DecodeError(
                "invalid minhash text: expected \"m<hashes>s<shingle>:\" and hex digits, as in \"m84s8:…\""
                    .to_string(),
            )
        };
        let rest = input.strip_prefix(b"m").ok_or_else(malformed)?;
        let (num_hashes, rest) = leading_number(rest, b's').ok_or_else(malformed)?;
        let (shingle, digits) = leading_number(rest, b':').ok_or_else(malformed)?;
        check_sizes(num_hashes, shingle)?;
        if digits.len() != 8 * num_hashes {
            return Err(DecodeError(format!(
                "minhash text has {} hex digits, expected {} for {num_hashes} hashes",
                digits.len(),
                8 * num_hashes
            )));
        }
        let values = digits
            .chunks_exact(8)
            .enumerate()
            .map(|(i, word)| {
                hex_word(word).map(|v| v as u32).ok_or_else(|| {
                    let at = input.len() - digits.len() + 8 * i;
                    let bad = word.iter().position(|b| !b.is_ascii_hexdigit());
                    DecodeError(format!(
                        "invalid hex digit in minhash text at position {}",
                        at + bad.unwrap_or(0) + 1
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(MinhashSketch {
            shingle: shingle as u8,
            values,
        })
    }
}

/// The decimal number (1 to 4 digits) before `terminator`, and what follows the terminator.
fn leading_number(input: &[u8], terminator: u8) -> Option<(usize, &[u8])> {
    let end = input.iter().position(|&b| b == terminator)?;
    let digits = &input[..end];
    if !(1..=4).contains(&digits.len()) || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits
        .iter()
        .fold(0, |acc, &d| acc * 10 + (d - b'0') as usize);
    Some((value, &input[end + 1..]))
}

fn check_sizes(num_hashes: usize, shingle: usize) -> Result<(), DecodeError> {
    let check = |what: &str, value: usize, max: usize| {
        if (1..=max).contains(&value) {
            Ok(())
        } else {
            Err(DecodeError(format!(
                "minhash {what} {value} is out of range (1 to {max})"
            )))
        }
    };
    check("number of hashes", num_hashes, MAX_NUM_HASHES)?;
    check("shingle size", shingle, MAX_SHINGLE)
}

impl fmt::Display for MinhashSketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = format!("m{}s{}:", self.values.len(), self.shingle);
        text.reserve(8 * self.values.len());
        for &v in &self.values {
            push_hex(&mut text, v as u64, 8);
        }
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minhash::tests::sketch;
    use crate::minhash::MinhashOptions;

    #[test]
    fn binary_form() {
        let s = sketch("Hello, world", 2, 8);
        let bytes = s.to_bytes();
        assert_eq!(&bytes[..4], &[1, 8, 2, 0]);
        assert_eq!(bytes[4..8], s.values()[0].to_le_bytes());
        assert_eq!(bytes.len(), 12);
        assert_eq!(MinhashSketch::from_bytes(&bytes), Ok(s));
        assert_eq!(MinhashOptions::DEFAULT.num_hashes() * 4 + 4, 340);
        let err = |b: &[u8]| MinhashSketch::from_bytes(b).unwrap_err().0;
        assert_eq!(
            err(&bytes[..3]),
            "minhash data is truncated (3 bytes, the header alone has 4)"
        );
        assert_eq!(
            err(&bytes[..11]),
            "minhash data has 11 bytes, expected 12 for 2 hashes"
        );
        assert_eq!(
            err(&[2, 8, 2, 0]),
            "unsupported minhash format version 2 (this build reads version 1)"
        );
        assert_eq!(
            err(&[1, 0, 2, 0]),
            "minhash shingle size 0 is out of range (1 to 16)"
        );
        assert_eq!(
            err(&[1, 8, 0, 0]),
            "minhash number of hashes 0 is out of range (1 to 1024)"
        );
        assert_eq!(
            err(&[1, 8, 1, 4]),
            "minhash number of hashes 1025 is out of range (1 to 1024)"
        );
    }

    #[test]
    fn text_form() {
        let s = MinhashSketch {
            shingle: 8,
            values: vec![0xab, u32::MAX],
        };
        assert_eq!(s.to_string(), "m2s8:000000abffffffff");
        assert_eq!(MinhashSketch::from_text(b" m2s8:000000ABffffffff\n"), Ok(s));
        let real = sketch("The quick brown fox jumps over the lazy dog", 84, 8);
        let text = real.to_string();
        assert_eq!(text.len(), "m84s8:".len() + 672);
        assert_eq!(MinhashSketch::from_text(text.as_bytes()), Ok(real));
        let err = |t: &str| MinhashSketch::from_text(t.as_bytes()).unwrap_err().0;
        let malformed = "invalid minhash text: expected \"m<hashes>s<shingle>:\" and hex digits, as in \"m84s8:…\"";
        for bad in [
            "",
            "m2s8",
            "2s8:00",
            "ms8:",
            "m2s:",
            "m+2s8:",
            "m00002s8:",
            "M2S8:",
        ] {
            assert_eq!(err(bad), malformed, "{bad:?}");
        }
        assert_eq!(
            err("m2s8:000000ab"),
            "minhash text has 8 hex digits, expected 16 for 2 hashes"
        );
        assert_eq!(
            err("m2s8:000000abfffffxff"),
            "invalid hex digit in minhash text at position 19"
        );
        assert_eq!(
            err("m2s0:"),
            "minhash shingle size 0 is out of range (1 to 16)"
        );
        assert_eq!(
            err("m2000s8:"),
            "minhash number of hashes 2000 is out of range (1 to 1024)"
        );
    }
}
