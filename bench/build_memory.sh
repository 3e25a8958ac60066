#!/usr/bin/env bash
# CREATE INDEX within maintenance_work_mem: ROWS uniform random fingerprints (default
# 10 M) indexed with maintenance_work_mem = 64MB (the rows spill to one tuplesort per
# permuted table) against the same build with 2GB (sorted in memory), and a btree on the
# same column as the baseline. Prints each build's time and the backend's peak private
# memory (RssAnon above its level before the statement), and checks the spilled index
# with hamming_index_check.
# Usage: bench/build_memory.sh     ROWS=2000000 bench/build_memory.sh
source "$(dirname "$0")/lib.sh"
source "$ROOT/scripts/memory.sh"
DIR=/tmp/neardup-bench-build-memory
ROWS=${ROWS:-10000000}

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '1GB'" "autovacuum = off" "max_wal_size = '8GB'" \
    "checkpoint_timeout = '30min'"
trap 'cluster_stop "$DIR"' EXIT
psql -qX -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE EXTENSION neardup;
SELECT setseed(0.25);
CREATE TABLE fps AS SELECT i AS id, ((random() * 2^63)::bigint # ((random() * 2^62)::bigint << 1))::simhash64 AS fp
    FROM generate_series(1, $ROWS) i;
VACUUM ANALYZE fps;
SQL
echo "rows: $ROWS"

build() { # NAME SETTINGS SQL: wall ms and peak private MB
    local start got ms
    start=$(date +%s%N)
    got=$(peak_private_mb postgres "$2" "$3") || { echo "$1 failed: $got"; exit 1; }
    ms=$((($(date +%s%N) - start) / 1000000 - 500))
    read -r mb _ <<<"$got"
    echo "$ms $mb"
}
read -r btree_ms btree_mb < <(build btree "SET maintenance_work_mem = '64MB'" \
    "CREATE INDEX fps_btree ON fps ((fp::bigint))")
read -r spill_ms spill_mb < <(build spilled "SET maintenance_work_mem = '64MB'" \
    "CREATE INDEX fps_spilled ON fps USING hamming (fp)")
checked=$(psql -qAtX -c "SET maintenance_work_mem = '2GB'" -c "SELECT hamming_index_check('fps_spilled')")
[[ $checked == "$ROWS" ]] || { echo "hamming_index_check: $checked, expected $ROWS"; exit 1; }
psql -qX -c "DROP INDEX fps_spilled"
read -r mem_ms mem_mb < <(build in-memory "SET maintenance_work_mem = '2GB'" \
    "CREATE INDEX fps_memory ON fps USING hamming (fp)")

result "CREATE INDEX hamming, maintenance_work_mem 64MB" "$spill_ms" ms "btree (64MB)" "$btree_ms"
result "CREATE INDEX hamming, maintenance_work_mem 2GB" "$mem_ms" ms "btree (64MB)" "$btree_ms"
result "spilled build time" "$spill_ms" ms "in-memory build" "$mem_ms"
result "peak private memory, 64MB build" "$spill_mb" MB "in-memory build" "$mem_mb"
result "peak private memory, btree build" "$btree_mb" MB "64MB hamming build" "$spill_mb"
echo
print_summary
