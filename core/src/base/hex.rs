//! Text form of fixed-width codes: exactly 16 hex digits per 64-bit word, most significant
//! first, printed lowercase; input also takes uppercase, a `0x`/`0X` prefix and surrounding
//! ASCII white space (as PostgreSQL's own numeric inputs do).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HexError {
    /// Not the expected number of digits after the optional prefix.
    WrongLength { expected: usize, found: usize },
    /// A character that is not a hex digit; carries its byte offset in the trimmed input.
    BadDigit(usize),
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HexError::WrongLength { expected, found } => {
                write!(f, "expected {expected} hex digits, found {found}")
            }
            HexError::BadDigit(at) => write!(f, "invalid hex digit at position {}", at + 1),
        }
    }
}

pub fn parse_hex64(input: &[u8]) -> Result<u64, HexError> {
    parse_hex_words::<1>(input).map(|[w]| w)
}

pub fn format_hex64(value: u64) -> String {
    format_hex_words(&[value])
}

/// `W` 64-bit words from 16·`W` hex digits, the first word from the first 16.
pub fn parse_hex_words<const W: usize>(input: &[u8]) -> Result<[u64; W], HexError> {
    let trimmed = input.trim_ascii();
    let digits = match trimmed {
        [b'0', b'x' | b'X', rest @ ..] => rest,
        _ => trimmed,
    };
    let offset = trimmed.len() - digits.len();
    if let Some(at) = digits.iter().position(|b| !b.is_ascii_hexdigit()) {
        return Err(HexError::BadDigit(offset + at));
    }
    if digits.len() != 16 * W {
        return Err(HexError::WrongLength {
            expected: 16 * W,
            found: digits.len(),
        });
    }
    let mut words = [0u64; W];
    for (word, chunk) in words.iter_mut().zip(digits.chunks(16)) {
        *word = hex_word(chunk).expect("checked hex digits");
    }
    Ok(words)
}

/// The value of 1 to 16 hex digits (either case); `None` if any byte is not a hex digit.
pub fn hex_word(digits: &[u8]) -> Option<u64> {
    debug_assert!((1..=16).contains(&digits.len()));
    digits.iter().try_fold(0u64, |acc, &b| {
        let v = (b as char).to_digit(16)?;
        Some(acc << 4 | v as u64)
    })
}

pub fn format_hex_words(words: &[u64]) -> String {
    words.iter().map(|w| format!("{w:016x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_forms() {
        assert_eq!(parse_hex64(b"00000000000000ff"), Ok(255));
        assert_eq!(parse_hex64(b"0xFFFFFFFFFFFFFFFF"), Ok(u64::MAX));
        assert_eq!(
            parse_hex64(b"  0X0123456789abcdef \n"),
            Ok(0x0123456789abcdef)
        );
        assert_eq!(format_hex64(0xab), "00000000000000ab");
        for v in [0, 1, u64::MAX, 0x8000_0000_0000_0000] {
            assert_eq!(parse_hex64(format_hex64(v).as_bytes()), Ok(v));
        }
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            parse_hex64(b""),
            Err(HexError::WrongLength {
                expected: 16,
                found: 0
            })
        );
        assert_eq!(
            parse_hex64(b"0x"),
            Err(HexError::WrongLength {
                expected: 16,
                found: 0
            })
        );
        assert_eq!(
            parse_hex64(b"ff"),
            Err(HexError::WrongLength {
                expected: 16,
                found: 2
            })
        );
        assert_eq!(
            parse_hex64(b"00000000000000000"),
            Err(HexError::WrongLength {
                expected: 16,
                found: 17
            })
        );
        assert_eq!(
            parse_hex64(b"000000000000000g"),
            Err(HexError::BadDigit(15))
        );
        assert_eq!(parse_hex64(b"+000000000000000"), Err(HexError::BadDigit(0)));
        assert_eq!(parse_hex64(b"0000 00000000000"), Err(HexError::BadDigit(4)));
        assert_eq!(
            parse_hex64("é000000000000000".as_bytes()),
            Err(HexError::BadDigit(0))
        );
        assert_eq!(
            parse_hex_words::<4>(&[b'0'; 63]),
            Err(HexError::WrongLength {
                expected: 64,
                found: 63
            })
        );
    }

    #[test]
    fn words_most_significant_first() {
        let text = "0123456789abcdef00000000000000ff";
        assert_eq!(
            parse_hex_words::<2>(text.as_bytes()),
            Ok([0x0123456789abcdef, 0xff])
        );
        assert_eq!(format_hex_words(&[0x0123456789abcdef, 0xff]), text);
    }
}
