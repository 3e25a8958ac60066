#!/usr/bin/env bash
# Quality evaluation of simhash configurations (bench/quality): one-word edits, unrelated
# pairs, the corpus's natural near-duplicates and hard negatives, and same-template pages,
# each at the near-duplicate threshold of 3 bits, plus single-thread throughput.
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
