//! Wide binary codes compared by Hamming distance: 128 and 256 bits (Meta's PDQ image hash is
//! 256). They are computed outside neardup (an image library, an embedding model) and stored
//! as they come, so their forms are the ones those tools print:
//!
//! ```text
//!  text:   16 hex digits per 64-bit word, most significant first (64 for 256 bits), the
//!          form ThreatExchange's PDQ tools print (its 16-bit words from the highest down)
//!  binary: the same bits as bytes, most significant first (32 bytes for 256 bits)
//!  words:  word 0 holds the first 16 hex digits; bit 0 of the code, in `substring`'s
//!          numbering, is the most significant bit of word 0
//! ```

use crate::base::hex::{format_hex_words, parse_hex_words, HexError};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct WideCode<const WORDS: usize>(pub [u64; WORDS]);

pub type Code128 = WideCode<2>;
pub type Code256 = WideCode<4>;

/// A byte string of the wrong length for the code; carries the length found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongByteLength(pub usize);

impl<const WORDS: usize> WideCode<WORDS> {
    pub const BITS: u32 = 64 * WORDS as u32;
    pub const BYTES: usize = 8 * WORDS;

    pub fn hamming(&self, other: &Self) -> u32 {
        self.0
            .iter()
            .zip(other.0.iter())
            .map(|(a, b)| (a ^ b).count_ones())
            .sum()
    }

    pub fn parse_hex(input: &[u8]) -> Result<Self, HexError> {
        parse_hex_words::<WORDS>(input).map(WideCode)
    }

    pub fn to_hex(&self) -> String {
        format_hex_words(&self.0)
    }

    pub fn from_be_bytes(bytes: &[u8]) -> Result<Self, WrongByteLength> {
        if bytes.len() != Self::BYTES {
            return Err(WrongByteLength(bytes.len()));
        }
        let mut words = [0u64; WORDS];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_be_bytes(chunk.try_into().expect("8-byte chunk"));
        }
        Ok(WideCode(words))
    }

    pub fn to_be_bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    /// The `len` bits (1..=32) from bit `start` on, as an integer whose most significant
    /// bit is bit `start`.
    pub fn substring(&self, start: u32, len: u32) -> u32 {
        debug_assert!((1..=32).contains(&len) && start + len <= Self::BITS);
        let (word, offset) = ((start / 64) as usize, start % 64);
        // The bits from `start` on, left-aligned in 128 bits (the next word fills in when the
        // substring crosses a word boundary).
        let next = self.0.get(word + 1).copied().unwrap_or(0);
        let wide = ((self.0[word] as u128) << 64 | next as u128) << offset;
        (wide >> (128 - len)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_bytes_round_trip_most_significant_first() {
        let text = "f8f8f0cee0f4a84f06370a22038f63f0b36e2ed596621e1d33e6b39c4e9c9b22";
        let code = Code256::parse_hex(text.as_bytes()).unwrap();
        assert_eq!(code.0[0], 0xf8f8f0cee0f4a84f);
        assert_eq!(code.0[3], 0x33e6b39c4e9c9b22);
        assert_eq!(code.to_hex(), text);
        let bytes = code.to_be_bytes();
        assert_eq!(bytes[0], 0xf8);
        assert_eq!(bytes[31], 0x22);
        assert_eq!(Code256::from_be_bytes(&bytes), Ok(code));
        assert_eq!(
            Code256::from_be_bytes(&bytes[1..]),
            Err(WrongByteLength(31))
        );
        assert_eq!(
            Code128::parse_hex(&text.as_bytes()[..32]).unwrap().to_hex(),
            &text[..32]
        );
    }

    #[test]
    fn hamming_counts_every_word() {
        let a = WideCode([0u64; 4]);
        let mut b = a;
        b.0[0] = 1;
        b.0[3] = u64::MAX;
        assert_eq!(a.hamming(&b), 65);
        assert_eq!(b.hamming(&b), 0);
    }

    #[test]
    fn substrings_cross_word_boundaries() {
        let code = Code128::parse_hex(b"0000000000000001800000000000000f").unwrap();
        assert_eq!(code.substring(0, 32), 0);
        assert_eq!(code.substring(62, 4), 0b0110);
        assert_eq!(code.substring(63, 2), 0b11);
        assert_eq!(code.substring(124, 4), 0xf);
        assert_eq!(code.substring(96, 32), 0xf);
        // every bit, one at a time, against the text form
        let bits: Vec<u32> = code
            .to_hex()
            .chars()
            .flat_map(|c| {
                let v = c.to_digit(16).unwrap();
                (0..4).rev().map(move |i| (v >> i) & 1)
            })
            .collect();
        for (i, &bit) in bits.iter().enumerate() {
            assert_eq!(code.substring(i as u32, 1), bit, "bit {i}");
        }
    }
}
