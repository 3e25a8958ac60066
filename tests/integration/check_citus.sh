#!/usr/bin/env bash
# neardup on Citus (issue 39): scripts/citus.sh builds Citus for $PG_CONFIG's server (once;
# cached) and starts a coordinator and 2 workers (ports 5471-5473, sockets in /tmp), both
# extensions created on every node. The same fingerprints go into tables distributed by id
# and into plain tables on the coordinator (the single-server reference):
# (a) the extension is on every node at the coordinator's version; CREATE INDEX ... USING
#     hamming on a distributed table is created on every shard (simhash64, bigint, hash256).
# (b) ingestion: INSERT ... SELECT simhash(body) from a co-located distributed table runs on
#     the workers (pushed down), and its signatures equal simhash() on the coordinator.
# (c) for 300+ query fingerprints at radii 0..4, `hamming(fp, q) <= k`, hamming_within and
#     <@ hamming_ball (constants and PL/pgSQL parameters) on the distributed table equal the
#     reference's id sets; EXPLAIN of every shard's task shows its hamming index, with the
#     ball once in its index condition (the coordinator leaves Citus tables to the workers).
# (d) nearest: `ORDER BY fp <~> q LIMIT 5` gives the reference's distances, each id at its
#     true distance; every task's plan is an index scan ordered by <~> under a Limit.
# (e) batches: `fp <@@ batch` of every query at radii 0..5 equals the reference's
#     (query, id) pairs, the batch as a literal and as a CTE of a local table.
# (f) hash256: lookups at radii 0..40 and nearest codes equal the reference's.
# (g) all pairs within 3 bits: the pigeonhole keys (hamming_join_keys) in a table
#     distributed by key, joined with itself on the key (a co-located join Citus pushes
#     down whole), equal hamming_pairs on the reference, also with maintenance_work_mem
#     too small for hamming_pairs on one server (1 MB); their components and
#     neardup_clusters on the distributed table equal one server's. The natural self-join
#     is refused by Citus (printed), hamming_pairs on the distributed table reads every row
#     through the coordinator (past its maintenance_work_mem: ERROR 53200 with a HINT
#     naming hamming_pairs_distributed; neardup_clusters' names neardup_components of it),
#     cluster tracking is refused (no triggers on distributed tables).
#     hamming_pairs_distributed (each shard cut into parts on its worker, each part paired
#     where it lands) equals hamming_pairs on the reference in 1 MB of
#     maintenance_work_mem, inside a transaction, and leaves no table behind; so do copies
#     distributed by a text column (the same path) and by a date column (join keys in a key
#     table, the path for types whose values it does not generate); on a plain table it is
#     hamming_pairs; wide codes and bad arguments are refused.
# (h) MinHash LSH: band keys (from lsh_bands) in a table distributed by key, a co-located
#     self-join verified by jaccard, equal to minhash_pairs on one server; minhash_pairs on
#     the distributed table past 1 MB hints at that recipe.
# Skipped with a loud message when no Citus source is reachable (no tarball in $CITUS_SRC,
# no network). Own servers under /tmp/citus-check (the extension must be installed).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/citus.sh"
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
DIR=/tmp/citus-check PORT=5471
T0=$SECONDS

fail() { echo "check_citus: $*" >&2; exit 1; }
q() { citus_psql 0 "$@"; }

version=$(citus_version "$PG_CONFIG")
if [[ ! -f $(citus_source_dir)/citus-$version.tar.gz ]] && ! curl -fsI --max-time 10 https://github.com >/dev/null 2>&1 &&
    [[ ! -f $CITUS_CACHE/$version-pg$(citus_major "$PG_CONFIG")/built ]]; then
    echo "check_citus: SKIPPED: no Citus source (no $(citus_source_dir)/citus-$version.tar.gz, GitHub unreachable)" >&2
    exit 0
fi
citus_build "$PG_CONFIG" | sed 's/^/check_citus: /'
echo "check_citus: Citus ready ($((SECONDS - T0)) s)"
trap 'citus_stop "$DIR"' EXIT
citus_start "$PG_CONFIG" "$DIR" $PORT 2 "log_min_messages = warning" "autovacuum = off" "citus.shard_count = 8"
shards=8

# --- (a) the extension everywhere, at one version
coord_version=$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'neardup'")
workers=$(q -c "SELECT string_agg(result, ',' ORDER BY nodeport) FROM run_command_on_workers(\$\$SELECT extversion FROM pg_extension WHERE extname = 'neardup'\$\$)")
[[ $workers == "$coord_version,$coord_version" ]] || fail "(a) neardup $coord_version on the coordinator, '$workers' on the workers"
[[ $(q -c "SELECT count(*) FROM pg_dist_object o JOIN pg_extension e ON o.classid = 'pg_extension'::regclass AND o.objid = e.oid WHERE e.extname = 'neardup'") == 1 ]] ||
    fail "(a) neardup is not a distributed object of Citus"

q -f "$ROOT/tests/integration/fingerprint_functions.sql" >/dev/null
q >/dev/null <<'SQL'
SELECT setseed(0.39);
-- the single-server reference, local to the coordinator
CREATE TABLE gen (n serial, fp bigint);
INSERT INTO gen (fp) SELECT rnd64() FROM generate_series(1, 30000);
INSERT INTO gen (fp) SELECT flip(c.fp, 1 + (i % 6)) FROM (SELECT fp FROM gen ORDER BY n LIMIT 300) c,
    generate_series(1, 12) i;
INSERT INTO gen (fp) SELECT fp FROM gen ORDER BY n DESC LIMIT 1500;
INSERT INTO gen (fp) SELECT (x'a5c3e1'::bigint << 40) | (rnd64() & ((1::bigint << 40) - 1)) FROM generate_series(1, 800);
CREATE TABLE queries (qn serial, q simhash64);
INSERT INTO queries (q) SELECT fp::simhash64 FROM gen WHERE n % 97 = 0;
INSERT INTO queries (q) SELECT flip(fp, 1 + n % 4)::simhash64 FROM gen WHERE n % 101 = 1;
INSERT INTO queries (q) SELECT rnd64()::simhash64 FROM generate_series(1, 30);
-- documents: 3000 texts of 40 words, and 600 near copies with one word changed
CREATE TABLE pages_ref (id bigint PRIMARY KEY, body text);
INSERT INTO pages_ref SELECT 1000000 + i,
    (SELECT string_agg('w' || floor(random() * 5000)::int, ' ') FROM generate_series(1, 40) w WHERE i > 0)
    FROM generate_series(1, 3000) i;
INSERT INTO pages_ref SELECT 2000000 + id, regexp_replace(body, '^w[0-9]+', 'changed') FROM pages_ref WHERE id % 5 = 0;

-- the distributed tables: documents and fingerprints, co-located on id
CREATE TABLE pages (id bigint PRIMARY KEY, body text);
SELECT create_distributed_table('pages', 'id');
CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('docs', 'id', colocate_with => 'pages');
CREATE INDEX docs_fp ON docs USING hamming (fp);
-- small pending lists, so that the ingestion below seals runs and the workers merge them
ALTER INDEX docs_fp SET (pending_limit = 500);
-- bigint codes (existing 64-bit perceptual hashes), int8_hamming_ops
CREATE TABLE codes (id bigint PRIMARY KEY, code bigint);
SELECT create_distributed_table('codes', 'id');
CREATE INDEX codes_code ON codes USING hamming (code int8_hamming_ops);
SQL
# (a) the index on every shard: each worker's shards of docs and codes each have one hamming index
for t in docs codes; do
    out=$(q -c "SELECT count(*), count(*) FILTER (WHERE result = '1') FROM run_command_on_shards('$t',
        \$\$SELECT count(*) FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
          WHERE x.indrelid = '%s'::regclass AND a.amname = 'hamming'\$\$)")
    [[ $out == "$shards|$shards" ]] || fail "(a) $t: shards with a hamming index: $out (of $shards)"
done
out=$(q -c "SELECT count(*) FILTER (WHERE result = '{pending_limit=500}') FROM run_command_on_shards('docs',
    \$\$SELECT c.reloptions FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
      WHERE x.indrelid = '%s'::regclass AND a.amname = 'hamming'\$\$)")
[[ $out == "$shards" ]] || fail "(a) ALTER INDEX docs_fp SET (pending_limit = 500) reached $out of $shards shards"
workers=$(q -c "SELECT string_agg(result, ',' ORDER BY nodeport) FROM run_command_on_workers(\$\$SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'neardup merge launcher'\$\$)")
[[ $workers == 1,1 ]] || fail "(a) neardup merge launchers on the workers: $workers"
placements=$(q -c "SELECT string_agg(n::text, ',' ORDER BY nodeport) FROM (SELECT nodeport, count(*) n FROM citus_shards WHERE table_name = 'docs'::regclass GROUP BY 1) s")
echo "check_citus: (a) neardup $coord_version on every node, a merge launcher on each worker; a hamming index on each of the $shards shards of docs and codes (placements per worker: $placements), ALTER INDEX ... SET on every shard ($((SECONDS - T0)) s)"

# --- (b) ingestion: signatures computed on the workers
q -c "INSERT INTO pages SELECT * FROM pages_ref" >/dev/null
plan=$(q -c "EXPLAIN (COSTS OFF) INSERT INTO docs SELECT id, simhash(body) FROM pages")
grep -q "pull to coordinator\|repartition" <<<"$plan" && fail "(b) INSERT ... SELECT simhash(body) is not pushed down: $plan"
grep -q "Task Count: $shards" <<<"$plan" || fail "(b) INSERT ... SELECT is not one task per shard: $plan"
q -c "INSERT INTO docs SELECT id, simhash(body) FROM pages" >/dev/null
got=$(q -c "SELECT md5(string_agg(id || ':' || fp, ',' ORDER BY id)) FROM docs")
want=$(q -c "SELECT md5(string_agg(id || ':' || simhash(body), ',' ORDER BY id)) FROM pages_ref")
[[ $got == "$want" ]] || fail "(b) the workers' signatures differ from the coordinator's"
near=$(q -c "SELECT count(*) FROM pages_ref a JOIN pages_ref b ON b.id = a.id + 2000000 WHERE hamming(simhash(a.body), simhash(b.body)) <= 4")
((near > 200)) || fail "(b) only $near of 600 near copies within 4 bits of their original"
# the fingerprints of gen (ids 1..n) go in from the coordinator
q -c "INSERT INTO docs SELECT n, fp::simhash64 FROM gen" -c "INSERT INTO codes SELECT n, fp FROM gen" >/dev/null
q >/dev/null <<'SQL'
CREATE TABLE docs_ref (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO docs_ref SELECT n, fp::simhash64 FROM gen;
INSERT INTO docs_ref SELECT id, simhash(body) FROM pages_ref;
CREATE INDEX docs_ref_fp ON docs_ref USING hamming (fp);
CREATE TABLE codes_ref (id bigint PRIMARY KEY, code bigint);
INSERT INTO codes_ref SELECT n, fp FROM gen;
CREATE INDEX codes_ref_code ON codes_ref USING hamming (code int8_hamming_ops);
ANALYZE docs_ref, codes_ref, queries;
SQL
q -c "ANALYZE docs" -c "ANALYZE codes" >/dev/null
rows=$(q -c "SELECT count(*) FROM docs")
ref_rows=$(q -c "SELECT count(*) FROM docs_ref")
[[ $rows == "$ref_rows" && $rows -gt 36000 ]] || fail "(b) docs holds $rows rows, docs_ref $ref_rows"
# the workers' merge workers merged the sealed runs: every shard's index checks whole
sleep 2
out=$(q -c "SELECT count(*) FILTER (WHERE success), sum(result::bigint) FILTER (WHERE success), string_agg(result, ' ') FILTER (WHERE NOT success)
    FROM run_command_on_shards('docs', \$\$SELECT hamming_index_check(x.indexrelid::regclass) FROM pg_index x WHERE x.indrelid = '%s'::regclass
                                         AND x.indexrelid::regclass::text LIKE 'docs_fp%%'\$\$)")
[[ $out == "$shards|$rows|" ]] || fail "(b) hamming_index_check on the shards: $out (of $rows rows)"
echo "check_citus: (b) INSERT ... SELECT simhash(body) ran as $shards tasks on the workers, signatures equal the coordinator's; hamming_index_check passes on every shard (pending_limit 500); $rows rows ($near of 600 near copies within 4 bits) ($((SECONDS - T0)) s)"

# --- (c) lookups: equal the reference, answered by each shard's index
nq=$(q -c "SELECT count(*) FROM queries")
out=$(q <<'SQL'
CREATE TEMP TABLE diffs (qn int, form text, k int, got bigint[], want bigint[]);
DO $$
DECLARE r record; k int; got bigint[]; want bigint[]; form text;
BEGIN
    FOR r IN SELECT qn, q FROM queries ORDER BY qn LOOP
        k := r.qn % 5;
        -- static SQL: q and k are parameters
        SELECT array_agg(id ORDER BY id) INTO got FROM docs WHERE hamming(fp, r.q) <= k;
        SELECT array_agg(id ORDER BY id) INTO want FROM docs_ref WHERE hamming(fp, r.q) <= k;
        IF got IS DISTINCT FROM want THEN INSERT INTO diffs VALUES (r.qn, 'hamming param', k, got, want); END IF;
        SELECT array_agg(id ORDER BY id) INTO got FROM codes WHERE hamming(code, r.q::bigint) <= k;
        IF got IS DISTINCT FROM want THEN INSERT INTO diffs VALUES (r.qn, 'bigint param', k, got, want); END IF;
        FOREACH form IN ARRAY ARRAY['hamming(fp, %L) <= %s', 'hamming_within(fp, %L, %s)', 'fp <@ hamming_ball(%L, %s)'] LOOP
            EXECUTE format('SELECT array_agg(id ORDER BY id) FROM docs WHERE ' || form, r.q, k) INTO got;
            EXECUTE format('SELECT array_agg(id ORDER BY id) FROM docs_ref WHERE ' || form, r.q, k) INTO want;
            IF got IS DISTINCT FROM want THEN INSERT INTO diffs VALUES (r.qn, form, k, got, want); END IF;
        END LOOP;
    END LOOP;
END $$;
SELECT count(*) FROM diffs;
SELECT format('qn %s %s k=%s: distributed %s, reference %s', qn, form, k, got, want) FROM diffs LIMIT 5;
SELECT count(*) FILTER (WHERE n > 0) || ' ' || count(*) FILTER (WHERE n > 1) || ' ' || sum(n)
FROM (SELECT (SELECT count(*) FROM docs_ref WHERE hamming(fp, q) <= qn % 5) n FROM queries) s;
SQL
)
mapfile -t lines <<<"$out"
[[ ${lines[0]} == 0 ]] || fail "(c) ${lines[0]} answers differ: ${lines[*]:1}"
read -r with_match with_several total <<<"${lines[-1]}"
((with_match > 150 && with_several > 50)) || fail "(c) too few matches to compare: ${lines[-1]}"
# every task's plan: the shard's hamming index
qfp=$(q -c "SELECT q FROM queries ORDER BY qn LIMIT 1")
for cond in "hamming(fp, '$qfp') <= 3" "hamming_within(fp, '$qfp', 3)" "fp <@ hamming_ball('$qfp', 3)"; do
    plan=$(q -c "SET citus.explain_all_tasks = on" -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE $cond")
    [[ $(grep -c "Index Scan using docs_fp_[0-9]* on docs_[0-9]*\|Bitmap Index Scan on docs_fp_[0-9]*" <<<"$plan") == "$shards" ]] ||
        fail "(c) not every task of $cond uses its shard's hamming index: $plan"
done
plan1=$(q -c "SET citus.explain_all_tasks = on" -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE hamming(fp, '$qfp') <= 3")
# the ball once per task: the coordinator leaves a Citus table's bound as written (no
# hamming_within beside it), and each worker's hook adds the one index condition
for cond in "hamming(fp, '$qfp') <= 3" "hamming_within(fp, '$qfp', 3)" "fp <@ hamming_ball('$qfp', 3)"; do
    plan=$(q -c "SET citus.explain_all_tasks = on" -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE $cond")
    conds=$(grep "Index Cond" <<<"$plan" || true)
    [[ $(grep -c "<@ \\(hamming_ball('[0-9a-f]*'::simhash64, 3)\\|'([0-9a-f]*,3)'::hamming_ball\\)" <<<"$conds") == "$shards" ]] && ! grep -q "hamming_within\|<@.*<@" <<<"$conds" ||
        fail "(c) $cond: not one ball in each of the $shards tasks' index conditions: $plan"
done
plan=$(q -c "SET citus.explain_all_tasks = on" -c "EXPLAIN (COSTS OFF) SELECT id FROM codes WHERE hamming(code, ${qfp@Q}::simhash64::bigint) <= 3")
[[ $(grep -c "Index Scan using codes_code_[0-9]*\|Bitmap Index Scan on codes_code_[0-9]*" <<<"$plan") == "$shards" ]] || fail "(c) bigint lookups do not use the index: $plan"
# and on a worker, a shard queried directly
shard=$(q -c "SELECT shard_name FROM citus_shards WHERE table_name = 'docs'::regclass AND nodeport = $((PORT + 1)) ORDER BY shardid LIMIT 1")
wplan=$(citus_psql 1 -c "EXPLAIN (COSTS OFF) SELECT id FROM $shard WHERE hamming(fp, '$qfp') <= 3")
grep -q "Index Scan using docs_fp_[0-9]* on $shard\|Bitmap Index Scan on docs_fp_[0-9]*" <<<"$wplan" || fail "(c) the shard $shard on worker 1 does not use its index: $wplan"
echo "check_citus: (c) $nq queries at radii 0-4 ($with_match with matches, $with_several with several, $total ids), 5 forms: equal the reference; every task scans its shard's hamming index ($((SECONDS - T0)) s). A task's plan:"
sed -n '/Task$/,$p' <<<"$plan1" | sed -n '1,/Task$/p' | sed '$d' | sed 's/^/    /' | sed -n 1,12p

# --- (d) nearest codes: the coordinator merges each shard's top 5
out=$(q <<'SQL'
CREATE TEMP TABLE ndiffs (qn int, got int[], want int[], wrong int);
DO $$
DECLARE r record; got int[]; want int[]; wrong int;
BEGIN
    FOR r IN SELECT qn, q FROM queries ORDER BY qn LOOP
        EXECUTE format('SELECT array_agg(d ORDER BY d), count(*) FILTER (WHERE d <> hamming(fp, %L)) FROM
            (SELECT id, fp, fp <~> %L AS d FROM docs ORDER BY fp <~> %L LIMIT 5) s', r.q, r.q, r.q) INTO got, wrong;
        SELECT array_agg(d ORDER BY d) INTO want FROM (SELECT fp <~> r.q AS d FROM docs_ref ORDER BY fp <~> r.q LIMIT 5) s;
        IF got IS DISTINCT FROM want OR wrong > 0 THEN INSERT INTO ndiffs VALUES (r.qn, got, want, wrong); END IF;
    END LOOP;
END $$;
SELECT count(*) FROM ndiffs;
SELECT format('qn %s: distributed %s, reference %s, %s at a wrong distance', qn, got, want, wrong) FROM ndiffs LIMIT 5;
SQL
)
mapfile -t lines <<<"$out"
[[ ${lines[0]} == 0 ]] || fail "(d) ${lines[0]} nearest answers differ: ${lines[*]:1}"
# the ids, where the 5th distance is not tied with the 6th, are the reference's
got=$(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM (SELECT id FROM docs ORDER BY fp <~> '$qfp' LIMIT 3) s")
want=$(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM (SELECT id FROM docs_ref ORDER BY fp <~> '$qfp' LIMIT 3) s")
ties=$(q -c "SELECT count(*) FROM docs_ref WHERE fp <~> '$qfp' <= (SELECT max(d) FROM (SELECT fp <~> '$qfp' d FROM docs_ref ORDER BY 1 LIMIT 3) s)")
[[ $ties != 3 || $got == "$want" ]] || fail "(d) nearest ids $got, reference $want"
plan=$(q -c "SET citus.explain_all_tasks = on" -c "EXPLAIN (COSTS OFF) SELECT id FROM docs ORDER BY fp <~> '$qfp' LIMIT 5")
[[ $(grep -c "Index Scan using docs_fp_[0-9]* on docs_[0-9]*" <<<"$plan") == "$shards" && $(grep -c "Order By: (fp <~> " <<<"$plan") == "$shards" &&
    $(grep -c "^ *->  Limit" <<<"$plan") -ge "$shards" ]] || fail "(d) nearest is not an ordered index scan under a Limit in every task: $plan"
echo "check_citus: (d) nearest 5 of $nq queries: the reference's distances; each task an ordered index scan under a Limit ($((SECONDS - T0)) s)"

# --- (e) batches
batch_pairs() { # TABLE K BATCH_SQL: (qn, id) pairs of the batch check
    echo "SELECT k AS qn, d.id FROM (SELECT id, fp FROM $1 WHERE fp <@@ ($3)) d, unnest(hamming_batch_keys(($3), d.fp)) k"
}
for k in 0 2 3 5; do
    batch=$(q -c "SELECT hamming_batch(array_agg(qn::bigint), array_agg(q), $k) FROM queries")
    lit="SELECT '$batch'::hamming_batch"
    truth_sql="SELECT qn, id FROM queries, docs_ref WHERE hamming(fp, q) <= $k"
    got=$(q -c "SELECT md5(string_agg(qn || ':' || id, ',' ORDER BY qn, id)), count(*) FROM ($(batch_pairs docs $k "$lit")) s")
    want=$(q -c "SELECT md5(string_agg(qn || ':' || id, ',' ORDER BY qn, id)), count(*) FROM ($truth_sql) s")
    [[ $got == "$want" ]] || fail "(e) radius $k: batch literal on the distributed table $got, reference $want"
    ((k < 2 || ${want#*|} > 200)) || fail "(e) radius $k: only ${want#*|} pairs"
done
plan=$(q -c "SET citus.explain_all_tasks = on" -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <@@ '$batch'::hamming_batch")
[[ $(grep -c "Index Scan using docs_fp_[0-9]*\|Bitmap Index Scan on docs_fp_[0-9]*" <<<"$plan") == "$shards" ]] || fail "(e) the batch check does not use every shard's index: $plan"
# the README's form: the batch built in a CTE from a local table of the coordinator
cte="WITH b AS MATERIALIZED (SELECT hamming_batch(array_agg(qn::bigint), array_agg(q), 3) AS batch FROM queries)
     SELECT k AS qn, d.id FROM (SELECT id, fp FROM docs WHERE fp <@@ (SELECT batch FROM b)) d,
          unnest(hamming_batch_keys((SELECT batch FROM b), d.fp)) k"
status=0
got=$(q -c "SELECT md5(string_agg(qn || ':' || id, ',' ORDER BY qn, id)), count(*) FROM ($cte) s" 2>&1) || status=$?
want=$(q -c "SELECT md5(string_agg(qn || ':' || id, ',' ORDER BY qn, id)), count(*) FROM (SELECT qn, id FROM queries, docs_ref WHERE hamming(fp, q) <= 3) s")
[[ $status == 0 && $got == "$want" ]] || fail "(e) the CTE form: $got (reference $want)"
echo "check_citus: (e) batch checks of $nq queries at radii 0-5 equal the reference (a literal, and a CTE of a local table); each task one index scan ($((SECONDS - T0)) s)"

# --- (f) hash256
q >/dev/null <<'SQL'
CREATE FUNCTION flip256(b bytea, n int) RETURNS bytea LANGUAGE plpgsql VOLATILE AS $$
DECLARE i int; p int;
BEGIN
    FOR i IN 1..n LOOP p := floor(random() * 256)::int; b := set_bit(b, p, 1 - get_bit(b, p)); END LOOP;
    RETURN b;
END $$;
CREATE TABLE gen256 (n serial, code bytea);
INSERT INTO gen256 (code) SELECT decode(md5(random()::text) || md5(random()::text), 'hex') FROM generate_series(1, 4000);
INSERT INTO gen256 (code) SELECT flip256(c.code, 1 + (i * 7) % 40) FROM (SELECT code FROM gen256 ORDER BY n LIMIT 200) c, generate_series(1, 8) i;
CREATE TABLE photos_ref (id bigint PRIMARY KEY, pdq hash256);
INSERT INTO photos_ref SELECT n, code::hash256 FROM gen256;
CREATE INDEX ON photos_ref USING hamming (pdq);
CREATE TABLE photos (id bigint PRIMARY KEY, pdq hash256);
SELECT create_distributed_table('photos', 'id');
CREATE INDEX photos_pdq ON photos USING hamming (pdq);
INSERT INTO photos SELECT * FROM photos_ref;
ANALYZE photos_ref;
CREATE TABLE queries256 (qn serial, q hash256);
INSERT INTO queries256 (q) SELECT code::hash256 FROM gen256 WHERE n % 53 = 0;
INSERT INTO queries256 (q) SELECT flip256(code, 1 + n % 30)::hash256 FROM gen256 WHERE n % 59 = 1;
SQL
q -c "ANALYZE photos" >/dev/null
# A few hundred 256-bit codes a shard: each shard's planner (like the reference's) reads
# the table rather than the index at these radii. The comparison forces the index on both
# sides: Citus sends a SET LOCAL to the workers' transactions (citus.propagate_set_commands).
out=$(q <<'SQL'
SET citus.propagate_set_commands = 'local';
BEGIN;
SET LOCAL enable_seqscan = off;
CREATE TEMP TABLE wdiffs (qn int, k int, got text, want text);
DO $$
DECLARE r record; k int; got text; want text;
BEGIN
    FOR r IN SELECT qn, q FROM queries256 ORDER BY qn LOOP
        k := (r.qn * 13) % 41;
        SELECT string_agg(id::text, ',' ORDER BY id) INTO got FROM photos WHERE pdq <@ hamming_ball(r.q, k);
        SELECT string_agg(id::text, ',' ORDER BY id) INTO want FROM photos_ref WHERE pdq <@ hamming_ball(r.q, k);
        IF got IS DISTINCT FROM want THEN INSERT INTO wdiffs VALUES (r.qn, k, got, want); END IF;
        SELECT string_agg(id::text, ',' ORDER BY id) INTO got FROM photos WHERE hamming(pdq, r.q) <= k;
        IF got IS DISTINCT FROM want THEN INSERT INTO wdiffs VALUES (r.qn, -k, got, want); END IF;
        EXECUTE format('SELECT string_agg(d::text, '','' ORDER BY d) FROM (SELECT pdq <~> %L::hash256 d FROM photos ORDER BY pdq <~> %L::hash256 LIMIT 4) s', r.q, r.q) INTO got;
        SELECT string_agg(d::text, ',' ORDER BY d) INTO want FROM (SELECT pdq <~> r.q d FROM photos_ref ORDER BY pdq <~> r.q LIMIT 4) s;
        IF got IS DISTINCT FROM want THEN INSERT INTO wdiffs VALUES (r.qn, 1000, got, want); END IF;
    END LOOP;
END $$;
COMMIT;
SELECT count(*) FROM wdiffs;
SELECT format('qn %s k=%s: distributed %s, reference %s', qn, k, got, want) FROM wdiffs LIMIT 5;
SELECT count(*) FILTER (WHERE n > 1) FROM (SELECT (SELECT count(*) FROM photos_ref WHERE pdq <@ hamming_ball(q, (qn * 13) % 41)) n FROM queries256) s;
SQL
)
mapfile -t lines <<<"$out"
[[ ${lines[0]} == 0 ]] || fail "(f) ${lines[0]} hash256 answers differ: ${lines[*]:1}"
((${lines[-1]} > 20)) || fail "(f) only ${lines[-1]} hash256 queries with several matches"
q256=$(q -c "SELECT q FROM queries256 ORDER BY qn LIMIT 1")
plan=$(q -c "SET citus.explain_all_tasks = on" -c "SET citus.propagate_set_commands = 'local'" -c "BEGIN" -c "SET LOCAL enable_seqscan = off" \
    -c "EXPLAIN (COSTS OFF) SELECT id FROM photos WHERE pdq <@ hamming_ball('$q256'::hash256, 31)" -c "COMMIT")
[[ $(grep -c "Index Scan using photos_pdq_[0-9]*\|Bitmap Index Scan on photos_pdq_[0-9]*" <<<"$plan") == "$shards" ]] || fail "(f) hash256 lookups do not use every shard's index: $plan"
echo "check_citus: (f) hash256: $(q -c "SELECT count(*) FROM queries256") queries at radii 0-40 and their nearest 4 equal the reference's (${lines[-1]} with several matches), every shard's index and the reference's read (enable_seqscan off, propagated) ($((SECONDS - T0)) s)"

# --- (g) all pairs within 3 bits through the pigeonhole keys, distributed by key
blocks=$(q -c "SELECT hamming_join_blocks($rows, 3)")
t=$SECONDS
q >/dev/null <<SQL
CREATE TABLE fp_keys (key bigint, id bigint, fp simhash64);
SELECT create_distributed_table('fp_keys', 'key');
SQL
# the keys go from docs' shards to fp_keys' by Citus's repartitioning, not through the coordinator
plan=$(q -c "EXPLAIN (COSTS OFF) INSERT INTO fp_keys SELECT k, id, fp FROM docs, unnest(hamming_join_keys(fp, 3, $blocks)) k")
grep -q "INSERT/SELECT method: repartition" <<<"$plan" || fail "(g) the key table is not filled by repartitioning: $plan"
q >/dev/null <<SQL
INSERT INTO fp_keys SELECT k, id, fp FROM docs, unnest(hamming_join_keys(fp, 3, $blocks)) k;
ANALYZE fp_keys;
SQL
fill=$((SECONDS - t))
pairs_sql="SELECT a.id AS a, b.id AS b FROM fp_keys a JOIN fp_keys b ON a.key = b.key
           WHERE a.id < b.id AND hamming_join_key(a.fp, b.fp, 3, $blocks) = a.key"
plan=$(q -c "EXPLAIN (COSTS OFF) $pairs_sql")
grep -q "Task Count: $shards" <<<"$plan" && ! grep -q "Distributed Subplan\|MapMergeJob\|repartition" <<<"$plan" ||
    fail "(g) the key self-join is not pushed down whole: $plan"
t=$SECONDS
got=$(q -c "SELECT md5(string_agg(a || ':' || b, ',' ORDER BY a, b)), count(*) FROM ($pairs_sql) s")
took_keys=$((SECONDS - t))
want=$(q -c "SELECT md5(string_agg(a || ':' || b, ',' ORDER BY a, b)), count(*) FROM hamming_pairs('docs_ref', 'id', 'fp', 3)")
[[ $got == "$want" ]] || fail "(g) pairs through the distributed keys $got, hamming_pairs on the reference $want"
((${want#*|} > 2000)) || fail "(g) only ${want#*|} pairs"
# what a user tries first: the natural self-join, and hamming_pairs given the distributed table
status=0
err=$(q -c "SELECT count(*) FROM docs a JOIN docs b ON hamming(a.fp, b.fp) <= 3 AND a.id < b.id" 2>&1) || status=$?
echo "check_citus: (g) the natural self-join on the distributed table: status $status: $(sed -n 1p <<<"$err")"
status=0
hp=$(q -c "SELECT md5(string_agg(a || ':' || b, ',' ORDER BY a, b)), count(*) FROM hamming_pairs('docs', 'id', 'fp', 3)" 2>&1) || status=$?
# today it reads every row through the coordinator (Citus's pull of a distributed table
# into a function's query), within the coordinator's maintenance_work_mem
[[ $status == 0 && $hp == "$want" ]] || fail "(g) hamming_pairs('docs', ...): $hp (reference $want)"
echo "check_citus: (g) hamming_pairs('docs', ...) on the distributed table equals the reference (its rows read through the coordinator)"
# past the coordinator's memory: with maintenance_work_mem at 1 MB (32 k rows of
# hamming_pairs) one server cannot pair the table, the key self-join still does
out=$(q -c "SET maintenance_work_mem = '1MB'" -c "SELECT md5(string_agg(a || ':' || b, ',' ORDER BY a, b)), count(*) FROM ($pairs_sql) s")
[[ $out == "$want" ]] || fail "(g) the key self-join with maintenance_work_mem = 1MB: $out (reference $want)"
status=0
err=$(q -c "SET maintenance_work_mem = '1MB'" -c "SELECT count(*) FROM hamming_pairs('docs', 'id', 'fp', 3)" 2>&1) || status=$?
[[ $status != 0 ]] && grep -q "do not fit in maintenance_work_mem" <<<"$err" || fail "(g) hamming_pairs('docs', ...) in 1 MB: $err"
grep -q "HINT: .*hamming_pairs_distributed(tbl, key_column, signature_column, max_distance)" <<<"$err" || fail "(g) hamming_pairs('docs', ...) in 1 MB names no distributed path: $err"
echo "check_citus: (g) maintenance_work_mem = 1MB: the key self-join still equals the reference; hamming_pairs('docs', ...): $(sed -n 1p <<<"$err") $(grep HINT <<<"$err")"
status=0
err=$(q -c "SET maintenance_work_mem = '1MB'" -c "SELECT count(*) FROM neardup_clusters('docs', 'id', 'fp', 3)" 2>&1) || status=$?
[[ $status != 0 ]] && grep -q "HINT: .*neardup_components('SELECT a, b FROM hamming_pairs_distributed(" <<<"$err" || fail "(g) neardup_clusters('docs', ...) in 1 MB: $err"
# hamming_pairs_distributed: on the workers, within 1 MB of maintenance_work_mem, in a
# transaction that has already read the table (and, for docs, written to it); the path it
# took is in its DEBUG message; no table of its own left behind
q >/dev/null <<'SQL'
CREATE TABLE docs_by_name (name text, id bigint, fp simhash64);
SELECT create_distributed_table('docs_by_name', 'name');
INSERT INTO docs_by_name SELECT 'doc ' || id, id, fp FROM docs_ref;
CREATE TABLE docs_by_day (day date, id bigint, fp simhash64);
SELECT create_distributed_table('docs_by_day', 'day');
INSERT INTO docs_by_day SELECT date '2020-01-01' + (id % 1000)::int, id, fp FROM docs_ref;
SQL
want_d=$(q -c "SELECT md5(string_agg(a || ':' || b || ':' || distance, ',' ORDER BY a, b)), count(*) FROM hamming_pairs('docs_ref', 'id', 'fp', 3)")
took_fn=
for case in "docs|cut into parts on the workers" "docs_by_name|cut into parts on the workers" "docs_by_day|join keys in a key table"; do
    t=$SECONDS
    out=$(q -c "BEGIN" -c "SELECT count(*) FROM ${case%|*}" -c "UPDATE ${case%|*} SET fp = fp WHERE id = 1" -c "SET LOCAL maintenance_work_mem = '1MB'" \
        -c "SET LOCAL client_min_messages = debug1" \
        -c "SELECT md5(string_agg(a || ':' || b || ':' || distance, ',' ORDER BY a, b)), count(*) FROM hamming_pairs_distributed('${case%|*}', 'id', 'fp', 3)" -c "COMMIT" 2>&1)
    took_fn+="${took_fn:+, }${case%|*} $((SECONDS - t)) s"
    got=$(grep -E '^[0-9a-f]{32}\|[0-9]+$' <<<"$out" || true)
    [[ $got == "$want_d" ]] || fail "(g) hamming_pairs_distributed('${case%|*}', ...) $got, hamming_pairs on the reference $want_d: $out"
    grep -q "DEBUG:  hamming_pairs_distributed: .*${case#*|}" <<<"$out" || fail "(g) hamming_pairs_distributed('${case%|*}', ...) did not say '${case#*|}': $out"
done
# cancelled at some point of its phases (statement timeouts from 10 ms up to its whole time):
# ERROR 57014, nothing left behind (its tables roll back on every node), the next call exact
cancelled=0
for ms in 10 40 120 300 700; do
    status=0
    err=$(q -c "SET statement_timeout = '${ms}ms'" -c "SELECT count(*) FROM hamming_pairs_distributed('docs', 'id', 'fp', 3)" 2>&1) || status=$?
    [[ $status == 0 ]] || grep -q "canceling statement due to statement timeout" <<<"$err" || fail "(g) hamming_pairs_distributed under a ${ms} ms timeout: $err"
    [[ $status == 0 ]] || cancelled=$((cancelled + 1))
done
((cancelled > 0)) || fail "(g) no timeout cancelled hamming_pairs_distributed"
[[ $(q -c "SELECT md5(string_agg(a || ':' || b || ':' || distance, ',' ORDER BY a, b)), count(*) FROM hamming_pairs_distributed('docs', 'id', 'fp', 3)") == "$want_d" ]] ||
    fail "(g) hamming_pairs_distributed after cancelled calls differs from hamming_pairs on the reference"
left=$(q -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'neardup_pair_%'")/$(q -c "SELECT string_agg(result, ',') FROM run_command_on_workers(\$\$SELECT count(*) FROM pg_class WHERE relname LIKE 'neardup_pair_%'\$\$)")
[[ $left == 0/0,0 ]] || fail "(g) hamming_pairs_distributed left tables behind (coordinator/workers): $left"
# a plain table goes to hamming_pairs; wide codes and bad arguments are refused clearly
[[ $(q -c "SELECT md5(string_agg(a || ':' || b || ':' || distance, ',' ORDER BY a, b)), count(*) FROM hamming_pairs_distributed('docs_ref', 'id', 'fp', 3)") == "$want_d" ]] ||
    fail "(g) hamming_pairs_distributed on a plain table differs from hamming_pairs"
for bad in "'photos', 'id', 'pdq', 3|0A000" "'docs', 'id', 'nope', 3|42703" "'docs', 'fp', 'fp', 3|42804" "'docs', 'id', 'fp', 64|22023"; do
    status=0
    err=$(q -c "\\set VERBOSITY verbose" -c "SELECT count(*) FROM hamming_pairs_distributed(${bad%|*})" 2>&1) || status=$?
    [[ $status != 0 ]] && grep -q "ERROR:  ${bad#*|}: hamming_" <<<"$err" || fail "(g) hamming_pairs_distributed(${bad%|*}): $err"
done
echo "check_citus: (g) hamming_pairs_distributed equals hamming_pairs on the reference in 1 MB of maintenance_work_mem, in parts on the workers (distributed by bigint, by text) and by join keys (by date) ($took_fn), leaves no table behind, also when cancelled ($cancelled of 5 statement timeouts from 10 to 700 ms); plain tables go to hamming_pairs; wide codes (0A000), unknown columns, non-integer keys, bad distances refused"
# clusters: of the key self-join's pairs, and neardup_clusters given the distributed table
out=$(q -c "SELECT (SELECT md5(string_agg(node || ':' || component, ',' ORDER BY node)) FROM neardup_components(\$q\$$pairs_sql\$q\$))
     = (SELECT md5(string_agg(node || ':' || component, ',' ORDER BY node)) FROM neardup_components('SELECT a, b FROM hamming_pairs(''docs_ref'', ''id'', ''fp'', 3)')),
    (SELECT md5(string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)) FROM neardup_clusters('docs', 'id', 'fp', 3))
     = (SELECT md5(string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)) FROM neardup_clusters('docs_ref', 'id', 'fp', 3))")
[[ $out == "t|t" ]] || fail "(g) clusters differ from one server's (components of the key join, neardup_clusters on docs): $out"
q -c "CREATE MATERIALIZED VIEW docs_clusters AS SELECT * FROM neardup_clusters('docs', 'id', 'fp', 3)" >/dev/null
[[ $(q -c "SELECT count(*) FROM docs_clusters") == "$rows" ]] || fail "(g) the materialized view of the clusters"
status=0
err=$(q -c "SELECT neardup_cluster_tracking('docs', 'docs_tracked', 'id', 'fp', 3)" 2>&1) || status=$?
[[ $status != 0 ]] && grep -q "triggers are not supported on distributed tables" <<<"$err" || fail "(g) cluster tracking on a distributed table: $err"
echo "check_citus: (g) neardup_cluster_tracking on a distributed table: $(sed -n 1p <<<"$err")"
echo "check_citus: (g) ${want#*|} pairs within 3 bits: the key self-join ($blocks blocks, fp_keys filled in $fill s by repartitioning, joined in $took_keys s as $shards co-located tasks) equals hamming_pairs on the reference; its components and neardup_clusters('docs', ...) equal one server's ($((SECONDS - T0)) s). A task:"
sed -n '/Task$/,$p' <<<"$plan" | sed 's/^/    /' | sed -n 1,12p
# --- (h) MinHash LSH: band keys (lsh_band_keys) in a table distributed by key, a co-located
# self-join verified by jaccard, equal to minhash_pairs on one server; and
# minhash_pairs_distributed, the same in one call, reporting each pair once.
q >/dev/null <<'SQL'
SELECT setseed(0.3);
CREATE TABLE texts_ref (id bigint PRIMARY KEY, body text);
INSERT INTO texts_ref SELECT i, (SELECT string_agg('w' || floor(random() * 3000)::int, ' ') FROM generate_series(1, 100) w WHERE i > 0)
    FROM generate_series(1, 4000) i;
INSERT INTO texts_ref SELECT 100000 + id, regexp_replace(body, ' w[0-9]+ w[0-9]+$', ' x y') FROM texts_ref WHERE id % 4 = 0;
INSERT INTO texts_ref SELECT 200000 + id, regexp_replace(body, '^(w[0-9]+ ){10}', '') FROM texts_ref WHERE id % 7 = 0 AND id < 100000;
CREATE TABLE sketches_ref AS SELECT id, minhash(body) AS mh FROM texts_ref;
CREATE TABLE sketches (id bigint PRIMARY KEY, mh minhash_sketch);
SELECT create_distributed_table('sketches', 'id');
INSERT INTO sketches SELECT * FROM sketches_ref;
CREATE TABLE band_keys (key bigint, id bigint, mh minhash_sketch);
SELECT create_distributed_table('band_keys', 'key');
INSERT INTO band_keys SELECT k, id, mh FROM sketches, unnest(lsh_band_keys(lsh_bands(mh, 0.8))) k;
ANALYZE band_keys;
SQL
# the keys are the text form's hex digits (b<bands>r<rows>:<16 hex digits>:...) as bigint
[[ $(q -c "SELECT count(*) FROM sketches_ref WHERE lsh_band_keys(lsh_bands(mh, 0.8))
    IS DISTINCT FROM (SELECT array_agg(('x' || k)::bit(64)::bigint) FROM unnest((string_to_array(lsh_bands(mh, 0.8)::text, ':'))[2:]) k)") == 0 ]] ||
    fail "(h) lsh_band_keys differs from lsh_bands' text form"
lsh_sql="SELECT DISTINCT a.id AS a, b.id AS b FROM band_keys a JOIN band_keys b ON a.key = b.key WHERE a.id < b.id AND jaccard(a.mh, b.mh) >= 0.8"
plan=$(q -c "EXPLAIN (COSTS OFF) $lsh_sql")
grep -q "Task Count: $shards" <<<"$plan" && ! grep -q "Distributed Subplan\|MapMergeJob\|repartition" <<<"$plan" || fail "(h) the band key self-join is not pushed down: $plan"
got=$(q -c "SELECT md5(string_agg(a || ':' || b, ',' ORDER BY a, b)), count(*) FROM ($lsh_sql) s")
want=$(q -c "SELECT md5(string_agg(a || ':' || b, ',' ORDER BY a, b)), count(*) FROM minhash_pairs('sketches_ref', 'id', 'mh', 0.8)")
[[ $got == "$want" ]] || fail "(h) LSH pairs through the distributed band keys $got, minhash_pairs on one server $want"
((${want#*|} > 500)) || fail "(h) only ${want#*|} LSH pairs"
status=0
err=$(q -c "SET maintenance_work_mem = '1MB'" -c "SELECT count(*) FROM minhash_pairs('sketches', 'id', 'mh', 0.8)" 2>&1) || status=$?
[[ $status != 0 ]] && grep -q "HINT: .*minhash_pairs_distributed(tbl, key_column, sketch_column, threshold)" <<<"$err" || fail "(h) minhash_pairs('sketches', ...) in 1 MB: $err"
got=$(q -c "SELECT md5(string_agg(a || ':' || b, ',' ORDER BY a, b)), count(*) FROM minhash_pairs('sketches', 'id', 'mh', 0.8)")
[[ $got == "$want" ]] || fail "(h) minhash_pairs on the distributed table $got, one server $want"
# minhash_pairs_distributed: on the workers within 1 MB, in a transaction that read the table,
# every pair once with minhash_pairs' estimate; no key table left; at a threshold and with
# bands and rows given
pairs_of() { echo "SELECT md5(string_agg(a || ':' || b || ':' || jaccard, ',' ORDER BY a, b)), count(*) FROM $1"; }
for args in "0.8" "0.6" "0.8, 10, 8"; do
    want_m=$(q -c "$(pairs_of "minhash_pairs('sketches_ref', 'id', 'mh', $args)")")
    got=$(q -c "BEGIN" -c "SELECT count(*) FROM sketches" -c "SET LOCAL maintenance_work_mem = '1MB'" \
        -c "$(pairs_of "minhash_pairs_distributed('sketches', 'id', 'mh', $args)")" -c "COMMIT" | sed -n '$p')
    [[ $got == "$want_m" ]] || fail "(h) minhash_pairs_distributed('sketches', 'id', 'mh', $args) $got, minhash_pairs on one server $want_m"
    [[ $(q -c "$(pairs_of "minhash_pairs_distributed('sketches_ref', 'id', 'mh', $args)")") == "$want_m" ]] ||
        fail "(h) minhash_pairs_distributed on a plain table differs from minhash_pairs ($args)"
done
left=$(q -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'neardup_band_keys%'")/$(q -c "SELECT string_agg(result, ',') FROM run_command_on_workers(\$\$SELECT count(*) FROM pg_class WHERE relname LIKE 'neardup_band_keys%'\$\$)")
[[ $left == 0/0,0 ]] || fail "(h) minhash_pairs_distributed left key tables behind (coordinator/workers): $left"
for bad in "'sketches', 'id', 'nope', 0.8|42703" "'sketches', 'mh', 'mh', 0.8|42804" "'sketches', 'id', 'id', 0.8|42804" \
    "'sketches', 'id', 'mh', 1.5|22023" "'sketches', 'id', 'mh', 0.8, 10|22023" "'sketches', 'id', 'mh', 0.8, 100, 100|22023"; do
    status=0
    err=$(q -c "\\set VERBOSITY verbose" -c "SELECT count(*) FROM minhash_pairs_distributed(${bad%|*})" 2>&1) || status=$?
    [[ $status != 0 ]] && grep -q "ERROR:  ${bad#*|}: " <<<"$err" || fail "(h) minhash_pairs_distributed(${bad%|*}): $err"
done
[[ $(q -c "SELECT count(*) FROM minhash_pairs_distributed('sketches', 'id', 'mh', NULL)") == 0 ]] || fail "(h) a NULL threshold returns rows"
# one sketch of another size among the rest: refused up front, as minhash_pairs refuses it
# (a sketch that shares no band with the others would otherwise pass unnoticed)
q >/dev/null <<'SQL'
CREATE TABLE sketches_mixed (id bigint PRIMARY KEY, mh minhash_sketch);
SELECT create_distributed_table('sketches_mixed', 'id');
INSERT INTO sketches_mixed SELECT * FROM sketches_ref;
INSERT INTO sketches_mixed VALUES (999999, minhash('a text unlike the others, of twelve words and more than eight of them', 40));
SQL
for f in minhash_pairs minhash_pairs_distributed; do
    status=0
    err=$(q -c "\set VERBOSITY verbose" -c "SELECT count(*) FROM $f('sketches_mixed', 'id', 'mh', 0.8)" 2>&1) || status=$?
    [[ $status != 0 ]] && grep -q "ERROR:  22023: $f: .*compared" <<<"$err" || fail "(h) $f on sketches of two sizes: $err"
done
echo "check_citus: (h) ${want#*|} MinHash pairs at Jaccard 0.8: the band key self-join (DISTINCT on the coordinator), minhash_pairs on the distributed table and minhash_pairs_distributed (in 1 MB; also at 0.6 and with 10 bands of 8 rows) equal minhash_pairs on one server; no key table left; unknown columns, wrong types, bad thresholds and bandings, sketches of two sizes refused ($((SECONDS - T0)) s)"
echo "check_citus: ok ($((SECONDS - T0)) s)"
