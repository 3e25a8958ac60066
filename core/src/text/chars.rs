//! Which characters make tokens.
//!
//! A token is a maximal run of letters, digits and combining marks, in any script: marks
//! belong to the letter before them (Devanagari vowel signs, decomposed accents), so they
//! never split a word. Scripts written without spaces between words (Han, kana, Thai, Lao,
//! Khmer, Myanmar) give one token per character, which word shingles then turn into
//! character n-grams: the features that work for such text. Everything else (punctuation,
//! symbols, dashes, quotes, spaces, control characters) separates tokens. Classes come
//! from the Unicode general category tables of the pinned `unicode-properties` crate.

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharClass {
    /// Ends the current token.
    Separator,
    /// Letter or digit that joins its neighbours into one token.
    Word,
    /// Letter of a script without word spaces: a token of its own.
    Segmenting,
    /// Combining mark: continues the current token, dropped when there is none.
    Mark,
}

pub fn classify(c: char) -> CharClass {
    if c.is_ascii() {
        return if c.is_ascii_alphanumeric() {
            CharClass::Word
        } else {
            CharClass::Separator
        };
    }
    match c.general_category_group() {
        GeneralCategoryGroup::Letter | GeneralCategoryGroup::Number => {
            if is_unspaced_script(c) {
                CharClass::Segmenting
            } else {
                CharClass::Word
            }
        }
        GeneralCategoryGroup::Mark => CharClass::Mark,
        _ => CharClass::Separator,
    }
}

fn is_unspaced_script(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF     // Thai, Lao
        | 0x1000..=0x109F   // Myanmar
        | 0x1780..=0x17FF   // Khmer
        | 0x3040..=0x30FF   // Hiragana, Katakana
        | 0x31F0..=0x31FF   // Katakana phonetic extensions
        | 0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF   // CJK unified ideographs
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0xFF66..=0xFF9F   // Halfwidth katakana
        | 0x20000..=0x323AF // CJK extensions B..H
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(classify('a'), CharClass::Word);
        assert_eq!(classify('Z'), CharClass::Word);
        assert_eq!(classify('7'), CharClass::Word);
        assert_eq!(classify('-'), CharClass::Separator);
        assert_eq!(classify('\''), CharClass::Separator);
        assert_eq!(classify('é'), CharClass::Word);
        assert_eq!(classify('Ж'), CharClass::Word);
        assert_eq!(classify('λ'), CharClass::Word);
        assert_eq!(classify('٣'), CharClass::Word); // Arabic-Indic digit
        assert_eq!(classify('\u{0301}'), CharClass::Mark);
        assert_eq!(classify('\u{093F}'), CharClass::Mark); // Devanagari vowel sign I
        assert_eq!(classify('中'), CharClass::Segmenting);
        assert_eq!(classify('カ'), CharClass::Segmenting);
        assert_eq!(classify('한'), CharClass::Word); // Hangul is written with spaces
        assert_eq!(classify('—'), CharClass::Separator);
        assert_eq!(classify('“'), CharClass::Separator);
        assert_eq!(classify('\u{00A0}'), CharClass::Separator);
        assert_eq!(classify('€'), CharClass::Separator);
        assert_eq!(classify('\u{FFFD}'), CharClass::Separator);
    }
}
