-- neardup 0.3.0 -> 0.4.0: ALTER EXTENSION neardup UPDATE runs this in a 0.3.0 database.
-- Afterwards the extension's objects must equal those of a fresh CREATE EXTENSION neardup
-- (tests/integration/check_upgrade.sh compares the two catalogs).
--
-- 0.4.0 adds MinHash LSH (the lsh_bands type, lsh_bands(), lsh_params(), the && operator
-- and its GIN operator class, minhash_pairs()), character n-gram sketches (a four-argument
-- minhash), clusters on minhash sketches and clusters without chaining (neardup_clusters
-- overloads with a method), and cluster tracking on minhash sketches. Nothing existing is
-- dropped or changed: views and indexes over minhash() and neardup_clusters() keep working,
-- and every stored value reads as before.

-- src/lsh/mod.rs:31
CREATE TYPE lsh_bands; -- shell, completed by sql/lsh.sql

-- src/lsh/gin.rs:60
-- neardup::lsh::gin::lsh_bands_gin_consistent

CREATE FUNCTION lsh_bands_gin_consistent(internal, smallint, lsh_bands, integer, internal, internal, internal, internal)
    RETURNS boolean IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'lsh_bands_gin_consistent_wrapper';

-- src/lsh/gin.rs:43
-- neardup::lsh::gin::lsh_bands_gin_extract_query

CREATE FUNCTION lsh_bands_gin_extract_query(lsh_bands, internal, smallint, internal, internal, internal, internal)
    RETURNS internal IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'lsh_bands_gin_extract_query_wrapper';

-- src/lsh/gin.rs:27
-- neardup::lsh::gin::lsh_bands_gin_extract_value

CREATE FUNCTION lsh_bands_gin_extract_value(lsh_bands, internal, internal)
    RETURNS internal IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'lsh_bands_gin_extract_value_wrapper';

-- src/lsh/mod.rs:143
-- neardup::lsh::lsh_params
CREATE  FUNCTION "lsh_params"(
	"threshold" double precision, /* f64 */
	"num_hashes" INT DEFAULT 84, /* i32 */
	"false_positive_weight" double precision DEFAULT 0.5, /* f64 */
	"false_negative_weight" double precision DEFAULT 0.5 /* f64 */
) RETURNS TABLE (
	"bands" INT,  /* i32 */
	"rows" INT,  /* i32 */
	"false_positive" double precision,  /* f64 */
	"false_negative" double precision  /* f64 */
)
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_params_wrapper';

-- src/lsh/pairs.rs:102
-- neardup::lsh::pairs::minhash_pairs

CREATE FUNCTION minhash_pairs(tbl regclass, key_column text, sketch_column text, threshold double precision,
                              bands integer DEFAULT NULL, "rows" integer DEFAULT NULL)
    RETURNS TABLE (a bigint, b bigint, jaccard double precision)
    STABLE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', 'minhash_pairs_wrapper';
COMMENT ON FUNCTION minhash_pairs(regclass, text, text, double precision, integer, integer) IS
    'all pairs of rows whose minhash sketches share an LSH band and agree on at least threshold of their minvalues, each once, a < b';

-- src/clusters.rs:290
-- neardup::clusters::neardup_clusters_minhash

CREATE FUNCTION neardup_clusters(tbl regclass, id_column text, signature_column text,
                                 min_jaccard double precision, priority text DEFAULT NULL,
                                 method text DEFAULT 'components')
    RETURNS TABLE (id bigint, cluster_id bigint, is_representative boolean)
    STABLE LANGUAGE c AS 'MODULE_PATHNAME', 'neardup_clusters_minhash_wrapper';
COMMENT ON FUNCTION neardup_clusters(regclass, text, text, double precision, text, text) IS
    'every row of the table with its cluster of minhash near-duplicates (pairs sharing an LSH band with a Jaccard estimate of at least min_jaccard, as minhash_pairs finds them), labelled by its smallest id, and whether it is the cluster''s representative; method ''components'' or ''representatives'' as for simhash';

-- src/clusters.rs:200
-- neardup::clusters::neardup_clusters_by_method

CREATE FUNCTION neardup_clusters(tbl regclass, id_column text, signature_column text,
                                 max_distance integer, priority text, method text)
    RETURNS TABLE (id bigint, cluster_id bigint, is_representative boolean)
    STABLE LANGUAGE c AS 'MODULE_PATHNAME', 'neardup_clusters_by_method_wrapper';
COMMENT ON FUNCTION neardup_clusters(regclass, text, text, integer, text, text) IS
    'neardup_clusters with a method: ''components'' (the pairs'' connected components) or ''representatives'' (every member within max_distance of its representative)';

-- src/shingling/mod.rs:155
-- neardup::shingling::minhash_features

CREATE FUNCTION minhash(body text, num_hashes integer, shingle integer, ngram integer)
    RETURNS minhash_sketch IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'minhash_features_wrapper';
COMMENT ON FUNCTION minhash(text, integer, integer, integer) IS
    'minhash sketch of the text''s word shingles, or with ngram > 0 of its character n-grams';

-- src/lsh/mod.rs:55
-- neardup::lsh::lsh_bands_in
-- requires:
--   lsh_shell
CREATE  FUNCTION "lsh_bands_in"(
	"input" cstring /* & CStr */
) RETURNS lsh_bands /* LshBands */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_bands_in_wrapper';

-- src/lsh/mod.rs:130
-- neardup::lsh::lsh_bands_of_supershingles
-- requires:
--   lsh_shell
--   shingling_types
CREATE  FUNCTION "lsh_bands_of_supershingles"(
	"vector" supershingle_vector /* Supershingles */
) RETURNS lsh_bands /* LshBands */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_bands_of_supershingles_wrapper';

-- src/lsh/mod.rs:62
-- neardup::lsh::lsh_bands_out
-- requires:
--   lsh_shell
CREATE  FUNCTION "lsh_bands_out"(
	"value" lsh_bands /* LshBands */
) RETURNS cstring /* CString */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_bands_out_wrapper';

-- src/lsh/mod.rs:67
-- neardup::lsh::lsh_bands_recv
-- requires:
--   lsh_shell
CREATE  FUNCTION "lsh_bands_recv"(
	"buf" internal /* Internal */
) RETURNS lsh_bands /* LshBands */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_bands_recv_wrapper';

-- src/lsh/mod.rs:74
-- neardup::lsh::lsh_bands_send
-- requires:
--   lsh_shell
CREATE  FUNCTION "lsh_bands_send"(
	"value" lsh_bands /* LshBands */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_bands_send_wrapper';

-- src/lsh/mod.rs:136
-- neardup::lsh::lsh_share_band
-- requires:
--   lsh_shell
CREATE  FUNCTION "lsh_share_band"(
	"a" lsh_bands, /* LshBands */
	"b" lsh_bands /* LshBands */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_share_band_wrapper';

-- src/lsh/mod.rs:36
-- creates:
--   Type(neardup::lsh::LshBands)

-- requires:
--   lsh_shell
--   shingling_types
--   lsh_bands_in
--   lsh_bands_out
--   lsh_bands_recv
--   lsh_bands_send
--   lsh_share_band
--   lsh_bands_of_supershingles
--   gin::lsh_bands_gin_extract_value
--   gin::lsh_bands_gin_extract_query
--   gin::lsh_bands_gin_consistent

-- lsh_bands (src/lsh): the band keys of a minhash sketch, stored as their versioned binary
-- encoding (core/src/lsh_encoding.rs): a 6-byte header and 8 bytes per band.
CREATE TYPE lsh_bands (
    INPUT = lsh_bands_in,
    OUTPUT = lsh_bands_out,
    RECEIVE = lsh_bands_recv,
    SEND = lsh_bands_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = plain
);
COMMENT ON TYPE lsh_bands IS
    'MinHash LSH band keys of a sketch, one per band of rows minvalues (text form b<bands>r<rows>:<hex>:...)';

-- Supershingles are the bands of 14 rows of the default sketch.
CREATE CAST (supershingle_vector AS lsh_bands) WITH FUNCTION lsh_bands_of_supershingles(supershingle_vector);

-- a && b: the sketches share at least one band (their texts are LSH candidates).
CREATE OPERATOR && (
    LEFTARG = lsh_bands, RIGHTARG = lsh_bands, FUNCTION = lsh_share_band,
    COMMUTATOR = &&, RESTRICT = matchingsel, JOIN = matchingjoinsel
);

CREATE OPERATOR CLASS lsh_bands_ops DEFAULT FOR TYPE lsh_bands USING gin AS
    OPERATOR 1 && (lsh_bands, lsh_bands),
    FUNCTION 1 btint8cmp(bigint, bigint),
    FUNCTION 2 lsh_bands_gin_extract_value(lsh_bands, internal, internal),
    FUNCTION 3 lsh_bands_gin_extract_query(lsh_bands, internal, smallint, internal, internal, internal, internal),
    FUNCTION 4 lsh_bands_gin_consistent(internal, smallint, lsh_bands, integer, internal, internal, internal, internal),
    STORAGE bigint;

-- src/lsh/mod.rs:86
-- neardup::lsh::lsh_bands
-- requires:
--   lsh_shell
--   shingling_types
CREATE  FUNCTION "lsh_bands"(
	"sketch" minhash_sketch, /* Minhash */
	"bands" INT, /* i32 */
	"rows" INT /* i32 */
) RETURNS lsh_bands /* LshBands */
IMMUTABLE STRICT PARALLEL SAFE  COST 50 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_bands_of_sketch_wrapper';

-- src/lsh/mod.rs:121
-- neardup::lsh::lsh_bands
-- requires:
--   lsh_shell
--   shingling_types
CREATE  FUNCTION "lsh_bands"(
	"sketch" minhash_sketch, /* Minhash */
	"threshold" double precision /* f64 */
) RETURNS lsh_bands /* LshBands */
IMMUTABLE STRICT PARALLEL SAFE  COST 50 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_bands_for_threshold_wrapper';


-- Cluster tracking on minhash sketches and with a method: neardup_cluster_tracking gains
-- overloads sharing neardup_cluster_tracking_install. The old function is only ever called
-- (triggers name neardup_track_clusters, which is unchanged), so it can be dropped; triggers
-- installed by 0.3.0 keep their arguments and their meaning.
DROP FUNCTION neardup_cluster_tracking(regclass, text, text, text, integer, text);
-- src/cluster_tracking/mod.rs:51
-- requires:
--   neardup_track_clusters
--   hamming_query_operators

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

