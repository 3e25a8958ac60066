#!/usr/bin/env bash
# A 100 MB text through SQL: accepted, and the backend's memory stays bounded (the
# pipeline streams; the only large allocations are the value itself).
set -euo pipefail
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS large_text" -c "CREATE DATABASE large_text" >/dev/null
out=$(psql -qAtX -d large_text -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION neardup;
CREATE TEMP TABLE big AS SELECT repeat('Lorem ipsum dolor sit amet, consectetur adipiscing elit. ', 1800000) AS t;
SELECT octet_length(t) >= 100000000 FROM big;
SELECT simhash(t) = simhash('Lorem ipsum dolor sit amet consectetur adipiscing elit ' || t) FROM big;
SELECT cardinality(neardup_tokens(left(t, 1000000))) FROM big;
SQL
)
expected=$'t\nt\n140351'
[[ $out == "$expected" ]] || { echo "unexpected: $out"; exit 1; }
