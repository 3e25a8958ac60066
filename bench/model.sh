#!/usr/bin/env bash
# Long runs of the model-based index test (tests/model/model.py): many seeds, many steps,
# on one cluster of its own in /tmp/neardup-model-bench. Not run by CI.
#   bench/model.sh                       seeds 1..20, 20000 steps each
#   SEEDS="5 6 7" STEPS=50000 SESSIONS=2 DISABLE=parallel EXTRA=--no-ddl-in-tx bench/model.sh
#   WIDTH=256 bench/model.sh             hash256 codes (WIDTH=128: hash128; default 64)
# Stops at the first failing seed unless KEEP_GOING=1; the failing output is in
# $DIR/seed-N.log. (Hold /tmp/neardup-pg.lock around it on a shared machine.)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=${DIR:-/tmp/neardup-model-bench}
SEEDS=${SEEDS:-$(seq 1 20)}
STEPS=${STEPS:-20000}
SESSIONS=${SESSIONS:-3}
DISABLE=${DISABLE:-}
EXTRA=${EXTRA:-}
WIDTH=${WIDTH:-64}
cluster_start "$DIR" "autovacuum = off" "fsync = off" "synchronous_commit = off" \
    "max_prepared_transactions = 10" "max_worker_processes = 16" "max_parallel_workers = 8" \
    "max_parallel_maintenance_workers = 4" "log_min_messages = warning" "jit = off"
trap 'cluster_stop "$DIR"' EXIT
mkdir -p "$DIR/ts"
chown postgres: "$DIR/ts"
failed=()
for seed in $SEEDS; do
    t=$SECONDS
    status=0
    python3 "$ROOT/tests/model/model.py" --width "$WIDTH" --seed "$seed" --steps "$STEPS" --sessions "$SESSIONS" \
        --tablespace-dir "$DIR/ts" --disable "$DISABLE" $EXTRA >"$DIR/seed-$seed.log" 2>&1 || status=$?
    echo "seed $seed: exit $status in $((SECONDS - t)) s: $(grep -m1 -E '^(model: FAILED|WRONG|model: ok)' "$DIR/seed-$seed.log" || tail -1 "$DIR/seed-$seed.log")"
    if [[ $status != 0 ]]; then
        failed+=("$seed")
        [[ ${KEEP_GOING:-} == 1 ]] || break
    fi
done
((${#failed[@]} == 0)) || { echo "failing seeds: ${failed[*]} (logs in $DIR)"; exit 1; }
echo "all seeds passed"
