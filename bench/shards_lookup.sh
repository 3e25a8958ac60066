#!/usr/bin/env bash
# One lookup `WHERE hamming(fp, $q) <= 3` from the coordinator of scripts/shards.sh (3
# shards by default) against the same lookup on one server (the coordinator's local
# docs_ref, same rows, same hamming index), and where the sharded lookup's time goes.
# pgbench, 1 client, prepared statements, -T $SECS; random query fingerprints (mostly no
# match, like a check of a new document). Then: the coordinator's planning and execution
# time (EXPLAIN ANALYZE, warm session), each remote statement's duration on shard 1
# (log_min_duration_statement = 0 during a short pgbench run), and variants (no async,
# simple protocol, parallel_commit, 10 lookups in one transaction). Usage: [ROWS=100000] [SHARDS=3] [SECS=10] [SKIP_INSTALL=1] bench/shards_lookup.sh
# Takes /tmp/neardup-pg.lock itself (installs the extension unless SKIP_INSTALL=1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROWS=${ROWS:-100000} SHARDS=${SHARDS:-3} SECS=${SECS:-10}
if [[ -z ${SHARDS_LOOKUP_LOCKED:-} ]]; then
    SHARDS_LOOKUP_LOCKED=1 exec flock /tmp/neardup-pg.lock "$0" "$@"
fi
source "$ROOT/scripts/setup.sh"
export SHARDS_BASE=/tmp/neardup-bench-shards
source "$ROOT/scripts/shards.sh"
[[ -n ${SKIP_INSTALL:-} ]] || install_extension
WORK=$(mktemp -d /tmp/neardup-bench-shards-work.XXXXXX)
trap 'shards_stop; rm -rf "$WORK"' EXIT
chmod 755 "$WORK"

shards_start "$SHARDS" "shared_buffers = '256MB'" "autovacuum = off" "log_min_messages = warning"
psql -XqAt -v ON_ERROR_STOP=1 -f "$ROOT/tests/integration/fingerprint_functions.sql" -c "SELECT setseed(0.5)" >/dev/null
t=$SECONDS
shards_load "SELECT g AS id, rnd64() AS fp FROM generate_series(1, $ROWS) g"
echo "loaded in $((SECONDS - t)) s"
echo "rows: $ROWS on $SHARDS shards ($(for i in $(seq "$SHARDS"); do shards_psql "$i" -c "SELECT count(*) FROM docs"; done | paste -sd/)), and in docs_ref"

for t in docs docs_ref; do
    cat >"$WORK/$t.sql" <<SQL
\\set a random(0, 4294967295)
\\set b random(0, 4294967295)
SELECT id FROM $t WHERE hamming(fp, ((:a::bigint << 32) | :b::bigint)::simhash64) <= 3;
SQL
done
# tps LABEL FILE [pgbench options]: latency in ms from pgbench's own average
lat() {
    local label=$1 file=$2
    shift 2
    local out
    out=$(pgbench -n -c 1 -T "$SECS" "$@" -f "$file" postgres 2>&1)
    printf '%-52s %8s ms  (%s transactions)\n' "$label" "$(awk '/latency average/ {print $4}' <<<"$out")" \
        "$(awk '/number of transactions actually processed/ {print $6}' <<<"$out")"
}
echo "== pgbench, 1 client, -T $SECS"
lat "one server (docs_ref), prepared" "$WORK/docs_ref.sql" -M prepared
lat "$SHARDS shards (docs), prepared" "$WORK/docs.sql" -M prepared
lat "$SHARDS shards (docs), simple protocol" "$WORK/docs.sql" -M simple
for i in $(seq "$SHARDS"); do psql -XqAt -c "ALTER SERVER shard$i OPTIONS (SET async_capable 'false')"; done
lat "$SHARDS shards, async_capable off, prepared" "$WORK/docs.sql" -M prepared
for i in $(seq "$SHARDS"); do psql -XqAt -c "ALTER SERVER shard$i OPTIONS (SET async_capable 'true')"; done
# PostgreSQL 15's parallel_commit: the shards' COMMITs sent together, not one after the other
for i in $(seq "$SHARDS"); do psql -XqAt -c "ALTER SERVER shard$i OPTIONS (ADD parallel_commit 'true')"; done
lat "$SHARDS shards, parallel_commit on, prepared" "$WORK/docs.sql" -M prepared
for i in $(seq "$SHARDS"); do psql -XqAt -c "ALTER SERVER shard$i OPTIONS (DROP parallel_commit)"; done
# lookups in one coordinator transaction: the shards' remote transactions are opened once
{ echo "BEGIN;"; for _ in $(seq 10); do tail -n 3 "$WORK/docs.sql"; done; echo "COMMIT;"; } >"$WORK/docs10.sql"
lat "$SHARDS shards, 10 lookups in one transaction (per 10)" "$WORK/docs10.sql" -M prepared

echo "== coordinator, EXPLAIN ANALYZE in one warm session (median of 50)"
q=$(psql -XAt -c "SELECT fp FROM docs_ref WHERE id = 7")
psql -XqAt -c "SELECT 1" >/dev/null
{
    echo "SET plan_cache_mode = force_generic_plan;"
    echo "PREPARE p(simhash64) AS SELECT id FROM docs WHERE hamming(fp, \$1) <= 3;"
    for _ in $(seq 50); do echo "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE p('$q');"; done
} | psql -XqAt | python3 -c '
import json, sys, statistics
dec = json.JSONDecoder(); s = sys.stdin.read(); i = 0; plans = []
while True:
    while i < len(s) and s[i].isspace(): i += 1
    if i >= len(s): break
    obj, i = dec.raw_decode(s, i); plans.append(obj[0])
plans = plans[5:]  # after the first runs: connections open, generic plan
med = lambda k: statistics.median(p[k] for p in plans)
print("planning (generic plan) %.3f ms, execution %.3f ms" % (med("Planning Time"), med("Execution Time")))
shards = plans[-1]["Plan"]["Plans"]
print("per shard, last run: " + ", ".join("%s first row %.3f ms, done %.3f ms" % (p["Relation Name"], p["Actual Startup Time"], p["Actual Total Time"]) for p in shards))
'

echo "== remote statements on shard 1 during 2 s of pgbench (log_min_duration_statement = 0)"
shards_psql 1 -c "ALTER SYSTEM SET log_min_duration_statement = 0" -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] '" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
log=$(shards_dir 1)/server.log
start=$(wc -l <"$log")
n=$(pgbench -n -c 1 -T 2 -M prepared -f "$WORK/docs.sql" postgres 2>&1 | awk '/actually processed/ {print $6}')
shards_psql 1 -c "ALTER SYSTEM RESET log_min_duration_statement" -c "SELECT pg_reload_conf()" >/dev/null
tail -n +"$((start + 1))" "$log" | python3 -c '
import re, sys, collections
n = int(sys.argv[1]); tot = collections.defaultdict(float); cnt = collections.Counter()
for line in sys.stdin:
    m = re.search(r"duration: ([0-9.]+) ms\s+(?:statement|execute [^:]*|parse [^:]*|bind [^:]*):\s*(.*)", line)
    if not m: continue
    kind = re.sub(r"\s+", " ", m.group(2))
    kind = re.sub(r"c\d+", "cN", kind)
    kind = re.sub(r"WHERE .*", "WHERE ...", kind)[:70]
    step = re.search(r"duration: [0-9.]+ ms\s+(statement|execute|parse|bind)", line).group(1)
    tot[(step, kind)] += float(m.group(1)); cnt[(step, kind)] += 1
print("%d lookups; per lookup on shard 1:" % n)
for k, v in sorted(tot.items(), key=lambda kv: -kv[1]):
    print("  %-8s %-70s %5.2f per lookup  %.4f ms each" % (k[0], k[1], cnt[k] / n, v / cnt[k]))
print("  total server time on shard 1 per lookup: %.3f ms" % (sum(tot.values()) / n))
' "$n"
