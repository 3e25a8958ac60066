-- hamming_pairs_distributed: hamming_pairs of a Citus distributed table, paired on the
-- workers. Each shard's rows are cut where the shard is (hamming_pair_parts: one part per
-- permuted table and prefix range, src/hamming_query/pair_parts.rs), the parts move between
-- the workers as a few byte strings per shard into a table distributed by part, and each
-- part is paired where it lands (hamming_part_pairs), within that worker's
-- maintenance_work_mem; the parts are sized from the caller's. To run once per shard on the
-- node holding it, the cut reads a small table colocated with tbl that names each shard,
-- filled with one value of the distribution column per shard; for a distribution column
-- of a type whose values it does not generate (not an integer, text or uuid), the pigeonhole
-- join keys of src/hamming_query/join_keys.rs go in a key table distributed by key instead,
-- a co-located self-join (slower: a row per key moves between the workers).
-- hamming_pairs itself reads a distributed table's rows through the coordinator, within its
-- maintenance_work_mem.
--
-- PL/pgSQL, so that it can run DDL (the tables are created, distributed, filled, read and
-- dropped in the caller's transaction; a failure rolls them back with everything else).
-- Citus is found by catalog lookups and called through dynamic SQL: the extension creates
-- and runs without Citus (any other table goes to hamming_pairs). Every name that becomes
-- SQL is a regclass, a regtype or quoted with %I; values are bound as parameters; the
-- search path is pinned.
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
    dist_type regtype;
    shard_value text;
    shards bigint;
    every_shard boolean;
    started timestamptz;
    suffix text;
    tasks text;
    parts text;
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
    -- beside the table, under names no other call uses; never visible to other sessions
    -- (dropped before the caller's transaction ends)
    suffix := pg_backend_pid() || '_' || substr(md5(clock_timestamp()::text || random()::text), 1, 8);
    SELECT format('%I.%I', n.nspname, 'neardup_pair_tasks_' || suffix),
           format('%I.%I', n.nspname, 'neardup_pair_parts_' || suffix),
           format('%I.%I', n.nspname, 'neardup_pair_keys_' || suffix)
        INTO tasks, parts, keys FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
    -- a value of the distribution column for each shard: generated values (integers, their
    -- text, md5 uuids) until every shard has one
    EXECUTE 'SELECT a.atttypid FROM pg_catalog.pg_dist_partition p JOIN pg_attribute a
             ON a.attrelid = p.logicalrelid AND a.attname = pg_catalog.column_to_column_name(p.logicalrelid, p.partkey)
             WHERE p.logicalrelid = $1'
        INTO dist_type USING tbl;
    shard_value := CASE
        WHEN dist_type IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype, 'numeric'::regtype) THEN 'g'
        WHEN dist_type IN ('text'::regtype, 'character varying'::regtype) THEN 'g::text'
        WHEN dist_type = 'uuid'::regtype THEN 'md5(g::text)::uuid'
    END;
    IF shard_value IS NOT NULL THEN
        EXECUTE 'SELECT count(*) FROM pg_catalog.pg_dist_shard WHERE logicalrelid = $1' INTO shards USING tbl;
        EXECUTE format('CREATE UNLOGGED TABLE %s (v %s, shard text)', tasks, dist_type);
        EXECUTE 'SELECT pg_catalog.create_distributed_table($1, ''v'', colocate_with => $2)'
            USING tasks::regclass, tbl::text;
        -- shard_name leaves out the schema public: put it in, whatever the workers' search_path
        EXECUTE format('INSERT INTO %s SELECT DISTINCT ON (s) v, $3 || pg_catalog.shard_name($1, s)
                        FROM (SELECT (%s)::%s AS v FROM generate_series(1, $2) g) c,
                             LATERAL pg_catalog.get_shard_id_for_distribution_column($1, c.v) s
                        ORDER BY s, v',
                       tasks, shard_value, dist_type)
            USING tbl, 1000 + 50 * shards,
                  (SELECT CASE WHEN n.nspname = 'public' THEN 'public.' ELSE '' END
                   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl);
        EXECUTE format('SELECT count(*) = $1 FROM %s', tasks) INTO every_shard USING shards;
        IF every_shard THEN
            EXECUTE format('CREATE UNLOGGED TABLE %s (part integer, rows bytea)', parts);
            -- the rows are random bytes: no compression attempted
            EXECUTE format('ALTER TABLE %s ALTER COLUMN rows SET STORAGE EXTERNAL', parts);
            EXECUTE 'SELECT pg_catalog.create_distributed_table($1, ''part'', colocate_with => ''none'')'
                USING parts::regclass;
            -- each shard cut where it is; Citus repartitions the parts between the workers
            started := clock_timestamp();
            EXECUTE format('INSERT INTO %s SELECT p.part, p.rows FROM %s t,
                                LATERAL hamming_pair_parts(t.shard::regclass, $1, $2, $3, $4, $5) p',
                           parts, tasks)
                USING key_column, signature_column, max_distance, rows_with_code,
                      pg_size_bytes(current_setting('maintenance_work_mem'));
            RAISE DEBUG 'hamming_pairs_distributed: % shards of % cut into parts on the workers and moved in % ms',
                shards, tbl, round(extract(epoch FROM clock_timestamp() - started) * 1000);
            started := clock_timestamp();
            RETURN QUERY EXECUTE format(
                'SELECT r.a, r.b, r.distance
                 FROM (SELECT part, array_agg(rows) AS rows FROM %s GROUP BY part) g,
                      LATERAL hamming_part_pairs(g.rows) r', parts);
            RAISE DEBUG 'hamming_pairs_distributed: the parts paired on the workers in % ms',
                round(extract(epoch FROM clock_timestamp() - started) * 1000);
            EXECUTE format('DROP TABLE %s, %s', parts, tasks);
            RETURN;
        END IF;
        EXECUTE format('DROP TABLE %s', tasks);
    END IF;
    RAISE DEBUG 'hamming_pairs_distributed: % is distributed by a column of type %: join keys in a key table', tbl, dist_type;
    blocks := hamming_join_blocks(rows_with_code, max_distance);
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
    'hamming_pairs of a Citus distributed table (64-bit codes, unique keys), paired on the workers: each shard cut into parts where it is, each part paired where it lands (tables of its own, created and dropped in the call, which needs CREATE on the table''s schema); other tables go to hamming_pairs';
