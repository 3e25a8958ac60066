#!/usr/bin/env bash
# neardup on Citus (scripts/citus.sh: a coordinator and 2 workers on this machine, ports
# 5474-5476, SHARD_COUNT shards, default 32) against one server (the coordinator's local
# docs_ref, same rows, same hamming index), in one run, on ROWS fingerprints (default 1 M):
# uniform random, plus planted clusters (0.5 % of rows are centres with 4 near copies 1-4
# bits away). The workers share the machine's cores with the coordinator: this measures
# the overhead of distribution, not a speed-up.
#   (a) one lookup `hamming(fp, $1) <= 3` against a btree equality lookup of the same shape
#       (`fp::bigint = $1`, an expression index, also fanned out to every shard), pgbench,
#       1 client, prepared, SECS s each, with Citus's default connection cache (1 a worker)
#       and with citus.max_cached_conns_per_worker = 4; the same two on docs_ref;
#   (b) batch check of NEW (10 k) new documents (half near copies of corpus rows) through a
#       CTE of a local table: distributed against docs_ref; the answers must be equal;
#   (c) all pairs at k = 3: the key table fp_keys distributed by key (its fill, Citus's
#       repartitioned INSERT ... SELECT, timed apart) joined with itself (co-located),
#       against hamming_pairs on docs_ref and on the distributed docs (rows through the
#       coordinator), and hamming_pairs_distributed (each shard cut into parts on its
#       worker, each part paired where it lands), with the parts sized for the bench's
#       maintenance_work_mem and for 16 MB; the pair sets must be equal;
#   (d) clusters: neardup_clusters on docs against docs_ref, and neardup_components of
#       hamming_pairs_distributed (must be equal);
#   (e) ingestion: INSERT ... SELECT simhash(body) of PAGES (100 k) texts of 200 words,
#       co-located distributed tables (pushed down to the workers) against one server.
#   (f) MinHash LSH pairs at Jaccard 0.8 of the PAGES texts and a near copy of every fifth:
#       minhash_pairs_distributed against minhash_pairs on one server and on the distributed
#       table (rows through the coordinator); the pairs must be equal.
# Timings are medians of REPS runs of the server's execution time (EXPLAIN ANALYZE on the
# coordinator), jit off, maintenance_work_mem 1GB on every node (hamming_pairs of 3 M rows
# on one server needs 96 MB). Usage: bench/citus.sh [ROWS=1000000] [NEW=10000] [PAGES=100000]
#   [REPS=3] [SECS=5] [SHARD_COUNT=32] [SKIP_INSTALL=1]
# (it takes /tmp/neardup-pgrx.lock itself around its install: not under flock of that lock,
# which would wait on itself; SKIP_INSTALL=1 benchmarks the build already installed)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/lib.sh"
source "$ROOT/scripts/citus.sh"
ROWS=${ROWS:-1000000} NEW=${NEW:-10000} PAGES=${PAGES:-100000} REPS=${REPS:-3} SECS=${SECS:-5}
SHARD_COUNT=${SHARD_COUNT:-32}
DIR=/tmp/citus-bench PORT=5474
q() { citus_psql 0 "$@"; }

[[ -n ${SKIP_INSTALL:-} ]] || flock /tmp/neardup-pgrx.lock "$ROOT/scripts/install.sh" >/dev/null
citus_build "$PG_CONFIG"
trap 'citus_stop "$DIR"' EXIT
citus_start "$PG_CONFIG" "$DIR" $PORT 2 "jit = off" "autovacuum = off" "citus.shard_count = $SHARD_COUNT" \
    "shared_buffers = 256MB" "log_min_messages = warning" "maintenance_work_mem = '1GB'"
q -f "$ROOT/tests/integration/fingerprint_functions.sql" >/dev/null
t=$SECONDS
q >/dev/null <<SQL
SELECT setseed(0.39);
CREATE TABLE gen (n serial, fp bigint);
INSERT INTO gen (fp) SELECT rnd64() FROM generate_series(1, ($ROWS * 0.98)::int);
INSERT INTO gen (fp) SELECT flip(c.fp, 1 + (i % 4)) FROM (SELECT fp FROM gen ORDER BY n LIMIT ($ROWS * 0.005)::int) c,
    generate_series(1, 4) i;
CREATE TABLE docs_ref (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO docs_ref SELECT n, fp::simhash64 FROM gen;
CREATE INDEX docs_ref_fp ON docs_ref USING hamming (fp);
CREATE INDEX docs_ref_fp_bt ON docs_ref ((fp::bigint));
CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('docs', 'id');
INSERT INTO docs SELECT * FROM docs_ref;
CREATE INDEX docs_fp ON docs USING hamming (fp);
CREATE INDEX docs_fp_bt ON docs ((fp::bigint));
VACUUM ANALYZE docs_ref;
VACUUM ANALYZE docs;
CREATE TABLE new_docs (id bigint, fp simhash64);
INSERT INTO new_docs SELECT 10000000 + i, CASE WHEN i % 2 = 0 THEN flip((SELECT fp::bigint FROM docs_ref WHERE id = 1 + (i * 7919) % $ROWS), i % 4)::simhash64
    ELSE rnd64()::simhash64 END FROM generate_series(1, $NEW) i;
ANALYZE new_docs;
SQL
rows=$(q -c "SELECT count(*) FROM docs")
echo "citus bench: $rows fingerprints on a coordinator and 2 workers ($SHARD_COUNT shards), loaded in $((SECONDS - t)) s"

# --- (a) lookups
pgb() { # FILE [PGOPTIONS]: average latency in ms
    sudo -u postgres env PGOPTIONS="${2:-}" "$CITUS_PG_BIN/pgbench" -n -M prepared -T "$SECS" -h /tmp -p $PORT -f "$1" postgres 2>&1 |
        sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}
for t in docs docs_ref; do
    printf '\\set fp random(-4000000000000000000, 4000000000000000000)\nSELECT id FROM %s WHERE hamming(fp, :fp::bigint::simhash64) <= 3;\n' $t >/tmp/citus-bench-ham-$t.sql
    printf '\\set fp random(-4000000000000000000, 4000000000000000000)\nSELECT id FROM %s WHERE fp::bigint = :fp::bigint;\n' $t >/tmp/citus-bench-bt-$t.sql
done
chmod 644 /tmp/citus-bench-*.sql
ham=$(pgb /tmp/citus-bench-ham-docs.sql) bt=$(pgb /tmp/citus-bench-bt-docs.sql)
ham4=$(pgb /tmp/citus-bench-ham-docs.sql "-c citus.max_cached_conns_per_worker=4") bt4=$(pgb /tmp/citus-bench-bt-docs.sql "-c citus.max_cached_conns_per_worker=4")
hamr=$(pgb /tmp/citus-bench-ham-docs_ref.sql) btr=$(pgb /tmp/citus-bench-bt-docs_ref.sql)
echo "(a) lookup, ms (pgbench, prepared): Citus hamming $ham, btree $bt (ratio $(awk "BEGIN {printf \"%.2f\", $ham / $bt}"));" \
    "4 cached connections a worker: hamming $ham4, btree $bt4 (ratio $(awk "BEGIN {printf \"%.2f\", $ham4 / $bt4}")); one server: hamming $hamr, btree $btr"

# --- (b) batch check of NEW new documents
batch_sql() { echo "WITH b AS MATERIALIZED (SELECT hamming_batch(array_agg(id), array_agg(fp), 3) AS batch FROM new_docs)
    SELECT k AS new_id, d.id FROM (SELECT id, fp FROM $1 WHERE fp <@@ (SELECT batch FROM b)) d,
         unnest(hamming_batch_keys((SELECT batch FROM b), d.fp)) k"; }
got=$(q -c "SELECT md5(string_agg(new_id || ':' || id, ',' ORDER BY new_id, id)), count(*) FROM ($(batch_sql docs)) s")
want=$(q -c "SELECT md5(string_agg(new_id || ':' || id, ',' ORDER BY new_id, id)), count(*) FROM ($(batch_sql docs_ref)) s")
[[ $got == "$want" ]] || { echo "(b) batch answers differ: $got, one server $want" >&2; exit 1; }
b_citus=$(median_ms "$REPS" "$(batch_sql docs)") b_one=$(median_ms "$REPS" "$(batch_sql docs_ref)")
echo "(b) batch check of $NEW new documents (${want#*|} matches, equal): Citus $b_citus ms, one server $b_one ms"

# --- (c) all pairs
blocks=$(q -c "SELECT hamming_join_blocks($rows, 3)")
start=$(date +%s%N)
q >/dev/null <<SQL
CREATE TABLE fp_keys (key bigint, id bigint, fp simhash64);
SELECT create_distributed_table('fp_keys', 'key');
INSERT INTO fp_keys SELECT k, id, fp FROM docs, unnest(hamming_join_keys(fp, 3, $blocks)) k;
SQL
fill=$((($(date +%s%N) - start) / 1000000))
start=$(date +%s%N)
q -c "ANALYZE fp_keys" >/dev/null
analyze=$((($(date +%s%N) - start) / 1000000))
keyrows=$(q -c "SELECT count(*) FROM fp_keys")
pairs_sql="SELECT a.id AS a, b.id AS b FROM fp_keys a JOIN fp_keys b ON a.key = b.key
           WHERE a.id < b.id AND hamming_join_key(a.fp, b.fp, 3, $blocks) = a.key"
out=$(q -c "SELECT (SELECT count(*) FROM (($pairs_sql) EXCEPT ALL (SELECT a, b FROM hamming_pairs('docs_ref', 'id', 'fp', 3))) d),
    (SELECT count(*) FROM ((SELECT a, b FROM hamming_pairs('docs_ref', 'id', 'fp', 3)) EXCEPT ALL ($pairs_sql)) d),
    (SELECT count(*) FROM hamming_pairs('docs_ref', 'id', 'fp', 3))")
IFS='|' read -r extra missing npairs <<<"$out"
[[ $extra == 0 && $missing == 0 ]] || { echo "(c) pairs differ: $extra extra, $missing missing" >&2; exit 1; }
p_keys=$(median_ms "$REPS" "SELECT count(*) FROM ($pairs_sql) s")
p_one=$(median_ms "$REPS" "SELECT count(*) FROM hamming_pairs('docs_ref', 'id', 'fp', 3)")
same=$(q -c "SELECT (SELECT md5(string_agg(a || ':' || b || ':' || distance, ',' ORDER BY a, b)) FROM hamming_pairs_distributed('docs', 'id', 'fp', 3))
    = (SELECT md5(string_agg(a || ':' || b || ':' || distance, ',' ORDER BY a, b)) FROM hamming_pairs('docs_ref', 'id', 'fp', 3))")
[[ $same == t ]] || { echo "(c) hamming_pairs_distributed differs from hamming_pairs" >&2; exit 1; }
p_fn=$(median_ms "$REPS" "SELECT count(*) FROM hamming_pairs_distributed('docs', 'id', 'fp', 3)")
p_fn16=$(PGOPTIONS="-c maintenance_work_mem=16MB" median_ms "$REPS" "SELECT count(*) FROM hamming_pairs_distributed('docs', 'id', 'fp', 3)")
# its phases, from its DEBUG messages: cutting and moving the parts, pairing them
read -r p_cut p_pair < <(q -c "SET client_min_messages = debug1" -c "SELECT count(*) FROM hamming_pairs_distributed('docs', 'id', 'fp', 3)" 2>&1 |
    sed -n 's/^DEBUG:  hamming_pairs_distributed: .* in \([0-9]*\) ms$/\1/p' | paste -sd' ')
p_pull=$(q -c "SET maintenance_work_mem = '1GB'" -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT count(*) FROM hamming_pairs('docs', 'id', 'fp', 3)" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Execution Time"])')
echo "(c) all pairs within 3 bits ($npairs, equal): key self-join $p_keys ms ($blocks blocks, $keyrows key rows filled in $fill ms, ANALYZE $analyze ms);" \
    "hamming_pairs one server $p_one ms (ratio $(awk "BEGIN {printf \"%.2f\", $p_keys / $p_one}")); hamming_pairs on the distributed table $p_pull ms;" \
    "hamming_pairs_distributed (parts cut and paired on the workers) $p_fn ms (ratio $(awk "BEGIN {printf \"%.2f\", $p_fn / $p_one}")), parts sized for 16 MB $p_fn16 ms (ratio $(awk "BEGIN {printf \"%.2f\", $p_fn16 / $p_one}"));" \
    "its phases: cut and moved $p_cut ms, paired $p_pair ms"

# --- (d) clusters
same=$(q -c "SET maintenance_work_mem = '1GB'" -c "SELECT (SELECT md5(string_agg(id || ':' || cluster_id, ',' ORDER BY id)) FROM neardup_clusters('docs', 'id', 'fp', 3))
    = (SELECT md5(string_agg(id || ':' || cluster_id, ',' ORDER BY id)) FROM neardup_clusters('docs_ref', 'id', 'fp', 3))")
[[ $same == t ]] || { echo "(d) clusters differ" >&2; exit 1; }
c_dist=$(median_ms "$REPS" "SELECT count(*) FROM neardup_clusters('docs', 'id', 'fp', 3)")
c_one=$(median_ms "$REPS" "SELECT count(*) FROM neardup_clusters('docs_ref', 'id', 'fp', 3)")
c_keys=$(median_ms "$REPS" "SELECT count(*) FROM neardup_components(\$q\$$pairs_sql\$q\$)")
components="SELECT md5(string_agg(node || ':' || component, ',' ORDER BY node)) FROM neardup_components"
same=$(q -c "SELECT ($components('SELECT a, b FROM hamming_pairs_distributed(''docs'', ''id'', ''fp'', 3)'))
    = ($components('SELECT a, b FROM hamming_pairs(''docs_ref'', ''id'', ''fp'', 3)'))")
[[ $same == t ]] || { echo "(d) components of hamming_pairs_distributed differ" >&2; exit 1; }
c_parts=$(median_ms "$REPS" "SELECT count(*) FROM neardup_components('SELECT a, b FROM hamming_pairs_distributed(''docs'', ''id'', ''fp'', 3)')")
echo "(d) clusters (equal): neardup_clusters on the distributed table $c_dist ms, on one server $c_one ms; neardup_components of the key self-join $c_keys ms, of hamming_pairs_distributed $c_parts ms (ratio $(awk "BEGIN {printf \"%.2f\", $c_parts / $c_one}"))"

# --- (e) ingestion
q >/dev/null <<SQL
SELECT setseed(0.2);
CREATE TABLE pages_ref (id bigint PRIMARY KEY, body text);
INSERT INTO pages_ref SELECT i, (SELECT string_agg('w' || floor(random() * 20000)::int, ' ') FROM generate_series(1, 200) w WHERE i > 0)
    FROM generate_series(1, $PAGES) i;
CREATE TABLE pages (id bigint PRIMARY KEY, body text);
SELECT create_distributed_table('pages', 'id');
INSERT INTO pages SELECT * FROM pages_ref;
CREATE TABLE sig (id bigint PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('sig', 'id', colocate_with => 'pages');
CREATE INDEX ON sig USING hamming (fp);
CREATE TABLE sig_ref (id bigint PRIMARY KEY, fp simhash64);
CREATE INDEX ON sig_ref USING hamming (fp);
VACUUM ANALYZE pages_ref;
VACUUM ANALYZE pages;
SQL
ingest() { # TABLE SOURCE: median wall ms of TRUNCATE-free inserts
    for _ in $(seq "$REPS"); do
        q -c "TRUNCATE $1" >/dev/null
        local s
        s=$(date +%s%N)
        q -c "INSERT INTO $1 SELECT id, simhash(body) FROM $2" >/dev/null
        echo $((($(date +%s%N) - s) / 1000000))
    done | median
}
i_dist=$(ingest sig pages) i_one=$(ingest sig_ref pages_ref)
echo "(e) INSERT ... SELECT simhash(body) of $PAGES texts of 200 words into an indexed table: Citus $i_dist ms" \
    "($((PAGES * 1000 / i_dist)) rows/s), one server $i_one ms ($((PAGES * 1000 / i_one)) rows/s)"

# --- (f) MinHash LSH pairs at Jaccard 0.8: the PAGES texts and a copy of every fifth with
# its last two words changed (the pairs), sketched (84 minvalues, 8-word shingles)
q >/dev/null <<SQL
CREATE TABLE sk_ref (id bigint PRIMARY KEY, mh minhash_sketch);
INSERT INTO sk_ref SELECT id, minhash(body) FROM pages_ref;
INSERT INTO sk_ref SELECT 10000000 + id, minhash(regexp_replace(body, ' w[0-9]+ w[0-9]+$', ' x y')) FROM pages_ref WHERE id % 5 = 0;
CREATE TABLE sk (id bigint PRIMARY KEY, mh minhash_sketch);
SELECT create_distributed_table('sk', 'id');
INSERT INTO sk SELECT * FROM sk_ref;
VACUUM ANALYZE sk_ref;
VACUUM ANALYZE sk;
SQL
lsh_pairs() { echo "SELECT md5(string_agg(a || ':' || b || ':' || jaccard, ',' ORDER BY a, b)) || ' ' || count(*) FROM $1"; }
want=$(q -c "$(lsh_pairs "minhash_pairs('sk_ref', 'id', 'mh', 0.8)")")
[[ $(q -c "$(lsh_pairs "minhash_pairs_distributed('sk', 'id', 'mh', 0.8)")") == "$want" ]] ||
    { echo "(f) minhash_pairs_distributed differs from minhash_pairs" >&2; exit 1; }
m_fn=$(median_ms "$REPS" "SELECT count(*) FROM minhash_pairs_distributed('sk', 'id', 'mh', 0.8)")
m_one=$(median_ms "$REPS" "SELECT count(*) FROM minhash_pairs('sk_ref', 'id', 'mh', 0.8)")
m_pull=$(median_ms "$REPS" "SELECT count(*) FROM minhash_pairs('sk', 'id', 'mh', 0.8)")
echo "(f) MinHash LSH pairs at 0.8 of $(q -c "SELECT count(*) FROM sk_ref") sketches (${want#* }, equal): minhash_pairs_distributed $m_fn ms," \
    "minhash_pairs one server $m_one ms (ratio $(awk "BEGIN {printf \"%.2f\", $m_fn / $m_one}")); minhash_pairs on the distributed table $m_pull ms"
