-- Regression test: the simhash64 type and the signature functions, as a user sees them.
CREATE EXTENSION IF NOT EXISTS neardup;
SELECT simhash('The quick brown fox jumps over the lazy dog');
SELECT simhash('<p>The QUICK brown fox &mdash; jumps over the lazy dog!</p>');
SELECT simhash('The quick brown fox jumps over the lazy dog', shingle => 1) AS unigrams,
       simhash('The quick brown fox jumps over the lazy dog', ngram => 4) AS char4grams;
SELECT simhash(''), simhash('¡¿…!?'), simhash(NULL::text) IS NULL AS null_in_null_out;
SELECT neardup_canonical('Caf&eacute; <b>STRASSE</b> — see https://example.org/a.html');
SELECT neardup_tokens('Straße 日本語 ÉTÉ');
SELECT '0x0123456789ABCDEF'::simhash64, 'ffffffffffffffff'::simhash64::bigint,
       (-2)::bigint::simhash64, '8000000000000001'::simhash64::bit(64);
SELECT hamming('00000000000000ff', '000000000000000f'),
       '00000000000000ff'::simhash64 <~> '0000000000000000',
       bit_count('ffff000000000000'::simhash64),
       ('ff00000000000000'::simhash64 & '0ff0000000000000') AS "and",
       ('ff00000000000000'::simhash64 | '00000000000000ff') AS "or",
       ('ffff000000000000'::simhash64 # 'ff00000000000001') AS "xor",
       ~'0000000000000000'::simhash64 AS "not";
SELECT simhash(ARRAY['apple', 'banana', 'cherry'], ARRAY[3, 1, 1]::real[]);
-- Errors carry the SQLSTATE a client can act on.
\set VERBOSITY sqlstate
SELECT 'xyz'::simhash64;
SELECT '0123456789abcdef0'::simhash64;
SELECT simhash('text', shingle => 0);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1]::real[]);
SELECT simhash(ARRAY['a', NULL], ARRAY[1, 2]::real[]);
\set VERBOSITY default
-- Ordering is unsigned (the order of the hex digits), and GROUP BY / DISTINCT work.
SELECT v FROM (VALUES ('ffffffffffffffff'::simhash64), ('0000000000000001'), ('8000000000000000')) t(v) ORDER BY v;
SELECT count(DISTINCT simhash(w)) FROM (VALUES ('a b c'), ('A B C'), ('a, b, c!'), ('x y z')) t(w);
