-- neardup 0.4.0 -> 0.5.0: ALTER EXTENSION neardup UPDATE runs this in a 0.4.0 database.
-- Afterwards the extension's objects must equal those of a fresh CREATE EXTENSION neardup
-- (tests/integration/check_upgrade.sh compares the two catalogs).
--
-- 0.5.0 adds batch lookups (hamming_batch) and join keys for sharded all-pairs.

/* <begin connected objects> */
-- src/hamming_query/mod.rs:67
CREATE TYPE hamming_batch; -- shell, completed below
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/estimate.rs:273
-- neardup::hamming_query::estimate::hamming_batch_join
CREATE  FUNCTION "hamming_batch_join"(
	"root" internal, /* Internal */
	"_operator" oid, /* pg_sys :: Oid */
	"args" internal, /* Internal */
	"_join_type" smallint, /* i16 */
	"_sjinfo" internal /* Internal */
) RETURNS double precision /* f64 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_batch_join_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/estimate.rs:258
-- neardup::hamming_query::estimate::hamming_batch_restrict
CREATE  FUNCTION "hamming_batch_restrict"(
	"root" internal, /* Internal */
	"_operator" oid, /* pg_sys :: Oid */
	"args" internal, /* Internal */
	"var_relid" INT /* i32 */
) RETURNS double precision /* f64 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_batch_restrict_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/batch.rs:36
-- neardup::hamming_query::batch::hamming_batch_in
-- requires:
--   hamming_batch_shell
CREATE  FUNCTION "hamming_batch_in"(
	"input" cstring /* & CStr */
) RETURNS hamming_batch /* HammingBatch */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_batch_in_wrapper';

-- src/hamming_query/batch.rs:43
-- neardup::hamming_query::batch::hamming_batch_out
-- requires:
--   hamming_batch_shell
CREATE  FUNCTION "hamming_batch_out"(
	"value" hamming_batch /* HammingBatch */
) RETURNS cstring /* CString */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_batch_out_wrapper';

-- src/hamming_query/batch.rs:48
-- neardup::hamming_query::batch::hamming_batch_recv
-- requires:
--   hamming_batch_shell
CREATE  FUNCTION "hamming_batch_recv"(
	"buf" internal /* Internal */
) RETURNS hamming_batch /* HammingBatch */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_batch_recv_wrapper';

-- src/hamming_query/batch.rs:55
-- neardup::hamming_query::batch::hamming_batch_send
-- requires:
--   hamming_batch_shell
CREATE  FUNCTION "hamming_batch_send"(
	"value" hamming_batch /* HammingBatch */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_batch_send_wrapper';

-- src/hamming_query/mod.rs:73
-- creates:
--   Type(batch::HammingBatch)

-- requires:
--   hamming_batch_shell
--   batch::hamming_batch_in
--   batch::hamming_batch_out
--   batch::hamming_batch_recv
--   batch::hamming_batch_send

CREATE TYPE hamming_batch (
    INPUT = hamming_batch_in,
    OUTPUT = hamming_batch_out,
    RECEIVE = hamming_batch_recv,
    SEND = hamming_batch_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE hamming_batch IS
    'keyed fingerprints and one Hamming radius, the right side of <@@ for batch checks (text form r<radius>:<key>=<hex>,...)';
/* </end connected objects> */

/* <begin connected objects> */
-- src/join_keys.rs:64
-- neardup::join_keys::hamming_join_blocks
CREATE  FUNCTION "hamming_join_blocks"(
	"rows" bigint, /* i64 */
	"max_distance" INT /* i32 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_join_blocks_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/batch.rs:194
-- neardup::hamming_query::batch::batch_keys_simhash64

CREATE FUNCTION hamming_batch_keys(batch hamming_batch, fingerprint simhash64) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'batch_keys_simhash64_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/batch.rs:177
-- neardup::hamming_query::batch::batch_contains_int8

CREATE FUNCTION hamming_batch_contains(hamming_batch, bigint) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'batch_contains_int8_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/join_keys.rs:55
-- neardup::join_keys::hamming_join_key
CREATE  FUNCTION "hamming_join_key"(
	"a" simhash64, /* Simhash64 */
	"b" simhash64, /* Simhash64 */
	"max_distance" INT, /* i32 */
	"blocks" INT /* i32 */
) RETURNS bigint /* Option < i64 > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_join_key_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/batch.rs:169
-- neardup::hamming_query::batch::batch_contains_simhash64

CREATE FUNCTION hamming_batch_contains(hamming_batch, simhash64) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'batch_contains_simhash64_wrapper';
/* </end connected objects> */

CREATE FUNCTION hamming_batch(keys bigint[], fingerprints simhash64[], radius integer)
    RETURNS hamming_batch IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'hamming_batch_of_arrays_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/join_keys.rs:46
-- neardup::join_keys::hamming_join_keys
CREATE  FUNCTION "hamming_join_keys"(
	"fingerprint" simhash64, /* Simhash64 */
	"max_distance" INT, /* i32 */
	"blocks" INT /* i32 */
) RETURNS bigint[] /* Vec < i64 > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_join_keys_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/batch.rs:202
-- neardup::hamming_query::batch::batch_keys_int8

CREATE FUNCTION hamming_batch_keys(batch hamming_batch, fingerprint bigint) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'batch_keys_int8_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/batch.rs:161
-- neardup::hamming_query::batch::within_batch_int8

CREATE FUNCTION within_hamming_batch(bigint, hamming_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'within_batch_int8_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/batch.rs:153
-- neardup::hamming_query::batch::within_batch_simhash64

CREATE FUNCTION within_hamming_batch(simhash64, hamming_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'within_batch_simhash64_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/hamming_query/mod.rs:97
-- requires:
--   hamming_batch_type
--   simhash64_operators
--   batch::within_batch_simhash64
--   batch::within_batch_int8
--   batch::batch_contains_simhash64
--   batch::batch_contains_int8
--   estimate::hamming_batch_restrict
--   estimate::hamming_batch_join

-- value <@@ batch: within the batch's radius of at least one of its fingerprints
-- (src/hamming_query/batch.rs). Strategy 3 of the hamming index's operator classes
-- (sql/hamming_am.sql): a shard probes its index once per fingerprint of the batch.
CREATE OPERATOR <@@ (
    LEFTARG = simhash64, RIGHTARG = hamming_batch, FUNCTION = within_hamming_batch,
    COMMUTATOR = @@>, RESTRICT = hamming_batch_restrict, JOIN = hamming_batch_join
);
CREATE OPERATOR @@> (
    LEFTARG = hamming_batch, RIGHTARG = simhash64, FUNCTION = hamming_batch_contains,
    COMMUTATOR = <@@, RESTRICT = hamming_batch_restrict, JOIN = hamming_batch_join
);
CREATE OPERATOR <@@ (
    LEFTARG = bigint, RIGHTARG = hamming_batch, FUNCTION = within_hamming_batch,
    COMMUTATOR = @@>, RESTRICT = hamming_batch_restrict, JOIN = hamming_batch_join
);
CREATE OPERATOR @@> (
    LEFTARG = hamming_batch, RIGHTARG = bigint, FUNCTION = hamming_batch_contains,
    COMMUTATOR = <@@, RESTRICT = hamming_batch_restrict, JOIN = hamming_batch_join
);
/* </end connected objects> */

-- The hamming index's operator classes gain strategy 3, `col <@@ hamming_batch` (a fresh
-- install adds it the same way, after creating the classes: sql/hamming_am.sql).
ALTER OPERATOR FAMILY simhash64_hamming_ops USING hamming ADD
    OPERATOR 3 <@@ (simhash64, hamming_batch);
ALTER OPERATOR FAMILY int8_hamming_ops USING hamming ADD
    OPERATOR 3 <@@ (bigint, hamming_batch);

-- neardup_cluster_tracking checks the caller's privileges before it looks at the table
-- (issue 24: it named the missing unique index of a table the caller may not read).
CREATE OR REPLACE FUNCTION neardup_cluster_tracking_install(
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
