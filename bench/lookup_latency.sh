#!/usr/bin/env bash
# One lookup `WHERE hamming(fp, q) <= 3` (a crawler's "is this page a near copy of one I
# have?") against ROWS 64-bit fingerprints, in one run: the hamming index and a sequential
# scan (the server's execution time of each statement), beside a BK-tree (pybktree) and an
# HNSW graph (FAISS IndexBinaryHNSW, pgvector's default parameters, the 10 nearest kept if
# within 3 bits: approximate, its recall printed) over the same codes in Python
# (bench/lookup_baselines.py, one thread, each query timed alone). The rows: 90 % uniform
# random, 10 % near copies (1-3 bits) of them; PROBES queries (default 100): half near copies
# of rows (they have matches), half random (most have none). Medians over the probes.
# Correctness: the index, the scan and the BK-tree must find the same (probe, row) matches as
# brute force (exit 1 otherwise).
# Usage: ROWS=1000000 bench/lookup_latency.sh     (SKIP_INSTALL=1: the installed build;
#        PYVENV names a virtualenv with faiss-cpu and pybktree, made once)
# PLOT_DIR=docs/plots PLOT_PYTHON=VENV/bin/python: adds this ROWS to docs/plots/lookup_latency.csv
# and redraws lookup_latency.svg (one run per size; bench/lib.sh, plot_point).
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-lookup
ROWS=${ROWS:-1000000}
PROBES=${PROBES:-100}
PYVENV=${PYVENV:-/tmp/pyvenv}
R=3
WORK=$(mktemp -d)
trap 'cluster_stop "$DIR"; rm -rf "$WORK"' EXIT
chmod a+rwx "$WORK"
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }

python_venv "$PYVENV" "faiss, pybktree, numpy" faiss-cpu pybktree numpy
[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '1GB'" "maintenance_work_mem = '512MB'" "autovacuum = off" \
    "max_parallel_workers_per_gather = 0" "jit = off"

echo "== $ROWS fingerprints, $PROBES probes, within $R bits"
q >/dev/null -c "CREATE EXTENSION neardup" -f "$ROOT/tests/integration/fingerprint_functions.sql"
q >/dev/null <<SQL
SELECT setseed(0.31);
CREATE TABLE docs (id bigserial, fp simhash64);
INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, $ROWS - $ROWS / 10);
INSERT INTO docs (fp) SELECT flip(fp::bigint, 1 + floor(random() * 3)::int)::simhash64
    FROM docs ORDER BY random() LIMIT $ROWS / 10;
CREATE INDEX docs_fp ON docs USING hamming (fp);
VACUUM ANALYZE docs;
CREATE TABLE probes AS SELECT row_number() OVER () AS n, fp FROM (
    (SELECT flip(fp::bigint, 1 + floor(random() * 3)::int)::simhash64 AS fp FROM docs ORDER BY random() LIMIT $PROBES / 2)
    UNION ALL
    SELECT rnd64()::simhash64 FROM generate_series(1, $PROBES - $PROBES / 2)) p;
\copy (SELECT fp::bigint FROM docs ORDER BY id) TO '$WORK/codes.txt'
\copy (SELECT fp::bigint FROM probes ORDER BY n) TO '$WORK/probes.txt'
SQL

# statements WHERE: one EXPLAIN ANALYZE a probe, the lookup's condition written WHERE (with
# $P for the probe); medians_ms: the median of their execution times.
statements() { q -c "SELECT 'EXPLAIN (ANALYZE, TIMING OFF) SELECT id FROM docs WHERE ' || replace('$1', '\$P', quote_literal(fp::text) || '::simhash64') || ';' FROM probes ORDER BY n"; }
median_of_statements() {
    psql -AtX | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | median
}
index_where="hamming(fp, \$P) <= $R"
scan_where="hamming(fp, \$P) + 0 <= $R" # (+ 0: the bound as written, which the planner hook would hand to the index)
[[ $(q -c "EXPLAIN SELECT id FROM docs WHERE hamming(fp, '0000000000000000'::simhash64) <= $R") == *"docs_fp"* ]] ||
    { echo "the lookup does not use the hamming index" >&2; exit 1; }
[[ $(q -c "EXPLAIN SELECT id FROM docs WHERE hamming(fp, '0000000000000000'::simhash64) + 0 <= $R") == *"Seq Scan"* ]] ||
    { echo "the baseline is not a sequential scan" >&2; exit 1; }
index_matches=$(q -c "SELECT count(*) FROM probes p, docs d WHERE hamming(d.fp, p.fp) <= $R")
scan_matches=$(PGOPTIONS="-c enable_indexscan=off -c enable_bitmapscan=off" q -c "SELECT count(*) FROM probes p, docs d WHERE hamming(d.fp, p.fp) + 0 <= $R")
statements "$index_where" | median_of_statements >/dev/null # (warm the caches)
index_ms=$(statements "$index_where" | median_of_statements)
scan_ms=$(statements "$scan_where" | median_of_statements)

read -r bktree_ms hnsw_ms recall matches bktree_build hnsw_build < <("$PYVENV/bin/python3" "$ROOT/bench/lookup_baselines.py" \
    "$WORK/codes.txt" "$WORK/probes.txt" "$R")
[[ $index_matches == "$matches" && $scan_matches == "$matches" ]] ||
    { echo "matches: index $index_matches, scan $scan_matches, brute force $matches" >&2; exit 1; }
echo "   $matches (probe, row) matches, equal in the index, the scan, the BK-tree and brute force;"
echo "   built: BK-tree in $bktree_build s, HNSW in $hnsw_build s (Python, one thread)"
result "hamming index" "$index_ms" ms "sequential scan" "$scan_ms"
result "hamming index" "$index_ms" ms "BK-tree (pybktree)" "$bktree_ms"
result "hamming index" "$index_ms" ms "HNSW (FAISS), recall $recall %" "$hnsw_ms"
echo
print_summary

plot_point lookup_latency "rows,hamming index (exact),sequential scan (exact),BK-tree - pybktree (exact),HNSW - FAISS IndexBinaryHNSW (approximate),HNSW recall" \
    "$ROWS,$index_ms,$scan_ms,$bktree_ms,$hnsw_ms,$recall"
plot_draw lookup_latency --logx --logy --label-with "HNSW - FAISS IndexBinaryHNSW (approximate):HNSW recall:recall {:.0f} %" \
    --title "One lookup within $R bits among 64-bit fingerprints: ms, median of $PROBES" \
    --xlabel "rows" --ylabel "ms per lookup" \
    --command "PLOT_DIR=docs/plots ROWS=<rows> bench/lookup_latency.sh"
