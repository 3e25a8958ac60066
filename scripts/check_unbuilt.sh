#!/usr/bin/env bash
# Type-checks neardup against a PostgreSQL major whose headers this machine cannot reach
# (17 here): pgrx-pg-sys ships bindings generated for every major it supports, and compiling
# it with `--cfg docsrs` (and DOCS_RS=1, which skips its build script) uses them instead of
# running bindgen on a server's headers. Nothing is linked or run: a type check only.
# Usage: scripts/check_unbuilt.sh [MAJOR]   (17 by default)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -n ${NEARDUP_RUSTC_WRAPPER:-} ]]; then # as cargo's rustc wrapper: --cfg docsrs for pgrx-pg-sys alone
    for arg in "$@"; do [[ $arg == pgrx_pg_sys ]] && exec "$@" --cfg docsrs; done
    exec "$@"
fi
major=${1:-17}
export PATH="$HOME/.cargo/bin:$PATH"
cd "$ROOT"
NEARDUP_RUSTC_WRAPPER=1 RUSTC_WRAPPER="$ROOT/scripts/check_unbuilt.sh" DOCS_RS=1 CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}/check-pg$major \
    cargo check --quiet --no-default-features --features "pg$major"
