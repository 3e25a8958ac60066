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

use crate::base::hash::{hash_bytes, hash_prefix, hash_sequence, sequence_finish, sequence_step};
use crate::text::tokenizer::{for_each_token, for_each_token_window};
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
    match w {
        1 => for_each_token_window(text, fold_case, |t| emit(hash_prefix(t.window, t.len))),
        // The default width of minhash: its own copy of the loop, where the ring's width is
        // a constant too (about 10 % faster than the general one).
        8 => shingles_of(text, HashRing::<8>::new(8), fold_case, emit),
        _ => shingles_of(text, HashRing::<0>::new(w), fold_case, emit),
    }
}

/// Word shingles of `ring.w` tokens, at least 2.
#[inline(always)]
fn shingles_of<const W: usize>(
    text: &[u8],
    mut ring: HashRing<W>,
    fold_case: bool,
    mut emit: impl FnMut(u64),
) {
    for_each_token_window(text, fold_case, |t| {
        ring.push(hash_prefix(t.window, t.len));
        if ring.pushed >= ring.width() {
            emit(hash_window(ring.window()));
        }
    });
    if (1..ring.width()).contains(&ring.pushed) {
        emit(hash_sequence(ring.hashes[..ring.pushed].iter().copied()));
    }
}

/// [`hash_sequence`] of a window of 2 to [`MAX_SHINGLE`] hashes, as a straight-line chain for
/// its length: the jump on the length goes the same way for every window of a text, and
/// measured faster than a loop over the window.
#[inline(always)]
fn hash_window(window: &[u64]) -> u64 {
    #[inline(always)]
    fn chain<const W: usize>(window: &[u64]) -> u64 {
        let window: &[u64; W] = window.try_into().expect("W hashes");
        let (&oldest, newer) = window.split_first().expect("W >= 1");
        sequence_finish(newer.iter().copied().fold(oldest, sequence_step))
    }
    match window.len() {
        2 => chain::<2>(window),
        3 => chain::<3>(window),
        4 => chain::<4>(window),
        5 => chain::<5>(window),
        6 => chain::<6>(window),
        7 => chain::<7>(window),
        8 => chain::<8>(window),
        9 => chain::<9>(window),
        10 => chain::<10>(window),
        11 => chain::<11>(window),
        12 => chain::<12>(window),
        13 => chain::<13>(window),
        14 => chain::<14>(window),
        15 => chain::<15>(window),
        16 => chain::<16>(window),
        _ => hash_sequence(window.iter().copied()),
    }
}

/// The hashes of the last `w` tokens, each written twice, at `k` and `k + w`, so that the
/// window, oldest first, is always the contiguous `hashes[next..next + w]`: its
/// [`hash_sequence`] is a straight chain, with no wrap-around. `W` is `w` when it is known at
/// compile time, else 0.
struct HashRing<const W: usize> {
    hashes: [u64; 2 * MAX_SHINGLE],
    w: usize,
    /// Where the next hash goes; once `w` have been pushed, also where the window starts.
    next: usize,
    pushed: usize,
}

impl<const W: usize> HashRing<W> {
    fn new(w: usize) -> Self {
        assert!((2..=MAX_SHINGLE).contains(&w) && (W == 0 || W == w));
        HashRing {
            hashes: [0; 2 * MAX_SHINGLE],
            w,
            next: 0,
            pushed: 0,
        }
    }

    #[inline(always)]
    fn width(&self) -> usize {
        if W == 0 {
            self.w
        } else {
            W
        }
    }

    #[inline(always)]
    fn push(&mut self, h: u64) {
        let (next, w) = (self.next, self.width());
        self.hashes[next] = h;
        self.hashes[next + w] = h;
        self.next = if next + 1 == w { 0 } else { next + 1 };
        self.pushed += 1;
    }

    /// The last `w` hashes, oldest first (once `w` have been pushed).
    #[inline(always)]
    fn window(&self) -> &[u64] {
        &self.hashes[self.next..self.next + self.width()]
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
    fn word_shingles_of_every_width_match_the_definition() {
        // Each width takes its own path (w = 1, the unrolled w = 8, the others), and long
        // texts wrap the ring many times; tokens come from both scanners (plain ASCII
        // blocks, and non-ASCII, markup, references) and some are longer than 16 bytes.
        let long = "The QUICK brown fox, jumps; over <b>the</b> lazy dög &amp; \
                    supercalifragilisticexpialidocious words 12345 日本語 Straße. "
            .repeat(40);
        for text in [
            long.as_str(),
            "one",
            "one two three",
            "a b c d e f g h i j k l m n o",
        ] {
            let tokens = crate::text::tokenizer::tokens(text.as_bytes(), true);
            let hashes: Vec<u64> = tokens.iter().map(|t| hash_bytes(t.as_bytes())).collect();
            for w in 1..=MAX_SHINGLE {
                let expected: Vec<u64> = if w == 1 {
                    hashes.clone()
                } else if hashes.len() < w {
                    vec![hash_sequence(hashes.iter().copied())]
                } else {
                    hashes
                        .windows(w)
                        .map(|win| hash_sequence(win.iter().copied()))
                        .collect()
                };
                assert_eq!(features(text, w as i32, 0), expected, "w = {w}: {text:.20}");
            }
        }
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
        let canonical: Vec<char> = crate::text::tokenizer::canonical(text.as_bytes(), true)
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
