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
    'keyed fingerprints and one Hamming radius, the right side of <@ for batch checks (text form r<radius>:<key>=<hex>,...)';
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
