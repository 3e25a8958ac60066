#!/usr/bin/env bash
# The hamming index on many wide codes, generated in SQL (PDQ codes of images take hours to
# compute at this size, see bench/wide_codes.sh): N uniform random hash256 codes (md5 of the
# row number) and, for one row in a hundred, a near copy two bits off. Measured in one run:
#   - the index's build time and size a row against the raw 32 bytes;
#   - lookups within R bits of four rows' codes (median of 21 each), and of one against a
#     sequential scan `hamming(code, q) + 0 <= R` (the same rows, checked);
#   - the 10 nearest codes through the index against the sequential scan;
#   - beside FAISS (faiss-cpu, one thread, in a venv made once): lookups of the same PROBES
#     codes (median over the probes, one timed run each after one untimed), against
#     IndexBinaryMultiHash (16 tables of 16 bits; FAISS's default nflip = 0, and exact with
#     nflip = 1) and IndexBinaryFlat range search, the rows found compared. FAISS=0 skips it.
# Uniform codes flatter multi-index hashing (no near neighbours but the planted ones).
# Usage (as root): N=10000000 R=31 bench/wide_codes_uniform.sh   (SKIP_INSTALL=1 to keep the
# installed build)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-wide-uniform
N=${N:-10000000}
R=${R:-31}
PROBES=${PROBES:-50}
PYVENV=${PYVENV:-/tmp/pyvenv}
OUT=/tmp/neardup-bench-wide-uniform-out
trap 'cluster_stop "$DIR"' EXIT
q() { psql -qAtX -v ON_ERROR_STOP=1 "$@"; }
failed=0
fail() { echo "   FAIL: $*"; failed=1; }

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '8GB'" "maintenance_work_mem = '4GB'" "work_mem = '256MB'" "jit = off" \
    "max_wal_size = '20GB'" "checkpoint_timeout = '1h'"
# one backend
export PGOPTIONS="-c max_parallel_workers_per_gather=0"
q -c "CREATE EXTENSION neardup"
load_ms=$(wall_ms "CREATE TABLE u AS SELECT g AS id, ('x' || md5(g::text) || md5((g + 977777777)::text))::bit(256)::hash256 AS code FROM generate_series(1, $N) g" \
    "INSERT INTO u SELECT $N + id, (code::bit(256) # (B'1'::bit(256) >> (id % 31)::int) # (B'1'::bit(256) >> (id % 200)::int))::hash256 FROM u WHERE id % 100 = 0" \
    "VACUUM ANALYZE u")
echo "   loaded $N codes and their near copies in $load_ms ms"
build_ms=$(wall_ms "CREATE INDEX u_code ON u USING hamming (code) WITH (max_distance = $R)")
result "hamming index build, $N rows" "$build_ms" ms
result "hamming index bytes a row" "$(q -c "SELECT pg_relation_size('u_code') / count(*) FROM u")" B "the code" 32
for id in 100 77 12345 $((N / 2)); do
    probe=$(q -c "SELECT code FROM u WHERE id = $id")
    ball="SELECT id FROM u WHERE code <@ hamming_ball('$probe'::hash256, $R)"
    [[ $(q -c "EXPLAIN $ball") == *u_code* ]] || fail "the lookup does not use the index"
    found=$(q -c "SELECT count(*) FROM ($ball) s")
    result "lookup within $R of row $id ($found rows)" "$(session_median_ms 21 "$ball")" ms
done
probe=$(q -c "SELECT code FROM u WHERE id = 100")
ball="SELECT id FROM u WHERE code <@ hamming_ball('$probe'::hash256, $R)"
scan="SELECT id FROM u WHERE hamming(code, '$probe') + 0 <= $R"
[[ $(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM ($ball) s") == $(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM ($scan) s") ]] ||
    fail "the index and the sequential scan differ"
scan_ms=$(session_median_ms 3 "$scan")
result "lookup within $R (row 100)" "$(session_median_ms 21 "$ball")" ms "sequential scan" "$scan_ms"
knn="SELECT id FROM u ORDER BY code <~> '$probe'::hash256 LIMIT 10"
[[ $(q -c "EXPLAIN $knn") == *u_code* ]] || fail "the nearest codes do not use the index"
result "10 nearest (row 100)" "$(session_median_ms 5 "$knn")" ms "sequential scan" "$scan_ms"

if [[ ${FAISS:-1} != 0 ]]; then
    python_venv "$PYVENV" "faiss" faiss-cpu numpy
    rm -rf "$OUT" && mkdir -p "$OUT" && chmod 777 "$OUT"
    q -c "\\copy (SELECT id, code FROM u) TO '$OUT/codes.tsv'" \
        -c "\\copy (SELECT id, code FROM u WHERE id % ($N / $PROBES) = 7 ORDER BY id LIMIT $PROBES) TO '$OUT/probes.tsv'"
    read -r flat_ms multi_ms recall faiss_found exact_ms exact_recall < <("$PYVENV/bin/python3" "$ROOT/bench/wide_codes_data.py" \
        lookups "$OUT/codes.tsv" "$R" "$PROBES" "$OUT/probes.tsv")
    # each probe once untimed, then once timed, in one session: the median over the probes
    ours_ms=$(while IFS=$'\t' read -r _ code; do
        for _ in 1 2; do echo "EXPLAIN (ANALYZE, TIMING OFF) SELECT id FROM u WHERE code <@ hamming_ball('$code'::hash256, $R);"; done
    done <"$OUT/probes.tsv" | psql -AtX | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | awk 'NR % 2 == 0' | median)
    ours_found=$(while IFS=$'\t' read -r _ code; do
        echo "SELECT count(*) FROM u WHERE code <@ hamming_ball('$code'::hash256, $R);"
    done <"$OUT/probes.tsv" | psql -qAtX | awk '{ s += $1 } END { print s }')
    [[ $ours_found == "$faiss_found" ]] || fail "the index found $ours_found rows for the $PROBES probes, FAISS's flat search $faiss_found"
    result "lookup within $R, median of $PROBES probes ($ours_found rows)" "$ours_ms" ms "FAISS IndexBinaryMultiHash (recall $recall)" "$multi_ms"
    result "lookup within $R, median of $PROBES probes" "$ours_ms" ms "FAISS MultiHash exact (nflip 1, recall $exact_recall)" "$exact_ms"
    result "lookup within $R, median of $PROBES probes" "$ours_ms" ms "FAISS IndexBinaryFlat" "$flat_ms"
    rm -rf "$OUT"
fi
echo
print_summary
((failed == 0)) || exit 1
