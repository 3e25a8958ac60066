#!/usr/bin/env bash
# What keeping clusters current costs: the same writes into two copies of a table of ROWS
# fingerprints (default 1 M; 80 % random, 20 % in near-copy families), both with a primary
# key and a hamming index, one of them tracked by neardup_cluster_tracking(..., 3). Prints
# each tracked figure next to the plain one from the same run, and the ratio:
#   (a) setting tracking up (cluster table filled by neardup_clusters) vs neardup_clusters;
#   (b) INSERT … SELECT of BATCH rows (half near copies of existing rows, half new) in one
#       statement;
#   (c) SINGLE/2 single-row INSERT statements, each its own transaction, through one psql,
#       with (b)'s rows still in the index's pending list; (c') SINGLE/2 more after REINDEX;
#   (d) UPDATE of the signatures of BATCH/10 rows (small changes: tier 1; large: tier 2);
#   (e) DELETE of BATCH/10 rows.
# CODE=hash256 does the same with 256-bit codes tracked at distance 31 (PDQ's): random codes
# and near copies 2 to 20 bits away; large updates move a code 60 bits.
# Usage: bench/cluster_tracking.sh     ROWS=200000 bench/cluster_tracking.sh
#        SKIP_INSTALL=1 bench/cluster_tracking.sh   (benchmarks the build already installed)
#        CODE=hash256 bench/cluster_tracking.sh
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-tracking
ROWS=${ROWS:-1000000}
BATCH=${BATCH:-20000}
SINGLE=${SINGLE:-2000}
T0=$SECONDS
CODE=${CODE:-simhash64}
# the code as stored, a random one, one 1 + i % 4 bits from b.fp (i, b in the query), the
# distance tracked, and a small and a large change of fp (tier 1 and tier 2 updates)
case $CODE in
simhash64) STORED="fp::simhash64" RANDOM_CODE="rnd64()" NEAR="flip(b.fp, 1 + i % 4)" K=3
    SMALL="(fp::bigint # 1)::simhash64" LARGE="(fp::bigint # 4294967295)::simhash64" ;;
hash256) STORED="fp" RANDOM_CODE="rnd256()" NEAR="flip256(b.fp, 2 + i % 19)" K=31
    SMALL="flip256(fp, 1)" LARGE="flip256(fp, 60)" ;;
*) echo "CODE is simhash64 or hash256" >&2 && exit 2 ;;
esac

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '1GB'" "maintenance_work_mem = '1GB'" "work_mem = '256MB'" \
    "autovacuum = off" "max_wal_size = '8GB'" "checkpoint_timeout = '30min'"
trap 'cluster_stop "$DIR"' EXIT
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }
wall_ms() { # SQL...: wall-clock time of the statements, in ms
    local start args=() sql
    for sql in "$@"; do args+=(-c "$sql"); done
    start=$(date +%s%N)
    q "${args[@]}" >/dev/null
    echo $((($(date +%s%N) - start) / 1000000))
}
row() { # MEASURE TRACKED_MS PLAIN_MS
    printf '%-52s %10s ms %10s ms %8s\n' "$1" "$2" "$3" "$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.2f", a / b }')"
}

echo "== $ROWS $CODE codes in pages_plain and pages_tracked, tracked at distance $K"
q -c "CREATE EXTENSION neardup" -f "$ROOT/tests/integration/fingerprint_functions.sql"
q >/dev/null <<'SQL'
CREATE FUNCTION rnd256() RETURNS hash256 LANGUAGE sql VOLATILE
    RETURN ('x' || md5(random()::text) || md5(random()::text))::bit(256)::hash256;
-- x with n random bits flipped (a bit may come twice)
CREATE FUNCTION flip256(x hash256, n int) RETURNS hash256 LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    b bit(256) := x::bit(256);
    p int;
BEGIN
    FOR i IN 1 .. n LOOP
        p := (random() * 255)::int;
        b := set_bit(b, p, 1 - get_bit(b, p));
    END LOOP;
    RETURN b::hash256;
END $$;
SQL
# (flip() runs a command per call, which a parallel plan cannot.)
q -c "SET max_parallel_workers_per_gather = 0" -c "SELECT setseed(0.42)" \
  -c "CREATE TABLE base AS SELECT i AS id, $RANDOM_CODE AS fp FROM generate_series(1, $ROWS * 8 / 10) i" \
  -c "INSERT INTO base SELECT $ROWS * 8 / 10 + i, $NEAR
      FROM generate_series(1, $ROWS * 2 / 10) i JOIN base b ON b.id = 1 + i / 10" \
  -c "CREATE TABLE pages_plain (id bigint PRIMARY KEY, fp $CODE, rank int)" \
  -c "CREATE TABLE pages_tracked (id bigint PRIMARY KEY, fp $CODE, rank int)" \
  -c "INSERT INTO pages_plain SELECT id, $STORED, id % 10 FROM base" \
  -c "INSERT INTO pages_tracked SELECT id, $STORED, id % 10 FROM base" \
  -c "CREATE INDEX ON pages_plain USING hamming (fp)" -c "CREATE INDEX ON pages_tracked USING hamming (fp)" \
  -c "VACUUM ANALYZE pages_plain, pages_tracked"
# The rows both tables receive, drawn once so both get the same.
q -c "SET max_parallel_workers_per_gather = 0" -c "SELECT setseed(0.7)" \
  -c "CREATE TABLE arrivals AS SELECT $ROWS + i AS id,
          CASE WHEN i % 2 = 0 THEN $NEAR ELSE $RANDOM_CODE END AS fp
      FROM generate_series(1, $BATCH + $SINGLE) i JOIN base b ON b.id = 1 + (i * 7919) % $ROWS"

printf '%-52s %13s %13s %8s\n' measure tracked plain ratio
setup_ms=$(wall_ms "SELECT neardup_cluster_tracking('pages_tracked', 'page_clusters', 'id', 'fp', $K, 'rank, id')")
row "(a) tracking set up vs neardup_clusters, $ROWS rows" "$setup_ms" \
    "$(wall_ms "SELECT count(*) FROM neardup_clusters('pages_plain', 'id', 'fp', $K, 'rank, id')")"

insert_batch() { wall_ms "INSERT INTO $1 SELECT id, $STORED, id % 10 FROM arrivals WHERE id <= $ROWS + $BATCH"; }
plain=$(insert_batch pages_plain)
row "(b) INSERT … SELECT of $BATCH rows, one statement" "$(insert_batch pages_tracked)" "$plain"

single_file() { # TABLE HALF: one INSERT statement per row of that half of the single rows
    local from=$((ROWS + BATCH + ($2 - 1) * SINGLE / 2))
    q -c "SELECT format('INSERT INTO $1 VALUES (%s, %L, %s);', id, $STORED, id % 10)
          FROM arrivals WHERE id > $from AND id <= $from + $SINGLE / 2 ORDER BY id" >"$DIR/single_$1_$2.sql"
}
single_ms() { # TABLE HALF
    local start
    start=$(date +%s%N)
    q -f "$DIR/single_$1_$2.sql" >/dev/null
    echo $((($(date +%s%N) - start) / 1000000))
}
per_row() { awk -v t="$1" -v n="$((SINGLE / 2))" 'BEGIN { printf "%.3f", t / n }'; }
for half in 1 2; do
    single_file pages_plain $half
    single_file pages_tracked $half
    plain=$(single_ms pages_plain $half)
    tracked=$(single_ms pages_tracked $half)
    if ((half == 1)); then
        label="(c) $((SINGLE / 2)) single-row INSERTs, $BATCH rows pending"
    else
        label="(c') the same after REINDEX (nothing pending)"
    fi
    row "$label" "$tracked" "$plain"
    echo "    per row: tracked $(per_row "$tracked") ms, plain $(per_row "$plain") ms"
    # Every scan reads the index's pending list in full; REINDEX folds it into the tables.
    ((half == 2)) || q -c "REINDEX TABLE pages_plain" -c "REINDEX TABLE pages_tracked"
done

changed=$((BATCH / 10))
update() { wall_ms "UPDATE $1 SET fp = CASE WHEN id % 2 = 0 THEN $SMALL ELSE $LARGE END
                    WHERE id % $((ROWS / changed)) = 3"; }
plain=$(update pages_plain)
row "(d) UPDATE of $changed signatures, one statement" "$(update pages_tracked)" "$plain"
delete() { wall_ms "DELETE FROM $1 WHERE id % $((ROWS / changed)) = 5"; }
plain=$(delete pages_plain)
row "(e) DELETE of $changed rows, one statement" "$(delete pages_tracked)" "$plain"

echo "   $(q -c "SELECT count(*) || ' tracked rows in ' || count(DISTINCT cluster_id) || ' clusters, ' ||
    (SELECT count(*) FROM (SELECT cluster_id FROM page_clusters GROUP BY 1 HAVING count(*) > 1) c) || ' with more than one row'
    FROM page_clusters")"
echo "== $((SECONDS - T0)) s in all"
