-- neardup 0.1.0 -> 0.2.0: ALTER EXTENSION neardup UPDATE runs this in a 0.1.0 database.
-- Afterwards the extension's objects must equal those of a fresh CREATE EXTENSION neardup:
-- tests/integration/check_upgrade.sh compares the two catalogs, and scripts/schema_diff.sh
-- prints what changed between the two install scripts.
--
-- Stored values need nothing: every type keeps its 0.1.0 encoding (check_upgrade.sh checks
-- them byte for byte against 0.2.0's functions), and so do the hamming and GIN indexes.

-- 0.2.0 labels these PARALLEL RESTRICTED.
ALTER FUNCTION hamming_index_check(regclass) PARALLEL RESTRICTED;
ALTER FUNCTION hamming_pairs(regclass, text, text, integer) PARALLEL RESTRICTED;
-- As amcheck's functions: it reads whole tables and takes a ShareLock on them, so only the
-- owner of the extension's objects runs it, and whoever that owner grants it to.
REVOKE ALL ON FUNCTION hamming_index_check(regclass) FROM PUBLIC;

ALTER FUNCTION neardup_clusters(regclass, text, text, integer, text) STABLE;

COMMENT ON FUNCTION neardup_components(text) IS
    'connected components of the edges the query returns (its first two columns, of an integer type), labelled by their smallest node';

-- Schema-qualified throughout, checks the id column's unique index and the cluster table's
-- name length (sql/cluster_tracking.sql).
CREATE OR REPLACE FUNCTION neardup_cluster_tracking(
    tbl regclass, clusters_table text, id_column text, signature_column text,
    max_distance integer, priority text DEFAULT NULL)
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
       OR max_distance IS NULL THEN
        RAISE EXCEPTION 'neardup_cluster_tracking: only priority may be NULL'
            USING ERRCODE = 'null_value_not_allowed';
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
    EXECUTE pg_catalog.format('INSERT INTO %s SELECT * FROM @extschema@.neardup_clusters($1, $2, $3, $4, $5)', clusters)
        USING tbl, id_column, signature_column, max_distance, priority;
    GET DIAGNOSTICS rows_clustered = ROW_COUNT;
    -- The triggers' queries are planned with these statistics.
    EXECUTE pg_catalog.format('ANALYZE %s', clusters);
    args := pg_catalog.concat_ws(', ', pg_catalog.quote_literal(clusters), pg_catalog.quote_literal(id_column),
                      pg_catalog.quote_literal(signature_column), pg_catalog.quote_literal(max_distance::text),
                      pg_catalog.quote_literal(priority));
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
