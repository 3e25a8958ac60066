//! A million random inputs, built at the byte level to hit the parser's edges (invalid and
//! truncated UTF-8, markup fragments, entities, mixed scripts), through every entry point.
//! Nothing may panic, and the pipeline's invariants must hold for each input.

use neardup_core::base::hex::{format_hex64, parse_hex64};
use neardup_core::signatures::simhash::simhash_text;
use neardup_core::text::chars::{classify, CharClass};
use neardup_core::text::features::FeatureOptions;
use neardup_core::text::tokenizer::{canonical, tokens};

const INPUTS: usize = 1_000_000;

mod common;
use common::Rng;

const PIECES: &[&[u8]] = &[
    b"<",
    b">",
    b"&",
    b";",
    b"#",
    b"x",
    b"<!--",
    b"-->",
    b"<script>",
    b"</script>",
    b"<style ",
    b"</STYLE>",
    b"<p>",
    b"</b>",
    b"<a href=\"",
    b"<?",
    b"<!DOCTYPE",
    b"&amp;",
    b"&#",
    b"&#x",
    b"&eacute;",
    b"&Sigma;",
    b"&#0;",
    b"&#x110000;",
    b" ",
    b"\n",
    b"\t",
    b"-",
    b"'",
    b"http://a.b/c",
    "Straße".as_bytes(),
    "ΣΊΣΥΦΟΣ".as_bytes(),
    "日本語".as_bytes(),
    "\u{0301}".as_bytes(),
    "हिन्दी".as_bytes(),
    "İ".as_bytes(),
    "ﬁ".as_bytes(),
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf0\x9f\x98",
    b"\xc0\xaf",
    b"0x",
    b"0123456789abcdef",
    b"ABC",
    b"word",
];

fn random_input(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let parts = rng.below(24);
    for _ in 0..parts {
        match rng.below(3) {
            0 => out.extend_from_slice(PIECES[rng.below(PIECES.len())]),
            1 => out.push(rng.next() as u8),
            _ => out.push(b'a' + rng.below(26) as u8),
        }
    }
    out
}

#[test]
fn million_random_inputs_keep_the_invariants() {
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let words = FeatureOptions::new(3, 0, true).unwrap();
    let ngrams = FeatureOptions::new(0, 4, false).unwrap();
    let mut nonempty = 0;
    for i in 0..INPUTS {
        let input = random_input(&mut rng);
        let toks = tokens(&input, true);
        let canon = canonical(&input, true);
        assert_eq!(canon, toks.join(" "), "input {i}: {input:?}");
        for t in &toks {
            let first = t.chars().next().expect("tokens are never empty");
            assert_ne!(
                classify(first),
                CharClass::Mark,
                "input {i}: token {t:?} starts with a mark"
            );
            assert!(
                t.chars().all(|c| classify(c) != CharClass::Separator),
                "input {i}: token {t:?}"
            );
        }
        assert_eq!(
            canonical(canon.as_bytes(), true),
            canon,
            "input {i}: canonical form is not a fixed point"
        );
        let fp = simhash_text(&input, &words);
        if toks.is_empty() {
            assert_eq!(
                fp, 0,
                "input {i}: no tokens must give the empty-text constant"
            );
        } else {
            nonempty += 1;
        }
        simhash_text(&input, &ngrams);
        match parse_hex64(&input) {
            Ok(v) => assert_eq!(parse_hex64(format_hex64(v).as_bytes()), Ok(v)),
            Err(_) => assert!(
                input.trim_ascii().len() != 16
                    || !input.trim_ascii().iter().all(u8::is_ascii_hexdigit)
            ),
        }
    }
    assert!(
        nonempty > INPUTS / 2,
        "the generator must mostly produce tokens ({nonempty})"
    );
}
