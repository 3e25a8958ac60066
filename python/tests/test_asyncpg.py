"""neardup.asyncpg against the server: each type both ways, and arrays."""

import asyncio

import pytest

import neardup

asyncpg = pytest.importorskip("asyncpg")
PDQ = "f8f8f0cee0f4a84f06370a22038f63f0b36e2ed596621e1d33e6b39c4e9c9b22"


def test_types_both_ways(dsn):
    async def main():
        import neardup.asyncpg as adapter

        conn = await asyncpg.connect(database=dsn)
        try:
            await adapter.register(conn)
            text = "Debian is a free operating system (OS) for your computer."
            sketch = neardup.minhash(text)
            row = await conn.fetchrow(
                "SELECT simhash($1::text), minhash($1::text), supershingles($1::text),"
                " lsh_bands(minhash($1::text), 0.5::float8), bloomsig($1::text), $2::hash256",
                text, bytes.fromhex(PDQ),
            )
            assert tuple(row) == (
                neardup.simhash(text), sketch, sketch.supershingles(), sketch.lsh_bands(0.5),
                neardup.bloomsig(text), bytes.fromhex(PDQ),
            )
            fp = neardup.simhash(text)
            same = await conn.fetchval(
                "SELECT $1::simhash64 = simhash($3::text) AND $2::minhash_sketch::text = minhash($3::text)::text",
                fp, sketch, text,
            )
            assert same
            fps = [neardup.simhash(t) for t in ["a", "b", "c d e"]]
            assert await conn.fetchval("SELECT $1::simhash64[]", fps) == fps
            assert await conn.fetchval("SELECT ARRAY[minhash('a'), minhash('b')]") == [neardup.minhash("a"), neardup.minhash("b")]
        finally:
            await conn.close()

    asyncio.run(main())
