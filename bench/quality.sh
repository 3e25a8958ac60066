#!/usr/bin/env bash
# Quality evaluation of simhash configurations (bench/quality): one-word edits, unrelated
# pairs, the corpus's natural near-duplicates and hard negatives, and same-template pages,
# each at the near-duplicate threshold of 3 bits, plus single-thread throughput.
#
# Then (experiment 5, issue 4) an exact ground truth, every pair of distinct canonical texts
# with 8-word-shingle Jaccard >= 0.95 / 0.9 / 0.8 (exact duplicates counted apart), and the
# precision and recall against it of the default simhash at 1-6 bits, of minhash
# B-similarity >= 1-6 (Henzinger's Alg. B), and of her combined algorithm (B-similar pairs
# kept within t = 0-10 simhash bits); and the minhash Jaccard estimate's mean absolute
# error by band of exact J, next to the binomial model's.
#
#   bench/quality.sh [CORPUS.tsv]
#
# Without an argument: the full corpus if it has been built (pg_test_data/build_corpus.sh),
# else the committed sample. No PostgreSQL needed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
corpus=${1:-$ROOT/pg_test_data/full/debian_descriptions.tsv}
[[ $# -gt 0 || -f $corpus ]] || corpus=$ROOT/pg_test_data/debian_descriptions_sample.tsv
[[ -f $corpus ]] || { echo "no such corpus: $corpus" >&2; exit 1; }
corpus=$(realpath "$corpus")
cd "$ROOT"
cargo run --quiet --release -p neardup-quality -- "$corpus"
