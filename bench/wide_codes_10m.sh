#!/usr/bin/env bash
# The hamming index on millions of wide codes, one of two sets (DATA):
#   uniform  N uniform random hash256 codes generated in SQL (md5 of the row number) and, for
#            one row in a hundred, a near copy two bits off; flatters multi-index hashing (no
#            near neighbours but the planted ones)
#   pdq      N PDQ hashes of thumbnail crops of scikit-image's sample pictures, turned and
#            mirrored, and one in ten a near copy of an earlier crop (bench/wide_codes_data.py
#            thumbnails, two processes, about 35 minutes for 10 M; kept in OUT and reused)
# Measured in one run:
#   - the index's build time and size a row against the raw 32 bytes;
#   - lookups within R bits of four rows' codes (median of 21 each), and of one against a
#     sequential scan `hamming(code, q) + 0 <= R` (the same rows, checked);
#   - the 10 nearest codes through the index against the sequential scan, of a row's code and
#     of 21 random codes with no row within R bits (median and slowest);
#   - beside FAISS (faiss-cpu, one thread, in a venv made once): lookups of the same PROBES
#     codes (median over the probes, one timed run each after one untimed), against
#     IndexBinaryMultiHash (16 tables of 16 bits; FAISS's default nflip = 0, and exact with
#     nflip = 1) and IndexBinaryFlat range search, the rows found compared. FAISS=0 skips it.
#     ALSO_BLOCKS=16 then times the same probes through an index cut into that many
#     substrings (`blocks`) instead of the default cut.
#   - all pairs within R bits among the first PAIRS rows (1 M; 0 skips it): hamming_pairs
#     against FAISS IndexBinaryFlat range search of every code against all (one thread, about
#     15 minutes at 1 M), the pair counts compared.
# Usage (as root): DATA=pdq N=10000000 R=31 bench/wide_codes_10m.sh   (SKIP_INSTALL=1 to keep
# the installed build)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-wide-10m
DATA=${DATA:-uniform}
N=${N:-10000000}
R=${R:-31}
PROBES=${PROBES:-50}
PAIRS=${PAIRS:-1000000}
PYVENV=${PYVENV:-/tmp/pyvenv}
OUT=/tmp/neardup-bench-wide-10m-out
CODES=${CODES:-/tmp/neardup-bench-pdq-$N}
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
case $DATA in
uniform)
    load_ms=$(wall_ms "CREATE TABLE u AS SELECT g AS id, ('x' || md5(g::text) || md5((g + 977777777)::text))::bit(256)::hash256 AS code FROM generate_series(1, $N) g" \
        "INSERT INTO u SELECT $N + id, (code::bit(256) # (B'1'::bit(256) >> (id % 31)::int) # (B'1'::bit(256) >> (id % 200)::int))::hash256 FROM u WHERE id % 100 = 0" \
        "VACUUM ANALYZE u") ;;
pdq)
    python_venv "$PYVENV" "faiss, pdqhash, skimage" faiss-cpu pdqhash scikit-image numpy
    if [[ $(wc -l <"$CODES/pdq.tsv" 2>/dev/null) != "$N" ]]; then
        rm -rf "$CODES" && mkdir -p "$CODES"
        "$PYVENV/bin/python3" "$ROOT/bench/wide_codes_data.py" thumbnails "$N" "$CODES"
    fi
    chmod 755 "$CODES" && chmod 644 "$CODES/pdq.tsv"
    load_ms=$(wall_ms "CREATE TABLE u (id bigint, code hash256, kind text, source bigint)" \
        "COPY u FROM '$CODES/pdq.tsv'" "VACUUM ANALYZE u") ;;
*) echo "DATA is uniform or pdq" >&2; exit 2 ;;
esac
echo "   loaded $N $DATA codes and their near copies in $load_ms ms"
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
# the 10 nearest of codes with no row within R bits (random codes: about 128 bits from
# every row of the uniform set, 60-100 of the PDQ set), where the index reads every row once
far() { echo "('x' || md5('far ' || $1) || md5('away ' || $1))::bit(256)::hash256"; }
far_knn="SELECT id, code <~> $(far 0) FROM u ORDER BY code <~> $(far 0) LIMIT 10"
far_sorted="SELECT id, d FROM (SELECT id, code <~> $(far 0) AS d FROM u OFFSET 0) s ORDER BY d, id LIMIT 10"
[[ $(q -c "SELECT min(hamming(code, $(far 0))) FROM u") -gt $R ]] || fail "a far code has a row within $R bits"
[[ $(q -c "SELECT string_agg(d::text, ',') FROM ($far_knn) k(id, d)") == $(q -c "SELECT string_agg(d::text, ',') FROM ($far_sorted) s") ]] ||
    fail "the 10 nearest of a far code through the index and by a sort differ"
read -r far_p50 far_max < <(for i in $(seq 0 21); do
    echo "EXPLAIN (ANALYZE, TIMING OFF) SELECT id FROM u ORDER BY code <~> $(far "$i") LIMIT 10;"
done | psql -AtX | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | tail -n 21 | sort -g | awk '{a[NR] = $1} END {print a[11], a[NR]}')
result "10 nearest of 21 far codes, median (slowest $far_max ms)" "$far_p50" ms "sequential scan and sort" "$(session_median_ms 3 "$far_sorted")"

# each of the PROBES codes once untimed, then once timed, in one session: the median over them
probes_median_ms() {
    while IFS=$'\t' read -r _ code; do
        for _ in 1 2; do echo "EXPLAIN (ANALYZE, TIMING OFF) SELECT id FROM u WHERE code <@ hamming_ball('$code'::hash256, $R);"; done
    done <"$OUT/probes.tsv" | psql -AtX | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | awk 'NR % 2 == 0' | median
}
probes_rows() { # the rows found for all of them
    while IFS=$'\t' read -r _ code; do
        echo "SELECT count(*) FROM u WHERE code <@ hamming_ball('$code'::hash256, $R);"
    done <"$OUT/probes.tsv" | psql -qAtX | awk '{ s += $1 } END { print s }'
}

if [[ ${FAISS:-1} != 0 ]]; then
    python_venv "$PYVENV" "faiss" faiss-cpu numpy
    rm -rf "$OUT" && mkdir -p "$OUT" && chmod 777 "$OUT"
    q -c "\\copy (SELECT id, code FROM u) TO '$OUT/codes.tsv'" \
        -c "\\copy (SELECT id, code FROM u WHERE id % ($N / $PROBES) = 7 ORDER BY id LIMIT $PROBES) TO '$OUT/probes.tsv'"
    read -r flat_ms multi_ms recall faiss_found exact_ms exact_recall < <("$PYVENV/bin/python3" "$ROOT/bench/wide_codes_data.py" \
        lookups "$OUT/codes.tsv" "$R" "$PROBES" "$OUT/probes.tsv")
    ours_ms=$(probes_median_ms)
    ours_found=$(probes_rows)
    [[ $ours_found == "$faiss_found" ]] || fail "the index found $ours_found rows for the $PROBES probes, FAISS's flat search $faiss_found"
    result "lookup within $R, median of $PROBES probes ($ours_found rows)" "$ours_ms" ms "FAISS IndexBinaryMultiHash (recall $recall)" "$multi_ms"
    result "lookup within $R, median of $PROBES probes" "$ours_ms" ms "FAISS MultiHash exact (nflip 1, recall $exact_recall)" "$exact_ms"
    result "lookup within $R, median of $PROBES probes" "$ours_ms" ms "FAISS IndexBinaryFlat" "$flat_ms"
    # the 10 nearest of the far codes (the first one untimed on both sides), the same distances
    q -c "\\copy (SELECT i, $(far i) FROM generate_series(0, 21) i) TO '$OUT/far.tsv'"
    read -r faiss_far_p50 faiss_far_max faiss_far_sum < <("$PYVENV/bin/python3" "$ROOT/bench/wide_codes_data.py" \
        nearest "$OUT/codes.tsv" "$OUT/far.tsv" 10)
    ours_far_sum=$(q -c "SELECT sum(d) FROM generate_series(1, 21) i,
        LATERAL (SELECT code <~> $(far i) AS d FROM u ORDER BY code <~> $(far i) LIMIT 10) n")
    [[ $ours_far_sum == "$faiss_far_sum" ]] || fail "the 10 nearest of the far codes: distances sum to $ours_far_sum through the index, $faiss_far_sum by FAISS"
    result "10 nearest of 21 far codes, median (slowest $far_max ms)" "$far_p50" ms "FAISS IndexBinaryFlat (slowest $faiss_far_max ms)" "$faiss_far_p50"
    if [[ -n ${ALSO_BLOCKS:-} ]]; then
        # the same probes through an index cut into ALSO_BLOCKS substrings instead
        q -c "DROP INDEX u_code"
        build_ms=$(wall_ms "CREATE INDEX u_code ON u USING hamming (code) WITH (max_distance = $R, blocks = $ALSO_BLOCKS)")
        result "index build, blocks = $ALSO_BLOCKS" "$build_ms" ms
        result "index bytes a row, blocks = $ALSO_BLOCKS" "$(q -c "SELECT pg_relation_size('u_code') / count(*) FROM u")" B "the code" 32
        # one unmeasured pass over the probes, as the default cut's had with FAISS's
        probes_median_ms >/dev/null
        [[ $(probes_rows) == "$faiss_found" ]] || fail "the index of $ALSO_BLOCKS substrings found other rows than FAISS's flat search"
        result "lookup within $R, median of $PROBES, blocks $ALSO_BLOCKS" "$(probes_median_ms)" ms "the default cut" "$ours_ms"
    fi
    rm -rf "$OUT"
fi

if ((PAIRS > 0)); then
    python_venv "$PYVENV" "faiss" faiss-cpu numpy
    rm -rf "$OUT" && mkdir -p "$OUT" && chmod 777 "$OUT"
    q -c "CREATE TABLE first_rows AS SELECT id, code FROM u ORDER BY id LIMIT $PAIRS" -c "VACUUM ANALYZE first_rows" \
        -c "\\copy first_rows TO '$OUT/first_rows.tsv'"
    read -r faiss_pairs faiss_s < <("$PYVENV/bin/python3" "$ROOT/bench/wide_codes_data.py" pairs "$OUT/first_rows.tsv" "$R")
    pairs="SELECT count(*) FROM hamming_pairs('first_rows', 'id', 'code', $R)"
    ours=$(q -c "$pairs")
    [[ $ours == "$faiss_pairs" ]] || fail "hamming_pairs found $ours pairs among the first $PAIRS rows, FAISS $faiss_pairs"
    result "all pairs within $R, first $PAIRS rows ($ours)" "$(printf %.0f "$(exec_ms "$pairs")")" ms \
        "FAISS range search (flat)" "$(awk -v s="$faiss_s" 'BEGIN { printf "%.0f", s * 1000 }')"
    rm -rf "$OUT"
fi
echo
print_summary
((failed == 0)) || exit 1
