-- Index answers equal a seq scan's after rows inserted in a transaction meet ALTER INDEX
-- ... SET TABLESPACE (reproduction 3 of issue 23) or PREPARE TRANSACTION; the cases of
-- tests/sql/held_rows.sql that need a tablespace directory or max_prepared_transactions.
-- Run by check_held_rows_ddl.sh (psql -v tsdir=DIR), output diffed with held_rows_ddl.out.
CREATE EXTENSION neardup;
\ir index_answers.sql
\pset format unaligned
\pset tuples_only on
CREATE TABLESPACE ts LOCATION :'tsdir';

-- 1. Reproduction 3: rows inserted, then the index moved, in one transaction.
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
BEGIN;
INSERT INTO t VALUES (1, '00000000000000ff');
ALTER INDEX t_fp SET TABLESPACE ts;
SELECT index_answers('t', '00000000000000ff', 0);
INSERT INTO t VALUES (2, '00000000000000fe');
COMMIT;
SELECT index_answers('t', '00000000000000ff', 1);
SELECT index_check('t_fp');
-- and back, with rows before and after the move
BEGIN;
INSERT INTO t VALUES (3, '00000000000000fd');
ALTER INDEX t_fp SET TABLESPACE pg_default;
INSERT INTO t VALUES (4, '00000000000000fc');
COMMIT;
SELECT index_answers('t', '00000000000000ff', 2);
SELECT index_check('t_fp');
DROP TABLE t;

-- 2. The move in a savepoint that is rolled back, after rows inserted before it.
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
BEGIN;
INSERT INTO t VALUES (1, '00000000000000ff');
SAVEPOINT s;
ALTER INDEX t_fp SET TABLESPACE ts;
INSERT INTO t VALUES (2, '00000000000000fe');
ROLLBACK TO s;
SELECT index_answers('t', '00000000000000ff', 1);
COMMIT;
SELECT index_answers('t', '00000000000000ff', 1);
SELECT index_check('t_fp');
DROP TABLE t;

-- 3. The table (not the index) moved after rows inserted in the same transaction.
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
BEGIN;
INSERT INTO t VALUES (1, '00000000000000ff');
ALTER TABLE t SET TABLESPACE ts;
INSERT INTO t VALUES (2, '00000000000000fe');
COMMIT;
SELECT index_answers('t', '00000000000000ff', 1);
SELECT index_check('t_fp');
DROP TABLE t;

-- 4. Prepared transactions: committed, rolled back, and one that truncated in a savepoint
-- rolled back before it was prepared.
CREATE TABLE t (id int, fp simhash64);
CREATE INDEX t_fp ON t USING hamming (fp);
BEGIN;
INSERT INTO t VALUES (1, '00000000000000ff');
PREPARE TRANSACTION 'held_1';
SELECT index_answers('t', '00000000000000ff', 1);
COMMIT PREPARED 'held_1';
SELECT index_answers('t', '00000000000000ff', 1);
BEGIN;
INSERT INTO t VALUES (2, '00000000000000fe');
PREPARE TRANSACTION 'held_2';
ROLLBACK PREPARED 'held_2';
SELECT index_answers('t', '00000000000000ff', 1);
BEGIN;
INSERT INTO t VALUES (3, '00000000000000fd');
SAVEPOINT s;
TRUNCATE t;
INSERT INTO t VALUES (4, '00000000000000fc');
ROLLBACK TO s;
PREPARE TRANSACTION 'held_3';
COMMIT PREPARED 'held_3';
SELECT index_answers('t', '00000000000000ff', 2);
SELECT index_check('t_fp');
DROP TABLE t;
DROP TABLESPACE ts;
