#!/usr/bin/env bash
# The `hamming` index through streaming replication: a primary and a hot standby made by
# `pg_basebackup -R`, each on its own unix socket under /tmp. After each step on the
# primary (build, inserts into the pending pages, deletes, updates, VACUUM, REINDEX,
# TRUNCATE, CREATE INDEX CONCURRENTLY) the standby replays up to the primary's WAL
# position; then the same queries, forced through the index, must give the same answers on
# both, and the standby's must equal a brute-force seq scan on the standby;
# hamming_index_check must pass on both and count the same entries.
# Then merges through replication: an index WITH (pending_limit = 500) on a table of its
# own takes inserts from two sessions in small transactions while a third updates,
# deletes and VACUUMs, so that runs are written, merged and recycled (and their pages
# reused) all along; meanwhile the standby answers lookups. With hot_standby_feedback on
# (the lookups start once the standby has replayed what the primary wrote before it held
# the standby's xmin), none may fail, nor from three sessions while the standby, its xmin
# kept by a physical replication slot, is restarted under the load. Without it, replay may cancel them as conflicts with recovery (40001, the
# primary logs each recycling as a btree logs a page reuse), and they are then retried; no
# scan may meet a reused page, and no other error is allowed. A scan held open across the
# primary's recycling must be cancelled by a snapshot conflict. After the load, a VACUUM and replay, the standby's answers must
# equal brute force on the standby and its hamming_index_check must pass.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
PRIMARY=/tmp/neardup-index-primary
STANDBY=/tmp/neardup-index-standby
T0=$SECONDS

fail() { echo "check_index_standby: $*" >&2; exit 1; }
qp() { psql -XqAt -v ON_ERROR_STOP=1 -h "$PRIMARY" -p 5432 -U postgres -d postgres "$@"; }
qs() { psql -XqAt -v ON_ERROR_STOP=1 -h "$STANDBY" -p 5432 -U postgres -d postgres "$@"; }
# primary_until SQL: waits up to 10 s for SQL on the primary to give 1; false if it never does
primary_until() {
    local _
    for _ in $(seq 100); do
        [[ $(qp -c "$1") == 1 ]] && return 0
        sleep 0.1
    done
    return 1
}
# rows NODE TABLE: counted by a seq scan (with no column needed, the planner may otherwise
# choose an index-only scan of the hamming index, which cannot return tuples).
rows() { PGOPTIONS="-c enable_indexscan=off -c enable_indexonlyscan=off -c enable_bitmapscan=off" "$1" -c "SELECT count(*) FROM $2"; }

cleanup() {
    cluster_stop "$STANDBY"
    cluster_stop "$PRIMARY"
}
trap cleanup EXIT
cluster_stop "$STANDBY"
# wal_consistency_checking: every generic WAL record (the index's, appends included) carries
# the page as the primary wrote it, and the standby's replay compares its result with it.
cluster_start "$PRIMARY" "shared_preload_libraries = 'neardup'" "wal_level = replica" \
    "max_wal_senders = 4" "autovacuum = off" "log_min_messages = warning" \
    "wal_consistency_checking = 'generic'"
grep -q "^local *replication *all *trust" "$PRIMARY/data/pg_hba.conf" ||
    echo "local replication all trust" >>"$PRIMARY/data/pg_hba.conf"
qp -c "SELECT pg_reload_conf()" >/dev/null

rm -rf "$STANDBY"
mkdir -p "$STANDBY"
chown postgres: "$STANDBY"
sudo -u postgres "$PG_BIN/pg_basebackup" -h "$PRIMARY" -p 5432 -U postgres -D "$STANDBY/data" -R -X stream -c fast ||
    fail "pg_basebackup failed"
{
    echo "unix_socket_directories = '$STANDBY'"
    echo "hot_standby = on"
    # Replay waits for the standby's queries in the way of a cleanup (a heap's, or the
    # recycling of index pages they may read) until they end: the comparisons must not be
    # cancelled by a merge in the background. The rounds of merges under load wait 1 s,
    # and the scan held across a recycling 200 ms.
    echo "max_standby_streaming_delay = -1"
    echo "hot_standby_feedback = off"
} >>"$STANDBY/data/postgresql.conf"
sudo -u postgres "$PG_BIN/pg_ctl" -D "$STANDBY/data" -l "$STANDBY/server.log" -w -t 60 start >/dev/null ||
    fail "the standby did not start: $(tail -20 "$STANDBY/server.log")"
[[ $(qs -c "SELECT pg_is_in_recovery()") == t ]] || fail "the standby is not in recovery"

# synced: waits until the standby has replayed everything the primary has written.
synced() {
    local lsn
    lsn=$(qp -c "SELECT pg_current_wal_lsn()")
    for _ in $(seq 600); do
        [[ $(qs -c "SELECT coalesce(pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn, false)") == t ]] && return 0
        sleep 0.05
    done
    fail "[$STAGE] the standby did not replay up to $lsn in 30 s: $(tail -5 "$STANDBY/server.log")"
}

force_index="-c enable_seqscan=off -c enable_bitmapscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c enable_material=off"
force_bitmap="-c enable_seqscan=off -c enable_indexscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c enable_material=off"
force_seq="-c enable_indexscan=off -c enable_bitmapscan=off -c enable_indexonlyscan=off"

# on NODE OPTIONS SQL: one line from SQL run on NODE (qp or qs) with those settings.
on() { PGOPTIONS=$2 "$1" -c "$3"; }
uses_index() { # NODE OPTIONS SQL INDEX-PLAN-TEXT
    local plan
    plan=$(PGOPTIONS=$2 "$1" -c "EXPLAIN (COSTS OFF) $3")
    grep -q "$4" <<<"$plan" && ! grep -qE "Seq Scan on (docs8?|stream)( |$)" <<<"$plan" ||
        fail "[$STAGE] on $1 the plan does not read $4:"$'\n'"$plan"
}

# compare TABLE INDEX: index scan, bitmap scan, the hook's hamming() <= k and ORDER BY <~>
# give the same answers on the primary and the standby, and the standby's equal its seq scan.
compare() {
    local t=$1 index=$2 probe='p.fp' node
    [[ $t == docs8 ]] || probe='p.fp::simhash64'
    local agg="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || k || ':' || d.id, ',' ORDER BY p.pid, k, d.id), ''))
        FROM probes p CROSS JOIN generate_series(0, 4) AS k JOIN $t d"
    local ball="$agg ON d.fp <@ hamming_ball($probe, k)"
    # the same rows as the ball's (every k from a row's distance to 4), each distance computed once
    local brute="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || k || ':' || d.id, ',' ORDER BY p.pid, k, d.id), ''))
        FROM probes p JOIN $t d ON bit_count((d.fp::bigint # p.fp)::bit(64)) <= 4
        CROSS JOIN LATERAL generate_series(bit_count((d.fp::bigint # p.fp)::bit(64)), 4) AS k"
    local hook="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || d.id, ',' ORDER BY p.pid, d.id), ''))
        FROM probes p JOIN $t d ON hamming(d.fp, $probe) <= 3"
    local hook_brute=${hook//hamming(d.fp, $probe)/bit_count((d.fp::bigint # p.fp)::bit(64))}
    local knn="SELECT md5(string_agg(p.pid || ':' || x.d, ',' ORDER BY p.pid)) FROM probes p CROSS JOIN LATERAL
        (SELECT array_agg(dist ORDER BY dist)::text AS d FROM
            (SELECT d.fp <~> $probe AS dist FROM $t d WHERE d.fp IS NOT NULL ORDER BY d.fp <~> $probe LIMIT 30) s) x
        WHERE p.pid % 5 = 0"
    local knn_brute=${knn//d.fp <~> $probe/bit_count((d.fp::bigint # p.fp)::bit(64))::int}

    local seq primary standby
    seq=$(on qs "$force_seq" "$brute")
    [[ ${seq%% *} -gt 200 ]] || fail "[$STAGE] $t: only ${seq%% *} matches in all, the probes test nothing"
    COMPARED=$((COMPARED + ${seq%% *}))
    [[ $seq == "$(on qp "$force_seq" "$brute")" ]] || fail "[$STAGE] $t: the seq scans of primary and standby differ"
    for node in qp qs; do
        uses_index $node "$force_index" "$ball" "Index Scan using $index"
        uses_index $node "$force_bitmap" "$ball" "Bitmap Index Scan on $index"
        uses_index $node "$force_index" "$hook" "Index Scan using $index"
        uses_index $node "$force_index" "$knn" "Index Scan using $index"
    done
    primary=$(on qp "$force_index" "$ball")
    standby=$(on qs "$force_index" "$ball")
    [[ $standby == "$primary" ]] || fail "[$STAGE] $t: index scans differ: primary '$primary', standby '$standby'"
    [[ $standby == "$seq" ]] || fail "[$STAGE] $t: standby index scan '$standby', its seq scan '$seq'"
    standby=$(on qs "$force_bitmap" "$ball")
    [[ $standby == "$seq" ]] || fail "[$STAGE] $t: standby bitmap scan '$standby', its seq scan '$seq'"
    seq=$(on qs "$force_seq" "$hook_brute")
    for node in qp qs; do
        standby=$(on $node "$force_index" "$hook")
        [[ $standby == "$seq" ]] || fail "[$STAGE] $t: hamming(fp, q) <= 3 on $node through the index '$standby', seq scan '$seq'"
    done
    seq=$(on qs "$force_seq" "$knn_brute")
    for node in qp qs; do
        [[ $(on $node "$force_index" "$knn") == "$seq" ]] ||
            fail "[$STAGE] $t: ORDER BY <~> LIMIT 30 on $node through the index differs from a sort of the seq scan"
    done
    local cp cs
    cp=$(qp -c "SELECT hamming_index_check('$index')" 2>&1) || fail "[$STAGE] primary hamming_index_check('$index'): $cp"
    cs=$(qs -c "SELECT hamming_index_check('$index')" 2>&1) || fail "[$STAGE] standby hamming_index_check('$index'): $cs"
    [[ $cp == "$cs" ]] || fail "[$STAGE] hamming_index_check('$index') counts $cp on the primary, $cs on the standby"
}

COMPARED=0
step() { # STAGE SQL: runs SQL on the primary, waits for the standby, compares both tables
    STAGE=$1
    qp -c "$2"
    synced
    compare docs docs_fp
    if [[ $(qs -c "SELECT count(*) FROM pg_index WHERE indexrelid = 'docs8_fp'::regclass AND indisvalid") == 1 ]]; then
        compare docs8 docs8_fp
    fi
}

STAGE=setup
qp >/dev/null -c "CREATE EXTENSION neardup" -f "$ROOT/tests/integration/fingerprint_functions.sql"
qp >/dev/null <<'SQL'
SELECT setseed(0.23);
CREATE TABLE gen (n serial, fp bigint);
INSERT INTO gen (fp) SELECT rnd64() FROM generate_series(1, 6000);
INSERT INTO gen (fp) SELECT flip(c.fp, 1 + (i % 6)) FROM (SELECT fp FROM gen ORDER BY n LIMIT 200) c,
    generate_series(1, 12) i;
INSERT INTO gen (fp) SELECT fp FROM gen ORDER BY n DESC LIMIT 500;
INSERT INTO gen (fp) SELECT (x'5a3c1e'::bigint << 40) | (rnd64() & ((1::bigint << 40) - 1)) FROM generate_series(1, 600);
INSERT INTO gen (fp) SELECT NULL FROM generate_series(1, 10);
CREATE TABLE docs (id bigserial PRIMARY KEY, fp simhash64, note int DEFAULT 0);
CREATE TABLE docs8 (id bigserial PRIMARY KEY, fp bigint, note int DEFAULT 0);
INSERT INTO docs (fp) SELECT fp::simhash64 FROM gen ORDER BY random();
INSERT INTO docs8 (fp) SELECT fp FROM gen ORDER BY random();
CREATE TABLE probes AS
SELECT row_number() OVER () AS pid, fp FROM (
    (SELECT fp FROM gen WHERE n <= 200 ORDER BY random() LIMIT 15)
    UNION ALL (SELECT fp FROM gen WHERE fp IS NOT NULL ORDER BY random() LIMIT 10)
    UNION ALL (SELECT flip(fp, 1 + floor(random() * 4)::int) FROM gen WHERE fp IS NOT NULL ORDER BY random() LIMIT 10)
    UNION ALL (SELECT fp FROM gen WHERE (fp >> 40) & 16777215 = x'5a3c1e'::bigint LIMIT 5)
    UNION ALL (SELECT rnd64() FROM generate_series(1, 10))
) s;
SQL

step "CREATE INDEX" "CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (max_distance = 3);
    CREATE INDEX docs8_fp ON docs8 USING hamming (fp int8_hamming_ops) WITH (max_distance = 3)"
step "inserts (pending pages)" "INSERT INTO docs (fp) SELECT fp::simhash64 FROM gen ORDER BY random() LIMIT 2500;
    INSERT INTO docs (fp) SELECT flip(fp, (pid % 4)::int)::simhash64 FROM probes, generate_series(1, 10);
    INSERT INTO docs8 (fp) SELECT flip(fp, 1) FROM gen ORDER BY random() LIMIT 2500"
step "deletes" "DELETE FROM docs WHERE id % 3 = 0; DELETE FROM docs8 WHERE id % 5 = 2"
step "updates" "UPDATE docs SET fp = flip(fp::bigint, 1)::simhash64 WHERE id % 7 = 1;
    UPDATE docs SET note = note + 1 WHERE id % 7 = 2;
    UPDATE docs8 SET fp = flip(fp, 2) WHERE id % 7 = 1"
step "VACUUM" "VACUUM docs, docs8"
for t in docs docs8; do
    n=$(qs -c "SELECT hamming_index_check('${t}_fp')")
    [[ $n == $(rows qs $t) ]] || fail "[VACUUM] ${t}_fp holds $n entries on the standby, $t has $(rows qs $t) rows"
done
step "inserts into freed space" "INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 2000);
    INSERT INTO docs (fp) SELECT flip(fp, (pid % 3)::int)::simhash64 FROM probes, generate_series(1, 5);
    INSERT INTO docs8 (fp) SELECT rnd64() FROM generate_series(1, 2000)"
step "REINDEX" "REINDEX INDEX docs_fp; REINDEX INDEX docs8_fp"
step "TRUNCATE and reload" "TRUNCATE docs8; INSERT INTO docs8 (fp) SELECT fp FROM gen"
qp -c "DROP INDEX docs8_fp"
step "CREATE INDEX CONCURRENTLY" "CREATE INDEX CONCURRENTLY docs8_fp ON docs8 USING hamming (fp int8_hamming_ops) WITH (max_distance = 2)"
step "more inserts and VACUUM" "INSERT INTO docs8 (fp) SELECT flip(fp, 1) FROM gen LIMIT 1000;
    DELETE FROM docs8 WHERE id % 2 = 0"
step "final VACUUM" "VACUUM docs8"
# --- merges through replication, with lookups on the standby while it replays them.
STAGE="merges"
qp >/dev/null -c "CREATE EXTENSION pageinspect"
qp >/dev/null <<'SQL'
CREATE TABLE stream (id bigserial PRIMARY KEY, fp simhash64, note int DEFAULT 0);
CREATE INDEX stream_fp ON stream USING hamming (fp) WITH (pending_limit = 500);
-- gen's rows (the probes' neighbours), in transactions of 200 rows: runs from the start.
DO $$ BEGIN FOR i IN 0..47 LOOP
    INSERT INTO stream (fp) SELECT fp::simhash64 FROM gen WHERE n > i * 200 AND n <= (i + 1) * 200;
    COMMIT;
END LOOP; END $$;
SQL
# ids taken so far (metapage, after the page header: magic, version, max_distance, next_id):
# one per pending list and per run written.
next_id() { qp -c "SELECT get_byte(p, 36) + (get_byte(p, 37) << 8) + (get_byte(p, 38) << 16) FROM get_raw_page('stream_fp', 0) p"; }
ids_before=$(next_id)
pick="(SELECT 1 + floor(random() * (SELECT max(id) FROM stream))::bigint)"
load_sql() { # N TEXT: TEXT N times
    local i
    for ((i = 0; i < $1; i++)); do printf '%s\n' "$2"; done
}
load_sql 50000 "INSERT INTO stream (fp) SELECT CASE WHEN random() < 0.02 THEN NULL ELSE rnd64()::simhash64 END FROM generate_series(1, 20);
INSERT INTO stream (fp) SELECT flip(fp, 1 + floor(random() * 3)::int)::simhash64 FROM gen WHERE n = (SELECT 1 + floor(random() * 9510)::int);" \
    >"$PRIMARY/stream_insert.sql"
# (VACUUM without truncating the heap: its AccessExclusiveLock would be replayed on the
# standby, a lock conflict that has nothing to do with the index.)
load_sql 50000 "UPDATE stream SET fp = flip(fp::bigint, 1)::simhash64 WHERE id = $pick;
DELETE FROM stream WHERE id IN (SELECT 1 + floor(random() * (SELECT max(id) FROM stream))::bigint FROM generate_series(1, 40));
VACUUM (TRUNCATE false) stream;
SELECT pg_sleep(0.1);" >"$PRIMARY/stream_vacuum.sql"
loaders=()
cleanup_loaders() { local pid; for pid in "${loaders[@]}"; do kill "$pid" 2>/dev/null || true; done; }
# stop_loaders: fails if a loader ended early, else ends them all: their backends end with
# their current statements (a VACUUM goes on after its client is gone), so that the primary
# is quiet before the standby catches up for good
stop_loaders() {
    local i pid
    for i in "${!loaders[@]}"; do
        kill -0 "${loaders[$i]}" 2>/dev/null || fail "[$STAGE] loader $i ended early: $(tail -n 3 "$PRIMARY"/stream_*.log)"
    done
    qp -c "SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity
        WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" >/dev/null
    for pid in "${loaders[@]}"; do wait "$pid" 2>/dev/null || true; done
    loaders=()
}
conflicts() { qs -c "SELECT confl_snapshot FROM pg_stat_database_conflicts WHERE datname = 'postgres'"; }
trap 'cleanup_loaders; cleanup' EXIT

# Lookups on the standby meanwhile, in rounds of one psql session each: for every probe
# the ball of radius 3 through an index scan and through a bitmap scan, the 20 nearest
# rows, and (every fifth probe) the index's answer against a seq scan's in one snapshot
# (they must agree) and a self-join. After each query psql prints
# its SQLSTATE: 40001 (a conflict with recovery, which cancels the scans that could read
# garbage before its pages are reused) is counted, and the query is asked again in the next round; any
# other error fails.
{
    echo "\\set ON_ERROR_STOP 0"
    echo "\\set VERBOSITY verbose"
    # the session's backend, to find in the standby's log why it ended if it did
    echo "SELECT 'PID ' || pg_backend_pid();"
    for pid in $(seq 50); do
        ball="SELECT count(*) FROM probes p JOIN stream d ON d.fp <@ hamming_ball(p.fp::simhash64, 3) WHERE p.pid = $pid;"
        for settings in "$force_bitmap" "$force_index"; do
            echo "RESET ALL;"
            for setting in $settings; do [[ $setting == -c ]] || echo "SET ${setting/=/ = };"; done
            echo "$ball"
            echo "\\echo SQLSTATE :SQLSTATE"
        done
        echo "SELECT sum(x.dist) FROM probes p CROSS JOIN LATERAL (SELECT d.fp <~> p.fp::simhash64 AS dist FROM stream d
            WHERE d.fp IS NOT NULL ORDER BY d.fp <~> p.fp::simhash64 LIMIT 20) x WHERE p.pid = $pid;"
        echo "\\echo SQLSTATE :SQLSTATE"
        if ((pid % 5 == 0)); then
            # One snapshot: the index's answer (index scans forced) against a seq scan's
            # (`+ 0` keeps the planner hook from using the index), and a self-join.
            echo "RESET ALL; SET enable_seqscan = off; SET enable_bitmapscan = off;"
            echo "SELECT CASE WHEN (SELECT count(*) FROM stream d WHERE d.fp <@ hamming_ball(p.fp::simhash64, 3))
                = (SELECT count(*) FROM stream d WHERE hamming(d.fp, p.fp::simhash64) + 0 <= 3)
                THEN 'agree' ELSE 'DIFFER' END FROM probes p WHERE p.pid = $pid;"
            echo "\\echo SQLSTATE :SQLSTATE"
            echo "SELECT count(*) FROM stream a JOIN stream b ON b.fp <@ hamming_ball(a.fp, 3) WHERE a.id % 97 = $pid % 97;"
            echo "\\echo SQLSTATE :SQLSTATE"
        fi
    done
} >"$STANDBY/lookups.sql"

# stream_round FEEDBACK SECONDS: the load on the primary and the lookups on the standby for
# SECONDS, with hot_standby_feedback FEEDBACK on the standby; leaves ANSWERED, CANCELLED.
stream_round() {
    local feedback=$1 seconds=$2 f pid i rounds=0 t_load
    TERMINATED=0
    qs -c "ALTER SYSTEM SET hot_standby_feedback = $feedback" -c "ALTER SYSTEM SET max_standby_streaming_delay = '1s'" \
        -c "SELECT pg_reload_conf()" >/dev/null
    if [[ $feedback == on ]]; then
        primary_until "SELECT count(*) FROM pg_stat_replication WHERE backend_xmin IS NOT NULL" ||
            fail "[$STAGE] the standby's feedback did not reach the primary"
        # Feedback holds back only what the primary does after it has the standby's xmin:
        # the recyclings (and heap prunes) it logged before, in the round without feedback,
        # still conflict with the standby's queries if the standby replays them while they
        # run. (Starting the lookups without this wait, one run in three of this check was
        # cancelled by a record of the round before.)
        synced
    fi
    rm -f "$STANDBY/lookups.all"
    loaders=()
    for f in insert insert vacuum; do
        qp -f "$PRIMARY/stream_$f.sql" >>"$PRIMARY/stream_$f.log" 2>&1 &
        loaders+=($!)
    done
    t_load=$SECONDS
    while ((SECONDS - t_load < seconds)); do
        psql -XqAt -h "$STANDBY" -p 5432 -U postgres -d postgres -f "$STANDBY/lookups.sql" >"$STANDBY/lookups.out" 2>&1 || true
        rounds=$((rounds + 1))
        cat "$STANDBY/lookups.out" >>"$STANDBY/lookups.all"
        if grep -E "^SQLSTATE " "$STANDBY/lookups.out" | grep -vqE "^SQLSTATE (00000|40001)$"; then
            fail "[$STAGE] a standby lookup failed during replay: $(grep -E "ERROR|FATAL" "$STANDBY/lookups.out" | grep -v " 40001:" | head -3)"
        fi
        # Without feedback, PostgreSQL may end a standby session for a conflict with
        # recovery (FATAL 40001, when it comes between two statements, or while the
        # session starts) rather than cancel a query: the round ends there, and the next
        # one asks again. psql prints the FATAL (without its SQLSTATE when it came before
        # the session's first statement, which psql then reads as it sends that one), or,
        # when the session ended while psql was between two statements, only that the
        # server closed the connection: then the standby's log says why it ended.
        if [[ $(grep -c "^SQLSTATE " "$STANDBY/lookups.out") != 170 ]]; then
            backend=$(sed -n 's/^PID \([0-9]*\)$/\1/p' "$STANDBY/lookups.out")
            [[ $feedback == off ]] && {
                grep -qE "FATAL: +(40001: terminating connection|terminating connection|canceling statement) due to conflict with recovery" "$STANDBY/lookups.out" ||
                    { [[ -n $backend ]] && grep -qF "[$backend] FATAL:  terminating connection due to conflict with recovery" "$STANDBY/server.log"; }
            } || fail "[$STAGE] a round of standby lookups broke off: $(tail -3 "$STANDBY/lookups.out")"
            TERMINATED=$((TERMINATED + 1))
        fi
        # Replay cancels (or waits for) the queries that could read garbage before it
        # replays the garbage's recycling: a scan never meets a reused page.
        ! grep -q "reused while a scan read it" "$STANDBY/lookups.out" ||
            fail "[$STAGE] a standby scan met a page the replayed merges reused: no recovery conflict cancelled it first"
        ! grep -q "^DIFFER" "$STANDBY/lookups.out" ||
            fail "[$STAGE] in one standby snapshot the index and a seq scan disagree: $(grep -m1 '^DIFFER' "$STANDBY/lookups.out")"
    done
    ANSWERED=$(grep -c "^SQLSTATE 00000$" "$STANDBY/lookups.all" || true)
    CANCELLED=$(grep -c "^SQLSTATE 40001$" "$STANDBY/lookups.all" || true)
    stop_loaders
    if grep -h "ERROR" "$PRIMARY"/stream_*.log | grep -v "terminating connection" | grep -q .; then
        fail "[$STAGE] a loading session failed: $(grep -h ERROR "$PRIMARY"/stream_*.log | head -3)"
    fi
    echo "check_index_standby: hot_standby_feedback = $feedback: $ANSWERED standby lookups answered in $rounds rounds" \
        "while the primary merged, $CANCELLED cancelled (40001) and asked again, $TERMINATED sessions ended by a conflict"
    grep -E "^(ERROR|FATAL): +40001:" "$STANDBY/lookups.all" | sed -E 's/block [0-9]+/block N/' | sort | uniq -c | sed 's/^ */    /' || true
}

# Without feedback the primary recycles pages regardless of the standby's queries, and
# replay cancels the queries that could read them first (as for PostgreSQL's own indexes).
stream_round off 12
ids=$(($(next_id) - ids_before))
echo "check_index_standby: $ids ids taken on the primary (pending lists sealed, runs written)"
# 2 ids per pending list written as a run; at least one a second with a limit of 500.
((ids >= 20)) || fail "[$STAGE] only $ids ids taken on the primary: too few merges"
# With feedback, no standby query is ever cancelled by the index.
STAGE="merges, hot_standby_feedback = on"
stream_round on 20
((CANCELLED == 0 && TERMINATED == 0)) || fail "[$STAGE] $CANCELLED standby lookups cancelled, $TERMINATED sessions ended, with hot_standby_feedback on"

# A standby restarted under merge load: while it is down no walsender holds its xmin, and
# the primary recycles what it merges away (as it prunes its heap) at once. A physical
# replication slot keeps the standby's last xmin meanwhile, and with it no standby query
# may be cancelled, neither before the restart nor while the standby replays what the
# primary wrote while it was down. (Without a slot, queries that start in the first
# seconds after the restart may be cancelled by that WAL, as by a btree's reused pages or
# the heap's pruned rows: what feedback cannot prevent, and this check does not try.)
STAGE="merges, hot_standby_feedback = on, a replication slot, the standby restarted"
qp -c "SELECT pg_create_physical_replication_slot('neardup_standby')" >/dev/null
qs -c "ALTER SYSTEM SET primary_slot_name = 'neardup_standby'" -c "SELECT pg_reload_conf()" >/dev/null
primary_until "SELECT count(*) FROM pg_replication_slots WHERE active AND xmin IS NOT NULL" ||
    fail "[$STAGE] the standby's feedback did not reach its replication slot"
synced
# Short lookups, one statement each, from three sessions at a time.
{
    echo "\\set ON_ERROR_STOP 0"
    echo "\\set VERBOSITY verbose"
    echo "SET enable_seqscan = off; SET enable_bitmapscan = off;"
    for pid in $(seq 50); do
        echo "SELECT count(*) FROM probes p JOIN stream d ON d.fp <@ hamming_ball(p.fp::simhash64, 3) WHERE p.pid = $pid;"
        echo "\\echo SQLSTATE :SQLSTATE"
    done
} >"$STANDBY/short_lookups.sql"
# standby_lookups SECONDS OUT: one session after another for SECONDS (while the standby is
# down, none connects).
standby_lookups() {
    local until=$((SECONDS + $1))
    while ((SECONDS < until)); do
        psql -XqAt -h "$STANDBY" -p 5432 -U postgres -d postgres -f "$STANDBY/short_lookups.sql" >>"$2" 2>&1 || sleep 0.05
    done
}
conflicts_before=$(conflicts)
rm -f "$STANDBY"/short_lookups.*.out
loaders=() sessions=()
for f in insert insert vacuum; do
    qp -f "$PRIMARY/stream_$f.sql" >>"$PRIMARY/stream_$f.log" 2>&1 &
    loaders+=($!)
done
for i in 1 2 3; do
    standby_lookups 16 "$STANDBY/short_lookups.$i.out" &
    sessions+=($!)
done
sleep 4
answered_before=$(cat "$STANDBY"/short_lookups.*.out | grep -c "^SQLSTATE 00000$" || true)
conflicts_stopped=$(conflicts)
sudo -u postgres "$PG_BIN/pg_ctl" -D "$STANDBY/data" -m fast -w stop >/dev/null
ids_down=$(next_id)
sleep 3
ids_down=$(($(next_id) - ids_down))
sudo -u postgres "$PG_BIN/pg_ctl" -D "$STANDBY/data" -l "$STANDBY/server.log" -w -t 60 start >/dev/null ||
    fail "[$STAGE] the standby did not start again: $(tail -20 "$STANDBY/server.log")"
for pid in "${sessions[@]}"; do wait "$pid"; done
stop_loaders
answered=$(cat "$STANDBY"/short_lookups.*.out | grep -c "^SQLSTATE 00000$" || true)
conflicts_after=$(conflicts)
echo "check_index_standby: restarted under merge load with a replication slot: $answered_before standby lookups" \
    "answered before, $((answered - answered_before)) after; $ids_down ids taken on the primary while the standby was down;" \
    "confl_snapshot $conflicts_before -> $conflicts_stopped before the restart, $conflicts_after after it"
! grep -h "conflict with recovery" "$STANDBY"/short_lookups.*.out | grep -q . ||
    fail "[$STAGE] standby lookups were cancelled: $(grep -h -m3 "conflict with recovery" "$STANDBY"/short_lookups.*.out)"
! grep -h "^SQLSTATE " "$STANDBY"/short_lookups.*.out | grep -vqE "^SQLSTATE (00000|57P01)$" ||
    fail "[$STAGE] a standby lookup failed: $(grep -h -E "ERROR|FATAL" "$STANDBY"/short_lookups.*.out | sed -n 1,3p)"
# (The restart keeps the counters, or starts them again from 0.)
((conflicts_stopped == conflicts_before && (conflicts_after == conflicts_before || conflicts_after == 0))) ||
    fail "[$STAGE] pg_stat_database_conflicts counts snapshot conflicts: $conflicts_before -> $conflicts_stopped, then $conflicts_after"
((answered - answered_before >= 20)) || fail "[$STAGE] only $((answered - answered_before)) standby lookups answered after the restart"
((ids_down >= 4)) || fail "[$STAGE] only $ids_down ids taken on the primary while the standby was down: too few merges"
qs -c "ALTER SYSTEM RESET primary_slot_name" -c "SELECT pg_reload_conf()" >/dev/null
primary_until "SELECT (count(*) = 0)::int FROM pg_replication_slots WHERE active" || true
qp -c "SELECT pg_drop_replication_slot('neardup_standby')" >/dev/null

STAGE="after the merges, VACUUM"
# Feedback off first, and its xmin gone from the primary: otherwise the standby's last
# feedback holds back the primary's horizon, and hamming_index_check counts rows there that
# the primary still sees as recently dead but the standby, with no query of its own, as dead.
qs -c "ALTER SYSTEM SET hot_standby_feedback = off" -c "ALTER SYSTEM RESET max_standby_streaming_delay" \
    -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 300); do
    [[ $(qp -c "SELECT count(*) FROM pg_stat_replication WHERE backend_xmin IS NOT NULL") == 0 ]] && break
    sleep 0.1
done
[[ $(qp -c "SELECT count(*) FROM pg_stat_replication WHERE backend_xmin IS NOT NULL") == 0 ]] ||
    fail "[$STAGE] the standby's feedback xmin stays on the primary"
qp -c "VACUUM stream"
synced
compare stream stream_fp
n=$(qs -c "SELECT hamming_index_check('stream_fp')")
[[ $n == $(rows qs stream) ]] || fail "[$STAGE] stream_fp holds $n entries on the standby, stream has $(rows qs stream) rows"
# Once more after inserts that merge into the pages VACUUM recycled.
STAGE="inserts after the merges"
qp -c "INSERT INTO stream (fp) SELECT flip(fp, (pid % 3)::int)::simhash64 FROM probes, generate_series(1, 5);
    INSERT INTO stream (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 3000)"
synced
compare stream stream_fp
# A standby scan held open (a cursor, then a sleep) while the primary merges and recycles
# the pages it reads: replaying the recycling waits max_standby_streaming_delay, then
# cancels the query as a snapshot conflict, as for a btree's reused page; the cursor never
# reads the reused pages.
STAGE="a standby scan in the way of recycling"
conflicts_before=$(conflicts)
qs -c "ALTER SYSTEM SET max_standby_streaming_delay = '200ms'" -c "SELECT pg_reload_conf()" >/dev/null
psql -XqAt -h "$STANDBY" -p 5432 -U postgres -d postgres >"$STANDBY/held.out" 2>&1 <<'SQL' &
SET enable_seqscan = off; SET enable_bitmapscan = off;
BEGIN ISOLATION LEVEL REPEATABLE READ;
DECLARE held CURSOR FOR SELECT id FROM stream WHERE fp <@ hamming_ball((SELECT fp FROM probes WHERE pid = 1)::simhash64, 3);
FETCH 1 FROM held;
SELECT 'slept', pg_sleep(30);
FETCH ALL FROM held;
COMMIT;
SQL
held=$!
for _ in $(seq 100); do
    [[ $(qs -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%slept%' AND wait_event = 'PgSleep'") == 1 ]] && break
    sleep 0.1
done
qp -c "INSERT INTO stream (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 1200)" -c "VACUUM stream" \
    -c "INSERT INTO stream (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 1200)" -c "VACUUM stream" >/dev/null
synced
wait "$held" || true
grep -q "canceling statement due to conflict with recovery" "$STANDBY/held.out" ||
    fail "[$STAGE] the held standby scan was not cancelled by a conflict with recovery: $(head -c 600 "$STANDBY/held.out")"
! grep -q "reused while a scan read it" "$STANDBY/held.out" || fail "[$STAGE] the held standby scan met a reused page"
(($(conflicts) > conflicts_before)) || fail "[$STAGE] pg_stat_database_conflicts counts no snapshot conflict"
echo "check_index_standby: a standby scan held across the primary's recycling was cancelled by a snapshot conflict" \
    "(confl_snapshot $conflicts_before -> $(conflicts))"
echo "check_index_standby: ok in $((SECONDS - T0)) s ($COMPARED (probe, k, row) matches compared per way of asking)"
