"""asyncpg codecs for neardup's types, in the binary format (each value in the server's
send form):

    conn = await asyncpg.connect(...)
    await neardup.asyncpg.register(conn)

``simhash64`` loads as an ``int`` from 0 to 2**64 - 1 and is sent from one; ``hash256``
and ``hash128`` as ``bytes``; ``minhash_sketch``, ``supershingle_vector``, ``lsh_bands`` and
``bloom_signature`` as the module's classes. asyncpg types each parameter by the query, so
plain ints and bytes need no wrapping here; arrays of these types work too.
"""

from __future__ import annotations

from typing import Any

from ._neardup import BloomSignature, LshBands, MinhashSketch, SupershingleVector

__all__ = ["register"]

_CODECS: dict[str, tuple[Any, Any]] = {
    "simhash64": (lambda v: int(v).to_bytes(8, "big"), lambda b: int.from_bytes(b, "big")),
    "hash256": (bytes, bytes),
    "hash128": (bytes, bytes),
}
for _sql, _cls in [
    ("minhash_sketch", MinhashSketch),
    ("supershingle_vector", SupershingleVector),
    ("lsh_bands", LshBands),
    ("bloom_signature", BloomSignature),
]:
    _CODECS[_sql] = (bytes, _cls.from_bytes)


async def register(conn: Any, schema: str = "public") -> None:
    """Sets the codecs on an asyncpg connection (or, in a pool's ``init``, on each);
    `schema` is the extension's schema."""
    for sql, (encoder, decoder) in _CODECS.items():
        await conn.set_type_codec(sql, schema=schema, encoder=encoder, decoder=decoder, format="binary")
