\echo Use "CREATE EXTENSION page_reads" to load this file. \quit
CREATE FUNCTION page_reads(rel regclass, pages int, within int, rounds int) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE c STRICT VOLATILE;
REVOKE ALL ON FUNCTION page_reads(regclass, int, int, int) FROM PUBLIC;
