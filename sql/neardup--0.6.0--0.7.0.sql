-- neardup 0.6.0 -> 0.7.0: ALTER EXTENSION neardup UPDATE runs this in a 0.6.0 database.
-- Afterwards the extension's objects must equal those of a fresh CREATE EXTENSION neardup
-- (tests/integration/check_upgrade.sh compares the two catalogs).
--
-- 0.7.0 adds PDQ hashes computed from image bytes (pdq, pdq_quality, pdq_dihedral), and
-- hamming_within on wide codes gives NULL for a NULL distance, as the 64-bit one does
-- (0.6.0's greatest(k, 0) made it false).

-- PDQ hashes of image bytes (src/images/mod.rs)
CREATE  FUNCTION "pdq"(
	"image" bytea /* &[u8] */
) RETURNS hash256 /* Hash256 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'pdq_wrapper';
CREATE  FUNCTION "pdq_quality"(
	"image" bytea /* &[u8] */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'pdq_quality_wrapper';
CREATE  FUNCTION "pdq_dihedral"(
	"image" bytea /* &[u8] */
) RETURNS hash256[] /* Vec < Hash256 > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'pdq_dihedral_wrapper';

-- sql/wide_codes_index.sql
CREATE OR REPLACE FUNCTION hamming_within(a hash256, b hash256, k integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN k >= 0 AND a <@ hamming_ball(b, int4larger(k, 0));
CREATE OR REPLACE FUNCTION hamming_within(a hash128, b hash128, k integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN k >= 0 AND a <@ hamming_ball(b, int4larger(k, 0));
