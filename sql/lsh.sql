-- lsh_bands (src/lsh): the band keys of a minhash sketch, stored as their versioned binary
-- encoding (core/src/search/lsh_encoding.rs): a 6-byte header and 8 bytes per band.
CREATE TYPE lsh_bands (
    INPUT = lsh_bands_in,
    OUTPUT = lsh_bands_out,
    RECEIVE = lsh_bands_recv,
    SEND = lsh_bands_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = plain
);
COMMENT ON TYPE lsh_bands IS
    'MinHash LSH band keys of a sketch, one per band of rows minvalues (text form b<bands>r<rows>:<hex>:...)';

-- Supershingles are the bands of 14 rows of the default sketch.
CREATE CAST (supershingle_vector AS lsh_bands) WITH FUNCTION lsh_bands_of_supershingles(supershingle_vector);

-- a && b: the sketches share at least one band (their texts are LSH candidates).
CREATE OPERATOR && (
    LEFTARG = lsh_bands, RIGHTARG = lsh_bands, FUNCTION = lsh_share_band,
    COMMUTATOR = &&, RESTRICT = matchingsel, JOIN = matchingjoinsel
);

CREATE OPERATOR CLASS lsh_bands_ops DEFAULT FOR TYPE lsh_bands USING gin AS
    OPERATOR 1 && (lsh_bands, lsh_bands),
    FUNCTION 1 btint8cmp(bigint, bigint),
    FUNCTION 2 lsh_bands_gin_extract_value(lsh_bands, internal, internal),
    FUNCTION 3 lsh_bands_gin_extract_query(lsh_bands, internal, smallint, internal, internal, internal, internal),
    FUNCTION 4 lsh_bands_gin_consistent(internal, smallint, lsh_bands, integer, internal, internal, internal, internal),
    STORAGE bigint;
