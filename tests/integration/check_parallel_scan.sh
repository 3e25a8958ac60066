#!/usr/bin/env bash
# The signature functions are PARALLEL SAFE: a parallel seq scan over the corpus computes
# them in workers, and gives exactly the serial answers.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
psql -qX -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = warning;
DROP DATABASE IF EXISTS parallel_check;
CREATE DATABASE parallel_check;
\c parallel_check
CREATE EXTENSION neardup;
CREATE TABLE docs (id bigint PRIMARY KEY, package text, body text);
\copy docs FROM '$ROOT/pg_test_data/debian_descriptions_sample.tsv'
ANALYZE docs;
SQL
force="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;"
plan=$(psql -qAtX -d parallel_check -c "$force" -c "EXPLAIN (COSTS OFF) SELECT id, simhash(body) FROM docs")
grep -q "Parallel Seq Scan" <<<"$plan" || { echo "no parallel plan: $plan"; exit 1; }
serial=$(psql -qAtX -d parallel_check -c "SET max_parallel_workers_per_gather = 0" \
    -c "SELECT md5(string_agg(id || ':' || simhash(body)::text, ',' ORDER BY id)) FROM docs")
parallel=$(psql -qAtX -d parallel_check -c "$force" \
    -c "SELECT md5(string_agg(id || ':' || simhash(body)::text, ',' ORDER BY id)) FROM docs")
[[ -n $serial && $serial == "$parallel" ]] || { echo "serial $serial != parallel $parallel"; exit 1; }
