#!/usr/bin/env bash
# Keeps the cookbook (docs/cookbook.md, linked from the README) true: every ```sql block runs, in order, without error,
# in a plain install and in one whose extension lives in its own schema.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
sql=$(awk '/^## SQL cookbook/ {on = 1; next} /^## / {on = 0} on && /^```sql/ {code = 1; next} code && /^```/ {code = 0; next} code' "$ROOT/docs/cookbook.md")
[[ -n $sql ]] || { echo "no cookbook SQL found in docs/cookbook.md"; exit 1; }
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS cookbook" -c "CREATE DATABASE cookbook" >/dev/null
psql -qX -d cookbook -v ON_ERROR_STOP=1 <<<"$sql" >/dev/null
# Once more with the extension in its own schema (found through the database's search_path,
# as a DBA would set it up) and every query that may run in a parallel worker run there.
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS cookbook_ext" -c "CREATE DATABASE cookbook_ext" >/dev/null
psql -qX -d cookbook_ext -v ON_ERROR_STOP=1 -c "CREATE SCHEMA ext" -c "CREATE EXTENSION neardup SCHEMA ext" \
    -c "ALTER DATABASE cookbook_ext SET search_path = public, ext" >/dev/null
PGOPTIONS="-c $NEARDUP_FORCE_PARALLEL=regress -c client_min_messages=warning" psql -qX -d cookbook_ext -v ON_ERROR_STOP=1 <<<"$sql" >/dev/null
