#!/usr/bin/env bash
# Builds neardup (release) and installs it into the system PostgreSQL 15 without ever
# exposing a half-written file: each file (library, install and upgrade scripts, control
# file) is copied to a temporary name in its destination directory and then renamed over
# the final name (rename(2) is atomic). A running server that has the old library mapped
# keeps its copy, and one that loads the library meanwhile gets either the old or the new
# file whole; overwriting in place, as `cargo pgrx install` does, can kill it with SIGILL.
# Besides what `cargo pgrx package` stages, the frozen install scripts of earlier releases
# (sql/neardup--X.sql) go in too, so that CREATE EXTENSION neardup VERSION 'X' works.
# Usage: scripts/install.sh   (as root; PG_CONFIG overrides the pg_config used)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
STAGE=$ROOT/target/release/neardup-pg15
export PATH="$HOME/.cargo/bin:$PATH"

cd "$ROOT"
# a fresh staging tree, so nothing removed from the sources lingers in the installation
rm -rf "$STAGE"
cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$STAGE"

extdir=$("$PG_CONFIG" --sharedir)/extension
[[ -f $STAGE$extdir/neardup.control ]] || { echo "install.sh: no control file under $STAGE$extdir" >&2; exit 1; }
for frozen in sql/neardup--*.sql; do
    name=$(basename "$frozen")
    # upgrade scripts (neardup--A--B.sql) are staged by cargo pgrx package already
    [[ $name == neardup--*--*.sql ]] || cp "$frozen" "$STAGE$extdir/$name"
done

tmp=
trap '[[ -z $tmp ]] || rm -f "$tmp"' EXIT
install_file() { # STAGED_FILE: to the same path without the staging prefix
    local dest=${1#"$STAGE"} mode=0644
    [[ $dest == *.so ]] && mode=0755
    mkdir -p "$(dirname "$dest")"
    tmp=$(dirname "$dest")/.$(basename "$dest").neardup-install.$$
    install -m "$mode" "$1" "$tmp"
    mv -f "$tmp" "$dest"
    tmp=
    echo "installed $dest"
}

# The library first, since the new scripts may name symbols only it has, and the control
# file last: its default_version names a script that must already be in place when a
# concurrent CREATE EXTENSION reads it.
mapfile -t libraries < <(find "$STAGE" -type f -name '*.so' | sort)
mapfile -t scripts < <(find "$STAGE" -type f -name '*.sql' | sort)
mapfile -t others < <(find "$STAGE" -type f ! -name '*.so' ! -name '*.sql' ! -name '*.control' | sort)
mapfile -t controls < <(find "$STAGE" -type f -name '*.control' | sort)
((${#libraries[@]} == 1)) || { echo "install.sh: expected one library in $STAGE, found ${#libraries[@]}" >&2; exit 1; }
for f in "${libraries[@]}" "${scripts[@]}" "${others[@]}" "${controls[@]}"; do
    install_file "$f"
done
