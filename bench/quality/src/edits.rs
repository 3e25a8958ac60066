//! One-word edits of raw text: a word (a maximal run of ASCII letters in the body as
//! stored) is replaced by a different word drawn from the corpus vocabulary.

use crate::corpus::Corpus;
use crate::rng::Rng;
use std::collections::HashMap;
use std::ops::Range;

/// The corpus's words (lowercase) with their occurrence counts. Replacements are drawn in
/// proportion to frequency: an edit usually brings in an ordinary word ("the", "for",
/// "library"), as a human edit would, rather than the hapax a uniform draw over distinct
/// words mostly gives.
pub struct Vocabulary {
    words: Vec<Vec<u8>>,
    /// Running total of the counts, for drawing by binary search.
    cumulative: Vec<u64>,
}

impl Vocabulary {
    pub fn new(corpus: &Corpus) -> Vocabulary {
        let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
        for d in 0..corpus.docs.len() {
            let body = corpus.body(d);
            for run in word_runs(body) {
                *counts.entry(body[run].to_ascii_lowercase()).or_default() += 1;
            }
        }
        // Sorted, so the draws do not depend on the hash map's per-process iteration order.
        let mut counts: Vec<(Vec<u8>, u64)> = counts.into_iter().collect();
        counts.sort_unstable();
        let mut total = 0;
        let (words, cumulative) = counts
            .into_iter()
            .map(|(word, n)| {
                total += n;
                (word, total)
            })
            .unzip();
        Vocabulary { words, cumulative }
    }

    pub fn len(&self) -> usize {
        self.words.len()
    }

    fn draw(&self, rng: &mut Rng) -> &[u8] {
        let total = *self.cumulative.last().expect("non-empty vocabulary");
        let ticket = rng.below(total as usize) as u64;
        &self.words[self.cumulative.partition_point(|&c| c <= ticket)]
    }
}

/// Byte ranges of the maximal runs of ASCII letters.
fn word_runs(body: &[u8]) -> Vec<Range<usize>> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, b) in body.iter().enumerate() {
        match (b.is_ascii_alphabetic(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push(s..i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push(s..body.len());
    }
    runs
}

/// `body` with one uniformly chosen word replaced by a different vocabulary word (compared
/// without case, since every config folds case), or `None` if it has no word.
pub fn replace_random_word(body: &[u8], vocabulary: &Vocabulary, rng: &mut Rng) -> Option<Vec<u8>> {
    let runs = word_runs(body);
    if runs.is_empty() {
        return None;
    }
    let run = runs[rng.below(runs.len())].clone();
    let replacement = loop {
        let word = vocabulary.draw(rng);
        if !word.eq_ignore_ascii_case(&body[run.clone()]) {
            break word;
        }
    };
    let mut edited = Vec::with_capacity(body.len() + replacement.len());
    edited.extend_from_slice(&body[..run.start]);
    edited.extend_from_slice(replacement);
    edited.extend_from_slice(&body[run.end..]);
    Some(edited)
}

/// `body` after `n` successive one-word edits.
pub fn edit_words(body: &[u8], n: usize, vocabulary: &Vocabulary, rng: &mut Rng) -> Vec<u8> {
    (0..n).fold(body.to_vec(), |text, _| {
        replace_random_word(&text, vocabulary, rng).unwrap_or(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_ascii_letters() {
        assert_eq!(
            word_runs(b"libfoo2 is x-y"),
            vec![0..6, 8..10, 11..12, 13..14]
        );
        assert!(word_runs(b"42 !").is_empty());
    }

    #[test]
    fn replacement_changes_exactly_one_word() {
        let vocabulary = Vocabulary {
            words: vec![b"cat".to_vec(), b"dog".to_vec()],
            cumulative: vec![1, 2],
        };
        let mut rng = Rng::new(9);
        for _ in 0..20 {
            let edited = replace_random_word(b"Cat, dog.", &vocabulary, &mut rng).unwrap();
            assert!([&b"dog, dog."[..], b"Cat, cat."].contains(&&edited[..]));
        }
        assert_eq!(replace_random_word(b"42", &vocabulary, &mut rng), None);
    }
}
