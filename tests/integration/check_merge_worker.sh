#!/usr/bin/env bash
# The background merge workers (issue 20), with neardup.merge_workers = 2. A pause point
# set for the workers only (ALTER SYSTEM SET neardup.pause_at, which inserting sessions
# never reach: they do not merge) holds a worker mid-merge while this script holds advisory
# lock 4711; meanwhile:
#   - inserts never merge themselves: a session inserting 20 x pending_limit rows (past the
#     16,384 pending rows that make inserters wait) returns while the worker is held, and
#     waits at most neardup.merge_wait (shown in pg_stat_activity as its wait event), not
#     for the merge;
#   - sessions insert and read; every answer equals a seq scan's;
#   - the worker is killed with SIGKILL mid-merge (crash recovery), then the postmaster is
#     (kill -9 of everything) while a merge has written its run but not published it; the
#     index checks clean and exact after each, and the workers merge again;
#   - DROP INDEX waits for the held merge and then succeeds; DROP DATABASE of the worker's
#     database succeeds at once (the worker is asked to exit); the server stops promptly
#     (pg_ctl stop -m fast) with a worker held;
#   - REINDEX INDEX CONCURRENTLY and hamming_index_check run while sessions insert and the
#     workers merge;
#   - once inserts pause, a worker compacts the index into one run;
#   - inserts that come back while a worker compacts (held; simhash64 and hash256) wait
#     only neardup.merge_wait, and the compaction gives way to their merge;
#   - with neardup.merge_cost_delay set, a worker sleeps in VacuumDelay and still merges.
# Answers are compared with a seq scan for 40 probes and hamming_index_check must count
# every row after every step. Needs pageinspect (the metapage). Own cluster.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-merge-worker
T0=$SECONDS

fail() { echo "check_merge_worker: $*" >&2; exit 1; }
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }
bg=()
cleanup() {
    local pid
    for pid in "${bg[@]}"; do kill "$pid" 2>/dev/null || true; done
    cluster_stop "$DIR"
}
trap cleanup EXIT

cluster_start "$DIR" "neardup.merge_workers = 2" "autovacuum = off" "fsync = on" \
    "log_min_messages = warning" "restart_after_crash = on"

q -c "SELECT 1 FROM pg_stat_activity WHERE backend_type = 'neardup merge launcher'" | grep -q 1 ||
    fail "no 'neardup merge launcher' in pg_stat_activity"

q >/dev/null -c "CREATE EXTENSION neardup" -c "CREATE EXTENSION pageinspect" \
    -f "$ROOT/tests/integration/fingerprint_functions.sql" -f "$ROOT/tests/integration/index_pages.sql"
q >/dev/null <<'SQL'
SELECT setseed(0.33);
CREATE TABLE w (id bigserial PRIMARY KEY, fp simhash64);
CREATE INDEX w_fp ON w USING hamming (fp) WITH (pending_limit = 1000);
INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 20000);
CREATE TABLE probes AS SELECT row_number() OVER () AS pid, fp FROM w ORDER BY random() LIMIT 40;
-- Near copies of the probes, so that answers are not empty.
INSERT INTO w (fp) SELECT flip(fp::bigint, 1 + (i % 3))::simhash64 FROM probes, generate_series(1, 5) i;
SQL
LIMIT_ROWS=1000
PER_PAGE=582 # entries on a pending page (index_page::ENTRIES_PER_PAGE)

# answers PGOPTIONS: each probe's count of rows within 3 bits.
answers() {
    PGOPTIONS="$1" q -c "SELECT string_agg(c::text, ',' ORDER BY pid) FROM probes,
        LATERAL (SELECT count(*) AS c FROM w WHERE fp <@ hamming_ball(probes.fp, 3)) x"
}
# exact STEP [held]: index answers equal a seq scan's, and hamming_index_check counts every
# row (not while a worker is held: the check waits for the merge lock, which it holds).
exact() {
    local by_index by_seq checked rows
    by_index=$(answers "-c enable_seqscan=off -c enable_bitmapscan=off")
    by_seq=$(answers "-c enable_indexscan=off -c enable_bitmapscan=off")
    [[ $by_index == "$by_seq" ]] || fail "[$1] the index finds $by_index, a seq scan $by_seq"
    rows=$(PGOPTIONS="-c enable_indexscan=off -c enable_bitmapscan=off" q -c "SELECT count(*) FROM w")
    if [[ ${2:-} != held ]]; then
        checked=$(q -c "SELECT hamming_index_check('w_fp')")
        [[ $checked == "$rows" ]] || fail "[$1] hamming_index_check counts $checked, w has $rows rows"
    fi
    echo "check_merge_worker: $1: exact ($rows rows, $((SECONDS - T0)) s)"
}
# merged_within SECONDS STEP [INDEX PER_PAGE]: the workers bring the pending list of INDEX
# (w_fp; PER_PAGE entries a pending page) under its limit (to within the page it is
# filling), with no list sealed and no merge in progress.
merged_within() {
    local deadline=$((SECONDS + $1)) index=${3:-w_fp} per_page=${4:-$PER_PAGE}
    until [[ $(q -c "SELECT (meta_u32('$index', 28) - 1) * $per_page < $LIMIT_ROWS AND meta_u32('$index', 32) = 0 AND meta_u32('$index', 48) = 0") == t ]]; do
        ((SECONDS < deadline)) || fail "[$2] the workers did not merge $index in $1 s (pending pages, sealed list, merge: $(q -c "SELECT meta_u32('$index', 28), meta_u32('$index', 32), meta_u32('$index', 48)"); activity: $(q -c "SELECT backend_type, wait_event_type, wait_event, state, query FROM pg_stat_activity"))"
        sleep 0.2
    done
}
# hold POINT: the workers pause at POINT (while this script holds advisory lock 4711 in a
# session of its own, left in HOLDER); returns once a worker waits there.
hold() {
    q -c "ALTER SYSTEM SET neardup.pause_at = '$1'" -c "SELECT pg_reload_conf()" >/dev/null
    (q -c "SELECT pg_advisory_lock(4711)" -c "SELECT pg_sleep(600)" >/dev/null 2>&1) &
    HOLDER=$!
    bg+=("$HOLDER")
    until [[ $(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4711 AND granted") == 1 ]]; do sleep 0.05; done
}
# no_workers_within SECONDS: every merge worker has exited (5 s idle), and with it its list
# of indexes to compact: the next worker compacts only what it merges.
no_workers_within() {
    local deadline=$((SECONDS + $1))
    until [[ $(q -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'neardup merge worker'") == 0 ]]; do
        ((SECONDS < deadline)) || fail "merge workers still run $1 s after their last merge"
        sleep 0.2
    done
}
# held_worker SECONDS [ACTIVITY]: the pid of a merge worker waiting at the pause point whose
# activity is LIKE ACTIVITY (by default 'merging hamming index %': a merge, not a
# compaction; or 'compacting hamming index OID') (fails after SECONDS).
held_worker() {
    local deadline=$((SECONDS + $1)) activity=${2:-merging hamming index %} pid
    while :; do
        pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'neardup merge worker' AND wait_event_type = 'Lock' AND query LIKE '$activity' LIMIT 1")
        [[ -n $pid ]] && { echo "$pid"; return; }
        ((SECONDS < deadline)) || fail "no merge worker '$activity' reached the pause point in $1 s ($(q -c "SELECT string_agg(wait_event_type || ' ' || query, '; ') FROM pg_stat_activity WHERE backend_type = 'neardup merge worker'"))"
        sleep 0.1
    done
}
release() {
    q -c "ALTER SYSTEM RESET neardup.pause_at" -c "SELECT pg_reload_conf()" >/dev/null
    kill "$HOLDER" 2>/dev/null || true
    wait "$HOLDER" 2>/dev/null || true
    q -c "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4711 AND granted" >/dev/null
}
wait_ready() {
    local deadline=$((SECONDS + 60))
    until q -c "SELECT 1" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || fail "the server did not come back after the crash"
        sleep 0.2
    done
}

merged_within 30 "the first rows"
exact "after the first merges, by the workers"

# --- 1. Inserts hand the merge off and wait only a bounded time. (Sections that hold
# after_seal start with no worker: a compaction seals too, and a worker left from the
# merges before could compact w, and be held there, instead of merging.)
no_workers_within 30
hold after_seal
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 2 * $LIMIT_ROWS)"
worker=$(held_worker 20)
start=$(date +%s%N)
q -c "SET neardup.merge_wait = '300ms'" -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 20 * $LIMIT_ROWS)"
ms=$((($(date +%s%N) - start) / 1000000))
((ms >= 250 && ms < 5000)) || fail "an insert outrunning a held worker took $ms ms (merge_wait 300 ms)"
# A second statement waits again (the budget is per statement); pg_stat_activity shows it.
(q -c "SET neardup.merge_wait = '3s'" -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 100)" >/dev/null) &
inserter=$!
sleep 1
event=$(q -c "SELECT wait_event_type || '/' || wait_event FROM pg_stat_activity WHERE query LIKE 'INSERT INTO w (fp)%' AND backend_type = 'client backend'")
wait "$inserter"
case $event in Extension/Extension | Extension/NeardupMergeBehind) ;; *) fail "a waiting inserter shows wait event '$event'" ;; esac
echo "check_merge_worker: an insert of 20 x pending_limit rows took $ms ms with a worker held mid-merge (pid $worker); a waiting one shows $event"

# --- 2. Reads and inserts go on while the worker is held; then it is killed (SIGKILL).
for _ in 1 2 3; do
    q -c "INSERT INTO w (fp) SELECT flip(fp::bigint, 2)::simhash64 FROM probes"
    exact "while a worker is held after sealing the list" held
done
kill -9 "$worker"
wait_ready
release
exact "after the worker was killed mid-merge (crash recovery)"
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 2 * $LIMIT_ROWS)"
merged_within 30 "after the worker's crash"
exact "after the workers merged again"

# --- 3. The postmaster killed while a merge has written its run, before publishing it.
no_workers_within 30
hold before_publish
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 2 * $LIMIT_ROWS)"
held_worker 20 >/dev/null
cluster_crash "$DIR/data"
sudo -u postgres "$PG_BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
wait_ready
q -c "ALTER SYSTEM RESET neardup.pause_at" -c "SELECT pg_reload_conf()" >/dev/null
exact "after a kill -9 of the postmaster mid-merge"
q -c "VACUUM w"
exact "after VACUUM swept the unpublished run"
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 2 * $LIMIT_ROWS)"
merged_within 30 "after the postmaster's crash"

# --- 4. DROP INDEX while a worker holds a merge of it.
q >/dev/null -c "CREATE TABLE doomed (fp simhash64)" -c "CREATE INDEX doomed_fp ON doomed USING hamming (fp) WITH (pending_limit = 1000)"
no_workers_within 30
hold after_seal
q -c "INSERT INTO doomed SELECT rnd64()::simhash64 FROM generate_series(1, 3000)"
held_worker 20 >/dev/null
(q -c "DROP INDEX doomed_fp" >"$DIR/drop.log" 2>&1; echo "exit $?" >>"$DIR/drop.log") &
dropper=$!
sleep 1
kill -0 "$dropper" 2>/dev/null || fail "DROP INDEX did not wait for the merge in progress: $(cat "$DIR/drop.log")"
release
start=$SECONDS
wait "$dropper"
grep -q "exit 0" "$DIR/drop.log" || fail "DROP INDEX failed: $(cat "$DIR/drop.log")"
echo "check_merge_worker: DROP INDEX waited for the held merge and then succeeded ($((SECONDS - start)) s after its release)"

# --- 5. DROP DATABASE of a database whose worker is held mid-merge.
q -c "CREATE DATABASE other"
q -d other >/dev/null -c "CREATE EXTENSION neardup" \
    -c "CREATE TABLE o (fp simhash64)" -c "CREATE INDEX o_fp ON o USING hamming (fp) WITH (pending_limit = 1000)"
q -c "ALTER SYSTEM SET neardup.pause_at = 'after_seal'" -c "SELECT pg_reload_conf()" >/dev/null
(q -d other -c "SELECT pg_advisory_lock(4711)" -c "SELECT pg_sleep(600)" >/dev/null 2>&1) &
HOLDER=$!
bg+=("$HOLDER")
sleep 0.5
q -d other -c "INSERT INTO o SELECT ('x' || md5(i::text))::bit(64)::bigint::simhash64 FROM generate_series(1, 3000) i"
held_worker 20 >/dev/null
# The lock holder is a session of that database too: it goes (the worker then runs on).
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'other' AND backend_type = 'client backend'" >/dev/null
wait "$HOLDER" 2>/dev/null || true
start=$(date +%s%N)
q -c "DROP DATABASE other" || fail "DROP DATABASE failed with a merge worker connected to it"
ms=$((($(date +%s%N) - start) / 1000000))
echo "check_merge_worker: DROP DATABASE with a worker held mid-merge in it took $ms ms"
q -c "ALTER SYSTEM RESET neardup.pause_at" -c "SELECT pg_reload_conf()" >/dev/null
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 2 * $LIMIT_ROWS)"
merged_within 30 "after DROP DATABASE"

# --- 6. The server stops promptly with a worker held mid-merge.
no_workers_within 30
hold after_seal
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 2 * $LIMIT_ROWS)"
held_worker 20 >/dev/null
start=$SECONDS
sudo -u postgres "$PG_BIN/pg_ctl" -D "$DIR/data" -m fast -t 30 -w stop >/dev/null || fail "the server did not stop in 30 s"
echo "check_merge_worker: pg_ctl stop -m fast with a worker held took $((SECONDS - start)) s"
wait "$HOLDER" 2>/dev/null || true
sudo -u postgres "$PG_BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
q -c "ALTER SYSTEM RESET neardup.pause_at" -c "SELECT pg_reload_conf()" >/dev/null
exact "after a stop with a worker held mid-merge"
# Shared memory starts empty: the next inserts past the limit ask for the merge again.
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 2 * $LIMIT_ROWS)"
merged_within 30 "after the restart"

# --- 7. REINDEX CONCURRENTLY while sessions insert and the workers merge.
for s in 1 2; do
    (for _ in $(seq 60); do
        echo "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 100);"
        echo "INSERT INTO w (fp) SELECT flip(fp::bigint, 1)::simhash64 FROM probes WHERE pid % 7 = $s;"
    done | q >/dev/null) &
    bg+=($!)
done
for _ in 1 2 3; do q -c "REINDEX INDEX CONCURRENTLY w_fp"; done
# hamming_index_check alongside the inserts and merges (it keeps merges out while it
# reads; they wait for it). Not alongside REINDEX CONCURRENTLY: that waits for the
# check's snapshot while the check waits for its lock, a deadlock PostgreSQL resolves.
for _ in 1 2 3; do q -c "SELECT hamming_index_check('w_fp')" >/dev/null; done
for pid in "${bg[@]: -2}"; do wait "$pid" || fail "an inserting session failed"; done
exact "after REINDEX CONCURRENTLY during inserts and merges"
merged_within 30 "after REINDEX CONCURRENTLY"
# --- 8. Once inserts pause, a worker compacts the index into one run (as a fresh build).
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 5 * $LIMIT_ROWS)"
deadline=$((SECONDS + 30))
until [[ $(q -c "SELECT meta_u32('w_fp', 60) = 1 AND meta_u32('w_fp', 28) = 0 AND meta_u32('w_fp', 32) = 0") == t ]]; do
    ((SECONDS < deadline)) || fail "no compaction into one run 30 s after the inserts (runs $(q -c "SELECT meta_u32('w_fp', 60)"))"
    sleep 0.2
done
exact "compacted into one run after the inserts paused"
# --- 8b. Inserts come back while a worker compacts (held with the merge lock taken): the
# compaction is at the index as a merge is, so an insert far past the limit waits
# neardup.merge_wait and goes on (it used to take the index for stalled and wait for the
# lock until the compaction ended); released, the compaction gives way to their merge.
# held_compaction INDEX INSERT: with the workers gone (and their lists of indexes to
# compact), INSERT (its row count written ROWS) of 2 x pending_limit rows is merged by a new
# worker, whose compaction of INDEX that follows is held; then INSERT of 20 x pending_limit
# rows with merge_wait 300 ms must return in bounded time (sets ms, worker).
held_compaction() {
    local activity start
    no_workers_within 30
    hold compaction
    q -c "${2/ROWS/2 * $LIMIT_ROWS}"
    worker=$(held_worker 20 "compacting hamming index $(q -c "SELECT '$1'::regclass::oid")")
    start=$(date +%s%N)
    q -c "SET neardup.merge_wait = '300ms'" -c "${2/ROWS/20 * $LIMIT_ROWS}"
    ms=$((($(date +%s%N) - start) / 1000000))
    ((ms >= 250 && ms < 5000)) || fail "an insert into $1 outrunning a held compaction took $ms ms (merge_wait 300 ms)"
}
held_compaction w_fp "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, ROWS)"
exact "while a compaction is held" held
release
merged_within 30 "after the held compaction gave way"
exact "after the compaction gave way to the merge"
echo "check_merge_worker: an insert of 20 x pending_limit rows took $ms ms with a worker held compacting (pid $worker)"
# The same for a hash256 index (its own entry width and merge), once the workers that
# merged w are gone (so that the compaction held next is the wide index's).
rnd256="('x' || md5(random()::text) || md5(random()::text))::bit(256)::hash256"
q >/dev/null -c "CREATE TABLE wide (id bigserial PRIMARY KEY, code hash256)" \
    -c "CREATE INDEX wide_code ON wide USING hamming (code) WITH (pending_limit = $LIMIT_ROWS)"
# wide_exact STEP [held]: 30 probes (near copies of rows) find what a seq scan finds within
# 31 bits, and hamming_index_check counts every row.
wide_exact() {
    local probe="SELECT string_agg(c::text, ',' ORDER BY p.id) FROM (SELECT id, (code::bit(256) # (B'101'::bit(256) >> (id % 250)::int))::hash256 AS code FROM wide ORDER BY id LIMIT 30) p,
        LATERAL (SELECT count(*) AS c FROM wide d WHERE d.code <@ hamming_ball(p.code, 31)) x"
    local by_index by_seq rows
    by_index=$(PGOPTIONS="-c enable_seqscan=off -c enable_bitmapscan=off" q -c "$probe")
    by_seq=$(PGOPTIONS="-c enable_indexscan=off -c enable_bitmapscan=off" q -c "$probe")
    [[ $by_index == "$by_seq" && $by_seq == *1* ]] || fail "[$1, hash256] the index finds $by_index, a seq scan $by_seq"
    if [[ ${2:-} != held ]]; then
        rows=$(PGOPTIONS="-c enable_indexscan=off -c enable_bitmapscan=off" q -c "SELECT count(*) FROM wide")
        [[ $(q -c "SELECT hamming_index_check('wide_code')") == "$rows" ]] || fail "[$1, hash256] hamming_index_check does not count $rows rows"
    fi
    echo "check_merge_worker: $1 (hash256): exact ($((SECONDS - T0)) s)"
}
held_compaction wide_code "INSERT INTO wide (code) SELECT $rnd256 FROM generate_series(1, ROWS)"
wide_exact "while a compaction is held" held
release
merged_within 30 "hash256, after the held compaction gave way" wide_code 214
wide_exact "after the compaction gave way to the merge"
echo "check_merge_worker: an insert of 20 x pending_limit rows into a hash256 index took $ms ms with its compaction held"
# --- 9. Throttled as autovacuum: with a cost delay, a worker sleeps (wait event
# VacuumDelay) between the pages it writes, and still merges; answers stay exact meanwhile.
q >/dev/null -c "ALTER SYSTEM SET neardup.merge_cost_delay = '20ms'" \
    -c "ALTER SYSTEM SET neardup.merge_cost_limit = 200" -c "SELECT pg_reload_conf()"
start=$SECONDS
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 20 * $LIMIT_ROWS)"
delays=0
for _ in $(seq 100); do
    delays=$((delays + $(q -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'neardup merge worker' AND wait_event = 'VacuumDelay'")))
    ((delays < 2)) || break
    sleep 0.05
done
((delays >= 2)) || fail "no merge worker slept in VacuumDelay with neardup.merge_cost_delay = 20ms"
exact "while a throttled worker merges" held
merged_within 120 "throttled"
echo "check_merge_worker: a throttled worker was seen in VacuumDelay $delays times and merged 20 x pending_limit rows in $((SECONDS - start)) s"
q >/dev/null -c "ALTER SYSTEM RESET neardup.merge_cost_delay" -c "ALTER SYSTEM RESET neardup.merge_cost_limit" \
    -c "SELECT pg_reload_conf()"
! grep -E "PANIC|ERROR: .*(hamming|index|page)" "$DIR/server.log" || fail "errors of the index in the server log"
exact "at the end"
echo "check_merge_worker: passed in $((SECONDS - T0)) s"
