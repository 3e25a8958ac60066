-- simhash64: 8 bytes passed by value, laid out like bigint so the casts are free.
CREATE TYPE simhash64 (
    INPUT = simhash64_in,
    OUTPUT = simhash64_out,
    RECEIVE = simhash64_recv,
    SEND = simhash64_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE simhash64 IS '64-bit simhash fingerprint (16 hex digits)';
