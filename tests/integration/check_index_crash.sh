#!/usr/bin/env bash
# Crash safety of the `hamming` index: the postmaster and all its processes are killed
# with SIGKILL while four sessions insert, update, delete and VACUUM (fsync on, no
# checkpoint since the indexes were built, so recovery replays the build's WAL too); after
# crash recovery every index answer (index scan, bitmap scan, ORDER BY <~>, the planner
# hook's hamming() <= k) must equal a brute-force seq scan, for 50 probes at k = 0..4, on
# a simhash64 table and a bigint table (int8_hamming_ops); hamming_index_check must pass.
# Then again after DELETE + VACUUM, after inserts that reuse the freed TIDs, and after
# REINDEX; an UNLOGGED table's index must come back empty and usable (ambuildempty); last,
# hamming_index_check must pass while another session inserts.
# Own cluster in /tmp/neardup-index-crash with shared_preload_libraries = 'neardup'.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-index-crash
T0=$SECONDS

fail() { echo "check_index_crash: $*" >&2; exit 1; }
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }

cluster_start "$DIR" "shared_preload_libraries = 'neardup'" "fsync = on" "autovacuum = off" \
    "max_wal_size = '1GB'" "checkpoint_timeout = '30min'" "log_min_messages = warning"
workers=()
cleanup() {
    local pid
    for pid in "${workers[@]}"; do kill "$pid" 2>/dev/null || true; done
    cluster_stop "$DIR"
}
trap cleanup EXIT

# --- data: uniform random (all 64 bits, so the sign bit too), planted clusters of near
# copies (1-6 flipped bits), exact duplicates, a dense spike sharing its top 24 bits, NULLs.
q >/dev/null -c "CREATE EXTENSION neardup" -f "$ROOT/tests/integration/fingerprint_functions.sql"
q >/dev/null <<'SQL'
SELECT setseed(0.17);
CREATE TABLE gen (n serial, fp bigint);
INSERT INTO gen (fp) SELECT rnd64() FROM generate_series(1, 11000);
INSERT INTO gen (fp) SELECT flip(c.fp, 1 + (i % 6)) FROM (SELECT fp FROM gen ORDER BY n LIMIT 400) c,
    generate_series(1, 15) i;
INSERT INTO gen (fp) SELECT fp FROM gen ORDER BY n DESC LIMIT 1000;
INSERT INTO gen (fp) SELECT (x'a5c3e1'::bigint << 40) | (rnd64() & ((1::bigint << 40) - 1)) FROM generate_series(1, 1000);
INSERT INTO gen (fp) SELECT NULL FROM generate_series(1, 20);
CREATE TABLE docs (id bigserial PRIMARY KEY, fp simhash64, note int DEFAULT 0);
CREATE TABLE docs8 (id bigserial PRIMARY KEY, fp bigint, note int DEFAULT 0);
-- Shuffled, so that the pending rows below are of every shape too.
INSERT INTO docs (fp) SELECT fp::simhash64 FROM gen ORDER BY random();
INSERT INTO docs8 (fp) SELECT fp FROM gen ORDER BY random();
CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (max_distance = 3);
CREATE INDEX docs8_fp ON docs8 USING hamming (fp int8_hamming_ops) WITH (max_distance = 3);
-- These go to the pending pages.
INSERT INTO docs (fp) SELECT fp::simhash64 FROM gen ORDER BY random() LIMIT 3000;
INSERT INTO docs8 (fp) SELECT flip(fp, 2) FROM gen ORDER BY random() LIMIT 3000;
CREATE UNLOGGED TABLE scratch (id bigserial PRIMARY KEY, fp simhash64);
INSERT INTO scratch (fp) SELECT fp::simhash64 FROM gen LIMIT 2000;
CREATE INDEX scratch_fp ON scratch USING hamming (fp);
INSERT INTO scratch (fp) SELECT fp::simhash64 FROM gen LIMIT 500;
SQL
rows_before=$(q -c "SELECT count(*) FROM docs")

# --- concurrent sessions, each a bounded script of short autocommit transactions.
ids=25000
pick="(SELECT 1 + floor(random() * $ids)::bigint)"
{
    for _ in $(seq 3000); do
        cat <<SQL
INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 10);
WITH s AS MATERIALIZED (SELECT 1 + floor(random() * $ids)::bigint AS id FROM generate_series(1, 5))
INSERT INTO docs (fp) SELECT flip(d.fp::bigint, 1 + floor(random() * 4)::int)::simhash64 FROM docs d JOIN s USING (id);
UPDATE docs SET fp = flip(fp::bigint, 1)::simhash64 WHERE id = $pick;
UPDATE docs SET note = note + 1 WHERE id = $pick;
BEGIN; INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 5); ROLLBACK;
SQL
    done
} >"$DIR/worker_docs.sql"
{
    for _ in $(seq 3000); do
        cat <<SQL
BEGIN;
INSERT INTO docs8 (fp) SELECT rnd64() FROM generate_series(1, 40);
WITH s AS MATERIALIZED (SELECT 1 + floor(random() * $ids)::bigint AS id FROM generate_series(1, 10))
INSERT INTO docs8 (fp) SELECT flip(d.fp, 1 + floor(random() * 4)::int) FROM docs8 d JOIN s USING (id);
UPDATE docs8 SET fp = flip(fp, 2) WHERE id = $pick;
COMMIT;
INSERT INTO scratch (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 10);
SQL
    done
} >"$DIR/worker_docs8.sql"
{
    for _ in $(seq 3000); do
        cat <<SQL
INSERT INTO docs (fp) SELECT fp::simhash64 FROM gen WHERE n = $pick;
INSERT INTO docs8 (fp) SELECT fp FROM gen WHERE n = $pick;
SQL
    done
} >"$DIR/worker_mixed.sql"
{
    for _ in $(seq 3000); do
        cat <<SQL
DELETE FROM docs WHERE id IN (SELECT 1 + floor(random() * $ids)::bigint FROM generate_series(1, 20));
DELETE FROM docs8 WHERE id IN (SELECT 1 + floor(random() * $ids)::bigint FROM generate_series(1, 20));
VACUUM docs;
VACUUM docs8;
SQL
    done
} >"$DIR/worker_vacuum.sql"
chmod a+r "$DIR"/worker_*.sql

for w in docs docs8 mixed vacuum; do
    q -f "$DIR/worker_$w.sql" >"$DIR/worker_$w.log" 2>&1 &
    workers+=($!)
done
sleep 4
for i in "${!workers[@]}"; do
    kill -0 "${workers[$i]}" 2>/dev/null || fail "worker $i ended before the crash: $(tail -n 5 "$DIR"/worker_*.log)"
done

# --- the crash: SIGKILL to the postmaster and, at the same instant, to all its children.
postmaster=$(head -1 "$DIR/data/postmaster.pid")
children=$(ps -o pid= --ppid "$postmaster" | tr '\n' ' ')
# shellcheck disable=SC2086
kill -9 "$postmaster" $children
for _ in $(seq 100); do
    kill -0 "$postmaster" 2>/dev/null || break
    sleep 0.1
done
for pid in "${workers[@]}"; do wait "$pid" 2>/dev/null || true; done
workers=()
grep -qE "server closed the connection|connection to server was lost|terminating connection" "$DIR"/worker_*.log ||
    fail "the workers were not interrupted by the crash: $(tail -n 3 "$DIR"/worker_*.log)"
if grep -h "ERROR" "$DIR"/worker_*.log | grep -v "terminating connection" | grep -q .; then
    fail "a worker failed before the crash: $(grep -h ERROR "$DIR"/worker_*.log | head -5)"
fi
crash_at=$SECONDS

# (pg_ctl warns that the stale postmaster.pid may belong to a running server: it does not.)
sudo -u postgres "$PG_BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 start >/dev/null 2>"$DIR/restart.err" ||
    fail "restart after the crash failed: $(cat "$DIR/restart.err"; tail -20 "$DIR/server.log")"
grep -q "database system was interrupted" "$DIR/server.log" || fail "no crash recovery in the server log"
grep -q "redo done" "$DIR/server.log" || fail "crash recovery replayed no WAL"
rows_after=$(q -c "SELECT count(*) FROM docs")
echo "check_index_crash: docs had $rows_before rows, $rows_after after the crash; recovery took $((SECONDS - crash_at)) s"

# --- probes: existing fingerprints (k = 0 finds their duplicates), near copies of them,
# spike members, and random ones.
q >/dev/null <<'SQL'
SELECT setseed(0.5);
CREATE TABLE probes AS
SELECT row_number() OVER () AS pid, fp FROM (
    (SELECT fp FROM gen WHERE n <= 400 ORDER BY random() LIMIT 15)
    UNION ALL (SELECT fp::bigint AS fp FROM docs WHERE fp IS NOT NULL ORDER BY random() LIMIT 5)
    UNION ALL (SELECT fp FROM docs8 WHERE fp IS NOT NULL ORDER BY random() LIMIT 5)
    UNION ALL (SELECT flip(fp::bigint, 1 + floor(random() * 4)::int) FROM docs WHERE fp IS NOT NULL ORDER BY random() LIMIT 10)
    UNION ALL (SELECT fp FROM gen WHERE (fp >> 40) & 16777215 = x'a5c3e1'::bigint LIMIT 5)
    UNION ALL (SELECT rnd64() FROM generate_series(1, 10))
) s;
SQL
[[ $(q -c "SELECT count(*) FROM probes") == 50 ]] || fail "expected 50 probes"

force_index="-c enable_seqscan=off -c enable_bitmapscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c enable_material=off"
force_bitmap="-c enable_seqscan=off -c enable_indexscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c enable_material=off"
force_seq="-c enable_indexscan=off -c enable_bitmapscan=off -c enable_indexonlyscan=off"

# answer OPTIONS SQL: one line from SQL run with the given planner settings.
answer() { PGOPTIONS=$1 q -c "$2"; }
# uses_index OPTIONS SQL INDEX: the plan reads INDEX and no table but probes sequentially.
uses_index() {
    local plan
    plan=$(PGOPTIONS=$1 q -c "EXPLAIN (COSTS OFF) $2")
    grep -q "$3" <<<"$plan" && ! grep -qE "Seq Scan on (docs|docs8|scratch)( |$)" <<<"$plan" ||
        fail "[$STAGE] the plan does not read $3:"$'\n'"$plan"$'\n'"for: $2"
}

# compare TABLE INDEX: every way of asking the index equals the brute-force answer.
compare() {
    local t=$1 index=$2 probe='p.fp' result
    [[ $t == docs8 ]] || probe='p.fp::simhash64'
    local agg="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || k || ':' || d.id, ',' ORDER BY p.pid, k, d.id), ''))
        FROM probes p CROSS JOIN generate_series(0, 4) AS k JOIN $t d"
    local ball="$agg ON d.fp <@ hamming_ball($probe, k)"
    local brute="$agg ON bit_count((d.fp::bigint # p.fp)::bit(64)) <= k"
    local expected
    expected=$(answer "$force_seq" "$brute")
    [[ ${expected%% *} -gt 200 ]] || fail "[$STAGE] $t: only ${expected%% *} matches in all, the probes test nothing"
    COMPARED=$((COMPARED + ${expected%% *}))

    uses_index "$force_index" "$ball" "Index Scan using $index"
    result=$(answer "$force_index" "$ball")
    [[ $result == "$expected" ]] || fail "[$STAGE] $t: index scan gives '$result', seq scan '$expected'"$'\n'"$(diff_ball "$t" "$probe")"
    uses_index "$force_bitmap" "$ball" "Bitmap Index Scan on $index"
    result=$(answer "$force_bitmap" "$ball")
    [[ $result == "$expected" ]] || fail "[$STAGE] $t: bitmap scan gives '$result', seq scan '$expected'"$'\n'"$(diff_ball "$t" "$probe")"

    # The planner hook: hamming(fp, q) <= k, with a constant k.
    local hook_agg="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || d.id, ',' ORDER BY p.pid, d.id), ''))
        FROM probes p JOIN $t d"
    local hook="$hook_agg ON hamming(d.fp, $probe) <= 3"
    expected=$(answer "$force_seq" "$hook_agg ON bit_count((d.fp::bigint # p.fp)::bit(64)) <= 3")
    uses_index "$force_index" "$hook" "Index Scan using $index"
    result=$(answer "$force_index" "$hook")
    [[ $result == "$expected" ]] || fail "[$STAGE] $t: hamming(fp, q) <= 3 through the index gives '$result', seq scan '$expected'"

    # ORDER BY fp <~> q LIMIT 30: the same 30 distances (ties may pick other rows).
    local knn="SELECT md5(string_agg(p.pid || ':' || x.d, ',' ORDER BY p.pid)) FROM probes p CROSS JOIN LATERAL
        (SELECT array_agg(dist ORDER BY dist)::text AS d FROM
            (SELECT d.fp <~> $probe AS dist FROM $t d WHERE d.fp IS NOT NULL ORDER BY d.fp <~> $probe LIMIT 30) s) x
        WHERE p.pid % 5 = 0"
    expected=$(answer "$force_seq" "${knn//d.fp <~> $probe/bit_count((d.fp::bigint # p.fp)::bit(64))::int}")
    uses_index "$force_index" "$knn" "Index Scan using $index"
    result=$(answer "$force_index" "$knn")
    [[ $result == "$expected" ]] || fail "[$STAGE] $t: ORDER BY <~> LIMIT 30 through the index differs from a sort of a seq scan"
}

# diff_ball TABLE PROBE: the (probe, k, id) rows only one side returns, for the report.
diff_ball() {
    local t=$1 probe=$2
    answer "$force_index" "CREATE TEMP TABLE via_index AS SELECT p.pid, k, d.id FROM probes p CROSS JOIN generate_series(0, 4) AS k
        JOIN $t d ON d.fp <@ hamming_ball($probe, k);
      SELECT 'index only: pid ' || pid || ' k ' || k || ' id ' || id FROM (SELECT * FROM via_index EXCEPT
        SELECT p.pid, k, d.id FROM probes p CROSS JOIN generate_series(0, 4) AS k JOIN $t d
          ON bit_count((d.fp::bigint # p.fp)::bit(64)) <= k) x LIMIT 5;" 2>&1 || true
    answer "$force_index" "CREATE TEMP TABLE via_index AS SELECT p.pid, k, d.id FROM probes p CROSS JOIN generate_series(0, 4) AS k
        JOIN $t d ON d.fp <@ hamming_ball($probe, k);
      SELECT 'seq scan only: pid ' || pid || ' k ' || k || ' id ' || id FROM (SELECT p.pid, k, d.id FROM probes p
        CROSS JOIN generate_series(0, 4) AS k JOIN $t d ON bit_count((d.fp::bigint # p.fp)::bit(64)) <= k
        EXCEPT SELECT * FROM via_index) x LIMIT 5;" 2>&1 || true
}

# checked INDEX [EXACT_TABLE]: hamming_index_check passes (and, after a VACUUM with no
# other session, counts exactly the table's rows: NULL fingerprints are indexed too).
checked() {
    local n
    n=$(q -c "SELECT hamming_index_check('$1')" 2>&1) || fail "[$STAGE] hamming_index_check('$1'): $n"
    if [[ -n ${2:-} ]]; then
        local rows
        rows=$(q -c "SELECT count(*) FROM $2")
        [[ $n == "$rows" ]] || fail "[$STAGE] hamming_index_check('$1') counts $n entries, $2 has $rows rows after VACUUM"
    fi
}

COMPARED=0
STAGE="after crash recovery"
checked docs_fp
checked docs8_fp
compare docs docs_fp
compare docs8 docs8_fp

# The unlogged table is reset to empty by crash recovery; its index must follow.
STAGE="unlogged table after crash"
[[ $(q -c "SELECT count(*) FROM scratch") == 0 ]] || fail "[$STAGE] the unlogged table was not reset"
checked scratch_fp scratch
q -c "INSERT INTO scratch (fp) SELECT fp::simhash64 FROM docs WHERE id % 10 = 0"
expected=$(answer "$force_seq" "SELECT count(*) FROM scratch s JOIN probes p ON bit_count((s.fp::bigint # p.fp)::bit(64)) <= 3")
result=$(answer "$force_index" "SELECT count(*) FROM scratch s JOIN probes p ON s.fp <@ hamming_ball(p.fp::simhash64, 3)")
[[ $result == "$expected" ]] || fail "[$STAGE] index gives $result matches, seq scan $expected"
checked scratch_fp scratch

STAGE="after DELETE and VACUUM"
q -c "DELETE FROM docs WHERE id % 3 = 0" -c "DELETE FROM docs8 WHERE id % 4 = 1" -c "VACUUM docs" -c "VACUUM docs8"
checked docs_fp docs
checked docs8_fp docs8
compare docs docs_fp
compare docs8 docs8_fp

# New rows reuse the TIDs VACUUM freed: an entry VACUUM left behind would now point at a
# row with another fingerprint (scans do not recheck).
STAGE="after inserts into freed space"
q <<'SQL'
INSERT INTO docs (fp) SELECT flip(fp, (pid % 4)::int)::simhash64 FROM probes, generate_series(1, 20);
INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 3000);
INSERT INTO docs8 (fp) SELECT flip(fp, (pid % 5)::int) FROM probes, generate_series(1, 20);
INSERT INTO docs8 (fp) SELECT rnd64() FROM generate_series(1, 3000);
SQL
checked docs_fp docs
checked docs8_fp docs8
compare docs docs_fp
compare docs8 docs8_fp

STAGE="after REINDEX"
q -c "REINDEX INDEX docs_fp" -c "REINDEX INDEX docs8_fp"
checked docs_fp docs
checked docs8_fp docs8
compare docs docs_fp
compare docs8 docs8_fp
# hamming_index_check verifies a live index: while a session inserts, it must not report
# corruption (rows committed after it read the index are not missing from it).
STAGE="hamming_index_check during inserts"
q -f "$DIR/worker_mixed.sql" >"$DIR/worker_online.log" 2>&1 &
workers+=($!)
sleep 0.5
for _ in 1 2 3 4 5; do
    checked docs_fp
    checked docs8_fp
done
kill "${workers[-1]}" 2>/dev/null || true
wait "${workers[-1]}" 2>/dev/null || true
workers=()
echo "check_index_crash: ok in $((SECONDS - T0)) s ($COMPARED (probe, k, row) matches compared per way of asking)"
