-- Reading a hamming index's pages with pageinspect, for the integration checks (the
-- metapage and page layouts are drawn in core/src/search/index_page.rs and src/am/page.rs).
-- Loaded with psql -f after CREATE EXTENSION pageinspect.

-- The little-endian u32 at byte `at` of a page.
CREATE FUNCTION page_u32(p bytea, at int) RETURNS bigint LANGUAGE sql IMMUTABLE AS
$$ SELECT get_byte(p, at) + (get_byte(p, at + 1) << 8) + (get_byte(p, at + 2) << 16) + (get_byte(p, at + 3)::bigint << 24) $$;

-- A u32 of the metapage's contents, at `at` bytes after the 24-byte page header: 28 the
-- open pending list's pages, 32 the sealed list's id, 48 merging (the id of the run a
-- merge is writing, 0: none), 52 inputs (how many runs it merges table by table, 0: it
-- writes the run whole), 60 the runs; -1 if block 0 is not our metapage.
CREATE FUNCTION meta_u32(idx regclass, at int) RETURNS bigint LANGUAGE sql AS
$$ SELECT CASE WHEN page_u32(p, 24) = x'4E445550'::bigint THEN page_u32(p, 24 + at) ELSE -1 END
   FROM get_raw_page(idx::text, 0) p $$;

-- Each page's special space (NULL for a new page): its owner (the id of its run or list),
-- its kind (2: leaf of a table, 3: pending or NULL rows, 4: directory) and its tree (the
-- index of its tree in its run's trees, which are its tables' parts).
CREATE FUNCTION page_owners(idx regclass) RETURNS TABLE (blkno bigint, owner bigint, kind int, tbl int)
LANGUAGE sql AS
$$ SELECT b, CASE WHEN h.upper <> 0 THEN page_u32(p, h.special + 4) END,
          CASE WHEN h.upper <> 0 THEN get_byte(p, h.special + 8) + (get_byte(p, h.special + 9) << 8) END,
          CASE WHEN h.upper <> 0 THEN get_byte(p, h.special + 10) + (get_byte(p, h.special + 11) << 8) END
   FROM generate_series(1, pg_relation_size(idx) / 8192 - 1) b, LATERAL get_raw_page(idx::text, b) p,
        LATERAL page_header(p) h $$;

-- The rows of each run, largest first, and the pending rows at most (pages of the open
-- and the sealed list x 582), as 'rows+rows+... p pending'.
CREATE FUNCTION run_rows(idx regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    p bytea := get_raw_page(idx::text, 0);
    at int := 24 + 68 + 4 * page_u32(p, 24 + 52) + 4 * page_u32(p, 24 + 56);
    runs text[] := '{}';
BEGIN
    FOR i IN 1 .. page_u32(p, 24 + 60) LOOP
        runs := runs || (page_u32(p, at + 8) + (page_u32(p, at + 12) << 32))::text;
        at := at + 28 + 12 * page_u32(p, at + 24)::int;
    END LOOP;
    RETURN array_to_string(runs, '+') || ' p' || ((page_u32(p, 24 + 28) + page_u32(p, 24 + 44)) * 582);
END $$;

-- The leaves of each tree of run `run` as the metapage counts them (a run's trees are its
-- tables' parts: see core/src/search/table_parts.rs); no row if no run has that id.
CREATE FUNCTION run_tree_leaves(idx regclass, run bigint) RETURNS TABLE (tbl int, leaves bigint)
LANGUAGE plpgsql AS $$
DECLARE
    p bytea := get_raw_page(idx::text, 0);
    at int := 24 + 68 + 4 * page_u32(p, 24 + 52) + 4 * page_u32(p, 24 + 56);
    trees int;
BEGIN
    FOR i IN 1 .. page_u32(p, 24 + 60) LOOP
        trees := page_u32(p, at + 24);
        IF page_u32(p, at) = run THEN
            FOR t IN 0 .. trees - 1 LOOP
                tbl := t;
                leaves := page_u32(p, at + 28 + 12 * t + 8);
                RETURN NEXT;
            END LOOP;
        END IF;
        at := at + 28 + 12 * trees;
    END LOOP;
END $$;
