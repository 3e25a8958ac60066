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
