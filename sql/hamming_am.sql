-- Operator classes of the hamming index access method. Strategy 1 answers
-- `col <@ hamming_ball(q, k)` (exactly, no recheck); strategy 2 orders by `col <~> q`.
-- No support functions: both key types are 64-bit values the access method reads as such.
CREATE OPERATOR CLASS simhash64_hamming_ops DEFAULT FOR TYPE simhash64 USING hamming AS
    OPERATOR 1 <@ (simhash64, hamming_ball),
    OPERATOR 2 <~> (simhash64, simhash64) FOR ORDER BY integer_ops;

CREATE OPERATOR CLASS int8_hamming_ops FOR TYPE bigint USING hamming AS
    OPERATOR 1 <@ (bigint, hamming_ball),
    OPERATOR 2 <~> (bigint, bigint) FOR ORDER BY integer_ops;
