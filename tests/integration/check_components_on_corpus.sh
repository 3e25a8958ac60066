#!/usr/bin/env bash
# Connected components on real near-duplicate pairs: the Debian sample's simhash pairs
# (k <= 3) and B-similar pairs, through neardup_components, equal a transitive closure
# computed in plain SQL; and neardup_clusters agrees with neardup_components on the same
# pairs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DB=components_corpus
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
run() { psql -qX -d $DB -v ON_ERROR_STOP=1 "$@"; }
fail() { echo "check_components_on_corpus: $*"; exit 1; }
run -c "CREATE EXTENSION neardup" \
    -c "CREATE TABLE docs (id bigint PRIMARY KEY, package text, body text)" \
    -c "\\copy docs FROM '$ROOT/pg_test_data/debian_descriptions_sample.tsv'" \
    -c "CREATE TABLE sigs AS SELECT id, simhash(body) AS fp, supershingles(body) AS ss FROM docs" \
    -c "CREATE TABLE edges AS SELECT a, b FROM hamming_pairs('sigs', 'id', 'fp', 3)
        UNION SELECT x.id, y.id FROM sigs x JOIN sigs y ON x.id < y.id AND x.ss % y.ss" >/dev/null

components=$(run -At -c "SELECT md5(string_agg(node || ':' || component, ',' ORDER BY node))
                         FROM neardup_components('SELECT a, b FROM edges')")
closure=$(run -At -c "
    WITH RECURSIVE e AS (SELECT a, b FROM edges UNION SELECT b, a FROM edges),
    reach (node, other) AS (SELECT a, a FROM e UNION SELECT r.node, e.b FROM reach r JOIN e ON e.a = r.other)
    SELECT md5(string_agg(node || ':' || c, ',' ORDER BY node))
    FROM (SELECT node, min(other) AS c FROM reach GROUP BY node) s")
[[ $components == "$closure" ]] || fail "neardup_components differs from the transitive closure"
nodes=$(run -At -c "SELECT count(DISTINCT a) + count(DISTINCT b) FROM edges")
((nodes > 500)) || fail "too few near-duplicate pairs in the sample ($nodes endpoints)"

# neardup_clusters labels the same components, on the simhash pairs alone.
differ=$(run -At -c "
    SELECT count(*) FROM neardup_components('SELECT a, b FROM hamming_pairs(''sigs'', ''id'', ''fp'', 3)') n
    JOIN neardup_clusters('sigs', 'id', 'fp', 3) c ON c.id = n.node WHERE c.cluster_id <> n.component")
[[ $differ == 0 ]] || fail "neardup_clusters and neardup_components disagree on $differ rows"
