-- minhash_sketch and supershingle_vector (src/shingling), stored as their versioned binary
-- encodings (core/src/signatures/minhash_encoding.rs, core/src/signatures/supershingles.rs): a 4-byte header and
-- 4 bytes per minvalue (340 bytes by default); a 2-byte header and 8 bytes per supershingle
-- (50 bytes by default). Minvalues are near-random, so sketches are stored uncompressed.
CREATE TYPE minhash_sketch (
    INPUT = minhash_sketch_in,
    OUTPUT = minhash_sketch_out,
    RECEIVE = minhash_sketch_recv,
    SEND = minhash_sketch_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = external
);
COMMENT ON TYPE minhash_sketch IS
    'Broder''s minhash sketch of a text''s word shingles (text form m<hashes>s<shingle>:<hex>)';

CREATE TYPE supershingle_vector (
    INPUT = supershingle_vector_in,
    OUTPUT = supershingle_vector_out,
    RECEIVE = supershingle_vector_recv,
    SEND = supershingle_vector_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = plain
);
COMMENT ON TYPE supershingle_vector IS
    'supershingles of a minhash sketch, one per 14 minvalues (text form: hex words joined by :)';

-- a % b: B-similar, at least neardup.b_similarity_threshold equal supershingles.
CREATE OPERATOR % (
    LEFTARG = supershingle_vector, RIGHTARG = supershingle_vector, FUNCTION = b_similar,
    COMMUTATOR = %, RESTRICT = matchingsel, JOIN = matchingjoinsel
);

CREATE OPERATOR CLASS supershingle_vector_ops DEFAULT FOR TYPE supershingle_vector USING gin AS
    OPERATOR 1 % (supershingle_vector, supershingle_vector),
    FUNCTION 1 btint8cmp(bigint, bigint),
    FUNCTION 2 supershingle_gin_extract_value(supershingle_vector, internal, internal),
    FUNCTION 3 supershingle_gin_extract_query(supershingle_vector, internal, smallint, internal, internal, internal, internal),
    FUNCTION 4 supershingle_gin_consistent(internal, smallint, supershingle_vector, integer, internal, internal, internal, internal),
    STORAGE bigint;
