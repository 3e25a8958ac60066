#!/usr/bin/env bash
# neardup's whole test suite, every layer, on every PostgreSQL major this machine has (15,
# 16, 18; 17 is type-checked only, see README); .ci/run calls exactly this. Run as root on
# Debian 12: ./test.sh   (installs what is missing first, like demo.sh, and builds or
# fetches the 16 and 18 servers into /opt/neardup-pg once)
#   1. lint:        cargo fmt --check, cargo clippy for 15, 16 and 18 (warnings are errors),
#                   a type check against 17's bindings
#   2. core:        plain cargo test of the pure-Rust core (unit, golden, 1M-input property, memory),
#                   optimized (Cargo.toml) with debug assertions and overflow checks on
#   3. SQL:         cargo pgrx test (pg_test functions inside a real backend) on 15, 16, 18,
#                   each on a private copy of the server (a user's server never loads it)
#   4. integration: release build in a real cluster: regression files, parallel scan,
#                   100 MB text, the README cookbook and rendering, the demo, the upgrade
#                   from 0.1.0, the indexes each earlier release's library wrote (built
#                   once per machine) served by this one, an install over a running server, cancellation, memory
#                   bounds, an install in a schema off the search_path, the Python package
#                   (python/) against the server; for the hamming
#                   index a model-based test (tests/model), isolation specs
#                   (tests/isolation), crash, standby and long-snapshot checks, the
#                   background merge workers; the Debian package installed without cargo; neardup on a
#                   Citus coordinator and 2 workers (Citus built once by scripts/citus.sh);
#                   the longest checks, each in a cluster of its own, run beside the others
#   5. other majors: on 18 and 16, the integration checks that do not depend on the major's
#                   own behaviour being 15's, and pg_upgrade from 15
# Third-party crates are built once per machine and kept in /var/cache/neardup/target
# (scripts/build_cache.sh; about 6 GB); neardup's own crates are built from this clone.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")" && pwd)
cd "$ROOT"
NEARDUP_PG_MAJORS="15 16 18"
# A full run writes about 8 GB of builds (/var/cache/neardup/target) and up to 8 GB of
# clusters in /tmp; a disk that fills midway fails dozens of tests with "No space left on
# device" (a PANIC in the middle of the SQL tests): say so before starting instead.
free_gb() { df -P --block-size=1G "$1" | awk 'NR == 2 { print $4 }'; }
for dir in "$ROOT" /tmp /var/cache; do
    (($(free_gb "$dir") >= 20)) ||
        { echo "test.sh: $(free_gb "$dir") GB free for $dir, a full run needs about 20 GB" >&2; exit 1; }
done
source scripts/setup.sh
PG16=$(scripts/pg_server.sh 16)
PG18=$(scripts/pg_server.sh 18)
# third-party crates built once per machine, kept in /var/cache/neardup/target
source scripts/build_cache.sh

section() { echo "== $1 (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"; }
section "1. lint"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
for major in 16 18; do
    cargo clippy -p neardup --all-targets --quiet --no-default-features --features "pg$major" -- -D warnings
done
scripts/check_unbuilt.sh 17
# the docs: relative links and anchors resolve, tables and fences render, plots match their data
scripts/check_links.py
tests/integration/check_readme_renders.sh
scripts/check_plots.py
# the Python module: a cargo workspace of its own (python/Cargo.toml says why)
(cd python && cargo fmt --check && cargo clippy --all-targets --quiet -- -D warnings)

section "2. core (cargo test)"
# (the dev profile, whose core is built with opt-level 3: overflow checks stay on, and it
# builds in half the time of the release profile's fat LTO)
cargo test -p neardup-core

section "3. SQL (cargo pgrx test)"
# cargo pgrx test writes its debug library over the server's own in place, which kills a
# running server that preloads neardup: it runs against a private copy of each server
# (scripts/private_pg.sh), named in a pgrx home of its own, and the servers' own libraries
# must be untouched after it.
PGRX_PRIVATE_HOME=/tmp/neardup-pgrx-home
mkdir -p "$PGRX_PRIVATE_HOME"
declare -A SERVER_PG_CONFIG=([15]=/usr/lib/postgresql/15/bin/pg_config [16]=$PG16 [18]=$PG18)
server_libraries() { for major in 15 16 18; do
    sha256sum "$("${SERVER_PG_CONFIG[$major]}" --pkglibdir)/neardup.so" 2>/dev/null || echo "$major: none"
done; }
libraries_before=$(server_libraries)
{
    echo "[configs]"
    for major in 15 16 18; do
        echo "pg$major = \"$(scripts/private_pg.sh "${SERVER_PG_CONFIG[$major]}" /tmp/neardup-private-pg)\""
    done
} >"$PGRX_PRIVATE_HOME/config.toml"
for major in 15 16 18; do
    PGDATA_TEST=/tmp/neardup-pgrx-test-$major
    mkdir -p "$PGDATA_TEST"
    chown postgres: "$PGDATA_TEST"
    PGRX_HOME=$PGRX_PRIVATE_HOME cargo pgrx test "pg$major" --runas postgres --pgdata "$PGDATA_TEST"
done
[[ $(server_libraries) == "$libraries_before" ]] ||
    { echo "test.sh: cargo pgrx test changed a server's own neardup library" >&2; exit 1; }

section "4. integration (PostgreSQL 15)"
tests/integration/run.sh

# On the other majors: what their servers change under neardup (WAL replay, crash recovery,
# cancellation, memory, parallel workers, DDL) and what a user of them runs (the cookbook,
# pg_upgrade from 15, the package). 16 is pgserver's build, with no pageinspect: the
# crash, standby and merge worker checks, which read the metapage with it, run on 18 only.
# check_pg_upgrade goes last: it builds the release for 15, and cargo keeps one release
# library, so a check after it that builds for the major again (check_package) would wait
# for the whole build a second time.
COMMON="check_readme_cookbook check_cancellation check_memory_bounds check_parallel_own_rows \
check_held_rows_ddl check_any_schema check_package"
section "5. integration (PostgreSQL 18)"
PG_CONFIG=$PG18 NEARDUP_CHECKS="$COMMON check_index_crash check_index_standby check_merge_worker check_merge_xids check_citus check_pg_upgrade" \
    NEARDUP_SIDE_CHECKS="check_index_standby" tests/integration/run.sh
section "5. integration (PostgreSQL 16)"
PG_CONFIG=$PG16 NEARDUP_CHECKS="$COMMON check_pg_upgrade" tests/integration/run.sh
section "done"
