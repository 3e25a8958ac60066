#!/usr/bin/env bash
# Integration layer: the release build installed into the system PostgreSQL 15, a real
# cluster, and checks run through psql. Regression files (tests/sql/NAME.sql) must print
# exactly tests/expected/NAME.out; every tests/integration/check_*.sh must exit 0.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source scripts/setup.sh
source scripts/cluster.sh
DIR=/tmp/neardup-integration
RESULTS=$ROOT/target/integration-results
mkdir -p "$RESULTS"

install_extension
cluster_start "$DIR"
trap 'cluster_stop "$DIR"' EXIT

passed=0 failed=0
report() { # NAME STATUS
    if [[ $2 == 0 ]]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1"; fi
}

for sql in tests/sql/*.sql; do
    name=$(basename "$sql" .sql)
    psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS regress_$name" -c "CREATE DATABASE regress_$name" >/dev/null
    psql -X -a -d "regress_$name" -f "$sql" >"$RESULTS/$name.out" 2>&1 || true
    status=0
    diff -u "tests/expected/$name.out" "$RESULTS/$name.out" >"$RESULTS/$name.diff" || status=1
    [[ $status == 0 ]] || cat "$RESULTS/$name.diff"
    report "regression $name" $status
done

for check in tests/integration/check_*.sh; do
    status=0
    bash "$check" || status=$?
    report "$(basename "$check" .sh)" $status
done

echo "integration: $passed passed, $failed failed"
[[ $failed == 0 ]]
