#!/usr/bin/env bash
# statement_timeout = 1s stops every loop whose length grows with the data within 2 s:
# batch pairs, clusters, components, CREATE INDEX, index scans (a wide batch's too), VACUUM, the index checker
# and the text pipeline, each on an input that takes far longer (a statement that ends
# before its timeout fails the check, so the inputs are proven large enough).
set -euo pipefail
DB=cancellation
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
psql -qX -d $DB -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION neardup;
SELECT setseed(0.7);
CREATE TABLE rand AS SELECT i AS id, (random() * 2^63)::bigint # ((random() * 2^62)::bigint << 1) AS fp
    FROM generate_series(1, 300000) i;
-- no autovacuum: it could clean up the deletes below before the VACUUM that must be cancelled
CREATE TABLE big WITH (autovacuum_enabled = off) AS SELECT i AS id, ((random() * 2^63)::bigint # ((random() * 2^62)::bigint << 1))::simhash64 AS fp
    FROM generate_series(1, 3000000) i;
CREATE INDEX big_fp ON big USING hamming (fp);
DELETE FROM big WHERE id % 3 = 0;
CREATE TABLE wide AS SELECT i AS id, ('x' || md5(i::text) || md5((-i)::text))::bit(256)::hash256 AS code
    FROM generate_series(1, 200000) i;
CREATE INDEX wide_code ON wide USING hamming (code);
CREATE TABLE texts AS SELECT repeat('lorem ipsum dolor sit amet ', 12000000) AS t;
SQL

failed=0
expect_cancelled() { # NAME SETTINGS SQL
    local name=$1 settings=$2 sql=$3 start end out status=0
    start=$(date +%s.%N)
    out=$(psql -qX -d $DB -c "SET statement_timeout = '1s'; $settings" -c "$sql" 2>&1) || status=$?
    end=$(date +%s.%N)
    local elapsed
    elapsed=$(python3 -c "print(f'{$end - $start:.2f}')")
    if [[ $status == 0 ]] || ! grep -q "canceling statement due to statement timeout" <<<"$out"; then
        echo "FAIL $name: not cancelled (finished in ${elapsed}s): $out"
        failed=1
    elif python3 -c "import sys; sys.exit(0 if $elapsed < 2.0 else 1)"; then
        echo "ok   $name: cancelled after ${elapsed}s"
    else
        echo "FAIL $name: cancelled only after ${elapsed}s"
        failed=1
    fi
}

expect_cancelled "hamming_pairs" "" "SELECT count(*) FROM hamming_pairs('rand', 'id', 'fp', 15)"
expect_cancelled "neardup_clusters" "" "SELECT count(*) FROM neardup_clusters('rand', 'id', 'fp', 15)"
expect_cancelled "neardup_components" "" \
    "SELECT count(*) FROM neardup_components('SELECT a, b FROM hamming_pairs(''rand'', ''id'', ''fp'', 14)')"
expect_cancelled "create index" "" "CREATE INDEX ON big USING hamming (fp) WITH (max_distance = 6)"
expect_cancelled "index scans" "SET enable_seqscan = off" \
    "SELECT count(*) FROM (SELECT fp FROM big LIMIT 200) q, big b WHERE b.fp <@ hamming_ball(q.fp, 40)"
expect_cancelled "nearest rows" "SET enable_seqscan = off" \
    "SELECT count(*) FROM (SELECT fp FROM big LIMIT 200) q, LATERAL (SELECT id FROM big b ORDER BY b.fp <~> q.fp OFFSET 100000 LIMIT 1) n"
# 200,000 centers at a radius the substring tables cannot cut: every row is tested
# against every center (a page of rows at a time)
expect_cancelled "wide batch" "SET enable_seqscan = off" \
    "WITH b AS MATERIALIZED (SELECT hamming_batch(array_agg(id::bigint), array_agg(code), 100) AS batch FROM wide)
     SELECT count(*) FROM b, wide WHERE code <@@ b.batch"
expect_cancelled "index check" "SET maintenance_work_mem = '1GB'" "SELECT hamming_index_check('big_fp') FROM generate_series(1, 10)"
expect_cancelled "vacuum" "SET vacuum_cost_delay = 0" "VACUUM big"
expect_cancelled "text pipeline" "" "SELECT minhash(t || 'x') FROM texts"
exit $failed
