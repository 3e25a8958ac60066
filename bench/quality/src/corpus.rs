//! The corpus: the bodies of a COPY-text TSV (id, package, body), and the distinct bodies
//! ("documents") the experiments sample from. Byte-identical bodies (a quarter of the full
//! corpus: the same text under several package names) are collapsed, so that a text does
//! not count several times in a sample or pair with its own copy.

use crate::prehashed::PreHashedMap;
use neardup_core::text::features::{for_each_feature, FeatureOptions};
use neardup_core::text::tokenizer::for_each_token;
use std::collections::HashSet;
use std::io;
use std::path::Path;

pub struct Doc {
    /// Index into [`Corpus::bodies`].
    pub row: usize,
    /// Number of neardup tokens (case folded).
    pub tokens: usize,
    /// The distinct word shingles (3-word in [`Corpus::docs`]), as ids ranked by document
    /// frequency (rarest first), in increasing order: the sets for exact Jaccard and for the
    /// prefix-filter join.
    pub shingles: Vec<u32>,
}

pub struct Corpus {
    /// Every row's body, unescaped: what a table scan would hash.
    pub bodies: Vec<Vec<u8>>,
    /// The distinct bodies that have at least one token.
    pub docs: Vec<Doc>,
}

impl Corpus {
    pub fn load(path: &Path) -> io::Result<Corpus> {
        let data = std::fs::read(path)?;
        let bodies = data
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(body_field)
            .collect::<io::Result<Vec<_>>>()?;
        let docs = documents(&bodies);
        Ok(Corpus { bodies, docs })
    }

    pub fn body(&self, doc: usize) -> &[u8] {
        &self.bodies[self.docs[doc].row]
    }

    pub fn total_bytes(&self) -> usize {
        self.bodies.iter().map(Vec::len).sum()
    }

    /// Documents whose token count is in `range`.
    pub fn docs_with_tokens(&self, range: impl std::ops::RangeBounds<usize>) -> Vec<usize> {
        (0..self.docs.len())
            .filter(|&d| range.contains(&self.docs[d].tokens))
            .collect()
    }

    pub fn jaccard(&self, a: usize, b: usize) -> f64 {
        jaccard(&self.docs[a].shingles, &self.docs[b].shingles)
    }
}

/// The third column of a row, unescaped.
fn body_field(line: &[u8]) -> io::Result<Vec<u8>> {
    let mut fields = line.split(|&b| b == b'\t');
    match (fields.next(), fields.next(), fields.next(), fields.next()) {
        (Some(_), Some(_), Some(body), None) => Ok(unescape(body)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not 3 columns: {}", String::from_utf8_lossy(line)),
        )),
    }
}

/// COPY text format escapes, as the corpus uses them (and as count_near_dups.py reads
/// them): `\n`, `\t`, `\r`, and a backslash before any other byte stands for that byte.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut bytes = field.iter();
    while let Some(&b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'r') => out.push(b'\r'),
            Some(&other) => out.push(other),
            None => out.push(b'\\'),
        }
    }
    out
}

fn documents(bodies: &[Vec<u8>]) -> Vec<Doc> {
    let mut seen = HashSet::new();
    let rows: Vec<usize> = (0..bodies.len())
        .filter(|&r| seen.insert(&bodies[r][..]))
        .collect();
    let three_words = FeatureOptions::new(3, 0, true).expect("valid options");
    let shingle_hashes: Vec<Vec<u64>> = rows
        .iter()
        .map(|&r| shingle_set(&bodies[r], &three_words))
        .collect();
    let rank = rank_by_frequency(&shingle_hashes);
    rows.iter()
        .zip(shingle_hashes)
        .filter(|(_, set)| !set.is_empty())
        .map(|(&row, set)| {
            let mut shingles: Vec<u32> = set.iter().map(|h| rank[h]).collect();
            shingles.sort_unstable();
            Doc {
                row,
                tokens: token_count(&bodies[row]),
                shingles,
            }
        })
        .collect()
}

pub fn token_count(body: &[u8]) -> usize {
    let mut n = 0;
    for_each_token(body, true, |_| n += 1);
    n
}

/// The distinct feature hashes of a body (64-bit, so collisions are negligible).
pub fn shingle_set(body: &[u8], options: &FeatureOptions) -> Vec<u64> {
    let mut set = Vec::new();
    for_each_feature(body, options, |h| set.push(h));
    set.sort_unstable();
    set.dedup();
    set
}

/// Dense ids for shingle hashes, rarest first (ties by hash, so the order is deterministic).
pub fn rank_by_frequency(sets: &[Vec<u64>]) -> PreHashedMap<u32> {
    let mut df = PreHashedMap::<u32>::default();
    for &h in sets.iter().flatten() {
        *df.entry(h).or_default() += 1;
    }
    let mut order: Vec<(u32, u64)> = df.into_iter().map(|(h, n)| (n, h)).collect();
    order.sort_unstable();
    order
        .into_iter()
        .enumerate()
        .map(|(rank, (_, h))| (h, rank as u32))
        .collect()
}

/// Jaccard similarity of two sorted, duplicate-free sets.
pub fn jaccard(a: &[u32], b: &[u32]) -> f64 {
    let common = intersection_len(a, b);
    common as f64 / (a.len() + b.len() - common) as f64
}

fn intersection_len(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_escapes() {
        assert_eq!(unescape(br"a\nb\tc\\d\re\x"), b"a\nb\tc\\d\rex");
        assert_eq!(body_field(b"7\tpkg\tsum\\nbody").unwrap(), b"sum\nbody");
        assert!(body_field(b"7\tpkg").is_err());
    }

    #[test]
    fn jaccard_of_sorted_sets() {
        assert_eq!(jaccard(&[1, 2, 3], &[2, 3, 4]), 0.5);
        assert_eq!(jaccard(&[1], &[1]), 1.0);
        assert_eq!(jaccard(&[1], &[2]), 0.0);
    }
}
