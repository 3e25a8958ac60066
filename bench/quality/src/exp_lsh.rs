//! The exact ground truth of issue 12's LSH benchmark (bench/lsh.sh): every pair of rows
//! (document ids) whose 8-word shingle sets, the features of `minhash(body, 128)`, have a
//! Jaccard of at least a threshold, and the sets themselves so that datasketch can be fed
//! the very same shingles.
//!
//! Pairs are of ids, as `minhash_pairs` reports them: rows with identical shingle sets
//! (byte-identical bodies under several package names, or texts differing only in case or
//! punctuation) pair with each other at J = 1 like any other pair, and the counts say how
//! many such pairs there are, so that bench/lsh.sh can also give the figures without them.
//! Rows without a token have no shingle and no Jaccard: they are in no pair.
//!
//! Output in OUTDIR:
//! - `shingles.bin`: per row in file order, the id (u64), the number of distinct shingles
//!   (u32) and their 64-bit hashes (u64 each, ascending), all little-endian;
//! - `truth.tsv`: `id_a <TAB> id_b <TAB> jaccard` for every row pair (id_a < id_b) with
//!   exact Jaccard >= the lowest threshold (0.5 unless given), Jaccard printed so that it
//!   reads back as the same double.
//!
//! The join runs over distinct shingle sets (prefix filter, crate::join) and is then
//! expanded to the rows holding each set.

use crate::corpus::{rank_by_frequency, shingle_set, token_count, Corpus, Doc};
use crate::join::similar_pairs;
use crate::precision_recall::reaches;
use crate::units::SHINGLES;
use std::collections::HashMap;
use std::error::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

/// The thresholds bench/lsh.sh evaluates (counts are printed for each).
const THRESHOLDS: [f64; 4] = [0.5, 0.7, 0.8, 0.9];

pub fn run(corpus_path: &Path, out_dir: &Path, lowest: f64) -> Result<(), Box<dyn Error>> {
    let start = Instant::now();
    let corpus = Corpus::load(corpus_path)?;
    let ids = row_ids(corpus_path)?;
    if ids.len() != corpus.bodies.len() {
        return Err(format!("{} ids for {} bodies", ids.len(), corpus.bodies.len()).into());
    }
    let sets: Vec<Vec<u64>> = corpus
        .bodies
        .iter()
        .map(|b| shingle_set(b, &SHINGLES))
        .collect();
    write_shingles(&out_dir.join("shingles.bin"), &ids, &sets)?;

    // Units: distinct non-empty shingle sets, each with the rows holding it.
    let mut unit_of: HashMap<&[u64], usize> = HashMap::new();
    let mut unit_rows: Vec<Vec<usize>> = Vec::new();
    for (row, set) in sets.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
        let unit = *unit_of.entry(set).or_insert_with(|| {
            unit_rows.push(Vec::new());
            unit_rows.len() - 1
        });
        unit_rows[unit].push(row);
    }
    let unit_sets: Vec<Vec<u64>> = unit_rows.iter().map(|rows| sets[rows[0]].clone()).collect();
    let rank = rank_by_frequency(&unit_sets);
    let docs: Vec<Doc> = unit_rows
        .iter()
        .zip(&unit_sets)
        .map(|(rows, set)| {
            let mut shingles: Vec<u32> = set.iter().map(|h| rank[h]).collect();
            shingles.sort_unstable();
            Doc {
                row: rows[0],
                tokens: token_count(&corpus.bodies[rows[0]]),
                shingles,
            }
        })
        .collect();
    let unit_pairs = similar_pairs(&docs, lowest);

    // Expanded to row pairs; counted per threshold: row pairs, and of them identical sets.
    let mut counts = [(0u64, 0u64); THRESHOLDS.len()];
    let mut count = |j: f64, n: u64| {
        for (c, &t) in counts.iter_mut().zip(&THRESHOLDS) {
            if reaches(j, t) {
                c.0 += n;
                c.1 += if j == 1.0 { n } else { 0 };
            }
        }
    };
    let mut out = BufWriter::new(File::create(out_dir.join("truth.tsv"))?);
    let pair = |out: &mut BufWriter<File>, r: usize, s: usize, j: f64| {
        let (a, b) = (ids[r].min(ids[s]), ids[r].max(ids[s]));
        writeln!(out, "{a}\t{b}\t{j}")
    };
    for rows in &unit_rows {
        for (i, &r) in rows.iter().enumerate() {
            for &s in &rows[i + 1..] {
                pair(&mut out, r, s, 1.0)?;
            }
        }
        let n = rows.len() as u64;
        count(1.0, n * (n - 1) / 2);
    }
    for p in &unit_pairs {
        for &r in &unit_rows[p.a] {
            for &s in &unit_rows[p.b] {
                pair(&mut out, r, s, p.jaccard)?;
            }
        }
        count(
            p.jaccard,
            (unit_rows[p.a].len() * unit_rows[p.b].len()) as u64,
        );
    }
    out.flush()?;

    let empty = sets.iter().filter(|s| s.is_empty()).count();
    println!(
        "exact truth: {} rows ({empty} without a token, in no pair), {} distinct non-empty \
         8-word shingle sets; {} set pairs with J >= {lowest}",
        ids.len(),
        unit_rows.len(),
        unit_pairs.len(),
    );
    for (&t, &(pairs, identical)) in THRESHOLDS.iter().zip(&counts) {
        if t >= lowest {
            println!(
                "truth J>={t}: {pairs} id pairs, {identical} of them with identical sets (J = 1)"
            );
        }
    }
    println!("exact truth time: {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// The first column of every non-empty line (the same lines as [`Corpus::load`] reads).
fn row_ids(path: &Path) -> Result<Vec<u64>, Box<dyn Error>> {
    let data = std::fs::read(path)?;
    data.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let id = line.split(|&b| b == b'\t').next().unwrap_or_default();
            Ok(std::str::from_utf8(id)?.parse::<u64>()?)
        })
        .collect()
}

fn write_shingles(path: &Path, ids: &[u64], sets: &[Vec<u64>]) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    for (id, set) in ids.iter().zip(sets) {
        out.write_all(&id.to_le_bytes())?;
        out.write_all(&(set.len() as u32).to_le_bytes())?;
        for h in set {
            out.write_all(&h.to_le_bytes())?;
        }
    }
    out.flush()
}
