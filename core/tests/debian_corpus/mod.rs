//! The Debian descriptions corpus (`pg_test_data/README.md`) for the Bloom tests: the
//! `body` column of each row, COPY text escapes undone.

use std::path::PathBuf;

/// The committed sample, or with `full` the whole corpus when it has been built
/// (`pg_test_data/build_corpus.sh`; git-ignored), falling back to the sample.
pub fn bodies(full: bool) -> Vec<Vec<u8>> {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../pg_test_data");
    let full_path = data.join("full/debian_descriptions.tsv");
    let path = if full && full_path.exists() {
        full_path
    } else {
        data.join("debian_descriptions_sample.tsv")
    };
    let tsv = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let bodies: Vec<Vec<u8>> = tsv
        .split(|&b| b == b'\n')
        .filter_map(|row| row.splitn(3, |&b| b == b'\t').nth(2))
        .map(unescape)
        .collect();
    assert!(
        bodies.len() > 10_000,
        "{} rows in {}",
        bodies.len(),
        path.display()
    );
    bodies
}

/// `\n`, `\t`, `\r`; a backslash before any other byte stands for that byte.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut bytes = field.iter();
    while let Some(&b) = bytes.next() {
        out.push(match (b, bytes.as_slice().first()) {
            (b'\\', Some(&e)) => {
                bytes.next();
                match e {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    other => other,
                }
            }
            _ => b,
        });
    }
    out
}
