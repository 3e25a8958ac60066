#!/usr/bin/env bash
# Provides a PostgreSQL server of a given major version for building and testing neardup,
# and prints the path of its pg_config. Built servers are cached under $NEARDUP_PG_ROOT
# (/opt/neardup-pg by default), so only the first run on a machine builds anything.
#   15      the system packages (postgresql-15, postgresql-server-dev-15)
#   18, 13  Debian's source packages (sid, bullseye), fetched through a private sources
#           list and built with --without-icu, plus the contrib modules the tests use
#   16      the relocatable PostgreSQL 16.2 inside PyPI's pgserver 0.1.4 wheel (no contrib
#           modules beyond what it bundles: no postgres_fdw, no pageinspect)
# 17 and 14: no source or headers are reachable from this machine's registries; asking for
# them is an error. Usage: scripts/pg_server.sh MAJOR   (as root; prints the pg_config path)
set -euo pipefail
major=${1:?usage: pg_server.sh MAJOR}
# the contrib modules the integration checks use, built beside a server built from source
CONTRIB="postgres_fdw pageinspect pg_freespacemap pg_visibility amcheck"
PG_ROOT=${NEARDUP_PG_ROOT:-/opt/neardup-pg}
prefix=$PG_ROOT/$major
log() { echo "pg_server.sh: $*" >&2; }

need_debian() { # PACKAGE...: installs what is missing
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
    ((${#missing[@]} == 0)) && return
    log "installing ${missing[*]}"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

from_debian_source() { # SUITE: builds postgresql-$major from that suite's source package
    local suite=$1 work=$PG_ROOT/.build-$major
    need_debian bison flex build-essential libreadline-dev zlib1g-dev libssl-dev pkg-config dpkg-dev
    rm -rf "$work"
    mkdir -p "$work/lists/partial"
    echo "deb-src http://deb.debian.org/debian $suite main" >"$work/sources.list"
    local apt_opts=(-o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=-"
        -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
    log "fetching postgresql-$major from Debian $suite"
    apt-get "${apt_opts[@]}" update -qq >&2
    (cd "$work" && apt-get "${apt_opts[@]}" source --download-only "postgresql-$major" >&2)
    local orig
    orig=$(ls "$work"/postgresql-"$major"_*.orig.tar.* | head -1)
    mkdir "$work/src"
    tar -xf "$orig" -C "$work/src" --strip-components=1
    log "building PostgreSQL $major into $prefix (a few minutes)"
    rm -rf "$prefix"
    (
        cd "$work/src"
        ./configure --prefix="$prefix" --without-icu --with-openssl >"$work/configure.log" 2>&1 ||
            { tail -30 "$work/configure.log" >&2; exit 1; }
        make -j"$(nproc)" -s >"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }
        make -s install >>"$work/make.log" 2>&1
        for module in $CONTRIB; do
            make -s -C "contrib/$module" install >>"$work/make.log" 2>&1
        done
        # pg_isolation_regress and pg_regress, for the isolation specs
        make -s -C src/test/isolation install >>"$work/make.log" 2>&1 || true
    )
    rm -rf "$work"
}

from_pgserver_wheel() { # PostgreSQL 16.2 from PyPI's pgserver 0.1.4
    local work=$PG_ROOT/.build-$major
    need_debian unzip
    rm -rf "$work"
    mkdir -p "$work"
    log "fetching pgserver 0.1.4 from PyPI"
    python3 -m pip download -q --no-deps --only-binary=:all: --dest "$work" \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 'pgserver==0.1.4' >&2
    local wheel
    wheel=$(ls "$work"/pgserver-0.1.4-*.whl | head -1)
    # the whole wheel: its binaries find their libraries in pgserver.libs/ beside them
    mkdir -p "$prefix.tmp"
    unzip -q "$wheel" -d "$prefix.tmp"
    chmod -R a+rX "$prefix.tmp"
    chmod a+x "$prefix.tmp"/pgserver/pginstall/bin/*
    rm -rf "$prefix"
    mv "$prefix.tmp" "$prefix"
    rm -rf "$work"
}

case $major in
15)
    need_debian postgresql-15 postgresql-server-dev-15
    echo /usr/lib/postgresql/15/bin/pg_config
    exit 0
    ;;
16) pg_config=$prefix/pgserver/pginstall/bin/pg_config ;;
13 | 18) pg_config=$prefix/bin/pg_config ;;
*)
    log "PostgreSQL $major: no source or headers are reachable here (see README, Supported versions)"
    exit 2
    ;;
esac

complete() { # the server answers to its major, and has its contrib modules if built here
    [[ -x $pg_config ]] && "$pg_config" --version | grep -q "PostgreSQL $major\." || return 1
    [[ $major == 16 ]] && return 0
    local module
    for module in $CONTRIB; do
        [[ -f $("$pg_config" --sharedir)/extension/$module.control ]] || return 1
    done
}
if ! complete; then
    mkdir -p "$PG_ROOT"
    case $major in
    16) from_pgserver_wheel ;;
    18) from_debian_source sid ;;
    13) from_debian_source bullseye ;;
    esac
fi
"$pg_config" --version | grep -q "PostgreSQL $major\." || { log "no working pg_config for $major"; exit 1; }
echo "$pg_config"
