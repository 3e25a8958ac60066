//! Shared by the golden-vector tests: the escapes of the golden files' text column.

/// `\n`, `\t` and `\\` undone; any other escape is a malformed file.
pub fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('\\') => out.push('\\'),
                other => panic!("bad escape \\{other:?}"),
            }
        } else {
            out.push(c);
        }
    }
    out
}
