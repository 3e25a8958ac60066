//! The tokenizer against a reference written for this test: one character at a time, the
//! rules of the `tokenizer` module docs and `chars`, no fast paths. A million random inputs
//! long enough to span several 64-byte blocks, mixing ASCII words of both cases, separators,
//! very long words, non-ASCII text, markup, references and invalid UTF-8 at every offset,
//! so every hand-over between the block scanner and the byte scanner is exercised. Word
//! features and character n-grams are compared too, which covers hashing tokens straight
//! from their windows and n-grams straight from the canonical form's tail.

use caseless::Caseless;
use memchr::memmem;
use neardup_core::base::hash::hash_bytes;
use neardup_core::text::chars::{classify, CharClass};
use neardup_core::text::entities;
use neardup_core::text::features::{for_each_feature, FeatureOptions};
use neardup_core::text::tokenizer::{tokens, HTML_ELEMENTS};

const INPUTS: usize = 1_000_000;

/// The tokens of `text`, computed one character at a time.
fn reference_tokens(text: &[u8], fold_case: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut token = String::new();
    let mut segmenting = false;
    let mut flush = |token: &mut String, segmenting: &mut bool| {
        if !token.is_empty() {
            out.push(std::mem::take(token));
        }
        *segmenting = false;
    };
    let mut i = 0;
    while i < text.len() {
        let (c, len) = match text[i] {
            b'<' => match markup_len(&text[i..]) {
                Some(len) => {
                    flush(&mut token, &mut segmenting);
                    i += len;
                    continue;
                }
                None => ('<', 1),
            },
            b'&' => entities::decode(&text[i..]).unwrap_or(('&', 1)),
            _ => next_char(&text[i..]),
        };
        i += len;
        match classify(c) {
            CharClass::Separator => {
                flush(&mut token, &mut segmenting);
                continue;
            }
            CharClass::Mark if token.is_empty() => continue,
            CharClass::Mark => {}
            CharClass::Word if segmenting => flush(&mut token, &mut segmenting),
            CharClass::Word => {}
            CharClass::Segmenting => {
                flush(&mut token, &mut segmenting);
                segmenting = true;
            }
        }
        if fold_case {
            token.extend(std::iter::once(c).default_case_fold());
        } else {
            token.push(c);
        }
    }
    flush(&mut token, &mut segmenting);
    out
}

/// The hashes of the character n-grams of the canonical form (tokens joined by spaces).
fn reference_ngrams(tokens: &[String], n: usize) -> Vec<u64> {
    let canonical: Vec<char> = tokens.join(" ").chars().collect();
    let hash = |chars: &[char]| hash_bytes(chars.iter().collect::<String>().as_bytes());
    match canonical.len() {
        0 => vec![],
        len if len < n => vec![hash(&canonical)],
        _ => canonical.windows(n).map(hash).collect(),
    }
}

/// The character at the start of `s` and its length; an invalid sequence is U+FFFD (a
/// separator) over the bytes the standard library reports as invalid.
fn next_char(s: &[u8]) -> (char, usize) {
    let chunk = s.utf8_chunks().next().expect("s is not empty");
    match chunk.valid().chars().next() {
        Some(c) => (c, c.len_utf8()),
        None => ('\u{FFFD}', chunk.invalid().len()),
    }
}

/// Length of the HTML markup at the start of `s` (which starts with `<`), if any.
fn markup_len(s: &[u8]) -> Option<usize> {
    let find = |from: usize, needle: &[u8]| memmem::find(&s[from..], needle).map(|p| from + p);
    let after_gt = |from: usize| find(from, b">").map(|p| p + 1);
    if s.starts_with(b"<!--") {
        return Some(find(4, b"-->").map_or(s.len(), |p| p + 3));
    }
    match *s.get(1)? {
        b'!' | b'?' => after_gt(2),
        b'/' => after_gt(2 + element_name(&s[2..])?.len()),
        _ => {
            let name = element_name(&s[1..])?;
            let end = after_gt(1 + name.len())?;
            if !["script", "style"]
                .iter()
                .any(|r| name.eq_ignore_ascii_case(r.as_bytes()))
            {
                return Some(end);
            }
            // Raw text runs to the first `</` + name (any case), and past its `>`.
            let lower = s.to_ascii_lowercase();
            let close = [b"</".as_slice(), &name.to_ascii_lowercase()].concat();
            Some(
                memmem::find(&lower[end..], &close)
                    .and_then(|p| after_gt(end + p + 2))
                    .unwrap_or(s.len()),
            )
        }
    }
}

/// The element name at the start of `s`, if it is one and is followed by a space, `/` or `>`.
fn element_name(s: &[u8]) -> Option<&[u8]> {
    let len = s.iter().take_while(|b| b.is_ascii_alphanumeric()).count();
    let next = *s.get(len)?;
    let name = &s[..len];
    let known = HTML_ELEMENTS
        .iter()
        .any(|e| name.eq_ignore_ascii_case(e.as_bytes()));
    (known && (next.is_ascii_whitespace() || next == b'/' || next == b'>')).then_some(name)
}

mod common;
use common::Rng;

const SPECIALS: &[&[u8]] = &[
    b"<",
    b">",
    b"&",
    b"<!--",
    b"-->",
    b"<script>",
    b"</script>",
    b"<style ",
    b"</STYLE>",
    b"<p>",
    b"<P class=x>",
    b"</b>",
    b"<br/>",
    b"<a href=\"",
    b"<?",
    b"<!DOCTYPE",
    b"<joe@example.org>",
    b"&amp;",
    b"&#",
    b"&#x41;",
    b"&#65;",
    b"&eacute;",
    b"&Sigma;",
    b"&nbsp;",
    b"&bogus;",
    "Straße".as_bytes(),
    "ÉTÉ".as_bytes(),
    "ΣΊΣΥΦΟΣ".as_bytes(),
    "日本語".as_bytes(),
    "\u{0301}".as_bytes(),
    "हिन्दी".as_bytes(),
    "İ".as_bytes(),
    "ﬁ".as_bytes(),
    "—".as_bytes(),
    "\u{00A0}".as_bytes(),
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf0\x9f\x98",
];

const SEPARATORS: &[u8] = b"  \n\t.,;:!?'\"()[]{}/-_=+*#@$%^|~`\\\x00\x7f";

/// An ASCII word of `len` letters and digits, lower case, capitalised or mixed.
fn push_word(rng: &mut Rng, out: &mut Vec<u8>, len: usize) {
    let style = rng.below(4);
    for k in 0..len {
        let upper = match style {
            0 | 1 => false,
            2 => k == 0,
            _ => rng.below(3) == 0,
        };
        let c = match rng.below(12) {
            0 => b'0' + rng.below(10) as u8,
            _ => b'a' + rng.below(26) as u8,
        };
        out.push(if upper { c.to_ascii_uppercase() } else { c });
    }
}

/// Mostly plain ASCII prose, sometimes dense with everything else, up to ~500 bytes.
fn random_input(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let special_odds = [2, 8, 40, 400][rng.below(4)];
    let parts = rng.below(80);
    for _ in 0..parts {
        match rng.below(special_odds) {
            0 => out.extend_from_slice(SPECIALS[rng.below(SPECIALS.len())]),
            1 => out.push(rng.next() as u8),
            _ => {
                let len = match rng.below(40) {
                    0 => 50 + rng.below(100),
                    _ => 1 + rng.below(12),
                };
                push_word(rng, &mut out, len);
                for _ in 0..1 + rng.below(2) * rng.below(3) {
                    out.push(SEPARATORS[rng.below(SEPARATORS.len())]);
                }
            }
        }
    }
    out
}

// Two halves of the inputs, from two seeds, so that the test harness runs them on two cores.
#[test]
fn tokenizer_matches_the_reference_first_half() {
    matches_the_reference(0x2545F4914F6CDD1D, 0..INPUTS / 2);
}

#[test]
fn tokenizer_matches_the_reference_second_half() {
    matches_the_reference(0x9E3779B97F4A7C15, INPUTS / 2..INPUTS);
}

fn matches_the_reference(seed: u64, inputs: std::ops::Range<usize>) {
    let mut rng = Rng(seed);
    let words = FeatureOptions::new(1, 0, true).unwrap();
    let mut total_tokens = 0;
    let count = inputs.len();
    for i in inputs {
        let input = random_input(&mut rng);
        let fold_case = i % 4 != 0;
        let expected = reference_tokens(&input, fold_case);
        assert_eq!(
            tokens(&input, fold_case),
            expected,
            "input {i} (fold_case {fold_case}): {:?}",
            String::from_utf8_lossy(&input)
        );
        total_tokens += expected.len();
        if fold_case {
            let mut features = Vec::new();
            for_each_feature(&input, &words, |h| features.push(h));
            let hashes: Vec<u64> = expected.iter().map(|t| hash_bytes(t.as_bytes())).collect();
            assert_eq!(features, hashes, "input {i}: word features");
        } else {
            let n = 1 + i % 7;
            let ngrams = FeatureOptions::new(0, n as i32, false).unwrap();
            let mut features = Vec::new();
            for_each_feature(&input, &ngrams, |h| features.push(h));
            assert_eq!(
                features,
                reference_ngrams(&expected, n),
                "input {i}: {n}-grams"
            );
        }
    }
    assert!(total_tokens > 20 * count, "too few tokens: {total_tokens}");
}
