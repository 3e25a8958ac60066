#!/usr/bin/env bash
# The model-based test of the hamming index (tests/model/model.py, issue 23) with a fixed
# seed: random steps from three sessions in every transaction shape (savepoints, prepared
# transactions, TRUNCATE, REINDEX [CONCURRENTLY], SET TABLESPACE, CLUSTER, VACUUM, merges
# under small pending_limit values, ALTER INDEX ... SET of every option, parallel query with
# workers launched, merges stopped at every pause point by an ERROR, a cancel or
# statement_timeout), index answers compared with a seq scan's in the acting session and in
# another one after every step. Each width of code is driven in a database of its own:
# simhash64 (MODEL_STEPS, 3000) side by side with hash256 then hash128 (MODEL_WIDE_STEPS,
# 2000 each). Own clusters in /tmp/neardup-model and -wide (a tablespace directory in each), jit off
# (forced plans would have every parallel worker load LLVM); about 4 minutes on 2 cores.
# A run fails unless every shape above occurred and parallel workers were launched.
# Run alone: tests/integration/check_model.sh   (MODEL_SEED, MODEL_STEPS, MODEL_WIDE_STEPS,
# MODEL_WIDTHS="64 256 128" override; other arguments go to model.py)
# Longer runs, many seeds: bench/model.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=${MODEL_DIR:-/tmp/neardup-model}
SEED=${MODEL_SEED:-23}
STEPS=${MODEL_STEPS:-3000}

python3 -c "import psycopg" 2>/dev/null || { echo "check_model: psycopg 3 is missing (scripts/setup.sh installs it)" >&2; exit 1; }
WIDE_STEPS=${MODEL_WIDE_STEPS:-2000}
WIDTHS=${MODEL_WIDTHS:-64 256 128}
# 64-bit codes in one cluster, the wide ones (one after the other) in another: side by side
# (the driver mostly waits for the server), but not in one cluster, where another database's
# transactions held back the horizon of hamming_index_check's heap scan, which then counted
# rows deleted seconds before (10 rows over count(*) for 4 s in the 128-bit run of seed 1).
clusters=("$DIR" "$DIR-wide")
for dir in "${clusters[@]}"; do
    cluster_start "$dir" "autovacuum = off" "fsync = off" "synchronous_commit = off" \
        "max_prepared_transactions = 10" "max_worker_processes = 16" "max_parallel_workers = 8" \
        "max_parallel_maintenance_workers = 4" "log_min_messages = warning" "jit = off"
    mkdir -p "$dir/ts"
    chown postgres: "$dir/ts"
done
trap 'for dir in "${clusters[@]}"; do cluster_stop "$dir"; done' EXIT
T0=$SECONDS
run_width() { # WIDTH [model.py arguments]: the log in $DIR/model-WIDTH.log, the exit status in .status
    local width=$1 steps=$WIDE_STEPS dir=$DIR-wide status=0 start=$SECONDS
    shift
    [[ $width == 64 ]] && steps=$STEPS dir=$DIR
    PGHOST=$dir python3 "$ROOT/tests/model/model.py" --width "$width" --seed "$SEED" --steps "$steps" --sessions 3 \
        --tablespace-dir "$dir/ts" "$@" >"$DIR/model-$width.log" 2>&1 || status=$?
    echo "check_model: $width-bit codes, seed $SEED, $steps steps: exit $status in $((SECONDS - start)) s" \
        >>"$DIR/model-$width.log"
    echo $status >"$DIR/model-$width.status"
}
pids=()
for width in $WIDTHS; do
    if [[ $width == 64 ]]; then
        run_width 64 "$@" &
        pids+=($!)
    fi
done
for width in $WIDTHS; do
    [[ $width == 64 ]] || run_width "$width" "$@"
done
for pid in "${pids[@]}"; do wait "$pid" || true; done
status=0
for width in $WIDTHS; do
    cat "$DIR/model-$width.log"
    [[ $(cat "$DIR/model-$width.status" 2>/dev/null) == 0 ]] || status=1
done
echo "check_model: seed $SEED, widths $WIDTHS: exit $status in $((SECONDS - T0)) s"
exit $status
