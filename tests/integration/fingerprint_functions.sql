-- Generators for test and benchmark fingerprints, shared by the index checks and
-- bench/hamming_index.sh (psql -f). random() is seeded by the callers (setseed).
-- rnd64(): 64 uniformly random bits, the sign bit included.
CREATE FUNCTION rnd64() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL SAFE AS
$$ SELECT (floor(random() * 4294967296)::bigint << 32) | floor(random() * 4294967296)::bigint $$;
-- flip(x, n): x with exactly n distinct random bits flipped.
CREATE FUNCTION flip(x bigint, n int) RETURNS bigint LANGUAGE sql VOLATILE PARALLEL SAFE AS
$$ SELECT x # coalesce((SELECT bit_or(1::bigint << b)
                        FROM (SELECT b FROM generate_series(0, 63) b ORDER BY random() LIMIT n) s), 0) $$;
