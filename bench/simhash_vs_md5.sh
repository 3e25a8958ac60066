#!/usr/bin/env bash
# SELECT simhash(body) against SELECT md5(body) over the same table in the same run, serial
# and with parallel workers, printing MB/s and the ratio (goal: ratio <= 1.0).
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench
bench_cluster "$DIR"
trap 'cluster_stop "$DIR"' EXIT
ROUNDS=${ROUNDS:-7}
MB=$(psql -AtX -c "SELECT sum(octet_length(body)) / 1e6 FROM docs")
psql -qAtX -c "SELECT count(md5(body)), count(simhash(body)) FROM docs" >/dev/null # warm the cache

printf '%-9s %-28s %10s %9s %7s\n' workers query median_ms MB/s ratio
for workers in 0 2; do
    export PGOPTIONS="-c max_parallel_workers_per_gather=$workers -c parallel_setup_cost=0 -c min_parallel_table_scan_size=0"
    base=$(median_ms "$ROUNDS" "SELECT count(md5(body)) FROM docs")
    for q in "md5(body)" "simhash(body)" "simhash(body, shingle => 3)" "simhash(body, ngram => 4)"; do
        ms=$(median_ms "$ROUNDS" "SELECT count($q) FROM docs")
        awk -v w="$workers" -v q="$q" -v ms="$ms" -v mb="$MB" -v base="$base" \
            'BEGIN { printf "%-9s %-28s %10.1f %9.1f %7.2f\n", w, q, ms, mb / (ms / 1000), ms / base }'
    done
done
