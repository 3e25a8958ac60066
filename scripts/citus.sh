#!/usr/bin/env bash
# Citus for neardup's tests, demo and benches: builds and installs it for a PostgreSQL, and
# starts a local Citus cluster (a coordinator and N workers) on one machine.
# Citus is AGPL-3.0: a test and runtime dependency only, never linked into neardup, never
# committed here. The source is a release tarball: $CITUS_SRC/citus-VERSION.tar.gz
# (CITUS_SRC defaults to ../shared/vendor next to the repository when present, else
# /work/shared/vendor), checked against $CITUS_SRC/SHA256SUMS (or the checksums below),
# else the release downloaded from github.com/citusdata/citus. Version: CITUS_VERSION, else
# 13.2.2 for PostgreSQL 15 and 14.0.1 for 16-18.
#
# CLI (as root):
#   scripts/citus.sh build PG_CONFIG            build and install Citus (skipped when the
#                                               installed citus.so is the cached build's)
#   scripts/citus.sh start PG_CONFIG DIR PORT N coordinator on PORT, workers on PORT+1..PORT+N
#   scripts/citus.sh stop DIR                   stops every node under DIR, removes DIR
# Sourced: citus_build PG_CONFIG; citus_start PG_CONFIG DIR PORT N [extra conf lines...];
#   citus_stop DIR; citus_psql I [psql args...] runs psql on node I (0 = coordinator) of the
#   cluster last started (or of CITUS_DIR/CITUS_PORT), stopping at the first error.
#   citus_start leaves PGHOST/PGPORT/PGUSER/PGDATABASE naming the coordinator.
# The nodes are owned by `postgres` (PostgreSQL refuses root), have their unix sockets in
# /tmp and listen on localhost (Citus connects to its nodes by host name), trust
# authentication, shared_preload_libraries = 'citus,neardup' (Citus must come first); both
# extensions are created on every node and the workers registered with the coordinator.
# neardup must already be installed (scripts/install.sh).
set -euo pipefail

CITUS_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CITUS_CACHE=${CITUS_CACHE:-/var/cache/neardup/citus}
# sha256 of the GitHub release tarballs (github.com/citusdata/citus/archive/refs/tags/vX.tar.gz)
declare -A CITUS_SHA256=(
    [13.2.2]=dd2453caec20a830e5e63f1def5c5a98cb6f57ae510407cdcd800916fcdab430
    [14.0.1]=acfa9a77cd84a8e1edab26cca4a71355f39c910c01586da89560e0240d4b05ba
)

citus_major() { "$1" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/'; }

# citus_version PG_CONFIG: the Citus release for that major
citus_version() {
    local major
    major=$(citus_major "$1")
    if [[ -n ${CITUS_VERSION:-} ]]; then echo "$CITUS_VERSION"; return; fi
    case $major in
        15) echo 13.2.2 ;;
        16 | 17 | 18) echo 14.0.1 ;;
        *) echo "citus.sh: no Citus release known for PostgreSQL $major" >&2; return 1 ;;
    esac
}

# citus_source_dir: where the tarballs are looked for
citus_source_dir() {
    if [[ -n ${CITUS_SRC:-} ]]; then echo "$CITUS_SRC"
    elif [[ -d $CITUS_SCRIPTS/../../shared/vendor ]]; then (cd "$CITUS_SCRIPTS/../../shared/vendor" && pwd)
    else echo /work/shared/vendor; fi
}

# citus_tarball VERSION DEST: the checked release tarball copied to DEST
citus_tarball() {
    local version=$1 dest=$2 src want got
    src=$(citus_source_dir)/citus-$version.tar.gz
    want=${CITUS_SHA256[$version]:-}
    if [[ -f $(dirname "$src")/SHA256SUMS ]] && grep -q " citus-$version.tar.gz$" "$(dirname "$src")/SHA256SUMS"; then
        want=$(grep " citus-$version.tar.gz$" "$(dirname "$src")/SHA256SUMS" | cut -d' ' -f1)
    fi
    if [[ -f $src ]]; then
        cp "$src" "$dest"
    else
        echo "citus.sh: no $src; downloading the release from GitHub" >&2
        curl -fsSL -o "$dest" "https://github.com/citusdata/citus/archive/refs/tags/v$version.tar.gz"
    fi
    got=$(sha256sum "$dest" | cut -d' ' -f1)
    if [[ -z $want ]]; then
        echo "citus.sh: no checksum known for citus-$version.tar.gz (sha256 $got), not verified" >&2
    elif [[ $got != "$want" ]]; then
        echo "citus.sh: citus-$version.tar.gz has sha256 $got, expected $want" >&2
        return 1
    fi
}

# citus_build PG_CONFIG: builds Citus for that server and installs it, each file renamed
# into place; skipped when the installed citus.so is the one the cache's stamp records.
citus_build() {
    local pg_config=$1 version major key work stamp lib src
    version=$(citus_version "$pg_config")
    major=$(citus_major "$pg_config")
    key=$version-pg$major
    work=$CITUS_CACHE/$key
    stamp=$work/stamp
    lib=$("$pg_config" --pkglibdir)/citus.so
    mkdir -p "$work"
    exec 9>"$CITUS_CACHE/$key.lock"
    flock 9
    if [[ -f $stamp && -f $lib && $(cat "$stamp") == "$(sha256sum "$lib" | cut -d' ' -f1) $("$pg_config" --version)" ]]; then
        echo "citus.sh: Citus $version for PostgreSQL $major already installed ($lib)"
        flock -u 9
        return
    fi
    if [[ ! -f $work/built ]]; then
        local need=()
        for pkg in liblz4-dev libzstd-dev libkrb5-dev make gcc; do
            dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need+=("$pkg")
        done
        if ((${#need[@]})); then
            echo "citus.sh: installing ${need[*]}"
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || {
                apt-get update -qq
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
            }
        fi
        rm -rf "$work/src" "$work/stage"
        mkdir -p "$work/src"
        citus_tarball "$version" "$work/citus.tar.gz"
        tar xzf "$work/citus.tar.gz" -C "$work/src" --strip-components=1
        src=$work/src
        # PostgreSQL 15.20 (and later 15 minors) export have_createdb_privilege, which Citus
        # 13.2.2 defines static inline for 15: skip Citus's copy when the server declares it.
        if grep -qs 'extern bool have_createdb_privilege' "$("$pg_config" --includedir-server)/commands/dbcommands.h" &&
            grep -q '^have_createdb_privilege(void)$' "$src/src/include/pg_version_compat.h"; then
            awk '
                pending != "" { if ($0 == "have_createdb_privilege(void)") { print "#if 0 /* exported by this PostgreSQL (citus.sh) */"; skipping = 1 } print pending; pending = "" }
                $0 == "static inline bool" { pending = $0; next }
                { print }
                skipping && $0 == "}" { print "#endif"; skipping = 0 }
            ' "$src/src/include/pg_version_compat.h" >"$src/src/include/pg_version_compat.h.new"
            mv "$src/src/include/pg_version_compat.h.new" "$src/src/include/pg_version_compat.h"
            echo "citus.sh: skipped Citus's own have_createdb_privilege (this PostgreSQL exports it)"
        fi
        echo "citus.sh: building Citus $version for PostgreSQL $major in $src (about 5 min on 2 cores)"
        local t0=$SECONDS
        (
            cd "$src"
            ./configure PG_CONFIG="$pg_config" --without-libcurl >"$work/configure.log" 2>&1 ||
                { tail -30 "$work/configure.log" >&2; exit 1; }
            make -j"${CITUS_JOBS:-2}" >"$work/make.log" 2>&1 || { grep -m5 -B2 -A5 'error' "$work/make.log" >&2; exit 1; }
            make install DESTDIR="$work/stage" >"$work/install.log" 2>&1 || { tail -30 "$work/install.log" >&2; exit 1; }
        )
        touch "$work/built"
        echo "citus.sh: built in $((SECONDS - t0)) s"
    fi
    # install: each file copied next to its destination, then renamed over it (libraries
    # first, control files last, as scripts/install.sh does for neardup)
    local f dest tmp
    while read -r f; do
        dest=${f#"$work/stage"}
        mkdir -p "$(dirname "$dest")"
        tmp=$(dirname "$dest")/.$(basename "$dest").citus-install.$$
        install -m "$([[ $f == *.so || -x $f ]] && echo 0755 || echo 0644)" "$f" "$tmp"
        mv -f "$tmp" "$dest"
    done < <(find "$work/stage" -type f | awk '{ print (/\.so$/ ? 0 : /\.control$/ ? 2 : 1) " " $0 }' | sort | cut -d' ' -f2-)
    echo "$(sha256sum "$lib" | cut -d' ' -f1) $("$pg_config" --version)" >"$stamp"
    echo "citus.sh: installed Citus $version into $("$pg_config" --pkglibdir)"
    flock -u 9
}

# citus_node_dir I: node I's cluster directory (0 = coordinator)
citus_node_dir() { if [[ $1 == 0 ]]; then echo "$CITUS_DIR/coord"; else echo "$CITUS_DIR/worker$1"; fi; }

citus_psql() {
    local i=$1
    shift
    psql -XqAt -v ON_ERROR_STOP=1 -h /tmp -p $((CITUS_PORT + i)) -U postgres -d postgres "$@"
}

citus_start() {
    local pg_config=$1 dir=$2 port=$3 n=$4 i node bin
    shift 4
    [[ $n =~ ^[0-9]+$ && $port =~ ^[0-9]+$ ]] || { echo "citus_start: PORT and N must be integers" >&2; return 1; }
    bin=$("$pg_config" --bindir)
    export PATH="$bin:$PATH" CITUS_DIR=$dir CITUS_PORT=$port CITUS_PG_BIN=$bin
    [[ -f $("$pg_config" --pkglibdir)/citus.so ]] || { echo "citus_start: no Citus for $pg_config (scripts/citus.sh build $pg_config)" >&2; return 1; }
    citus_stop "$dir"
    mkdir -p "$dir"
    chown postgres: "$dir"
    for ((i = 0; i <= n; i++)); do
        node=$(citus_node_dir "$i")
        sudo -u postgres "$bin/initdb" -D "$node/data" --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
        {
            echo "listen_addresses = 'localhost'"
            echo "unix_socket_directories = '/tmp'"
            echo "port = $((port + i))"
            echo "shared_preload_libraries = 'citus,neardup'"
            # Citus commits a write over several nodes with two-phase commit
            echo "max_prepared_transactions = 100"
            # the nodes talk over localhost without TLS
            echo "citus.node_conninfo = 'sslmode=disable'"
            echo "shared_buffers = 64MB"
            for line in "$@"; do echo "$line"; done
        } >>"$node/data/postgresql.conf"
        sudo -u postgres "$bin/pg_ctl" -D "$node/data" -l "$node/server.log" -w start >/dev/null
        citus_psql "$i" -c "CREATE EXTENSION citus" -c "CREATE EXTENSION neardup" >/dev/null
    done
    citus_psql 0 -c "SELECT citus_set_coordinator_host('localhost', $port)" >/dev/null
    for ((i = 1; i <= n; i++)); do
        citus_psql 0 -c "SELECT citus_add_node('localhost', $((port + i)))" >/dev/null
    done
    export PGHOST=/tmp PGPORT=$port PGUSER=postgres PGDATABASE=postgres
}

citus_stop() {
    local dir=$1 node bin=${CITUS_PG_BIN:-}
    [[ -d $dir ]] || return 0
    for node in "$dir"/coord "$dir"/worker*; do
        [[ -f $node/data/postmaster.pid ]] || continue
        # the server that wrote the data directory stops it
        bin=$(dirname "$(readlink -f "/proc/$(sed -n 1p "$node/data/postmaster.pid")/exe" 2>/dev/null || echo "${CITUS_PG_BIN:-/usr/lib/postgresql/15/bin}/postgres")")
        sudo -u postgres "$bin/pg_ctl" -D "$node/data" -m fast -w stop >/dev/null || true
    done
    rm -rf "$dir"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    case ${1:-} in
        build)
            [[ $# == 2 ]] || { echo "usage: scripts/citus.sh build PG_CONFIG" >&2; exit 2; }
            citus_build "$2"
            ;;
        start)
            [[ $# -ge 5 ]] || { echo "usage: scripts/citus.sh start PG_CONFIG DIR PORT N" >&2; exit 2; }
            citus_start "$2" "$3" "$4" "$5"
            echo "coordinator: psql -h /tmp -p $4 -U postgres postgres"
            for ((i = 1; i <= $5; i++)); do echo "worker $i:    psql -h /tmp -p $(($4 + i)) -U postgres postgres"; done
            ;;
        stop)
            [[ $# == 2 ]] || { echo "usage: scripts/citus.sh stop DIR" >&2; exit 2; }
            citus_stop "$2"
            ;;
        *)
            echo "usage: scripts/citus.sh build PG_CONFIG | start PG_CONFIG DIR PORT N | stop DIR" >&2
            exit 2
            ;;
    esac
fi
