//! Hamming-distance tallies, their evaluation over configs, and table printing.

use crate::configs::Config;
use neardup_core::signatures::simhash::hamming;

/// The near-duplicate threshold under evaluation: fingerprints at most this many bits
/// apart are reported as near-duplicates.
pub const K: u32 = 3;

#[derive(Default, Clone)]
pub struct Distances {
    n: u64,
    within_k: u64,
    sum: u64,
    sum_sq: u64,
}

impl Distances {
    pub fn add(&mut self, d: u32) {
        self.n += 1;
        self.within_k += u64::from(d <= K);
        self.sum += u64::from(d);
        self.sum_sq += u64::from(d * d);
    }

    /// The fraction at most `K` bits apart: recall on positives, false-positive rate on
    /// negatives.
    pub fn within_k(&self) -> f64 {
        self.within_k as f64 / self.n as f64
    }

    pub fn mean(&self) -> f64 {
        self.sum as f64 / self.n as f64
    }

    pub fn std(&self) -> f64 {
        let mean = self.mean();
        (self.sum_sq as f64 / self.n as f64 - mean * mean)
            .max(0.0)
            .sqrt()
    }
}

/// Distances between precomputed document fingerprints (`fingerprints[config][doc]`).
pub fn doc_distances(fingerprints: &[Vec<u64>], pairs: &[(usize, usize)]) -> Vec<Distances> {
    fingerprints
        .iter()
        .map(|fp| {
            let mut dist = Distances::default();
            pairs
                .iter()
                .for_each(|&(a, b)| dist.add(hamming(fp[a], fp[b])));
            dist
        })
        .collect()
}

/// Distances between the fingerprints of text pairs, per config. Configs run on their own
/// threads: this is where the evaluation spends its time.
pub fn text_distances(configs: &[Config], pairs: &[(Vec<u8>, Vec<u8>)]) -> Vec<Distances> {
    std::thread::scope(|scope| {
        let workers: Vec<_> = configs
            .iter()
            .map(|config| {
                scope.spawn(move || {
                    let mut dist = Distances::default();
                    for (a, b) in pairs {
                        dist.add(hamming(config.fingerprint(a), config.fingerprint(b)));
                    }
                    dist
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker panicked"))
            .collect()
    })
}

/// Two decimals: false-positive rates of a few per mille still show.
pub fn pct(fraction: f64) -> String {
    format!("{:.2}%", 100.0 * fraction)
}

pub fn num(x: f64, decimals: usize) -> String {
    format!("{x:.decimals$}")
}

/// A Markdown table with aligned columns: readable in a terminal, pasteable into a README.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            rows: vec![header.iter().map(|h| h.to_string()).collect()],
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.rows[0].len(), "row width");
        self.rows.push(cells);
    }

    pub fn print(&self) {
        let widths: Vec<usize> = (0..self.rows[0].len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<String>| println!("| {} |", cells.join(" | "));
        let mut rows = self.rows.iter();
        let header = rows.next().expect("header");
        line(pad(header, &widths));
        line(widths.iter().map(|&w| "-".repeat(w)).collect());
        rows.for_each(|r| line(pad(r, &widths)));
        println!();
    }
}

/// First column left-aligned (config names), the others right-aligned (numbers).
fn pad(cells: &[String], widths: &[usize]) -> Vec<String> {
    cells
        .iter()
        .zip(widths)
        .enumerate()
        .map(|(c, (cell, &w))| {
            let fill = " ".repeat(w - cell.chars().count());
            if c == 0 {
                format!("{cell}{fill}")
            } else {
                format!("{fill}{cell}")
            }
        })
        .collect()
}
