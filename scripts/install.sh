#!/usr/bin/env bash
# Builds neardup (release) for the PostgreSQL major version that $PG_CONFIG reports (the
# system PostgreSQL 15 when PG_CONFIG is unset) and installs it there without ever
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
export PATH="$HOME/.cargo/bin:$PATH"
cd "$ROOT"
STAGE=$(scripts/stage.sh "$PG_CONFIG")

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
