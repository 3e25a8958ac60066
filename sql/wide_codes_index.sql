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

-- hamming(a, b) <= k, false for a negative k and NULL for a NULL one (int4larger is
-- GREATEST for integers, but STRICT), in the form a hamming index answers: the planner
-- inlines it (not STRICT, so that it may) into `a <@ hamming_ball(b, k)`.
CREATE FUNCTION hamming_within(a hash256, b hash256, k integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN k >= 0 AND a <@ hamming_ball(b, int4larger(k, 0));
CREATE FUNCTION hamming_within(a hash128, b hash128, k integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN k >= 0 AND a <@ hamming_ball(b, int4larger(k, 0));

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
