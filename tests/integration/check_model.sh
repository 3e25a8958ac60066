#!/usr/bin/env bash
# The model-based test of the hamming index (tests/model/model.py, issue 23) with a fixed
# seed: random steps from three sessions in every transaction shape (savepoints, prepared
# transactions, TRUNCATE, REINDEX [CONCURRENTLY], SET TABLESPACE, CLUSTER, VACUUM, merges
# under small pending_limit values, parallel query with workers launched), index answers
# compared with a seq scan's in the acting session and in another one after every step.
# Own cluster in /tmp/neardup-model (a tablespace directory in it), jit off (forced plans
# would have every parallel worker load LLVM); 3000 steps take about 4 minutes on 2 cores.
# The run fails unless every shape above occurred and parallel workers were launched.
# Run alone: tests/integration/check_model.sh   (MODEL_SEED, MODEL_STEPS override)
# Longer runs, many seeds: bench/model.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=${MODEL_DIR:-/tmp/neardup-model}
SEED=${MODEL_SEED:-23}
STEPS=${MODEL_STEPS:-3000}

python3 -c "import psycopg" 2>/dev/null || { echo "check_model: psycopg 3 is missing (scripts/setup.sh installs it)" >&2; exit 1; }
cluster_start "$DIR" "autovacuum = off" "fsync = off" "synchronous_commit = off" \
    "max_prepared_transactions = 10" "max_worker_processes = 16" "max_parallel_workers = 8" \
    "max_parallel_maintenance_workers = 4" "log_min_messages = warning" "jit = off"
trap 'cluster_stop "$DIR"' EXIT
mkdir -p "$DIR/ts"
chown postgres: "$DIR/ts"
T0=$SECONDS
status=0
python3 "$ROOT/tests/model/model.py" --seed "$SEED" --steps "$STEPS" --sessions 3 \
    --tablespace-dir "$DIR/ts" "$@" || status=$?
echo "check_model: seed $SEED, $STEPS steps: exit $status in $((SECONDS - T0)) s"
exit $status
