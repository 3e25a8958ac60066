#!/usr/bin/env bash
# The `hamming` index through streaming replication: a primary and a hot standby made by
# `pg_basebackup -R`, each on its own unix socket under /tmp. After each step on the
# primary (build, inserts into the pending pages, deletes, updates, VACUUM, REINDEX,
# TRUNCATE, CREATE INDEX CONCURRENTLY) the standby replays up to the primary's WAL
# position; then the same queries, forced through the index, must give the same answers on
# both, and the standby's must equal a brute-force seq scan on the standby;
# hamming_index_check must pass on both and count the same entries.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
PRIMARY=/tmp/neardup-index-primary
STANDBY=/tmp/neardup-index-standby
T0=$SECONDS

fail() { echo "check_index_standby: $*" >&2; exit 1; }
qp() { psql -XqAt -v ON_ERROR_STOP=1 -h "$PRIMARY" -p 5432 -U postgres -d postgres "$@"; }
qs() { psql -XqAt -v ON_ERROR_STOP=1 -h "$STANDBY" -p 5432 -U postgres -d postgres "$@"; }

cleanup() {
    cluster_stop "$STANDBY"
    cluster_stop "$PRIMARY"
}
trap cleanup EXIT
cluster_stop "$STANDBY"
cluster_start "$PRIMARY" "shared_preload_libraries = 'neardup'" "wal_level = replica" \
    "max_wal_senders = 4" "autovacuum = off" "log_min_messages = warning"
grep -q "^local *replication *all *trust" "$PRIMARY/data/pg_hba.conf" ||
    echo "local replication all trust" >>"$PRIMARY/data/pg_hba.conf"
qp -c "SELECT pg_reload_conf()" >/dev/null

rm -rf "$STANDBY"
mkdir -p "$STANDBY"
chown postgres: "$STANDBY"
sudo -u postgres "$PG_BIN/pg_basebackup" -h "$PRIMARY" -p 5432 -U postgres -D "$STANDBY/data" -R -X stream -c fast ||
    fail "pg_basebackup failed"
{
    echo "unix_socket_directories = '$STANDBY'"
    echo "hot_standby = on"
} >>"$STANDBY/data/postgresql.conf"
sudo -u postgres "$PG_BIN/pg_ctl" -D "$STANDBY/data" -l "$STANDBY/server.log" -w -t 60 start >/dev/null ||
    fail "the standby did not start: $(tail -20 "$STANDBY/server.log")"
[[ $(qs -c "SELECT pg_is_in_recovery()") == t ]] || fail "the standby is not in recovery"

# synced: waits until the standby has replayed everything the primary has written.
synced() {
    local lsn
    lsn=$(qp -c "SELECT pg_current_wal_lsn()")
    for _ in $(seq 600); do
        [[ $(qs -c "SELECT coalesce(pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn, false)") == t ]] && return 0
        sleep 0.05
    done
    fail "[$STAGE] the standby did not replay up to $lsn in 30 s: $(tail -5 "$STANDBY/server.log")"
}

force_index="-c enable_seqscan=off -c enable_bitmapscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c enable_material=off"
force_bitmap="-c enable_seqscan=off -c enable_indexscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c enable_material=off"
force_seq="-c enable_indexscan=off -c enable_bitmapscan=off -c enable_indexonlyscan=off"

# on NODE OPTIONS SQL: one line from SQL run on NODE (qp or qs) with those settings.
on() { PGOPTIONS=$2 "$1" -c "$3"; }
uses_index() { # NODE OPTIONS SQL INDEX-PLAN-TEXT
    local plan
    plan=$(PGOPTIONS=$2 "$1" -c "EXPLAIN (COSTS OFF) $3")
    grep -q "$4" <<<"$plan" && ! grep -qE "Seq Scan on docs8?( |$)" <<<"$plan" ||
        fail "[$STAGE] on $1 the plan does not read $4:"$'\n'"$plan"
}

# compare TABLE INDEX: index scan, bitmap scan, the hook's hamming() <= k and ORDER BY <~>
# give the same answers on the primary and the standby, and the standby's equal its seq scan.
compare() {
    local t=$1 index=$2 probe='p.fp' node
    [[ $t == docs8 ]] || probe='p.fp::simhash64'
    local agg="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || k || ':' || d.id, ',' ORDER BY p.pid, k, d.id), ''))
        FROM probes p CROSS JOIN generate_series(0, 4) AS k JOIN $t d"
    local ball="$agg ON d.fp <@ hamming_ball($probe, k)"
    local brute="$agg ON bit_count((d.fp::bigint # p.fp)::bit(64)) <= k"
    local hook="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || d.id, ',' ORDER BY p.pid, d.id), ''))
        FROM probes p JOIN $t d ON hamming(d.fp, $probe) <= 3"
    local hook_brute=${hook//hamming(d.fp, $probe)/bit_count((d.fp::bigint # p.fp)::bit(64))}
    local knn="SELECT md5(string_agg(p.pid || ':' || x.d, ',' ORDER BY p.pid)) FROM probes p CROSS JOIN LATERAL
        (SELECT array_agg(dist ORDER BY dist)::text AS d FROM
            (SELECT d.fp <~> $probe AS dist FROM $t d WHERE d.fp IS NOT NULL ORDER BY d.fp <~> $probe LIMIT 30) s) x
        WHERE p.pid % 5 = 0"
    local knn_brute=${knn//d.fp <~> $probe/bit_count((d.fp::bigint # p.fp)::bit(64))::int}

    local seq primary standby
    seq=$(on qs "$force_seq" "$brute")
    [[ ${seq%% *} -gt 200 ]] || fail "[$STAGE] $t: only ${seq%% *} matches in all, the probes test nothing"
    COMPARED=$((COMPARED + ${seq%% *}))
    [[ $seq == "$(on qp "$force_seq" "$brute")" ]] || fail "[$STAGE] $t: the seq scans of primary and standby differ"
    for node in qp qs; do
        uses_index $node "$force_index" "$ball" "Index Scan using $index"
        uses_index $node "$force_bitmap" "$ball" "Bitmap Index Scan on $index"
        uses_index $node "$force_index" "$hook" "Index Scan using $index"
        uses_index $node "$force_index" "$knn" "Index Scan using $index"
    done
    primary=$(on qp "$force_index" "$ball")
    standby=$(on qs "$force_index" "$ball")
    [[ $standby == "$primary" ]] || fail "[$STAGE] $t: index scans differ: primary '$primary', standby '$standby'"
    [[ $standby == "$seq" ]] || fail "[$STAGE] $t: standby index scan '$standby', its seq scan '$seq'"
    standby=$(on qs "$force_bitmap" "$ball")
    [[ $standby == "$seq" ]] || fail "[$STAGE] $t: standby bitmap scan '$standby', its seq scan '$seq'"
    seq=$(on qs "$force_seq" "$hook_brute")
    for node in qp qs; do
        standby=$(on $node "$force_index" "$hook")
        [[ $standby == "$seq" ]] || fail "[$STAGE] $t: hamming(fp, q) <= 3 on $node through the index '$standby', seq scan '$seq'"
    done
    seq=$(on qs "$force_seq" "$knn_brute")
    for node in qp qs; do
        [[ $(on $node "$force_index" "$knn") == "$seq" ]] ||
            fail "[$STAGE] $t: ORDER BY <~> LIMIT 30 on $node through the index differs from a sort of the seq scan"
    done
    local cp cs
    cp=$(qp -c "SELECT hamming_index_check('$index')" 2>&1) || fail "[$STAGE] primary hamming_index_check('$index'): $cp"
    cs=$(qs -c "SELECT hamming_index_check('$index')" 2>&1) || fail "[$STAGE] standby hamming_index_check('$index'): $cs"
    [[ $cp == "$cs" ]] || fail "[$STAGE] hamming_index_check('$index') counts $cp on the primary, $cs on the standby"
}

COMPARED=0
step() { # STAGE SQL: runs SQL on the primary, waits for the standby, compares both tables
    STAGE=$1
    qp -c "$2"
    synced
    compare docs docs_fp
    if [[ $(qs -c "SELECT count(*) FROM pg_index WHERE indexrelid = 'docs8_fp'::regclass AND indisvalid") == 1 ]]; then
        compare docs8 docs8_fp
    fi
}

STAGE=setup
qp >/dev/null -c "CREATE EXTENSION neardup" -f "$ROOT/tests/integration/fingerprint_functions.sql"
qp >/dev/null <<'SQL'
SELECT setseed(0.23);
CREATE TABLE gen (n serial, fp bigint);
INSERT INTO gen (fp) SELECT rnd64() FROM generate_series(1, 6000);
INSERT INTO gen (fp) SELECT flip(c.fp, 1 + (i % 6)) FROM (SELECT fp FROM gen ORDER BY n LIMIT 200) c,
    generate_series(1, 12) i;
INSERT INTO gen (fp) SELECT fp FROM gen ORDER BY n DESC LIMIT 500;
INSERT INTO gen (fp) SELECT (x'5a3c1e'::bigint << 40) | (rnd64() & ((1::bigint << 40) - 1)) FROM generate_series(1, 600);
INSERT INTO gen (fp) SELECT NULL FROM generate_series(1, 10);
CREATE TABLE docs (id bigserial PRIMARY KEY, fp simhash64, note int DEFAULT 0);
CREATE TABLE docs8 (id bigserial PRIMARY KEY, fp bigint, note int DEFAULT 0);
INSERT INTO docs (fp) SELECT fp::simhash64 FROM gen ORDER BY random();
INSERT INTO docs8 (fp) SELECT fp FROM gen ORDER BY random();
CREATE TABLE probes AS
SELECT row_number() OVER () AS pid, fp FROM (
    (SELECT fp FROM gen WHERE n <= 200 ORDER BY random() LIMIT 15)
    UNION ALL (SELECT fp FROM gen WHERE fp IS NOT NULL ORDER BY random() LIMIT 10)
    UNION ALL (SELECT flip(fp, 1 + floor(random() * 4)::int) FROM gen WHERE fp IS NOT NULL ORDER BY random() LIMIT 10)
    UNION ALL (SELECT fp FROM gen WHERE (fp >> 40) & 16777215 = x'5a3c1e'::bigint LIMIT 5)
    UNION ALL (SELECT rnd64() FROM generate_series(1, 10))
) s;
SQL

step "CREATE INDEX" "CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (max_distance = 3);
    CREATE INDEX docs8_fp ON docs8 USING hamming (fp int8_hamming_ops) WITH (max_distance = 3)"
step "inserts (pending pages)" "INSERT INTO docs (fp) SELECT fp::simhash64 FROM gen ORDER BY random() LIMIT 2500;
    INSERT INTO docs (fp) SELECT flip(fp, (pid % 4)::int)::simhash64 FROM probes, generate_series(1, 10);
    INSERT INTO docs8 (fp) SELECT flip(fp, 1) FROM gen ORDER BY random() LIMIT 2500"
step "deletes" "DELETE FROM docs WHERE id % 3 = 0; DELETE FROM docs8 WHERE id % 5 = 2"
step "updates" "UPDATE docs SET fp = flip(fp::bigint, 1)::simhash64 WHERE id % 7 = 1;
    UPDATE docs SET note = note + 1 WHERE id % 7 = 2;
    UPDATE docs8 SET fp = flip(fp, 2) WHERE id % 7 = 1"
step "VACUUM" "VACUUM docs, docs8"
for t in docs docs8; do
    n=$(qs -c "SELECT hamming_index_check('${t}_fp')")
    [[ $n == $(qs -c "SELECT count(*) FROM $t") ]] || fail "[VACUUM] ${t}_fp holds $n entries on the standby, $t has $(qs -c "SELECT count(*) FROM $t") rows"
done
step "inserts into freed space" "INSERT INTO docs (fp) SELECT rnd64()::simhash64 FROM generate_series(1, 2000);
    INSERT INTO docs (fp) SELECT flip(fp, (pid % 3)::int)::simhash64 FROM probes, generate_series(1, 5);
    INSERT INTO docs8 (fp) SELECT rnd64() FROM generate_series(1, 2000)"
step "REINDEX" "REINDEX INDEX docs_fp; REINDEX INDEX docs8_fp"
step "TRUNCATE and reload" "TRUNCATE docs8; INSERT INTO docs8 (fp) SELECT fp FROM gen"
qp -c "DROP INDEX docs8_fp"
step "CREATE INDEX CONCURRENTLY" "CREATE INDEX CONCURRENTLY docs8_fp ON docs8 USING hamming (fp int8_hamming_ops) WITH (max_distance = 2)"
step "more inserts and VACUUM" "INSERT INTO docs8 (fp) SELECT flip(fp, 1) FROM gen LIMIT 1000;
    DELETE FROM docs8 WHERE id % 2 = 0"
step "final VACUUM" "VACUUM docs8"
echo "check_index_standby: ok in $((SECONDS - T0)) s ($COMPARED (probe, k, row) matches compared per way of asking)"
