#!/usr/bin/env bash
# What the index's merges cost the transaction system (issue 38): a bulk load in the
# transaction that creates the table and its index (the commonest load: the merges run in
# the loading backend) takes no transaction id beyond the loading transaction's own, while
# its merges recycle pages and log for standbys (wal_level = replica) the record whose
# replay cancels the queries that could read them. Until 0.6 each recycling was logged
# from a subtransaction with an id of its own: 684 ids for 300,000 rows, past the 64 a
# backend caches, which made every snapshot in the cluster suboverflowed. Counted from
# txid_current() and, in the WAL, with pg_waldump.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
fail() { echo "check_merge_xids: $*" >&2; exit 1; }
q() { psql -XqAt -v ON_ERROR_STOP=1 -d xids "$@"; }

psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS xids" -c "CREATE DATABASE xids" >/dev/null
q -c "CREATE EXTENSION neardup"
[[ $(q -c "SHOW wal_level") != minimal ]] || fail "wal_level is minimal: nothing is logged for standbys"
ROWS=300000
read -r before start < <(q -F ' ' -c "SELECT txid_current(), pg_current_wal_insert_lsn()")
q >/dev/null <<SQL
BEGIN;
CREATE TABLE load (id int, fp simhash64);
CREATE INDEX load_fp ON load USING hamming (fp);
INSERT INTO load SELECT i, ((random() * 2^63)::bigint # ((random() * 2^62)::bigint << 1))::simhash64
    FROM generate_series(1, $ROWS) i;
COMMIT;
SQL
read -r after end < <(q -F ' ' -c "SELECT txid_current(), pg_current_wal_insert_lsn()")
# the loading transaction's id, and the one txid_current() took after it
spent=$((after - before - 1))
wal=$(mktemp)
"$PG_BIN/pg_waldump" -p "$(q -c 'SHOW data_directory')/pg_wal" -s "$start" -e "$end" >"$wal" 2>/dev/null || true
reuse=$(grep -c "REUSE_PAGE" "$wal" || true)
subxacts=$(grep -cE "desc: (ASSIGNMENT|COMMIT.*subxacts)" "$wal" || true)
rm -f "$wal"
echo "check_merge_xids: $ROWS rows loaded with their index: $spent transaction ids, $reuse recyclings logged, $subxacts records naming subtransactions"
((reuse > 0)) || fail "no recycling was logged: the check does not exercise it"
((spent == 1)) || fail "the load took $spent transaction ids (1 expected)"
((subxacts == 0)) || fail "the load's WAL names subtransactions"
rows=$(q -c "SELECT hamming_index_check('load_fp')")
[[ $rows == "$ROWS" ]] || fail "hamming_index_check: $rows rows"
psql -qX -c "DROP DATABASE xids" >/dev/null
