-- Helpers of the isolation specs (tests/isolation/specs), loaded once into the test
-- database by tests/integration/check_isolation.sh. The specs' table is always
-- t (id int, fp simhash64) with a hamming index t_fp.

-- nd_centre(c): 37 fixed random fingerprints; nd_fp(i): row i's fingerprint, 0 to 2 bits
-- from centre i % 37 (so every centre has a cluster of near copies, exact duplicates too).
CREATE FUNCTION nd_centre(c int) RETURNS simhash64 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT ('x' || substr(md5('centre ' || c), 1, 16))::bit(64)::bigint::simhash64 $$;
CREATE FUNCTION nd_fp(i int) RETURNS simhash64 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT (nd_centre(i % 37)::bigint # (1::bigint << ((i * 7) % 64)) # (1::bigint << ((i * 13) % 64)))::simhash64 $$;

-- nd_check(show): every centre's rows within 2 bits (37 lookups, each an index rescan
-- under a nested loop) and the 60 nearest rows of centre 5 in distance order, by a forced
-- index scan, a forced bitmap scan and a forced seq scan (each plan checked with
-- EXPLAIN), in one snapshot when called in one statement of a REPEATABLE READ
-- transaction. Returns 'ok: N rows, ids S' (N, S: count and sum of the ids the lookups
-- found; just 'ok' when show is false), or every answer when they differ.
CREATE FUNCTION nd_check(show boolean DEFAULT true) RETURNS text
LANGUAGE plpgsql
SET enable_seqscan = on SET enable_indexscan = on SET enable_bitmapscan = on
SET enable_indexonlyscan = off SET max_parallel_workers_per_gather = 0
AS $$
DECLARE
    -- the balls computed once (a seq scan would compute its ball again for every row)
    ball text := 'WITH cb AS MATERIALIZED (SELECT hamming_ball(nd_centre(c), 2) AS b FROM generate_series(0, 36) c)
        SELECT count(*) || '' rows, ids '' || coalesce(sum(l.id), 0)
        FROM cb, LATERAL (SELECT id FROM t WHERE fp <@ cb.b) l';
    knn text := 'SELECT coalesce(string_agg(d::text, '',''), ''-'') FROM (SELECT fp <~> nd_centre(5) AS d FROM t
        ORDER BY fp <~> nd_centre(5) LIMIT 60) s';
    mode text;
    query text;
    line text;
    plan text;
    got text;
    got_knn text;
    seq text;
    seq_knn text;
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
            IF strpos(plan, CASE mode WHEN 'seq' THEN 'Seq Scan on t' WHEN 'index' THEN 'Index Scan using t_fp'
                                      ELSE 'Bitmap Index Scan on t_fp' END) = 0 THEN
                RETURN format('the %s plan was not used: %s', mode, plan);
            END IF;
        END LOOP;
        EXECUTE ball INTO got;
        IF mode <> 'bitmap' THEN
            EXECUTE knn INTO got_knn;
        END IF;
        IF mode = 'seq' THEN
            seq := got;
            seq_knn := got_knn;
        ELSIF got IS DISTINCT FROM seq THEN
            wrong := wrong || format('; %s scan: %s', mode, got);
        ELSIF mode = 'index' AND got_knn IS DISTINCT FROM seq_knn THEN
            wrong := wrong || format('; nearest through the index: %s (seq scan: %s)', got_knn, seq_knn);
        END IF;
    END LOOP;
    IF wrong <> '' THEN
        RETURN 'WRONG: seq scan: ' || seq || wrong;
    END IF;
    RETURN CASE WHEN show THEN 'ok: ' || seq ELSE 'ok' END;
END $$;

-- nd_fetch(n): fetches up to n rows (id, distance) from the open cursor ci into the
-- temporary table fetched; returns how many came. nd_cursor_check(): fetches the rest of
-- ci and all of cs (the same query by a seq scan, declared in the same snapshot) and
-- compares them: 'ok: N rows' or the difference.
CREATE FUNCTION nd_fetch(n int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    c refcursor := 'ci';
    r record;
    k int := 0;
BEGIN
    LOOP
        EXIT WHEN k >= n;
        FETCH c INTO r;
        EXIT WHEN NOT FOUND;
        INSERT INTO fetched VALUES (r.id, r.d, 'index');
        k := k + 1;
    END LOOP;
    RETURN k;
END $$;

CREATE FUNCTION nd_cursor_check() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    c refcursor := 'cs';
    r record;
    n bigint;
    diff bigint;
BEGIN
    PERFORM nd_fetch(2147483647);
    LOOP
        FETCH c INTO r;
        EXIT WHEN NOT FOUND;
        INSERT INTO fetched VALUES (r.id, r.d, 'seq');
    END LOOP;
    SELECT count(*) INTO n FROM fetched WHERE via = 'seq';
    SELECT count(*) INTO diff FROM (
        (SELECT id, d FROM fetched WHERE via = 'index' EXCEPT ALL SELECT id, d FROM fetched WHERE via = 'seq')
        UNION ALL
        (SELECT id, d FROM fetched WHERE via = 'seq' EXCEPT ALL SELECT id, d FROM fetched WHERE via = 'index')) s;
    IF diff = 0 AND NOT EXISTS (SELECT FROM fetched f WHERE via = 'index' AND d < (SELECT max(d) FROM fetched g
            WHERE g.via = 'index' AND g.seq < f.seq)) THEN
        RETURN format('ok: %s rows', n);
    END IF;
    RETURN format('WRONG: the index cursor returned %s rows (%s differ from the seq scan''s %s, or out of order)',
                  (SELECT count(*) FROM fetched WHERE via = 'index'), diff, n);
END $$;

-- Wide codes (the specs whose table is w (id int, c hash256) with a hamming index w_c):
-- nd_code256(i) is row i's random code; nd_flipped256(i) the same with its first i % 24 bits
-- flipped, a near copy whose first substrings differ (so that a lookup finds it through a
-- later substring's table, whose first agreeing substring is not the first).
CREATE FUNCTION nd_code256(i int) RETURNS hash256 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT ('x' || md5(i::text) || md5((i + 7777777)::text))::bit(256)::hash256 $$;
CREATE FUNCTION nd_flipped256(i int) RETURNS hash256 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT (nd_code256(i)::bit(256) # (repeat('1', i % 24) || repeat('0', 256 - i % 24))::bit(256))::hash256 $$;

-- nd_wide_check(radii): for each radius, the rows of w within it of the codes of the rows
-- whose id % 1500 = 1 (the balls computed once; each lookup an index rescan under a
-- nested loop), counted by a forced seq scan, a forced index scan and a forced bitmap scan
-- (each plan checked with EXPLAIN). Returns 'ok: r0 N, r10 N, ...' (the seq scan's counts),
-- or every count when they differ.
CREATE FUNCTION nd_wide_check(radii int[]) RETURNS text
LANGUAGE plpgsql
SET enable_seqscan = on SET enable_indexscan = on SET enable_bitmapscan = on
SET enable_indexonlyscan = off SET max_parallel_workers_per_gather = 0
AS $$
DECLARE
    r int;
    mode text;
    query text;
    line text;
    plan text;
    unused boolean;
    got bigint;
    seq bigint;
    counts text := '';
    wrong text := '';
BEGIN
    FOREACH r IN ARRAY radii LOOP
        query := format('WITH cb AS MATERIALIZED (SELECT hamming_ball(c, %s) AS b FROM w WHERE id %% 1500 = 1)
            SELECT count(*) FROM cb, LATERAL (SELECT 1 FROM w WHERE c <@ cb.b) l', r);
        FOREACH mode IN ARRAY ARRAY['seq', 'index', 'bitmap'] LOOP
            PERFORM set_config('enable_seqscan', (mode <> 'index' AND mode <> 'bitmap')::text, true);
            PERFORM set_config('enable_indexscan', (mode = 'index')::text, true);
            PERFORM set_config('enable_bitmapscan', (mode = 'bitmap')::text, true);
            plan := '';
            FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
                plan := plan || line || ' ';
            END LOOP;
            unused := CASE mode WHEN 'seq' THEN strpos(plan, 'w_c') > 0
                                WHEN 'index' THEN strpos(plan, 'Index Scan using w_c') = 0
                                ELSE strpos(plan, 'Bitmap Index Scan on w_c') = 0 END;
            IF unused THEN
                RETURN format('the %s plan was not used: %s', mode, plan);
            END IF;
            EXECUTE query INTO got;
            IF mode = 'seq' THEN
                seq := got;
                counts := counts || CASE WHEN counts = '' THEN '' ELSE ', ' END || format('r%s %s', r, got);
            ELSIF got <> seq THEN
                wrong := wrong || format('; r%s by %s scan: %s (seq scan: %s)', r, mode, got, seq);
            END IF;
        END LOOP;
    END LOOP;
    IF wrong <> '' THEN
        RETURN 'WRONG' || wrong;
    END IF;
    RETURN 'ok: ' || counts;
END $$;
