#!/usr/bin/env bash
# The `hamming` index against its baselines, in one run, on ROWS fingerprints (default
# 1 M) shaped like real corpora: 75 % uniform random, 15 % planted clusters (10 near
# copies of a row, 1-6 flipped bits), 5 % exact duplicates and a 5 % dense spike of rows
# sharing their top 24 bits (Manku §4.2), generated in SQL with a fixed seed. Measures:
#   (a) CREATE INDEX time and size, against a btree on the same column;
#   (b) point lookups hamming(fp, $1) <= 3 (through the planner hook) and
#       fp <@ hamming_ball($1, 3): average ms per lookup over PROBES probes, against a
#       seq scan over a few of them;
#   (c) the self-join a JOIN b ON hamming(a.fp, b.fp) <= 3 AND a.id < b.id on JOIN_ROWS
#       rows (default 100 k), and on ROWS rows when JOIN_FULL=1 (default when ROWS <= 1 M),
#       against hamming_pairs and a brute-force nested loop extrapolated from a sample;
#   (d) hamming_pairs(..., 3) on ROWS rows; its count must equal the join's;
#   (e) (b) again with 1 % and 10 % more rows inserted after the build (written as runs and
#       merged as they arrive, the last few thousand pending), and after a REINDEX, which
#       makes the index one run again;
#   (f) duplicate clusters: neardup_clusters(..., 3) on ROWS rows end to end, against
#       hamming_pairs alone, and neardup_components over EDGES random edges (default 10 M).
# Usage: bench/hamming_index.sh     ROWS=200000 bench/hamming_index.sh
#        SKIP_INSTALL=1 bench/hamming_index.sh   (benchmarks the build already installed)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-hamming
ROWS=${ROWS:-1000000}
JOIN_ROWS=${JOIN_ROWS:-100000}
PROBES=${PROBES:-200}
SEQ_PROBES=${SEQ_PROBES:-5}
if [[ -z ${JOIN_FULL:-} ]]; then JOIN_FULL=$((ROWS <= 1000000 ? 1 : 0)); fi
((JOIN_ROWS <= ROWS)) || JOIN_ROWS=$ROWS
T0=$SECONDS

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "shared_preload_libraries = 'neardup'" "shared_buffers = '1GB'" \
    "maintenance_work_mem = '1GB'" "work_mem = '256MB'" "autovacuum = off" \
    "max_wal_size = '8GB'" "checkpoint_timeout = '30min'"
trap 'cluster_stop "$DIR"' EXIT
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }
# wall_ms SQL...: wall-clock time of the statements, in ms (for DDL, which EXPLAIN cannot time).
wall_ms() {
    local start end
    local args=() sql
    for sql in "$@"; do args+=(-c "$sql"); done
    start=$(date +%s%N)
    q "${args[@]}" >/dev/null
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3g", a / b; else print "-" }'; }
summary=()
row() { # MEASURE VALUE UNIT BASELINE-NAME BASELINE-VALUE
    local r
    r=$(ratio "$2" "${5:-0}")
    summary+=("$(printf '%-44s %12s %-6s %-26s %12s %8s' "$1" "$2" "$3" "${4:--}" "${5:--}" "$r")")
    echo "${summary[-1]}"
}

echo "== generating $ROWS fingerprints (and $JOIN_ROWS for the join)"
q -c "CREATE EXTENSION neardup" -f "$ROOT/tests/integration/fingerprint_functions.sql"
q <<'SQL'
CREATE EXTENSION pageinspect;
-- fill(table, n): n rows of the shapes above into table(fp), in random physical order.
CREATE FUNCTION fill(tbl regclass, n bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    uniform bigint := n * 75 / 100;
    centers bigint := n * 15 / 100 / 10;
    dups bigint := n * 5 / 100;
    spike bigint := n - n * 75 / 100 - n * 15 / 100 / 10 * 10 - n * 5 / 100;
BEGIN
    CREATE TEMP TABLE g AS SELECT rnd64() AS fp FROM generate_series(1, uniform);
    INSERT INTO g SELECT flip(c.fp, 1 + i % 6) FROM (SELECT fp FROM g LIMIT centers) c, generate_series(1, 10) i;
    INSERT INTO g SELECT fp FROM g TABLESAMPLE BERNOULLI (100.0 * dups / (uniform + centers * 10)) REPEATABLE (7) LIMIT dups;
    INSERT INTO g SELECT (x'a5c3e1'::bigint << 40) | (rnd64() & ((1::bigint << 40) - 1))
        FROM generate_series(1, n - (SELECT count(*) FROM g));
    EXECUTE format('INSERT INTO %s (fp) SELECT fp::simhash64 FROM g ORDER BY random()', tbl);
    DROP TABLE g;
END $$;
SQL
gen_ms=$(wall_ms "SELECT setseed(0.42)" "CREATE TABLE docs (id bigserial, fp simhash64)" "SELECT fill('docs', $ROWS)" \
    "CREATE TABLE docs_join (id bigserial, fp simhash64)" "SELECT fill('docs_join', $JOIN_ROWS)" "VACUUM ANALYZE docs, docs_join")
echo "generated in $((gen_ms / 1000)) s: $(q -c "SELECT count(*) || ' rows, ' || count(DISTINCT fp) || ' distinct, ' ||
    count(*) FILTER (WHERE (fp::bigint >> 40) & 16777215 = x'a5c3e1'::bigint) || ' in the spike' FROM docs")"

echo "== (a) index build and size"
printf '%-44s %12s %-6s %-26s %12s %8s\n' measure value unit baseline baseline ratio
btree_ms=$(wall_ms "CREATE INDEX docs_btree ON docs USING btree (fp)")
hamming_ms=$(wall_ms "CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (max_distance = 3)")
row "CREATE INDEX hamming (k=3), $ROWS rows" "$hamming_ms" ms "btree on fp" "$btree_ms"
btree_b=$(q -c "SELECT round(pg_relation_size('docs_btree')::numeric / $ROWS, 1)")
hamming_b=$(q -c "SELECT round(pg_relation_size('docs_fp')::numeric / $ROWS, 1)")
# The metapage (block 0, contents after the 24-byte page header): magic, version,
# max_distance, blocks, tables as little-endian u32 (core/src/search/index_page.rs).
layout=$(q -c "WITH p AS (SELECT get_raw_page('docs_fp', 0) AS b),
    u AS (SELECT i, get_byte(b, 24 + 4 * i) + 256 * get_byte(b, 25 + 4 * i) AS v FROM p, generate_series(0, 4) i)
    SELECT (SELECT v FROM u WHERE i = 3) || ' ' || (SELECT v FROM u WHERE i = 4)" 2>/dev/null || echo "? ?")
blocks=${layout% *} tables=${layout#* }
row "index bytes per row (all tables)" "$hamming_b" B "btree bytes per row" "$btree_b"
if [[ $tables =~ ^[0-9]+$ && $tables -gt 0 ]]; then
    row "index bytes per row per permuted table" "$(awk -v b="$hamming_b" -v t="$tables" 'BEGIN { printf "%.1f", b / t }')" B "14-byte entry" 14
    echo "   layout from the metapage: $blocks blocks, $tables permuted tables"
else
    echo "   (layout unreadable from the metapage; bytes per row cover all permuted tables)"
fi
q -c "DROP INDEX docs_btree"

echo "== (b) point lookups within 3 bits"
q >/dev/null <<SQL
SELECT setseed(0.7);
-- Probes: existing rows (about 5 % of them in the spike) and as many random values.
CREATE TABLE probes AS SELECT row_number() OVER () AS pid, fp FROM (
    (SELECT fp FROM docs TABLESAMPLE BERNOULLI (1) REPEATABLE (3) ORDER BY random() LIMIT $((PROBES / 2)))
    UNION ALL (SELECT rnd64()::simhash64 FROM generate_series(1, $((PROBES - PROBES / 2))))) s;
CREATE TABLE spike_probes AS SELECT row_number() OVER () AS pid, fp FROM
    (SELECT fp FROM docs WHERE (fp::bigint >> 40) & 16777215 = x'a5c3e1'::bigint LIMIT 20) s;
-- lookups(probe table, form, limit): total matches and ms per lookup, each one a
-- parameterized query (a prepared plan, as an application would send).
CREATE FUNCTION lookups(tbl regclass, form text, n int, OUT matches bigint, OUT ms_each float8)
LANGUAGE plpgsql AS \$\$
DECLARE q simhash64; c bigint; t0 timestamptz; done int := 0;
BEGIN
    matches := 0;
    t0 := clock_timestamp();
    FOR q IN EXECUTE format('SELECT fp FROM %s ORDER BY pid LIMIT %s', tbl, n) LOOP
        IF form = 'hamming' THEN
            SELECT count(*) INTO c FROM docs WHERE hamming(fp, q) <= 3;
        ELSE
            SELECT count(*) INTO c FROM docs WHERE fp <@ hamming_ball(q, 3);
        END IF;
        matches := matches + c;
        done := done + 1;
    END LOOP;
    ms_each := extract(epoch FROM clock_timestamp() - t0) * 1000 / greatest(done, 1);
END \$\$;
SQL
q -c "PREPARE p(simhash64) AS SELECT count(*) FROM docs WHERE hamming(fp, \$1) <= 3" \
    -c "SET plan_cache_mode = force_generic_plan" -c "EXPLAIN (COSTS OFF) EXECUTE p('0123456789abcdef')" | sed 's/^/   plan of hamming(fp, $1) <= 3: /' | head -3
seqopts="-c enable_indexscan=off -c enable_bitmapscan=off -c max_parallel_workers_per_gather=0"
lookup_rows() { # LABEL
    local seq idx ball spike
    q -c "SELECT lookups('probes', 'hamming', $PROBES)" >/dev/null # warm the cache
    idx=$(q -c "SELECT matches || ' ' || ms_each FROM lookups('probes', 'hamming', $PROBES)")
    ball=$(q -c "SELECT matches || ' ' || ms_each FROM lookups('probes', 'ball', $PROBES)")
    spike=$(q -c "SELECT matches || ' ' || ms_each FROM lookups('spike_probes', 'hamming', 20)")
    seq=$(PGOPTIONS=$seqopts q -c "SELECT matches || ' ' || ms_each FROM lookups('probes', 'hamming', $SEQ_PROBES)")
    local first
    first=$(q -c "SELECT matches FROM lookups('probes', 'hamming', $SEQ_PROBES)")
    [[ $first == "${seq% *}" ]] || echo "   MISMATCH: the first $SEQ_PROBES probes find $first rows through the index, ${seq% *} by seq scan"
    [[ ${idx% *} == "${ball% *}" ]] || echo "   MISMATCH: hamming() <= 3 finds ${idx% *} rows, <@ hamming_ball ${ball% *}"
    row "lookup hamming(fp,\$1)<=3 $1" "$(printf %.3f "${idx#* }")" ms "seq scan (serial)" "$(printf %.3f "${seq#* }")"
    row "lookup fp <@ hamming_ball(\$1,3) $1" "$(printf %.3f "${ball#* }")" ms "seq scan (serial)" "$(printf %.3f "${seq#* }")"
    row "lookup of a spike member $1" "$(printf %.3f "${spike#* }")" ms "seq scan (serial)" "$(printf %.3f "${seq#* }")"
    echo "   $PROBES probes found ${idx% *} rows in all"
}
lookup_rows "(built)"

echo "== (c) self-join within 3 bits"
q -c "CREATE INDEX docs_join_fp ON docs_join USING hamming (fp)" -c "ANALYZE docs_join"
join_sql() { echo "SELECT count(*) FROM $1 a JOIN $1 b ON hamming(a.fp, b.fp) <= 3 AND a.id < b.id"; }
plan=$(q -c "EXPLAIN (COSTS OFF) $(join_sql docs_join)")
echo "$plan" | head -6 | sed 's/^/   plan: /'
grep -q "docs_join_fp" <<<"$plan" || echo "   NOTE: the planner did not use the index for the join"
join_ms=$(exec_ms "$(join_sql docs_join)")
join_count=$(q -c "$(join_sql docs_join)")
pairs_join_ms=$(exec_ms "SELECT count(*) FROM hamming_pairs('docs_join', 'id', 'fp', 3)")
pairs_join_count=$(q -c "SELECT count(*) FROM hamming_pairs('docs_join', 'id', 'fp', 3)")
# Brute force: the first 200 outer rows against all, scaled to the whole triangle.
sample=200
brute_ms=$(PGOPTIONS=$seqopts exec_ms "SELECT count(*) FROM (SELECT * FROM docs_join ORDER BY id LIMIT $sample) a
    JOIN docs_join b ON bit_count((a.fp::bigint # b.fp::bigint)::bit(64)) <= 3 AND a.id < b.id")
brute_est=$(awk -v ms="$brute_ms" -v n="$JOIN_ROWS" -v s="$sample" 'BEGIN { printf "%.0f", ms * n / s / 2 }')
row "self-join via index, $JOIN_ROWS rows" "$(printf %.0f "$join_ms")" ms "hamming_pairs, same rows" "$(printf %.0f "$pairs_join_ms")"
row "self-join via index, $JOIN_ROWS rows" "$(printf %.0f "$join_ms")" ms "nested loop, extrapolated" "$brute_est"
echo "   $join_count pairs through the join, $pairs_join_count from hamming_pairs"
[[ $join_count == "$pairs_join_count" ]] || echo "   MISMATCH: the join finds $join_count pairs, hamming_pairs $pairs_join_count"
full_join_ms="" full_join_count=""
if ((JOIN_FULL)); then
    plan=$(q -c "EXPLAIN (COSTS OFF) $(join_sql docs)")
    echo "$plan" | head -4 | sed 's/^/   plan on docs: /'
    if out=$(PGOPTIONS="-c statement_timeout=300s" exec_ms "$(join_sql docs)" 2>&1); then
        full_join_ms=$out
        full_join_count=$(q -c "$(join_sql docs)")
    else
        echo "   self-join on $ROWS rows: $out"
    fi
fi

echo "== (d) hamming_pairs"
pairs_ms=$(exec_ms "SELECT count(*) FROM hamming_pairs('docs', 'id', 'fp', 3)")
pairs_count=$(q -c "SELECT count(*) FROM hamming_pairs('docs', 'id', 'fp', 3)")
if [[ -n $full_join_ms ]]; then
    row "self-join via index, $ROWS rows" "$(printf %.0f "$full_join_ms")" ms "hamming_pairs, same rows" "$(printf %.0f "$pairs_ms")"
    echo "   $full_join_count pairs through the join, $pairs_count from hamming_pairs"
    [[ $full_join_count == "$pairs_count" ]] || echo "   MISMATCH: the join finds $full_join_count pairs, hamming_pairs $pairs_count"
fi
row "hamming_pairs, $ROWS rows" "$(printf %.0f "$pairs_ms")" ms "hamming_pairs, $JOIN_ROWS rows" "$(printf %.0f "$pairs_join_ms")"
echo "   $pairs_count pairs within 3 bits among $ROWS rows"

echo "== (e) lookups with 1 % and 10 % more rows inserted after the build, then REINDEX"
# Near copies of existing rows (one bit flipped), as a growing corpus would receive.
pending=$((ROWS / 100))
ins_ms=$(wall_ms "INSERT INTO docs (fp) SELECT (fp::bigint # 1)::simhash64 FROM docs LIMIT $pending")
row "INSERT of $pending rows (runs, merges)" "$ins_ms" ms - ""
lookup_rows "(+1% inserted)"
more=$((ROWS * 9 / 100))
ins_ms=$(wall_ms "INSERT INTO docs (fp) SELECT (fp::bigint # 2)::simhash64 FROM docs LIMIT $more")
row "INSERT of $more more rows (runs, merges)" "$ins_ms" ms - ""
lookup_rows "(+10% inserted)"
reindex_ms=$(wall_ms "REINDEX INDEX docs_fp")
row "REINDEX (one run again)" "$reindex_ms" ms "CREATE INDEX" "$hamming_ms"
lookup_rows "(after REINDEX)"

echo "== (f) duplicate clusters"
EDGES=${EDGES:-10000000}
clusters_ms=$(exec_ms "SELECT count(*) FROM neardup_clusters('docs', 'id', 'fp', 3)")
row "neardup_clusters, $((ROWS + ROWS / 10)) rows" "$(printf %.0f "$clusters_ms")" ms "hamming_pairs, same rows" \
    "$(exec_ms "SELECT count(*) FROM hamming_pairs('docs', 'id', 'fp', 3)")"
echo "   $(q -c "SELECT count(DISTINCT cluster_id) || ' clusters, ' || count(*) FILTER (WHERE is_representative) || ' representatives' FROM neardup_clusters('docs', 'id', 'fp', 3)")"
q -c "CREATE TABLE edges AS SELECT (random() * $EDGES)::bigint AS a, (random() * $EDGES)::bigint AS b FROM generate_series(1, $EDGES)"
components_ms=$(exec_ms "SELECT count(*) FROM neardup_components('SELECT a, b FROM edges')")
row "neardup_components, $EDGES edges" "$(printf %.0f "$components_ms")" ms "SELECT count(*) FROM edges" \
    "$(exec_ms "SELECT count(*) FROM edges")"

echo
echo "== summary ($ROWS rows, join on $JOIN_ROWS, $PROBES probes; $((SECONDS - T0)) s in all)"
printf '%-44s %12s %-6s %-26s %12s %8s\n' measure value unit baseline baseline ratio
printf '%s\n' "${summary[@]}"
