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
