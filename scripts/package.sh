#!/usr/bin/env bash
# Builds neardup for the PostgreSQL major version that $PG_CONFIG reports (the system 15 by
# default) and packages it, so that a database host needs no Rust toolchain:
#   target/packages/postgresql-NN-neardup_VERSION_amd64.deb
#       PGDG's naming and layout (/usr/lib/postgresql/NN/lib, /usr/share/postgresql/NN/
#       extension), depending on the server package postgresql-NN
#   target/packages/neardup-VERSION-pgNN-linux-amd64.tar.gz
#       the same files as lib/ and extension/ and an install.sh that copies them (renamed
#       into place) into the directories a given pg_config reports, for servers laid out
#       otherwise
# Prints the two paths. Usage: [PG_CONFIG=...] scripts/package.sh   (as root)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
OUT=$ROOT/target/packages
cd "$ROOT"

STAGE=$(scripts/stage.sh "$PG_CONFIG")
major=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
staged_lib=$STAGE$("$PG_CONFIG" --pkglibdir)
staged_ext=$STAGE$("$PG_CONFIG" --sharedir)/extension
version=$(sed -nE "s/^default_version = '([0-9.]+)'$/\1/p" "$staged_ext/neardup.control")
[[ -n $version ]] || { echo "package.sh: no default_version in the staged neardup.control" >&2; exit 1; }
[[ -f $staged_lib/neardup.so ]] || { echo "package.sh: no library in $staged_lib" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$OUT"

# --- Debian package ------------------------------------------------------------------------
name=postgresql-$major-neardup
root=$work/deb
install -d "$root/DEBIAN" "$root/usr/lib/postgresql/$major/lib" \
    "$root/usr/share/postgresql/$major/extension" "$root/usr/share/doc/$name"
install -m 0644 "$staged_lib/neardup.so" "$root/usr/lib/postgresql/$major/lib/"
install -m 0644 "$staged_ext"/neardup* "$root/usr/share/postgresql/$major/extension/"
install -m 0644 README.md "$root/usr/share/doc/$name/README.md"
install -d "$root/usr/share/doc/$name/docs"
install -m 0644 docs/*.md "$root/usr/share/doc/$name/docs/"
strip --strip-unneeded "$root/usr/lib/postgresql/$major/lib/neardup.so"
cat >"$root/DEBIAN/control" <<EOF
Package: $name
Version: $version
Architecture: amd64
Maintainer: neardup developers <neardup@localhost>
Depends: postgresql-$major, libc6 (>= 2.34), libgcc-s1
Section: database
Priority: optional
Installed-Size: $(du -sk "$root/usr" | cut -f1)
Description: near-duplicate detection (simhash, minhash, Bloom signatures) for PostgreSQL $major
 Signature types and functions computing them from text, Hamming and Jaccard operators,
 an exact index access method for Hamming-distance lookups and joins, MinHash LSH,
 and duplicate clusters, all inside PostgreSQL. CREATE EXTENSION neardup; and add
 neardup to shared_preload_libraries for the planner hook (see README.md).
EOF
deb=$OUT/${name}_${version}_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null

# --- plain tarball ---------------------------------------------------------------------------
top=neardup-$version-pg$major-linux-amd64
tree=$work/$top
install -d "$tree/lib" "$tree/extension"
install -m 0755 "$root/usr/lib/postgresql/$major/lib/neardup.so" "$tree/lib/"
install -m 0644 "$staged_ext"/neardup* "$tree/extension/"
install -m 0644 README.md "$tree/README.md"
install -d "$tree/docs"
install -m 0644 docs/*.md "$tree/docs/"
cat >"$tree/install.sh" <<EOF
#!/bin/sh
# Installs neardup $version for PostgreSQL $major into the server that pg_config reports
# (\$PG_CONFIG, or the first pg_config on PATH). Each file is copied under a temporary name
# and renamed into place, so a running server never sees half a file.
set -eu
here=\$(cd "\$(dirname "\$0")" && pwd)
pg_config=\${PG_CONFIG:-pg_config}
found=\$("\$pg_config" --version)
case "\$found" in
"PostgreSQL $major."*) ;;
*) echo "this build of neardup is for PostgreSQL $major; \$pg_config reports \$found" >&2; exit 1 ;;
esac
put() { # FILE DIR MODE
    mkdir -p "\$2"
    cp "\$1" "\$2/.\$(basename "\$1").tmp.\$\$"
    chmod "\$3" "\$2/.\$(basename "\$1").tmp.\$\$"
    mv -f "\$2/.\$(basename "\$1").tmp.\$\$" "\$2/\$(basename "\$1")"
    echo "installed \$2/\$(basename "\$1")"
}
put "\$here/lib/neardup.so" "\$("\$pg_config" --pkglibdir)" 0755
for f in "\$here"/extension/*.sql; do put "\$f" "\$("\$pg_config" --sharedir)/extension" 0644; done
put "\$here/extension/neardup.control" "\$("\$pg_config" --sharedir)/extension" 0644
EOF
chmod 0755 "$tree/install.sh"
tarball=$OUT/$top.tar.gz
tar -C "$work" --owner=0 --group=0 -czf "$tarball" "$top"

echo "$deb"
echo "$tarball"
