#!/usr/bin/env bash
# Index answers equal a seq scan's when rows inserted in a transaction meet ALTER INDEX
# ... SET TABLESPACE (reproduction 3 of issue 23), ALTER TABLE ... SET TABLESPACE, or
# PREPARE TRANSACTION / COMMIT PREPARED: tests/integration/held_rows_ddl.sql must print
# exactly held_rows_ddl.out (the correct output). Its own cluster in /tmp/neardup-held-ddl
# (max_prepared_transactions, a tablespace directory owned by postgres); a few seconds.
# Run alone: tests/integration/check_held_rows_ddl.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-held-ddl
cluster_start "$DIR" "max_prepared_transactions = 4" "fsync = off" "autovacuum = off"
trap 'cluster_stop "$DIR"' EXIT
mkdir -p "$DIR/ts"
chown postgres: "$DIR/ts"
out=$DIR/held_rows_ddl.out
psql -X -a -v tsdir="$DIR/ts" -f "$ROOT/tests/integration/held_rows_ddl.sql" >"$out" 2>&1 || true
# psql names the file as given on its command line in error messages: make it stable
sed -i "s|$ROOT/||" "$out"
if ! diff -u "$ROOT/tests/integration/held_rows_ddl.out" "$out"; then
    echo "check_held_rows_ddl: the output differs from tests/integration/held_rows_ddl.out (above)" >&2
    exit 1
fi
echo "check_held_rows_ddl: ok"
