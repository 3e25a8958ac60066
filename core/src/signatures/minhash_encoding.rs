//! Stored forms of a [`MinhashSketch`].
//!
//! - Binary, little-endian: version byte (1), features byte, number of hashes (u16),
//!   then the values (u32 each): 4 + 4m bytes, 340 for the defaults. The features byte is
//!   the shingle size (1 to 16) for word shingles, `0x80 | n` for character n-grams of n
//!   characters (1 to 32).
//! - Text: `m<hashes>s<shingle>:` for word shingles, `m<hashes>c<n>:` for character
//!   n-grams, and then each value as 8 hex digits, most significant first (`m84s8:` + 672
//!   digits). Printed lowercase; read in either case, with surrounding ASCII white space
//!   ignored.
//!
//! Both carry the sizes and the kind of features, so a sketch is never compared with one
//! of another shape; decoding checks them against the limits of [`crate::signatures::minhash`].
//!
//! # Compatibility
//!
//! Character n-gram sketches came after the format was fixed, in space that word-shingle
//! sketches never used (features bytes with the high bit set, the letter `c`): a
//! word-shingle sketch is byte for byte what it always was in both forms, with the same
//! version byte, and everything stored before reads back unchanged. A reader from before
//! n-grams rejects an n-gram sketch (shingle size out of range, or malformed text) rather
//! than misreading it.

use crate::signatures::codec::{hex_word, push_hex, DecodeError};
use crate::signatures::minhash::{MinhashSketch, MAX_NUM_HASHES};
use crate::text::features::{FeatureKind, MAX_NGRAM, MAX_SHINGLE};
use std::fmt;

const FORMAT_VERSION: u8 = 1;
const HEADER_LEN: usize = 4;
/// Set in the features byte of character n-gram sketches.
const NGRAM_FLAG: u8 = 0x80;

impl MinhashSketch {
    pub fn to_bytes(&self) -> Vec<u8> {
        let features = match self.features {
            FeatureKind::WordShingles(w) => w as u8,
            FeatureKind::CharNgrams(n) => NGRAM_FLAG | n as u8,
        };
        let n = (self.values.len() as u16).to_le_bytes();
        let mut out = vec![0; HEADER_LEN + 4 * self.values.len()];
        let (header, body) = out.split_at_mut(HEADER_LEN);
        header.copy_from_slice(&[FORMAT_VERSION, features, n[0], n[1]]);
        // Sized once and filled in place: a copy on little-endian CPUs.
        for (bytes, v) in body.chunks_exact_mut(4).zip(&self.values) {
            bytes.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let error = |message: String| Err(DecodeError(message));
        let Some((&[version, features, n_lo, n_hi], body)) = bytes.split_first_chunk() else {
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
        let features = if features & NGRAM_FLAG != 0 {
            FeatureKind::CharNgrams((features & !NGRAM_FLAG) as usize)
        } else {
            FeatureKind::WordShingles(features as usize)
        };
        check_sizes(num_hashes, features)?;
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
        Ok(MinhashSketch { features, values })
    }

    /// Reads the text form (see the module documentation).
    pub fn from_text(input: &[u8]) -> Result<Self, DecodeError> {
        let input = input.trim_ascii();
        let malformed = || {
            DecodeError(
                "invalid minhash text: expected \"m<hashes>s<shingle>:\" or \"m<hashes>c<n>:\" and hex digits, as in \"m84s8:…\""
                    .to_string(),
            )
        };
        let rest = input.strip_prefix(b"m").ok_or_else(malformed)?;
        let (num_hashes, kind, rest) = leading_number(rest, b"sc").ok_or_else(malformed)?;
        let (window, _, digits) = leading_number(rest, b":").ok_or_else(malformed)?;
        let features = if kind == b'c' {
            FeatureKind::CharNgrams(window)
        } else {
            FeatureKind::WordShingles(window)
        };
        check_sizes(num_hashes, features)?;
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
        Ok(MinhashSketch { features, values })
    }
}

/// The decimal number (1 to 4 digits) before the first byte that is not a digit, which
/// must be one of `terminators`; that terminator, and what follows it.
fn leading_number<'a>(input: &'a [u8], terminators: &[u8]) -> Option<(usize, u8, &'a [u8])> {
    let end = input.iter().position(|b| !b.is_ascii_digit())?;
    let digits = &input[..end];
    if !(1..=4).contains(&digits.len()) || !terminators.contains(&input[end]) {
        return None;
    }
    let value = digits
        .iter()
        .fold(0, |acc, &d| acc * 10 + (d - b'0') as usize);
    Some((value, input[end], &input[end + 1..]))
}

fn check_sizes(num_hashes: usize, features: FeatureKind) -> Result<(), DecodeError> {
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
    match features {
        FeatureKind::WordShingles(w) => check("shingle size", w, MAX_SHINGLE),
        FeatureKind::CharNgrams(n) => check("n-gram size", n, MAX_NGRAM),
    }
}

impl fmt::Display for MinhashSketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = match self.features {
            FeatureKind::WordShingles(w) => format!("m{}s{w}:", self.values.len()),
            FeatureKind::CharNgrams(n) => format!("m{}c{n}:", self.values.len()),
        };
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
    use crate::signatures::minhash::tests::sketch;
    use crate::signatures::minhash::MinhashOptions;

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
            features: FeatureKind::WordShingles(8),
            values: vec![0xab, u32::MAX],
        };
        assert_eq!(s.to_string(), "m2s8:000000abffffffff");
        assert_eq!(MinhashSketch::from_text(b" m2s8:000000ABffffffff\n"), Ok(s));
        let real = sketch("The quick brown fox jumps over the lazy dog", 84, 8);
        let text = real.to_string();
        assert_eq!(text.len(), "m84s8:".len() + 672);
        assert_eq!(MinhashSketch::from_text(text.as_bytes()), Ok(real));
        let err = |t: &str| MinhashSketch::from_text(t.as_bytes()).unwrap_err().0;
        let malformed = "invalid minhash text: expected \"m<hashes>s<shingle>:\" or \"m<hashes>c<n>:\" and hex digits, as in \"m84s8:…\"";
        for bad in [
            "",
            "m2s8",
            "2s8:00",
            "ms8:",
            "m2s:",
            "m+2s8:",
            "m00002s8:",
            "M2S8:",
            "m2x8:",
            "m2C8:",
            "m2s8c:",
            "m2c:",
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

    #[test]
    fn ngram_sketches_flag_the_features_byte_and_use_the_letter_c() {
        let s = MinhashSketch {
            features: FeatureKind::CharNgrams(5),
            values: vec![0xab, u32::MAX],
        };
        assert_eq!(s.to_string(), "m2c5:000000abffffffff");
        assert_eq!(
            MinhashSketch::from_text(b"m2c5:000000ABffffffff"),
            Ok(s.clone())
        );
        let bytes = s.to_bytes();
        assert_eq!(&bytes[..4], &[1, 0x85, 2, 0]);
        assert_eq!(MinhashSketch::from_bytes(&bytes), Ok(s));
        // The same values as word shingles of 5: the header is all that differs.
        let words = MinhashSketch {
            features: FeatureKind::WordShingles(5),
            values: vec![0xab, u32::MAX],
        };
        assert_eq!(words.to_string(), "m2s5:000000abffffffff");
        assert_eq!(&words.to_bytes()[..4], &[1, 5, 2, 0]);
        assert_eq!(words.to_bytes()[4..], bytes[4..]);
        for n in [1, 32] {
            let real = crate::signatures::minhash::minhash_text(
                "日本語のテキスト".as_bytes(),
                &MinhashOptions::with_features(84, 8, n).unwrap(),
            );
            assert_eq!(real.features(), FeatureKind::CharNgrams(n as usize));
            assert_eq!(
                MinhashSketch::from_bytes(&real.to_bytes()),
                Ok(real.clone())
            );
            assert_eq!(
                MinhashSketch::from_text(real.to_string().as_bytes()),
                Ok(real)
            );
        }
        let err = |b: &[u8]| MinhashSketch::from_bytes(b).unwrap_err().0;
        assert_eq!(
            err(&[1, 0x80, 2, 0]),
            "minhash n-gram size 0 is out of range (1 to 32)"
        );
        assert_eq!(
            err(&[1, 0xa1, 2, 0]),
            "minhash n-gram size 33 is out of range (1 to 32)"
        );
        assert_eq!(
            err(&[1, 0xff, 2, 0]),
            "minhash n-gram size 127 is out of range (1 to 32)"
        );
        let err = |t: &str| MinhashSketch::from_text(t.as_bytes()).unwrap_err().0;
        assert_eq!(
            err("m2c0:"),
            "minhash n-gram size 0 is out of range (1 to 32)"
        );
        assert_eq!(
            err("m2c33:"),
            "minhash n-gram size 33 is out of range (1 to 32)"
        );
        // 17 is a valid n-gram size, not a valid shingle size.
        assert!(MinhashSketch::from_text(format!("m1c17:{:08x}", 7).as_bytes()).is_ok());
        assert_eq!(
            err("m1s17:00000007"),
            "minhash shingle size 17 is out of range (1 to 16)"
        );
    }
}
