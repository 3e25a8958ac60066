#!/usr/bin/env bash
# Parallel index scans see the transaction's own rows (reproduction 2 of issue 23): with
# parallel query forced, an Index Scan, a Bitmap Heap Scan and an ORDER BY fp <~> q scan
# of the hamming index run in a worker under Gather must find the rows the transaction
# inserted and has not committed (also those of a savepoint), exactly as the serial seq
# scan does, and again after COMMIT. Each parallel query is also run under EXPLAIN ANALYZE,
# which must show "Workers Launched: N" with N >= 1, so that the coverage cannot silently
# turn serial. Uses the cluster of tests/integration/run.sh (PGHOST...); a few seconds.
set -euo pipefail
fail() { echo "check_parallel_own_rows: $*" >&2; exit 1; }
psql -qX -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP DATABASE IF EXISTS parallel_own_rows;
CREATE DATABASE parallel_own_rows;
\c parallel_own_rows
CREATE EXTENSION neardup;
CREATE TABLE t (id int, fp simhash64);
INSERT INTO t SELECT i, ('x' || substr(md5(i::text), 1, 16))::bit(64)::bigint::simhash64 FROM generate_series(1, 20000) i;
-- a few committed rows near the probe, in the index's runs
INSERT INTO t VALUES (30001, '0123456789abcdee'), (30002, '0123456789abcd0f');
CREATE INDEX t_fp ON t USING hamming (fp);
ANALYZE t;
SQL

Q="'0123456789abcdef'"
PARALLEL="SET $NEARDUP_FORCE_PARALLEL = on; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET min_parallel_index_scan_size = 0; SET max_parallel_workers_per_gather = 2;"
SERIAL="RESET $NEARDUP_FORCE_PARALLEL; SET max_parallel_workers_per_gather = 0;
SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;"
BALL="SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '-') FROM t WHERE fp <@ hamming_ball($Q, 3)"
# (a LIMIT in a subquery would keep the whole query out of parallel mode: one row per line)
KNN="SELECT id || ':' || (fp <~> $Q) FROM t ORDER BY fp <~> $Q LIMIT 5"
KNN_SEQ="SELECT id || ':' || (fp <~> $Q) FROM t ORDER BY fp <~> $Q, id LIMIT 5"

# probes LABEL: SQL printing, for each kind of scan, "LABEL kind|answer" and the plan
# under EXPLAIN ANALYZE (the parallel ones), then the serial seq scan's answers.
probes() {
    local label=$1
    cat <<SQL
$PARALLEL
SET enable_seqscan = off; SET enable_indexscan = on; SET enable_bitmapscan = off;
\\echo plan $label index
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $BALL;
\\echo answer $label index
$BALL;
\\echo plan $label nearest
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $KNN;
\\echo answer $label nearest
$KNN;
SET enable_indexscan = off; SET enable_bitmapscan = on;
\\echo plan $label bitmap
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $BALL;
\\echo answer $label bitmap
$BALL;
$SERIAL
\\echo answer $label seq
$BALL;
\\echo answer $label seqnearest
$KNN_SEQ;
SQL
}

out=$(psql -qAtX -v ON_ERROR_STOP=1 -d parallel_own_rows 2>&1 <<SQL
BEGIN;
INSERT INTO t VALUES (40001, '0123456789abcdef'), (40002, '0123456789abcdeb');
$(probes in_transaction)
SAVEPOINT s;
INSERT INTO t VALUES (40003, '0123456789abcde7');
$(probes in_savepoint)
RELEASE s;
COMMIT;
$(probes committed)
SQL
) || fail "psql failed: $out"

# answer LABEL KIND: the lines after "answer LABEL KIND" up to the next marker, joined by spaces
answer() { awk -v h="answer $1 $2" '/^(plan|answer) / { f = ($0 == h); next } f' <<<"$out" | paste -sd' '; }
# plan LABEL KIND: the lines after "plan LABEL KIND" up to the next marker
plan() { awk -v h="plan $1 $2" '/^(plan|answer) / { f = ($0 == h); next } f' <<<"$out"; }

failures=0
for label in in_transaction in_savepoint committed; do
    seq=$(answer $label seq)
    case $label in
    in_transaction) must="40001,40002" ;;
    *) must="40001,40002,40003" ;;
    esac
    for id in ${must//,/ }; do
        [[ ,$seq, == *,$id,* ]] || fail "[$label] the seq scan itself misses row $id ($seq)"
    done
    for kind in index bitmap nearest; do
        p=$(plan $label $kind)
        case $kind in
        index | nearest) grep -q "Index Scan using t_fp" <<<"$p" || fail "[$label] no Index Scan for $kind:"$'\n'"$p" ;;
        bitmap) grep -q "Bitmap Index Scan on t_fp" <<<"$p" || fail "[$label] no Bitmap Index Scan:"$'\n'"$p" ;;
        esac
        grep -q "Gather" <<<"$p" || fail "[$label] $kind: no Gather in the plan:"$'\n'"$p"
        launched=$(grep -oE "Workers Launched: [0-9]+" <<<"$p" | awk '{ s += $3 } END { print s + 0 }')
        ((launched >= 1)) || fail "[$label] $kind: no worker launched (the parallel test would be fake):"$'\n'"$p"
        got=$(answer $label $kind)
        if [[ $kind == nearest ]]; then
            expected=$(answer $label seqnearest)
            # the same distances, and the same rows at every distance but the last (ties at
            # the cut-off may be broken otherwise)
            if ! python3 -c '
import sys
g, e = ([tuple(map(int, x.split(":"))) for x in a.split()] for a in sys.argv[1:3])
last = e[-1][1] if e else None
same = [d for _, d in g] == [d for _, d in e] and \
    sorted(x for x in g if x[1] != last) == sorted(x for x in e if x[1] != last)
sys.exit(0 if same else 1)' "$got" "$expected"; then
                echo "check_parallel_own_rows: [$label] parallel ORDER BY fp <~> q LIMIT 5 through the index: $got; serial seq scan: $expected" >&2
                failures=$((failures + 1))
            fi
        elif [[ $got != "$seq" ]]; then
            echo "check_parallel_own_rows: [$label] parallel $kind scan under Gather ($launched workers) finds {$got}; the serial seq scan {$seq}" >&2
            failures=$((failures + 1))
        fi
    done
done
((failures == 0)) || fail "$failures wrong answers"
echo "check_parallel_own_rows: ok (index, bitmap and ordered scans in workers, in a transaction, a savepoint and after commit)"
