#!/usr/bin/env bash
# What an INSERT costs with a `hamming` index, by the shape of the ingestion, beside the same
# into a table with a btree on `fp::bigint` (the baseline), in one run. For each shape,
# pgbench (-M prepared, CLIENTS clients, SECONDS each) inserts random fingerprints into `h`
# (hamming index, default options) and into `b` (btree), alternating h, b, h, b and keeping
# the better of each pair, into tables that start with START rows:
#   single: one row per statement and transaction (a web request storing one document);
#   batch100: 100 rows per statement (a pipeline);
#   batch10k: 10,000 rows per statement (a bulk load).
# Prints rows/s, the ratio to the btree, and the p99.9 and worst statement latency.
# Usage: bench/insert_shapes.sh    CLIENTS=2 SECONDS_EACH=20 START=1000000 bench/insert_shapes.sh
#        SKIP_INSTALL=1 bench/insert_shapes.sh   (the build already installed)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-shapes
CLIENTS=${CLIENTS:-2}
SECONDS_EACH=${SECONDS_EACH:-15}
START=${START:-200000}

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '1GB'" "autovacuum = off" "jit = off" \
    "max_wal_size = '8GB'" "checkpoint_timeout = '30min'" "synchronous_commit = on"
trap 'cluster_stop "$DIR"' EXIT
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }

q <<SQL
CREATE EXTENSION neardup;
CREATE FUNCTION rnd64() RETURNS simhash64 LANGUAGE sql VOLATILE
    AS \$\$ SELECT ('x' || md5(random()::text))::bit(64)::bigint::simhash64 \$\$;
CREATE TABLE h (fp simhash64);
CREATE TABLE b (fp simhash64);
SELECT setseed(0.5);
INSERT INTO h SELECT rnd64() FROM generate_series(1, $START);
INSERT INTO b SELECT fp FROM h;
CREATE INDEX h_fp ON h USING hamming (fp);
CREATE INDEX b_fp ON b USING btree ((fp::bigint));
VACUUM ANALYZE h;
VACUUM ANALYZE b;
SQL

WORK=$(mktemp -d)
trap 'cluster_stop "$DIR"; rm -rf "$WORK"' EXIT
# run TABLE ROWS: pgbench inserting ROWS rows per statement into TABLE; prints
# "rows_per_s p999_ms max_ms".
run() {
    local script=$WORK/$1_$2.sql
    if (($2 == 1)); then
        echo "INSERT INTO $1 VALUES (rnd64());" >"$script"
    else
        echo "INSERT INTO $1 SELECT rnd64() FROM generate_series(1, $2);" >"$script"
    fi
    rm -f "$WORK"/pgbench_log.*
    (cd "$WORK" && pgbench -n -M prepared -c "$CLIENTS" -j "$CLIENTS" -T "$SECONDS_EACH" -l \
        -f "$script" >"$WORK/out" 2>&1) || { cat "$WORK/out" >&2; exit 1; }
    # Log lines: client transaction latency_us ...
    cat "$WORK"/pgbench_log.* | awk -v rows="$2" -v secs="$SECONDS_EACH" '{ print $3 }' | sort -n |
        awk -v rows="$2" -v secs="$SECONDS_EACH" '{ a[NR] = $1 } END {
            i = int(NR * 0.999); if (i < 1) i = 1
            printf "%.0f %.2f %.2f\n", NR * rows / secs, a[i] / 1000, a[NR] / 1000 }'
}
better() { # two "rows p999 max" lines: the one with more rows/s
    awk 'NR == 1 { a = $0; ar = $1 } NR == 2 { if ($1 > ar) print $0; else print a }' <(echo "$1") <(echo "$2")
}

printf '%-9s %12s %12s %7s %11s %11s %9s %9s\n' shape "hamming r/s" "btree r/s" ratio "h p99.9 ms" "b p99.9 ms" "h max ms" "b max ms"
for shape in single:1 batch100:100 batch10k:10000; do
    name=${shape%%:*} rows=${shape##*:}
    h1=$(run h "$rows"); b1=$(run b "$rows"); h2=$(run h "$rows"); b2=$(run b "$rows")
    hb=$(better "$h1" "$h2") bb=$(better "$b1" "$b2")
    read -r hr hp hm <<<"$hb"
    read -r br bp bm <<<"$bb"
    printf '%-9s %12s %12s %7s %11s %11s %9s %9s\n' "$name" "$hr" "$br" \
        "$(awk -v a="$hr" -v b="$br" 'BEGIN { printf "%.3f", a / b }')" "$hp" "$bp" "$hm" "$bm"
done
checked=$(q -c "SET maintenance_work_mem = '1GB'" -c "SELECT hamming_index_check('h_fp')")
rows=$(q -c "SELECT count(*) FROM h")
[[ $checked == "$rows" ]] || { echo "hamming_index_check counts $checked, h has $rows rows" >&2; exit 1; }
echo "hamming_index_check: $checked rows"
