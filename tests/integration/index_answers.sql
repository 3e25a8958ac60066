-- Helpers for the regression files that compare index answers with a seq scan's (included
-- by tests/sql/held_rows.sql and tests/integration/held_rows_ddl.sql with \ir). Both act on
-- a table with columns (id int, fp simhash64) and a hamming index on fp.
--
-- index_answers(tbl, q, r): the ids within r bits of q by a forced seq scan, a forced
-- index scan and a forced bitmap scan (each plan checked with EXPLAIN), and the distances
-- of the 5 nearest rows by a seq scan and through the index: 'ok {ids} nearest {dists}'
-- when they agree, else every answer.
CREATE FUNCTION index_answers(tbl regclass, q simhash64, r int) RETURNS text
LANGUAGE plpgsql
SET enable_seqscan = on SET enable_indexscan = on SET enable_bitmapscan = on
SET enable_indexonlyscan = off SET max_parallel_workers_per_gather = 0
AS $$
DECLARE
    mode text;
    ball text := format('SELECT id FROM %s WHERE fp <@ hamming_ball(%L, %s)', tbl, q, r);
    knn text := format('SELECT fp <~> %L AS d FROM %s ORDER BY fp <~> %L LIMIT 5', q, tbl, q);
    query text;
    line text;
    plan text;
    ids int[];
    seq_ids int[];
    dists int[];
    seq_dists int[];
    wrong text := '';
BEGIN
    FOREACH mode IN ARRAY ARRAY['seq', 'index', 'bitmap'] LOOP
        PERFORM set_config('enable_seqscan', (mode = 'seq')::text, true);
        PERFORM set_config('enable_indexscan', (mode = 'index')::text, true);
        PERFORM set_config('enable_bitmapscan', (mode = 'bitmap')::text, true);
        FOREACH query IN ARRAY CASE WHEN mode = 'bitmap' THEN ARRAY[ball] ELSE ARRAY[ball, knn] END LOOP
            plan := '';
            FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
                plan := plan || line || ' ';
            END LOOP;
            IF strpos(plan, CASE mode WHEN 'seq' THEN 'Seq Scan' WHEN 'index' THEN 'Index Scan using'
                                      ELSE 'Bitmap Index Scan' END) = 0 THEN
                RETURN format('the %s plan was not used: %s', mode, plan);
            END IF;
        END LOOP;
        EXECUTE format('SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM (%s) s', ball) INTO ids;
        IF mode = 'seq' THEN
            seq_ids := ids;
            EXECUTE format('SELECT coalesce(array_agg(d ORDER BY d), ''{}'') FROM (%s) s', knn) INTO seq_dists;
        ELSE
            IF ids IS DISTINCT FROM seq_ids THEN
                wrong := wrong || format(' %s scan %s', mode, ids);
            END IF;
            IF mode = 'index' THEN
                -- in the order the index returns them
                EXECUTE format('SELECT coalesce(array_agg(d), ''{}'') FROM (%s) s', knn) INTO dists;
                IF dists IS DISTINCT FROM seq_dists THEN
                    wrong := wrong || format(' nearest through the index %s', dists);
                END IF;
            END IF;
        END IF;
    END LOOP;
    IF wrong = '' THEN
        RETURN format('ok %s nearest %s', seq_ids, seq_dists);
    END IF;
    RETURN format('WRONG: seq scan %s nearest %s;%s', seq_ids, seq_dists, wrong);
END $$;

-- index_check(idx): hamming_index_check passes (an ERROR otherwise) and counts every row
-- of the table (counted by a seq scan).
CREATE FUNCTION index_check(idx regclass) RETURNS text
LANGUAGE plpgsql SET enable_indexscan = off SET enable_bitmapscan = off AS $$
DECLARE
    n bigint := hamming_index_check(idx);
    total bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s', (SELECT indrelid::regclass FROM pg_index WHERE indexrelid = idx))
        INTO total;
    IF n = total THEN
        RETURN format('ok %s rows', n);
    END IF;
    RETURN format('WRONG: hamming_index_check counted %s rows, the table has %s', n, total);
END $$;
