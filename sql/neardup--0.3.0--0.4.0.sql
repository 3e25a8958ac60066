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

-- src/lsh/mod.rs:141
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

-- src/lsh/mod.rs:128
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

-- src/lsh/mod.rs:134
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

-- src/lsh/mod.rs:119
-- neardup::lsh::lsh_bands
-- requires:
--   lsh_shell
--   shingling_types
CREATE  FUNCTION "lsh_bands"(
	"sketch" minhash_sketch, /* Minhash */
	"threshold" double precision /* f64 */
) RETURNS lsh_bands /* LshBands */
IMMUTABLE STRICT PARALLEL SAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_bands_for_threshold_wrapper';

-- src/lsh/mod.rs:84
-- neardup::lsh::lsh_bands
-- requires:
--   lsh_shell
--   shingling_types
CREATE  FUNCTION "lsh_bands"(
	"sketch" minhash_sketch, /* Minhash */
	"bands" INT, /* i32 */
	"rows" INT /* i32 */
) RETURNS lsh_bands /* LshBands */
IMMUTABLE STRICT PARALLEL SAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lsh_bands_of_sketch_wrapper';

-- src/shingling/mod.rs:155
-- neardup::shingling::minhash_features

CREATE FUNCTION minhash(body text, num_hashes integer, shingle integer, ngram integer)
    RETURNS minhash_sketch IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'minhash_features_wrapper';
COMMENT ON FUNCTION minhash(text, integer, integer, integer) IS
    'minhash sketch of the text''s word shingles, or with ngram > 0 of its character n-grams';

