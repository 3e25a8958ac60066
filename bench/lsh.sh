#!/usr/bin/env bash
# Minhash LSH (issue 12) on the full Debian corpus (table docs, bench/lib.sh), in one run:
#   (a) quality at thresholds 0.5, 0.7, 0.8, 0.9, num_hashes = 128, 8-word shingles:
#       precision and recall of minhash_pairs('s', 'id', 'mh', t) (s.mh = minhash(body, 128))
#       against the EXACT Jaccard of the same shingle sets (neardup_core's 64-bit shingle
#       hashes, computed by `neardup-quality --lsh-truth`: a prefix-filter join), beside
#       datasketch's MinHashLSH(threshold=t, num_perm=128) fed the very same shingle hashes
#       (bench/lsh_datasketch.py: its pairs are what query() returns, unverified, as users
#       use it; how many of them would pass verification is counted too).
#       Pairs are unordered pairs of document ids, each once. Rows with identical shingle
#       sets (mostly byte-identical bodies under several package names) pair at J = 1 like
#       any other rows, as minhash_pairs reports them; the "J<1" lines give the figures over
#       the pairs whose sets differ, where the two methods actually differ.
#       Goals: our recall >= datasketch's at every threshold; no pair of ours has an
#       estimate below its threshold (recomputed with jaccard(a.mh, b.mh); must be 0).
#   (b) speed: the whole-table dedup at 0.8 from text, end to end, serial:
#       CREATE TABLE AS minhash(body, 128) + SELECT count(*) FROM minhash_pairs(...), and
#       the indexed self-join (CREATE TABLE AS with an lsh_bands(mh, 0.8) column, CREATE
#       INDEX USING gin, ANALYZE, the join; its plan must use the index and it must find
#       minhash_pairs' pairs), each the median of ROUNDS, against datasketch in one Python
#       process from the same texts (tokenize, 8-word shingles, MinHash.bulk(num_perm=128),
#       MinHashLSH(0.8, 128) insert all, query all; median of ROUNDS passes). Goal: >= 20x
#       faster. Also the parts: CREATE INDEX against a built-in GIN over as many random
#       bigint keys, and the join alone against minhash_pairs alone.
# Correctness failures (a pair below its threshold, duplicate or unordered pairs, the plan
# without the index, the two SQL paths disagreeing) exit 1; missed goals are printed.
# Usage: flock /tmp/neardup-pg.lock bench/lsh.sh      (SKIP_INSTALL=1: the installed build)
#        ROUNDS=3 PYVENV=/tmp/pyvenv OUT=/tmp/neardup-bench-lsh-out bench/lsh.sh
#        THRESHOLDS="0.5 0.6 0.7 0.8 0.9 0.95" bench/lsh.sh    (the thresholds of (a))
# PLOT_DIR=docs/plots PLOT_PYTHON=VENV/bin/python: (a)'s recall and precision against the
# threshold, both methods, as docs/plots/lsh_recall.csv and .svg (bench/lib.sh, plot_row).
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-lsh
OUT=${OUT:-/tmp/neardup-bench-lsh-out}
ROUNDS=${ROUNDS:-3}
PYVENV=${PYVENV:-/tmp/pyvenv}
read -ra THRESHOLDS <<<"${THRESHOLDS:-0.5 0.7 0.8 0.9}"
NUM_HASHES=128
T0=$SECONDS
trap 'cluster_stop "$DIR"' EXIT
q() { psql -qAtX -v ON_ERROR_STOP=1 "$@"; }
failed=0
fail() { echo "   FAIL: $*"; failed=1; }

python_venv "$PYVENV" "datasketch, numpy, scipy" datasketch numpy scipy

rm -rf "$OUT" && mkdir -p "$OUT"
bench_cluster "$DIR" "maintenance_work_mem = '256MB'" "work_mem = '256MB'" "jit = off"
# Everything serial (one process against datasketch's one); no NOTICEs from DROP IF EXISTS.
export PGOPTIONS="-c max_parallel_workers_per_gather=0 -c client_min_messages=warning"

echo "== (a) quality against exact Jaccard of 8-word shingle sets, num_hashes $NUM_HASHES"
echo "   pairs: unordered pairs of document ids, each once; rows with identical shingle sets pair at"
echo "   J = 1 and count like any pair (every method finds them); '(J<1 only)' lines leave them out"
(cd "$ROOT" && cargo build --quiet --release -p neardup-quality)
"$ROOT/target/release/neardup-quality" --lsh-truth "$CORPUS" "$OUT" "${THRESHOLDS[0]}" | sed 's/^/   /'
q -c "CREATE TABLE s AS SELECT id, minhash(body, $NUM_HASHES) AS mh FROM docs" -c "VACUUM ANALYZE s" \
    -c "CREATE TABLE truth (a bigint, b bigint, j float8)" -c "\\copy truth FROM '$OUT/truth.tsv'"
declare -A BANDS BELOW CEILING
for t in "${THRESHOLDS[@]}"; do
    q -c "CREATE TABLE ours AS SELECT * FROM minhash_pairs('s', 'id', 'mh', $t)" \
        -c "\\copy ours TO '$OUT/ours_$t.tsv'"
    BANDS[$t]=$(q -c "SELECT bands || 'x' || rows FROM lsh_params($t, $NUM_HASHES, 0.1, 0.9)")
    # The estimate recomputed from the stored sketches, not taken from minhash_pairs' column.
    BELOW[$t]=$(q -c "SELECT count(*) FROM ours p JOIN s x ON x.id = p.a JOIN s y ON y.id = p.b
        WHERE jaccard(x.mh, y.mh) < $t OR p.jaccard <> jaccard(x.mh, y.mh)")
    # What any method verifying with these sketches could find at best: the true pairs whose
    # estimate reaches t. Pairs of identical sets must have identical sketches (else the truth's
    # shingles are not the SQL function's).
    ceiling=$(q -F ' ' -c "SELECT round(avg((jaccard(x.mh, y.mh) >= $t)::int), 4),
        count(*) FILTER (WHERE j = 1 AND x.mh::text <> y.mh::text)
        FROM truth JOIN s x ON x.id = a JOIN s y ON y.id = b WHERE j >= $t - 1e-12")
    read -r "CEILING[$t]" unequal <<<"$ceiling"
    [[ $unequal == 0 ]] || fail "$unequal true pairs with identical shingle sets have different sketches"
    q -c "DROP TABLE ours"
done

echo "   bench/lsh_datasketch.py quality (datasketch fed the same shingle hashes):"
py=$("$PYVENV/bin/python3" "$ROOT/bench/lsh_datasketch.py" quality "$OUT/shingles.bin" "$OUT/truth.tsv" "$OUT" \
    --num-perm "$NUM_HASHES" --thresholds "$(IFS=,; echo "${THRESHOLDS[*]}")")
grep -v '^figure' <<<"$py" | sed 's/^/   /'
fig() { awk -v n="$1" '$1 == "figure" && $2 == n { print $3 }' <<<"$py"; }

recall_goal=met
plot_reset lsh_recall
for t in "${THRESHOLDS[@]}"; do
    ours="minhash_pairs ${BANDS[$t]}"
    ds="datasketch LSH $(fig "ds_bands_$t"), unverified"
    echo "-- t = $t: $(fig "truth_$t") true id pairs, $(fig "truth_diff_$t") of them with J < 1"
    result "recall J>=$t, $ours" "$(fig "ours_recall_$t")" "" "$ds" "$(fig "ds_recall_$t")"
    result "precision J>=$t, $ours" "$(fig "ours_precision_$t")" "" "$ds" "$(fig "ds_precision_$t")"
    result "recall J>=$t (J<1 only), $ours" "$(fig "ours_recall_diff_$t")" "" "$ds" "$(fig "ds_recall_diff_$t")"
    result "precision J>=$t (J<1 only), $ours" "$(fig "ours_precision_diff_$t")" "" "$ds" "$(fig "ds_precision_diff_$t")"
    result "pairs reported at $t, $ours" "$(fig "ours_pairs_$t")" pairs "$ds" "$(fig "ds_pairs_$t")"
    result "recall J>=$t, $ours" "$(fig "ours_recall_$t")" "" "datasketch verified (estimate >= t)" "$(fig "dsv_recall_$t")"
    result "datasketch pairs with estimate >= $t" "$(fig "dsv_pairs_$t")" pairs "datasketch pairs, unverified" "$(fig "ds_pairs_$t")"
    result "recall J>=$t, $ours" "$(fig "ours_recall_$t")" "" "ceiling: true pairs with est. >= t" "${CEILING[$t]}"
    result "minhash_pairs pairs with estimate < $t" "${BELOW[$t]}" pairs
    echo "   true pairs we miss: $(fig "ours_missed_$t"), of which datasketch reports $(fig "ours_missed_ds_found_$t")"
    [[ ${BELOW[$t]} == 0 && $(fig "ours_below_t_$t") == 0 ]] || fail "minhash_pairs reports pairs with an estimate below $t"
    [[ $(fig "ours_duplicates_$t") == 0 && $(fig "ours_not_ordered_$t") == 0 ]] ||
        fail "minhash_pairs at $t: $(fig "ours_duplicates_$t") repeated pairs, $(fig "ours_not_ordered_$t") with a >= b"
    awk -v o="$(fig "ours_recall_$t")" -v d="$(fig "ds_recall_$t")" 'BEGIN { exit !(o >= d) }' ||
        recall_goal="MISSED at t = $t ($(fig "ours_recall_$t") < $(fig "ds_recall_$t")); $recall_goal"
    plot_row lsh_recall "threshold,minhash_pairs recall,datasketch LSH recall (unverified),minhash_pairs precision,datasketch LSH precision (unverified),ceiling: true pairs whose estimate reaches t" \
        "$t,$(fig "ours_recall_$t"),$(fig "ds_recall_$t"),$(fig "ours_precision_$t"),$(fig "ds_precision_$t"),${CEILING[$t]}"
done
plot_draw lsh_recall --title "MinHash LSH, $(q -c "SELECT count(*) FROM s") Debian texts, $NUM_HASHES hashes: the pairs with Jaccard >= t" \
    --xlabel "Jaccard threshold t" --ylabel "recall / precision of the pairs with J >= t" \
    --command "PLOT_DIR=docs/plots THRESHOLDS=\"${THRESHOLDS[*]}\" bench/lsh.sh"

echo "== (b) dedup of the whole table at 0.8 from text, end to end, serial"
N=$(q -c "SELECT count(*) FROM docs")
q -c "DROP TABLE s, truth"
# timed SQL...: runs the statements in one session; prints "ms last-output-line" (and fails
# with them: callers assign its output, so set -e stops the script).
timed() {
    local args=() sql start out
    for sql in "$@"; do args+=(-c "$sql"); done
    start=$(date +%s%N)
    out=$(q "${args[@]}" | tail -n 1) || return 1
    echo "$((($(date +%s%N) - start) / 1000000)) $out"
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
join_sql="SELECT count(*) FROM j a JOIN j b ON a.bands && b.bands AND a.id < b.id AND jaccard(a.mh, b.mh) >= 0.8"
pairs_runs=() join_runs=() sketch_runs=() pairs_alone=()
for _ in $(seq "$ROUNDS"); do
    q -c "DROP TABLE IF EXISTS s, j"
    r=$(timed "CREATE TABLE s AS SELECT id, minhash(body, $NUM_HASHES) AS mh FROM docs")
    read -r sketch_ms _ <<<"$r"
    r=$(timed "SELECT count(*) FROM minhash_pairs('s', 'id', 'mh', 0.8)")
    read -r pairs_ms pairs_count <<<"$r"
    pairs_runs+=($((sketch_ms + pairs_ms)))
    pairs_alone+=("$pairs_ms")
    sketch_runs+=("$sketch_ms")
    r=$(timed \
        "CREATE TABLE j AS SELECT id, mh, lsh_bands(mh, 0.8) AS bands FROM (SELECT id, minhash(body, $NUM_HASHES) AS mh FROM docs) x" \
        "CREATE INDEX j_bands ON j USING gin (bands)" "ANALYZE j" "$join_sql")
    read -r join_ms join_count <<<"$r"
    join_runs+=("$join_ms")
done
plan=$(q -c "EXPLAIN (COSTS OFF) $join_sql")
sed 's/^/   plan: /' <<<"$plan"
grep -q "j_bands" <<<"$plan" || fail "the join does not use the GIN index"
# The parts of the indexed path, the index build against a built-in GIN (array_ops) over as
# many random bigint keys per row as lsh_bands(mh, 0.8) has bands.
bands08=$(q -c "SELECT bands FROM lsh_params(0.8, $NUM_HASHES, 0.1, 0.9)")
q -c "CREATE TABLE r AS SELECT id, ARRAY(SELECT (random() * 9e18)::bigint FROM generate_series(1, $bands08 + 0 * id)) AS k FROM j"
index_ms=$(wall_ms "DROP INDEX j_bands" "CREATE INDEX j_bands ON j USING gin (bands)")
array_ms=$(wall_ms "CREATE INDEX r_k ON r USING gin (k)")
join_alone_ms=$(printf %.0f "$(median_ms "$ROUNDS" "$join_sql")")
echo "   index sizes: $(q -c "SELECT pg_size_pretty(pg_relation_size('j_bands')) || ' (lsh_bands), ' ||
    pg_size_pretty(pg_relation_size('r_k')) || ' (int8[])'")"
echo "   pairs at 0.8: $pairs_count by minhash_pairs, $join_count by the indexed join"
[[ $pairs_count == "$join_count" ]] || fail "minhash_pairs found $pairs_count pairs, the indexed join $join_count"

echo "   bench/lsh_datasketch.py speed on $CORPUS:"
pys=$("$PYVENV/bin/python3" "$ROOT/bench/lsh_datasketch.py" speed "$CORPUS" --num-perm "$NUM_HASHES" --threshold 0.8 \
    --passes "$ROUNDS")
grep -v '^figure' <<<"$pys" | sed 's/^/   /'
ds_ms=$(awk '$2 == "ds_speed_ms" { print $3 }' <<<"$pys")
pairs_med=$(printf '%s\n' "${pairs_runs[@]}" | median)
join_med=$(printf '%s\n' "${join_runs[@]}" | median)
sketch_med=$(printf '%s\n' "${sketch_runs[@]}" | median)
ds="datasketch LSH(0.8,$NUM_HASHES), 1 process"
result "CREATE TABLE AS minhash(body, $NUM_HASHES), $N rows" "$sketch_med" ms
result "dedup 0.8: minhash + minhash_pairs" "$pairs_med" ms "$ds" "$ds_ms"
result "dedup 0.8: minhash+bands, GIN, join" "$join_med" ms "$ds" "$ds_ms"
result "CREATE INDEX USING gin (bands), $N rows" "$index_ms" ms "gin (int8[] of $bands08 random keys)" "$array_ms"
result "the indexed join alone" "$join_alone_ms" ms "minhash_pairs alone" "$(printf '%s\n' "${pairs_alone[@]}" | median)"
speed_goal=$(awk -v o="$pairs_med" -v i="$join_med" -v d="$ds_ms" 'BEGIN {
    printf "minhash_pairs %.1fx, indexed join %.1fx faster: %s", d / o, d / i,
        (d / o >= 20 && d / i >= 20) ? "met" : "MISSED" }')

echo
echo "== summary ($N rows; $((SECONDS - T0)) s in all)"
print_summary
echo "goal (a) recall of minhash_pairs >= datasketch's at every threshold: $recall_goal"
echo "goal (a) pairs of ours with an estimate below the threshold: $(for t in "${THRESHOLDS[@]}"; do printf '%s at %s, ' "${BELOW[$t]}" "$t"; done)must be 0"
echo "goal (b) >= 20x datasketch end to end: $speed_goal"
exit "$failed"
