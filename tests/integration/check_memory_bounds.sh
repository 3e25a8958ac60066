#!/usr/bin/env bash
# The backend's private memory stays bounded where it used to grow with the data: its peak
# RssAnon (private memory, not the shared buffers it touches), sampled every 20 ms while a
# statement runs, minus its level before, for
#   - neardup_clusters on 100,000 rows sharing one fingerprint (5·10⁹ pairs if they were
#     materialized; components need none);
#   - hamming_pairs and neardup_clusters on 1,000,000 random fingerprints;
#   - CREATE INDEX of 2,000,000 rows with maintenance_work_mem = 16MB (in memory the build
#     would take 64 MB; it spills through tuplesort instead).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/memory.sh"
DB=memory_bounds
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
psql -qX -d $DB -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION neardup;
SELECT setseed(0.5);
CREATE TABLE same AS SELECT i AS id, 0::bigint AS fp FROM generate_series(1, 100000) i;
-- Every one of the 64 bits random (random() has 52 bits: two calls for 32 each). A product
-- of one call leaves the low bits 0 in every row, which puts a million rows in a few
-- prefixes of the permuted tables and made hamming_pairs take 70 s instead of 1.4 s.
CREATE TABLE rand AS SELECT i AS id, ((random() * 2^32)::bigint << 32) # (random() * 2^32)::bigint AS fp
    FROM generate_series(1, 1000000) i;
CREATE TABLE build AS SELECT i AS id, (((random() * 2^32)::bigint << 32) # (random() * 2^32)::bigint)::simhash64 AS fp
    FROM generate_series(1, 2000000) i;
VACUUM ANALYZE;
SQL

failed=0
check() { # NAME LIMIT_MB SETTINGS SQL EXPECTED
    local got mb result
    got=$(peak_private_mb $DB "$3" "$4") || { echo "FAIL $1: $got"; failed=1; return; }
    read -r mb result <<<"$got"
    if [[ $result != "$5" ]]; then
        echo "FAIL $1: result $result, expected $5"
        failed=1
    elif ((mb > $2)); then
        echo "FAIL $1: peak private memory grew by $mb MB (limit $2 MB)"
        failed=1
    else
        echo "ok   $1: peak private memory +$mb MB (limit $2 MB)"
    fi
}

check "clusters of 100k identical rows" 40 "" \
    "SELECT count(DISTINCT cluster_id) FROM neardup_clusters('same', 'id', 'fp', 3)" 1
pairs=$(psql -qAtX -d $DB -c "SELECT count(*) FROM hamming_pairs('rand', 'id', 'fp', 3)")
check "hamming_pairs on 1M random" 100 "" "SELECT count(*) FROM hamming_pairs('rand', 'id', 'fp', 3)" "$pairs"
check "neardup_clusters on 1M random" 200 "" \
    "SELECT count(*) FROM neardup_clusters('rand', 'id', 'fp', 3)" 1000000
check "CREATE INDEX of 2M rows in 16MB" 48 "SET maintenance_work_mem = '16MB'" \
    "CREATE INDEX build_fp ON build USING hamming (fp)" ""
checked=$(psql -qAtX -d $DB -c "SET maintenance_work_mem = '256MB'" -c "SELECT hamming_index_check('build_fp')")
[[ $checked == 2000000 ]] || { echo "FAIL the spilled build does not check: $checked"; failed=1; }
exit $failed
