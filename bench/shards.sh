#!/usr/bin/env bash
# neardup on 3 shards (scripts/shards.sh: postgres_fdw, docs hash-partitioned on id over
# foreign tables) against one server (the coordinator's local docs_ref, same rows, same
# hamming index), in one run, on ROWS fingerprints (default 3 M): 97.75 % uniform random,
# planted clusters (0.25 % of rows are centres, each with 4 near copies 1-3 bits away: 1 %)
# and exact duplicates of other rows (0.5 %), so ~2.25 % of the rows are in a pair at k = 3.
# Generated in SQL with a fixed seed, routed to the shards by the coordinator's own hash
# partitioning (satisfies_hash_partition, the partition constraint), checked after the load.
#   (a) single lookup `hamming(fp, $1) <= 3`: pgbench, 1 client, prepared, random queries;
#   (b) batch check of NEW (10 k) new documents, half near copies (0-3 bits) of corpus rows:
#       `fp <@@ hamming_batch(...)` (the operator named as installed, from pg_operator) on the
#       shards (one remote statement per shard) against the same statement on docs_ref and
#       the plain join `hamming(n.fp, d.fp) <= 3` on docs_ref;
#       the three result sets must be equal (EXCEPT both ways); shard 1's plan of its remote
#       statement is printed (estimated and actual rows), and the coordinator's local share
#       (batch build, its text form, the keys of the matched rows, fetching) timed apart;
#   (c) all pairs at k = 3: the key table fp_keys (hash-partitioned on the key over the
#       shards; its fill is a one-off build, timed apart) joined with itself partitionwise,
#       against hamming_pairs on docs_ref; pair sets must be equal;
#   (d) clusters: neardup_components over the sharded pairs against neardup_clusters on
#       docs_ref; the clusters of two or more rows must be the same (count and members);
#   (e) scaling model: on ONE server (a shard is a server), the shard's part of the lookup,
#       of the batch check (the remote statement, its batch sent as text as postgres_fdw
#       does; also with enable_seqscan = off) and of the key self-join at SCALE_ROWS
#       fingerprints (B = hamming_join_blocks(rows, 3) each); a linear fit per
#       operation, plus the coordinator's share (measured on the 3-shard coordinator), is
#       extrapolated to TARGET_ROWS (1 B) fingerprints on TARGET_SHARDS (100) shards. A model,
#       not a measurement.
# Every timing is the median of REPS runs (pgbench: REPS runs of SECS s). jit = off on every
# server (its ~0.1 s compile would land on whichever side crosses jit_above_cost).
# Usage: bench/shards.sh    [ROWS=3000000] [SCALE_ROWS="1000000 2000000 4000000"] [NEW=10000]
#        [REPS=3] [SECS=5] [SKIP_INSTALL=1] [SKIP_SCALE=1]
# Takes /tmp/neardup-pg.lock itself (installs the extension unless SKIP_INSTALL=1); set
# SHARDS_BENCH_LOCKED=1 if you already hold it. About 11 min at the defaults on 2 cores
# (build included): 6 for ROWS, 5 for SCALE_ROWS, 3 of them the 4 M point
# (SCALE_ROWS="1000000 2000000" to skip it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z ${SHARDS_BENCH_LOCKED:-} ]]; then
    SHARDS_BENCH_LOCKED=1 exec flock /tmp/neardup-pg.lock "$0" "$@"
fi
ROWS=${ROWS:-3000000} SCALE_ROWS=${SCALE_ROWS:-1000000 2000000 4000000} NEW=${NEW:-10000}
REPS=${REPS:-3} SECS=${SECS:-5} SHARDS=3 K=3
TARGET_ROWS=${TARGET_ROWS:-1000000000} TARGET_SHARDS=${TARGET_SHARDS:-100}
source "$ROOT/bench/lib.sh"
export SHARDS_BASE=/tmp/neardup-bench-shards
SINGLE=/tmp/neardup-bench-shards-single
source "$ROOT/scripts/shards.sh"
T0=$SECONDS
fail() { echo "bench/shards: $*" >&2; exit 1; }
WORK=$(mktemp -d /tmp/neardup-bench-shards-work.XXXXXX)
chmod 755 "$WORK"
trap 'cluster_stop "$SINGLE"; rm -rf "$SINGLE"; shards_stop; rm -rf "$WORK"' EXIT

echo "== bench/shards.sh: ROWS=$ROWS SCALE_ROWS=\"$SCALE_ROWS\" NEW=$NEW REPS=$REPS SECS=$SECS SHARDS=$SHARDS k=$K"
echo "   $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes'), $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GB RAM, $(psql --version | awk '{print "PostgreSQL", $3}')"
if [[ -z ${SKIP_INSTALL:-} ]]; then
    install_extension 2>"$WORK/install.log" || { cat "$WORK/install.log" >&2; fail "install failed"; }
fi
CONF=("shared_buffers = '512MB'" "work_mem = '256MB'" "maintenance_work_mem = '1GB'" "autovacuum = off"
    "jit = off" "max_wal_size = '8GB'" "checkpoint_timeout = '30min'" "log_min_messages = warning")
echo "   every server: ${CONF[*]}"

# q [psql args]: psql on the coordinator, stopping at the first error.
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }
# ms SQL [SQL...]: server execution time of the last statement (EXPLAIN ANALYZE, TIMING OFF;
# the rows are produced, not sent), the ones before it run first in the same session (SET).
ms() {
    local args=() last=${*: -1} s
    for s in "${@:1:$#-1}"; do args+=(-c "$s"); done
    q "${args[@]}" -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $last" |
        python3 -c 'import json,sys; t=sys.stdin.read(); print(json.loads(t[t.index("["):])[0]["Execution Time"])'
}
# plan_ms SQL [SQL...]: like ms, the planning time.
plan_ms() {
    local args=() last=${*: -1} s
    for s in "${@:1:$#-1}"; do args+=(-c "$s"); done
    q "${args[@]}" -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $last" |
        python3 -c 'import json,sys; t=sys.stdin.read(); print(json.loads(t[t.index("["):])[0]["Planning Time"])'
}
# median: of the numbers on stdin.
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# med_ms SQL [SQL...]: median of REPS runs of ms.
med_ms() { for _ in $(seq "$REPS"); do ms "$@"; done | median; }
# pg_lat FILE [pgbench args]: median over REPS runs of pgbench's average latency (ms), 1 client.
pg_lat() {
    local file=$1
    shift
    for _ in $(seq "$REPS"); do
        pgbench -n -c 1 -T "$SECS" -M prepared "$@" -f "$file" postgres 2>&1 | awk '/latency average/ {print $4}'
    done | median
}
# calc EXPR: awk arithmetic, printed with %.4g.
calc() { awk "BEGIN {printf \"%.4g\", $1}"; }
PWJ="SET enable_partitionwise_join = on"
# no NOTICEs (DROP ... IF EXISTS) in the output
export PGOPTIONS="-c client_min_messages=warning"

# --- generators (tests/integration/fingerprint_functions.sql, and the corpus below)
GEN_SQL=$WORK/generate.sql
cat "$ROOT/tests/integration/fingerprint_functions.sql" >"$GEN_SQL"
cat >>"$GEN_SQL" <<'SQL'
-- gen_corpus(n): table gen(id, fp bigint) of n rows: uniform random, then n/400 centres
-- (the first uniform rows) with 4 near copies each (1-3 bits flipped), then n/200 exact
-- duplicates of the uniform rows after the centres. Ids 1..n.
CREATE FUNCTION gen_corpus(n bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    centres bigint := n / 400;
    dups bigint := n / 200;
    uniform bigint := n - 4 * (n / 400) - n / 200;
BEGIN
    DROP TABLE IF EXISTS gen;
    CREATE TABLE gen (id bigint, fp bigint);
    INSERT INTO gen SELECT g, rnd64() FROM generate_series(1, uniform) g;
    INSERT INTO gen SELECT uniform + (c.id - 1) * 4 + i, flip(c.fp, (1 + (c.id + i) % 3)::int)
        FROM gen c, generate_series(1, 4) i WHERE c.id <= centres;
    INSERT INTO gen SELECT uniform + 4 * centres + (d.id - centres), d.fp
        FROM gen d WHERE d.id > centres AND d.id <= centres + dups;
END $$;
-- gen_new(m): table new_docs(id, fp) of m new documents: m/2 near copies (0-3 bits flipped)
-- of random rows of gen, then random fingerprints. Ids 1..m.
CREATE FUNCTION gen_new(m bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DROP TABLE IF EXISTS new_docs;
    CREATE TABLE new_docs (id bigint, fp simhash64);
    INSERT INTO new_docs SELECT i, flip(fp, (i % 4)::int)::simhash64
        FROM (SELECT row_number() OVER () AS i, fp FROM (SELECT fp FROM gen ORDER BY random() LIMIT m / 2) s) t;
    INSERT INTO new_docs SELECT m / 2 + i, rnd64()::simhash64 FROM generate_series(1, m - m / 2) i;
    ANALYZE new_docs;
END $$;
SQL

# The statements measured (printed once, so that the note can quote them).
batch_sql() { # TABLE: the batch check of new_docs against TABLE
    echo "WITH b AS MATERIALIZED (SELECT hamming_batch(array_agg(id), array_agg(fp), $K) AS batch FROM new_docs)
SELECT k AS new_id, d.id AS corpus_id
FROM (SELECT id, fp FROM $1 WHERE fp $OP (SELECT batch FROM b)) d,
     unnest(hamming_batch_keys((SELECT batch FROM b), d.fp)) k"
}
NL_SQL="SELECT n.id AS new_id, d.id AS corpus_id FROM new_docs n JOIN docs_ref d ON hamming(n.fp, d.fp) <= $K"
join_sql() { # BLOCKS
    echo "SELECT a.id AS a, b.id AS b FROM fp_keys a JOIN fp_keys b ON a.key = b.key
WHERE a.id < b.id AND hamming_join_key(a.fp, b.fp, $K, $1) = a.key"
}

# batch_explain BATCH_FILE [SET...]: SQL for EXPLAIN ANALYZE of the remote statement a shard
# runs for the batch check, the batch bound as text (a custom plan, as for postgres_fdw's
# parameters); explain_summary reads its JSON: scan, estimated and actual rows, time.
batch_explain() {
    local file=$1 set
    shift
    for set in "$@"; do echo "$set;"; done
    echo "PREPARE p(hamming_batch) AS SELECT id, fp FROM docs WHERE fp $OP \$1;"
    echo "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE p('$(cat "$file")');"
}
explain_summary() {
    python3 -c '
import json, sys
t = sys.stdin.read(); e = json.loads(t[t.index("["):])[0]; top = p = e["Plan"]
while p["Node Type"] in ("Gather", "Gather Merge"): p = p["Plans"][0]
print("%s%s, estimated %d rows, actual %d, %.1f ms" % ("parallel " if p.get("Parallel Aware") else "", p["Node Type"].lower(),
      top["Plan Rows"], top["Actual Rows"], e["Execution Time"]))'
}

######## 3 shards
echo "== $SHARDS shards + coordinator under $SHARDS_BASE; generating and loading $ROWS fingerprints"
shards_start "$SHARDS" "${CONF[@]}"
# the batch operator's name, as installed (simhash64 OP hamming_batch)
OP=$(q -c "SELECT oprname FROM pg_operator WHERE oprleft = 'simhash64'::regtype AND oprright = 'hamming_batch'::regtype")
[[ -n $OP ]] || fail "no operator simhash64 OP hamming_batch installed"
t=$SECONDS
q -f "$GEN_SQL" -c "SELECT setseed(0.42)" -c "SELECT gen_corpus($ROWS)" -c "SELECT gen_new($NEW)" >/dev/null
gen_s=$((SECONDS - t))
t=$SECONDS
# docs_ref: bulk insert, then its index (as a one-off build would)
q -c "DROP INDEX docs_ref_fp" -c "INSERT INTO docs_ref SELECT id, fp::simhash64 FROM gen" \
    -c "CREATE INDEX docs_ref_fp ON docs_ref USING hamming (fp)" -c "VACUUM ANALYZE docs_ref"
ref_s=$((SECONDS - t))
# Shards: each gets the rows the coordinator's partition constraint gives it (what INSERT INTO
# docs routes there), by COPY, then its index; all shards at once.
t=$SECONDS
pids=()
for i in $(seq "$SHARDS"); do
    (
        shards_psql "$i" -c "DROP INDEX docs_fp"
        q -c "COPY (SELECT id, fp::simhash64 FROM gen WHERE satisfies_hash_partition('docs'::regclass, $SHARDS, $((i - 1)), id)) TO STDOUT" |
            shards_psql "$i" -c "COPY docs FROM STDIN"
        shards_psql "$i" -c "CREATE INDEX docs_fp ON docs USING hamming (fp)" -c "VACUUM ANALYZE docs"
    ) &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
q -c "ANALYZE docs"
shards_s=$((SECONDS - t))
# Routing check: every shard's rows satisfy its partition's constraint (evaluated on the
# coordinator: the CTE keeps the function from being shipped), and together they are gen.
misrouted=0
for i in $(seq "$SHARDS"); do
    misrouted=$((misrouted + $(q -c "WITH s AS MATERIALIZED (SELECT id FROM docs_shard$i)
        SELECT count(*) FILTER (WHERE NOT satisfies_hash_partition('docs'::regclass, $SHARDS, $((i - 1)), id)) FROM s")))
done
((misrouted == 0)) || fail "$misrouted rows on the wrong shard"
read -r n_docs n_ref n_gen <<<"$(q -F ' ' -c "SELECT (SELECT count(*) FROM docs), (SELECT count(*) FROM docs_ref), (SELECT count(DISTINCT id) FROM gen)")"
[[ $n_docs == "$ROWS" && $n_ref == "$ROWS" && $n_gen == "$ROWS" ]] || fail "rows: docs $n_docs, docs_ref $n_ref, gen $n_gen, expected $ROWS"
[[ $(q -c "SELECT count(*) FROM (SELECT id, fp FROM docs EXCEPT SELECT id, fp FROM docs_ref) s") == 0 ]] || fail "docs differs from docs_ref"
echo "generated in $gen_s s; docs_ref (insert + index) $ref_s s; shards (routed COPY + index, in parallel) $shards_s s"
echo "rows per shard: $(for i in $(seq "$SHARDS"); do shards_psql "$i" -c "SELECT count(*) FROM docs"; done | paste -sd/), none misrouted; docs = docs_ref"

# --- (a) single lookup
echo "== (a) single lookup, pgbench -M prepared, 1 client, median of $REPS x $SECS s"
for t in docs docs_ref; do
    cat >"$WORK/lookup_$t.sql" <<SQL
\\set a random(0, 4294967295)
\\set b random(0, 4294967295)
SELECT id FROM $t WHERE hamming(fp, ((:a::bigint << 32) | :b::bigint)::simhash64) <= $K;
SQL
done
# The coordinator's own cost of a sharded statement: a query that finds nothing through the
# primary key on one shard (a negative id: pruned to its partition, looked up there) and on
# all of them.
cat >"$WORK/empty1.sql" <<'SQL'
\set r random(-1000000, -1)
SELECT id FROM docs WHERE id = :r;
SQL
echo "SELECT id FROM docs WHERE id < 0;" >"$WORK/empty3.sql"
lookup_ref=$(pg_lat "$WORK/lookup_docs_ref.sql")
lookup_sh=$(pg_lat "$WORK/lookup_docs.sql")
empty1=$(pg_lat "$WORK/empty1.sql")
empty3=$(pg_lat "$WORK/empty3.sql")
result "lookup, one server (docs_ref)" "$lookup_ref" ms
result "lookup, $SHARDS shards" "$lookup_sh" ms "one server" "$lookup_ref"
result "empty statement via 1 shard (id = r < 0)" "$empty1" ms
result "empty statement via $SHARDS shards (id < 0)" "$empty3" ms "via 1 shard" "$empty1"

# --- (b) batch check
echo "== (b) batch check of $NEW new documents ($((NEW / 2)) near copies), k=$K"
echo "statement (on docs, and the same on docs_ref):"
batch_sql docs | sed 's/^/    /'
echo "nested-loop join baseline: $NL_SQL"
plan=$(q -c "EXPLAIN (VERBOSE, COSTS OFF) $(batch_sql docs)")
[[ $(grep -c "Async Foreign Scan on public.docs_shard" <<<"$plan") == "$SHARDS" &&
    $(grep -cF "WHERE ((fp OPERATOR(public.$OP) \$1::public.hamming_batch))" <<<"$plan") == "$SHARDS" ]] ||
    fail "(b) the batch check is not shipped to every shard: $plan"
echo "plan: $SHARDS Async Foreign Scans, Remote SQL ... WHERE ((fp OPERATOR(public.$OP) \$1::public.hamming_batch))"
plan_ref=$(q -c "EXPLAIN (COSTS OFF) $(batch_sql docs_ref)" | grep -o -m1 '\(Parallel \)\?\(Seq Scan\|Bitmap Heap Scan\|Index Scan\|Index Only Scan\) on docs_ref' || true)
plan_nl=$(q -c "EXPLAIN (COSTS OFF) $NL_SQL" | grep -o -m1 '\(Parallel \)\?\(Seq Scan\|Bitmap Heap Scan\|Index Scan\|Index Only Scan\)\( using [a-z_]*\)\? on docs_ref' || true)
echo "docs_ref batch plan: $plan_ref; nested-loop join's inner: $plan_nl"
q -c "CREATE TABLE res_shards AS $(batch_sql docs)" -c "CREATE TABLE res_ref AS $(batch_sql docs_ref)" \
    -c "CREATE TABLE res_nl AS $NL_SQL"
read -r n_nl n_sh n_rb d1 d2 d3 d4 <<<"$(q -F ' ' <<'SQL'
SELECT (SELECT count(*) FROM res_nl), (SELECT count(*) FROM res_shards), (SELECT count(*) FROM res_ref),
       (SELECT count(*) FROM (TABLE res_shards EXCEPT TABLE res_nl) s), (SELECT count(*) FROM (TABLE res_nl EXCEPT TABLE res_shards) s),
       (SELECT count(*) FROM (TABLE res_ref EXCEPT TABLE res_nl) s), (SELECT count(*) FROM (TABLE res_nl EXCEPT TABLE res_ref) s)
SQL
)"
[[ $d1 == 0 && $d2 == 0 ]] || fail "(b) sharded batch check differs from the join: $d1 rows only sharded, $d2 only in the join"
[[ $d3 == 0 && $d4 == 0 ]] || fail "(b) docs_ref batch check differs from the join: $d3 rows only in the batch, $d4 only in the join"
((n_nl >= NEW / 2)) || fail "(b) only $n_nl matches for $((NEW / 2)) near copies"
echo "result sets equal (EXCEPT both ways empty): $n_nl (new_id, corpus_id) rows; sharded $n_sh, docs_ref batch $n_rb rows"
batch_nl=$(med_ms "$NL_SQL")
batch_ref=$(med_ms "$(batch_sql docs_ref)")
batch_sh=$(med_ms "$(batch_sql docs)")
result "batch check, one server, nested-loop join" "$batch_nl" ms
result "batch check, one server, $OP batch" "$batch_ref" ms "nested-loop join" "$batch_nl"
result "batch check, $SHARDS shards, $OP batch" "$batch_sh" ms "nested-loop join" "$batch_nl"
result "batch check, $SHARDS shards, $OP batch" "$batch_sh" ms "one server $OP batch" "$batch_ref"
# The coordinator's local share: building the batch, its text form (postgres_fdw sends
# parameters as text, once per shard), the keys of the returned rows, fetching rows.
q -c "CREATE TABLE bt AS SELECT hamming_batch(array_agg(id), array_agg(fp), $K) AS batch FROM new_docs" \
    -c "CREATE TABLE res_rows AS SELECT DISTINCT d.id, d.fp FROM res_nl r JOIN docs_ref d ON d.id = r.corpus_id"
n_res_rows=$(q -c "SELECT count(*) FROM res_rows")
c_build=$(med_ms "SELECT hamming_batch(array_agg(id), array_agg(fp), $K) FROM new_docs")
# (the batch comes from a CTE, as in the statement: read from a table, every call would
# detoast it again)
CTE_B="WITH b AS MATERIALIZED (SELECT hamming_batch(array_agg(id), array_agg(fp), $K) AS batch FROM new_docs)"
minus() { calc "($1 > $2 ? $1 - $2 : 0)"; } # A - B, at least 0
c_text=$(minus "$(med_ms "$CTE_B SELECT length(batch::text) FROM b")" "$c_build")
c_keys=$(minus "$(med_ms "$CTE_B SELECT count(*) FROM res_rows r, unnest(hamming_batch_keys((SELECT batch FROM b), r.fp)) k")" "$c_build")
fetch_n=$(q -c "SELECT count(*) FROM docs_shard1")
fetch_ms=$(med_ms "SELECT id, fp FROM docs_shard1")
c_row=$(calc "$fetch_ms / $fetch_n")
q -c "SELECT batch FROM bt" >"$WORK/batch_main.txt"
echo "shard 1 plans its remote statement (batch bound as text, custom plan) as: $(batch_explain "$WORK/batch_main.txt" | shards_psql 1 | explain_summary);" \
    "with enable_seqscan = off: $(batch_explain "$WORK/batch_main.txt" "SET enable_seqscan = off" | shards_psql 1 | explain_summary)"
echo "coordinator: batch build $c_build ms, batch to text $c_text ms ($(q -c "SELECT pg_size_pretty(length(batch::text)::bigint) FROM bt")), keys of $n_res_rows rows $c_keys ms, fetch $(calc "$c_row * 1000") us per row (from shard 1, $fetch_n rows)"

# --- (c) all pairs
B=$(q -c "SELECT hamming_join_blocks($ROWS, $K)")
T=$(q -c "SELECT cardinality(hamming_join_keys('0000000000000000', $K, $B))")
# the layout the target corpus would use (for the model)
B_TARGET=$(q -c "SELECT hamming_join_blocks($TARGET_ROWS, $K)")
T_TARGET=$(q -c "SELECT cardinality(hamming_join_keys('0000000000000000', $K, $B_TARGET))")
echo "== (c) all pairs at k=$K: key table with $B blocks ($T keys per fingerprint, hamming_join_blocks($ROWS, $K))"
for i in $(seq "$SHARDS"); do shards_psql "$i" -c "CREATE TABLE fp_keys (key bigint, id bigint, fp simhash64)"; done
{
    echo "CREATE TABLE fp_keys (key bigint, id bigint, fp simhash64) PARTITION BY HASH (key);"
    for i in $(seq "$SHARDS"); do
        echo "CREATE FOREIGN TABLE fp_keys_shard$i PARTITION OF fp_keys FOR VALUES WITH (MODULUS $SHARDS, REMAINDER $((i - 1)))
              SERVER shard$i OPTIONS (table_name 'fp_keys', use_remote_estimate 'true');"
    done
} | q
FILL_SQL="INSERT INTO fp_keys SELECT k, id, fp FROM docs, unnest(hamming_join_keys(fp, $K, $B)) k"
echo "fill: $FILL_SQL"
fill_ms=$(wall_ms "$FILL_SQL")
t=$(date +%s%N)
pids=()
for i in $(seq "$SHARDS"); do shards_psql "$i" -c "ANALYZE fp_keys" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
analyze_ms=$((($(date +%s%N) - t) / 1000000))
# PostgreSQL 15's postgres_fdw samples a foreign table by reading all its rows
analyze_coord_ms=$(wall_ms "ANALYZE fp_keys")
keyrows=$(q -c "SELECT count(*) FROM fp_keys")
[[ $keyrows == $((ROWS * T)) ]] || fail "(c) fp_keys has $keyrows rows, expected $((ROWS * T))"
echo "key table: $keyrows rows ($(for i in $(seq "$SHARDS"); do shards_psql "$i" -c "SELECT pg_size_pretty(pg_table_size('fp_keys'))"; done | paste -sd/) per shard)"
echo "pairs statement ($PWJ):"
join_sql "$B" | sed 's/^/    /'
plan=$(q -c "$PWJ" -c "EXPLAIN (VERBOSE, COSTS OFF) $(join_sql "$B")")
[[ $(grep -c "Async Foreign Scan" <<<"$plan") == "$SHARDS" &&
    $(grep -c "Relations: (public.fp_keys_shard[0-9]* a_[0-9]*) INNER JOIN (public.fp_keys_shard[0-9]* b_[0-9]*)" <<<"$plan") == "$SHARDS" ]] ||
    fail "(c) the key join is not pushed down to every shard: $plan"
echo "plan: Append of $SHARDS Async Foreign Scans, each a remote join"
q -c "$PWJ" -c "CREATE TABLE pairs_shards AS $(join_sql "$B")" \
    -c "CREATE TABLE pairs_ref AS SELECT a, b FROM hamming_pairs('docs_ref', 'id', 'fp', $K)"
read -r n_pairs n_pairs_distinct n_pairs_ref d1 d2 in_pairs <<<"$(q -F ' ' <<'SQL'
SELECT (SELECT count(*) FROM pairs_shards), (SELECT count(*) FROM (SELECT DISTINCT a, b FROM pairs_shards) s),
       (SELECT count(*) FROM pairs_ref),
       (SELECT count(*) FROM (TABLE pairs_shards EXCEPT TABLE pairs_ref) s), (SELECT count(*) FROM (TABLE pairs_ref EXCEPT TABLE pairs_shards) s),
       (SELECT count(*) FROM (SELECT a FROM pairs_ref UNION SELECT b FROM pairs_ref) s)
SQL
)"
[[ $d1 == 0 && $d2 == 0 ]] || fail "(c) sharded pairs differ from hamming_pairs: $d1 only sharded, $d2 only in hamming_pairs"
[[ $n_pairs == "$n_pairs_distinct" ]] || fail "(c) the key join reports $((n_pairs - n_pairs_distinct)) pairs more than once"
[[ $n_pairs == "$n_pairs_ref" ]] || fail "(c) $n_pairs sharded pairs, $n_pairs_ref from hamming_pairs"
((n_pairs > 0)) || fail "(c) no pairs"
echo "pair sets equal: $n_pairs pairs, each once; $in_pairs rows ($(calc "100 * $in_pairs / $ROWS") %) in a pair"
pairs_ref=$(med_ms "SELECT a, b FROM hamming_pairs('docs_ref', 'id', 'fp', $K)")
pairs_sh=$(med_ms "$PWJ" "$(join_sql "$B")")
result "key table fill ($keyrows key rows), one-off" "$fill_ms" ms
result "key table ANALYZE on the shards" "$analyze_ms" ms
result "key table ANALYZE on the coordinator" "$analyze_coord_ms" ms
result "all pairs, one server, hamming_pairs" "$pairs_ref" ms
result "all pairs, $SHARDS shards, key self-join" "$pairs_sh" ms "hamming_pairs" "$pairs_ref"
echo "(the key self-join's planning on the coordinator, remote estimates included: $(plan_ms "$PWJ" "$(join_sql "$B")") ms, not in the figure)"

# --- (d) clusters
echo "== (d) clusters at k=$K"
COMP_SQL="SELECT node, component FROM neardup_components(\$q\$$(join_sql "$B" | tr '\n' ' ')\$q\$)"
CLU_SQL="SELECT id, cluster_id FROM neardup_clusters('docs_ref'::regclass, 'id', 'fp', $K, NULL)"
echo "sharded:    $COMP_SQL"
echo "one server: $CLU_SQL"
q -c "$PWJ" -c "CREATE TABLE comp_shards AS $COMP_SQL" -c "CREATE TABLE clu_ref AS $CLU_SQL"
read -r n_comp n_clu d1 d2 <<<"$(q -F ' ' <<'SQL'
CREATE TABLE clu_ref2 AS SELECT id, cluster_id FROM clu_ref WHERE cluster_id IN
    (SELECT cluster_id FROM clu_ref GROUP BY cluster_id HAVING count(*) > 1);
SELECT (SELECT count(DISTINCT component) FROM comp_shards), (SELECT count(DISTINCT cluster_id) FROM clu_ref2),
       (SELECT count(*) FROM (SELECT node, component FROM comp_shards EXCEPT SELECT id, cluster_id FROM clu_ref2) s),
       (SELECT count(*) FROM (SELECT id, cluster_id FROM clu_ref2 EXCEPT SELECT node, component FROM comp_shards) s);
SQL
)"
sizes_sh=$(q -c "SELECT string_agg(size || ':' || n, ' ' ORDER BY size) FROM (SELECT size, count(*) n FROM (SELECT count(*) size FROM comp_shards GROUP BY component) s GROUP BY size) t")
sizes_ref=$(q -c "SELECT string_agg(size || ':' || n, ' ' ORDER BY size) FROM (SELECT size, count(*) n FROM (SELECT count(*) size FROM clu_ref2 GROUP BY cluster_id) s GROUP BY size) t")
echo "clusters of 2+ rows: sharded $n_comp (size:count $sizes_sh), one server $n_clu (size:count $sizes_ref)"
[[ $n_comp == "$n_clu" ]] || fail "(d) $n_comp sharded clusters, $n_clu on one server"
[[ $d1 == 0 && $d2 == 0 ]] || fail "(d) cluster members differ: $d1 (node, cluster) only sharded, $d2 only on one server"
echo "same clusters, same members, same labels (smallest id)"
clu_ref=$(med_ms "$CLU_SQL")
comp_sh=$(med_ms "$PWJ" "$COMP_SQL")
result "clusters, one server, neardup_clusters" "$clu_ref" ms
result "clusters, $SHARDS shards, components of pairs" "$comp_sh" ms "neardup_clusters" "$clu_ref"
shards_stop
echo "($((SECONDS - T0)) s so far)"

######## (e) one server: the shard's part at SCALE_ROWS
scale_lines=()
if [[ -z ${SKIP_SCALE:-} ]]; then
    echo "== (e) one server (a shard), the shard's part of each operation, at SCALE_ROWS"
    cluster_start "$SINGLE" "${CONF[@]}"
    s() { psql -XqAt -v ON_ERROR_STOP=1 -h "$SINGLE" "$@"; }
    s -c "CREATE EXTENSION neardup" -f "$GEN_SQL" >/dev/null
    SCALE_FORMAT='%-9s %-10s %-11s %-19s %-12s %-10s %-10s %-12s %-8s'
    scale_table=("$(printf "$SCALE_FORMAT" rows lookup batch "(batch's scan)" "batch, index" "key rows" "key build" "key join" pairs)")
    echo "${scale_table[0]}"
    plans=()
    for n in $SCALE_ROWS; do
        bs=$(s -c "SELECT hamming_join_blocks($n, $K)")
        s -c "SELECT setseed(0.42)" -c "SELECT gen_corpus($n)" -c "SELECT gen_new($NEW)" \
            -c "DROP TABLE IF EXISTS docs, fp_keys" -c "CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64)" \
            -c "INSERT INTO docs SELECT id, fp::simhash64 FROM gen" -c "CREATE INDEX docs_fp ON docs USING hamming (fp)" \
            -c "VACUUM ANALYZE docs" -c "DROP TABLE gen" >/dev/null
        # lookup: the statement a shard runs, from a client (pgbench)
        l=$(PGHOST=$SINGLE pg_lat "$WORK/lookup_docs.sql")
        # batch check: the shard's remote statement, the batch bound as text (custom plan)
        s -c "SELECT hamming_batch(array_agg(id), array_agg(fp), $K) FROM new_docs" >"$WORK/batch.txt"
        bplan=$(batch_explain "$WORK/batch.txt" | s | explain_summary)
        batch_time() { # [SET...]: median wall time of EXECUTE in psql (\timing), rows discarded
            {
                for set in "$@"; do echo "$set;"; done
                echo "PREPARE p(hamming_batch) AS SELECT id, fp FROM docs WHERE fp $OP \$1;"
                echo '\o /dev/null'
                echo '\timing on'
                for _ in $(seq "$REPS"); do echo "EXECUTE p('$(cat "$WORK/batch.txt")');"; done
            } >"$WORK/batch_time.sql"
            s -f "$WORK/batch_time.sql" | awk '/^Time:/ {print $2}' | median
        }
        b1=$(batch_time)
        b2=$(batch_time "SET enable_seqscan = off")
        # key self-join: the shard's key table (here all of this server's keys) and the remote SQL
        t=$(date +%s%N)
        s -c "CREATE TABLE fp_keys AS SELECT k AS key, id, fp FROM docs, unnest(hamming_join_keys(fp, $K, $bs)) k" -c "ANALYZE fp_keys" >/dev/null
        kb=$((($(date +%s%N) - t) / 1000000))
        kr=$(s -c "SELECT count(*) FROM fp_keys")
        JSQL="SELECT a.id, b.id FROM fp_keys a JOIN fp_keys b ON a.key = b.key AND a.id < b.id AND hamming_join_key(a.fp, b.fp, $K, $bs) = a.key"
        np=$(s -c "SELECT count(*) FROM ($JSQL) s")
        j=$(PGHOST=$SINGLE med_ms "$JSQL")
        scale_table+=("$(printf "$SCALE_FORMAT" "$n" "$l ms" "$b1 ms" "(${bplan%%,*})" "$b2 ms" "$kr" "$kb ms" "$j ms" "$np")")
        echo "${scale_table[-1]}"
        plans+=("$n: $bplan")
        scale_lines+=("$n $l $b1 $b2 $kr $j $np")
        s -c "DROP TABLE fp_keys" >/dev/null
    done
    scale_table+=("(lookup: pgbench -M prepared, median of $REPS x $SECS s; batch: the remote statement SELECT id, fp FROM docs WHERE fp $OP \$1"
        "  with the $NEW-entry batch as a text parameter (custom plan), psql \\timing incl. the round trip, median of $REPS; \"batch, index\":"
        "  the same with enable_seqscan = off; key join: EXPLAIN ANALYZE of the remote join, median of $REPS; key build: CREATE TABLE AS + ANALYZE)"
        "the batch's remote statement as planned (EXPLAIN ANALYZE): ${plans[*]/%/;}")
    printf '%s\n' "${scale_table[@]:$((${#plans[@]} + 1))}"
    cluster_stop "$SINGLE"
fi

######## summary and model
echo "== summary (copy from here)"
echo "bench/shards.sh  ROWS=$ROWS SCALE_ROWS=\"$SCALE_ROWS\" NEW=$NEW REPS=$REPS SECS=$SECS  ($SHARDS shards + coordinator on one $(nproc)-core machine: shards compete for the cores, so sharded times here include that contention)"
print_summary
((${#scale_lines[@]} == 0)) || printf '%s\n' "one server (a shard), the shard's part:" "${scale_table[@]}"
echo "correctness: batch check result sets equal ($n_nl rows); $n_pairs pairs equal to hamming_pairs; $n_comp clusters equal to neardup_clusters"
if ((${#scale_lines[@]} >= 2)); then
    python3 - "$TARGET_ROWS" "$TARGET_SHARDS" "$K" "$ROWS" "$SHARDS" "$NEW" \
        "$empty1" "$empty3" "$c_row" "$c_build" "$c_text" "$c_keys" "$n_res_rows" "$n_pairs" \
        "$lookup_sh" "$batch_sh" "$pairs_sh" "$fill_ms" "$keyrows" "$in_pairs" "$B_TARGET" "$T_TARGET" "${scale_lines[@]}" <<'PY'
import sys, math
a = sys.argv[1:]
target_rows, target_shards, k, rows, shards, new = (int(x) for x in a[:6])
empty1, empty3, c_row, c_build, c_text, c_keys = (float(x) for x in a[6:12])
n_res_rows, n_pairs = int(a[12]), int(a[13])
lookup_sh, batch_sh, pairs_sh, fill_ms = (float(x) for x in a[14:18])
keyrows_main, in_pairs, blocks_t, tables_t = (int(x) for x in a[18:22])
pts = [[float(v) for v in l.split()] for l in a[22:]]  # n lookup batch batch_index keyrows join pairs

def fit(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b

per_shard = target_rows / target_shards
xs = [p[0] for p in pts]
la, lb = fit(xs, [p[1] for p in pts])
ba, bb = fit(xs, [p[2] for p in pts])
bia, bib = fit(xs, [p[3] for p in pts])
ja, jb = fit([p[4] for p in pts], [p[5] for p in pts])
o = (empty3 - empty1) / (shards - 1)          # coordinator, per shard of a statement
def empty(s): return empty1 + (s - 1) * o      # a statement that finds nothing on s shards
print()
print("== scaling model (a MODEL, not a measurement): %s fingerprints on %d shards, %s per shard, k=%d" % (f"{target_rows:,}", target_shards, f"{per_shard:,.0f}", k))
print("per-shard fits on one server (least squares over %s fingerprints):" % ", ".join("%.3gM" % (x / 1e6) for x in xs))
print("  lookup       %.4f ms + %.4g ms per M fingerprints" % (la, lb * 1e6))
print("  batch check  %.2f ms + %.4g ms per M fingerprints (%d-entry batch, as planned)" % (ba, bb * 1e6, new))
print("  (index forced %.2f ms + %.4g ms per M fingerprints)" % (bia, bib * 1e6))
print("  key join     %.1f ms + %.4g ms per M key rows" % (ja, jb * 1e6))
print("coordinator: empty statement %.3f ms on 1 shard + %.4f ms per further shard; %.3g us per fetched row;" % (empty1, o, c_row * 1e3))
print("  batch: build %.1f ms, to text %.1f ms per shard, keys of %d matched rows %.1f ms" % (c_build, c_text, n_res_rows, c_keys))
# the layout the target corpus would use, and its key rows per shard
# random candidate pairs (a key shared by chance): the prefix is ~64 (blocks - k) / blocks bits
cand_t = tables_t * target_rows ** 2 / 2 ** (64 * (blocks_t - k) / blocks_t + 1)
keyrows_shard = target_rows * tables_t / target_shards
pairs_t = n_pairs * target_rows / rows
def model(s, n, kr, pairs, res_rows):
    lookup = la + lb * n + empty(s)
    batch = ba + bb * n + empty(s) + c_build + s * c_text + c_keys * res_rows / max(n_res_rows, 1) + res_rows * c_row
    join = ja + jb * kr + empty(s) + pairs * c_row
    return lookup, batch, join
# sanity: the model at this run's size against what was measured on 3 shards
ml, mb, mj = model(shards, rows / shards, keyrows_main / shards, n_pairs, n_res_rows)
print("model at this run's size (%d shards x %.3gM) vs measured: lookup %.3f vs %.3f ms, batch %.1f vs %.1f ms, pairs %.0f vs %.0f ms"
      % (shards, rows / shards / 1e6, ml, lookup_sh, mb, batch_sh, mj, pairs_sh))
print("  (measured: %d shards and the coordinator share this machine's cores; the model gives each shard a server like the one of the fits)" % shards)
ml, mb, mj = model(target_shards, per_shard, keyrows_shard, pairs_t, n_res_rows)
print("at %s on %d shards:" % (f"{target_rows:,}", target_shards))
print("  lookup        %8.2f ms   = shard %.3f + coordinator %.3f (%d shards' statements)" % (ml, la + lb * per_shard, empty(target_shards), target_shards))
print("  batch check   %8.0f ms   = shard %.0f + coordinator %.0f (%d statements, batch build, %d x text, %d rows' keys and fetch)"
      % (mb, ba + bb * per_shard, mb - ba - bb * per_shard, target_shards, target_shards, n_res_rows))
print("  batch check   %8.0f ms   if the shards scanned the hamming index (the \"batch, index\" fit: shard %.0f ms)"
      % (mb - ba - bb * per_shard + bia + bib * per_shard, bia + bib * per_shard))
print("  all pairs     %8.1f s    = shard %.1f s (%.3gM key rows: %d blocks, %d keys per fingerprint) + coordinator %.1f s (%.3gM pairs fetched)"
      % (mj / 1e3, (ja + jb * keyrows_shard) / 1e3, keyrows_shard / 1e6, blocks_t, tables_t, (mj - ja - jb * keyrows_shard) / 1e3, pairs_t / 1e6))
print("  key table fill through one coordinator (as measured here: %.3g key rows/s): %.1f h, one-off" % (keyrows_main / fill_ms * 1e3, target_rows * tables_t / (keyrows_main / fill_ms * 1e3) / 3600))
print("assumptions: shards run concurrently and each is a server like this one; linear in fingerprints (lookup, batch)")
print("  or key rows (join) per shard; extrapolated %.1fx beyond the largest point; the coordinator's per-shard cost linear in" % (max(per_shard / xs[-1], keyrows_shard / pts[-1][4])))
print("  shards (postgres_fdw opens and commits remote transactions one after another); pairs grow with the corpus (%.2g%% of rows in pairs);" % (100.0 * in_pairs / rows))
print("  random candidate pairs at %d blocks: ~%.3gM per shard (%.0f%% of its key rows), beyond the fit's; matched rows of the batch as here." % (blocks_t, cand_t / target_shards / 1e6, 100 * cand_t / target_shards / keyrows_shard))
PY
fi
echo "total $((SECONDS - T0)) s"
