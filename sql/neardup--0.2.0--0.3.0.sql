-- neardup 0.2.0 -> 0.3.0: ALTER EXTENSION neardup UPDATE runs this in a 0.2.0 database.
-- Afterwards the extension's objects must equal those of a fresh CREATE EXTENSION neardup
-- (tests/integration/check_upgrade.sh compares the two catalogs): 0.3.0 adds no object.
--
-- What changed is the on-disk format of `hamming` indexes (format 2: sorted runs merged as
-- rows arrive; see README, "The hamming index"). A 0.3.0 library refuses to read a format-1
-- index (ERROR 55000, asking for a REINDEX), so this rebuilds every hamming index of the
-- database, in this transaction: each REINDEX locks its table against writes while it runs.
-- To keep writes going, REINDEX INDEX CONCURRENTLY each one first (after installing 0.3.0);
-- this script then rebuilds them once more.
DO $$
DECLARE
    idx regclass;
BEGIN
    FOR idx IN
        SELECT c.oid::regclass FROM pg_class c JOIN pg_am am ON am.oid = c.relam
        WHERE am.amname = 'hamming' AND c.relkind = 'i' AND c.relpersistence <> 't'
    LOOP
        EXECUTE format('REINDEX INDEX %s', idx);
    END LOOP;
END
$$;
