#!/usr/bin/env bash
# neardup on shards, on one machine: N PostgreSQL 15 shard servers and a coordinator, each a
# throwaway cluster of scripts/cluster.sh (its own unix socket directory under
# $SHARDS_BASE, default /tmp/neardup-shards, user postgres, neardup preloaded), so it
# disturbs no other cluster. Each shard holds a real table
#     docs (id bigint PRIMARY KEY, fp simhash64), with a `hamming` index on fp;
# the coordinator has postgres_fdw, a foreign server per shard (shard1..shardN) with
# extensions 'neardup' (so our operators and functions may be shipped), async_capable
# (one Async Foreign Scan per shard, run concurrently) and fetch_size 10000, a user
# mapping each, and
#     docs (id bigint, fp simhash64) PARTITION BY HASH (id)
# whose partitions docs_shard1..N are foreign tables on the shards' docs. The coordinator
# also has the same table docs_ref, local (PRIMARY KEY, hamming index): the single-server
# reference that shards_load fills with the same rows.
# The extension must already be installed (scripts/install.sh, or install_extension).
#
# Sourced:                      shards_start [N [extra postgresql.conf lines...]]
#                               shards_load "SELECT id, fp FROM ..."   (run on the coordinator)
#                               shards_stop
#   shards_start leaves PGHOST/PGPORT/PGUSER/PGDATABASE naming the coordinator; shard i is
#   reachable at "$(shards_dir i)" (shards_dir 0 is the coordinator; shards_psql I runs psql
#   there), and shards_count tells N.
# CLI:  scripts/shards.sh start [N]    prints how to connect
#       scripts/shards.sh stop         stops every server under $SHARDS_BASE and removes it
# Hold `flock /tmp/neardup-pg.lock` while the servers run (they preload the installed library).
set -euo pipefail

source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cluster.sh"
SHARDS_BASE=${SHARDS_BASE:-/tmp/neardup-shards}

# shards_dir I: the cluster directory (and socket directory) of shard I, 0 = coordinator.
shards_dir() {
    if [[ $1 == 0 ]]; then echo "$SHARDS_BASE/coord"; else echo "$SHARDS_BASE/shard$1"; fi
}

# shards_count: the number of shards under $SHARDS_BASE (so a shell that did not start them
# can still load and query them).
shards_count() {
    local n=0
    while [[ -d $(shards_dir $((n + 1))) ]]; do n=$((n + 1)); done
    echo "$n"
}

# shards_psql I [psql args...]: psql on server I (0 = coordinator), stopping at the first error.
shards_psql() {
    local i=$1
    shift
    psql -XqAt -v ON_ERROR_STOP=1 -h "$(shards_dir "$i")" -p 5432 -U postgres -d postgres "$@"
}

shards_start() {
    local n=${1:-3}
    [[ $# -gt 0 ]] && shift
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "shards_start: N must be a positive integer, not '$n'" >&2; return 1; }
    shards_stop
    mkdir -p "$SHARDS_BASE"
    chown postgres: "$SHARDS_BASE"
    local i dir
    for ((i = 0; i <= n; i++)); do
        dir=$(shards_dir "$i")
        if [[ $i == 0 ]]; then
            cluster_start "$dir" "$@"
        else
            # postgres_fdw reads a shard through a cursor, which the shard plans for its
            # first cursor_tuple_fraction of rows (default 0.1): a tenth of a seq scan of a
            # small shard (10 k rows) then costs less than the hamming index scan's startup,
            # and the lookup reads the whole table. The coordinator fetches every row anyway.
            cluster_start "$dir" "cursor_tuple_fraction = 1.0" "$@"
        fi
        shards_psql "$i" -c "CREATE EXTENSION neardup" >/dev/null
    done
    for ((i = 1; i <= n; i++)); do
        shards_psql "$i" >/dev/null <<'SQL'
CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64);
CREATE INDEX docs_fp ON docs USING hamming (fp);
SQL
    done
    {
        echo "CREATE EXTENSION postgres_fdw;"
        echo "CREATE TABLE docs (id bigint, fp simhash64) PARTITION BY HASH (id);"
        for ((i = 1; i <= n; i++)); do
            # batch_size: INSERTs through the coordinator go to a shard 1000 rows at a time.
            echo "CREATE SERVER shard$i FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$(shards_dir "$i")',
                  port '5432', dbname 'postgres', extensions 'neardup', async_capable 'true',
                  fetch_size '10000', batch_size '1000');"
            echo "CREATE USER MAPPING FOR postgres SERVER shard$i OPTIONS (user 'postgres');"
            echo "CREATE FOREIGN TABLE docs_shard$i PARTITION OF docs
                  FOR VALUES WITH (MODULUS $n, REMAINDER $((i - 1)))
                  SERVER shard$i OPTIONS (schema_name 'public', table_name 'docs');"
        done
        echo "CREATE TABLE docs_ref (id bigint PRIMARY KEY, fp simhash64);"
        echo "CREATE INDEX docs_ref_fp ON docs_ref USING hamming (fp);"
    } | shards_psql 0 >/dev/null
    export PGHOST=$(shards_dir 0) PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
}

# shards_load SQL: inserts the rows (id, fp) of the query, evaluated once on the
# coordinator, into the sharded docs (routed to the shards by hash of id) and into the
# reference docs_ref; then ANALYZEs the shards, the reference and the coordinator's docs
# (which samples the foreign partitions), so both sides are planned from statistics.
shards_load() {
    local sql=$1 i
    shards_psql 0 >/dev/null <<SQL
BEGIN;
CREATE TEMP TABLE shards_rows ON COMMIT DROP AS SELECT id::bigint AS id, fp::simhash64 AS fp FROM ($sql) s;
INSERT INTO docs SELECT id, fp FROM shards_rows;
INSERT INTO docs_ref SELECT id, fp FROM shards_rows;
COMMIT;
SQL
    for ((i = 1; i <= $(shards_count); i++)); do shards_psql "$i" -c "VACUUM ANALYZE docs" >/dev/null; done
    shards_psql 0 -c "VACUUM ANALYZE docs_ref" -c "ANALYZE docs" >/dev/null
}

# shards_stop: stops the coordinator and every shard under $SHARDS_BASE, removes the directory.
shards_stop() {
    local dir
    for dir in "$SHARDS_BASE"/coord "$SHARDS_BASE"/shard*; do
        [[ -d $dir ]] && cluster_stop "$dir"
    done
    rm -rf "$SHARDS_BASE"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    case ${1:-} in
        start)
            shards_start "${2:-3}"
            echo "coordinator: psql -h $(shards_dir 0) -p 5432 -U postgres postgres"
            for ((i = 1; i <= $(shards_count); i++)); do echo "shard $i:     psql -h $(shards_dir "$i") -p 5432 -U postgres postgres"; done
            ;;
        stop) shards_stop ;;
        *)
            echo "usage: scripts/shards.sh start [N] | stop   (SHARDS_BASE=$SHARDS_BASE)" >&2
            exit 2
            ;;
    esac
fi
