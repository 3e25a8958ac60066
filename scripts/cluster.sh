#!/usr/bin/env bash
# A throwaway PostgreSQL cluster owned by `postgres` (PostgreSQL refuses to run as root),
# reachable only through a unix socket in its own folder under /tmp, with neardup preloaded
# (its planner hook lets `hamming(a, b) <= k` use a hamming index). The server is the one
# $PG_CONFIG names (the system PostgreSQL 15 by default; scripts/pg_server.sh provides the
# others), and its client programs come first on PATH. Sourced, then:
#   cluster_start DIR [extra postgresql.conf lines...]   sets PGHOST/PGPORT/PGUSER for psql
#   cluster_stop DIR
#   cluster_crash DATADIR                                 kill -9 of the whole cluster
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

# cluster_kill_command POSTMASTER_PID: a shell command (run as root or `postgres`, also by
# COPY TO PROGRAM from inside) that crashes the cluster at once. The postmaster is stopped
# first so that it forks nothing the kill would miss: a list of children taken beforehand
# missed a merge worker started since, which kept the shared memory (and its merge) going
# after the crash, and the restart was refused.
cluster_kill_command() { echo "kill -STOP $1; pkill -9 -P $1; kill -9 $1"; }

# cluster_wait_gone DATADIR POSTMASTER_PID: until the postmaster is gone and no process
# still holds the cluster's shared memory (the restart would be refused), at most 60 s.
cluster_wait_gone() {
    local shmid
    shmid=$(sed -n 7p "$1/postmaster.pid" | awk '{print $2}')
    for _ in $(seq 600); do
        if ! kill -0 "$2" 2>/dev/null &&
            ! ipcs -m -i "$shmid" 2>/dev/null | grep -q 'nattch=[1-9]'; then
            return 0
        fi
        sleep 0.1
    done
    echo "cluster_wait_gone: the processes of $1 still run 60 s after the kill" >&2
    return 1
}

# cluster_crash DATADIR: kill -9 of the postmaster and all its children, then waits for
# them to be gone.
cluster_crash() {
    local postmaster
    postmaster=$(head -1 "$1/postmaster.pid")
    bash -c "$(cluster_kill_command "$postmaster")" 2>/dev/null || true
    cluster_wait_gone "$1" "$postmaster"
}

# Builds the extension (release) and installs it into $PG_CONFIG's server, each file
# renamed into place so that running servers never see a half-written library.
install_extension() {
    "$NEARDUP_SCRIPTS/install.sh" >/dev/null
}
