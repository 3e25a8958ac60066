//! Supershingles (Henzinger 2006, Alg. B, after Broder et al.): a minhash sketch reduced to
//! a few 64-bit words that two near-duplicates share, and index keys for finding them.
//!
//! # Supershingles
//!
//! The sketch's minvalues are cut into groups of [`GROUP_LEN`] = 14 consecutive entries;
//! group j's supershingle is XXH3-64 ([`hash_bytes`]) of its 14 values as little-endian
//! u32s (56 bytes). The default 84-entry sketch gives m' = 6 supershingles, 48 bytes.
//! Positions are not hashed in: entry j of one vector is only ever compared with entry j
//! of another, which already lines the groups up. A sketch needs a multiple of 14 entries
//! and at least two groups, since B-similarity's threshold is two agreeing entries.
//!
//! The B-similarity of two vectors is their number of equal entries; Alg. B calls pages
//! near-duplicates at B-similarity ≥ 2. Two texts agree on a supershingle with probability
//! about J^14 for Jaccard resemblance J, so that happens for near-copies only.
//!
//! # Index keys
//!
//! For an inverted (GIN) index, each vector has
//! - [`position_keys`]: XXH3-64 of the 9 bytes `[j, v[j] (LE)]`, one per position: two
//!   vectors share exactly as many of these as their B-similarity;
//! - [`megashingles`]: XXH3-64 of the 18 bytes `[i, j, v[i] (LE), v[j] (LE)]`, one per
//!   pair of positions i < j (C(6, 2) = 15 by default): vectors agreeing on s positions
//!   share exactly C(s, 2) of these, so one shared key means B-similarity ≥ 2.
//!
//! "Exactly" is up to 64-bit hash collisions, which an index rechecks anyway.
//!
//! # Stored forms
//!
//! - Binary: version byte (1), number of supershingles (u8), then each as a little-endian
//!   u64: 2 + 8m' bytes, 50 by default.
//! - Text: each supershingle as 16 hex digits, most significant first, separated by `:`.
//!   Printed lowercase; read in either case, with surrounding ASCII white space ignored.

use crate::base::hash::hash_bytes;
use crate::signatures::codec::{hex_word, push_hex, DecodeError};
use crate::signatures::minhash::{MinhashSketch, MismatchError, MAX_NUM_HASHES};
use crate::text::features::OptionError;
use std::fmt;

/// Minvalues per supershingle (l in Henzinger's notation).
pub const GROUP_LEN: usize = 14;
pub const MIN_SUPERSHINGLES: usize = 2;
pub const MAX_SUPERSHINGLES: usize = MAX_NUM_HASHES / GROUP_LEN;

const FORMAT_VERSION: u8 = 1;
const HEADER_LEN: usize = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupershingleVector(Vec<u64>);

impl SupershingleVector {
    /// A vector of [`MIN_SUPERSHINGLES`] to [`MAX_SUPERSHINGLES`] entries.
    pub fn new(values: Vec<u64>) -> Result<Self, DecodeError> {
        if !(MIN_SUPERSHINGLES..=MAX_SUPERSHINGLES).contains(&values.len()) {
            return Err(count_out_of_range(values.len()));
        }
        Ok(SupershingleVector(values))
    }

    pub fn values(&self) -> &[u64] {
        &self.0
    }
}

fn count_out_of_range(count: usize) -> DecodeError {
    DecodeError(format!(
        "supershingle count {count} is out of range ({MIN_SUPERSHINGLES} to {MAX_SUPERSHINGLES})"
    ))
}

/// The supershingles of a sketch of `GROUP_LEN × k` entries, k ≥ 2.
pub fn supershingles(sketch: &MinhashSketch) -> Result<SupershingleVector, OptionError> {
    let n = sketch.num_hashes();
    if !n.is_multiple_of(GROUP_LEN) || n / GROUP_LEN < MIN_SUPERSHINGLES {
        return Err(OptionError(format!(
            "supershingles need a minhash sketch of a multiple of {GROUP_LEN} hashes, at least {}, not {n}",
            GROUP_LEN * MIN_SUPERSHINGLES
        )));
    }
    let group_hash = |group: &[u32]| {
        let bytes: Vec<u8> = group.iter().flat_map(|v| v.to_le_bytes()).collect();
        hash_bytes(&bytes)
    };
    let values = sketch.values().chunks_exact(GROUP_LEN).map(group_hash);
    Ok(SupershingleVector(values.collect()))
}

/// The number of positions at which the vectors agree.
pub fn b_similarity(a: &SupershingleVector, b: &SupershingleVector) -> Result<u32, MismatchError> {
    if a.0.len() != b.0.len() {
        return Err(MismatchError(format!(
            "supershingle vectors differ in length ({} and {})",
            a.0.len(),
            b.0.len()
        )));
    }
    Ok(a.0.iter().zip(&b.0).filter(|(x, y)| x == y).count() as u32)
}

/// One key per position j: XXH3-64 of `[j, v[j] (LE)]`.
pub fn position_keys(v: &SupershingleVector) -> Vec<u64> {
    let key = |(j, value): (usize, &u64)| {
        let mut bytes = [0u8; 9];
        bytes[0] = j as u8;
        bytes[1..].copy_from_slice(&value.to_le_bytes());
        hash_bytes(&bytes)
    };
    v.0.iter().enumerate().map(key).collect()
}

/// One key per pair of positions i < j, in the order (0, 1), (0, 2), …, (1, 2), …:
/// XXH3-64 of `[i, j, v[i] (LE), v[j] (LE)]`.
pub fn megashingles(v: &SupershingleVector) -> Vec<u64> {
    let n = v.0.len();
    let mut keys = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let mut bytes = [0u8; 18];
            bytes[..2].copy_from_slice(&[i as u8, j as u8]);
            bytes[2..10].copy_from_slice(&v.0[i].to_le_bytes());
            bytes[10..].copy_from_slice(&v.0[j].to_le_bytes());
            keys.push(hash_bytes(&bytes));
        }
    }
    keys
}

impl SupershingleVector {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + 8 * self.0.len());
        out.extend_from_slice(&[FORMAT_VERSION, self.0.len() as u8]);
        for v in &self.0 {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let error = |message: String| Err(DecodeError(message));
        let Some((&[version, count], body)) = bytes.split_first_chunk() else {
            return error(format!(
                "supershingle data is truncated ({} bytes, the header alone has {HEADER_LEN})",
                bytes.len()
            ));
        };
        if version != FORMAT_VERSION {
            return error(format!(
                "unsupported supershingle format version {version} (this build reads version {FORMAT_VERSION})"
            ));
        }
        let count = count as usize;
        if body.len() != 8 * count {
            return error(format!(
                "supershingle data has {} bytes, expected {} for {count} supershingles",
                bytes.len(),
                HEADER_LEN + 8 * count
            ));
        }
        let values = body
            .chunks_exact(8)
            .map(|v| u64::from_le_bytes(v.try_into().expect("chunks of 8")))
            .collect();
        SupershingleVector::new(values)
    }

    /// Reads the text form (see the module documentation).
    pub fn from_text(input: &[u8]) -> Result<Self, DecodeError> {
        let input = input.trim_ascii();
        let words = input.split(|&b| b == b':');
        // Bounds the allocation for hostile input; `new` checks the lower bound.
        let count = words.clone().count();
        if count > MAX_SUPERSHINGLES {
            return Err(count_out_of_range(count));
        }
        let mut values = Vec::with_capacity(count);
        let mut offset = 0;
        for word in words {
            if word.len() != 16 {
                return Err(DecodeError(format!(
                    "invalid supershingle text: expected words of 16 hex digits separated by ':', found {} characters at position {}",
                    word.len(),
                    offset + 1
                )));
            }
            let value = hex_word(word).ok_or_else(|| {
                let bad = word.iter().position(|b| !b.is_ascii_hexdigit());
                DecodeError(format!(
                    "invalid hex digit in supershingle text at position {}",
                    offset + bad.unwrap_or(0) + 1
                ))
            })?;
            values.push(value);
            offset += word.len() + 1;
        }
        SupershingleVector::new(values)
    }
}

impl fmt::Display for SupershingleVector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::with_capacity(17 * self.0.len());
        for (j, &v) in self.0.iter().enumerate() {
            if j > 0 {
                text.push(':');
            }
            push_hex(&mut text, v, 16);
        }
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signatures::minhash::{minhash_text, MinhashOptions};

    fn vector(values: &[u64]) -> SupershingleVector {
        SupershingleVector::new(values.to_vec()).unwrap()
    }

    #[test]
    fn supershingles_hash_groups_of_fourteen_minvalues() {
        let sketch = minhash_text(b"some text to sketch", &MinhashOptions::DEFAULT);
        let v = supershingles(&sketch).unwrap();
        assert_eq!(v.values().len(), 6);
        let group = &sketch.values()[14..28];
        let bytes: Vec<u8> = group.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(v.values()[1], hash_bytes(&bytes));
        assert_eq!(v.to_bytes().len(), 50);
    }

    #[test]
    fn sketch_sizes_for_supershingles() {
        let sketch = |n| minhash_text(b"text", &MinhashOptions::new(n, 8).unwrap());
        assert_eq!(supershingles(&sketch(28)).unwrap().values().len(), 2);
        assert_eq!(supershingles(&sketch(1022)).unwrap().values().len(), 73);
        assert_eq!(
            supershingles(&sketch(100)).unwrap_err().0,
            "supershingles need a minhash sketch of a multiple of 14 hashes, at least 28, not 100"
        );
        assert!(supershingles(&sketch(14)).is_err());
    }

    #[test]
    fn empty_texts_are_b_similar() {
        let empty = minhash_text(b"", &MinhashOptions::DEFAULT);
        let v = supershingles(&empty).unwrap();
        assert_eq!(b_similarity(&v, &v), Ok(6));
    }

    #[test]
    fn b_similarity_counts_equal_positions() {
        let a = vector(&[1, 2, 3, 4, 5, 6]);
        let b = vector(&[1, 9, 3, 9, 9, 6]);
        assert_eq!(b_similarity(&a, &b), Ok(3));
        assert_eq!(b_similarity(&b, &a), Ok(3));
        // The same values at other positions do not count.
        assert_eq!(b_similarity(&a, &vector(&[6, 5, 4, 3, 2, 1])), Ok(0));
        assert_eq!(
            b_similarity(&a, &vector(&[1, 2])).unwrap_err().0,
            "supershingle vectors differ in length (6 and 2)"
        );
    }

    #[test]
    fn keys_are_specified_hashes() {
        let v = vector(&[10, 20, 30]);
        let mut position = [0u8; 9];
        position[0] = 1;
        position[1..].copy_from_slice(&20u64.to_le_bytes());
        assert_eq!(position_keys(&v)[1], hash_bytes(&position));
        let mut pair = [0u8; 18];
        pair[..2].copy_from_slice(&[1, 2]);
        pair[2..10].copy_from_slice(&20u64.to_le_bytes());
        pair[10..].copy_from_slice(&30u64.to_le_bytes());
        let keys = megashingles(&v);
        assert_eq!(keys.len(), 3);
        assert_eq!(keys[2], hash_bytes(&pair));
        assert_eq!(megashingles(&vector(&[0; 6])).len(), 15);
    }

    #[test]
    fn binary_form() {
        let v = vector(&[1, u64::MAX]);
        let bytes = v.to_bytes();
        assert_eq!(bytes[..3], [1, 2, 1]);
        assert_eq!(SupershingleVector::from_bytes(&bytes), Ok(v));
        let err = |b: &[u8]| SupershingleVector::from_bytes(b).unwrap_err().0;
        assert_eq!(
            err(&[1]),
            "supershingle data is truncated (1 bytes, the header alone has 2)"
        );
        assert_eq!(
            err(&bytes[..17]),
            "supershingle data has 17 bytes, expected 18 for 2 supershingles"
        );
        assert_eq!(
            err(&[3, 0]),
            "unsupported supershingle format version 3 (this build reads version 1)"
        );
        assert_eq!(
            err(&[1, 0]),
            "supershingle count 0 is out of range (2 to 73)"
        );
    }

    #[test]
    fn text_form() {
        let v = vector(&[0xab, u64::MAX, 0]);
        let text = "00000000000000ab:ffffffffffffffff:0000000000000000";
        assert_eq!(v.to_string(), text);
        assert_eq!(
            SupershingleVector::from_text(text.as_bytes()),
            Ok(v.clone())
        );
        let upper = format!("\t{}\n", text.to_uppercase());
        assert_eq!(SupershingleVector::from_text(upper.as_bytes()), Ok(v));
        let err = |t: &str| SupershingleVector::from_text(t.as_bytes()).unwrap_err().0;
        assert_eq!(
            err("00000000000000ab"),
            "supershingle count 1 is out of range (2 to 73)"
        );
        assert_eq!(
            err(&":".repeat(73)),
            "supershingle count 74 is out of range (2 to 73)"
        );
        assert_eq!(
            err("00000000000000ab:ff"),
            "invalid supershingle text: expected words of 16 hex digits separated by ':', found 2 characters at position 18"
        );
        assert_eq!(
            err(""),
            "invalid supershingle text: expected words of 16 hex digits separated by ':', found 0 characters at position 1"
        );
        assert_eq!(
            err("00000000000000ab:fffffffffffffffg"),
            "invalid hex digit in supershingle text at position 33"
        );
    }
}
