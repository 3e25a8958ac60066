#!/usr/bin/env bash
# A throwaway PostgreSQL cluster owned by `postgres` (PostgreSQL refuses to run as root),
# reachable only through a unix socket in its own folder under /tmp, with neardup preloaded
# (its planner hook lets `hamming(a, b) <= k` use a hamming index). The server is the one
# $PG_CONFIG names (the system PostgreSQL 15 by default; scripts/pg_server.sh provides the
# others), and its client programs come first on PATH. Sourced, then:
#   cluster_start DIR [extra postgresql.conf lines...]   sets PGHOST/PGPORT/PGUSER for psql
#   cluster_stop DIR
set -euo pipefail

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
export PG_CONFIG
PG_BIN=$("$PG_CONFIG" --bindir)
PG_MAJOR=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
export PATH="$PG_BIN:$PATH"
# the setting that pushes queries into parallel workers for tests (renamed in 16)
NEARDUP_FORCE_PARALLEL=force_parallel_mode
((PG_MAJOR < 16)) || NEARDUP_FORCE_PARALLEL=debug_parallel_query
export NEARDUP_FORCE_PARALLEL
NEARDUP_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

cluster_start() {
    local dir=$1
    shift
    cluster_stop "$dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    chown postgres: "$dir"
    sudo -u postgres "$PG_BIN/initdb" -D "$dir/data" --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$dir'"
        echo "port = 5432"
        echo "shared_preload_libraries = 'neardup'"
        for line in "$@"; do echo "$line"; done
    } >>"$dir/data/postgresql.conf"
    sudo -u postgres "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
    export PGHOST=$dir PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
}

cluster_stop() {
    local dir=$1
    if [[ -f "$dir/data/postmaster.pid" ]]; then
        sudo -u postgres "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    fi
}

# Builds the extension (release) and installs it into $PG_CONFIG's server, each file
# renamed into place so that running servers never see a half-written library.
install_extension() {
    "$NEARDUP_SCRIPTS/install.sh" >/dev/null
}
