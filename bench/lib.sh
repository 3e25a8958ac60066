#!/usr/bin/env bash
# Shared by the benchmarks: a cluster with the extension and the corpus loaded, and a timer
# that reads the server's own execution time (no client transfer in the figure).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/cluster.sh"

# bench_cluster DIR: starts the cluster and loads the full corpus (built on first use; the
# committed sample when the archive cannot be reached) into table docs(id, package, body).
bench_cluster() {
    local corpus=$ROOT/pg_test_data/full/debian_descriptions.tsv
    [[ -f $corpus ]] || "$ROOT/pg_test_data/build_corpus.sh" || corpus=$ROOT/pg_test_data/debian_descriptions_sample.tsv
    [[ -f $corpus ]] || corpus=$ROOT/pg_test_data/debian_descriptions_sample.tsv
    install_extension
    cluster_start "$1" "shared_buffers = '512MB'"
    psql -qX -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION neardup;
CREATE TABLE docs (id bigint PRIMARY KEY, package text NOT NULL, body text NOT NULL);
\copy docs FROM '$corpus'
VACUUM ANALYZE docs;
SQL
    echo "corpus: $(psql -AtX -c "SELECT count(*) || ' rows, ' || round(sum(octet_length(body)) / 1e6, 1) || ' MB of text' FROM docs")"
}

# exec_ms SQL: the server-side execution time of one run, in milliseconds.
exec_ms() {
    psql -AtX -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Execution Time"])'
}

# median_ms ROUNDS SQL: the median of several runs.
median_ms() {
    local rounds=$1 sql=$2
    for _ in $(seq "$rounds"); do exec_ms "$sql"; done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
