#!/usr/bin/env bash
# Background merges that cannot happen never leave the pending list to grow (issue 38):
#   1. max_worker_processes = 2, which neardup's launcher and PostgreSQL's logical
#      replication launcher take: no merge worker can start. The launcher says so once in
#      the server log, with a hint, and inserters merge themselves (as without workers):
#      40 x pending_limit rows leave at most a few pages pending, and the statements do not
#      wait neardup.merge_wait each;
#   2. max_worker_processes = 1: the logical replication launcher, registered first, takes
#      the slot and neardup's launcher is not registered, so inserters merge themselves;
#   3. REINDEX INDEX CONCURRENTLY, waiting for a transaction that inserted into the table,
#      holds the index's ShareUpdateExclusiveLock, which the workers try in vain: inserters
#      merge themselves once their request waited neardup.merge_wait, and the list stays
#      under the rows that make them wait (16,384) instead of growing with every insert.
# hamming_index_check must count every row after each. Needs pageinspect. Own cluster.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-merge-stalled
T0=$SECONDS
LIMIT_ROWS=1000
PER_PAGE=582   # entries on a pending page (index_page::ENTRIES_PER_PAGE)
BEHIND=16384   # pending rows that make an inserter wait for the workers (merge_worker::BEHIND_ROWS)
NO_SLOT="no background worker slot is free for a merge worker"

fail() { echo "check_merge_stalled: $*" >&2; exit 1; }
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }
bg=()
cleanup() {
    local pid
    for pid in "${bg[@]}"; do kill "$pid" 2>/dev/null || true; done
    cluster_stop "$DIR"
}
trap cleanup EXIT

# start MAX_WORKER_PROCESSES: a fresh cluster, an empty table w with an index w_fp.
start() {
    cluster_start "$DIR" "neardup.merge_workers = 2" "max_worker_processes = $1" \
        "autovacuum = off" "log_min_messages = warning"
    q >/dev/null -c "CREATE EXTENSION neardup" -c "CREATE EXTENSION pageinspect" \
        -f "$ROOT/tests/integration/fingerprint_functions.sql" -f "$ROOT/tests/integration/index_pages.sql" \
        -c "CREATE TABLE w (id bigserial PRIMARY KEY, fp simhash64)" \
        -c "CREATE INDEX w_fp ON w USING hamming (fp) WITH (pending_limit = $LIMIT_ROWS)"
}
launchers() {
    q -c "SELECT string_agg(backend_type, ',' ORDER BY backend_type) FROM pg_stat_activity WHERE backend_type LIKE '%launcher'"
}
pending() { q -c "SELECT meta_u32('w_fp', 28) * $PER_PAGE"; }
# insert STATEMENTS MERGE_WAIT: that many INSERTs of pending_limit rows each, in one
# session; sets MS (their time) and MOST (the most pending rows after any of them).
insert() {
    local start i p
    MOST=0
    start=$(date +%s%N)
    for i in $(seq "$1"); do
        q -c "SET neardup.merge_wait = '$2'" \
            -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, $LIMIT_ROWS)"
        p=$(pending)
        if ((p > MOST)); then MOST=$p; fi
    done
    MS=$((($(date +%s%N) - start) / 1000000))
}
exact() {
    local rows checked
    rows=$(PGOPTIONS="-c enable_indexscan=off -c enable_bitmapscan=off" q -c "SELECT count(*) FROM w")
    checked=$(q -c "SELECT hamming_index_check('w_fp')")
    [[ $checked == "$rows" ]] || fail "[$1] hamming_index_check counts $checked, w has $rows rows"
    echo "check_merge_stalled: $1: exact ($rows rows, $((SECONDS - T0)) s)"
}

# --- 1. No slot for a merge worker.
start 2
[[ $(launchers) == "logical replication launcher,neardup merge launcher" ]] ||
    fail "with max_worker_processes = 2 the launchers are '$(launchers)'"
insert 40 500ms
((MOST <= 4 * LIMIT_ROWS + PER_PAGE)) ||
    fail "no worker can start, yet $MOST rows were pending after 40 x pending_limit rows"
((MS < 20 * 500)) || fail "40 inserts took $MS ms with no worker to wait for (merge_wait 500 ms)"
logged=$(grep -c "$NO_SLOT" "$DIR/server.log" || true)
[[ $logged == 1 ]] || fail "the launcher said '$NO_SLOT' $logged times: $(cat "$DIR/server.log")"
grep -A2 "$NO_SLOT" "$DIR/server.log" | grep -q "HINT:.*max_worker_processes" ||
    fail "no hint to raise max_worker_processes: $(grep -A2 "$NO_SLOT" "$DIR/server.log")"
echo "check_merge_stalled: max_worker_processes = 2: 40 inserts took $MS ms, at most $MOST rows pending, logged once"
exact "no slot for a worker"

# --- 2. No slot for the launcher itself.
start 1
[[ $(launchers) == "logical replication launcher" ]] ||
    fail "with max_worker_processes = 1 the launchers are '$(launchers)'"
insert 20 500ms
((MOST <= 4 * LIMIT_ROWS + PER_PAGE)) ||
    fail "no launcher runs, yet $MOST rows were pending after 20 x pending_limit rows"
echo "check_merge_stalled: max_worker_processes = 1: no neardup launcher, at most $MOST rows pending"
exact "no launcher"

# --- 3. REINDEX CONCURRENTLY holds the lock the workers try.
start 8
q -c "INSERT INTO w (fp) SELECT rnd64()::simhash64 FROM generate_series(1, $LIMIT_ROWS)"
(q -c "BEGIN" -c "INSERT INTO w (fp) VALUES (rnd64()::simhash64)" -c "SELECT pg_sleep(600)" >"$DIR/holder.log" 2>&1) &
HOLDER=$!
bg+=("$HOLDER")
deadline=$((SECONDS + 20))
until [[ $(q -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND backend_xid IS NOT NULL") == 1 ]]; do
    ((SECONDS < deadline)) || fail "the transaction REINDEX is to wait for did not start: $(cat "$DIR/holder.log")"
    sleep 0.05
done
(q -c "REINDEX INDEX CONCURRENTLY w_fp" >"$DIR/reindex.log" 2>&1; echo "exit $?" >>"$DIR/reindex.log") &
REINDEXER=$!
bg+=("$REINDEXER")
reindex_waits() {
    q -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'REINDEX%' AND wait_event_type = 'Lock'"
}
deadline=$((SECONDS + 20))
until [[ $(reindex_waits) == 1 ]]; do
    ((SECONDS < deadline)) || fail "REINDEX CONCURRENTLY did not wait for the open transaction: $(cat "$DIR/reindex.log")"
    sleep 0.05
done
insert 40 500ms
[[ $(reindex_waits) == 1 ]] || fail "REINDEX CONCURRENTLY no longer waits: the workers were not kept out"
((MOST < BEHIND + PER_PAGE)) ||
    fail "with REINDEX CONCURRENTLY holding the index, $MOST rows were pending after 40 x pending_limit rows"
((MS < 20 * 500)) || fail "40 inserts took $MS ms while the workers were kept out (merge_wait 500 ms)"
echo "check_merge_stalled: REINDEX CONCURRENTLY held: 40 inserts took $MS ms, at most $MOST rows pending"
kill "$HOLDER" 2>/dev/null || true
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'" >/dev/null
wait "$REINDEXER"
grep -q "exit 0" "$DIR/reindex.log" || fail "REINDEX CONCURRENTLY failed: $(cat "$DIR/reindex.log")"
exact "after REINDEX CONCURRENTLY"
! grep -E "PANIC|ERROR: .*(hamming|index|page)" "$DIR/server.log" || fail "errors of the index in the server log"
echo "check_merge_stalled: passed in $((SECONDS - T0)) s"
