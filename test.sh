#!/usr/bin/env bash
# neardup's whole test suite, every layer; .ci/run calls exactly this. Run as root on
# Debian 12: ./test.sh   (installs what is missing first, like demo.sh)
#   1. lint:        cargo fmt --check, cargo clippy (warnings are errors)
#   2. core:        plain cargo test of the pure-Rust core (unit, golden, 1M-input property, memory)
#   3. SQL:         cargo pgrx test (pg_test functions inside a real backend)
#   4. integration: release build in a real cluster: regression files, parallel scan,
#                   100 MB text, the README cookbook and rendering, the demo, the upgrade
#                   from 0.1.0, an install over a running server, cancellation, memory
#                   bounds, an install in a schema off the search_path; for the hamming
#                   index a model-based test (tests/model), isolation specs
#                   (tests/isolation), crash, standby and long-snapshot checks
set -euo pipefail
ROOT=$(cd "$(dirname "$0")" && pwd)
cd "$ROOT"
source scripts/setup.sh

echo "== 1. lint"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== 2. core (cargo test)"
cargo test -p neardup-core --release

echo "== 3. SQL (cargo pgrx test)"
PGDATA_TEST=/tmp/neardup-pgrx-test
mkdir -p "$PGDATA_TEST"
chown postgres: "$PGDATA_TEST"
cargo pgrx test pg15 --runas postgres --pgdata "$PGDATA_TEST"

echo "== 4. integration"
tests/integration/run.sh
