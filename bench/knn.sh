#!/usr/bin/env bash
# Exact k nearest neighbours through the `hamming` index, against a sequential scan with a
# top-N sort, in one run. ROWS (default 1 M) uniformly random fingerprints with a `hamming`
# index (default options, max_distance 3); QUERIES (default 50) query fingerprints of each
# kind: "far" ones made by flipping 8-15 random bits of existing rows, so that no row lies
# within max_distance and every answer comes from a pass over the index (the issue's slow
# case), and "near" ones made by flipping 0-2 bits (a near copy, found by the probe; the
# other 9 of LIMIT 10 still come from a pass). Measures:
#   (a) ORDER BY fp <~> q LIMIT 10, one statement per query: p50, p99 and average ms per
#       query of each kind through the index, against the same queries with SET
#       enable_indexscan = off (a serial seq scan + top-N sort); both answers must have the
#       same distances (100 % recall);
#   (b) the same as one LATERAL join of the far queries;
#   (c) LIMIT 1000, which reads deeper (one or two passes).
# The nearest distance of each query is computed by brute force and its distribution
# printed. Usage: bench/knn.sh     ROWS=200000 QUERIES=20 bench/knn.sh
# PLOT_DIR=docs/plots PLOT_PYTHON=VENV/bin/python: adds this ROWS to docs/plots/knn_limit10.csv
# and redraws knn_limit10.svg (one run per size; bench/lib.sh, plot_point).
#                 SKIP_INSTALL=1 bench/knn.sh   (benchmarks the build already installed)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-knn
ROWS=${ROWS:-1000000}
QUERIES=${QUERIES:-50}
T0=$SECONDS

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '1GB'" "maintenance_work_mem = '512MB'" "autovacuum = off" \
    "max_parallel_workers_per_gather = 0" "max_wal_size = '4GB'"
trap 'cluster_stop "$DIR"' EXIT
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }

echo "== generating $ROWS uniformly random fingerprints and $QUERIES queries"
q -c "CREATE EXTENSION neardup" -f "$ROOT/tests/integration/fingerprint_functions.sql"
gen_ms=$(wall_ms "SELECT setseed(0.42)" "CREATE TABLE docs (id bigserial, fp simhash64)" \
    "INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, $ROWS)" \
    "CREATE INDEX docs_fp ON docs USING hamming (fp)" "VACUUM ANALYZE docs")
echo "   $(q -c "SELECT count(*) FROM docs") rows generated and indexed in $((gen_ms / 1000)) s"
q >/dev/null <<SQL
SELECT setseed(0.7);
CREATE TABLE queries AS
    SELECT row_number() OVER () AS qid, 'far' AS kind, flip(fp::bigint, 8 + (random() * 7)::int)::simhash64 AS q
        FROM (SELECT fp FROM docs TABLESAMPLE BERNOULLI (1) REPEATABLE (3) LIMIT $QUERIES) s
    UNION ALL
    SELECT $QUERIES + row_number() OVER (), 'near', flip(fp::bigint, (random() * 2)::int)::simhash64
        FROM (SELECT fp FROM docs TABLESAMPLE BERNOULLI (1) REPEATABLE (5) LIMIT $QUERIES) s;
-- knn(mode, n): runs ORDER BY fp <~> q LIMIT n for every query, one statement each, and
-- keeps the distances and the time of each in answers(mode, n, qid, dists, ms).
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
echo "   $(q -c "SELECT count(*) FROM queries") queries; distance to their nearest row (brute force): $(PGOPTIONS="-c enable_indexscan=off" q -c "
    SELECT string_agg(kind || ' ' || d || ' bits: ' || c, ', ' ORDER BY kind, d) FROM (SELECT kind, d, count(*) AS c FROM
        (SELECT kind, (SELECT min(hamming(fp, q) + 0) FROM docs) AS d FROM queries) s GROUP BY kind, d) g")"
q0=$(q -c "SELECT q::text FROM queries ORDER BY qid LIMIT 1")
plan=$(q -c "EXPLAIN (COSTS OFF) SELECT id FROM docs ORDER BY fp <~> '$q0' LIMIT 10")
echo "$plan" | head -3 | sed 's/^/   plan of LIMIT 10 (no settings): /'
grep -q "Index Scan using docs_fp" <<<"$plan" || echo "   NOTE: the planner did not pick the index for LIMIT 10"

seqopts="-c enable_indexscan=off -c enable_bitmapscan=off"
# recall N: the share of queries whose LIMIT N distances through the index equal the seq scan's.
recall() {
    q -c "SELECT round(100.0 * count(*) FILTER (WHERE i.dists = s.dists) / count(*), 1) FROM answers i
          JOIN answers s ON s.qid = i.qid AND s.n = i.n AND s.mode = 'seq' WHERE i.mode = 'index' AND i.n = $1"
}

# stat MODE N KIND FUNC: a statistic of the per-query times (p50, p99 or avg), in ms.
stat() {
    local f
    case $4 in
    p50) f="percentile_cont(0.5) WITHIN GROUP (ORDER BY a.ms)" ;;
    p99) f="percentile_cont(0.99) WITHIN GROUP (ORDER BY a.ms)" ;;
    *) f="avg(a.ms)" ;;
    esac
    q -c "SELECT round(($f)::numeric, 2) FROM answers a JOIN queries USING (qid) WHERE a.mode = '$1' AND a.n = $2 AND kind = '$3'"
}

echo "== (a) ORDER BY fp <~> q LIMIT 10, one statement per query"
q -c "SELECT knn('warm', 10)" >/dev/null
q -c "SELECT knn('index', 10)" >/dev/null
PGOPTIONS=$seqopts q -c "SELECT knn('seq', 10)" >/dev/null
for kind in far near; do
    for s in p50 p99 avg; do
        result "kNN LIMIT 10, $kind queries, $s, $ROWS rows" "$(stat index 10 $kind $s)" ms "seq scan + top-N sort, $s" "$(stat seq 10 $kind $s)"
    done
done
result "recall of LIMIT 10 (same distances)" "$(recall 10)" % - ""
plot_point knn_limit10 "rows,index p50 (far),index p99 (far),index p50 (near),seq scan p50 (far)" \
    "$ROWS,$(stat index 10 far p50),$(stat index 10 far p99),$(stat index 10 near p50),$(stat seq 10 far p50)"
plot_draw knn_limit10 --title "ORDER BY fp <~> q LIMIT 10: ms per query, $QUERIES queries per kind, recall $(recall 10) %" \
    --xlabel "rows (uniformly random 64-bit codes)" --ylabel "ms per query" --logx --logy \
    --command "PLOT_DIR=docs/plots ROWS=<rows> QUERIES=$QUERIES bench/knn.sh"

echo "== (b) LIMIT 10 as one LATERAL join of the $QUERIES queries"
lateral="SELECT count(*), sum(d) FROM queries q0, LATERAL (SELECT fp <~> q0.q AS d FROM docs ORDER BY fp <~> q0.q LIMIT 10) x WHERE q0.kind = 'far'"
lat_plan=$(q -c "EXPLAIN (COSTS OFF) $lateral")
grep -q "Index Scan using docs_fp" <<<"$lat_plan" || echo "   NOTE: the planner did not pick the index for the LATERAL join"
lat_idx=$(median_ms 3 "$lateral")
lat_seq=$(PGOPTIONS=$seqopts median_ms 1 "$lateral")
[[ $(q -c "$lateral") == "$(PGOPTIONS=$seqopts q -c "$lateral")" ]] || echo "   MISMATCH: the LATERAL join's distances differ"
result "LATERAL join, $QUERIES x LIMIT 10" "$(printf %.1f "$lat_idx")" ms "same, seq scans + top-N sorts" "$(printf %.1f "$lat_seq")"

echo "== (c) ORDER BY fp <~> q LIMIT 1000"
q -c "SELECT knn('index', 1000)" >/dev/null
PGOPTIONS=$seqopts q -c "SELECT knn('seq', 1000)" >/dev/null
for s in p50 p99; do
    result "kNN LIMIT 1000, far queries, $s" "$(stat index 1000 far $s)" ms "seq scan + top-N sort, $s" "$(stat seq 1000 far $s)"
done
result "recall of LIMIT 1000 (same distances)" "$(recall 1000)" % - ""

echo
echo "== summary ($ROWS rows, $QUERIES queries; $((SECONDS - T0)) s in all)"
print_summary
