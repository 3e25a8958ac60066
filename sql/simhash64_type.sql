-- simhash64: 8 bytes passed by value, laid out like bigint so the casts are free.
-- Category S (string-like, as its text form is): functions overloaded for simhash64 and
-- bigint (hamming, hamming_ball, hamming_within) then read an untyped literal such as
-- '0123456789abcdef' as a simhash64 instead of failing as ambiguous or as a bad bigint.
CREATE TYPE simhash64 (
    INPUT = simhash64_in,
    OUTPUT = simhash64_out,
    RECEIVE = simhash64_recv,
    SEND = simhash64_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain,
    CATEGORY = 'S'
);
COMMENT ON TYPE simhash64 IS '64-bit simhash fingerprint (16 hex digits)';
