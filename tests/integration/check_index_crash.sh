#!/usr/bin/env bash
# Crash safety of the `hamming` index: the postmaster and all its processes are killed
# with SIGKILL while four sessions insert, update, delete and VACUUM (fsync on, no
# checkpoint since the indexes were built, so recovery replays the build's WAL too); after
# crash recovery every index answer (index scan, bitmap scan, ORDER BY <~>, the planner
# hook's hamming() <= k) must equal a brute-force seq scan, for 50 probes at k = 0..4, on
# a simhash64 table and a bigint table (int8_hamming_ops), and for lookups within 31 bits
# on a hash256 table (whose index merges throughout); hamming_index_check must pass.
# Then again after DELETE + VACUUM, after inserts that reuse the freed TIDs, and after
# REINDEX; an UNLOGGED table's index must come back empty and usable (ambuildempty); last,
# hamming_index_check must pass while another session inserts.
# Then a second crash lands while a merge is writing: an index WITH (pending_limit = 600)
# takes inserts from three sessions in small transactions while a fourth deletes and
# VACUUMs in a loop; the cluster is killed as soon as the metapage (read with pageinspect)
# shows a merge under way, and the recovered metapage must name that interrupted merge
# (else the load and the crash are tried again). After recovery the answers equal brute
# force and hamming_index_check passes; VACUUM must finish or forget the merge and leave
# no page of it both unused and outside the free space map (all of them, for a run it had
# not published), the index still checking clean; then inserts merge again into the freed
# pages, and the answers and the check are verified again.
# Own cluster in /tmp/neardup-index-crash with shared_preload_libraries = 'neardup'.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-index-crash
T0=$SECONDS

fail() { echo "check_index_crash: $*" >&2; exit 1; }
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }
# count_rows TABLE: by a seq scan (with no column needed, the planner may otherwise pick
# an index-only scan of the hamming index, which cannot return tuples).
count_rows() { PGOPTIONS="-c enable_indexscan=off -c enable_indexonlyscan=off -c enable_bitmapscan=off" q -c "SELECT count(*) FROM $1"; }

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
-- Wide codes: random ones and near copies (a bit or two flipped), merged often.
CREATE TABLE wide (id bigserial PRIMARY KEY, code hash256);
INSERT INTO wide (code) SELECT ('x' || md5(random()::text) || md5(random()::text))::bit(256)::hash256
    FROM generate_series(1, 5000);
INSERT INTO wide (code) SELECT (code::bit(256) # (B'11'::bit(256) >> (id % 250)::int))::hash256
    FROM wide WHERE id % 4 = 0;
CREATE INDEX wide_code ON wide USING hamming (code) WITH (pending_limit = 300);
CREATE UNLOGGED TABLE scratch (id bigserial PRIMARY KEY, fp simhash64);
INSERT INTO scratch (fp) SELECT fp::simhash64 FROM gen LIMIT 2000;
CREATE INDEX scratch_fp ON scratch USING hamming (fp);
INSERT INTO scratch (fp) SELECT fp::simhash64 FROM gen LIMIT 500;
SQL
rows_before=$(count_rows docs)

# --- concurrent sessions, each a bounded script of short autocommit transactions.
ids=25000
pick="(SELECT 1 + floor(random() * $ids)::bigint)"
# repeat N TEXT: TEXT N times, one per line (no process per copy)
repeat() { local i; for ((i = 0; i < $1; i++)); do printf '%s\n' "$2"; done; }
repeat 3000 "$(cat <<SQL
INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 10);
WITH s AS MATERIALIZED (SELECT 1 + floor(random() * $ids)::bigint AS id FROM generate_series(1, 5))
INSERT INTO docs (fp) SELECT flip(d.fp::bigint, 1 + floor(random() * 4)::int)::simhash64 FROM docs d JOIN s USING (id);
UPDATE docs SET fp = flip(fp::bigint, 1)::simhash64 WHERE id = $pick;
UPDATE docs SET note = note + 1 WHERE id = $pick;
BEGIN; INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 5); ROLLBACK;
SQL
)" >"$DIR/worker_docs.sql"
repeat 3000 "$(cat <<SQL
BEGIN;
INSERT INTO docs8 (fp) SELECT rnd64() FROM generate_series(1, 40);
WITH s AS MATERIALIZED (SELECT 1 + floor(random() * $ids)::bigint AS id FROM generate_series(1, 10))
INSERT INTO docs8 (fp) SELECT flip(d.fp, 1 + floor(random() * 4)::int) FROM docs8 d JOIN s USING (id);
UPDATE docs8 SET fp = flip(fp, 2) WHERE id = $pick;
COMMIT;
INSERT INTO scratch (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 10);
SQL
)" >"$DIR/worker_docs8.sql"
repeat 3000 "$(cat <<SQL
INSERT INTO docs (fp) SELECT fp::simhash64 FROM gen WHERE n = $pick;
INSERT INTO docs8 (fp) SELECT fp FROM gen WHERE n = $pick;
INSERT INTO wide (code) SELECT (code::bit(256) # (B'1'::bit(256) >> (id % 256)::int))::hash256
    FROM wide WHERE id = $pick;
INSERT INTO wide (code) SELECT ('x' || md5(random()::text) || md5(random()::text))::bit(256)::hash256
    FROM generate_series(1, 3);
SQL
)" >"$DIR/worker_mixed.sql"
repeat 3000 "$(cat <<SQL
DELETE FROM docs WHERE id IN (SELECT 1 + floor(random() * $ids)::bigint FROM generate_series(1, 20));
DELETE FROM docs8 WHERE id IN (SELECT 1 + floor(random() * $ids)::bigint FROM generate_series(1, 20));
DELETE FROM wide WHERE id IN (SELECT 1 + floor(random() * 6000)::bigint FROM generate_series(1, 5));
VACUUM docs;
VACUUM docs8;
VACUUM wide;
SQL
)" >"$DIR/worker_vacuum.sql"
chmod a+r "$DIR"/worker_*.sql

for w in docs docs8 mixed vacuum; do
    q -f "$DIR/worker_$w.sql" >"$DIR/worker_$w.log" 2>&1 &
    workers+=($!)
done
sleep 4
for i in "${!workers[@]}"; do
    kill -0 "${workers[$i]}" 2>/dev/null || fail "worker $i ended before the crash: $(tail -n 5 "$DIR"/worker_*.log)"
done

# crash: SIGKILL to the postmaster and, at the same instant, to all its children; then
# the worker sessions must have been cut off (and must not have failed before).
crash() { # LOG_PREFIX: the workers' logs are $DIR/LOG_PREFIX_*.log
    local pid logs=("$DIR/$1"_*.log)
    cluster_crash "$DIR/data" || fail "the crashed cluster's processes did not end"
    for pid in "${workers[@]}"; do wait "$pid" 2>/dev/null || true; done
    workers=()
    grep -qE "server closed the connection|connection to server was lost|terminating connection" "${logs[@]}" ||
        fail "the workers were not interrupted by the crash: $(tail -n 3 "${logs[@]}")"
    if grep -h "ERROR" "${logs[@]}" | grep -v "terminating connection" | grep -q .; then
        fail "a worker failed before the crash: $(grep -h ERROR "${logs[@]}" | head -5)"
    fi
}

# restart: crash recovery, which must replay WAL (only the log written since this call's
# previous crash is read).
restart() {
    local log_from crash_at=$SECONDS
    log_from=$(($(stat -c %s "$DIR/server.log" 2>/dev/null || echo 0) + 1))
    # (pg_ctl warns that the stale postmaster.pid may belong to a running server: it does not.)
    sudo -u postgres "$PG_BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 start >/dev/null 2>"$DIR/restart.err" ||
        fail "restart after the crash failed: $(cat "$DIR/restart.err"; tail -20 "$DIR/server.log")"
    tail -c "+$log_from" "$DIR/server.log" | grep -q "database system was interrupted" || fail "no crash recovery in the server log"
    tail -c "+$log_from" "$DIR/server.log" | grep -q "redo done" || fail "crash recovery replayed no WAL"
    RECOVERY_TIME=$((SECONDS - crash_at))
}

crash worker
restart
rows_after=$(count_rows docs)
echo "check_index_crash: docs had $rows_before rows, $rows_after after the crash; recovery took $RECOVERY_TIME s"

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
    grep -q "$3" <<<"$plan" && ! grep -qE "Seq Scan on (docs|docs8|scratch|ingest)( |$)" <<<"$plan" ||
        fail "[$STAGE] the plan does not read $3:"$'\n'"$plan"$'\n'"for: $2"
}

# compare TABLE INDEX: every way of asking the index equals the brute-force answer.
compare() {
    local t=$1 index=$2 probe='p.fp' result
    [[ $t == docs8 ]] || probe='p.fp::simhash64'
    local agg="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || k || ':' || d.id, ',' ORDER BY p.pid, k, d.id), ''))
        FROM probes p CROSS JOIN generate_series(0, 4) AS k JOIN $t d"
    local ball="$agg ON d.fp <@ hamming_ball($probe, k)"
    # the same rows as the ball's (every k from a row's distance to 4), each distance computed once
    local brute="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || k || ':' || d.id, ',' ORDER BY p.pid, k, d.id), ''))
        FROM probes p JOIN $t d ON bit_count((d.fp::bigint # p.fp)::bit(64)) <= 4
        CROSS JOIN LATERAL generate_series(bit_count((d.fp::bigint # p.fp)::bit(64)), 4) AS k"
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

# compare_wide: lookups within 31 bits of the codes of some rows through the index of
# `wide` (an index scan and a bitmap scan) equal a brute force.
compare_wide() {
    local agg="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.id || ':' || d.id, ',' ORDER BY p.id, d.id), ''))
        FROM (SELECT * FROM wide WHERE id % 50 = 1) p JOIN wide d" expected result
    local ball="$agg ON d.code <@ hamming_ball(p.code, 31)"
    expected=$(answer "$force_seq" "$agg ON bit_count(d.code::bit(256) # p.code::bit(256)) <= 31")
    [[ ${expected%% *} -gt 50 ]] || fail "[$STAGE] wide: only ${expected%% *} matches in all"
    uses_index "$force_index" "$ball" "Index Scan using wide_code"
    result=$(answer "$force_index" "$ball")
    [[ $result == "$expected" ]] || fail "[$STAGE] wide: index scan gives '$result', seq scan '$expected'"
    result=$(answer "$force_bitmap" "$ball")
    [[ $result == "$expected" ]] || fail "[$STAGE] wide: bitmap scan gives '$result', seq scan '$expected'"
}

# checked INDEX [EXACT_TABLE]: hamming_index_check passes (and, after a VACUUM with no
# other session, counts exactly the table's rows: NULL fingerprints are indexed too).
checked() {
    local n
    n=$(q -c "SELECT hamming_index_check('$1')" 2>&1) || fail "[$STAGE] hamming_index_check('$1'): $n"
    if [[ -n ${2:-} ]]; then
        local rows
        rows=$(count_rows "$2")
        [[ $n == "$rows" ]] || fail "[$STAGE] hamming_index_check('$1') counts $n entries, $2 has $rows rows after VACUUM"
    fi
}

COMPARED=0
STAGE="after crash recovery"
checked docs_fp
checked docs8_fp
checked wide_code
compare docs docs_fp
compare docs8 docs8_fp
compare_wide

# The unlogged table is reset to empty by crash recovery; its index must follow.
STAGE="unlogged table after crash"
[[ $(count_rows scratch) == 0 ]] || fail "[$STAGE] the unlogged table was not reset"
checked scratch_fp scratch
q -c "INSERT INTO scratch (fp) SELECT fp::simhash64 FROM docs WHERE id % 10 = 0"
expected=$(answer "$force_seq" "SELECT count(*) FROM scratch s JOIN probes p ON bit_count((s.fp::bigint # p.fp)::bit(64)) <= 3")
result=$(answer "$force_index" "SELECT count(*) FROM scratch s JOIN probes p ON s.fp <@ hamming_ball(p.fp::simhash64, 3)")
[[ $result == "$expected" ]] || fail "[$STAGE] index gives $result matches, seq scan $expected"
checked scratch_fp scratch

STAGE="after DELETE and VACUUM"
q -c "DELETE FROM docs WHERE id % 3 = 0" -c "DELETE FROM docs8 WHERE id % 4 = 1" -c "DELETE FROM wide WHERE id % 3 = 0" \
    -c "VACUUM docs" -c "VACUUM docs8" -c "VACUUM wide"
checked docs_fp docs
checked docs8_fp docs8
checked wide_code wide
compare docs docs_fp
compare docs8 docs8_fp
compare_wide

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
# ($! is the subshell running q: its psql goes first, or it would insert on to the end)
pkill -P "${workers[-1]}" 2>/dev/null || true
kill "${workers[-1]}" 2>/dev/null || true
wait "${workers[-1]}" 2>/dev/null || true
workers=()
# --- a crash while merges run. An index WITH (pending_limit = 600) on a table of its own:
# inserting sessions seal and write a run every ~600 rows, merging runs as they go (merges
# of up to 65,536 rows write the new run whole and publish it at the end; larger ones go
# table by table, publishing each table), and a session deletes and VACUUMs in a loop
# (bulk delete under the merge lock, flush, recycle, sweep).
STAGE="crash during merges"
q >/dev/null -c "CREATE EXTENSION pageinspect" -c "CREATE EXTENSION pg_freespacemap" \
    -f "$ROOT/tests/integration/index_pages.sql"
q >/dev/null <<'SQL'
CREATE TABLE ingest (id bigserial PRIMARY KEY, fp simhash64);
CREATE INDEX ingest_fp ON ingest USING hamming (fp) WITH (pending_limit = 600);
-- Through merges from the start: gen's rows (so the probes find neighbours), then enough
-- that merges of the largest run go table by table.
INSERT INTO ingest (fp) SELECT fp::simhash64 FROM gen ORDER BY random();
INSERT INTO ingest (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 50000);
-- Kills the cluster from inside, within a millisecond or two of seeing a merge under way
-- in two polls a millisecond apart: a kill from the shell after the poll returned would
-- come tens of milliseconds later, after most merges have ended. `kill` is the command
-- (cluster_kill_command: the postmaster and its children, this backend too). The merge is recorded
-- (and committed) first. Commits between polls, so as not to hold back the recycling of
-- merged-away runs. Returns (no kill) if no merge is seen in 20 s. With `by_table`, only
-- a merge table by table is taken (they last longer: a kill lands in them more surely).
CREATE TABLE kills (attempt int, merge bigint);
CREATE PROCEDURE kill_during_merge(idx regclass, attempt int, kill text, by_table boolean) LANGUAGE plpgsql AS $$
DECLARE
    seen bigint := 0;
    merge bigint;
    deadline timestamptz := clock_timestamp() + interval '20 s';
BEGIN
    LOOP
        merge := meta_u32(idx, 48);
        IF merge > 0 AND merge = seen AND (NOT by_table OR meta_u32(idx, 52) > 0) THEN
            INSERT INTO kills VALUES (attempt, merge);
            COMMIT;
            EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', kill);
        END IF;
        EXIT WHEN clock_timestamp() > deadline;
        seen := merge;
        COMMIT;
        PERFORM pg_sleep(0.001);
    END LOOP;
END $$;
SQL
# repeat N TEXT: TEXT N times (a builtin loop: no process per line).
repeat 20000 "INSERT INTO ingest (fp) SELECT CASE WHEN random() < 0.02 THEN NULL ELSE rnd64()::simhash64 END FROM generate_series(1, 10);
INSERT INTO ingest (fp) SELECT flip(fp, 1 + floor(random() * 3)::int)::simhash64 FROM gen WHERE n = $pick;
BEGIN; INSERT INTO ingest (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 5); ROLLBACK;" >"$DIR/ingest_insert.sql"
repeat 5000 "DELETE FROM ingest WHERE id IN (SELECT 1 + floor(random() * (SELECT max(id) FROM ingest))::bigint FROM generate_series(1, 30));
VACUUM ingest;" >"$DIR/ingest_vacuum.sql"
chmod a+r "$DIR"/ingest_*.sql

# The kill must find a merge writing: after 3 s of load (runs of every size by then) the
# metapage is polled until it shows one, and the cluster is killed at once. The recovered
# metapage must still name that merge; a kill that came just after the merge finished
# (the metapage names none) is tried again.
merge=0
for attempt in 1 2 3 4 5 6; do
    rm -f "$DIR"/ingest_*.log
    for w in 1 2 3; do
        q -f "$DIR/ingest_insert.sql" >"$DIR/ingest_insert_$w.log" 2>&1 &
        workers+=($!)
    done
    q -f "$DIR/ingest_vacuum.sql" >"$DIR/ingest_vacuum.log" 2>&1 &
    workers+=($!)
    sleep 3
    for i in "${!workers[@]}"; do
        kill -0 "${workers[$i]}" 2>/dev/null || fail "[$STAGE] worker $i ended before the crash: $(tail -n 5 "$DIR"/ingest_*.log)"
    done
    postmaster=$(head -1 "$DIR/data/postmaster.pid")
    # The first two tries take any merge; if both land after their merge ended, the next
    # take a merge table by table.
    by_table=$( ((attempt > 2)) && echo true || echo false)
    if q -c "CALL kill_during_merge('ingest_fp', $attempt, '$(cluster_kill_command "$postmaster")', $by_table)" >"$DIR/kill.log" 2>&1; then
        fail "[$STAGE] no merge seen in 20 s of inserts"
    fi
    grep -qE "server closed the connection|connection to server was lost" "$DIR/kill.log" ||
        fail "[$STAGE] the kill failed: $(cat "$DIR/kill.log")"
    crash ingest
    restart
    seen=$(q -c "SELECT merge FROM kills WHERE attempt = $attempt")
    merge=$(q -c "SELECT meta_u32('ingest_fp', 48)")
    inputs=$(q -c "SELECT meta_u32('ingest_fp', 52)")
    echo "check_index_crash: attempt $attempt: killed while merge $seen was writing; the recovered metapage names merge" \
        "$merge ($inputs runs merged table by table); $(count_rows ingest) rows; recovery took $RECOVERY_TIME s"
    ((merge > 0)) && break
    ((attempt < 6)) || fail "[$STAGE] six kills, none while a merge was writing"
done
q -c "CREATE TABLE merge_pages AS SELECT blkno FROM page_owners('ingest_fp') WHERE owner = $merge"
written=$(q -c "SELECT count(*) FROM merge_pages")

# The recovered index: a run written whole but not published is invisible; a merge table
# by table has some tables in the new run and the rest in its inputs, and lookups must
# still find each row exactly once.
STAGE="after a crash during merge $merge"
checked ingest_fp
compare ingest ingest_fp

# VACUUM: its flush finishes a merge table by table, or forgets a merge that published
# nothing, whose pages the sweep then frees.
STAGE="VACUUM after a crash during merge $merge"
q -c "VACUUM ingest"
checked ingest_fp ingest
[[ $(q -c "SELECT meta_u32('ingest_fp', 48)") == 0 ]] || fail "[$STAGE] the metapage still names merge $merge"
left=$(q -c "SELECT count(*) FROM merge_pages o JOIN page_owners('ingest_fp') p USING (blkno)
    WHERE p.owner = $merge AND pg_freespace('ingest_fp', o.blkno) = 0")
echo "check_index_crash: merge $merge had written $written pages by the crash; after VACUUM $left of them are in use"
if ((inputs == 0)); then
    [[ $left == 0 ]] || fail "[$STAGE] $left of the $written pages of the unpublished run $merge are not in the free space map"
else
    # The merge finished as run $merge: each of its trees has in use exactly the leaves the
    # metapage counts. More are the copy of the tree the crash interrupted, which nothing
    # refers to and the free space map does not have.
    leaves=$(q -c "SELECT string_agg(tbl || ':' || coalesce(n, 0) || '/' || m.leaves, ' ' ORDER BY tbl)
        FROM run_tree_leaves('ingest_fp', $merge) m LEFT JOIN (SELECT tbl, count(*) AS n
        FROM page_owners('ingest_fp') p WHERE owner = $merge AND kind = 2 AND pg_freespace('ingest_fp', p.blkno) = 0
        GROUP BY tbl) s USING (tbl) WHERE coalesce(n, 0) <> m.leaves")
    [[ -z $leaves ]] ||
        fail "[$STAGE] the leaves of run $merge in use / counted per tree (tree:in use/counted) are $leaves: pages of the tree the crash interrupted are neither in use nor free"
fi
compare ingest ingest_fp

# Inserts that merge again: the merges take the pages VACUUM left free.
STAGE="inserts after the sweep"
q -c "CREATE TABLE free_pages AS SELECT p.blkno, p.owner FROM page_owners('ingest_fp') p
    WHERE pg_freespace('ingest_fp', p.blkno) > 0"
size_before=$(q -c "SELECT pg_relation_size('ingest_fp') / 8192")
# (near copies of gen's rows, so the probes find them too; 80 transactions, ~50 runs)
for i in $(seq 0 39); do
    echo "INSERT INTO ingest (fp) SELECT flip(fp, 1 + floor(random() * 3)::int)::simhash64 FROM gen WHERE n % 40 = $i;"
    echo "INSERT INTO ingest (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 500);"
done >"$DIR/after_sweep.sql"
q -f "$DIR/after_sweep.sql" >/dev/null
reused=$(q -c "SELECT count(*) FROM free_pages f JOIN page_owners('ingest_fp') p USING (blkno)
    WHERE p.owner IS DISTINCT FROM f.owner")
echo "check_index_crash: $(q -c "SELECT count(*) FROM free_pages") pages were free after VACUUM, $reused of them reused;" \
    "index $size_before -> $(q -c "SELECT pg_relation_size('ingest_fp') / 8192") pages"
((reused > 0)) || fail "[$STAGE] none of the pages free after VACUUM was reused by the merges since"
checked ingest_fp ingest
compare ingest ingest_fp

echo "check_index_crash: ok in $((SECONDS - T0)) s ($COMPARED (probe, k, row) matches compared per way of asking)"
