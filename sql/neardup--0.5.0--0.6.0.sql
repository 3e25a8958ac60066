-- neardup 0.5.0 -> 0.6.0: ALTER EXTENSION neardup UPDATE runs this in a 0.5.0 database.
-- Afterwards the extension's objects must equal those of a fresh CREATE EXTENSION neardup
-- (tests/integration/check_upgrade.sh compares the two catalogs).
--
-- 0.6.0 adds the wide codes hash256 and hash128 (PDQ image hashes and other 128- and 256-bit
-- codes): their types, comparison, hashing, Hamming distance, casts, hamming_pairs over them,
-- and the keys of multi-index hashing for a GIN index (hamming_keys, hamming_probe_keys).

/* <begin connected objects> */
-- src/wide_codes/mod.rs:14
CREATE TYPE hash256; -- shell, completed by sql/wide_codes_type.sql
CREATE TYPE hash128; -- shell, completed by sql/wide_codes_type.sql
/* </end connected objects> */

-- hamming_pairs also takes hash256 and hash128 columns (multi-index hashing)
COMMENT ON FUNCTION hamming_pairs(regclass, text, text, integer) IS
    'all pairs of rows whose signatures (simhash64, bigint, hash256 or hash128) are within max_distance bits, each once, a < b';

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_in
-- requires:
--   wide_codes_shell
CREATE  FUNCTION "hash128_in"(
	"input" cstring /* & CStr */
) RETURNS hash128 /* Hash128 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_in_wrapper';


-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_out
-- requires:
--   wide_codes_shell
CREATE  FUNCTION "hash128_out"(
	"value" hash128 /* Hash128 */
) RETURNS cstring /* CString */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_out_wrapper';


-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_recv
-- requires:
--   wide_codes_shell
CREATE  FUNCTION "hash128_recv"(
	"buf" internal /* Internal */
) RETURNS hash128 /* Hash128 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_recv_wrapper';


-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_send
-- requires:
--   wide_codes_shell
CREATE  FUNCTION "hash128_send"(
	"value" hash128 /* Hash128 */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_send_wrapper';


-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_in
-- requires:
--   wide_codes_shell
CREATE  FUNCTION "hash256_in"(
	"input" cstring /* & CStr */
) RETURNS hash256 /* Hash256 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_in_wrapper';


-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_out
-- requires:
--   wide_codes_shell
CREATE  FUNCTION "hash256_out"(
	"value" hash256 /* Hash256 */
) RETURNS cstring /* CString */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_out_wrapper';


-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_recv
-- requires:
--   wide_codes_shell
CREATE  FUNCTION "hash256_recv"(
	"buf" internal /* Internal */
) RETURNS hash256 /* Hash256 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_recv_wrapper';


-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_send
-- requires:
--   wide_codes_shell
CREATE  FUNCTION "hash256_send"(
	"value" hash256 /* Hash256 */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_send_wrapper';


-- src/wide_codes/mod.rs:20
-- creates:
--   Type(neardup::wide_codes::Hash256)
--   Type(neardup::wide_codes::Hash128)

-- requires:
--   wide_codes_shell
--   functions::hash256_in
--   functions::hash256_out
--   functions::hash256_recv
--   functions::hash256_send
--   functions::hash128_in
--   functions::hash128_out
--   functions::hash128_recv
--   functions::hash128_send

-- hash256 and hash128: fixed-length wide codes passed by reference, like uuid. Category U
-- (not simhash64's S): an untyped literal in hamming('…', '…') must keep meaning simhash64.
CREATE TYPE hash256 (
    INPUT = hash256_in,
    OUTPUT = hash256_out,
    RECEIVE = hash256_recv,
    SEND = hash256_send,
    INTERNALLENGTH = 32,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE hash256 IS '256-bit code compared by Hamming distance, such as a PDQ image hash (64 hex digits)';
CREATE TYPE hash128 (
    INPUT = hash128_in,
    OUTPUT = hash128_out,
    RECEIVE = hash128_recv,
    SEND = hash128_send,
    INTERNALLENGTH = 16,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE hash128 IS '128-bit code compared by Hamming distance (32 hex digits)';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_le
CREATE  FUNCTION "hash128_le"(
	"a" hash128, /* Hash128 */
	"b" hash128 /* Hash128 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_le_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_hash_extended
CREATE  FUNCTION "hash128_hash_extended"(
	"a" hash128, /* Hash128 */
	"seed" bigint /* i64 */
) RETURNS bigint /* i64 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_hash_extended_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_from_bit_bytes
CREATE  FUNCTION "hash128_from_bit_bytes"(
	"sent" bytea /* & [u8] */
) RETURNS hash128 /* Hash128 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_from_bit_bytes_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_lt
CREATE  FUNCTION "hash128_lt"(
	"a" hash128, /* Hash128 */
	"b" hash128 /* Hash128 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_lt_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_eq
CREATE  FUNCTION "hash128_eq"(
	"a" hash128, /* Hash128 */
	"b" hash128 /* Hash128 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_eq_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_from_bytea
CREATE  FUNCTION "hash128_from_bytea"(
	"bytes" bytea /* & [u8] */
) RETURNS hash128 /* Hash128 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_from_bytea_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_hash
CREATE  FUNCTION "hash128_hash"(
	"a" hash128 /* Hash128 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_hash_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_lt
CREATE  FUNCTION "hash256_lt"(
	"a" hash256, /* Hash256 */
	"b" hash256 /* Hash256 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_lt_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hamming
CREATE  FUNCTION "hamming"(
	"a" hash256, /* Hash256 */
	"b" hash256 /* Hash256 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_hamming_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_cmp
CREATE  FUNCTION "hash128_cmp"(
	"a" hash128, /* Hash128 */
	"b" hash128 /* Hash128 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_cmp_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_ge
CREATE  FUNCTION "hash128_ge"(
	"a" hash128, /* Hash128 */
	"b" hash128 /* Hash128 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_ge_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_hash_extended
CREATE  FUNCTION "hash256_hash_extended"(
	"a" hash256, /* Hash256 */
	"seed" bigint /* i64 */
) RETURNS bigint /* i64 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_hash_extended_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_le
CREATE  FUNCTION "hash256_le"(
	"a" hash256, /* Hash256 */
	"b" hash256 /* Hash256 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_le_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_gt
CREATE  FUNCTION "hash128_gt"(
	"a" hash128, /* Hash128 */
	"b" hash128 /* Hash128 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_gt_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_from_bytea
CREATE  FUNCTION "hash256_from_bytea"(
	"bytes" bytea /* & [u8] */
) RETURNS hash256 /* Hash256 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_from_bytea_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_gt
CREATE  FUNCTION "hash256_gt"(
	"a" hash256, /* Hash256 */
	"b" hash256 /* Hash256 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_gt_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_from_bit_bytes
CREATE  FUNCTION "hash256_from_bit_bytes"(
	"sent" bytea /* & [u8] */
) RETURNS hash256 /* Hash256 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_from_bit_bytes_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hash128_ne
CREATE  FUNCTION "hash128_ne"(
	"a" hash128, /* Hash128 */
	"b" hash128 /* Hash128 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_ne_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:150
-- neardup::wide_codes::functions::hamming
CREATE  FUNCTION "hamming"(
	"a" hash128, /* Hash128 */
	"b" hash128 /* Hash128 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_hamming_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_ge
CREATE  FUNCTION "hash256_ge"(
	"a" hash256, /* Hash256 */
	"b" hash256 /* Hash256 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_ge_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_ne
CREATE  FUNCTION "hash256_ne"(
	"a" hash256, /* Hash256 */
	"b" hash256 /* Hash256 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_ne_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_eq
CREATE  FUNCTION "hash256_eq"(
	"a" hash256, /* Hash256 */
	"b" hash256 /* Hash256 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_eq_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_hash
CREATE  FUNCTION "hash256_hash"(
	"a" hash256 /* Hash256 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_hash_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/functions.rs:144
-- neardup::wide_codes::functions::hash256_cmp
CREATE  FUNCTION "hash256_cmp"(
	"a" hash256, /* Hash256 */
	"b" hash256 /* Hash256 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_cmp_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/mod.rs:37
-- requires:
--   wide_codes_type
--   functions::hash256_eq
--   functions::hash256_ne
--   functions::hash256_lt
--   functions::hash256_le
--   functions::hash256_gt
--   functions::hash256_ge
--   functions::hash256_cmp
--   functions::hash256_hash
--   functions::hash256_hash_extended
--   functions::hash256_hamming
--   functions::hash256_from_bytea
--   functions::hash256_from_bit_bytes
--   functions::hash128_eq
--   functions::hash128_ne
--   functions::hash128_lt
--   functions::hash128_le
--   functions::hash128_gt
--   functions::hash128_ge
--   functions::hash128_cmp
--   functions::hash128_hash
--   functions::hash128_hash_extended
--   functions::hash128_hamming
--   functions::hash128_from_bytea
--   functions::hash128_from_bit_bytes

-- Operators, operator classes and casts of the wide codes (types in wide_codes_type.sql).

-- hash256: comparison in the order of the hex text form, hashing, Hamming distance, casts.
CREATE OPERATOR = (
    LEFTARG = hash256, RIGHTARG = hash256, FUNCTION = hash256_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = hash256, RIGHTARG = hash256, FUNCTION = hash256_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = hash256, RIGHTARG = hash256, FUNCTION = hash256_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = hash256, RIGHTARG = hash256, FUNCTION = hash256_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = hash256, RIGHTARG = hash256, FUNCTION = hash256_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = hash256, RIGHTARG = hash256, FUNCTION = hash256_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR CLASS hash256_ops DEFAULT FOR TYPE hash256 USING btree AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 hash256_cmp(hash256, hash256),
    FUNCTION 4 btequalimage(oid);
CREATE OPERATOR CLASS hash256_ops DEFAULT FOR TYPE hash256 USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 hash256_hash(hash256),
    FUNCTION 2 hash256_hash_extended(hash256, bigint);
CREATE OPERATOR <~> (
    LEFTARG = hash256, RIGHTARG = hash256, FUNCTION = hamming, COMMUTATOR = <~>
);
CREATE CAST (bytea AS hash256) WITH FUNCTION hash256_from_bytea(bytea);
-- the binary form is the send function's
CREATE CAST (hash256 AS bytea) WITH FUNCTION hash256_send(hash256);
-- bit strings: the first bit is the most significant, as in the text form.
CREATE FUNCTION hash256_from_bit(bit) RETURNS hash256
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN hash256_from_bit_bytes(varbit_send($1));
CREATE FUNCTION hash256_to_bit(hash256) RETURNS bit
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ('x' || $1::text)::bit(256);
CREATE CAST (bit AS hash256) WITH FUNCTION hash256_from_bit(bit);
CREATE CAST (hash256 AS bit) WITH FUNCTION hash256_to_bit(hash256);

-- hash128: comparison in the order of the hex text form, hashing, Hamming distance, casts.
CREATE OPERATOR = (
    LEFTARG = hash128, RIGHTARG = hash128, FUNCTION = hash128_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = hash128, RIGHTARG = hash128, FUNCTION = hash128_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = hash128, RIGHTARG = hash128, FUNCTION = hash128_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = hash128, RIGHTARG = hash128, FUNCTION = hash128_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = hash128, RIGHTARG = hash128, FUNCTION = hash128_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = hash128, RIGHTARG = hash128, FUNCTION = hash128_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR CLASS hash128_ops DEFAULT FOR TYPE hash128 USING btree AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 hash128_cmp(hash128, hash128),
    FUNCTION 4 btequalimage(oid);
CREATE OPERATOR CLASS hash128_ops DEFAULT FOR TYPE hash128 USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 hash128_hash(hash128),
    FUNCTION 2 hash128_hash_extended(hash128, bigint);
CREATE OPERATOR <~> (
    LEFTARG = hash128, RIGHTARG = hash128, FUNCTION = hamming, COMMUTATOR = <~>
);
CREATE CAST (bytea AS hash128) WITH FUNCTION hash128_from_bytea(bytea);
-- the binary form is the send function's
CREATE CAST (hash128 AS bytea) WITH FUNCTION hash128_send(hash128);
-- bit strings: the first bit is the most significant, as in the text form.
CREATE FUNCTION hash128_from_bit(bit) RETURNS hash128
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN hash128_from_bit_bytes(varbit_send($1));
CREATE FUNCTION hash128_to_bit(hash128) RETURNS bit
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ('x' || $1::text)::bit(128);
CREATE CAST (bit AS hash128) WITH FUNCTION hash128_from_bit(bit);
CREATE CAST (hash128 AS bit) WITH FUNCTION hash128_to_bit(hash128);
/* </end connected objects> */

-- the keys of multi-index hashing for a GIN index on hash256
CREATE  FUNCTION "hamming_keys"(
	"code" hash256, /* Hash256 */
	"substrings" INT /* i32 */
) RETURNS bigint[] /* Vec < i64 > */
IMMUTABLE STRICT PARALLEL SAFE COST 100
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_hamming_keys_wrapper';
CREATE  FUNCTION "hamming_probe_keys"(
	"code" hash256, /* Hash256 */
	"max_distance" INT, /* i32 */
	"substrings" INT /* i32 */
) RETURNS bigint[] /* Vec < i64 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_hamming_probe_keys_wrapper';

-- the keys of multi-index hashing for a GIN index on hash128
CREATE  FUNCTION "hamming_keys"(
	"code" hash128, /* Hash128 */
	"substrings" INT /* i32 */
) RETURNS bigint[] /* Vec < i64 > */
IMMUTABLE STRICT PARALLEL SAFE COST 100
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_hamming_keys_wrapper';
CREATE  FUNCTION "hamming_probe_keys"(
	"code" hash128, /* Hash128 */
	"max_distance" INT, /* i32 */
	"substrings" INT /* i32 */
) RETURNS bigint[] /* Vec < i64 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_hamming_probe_keys_wrapper';

-- Release 0.6.0 also indexes wide codes with the hamming access method: the balls of
-- `code <@ hamming_ball(q, r)`, hamming_within, and the operator classes.

/* <begin connected objects> */
-- src/wide_codes/mod.rs:71
-- requires:
--   wide_codes_type

CREATE TYPE hash256_ball; -- shell, completed by sql/wide_balls_type.sql
CREATE TYPE hash128_ball; -- shell, completed by sql/wide_balls_type.sql
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/ball.rs:226
-- neardup::wide_codes::ball::hash128_ball_in
-- requires:
--   wide_balls_shell
CREATE  FUNCTION "hash128_ball_in"(
	"input" cstring /* & CStr */
) RETURNS hash128_ball /* Hash128Ball */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_ball_in_wrapper';


-- src/wide_codes/ball.rs:226
-- neardup::wide_codes::ball::hash128_ball_out
-- requires:
--   wide_balls_shell
CREATE  FUNCTION "hash128_ball_out"(
	"ball" hash128_ball /* Hash128Ball */
) RETURNS cstring /* CString */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_ball_out_wrapper';


-- src/wide_codes/ball.rs:226
-- neardup::wide_codes::ball::hash128_ball_recv
-- requires:
--   wide_balls_shell
CREATE  FUNCTION "hash128_ball_recv"(
	"buf" internal /* Internal */
) RETURNS hash128_ball /* Hash128Ball */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_ball_recv_wrapper';


-- src/wide_codes/ball.rs:226
-- neardup::wide_codes::ball::hash128_ball_send
-- requires:
--   wide_balls_shell
CREATE  FUNCTION "hash128_ball_send"(
	"ball" hash128_ball /* Hash128Ball */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_ball_send_wrapper';


-- src/wide_codes/ball.rs:212
-- neardup::wide_codes::ball::hash256_ball_in
-- requires:
--   wide_balls_shell
CREATE  FUNCTION "hash256_ball_in"(
	"input" cstring /* & CStr */
) RETURNS hash256_ball /* Hash256Ball */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_ball_in_wrapper';


-- src/wide_codes/ball.rs:212
-- neardup::wide_codes::ball::hash256_ball_out
-- requires:
--   wide_balls_shell
CREATE  FUNCTION "hash256_ball_out"(
	"ball" hash256_ball /* Hash256Ball */
) RETURNS cstring /* CString */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_ball_out_wrapper';


-- src/wide_codes/ball.rs:212
-- neardup::wide_codes::ball::hash256_ball_recv
-- requires:
--   wide_balls_shell
CREATE  FUNCTION "hash256_ball_recv"(
	"buf" internal /* Internal */
) RETURNS hash256_ball /* Hash256Ball */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_ball_recv_wrapper';


-- src/wide_codes/ball.rs:212
-- neardup::wide_codes::ball::hash256_ball_send
-- requires:
--   wide_balls_shell
CREATE  FUNCTION "hash256_ball_send"(
	"ball" hash256_ball /* Hash256Ball */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_ball_send_wrapper';


-- src/wide_codes/mod.rs:78
-- creates:
--   Type(neardup::wide_codes::Hash256Ball)
--   Type(neardup::wide_codes::Hash128Ball)

-- requires:
--   wide_balls_shell
--   ball::hash256_ball_in
--   ball::hash256_ball_out
--   ball::hash256_ball_recv
--   ball::hash256_ball_send
--   ball::hash128_ball_in
--   ball::hash128_ball_out
--   ball::hash128_ball_recv
--   ball::hash128_ball_send

-- hash256_ball and hash128_ball: the codes within a Hamming radius of a center, the
-- right-hand side of <@ for wide codes (src/wide_codes/ball.rs). Fixed length, passed by
-- reference; the hamming index reads the center's words, then the radius.
CREATE TYPE hash256_ball (
    INPUT = hash256_ball_in,
    OUTPUT = hash256_ball_out,
    RECEIVE = hash256_ball_recv,
    SEND = hash256_ball_send,
    INTERNALLENGTH = 40,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE hash256_ball IS 'hash256 codes within a Hamming radius of a center: (center hex,radius)';
CREATE TYPE hash128_ball (
    INPUT = hash128_ball_in,
    OUTPUT = hash128_ball_out,
    RECEIVE = hash128_ball_recv,
    SEND = hash128_ball_send,
    INTERNALLENGTH = 24,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE hash128_ball IS 'hash128 codes within a Hamming radius of a center: (center hex,radius)';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/ball.rs:226
-- neardup::wide_codes::ball::hamming_ball
-- requires:
--   wide_balls_type
CREATE  FUNCTION "hamming_ball"(
	"center" hash128, /* Hash128 */
	"radius" INT /* i32 */
) RETURNS hash128_ball /* Hash128Ball */
IMMUTABLE STRICT PARALLEL SAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_ball_hash128_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/ball.rs:212
-- neardup::wide_codes::ball::hamming_ball
-- requires:
--   wide_balls_type
CREATE  FUNCTION "hamming_ball"(
	"center" hash256, /* Hash256 */
	"radius" INT /* i32 */
) RETURNS hash256_ball /* Hash256Ball */
IMMUTABLE STRICT PARALLEL SAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_ball_hash256_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/ball.rs:212
-- neardup::wide_codes::ball::hamming_ball_contains
-- requires:
--   wide_balls_type
CREATE  FUNCTION "hamming_ball_contains"(
	"ball" hash256_ball, /* Hash256Ball */
	"value" hash256 /* Hash256 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_ball_contains_hash256_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/ball.rs:226
-- neardup::wide_codes::ball::hamming_ball_contains
-- requires:
--   wide_balls_type
CREATE  FUNCTION "hamming_ball_contains"(
	"ball" hash128_ball, /* Hash128Ball */
	"value" hash128 /* Hash128 */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hamming_ball_contains_hash128_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/ball.rs:226
-- neardup::wide_codes::ball::within_hamming_ball
-- requires:
--   wide_balls_type
CREATE  FUNCTION "within_hamming_ball"(
	"value" hash128, /* Hash128 */
	"ball" hash128_ball /* Hash128Ball */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'within_hamming_ball_hash128_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/ball.rs:212
-- neardup::wide_codes::ball::within_hamming_ball
-- requires:
--   wide_balls_type
CREATE  FUNCTION "within_hamming_ball"(
	"value" hash256, /* Hash256 */
	"ball" hash256_ball /* Hash256Ball */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'within_hamming_ball_hash256_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/mod.rs:95
-- requires:
--   wide_balls_type
--   wide_codes_operators
--   hamming_am_opclasses
--   ball::hamming_ball_hash256
--   ball::within_hamming_ball_hash256
--   ball::hamming_ball_contains_hash256
--   ball::hamming_ball_hash128
--   ball::within_hamming_ball_hash128
--   ball::hamming_ball_contains_hash128

-- The indexable Hamming search on wide codes: code <@ hamming_ball(q, r), hamming_within,
-- and the operator classes of the hamming access method (multi-index hashing's substring
-- tables, src/am/scan/wide.rs). The estimates are the 64-bit ball's, priced by the width.
CREATE OPERATOR <@ (
    LEFTARG = hash256, RIGHTARG = hash256_ball, FUNCTION = within_hamming_ball,
    COMMUTATOR = @>, RESTRICT = hamming_ball_restrict, JOIN = hamming_ball_join
);
CREATE OPERATOR @> (
    LEFTARG = hash256_ball, RIGHTARG = hash256, FUNCTION = hamming_ball_contains,
    COMMUTATOR = <@, RESTRICT = hamming_ball_restrict, JOIN = hamming_ball_join
);
CREATE OPERATOR <@ (
    LEFTARG = hash128, RIGHTARG = hash128_ball, FUNCTION = within_hamming_ball,
    COMMUTATOR = @>, RESTRICT = hamming_ball_restrict, JOIN = hamming_ball_join
);
CREATE OPERATOR @> (
    LEFTARG = hash128_ball, RIGHTARG = hash128, FUNCTION = hamming_ball_contains,
    COMMUTATOR = <@, RESTRICT = hamming_ball_restrict, JOIN = hamming_ball_join
);

-- hamming(a, b) <= k, false for a negative k, in the form a hamming index answers: the
-- planner inlines it (not STRICT, so that it may) into `a <@ hamming_ball(b, k)`.
CREATE FUNCTION hamming_within(a hash256, b hash256, k integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN k >= 0 AND a <@ hamming_ball(b, greatest(k, 0));
CREATE FUNCTION hamming_within(a hash128, b hash128, k integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN k >= 0 AND a <@ hamming_ball(b, greatest(k, 0));

/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/mod.rs:97
-- requires:
--   wide_codes_type

CREATE TYPE hash256_batch; -- shell, completed by sql/wide_batches_type.sql
CREATE TYPE hash128_batch; -- shell, completed by sql/wide_batches_type.sql
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/batch.rs:150
-- neardup::wide_codes::batch::hash128_batch_in
-- requires:
--   wide_batches_shell
CREATE  FUNCTION "hash128_batch_in"(
	"input" cstring /* & CStr */
) RETURNS hash128_batch /* Hash128Batch */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_batch_in_wrapper';


-- src/wide_codes/batch.rs:150
-- neardup::wide_codes::batch::hash128_batch_out
-- requires:
--   wide_batches_shell
CREATE  FUNCTION "hash128_batch_out"(
	"value" hash128_batch /* Hash128Batch */
) RETURNS cstring /* CString */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_batch_out_wrapper';


-- src/wide_codes/batch.rs:150
-- neardup::wide_codes::batch::hash128_batch_recv
-- requires:
--   wide_batches_shell
CREATE  FUNCTION "hash128_batch_recv"(
	"buf" internal /* Internal */
) RETURNS hash128_batch /* Hash128Batch */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_batch_recv_wrapper';


-- src/wide_codes/batch.rs:150
-- neardup::wide_codes::batch::hash128_batch_send
-- requires:
--   wide_batches_shell
CREATE  FUNCTION "hash128_batch_send"(
	"value" hash128_batch /* Hash128Batch */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash128_batch_send_wrapper';


-- src/wide_codes/batch.rs:128
-- neardup::wide_codes::batch::hash256_batch_in
-- requires:
--   wide_batches_shell
CREATE  FUNCTION "hash256_batch_in"(
	"input" cstring /* & CStr */
) RETURNS hash256_batch /* Hash256Batch */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_batch_in_wrapper';


-- src/wide_codes/batch.rs:128
-- neardup::wide_codes::batch::hash256_batch_out
-- requires:
--   wide_batches_shell
CREATE  FUNCTION "hash256_batch_out"(
	"value" hash256_batch /* Hash256Batch */
) RETURNS cstring /* CString */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_batch_out_wrapper';


-- src/wide_codes/batch.rs:128
-- neardup::wide_codes::batch::hash256_batch_recv
-- requires:
--   wide_batches_shell
CREATE  FUNCTION "hash256_batch_recv"(
	"buf" internal /* Internal */
) RETURNS hash256_batch /* Hash256Batch */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_batch_recv_wrapper';


-- src/wide_codes/batch.rs:128
-- neardup::wide_codes::batch::hash256_batch_send
-- requires:
--   wide_batches_shell
CREATE  FUNCTION "hash256_batch_send"(
	"value" hash256_batch /* Hash256Batch */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hash256_batch_send_wrapper';


-- src/wide_codes/mod.rs:104
-- creates:
--   Type(neardup::wide_codes::Hash256Batch)
--   Type(neardup::wide_codes::Hash128Batch)

-- requires:
--   wide_batches_shell
--   batch::hash256_batch_in
--   batch::hash256_batch_out
--   batch::hash256_batch_recv
--   batch::hash256_batch_send
--   batch::hash128_batch_in
--   batch::hash128_batch_out
--   batch::hash128_batch_recv
--   batch::hash128_batch_send

-- hash256_batch and hash128_batch: keyed wide codes and one Hamming radius, the right-hand
-- side of <@@ for batch checks of wide codes (src/wide_codes/batch.rs). Varlenas in the
-- 64-bit hamming_batch's binary form, with the codes' bytes as centers.
CREATE TYPE hash256_batch (
    INPUT = hash256_batch_in,
    OUTPUT = hash256_batch_out,
    RECEIVE = hash256_batch_recv,
    SEND = hash256_batch_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE hash256_batch IS
    'keyed hash256 codes and one Hamming radius, the right side of <@@ for batch checks (text form r<radius>:<key>=<hex>,...)';
CREATE TYPE hash128_batch (
    INPUT = hash128_batch_in,
    OUTPUT = hash128_batch_out,
    RECEIVE = hash128_batch_recv,
    SEND = hash128_batch_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE hash128_batch IS
    'keyed hash128 codes and one Hamming radius, the right side of <@@ for batch checks (text form r<radius>:<key>=<hex>,...)';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/batch.rs:150
-- neardup::wide_codes::batch::batch_contains_hash128
CREATE FUNCTION hamming_batch_contains(hash128_batch, hash128) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'batch_contains_hash128_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/batch.rs:128
-- neardup::wide_codes::batch::hamming_batch_hash256
CREATE FUNCTION hamming_batch(keys bigint[], codes hash256[], radius integer) RETURNS hash256_batch
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'hamming_batch_hash256_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/batch.rs:150
-- neardup::wide_codes::batch::hamming_batch_hash128
CREATE FUNCTION hamming_batch(keys bigint[], codes hash128[], radius integer) RETURNS hash128_batch
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'hamming_batch_hash128_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/batch.rs:150
-- neardup::wide_codes::batch::batch_keys_hash128
CREATE FUNCTION hamming_batch_keys(batch hash128_batch, code hash128) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'batch_keys_hash128_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/batch.rs:128
-- neardup::wide_codes::batch::batch_keys_hash256
CREATE FUNCTION hamming_batch_keys(batch hash256_batch, code hash256) RETURNS bigint[]
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'batch_keys_hash256_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/batch.rs:128
-- neardup::wide_codes::batch::batch_contains_hash256
CREATE FUNCTION hamming_batch_contains(hash256_batch, hash256) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'batch_contains_hash256_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/batch.rs:150
-- neardup::wide_codes::batch::within_batch_hash128
CREATE FUNCTION within_hamming_batch(hash128, hash128_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'within_batch_hash128_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/batch.rs:128
-- neardup::wide_codes::batch::within_batch_hash256
CREATE FUNCTION within_hamming_batch(hash256, hash256_batch) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE COST 40 LANGUAGE c AS 'MODULE_PATHNAME', 'within_batch_hash256_wrapper';
/* </end connected objects> */

/* <begin connected objects> */
-- src/wide_codes/mod.rs:121
-- requires:
--   wide_batches_type
--   hamming_batch_operators
--   batch::within_batch_hash256
--   batch::batch_contains_hash256
--   batch::within_batch_hash128
--   batch::batch_contains_hash128

-- code <@@ batch: within the batch's radius of at least one of its codes (src/wide_codes/
-- batch.rs). Strategy 3 of the wide operator classes (sql/wide_codes_index.sql): one index
-- scan probes every code of the batch. The estimators are the 64-bit batch's, which price
-- a ball by the codes' width.
CREATE OPERATOR <@@ (
    LEFTARG = hash256, RIGHTARG = hash256_batch, FUNCTION = within_hamming_batch,
    COMMUTATOR = @@>, RESTRICT = hamming_batch_restrict, JOIN = hamming_batch_join
);
CREATE OPERATOR @@> (
    LEFTARG = hash256_batch, RIGHTARG = hash256, FUNCTION = hamming_batch_contains,
    COMMUTATOR = <@@, RESTRICT = hamming_batch_restrict, JOIN = hamming_batch_join
);
CREATE OPERATOR <@@ (
    LEFTARG = hash128, RIGHTARG = hash128_batch, FUNCTION = within_hamming_batch,
    COMMUTATOR = @@>, RESTRICT = hamming_batch_restrict, JOIN = hamming_batch_join
);
CREATE OPERATOR @@> (
    LEFTARG = hash128_batch, RIGHTARG = hash128, FUNCTION = hamming_batch_contains,
    COMMUTATOR = <@@, RESTRICT = hamming_batch_restrict, JOIN = hamming_batch_join
);
/* </end connected objects> */

/* the operator classes of wide codes, with the batches (sql/wide_codes_index.sql) */
-- Strategy 1 answers `code <@ hamming_ball(q, r)` exactly (no recheck); strategy 2 orders
-- by `code <~> q`, nearest first; strategy 3 answers `code <@@ batch` (sql/wide_batches.sql).
CREATE OPERATOR CLASS hash256_hamming_ops DEFAULT FOR TYPE hash256 USING hamming AS
    OPERATOR 1 <@ (hash256, hash256_ball),
    OPERATOR 2 <~> (hash256, hash256) FOR ORDER BY integer_ops,
    OPERATOR 3 <@@ (hash256, hash256_batch);
CREATE OPERATOR CLASS hash128_hamming_ops DEFAULT FOR TYPE hash128 USING hamming AS
    OPERATOR 1 <@ (hash128, hash128_ball),
    OPERATOR 2 <~> (hash128, hash128) FOR ORDER BY integer_ops,
    OPERATOR 3 <@@ (hash128, hash128_batch);
