//! Canonicalization and tokenization in one pass over the bytes.
//!
//! The canonical form of a text (Henzinger §2, Jain §3.1) is its tokens joined by single
//! spaces: HTML markup dropped (tags, comments, `<script>`/`<style>` bodies), character
//! references decoded, full Unicode case folding (`Straße` and `STRASSE` both give
//! `strasse`), and everything that is not a letter, digit or mark turned into a token
//! boundary (so URLs break at `/` and `.`, and dashes and quotes act as spaces).
//! See [`crate::text::chars`] for what a token is made of.
//!
//! The scan never looks back, keeps no per-token allocation (one reused buffer; plain ASCII
//! tokens are handed out from the input or from a 64-byte block classified and lower-cased
//! at once), and takes invalid UTF-8 as a separator, so any byte string is accepted in time
//! and memory linear in its length.

use crate::text::chars::{classify, CharClass};
use crate::text::entities;
use caseless::Caseless;
use memchr::{memchr, memmem};

/// What the scanner does at a byte; the letter and digit classes OR together over a run.
const SEPARATOR: u8 = 0;
const LOWER_OR_DIGIT: u8 = 1;
const UPPER: u8 = 2;
const MARKUP: u8 = 4;
const REFERENCE: u8 = 8;
const NON_ASCII: u8 = 16;

static BYTE_CLASS: [u8; 256] = {
    let mut table = [NON_ASCII; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = match c {
            b'a'..=b'z' | b'0'..=b'9' => LOWER_OR_DIGIT,
            b'A'..=b'Z' => UPPER,
            b'<' => MARKUP,
            b'&' => REFERENCE,
            _ => SEPARATOR,
        };
        b += 1;
    }
    table
};

/// End of the run of ASCII letters and digits starting at `i`, and whether it has an
/// upper-case letter. Eight bytes at a time (SWAR): the run's length comes from the first
/// byte that is not a letter or digit, with no per-byte branch to mispredict.
#[inline]
fn ascii_word_end(text: &[u8], mut i: usize) -> (usize, bool) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut has_upper = false;
    loop {
        let x = match text.get(i..i + 8) {
            Some(eight) => u64::from_le_bytes(eight.try_into().expect("8 bytes")),
            None => {
                let mut padded = [0u8; 8]; // zero bytes past the end stop the run
                padded[..text.len() - i].copy_from_slice(&text[i..]);
                u64::from_le_bytes(padded)
            }
        };
        // For bytes below 0x80, (b + 0x80 - c) has its high bit set iff b >= c, and no
        // carry crosses into the next byte.
        let low7 = x & !HIGH;
        let at_least = |c: u8| (low7 + (0x80 - c as u64) * ONES) & HIGH;
        let ascii = !x & HIGH;
        let upper = at_least(b'A') & !at_least(b'Z' + 1);
        let word =
            (at_least(b'0') & !at_least(b'9' + 1) | upper | at_least(b'a') & !at_least(b'z' + 1))
                & ascii;
        let stop = !word & HIGH;
        if stop != 0 {
            let len = stop.trailing_zeros() as usize / 8;
            let inside = (1u64 << (8 * len)).wrapping_sub(1);
            return (i + len, has_upper || upper & ascii & inside != 0);
        }
        has_upper |= upper & ascii != 0;
        i += 8;
    }
}

/// Calls `emit` with each token of `text`, in order, as UTF-8 bytes.
pub fn for_each_token(text: &[u8], fold_case: bool, mut emit: impl FnMut(&[u8])) {
    for_each_token_window(text, fold_case, |t| emit(t.bytes()))
}

/// A token: its UTF-8 bytes are `window[..len]`. Past them, the window holds whatever
/// followed the token where it was found; for short tokens of plain text that is at least
/// 16 bytes, so [`crate::base::hash::hash_prefix`] can load them as two words.
#[derive(Clone, Copy)]
pub struct Token<'a> {
    pub window: &'a [u8],
    pub len: usize,
}

impl<'a> Token<'a> {
    #[inline]
    pub fn bytes(self) -> &'a [u8] {
        &self.window[..self.len]
    }

    fn whole(bytes: &'a [u8]) -> Self {
        Token {
            window: bytes,
            len: bytes.len(),
        }
    }
}

/// [`for_each_token`], with each token in a [`Token`] window.
///
/// Plain ASCII text goes through [`scan_ascii_blocks`], 64 bytes at a time; the byte-class
/// scanner takes over around anything else (non-ASCII, markup, references, very long
/// words) and hands back once no token is pending, so the two never split a token.
pub fn for_each_token_window(text: &[u8], fold_case: bool, mut emit: impl FnMut(Token)) {
    let mut scanner = Scanner::new(fold_case);
    let mut i = 0;
    while i < text.len() {
        crate::base::interrupts::check();
        let handover = scan_ascii_blocks(text, i, fold_case, &mut emit);
        // Give the byte scanner a whole block's worth past the hand-over point, so text
        // that is mostly non-ASCII does not pay for classifying a block per character.
        let resume_from = handover + BLOCK;
        i = handover;
        while i < text.len() && (i < resume_from || scanner.pending()) {
            i = scanner.step(text, i, &mut emit);
        }
    }
    scanner.token.flush(&mut emit);
}

const BLOCK: usize = 64;

/// A 64-byte window of the text, classified in one go ([`classify_block`]), with one bit
/// per byte in each mask.
struct Block {
    /// The bytes, with ASCII upper case folded if asked; zeros (separators) past the end
    /// of the text, and 16 more so that every token has a window of 16 bytes.
    bytes: [u8; BLOCK + 16],
    /// ASCII letters and digits.
    word: u64,
    /// Bytes only the byte scanner handles: non-ASCII, `<` and `&`.
    special: u64,
}

impl Block {
    #[inline(always)] // once per 64 bytes, from one place: the scan loop
    fn new(text: &[u8], fold_case: bool) -> Self {
        let mut bytes = [0u8; BLOCK + 16];
        let (word, special) = match text.first_chunk::<BLOCK>() {
            Some(full) => classify_block(full, &mut bytes, fold_case),
            None => {
                let mut padded = [0u8; BLOCK];
                padded[..text.len()].copy_from_slice(text);
                classify_block(&padded, &mut bytes, fold_case)
            }
        };
        Block {
            bytes,
            word,
            special,
        }
    }
}

/// The word and special masks of a block (bit k for byte k), with its bytes copied to
/// `out`, ASCII upper case folded if asked.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn classify_block(block: &[u8; BLOCK], out: &mut [u8; BLOCK + 16], fold_case: bool) -> (u64, u64) {
    #[allow(unsafe_code)]
    // SAFETY: SSE2 is part of x86-64: every CPU this code runs on has it.
    unsafe {
        classify_sse2(block, out, fold_case)
    }
}

/// [`classify_block`] with SSE2: 16 bytes per compare, one `pmovmskb` per mask.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn classify_sse2(block: &[u8; BLOCK], out: &mut [u8; BLOCK + 16], fold_case: bool) -> (u64, u64) {
    use std::arch::x86_64::*;
    let splat = |b: u8| _mm_set1_epi8(b as i8);
    let case_bit = splat(if fold_case { 0x20 } else { 0 });
    let mut word = 0;
    let mut special = 0;
    for (k, (sixteen, copy)) in block
        .chunks_exact(16)
        .zip(out.chunks_exact_mut(16))
        .enumerate()
    {
        let half = |at: usize| i64::from_le_bytes(sixteen[at..at + 8].try_into().expect("8"));
        let b = _mm_set_epi64x(half(8), half(0));
        // A byte is in lo..lo + n iff, shifted so that lo lands on -128 (as i8), it is
        // below -128 + n. Setting 0x20 maps A-Z onto a-z and nothing else onto a-z.
        let in_range = |x: __m128i, lo: u8, n: u8| {
            let shifted = _mm_add_epi8(x, splat(0x80u8.wrapping_sub(lo)));
            _mm_cmplt_epi8(shifted, splat(0x80 + n))
        };
        let letter = in_range(_mm_or_si128(b, splat(0x20)), b'a', 26);
        let is_word = _mm_or_si128(letter, in_range(b, b'0', 10));
        // Non-ASCII bytes have their high bit set already.
        let markup = _mm_or_si128(
            _mm_cmpeq_epi8(b, splat(b'<')),
            _mm_cmpeq_epi8(b, splat(b'&')),
        );
        word |= (_mm_movemask_epi8(is_word) as u16 as u64) << (16 * k);
        special |= (_mm_movemask_epi8(_mm_or_si128(b, markup)) as u16 as u64) << (16 * k);
        let folded = _mm_or_si128(b, _mm_and_si128(letter, case_bit));
        copy[..8].copy_from_slice(&_mm_cvtsi128_si64(folded).to_le_bytes());
        let high = _mm_unpackhi_epi64(folded, folded);
        copy[8..].copy_from_slice(&_mm_cvtsi128_si64(high).to_le_bytes());
    }
    (word, special)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn classify_block(block: &[u8; BLOCK], out: &mut [u8; BLOCK + 16], fold_case: bool) -> (u64, u64) {
    classify_portable(block, out, fold_case)
}

/// The portable [`classify_block`] (the reference the tests compare the SSE2 one with): the
/// loops below compile to vector compares.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn classify_portable(
    block: &[u8; BLOCK],
    out: &mut [u8; BLOCK + 16],
    fold_case: bool,
) -> (u64, u64) {
    const WORD_FLAG: u8 = 0x80;
    const SPECIAL_FLAG: u8 = 0x40;
    let case_bit = if fold_case { 0x20 } else { 0 };
    let mut flags = [0u8; BLOCK];
    // Non-short-circuit `|` and selects keep the loop free of branches: it vectorizes.
    for ((f, &b), o) in flags.iter_mut().zip(block).zip(out.iter_mut()) {
        let upper = b.wrapping_sub(b'A') < 26;
        let word = upper | (b.wrapping_sub(b'a') < 26) | (b.wrapping_sub(b'0') < 10);
        let special = (b >= 0x80) | (b == b'<') | (b == b'&');
        *f = if word { WORD_FLAG } else { 0 } | if special { SPECIAL_FLAG } else { 0 };
        *o = b | if upper { case_bit } else { 0 };
    }
    let mut word = 0;
    let mut special = 0;
    for (k, eight) in flags.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(eight.try_into().expect("8 bytes"));
        word |= high_bits(x) << (8 * k);
        special |= high_bits(x << 1) << (8 * k);
    }
    (word, special)
}

/// The high bits of the 8 bytes of `x` as an 8-bit mask (byte k gives bit k). The multiply
/// moves the flag of byte k to bit 56 + k; no two partial products overlap, so no carries.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline]
fn high_bits(x: u64) -> u64 {
    ((x & 0x8080_8080_8080_8080).wrapping_mul(0x0002_0408_1020_4081)) >> 56
}

/// Emits the tokens of the text from `at`, where no token is pending, one block at a time
/// while it is plain ASCII; returns where the byte scanner must take over (at a token
/// start or a special byte), or the end of the text. A block's tokens are its runs of word
/// bits, found with `trailing_zeros` rather than a branch per byte; a run that reaches the
/// end of the block starts the next block, and one that reaches a special byte is left to
/// the byte scanner, as the special byte may continue it.
fn scan_ascii_blocks(
    text: &[u8],
    mut at: usize,
    fold_case: bool,
    emit: &mut impl FnMut(Token),
) -> usize {
    // A long run of plain ASCII stays in this loop: check once per 1 MiB.
    let mut cancel_point = crate::base::interrupts::Every::<16384>::default();
    while at < text.len() {
        cancel_point.tick();
        let block = Block::new(&text[at..], fold_case);
        let limit = block.special.trailing_zeros() as usize; // BLOCK when none
        let mut word = block.word;
        loop {
            let start = word.trailing_zeros() as usize;
            if start >= limit {
                if limit < BLOCK {
                    return at + limit;
                }
                at += BLOCK;
                break;
            }
            let end = start + (!(word >> start)).trailing_zeros() as usize;
            if end >= limit {
                if limit < BLOCK || start == 0 {
                    // Followed by a special byte, or a word as long as a block.
                    return at + start;
                }
                at += start;
                break;
            }
            emit(Token {
                window: &block.bytes[start..],
                len: end - start,
            });
            word &= u64::MAX << end;
        }
    }
    text.len()
}

/// The byte-class scanner: any text, one ASCII run, character, tag or reference per step.
struct Scanner {
    token: TokenBuffer,
    markup: Markup,
    fold_case: bool,
}

impl Scanner {
    fn new(fold_case: bool) -> Self {
        Scanner {
            token: TokenBuffer::default(),
            markup: Markup::default(),
            fold_case,
        }
    }

    /// A token is being built: the next letter may continue it.
    fn pending(&self) -> bool {
        !self.token.bytes.is_empty()
    }

    /// Scans the item at `text[i]` and returns the index just past it.
    fn step(&mut self, text: &[u8], i: usize, emit: &mut impl FnMut(Token)) -> usize {
        let fold_case = self.fold_case;
        let token = &mut self.token;
        let b = text[i];
        match BYTE_CLASS[b as usize] {
            SEPARATOR => {
                token.flush(emit);
                i + 1
            }
            LOWER_OR_DIGIT | UPPER => {
                let (end, has_upper) = ascii_word_end(text, i);
                let lowercase = fold_case && has_upper;
                let complete = text
                    .get(end)
                    .is_none_or(|&c| BYTE_CLASS[c as usize] == SEPARATOR);
                token.push_ascii_run(&text[i..], end - i, lowercase, complete, emit);
                end
            }
            MARKUP => {
                token.flush(emit);
                i + self.markup.len_at(text, i).unwrap_or(1)
            }
            REFERENCE => match entities::decode(&text[i..]) {
                Some((c, len)) => {
                    token.push_char(c, fold_case, emit);
                    i + len
                }
                None => {
                    token.flush(emit);
                    i + 1
                }
            },
            _ => {
                let (c, len) = decode_utf8(&text[i..]);
                token.push_char(c, fold_case, emit);
                i + len
            }
        }
    }
}

/// The tokens of `text` as strings.
pub fn tokens(text: &[u8], fold_case: bool) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, fold_case, |t| {
        out.push(String::from_utf8_lossy(t).into_owned())
    });
    out
}

/// The canonical form: tokens joined by single spaces (empty when there are none).
pub fn canonical(text: &[u8], fold_case: bool) -> String {
    let mut out = String::new();
    for_each_token(text, fold_case, |t| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(std::str::from_utf8(t).expect("tokens are UTF-8"));
    });
    out
}

/// The token being built, for the cases that cannot be handed out as a slice of the input.
#[derive(Default)]
struct TokenBuffer {
    bytes: Vec<u8>,
    /// The token is one character of a script without word spaces: only marks extend it.
    segmenting: bool,
}

impl TokenBuffer {
    fn flush(&mut self, emit: &mut impl FnMut(Token)) {
        if !self.bytes.is_empty() {
            emit(Token::whole(&self.bytes));
            self.bytes.clear();
        }
        self.segmenting = false;
    }

    /// Adds the run `rest[..len]` of ASCII letters and digits.
    fn push_ascii_run(
        &mut self,
        rest: &[u8],
        len: usize,
        lowercase: bool,
        complete: bool,
        emit: &mut impl FnMut(Token),
    ) {
        if self.segmenting {
            self.flush(emit);
        }
        if self.bytes.is_empty() && complete && !lowercase {
            emit(Token { window: rest, len });
            return;
        }
        let at = self.bytes.len();
        self.bytes.extend_from_slice(&rest[..len]);
        if lowercase {
            self.bytes[at..].make_ascii_lowercase();
        }
        if complete {
            self.flush(emit);
        }
    }

    fn push_char(&mut self, c: char, fold_case: bool, emit: &mut impl FnMut(Token)) {
        match classify(c) {
            CharClass::Separator => return self.flush(emit),
            CharClass::Mark if self.bytes.is_empty() => return,
            CharClass::Mark => {}
            CharClass::Word if self.segmenting => self.flush(emit),
            CharClass::Word => {}
            CharClass::Segmenting => {
                self.flush(emit);
                self.segmenting = true;
            }
        }
        if fold_case && !c.is_ascii() {
            for folded in std::iter::once(c).default_case_fold() {
                self.push_utf8(folded);
            }
        } else if fold_case {
            self.push_utf8(c.to_ascii_lowercase());
        } else {
            self.push_utf8(c);
        }
    }

    fn push_utf8(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.bytes
            .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
}

/// Decodes one character; an invalid or truncated sequence gives U+FFFD (a separator) and
/// the length of the bytes to skip.
fn decode_utf8(s: &[u8]) -> (char, usize) {
    let window = &s[..s.len().min(4)];
    let valid = match std::str::from_utf8(window) {
        Ok(all) => all,
        Err(e) => std::str::from_utf8(&window[..e.valid_up_to()]).expect("valid prefix"),
    };
    match valid.chars().next() {
        Some(c) => (c, c.len_utf8()),
        None => {
            let bad = std::str::from_utf8(window).unwrap_err().error_len();
            ('\u{FFFD}', bad.unwrap_or(window.len()))
        }
    }
}

/// Recognises HTML markup at a `<`. Failed searches are remembered: if no `>` follows
/// position p, none follows any later position, so text full of unmatched `<` stays linear.
#[derive(Default)]
struct Markup {
    no_gt_from: Option<usize>,
    no_close_from: Option<usize>,
}

impl Markup {
    /// Length of the markup starting at `text[at] == b'<'`, or `None` if it is plain text.
    fn len_at(&mut self, text: &[u8], at: usize) -> Option<usize> {
        let s = &text[at..];
        match *s.get(1)? {
            b'!' if s.starts_with(b"<!--") => {
                // An unterminated comment runs to the end, as in browsers.
                Some(memmem::find(&s[4..], b"-->").map_or(s.len(), |p| p + 7))
            }
            b'!' | b'?' => self.gt_after(text, at + 2).map(|end| end - at),
            b'/' => {
                let name = tag_name(&s[2..])?;
                self.gt_after(text, at + 2 + name.len()).map(|end| end - at)
            }
            b if b.is_ascii_alphabetic() => {
                let name = tag_name(&s[1..])?;
                let end = self.gt_after(text, at + 1 + name.len())?;
                let raw_text =
                    name.eq_ignore_ascii_case(b"script") || name.eq_ignore_ascii_case(b"style");
                Some(
                    if raw_text {
                        self.raw_text_end(text, end, name)
                    } else {
                        end
                    } - at,
                )
            }
            _ => None,
        }
    }

    /// Index just past the first `>` at or after `from`.
    fn gt_after(&mut self, text: &[u8], from: usize) -> Option<usize> {
        if self.no_gt_from.is_some_and(|p| from >= p) {
            return None;
        }
        match memchr(b'>', &text[from..]) {
            Some(p) => Some(from + p + 1),
            None => {
                self.no_gt_from = Some(from);
                None
            }
        }
    }

    /// End of a `<script>` or `<style>` body starting at `from`: just past its closing tag,
    /// or the end of the text when it is never closed.
    fn raw_text_end(&mut self, text: &[u8], from: usize, name: &[u8]) -> usize {
        if self.no_close_from.is_some_and(|p| from >= p) {
            return text.len();
        }
        for p in memmem::find_iter(&text[from..], b"</") {
            let close = from + p;
            let rest = &text[close + 2..];
            if rest.len() >= name.len() && rest[..name.len()].eq_ignore_ascii_case(name) {
                return self.gt_after(text, close + 2).unwrap_or(text.len());
            }
        }
        self.no_close_from = Some(from);
        text.len()
    }
}

/// The tag name at the start of `s`, if it is an HTML element's and is followed by what
/// may follow a name in a tag (space, `/` or `>`). Requiring a known element keeps plain
/// text such as `<joe@example.org>`, `x<y and y>z` or `<filename>` as text.
fn tag_name(s: &[u8]) -> Option<&[u8]> {
    let len = s
        .iter()
        .position(|b| !b.is_ascii_alphanumeric())
        .unwrap_or(s.len());
    let next = *s.get(len)?;
    let name = &s[..len];
    let known = HTML_ELEMENTS
        .iter()
        .any(|e| e.as_bytes().eq_ignore_ascii_case(name));
    (known && (next.is_ascii_whitespace() || next == b'/' || next == b'>')).then_some(name)
}

/// Element names of HTML 4 and HTML5 (plus a few legacy ones still found on the web).
pub const HTML_ELEMENTS: [&str; 126] = [
    "a",
    "abbr",
    "acronym",
    "address",
    "applet",
    "area",
    "article",
    "aside",
    "audio",
    "b",
    "base",
    "basefont",
    "bdi",
    "bdo",
    "big",
    "blink",
    "blockquote",
    "body",
    "br",
    "button",
    "canvas",
    "caption",
    "center",
    "cite",
    "code",
    "col",
    "colgroup",
    "data",
    "datalist",
    "dd",
    "del",
    "details",
    "dfn",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "fieldset",
    "figcaption",
    "figure",
    "font",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hgroup",
    "hr",
    "html",
    "i",
    "iframe",
    "img",
    "input",
    "ins",
    "kbd",
    "label",
    "legend",
    "li",
    "link",
    "main",
    "map",
    "mark",
    "marquee",
    "menu",
    "meta",
    "meter",
    "nav",
    "nobr",
    "noframes",
    "noscript",
    "object",
    "ol",
    "optgroup",
    "option",
    "output",
    "p",
    "param",
    "picture",
    "pre",
    "progress",
    "q",
    "rp",
    "rt",
    "ruby",
    "s",
    "samp",
    "script",
    "section",
    "select",
    "small",
    "source",
    "span",
    "strike",
    "strong",
    "style",
    "sub",
    "summary",
    "sup",
    "svg",
    "table",
    "tbody",
    "td",
    "template",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "time",
    "title",
    "tr",
    "track",
    "tt",
    "u",
    "ul",
    "var",
    "video",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        canonical(s.as_bytes(), true)
    }

    #[test]
    fn block_classification_matches_the_portable_one() {
        // Every byte value in every position, both case modes: the masks and the copy.
        const PICKS: &[u8] = b"@AZ[`az{/09:<&\x7f\x80\xff mM";
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..20_000 {
            let mut block = [0u8; BLOCK];
            for (k, b) in block.iter_mut().enumerate() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Half the rounds from all 256 values, half mostly ASCII letters and the
                // bytes next to the class boundaries.
                *b = if round % 2 == 0 {
                    (x >> 24) as u8
                } else {
                    PICKS[(x >> 24) as usize % PICKS.len()]
                };
                if round < 256 {
                    *b = (round + k) as u8;
                }
            }
            for fold_case in [false, true] {
                let (mut fast, mut reference) = ([0u8; BLOCK + 16], [0u8; BLOCK + 16]);
                assert_eq!(
                    classify_block(&block, &mut fast, fold_case),
                    classify_portable(&block, &mut reference, fold_case),
                    "{block:?}"
                );
                assert_eq!(fast, reference, "{block:?}");
            }
        }
    }

    #[test]
    fn words_and_separators() {
        assert_eq!(
            canon("Hello, World!  It's  a test-case."),
            "hello world it s a test case"
        );
        assert_eq!(canon(""), "");
        assert_eq!(canon("  ...!!! -- "), "");
        assert_eq!(canon("“Quoted” — dashed–text"), "quoted dashed text");
        assert_eq!(canon("tab\tnew\nline\r\n"), "tab new line");
    }

    #[test]
    fn urls_break_into_terms() {
        assert_eq!(
            canon("see https://www.Debian.org/doc/FAQ.html now"),
            "see https www debian org doc faq html now"
        );
    }

    #[test]
    fn unicode_case_folding() {
        assert_eq!(canon("Straße"), canon("STRASSE"));
        assert_eq!(canon("Straße"), "strasse");
        assert_eq!(canon("ΣΊΣΥΦΟΣ"), canon("σίσυφος"));
        assert_eq!(canon("Привет, МИР"), "привет мир");
        assert_eq!(canon("Ünïcödé café"), "ünïcödé café");
        assert_eq!(canonical("Straße ABC".as_bytes(), false), "Straße ABC");
    }

    #[test]
    fn marks_stay_in_words() {
        assert_eq!(canon("cafe\u{0301} noir"), "cafe\u{0301} noir");
        assert_eq!(canon("हिन्दी भाषा"), "हिन्दी भाषा");
        assert_eq!(canon("\u{0301}abc"), "abc");
    }

    #[test]
    fn unspaced_scripts_give_one_token_per_character() {
        assert_eq!(
            tokens("日本語のテキスト".as_bytes(), true),
            ["日", "本", "語", "の", "テ", "キ", "ス", "ト"]
        );
        assert_eq!(canon("中文abc中"), "中 文 abc 中");
        assert_eq!(canon("한국어 텍스트"), "한국어 텍스트");
    }

    #[test]
    fn html_is_dropped() {
        assert_eq!(canon("<p>Hello <b>bold</b> world</p>"), "hello bold world");
        assert_eq!(canon("a<!-- hidden -->b"), "a b");
        assert_eq!(
            canon("x<script type=\"text/js\">var y = '<p>';</script>z"),
            "x z"
        );
        assert_eq!(canon("x<STYLE>p { color: red }</style >z"), "x z");
        assert_eq!(canon("<!DOCTYPE html><html><body>ok</body></html>"), "ok");
        assert_eq!(canon("<a href=\"http://x.org/y\">link</a>"), "link");
        assert_eq!(canon("<?xml version=\"1.0\"?>doc"), "doc");
        assert_eq!(canon("text <!-- never closed"), "text");
        assert_eq!(canon("<script>never closed"), "");
    }

    #[test]
    fn plain_text_angle_brackets_survive() {
        assert_eq!(
            canon("Joe <joe@example.org> wrote"),
            "joe joe example org wrote"
        );
        assert_eq!(canon("if x<y and y>z"), "if x y and y z");
        assert_eq!(canon("use <filename> here"), "use filename here");
        assert_eq!(canon("a < b > c"), "a b c");
        assert_eq!(canon("x <3 y"), "x 3 y");
        assert_eq!(canon("<b unterminated"), "b unterminated");
    }

    #[test]
    fn entities_are_decoded() {
        assert_eq!(canon("caf&eacute; &amp; cr&egrave;me"), "café crème");
        assert_eq!(canon("AT&T &bogus; x&#65;y"), "at t bogus xay");
        assert_eq!(canon("Stra&szlig;e"), "strasse");
        assert_eq!(canon("a&nbsp;b&mdash;c"), "a b c");
        assert_eq!(canon("&lt;p&gt;not a tag&lt;/p&gt;"), "p not a tag p");
    }

    #[test]
    fn invalid_utf8_separates() {
        assert_eq!(canonical(b"ab\xffcd", true), "ab cd");
        assert_eq!(canonical(b"ab\xe2\x82", true), "ab");
        assert_eq!(canonical(b"\xc3\xa9t\xc3", true), "\u{e9}t");
        assert_eq!(canonical(b"\xed\xa0\x80x", true), "x"); // encoded surrogate
        assert_eq!(canonical(b"\xc0\xafx", true), "x"); // overlong
    }

    #[test]
    fn canonical_is_a_fixed_point() {
        for s in [
            "<p>Hello&amp;World</p>",
            "Straße — ÉTÉ",
            "日本語 text",
            "a\u{0301}b",
        ] {
            let once = canon(s);
            assert_eq!(canon(&once), once);
        }
    }
}
