//! Quality evaluation of simhash configurations on the Debian descriptions corpus: how far
//! apart small edits, natural near-duplicates, unrelated texts and same-template pages land
//! at the near-duplicate threshold of 3 bits, and what each config costs. Then the default
//! simhash, minhash B-similarity and Henzinger's combined algorithm against exact 8-shingle
//! Jaccard, and the minhash estimate's error.
//!
//! Usage: neardup-quality CORPUS.tsv (see pg_test_data/README.md; bench/quality.sh picks
//! the corpus). Every sample comes from a fixed-seed generator, so runs are repeatable.
//!
//! `neardup-quality --lsh-truth CORPUS.tsv OUTDIR [LOWEST]` only writes the exact ground
//! truth of bench/lsh.sh (exp_lsh) and exits.

mod configs;
mod corpus;
mod edits;
mod exp_edit;
mod exp_lsh;
mod exp_natural;
mod exp_pages;
mod exp_shingling;
mod exp_unrelated;
mod join;
mod minhash_error;
mod precision_recall;
mod prehashed;
mod rng;
mod stats;
mod supershingle_join;
mod units;

use configs::Config;
use corpus::Corpus;
use edits::Vocabulary;
use stats::{num, pct, Table, K};
use std::error::Error;
use std::path::Path;
use std::time::Instant;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args_os().skip(1);
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "--lsh-truth")
    {
        let usage = "usage: neardup-quality --lsh-truth CORPUS.tsv OUTDIR [LOWEST]";
        let (_, Some(corpus), Some(out_dir)) = (args.next(), args.next(), args.next()) else {
            return Err(usage.into());
        };
        let lowest = match args.next() {
            Some(t) => t.to_str().and_then(|t| t.parse().ok()).ok_or(usage)?,
            None => 0.5,
        };
        return exp_lsh::run(Path::new(&corpus), Path::new(&out_dir), lowest);
    }
    let (Some(path), None) = (args.next(), args.next()) else {
        return Err("usage: neardup-quality CORPUS.tsv".into());
    };
    let start = Instant::now();
    let corpus = Corpus::load(Path::new(&path))?;
    let idf = configs::Idf::new(&corpus);
    let configs = configs::all(&idf);
    let vocabulary = Vocabulary::new(&corpus);
    println!(
        "# simhash quality on {}\n\n{} rows, {:.1} MB of body text, {} distinct bodies with \
         tokens, {} distinct ASCII words (the edit vocabulary); near-duplicate threshold k = {K} bits\n",
        path.to_string_lossy(),
        corpus.bodies.len(),
        corpus.total_bytes() as f64 / 1e6,
        corpus.docs.len(),
        vocabulary.len(),
    );

    let (fingerprints, throughput) = configs::fingerprint_corpus(&corpus, &configs);
    let summary = Summary {
        throughput,
        edit: exp_edit::run(&corpus, &configs, &vocabulary),
        unrelated: exp_unrelated::run(&corpus, &configs, &fingerprints),
        natural: exp_natural::run(&corpus, &configs, &fingerprints),
        pages: exp_pages::run(&corpus, &configs, &vocabulary),
    };
    summary.print(&configs);
    exp_shingling::run(&corpus);
    eprintln!("done in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

struct Summary {
    throughput: Vec<f64>,
    edit: Vec<stats::Distances>,
    unrelated: Vec<stats::Distances>,
    natural: exp_natural::Natural,
    pages: [exp_pages::Pages; 3],
}

impl Summary {
    fn print(&self, configs: &[Config]) {
        println!("## Summary (k = {K}; recall: higher is better, FP: lower is better)\n");
        let recall_fpr = |pages: &exp_pages::Pages, c: usize| {
            format!(
                "{} / {}",
                pct(pages.positives[c].within_k()),
                pct(pages.negatives[c].within_k())
            )
        };
        let mut table = Table::new(&[
            "config",
            "1-word edit, >=300 tok",
            "near-dup recall J>=0.9",
            "unrelated FP",
            "hard-neg FP J 0.3-0.6",
            &format!("pages recall/FPR, {}", exp_pages::TINY.name),
            &format!("pages recall/FPR, {}", exp_pages::SMALL.name),
            &format!("pages recall/FPR, {}", exp_pages::LARGE.name),
            "MB/s (1 thread)",
        ]);
        for (c, config) in configs.iter().enumerate() {
            table.row(vec![
                config.name.to_string(),
                pct(self.edit[c].within_k()),
                pct(self.natural.recall[c].within_k()),
                pct(self.unrelated[c].within_k()),
                pct(self.natural.hard_negatives[c].within_k()),
                recall_fpr(&self.pages[0], c),
                recall_fpr(&self.pages[1], c),
                recall_fpr(&self.pages[2], c),
                num(self.throughput[c], 0),
            ]);
        }
        table.print();
    }
}
