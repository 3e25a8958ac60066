#!/usr/bin/env bash
# Exact k nearest neighbours through the `hamming` index, against a sequential scan with a
# top-N sort, in one run. ROWS (default 1 M) uniformly random fingerprints with a `hamming`
# index (default options, max_distance 3); QUERIES (default 50) query fingerprints made by
# flipping 8-15 random bits of existing rows, so that no row lies within max_distance and
# every answer comes from a pass over the index (the issue's slow case). Measures:
#   (a) ORDER BY fp <~> q LIMIT 10, one statement per query: average ms per query through
#       the index, against the same queries with SET enable_indexscan = off (a serial seq
#       scan + top-N sort); both answers must have the same distances (100 % recall);
#   (b) the same as one LATERAL join of all queries;
#   (c) LIMIT 1000, which reads deeper but still in the first pass.
# The nearest distance of each query is computed by brute force and its distribution
# printed. Usage: bench/knn.sh     ROWS=200000 QUERIES=20 bench/knn.sh
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
CREATE TABLE queries AS SELECT row_number() OVER () AS qid, flip(fp::bigint, 8 + (random() * 7)::int)::simhash64 AS q
    FROM (SELECT fp FROM docs TABLESAMPLE BERNOULLI (1) REPEATABLE (3) LIMIT $QUERIES) s;
-- knn(n): runs ORDER BY fp <~> q LIMIT n for every query, one statement each, keeps the
-- distances in answers(mode, qid, dists) and returns the ms per query.
CREATE TABLE answers (mode text, n int, qid bigint, dists int[]);
CREATE FUNCTION knn(mode text, n int) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE r record; d int[]; t0 timestamptz; total interval := '0';
BEGIN
    FOR r IN SELECT qid, q FROM queries ORDER BY qid LOOP
        t0 := clock_timestamp();
        SELECT array_agg(dist ORDER BY dist) INTO d
            FROM (SELECT fp <~> r.q AS dist FROM docs ORDER BY fp <~> r.q LIMIT n) s;
        total := total + (clock_timestamp() - t0);
        INSERT INTO answers VALUES (mode, n, r.qid, d);
    END LOOP;
    RETURN extract(epoch FROM total) * 1000 / (SELECT count(*) FROM queries);
END \$\$;
SQL
echo "   $(q -c "SELECT count(*) FROM queries") queries; distance to their nearest row (brute force): $(PGOPTIONS="-c enable_indexscan=off" q -c "
    SELECT string_agg(d || ' bits: ' || c, ', ' ORDER BY d) FROM (SELECT d, count(*) AS c FROM
        (SELECT (SELECT min(hamming(fp, q) + 0) FROM docs) AS d FROM queries) s GROUP BY d) g")"
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

echo "== (a) ORDER BY fp <~> q LIMIT 10, one statement per query"
q -c "SELECT knn('warm', 10)" >/dev/null
idx=$(q -c "SELECT knn('index', 10)")
seq=$(PGOPTIONS=$seqopts q -c "SELECT knn('seq', 10)")
result "kNN LIMIT 10 through the index, $ROWS rows" "$(printf %.2f "$idx")" ms "seq scan + top-N sort" "$(printf %.2f "$seq")"
result "recall of LIMIT 10 (same distances)" "$(recall 10)" % - ""

echo "== (b) LIMIT 10 as one LATERAL join of the $QUERIES queries"
lateral="SELECT count(*), sum(d) FROM queries, LATERAL (SELECT fp <~> q AS d FROM docs ORDER BY fp <~> q LIMIT 10) x"
lat_plan=$(q -c "EXPLAIN (COSTS OFF) $lateral")
grep -q "Index Scan using docs_fp" <<<"$lat_plan" || echo "   NOTE: the planner did not pick the index for the LATERAL join"
lat_idx=$(median_ms 3 "$lateral")
lat_seq=$(PGOPTIONS=$seqopts median_ms 1 "$lateral")
[[ $(q -c "$lateral") == "$(PGOPTIONS=$seqopts q -c "$lateral")" ]] || echo "   MISMATCH: the LATERAL join's distances differ"
result "LATERAL join, $QUERIES x LIMIT 10" "$(printf %.1f "$lat_idx")" ms "same, seq scans + top-N sorts" "$(printf %.1f "$lat_seq")"

echo "== (c) ORDER BY fp <~> q LIMIT 1000"
idx=$(q -c "SELECT knn('index', 1000)")
seq=$(PGOPTIONS=$seqopts q -c "SELECT knn('seq', 1000)")
result "kNN LIMIT 1000 through the index" "$(printf %.2f "$idx")" ms "seq scan + top-N sort" "$(printf %.2f "$seq")"
result "recall of LIMIT 1000 (same distances)" "$(recall 1000)" % - ""

echo
echo "== summary ($ROWS rows, $QUERIES queries; $((SECONDS - T0)) s in all)"
print_summary
