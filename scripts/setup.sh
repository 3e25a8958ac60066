#!/usr/bin/env bash
# Installs what building and testing neardup needs, once: Debian packages, cargo-pgrx 0.18.0
# and its PostgreSQL 15 configuration. Every step checks first, so a second run is quick.
# Sourced by demo.sh and test.sh; run as root on Debian 12.
set -euo pipefail

PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
export PATH="$HOME/.cargo/bin:$PATH"

need_packages=()
for pkg in postgresql-15 postgresql-server-dev-15 libclang-dev clang sudo; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need_packages+=("$pkg")
done
if ((${#need_packages[@]})); then
    echo "== installing ${need_packages[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_packages[@]}" >/dev/null
fi

if ! cargo pgrx --version 2>/dev/null | grep -q "0.18.0"; then
    echo "== installing cargo-pgrx 0.18.0 (a few minutes, once)"
    cargo install cargo-pgrx --version 0.18.0 --locked
fi

if ! grep -qs "^pg15 *= *\"$PG_CONFIG\"" "${PGRX_HOME:-$HOME/.pgrx}/config.toml"; then
    cargo pgrx init --pg15 "$PG_CONFIG"
fi

# psycopg 3 for the model-based index test (tests/model/model.py)
if ! python3 -c "import psycopg" 2>/dev/null; then
    echo "== installing psycopg 3"
    python3 -m pip install -q 'psycopg[binary]' 2>/dev/null ||
        python3 -m pip install -q --break-system-packages 'psycopg[binary]' 2>/dev/null || {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-psycopg >/dev/null
    }
fi
