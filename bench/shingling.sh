#!/usr/bin/env bash
# Broder's shingling on the Debian corpus (table docs, bench/lib.sh), in one run:
#   (a) SELECT count(minhash(body)) and count(supershingles(body)) FROM docs, serial (median
#       of ROUNDS), against md5(body) in the same run (ratio of times), and in MB/s against
#       the Python libraries datasketch and rensa on the same texts (bench/minhash_python.py:
#       one process, best of 3; ratio of MB/s). Goals: >= 20x datasketch, >= rensa per core.
#   (b) the B-similar self-join a.ss % b.ss AND a.id < b.id of all rows through the GIN
#       index (CREATE INDEX timed against a built-in GIN over as many random bigint keys;
#       the plan must use the index), against a brute-force nested loop
#       b_similarity(a.ss, b.ss) >= 2 on the first SUBSET rows, extrapolated quadratically,
#       and against an exact hash join on (position, supershingle). The indexed join must
#       find the brute force's pairs on the subset and the hash join's on all rows (else
#       exit 1).
# Everything runs serially, with JIT off (no compilation in the times); ratios are value /
# baseline.
# Usage: SKIP_INSTALL=1 bench/shingling.sh   (benchmarks the build already installed)
#        ROUNDS=7 SUBSET=3000 PY_LIMIT=10000 PYVENV=/tmp/pyvenv bench/shingling.sh
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-shingling
ROUNDS=${ROUNDS:-7}
SUBSET=${SUBSET:-3000}
PYVENV=${PYVENV:-/tmp/pyvenv}
T0=$SECONDS
trap 'cluster_stop "$DIR"' EXIT
bench_cluster "$DIR" "maintenance_work_mem = '256MB'" "work_mem = '256MB'" "jit = off"
q() { psql -qAtX -v ON_ERROR_STOP=1 "$@"; }
ms_fmt() { printf %.1f "$1"; }
mbs() { awk -v mb="$MB" -v ms="$1" 'BEGIN { printf "%.1f", mb / (ms / 1000) }'; }
failed=0

export PGOPTIONS="-c max_parallel_workers_per_gather=0" # everything serial

echo "== (a) sketch throughput, median of $ROUNDS"
MB=$(q -c "SELECT round(sum(octet_length(body)) / 1e6, 3) FROM docs")
q -c "SELECT count(md5(body)), count(minhash(body)) FROM docs" >/dev/null # warm the cache
md5_ms=$(median_ms "$ROUNDS" "SELECT count(md5(body)) FROM docs")
minhash_ms=$(median_ms "$ROUNDS" "SELECT count(minhash(body)) FROM docs")
ss_ms=$(median_ms "$ROUNDS" "SELECT count(supershingles(body)) FROM docs")
md5="md5(body) at $(mbs "$md5_ms") MB/s"
result "$md5" "$(ms_fmt "$md5_ms")" ms
result "minhash(body) at $(mbs "$minhash_ms") MB/s" "$(ms_fmt "$minhash_ms")" ms "$md5" "$(ms_fmt "$md5_ms")"
result "supershingles(body) at $(mbs "$ss_ms") MB/s" "$(ms_fmt "$ss_ms")" ms "$md5" "$(ms_fmt "$md5_ms")"

if ! "$PYVENV/bin/python3" -c "import datasketch, rensa" 2>/dev/null; then
    echo "   creating $PYVENV with datasketch and rensa (once)"
    python3 -m venv "$PYVENV"
    "$PYVENV/bin/pip" install -q datasketch rensa
fi
echo "   bench/minhash_python.py on $CORPUS${PY_LIMIT:+ (first $PY_LIMIT texts)}:"
py=$("$PYVENV/bin/python3" "$ROOT/bench/minhash_python.py" "$CORPUS" ${PY_LIMIT:+--limit "$PY_LIMIT"})
sed 's/^/   /' <<<"$py"
datasketch=$(awk '$1 == "datasketch" { print $2 }' <<<"$py")
rensa=$(awk '$1 == "rensa" { print $2 }' <<<"$py")
result "minhash(body), serial" "$(mbs "$minhash_ms")" MB/s "datasketch MinHash(84), 1 process" "$datasketch"
result "minhash(body), serial" "$(mbs "$minhash_ms")" MB/s "rensa RMinHash(84), 1 process" "$rensa"

echo "== (b) B-similar self-join (% at threshold 2) through GIN"
N=$(q -c "SELECT count(*) FROM docs")
table_ms=$(wall_ms "CREATE TABLE s AS SELECT id, supershingles(body) AS ss FROM docs" "VACUUM ANALYZE s")
result "CREATE TABLE s AS supershingles(body)" "$table_ms" ms
# The baseline index: built-in GIN (array_ops) over as many random bigints per row as the
# operator class extracts (6 position keys + 15 megashingles).
q -c "CREATE TABLE r AS SELECT id, ARRAY(SELECT (random() * 9e18)::bigint FROM generate_series(1, 21 + 0 * id)) AS k FROM s"
array_ms=$(wall_ms "CREATE INDEX r_k ON r USING gin (k)")
gin_ms=$(wall_ms "CREATE INDEX s_ss ON s USING gin (ss)" "ANALYZE s")
result "CREATE INDEX USING gin (ss), $N rows" "$gin_ms" ms "gin (int8[] of 21 random keys)" "$array_ms"
echo "   index sizes: $(q -c "SELECT pg_size_pretty(pg_relation_size('s_ss')) || ' (ss), ' ||
    pg_size_pretty(pg_relation_size('r_k')) || ' (int8[])'")"

join() { echo "SELECT count(*) FROM $1 a JOIN $1 b ON a.ss % b.ss AND a.id < b.id"; }
brute() { echo "SELECT count(*) FROM $1 a JOIN $1 b ON b_similarity(a.ss, b.ss) >= 2 AND a.id < b.id"; }
# Exact without an index: rows agreeing in >= 2 positions, by a hash join on (position, value).
hash_join="WITH e AS (SELECT id, p, v FROM s, unnest(string_to_array(ss::text, ':')) WITH ORDINALITY u(v, p))
    SELECT count(*) FROM (SELECT FROM e a JOIN e b ON a.p = b.p AND a.v = b.v AND a.id < b.id
    GROUP BY a.id, b.id HAVING count(*) >= 2) pairs"
plan=$(q -c "EXPLAIN (COSTS OFF) $(join s)")
sed 's/^/   plan: /' <<<"$plan"
grep -q "Index Scan on s_ss" <<<"$plan" || { echo "   FAIL: the join does not use the GIN index"; failed=1; }
join_ms=$(median_ms 3 "$(join s)")
join_count=$(q -c "$(join s)")
hash_ms=$(median_ms 3 "$hash_join")
hash_count=$(q -c "$hash_join")

q -c "CREATE TABLE sub AS SELECT * FROM s ORDER BY id LIMIT $SUBSET" \
    -c "CREATE INDEX sub_ss ON sub USING gin (ss)" -c "VACUUM ANALYZE sub"
sub_join_ms=$(median_ms 3 "$(join sub)")
sub_join_count=$(q -c "$(join sub)")
brute_ms=$(median_ms 3 "$(brute sub)")
brute_count=$(q -c "$(brute sub)")
brute_est=$(awk -v ms="$brute_ms" -v n="$N" -v s="$SUBSET" 'BEGIN { printf "%.0f", ms * (n / s) ^ 2 }')
result "self-join via GIN, first $SUBSET rows" "$(ms_fmt "$sub_join_ms")" ms "nested loop b_similarity >= 2" "$(ms_fmt "$brute_ms")"
result "self-join via GIN, $N rows" "$(printf %.0f "$join_ms")" ms "nested loop, extrapolated" "$brute_est"
result "self-join via GIN, $N rows" "$(printf %.0f "$join_ms")" ms "hash join on (position, value)" "$(printf %.0f "$hash_ms")"
echo "   pairs: $join_count via GIN, $hash_count by hash join ($N rows); $sub_join_count via GIN, $brute_count by nested loop (first $SUBSET rows)"
[[ $join_count == "$hash_count" ]] || { echo "   FAIL: GIN join $join_count pairs, hash join $hash_count"; failed=1; }
[[ $sub_join_count == "$brute_count" ]] || { echo "   FAIL: GIN join $sub_join_count pairs, nested loop $brute_count"; failed=1; }

echo
echo "== summary ($N rows, $MB MB of text; $((SECONDS - T0)) s in all)"
print_summary
exit "$failed"
