#!/usr/bin/env bash
# The packages of scripts/package.sh for $PG_CONFIG's major. Both must hold PGDG's layout and
# name. On the system PostgreSQL 15 they are also installed the way a database host would,
# with no cargo on PATH: the Debian package with dpkg -i, then the README's cookbook runs
# against it in a cluster of its own, and dpkg -r removes every file; then the tarball's
# install.sh puts the same files in place, and the extension works again (which leaves the
# installation as the suite's other checks expect it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-package
fail() { echo "check_package: $*" >&2; exit 1; }

mapfile -t built < <("$ROOT/scripts/package.sh")
deb=${built[0]} tarball=${built[1]}
version=$(dpkg-deb -f "$deb" Version)
[[ $(basename "$deb") == "postgresql-$PG_MAJOR-neardup_${version}_amd64.deb" ]] || fail "package name $(basename "$deb")"
[[ $(dpkg-deb -f "$deb" Depends) == *"postgresql-$PG_MAJOR"* ]] || fail "the package does not depend on postgresql-$PG_MAJOR"
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in "./usr/lib/postgresql/$PG_MAJOR/lib/neardup.so" "./usr/share/postgresql/$PG_MAJOR/extension/neardup.control" \
    "./usr/share/postgresql/$PG_MAJOR/extension/neardup--$version.sql" \
    "./usr/share/postgresql/$PG_MAJOR/extension/neardup--0.1.0--0.2.0.sql"; do
    grep -qxF "$path" <<<"$contents" || fail "$(basename "$deb") lacks $path"
done
[[ $(tar -tzf "$tarball" | grep -c -e '/lib/neardup.so$' -e '/extension/neardup.control$' -e '/install.sh$') == 3 ]] ||
    fail "$(basename "$tarball") lacks the library, the control file or install.sh"
if ((PG_MAJOR != 15)); then
    echo "check_package: $(basename "$deb") and $(basename "$tarball") built (installed only on the system 15)"
    exit 0
fi

# From here on, as on a database host: no Rust toolchain anywhere on PATH.
HOST_PATH=/usr/sbin:/usr/bin:/sbin:/bin
! env PATH=$HOST_PATH bash -c 'command -v cargo || command -v rustc' >/dev/null || fail "cargo is on $HOST_PATH"
libdir=$(pg_config --pkglibdir)
extdir=$(pg_config --sharedir)/extension
trap 'cluster_stop "$DIR"' EXIT
env PATH=$HOST_PATH dpkg -i "$deb" >/dev/null
dpkg-query -W -f='${Status}' postgresql-15-neardup | grep -q "ok installed" || fail "dpkg did not install the package"
[[ $(dpkg -S "$libdir/neardup.so") == "postgresql-15-neardup: $libdir/neardup.so" ]] || fail "the library is not the package's"
cluster_start "$DIR"
env PATH=$HOST_PATH:$PG_BIN bash "$ROOT/tests/integration/check_readme_cookbook.sh" || fail "the README cookbook fails on the package"
[[ $(psql -XqAt -d cookbook -c "SELECT extversion FROM pg_extension WHERE extname = 'neardup'") == "$version" ]] ||
    fail "the cookbook did not run on neardup $version"
cluster_stop "$DIR"
env PATH=$HOST_PATH dpkg -r postgresql-15-neardup >/dev/null
left=$(find "$libdir" "$extdir" -name 'neardup*' | head -3)
[[ -z $left ]] || fail "dpkg -r left $left"

# the tarball, for servers outside Debian's layout, restores the installation
rm -rf "$DIR/tarball"
mkdir -p "$DIR/tarball"
tar -xzf "$tarball" -C "$DIR/tarball"
env PATH=$HOST_PATH PG_CONFIG="$PG_CONFIG" sh "$DIR"/tarball/*/install.sh >/dev/null
cluster_start "$DIR"
[[ $(psql -XqAt -c "CREATE EXTENSION neardup" -c "SELECT hamming('0000000000000000'::simhash64, 'ffff000000000000')") == 16 ]] ||
    fail "neardup from the tarball does not work"
echo "check_package: $(basename "$deb") installed without cargo, ran the cookbook, removed cleanly; $(basename "$tarball") installed"
