#!/usr/bin/env bash
# Interleavings of the hamming index's merges and VACUUM with scans, inserts and REINDEX
# CONCURRENTLY (issue 23), run by PostgreSQL's own isolationtester: the specs in
# tests/isolation/specs must print exactly tests/isolation/expected (the correct output).
# A backend is stopped at a named point of a merge or VACUUM with neardup.pause_at (it then
# waits for advisory lock 4711, which a control session holds). Own cluster in
# /tmp/neardup-isolation; the helpers (tests/isolation/helpers.sql) are loaded into the
# test database first. Run alone: tests/integration/check_isolation.sh [spec names...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-isolation
REGRESS=/usr/lib/postgresql/15/lib/pgxs/src/test/isolation/pg_isolation_regress
[[ -x $REGRESS ]] || { echo "check_isolation: $REGRESS is missing (postgresql-server-dev-15)" >&2; exit 1; }
# The specs step merges in the inserting session (pause points): no background merge workers
# (their protocol is the same; check_merge_worker.sh pauses them).
cluster_start "$DIR" "autovacuum = off" "fsync = off" "log_min_messages = warning" "neardup.merge_workers = 0"
trap 'cluster_stop "$DIR"' EXIT
T0=$SECONDS
psql -qX -v ON_ERROR_STOP=1 -c "CREATE DATABASE isolation_regression" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d isolation_regression -c "CREATE EXTENSION neardup" \
    -f "$ROOT/tests/isolation/helpers.sql" >/dev/null
if (($# == 0)); then
    set -- $(cd "$ROOT/tests/isolation/specs" && ls *.spec | sed 's/\.spec$//')
fi
mkdir -p "$DIR/out"
chown -R postgres: "$DIR/out"
status=0
"$REGRESS" --use-existing --host="$DIR" --port=5432 --user=postgres --dbname=isolation_regression \
    --inputdir="$ROOT/tests/isolation" --outputdir="$DIR/out" "$@" || status=$?
if [[ $status != 0 ]]; then
    [[ -f $DIR/out/regression.diffs ]] && cat "$DIR/out/regression.diffs"
    echo "check_isolation: failed (diffs above, outputs in $DIR/out/output_iso)" >&2
fi
echo "check_isolation: $# specs in $((SECONDS - T0)) s"
exit $status
