"""psycopg 3 adapters for neardup's types, in text and binary format, and their arrays.

    import psycopg, neardup, neardup.psycopg
    conn = psycopg.connect(...)
    neardup.psycopg.register(conn)
    conn.execute("INSERT INTO pages (body, fp) VALUES (%s, %s)", (body, Simhash(neardup.simhash(body))))

What comes back, and what to send for each SQL type:

========================  ==========================================================
SQL type                  Python
========================  ==========================================================
``simhash64``             :class:`Simhash`, an ``int`` 0 to 2**64 - 1
``hash256``, ``hash128``  :class:`Hash256`, :class:`Hash128`, ``bytes`` of 32 and 16
``minhash_sketch``        :class:`neardup.MinhashSketch`
``supershingle_vector``   :class:`neardup.SupershingleVector`
``lsh_bands``             :class:`neardup.LshBands`
``bloom_signature``       :class:`neardup.BloomSignature`
========================  ==========================================================

A plain ``int`` or ``bytes`` keeps psycopg's own meaning (``bigint``/``numeric``,
``bytea``): wrap it (``Simhash(v)``, ``Hash256(b)``) to send it as neardup's type, or cast
in SQL. The binary format carries each value in the server's send form, which the sketch
and signature classes read and write as is.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Callable

from psycopg import ProgrammingError, pq
from psycopg.abc import AdaptContext, Buffer
from psycopg.adapt import Dumper, Loader
from psycopg.types import TypeInfo

from ._neardup import BloomSignature, LshBands, MinhashSketch, SupershingleVector

__all__ = ["Hash128", "Hash256", "Simhash", "register"]


class Simhash(int):
    """A ``simhash64``: an int from 0 to 2**64 - 1 that psycopg sends as ``simhash64``."""

    __slots__ = ()

    def __new__(cls, value: int) -> Simhash:
        self = super().__new__(cls, value)
        if not 0 <= self < 1 << 64:
            raise ValueError(f"a simhash64 is 0 to 2**64 - 1, not {int(value)}")
        return self

    def __repr__(self) -> str:
        return f"Simhash(0x{self:016x})"


class _Code(bytes):
    """Bytes of a fixed length: the binary form of a wide code, most significant first."""

    __slots__ = ()
    WIDTH = 0

    def __new__(cls, value: bytes) -> _Code:
        self = super().__new__(cls, value)
        if len(self) != cls.WIDTH:
            raise ValueError(f"a {cls.__name__} is {cls.WIDTH} bytes, not {len(self)}")
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}.fromhex('{self.hex()}')"


class Hash256(_Code):
    """A ``hash256`` (a PDQ hash, say): 32 bytes."""

    __slots__ = ()
    WIDTH = 32


class Hash128(_Code):
    """A ``hash128``: 16 bytes."""

    __slots__ = ()
    WIDTH = 16


def _text(data: Buffer) -> str:
    return bytes(data).decode()


# SQL type: (Python class, load text, load binary, dump text, dump binary)
_FORMS: dict[str, tuple[type, Callable[[str], Any], Callable[[bytes], Any], Callable[[Any], str], Callable[[Any], bytes]]] = {
    "simhash64": (
        Simhash,
        lambda s: Simhash(int(s, 16)),
        lambda b: Simhash(int.from_bytes(b, "big")),
        lambda v: f"{v:016x}",
        lambda v: v.to_bytes(8, "big"),
    ),
    "hash256": (Hash256, lambda s: Hash256(bytes.fromhex(s)), Hash256, bytes.hex, bytes),
    "hash128": (Hash128, lambda s: Hash128(bytes.fromhex(s)), Hash128, bytes.hex, bytes),
}
for _sql, _cls in [
    ("minhash_sketch", MinhashSketch),
    ("supershingle_vector", SupershingleVector),
    ("lsh_bands", LshBands),
    ("bloom_signature", BloomSignature),
]:
    _FORMS[_sql] = (_cls, _cls.from_text, _cls.from_bytes, str, bytes)


@cache
def _adapters(sql: str, oid: int) -> list[type]:
    """The loaders and dumpers of one type, made once per type and oid (psycopg keeps
    adapter classes, so making them per call would leak)."""
    _cls, load_text, load_binary, dump_text, dump_binary = _FORMS[sql]

    class TextLoader(Loader):
        def load(self, data: Buffer) -> Any:
            return load_text(_text(data))

    class BinaryLoader(Loader):
        format = pq.Format.BINARY

        def load(self, data: Buffer) -> Any:
            return load_binary(bytes(data))

    class TextDumper(Dumper):
        def dump(self, obj: Any) -> bytes:
            return dump_text(obj).encode()

    class BinaryDumper(Dumper):
        format = pq.Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return dump_binary(obj)

    TextDumper.oid = BinaryDumper.oid = oid
    for adapter in (TextLoader, BinaryLoader, TextDumper, BinaryDumper):
        adapter.__name__ = adapter.__qualname__ = f"{sql}_{adapter.__name__}"
    return [TextLoader, BinaryLoader, TextDumper, BinaryDumper]


def register(context: AdaptContext, schema: str | None = None) -> None:
    """Registers neardup's types on a connection or cursor (or whatever psycopg adapt
    context): their values load as the classes above, those classes dump as the types,
    and arrays of each work both ways. `schema` names the extension's schema when it is
    not on the search_path."""
    conn = getattr(context, "connection", context)
    for sql, forms in _FORMS.items():
        name = f"{schema}.{sql}" if schema else sql
        info = TypeInfo.fetch(conn, name)
        if info is None:
            raise ProgrammingError(
                f"type {name} not found: is the neardup extension created in this database"
                + ("" if schema else " and its schema on the search_path")
                + "?"
            )
        info.register(context)
        text_loader, binary_loader, text_dumper, binary_dumper = _adapters(sql, info.oid)
        context.adapters.register_loader(info.oid, text_loader)
        context.adapters.register_loader(info.oid, binary_loader)
        context.adapters.register_dumper(forms[0], text_dumper)
        context.adapters.register_dumper(forms[0], binary_dumper)
