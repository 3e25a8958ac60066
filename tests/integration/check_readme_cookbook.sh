#!/usr/bin/env bash
# Keeps the README true: every ```sql block of its cookbook runs, in order, without error.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
sql=$(awk '/^## SQL cookbook/ {on = 1; next} /^## / {on = 0} on && /^```sql/ {code = 1; next} code && /^```/ {code = 0; next} code' "$ROOT/README.md")
[[ -n $sql ]] || { echo "no cookbook SQL found in README.md"; exit 1; }
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS cookbook" -c "CREATE DATABASE cookbook" >/dev/null
psql -qX -d cookbook -v ON_ERROR_STOP=1 <<<"$sql" >/dev/null
