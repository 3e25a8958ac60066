#!/usr/bin/env bash
# Bloom signatures over content-defined chunks on the Debian corpus (table docs,
# bench/lib.sh), in one run:
#   (a) the core alone, one thread, before the cluster starts: core/tests/bloom_throughput.rs
#       (signature MB/s, bloom_match ns/pair), built by cargo into CARGO_TARGET_DIR (default
#       /tmp/target-benchc; only the neardup-core crate);
#   (b) SELECT count(bloomsig(body)) against SELECT count(md5(body)) over the same table,
#       serial and with 2 parallel workers: MB/s and the ratio of times (goal <= 2.0),
#       median of ROUNDS;
#   (c) bloom_match (and bloom_similarity) per pair in SQL: a PAIRS x PAIRS cross join of
#       page-sized signatures (8 consecutive descriptions each, as in the core's test) minus
#       the same cross join computing num_nonnulls(a.sig, b.sig), the executor's own cost.
# JIT is off (no compilation in the times); ratios are value / baseline.
# Usage: SKIP_INSTALL=1 bench/bloom.sh   (benchmarks the build already installed)
#        ROUNDS=7 PAIRS=1000 bench/bloom.sh
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-bloom
ROUNDS=${ROUNDS:-7}
PAIRS=${PAIRS:-1000}
T0=$SECONDS
q() { psql -qAtX -v ON_ERROR_STOP=1 "$@"; }
ms_fmt() { printf %.1f "$1"; }

echo "== (a) the core alone (cargo test -p neardup-core --release --test bloom_throughput)"
core=$(cd "$ROOT" && CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-benchc} cargo test -p neardup-core \
    --release --test bloom_throughput -- --ignored --nocapture --test-threads=1 2>&1) || { echo "$core"; exit 1; }
grep -E "MB/s|ns/pair|rows" <<<"$core" | sed -e 's/^test [a-z_]* \.\.\. //' -e 's/^\.*/   /'
core_mbs=$(awk '/^bloom signature/ { print $(NF - 1) }' <<<"$core")
core_ns=$(awk '/^BloomView::from_bytes/ { print $(NF - 1) }' <<<"$core")

trap 'cluster_stop "$DIR"' EXIT
bench_cluster "$DIR" "jit = off"
MB=$(q -c "SELECT round(sum(octet_length(body)) / 1e6, 3) FROM docs")
mbs() { awk -v mb="$MB" -v ms="$1" 'BEGIN { printf "%.1f", mb / (ms / 1000) }'; }

echo "== (b) bloomsig(body) against md5(body), median of $ROUNDS"
q -c "SELECT count(md5(body)), count(bloomsig(body)) FROM docs" >/dev/null # warm the cache
for workers in 0 2; do
    export PGOPTIONS="-c max_parallel_workers_per_gather=$workers -c parallel_setup_cost=0 -c min_parallel_table_scan_size=0"
    md5_ms=$(median_ms "$ROUNDS" "SELECT count(md5(body)) FROM docs")
    bloom_ms=$(median_ms "$ROUNDS" "SELECT count(bloomsig(body)) FROM docs")
    md5="md5(body) at $(mbs "$md5_ms") MB/s"
    result "$workers workers: $md5" "$(ms_fmt "$md5_ms")" ms
    result "$workers workers: bloomsig(body) at $(mbs "$bloom_ms") MB/s" "$(ms_fmt "$bloom_ms")" ms "$md5" "$(ms_fmt "$md5_ms")"
    ((workers)) || serial_mbs=$(mbs "$bloom_ms")
done
export PGOPTIONS="-c max_parallel_workers_per_gather=0"
result "bloomsig(body), serial, MB/s" "$serial_mbs" MB/s "the core's bloom_of, 1 thread" "$core_mbs"

echo "== (c) bloom_match per pair in SQL, $PAIRS x $PAIRS signatures"
q -c "CREATE TABLE pages AS SELECT g, bloomsig(string_agg(body, '' ORDER BY id)) AS sig
    FROM (SELECT id, body, (row_number() OVER (ORDER BY id) - 1) / 8 AS g FROM docs) d
    GROUP BY g ORDER BY g LIMIT $PAIRS" -c "VACUUM ANALYZE pages"
echo "   signatures: $(q -c "SELECT round(avg(pg_column_size(sig))) || ' bytes, ' || round(avg(bit_count(sig))) ||
    ' bits set of 2048 on average' FROM pages")"
cross() { echo "SELECT count($1) FROM pages a CROSS JOIN pages b"; }
ns_pair() { awk -v ms="$1" -v base="$2" -v n="$PAIRS" 'BEGIN { printf "%.1f", (ms - base) * 1e6 / (n * n) }'; }
base_ms=$(median_ms "$ROUNDS" "$(cross "num_nonnulls(a.sig, b.sig)")")
match_ms=$(median_ms "$ROUNDS" "$(cross "bloom_match(a.sig, b.sig)")")
sim_ms=$(median_ms "$ROUNDS" "$(cross "bloom_similarity(a.sig, b.sig)")")
echo "   cross join: $(ms_fmt "$base_ms") ms with num_nonnulls, $(ms_fmt "$match_ms") ms with bloom_match, $(ms_fmt "$sim_ms") ms with bloom_similarity"
result "bloom_match in SQL, net of the executor" "$(ns_pair "$match_ms" "$base_ms")" ns "core: BloomView::from_bytes + bloom_match" "$core_ns"
result "bloom_similarity in SQL, net of the executor" "$(ns_pair "$sim_ms" "$base_ms")" ns "core: BloomView::from_bytes + bloom_match" "$core_ns"
result "bloom_match in SQL, with the executor" "$(ns_pair "$match_ms" 0)" ns "num_nonnulls(a.sig, b.sig)" "$(ns_pair "$base_ms" 0)"

echo
echo "== summary ($(q -c "SELECT count(*) FROM docs") rows, $MB MB of text; $((SECONDS - T0)) s in all)"
print_summary
