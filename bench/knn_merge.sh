#!/usr/bin/env bash
# Exact nearest codes while a merge table by table is half done, against the same index
# with every run read whole, in one run. ROWS (default 1 M) uniformly random fingerprints
# with a `hamming` index; then ROWS / 4 more rows (committed, in the pending list), and a
# merge of the two runs table by table stopped between two of its trees with
# neardup.error_at (as a cancel or a crash leaves it, and as a background worker's merge
# looks to scans for as long as it runs). QUERIES (default 50) queries of each kind, as in
# bench/knn.sh: "far" (8-15 bits flipped from a row: no row within max_distance) and
# "near" (0-2 bits). Measures ORDER BY fp <~> q LIMIT 10, one statement per query (in a
# session that ran each once untimed: bench/lib.sh knn_timed), p50 and
# p99 in ms, every answer's distances checked equal to a sequential scan's:
#   (a) after the first tree of the merge (the inputs hold most of each table) and after
#       half of its trees, read by rings (the default neardup.ring_budget: the runs of the
#       merge read as one), against neardup.ring_budget = 0 (every run read whole: what
#       the runs of a merge table by table cost at any budget before they were read as one);
#   (b) the same once the merge is done (one run), for reference.
# The cluster runs no merge workers (neardup.merge_workers = 0): the merge moves only when
# this script moves it. Usage: bench/knn_merge.sh     ROWS=200000 QUERIES=20 bench/knn_merge.sh
#                 SKIP_INSTALL=1 bench/knn_merge.sh   (benchmarks the build already installed)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-knn-merge
ROWS=${ROWS:-1000000}
QUERIES=${QUERIES:-50}
T0=$SECONDS

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '1GB'" "maintenance_work_mem = '512MB'" "autovacuum = off" \
    "max_parallel_workers_per_gather = 0" "max_wal_size = '4GB'" "neardup.merge_workers = 0"
trap 'cluster_stop "$DIR"' EXIT
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }

echo "== $ROWS uniformly random fingerprints, $((ROWS / 4)) more pending, $QUERIES queries of each kind"
q -c "CREATE EXTENSION neardup" -f "$ROOT/tests/integration/fingerprint_functions.sql"
q >/dev/null <<SQL
SELECT setseed(0.42);
CREATE TABLE docs (id bigserial, fp simhash64);
INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, $ROWS);
CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = $((ROWS / 2)));
INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, $ROWS / 4);
ANALYZE docs; -- not VACUUM: its cleanup would merge the pending rows
-- step(): one more insert past pending_limit (1 from now on), whose merge goes on with the
-- merge table by table; true if it was stopped after its next tree, false if the merge
-- ended (it then went on with no merge left to stop). The row is rolled back either way.
CREATE FUNCTION step() RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM set_config('neardup.error_at', 'merge_table', true);
    BEGIN
        INSERT INTO docs (fp) VALUES ('0000000000000000');
        RAISE EXCEPTION 'not stopped';
    EXCEPTION
        WHEN query_canceled THEN RETURN true;
        WHEN raise_exception THEN RETURN false;
    END;
END \$\$;
SQL
knn_queries "$QUERIES"
PGOPTIONS="-c enable_indexscan=off -c enable_bitmapscan=off" knn_timed seq 10
q -c "ALTER INDEX docs_fp SET (pending_limit = 1)"

# stat MODE KIND FUNC: p50 or p99 of the per-query times, in ms.
stat() {
    local p=0.5
    [[ $3 == p99 ]] && p=0.99
    q -c "SELECT round(percentile_cont($p) WITHIN GROUP (ORDER BY a.ms)::numeric, 2)
          FROM answers a JOIN queries USING (qid) WHERE a.mode = '$1' AND kind = '$2'"
}

# measure LABEL MODE: LIMIT 10 by rings (mode MODE) and with every run read whole (MODE
# whole), every answer's distances checked against the seq scan's, p50 and p99 of each.
measure() {
    knn_timed "$2" 10
    PGOPTIONS="-c neardup.ring_budget=0" knn_timed "$2 whole" 10
    local wrong
    wrong=$(q -c "SELECT count(*) FROM answers i JOIN answers s ON s.qid = i.qid AND s.mode = 'seq'
                  WHERE i.mode IN ('$2', '$2 whole') AND i.dists IS DISTINCT FROM s.dists")
    [[ $wrong == 0 ]] || { echo "   MISMATCH: $wrong answers differ from the seq scan's"; exit 1; }
    for kind in far near; do
        for s in p50 p99; do
            result "$1, $kind queries, $s" "$(stat "$2" $kind $s)" ms "every run read whole, $s" "$(stat "$2 whole" $kind $s)"
        done
    done
}

echo "== (a) LIMIT 10 with a merge table by table stopped after its first tree"
[[ $(q -c "SELECT step()") == t ]] || { echo "   the inserts did not merge table by table"; exit 1; }
measure "kNN LIMIT 10, merge after 1 tree" first
echo "== (a) the same after half of its trees"
trees=1
while [[ $(q -c "SELECT step()") == t ]]; do
    trees=$((trees + 1))
    ((trees < 8)) || break
done
((trees == 8)) || { echo "   the merge ended after $trees trees"; exit 1; }
measure "kNN LIMIT 10, merge after 8 trees" half
echo "== (b) once the merge is done"
while [[ $(q -c "SELECT step()") == t ]]; do trees=$((trees + 1)); done
echo "   the merge wrote $trees trees"
measure "kNN LIMIT 10, merged" merged

echo
echo "== summary ($ROWS + $((ROWS / 4)) rows, $QUERIES queries; $((SECONDS - T0)) s in all)"
print_summary
