#!/usr/bin/env bash
# The hamming index on many wide codes, generated in SQL (PDQ codes of images take hours to
# compute at this size, see bench/wide_codes.sh): N uniform random hash256 codes (md5 of the
# row number) and, for one row in a hundred, a near copy two bits off. Measured in one run:
#   - the index's build time and size a row against the raw 32 bytes;
#   - lookups within R bits of four rows' codes (median of 21 each), and of one against a
#     sequential scan `hamming(code, q) + 0 <= R` (the same rows, checked);
#   - the 10 nearest codes through the index against the sequential scan.
# Uniform codes flatter multi-index hashing (no near neighbours but the planted ones).
# Usage (as root): N=10000000 R=31 bench/wide_codes_uniform.sh   (SKIP_INSTALL=1 to keep the
# installed build)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-wide-uniform
N=${N:-10000000}
R=${R:-31}
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
echo
print_summary
((failed == 0)) || exit 1
