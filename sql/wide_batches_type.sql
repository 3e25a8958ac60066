-- hash256_batch and hash128_batch: keyed wide codes and one Hamming radius, the right-hand
-- side of <@@ for batch checks of wide codes (src/wide_codes/batch.rs). Varlenas in the
-- 64-bit hamming_batch's binary form, with the codes' bytes as centers.
CREATE TYPE hash256_batch (
    INPUT = hash256_batch_in,
    OUTPUT = hash256_batch_out,
    RECEIVE = hash256_batch_recv,
    SEND = hash256_batch_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE hash256_batch IS
    'keyed hash256 codes and one Hamming radius, the right side of <@@ for batch checks (text form r<radius>:<key>=<hex>,...)';
CREATE TYPE hash128_batch (
    INPUT = hash128_batch_in,
    OUTPUT = hash128_batch_out,
    RECEIVE = hash128_batch_recv,
    SEND = hash128_batch_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE hash128_batch IS
    'keyed hash128 codes and one Hamming radius, the right side of <@@ for batch checks (text form r<radius>:<key>=<hex>,...)';
