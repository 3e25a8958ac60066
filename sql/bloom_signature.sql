-- bloom_signature: a Bloom filter of content-defined chunks (src/bloom_signature.rs).
-- Stored as its versioned binary encoding (core/src/signatures/bloom_encoding.rs): a 10-byte header
-- (version, k, m, chunk size) and m/8 bytes of bits. EXTENDED storage: the default
-- 2048-bit filter is 266 bytes, large ones compress when sparse.
CREATE TYPE bloom_signature (
    INPUT = bloom_signature_in,
    OUTPUT = bloom_signature_out,
    RECEIVE = bloom_signature_recv,
    SEND = bloom_signature_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE bloom_signature IS
    'Bloom filter of a text''s content-defined chunks (text form bloom:m=..:k=..:chunk=..:<hex>)';

CREATE OPERATOR & (LEFTARG = bloom_signature, RIGHTARG = bloom_signature,
                   FUNCTION = bloom_and, COMMUTATOR = &);
CREATE OPERATOR | (LEFTARG = bloom_signature, RIGHTARG = bloom_signature,
                   FUNCTION = bloom_or, COMMUTATOR = |);
