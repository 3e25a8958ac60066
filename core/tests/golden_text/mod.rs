//! Shared by the golden-vector tests: reading the golden files' rows and the escapes of
//! their text column.

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

/// The data rows of a golden file (comments and blank lines skipped), each split into its
/// tab-separated columns, which must number `columns`.
pub fn rows(golden: &str, columns: usize) -> impl Iterator<Item = Vec<&str>> {
    golden
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(move |line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), columns, "malformed line: {line}");
            cols
        })
}
