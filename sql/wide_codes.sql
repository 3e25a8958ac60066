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
