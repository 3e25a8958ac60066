#!/usr/bin/env bash
# The same benchmarks on two PostgreSQL majors in one run: bench/hamming_index.sh and
# bench/ingest.sh on the system 15 (the baseline) and then on 18 (or $OTHER's pg_config),
# each with neardup built for that major; prints every measure side by side with the
# ratio other / 15. A version-specific slowdown shows as a ratio far from 1 (the machine's
# noise is about ±10 % between runs of the same build).
# Usage: bench/versions.sh     ROWS=200000 bench/versions.sh     OTHER=16 bench/versions.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OTHER=${OTHER:-18}
export ROWS=${ROWS:-1000000}
OUT=$ROOT/target/bench-versions
mkdir -p "$OUT"
base_config=/usr/lib/postgresql/15/bin/pg_config
other_config=$("$ROOT/scripts/pg_server.sh" "$OTHER")

# measure -> value from a benchmark's output: the lines its `row` and `result` print
# (measure, value, unit, baseline, baseline value, ratio), the measure padded to 44 columns
measures() {
    awk '{ m = substr($0, 1, 44); sub(/ +$/, "", m); split(substr($0, 45), f, " ")
           if (m != "" && f[1] ~ /^[0-9.]+$/ && f[2] ~ /^(ms|MB|s|B|rows\/s|µs|us|%)$/) print m "\t" f[1] "\t" f[2] }' "$1"
}

for bench in hamming_index ingest; do
    for major in 15 "$OTHER"; do
        config=$base_config
        [[ $major == 15 ]] || config=$other_config
        echo "== $bench on PostgreSQL $major ($ROWS rows)"
        PG_CONFIG=$config bash "$ROOT/bench/$bench.sh" | tee "$OUT/$bench-$major.txt"
    done
done

echo
echo "== PostgreSQL $OTHER against 15, $ROWS rows"
printf '%-14s %-52s %12s %12s %-5s %7s\n' bench measure "15" "$OTHER" unit ratio
for bench in hamming_index ingest; do
    join -t $'\t' <(measures "$OUT/$bench-15.txt" | sort -t $'\t' -k1,1 -u) \
        <(measures "$OUT/$bench-$OTHER.txt" | sort -t $'\t' -k1,1 -u) |
        awk -F '\t' -v b="$bench" '{ r = ($2 > 0) ? sprintf("%.2f", $4 / $2) : "-"
            printf "%-14s %-52s %12s %12s %-5s %7s\n", b, $1, $2, $4, $3, r }'
done
