//! How near each cluster member is to its representative, in exact Jaccard resemblance of
//! 8-word shingle sets (the shingles neardup's minhash sketches): reads the corpus and files
//! of `member_id<TAB>representative_id` lines (ids are the corpus's first column) and prints,
//! per file, how many members (representatives themselves left out) have J ≥ each threshold.
//!
//! Usage: member_jaccard CORPUS.tsv NAME=PAIRS.tsv...   (bench/clusters_quality.sh runs it)

use neardup_core::text::features::{for_each_feature, FeatureKind, FeatureOptions};
use std::collections::HashMap;

const THRESHOLDS: [f64; 3] = [0.5, 0.8, 0.9];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: member_jaccard CORPUS.tsv NAME=PAIRS.tsv...");
        std::process::exit(2);
    }
    let shingles = shingle_sets(&args[1]);
    println!(
        "{:<44} {:>8} {}",
        "clusters",
        "members",
        THRESHOLDS
            .map(|t| format!("{:>10}", format!("J >= {t}")))
            .join("")
    );
    for spec in &args[2..] {
        let (name, path) = spec.split_once('=').expect("NAME=PAIRS.tsv");
        let text = std::fs::read_to_string(path).expect("pairs file");
        let mut counts = [0usize; THRESHOLDS.len()];
        let mut members = 0usize;
        for line in text.lines().filter(|l| !l.is_empty()) {
            let (m, r) = line.split_once('\t').expect("member<TAB>representative");
            let (m, r): (u64, u64) = (m.parse().unwrap(), r.parse().unwrap());
            if m == r {
                continue;
            }
            members += 1;
            let j = jaccard(&shingles[&m], &shingles[&r]);
            for (count, t) in counts.iter_mut().zip(THRESHOLDS) {
                *count += (j >= t) as usize;
            }
        }
        let share = |c: usize| format!("{:>9.1}%", 100.0 * c as f64 / members.max(1) as f64);
        println!("{name:<44} {members:>8} {}", counts.map(share).join(""));
    }
}

/// Each row's distinct 8-word shingle hashes, sorted, by id.
fn shingle_sets(path: &str) -> HashMap<u64, Vec<u64>> {
    let options = FeatureOptions {
        kind: FeatureKind::WordShingles(8),
        fold_case: true,
    };
    let data = std::fs::read(path).expect("corpus");
    let mut sets = HashMap::new();
    for line in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let mut fields = line.splitn(3, |&b| b == b'\t');
        let id: u64 = std::str::from_utf8(fields.next().unwrap())
            .unwrap()
            .parse()
            .unwrap();
        let body = unescape(fields.nth(1).expect("three columns"));
        let mut set = Vec::new();
        for_each_feature(&body, &options, |h| set.push(h));
        set.sort_unstable();
        set.dedup();
        sets.insert(id, set);
    }
    sets
}

/// COPY text format: `\n`, `\t`, `\r` and `\\` escapes.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut bytes = field.iter();
    while let Some(&b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'r') => out.push(b'\r'),
            Some(&other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Exact Jaccard of two sorted sets; two empty sets are identical.
fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - common;
    if union == 0 {
        1.0
    } else {
        common as f64 / union as f64
    }
}
