#!/usr/bin/env bash
# What each part of a grown `hamming` index costs a lookup (issue 20's "lookups as fast as
# a fresh index at every moment"): ROWS random fingerprints (default 1 M) with the index
# built, then either pending rows (PENDING, default "1000 4000 8000") or one run beside the
# largest (RUNS, default "8000 32000 128000"), each shape in a table of its own, timed
# against a fresh build of the same rows: 50 lookups within 3 as one LATERAL statement
# (as bench/ingest_batched.sh times them), the medians of 15 rounds run alternately in one
# session, and the extra cost of one lookup in microseconds. "same rows" times two fresh
# builds of the same rows against each other: the noise floor. Answers are compared.
# Merges run in the inserting backend (neardup.merge_workers = 0), so that each shape stays
# as it was made.
# Usage: bench/lookup_parts.sh    ROWS=3000000 bench/lookup_parts.sh    SKIP_INSTALL=1 ...
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-parts
ROWS=${ROWS:-1000000}
PENDING=${PENDING:-1000 4000 8000}
RUNS=${RUNS:-8000 32000 128000}
LOOKUPS=50

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '1GB'" "maintenance_work_mem = '1GB'" "autovacuum = off" \
    "jit = off" "max_wal_size = '8GB'" "neardup.merge_workers = 0"
trap 'cluster_stop "$DIR"' EXIT
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }
q >/dev/null -c "CREATE EXTENSION neardup" -c "CREATE EXTENSION pageinspect" \
    -f "$ROOT/tests/integration/fingerprint_functions.sql" -f "$ROOT/tests/integration/index_pages.sql"
q >/dev/null <<SQL
SELECT setseed(0.25);
CREATE TABLE base AS SELECT rnd64()::simhash64 AS fp FROM generate_series(1, $ROWS);
CREATE TABLE probes AS SELECT row_number() OVER () AS pid, fp FROM (SELECT fp FROM base ORDER BY random() LIMIT $LOOKUPS) s;
ANALYZE probes;
SQL
lookup_sql() {
    echo "SELECT string_agg(c::text, ',' ORDER BY pid) FROM probes,
        LATERAL (SELECT count(*) AS c FROM $1 WHERE fp <@ hamming_ball(probes.fp, 3)) x"
}

# shape NAME LIMIT EXTRA: table NAME holds the base rows, its index built with
# pending_limit LIMIT, then EXTRA more rows inserted (a run is written once a list holds
# LIMIT rows and the next row comes); afterwards the limit is raised so nothing else moves.
# Its twin NAME_fresh holds the same rows with the index built over them.
shape() {
    q >/dev/null <<SQL
CREATE TABLE $1 AS SELECT fp FROM base;
CREATE INDEX ${1}_fp ON $1 USING hamming (fp) WITH (pending_limit = $2);
INSERT INTO $1 SELECT rnd64()::simhash64 FROM generate_series(1, $3);
ALTER INDEX ${1}_fp SET (pending_limit = 100000000);
CREATE TABLE ${1}_fresh AS SELECT fp FROM $1;
CREATE INDEX ${1}_fresh_fp ON ${1}_fresh USING hamming (fp);
ANALYZE $1; ANALYZE ${1}_fresh;
SQL
}

# measure LABEL NAME: the grown index against the fresh one, one line.
measure() {
    local a b
    a=$(PGOPTIONS="-c enable_seqscan=off" q -c "$(lookup_sql "$2")")
    b=$(PGOPTIONS="-c enable_seqscan=off" q -c "$(lookup_sql "${2}_fresh")")
    [[ $a == "$b" ]] || { echo "MISMATCH in $2: $a against $b" >&2; exit 1; }
    read -r ms fresh_ms < <(PGOPTIONS="-c enable_seqscan=off" paired_medians_ms 15 "$(lookup_sql "$2")" "$(lookup_sql "${2}_fresh")")
    printf '%-26s %-22s %8.3f %8.3f %6s %8s\n' "$1" "$(q -c "SELECT run_rows('${2}_fp')")" "$ms" "$fresh_ms" \
        "$(awk -v a="$ms" -v b="$fresh_ms" 'BEGIN { printf "%.2f", a / b }')" \
        "$(awk -v a="$ms" -v b="$fresh_ms" -v n=$LOOKUPS 'BEGIN { printf "%.2f", (a - b) * 1000 / n }')"
}

echo "== 50 lookups within 3 over $ROWS fingerprints and a part beside them, against a fresh build"
printf '%-26s %-22s %8s %8s %6s %8s\n' shape "runs, pending (rows)" "ms" "fresh ms" ratio "us/probe"
shape same 100000000 0
measure "same rows (noise floor)" same
for p in $PENDING; do
    shape "pending_$p" 100000000 "$p"
    measure "$p pending rows" "pending_$p"
done
for r in $RUNS; do
    shape "run_$r" "$r" $((r + 1))
    measure "a run of $r rows" "run_$r"
done
