-- Regression tests (issue 23): index answers equal a seq scan's in transactions that
-- insert rows and then truncate, reindex or roll back to a savepoint. Each case ends with
-- index_answers (the index, a bitmap and a seq scan agree) and index_check
-- (hamming_index_check passes and counts every row); tests/integration/index_answers.sql
-- defines both. The cases that need a tablespace or prepared transactions are in
-- tests/integration/check_held_rows_ddl.sh. Run by tests/integration/run.sh; the expected
-- output (tests/expected/held_rows.out) is the correct one.
CREATE EXTENSION neardup;
\ir ../integration/index_answers.sql
\pset format unaligned
\pset tuples_only on

-- 1. Reproduction 1: a table created, filled, truncated and filled again in one
-- transaction (TRUNCATE of a table created in the same transaction empties its files in
-- place). Row 1 is gone: nothing is within 0 bits of its fingerprint.
BEGIN;
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
INSERT INTO t VALUES (1, '00000000000000ff');
TRUNCATE t;
INSERT INTO t VALUES (2, 'ffffffffffffff00');
-- inside the transaction, then after it
SELECT index_answers('t', '00000000000000ff', 0);
SELECT index_answers('t', 'ffffffffffffff00', 0);
COMMIT;
SELECT index_answers('t', '00000000000000ff', 0);
SELECT index_answers('t', 'ffffffffffffff00', 0);
SELECT index_check('t_fp');
DROP TABLE t;

-- 2. The same with an existing table truncated twice in one transaction (the second
-- TRUNCATE empties the files the first one made, in place).
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
INSERT INTO t VALUES (1, '0000000000000f0f');
BEGIN;
TRUNCATE t;
INSERT INTO t VALUES (2, '00000000000000ff');
TRUNCATE t;
SELECT index_answers('t', '00000000000000ff', 3);
INSERT INTO t VALUES (3, 'ffffffffffffff00');
SELECT index_answers('t', '00000000000000ff', 3);
COMMIT;
SELECT index_answers('t', '00000000000000ff', 3);
SELECT index_answers('t', 'ffffffffffffff00', 3);
SELECT index_check('t_fp');
DROP TABLE t;

-- 3. Reproduction 3, savepoint: rows inserted before a savepoint, TRUNCATE and an INSERT in
-- it, ROLLBACK TO: the rows from before the savepoint are back and must be found.
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
INSERT INTO t VALUES (1, '0000000000000001');
BEGIN;
INSERT INTO t VALUES (2, '00000000000000ff'), (3, '00000000000000fe');
SAVEPOINT s;
TRUNCATE t;
INSERT INTO t VALUES (4, '00000000000000fc');
SELECT index_answers('t', '00000000000000ff', 3);
ROLLBACK TO s;
SELECT index_answers('t', '00000000000000ff', 3);
COMMIT;
SELECT index_answers('t', '00000000000000ff', 3);
SELECT index_check('t_fp');
DROP TABLE t;

-- 4. Reproduction 3, REINDEX INDEX in a savepoint that is rolled back (rows inserted
-- before it in the transaction, one more inside it).
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
BEGIN;
INSERT INTO t VALUES (1, '00000000000000ff');
SAVEPOINT s;
REINDEX INDEX t_fp;
INSERT INTO t VALUES (2, '00000000000000fe');
SELECT index_answers('t', '00000000000000ff', 1);
ROLLBACK TO s;
SELECT index_answers('t', '00000000000000ff', 1);
COMMIT;
SELECT index_answers('t', '00000000000000ff', 1);
SELECT index_check('t_fp');
DROP TABLE t;

-- 5. The same with REINDEX TABLE, and with CLUSTER (both give the index a new file).
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_id ON t (id);
CREATE INDEX t_fp ON t USING hamming (fp);
BEGIN;
INSERT INTO t VALUES (1, '00000000000000ff');
SAVEPOINT s;
REINDEX TABLE t;
INSERT INTO t VALUES (2, '00000000000000fe');
ROLLBACK TO s;
INSERT INTO t VALUES (3, '00000000000000fd');
SAVEPOINT s2;
CLUSTER t USING t_id;
INSERT INTO t VALUES (4, '00000000000000fc');
ROLLBACK TO s2;
SELECT index_answers('t', '00000000000000ff', 2);
COMMIT;
SELECT index_answers('t', '00000000000000ff', 2);
SELECT index_check('t_fp');
DROP TABLE t;

-- 6. The index dropped and created again in a savepoint that is rolled back.
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
BEGIN;
INSERT INTO t VALUES (1, '00000000000000ff');
SAVEPOINT s;
DROP INDEX t_fp;
CREATE INDEX t_fp ON t USING hamming (fp);
INSERT INTO t VALUES (2, '00000000000000fe');
ROLLBACK TO s;
SELECT index_answers('t', '00000000000000ff', 1);
COMMIT;
SELECT index_answers('t', '00000000000000ff', 1);
SELECT index_check('t_fp');
DROP TABLE t;

-- 7. TRUNCATE in a savepoint that is released, then more rows: only the new rows remain.
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
BEGIN;
INSERT INTO t VALUES (1, '00000000000000ff');
SAVEPOINT s;
TRUNCATE t;
INSERT INTO t VALUES (2, 'ffffffffffffff00');
RELEASE s;
INSERT INTO t VALUES (3, '00000000000000fe');
SELECT index_answers('t', '00000000000000ff', 1);
COMMIT;
SELECT index_answers('t', '00000000000000ff', 1);
SELECT index_answers('t', 'ffffffffffffff00', 0);
SELECT index_check('t_fp');
DROP TABLE t;

-- 8. hamming_index_check (which first appends the rows this backend holds back) in a
-- savepoint after REINDEX, rolled back: the rows from before the savepoint stay indexed.
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
BEGIN;
INSERT INTO t VALUES (1, '00000000000000ff');
SAVEPOINT s;
REINDEX INDEX t_fp;
SELECT index_check('t_fp');
ROLLBACK TO s;
COMMIT;
SELECT index_answers('t', '00000000000000ff', 1);
SELECT index_check('t_fp');
DROP TABLE t;
