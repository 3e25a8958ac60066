#!/usr/bin/env bash
# Installs what building and testing neardup needs, once: Debian packages, cargo-pgrx 0.18.0
# and its configuration for the PostgreSQL majors in $NEARDUP_PG_MAJORS ("15" unless set;
# test.sh asks for "15 16 18", whose servers scripts/pg_server.sh builds or fetches into
# /opt/neardup-pg once). Every step checks first, so a second run is quick.
# Sourced by demo.sh and test.sh; run as root on Debian 12.
set -euo pipefail

SYSTEM_PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
NEARDUP_PG_MAJORS=${NEARDUP_PG_MAJORS:-15}
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

# every major's pg_config in pgrx's configuration (`cargo pgrx test pgNN` needs it); pgrx
# init rewrites the file, so it is given the majors already configured too
pgrx_config=${PGRX_HOME:-$HOME/.pgrx}/config.toml
declare -A pgrx_majors=([15]=$SYSTEM_PG_CONFIG)
for major in $NEARDUP_PG_MAJORS; do
    [[ $major == 15 ]] || pgrx_majors[$major]=$("$(dirname "${BASH_SOURCE[0]}")/pg_server.sh" "$major")
done
while read -r major path; do
    [[ -n ${pgrx_majors[$major]:-} || ! -x $path ]] || pgrx_majors[$major]=$path
done < <(sed -nE 's/^pg([0-9]+) *= *"(.*)"$/\1 \2/p' "$pgrx_config" 2>/dev/null)
pgrx_init=()
missing=0
for major in "${!pgrx_majors[@]}"; do
    pgrx_init+=("--pg$major" "${pgrx_majors[$major]}")
    grep -qs "^pg$major *= *\"${pgrx_majors[$major]}\"" "$pgrx_config" || missing=1
done
((missing == 0)) || cargo pgrx init "${pgrx_init[@]}"

# pdqhash (Meta's PDQ C++), Pillow, numpy and scikit-image's sample pictures for the PDQ
# reference check (tests/integration/check_pdq_reference.sh)
if ! python3 -c "import pdqhash, PIL, numpy, skimage" 2>/dev/null; then
    echo "== installing pdqhash, Pillow, numpy, scikit-image"
    python3 -m pip install -q pdqhash Pillow numpy scikit-image 2>/dev/null ||
        python3 -m pip install -q --break-system-packages pdqhash Pillow numpy scikit-image
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
