-- Operator classes of the hamming index access method. Strategy 1 answers
-- `col <@ hamming_ball(q, k)` (exactly, no recheck); strategy 2 orders by `col <~> q`;
-- strategy 3 (below) answers `col <@@ hamming_batch`.
-- No support functions: both key types are 64-bit values the access method reads as such.
CREATE OPERATOR CLASS simhash64_hamming_ops DEFAULT FOR TYPE simhash64 USING hamming AS
    OPERATOR 1 <@ (simhash64, hamming_ball),
    OPERATOR 2 <~> (simhash64, simhash64) FOR ORDER BY integer_ops;

CREATE OPERATOR CLASS int8_hamming_ops FOR TYPE bigint USING hamming AS
    OPERATOR 1 <@ (bigint, hamming_ball),
    OPERATOR 2 <~> (bigint, bigint) FOR ORDER BY integer_ops;

-- Strategy 3 answers `col <@@ batch` (hamming_batch, sql/hamming_batch.sql): one probe per
-- fingerprint of the batch, each row once. Added to the families as release 0.5.0 added it,
-- so a new install and an upgraded one have the same catalog.
ALTER OPERATOR FAMILY simhash64_hamming_ops USING hamming ADD
    OPERATOR 3 <@@ (simhash64, hamming_batch);
ALTER OPERATOR FAMILY int8_hamming_ops USING hamming ADD
    OPERATOR 3 <@@ (bigint, hamming_batch);
