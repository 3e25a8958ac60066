-- Comparison operators: unsigned order, the same as the order of the hex text form.
CREATE OPERATOR = (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);

-- Equal values have equal bits, so bigint's hash functions are the right ones.
CREATE FUNCTION simhash64_hash(simhash64) RETURNS integer
    AS 'hashint8' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_hash_extended(simhash64, bigint) RETURNS bigint
    AS 'hashint8extended' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR CLASS simhash64_ops DEFAULT FOR TYPE simhash64 USING btree AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 simhash64_cmp(simhash64, simhash64),
    FUNCTION 4 btequalimage(oid);

CREATE OPERATOR CLASS simhash64_ops DEFAULT FOR TYPE simhash64 USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 simhash64_hash(simhash64),
    FUNCTION 2 simhash64_hash_extended(simhash64, bigint);

-- Hamming distance and bitwise operators.
CREATE OPERATOR <~> (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = hamming, COMMUTATOR = <~>
);
CREATE OPERATOR & (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_and, COMMUTATOR = &
);
CREATE OPERATOR | (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_or, COMMUTATOR = |
);
CREATE OPERATOR # (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_xor, COMMUTATOR = #
);
CREATE OPERATOR ~ (RIGHTARG = simhash64, FUNCTION = simhash64_not);

-- Casts: bigint shares the representation bit for bit; bit(64) shows the bits, most
-- significant first (the order of the hex digits).
CREATE CAST (simhash64 AS bigint) WITHOUT FUNCTION;
CREATE CAST (bigint AS simhash64) WITHOUT FUNCTION;
CREATE FUNCTION simhash64_to_bit(simhash64) RETURNS bit
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN $1::bigint::bit(64);
CREATE CAST (simhash64 AS bit) WITH FUNCTION simhash64_to_bit(simhash64);
