-- Operators of the indexable Hamming search (src/hamming_query). The type hamming_ball is
-- created just before this file; the functions are pgrx's.

-- The distance on bigint perceptual-hash columns, like simhash64's.
CREATE OPERATOR <~> (
    LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hamming, COMMUTATOR = <~>
);

-- value <@ ball: hamming(value, center) <= radius. The operator the hamming index AM serves
-- (strategy 1 of its operator classes); hamming_within(...) and hamming(...) <= k become it.
CREATE OPERATOR <@ (
    LEFTARG = simhash64, RIGHTARG = hamming_ball, FUNCTION = within_hamming_ball,
    COMMUTATOR = @>, RESTRICT = hamming_ball_restrict, JOIN = hamming_ball_join
);
CREATE OPERATOR @> (
    LEFTARG = hamming_ball, RIGHTARG = simhash64, FUNCTION = hamming_ball_contains,
    COMMUTATOR = <@, RESTRICT = hamming_ball_restrict, JOIN = hamming_ball_join
);
CREATE OPERATOR <@ (
    LEFTARG = bigint, RIGHTARG = hamming_ball, FUNCTION = within_hamming_ball,
    COMMUTATOR = @>, RESTRICT = hamming_ball_restrict, JOIN = hamming_ball_join
);
CREATE OPERATOR @> (
    LEFTARG = hamming_ball, RIGHTARG = bigint, FUNCTION = hamming_ball_contains,
    COMMUTATOR = <@, RESTRICT = hamming_ball_restrict, JOIN = hamming_ball_join
);
