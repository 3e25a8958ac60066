//! The two stored forms of a [`BloomSignature`]; both carry the parameters, so a value read
//! back compares only with signatures built the same way.
//!
//! Binary (`to_bytes`/`from_bytes`, and [`BloomView::from_bytes`] to read one in place),
//! 10 header bytes then the bits:
//!
//! | bytes | content |
//! |---|---|
//! | 0 | format version, 1 |
//! | 1 | `k` (hashes) |
//! | 2..6 | `m` (bits), u32 little-endian |
//! | 6..10 | expected chunk size, u32 little-endian |
//! | 10.. | the `m / 8` bytes of [`BloomSignature::bit_bytes`] |
//!
//! Text (`to_string`/`from_text`), for SQL input and output:
//! `bloom:m=2048:k=6:chunk=256:` followed by the `m / 8` bytes of bits as `m / 4` hex
//! digits, two per byte in byte order, printed lowercase. Input also takes uppercase
//! digits and surrounding ASCII white space, as [`crate::base::hex`] does; anything else is an
//! error ([`BloomError::Malformed`], or the parameter error), never a panic.

use crate::signatures::bloom::{BloomError, BloomParams, BloomSignature, BloomView};
use std::fmt;

const VERSION: u8 = 1;
const HEADER_LEN: usize = 10;
const TEXT_PREFIX: &str = "bloom:";

fn malformed(why: impl Into<String>) -> BloomError {
    BloomError::Malformed(why.into())
}

impl BloomSignature {
    pub fn to_bytes(&self) -> Vec<u8> {
        let p = self.params();
        let mut out = Vec::with_capacity(HEADER_LEN + p.bits() as usize / 8);
        out.push(VERSION);
        out.push(p.hashes());
        out.extend_from_slice(&p.bits().to_le_bytes());
        out.extend_from_slice(&(p.chunk_size().get() as u32).to_le_bytes());
        out.extend_from_slice(self.bit_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BloomError> {
        Ok(BloomView::from_bytes(bytes)?.to_signature())
    }

    pub fn from_text(input: &[u8]) -> Result<Self, BloomError> {
        let text = input.trim_ascii();
        let Some(fields) = text.strip_prefix(TEXT_PREFIX.as_bytes()) else {
            return Err(malformed(format!("must start with \"{TEXT_PREFIX}\"")));
        };
        let mut fields = fields.splitn(4, |&b| b == b':');
        let mut number = |name: &str| {
            let field = fields.next().unwrap_or_default();
            match field.strip_prefix(name.as_bytes()) {
                Some(digits @ [_, ..])
                    if digits.len() <= 9 && digits.iter().all(u8::is_ascii_digit) =>
                {
                    // At most 9 digits: fits an i64 whatever they are.
                    Ok(digits.iter().fold(0i64, |n, d| 10 * n + (d - b'0') as i64))
                }
                Some(digits @ [_, ..]) if digits.iter().all(u8::is_ascii_digit) => {
                    Err(malformed(format!(
                        "the {name}<number> field is out of range ({} digits)",
                        digits.len()
                    )))
                }
                _ => Err(malformed(format!(
                    "the {name}<number> field is missing or not a number (the form is \
                     bloom:m=<bits>:k=<hashes>:chunk=<chunk size>:<hex>)"
                ))),
            }
        };
        let (bits, hashes, chunk_size) = (number("m=")?, number("k=")?, number("chunk=")?);
        let params = BloomParams::new(bits, Some(hashes), chunk_size)?;
        let hex = fields.next().unwrap_or_default();
        let hex_offset = text.len() - hex.len();
        let expected = params.bits() as usize / 4;
        if hex.len() != expected {
            return Err(malformed(format!(
                "{params} needs {expected} hex digits, found {}",
                hex.len()
            )));
        }
        let digit = |at: usize| match (hex[at] as char).to_digit(16) {
            Some(v) => Ok(v as u8),
            None => Err(malformed(format!(
                "invalid hex digit at position {}",
                hex_offset + at + 1
            ))),
        };
        let bytes = (0..expected / 2)
            .map(|i| Ok(digit(2 * i)? << 4 | digit(2 * i + 1)?))
            .collect::<Result<Vec<u8>, BloomError>>()?;
        BloomSignature::from_bit_bytes(params, &bytes)
    }
}

impl<'a> BloomView<'a> {
    /// The signature encoded in `bytes` (as [`BloomSignature::to_bytes`] writes it),
    /// checked, without copying its bits.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, BloomError> {
        let Some((header, bits)) = bytes.split_first_chunk::<HEADER_LEN>() else {
            return Err(malformed(format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte header",
                bytes.len()
            )));
        };
        if header[0] != VERSION {
            return Err(malformed(format!("unknown format version {}", header[0])));
        }
        let u32_at =
            |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes")) as i64;
        let params = BloomParams::new(u32_at(2), Some(header[1] as i64), u32_at(6))?;
        BloomView::new(params, bits)
    }
}

/// The text form.
impl fmt::Display for BloomSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{TEXT_PREFIX}{}:", self.params())?;
        self.bit_bytes()
            .iter()
            .try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signatures::bloom::{bloom_match, bloom_text};

    fn sample(bits: i64) -> BloomSignature {
        bloom_text(
            "Bloom filters refine web search. ".repeat(30).as_bytes(),
            bits,
            Some(3),
            16,
        )
        .unwrap()
    }

    #[test]
    fn forms_round_trip() {
        for bits in [64, 72, 2048, 65536] {
            let s = sample(bits);
            assert!(s.bit_count() > 0);
            let bytes = s.to_bytes();
            assert_eq!(BloomSignature::from_bytes(&bytes), Ok(s.clone()));
            let view = BloomView::from_bytes(&bytes).unwrap();
            assert_eq!(view, s.view());
            assert_eq!(bloom_match(view, &s), Ok(1.0));
            let text = s.to_string();
            assert_eq!(BloomSignature::from_text(text.as_bytes()), Ok(s.clone()));
            let shouted = format!(
                " \n{}\t",
                text.to_uppercase().replace("BLOOM:M=", "bloom:m=")
            );
            let shouted = shouted.replace(":K=", ":k=").replace(":CHUNK=", ":chunk=");
            assert_eq!(BloomSignature::from_text(shouted.as_bytes()), Ok(s));
        }
    }

    #[test]
    fn layouts_are_as_documented() {
        let mut s = BloomSignature::empty(BloomParams::new(64, Some(2), 300).unwrap());
        s.insert(7);
        let bits = s.bit_bytes();
        let mut bytes = vec![1, 2, 64, 0, 0, 0, 44, 1, 0, 0];
        bytes.extend_from_slice(bits);
        assert_eq!(s.to_bytes(), bytes);
        let hex: String = bits.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(s.to_string(), format!("bloom:m=64:k=2:chunk=300:{hex}"));
        let empty = BloomSignature::empty(BloomParams::new(64, None, 256).unwrap());
        assert_eq!(
            empty.to_string(),
            "bloom:m=64:k=6:chunk=256:0000000000000000"
        );
    }

    #[test]
    fn malformed_binary_is_rejected() {
        let good = sample(64).to_bytes();
        let err = |bytes: &[u8]| BloomSignature::from_bytes(bytes).unwrap_err().to_string();
        assert_eq!(
            err(&good[..9]),
            "malformed Bloom signature: 9 bytes, shorter than the 10-byte header"
        );
        assert_eq!(
            err(&[&[2], &good[1..]].concat()),
            "malformed Bloom signature: unknown format version 2"
        );
        assert_eq!(
            err(&good[..17]),
            "malformed Bloom signature: m=64:k=3:chunk=16 needs 8 bytes of bits, got 7"
        );
        assert_eq!(
            err(&[&good[..], &[0]].concat()),
            "malformed Bloom signature: m=64:k=3:chunk=16 needs 8 bytes of bits, got 9"
        );
        let mut bad_k = good.clone();
        bad_k[1] = 0;
        assert_eq!(err(&bad_k), "hashes must be between 1 and 16, got 0");
        let mut bad_m = good.clone();
        bad_m[2..6].copy_from_slice(&65u32.to_le_bytes());
        assert_eq!(
            err(&bad_m),
            "bits must be a multiple of 8 between 64 and 65536, got 65"
        );
        bad_m[2..6].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(err(&bad_m).starts_with("bits must be"));
        let mut bad_chunk = good;
        bad_chunk[6..10].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            err(&bad_chunk),
            "chunk size must be between 16 and 65536 bytes, got 0"
        );
    }

    #[test]
    fn out_of_range_numbers_in_text_are_named_so() {
        for (text, digits) in [
            ("bloom:m=1234567890:k=6:chunk=256:00", 10),
            ("bloom:m=1234567890123:k=6:chunk=256:00", 13),
        ] {
            assert_eq!(
                BloomSignature::from_text(text.as_bytes())
                    .unwrap_err()
                    .to_string(),
                format!("malformed Bloom signature: the m=<number> field is out of range ({digits} digits)")
            );
        }
    }

    #[test]
    fn malformed_text_is_rejected() {
        let hex16 = "0123456789abcdef";
        let err = |text: String| {
            BloomSignature::from_text(text.as_bytes())
                .unwrap_err()
                .to_string()
        };
        let layout = "malformed Bloom signature: the m=<number> field is missing or not a \
                      number (the form is bloom:m=<bits>:k=<hashes>:chunk=<chunk size>:<hex>)";
        for bad in [
            "".to_string(),
            "bloom".into(),
            "Bloom:m=64:k=6:chunk=256:".into(),
            format!("m=64:k=6:chunk=256:{hex16}"),
        ] {
            assert_eq!(
                err(bad),
                "malformed Bloom signature: must start with \"bloom:\""
            );
        }
        for bad in [
            "bloom:".to_string(),
            "bloom:m=:k=6:chunk=256:".into(),
            "bloom:m=+64:k=6:chunk=256:".into(),
            "bloom:m=-64:k=6:chunk=256:".into(),
            "bloom:M=64:k=6:chunk=256:".into(),
            "bloom:64:6:256:".into(),
        ] {
            assert_eq!(err(bad), layout);
        }
        assert!(err("bloom:m=64:k=6:".into()).contains("the chunk=<number> field"));
        assert!(err("bloom:m=64:chunk=256:k=6:".into()).contains("the k=<number> field"));
        assert_eq!(
            err(format!("bloom:m=60:k=6:chunk=256:{hex16}")),
            "bits must be a multiple of 8 between 64 and 65536, got 60"
        );
        assert_eq!(
            err(format!("bloom:m=64:k=99:chunk=256:{hex16}")),
            "hashes must be between 1 and 16, got 99"
        );
        assert_eq!(
            err(format!("bloom:m=64:k=6:chunk=999999:{hex16}")),
            "chunk size must be between 16 and 65536 bytes, got 999999"
        );
        assert_eq!(
            err("bloom:m=64:k=6:chunk=256".into()),
            "malformed Bloom signature: m=64:k=6:chunk=256 needs 16 hex digits, found 0"
        );
        assert_eq!(
            err(format!("bloom:m=64:k=6:chunk=256:{hex16}00")),
            "malformed Bloom signature: m=64:k=6:chunk=256 needs 16 hex digits, found 18"
        );
        assert_eq!(
            err("bloom:m=64:k=6:chunk=256:0123456789abcdeg".into()),
            "malformed Bloom signature: invalid hex digit at position 41"
        );
        assert_eq!(
            err("bloom:m=64:k=6:chunk=256:0123456789abc é".into()),
            "malformed Bloom signature: invalid hex digit at position 39"
        );
        assert_eq!(
            err("bloom:m=64:k=6:chunk=256:0123456789abcd:f".into()),
            "malformed Bloom signature: invalid hex digit at position 40"
        );
    }
}
