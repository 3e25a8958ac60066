#!/usr/bin/env bash
# VACUUM advises a REINDEX once an index's pending list outgrows a tenth of its tables, and
# stops once REINDEX has folded the pending rows in.
set -euo pipefail
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS vacuum_advice" -c "CREATE DATABASE vacuum_advice" >/dev/null
run() { psql -qX -d vacuum_advice -v ON_ERROR_STOP=1 "$@" 2>&1; }
run -c "CREATE EXTENSION neardup" \
    -c "CREATE TABLE d (fp simhash64)" \
    -c "INSERT INTO d SELECT (random() * 2^62)::bigint::simhash64 FROM generate_series(1, 20000)" \
    -c "CREATE INDEX d_fp ON d USING hamming (fp)" \
    -c "INSERT INTO d SELECT (random() * 2^62)::bigint::simhash64 FROM generate_series(1, 5000)" >/dev/null
out=$(run -c "VACUUM d")
grep -q 'has 5000 rows in its pending list (20000 in its tables); REINDEX INDEX CONCURRENTLY' <<<"$out" || { echo "no advice: $out"; exit 1; }
out=$(run -c "REINDEX INDEX CONCURRENTLY d_fp" -c "VACUUM d")
[[ -z $out ]] || { echo "advice after REINDEX: $out"; exit 1; }
[[ $(run -At -c "SELECT hamming_index_check('d_fp')") == 25000 ]] || { echo "check count"; exit 1; }
