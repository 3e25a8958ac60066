#!/usr/bin/env bash
# A private copy of a PostgreSQL installation, for tests that install a neardup library
# (`cargo pgrx test` writes it in place, a frozen release's build must not replace the
# user's): the installation's bindir, pkglibdir and sharedir copied under DEST at their own
# absolute paths (DEST/usr/lib/postgresql/15/bin, ...). PostgreSQL finds its library and
# share directories relative to the running executable, so the copied pg_config, initdb and
# postgres use the copied directories, and a server a user runs from the original never
# sees a library written into the copy. Headers and shared libraries the binaries load
# are linked, not copied (nothing writes them). The copy is refreshed from the original on
# every call (files the copy gained, such as an installed neardup, stay until then).
# Usage: scripts/private_pg.sh PG_CONFIG DEST   prints the private pg_config's path
set -euo pipefail
PG_CONFIG=$1 DEST=$2

fail() { echo "private_pg: $*" >&2; exit 1; }
[[ -x $PG_CONFIG ]] || fail "no pg_config at $PG_CONFIG"
[[ $DEST == /* && $DEST != / ]] || fail "DEST must be an absolute path other than /"
bindir=$("$PG_CONFIG" --bindir)
[[ $bindir != "$DEST"/* ]] || fail "$PG_CONFIG is already a private copy under $DEST"

for dir in "$bindir" "$("$PG_CONFIG" --pkglibdir)" "$("$PG_CONFIG" --sharedir)"; do
    # anew: what the copy gained (an earlier test's library, extension scripts) goes
    rm -rf "$DEST$dir"
    mkdir -p "$(dirname "$DEST$dir")"
    cp -a "$dir" "$DEST$dir"
done
link() { # PATH: DEST/PATH becomes a symbolic link to PATH
    [[ -e $1 ]] || return 0
    [[ -L $DEST$1 ]] || { mkdir -p "$(dirname "$DEST$1")"; ln -s "$1" "$DEST$1"; }
}
link "$("$PG_CONFIG" --includedir-server)"
# Libraries the binaries find relative to themselves ($ORIGIN in their RPATH or RUNPATH, as
# in the pgserver wheel's build of 16): the same relative path must lead to them in the copy.
for bin in "$bindir"/*; do
    readelf -d "$bin" 2>/dev/null | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p'
done | tr ':' '\n' | sed -n 's|^\$ORIGIN/||p' | sort -u | while read -r rel; do
    link "$(realpath -m "$bindir/$rel")"
done
private=$DEST$bindir/pg_config
[[ $("$private" --pkglibdir) == "$DEST"* ]] ||
    fail "$private reports pkglibdir $("$private" --pkglibdir): this installation is not relocatable"
echo "$private"
