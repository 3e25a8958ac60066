#!/usr/bin/env bash
# What the index's merges cost the transaction system (issue 38): a bulk load in the
# transaction that creates the table and its index (the commonest load: the merges run in
# the loading backend) takes no transaction id beyond the loading transaction's own, while
# its merges recycle pages and log for standbys (wal_level = replica) the record whose
# replay cancels the queries that could read them. Until 0.6 each recycling was logged
# from a subtransaction with an id of its own: 684 ids for 300,000 rows, past the 64 a
# backend caches, which made every snapshot in the cluster suboverflowed.
# Then the same load while another session holds a transaction that took an id after the
# load's (its stamps are past any id the WAL holds until that session ends): one
# subtransaction id at most, and its garbage is recycled all the same.
# Counted from txid_current() before and after, and in the WAL with pg_waldump (a
# replication slot keeps the load's WAL), in a cluster of its own: on the suite's shared
# one, another transaction (after 20 checks there, not identified) once took an id during
# the load, which counted as the load's and made the load take a subtransaction id as
# beside a holder (3 ids).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
fail() { echo "check_merge_xids: $*" >&2; exit 1; }
q() { psql -XqAt -v ON_ERROR_STOP=1 -d xids "$@"; }
ROWS=${NEARDUP_XIDS_ROWS:-1000000}
DIR=/tmp/neardup-merge-xids
HOLDER_PID=

# The holder's backend sleeps on after its psql is gone: it is ended by its name.
end_holder() {
    psql -qX -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'holder'" >/dev/null 2>&1 || true
    [[ -z $HOLDER_PID ]] || wait "$HOLDER_PID" 2>/dev/null || true
    HOLDER_PID=
}
cleanup() {
    end_holder
    cluster_stop "$DIR"
}
trap cleanup EXIT
cluster_start "$DIR" "autovacuum = off" "wal_level = replica"

psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS xids" -c "CREATE DATABASE xids" >/dev/null
q -c "CREATE EXTENSION neardup"
[[ $(q -c "SHOW wal_level") != minimal ]] || fail "wal_level is minimal: nothing is logged for standbys"
q -c "SELECT pg_drop_replication_slot('neardup_xids') FROM pg_replication_slots WHERE slot_name = 'neardup_xids'" >/dev/null
q -c "SELECT pg_create_physical_replication_slot('neardup_xids', true)" >/dev/null
WAL_DIR="$(q -c 'SHOW data_directory')/pg_wal"

# load NAME [WAIT_SQL]: loads ROWS rows into a new table NAME with its index in one
# transaction (after WAIT_SQL, if any, in it); sets spent (transaction ids taken meanwhile,
# txid_current()'s own after it left out), load_xid, reuse (recycling records), others
# (the distinct ids of those records other than the load's) and subxacts (records naming
# subtransactions).
load() {
    local name=$1 wait=${2:-} before start after end wal
    read -r before start < <(q -F ' ' -c "SELECT txid_current(), pg_current_wal_insert_lsn()")
    q >/dev/null <<SQL
SET application_name = 'loader';
BEGIN;
CREATE TABLE $name (id int, fp simhash64);
CREATE INDEX ${name}_fp ON $name USING hamming (fp);
$wait
INSERT INTO $name SELECT i, ((random() * 2^62)::bigint # ((random() * 2^61)::bigint << 2))::simhash64
    FROM generate_series(1, $ROWS) i;
INSERT INTO load_xids SELECT '$name', txid_current();
COMMIT;
SQL
    read -r after end < <(q -F ' ' -c "SELECT txid_current(), pg_current_wal_insert_lsn()")
    spent=$((after - before - 1))
    load_xid=$(q -c "SELECT xid FROM load_xids WHERE name = '$name'")
    wal=$(mktemp)
    "$PG_BIN/pg_waldump" -p "$WAL_DIR" -s "$start" -e "$end" >"$wal" 2>"$wal.err" ||
        fail "pg_waldump: $(tail -1 "$wal.err")"
    reuse=$(grep -c "REUSE_PAGE" "$wal" || true)
    others=$(grep "REUSE_PAGE" "$wal" | sed -E 's/.* tx: *([0-9]+),.*/\1/' | sort -u | { grep -vx "$load_xid" || true; } | wc -l)
    subxacts=$(grep -cE "desc: (ASSIGNMENT|COMMIT.*subxacts)" "$wal" || true)
    rm -f "$wal" "$wal.err"
    rows=$(q -c "SELECT hamming_index_check('${name}_fp')")
    [[ $rows == "$ROWS" ]] || fail "$name: hamming_index_check: $rows rows"
}
q -c "CREATE TABLE load_xids (name text, xid bigint)"

# 1. Alone.
start_s=$SECONDS
load alone
echo "check_merge_xids: $ROWS rows loaded with their index in $((SECONDS - start_s)) s: $spent transaction ids (the load's: $load_xid), $reuse recyclings logged ($others ids other than the load's), $subxacts records naming subtransactions"
((reuse > 0)) || fail "no recycling was logged: the check does not exercise it"
((spent <= 2)) || fail "the load took $spent transaction ids (at most 2 expected: its own and one more)"
((others <= 1)) || fail "the load's recyclings carried $others ids besides its own"
# With nothing else taking ids (this database is the check's), the load's own id alone.
((spent == 1 && others == 0 && subxacts == 0)) ||
    echo "check_merge_xids: note: another transaction took an id during the load ($spent ids)"
size_alone=$(q -c "SELECT pg_relation_size('alone_fp')")

# 2. With another session holding a transaction that took an id after the load's.
psql -XqAt -d xids >/dev/null 2>&1 <<'SQL' &
SET application_name = 'holder';
DO $$ BEGIN
    WHILE NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = 'loader' AND backend_xid IS NOT NULL) LOOP
        PERFORM pg_sleep(0.01);
        PERFORM pg_stat_clear_snapshot();
    END LOOP;
END $$;
BEGIN;
SELECT txid_current();
SELECT pg_sleep(3600);
SQL
HOLDER_PID=$!
load held "DO \$\$ BEGIN
    WHILE NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = 'holder' AND state = 'active' AND backend_xid IS NOT NULL) LOOP
        PERFORM pg_sleep(0.01);
        PERFORM pg_stat_clear_snapshot();
    END LOOP;
END \$\$;"
holder_xid=$(q -c "SELECT backend_xid FROM pg_stat_activity WHERE application_name = 'holder'")
size_held=$(q -c "SELECT pg_relation_size('held_fp')")
echo "check_merge_xids: the same load beside a transaction holding id $holder_xid (the load's: $load_xid): $spent transaction ids, $reuse recyclings logged ($others ids other than the load's), $subxacts records naming subtransactions; index $size_held bytes ($size_alone alone)"
[[ -n $holder_xid ]] && ((holder_xid > load_xid)) || fail "the holder's id ($holder_xid) was not taken after the load's ($load_xid)"
((reuse > 0)) || fail "no recycling was logged beside the holder"
((others <= 1)) || fail "the load's recyclings carried $others ids besides its own"
((spent <= 3)) || fail "$spent transaction ids (at most 3 expected: the load's, the holder's, one subtransaction's)"
# Its garbage was recycled (reused): the index is no larger than the first load's by more
# than a tenth.
((size_held * 10 <= size_alone * 11)) || fail "the index beside the holder is $size_held bytes, $size_alone alone"
end_holder
psql -qX -c "DROP DATABASE xids" >/dev/null
