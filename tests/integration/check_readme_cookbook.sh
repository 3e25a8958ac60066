#!/usr/bin/env bash
# Keeps the cookbook (docs/cookbook.md, linked from the README) true: every ```sql block runs, in order, without error,
# in a plain install and in one whose extension lives in its own schema. And the README's first
# session: its ```sql block prints exactly the ```text block after it, in both installs.
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

# The README's first session: the output it shows is the output it gives.
section() { awk -v s="$1" -v fence="$2" '$0 == s {on = 1; next} /^## / {on = 0}
    on && $0 == "```" fence {code = 1; next} code && /^```/ {code = 0; next} code' "$ROOT/README.md"; }
first=$(section "## A first session" sql)
shown=$(section "## A first session" text)
[[ -n $first && -n $shown ]] || { echo "no first session (a sql and a text block) in README.md"; exit 1; }
for db in readme_first readme_first_ext; do
    psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
done
psql -qX -d readme_first_ext -c "CREATE SCHEMA ext" -c "ALTER DATABASE readme_first_ext SET search_path = public, ext" >/dev/null
for db in readme_first readme_first_ext; do
    schema=$([[ $db == readme_first_ext ]] && echo " SCHEMA ext" || true)
    got=$(PGOPTIONS="-c $NEARDUP_FORCE_PARALLEL=regress -c client_min_messages=warning" psql -qXAt -d "$db" -v ON_ERROR_STOP=1 \
        <<<"${first/CREATE EXTENSION neardup;/CREATE EXTENSION neardup$schema;}")
    [[ $got == "$shown" ]] || { echo "the README's first session prints, in $db:"; echo "$got"; echo "but shows:"; echo "$shown"; exit 1; }
done
echo "check_readme_cookbook: the cookbook runs twice; the README's first session prints what it shows"
