#!/usr/bin/env bash
# The hamming index on PDQ codes beside an HNSW graph, pgvector's approximate index, on the
# same rows in one run (issue 21 asks for pgvector's HNSW `bit_hamming_ops`).
#   Each code is also stored as bit(256), indexed by HNSW with `bit_hamming_ops` (pgvector
#   0.7 or later in the PostgreSQL of PG_CONFIG: 0.8.6 builds from its source with
#   `make PG_CONFIG=... install`).
#   Data: the N PDQ codes of bench/wide_codes.sh (made as it makes them); PROBES of its near
#   copies are taken out of the table and asked for as new images: every row within R bits of
#   each (a range search is ORDER BY distance LIMIT ef_search, filtered, as pgvector's users
#   write it; hnsw.ef_search = 40, its default, and 200).
#   Measured: the rows found against the hamming index's (exact, checked against a sequential
#   scan), the median latency over the probes (each once untimed, then once timed), build
#   time and size. One backend, no parallel build.
# Usage (as root): N=100000 R=31 bench/wide_codes_hnsw.sh   (SKIP_INSTALL=1 keeps the installed
# build; the codes in OUT are reused when they are N)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-wide-hnsw
OUT=${OUT:-/tmp/neardup-bench-wide-out}
N=${N:-100000}
R=${R:-31}
PROBES=${PROBES:-500}
PYVENV=${PYVENV:-/tmp/pyvenv}
trap 'cluster_stop "$DIR"' EXIT
q() { psql -qAtX -v ON_ERROR_STOP=1 "$@"; }
failed=0
fail() { echo "   FAIL: $*"; failed=1; }

python_venv "$PYVENV" "faiss, pdqhash, skimage" faiss-cpu pdqhash scikit-image numpy
if [[ $(wc -l <"$OUT/pdq.tsv" 2>/dev/null) != "$N" ]]; then
    rm -rf "$OUT" && mkdir -p "$OUT"
    "$PYVENV/bin/python3" "$ROOT/bench/wide_codes_data.py" generate "$N" "$OUT"
fi
[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_buffers = '2GB'" "maintenance_work_mem = '4GB'" "work_mem = '256MB'" "jit = off" \
    "max_parallel_maintenance_workers = 0" "max_wal_size = '10GB'"
export PGOPTIONS="-c max_parallel_workers_per_gather=0"
q -c "CREATE EXTENSION neardup" -c "CREATE EXTENSION vector"
echo "   pgvector $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'")"
q -c "CREATE TABLE pdq (id bigint PRIMARY KEY, code hash256, kind text, source bigint)" \
    -c "\\copy pdq FROM '$OUT/pdq.tsv'" \
    -c "CREATE TABLE probe AS SELECT id, code FROM pdq WHERE kind = 'near' ORDER BY id % 977, id LIMIT $PROBES" \
    -c "DELETE FROM pdq WHERE id IN (SELECT id FROM probe)" \
    -c "ALTER TABLE pdq ADD COLUMN bits bit(256)" -c "UPDATE pdq SET bits = code::bit(256)" \
    -c "ALTER TABLE probe ADD COLUMN bits bit(256)" -c "UPDATE probe SET bits = code::bit(256)" \
    -c "VACUUM ANALYZE pdq" -c "VACUUM ANALYZE probe"
[[ $(q -c "SELECT count(*) FROM pdq p, probe b WHERE p.id % 1000 = 1 AND (p.bits <~> b.bits) <> hamming(p.code, b.code)") == 0 ]] ||
    fail "pgvector's Hamming distance of the bit strings is not the codes'"

hamming_ms=$(wall_ms "CREATE INDEX pdq_hamming ON pdq USING hamming (code) WITH (max_distance = $R)")
hnsw_ms=$(wall_ms "CREATE INDEX pdq_hnsw ON pdq USING hnsw (bits bit_hamming_ops)")
result "build, $((N - PROBES)) rows: hamming index" "$hamming_ms" ms "HNSW (m 16, ef_construction 64)" "$hnsw_ms"
result "bytes a row: hamming index" "$(q -c "SELECT pg_relation_size('pdq_hamming') / count(*) FROM pdq")" B \
    "HNSW on bit(256)" "$(q -c "SELECT pg_relation_size('pdq_hnsw') / count(*) FROM pdq")"

# each probe's statement, by the hamming index (exact) or by HNSW at ef_search EF
exact_sql() { echo "SELECT id FROM pdq WHERE code <@ hamming_ball('$1'::hash256, $R)"; }
hnsw_sql() { echo "SELECT id FROM (SELECT id, bits <~> B'$1' AS d FROM pdq ORDER BY bits <~> B'$1' LIMIT $2) n WHERE d <= $R"; }
probe_codes=$(q -c "SELECT code FROM probe ORDER BY id")
probe_bits=$(q -c "SELECT bits FROM probe ORDER BY id")
per_probe() { # FUNCTION [ARG]: the statement of every probe, from its code or its bits
    local code bits
    while read -r code <&3 && read -r bits <&4; do
        if [[ $1 == exact_sql ]]; then exact_sql "$code"; else hnsw_sql "$bits" "$2"; fi
    done 3<<<"$probe_codes" 4<<<"$probe_bits"
}
latency_ms() { # SETTINGS FUNCTION [ARG]: the median over the probes, each run twice, the second timed
    { echo "$1"; per_probe "${@:2}" | while read -r sql; do echo "EXPLAIN (ANALYZE, TIMING OFF) $sql;"; echo "EXPLAIN (ANALYZE, TIMING OFF) $sql;"; done; } |
        psql -AtX | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | awk 'NR % 2 == 0' | median
}
rows_found() { # SETTINGS FUNCTION [ARG]: the rows found for all probes
    { echo "$1"; per_probe "${@:2}" | while read -r sql; do echo "SELECT count(*) FROM ($sql) s;"; done; } |
        psql -qAtX | awk '{ s += $1 } END { print s + 0 }'
}
probes_answered() { # SETTINGS FUNCTION [ARG]: the probes with at least one row found
    { echo "$1"; per_probe "${@:2}" | while read -r sql; do echo "SELECT count(*) > 0 FROM ($sql) s;"; done; } |
        psql -qAtX | grep -c '^t$' || true
}

exact=$(rows_found "" exact_sql)
scanned=$(q -c "SELECT count(*) FROM probe b JOIN pdq p ON hamming(p.code, b.code) + 0 <= $R")
[[ $exact == "$scanned" ]] || fail "the hamming index found $exact rows, a sequential scan $scanned"
[[ $(q -c "EXPLAIN $(exact_sql "$(head -1 <<<"$probe_codes")")") == *pdq_hamming* ]] || fail "the lookup does not use the hamming index"
[[ $(q -c "EXPLAIN $(hnsw_sql "$(head -1 <<<"$probe_bits")" 40)") == *pdq_hnsw* ]] || fail "the HNSW search does not use its index"
answered=$(probes_answered "" exact_sql)
echo "   $PROBES new near copies: $exact rows within $R bits in the table, $answered probes have one or more"
exact_ms=$(latency_ms "" exact_sql)
for ef in 40 200; do
    found=$(rows_found "SET hnsw.ef_search = $ef;" hnsw_sql "$ef")
    hnsw_answered=$(probes_answered "SET hnsw.ef_search = $ef;" hnsw_sql "$ef")
    hnsw_ms=$(latency_ms "SET hnsw.ef_search = $ef;" hnsw_sql "$ef")
    result "HNSW ef_search $ef: rows found" "$found" rows "hamming index (exact)" "$exact"
    result "HNSW ef_search $ef: probes with a match found" "$hnsw_answered" "" "hamming index (exact)" "$answered"
    result "lookup, median of $PROBES: hamming index" "$exact_ms" ms "HNSW ef_search $ef" "$hnsw_ms"
done
echo
print_summary
((failed == 0)) || exit 1
