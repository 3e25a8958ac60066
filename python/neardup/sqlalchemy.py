"""SQLAlchemy 2 column types for neardup's SQL types, with comparators that write the
forms the ``hamming`` index serves, so ORM queries use it:

    from neardup.sqlalchemy import Simhash64, register
    class Page(Base):
        __tablename__ = "pages"
        id: Mapped[int] = mapped_column(primary_key=True)
        fp: Mapped[int] = mapped_column(Simhash64)
    register(engine)  # neardup.psycopg's adapters on every connection the engine opens
    q = neardup.simhash(text)
    session.scalars(select(Page).where(Page.fp.hamming_within(q, 3)))   # indexed lookup
    session.scalars(select(Page).order_by(Page.fp.nearest(q)).limit(10))  # nearest codes

``col.hamming_within(q, k)`` is ``hamming_within(col, q, k)`` and ``col.nearest(q)`` is
``col <~> q``: the forms an index of the ``hamming`` access method answers without the
extension preloaded (``hamming(col, q) <= k`` needs its planner hook, ``col.hamming(q)``
writes that). The engine must use psycopg 3 (``postgresql+psycopg://``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, Float, Integer, event, func, literal
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import UserDefinedType

from . import psycopg as _psycopg

__all__ = ["Hash128", "Hash256", "MinhashSketch", "Simhash64", "register"]


def register(engine: Engine) -> None:
    """Registers neardup.psycopg's adapters on each new connection of `engine`."""

    @event.listens_for(engine, "connect")
    def _register(dbapi_connection: Any, _record: Any) -> None:
        _psycopg.register(dbapi_connection)


def _operand(value: Any, type_: UserDefinedType) -> ColumnElement:
    """A Python value as a bound parameter of the column's type (so it is sent as that
    type); an SQL expression as it is."""
    return value if isinstance(value, ColumnElement) else literal(value, type_)


class _HammingCode(UserDefinedType):
    """A code compared by Hamming distance; subclasses name the SQL type and wrap values
    in the class neardup.psycopg sends as that type."""

    cache_ok = True
    sql_name = ""
    wrap: Any = None

    def get_col_spec(self, **_kw: Any) -> str:
        return self.sql_name

    def bind_processor(self, _dialect: Any) -> Any:
        wrap = self.wrap
        return lambda value: None if value is None else wrap(value)

    class comparator_factory(UserDefinedType.Comparator):
        def hamming(self, other: Any) -> ColumnElement[int]:
            """``hamming(col, other)``: differing bits."""
            return func.hamming(self.expr, _operand(other, self.type), type_=Integer)

        def hamming_within(self, query: Any, k: int) -> ColumnElement[bool]:
            """``hamming_within(col, query, k)``: at most `k` bits apart, indexable."""
            return func.hamming_within(self.expr, _operand(query, self.type), k, type_=Boolean)

        def nearest(self, query: Any) -> ColumnElement[int]:
            """``col <~> query``, to ORDER BY: nearest codes first, from the index."""
            return self.expr.op("<~>", return_type=Integer)(_operand(query, self.type))


class Simhash64(_HammingCode):
    """``simhash64``: an int from 0 to 2**64 - 1 (``neardup.simhash``)."""

    cache_ok = True  # SQLAlchemy reads it from each class's own attributes
    sql_name = "simhash64"
    wrap = _psycopg.Simhash


class Hash256(_HammingCode):
    """``hash256``: 32 bytes."""

    cache_ok = True
    sql_name = "hash256"
    wrap = _psycopg.Hash256


class Hash128(_HammingCode):
    """``hash128``: 16 bytes."""

    cache_ok = True
    sql_name = "hash128"
    wrap = _psycopg.Hash128


class MinhashSketch(UserDefinedType):
    """``minhash_sketch``: a ``neardup.MinhashSketch``."""

    cache_ok = True

    def get_col_spec(self, **_kw: Any) -> str:
        return "minhash_sketch"

    class comparator_factory(UserDefinedType.Comparator):
        def jaccard(self, other: Any) -> ColumnElement[float]:
            """``jaccard(col, other)``: the estimated resemblance."""
            return func.jaccard(self.expr, _operand(other, self.type), type_=Float)

