#!/usr/bin/env bash
# Integration layer: the release build installed into the server $PG_CONFIG names (the
# system PostgreSQL 15 by default), a real cluster, and checks run through psql. Regression
# files (tests/sql/NAME.sql) must print exactly tests/expected/NAME.out; every
# tests/integration/check_*.sh must exit 0. With NEARDUP_CHECKS="NAME ..." only those checks
# run (no regression files): test.sh's choice for the other majors.
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
report() { # NAME STATUS START_SECONDS (the time each took shows where the suite's time goes)
    local took="($((SECONDS - $3)) s)"
    if [[ $2 == 0 ]]; then passed=$((passed + 1)); echo "ok   $1 $took"; else failed=$((failed + 1)); echo "FAIL $1 $took"; fi
}

regressions=(tests/sql/*.sql) checks=(tests/integration/check_*.sh)
if [[ -n ${NEARDUP_CHECKS:-} ]]; then
    regressions=() checks=()
    for name in $NEARDUP_CHECKS; do
        [[ -f tests/integration/$name.sh ]] || { echo "run.sh: no check $name" >&2; exit 1; }
        checks+=("tests/integration/$name.sh")
    done
fi
echo "integration on $("$PG_CONFIG" --version)"

for sql in "${regressions[@]}"; do
    start=$SECONDS
    name=$(basename "$sql" .sql)
    psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS regress_$name" -c "CREATE DATABASE regress_$name" >/dev/null
    psql -X -a -d "regress_$name" -f "$sql" >"$RESULTS/$name.out" 2>&1 || true
    status=0
    diff -u "tests/expected/$name.out" "$RESULTS/$name.out" >"$RESULTS/$name.diff" || status=1
    [[ $status == 0 ]] || cat "$RESULTS/$name.diff"
    report "regression $name" $status $start
done

for check in "${checks[@]}"; do
    start=$SECONDS status=0
    bash "$check" || status=$?
    report "$(basename "$check" .sh)" $status $start
done

echo "integration on PostgreSQL $PG_MAJOR: $passed passed, $failed failed"
[[ $failed == 0 ]]
