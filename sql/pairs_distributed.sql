-- hamming_pairs_distributed: hamming_pairs of a Citus distributed table, paired on the
-- workers (the pigeonhole join keys of src/hamming_query/join_keys.rs in a key table
-- distributed by key, a co-located self-join, each pair verified and reported at one key).
-- hamming_pairs itself reads a distributed table's rows through the coordinator, within its
-- maintenance_work_mem; here each worker joins its own keys within its work_mem.
--
-- PL/pgSQL, so that it can run DDL (the key table is created, distributed, filled, joined
-- and dropped in the caller's transaction; a failure rolls it back with everything else).
-- Citus is found by catalog lookups and called through dynamic SQL: the extension creates
-- and runs without Citus (any other table goes to hamming_pairs). Every name that becomes
-- SQL is a regclass or quoted with %I; the search path is pinned.
CREATE FUNCTION hamming_pairs_distributed(tbl regclass, key_column text, signature_column text, max_distance integer)
    RETURNS TABLE (a bigint, b bigint, distance integer)
    STRICT VOLATILE PARALLEL UNSAFE LANGUAGE plpgsql
    SET search_path = @extschema@, pg_catalog, pg_temp
AS $function$
DECLARE
    distributed boolean := false;
    key_type regtype;
    sig_type regtype;
    rows_with_code bigint;
    null_keys bigint;
    blocks integer;
    keys text;
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1 AND partmethod = ''h'')'
            INTO distributed USING tbl;
    END IF;
    IF NOT distributed THEN
        -- a plain table, or a reference or local table of Citus: its rows are on this node
        RETURN QUERY SELECT * FROM hamming_pairs(tbl, key_column, signature_column, max_distance);
        RETURN;
    END IF;
    SELECT t.oid INTO key_type FROM pg_attribute c JOIN pg_type t ON t.oid = c.atttypid
        WHERE c.attrelid = tbl AND c.attname = key_column AND c.attnum > 0 AND NOT c.attisdropped;
    SELECT CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END INTO sig_type
        FROM pg_attribute c JOIN pg_type t ON t.oid = c.atttypid
        WHERE c.attrelid = tbl AND c.attname = signature_column AND c.attnum > 0 AND NOT c.attisdropped;
    IF key_type IS NULL OR sig_type IS NULL THEN
        RAISE EXCEPTION 'hamming_pairs_distributed: no column %', quote_ident(CASE WHEN key_type IS NULL THEN key_column ELSE signature_column END)
            USING ERRCODE = 'undefined_column';
    END IF;
    IF key_type NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'hamming_pairs_distributed: the key column % has type %; keys must be of an integer type (smallint, integer or bigint)',
            quote_ident(key_column), key_type USING ERRCODE = 'datatype_mismatch';
    END IF;
    IF sig_type NOT IN ('simhash64'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'hamming_pairs_distributed: the signature column % has type %; only 64-bit codes (simhash64, bigint) have join keys',
            quote_ident(signature_column), sig_type USING ERRCODE = 'feature_not_supported',
            HINT = 'hamming_pairs pairs hash256 and hash128 codes, reading the rows through the coordinator.';
    END IF;
    blocks := hamming_join_blocks(0, max_distance);  -- checks max_distance first (22023)
    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE %1$I IS NULL) FROM %2$s WHERE %3$I IS NOT NULL',
                   key_column, tbl, signature_column)
        INTO rows_with_code, null_keys;
    IF null_keys > 0 THEN
        RAISE EXCEPTION 'hamming_pairs_distributed: key column has NULLs' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    blocks := hamming_join_blocks(rows_with_code, max_distance);
    -- beside the table, under a name no other call uses; never visible to other sessions
    -- (dropped before the caller's transaction ends)
    SELECT format('%I.%I', n.nspname, 'neardup_pair_keys_' || pg_backend_pid() || '_'
                  || substr(md5(clock_timestamp()::text || random()::text), 1, 8))
        INTO keys FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
    -- unlogged: it never outlives the call, and skipping the WAL of its C(blocks, k) rows a
    -- fingerprint filled it in 5.6 s instead of 9.8 s (1 M rows, 10 M keys)
    EXECUTE format('CREATE UNLOGGED TABLE %s (key bigint, id bigint, fp simhash64)', keys);
    EXECUTE 'SELECT pg_catalog.create_distributed_table($1, ''key'')' USING keys::regclass;
    -- Citus repartitions: each worker sends its rows' keys to the workers holding them
    EXECUTE format('INSERT INTO %1$s SELECT j, %2$I, %3$I::bigint::simhash64 FROM %4$s, unnest(hamming_join_keys(%3$I::bigint::simhash64, %5$s, %6$s)) j WHERE %3$I IS NOT NULL',
                   keys, key_column, signature_column, tbl, max_distance, blocks);
    -- without statistics each shard's join is planned for a small table: at 1 M rows (10 M
    -- keys, 32 shards) the join took 9.6 s unanalyzed, 4.0 s after a 1.4 s ANALYZE
    EXECUTE format('ANALYZE %s', keys);
    RETURN QUERY EXECUTE format(
        'SELECT x.id, y.id, hamming(x.fp, y.fp) FROM %1$s x JOIN %1$s y ON x.key = y.key
         WHERE x.id < y.id AND hamming_join_key(x.fp, y.fp, %2$s, %3$s) = x.key',
        keys, max_distance, blocks);
    EXECUTE format('DROP TABLE %s', keys);
END
$function$;
COMMENT ON FUNCTION hamming_pairs_distributed(regclass, text, text, integer) IS
    'hamming_pairs of a Citus distributed table (64-bit codes, unique keys), paired on the workers through join keys in a table of its own distributed by key (created and dropped in the call, which needs CREATE on the table''s schema); other tables go to hamming_pairs';
