#!/usr/bin/env bash
# The Python package (python/): built and installed with pip into a fresh virtualenv under
# /tmp, as a user installs it, then its pytest suite against this cluster (libpq's
# PGHOST/PGPORT/PGUSER from run.sh): the core's golden vectors, every signature of 20,000
# texts compared with the server's bit for bit, and the adapters. The module's crate must
# resolve the crates it shares with the extension to the same versions (its own
# Cargo.lock: python/ is a workspace of its own), or "the same core" would not hold.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=/tmp/neardup-python-venv

# the crates neardup-core is built with, in a workspace
core_crates() { (cd "$1" && cargo tree -p neardup-core --prefix none -e normal | sort -u); }
diff <(core_crates "$ROOT") <(core_crates "$ROOT/python") ||
    { echo "python/Cargo.lock builds neardup-core with other crates than Cargo.lock"; exit 1; }

rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet "$ROOT/python[test]"
# run from outside python/, so that the installed package is imported, not its source folder
cd /tmp
NEARDUP_REQUIRE_SERVER=1 "$VENV/bin/pytest" -q -p no:cacheprovider "$ROOT/python/tests"
