-- hash256 and hash128: fixed-length wide codes passed by reference, like uuid. Category U
-- (not simhash64's S): an untyped literal in hamming('…', '…') must keep meaning simhash64.
CREATE TYPE hash256 (
    INPUT = hash256_in,
    OUTPUT = hash256_out,
    RECEIVE = hash256_recv,
    SEND = hash256_send,
    INTERNALLENGTH = 32,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE hash256 IS '256-bit code compared by Hamming distance, such as a PDQ image hash (64 hex digits)';
CREATE TYPE hash128 (
    INPUT = hash128_in,
    OUTPUT = hash128_out,
    RECEIVE = hash128_recv,
    SEND = hash128_send,
    INTERNALLENGTH = 16,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE hash128 IS '128-bit code compared by Hamming distance (32 hex digits)';
