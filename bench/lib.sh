#!/usr/bin/env bash
# Shared by the benchmarks: a cluster with the extension and the corpus loaded, and a timer
# that reads the server's own execution time (no client transfer in the figure).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/cluster.sh"

# bench_cluster DIR [postgresql.conf lines...]: starts the cluster and loads the full corpus
# (built on first use; the committed sample when the archive cannot be reached) into table
# docs(id, package, body); CORPUS is left naming the file loaded. Builds and installs the
# extension first unless SKIP_INSTALL=1 (then it benchmarks the build already installed).
bench_cluster() {
    CORPUS=$ROOT/pg_test_data/full/debian_descriptions.tsv
    [[ -f $CORPUS ]] || "$ROOT/pg_test_data/build_corpus.sh" || true
    [[ -f $CORPUS ]] || CORPUS=$ROOT/pg_test_data/debian_descriptions_sample.tsv
    [[ -n ${SKIP_INSTALL:-} ]] || install_extension
    cluster_start "$1" "shared_buffers = '512MB'" "${@:2}"
    psql -qX -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION neardup;
CREATE TABLE docs (id bigint PRIMARY KEY, package text NOT NULL, body text NOT NULL);
\copy docs FROM '$CORPUS'
VACUUM ANALYZE docs;
SQL
    echo "corpus: $(psql -AtX -c "SELECT count(*) || ' rows, ' || round(sum(octet_length(body)) / 1e6, 1) || ' MB of text' FROM docs")"
}

# python_venv DIR IMPORTS PACKAGES...: the virtualenv DIR with PACKAGES installed, made once
# (kept when its python can import IMPORTS, a comma-separated list of modules).
python_venv() {
    local dir=$1 imports=$2
    shift 2
    ! "$dir/bin/python3" -c "import $imports" 2>/dev/null || return 0
    echo "   creating $dir with $* (once)"
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q "$@"
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

# session_median_ms ROUNDS SQL: the median of several runs in one session, after one
# unmeasured run: what a pooled connection sees (the first run of a new session also pays
# for its caches, more for a table created moments before).
session_median_ms() {
    local rounds=$1 sql=$2
    for _ in $(seq $((rounds + 1))); do echo "EXPLAIN (ANALYZE, TIMING OFF) $sql;"; done | psql -AtX |
        sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | tail -n "$rounds" | median
}

# median: the median of the numbers on standard input, one a line.
median() {
    sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# paired_medians_ms ROUNDS SQL-A SQL-B: the medians of A and B run alternately in one
# session (after one unmeasured run of each), so that whatever else the machine does
# meanwhile (a background merge, another tenant) weighs on both alike; prints "A B".
paired_medians_ms() {
    local rounds=$1 a=$2 b=$3
    local times
    times=$(for _ in $(seq $((rounds + 1))); do echo "EXPLAIN (ANALYZE, TIMING OFF) $a;"; echo "EXPLAIN (ANALYZE, TIMING OFF) $b;"; done |
        psql -AtX | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | tail -n $((2 * rounds)))
    echo "$(awk 'NR % 2 == 1' <<<"$times" | median) $(awk 'NR % 2 == 0' <<<"$times" | median)"
}

# wall_ms SQL...: wall-clock milliseconds of the statements, run in one session (for DDL,
# which EXPLAIN cannot time).
wall_ms() {
    local args=() sql start
    for sql in "$@"; do args+=(-c "$sql"); done
    start=$(date +%s%N)
    psql -qAtX -v ON_ERROR_STOP=1 "${args[@]}" >/dev/null
    echo $((($(date +%s%N) - start) / 1000000))
}

# result MEASURE VALUE UNIT [BASELINE BASELINE-VALUE]: prints one line (ratio = VALUE /
# BASELINE-VALUE, written 1/x below 0.1) and keeps it for print_summary.
SUMMARY=()
RESULT_FORMAT='%-44s %10s %-5s %-40s %10s %8s'
result() {
    local line
    line=$(awk -v f="$RESULT_FORMAT" -v m="$1" -v v="$2" -v u="$3" -v b="${4:--}" -v bv="${5:--}" 'BEGIN {
        r = "-"
        if (bv + 0 > 0) r = (v / bv >= 0.1 || v + 0 == 0) ? sprintf("%.3g", v / bv) : sprintf("1/%.3g", bv / v)
        printf f, m, v, u, b, bv, r }')
    SUMMARY+=("$line")
    echo "$line"
}
print_summary() {
    printf "$RESULT_FORMAT\n" measure value unit baseline value ratio
    printf '%s\n' "${SUMMARY[@]}"
}

# knn_queries N: in the current database, whose table docs(id, fp simhash64) holds the
# rows, the table queries(qid, kind, q) of N "far" queries (8-15 bits flipped from a row:
# no row within max_distance, the answer comes from passes over the index) and N "near"
# ones (0-2 bits: a near copy, found by the probe), made from the same seeds in every bench;
# and knn(mode, n), which runs ORDER BY fp <~> q LIMIT n for every query, one statement each,
# keeping the distances and the time of each in answers(mode, n, qid, dists, ms). Time them
# with knn_timed.
knn_queries() {
    psql -XqAt -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT setseed(0.7);
CREATE TABLE queries AS
    SELECT row_number() OVER () AS qid, 'far' AS kind, flip(fp::bigint, 8 + (random() * 7)::int)::simhash64 AS q
        FROM (SELECT fp FROM docs TABLESAMPLE BERNOULLI (1) REPEATABLE (3) LIMIT $1) s
    UNION ALL
    SELECT $1 + row_number() OVER (), 'near', flip(fp::bigint, (random() * 2)::int)::simhash64
        FROM (SELECT fp FROM docs TABLESAMPLE BERNOULLI (1) REPEATABLE (5) LIMIT $1) s;
CREATE TABLE answers (mode text, n int, qid bigint, dists int[], ms float8);
CREATE FUNCTION knn(mode text, n int) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE r record; d int[]; t0 timestamptz;
BEGIN
    FOR r IN SELECT qid, q FROM queries ORDER BY qid LOOP
        t0 := clock_timestamp();
        SELECT array_agg(dist ORDER BY dist) INTO d
            FROM (SELECT fp <~> r.q AS dist FROM docs ORDER BY fp <~> r.q LIMIT n) s;
        INSERT INTO answers VALUES (mode, n, r.qid, d, extract(epoch FROM clock_timestamp() - t0) * 1000);
    END LOOP;
END \$\$;
SQL
}

# knn_timed MODE N: knn(MODE, N) in a session that has run every query once untimed, as a
# pooled connection would have: a new session's first reads of the index pay for what its
# backend caches (the kernel's mapping of each shared buffer it touches, the buffer each
# leaf was found in), and rings read other leaves for each query, so that over 10 M codes
# one new session's first 50 queries took up to twice as long as the same queries again
# (bench/knn.sh times a new connection's first query on its own).
knn_timed() {
    psql -XqAt -v ON_ERROR_STOP=1 -c "SELECT knn('untimed', $2)" -c "DELETE FROM answers WHERE mode = 'untimed'" \
        -c "SELECT knn('$1', $2)" >/dev/null
}

# run_rows INDEX: the rows of each run of a hamming index and of its pending list (p), and
# " merging" while a merge is under way (needs pageinspect and
# tests/integration/index_pages.sql in the database).
run_rows() {
    psql -XqAt -v ON_ERROR_STOP=1 \
        -c "SELECT run_rows('$1') || CASE WHEN meta_u32('$1', 48) <> 0 THEN ' merging' ELSE '' END"
}

# Plots (docs/benchmarks.md): with PLOT_DIR set (docs/plots to commit them), a bench appends
# its figures to a CSV there and, with PLOT_PYTHON (a python with matplotlib: the bench
# virtualenv), redraws the SVG beside it (bench/plot.py stamps the CSV's sha256 on it, which
# scripts/check_plots.py checks). plot_row NAME HEADER ROW: a header `x,SERIES...`, a row.
plot_row() {
    [[ -n ${PLOT_DIR:-} ]] || return 0
    mkdir -p "$PLOT_DIR"
    local csv=$PLOT_DIR/$1.csv
    [[ -s $csv && $(sed -n 1p "$csv") == "$2" ]] || echo "$2" >"$csv"
    echo "$3" >>"$csv"
}
# plot_point NAME HEADER ROW: as plot_row, for a bench run once per x (a size): the row
# replaces the one of the same x, and the rows stay sorted by x.
plot_point() {
    [[ -n ${PLOT_DIR:-} ]] || return 0
    plot_row "$@"
    local csv=$PLOT_DIR/$1.csv
    { sed -n 1p "$csv"; tail -n +2 "$csv" | tac | sort -t, -k1,1g -u; } >"$csv.new"
    mv "$csv.new" "$csv"
}
# plot_reset NAME: forget NAME's data, for a bench whose one run gives the whole plot.
plot_reset() {
    [[ -z ${PLOT_DIR:-} ]] || rm -f "$PLOT_DIR/$1.csv"
}
# plot_draw NAME ARGS...: bench/plot.py's options (--title, --xlabel, --ylabel, --command, ...).
plot_draw() {
    [[ -n ${PLOT_DIR:-} && -n ${PLOT_PYTHON:-} ]] || return 0
    "$PLOT_PYTHON" "$(dirname "${BASH_SOURCE[0]}")/plot.py" "$PLOT_DIR/$1.csv" "$PLOT_DIR/$1.svg" "${@:2}"
}
