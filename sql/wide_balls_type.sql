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
