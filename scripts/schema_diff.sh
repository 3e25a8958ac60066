#!/usr/bin/env bash
# What the upgrade script sql/neardup--0.1.0--0.2.0.sql has to do: regenerates the install
# script of release 0.1.0 (commit 86fc3ff, in a throwaway git worktree) and that of the
# working tree with `cargo pgrx schema`, and prints the statements only one of them has.
# pgrx orders its output by a hash-driven graph walk, so both are cut into blank-line
# separated blocks, stripped of pgrx's source-location comments and sorted before the diff:
# a changed function shows as its old block (-) and its new block (+).
# Needs no database and no lock (it installs nothing). Exit status: 0 when they are equal.
# Usage: scripts/schema_diff.sh [OLD_COMMIT]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OLD=${1:-86fc3ff}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
WORK=$(mktemp -d /tmp/neardup-schema-diff.XXXXXX)
TREE=$WORK/tree
# kept between runs: the old release builds in seconds once its dependencies are compiled
OLD_TARGET=/tmp/neardup-schema-diff-target

cleanup() {
    git -C "$ROOT" worktree remove --force "$TREE" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

schema() { # DIR TARGET_DIR OUT
    (cd "$1" && CARGO_TARGET_DIR=$2 cargo pgrx schema pg15 --pg-config "$PG_CONFIG" --out "$3" >"$3.log" 2>&1) ||
        { cat "$3.log" >&2; echo "schema_diff: cargo pgrx schema failed in $1" >&2; exit 2; }
}

# normalized FILE: its blocks without pgrx's location comments, sorted, "-- ----" between
normalized() {
    sed -E -e '/^-- (src\/|sql\/|[a-z_0-9]+::|requires:|  )/d' \
        -e '/^\/\* <\/?(begin|end) connected objects> \*\/$/d' -e 's/[ \t]+$//' "$1" |
        awk 'BEGIN { RS = "" } { gsub(/\n/, "\001"); print }' | LC_ALL=C sort |
        tr '\001' '\n' | sed 's/^$/-- ----/'
}

git -C "$ROOT" worktree add --detach "$TREE" "$OLD" >/dev/null 2>&1
if [[ ! -d $OLD_TARGET && -d $ROOT/target/debug ]]; then
    mkdir -p "$OLD_TARGET"
    cp -a "$ROOT/target/debug" "$OLD_TARGET/" # compiled dependencies: minutes saved
fi
schema "$TREE" "$OLD_TARGET" "$WORK/old.sql"
schema "$ROOT" "${CARGO_TARGET_DIR:-$ROOT/target}" "$WORK/new.sql"

# the frozen script must still be what that release generates (its first 4 lines are ours)
if ! diff -q <(normalized "$WORK/old.sql") <(tail -n +5 "$ROOT/sql/neardup--0.1.0.sql" | normalized /dev/stdin) >/dev/null; then
    echo "schema_diff: WARNING: sql/neardup--0.1.0.sql differs from what $OLD generates" >&2
fi

if diff -u --label "neardup $OLD" --label "working tree" <(normalized "$WORK/old.sql") <(normalized "$WORK/new.sql"); then
    echo "schema_diff: the working tree's install script has the same statements as $OLD's"
else
    exit 1
fi
