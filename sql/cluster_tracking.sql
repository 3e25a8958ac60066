-- Incremental duplicate clusters (src/cluster_tracking): one call creates the cluster table,
-- fills it with the batch clustering and installs the statement-level triggers that keep it
-- current. The trigger function neardup_track_clusters is pgrx's. Its arguments: the cluster
-- table, the id column, the signature column, the threshold (read as a Jaccard estimate when
-- the column is a minhash_sketch, else as a Hamming distance), the priority ('' for none)
-- and the method; triggers of 0.3.0 have only the first five, and keep the components.

-- The work of both neardup_cluster_tracking overloads: exactly one of max_distance (a
-- simhash column) and min_jaccard (a minhash_sketch column) is given.
CREATE FUNCTION neardup_cluster_tracking_install(
    tbl regclass, clusters_table text, id_column text, signature_column text,
    max_distance integer, min_jaccard double precision, priority text, method text)
RETURNS bigint
VOLATILE LANGUAGE plpgsql AS $$
-- Every function and operator below is schema-qualified (pg_catalog, or the extension's
-- schema through @extschema@), so the function works with the extension in any schema and
-- under a search_path that puts look-alike functions first. It cannot simply SET
-- search_path: an unqualified clusters_table is created where the caller's path says.
DECLARE
    clusters text;
    clusters_name text;
    args text;
    rows_clustered bigint;
BEGIN
    IF tbl IS NULL OR clusters_table IS NULL OR id_column IS NULL OR signature_column IS NULL
       OR (max_distance IS NULL AND min_jaccard IS NULL) OR method IS NULL THEN
        RAISE EXCEPTION 'neardup_cluster_tracking: only priority may be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- Privileges before anything about the table is looked at (its columns and indexes
    -- are not the business of a role that may not read it): reading it, and the triggers.
    IF NOT pg_catalog.has_table_privilege(tbl, 'SELECT')
       OR NOT pg_catalog.has_table_privilege(tbl, 'TRIGGER') THEN
        RAISE EXCEPTION 'neardup_cluster_tracking: permission denied for table %', tbl
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Tracking needs the SELECT and TRIGGER privileges on the table.';
    END IF;
    IF NOT (method OPERATOR(pg_catalog.=) ANY (ARRAY['components', 'representatives'])) THEN
        RAISE EXCEPTION 'neardup_cluster_tracking: method must be ''components'' or ''representatives'', not ''%''', method
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The triggers find rows by id: two rows with one id would share one cluster entry.
    IF NOT EXISTS (
        SELECT FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a
            ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid
           AND a.attnum OPERATOR(pg_catalog.=) i.indkey[0]
        WHERE i.indrelid OPERATOR(pg_catalog.=) tbl AND i.indisunique AND i.indisvalid
          AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indnkeyatts OPERATOR(pg_catalog.=) 1
          AND a.attname OPERATOR(pg_catalog.=) id_column) THEN
        RAISE EXCEPTION 'neardup_cluster_tracking: column % of % has no unique index', id_column, tbl
            USING ERRCODE = 'invalid_table_definition',
                  HINT = 'Track clusters by the primary key, or add a UNIQUE constraint on the id column.';
    END IF;
    -- No write may slip in between filling the table and installing the triggers.
    EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(part), '.') INTO clusters
    FROM pg_catalog.unnest(pg_catalog.parse_ident(clusters_table)) AS part;
    -- The triggers are named after the cluster table; PostgreSQL would cut a longer name to
    -- 63 bytes, and the four would collide.
    IF pg_catalog.octet_length((pg_catalog.parse_ident(clusters_table))[pg_catalog.array_length(pg_catalog.parse_ident(clusters_table), 1)])
       OPERATOR(pg_catalog.>) 54 THEN
        RAISE EXCEPTION 'neardup_cluster_tracking: cluster table name "%" is too long', clusters_table
            USING ERRCODE = 'name_too_long',
                  HINT = 'At most 54 bytes, so that the trigger names "<name>_truncate" fit in 63.';
    END IF;
    EXECUTE pg_catalog.format('CREATE TABLE %s (id bigint PRIMARY KEY, cluster_id bigint NOT NULL,
                                     is_representative boolean NOT NULL)', clusters);
    -- The triggers name it schema-qualified, so they find it whatever the search_path.
    SELECT pg_catalog.format('%I.%I', n.nspname, c.relname), c.relname INTO clusters, clusters_name
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(clusters);
    EXECUTE pg_catalog.format('CREATE INDEX ON %s (cluster_id)', clusters);
    -- The type of $4 picks neardup_clusters' simhash or minhash overload.
    IF min_jaccard IS NULL THEN
        EXECUTE pg_catalog.format('INSERT INTO %s SELECT * FROM @extschema@.neardup_clusters($1, $2, $3, $4, $5, $6)', clusters)
            USING tbl, id_column, signature_column, max_distance, priority, method;
    ELSE
        EXECUTE pg_catalog.format('INSERT INTO %s SELECT * FROM @extschema@.neardup_clusters($1, $2, $3, $4, $5, $6)', clusters)
            USING tbl, id_column, signature_column, min_jaccard, priority, method;
    END IF;
    GET DIAGNOSTICS rows_clustered = ROW_COUNT;
    -- The triggers' queries are planned with these statistics.
    EXECUTE pg_catalog.format('ANALYZE %s', clusters);
    -- The trigger reads the threshold as a Jaccard estimate when the column is a
    -- minhash_sketch; no priority is written '' so that the method keeps its place.
    args := pg_catalog.concat_ws(', ', pg_catalog.quote_literal(clusters), pg_catalog.quote_literal(id_column),
                      pg_catalog.quote_literal(signature_column),
                      pg_catalog.quote_literal(COALESCE(max_distance::text, min_jaccard::text)),
                      pg_catalog.quote_literal(COALESCE(priority, '')),
                      pg_catalog.quote_literal(method));
    EXECUTE pg_catalog.format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS neardup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.neardup_track_clusters(%s)',
                   pg_catalog.concat(clusters_name, '_insert'), tbl, args);
    EXECUTE pg_catalog.format('CREATE TRIGGER %I AFTER UPDATE ON %s
                    REFERENCING OLD TABLE AS neardup_old NEW TABLE AS neardup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.neardup_track_clusters(%s)',
                   pg_catalog.concat(clusters_name, '_update'), tbl, args);
    EXECUTE pg_catalog.format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS neardup_old
                    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.neardup_track_clusters(%s)',
                   pg_catalog.concat(clusters_name, '_delete'), tbl, args);
    EXECUTE pg_catalog.format('CREATE TRIGGER %I AFTER TRUNCATE ON %s
                    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.neardup_track_clusters(%s)',
                   pg_catalog.concat(clusters_name, '_truncate'), tbl, args);
    RETURN rows_clustered;
END
$$;

COMMENT ON FUNCTION neardup_cluster_tracking_install(regclass, text, text, text, integer, double precision, text, text) IS
    'the work of neardup_cluster_tracking (call that instead)';

CREATE FUNCTION neardup_cluster_tracking(
    tbl regclass, clusters_table text, id_column text, signature_column text,
    max_distance integer, priority text DEFAULT NULL, method text DEFAULT 'components')
RETURNS bigint
VOLATILE LANGUAGE sql
RETURN @extschema@.neardup_cluster_tracking_install(tbl, clusters_table, id_column, signature_column,
                                                    max_distance, NULL, priority, method);

COMMENT ON FUNCTION neardup_cluster_tracking(regclass, text, text, text, integer, text, text) IS
    'creates a cluster table (id, cluster_id, is_representative) filled from neardup_clusters and the triggers that keep it current, for simhash fingerprints within max_distance (a hamming index on the column makes the triggers fast); method ''components'' or ''representatives'' as for neardup_clusters; returns the number of rows clustered';

CREATE FUNCTION neardup_cluster_tracking(
    tbl regclass, clusters_table text, id_column text, signature_column text,
    min_jaccard double precision, priority text DEFAULT NULL, method text DEFAULT 'components')
RETURNS bigint
VOLATILE LANGUAGE sql
RETURN @extschema@.neardup_cluster_tracking_install(tbl, clusters_table, id_column, signature_column,
                                                    NULL, min_jaccard, priority, method);

COMMENT ON FUNCTION neardup_cluster_tracking(regclass, text, text, text, double precision, text, text) IS
    'creates a cluster table (id, cluster_id, is_representative) filled from neardup_clusters and the triggers that keep it current, for minhash_sketch signatures sharing an LSH band with a Jaccard estimate of at least min_jaccard; the triggers search neighbours through a GIN index on the expression lsh_bands(signature_column, min_jaccard), which makes them fast (without it each statement scans the table); method ''components'' or ''representatives'' as for neardup_clusters; returns the number of rows clustered';
