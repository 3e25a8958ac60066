//! What the stored forms of [`crate::signatures::minhash`] sketches and [`crate::signatures::supershingles`]
//! vectors share: the error for malformed input, and fixed-width hex words.
//!
//! Decoding never panics: every length, range and digit is checked, and the error says
//! which.

use std::fmt;

/// Malformed binary or text input; the message says what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Appends `value` as exactly `digits` lowercase hex digits, most significant first.
pub(crate) fn push_hex(out: &mut String, value: u64, digits: usize) {
    use fmt::Write;
    write!(out, "{value:0digits$x}").expect("writing to a String cannot fail");
}

pub(crate) use crate::base::hex::hex_word;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_words_round_trip() {
        let mut s = String::new();
        push_hex(&mut s, 0xab, 8);
        push_hex(&mut s, u64::MAX, 16);
        assert_eq!(s, "000000abffffffffffffffff");
        assert_eq!(hex_word(b"000000AB"), Some(0xab));
        assert_eq!(hex_word(b"ffffffffffffffff"), Some(u64::MAX));
        assert_eq!(hex_word(b"0g"), None);
        assert_eq!(hex_word(b"+1"), None);
    }
}
