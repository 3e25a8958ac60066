//! HTML character references: `&name;`, `&#123;` and `&#x7B;`.
//!
//! Named references cover HTML 4's Latin-1, special and Greek sets plus the typographic
//! symbols common in web text; an unknown name is left as text (its `&` then separates
//! tokens like any punctuation). The semicolon is required, as in well-formed HTML, so that
//! plain text such as `AT&T` or `a&b` is never mistaken for markup.

/// Names for U+00A0..=U+00FF, in code point order.
const LATIN1: [&str; 96] = [
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf",
    "laquo", "not", "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro",
    "para", "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest",
    "Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave", "Eacute",
    "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve", "Oacute",
    "Ocirc", "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute",
    "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil",
    "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde",
    "ograve", "oacute", "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc",
    "uuml", "yacute", "thorn", "yuml",
];

/// Greek letters in code point order from U+0391 (Alpha) and U+03B1 (alpha); U+03A2 has no
/// capital, so its slot is empty.
const GREEK: [&str; 25] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigmaf", "sigma", "tau", "upsilon", "phi",
    "chi", "psi", "omega",
];

const OTHERS: [(&str, char); 37] = [
    ("quot", '"'),
    ("amp", '&'),
    ("lt", '<'),
    ("gt", '>'),
    ("apos", '\''),
    ("OElig", 'Œ'),
    ("oelig", 'œ'),
    ("Scaron", 'Š'),
    ("scaron", 'š'),
    ("Yuml", 'Ÿ'),
    ("fnof", 'ƒ'),
    ("circ", 'ˆ'),
    ("tilde", '˜'),
    ("ensp", '\u{2002}'),
    ("emsp", '\u{2003}'),
    ("thinsp", '\u{2009}'),
    ("zwnj", '\u{200C}'),
    ("zwj", '\u{200D}'),
    ("lrm", '\u{200E}'),
    ("rlm", '\u{200F}'),
    ("ndash", '–'),
    ("mdash", '—'),
    ("lsquo", '‘'),
    ("rsquo", '’'),
    ("sbquo", '‚'),
    ("ldquo", '“'),
    ("rdquo", '”'),
    ("bdquo", '„'),
    ("dagger", '†'),
    ("Dagger", '‡'),
    ("bull", '•'),
    ("hellip", '…'),
    ("permil", '‰'),
    ("lsaquo", '‹'),
    ("rsaquo", '›'),
    ("euro", '€'),
    ("trade", '™'),
];

const MAX_NAME: usize = 8;

/// Decodes the reference at the start of `s` (which begins with `&`): the character and the
/// number of bytes it spans, or `None` when `s` does not start with a complete reference.
pub fn decode(s: &[u8]) -> Option<(char, usize)> {
    debug_assert_eq!(s.first(), Some(&b'&'));
    let end = s.iter().take(MAX_NAME + 3).position(|&b| b == b';')?;
    let body = &s[1..end];
    let c = match body {
        [b'#', b'x' | b'X', hex @ ..] => numeric(hex, 16)?,
        [b'#', dec @ ..] => numeric(dec, 10)?,
        name => named(std::str::from_utf8(name).ok()?)?,
    };
    Some((c, end + 1))
}

/// A numeric reference; code points that are not characters (0, surrogates, beyond
/// U+10FFFF) decode to U+FFFD as browsers do.
fn numeric(digits: &[u8], radix: u32) -> Option<char> {
    if digits.is_empty() || digits.len() > 7 {
        return None;
    }
    let mut value = 0u32;
    for &d in digits {
        value = value * radix + (d as char).to_digit(radix)?;
    }
    Some(
        char::from_u32(value)
            .filter(|&c| c != '\0')
            .unwrap_or('\u{FFFD}'),
    )
}

fn named(name: &str) -> Option<char> {
    if let Some(i) = LATIN1.iter().position(|&n| n == name) {
        return char::from_u32(0xA0 + i as u32);
    }
    if let Some(&(_, c)) = OTHERS.iter().find(|(n, _)| *n == name) {
        return Some(c);
    }
    // Greek: a capitalised name is the capital letter, 0x20 code points below.
    let (first, rest) = name.split_at_checked(1)?;
    let i = GREEK
        .iter()
        .position(|&n| n[1..] == *rest && n[..1].eq_ignore_ascii_case(first))?;
    let capital = first.as_bytes()[0].is_ascii_uppercase();
    if capital && GREEK[i] == "sigmaf" {
        return None;
    }
    char::from_u32(if capital { 0x391 } else { 0x3B1 } + i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Option<(char, usize)> {
        decode(s.as_bytes())
    }

    #[test]
    fn named_references() {
        assert_eq!(d("&amp;x"), Some(('&', 5)));
        assert_eq!(d("&nbsp;"), Some(('\u{A0}', 6)));
        assert_eq!(d("&eacute;"), Some(('é', 8)));
        assert_eq!(d("&yuml;"), Some(('ÿ', 6)));
        assert_eq!(d("&szlig;"), Some(('ß', 7)));
        assert_eq!(d("&mdash;"), Some(('—', 7)));
        assert_eq!(d("&alpha;"), Some(('α', 7)));
        assert_eq!(d("&Omega;"), Some(('Ω', 7)));
        assert_eq!(d("&omega;"), Some(('ω', 7)));
        assert_eq!(d("&Sigma;"), Some(('Σ', 7)));
        assert_eq!(d("&sigmaf;"), Some(('ς', 8)));
        assert_eq!(d("&Sigmaf;"), None);
        assert_eq!(d("&bogus;"), None);
        assert_eq!(d("&amp"), None);
        assert_eq!(d("& amp;"), None);
    }

    #[test]
    fn numeric_references() {
        assert_eq!(d("&#65;"), Some(('A', 5)));
        assert_eq!(d("&#x41;"), Some(('A', 6)));
        assert_eq!(d("&#X1F600;"), Some(('😀', 9)));
        assert_eq!(d("&#0;"), Some(('\u{FFFD}', 4)));
        assert_eq!(d("&#xD800;"), Some(('\u{FFFD}', 8)));
        assert_eq!(d("&#x110000;"), Some(('\u{FFFD}', 10)));
        assert_eq!(d("&#;"), None);
        assert_eq!(d("&#x;"), None);
        assert_eq!(d("&#12a;"), None);
        assert_eq!(d("&#99999999;"), None);
    }
}
