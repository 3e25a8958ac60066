#!/usr/bin/env bash
# neardup demo: installs what is missing, builds and installs the extension, starts a
# throwaway PostgreSQL 15 cluster, loads the Debian descriptions sample, computes
# simhash(body) for every row, indexes it with the hamming access method and prints the
# largest groups of near-duplicates (k <= 3), found by an indexed self-join.
# Run as root on Debian 12: ./demo.sh   (the cluster is stopped at the end)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")" && pwd)
cd "$ROOT"
source scripts/setup.sh
source scripts/cluster.sh
DIR=/tmp/neardup-demo

echo "== building and installing neardup (release)"
install_extension
cluster_start "$DIR"
trap 'cluster_stop "$DIR"' EXIT
echo "== cluster running on unix socket $DIR"

psql -qX -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION neardup;
CREATE TABLE docs (id bigint PRIMARY KEY, package text NOT NULL, body text NOT NULL, fp simhash64);
\copy docs (id, package, body) FROM '$ROOT/pg_test_data/debian_descriptions_sample.tsv'
SQL
psql -qX -v ON_ERROR_STOP=1 <<'SQL'
\pset footer off
UPDATE docs SET fp = simhash(body);
ANALYZE docs;
SELECT count(*) AS documents, pg_size_pretty(sum(octet_length(body))) AS text FROM docs \gx

-- An exact Hamming index (Manku et al.'s permuted tables), and the natural self-join: the
-- planner hook turns hamming(a.fp, b.fp) <= 3 into an index condition.
CREATE INDEX docs_fp ON docs USING hamming (fp);
\echo 'The plan of the self-join (one index probe per row):'
EXPLAIN (COSTS OFF)
SELECT a.id, b.id FROM docs a JOIN docs b ON hamming(a.fp, b.fp) <= 3 AND a.id < b.id;
CREATE TEMP TABLE pairs AS
    SELECT a.id AS a, b.id AS b FROM docs a JOIN docs b ON hamming(a.fp, b.fp) <= 3 AND a.id < b.id;
SELECT count(*) AS "near-duplicate pairs (k <= 3)" FROM pairs \gx

-- Groups: connected components of the pairs, by label propagation (smallest id wins).
CREATE TEMP TABLE label AS SELECT id, id AS grp FROM docs;
DO $$
BEGIN
    LOOP
        UPDATE label l SET grp = m.grp
        FROM (SELECT e.a AS id, min(l2.grp) AS grp
              FROM (SELECT a, b FROM pairs UNION ALL SELECT b, a FROM pairs) e
              JOIN label l2 ON l2.id = e.b GROUP BY e.a) m
        WHERE l.id = m.id AND m.grp < l.grp;
        EXIT WHEN NOT FOUND;
    END LOOP;
END $$;

\echo
\echo 'The largest groups of near-duplicates (Hamming distance to the group''s first member, and each document''s opening words):'
WITH sizes AS (SELECT grp, count(*) AS size FROM label GROUP BY grp HAVING count(*) > 1
               ORDER BY size DESC, grp LIMIT 6),
members AS (
    SELECT s.size, s.grp, d.package, hamming(d.fp, r.fp) AS dist,
           left(regexp_replace(d.body, '\s+', ' ', 'g'), 90) AS excerpt,
           row_number() OVER (PARTITION BY s.grp ORDER BY hamming(d.fp, r.fp), d.id) AS n
    FROM sizes s JOIN label l USING (grp) JOIN docs d ON d.id = l.id JOIN docs r ON r.id = s.grp)
SELECT format('group of %s', size) AS "group", package, dist AS bits, excerpt
FROM members WHERE n <= 4 ORDER BY size DESC, grp, n;

\echo
\echo 'A crawler-style lookup: one description with one word changed, against the whole table.'
WITH probe AS (SELECT simhash(regexp_replace(body, 'library', 'toolkit')) AS fp, package
               FROM docs WHERE body LIKE '%library%' AND length(body) > 1500 ORDER BY id LIMIT 1)
SELECT p.package AS edited, d.package AS found, hamming(d.fp, p.fp) AS bits
FROM probe p JOIN docs d ON hamming(d.fp, p.fp) <= 3 ORDER BY bits, d.id LIMIT 5;

\echo 'The nearest fingerprints to that edited description, through the index (ORDER BY <~>):'
SELECT d.package, d.fp <~> p.fp AS bits
FROM (SELECT simhash(regexp_replace(body, 'library', 'toolkit')) AS fp
      FROM docs WHERE body LIKE '%library%' AND length(body) > 1500 ORDER BY id LIMIT 1) p
CROSS JOIN LATERAL (SELECT package, fp FROM docs ORDER BY fp <~> p.fp LIMIT 3) d;
SQL
echo "== done (the cluster in $DIR is stopped on exit)"
