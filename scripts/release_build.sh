#!/usr/bin/env bash
# Builds the library of an earlier release (its commit in this repository's history) for the
# PostgreSQL that PG_CONFIG names, and stages its files the way `cargo pgrx package` lays
# them out (by absolute destination path), in a cache that outlives the clone: a test that
# has a release write indexes for the newest library to read (check_release_indexes) builds
# each release once per machine. Debug builds: they take a third of a release build's time
# and write the same pages. Nothing is installed anywhere. Prints the staging directory.
# Usage: scripts/release_build.sh COMMIT PG_CONFIG
#        (NEARDUP_RELEASE_CACHE: the cache, /var/cache/neardup/releases by default)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COMMIT=${1:?usage: release_build.sh COMMIT PG_CONFIG}
PG_CONFIG=${2:?usage: release_build.sh COMMIT PG_CONFIG}
CACHE=${NEARDUP_RELEASE_CACHE:-/var/cache/neardup/releases}
export PATH="$HOME/.cargo/bin:$PATH"

commit=$(git -C "$ROOT" rev-parse --verify "$COMMIT^{commit}")
major=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
stage=$CACHE/$commit-pg$major
if [[ ! -f $stage/.built ]]; then
    src=$CACHE/src/$commit
    rm -rf "$src" "$stage"
    mkdir -p "$src"
    git -C "$ROOT" archive "$commit" | tar -x -C "$src"
    # a target directory of its own: cargo names a path dependency's artifacts by its path
    # in the workspace, so releases sharing one would link each other's neardup-core
    (cd "$src" && CARGO_TARGET_DIR=$src/target cargo pgrx package --debug \
        --pg-config "$PG_CONFIG" --out-dir "$stage") >&2
    rm -rf "$src"
    touch "$stage/.built"
fi
echo "$stage"
