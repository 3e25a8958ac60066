#!/usr/bin/env bash
# Wide codes (hash256): what multi-index hashing gives today, beside FAISS in the same run.
#   data: N PDQ hashes of crops and near-copies of scikit-image's sample images (natural codes:
#         many small distances), and N uniform random codes; their histograms of the distance
#         to the nearest other code (bench/wide_codes_data.py)
#   (a) all pairs within R bits: hamming_pairs (multi-index hashing, one backend) against
#       FAISS IndexBinaryFlat range search of every code against all (one thread), on both
#       sets; the pair counts must be equal
#   (b) one lookup within R bits: a sequential scan `hamming(code, q) <= R` against FAISS
#       IndexBinaryFlat and IndexBinaryMultiHash (16 tables of 16 bits; FAISS's default
#       nflip = 0, which can miss a code 31 bits away, and exact, nflip = 1) per single
#       query, and MultiHash's recall; the hamming index (`code <@ hamming_ball(q, R)`, multi-index
#       hashing in its runs) and a GIN index on hamming_keys(code, M) (M substrings, 16 unless
#       given), the same rows as the scan; the 10 nearest codes through the hamming index
#       (`ORDER BY code <~> q LIMIT 10`) against a sequential scan and sort, the same
#       distances
#   (c) BATCH codes (every N/BATCH-th row) checked at once: `code <@@ hamming_batch(...)`, one
#       index scan, against a nested loop of one index lookup per code and against FAISS
#       MultiHash's range search of all of them in one call (exact MultiHash's rows, checked)
#   (d) the duplicate groups within R bits: neardup_clusters against neardup_components over
#       hamming_pairs (the same groups, checked)
# Usage (as root): N=100000 R=31 M=16 BATCH=1000 bench/wide_codes.sh   (SKIP_INSTALL=1 to keep the installed
# build; REUSE=1 to keep the codes of a run of the same N; PYVENV names a virtualenv with
# faiss-cpu, pdqhash and scikit-image, made once)
# PLOT_DIR=docs/plots PLOT_PYTHON=VENV/bin/python: adds this N to (b)'s lookup times,
# docs/plots/wide_lookup_pdq.csv and wide_lookup_uniform.csv, and redraws their SVGs (one run
# per N; bench/lib.sh, plot_point).
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-wide
OUT=${OUT:-/tmp/neardup-bench-wide-out}
N=${N:-100000}
R=${R:-31}
M=${M:-16}
PROBES=${PROBES:-50}
BATCH=${BATCH:-1000}
PYVENV=${PYVENV:-/tmp/pyvenv}
trap 'cluster_stop "$DIR"' EXIT
q() { psql -qAtX -v ON_ERROR_STOP=1 "$@"; }
failed=0
fail() { echo "   FAIL: $*"; failed=1; }

python_venv "$PYVENV" "faiss, pdqhash, skimage" faiss-cpu pdqhash scikit-image numpy
py() { "$PYVENV/bin/python3" "$ROOT/bench/wide_codes_data.py" "$@"; }

echo "== data: $N codes each"
if [[ -n ${REUSE:-} && $(wc -l <"$OUT/pdq.tsv" 2>/dev/null) == "$N" ]]; then
    echo "   reusing $OUT (REUSE=1)"
else
    rm -rf "$OUT" && mkdir -p "$OUT"
    py generate "$N" "$OUT"
fi

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '512MB'" "maintenance_work_mem = '1GB'" "work_mem = '256MB'" "jit = off"
# one backend against one FAISS thread
export PGOPTIONS="-c max_parallel_workers_per_gather=0"
q -c "CREATE EXTENSION neardup"
for set in pdq uniform; do
    q -c "CREATE TABLE $set (id bigint PRIMARY KEY, code hash256, kind text, source bigint)" \
        -c "\\copy $set FROM '$OUT/$set.tsv'" -c "VACUUM ANALYZE $set"
    gin_ms=$(wall_ms "CREATE INDEX ON $set USING gin (hamming_keys(code, $M))")
    result "$set: GIN on hamming_keys($M), build" "$gin_ms" ms
    result "$set: GIN on hamming_keys($M), bytes a row" "$(q -c "SELECT pg_relation_size('${set}_hamming_keys_idx') / $N")" B "the code" 32
    hamming_ms=$(wall_ms "CREATE INDEX ${set}_hamming ON $set USING hamming (code) WITH (max_distance = $R)")
    result "$set: hamming index, build" "$hamming_ms" ms "GIN on hamming_keys($M)" "$gin_ms"
    result "$set: hamming index, bytes a row" "$(q -c "SELECT pg_relation_size('${set}_hamming') / $N")" B "the code" 32
    q -c "ANALYZE $set"
done

echo "== (a) all pairs within $R bits"
for set in pdq uniform; do
    read -r faiss_pairs faiss_s < <(py pairs "$OUT/$set.tsv" "$R")
    sql="SELECT count(*) FROM hamming_pairs('$set', 'id', 'code', $R)"
    ours=$(q -c "$sql")
    [[ $ours == "$faiss_pairs" ]] || fail "$set: hamming_pairs found $ours pairs, FAISS $faiss_pairs"
    ms=$(median_ms 3 "$sql")
    result "$set: hamming_pairs, $ours pairs" "$(printf %.0f "$ms")" ms "FAISS range search (flat)" "$(awk -v s="$faiss_s" 'BEGIN { printf "%.0f", s * 1000 }')"
done

echo "== (b) one lookup within $R bits ($PROBES probes, median)"
# INDEX_ONLY COMMAND...: with sequential scans off, so that the index is what is timed (at
# 10 k and 30 k codes the planner prefers a sequential scan for a lookup within 31 bits)
INDEX_ONLY() { PGOPTIONS="${PGOPTIONS:-} -c enable_seqscan=off" "$@"; }
for set in pdq uniform; do
    read -r flat_ms multi_ms recall found exact_ms exact_recall < <(py lookups "$OUT/$set.tsv" "$R" "$PROBES")
    probe=$(q -c "SELECT code FROM $set WHERE id = $((N / 2))")
    # (`+ 0`: the bound as written, which the planner hook would hand to the hamming index)
    scan="SELECT id FROM $set WHERE hamming(code, '$probe') + 0 <= $R"
    scan_ms=$(session_median_ms 5 "$scan")
    result "$set: sequential scan" "$scan_ms" ms "FAISS IndexBinaryFlat" "$flat_ms"
    # a GIN index on the keys of multi-index hashing, M substrings (the same rows)
    gin="SELECT id FROM $set WHERE hamming_keys(code, $M) && hamming_probe_keys('$probe'::hash256, $R, $M)
                               AND hamming(code, '$probe') + 0 <= $R"
    [[ $(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM ($gin) g") == $(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM ($scan) s") ]] ||
        fail "$set: the GIN lookup and the sequential scan differ"
    [[ $(INDEX_ONLY q -c "EXPLAIN $gin") == *"Bitmap Index Scan on ${set}_hamming_keys_idx"* ]] || fail "$set: the GIN lookup does not use the index"
    [[ $(q -c "EXPLAIN $scan") == *"Seq Scan"* ]] || fail "$set: the baseline is not a sequential scan"
    gin_ms=$(INDEX_ONLY session_median_ms 11 "$gin")
    result "$set: GIN on hamming_keys($M)" "$gin_ms" ms "sequential scan" "$scan_ms"
    result "$set: GIN on hamming_keys($M)" "$gin_ms" ms "FAISS IndexBinaryMultiHash" "$multi_ms"
    result "$set: FAISS IndexBinaryMultiHash (recall $recall)" "$multi_ms" ms "FAISS IndexBinaryFlat" "$flat_ms"
    result "$set: FAISS MultiHash exact (nflip 1, recall $exact_recall)" "$exact_ms" ms "FAISS IndexBinaryFlat" "$flat_ms"
    # the hamming index (the same rows, by an index scan)
    ball="SELECT id FROM $set WHERE code <@ hamming_ball('$probe'::hash256, $R)"
    [[ $(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM ($ball) h") == $(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM ($scan) s") ]] ||
        fail "$set: the hamming index lookup and the sequential scan differ"
    [[ $(INDEX_ONLY q -c "EXPLAIN $ball") == *"${set}_hamming"* ]] || fail "$set: the lookup does not use the hamming index"
    ball_ms=$(INDEX_ONLY session_median_ms 11 "$ball")
    result "$set: hamming index" "$ball_ms" ms "sequential scan" "$scan_ms"
    result "$set: hamming index" "$ball_ms" ms "FAISS IndexBinaryMultiHash" "$multi_ms"
    result "$set: hamming index" "$ball_ms" ms "FAISS MultiHash exact (nflip 1)" "$exact_ms"
    plot_point "wide_lookup_$set" "codes,hamming index (exact),sequential scan (exact),FAISS IndexBinaryFlat (exact),FAISS MultiHash nflip 0 (approximate),FAISS MultiHash nflip 1 (exact)" \
        "$N,$ball_ms,$scan_ms,$flat_ms,$multi_ms,$exact_ms"
    plot_draw "wide_lookup_$set" --logx --logy \
        --title "One lookup within $R bits among $set codes (hash256): ms, median (FAISS: of $PROBES queries, one thread)" \
        --xlabel "codes" --ylabel "ms per lookup" \
        --command "PLOT_DIR=docs/plots N=<codes> bench/wide_codes.sh"
    # the 10 nearest codes: the index's passes widening from R, against a scan and a sort
    knn="SELECT code <~> '$probe'::hash256 FROM $set ORDER BY code <~> '$probe'::hash256 LIMIT 10"
    sorted="SELECT d FROM (SELECT code <~> '$probe'::hash256 AS d FROM $set OFFSET 0) s ORDER BY d LIMIT 10"
    [[ $(q -c "SELECT string_agg(d::text, ',') FROM ($knn) k(d)") == $(q -c "SELECT string_agg(d::text, ',') FROM ($sorted) s") ]] ||
        fail "$set: the 10 nearest through the index and by a sort differ"
    [[ $(q -c "EXPLAIN $knn") == *"${set}_hamming"* ]] || fail "$set: the nearest codes do not use the hamming index"
    read -r knn_ms sorted_ms < <(paired_medians_ms 11 "$knn" "$sorted")
    result "$set: 10 nearest, hamming index" "$knn_ms" ms "sequential scan and sort" "$sorted_ms"
done

echo "== (c) $BATCH codes checked at once within $R bits: one batch (<@@ hamming_batch) against a lookup per code"
every=$((N / BATCH))
for set in pdq uniform; do
    probes="SELECT id, code FROM $set WHERE id % $every = 3"
    batch="SELECT id FROM $set WHERE code <@@ (SELECT hamming_batch(array_agg(id), array_agg(code), $R) FROM ($probes) p)"
    joined="SELECT DISTINCT s.id FROM ($probes) p JOIN $set s ON s.code <@ hamming_ball(p.code, $R)"
    [[ $(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM ($batch) b") == $(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM ($joined) j") ]] ||
        fail "$set: the batch and the lookups per code differ"
    [[ $(q -c "EXPLAIN $batch") == *"${set}_hamming"* ]] || fail "$set: the batch does not use the hamming index"
    [[ $(q -c "EXPLAIN $joined") == *"Index Cond"* ]] || fail "$set: the lookups per code do not use the index"
    found=$(q -c "SELECT count(*) FROM ($batch) b")
    read -r faiss_ms faiss_found exact_ms exact_found < <(py batch "$OUT/$set.tsv" "$R" "$every")
    [[ $exact_found == "$found" ]] || fail "$set: the batch found $found rows, FAISS MultiHash (nflip 1) $exact_found"
    read -r batch_ms joined_ms < <(paired_medians_ms 5 "$batch" "$joined")
    result "$set: batch of $BATCH codes ($found rows)" "$batch_ms" ms "a lookup per code" "$joined_ms"
    result "$set: batch of $BATCH codes" "$batch_ms" ms "FAISS MultiHash exact, $BATCH queries" "$exact_ms"
    result "$set: batch of $BATCH codes" "$batch_ms" ms "FAISS MultiHash ($faiss_found rows)" "$faiss_ms"
done

echo "== (d) duplicate groups within $R bits: neardup_clusters against the components of hamming_pairs"
for set in pdq uniform; do
    clusters="SELECT count(*) FROM neardup_clusters('$set', 'id', 'code', $R)"
    components="SELECT count(*) FROM neardup_components('SELECT a, b FROM hamming_pairs(''$set'', ''id'', ''code'', $R)')"
    # the same groups: every row of a group of two or more in one, labelled alike
    differ=$(q -c "SELECT count(*) FROM (SELECT id, cluster_id FROM neardup_clusters('$set', 'id', 'code', $R)
                                         WHERE cluster_id IN (SELECT cluster_id FROM neardup_clusters('$set', 'id', 'code', $R)
                                                              GROUP BY 1 HAVING count(*) > 1)) c
                   FULL JOIN neardup_components('SELECT a, b FROM hamming_pairs(''$set'', ''id'', ''code'', $R)') p
                        ON p.node = c.id AND p.component = c.cluster_id
                   WHERE p.node IS NULL OR c.id IS NULL")
    [[ $differ == 0 ]] || fail "$set: neardup_clusters and the components of hamming_pairs differ in $differ rows"
    read -r ours theirs < <(paired_medians_ms 3 "$clusters" "$components")
    result "$set: neardup_clusters" "$(printf %.0f "$ours")" ms "neardup_components(hamming_pairs)" "$(printf %.0f "$theirs")"
done

echo
print_summary
((failed == 0)) || exit 1
