#!/usr/bin/env bash
# Exact k nearest neighbours through the `hamming` index, against a sequential scan with a
# top-N sort, in one run. ROWS (default 1 M) uniformly random fingerprints with a `hamming`
# index (default options, max_distance 3); QUERIES (default 50) query fingerprints of each
# kind: "far" ones made by flipping 8-15 random bits of existing rows, so that no row lies
# within max_distance and every answer comes from a pass over the index (the issue's slow
# case), and "near" ones made by flipping 0-2 bits (a near copy, found by the probe; the
# other 9 of LIMIT 10 still come from a pass). Measures:
#   (a) ORDER BY fp <~> q LIMIT 10, one statement per query, in a session that ran each once
#       untimed (bench/lib.sh knn_timed): p50, p99 and average ms per
#       query of each kind through the index, against the same queries with SET
#       enable_indexscan = off (a serial seq scan + top-N sort); both answers must have the
#       same distances (100 % recall); (a') the same through the index with
#       neardup.ring_budget = 0 (every run read whole, no rings: the baseline of rings,
#       which the default reads runs of about 7 M to 33 M rows by);
#   (a'') the first LIMIT 10 of a new connection (11 far queries, each in a new session
#       after planning it): median and slowest against the pooled times of the same queries
#       (every mode above and below is timed in a session that ran each query once before);
#   (b) the same as one LATERAL join of the far queries;
#   (c) LIMIT 1000, which reads deeper (one or two passes);
#   (d) the same LIMIT 10 queries by FAISS IndexBinaryFlat (a flat scan of the codes in its
#       own memory, one thread, each query alone; the distances checked equal), in the
#       virtualenv PYVENV (default /tmp/pyvenv, made once with faiss-cpu); FAISS=0 skips it;
#   (e) pgvector's HNSW (`bit_hamming_ops` on the codes as bit(64), pgvector's defaults
#       m = 16, ef_construction = 64) at ef_search 40 (its default) and 200: p50, p99 and
#       recall@10 (the share of the 10 rows returned that are within the exact 10th
#       distance), with its build time and size beside the hamming index's. Runs when the
#       server has pgvector 0.7 or later (0.8.6 builds from its source:
#       `make PG_CONFIG=... install`); HNSW=0 skips it (its build takes ~5 min at 1 M);
#   (f) LIMIT 10 again after 10 % more rows were inserted (ANALYZE only: the index as the
#       inserts left it, while the background merges run), against the seq scan of the
#       grown table; (f') the same once the merges are done (the index as it settles).
# The nearest distance of each query is computed by brute force and its distribution
# printed. Usage: bench/knn.sh     ROWS=200000 QUERIES=20 bench/knn.sh
# PLOT_DIR=docs/plots PLOT_PYTHON=VENV/bin/python: adds this ROWS to docs/plots/knn_limit10.csv
# and redraws knn_limit10.svg (one run per size; bench/lib.sh, plot_point).
#                 SKIP_INSTALL=1 bench/knn.sh   (benchmarks the build already installed)
# HUGE_PAGES=on: the server's shared buffers in huge pages (needs about 560 reserved 2 MB
# pages: `echo 600 > /proc/sys/vm/nr_hugepages`); off by default, whatever the machine has
# reserved, so that runs compare.
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-knn
ROWS=${ROWS:-1000000}
QUERIES=${QUERIES:-50}
T0=$SECONDS

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '1GB'" "maintenance_work_mem = '512MB'" "autovacuum = off" \
    "max_parallel_workers_per_gather = 0" "max_wal_size = '4GB'" "huge_pages = ${HUGE_PAGES:-off}"
trap 'cluster_stop "$DIR"' EXIT
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }

echo "== generating $ROWS uniformly random fingerprints and $QUERIES queries"
q -c "CREATE EXTENSION neardup" -c "CREATE EXTENSION pageinspect" \
    -f "$ROOT/tests/integration/fingerprint_functions.sql" -f "$ROOT/tests/integration/index_pages.sql" >/dev/null
wall_ms "SELECT setseed(0.42)" "CREATE TABLE docs (id bigserial, fp simhash64)" \
    "INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, $ROWS)" >/dev/null
build_s=$(wall_ms "CREATE INDEX docs_fp ON docs USING hamming (fp)" | awk '{ printf "%.1f", $1 / 1000 }')
q -c "VACUUM ANALYZE docs"
echo "   $(q -c "SELECT count(*) FROM docs") rows generated, indexed in $build_s s ($(q -c "SELECT pg_size_pretty(pg_relation_size('docs_fp'))"))"
knn_queries "$QUERIES"
echo "   $(q -c "SELECT count(*) FROM queries") queries; distance to their nearest row (brute force): $(PGOPTIONS="-c enable_indexscan=off" q -c "
    SELECT string_agg(kind || ' ' || d || ' bits: ' || c, ', ' ORDER BY kind, d) FROM (SELECT kind, d, count(*) AS c FROM
        (SELECT kind, (SELECT min(hamming(fp, q) + 0) FROM docs) AS d FROM queries) s GROUP BY kind, d) g")"
q0=$(q -c "SELECT q::text FROM queries ORDER BY qid LIMIT 1")
plan=$(q -c "EXPLAIN (COSTS OFF) SELECT id FROM docs ORDER BY fp <~> '$q0' LIMIT 10")
echo "$plan" | head -3 | sed 's/^/   plan of LIMIT 10 (no settings): /'
grep -q "Index Scan using docs_fp" <<<"$plan" || echo "   NOTE: the planner did not pick the index for LIMIT 10"

seqopts="-c enable_indexscan=off -c enable_bitmapscan=off"
# recall N [MODE SEQ_MODE]: the share of queries whose LIMIT N distances through the index
# (answers of MODE, default index) equal the seq scan's (SEQ_MODE, default seq).
recall() {
    q -c "SELECT round(100.0 * count(*) FILTER (WHERE i.dists = s.dists) / count(*), 1) FROM answers i
          JOIN answers s ON s.qid = i.qid AND s.n = i.n AND s.mode = '${3:-seq}' WHERE i.mode = '${2:-index}' AND i.n = $1"
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

# against LABEL MODE BASELINE BASE_MODE [STATS]: per kind of query, each statistic (default
# p50 p99) of the LIMIT 10 times of MODE against those of BASE_MODE.
against() {
    local kind s
    for kind in far near; do
        for s in ${5:-p50 p99}; do
            result "$1, $kind queries, $s" "$(stat "$2" 10 $kind $s)" ms "$3, $s" "$(stat "$4" 10 $kind $s)"
        done
    done
}

echo "== (a) ORDER BY fp <~> q LIMIT 10, one statement per query"
knn_timed index 10
PGOPTIONS=$seqopts knn_timed seq 10
against "kNN LIMIT 10 ($ROWS rows)" index "seq scan + top-N sort" seq "p50 p99 avg"
result "recall of LIMIT 10 (same distances)" "$(recall 10)" % - ""
plot_point knn_limit10 "rows,index p50 (far),index p99 (far),index p50 (near),seq scan p50 (far)" \
    "$ROWS,$(stat index 10 far p50),$(stat index 10 far p99),$(stat index 10 near p50),$(stat seq 10 far p50)"
plot_draw knn_limit10 --title "ORDER BY fp <~> q LIMIT 10: ms per query, $QUERIES queries per kind, recall $(recall 10) %" \
    --xlabel "rows (uniformly random 64-bit codes)" --ylabel "ms per query" --logx --logy \
    --command "PLOT_DIR=docs/plots ROWS=<rows> QUERIES=$QUERIES bench/knn.sh"

echo "== (a'') a new connection's first query (planned first, so that the catalogs are read)"
# first_query_ms QID: the execution time of query QID's LIMIT 10 as a new session's first.
first_query_ms() {
    local sql="SELECT id FROM docs ORDER BY fp <~> (SELECT q FROM queries WHERE qid = $1) LIMIT 10"
    psql -AtX -c "EXPLAIN $sql" -c "EXPLAIN (ANALYZE, TIMING OFF) $sql" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p'
}
firsts=$(for qid in $(q -c "SELECT qid FROM queries WHERE kind = 'far' ORDER BY qid LIMIT 11"); do first_query_ms "$qid"; done)
result "kNN LIMIT 10, far, new session, median" "$(median <<<"$firsts")" ms "the same queries, pooled, median" \
    "$(q -c "SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 2) FROM answers
             WHERE mode = 'index' AND n = 10 AND qid IN (SELECT qid FROM queries WHERE kind = 'far' ORDER BY qid LIMIT 11)")"
result "kNN LIMIT 10, far, new session, slowest" "$(sort -g <<<"$firsts" | tail -1)" ms - ""

echo "== (a') the same with neardup.ring_budget = 0: every run read whole, as before rings"
PGOPTIONS="-c neardup.ring_budget=0" knn_timed whole 10
against "kNN LIMIT 10" index "every run read whole" whole
result "recall of LIMIT 10, every run read whole" "$(recall 10 whole)" % - ""

echo "== (b) LIMIT 10 as one LATERAL join of the $QUERIES queries"
lateral="SELECT count(*), sum(d) FROM queries q0, LATERAL (SELECT fp <~> q0.q AS d FROM docs ORDER BY fp <~> q0.q LIMIT 10) x WHERE q0.kind = 'far'"
lat_plan=$(q -c "EXPLAIN (COSTS OFF) $lateral")
grep -q "Index Scan using docs_fp" <<<"$lat_plan" || echo "   NOTE: the planner did not pick the index for the LATERAL join"
lat_idx=$(median_ms 3 "$lateral")
lat_seq=$(PGOPTIONS=$seqopts median_ms 1 "$lateral")
[[ $(q -c "$lateral") == "$(PGOPTIONS=$seqopts q -c "$lateral")" ]] || echo "   MISMATCH: the LATERAL join's distances differ"
result "LATERAL join, $QUERIES x LIMIT 10" "$(printf %.1f "$lat_idx")" ms "same, seq scans + top-N sorts" "$(printf %.1f "$lat_seq")"

echo "== (c) ORDER BY fp <~> q LIMIT 1000"
knn_timed index 1000
PGOPTIONS=$seqopts knn_timed seq 1000
for s in p50 p99; do
    result "kNN LIMIT 1000, far queries, $s" "$(stat index 1000 far $s)" ms "seq scan + top-N sort, $s" "$(stat seq 1000 far $s)"
done
result "recall of LIMIT 1000 (same distances)" "$(recall 1000)" % - ""

# index_stat KIND FUNC: a statistic of the index's LIMIT 10 times for the baselines below.
index_stat() { stat index 10 "$1" "$2"; }

if [[ ${FAISS:-1} != 0 ]]; then
    echo "== (d) the same LIMIT 10 queries by FAISS IndexBinaryFlat (one thread)"
    PYVENV=${PYVENV:-/tmp/pyvenv}
    python_venv "$PYVENV" "faiss" faiss-cpu numpy
    q -c "COPY (SELECT fp::bigint FROM docs ORDER BY id) TO STDOUT" >"$DIR/codes.txt"
    q -F ' ' -c "SELECT qid, kind, q::bigint FROM queries ORDER BY qid" >"$DIR/queries.txt"
    while read -r kind p50 p99 total; do
        ours=$(q -c "SELECT sum(d) FROM answers a JOIN queries USING (qid), unnest(a.dists) d WHERE a.mode = 'index' AND a.n = 10 AND kind = '$kind'")
        [[ $ours == "$total" ]] || echo "   MISMATCH: the $kind queries' distances sum to $ours through the index, $total by FAISS"
        result "kNN LIMIT 10, $kind queries, p50" "$(index_stat "$kind" p50)" ms "FAISS IndexBinaryFlat, p50" "$p50"
        result "kNN LIMIT 10, $kind queries, p99" "$(index_stat "$kind" p99)" ms "FAISS IndexBinaryFlat, p99" "$p99"
    done < <("$PYVENV/bin/python3" "$ROOT/bench/knn_faiss.py" "$DIR/codes.txt" "$DIR/queries.txt" 10)
    rm -f "$DIR/codes.txt" "$DIR/queries.txt"
fi

pgvector=$(q -c "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
if [[ ${HNSW:-1} != 0 && -n $pgvector && $(printf '%s\n0.7.0\n' "$pgvector" | sort -V | head -1) == 0.7.0 ]]; then
    echo "== (e) pgvector $pgvector HNSW (bit_hamming_ops, m 16, ef_construction 64), approximate"
    q -c "CREATE EXTENSION vector" -c "CREATE TABLE vdocs AS SELECT id, fp::bigint::bit(64) AS v FROM docs"
    hnsw_ms=$(wall_ms "SET maintenance_work_mem = '4GB'" "CREATE INDEX vdocs_v ON vdocs USING hnsw (v bit_hamming_ops)")
    q -c "VACUUM ANALYZE vdocs"
    hnsw_plan=$(q -c "EXPLAIN (COSTS OFF) SELECT id FROM vdocs ORDER BY v <~> B'$(printf '%064d' 0)' LIMIT 10")
    grep -q "Index Scan using vdocs_v" <<<"$hnsw_plan" || echo "   NOTE: the planner did not pick HNSW"
    q >/dev/null <<'SQL'
CREATE FUNCTION hnsw_knn(ef int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record; d int[]; t0 timestamptz; qv bit(64);
BEGIN
    PERFORM set_config('hnsw.ef_search', ef::text, true);
    FOR r IN SELECT qid, q FROM queries ORDER BY qid LOOP
        qv := r.q::bigint::bit(64);
        t0 := clock_timestamp();
        SELECT array_agg(dist ORDER BY dist) INTO d
            FROM (SELECT (x.v <~> qv)::int AS dist FROM vdocs x ORDER BY x.v <~> qv LIMIT 10) s;
        INSERT INTO answers VALUES ('hnsw' || ef, 10, r.qid, d, extract(epoch FROM clock_timestamp() - t0) * 1000);
    END LOOP;
END $$;
SQL
    # recall@10: the rows returned within the exact 10th distance (ties there all count), of 10.
    hnsw_recall() {
        q -c "SELECT round(avg(least((SELECT count(*) FROM unnest(h.dists) d WHERE d <= s.dists[10]), 10) / 10.0), 3)
              FROM answers h JOIN answers s ON s.qid = h.qid AND s.mode = 'seq' AND s.n = 10 JOIN queries k ON k.qid = h.qid
              WHERE h.mode = 'hnsw$1' AND kind = '$2'"
    }
    q -c "SELECT hnsw_knn(40)" -c "DELETE FROM answers WHERE mode = 'hnsw40'" >/dev/null
    for ef in 40 200; do
        q -c "SELECT hnsw_knn($ef)" >/dev/null
        for kind in far near; do
            for s in p50 p99; do
                result "kNN LIMIT 10, $kind queries, $s (exact)" "$(index_stat "$kind" $s)" ms \
                    "HNSW ef_search $ef, $s (recall $(hnsw_recall "$ef" "$kind"))" "$(stat "hnsw$ef" 10 "$kind" "$s")"
            done
        done
    done
    result "index build" "$build_s" s "HNSW build" "$((hnsw_ms / 1000))"
    result "index size" "$(q -c "SELECT pg_relation_size('docs_fp') / 1048576")" MiB "HNSW size" \
        "$(q -c "SELECT pg_relation_size('vdocs_v') / 1048576")"
fi

echo "== (f) LIMIT 10 after $((ROWS / 10)) more rows were inserted"
q -c "SELECT setseed(0.9)" -c "INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, $ROWS / 10)" \
    -c "ANALYZE docs"
knn_timed grown 10
PGOPTIONS=$seqopts knn_timed "grown seq" 10
against "kNN LIMIT 10 after +10 %" grown "seq scan + top-N sort" "grown seq"
result "recall of LIMIT 10 after +10 % (same distances)" "$(recall 10 grown 'grown seq')" % - ""

echo "== (f') the same once the background merges are done"
# settled: the metapage names no merge under way and the runs stay the same for 6 s
runs=$(run_rows docs_fp) t_wait=$SECONDS stable=0
while ((stable < 3 && SECONDS - t_wait < 1800)); do
    sleep 2
    now=$(run_rows docs_fp)
    if [[ $now == "$runs" && $now != *merging ]]; then
        stable=$((stable + 1))
    else
        stable=0 runs=$now
    fi
done
((stable == 3)) || { echo "knn.sh: the merges did not settle in 30 min: $runs" >&2; exit 1; }
echo "   settled $((SECONDS - t_wait)) s after (f)'s timing ended; runs and pending rows: $runs"
knn_timed settled 10
against "kNN LIMIT 10 after +10 %, merged" settled "seq scan + top-N sort" "grown seq"
result "recall of LIMIT 10 after +10 %, merged (same distances)" "$(recall 10 settled 'grown seq')" % - ""

echo
echo "== summary ($ROWS rows, $QUERIES queries; $((SECONDS - T0)) s in all)"
print_summary
