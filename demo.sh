#!/usr/bin/env bash
# neardup demo: installs what is missing, builds and installs the extension, starts a
# throwaway PostgreSQL 15 cluster, loads the Debian descriptions sample, computes
# simhash(body) for every row, indexes it with the hamming access method, prints the largest
# groups of near-duplicates (k <= 3) kept as a materialized view of neardup_clusters, the
# same groups without chaining, and the MinHash LSH pairs at Jaccard 0.8 beside the simhash
# pairs.
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
CREATE TABLE docs (id bigint PRIMARY KEY, package text NOT NULL, body text NOT NULL, fp simhash64, mh minhash_sketch);
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

-- Groups, kept as a materialized view: neardup_clusters links the near-duplicate pairs into
-- connected components (labelled by their smallest id), with one representative each.
CREATE MATERIALIZED VIEW doc_clusters AS
    SELECT * FROM neardup_clusters('docs', 'id', 'fp', 3, priority => 'length(body) DESC');
CREATE UNIQUE INDEX ON doc_clusters (id);

\echo
\echo 'The largest groups of near-duplicates (Hamming distance to the group''s representative, and each document''s opening words):'
WITH sizes AS (SELECT cluster_id, count(*) AS size FROM doc_clusters GROUP BY cluster_id HAVING count(*) > 1
               ORDER BY size DESC, cluster_id LIMIT 6),
members AS (
    SELECT s.size, s.cluster_id, d.package, hamming(d.fp, r.fp) AS dist,
           left(regexp_replace(d.body, '\s+', ' ', 'g'), 90) AS excerpt,
           row_number() OVER (PARTITION BY s.cluster_id ORDER BY hamming(d.fp, r.fp), d.id) AS n
    FROM sizes s JOIN doc_clusters c USING (cluster_id) JOIN docs d ON d.id = c.id
    JOIN doc_clusters rc ON rc.cluster_id = s.cluster_id AND rc.is_representative JOIN docs r ON r.id = rc.id)
SELECT format('group of %s', size) AS "group", package, dist AS bits, excerpt
FROM members WHERE n <= 4 ORDER BY size DESC, cluster_id, n;

\echo
\echo 'Components chain: members of one group can be far from each other through 3-bit steps.'
\echo 'With method => ''representatives'' every member is within 3 bits of its representative:'
CREATE TEMP TABLE stars AS
    SELECT * FROM neardup_clusters('docs', 'id', 'fp', 3, 'length(body) DESC', 'representatives');
WITH c AS (SELECT 'components' AS method, c.id, c.cluster_id, hamming(d.fp, r.fp) AS to_rep
           FROM doc_clusters c JOIN doc_clusters rc ON rc.cluster_id = c.cluster_id AND rc.is_representative
           JOIN docs d ON d.id = c.id JOIN docs r ON r.id = rc.id
           UNION ALL
           SELECT 'representatives', c.id, c.cluster_id, hamming(d.fp, r.fp)
           FROM stars c JOIN stars rc ON rc.cluster_id = c.cluster_id AND rc.is_representative
           JOIN docs d ON d.id = c.id JOIN docs r ON r.id = rc.id)
SELECT method, count(DISTINCT cluster_id) FILTER (WHERE cluster_id <> id) AS "groups of 2+",
       max(to_rep) AS "max bits to representative",
       (SELECT max(n) FROM (SELECT count(*) AS n FROM c c2 WHERE c2.method = c.method GROUP BY cluster_id) m) AS "largest group"
FROM c GROUP BY method ORDER BY method;

\echo
\echo 'MinHash LSH at a Jaccard threshold of 0.8 (128 minvalues of 8-word shingles): the bands'
\echo 'lsh_params picks, a GIN index on the band keys, and the verified pairs:'
SELECT * FROM lsh_params(0.8, 128);
UPDATE docs SET mh = minhash(body, 128);
CREATE INDEX docs_bands ON docs USING gin (lsh_bands(mh, 0.8));
ANALYZE docs;
EXPLAIN (COSTS OFF)
SELECT a.id, b.id FROM docs a JOIN docs b
    ON lsh_bands(a.mh, 0.8) && lsh_bands(b.mh, 0.8) AND jaccard(a.mh, b.mh) >= 0.8 AND a.id < b.id;
CREATE TEMP TABLE lsh_pairs AS SELECT a, b, jaccard FROM minhash_pairs('docs', 'id', 'mh', 0.8);
SELECT (SELECT count(*) FROM lsh_pairs) AS "LSH pairs (J >= 0.8)",
       (SELECT count(*) FROM pairs) AS "simhash pairs (k <= 3)",
       (SELECT count(*) FROM lsh_pairs l JOIN pairs p USING (a, b)) AS "in both" \gx
\echo 'How they differ: simhash within 3 bits finds near-copies, including template siblings'
\echo 'that differ only in their subject (a few words of a short text), while LSH verified at'
\echo 'J >= 0.8 asks for 80 % shared 8-word shingles, which also holds for longer texts with'
\echo 'whole sentences changed. Examples of each kind:'
SELECT 'only simhash' AS found_by, da.package AS a, db.package AS b, hamming(da.fp, db.fp) AS bits,
       round(jaccard(da.mh, db.mh)::numeric, 2) AS jaccard
FROM (SELECT a, b FROM pairs EXCEPT SELECT a, b FROM lsh_pairs ORDER BY a, b LIMIT 3) p
JOIN docs da ON da.id = p.a JOIN docs db ON db.id = p.b
UNION ALL
SELECT 'only LSH', da.package, db.package, hamming(da.fp, db.fp), round(jaccard(da.mh, db.mh)::numeric, 2)
FROM (SELECT a, b FROM lsh_pairs EXCEPT SELECT a, b FROM pairs ORDER BY a, b LIMIT 3) p
JOIN docs da ON da.id = p.a JOIN docs db ON db.id = p.b;

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
