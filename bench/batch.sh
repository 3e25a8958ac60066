#!/usr/bin/env bash
# Batch checks at scale (issue 24): a `hamming_batch` of BALLS balls at radius 3 against a
# table of ROWS fingerprints with a `hamming` index that has seen churn (runs and pending
# rows), in one run, three ways that must return the same rows:
#   index:   SELECT ... WHERE fp <@@ batch            (a bitmap scan probing every center)
#   filter:  the same with the index off              (a seq scan testing each row)
#   join:    the nested-loop join of the probes with the table on `fp <@ hamming_ball(p, 3)`
#            (the baseline: one index probe per ball)
# for BALLS in 10 k, 100 k and 1 M, with the default work_mem (4 MB). Prints the times and
# the ratios to the join; fails only if an answer differs.
# Usage: bench/batch.sh    ROWS=570000 BALL_COUNTS="10000 100000" bench/batch.sh
#        SKIP_INSTALL=1 bench/batch.sh   (the build already installed)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-batch
ROWS=${ROWS:-1000000}
BALL_COUNTS=${BALL_COUNTS:-10000 100000 1000000}

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '1GB'" "autovacuum = off" "jit = off" \
    "max_parallel_workers_per_gather = 0" "max_wal_size = '8GB'"
trap 'cluster_stop "$DIR"' EXIT
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }

q >/dev/null -c "CREATE EXTENSION neardup" -f "$ROOT/tests/integration/fingerprint_functions.sql"
q >/dev/null <<SQL
SELECT setseed(0.31);
CREATE TABLE t (id bigint, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp) WITH (pending_limit = 8192);
-- Churn: loaded in batches, a tenth deleted and VACUUMed, loaded again, so the index is
-- runs and pending rows as a live one is.
INSERT INTO t SELECT g, rnd64()::simhash64 FROM generate_series(1, $ROWS / 2) g;
DELETE FROM t WHERE id % 10 = 0;
VACUUM t;
INSERT INTO t SELECT g, rnd64()::simhash64 FROM generate_series($ROWS / 2 + 1, $ROWS) g;
ANALYZE t;
SQL
echo "table: $(q -c "SELECT count(*) FROM t") rows, index $(q -c "SELECT pg_size_pretty(pg_relation_size('t_fp'))")"

printf '%-9s %10s %10s %10s %8s %8s %9s\n' balls "index ms" "filter ms" "join ms" "index/j" "filter/j" matches
for balls in $BALL_COUNTS; do
    # Probes: half near rows of the table (1 bit off), half random.
    q >/dev/null -c "DROP TABLE IF EXISTS probes" -c "CREATE TABLE probes AS
        SELECT row_number() OVER () AS pid, fp FROM (
            (SELECT flip(fp::bigint, 1)::simhash64 AS fp FROM t ORDER BY random() LIMIT $balls / 2)
            UNION ALL (SELECT rnd64()::simhash64 FROM generate_series(1, $balls - $balls / 2))) s" \
        -c "ANALYZE probes"
    batch="(SELECT hamming_batch(array_agg(pid), array_agg(fp), 3) FROM probes)"
    by_index="SELECT count(*), sum(id) FROM t WHERE fp <@@ $batch"
    by_join="SELECT count(DISTINCT t.id), sum(DISTINCT t.id) FROM probes p JOIN t ON t.fp <@ hamming_ball(p.fp, 3)"
    idx_answer=$(PGOPTIONS="-c enable_seqscan=off" q -c "$by_index")
    flt_answer=$(PGOPTIONS="-c enable_indexscan=off -c enable_bitmapscan=off" q -c "$by_index")
    join_answer=$(PGOPTIONS="-c enable_seqscan=off -c enable_hashjoin=off -c enable_mergejoin=off" q -c "$by_join")
    [[ $idx_answer == "$flt_answer" && $idx_answer == "$join_answer" ]] ||
        { echo "MISMATCH at $balls balls: index $idx_answer, filter $flt_answer, join $join_answer" >&2; exit 1; }
    idx_ms=$(PGOPTIONS="-c enable_seqscan=off" median_ms 3 "$by_index")
    flt_ms=$(PGOPTIONS="-c enable_indexscan=off -c enable_bitmapscan=off" median_ms 3 "$by_index")
    join_ms=$(PGOPTIONS="-c enable_seqscan=off -c enable_hashjoin=off -c enable_mergejoin=off" median_ms 3 "$by_join")
    printf '%-9s %10.1f %10.1f %10.1f %8.2f %8.2f %9s\n' "$balls" "$idx_ms" "$flt_ms" "$join_ms" \
        "$(awk -v a="$idx_ms" -v b="$join_ms" 'BEGIN { print a / b }')" \
        "$(awk -v a="$flt_ms" -v b="$join_ms" 'BEGIN { print a / b }')" "${idx_answer%%|*}"
done
