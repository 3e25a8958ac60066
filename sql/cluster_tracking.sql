-- Incremental duplicate clusters (src/cluster_tracking): one call creates the cluster table,
-- fills it with the batch clustering and installs the statement-level triggers that keep it
-- current. The trigger function neardup_track_clusters is pgrx's.

CREATE FUNCTION neardup_cluster_tracking(
    tbl regclass, clusters_table text, id_column text, signature_column text,
    max_distance integer, priority text DEFAULT NULL)
RETURNS bigint
VOLATILE LANGUAGE plpgsql AS $$
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
    -- No write may slip in between filling the table and installing the triggers.
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
    SELECT string_agg(quote_ident(part), '.') INTO clusters FROM unnest(parse_ident(clusters_table)) AS part;
    EXECUTE format('CREATE TABLE %s (id bigint PRIMARY KEY, cluster_id bigint NOT NULL,
                                     is_representative boolean NOT NULL)', clusters);
    -- The triggers name it schema-qualified, so they find it whatever the search_path.
    SELECT format('%I.%I', n.nspname, c.relname), c.relname INTO clusters, clusters_name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = to_regclass(clusters);
    EXECUTE format('CREATE INDEX ON %s (cluster_id)', clusters);
    EXECUTE format('INSERT INTO %s SELECT * FROM neardup_clusters($1, $2, $3, $4, $5)', clusters)
        USING tbl, id_column, signature_column, max_distance, priority;
    GET DIAGNOSTICS rows_clustered = ROW_COUNT;
    -- The triggers' queries are planned with these statistics.
    EXECUTE format('ANALYZE %s', clusters);
    args := concat_ws(', ', quote_literal(clusters), quote_literal(id_column),
                      quote_literal(signature_column), quote_literal(max_distance::text),
                      quote_literal(priority));
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS neardup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION neardup_track_clusters(%s)',
                   clusters_name || '_insert', tbl, args);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s
                    REFERENCING OLD TABLE AS neardup_old NEW TABLE AS neardup_new
                    FOR EACH STATEMENT EXECUTE FUNCTION neardup_track_clusters(%s)',
                   clusters_name || '_update', tbl, args);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS neardup_old
                    FOR EACH STATEMENT EXECUTE FUNCTION neardup_track_clusters(%s)',
                   clusters_name || '_delete', tbl, args);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s
                    FOR EACH STATEMENT EXECUTE FUNCTION neardup_track_clusters(%s)',
                   clusters_name || '_truncate', tbl, args);
    RETURN rows_clustered;
END
$$;

COMMENT ON FUNCTION neardup_cluster_tracking(regclass, text, text, text, integer, text) IS
    'creates a cluster table (id, cluster_id, is_representative) filled from neardup_clusters and the triggers that keep it current; returns the number of rows clustered';
