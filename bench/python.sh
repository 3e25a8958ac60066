#!/usr/bin/env bash
# The Python module (python/) on the Debian corpus (table docs, bench/lib.sh), side by side
# in one run on the same texts: neardup.simhash against simhash's Simhash(text) and the SQL
# function, neardup.minhash against datasketch's MinHash.update loop (84 permutations) and
# the SQL function, neardup.bloomsig against the SQL function; and the growth of the
# Python process's peak memory over a 100 MB text (bench/python_speed.py). SQL: SELECT
# count(f(body)) FROM docs, serial, JIT off, the server's execution time (median of
# ROUNDS). Goals (issue 42): >= 10x simhash and >= 20x datasketch per core, within 1.2x of
# the SQL function's MB/s.
# Usage: SKIP_INSTALL=1 bench/python.sh   (benchmarks the extension already installed)
#        ROUNDS=5 PY_LIMIT=3000 PYVENV=/tmp/neardup-bench-python-venv bench/python.sh
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-python
ROUNDS=${ROUNDS:-5}
PY_LIMIT=${PY_LIMIT:-3000}
PYVENV=${PYVENV:-/tmp/neardup-bench-python-venv}
trap 'cluster_stop "$DIR"' EXIT
bench_cluster "$DIR" "jit = off" "max_parallel_workers_per_gather = 0"
python_venv "$PYVENV" "simhash,datasketch" simhash datasketch
"$PYVENV/bin/pip" install -q "$ROOT/python" # this tree's module, every run
MB=$(psql -AtX -c "SELECT sum(octet_length(body)) / 1e6 FROM docs")
mbs() { awk -v mb="$MB" -v ms="$1" 'BEGIN { printf "%.2f", mb / (ms / 1000) }'; }

declare -A sql
for f in simhash minhash bloomsig; do
    sql[$f]=$(mbs "$(median_ms "$ROUNDS" "SELECT count($f(body)) FROM docs")")
done
py=$("$PYVENV/bin/python3" "$ROOT/bench/python_speed.py" "$CORPUS" --limit "$PY_LIMIT")
echo "$py" | sed -n 1p
value() { echo "$py" | awk -v k="$1" '$1 == k { print $2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
printf '%-18s %10s %12s\n' "" "MB/s" "ratio"
for f in simhash minhash bloomsig; do
    printf '%-18s %10s\n' "SQL $f" "${sql[$f]}"
    printf '%-18s %10s %12s\n' "neardup.$f" "$(value "neardup.$f")" "$(ratio "$(value "neardup.$f")" "${sql[$f]}")x SQL"
done
printf '%-18s %10s %12s\n' "simhash.Simhash" "$(value simhash.Simhash)" \
    "$(ratio "$(value neardup.simhash)" "$(value simhash.Simhash)")x slower"
printf '%-18s %10s %12s\n' "datasketch" "$(value datasketch)" \
    "$(ratio "$(value neardup.minhash)" "$(value datasketch)")x slower"
for f in simhash minhash bloomsig; do
    echo "peak memory growth over a 100 MB text, $f: $(value "rss_growth_100MB_$f") MB"
done
