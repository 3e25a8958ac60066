#!/usr/bin/env bash
# Builds neardup (release) for the PostgreSQL major version that the given pg_config reports
# and stages every file an installation needs under target/release/neardup-pgNN, laid out
# by their absolute destination paths (what `cargo pgrx package` produces), plus the frozen
# install scripts of earlier releases (sql/neardup--X.sql) so that CREATE EXTENSION neardup
# VERSION 'X' works. Prints the staging directory. Used by install.sh and package.sh.
# Usage: scripts/stage.sh PG_CONFIG
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${1:?usage: stage.sh PG_CONFIG}
export PATH="$HOME/.cargo/bin:$PATH"
major=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
case $major in
15 | 16 | 17 | 18) ;;
*) echo "stage.sh: PostgreSQL $major is not supported (15 to 18 are)" >&2; exit 1 ;;
esac
STAGE=$ROOT/target/release/neardup-pg$major
# Each major's build in a target directory of its own: cargo keeps one library of a profile,
# so a build for one major replaced the other's, and test.sh, which builds for 15, 18, 15, 16
# and 15 in turn, built 15 three times.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}/pg$major

cd "$ROOT"
# a fresh staging tree, so nothing removed from the sources lingers in the installation;
# cargo pgrx picks the pgNN feature from pg_config's version
rm -rf "$STAGE"
cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$STAGE" >&2

extdir=$("$PG_CONFIG" --sharedir)/extension
[[ -f $STAGE$extdir/neardup.control ]] || { echo "stage.sh: no control file under $STAGE$extdir" >&2; exit 1; }
for frozen in sql/neardup--*.sql; do
    name=$(basename "$frozen")
    # upgrade scripts (neardup--A--B.sql) are staged by cargo pgrx package already
    [[ $name == neardup--*--*.sql ]] || cp "$frozen" "$STAGE$extdir/$name"
done
echo "$STAGE"
