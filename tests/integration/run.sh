#!/usr/bin/env bash
# Integration layer: the release build installed into the server $PG_CONFIG names (the
# system PostgreSQL 15 by default), a real cluster, and checks run through psql. Regression
# files (tests/sql/NAME.sql) must print exactly tests/expected/NAME.out; every
# tests/integration/check_*.sh must exit 0. With NEARDUP_CHECKS="NAME ..." only those checks
# run (no regression files): test.sh's choice for the other majors.
# The checks in NEARDUP_SIDE_CHECKS (default: the model test and the earlier releases'
# indexes, half the checks' time, each in a cluster of its own) run one after another beside
# the others, and their output follows the others' (on two cores, both lanes slow each
# other down: the whole took a fifth less, 27.5 min instead of 34.5). The
# checks that replace the server's own library (the package, the install over a running
# server) run first, before anything runs beside them.
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

# (ordered: the checks that replace the library, then the side lane's, then the rest)
SIDE=" ${NEARDUP_SIDE_CHECKS-check_model check_release_indexes} "
EXCLUSIVE=" check_package check_install_while_running "
exclusive=() side=() rest=()
for check in "${checks[@]}"; do
    name=$(basename "$check" .sh)
    if [[ $EXCLUSIVE == *" $name "* ]]; then exclusive+=("$check")
    elif [[ $SIDE == *" $name "* ]]; then side+=("$check")
    else rest+=("$check"); fi
done
run_check() { # CHECK
    local start=$SECONDS status=0
    bash "$1" || status=$?
    report "$(basename "$1" .sh)" $status $start
}
for check in "${exclusive[@]}"; do run_check "$check"; done
side_log=$RESULTS/side-lane.log side_lane=
rm -f "$side_log.counts"
if ((${#side[@]})); then
    ( passed=0 failed=0
      for check in "${side[@]}"; do run_check "$check"; done
      echo "$passed $failed" >"$side_log.counts" ) >"$side_log" 2>&1 &
    side_lane=$!
    echo "beside the others: ${side[*]##*/} (output at the end)"
fi
for check in "${rest[@]}"; do run_check "$check"; done
if [[ -n $side_lane ]]; then
    wait "$side_lane" || true
    cat "$side_log"
    read -r side_passed side_failed <"$side_log.counts" 2>/dev/null || side_passed=0 side_failed=${#side[@]}
    passed=$((passed + side_passed)) failed=$((failed + side_failed))
fi

echo "integration on PostgreSQL $PG_MAJOR: $passed passed, $failed failed"
[[ $failed == 0 ]]
