//! Experiment 4: Henzinger's same-site failure (Henzinger, SIGIR 2006: simhash's worst
//! errors were pages of one site sharing a template). Synthetic pages from real text:
//! header + content + footer, where the header and footer (the "site template") are
//! corpus descriptions and the content is a 100–300-token description.
//!
//! - Negatives: two unrelated contents in the same template. Should stay > `K` bits apart.
//! - Positives: one content, and a copy with 1–3 word edits, in two different templates
//!   (the same text on two sites). Should be within `K` bits.

use crate::configs::Config;
use crate::corpus::Corpus;
use crate::edits::{edit_words, Vocabulary};
use crate::rng::Rng;
use crate::stats::{num, pct, text_distances, Distances, Table, K};
use std::ops::RangeInclusive;

const PAIRS: usize = 2_000;
const CONTENT_TOKENS: RangeInclusive<usize> = 100..=300;
const MAX_CONTENT_JACCARD: f64 = 0.2;
const MAX_EDITS: usize = 3;

pub struct Boilerplate {
    pub name: &'static str,
    /// Token count of each of the header and the footer.
    part_tokens: RangeInclusive<usize>,
    seed: u64,
}

/// Templates of 10–30 tokens in all: a byline, a navigation line, a copyright footer.
pub const TINY: Boilerplate = Boilerplate {
    name: "template 10-30 tok",
    part_tokens: 5..=15,
    seed: 3,
};

/// Templates of 80–150 tokens in all, about half of a page.
pub const SMALL: Boilerplate = Boilerplate {
    name: "template 80-150 tok",
    part_tokens: 40..=75,
    seed: 4,
};

/// Templates of about 300 tokens, outweighing most contents.
pub const LARGE: Boilerplate = Boilerplate {
    name: "template ~300 tok",
    part_tokens: 130..=170,
    seed: 5,
};

pub struct Pages {
    pub positives: Vec<Distances>,
    pub negatives: Vec<Distances>,
}

struct Pools<'a> {
    corpus: &'a Corpus,
    templates: Vec<usize>,
    contents: Vec<usize>,
}

/// Every template size, `TINY`, `SMALL` then `LARGE`.
pub fn run(corpus: &Corpus, configs: &[Config], vocabulary: &Vocabulary) -> [Pages; 3] {
    println!("## 4. Same-site pages (Henzinger): shared template vs. shared content\n");
    [&TINY, &SMALL, &LARGE].map(|size| run_size(corpus, configs, vocabulary, size))
}

fn run_size(
    corpus: &Corpus,
    configs: &[Config],
    vocabulary: &Vocabulary,
    boilerplate: &Boilerplate,
) -> Pages {
    let pools = Pools {
        corpus,
        templates: corpus.docs_with_tokens(boilerplate.part_tokens.clone()),
        contents: corpus.docs_with_tokens(CONTENT_TOKENS),
    };
    let mut rng = Rng::new(boilerplate.seed);
    let negatives: Vec<_> = (0..PAIRS)
        .map(|_| same_site_pair(&pools, &mut rng))
        .collect();
    let positives: Vec<_> = (0..PAIRS)
        .map(|_| cross_site_pair(&pools, vocabulary, &mut rng))
        .collect();
    println!(
        "### {}: header and footer of {}-{} tokens each ({} candidates), content of {}-{} \
         tokens ({} candidates), {PAIRS} pairs each\n",
        boilerplate.name,
        boilerplate.part_tokens.start(),
        boilerplate.part_tokens.end(),
        pools.templates.len(),
        CONTENT_TOKENS.start(),
        CONTENT_TOKENS.end(),
        pools.contents.len(),
    );
    let pages = Pages {
        positives: text_distances(configs, &positives),
        negatives: text_distances(configs, &negatives),
    };
    print_table(configs, &pages);
    pages
}

/// Two unrelated contents in one template.
fn same_site_pair(pools: &Pools, rng: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let [header, footer] = distinct(rng, &pools.templates, &[]);
    let (a, b) = loop {
        let [a, b] = distinct(rng, &pools.contents, &[header, footer]);
        if pools.corpus.jaccard(a, b) < MAX_CONTENT_JACCARD {
            break (a, b);
        }
    };
    let (a, b) = (pools.corpus.body(a), pools.corpus.body(b));
    (pools.page(header, a, footer), pools.page(header, b, footer))
}

/// One content, and an edited copy, in two different templates.
fn cross_site_pair(pools: &Pools, vocabulary: &Vocabulary, rng: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let content = rng.pick(&pools.contents);
    let [h1, f1, h2, f2] = distinct(rng, &pools.templates, &[content]);
    let original = pools.corpus.body(content);
    let edited = edit_words(original, 1 + rng.below(MAX_EDITS), vocabulary, rng);
    (pools.page(h1, original, f1), pools.page(h2, &edited, f2))
}

impl Pools<'_> {
    fn page(&self, header: usize, content: &[u8], footer: usize) -> Vec<u8> {
        [self.corpus.body(header), content, self.corpus.body(footer)].join(&b"\n\n"[..])
    }
}

/// `N` different documents from `pool`, none of them in `exclude`.
fn distinct<const N: usize>(rng: &mut Rng, pool: &[usize], exclude: &[usize]) -> [usize; N] {
    let mut picked = [usize::MAX; N];
    for i in 0..N {
        picked[i] = loop {
            let d = rng.pick(pool);
            if !exclude.contains(&d) && !picked[..i].contains(&d) {
                break d;
            }
        };
    }
    picked
}

fn print_table(configs: &[Config], pages: &Pages) {
    let mut table = Table::new(&[
        "config",
        &format!("recall (pos <={K})"),
        "pos mean bits",
        &format!("FPR (neg <={K})"),
        "neg mean bits",
    ]);
    for (c, config) in configs.iter().enumerate() {
        table.row(vec![
            config.name.to_string(),
            pct(pages.positives[c].within_k()),
            num(pages.positives[c].mean(), 2),
            pct(pages.negatives[c].within_k()),
            num(pages.negatives[c].mean(), 2),
        ]);
    }
    table.print();
}
