-- minhash_pairs_distributed: minhash_pairs of a Citus distributed table, paired on the
-- workers (the LSH band keys of each sketch in a key table distributed by key, a co-located
-- self-join, each pair verified with jaccard and reported at the lowest band it shares), as
-- sql/pairs_distributed.sql's hamming_pairs_distributed does for Hamming codes: PL/pgSQL for
-- its DDL, Citus found by catalog lookups, every name a regclass or quoted, the search path
-- pinned.
CREATE FUNCTION minhash_pairs_distributed(tbl regclass, key_column text, sketch_column text, threshold double precision,
                                          bands integer DEFAULT NULL, "rows" integer DEFAULT NULL)
    RETURNS TABLE (a bigint, b bigint, jaccard double precision)
    VOLATILE PARALLEL UNSAFE LANGUAGE plpgsql
    SET search_path = @extschema@, pg_catalog, pg_temp
AS $function$
DECLARE
    distributed boolean := false;
    key_type regtype;
    sketch_type regtype;
    null_keys bigint;
    keys text;
    banded text;
BEGIN
    -- NULL in any of the first four arguments returns nothing, as minhash_pairs does
    IF tbl IS NULL OR key_column IS NULL OR sketch_column IS NULL OR threshold IS NULL THEN
        RETURN;
    END IF;
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1 AND partmethod = ''h'')'
            INTO distributed USING tbl;
    END IF;
    IF NOT distributed THEN
        RETURN QUERY SELECT * FROM minhash_pairs(tbl, key_column, sketch_column, threshold, bands, "rows");
        RETURN;
    END IF;
    IF NOT (threshold > 0 AND threshold <= 1) THEN
        RAISE EXCEPTION 'minhash_pairs_distributed: the Jaccard threshold must be greater than 0 and at most 1, not %', threshold
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (bands IS NULL) <> ("rows" IS NULL) THEN
        RAISE EXCEPTION 'minhash_pairs_distributed: give both bands and rows, or neither to choose them from the threshold'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT c.atttypid INTO key_type FROM pg_attribute c
        WHERE c.attrelid = tbl AND c.attname = key_column AND c.attnum > 0 AND NOT c.attisdropped;
    SELECT CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END INTO sketch_type
        FROM pg_attribute c JOIN pg_type t ON t.oid = c.atttypid
        WHERE c.attrelid = tbl AND c.attname = sketch_column AND c.attnum > 0 AND NOT c.attisdropped;
    IF key_type IS NULL OR sketch_type IS NULL THEN
        RAISE EXCEPTION 'minhash_pairs_distributed: no column %', quote_ident(CASE WHEN key_type IS NULL THEN key_column ELSE sketch_column END)
            USING ERRCODE = 'undefined_column';
    END IF;
    IF key_type NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'minhash_pairs_distributed: the key column % has type %; keys must be of an integer type (smallint, integer or bigint)',
            quote_ident(key_column), key_type USING ERRCODE = 'datatype_mismatch';
    END IF;
    IF sketch_type <> 'minhash_sketch'::regtype THEN
        RAISE EXCEPTION 'minhash_pairs_distributed: the sketch column % has type %, not minhash_sketch',
            quote_ident(sketch_column), sketch_type USING ERRCODE = 'datatype_mismatch';
    END IF;
    EXECUTE format('SELECT count(*) FROM %1$s WHERE %2$I IS NULL AND %3$I IS NOT NULL', tbl, key_column, sketch_column)
        INTO null_keys;
    IF null_keys > 0 THEN
        RAISE EXCEPTION 'minhash_pairs_distributed: key column has NULLs' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- every sketch must compare with every other, as minhash_pairs checks as it reads them:
    -- otherwise only two sketches of different sizes meeting in a band would fail, or not
    BEGIN
        EXECUTE format('SELECT count(*) FROM %1$s, (SELECT %2$I AS first FROM %1$s WHERE %2$I IS NOT NULL LIMIT 1) f
                        WHERE jaccard(%2$I, f.first) < 0', tbl, sketch_column);
    EXCEPTION WHEN invalid_parameter_value THEN
        RAISE EXCEPTION 'minhash_pairs_distributed: the sketches of % cannot all be compared with one another (%)', tbl, SQLERRM
            USING ERRCODE = 'invalid_parameter_value';
    END;
    -- the banding minhash_pairs uses: given, or chosen from the threshold ($1: the threshold,
    -- $2 and $3: bands and rows, bound as parameters so that the threshold is exact)
    banded := CASE WHEN bands IS NULL THEN 'lsh_bands(%1$s, $1)' ELSE 'lsh_bands(%1$s, $2, $3)' END;
    SELECT format('%I.%I', n.nspname, 'neardup_band_keys_' || pg_backend_pid() || '_'
                  || substr(md5(clock_timestamp()::text || random()::text), 1, 8))
        INTO keys FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
    EXECUTE format('CREATE UNLOGGED TABLE %s (key bigint, id bigint, mh minhash_sketch)', keys);
    EXECUTE 'SELECT pg_catalog.create_distributed_table($1, ''key'')' USING keys::regclass;
    -- Citus repartitions: each worker sends its rows' band keys to the workers holding them
    EXECUTE format('INSERT INTO %1$s SELECT k, %2$I, %3$I FROM %4$s, unnest(lsh_band_keys(%5$s)) k WHERE %3$I IS NOT NULL',
                   keys, key_column, sketch_column, tbl, format(banded, quote_ident(sketch_column)))
        USING threshold, bands, "rows";
    EXECUTE format('ANALYZE %s', keys);
    RETURN QUERY EXECUTE format(
        'SELECT x.id, y.id, jaccard(x.mh, y.mh) FROM %1$s x JOIN %1$s y ON x.key = y.key
         WHERE x.id < y.id AND jaccard(x.mh, y.mh) >= $1 AND lsh_first_shared_key(%2$s, %3$s) = x.key',
        keys, format(banded, 'x.mh'), format(banded, 'y.mh'))
        USING threshold, bands, "rows";
    EXECUTE format('DROP TABLE %s', keys);
END
$function$;
COMMENT ON FUNCTION minhash_pairs_distributed(regclass, text, text, double precision, integer, integer) IS
    'minhash_pairs of a Citus distributed table (unique integer keys), paired on the workers through the LSH band keys in a table of its own distributed by key (created and dropped in the call, which needs CREATE on the table''s schema); other tables go to minhash_pairs';
