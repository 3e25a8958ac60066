//! Features: what a signature is computed over.
//!
//! - Word shingles (the default): every run of `shingle` consecutive tokens. A token's
//!   feature hash is [`hash_bytes`] of its UTF-8; a shingle's is [`hash_sequence`] of its
//!   tokens' hashes (for `shingle = 1`, the token hash itself).
//! - Character n-grams: every run of `n` consecutive characters of the canonical form
//!   (tokens joined by single spaces), hashed with [`hash_bytes`].
//!
//! A text with fewer tokens (characters) than the window but at least one gives a single
//! feature of everything it has, so short texts still get a signature; a text without any
//! token gives no feature.

use crate::hash::{hash_bytes, hash_prefix, hash_sequence};
use crate::tokenizer::{for_each_token, for_each_token_window, Token};
use std::fmt;

pub const MAX_SHINGLE: usize = 16;
pub const MAX_NGRAM: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureKind {
    WordShingles(usize),
    CharNgrams(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureOptions {
    pub kind: FeatureKind,
    pub fold_case: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError(pub String);

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FeatureOptions {
    /// Options from the SQL arguments: `ngram > 0` selects character n-grams, else word
    /// shingles of `shingle` tokens.
    pub fn new(shingle: i32, ngram: i32, fold_case: bool) -> Result<Self, OptionError> {
        let in_range = |v: i32, max: usize| v >= 1 && v as usize <= max;
        let kind = if ngram != 0 {
            if !in_range(ngram, MAX_NGRAM) {
                return Err(OptionError(format!(
                    "ngram must be between 1 and {MAX_NGRAM}, or 0 for word shingles"
                )));
            }
            FeatureKind::CharNgrams(ngram as usize)
        } else {
            if !in_range(shingle, MAX_SHINGLE) {
                return Err(OptionError(format!(
                    "shingle must be between 1 and {MAX_SHINGLE}"
                )));
            }
            FeatureKind::WordShingles(shingle as usize)
        };
        Ok(FeatureOptions { kind, fold_case })
    }
}

/// Calls `emit` with the hash of every feature of `text`, in order.
pub fn for_each_feature(text: &[u8], options: &FeatureOptions, emit: impl FnMut(u64)) {
    match options.kind {
        FeatureKind::WordShingles(w) => word_shingles(text, w, options.fold_case, emit),
        FeatureKind::CharNgrams(n) => char_ngrams(text, n, options.fold_case, emit),
    }
}

fn word_shingles(text: &[u8], w: usize, fold_case: bool, mut emit: impl FnMut(u64)) {
    let hash = |t: Token| hash_prefix(t.window, t.len);
    if w == 1 {
        return for_each_token_window(text, fold_case, |t| emit(hash(t)));
    }
    let mut window = Window::<u64, MAX_SHINGLE>::new(w);
    for_each_token_window(text, fold_case, |t| {
        window.push(hash(t));
        if window.is_full() {
            emit(hash_sequence(window.iter()));
        }
    });
    if window.is_short() {
        emit(hash_sequence(window.iter()));
    }
}

/// The n-grams are hashed straight from a copy of the tail of the canonical form, with the
/// offsets where its last `n` characters start: no per-window re-encoding.
fn char_ngrams(text: &[u8], n: usize, fold_case: bool, mut emit: impl FnMut(u64)) {
    // Keeps memory bounded: past this, the bytes before the current window are dropped.
    const TAIL_CAP: usize = 1024;
    let mut tail = Vec::with_capacity(TAIL_CAP);
    let mut starts = Window::<usize, MAX_NGRAM>::new(n);
    for_each_token(text, fold_case, |t| {
        let token = std::str::from_utf8(t).expect("tokens are UTF-8");
        let space = (!tail.is_empty()).then_some(' ');
        for c in space.into_iter().chain(token.chars()) {
            if tail.len() + 4 > TAIL_CAP {
                let keep_from = starts.oldest();
                tail.drain(..keep_from);
                starts.for_each_mut(|start| *start -= keep_from);
            }
            starts.push(tail.len());
            tail.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            if starts.is_full() {
                emit(hash_bytes(&tail[starts.oldest()..]));
            }
        }
    });
    if starts.is_short() {
        emit(hash_bytes(&tail));
    }
}

/// The last `len` items pushed, oldest first, in a fixed ring (no allocation, and no
/// division: the write position wraps by comparison).
struct Window<T, const CAP: usize> {
    items: [T; CAP],
    len: usize,
    /// Where the next item goes; once full, also where the oldest item is.
    next: usize,
    pushed: usize,
}

impl<T: Copy + Default, const CAP: usize> Window<T, CAP> {
    fn new(len: usize) -> Self {
        assert!((1..=CAP).contains(&len));
        Window {
            items: [T::default(); CAP],
            len,
            next: 0,
            pushed: 0,
        }
    }

    #[inline]
    fn push(&mut self, item: T) {
        self.items[self.next] = item;
        self.next += 1;
        if self.next == self.len {
            self.next = 0;
        }
        self.pushed += 1;
    }

    /// The oldest item of the window (the first one pushed while it is not full).
    fn oldest(&self) -> T {
        self.items[if self.is_full() { self.next } else { 0 }]
    }

    fn for_each_mut(&mut self, f: impl FnMut(&mut T)) {
        self.items[..self.len].iter_mut().for_each(f);
    }

    fn is_full(&self) -> bool {
        self.pushed >= self.len
    }

    /// Some items, but never a whole window: the text is shorter than one feature.
    fn is_short(&self) -> bool {
        self.pushed > 0 && self.pushed < self.len
    }

    #[inline]
    fn iter(&self) -> impl Iterator<Item = T> + '_ {
        let (older, newer) = if self.is_full() {
            (&self.items[self.next..self.len], &self.items[..self.next])
        } else {
            (&self.items[..0], &self.items[..self.next])
        };
        older.iter().chain(newer).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(text: &str, shingle: i32, ngram: i32) -> Vec<u64> {
        let opts = FeatureOptions::new(shingle, ngram, true).unwrap();
        let mut out = Vec::new();
        for_each_feature(text.as_bytes(), &opts, |h| out.push(h));
        out
    }

    fn seq(tokens: &[&str]) -> u64 {
        hash_sequence(tokens.iter().map(|t| hash_bytes(t.as_bytes())))
    }

    #[test]
    fn word_shingles_are_hashes_of_token_hashes() {
        assert_eq!(
            features("A b, C d", 3, 0),
            vec![seq(&["a", "b", "c"]), seq(&["b", "c", "d"])]
        );
        assert_eq!(
            features("A b", 1, 0),
            vec![hash_bytes(b"a"), hash_bytes(b"b")]
        );
        assert_eq!(features("one two", 3, 0), vec![seq(&["one", "two"])]);
        assert!(features("!!", 3, 0).is_empty());
    }

    #[test]
    fn char_ngrams_span_token_boundaries() {
        let h = |s: &str| hash_bytes(s.as_bytes());
        assert_eq!(features("Ab, cd", 0, 3), vec![h("ab "), h("b c"), h(" cd")]);
        assert_eq!(features("Éx", 0, 3), vec![h("éx")]);
        assert!(features("", 0, 3).is_empty());
    }

    #[test]
    fn char_ngrams_of_long_texts() {
        // Longer than the tail buffer several times over, with multi-byte characters.
        let text = "Ünïcödé wörds, and plain ones; 日本語 too. ".repeat(100);
        let canonical: Vec<char> = crate::tokenizer::canonical(text.as_bytes(), true)
            .chars()
            .collect();
        for n in [1, 4, 32] {
            let expected: Vec<u64> = canonical
                .windows(n)
                .map(|w| hash_bytes(w.iter().collect::<String>().as_bytes()))
                .collect();
            assert_eq!(features(&text, 0, n as i32), expected, "n = {n}");
        }
    }

    #[test]
    fn option_ranges() {
        assert!(FeatureOptions::new(0, 0, true).is_err());
        assert!(FeatureOptions::new(17, 0, true).is_err());
        assert!(FeatureOptions::new(16, 0, true).is_ok());
        assert!(FeatureOptions::new(3, -1, true).is_err());
        assert!(FeatureOptions::new(3, 33, true).is_err());
        assert_eq!(
            FeatureOptions::new(0, 4, true).unwrap().kind,
            FeatureKind::CharNgrams(4)
        );
    }
}
